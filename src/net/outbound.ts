/**
 * Outbound request rules: which URLs the VNFM may call on behalf of an API client (subscription
 * callbacks and their OAuth 2.0 token endpoints, the NFVO's grant and token URLs, Server Notifier
 * endpoints). A URL is refused when its host is, or resolves to, an address of a denied range:
 *
 * - built in: loopback (127.0.0.0/8, ::1), "this host" (0.0.0.0/8, ::), link-local
 *   (169.254.0.0/16, fe80::/10, which holds the cloud metadata service 169.254.169.254), the other
 *   well-known metadata addresses (100.100.100.200, fd00:ec2::254) and `metadata.google.internal`;
 * - the VNFM's own API address (its listen address and port, on any local interface when it
 *   listens on all of them);
 * - `outbound.deny` (CIDRs, addresses or host names; `*.example.com` matches sub-domains).
 *
 * `outbound.allow` (same forms) wins over the built-in and configured denials, for labs and tests
 * whose endpoints live on loopback; it does not open the VNFM's own API address. VIM endpoints
 * (Keystone, the service catalog's URLs, Kubernetes API servers) are judged by a guard of their
 * own ({@link vimOutboundGuard}): the same denials, opened by `outbound.vimAllow` instead. Every
 * refusal names the setting that opens it.
 *
 * Addresses are judged in one canonical spelling ({@link normalizeAddress}): IPv4-mapped IPv6
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`) as IPv4, IPv4 in decimal, octal, hex or short form
 * (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`) as dotted quad, brackets and IPv6 zone ids
 * removed.
 *
 * Checked twice: when the URL is accepted (subscription creation, notifier registration, start-up
 * for the NFVO), answered 422 with the reason; and again right before each request
 * ({@link OutboundGuard.fetch}), with a fresh name resolution, so a host name whose DNS answer
 * changed to a denied address after it was accepted (DNS rebinding) is refused too. The request
 * is then **pinned** to the addresses that were checked: the connection uses them (a custom
 * `lookup` of the HTTP client, src/net/tls-fetch.ts) instead of resolving the name once more, so
 * a DNS server that answers a public address to the check and a loopback one a millisecond later
 * reaches nothing it should not (docs/security.md, "Outbound requests").
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { type LookupFunction, PINNED_LOOKUP, isPinnable, tlsFetch } from './tls-fetch.ts';

/** The configurable part of the rules (config `outbound`). */
export interface OutboundRules {
  /** CIDRs, addresses or host names always allowed (except the VNFM's own API address). */
  allow: readonly string[];
  /** CIDRs, addresses or host names refused in addition to the built-in ranges. */
  deny: readonly string[];
  /** CIDRs, addresses or host names allowed for VIM endpoints (config `outbound.vimAllow`). */
  vimAllow?: readonly string[];
}

/** The setting that opens what a guard refuses, named in its reasons. */
export interface GuardNames {
  /** @default 'outbound.allow' */
  allow: string;
}

/** Address ranges refused unless allowed, with the name given in the reason. */
const BUILTIN_DENY: readonly [cidr: string, what: string][] = [
  ['127.0.0.0/8', 'a loopback address'],
  ['::1/128', 'a loopback address'],
  ['0.0.0.0/8', 'a "this host" address'],
  ['::/128', 'the unspecified address'],
  ['169.254.0.0/16', 'a link-local address (cloud metadata service)'],
  ['fe80::/10', 'a link-local address'],
  ['100.100.100.200/32', 'a cloud metadata service address'],
  ['fd00:ec2::254/128', 'a cloud metadata service address'],
];
const BUILTIN_DENY_NAMES = ['metadata.google.internal', 'metadata'];

/** Error thrown by {@link OutboundGuard.fetch} for a refused URL (`cause.code` is `VNFM_OUTBOUND_DENIED`). */
export class OutboundDeniedError extends TypeError {
  readonly reason: string;
  /** `VNFM_OUTBOUND_DENIED` (also on `cause`), as a socket error carries its code. */
  readonly code = OUTBOUND_DENIED;
  constructor(reason: string) {
    super(`outbound request refused: ${reason}`, { cause: { code: OUTBOUND_DENIED, message: reason } });
    this.name = 'OutboundDeniedError';
    this.reason = reason;
  }
}

