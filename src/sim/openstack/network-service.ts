/**
 * In-memory Neutron model (networks, subnets, ports, floating IPs, routers) behind the simulated
 * Heat resources. Only ports are readable over HTTP (network-api.ts): it exists so servers get realistic addresses
 * (one per port, from the subnet's pool) and the resource attributes a VNFM reads
 * (`fixed_ips`, `mac_address`, `addresses`) are consistent with each other.
 */
import { randomBytes } from 'node:crypto';
import { uuid } from './ids.ts';

/** A Neutron network. */
export interface SimNetwork {
  readonly id: string;
  name: string;
  readonly projectId: string;
  readonly subnetIds: string[];
  adminStateUp: boolean;
  shared: boolean;
  external: boolean;
  mtu: number;
  valueSpecs: Record<string, unknown>;
}

/** A Neutron subnet with a simple sequential address allocator. */
export interface SimSubnet {
  readonly id: string;
  name: string;
  readonly networkId: string;
  readonly projectId: string;
  readonly cidr: string;
  readonly ipVersion: number;
  gatewayIp: string | null;
  allocationPools: { start: string; end: string }[];
  enableDhcp: boolean;
  dnsNameservers: string[];
  readonly used: Set<string>;
}

/** One fixed IP of a port. */
export interface SimFixedIp {
  readonly subnet_id: string;
  readonly ip_address: string;
}

/** A Neutron port. */
export interface SimPort {
  readonly id: string;
  name: string;
  readonly networkId: string;
  readonly projectId: string;
  fixedIps: SimFixedIp[];
  readonly macAddress: string;
  deviceId: string;
  deviceOwner: string;
  allowedAddressPairs: { ip_address: string; mac_address?: string }[];
  securityGroups: string[];
  adminStateUp: boolean;
  vnicType: string;
  valueSpecs: Record<string, unknown>;
  /** Link down (set through `/_sim/ports/{id}/down`): the port's status is `DOWN`. */
  linkDown?: boolean;
}

/** A Neutron floating IP. */
export interface SimFloatingIp {
  readonly id: string;
  readonly floatingNetworkId: string;
  readonly floatingIpAddress: string;
  portId: string | null;
  fixedIpAddress: string | null;
  readonly projectId: string;
}

/** A Neutron router. */
export interface SimRouter {
  readonly id: string;
  name: string;
  readonly projectId: string;
  externalGatewayInfo: Record<string, unknown> | null;
  adminStateUp: boolean;
  readonly interfaces: { subnetId?: string; portId?: string; id: string }[];
}

function ipToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function intToIp(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

function parseCidr(cidr: string): { base: number; size: number } | undefined {
  const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr.trim());
  if (!m) return undefined;
  const prefix = Number(m[2]);
  if (prefix < 8 || prefix > 30) return undefined;
  const size = 2 ** (32 - prefix);
  const base = Math.floor(ipToInt(m[1] as string) / size) * size;
  return { base, size };
}

function randomMac(): string {
  const b = randomBytes(3);
  return `fa:16:3e:${[...b].map((x) => x.toString(16).padStart(2, '0')).join(':')}`;
}

/** Saved state of the simulated Neutron (see {@link NetworkService.snapshot}). */
export interface NetworkSnapshot {
  networks: SimNetwork[];
  subnets: (Omit<SimSubnet, 'used'> & { used: string[] })[];
  ports: SimPort[];
  floatingIps: SimFloatingIp[];
  routers: SimRouter[];
  autoNetCounter: number;
}

/** Thrown when a Neutron request would fail on a real cloud (bad CIDR, address in use, ...). */
export class NetworkError extends Error {}

/** Neutron state of the simulated cloud. */
export class NetworkService {
  readonly networks = new Map<string, SimNetwork>();
  readonly subnets = new Map<string, SimSubnet>();
  readonly ports = new Map<string, SimPort>();
  readonly floatingIps = new Map<string, SimFloatingIp>();
  readonly routers = new Map<string, SimRouter>();
  private autoNetCounter = 0;
  private readonly portListeners = new Set<(portId: string, cause: 'create' | 'update' | 'delete') => void>();

  constructor() {
    const pub = this.createNetwork({ name: 'public', projectId: '', external: true, shared: true });
    this.createSubnet({ networkId: pub.id, projectId: '', cidr: '172.24.4.0/24', name: 'public-subnet' });
  }

