/**
 * IPv4 arithmetic and the names the lab derives from addresses: the bridge, a host's namespace
 * (`hvlab-<a>-<b>-<c>-<d>`) and its veth (`hvlab<8 hex digits>`, within the 15-character limit).
 * Everything the lab creates carries the `hvlab` prefix, and only such names are ever removed.
 */

/** Prefix of every namespace, link and file the lab creates. */
export const LAB_PREFIX = 'hvlab';
/** The bridge in the root namespace. */
export const LAB_BRIDGE = 'hvlab0';

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** Whether `s` is a dotted IPv4 address. */
export function isIpv4(s: string): boolean {
  const m = IPV4.exec(s);
  return m !== null && m.slice(1).every((x) => Number(x) <= 255 && String(Number(x)) === x);
}

/** The address as a 32-bit unsigned number. */
export function ipToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

/** The dotted form of a 32-bit unsigned number. */
export function intToIp(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

/** Compares two addresses numerically (for sorting). */
export function compareIps(a: string, b: string): number {
  return ipToInt(a) - ipToInt(b);
}

/** A parsed lab subnet. */
export interface LabSubnet {
  /** Network address / prefix, e.g. `10.87.0.0/24`. */
  readonly cidr: string;
  readonly prefixLength: number;
  /** The bridge's address (the first host address, `.1`): the hosts' gateway. */
  readonly gatewayIp: string;
  /** Neutron allocation pool of the lab network: `.10`-`.250` of the subnet. */
  readonly pool: { start: string; end: string };
  /** Whether an address is a host address of the subnet (not the network or broadcast address). */
  contains(ip: string): boolean;
}

/**
 * Parses the lab CIDR (`10.87.0.0/24`; a host address like `10.87.0.1/24` is accepted and
 * normalised). The prefix must be /16 to /24, so `.10-.250` is a pool inside it.
 */
export function parseLabCidr(cidr: string): LabSubnet {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(cidr.trim());
  if (!m || !isIpv4(m[1] as string)) throw new Error(`lab CIDR ${JSON.stringify(cidr)} is not an IPv4 CIDR (like 10.87.0.0/24)`);
  const prefixLength = Number(m[2]);
  if (prefixLength < 16 || prefixLength > 24) throw new Error(`lab CIDR ${cidr}: the prefix must be /16 to /24 (got /${prefixLength})`);
  const size = 2 ** (32 - prefixLength);
  const base = Math.floor(ipToInt(m[1] as string) / size) * size;
  return {
    cidr: `${intToIp(base)}/${prefixLength}`,
    prefixLength,
    gatewayIp: intToIp(base + 1),
    pool: { start: intToIp(base + 10), end: intToIp(base + 250) },
    contains: (ip: string) => isIpv4(ip) && ipToInt(ip) > base && ipToInt(ip) < base + size - 1,
  };
}

/** The namespace of the host with this address: `hvlab-10-87-0-11`. */
export function namespaceOf(ip: string): string {
  return `${LAB_PREFIX}-${ip.replaceAll('.', '-')}`;
}

/** The address of a lab namespace name, or undefined when the name is not one of ours. */
export function ipOfNamespace(name: string): string | undefined {
  const m = /^hvlab-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})$/.exec(name);
  if (!m) return undefined;
  const ip = m.slice(1).join('.');
  return isIpv4(ip) ? ip : undefined;
}

/** The root-side veth of a host: `hvlab0a57000b` for 10.87.0.11. */
export function vethOf(ip: string): string {
  return `${LAB_PREFIX}${ipToInt(ip).toString(16).padStart(8, '0')}`;
}

/** Whether a link name is one of the lab's veths. */
export function isLabVeth(name: string): boolean {
  return /^hvlab[0-9a-f]{8}$/.test(name);
}