/** The error code of a request the outbound rules refused. */
export const OUTBOUND_DENIED = 'VNFM_OUTBOUND_DENIED';

/** The {@link OutboundDeniedError} in `e` or its causes (a client may wrap it), or undefined. */
export function outboundDenial(e: unknown, depth = 0): OutboundDeniedError | undefined {
  if (e instanceof OutboundDeniedError) return e;
  if (e === null || typeof e !== 'object' || depth > 5) return undefined;
  const x = e as { cause?: unknown; error?: unknown; errors?: unknown };
  for (const inner of [x.cause, x.error, ...(Array.isArray(x.errors) ? x.errors : [])]) {
    const hit = outboundDenial(inner, depth + 1);
    if (hit) return hit;
  }
  return undefined;
}

interface Matcher {
  ips: BlockList;
  names: string[];
}

function family(addr: string): 'ipv4' | 'ipv6' {
  return isIP(addr) === 6 ? 'ipv6' : 'ipv4';
}

/** The WHATWG host parser's canonical form of `host` (IPv4 variants as dotted quad, IPv6 compressed), or undefined. */
function canonicalHost(host: string): string | undefined {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
}

/**
 * An address in the one spelling the rules judge: brackets and an IPv6 zone id (`%eth0`) removed,
 * IPv6 compressed and lower case, an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`,
 * `::ffff:7f00:1`, `0:0:0:0:0:ffff:7f00:1`) as its IPv4 form, and IPv4 written in decimal
 * (`2130706433`), octal (`0177.0.0.1`), hex (`0x7f.0.0.1`) or short form (`127.1`) as a dotted
 * quad. Anything else (a host name) comes back lower case.
 */
export function normalizeAddress(a: string): string {
  let s = String(a).trim().replace(/^\[|\]$/g, '').toLowerCase();
  if (s.includes(':')) {
    s = s.replace(/%.*$/, '');
    if (isIP(s) !== 6) return s;
    const c = (canonicalHost(`[${s}]`) ?? `[${s}]`).replace(/^\[|\]$/g, '');
    const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(c);
    if (m) {
      const hi = Number.parseInt(m[1] as string, 16);
      const lo = Number.parseInt(m[2] as string, 16);
      return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
    }
    const d = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(c);
    return d ? (d[1] as string) : c;
  }
  if (/^[0-9a-fx.]+$/.test(s) && /^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?$/.test(s)) {
    const c = canonicalHost(s);
    if (c !== undefined && isIP(c) === 4) return c;
  }
  return s;
}

/** Parses rule entries; throws naming the bad entry. */
function matcher(entries: readonly string[], where: string): Matcher {
  const ips = new BlockList();
  const names: string[] = [];
  for (const raw of entries) {
    const e = String(raw).trim();
    if (e === '') continue;
    const slash = e.indexOf('/');
    if (slash > 0) {
      const raw = e.slice(0, slash);
      const net = normalizeAddress(raw);
      let bits = Number(e.slice(slash + 1));
      // an IPv4-mapped IPv6 range (`::ffff:10.0.0.0/104`) is the IPv4 range it maps
      if (isIP(net) === 4 && raw.includes(':')) bits -= 96;
      const v = isIP(net);
      if (!v || !Number.isInteger(bits) || bits < 0 || bits > (v === 4 ? 32 : 128)) throw new Error(`${where}: '${e}' is not a CIDR`);
      ips.addSubnet(net, bits, family(net));
    } else if (isIP(normalizeAddress(e))) {
      const a = normalizeAddress(e);
      ips.addAddress(a, family(a));
    } else if (/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(e)) {
      names.push(e.toLowerCase().replace(/\.$/, ''));
    } else {
      throw new Error(`${where}: '${e}' is not a CIDR, an address or a host name`);
    }
  }
  return { ips, names };
}

function nameMatches(names: readonly string[], host: string): boolean {
  return names.some((n) => (n.startsWith('*.') ? host.endsWith(n.slice(1)) : host === n));
}