  /** The state to save (JSON-serialisable; restored by {@link restore}). */
  snapshot(): NetworkSnapshot {
    return {
      networks: [...this.networks.values()],
      subnets: [...this.subnets.values()].map((x) => ({ ...x, used: [...x.used] })),
      ports: [...this.ports.values()],
      floatingIps: [...this.floatingIps.values()],
      routers: [...this.routers.values()],
      autoNetCounter: this.autoNetCounter,
    };
  }

  /** Replaces the whole state with a saved one (at start, before any request). */
  restore(s: NetworkSnapshot): void {
    const fill = <T extends { id: string }>(m: Map<string, T>, items: T[]): void => {
      m.clear();
      for (const x of items) m.set(x.id, x);
    };
    fill(this.networks, s.networks);
    fill(this.subnets, s.subnets.map((x) => ({ ...x, used: new Set(x.used) })));
    fill(this.ports, s.ports);
    fill(this.floatingIps, s.floatingIps);
    fill(this.routers, s.routers);
    this.autoNetCounter = s.autoNetCounter;
  }

  /** Subscribes to port changes (in-process observers); returns the unsubscribe function. */
  onPortChange(listener: (portId: string, cause: 'create' | 'update' | 'delete') => void): () => void {
    this.portListeners.add(listener);
    return () => this.portListeners.delete(listener);
  }

  /** Reports a port change to the port listeners (called by whoever changed the port). */
  portChanged(portId: string, cause: 'create' | 'update' | 'delete'): void {
    for (const l of this.portListeners) {
      try {
        l(portId, cause);
      } catch {
        // an observer's failure is its own
      }
    }
  }

  /**
   * Makes sure a shared network of this name exists with exactly one IPv4 subnet of `cidr`
   * (gateway and allocation pools as given), as an operator would have created it beforehand.
   * An existing network with another subnet is re-addressed when no port uses it; otherwise
   * {@link NetworkError} says what is in the way.
   */
  ensureNetwork(p: { name: string; cidr: string; gatewayIp?: string; allocationPools?: readonly { start: string; end: string }[]; subnetName?: string }): { network: SimNetwork; subnet: SimSubnet } {
    const wanted = parseCidr(p.cidr);
    if (!wanted) throw new NetworkError(`Invalid input for cidr. Reason: '${p.cidr}' is not a valid IPv4 CIDR.`);
    const normalized = `${intToIp(wanted.base)}/${p.cidr.split('/')[1]}`;
    const gatewayIp = p.gatewayIp ?? intToIp(wanted.base + 1);
    const allocationPools = p.allocationPools && p.allocationPools.length > 0 ? [...p.allocationPools] : [{ start: intToIp(wanted.base + 2), end: intToIp(wanted.base + wanted.size - 2) }];
    const same = (s: SimSubnet): boolean =>
      s.cidr === normalized && s.gatewayIp === gatewayIp && JSON.stringify(s.allocationPools) === JSON.stringify(allocationPools);
    let net = [...this.networks.values()].find((n) => n.name === p.name);
    if (net) {
      const subnets = net.subnetIds.map((id) => this.subnets.get(id)).filter((s): s is SimSubnet => s !== undefined);
      const first = subnets[0];
      if (subnets.length === 1 && first && same(first)) return { network: net, subnet: first };
      const used = [...this.ports.values()].filter((x) => x.networkId === (net as SimNetwork).id);
      if (used.length > 0) {
        throw new NetworkError(
          `network ${p.name} exists with subnet(s) ${subnets.map((s) => s.cidr).join(', ') || 'none'} and ${used.length} port(s); it cannot be re-addressed to ${normalized}`,
        );
      }
      for (const s of subnets) this.deleteSubnet(s.id);
    } else {
      net = this.createNetwork({ name: p.name, projectId: '', shared: true });
    }
    const subnet = this.createSubnet({
      networkId: net.id,
      projectId: '',
      cidr: normalized,
      name: p.subnetName ?? `${p.name}-subnet`,
      gatewayIp,
      allocationPools,
    });
    return { network: net, subnet };
  }

  /** Creates a network. */
  createNetwork(p: {
    name?: string;
    projectId: string;
    external?: boolean;
    shared?: boolean;
    adminStateUp?: boolean;
    mtu?: number;
    valueSpecs?: Record<string, unknown>;
  }): SimNetwork {
    const net: SimNetwork = {
      id: uuid(),
      name: p.name ?? '',
      projectId: p.projectId,
      subnetIds: [],
      adminStateUp: p.adminStateUp ?? true,
      shared: p.shared ?? false,
      external: p.external ?? false,
      mtu: p.mtu ?? 1450,
      valueSpecs: p.valueSpecs ?? {},
    };
    this.networks.set(net.id, net);
    return net;
  }

  /**
   * Finds a network by id or name. An unknown reference creates a network of that name: the
   * simulated cloud behaves as if every provider network a package names (`net0`, `net_mgmt`, ...)
   * had been created by the operator beforehand.
   */
  resolveNetwork(ref: string, projectId: string): SimNetwork {
    const byId = this.networks.get(ref);
    if (byId) return byId;
    const byName = [...this.networks.values()].find((n) => n.name === ref);
    if (byName) return byName;
    const net = this.createNetwork({ name: ref, projectId, shared: true });
    this.autoNetCounter += 1;
    const third = 100 + (this.autoNetCounter % 150);
    this.createSubnet({ networkId: net.id, projectId, cidr: `10.${third}.0.0/24`, name: `${ref}-subnet` });
    return net;
  }

  deleteNetwork(id: string): void {
    const net = this.networks.get(id);
    if (!net) return;
    for (const sid of [...net.subnetIds]) this.deleteSubnet(sid);
    for (const port of [...this.ports.values()]) if (port.networkId === id) this.ports.delete(port.id);
    this.networks.delete(id);
  }

  /** Creates a subnet; pools default to the CIDR's hosts after the gateway. */
  createSubnet(p: {
    networkId: string;
    projectId: string;
    cidr?: string;
    name?: string;
    ipVersion?: number;
    gatewayIp?: string | null;
    allocationPools?: { start: string; end: string }[];
    enableDhcp?: boolean;
    dnsNameservers?: string[];
  }): SimSubnet {
    const net = this.networks.get(p.networkId);
    if (!net) throw new NetworkError(`Network ${p.networkId} could not be found.`);
    const cidr = p.cidr ?? `10.${200 + (this.subnets.size % 50)}.${this.subnets.size % 256}.0/24`;
    const parsed = parseCidr(cidr);
    if (!parsed) throw new NetworkError(`Invalid input for cidr. Reason: '${cidr}' is not a valid IPv4 CIDR.`);
    const gateway = p.gatewayIp === undefined ? intToIp(parsed.base + 1) : p.gatewayIp;
    const pools =
      p.allocationPools && p.allocationPools.length > 0
        ? p.allocationPools
        : [{ start: intToIp(parsed.base + 2), end: intToIp(parsed.base + parsed.size - 2) }];
    const subnet: SimSubnet = {
      id: uuid(),
      name: p.name ?? '',
      networkId: net.id,
      projectId: p.projectId,
      cidr: `${intToIp(parsed.base)}/${cidr.split('/')[1]}`,
      ipVersion: p.ipVersion ?? 4,
      gatewayIp: gateway,
      allocationPools: pools,
      enableDhcp: p.enableDhcp ?? true,
      dnsNameservers: p.dnsNameservers ?? [],
      used: new Set(gateway ? [gateway] : []),
    };
    this.subnets.set(subnet.id, subnet);
    net.subnetIds.push(subnet.id);
    return subnet;
  }

  deleteSubnet(id: string): void {
    const subnet = this.subnets.get(id);
    if (!subnet) return;
    const net = this.networks.get(subnet.networkId);
    if (net) net.subnetIds.splice(net.subnetIds.indexOf(id), 1);
    this.subnets.delete(id);
  }

  /** Finds a subnet by id or name. */
  findSubnet(ref: string): SimSubnet | undefined {
    return this.subnets.get(ref) ?? [...this.subnets.values()].find((s) => s.name === ref);
  }

  private allocate(subnet: SimSubnet, wanted?: string): string {
    if (wanted) {
      if (subnet.used.has(wanted)) {
        throw new NetworkError(`IP address ${wanted} already allocated in subnet ${subnet.id}`);
      }
      subnet.used.add(wanted);
      return wanted;
    }
    for (const pool of subnet.allocationPools) {
      for (let n = ipToInt(pool.start); n <= ipToInt(pool.end); n++) {
        const ip = intToIp(n);
        if (!subnet.used.has(ip)) {
          subnet.used.add(ip);
          return ip;
        }
      }
    }
    throw new NetworkError(`No more IP addresses available on network ${subnet.networkId}.`);
  }