/** Checks entries of `outbound.allow` / `outbound.deny` / `outbound.vimAllow`; returns the first problem or undefined. */
export function validateOutboundRules(r: OutboundRules): string | undefined {
  try {
    matcher(r.allow, 'outbound.allow');
    matcher(r.deny, 'outbound.deny');
    matcher(r.vimAllow ?? [], 'outbound.vimAllow');
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** The VNFM's own API address: listen host and port (set once it listens). */
export interface OwnAddress {
  host: string;
  port: number;
}

/** Applies the outbound rules. */
export class OutboundGuard {
  private readonly allow: Matcher;
  private readonly deny: Matcher;
  private readonly builtin = new Map<string, BlockList>();
  private readonly trusted = new Set<string>();

  /** The setting that opens what this guard refuses (named in its reasons). */
  readonly names: GuardNames;

  constructor(
    rules: OutboundRules,
    /** The VNFM's own API address, read at each check (the port is known only once it listens). */
    private readonly own: () => OwnAddress | undefined = () => undefined,
    /** Name resolution (tests). */
    private readonly resolve: (host: string) => Promise<string[]> = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address),
    names: Partial<GuardNames> = {},
  ) {
    this.names = { allow: names.allow ?? 'outbound.allow' };
    this.allow = matcher(rules.allow, this.names.allow);
    this.deny = matcher(rules.deny, 'outbound.deny');
    for (const [cidr, what] of BUILTIN_DENY) {
      const l = this.builtin.get(what) ?? new BlockList();
      const [net, bits] = cidr.split('/') as [string, string];
      l.addSubnet(net, Number(bits), family(net));
      this.builtin.set(what, l);
    }
  }

  /**
   * Trusts one origin (scheme, host and port) whatever the rules say: endpoints the VNFM itself
   * started on this host (the simulated cloud). Not configurable; only the composition root calls it.
   */
  trustOrigin(url: string): void {
    this.trusted.add(new URL(url).origin);
  }

  /** Why one resolved address is refused for `port`, or undefined. */
  private addressRefusal(addr: string, port: number): string | undefined {
    const a = normalizeAddress(addr);
    const f = family(a);
    const own = this.own();
    if (own && own.port === port) {
      const ownHost = normalizeAddress(own.host);
      // every interface, or a host name: any local address at the API port is the VNFM itself
      const anyIf = ownHost === '0.0.0.0' || ownHost === '::' || !isIP(ownHost);
      const local = anyIf ? localAddresses() : new Set([ownHost]);
      if (local.has(a) || (anyIf && this.isLoopback(a))) return `${a}:${port} is the VNFM's own API address (never allowed)`;
    }
    if (this.allow.ips.check(a, f)) return undefined;
    if (this.deny.ips.check(a, f)) return `${a} is in a denied range (outbound.deny; open it with ${this.names.allow})`;
    for (const [what, l] of this.builtin) if (l.check(a, f)) return `${a} is ${what} (open it with ${this.names.allow})`;
    return undefined;
  }

  private isLoopback(a: string): boolean {
    return this.builtin.get('a loopback address')?.check(a, family(a)) ?? false;
  }

  /**
   * Why `url` may not be called, or undefined when it may. Resolves the host name (all its
   * addresses must be acceptable); a name that does not resolve is refused.
   */
  async check(url: string): Promise<string | undefined> {
    return (await this.evaluate(url)).why;
  }

  /**
   * Like {@link check}, for a URL being registered: a host name that does not resolve now is
   * accepted (it is checked again, resolved, before every request); every other refusal stands.
   */
  async checkAccept(url: string): Promise<string | undefined> {
    const r = await this.evaluate(url);
    return r.unresolved ? undefined : r.why;
  }

  /**
   * A node:net `lookup` for connections to `url`'s host made by a client that resolves names
   * itself (the Kubernetes client's HTTP agent): each call resolves the name afresh, refuses
   * (an {@link OutboundDeniedError}, code `VNFM_OUTBOUND_DENIED`) when the rules refuse `url`, and
   * otherwise answers only the checked addresses, so the connection goes where the check looked.
   * A literal address is never looked up by node:net: check such a URL with {@link check} first.
   */
  lookupFor(url: string): LookupFunction {
    return (hostname, options, callback) => {
      const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
      this.evaluate(url).then(
        ({ why, addrs }) => {
          if (why) return cb(new OutboundDeniedError(why));
          if (!addrs) return cb(Object.assign(new Error(`${hostname} has no checked address`), { code: 'ENOTFOUND' }));
          pinnedLookup(addrs)(hostname, options, callback);
        },
        (e: unknown) => cb(e),
      );
    };
  }

  /** The verdict on `url` and, for an accepted host name, the addresses that were checked. */
  private async evaluate(url: string): Promise<{ why?: string; addrs?: string[]; unresolved?: boolean }> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return { why: 'not a valid URL' };
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return { why: `scheme ${u.protocol} is not allowed (http or https only)` };
    if (u.username || u.password) return { why: 'credentials in the URL are not allowed' };
    if (this.trusted.has(u.origin)) return {};
    const host = normalizeAddress(u.hostname).replace(/\.$/, '');
    const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    let addrs: string[];
    if (isIP(host)) return { ...(this.addressRefusal(host, port) ? { why: this.addressRefusal(host, port) } : {}) };
    const ownHostAllowed = nameMatches(this.allow.names, host);
    if (!ownHostAllowed && (nameMatches(this.deny.names, host) || BUILTIN_DENY_NAMES.includes(host))) return { why: `host ${host} is denied (open it with ${this.names.allow})` };
    try {
      addrs = await this.resolve(host);
    } catch {
      return { why: `host ${host} does not resolve`, unresolved: true };
    }
    if (addrs.length === 0) return { why: `host ${host} does not resolve`, unresolved: true };
    for (const a of addrs) {
      const why = this.addressRefusal(a, port);
      // an allowed name still may not point at the VNFM itself
      if (why && (!ownHostAllowed || why.includes("VNFM's own"))) return { why: `host ${host} resolves to ${why}` };
    }
    return { addrs };
  }

  /**
   * A fetch that checks each URL right before the request (and does not follow redirects to
   * unchecked places: `redirect` defaults to `manual`), then connects to the addresses it checked
   * (pinned; `base` must be pinnable for that: the default, or a fetch of src/net/tls-fetch.ts; any
   * other `base`, e.g. a test double, is called without pinning). A refused URL rejects with
   * {@link OutboundDeniedError}, like a network error.
   */
  fetch(base?: typeof fetch): typeof fetch {
    const send = base === undefined || base === globalThis.fetch ? tlsFetch({}) : base;
    const pin = isPinnable(send);
    const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.toString() : input.url;
      const { why, addrs } = await this.evaluate(url);
      if (why) throw new OutboundDeniedError(why);
      return send(input, { redirect: 'manual', ...(init ?? {}), ...(pin && addrs ? { [PINNED_LOOKUP]: pinnedLookup(addrs) } : {}) } as RequestInit);
    };
    return guarded as typeof fetch;
  }
}