  /** Creates a port with one address per requested fixed IP (or one from the first subnet). */
  createPort(p: {
    networkId: string;
    projectId: string;
    name?: string;
    fixedIps?: { subnet?: string; ip_address?: string }[];
    allowedAddressPairs?: { ip_address: string; mac_address?: string }[];
    securityGroups?: string[];
    deviceOwner?: string;
    macAddress?: string;
    adminStateUp?: boolean;
    vnicType?: string;
    valueSpecs?: Record<string, unknown>;
  }): SimPort {
    const net = this.networks.get(p.networkId);
    if (!net) throw new NetworkError(`Network ${p.networkId} could not be found.`);
    const fixed: SimFixedIp[] = [];
    const requests = p.fixedIps && p.fixedIps.length > 0 ? p.fixedIps : undefined;
    if (requests) {
      for (const r of requests) {
        let subnet = r.subnet ? this.findSubnet(r.subnet) : undefined;
        if (!subnet && r.ip_address) {
          subnet = net.subnetIds
            .map((id) => this.subnets.get(id))
            .find((s) => {
              const c = s ? parseCidr(s.cidr) : undefined;
              const n = ipToInt(r.ip_address as string);
              return c !== undefined && n >= c.base && n < c.base + c.size;
            });
        }
        subnet ??= net.subnetIds.map((id) => this.subnets.get(id)).find((s) => s !== undefined);
        if (!subnet) {
          if (r.ip_address) fixed.push({ subnet_id: '', ip_address: r.ip_address });
          continue;
        }
        fixed.push({ subnet_id: subnet.id, ip_address: this.allocate(subnet, r.ip_address) });
      }
    } else {
      const first = net.subnetIds.map((id) => this.subnets.get(id)).find((s) => s !== undefined);
      if (first) fixed.push({ subnet_id: first.id, ip_address: this.allocate(first) });
    }
    const port: SimPort = {
      id: uuid(),
      name: p.name ?? '',
      networkId: net.id,
      projectId: p.projectId,
      fixedIps: fixed,
      macAddress: p.macAddress ?? randomMac(),
      deviceId: '',
      deviceOwner: p.deviceOwner ?? '',
      allowedAddressPairs: p.allowedAddressPairs ?? [],
      securityGroups: p.securityGroups ?? ['default'],
      adminStateUp: p.adminStateUp ?? true,
      vnicType: p.vnicType ?? 'normal',
      valueSpecs: p.valueSpecs ?? {},
    };
    this.ports.set(port.id, port);
    this.portChanged(port.id, 'create');
    return port;
  }

  /** Deletes a port and frees its addresses. */
  deletePort(id: string): void {
    const port = this.ports.get(id);
    if (!port) return;
    for (const f of port.fixedIps) this.subnets.get(f.subnet_id)?.used.delete(f.ip_address);
    for (const fip of this.floatingIps.values()) {
      if (fip.portId === id) {
        fip.portId = null;
        fip.fixedIpAddress = null;
      }
    }
    this.ports.delete(id);
    this.portChanged(id, 'delete');
  }

  /** Finds a port by id or name. */
  findPort(ref: string): SimPort | undefined {
    return this.ports.get(ref) ?? [...this.ports.values()].find((p) => p.name === ref);
  }

  /** Allocates a floating IP on an external network, optionally bound to a port. */
  createFloatingIp(p: {
    floatingNetwork: string;
    projectId: string;
    portId?: string;
    fixedIpAddress?: string;
    floatingIpAddress?: string;
  }): SimFloatingIp {
    const net = this.resolveNetwork(p.floatingNetwork, p.projectId);
    const subnet = net.subnetIds.map((id) => this.subnets.get(id)).find((s) => s !== undefined);
    const address = subnet ? this.allocate(subnet, p.floatingIpAddress) : (p.floatingIpAddress ?? '172.24.4.250');
    const port = p.portId ? this.ports.get(p.portId) : undefined;
    const fip: SimFloatingIp = {
      id: uuid(),
      floatingNetworkId: net.id,
      floatingIpAddress: address,
      portId: port?.id ?? null,
      fixedIpAddress: p.fixedIpAddress ?? port?.fixedIps[0]?.ip_address ?? null,
      projectId: p.projectId,
    };
    this.floatingIps.set(fip.id, fip);
    if (fip.portId) this.portChanged(fip.portId, 'update');
    return fip;
  }

  /**
   * Binds a floating IP to a port (its first fixed IP unless `fixedIpAddress`), or unbinds it
   * (`portId` null); the ports it leaves and joins are reported as changed (observers such as the
   * lab follow the NAT).
   */
  associateFloatingIp(id: string, portId: string | null, fixedIpAddress?: string | null): void {
    const fip = this.floatingIps.get(id);
    if (!fip) return;
    const before = fip.portId;
    fip.portId = portId;
    fip.fixedIpAddress = fixedIpAddress ?? (portId ? (this.ports.get(portId)?.fixedIps[0]?.ip_address ?? null) : null);
    for (const p of new Set([before, portId])) if (p) this.portChanged(p, 'update');
  }