/**
 * A node:net `lookup` that answers the checked addresses (in their order) whatever name it is
 * asked for: the connection goes where the check looked, without a second resolution.
 */
export function pinnedLookup(addrs: readonly string[]): LookupFunction {
  const list = addrs.map((a) => ({ address: normalizeAddress(a), family: isIP(normalizeAddress(a)) === 6 ? 6 : 4 }));
  return (_hostname, options, callback) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    const o = (typeof options === 'object' && options !== null ? options : {}) as { all?: boolean; family?: number | string };
    const want = o.family === 4 || o.family === 'IPv4' ? 4 : o.family === 6 || o.family === 'IPv6' ? 6 : 0;
    const usable = want ? list.filter((a) => a.family === want) : list;
    const first = usable[0];
    if (!first) {
      const e = Object.assign(new Error('no checked address of the asked family'), { code: 'ENOTFOUND' });
      process.nextTick(() => cb(e));
      return;
    }
    process.nextTick(() => (o.all ? cb(null, usable) : cb(null, first.address, first.family)));
  };
}

function localAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) out.add(normalizeAddress(i.address));
  return out;
}

/**
 * The guard of VIM endpoints: the built-in denials, `outbound.deny` and the VNFM's own API address,
 * opened by `outbound.vimAllow` (not by `outbound.allow`, which is for callbacks and the NFVO).
 */
export function vimOutboundGuard(rules: OutboundRules, own: () => OwnAddress | undefined = () => undefined, resolve?: (host: string) => Promise<string[]>): OutboundGuard {
  return new OutboundGuard({ allow: rules.vimAllow ?? [], deny: rules.deny }, own, resolve, { allow: 'outbound.vimAllow' });
}

/** A guard that allows everything except the built-in ranges (for callers given no rules). */
export function defaultOutboundGuard(): OutboundGuard {
  return new OutboundGuard({ allow: [], deny: [] });
}