  /** Floating IPs bound to a port: address and the fixed IP it maps to. */
  floatingOf(portId: string): { floatingIp: string; fixedIp: string }[] {
    const out: { floatingIp: string; fixedIp: string }[] = [];
    for (const f of this.floatingIps.values()) {
      if (f.portId !== portId) continue;
      const fixed = f.fixedIpAddress ?? this.ports.get(portId)?.fixedIps[0]?.ip_address;
      if (fixed) out.push({ floatingIp: f.floatingIpAddress, fixedIp: fixed });
    }
    return out;
  }

  deleteFloatingIp(id: string): void {
    const fip = this.floatingIps.get(id);
    if (!fip) return;
    const net = this.networks.get(fip.floatingNetworkId);
    for (const sid of net?.subnetIds ?? []) this.subnets.get(sid)?.used.delete(fip.floatingIpAddress);
    this.floatingIps.delete(id);
    if (fip.portId) this.portChanged(fip.portId, 'update');
  }

  /** Creates a router. */
  createRouter(p: {
    name?: string;
    projectId: string;
    externalGatewayInfo?: Record<string, unknown> | null;
    adminStateUp?: boolean;
  }): SimRouter {
    const r: SimRouter = {
      id: uuid(),
      name: p.name ?? '',
      projectId: p.projectId,
      externalGatewayInfo: p.externalGatewayInfo ?? null,
      adminStateUp: p.adminStateUp ?? true,
      interfaces: [],
    };
    this.routers.set(r.id, r);
    return r;
  }

  /** A Neutron-like document of a network (for `show` attributes). */
  networkDoc(net: SimNetwork): Record<string, unknown> {
    return {
      id: net.id,
      name: net.name,
      tenant_id: net.projectId,
      project_id: net.projectId,
      subnets: [...net.subnetIds],
      admin_state_up: net.adminStateUp,
      shared: net.shared,
      'router:external': net.external,
      status: 'ACTIVE',
      mtu: net.mtu,
      ...net.valueSpecs,
    };
  }

  /** A Neutron-like document of a subnet. */
  subnetDoc(s: SimSubnet): Record<string, unknown> {
    return {
      id: s.id,
      name: s.name,
      network_id: s.networkId,
      tenant_id: s.projectId,
      project_id: s.projectId,
      cidr: s.cidr,
      ip_version: s.ipVersion,
      gateway_ip: s.gatewayIp,
      allocation_pools: s.allocationPools,
      enable_dhcp: s.enableDhcp,
      dns_nameservers: s.dnsNameservers,
      host_routes: [],
    };
  }

  /** A Neutron-like document of a port. */
  portDoc(p: SimPort): Record<string, unknown> {
    return {
      id: p.id,
      name: p.name,
      network_id: p.networkId,
      tenant_id: p.projectId,
      project_id: p.projectId,
      fixed_ips: p.fixedIps.map((f) => ({ ...f })),
      mac_address: p.macAddress,
      device_id: p.deviceId,
      device_owner: p.deviceOwner,
      allowed_address_pairs: p.allowedAddressPairs,
      security_groups: p.securityGroups,
      admin_state_up: p.adminStateUp,
      status: p.deviceId && !p.linkDown ? 'ACTIVE' : 'DOWN',
      'binding:vnic_type': p.vnicType,
      ...p.valueSpecs,
    };
  }

  /** A Neutron-like document of a floating IP. */
  floatingIpDoc(f: SimFloatingIp): Record<string, unknown> {
    return {
      id: f.id,
      floating_network_id: f.floatingNetworkId,
      floating_ip_address: f.floatingIpAddress,
      fixed_ip_address: f.fixedIpAddress,
      port_id: f.portId,
      tenant_id: f.projectId,
      project_id: f.projectId,
      status: f.portId ? 'ACTIVE' : 'DOWN',
    };
  }

  /** A Neutron-like document of a router. */
  routerDoc(r: SimRouter): Record<string, unknown> {
    return {
      id: r.id,
      name: r.name,
      tenant_id: r.projectId,
      project_id: r.projectId,
      external_gateway_info: r.externalGatewayInfo,
      admin_state_up: r.adminStateUp,
      status: 'ACTIVE',
    };
  }
}
