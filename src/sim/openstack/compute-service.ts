/**
 * Simulated Nova: compute hosts, servers, server groups, flavors and the `/v2.1` API a VNFM reads
 * (`GET /servers`, `/servers/detail`, `/servers/{id}`, server actions). Servers are created by the
 * simulated Heat; faults (a server or a whole host going to ERROR) are injected through the
 * `/_sim` API and reported to listeners so the Server Notifier sim can raise alarms.
 */
import { createHash } from 'node:crypto';
import { header, SimHttpError, type SimRequest, type SimResponse } from './http-kit.ts';
import { isoSeconds, uuid } from './ids.ts';
import type { TokenInfo } from './keystone.ts';
import type { NetworkService } from './network-service.ts';
import { listServers } from './server-list.ts';
import type { VolumeService } from './volume-service.ts';

/** Server states the sim uses (a subset of Nova's). */
export type ServerStatus = 'ACTIVE' | 'ERROR' | 'SHUTOFF' | 'BUILD' | 'REBOOT' | 'DELETED';

/** A simulated compute host. */
export interface SimHost {
  readonly name: string;
  state: 'up' | 'down';
}

/** A simulated Nova server. */
export interface SimServer {
  readonly id: string;
  name: string;
  readonly projectId: string;
  readonly userId: string;
  status: ServerStatus;
  host: string;
  flavor: string;
  image: string;
  readonly availabilityZone: string;
  metadata: Record<string, string>;
  readonly createdAt: string;
  updatedAt: string;
  readonly instanceName: string;
  /** Ports attached to the server, in `networks` order. */
  portIds: string[];
  /** Ports the server created itself (a `networks` entry without `port`), deleted with it. */
  readonly ownedPortIds: string[];
  volumeIds: string[];
  readonly groupId: string | undefined;
  readonly keyName: string | null;
  readonly userData: string | null;
  /** Heat resource that created the server, for state dumps. */
  readonly owner: { stackId: string; resourceName: string } | undefined;
  fault: { code: number; message: string; created: string } | undefined;
}

/** A Nova server group. */
export interface SimServerGroup {
  readonly id: string;
  readonly name: string;
  readonly policies: string[];
  readonly projectId: string;
  readonly members: Set<string>;
}

/** A flavor known to the simulated Nova. */
export interface SimFlavor {
  readonly id: string;
  readonly name: string;
  readonly vcpus: number;
  readonly ram: number;
  readonly disk: number;
  readonly ephemeral: number;
  readonly swap: number;
  readonly isPublic: boolean;
  readonly extraSpecs: Record<string, string>;
}

/** Reported to listeners when servers fail or recover (the input of the Server Notifier sim). */
export interface ComputeEvent {
  readonly event: 'server.fault' | 'host.fault' | 'server.recovered' | 'host.recovered';
  readonly time: string;
  /** The host concerned (for a server event: the server's host). */
  readonly host: string | null;
  /** Server state change(s), every server of the host for a host event. */
  readonly servers: readonly { id: string; name: string; project_id: string; host: string; status: string }[];
  /** Tacker fault type: `10` physical server fault, `20` VM status inconsistency, ... */
  readonly fault_type?: string;
  readonly fault_id?: string;
  readonly fault_option?: Record<string, unknown>;
}

/**
 * A change in a server's life, for in-process observers (the live-VM lab): created (it is ACTIVE
 * once created), deleted, its status or ports changed (server actions, faults, recoveries, an
 * in-place update of its networks), or a port changed (created, updated, deleted).
 */
export interface ServerLifecycleEvent {
  readonly event: 'server.created' | 'server.deleted' | 'server.updated' | 'port.changed';
  readonly time: string;
  /** The server concerned (absent for `port.changed`). */
  readonly server?: ServerView;
  /** The port concerned (`port.changed`). */
  readonly portId?: string;
  /** What happened: `create`, `delete`, `stop`, `start`, `reboot`, `fault`, `recover`, `networks`, `update`. */
  readonly cause: string;
}

/** A server with the addresses of its ports, as observers see it. */
export interface ServerView {
  readonly id: string;
  readonly name: string;
  readonly status: ServerStatus;
  readonly host: string;
  readonly createdAt: string;
  readonly stackId: string | null;
  /** Ports in `networks` order, each with its network and fixed IPs. */
  readonly ports: readonly ServerPortView[];
}

/** One port of a {@link ServerView}. */
export interface ServerPortView {
  readonly id: string;
  readonly networkId: string;
  readonly networkName: string;
  readonly fixedIps: readonly string[];
  /** `allowed_address_pairs` IP addresses (or CIDRs) of the port. */
  readonly allowedAddresses: readonly string[];
  /** Floating IPs bound to the port, each with the fixed IP Neutron's NAT maps it to. */
  readonly floatingIps: readonly { floatingIp: string; fixedIp: string }[];
}

/** Saved state of the simulated Nova (see {@link ComputeService.snapshot}). */
export interface ComputeSnapshot {
  hosts: SimHost[];
  servers: SimServer[];
  groups: (Omit<SimServerGroup, 'members'> & { members: string[] })[];
  flavors: SimFlavor[];
  instanceCounter: number;
  /** Deleted servers still listed by `changes-since` (absent in older saves). */
  deleted?: SimServer[];
}

/** Thrown when Nova would refuse a request (no valid host, unknown flavor, ...). */
export class ComputeError extends Error {}

const BUILTIN_FLAVORS: readonly [string, number, number, number][] = [
  ['m1.nano', 1, 128, 1],
  ['m1.micro', 1, 192, 1],
  ['m1.tiny', 1, 512, 1],
  ['m1.small', 1, 2048, 20],
  ['m1.medium', 2, 4096, 40],
  ['m1.large', 4, 8192, 80],
  ['m1.xlarge', 8, 16384, 160],
];

/** Deleted servers kept for `changes-since` listings (Nova keeps them until archived). */
const DELETED_KEPT = 1000;

function itemNotFound(message: string): SimHttpError {
  return new SimHttpError(404, { itemNotFound: { code: 404, message } }, message);
}

function conflictingState(message: string): SimHttpError {
  return new SimHttpError(409, { conflictingRequest: { code: 409, message } }, message);
}

function parseMicroversion(req: SimRequest): [number, number] {
  const raw = header(req, 'x-openstack-nova-api-version') ?? header(req, 'openstack-api-version')?.replace(/^compute\s+/, '');
  if (!raw) return [2, 1];
  if (raw === 'latest') return [2, 96];
  const m = /^(\d+)\.(\d+)$/.exec(raw.trim());
  return m ? [Number(m[1]), Number(m[2])] : [2, 1];
}

/** Nova state of the simulated cloud plus its HTTP API. */
export class ComputeService {
  readonly hosts: SimHost[];
  readonly servers = new Map<string, SimServer>();
  /** Deleted servers (status `DELETED`, oldest first), listed by `changes-since` as Nova's soft-deleted rows. */
  readonly deleted = new Map<string, SimServer>();
  readonly groups = new Map<string, SimServerGroup>();
  readonly flavors = new Map<string, SimFlavor>();
  private instanceCounter = 0;
  private readonly listeners: ((ev: ComputeEvent) => void)[] = [];
  private readonly lifecycle = new Set<(ev: ServerLifecycleEvent) => void>();

  constructor(
    hostCount: number,
    private readonly network: NetworkService,
    private readonly volumes: VolumeService,
    private readonly baseUrl: () => string,
  ) {
    this.hosts = Array.from({ length: hostCount }, (_, i) => ({ name: `compute-${i + 1}`, state: 'up' as const }));
    network.onPortChange((portId, cause) => this.emitLifecycle('port.changed', cause, undefined, portId));
    for (const [name, vcpus, ram, disk] of BUILTIN_FLAVORS) {
      this.addFlavor({ name, vcpus, ram, disk });
    }
  }

  /** The state to save (JSON-serialisable; restored by {@link restore}). */
  snapshot(): ComputeSnapshot {
    return {
      hosts: this.hosts,
      servers: [...this.servers.values()],
      groups: [...this.groups.values()].map((g) => ({ ...g, members: [...g.members] })),
      flavors: [...this.flavors.values()],
      instanceCounter: this.instanceCounter,
      deleted: [...this.deleted.values()],
    };
  }

  /** Replaces the whole state with a saved one (at start, before any request). */
  restore(s: ComputeSnapshot): void {
    this.hosts.splice(0, this.hosts.length, ...s.hosts.map((h) => ({ name: h.name, state: h.state })));
    this.servers.clear();
    for (const srv of s.servers) this.servers.set(srv.id, srv);
    this.groups.clear();
    for (const g of s.groups) this.groups.set(g.id, { ...g, members: new Set(g.members) });
    this.flavors.clear();
    for (const f of s.flavors) this.flavors.set(f.id, f);
    this.instanceCounter = s.instanceCounter;
    this.deleted.clear();
    for (const srv of s.deleted ?? []) this.deleted.set(srv.id, srv);
  }

  /** Registers a listener for fault/recovery events. */
  onEvent(listener: (ev: ComputeEvent) => void): void {
    this.listeners.push(listener);
  }

  private emit(ev: ComputeEvent): void {
    for (const l of this.listeners) l(ev);
  }

  /**
   * Subscribes to server lifecycle events (in-process; nothing is sent over HTTP). Returns the
   * unsubscribe function. Listeners run synchronously after the change and must not throw.
   */
  onLifecycle(listener: (ev: ServerLifecycleEvent) => void): () => void {
    this.lifecycle.add(listener);
    return () => this.lifecycle.delete(listener);
  }

  /** Reports a server lifecycle change to the lifecycle listeners. */
  emitLifecycle(event: ServerLifecycleEvent['event'], cause: string, s?: SimServer | ServerView, portId?: string): void {
    if (this.lifecycle.size === 0) return;
    const server = s === undefined ? undefined : 'ports' in s ? s : this.view(s);
    const ev: ServerLifecycleEvent = { event, cause, time: isoSeconds(), ...(server ? { server } : {}), ...(portId ? { portId } : {}) };
    for (const l of this.lifecycle) {
      try {
        l(ev);
      } catch {
        // an observer's failure is its own
      }
    }
  }

  /** A server with its ports' addresses (for lifecycle observers). */
  view(s: SimServer): ServerView {
    const ports: ServerPortView[] = [];
    for (const pid of s.portIds) {
      const p = this.network.ports.get(pid);
      if (!p) continue;
      ports.push({
        id: p.id,
        networkId: p.networkId,
        networkName: this.network.networks.get(p.networkId)?.name ?? '',
        fixedIps: p.fixedIps.map((f) => f.ip_address),
        allowedAddresses: p.allowedAddressPairs.map((a) => a.ip_address).filter((a) => a !== ''),
        floatingIps: this.network.floatingOf(p.id),
      });
    }
    return { id: s.id, name: s.name, status: s.status, host: s.host, createdAt: s.createdAt, stackId: s.owner?.stackId ?? null, ports };
  }

  /** Adds a flavor (builtin ones and those `OS::Nova::Flavor` creates). */
  addFlavor(p: {
    name: string;
    vcpus?: number;
    ram?: number;
    disk?: number;
    ephemeral?: number;
    swap?: number;
    isPublic?: boolean;
    extraSpecs?: Record<string, string>;
    id?: string;
  }): SimFlavor {
    const f: SimFlavor = {
      id: p.id ?? uuid(),
      name: p.name,
      vcpus: p.vcpus ?? 1,
      ram: p.ram ?? 512,
      disk: p.disk ?? 1,
      ephemeral: p.ephemeral ?? 0,
      swap: p.swap ?? 0,
      isPublic: p.isPublic ?? true,
      extraSpecs: p.extraSpecs ?? {},
    };
    this.flavors.set(f.id, f);
    return f;
  }

  /** Finds a flavor by id or name; undefined when the cloud has none of that id or name. */
  findFlavor(ref: string): SimFlavor | undefined {
    return this.flavors.get(ref) ?? [...this.flavors.values()].find((x) => x.name === ref);
  }

  /**
   * Finds a flavor by id or name; throws {@link ComputeError} for an unknown or empty reference,
   * as Nova refuses a server whose flavor does not exist (the builtin `m1.*` flavors and those
   * `OS::Nova::Flavor` or the admin API made are known).
   */
  resolveFlavor(ref: string): SimFlavor {
    const f = ref === '' ? undefined : this.findFlavor(ref);
    if (!f) throw new ComputeError(`Flavor ${ref === '' ? '(empty)' : ref} could not be found.`);
    return f;
  }

  createServerGroup(p: { name: string; policies: string[]; projectId: string }): SimServerGroup {
    const g: SimServerGroup = { id: uuid(), name: p.name, policies: p.policies, projectId: p.projectId, members: new Set() };
    this.groups.set(g.id, g);
    return g;
  }

  deleteServerGroup(id: string): void {
    this.groups.delete(id);
  }

  private load(host: string): number {
    let n = 0;
    for (const s of this.servers.values()) if (s.host === host) n++;
    return n;
  }

  /**
   * Picks a host: an `up` host, preferring the group's host for `affinity` and unused hosts for
   * `anti-affinity`, else the least loaded. Affinity is soft: when the group's host is down the
   * server goes elsewhere (a real Nova would refuse), so healing after a host fault works.
   */
  private schedule(groupId: string | undefined): string {
    const up = this.hosts.filter((h) => h.state === 'up');
    if (up.length === 0) {
      throw new ComputeError('No valid host was found. There are not enough hosts available.');
    }
    const byLoad = [...up].sort((a, b) => this.load(a.name) - this.load(b.name));
    const group = groupId ? this.groups.get(groupId) : undefined;
    if (group) {
      const memberHosts = [...group.members]
        .map((id) => this.servers.get(id))
        .filter((s): s is SimServer => s !== undefined && s.status !== 'ERROR')
        .map((s) => s.host);
      const policy = group.policies[0] ?? '';
      if (policy.endsWith('affinity') && !policy.includes('anti')) {
        const h = up.find((x) => memberHosts.includes(x.name));
        if (h) return h.name;
      } else if (policy.includes('anti-affinity')) {
        const free = byLoad.find((x) => !memberHosts.includes(x.name));
        if (free) return free.name;
      }
    }
    return (byLoad[0] as SimHost).name;
  }

  /** Creates an ACTIVE server on a scheduled host; throws {@link ComputeError} when none is up. */
  createServer(p: {
    name: string;
    projectId: string;
    userId: string;
    flavor: string;
    image: string;
    availabilityZone?: string;
    metadata?: Record<string, string>;
    portIds: string[];
    ownedPortIds: string[];
    volumeIds: string[];
    groupId?: string;
    keyName?: string | null;
    userData?: string | null;
    owner?: { stackId: string; resourceName: string };
  }): SimServer {
    const flavor = this.resolveFlavor(p.flavor);
    if (p.image === '' && p.volumeIds.length === 0) {
      throw new ComputeError(`Neither image nor bootable volume is specified for instance ${p.name}.`);
    }
    const host = this.schedule(p.groupId);
    this.instanceCounter += 1;
    const now = isoSeconds();
    const server: SimServer = {
      id: uuid(),
      name: p.name,
      projectId: p.projectId,
      userId: p.userId,
      status: 'ACTIVE',
      host,
      flavor: flavor.name,
      image: p.image,
      availabilityZone: p.availabilityZone || 'nova',
      metadata: p.metadata ?? {},
      createdAt: now,
      updatedAt: now,
      instanceName: `instance-${this.instanceCounter.toString(16).padStart(8, '0')}`,
      portIds: [...p.portIds],
      ownedPortIds: [...p.ownedPortIds],
      volumeIds: [...p.volumeIds],
      groupId: p.groupId,
      keyName: p.keyName ?? null,
      userData: p.userData ?? null,
      owner: p.owner,
      fault: undefined,
    };
    this.servers.set(server.id, server);
    for (const pid of server.portIds) {
      const port = this.network.ports.get(pid);
      if (port) {
        port.deviceId = server.id;
        port.deviceOwner = 'compute:nova';
      }
    }
    for (const vid of server.volumeIds) this.volumes.attach(vid, server.id);
    if (p.groupId) this.groups.get(p.groupId)?.members.add(server.id);
    this.emitLifecycle('server.created', 'create', server);
    return server;
  }

  /** Deletes a server, its own ports, and detaches ports/volumes it used. */
  deleteServer(id: string): void {
    const s = this.servers.get(id);
    if (!s) return;
    const before = this.lifecycle.size > 0 ? this.view(s) : undefined;
    for (const pid of s.portIds) {
      const port = this.network.ports.get(pid);
      if (port && port.deviceId === id) {
        port.deviceId = '';
        port.deviceOwner = '';
      }
    }
    for (const pid of s.ownedPortIds) this.network.deletePort(pid);
    for (const vid of s.volumeIds) this.volumes.detach(vid, id);
    for (const g of this.groups.values()) g.members.delete(id);
    s.status = 'DELETED';
    s.updatedAt = isoSeconds();
    this.servers.delete(id);
    this.deleted.set(id, s);
    if (this.deleted.size > DELETED_KEPT) this.deleted.delete(this.deleted.keys().next().value as string);
    if (before) this.emitLifecycle('server.deleted', 'delete', { ...before, status: 'DELETED' });
  }

  private eventServer(s: SimServer): { id: string; name: string; project_id: string; host: string; status: string } {
    return { id: s.id, name: s.name, project_id: s.projectId, host: s.host, status: s.status };
  }

  /** Puts a server into ERROR (or another status) and reports a `server.fault` event. */
  failServer(
    id: string,
    opts: { status?: ServerStatus; fault_type?: string; fault_id?: string; fault_option?: Record<string, unknown>; message?: string } = {},
  ): SimServer | undefined {
    const s = this.servers.get(id);
    if (!s) return undefined;
    s.status = opts.status ?? 'ERROR';
    s.updatedAt = isoSeconds();
    s.fault = { code: 500, message: opts.message ?? 'Simulated server fault', created: s.updatedAt };
    this.emitLifecycle('server.updated', 'fault', s);
    this.emit({
      event: 'server.fault',
      time: s.updatedAt,
      host: s.host,
      servers: [this.eventServer(s)],
      fault_type: opts.fault_type ?? '20',
      ...(opts.fault_id !== undefined ? { fault_id: opts.fault_id } : {}),
      ...(opts.fault_option !== undefined ? { fault_option: opts.fault_option } : {}),
    });
    return s;
  }

  /** Brings a failed server back to ACTIVE. */
  recoverServer(id: string): SimServer | undefined {
    const s = this.servers.get(id);
    if (!s) return undefined;
    s.status = 'ACTIVE';
    s.fault = undefined;
    s.updatedAt = isoSeconds();
    this.emitLifecycle('server.updated', 'recover', s);
    this.emit({ event: 'server.recovered', time: s.updatedAt, host: s.host, servers: [this.eventServer(s)] });
    return s;
  }

  /** Marks a host down and every server on it ERROR, reported as one `host.fault` event. */
  failHost(
    name: string,
    opts: { fault_type?: string; fault_id?: string; fault_option?: Record<string, unknown> } = {},
  ): SimServer[] | undefined {
    const host = this.hosts.find((h) => h.name === name);
    if (!host) return undefined;
    host.state = 'down';
    const now = isoSeconds();
    const hit = [...this.servers.values()].filter((s) => s.host === name);
    for (const s of hit) {
      s.status = 'ERROR';
      s.updatedAt = now;
      s.fault = { code: 500, message: `Compute host ${name} failed`, created: now };
    }
    for (const s of hit) this.emitLifecycle('server.updated', 'fault', s);
    this.emit({
      event: 'host.fault',
      time: now,
      host: name,
      servers: hit.map((s) => this.eventServer(s)),
      fault_type: opts.fault_type ?? '10',
      ...(opts.fault_id !== undefined ? { fault_id: opts.fault_id } : {}),
      ...(opts.fault_option !== undefined ? { fault_option: opts.fault_option } : {}),
    });
    return hit;
  }

  /** Marks a host up again and its ERROR servers ACTIVE. */
  recoverHost(name: string): SimServer[] | undefined {
    const host = this.hosts.find((h) => h.name === name);
    if (!host) return undefined;
    host.state = 'up';
    const now = isoSeconds();
    const back = [...this.servers.values()].filter((s) => s.host === name && s.status === 'ERROR');
    for (const s of back) {
      s.status = 'ACTIVE';
      s.fault = undefined;
      s.updatedAt = now;
    }
    for (const s of back) this.emitLifecycle('server.updated', 'recover', s);
    this.emit({ event: 'host.recovered', time: now, host: name, servers: back.map((s) => this.eventServer(s)) });
    return back;
  }

  /** Nova's `hostId`: a per-project hash of the host name. */
  hostId(s: SimServer): string {
    return createHash('sha224').update(s.projectId + s.host).digest('hex');
  }

  /** Nova `addresses`: network name -> addresses of the server's ports on it. */
  addresses(s: SimServer): Record<string, Record<string, unknown>[]> {
    const out: Record<string, Record<string, unknown>[]> = {};
    for (const pid of s.portIds) {
      const port = this.network.ports.get(pid);
      if (!port) continue;
      const net = this.network.networks.get(port.networkId);
      const key = net?.name || port.networkId;
      const list = out[key] ?? [];
      out[key] = list;
      for (const f of port.fixedIps) {
        list.push({
          version: f.ip_address.includes(':') ? 6 : 4,
          addr: f.ip_address,
          'OS-EXT-IPS:type': 'fixed',
          'OS-EXT-IPS-MAC:mac_addr': port.macAddress,
        });
      }
      for (const fip of this.network.floatingIps.values()) {
        if (fip.portId === port.id) {
          list.push({
            version: 4,
            addr: fip.floatingIpAddress,
            'OS-EXT-IPS:type': 'floating',
            'OS-EXT-IPS-MAC:mac_addr': port.macAddress,
          });
        }
      }
    }
    return out;
  }

  private links(s: SimServer): Record<string, string>[] {
    const base = this.baseUrl();
    return [
      { rel: 'self', href: `${base}/v2.1/servers/${s.id}` },
      { rel: 'bookmark', href: `${base}/servers/${s.id}` },
    ];
  }

  /** The Nova server document (`GET /servers/{id}`), shaped after the requested microversion. */
  serverDoc(s: SimServer, microversion: [number, number] = [2, 1]): Record<string, unknown> {
    // A flavor deleted after the server was built still shows, as in Nova (the server keeps a copy).
    const flavor = this.findFlavor(s.flavor) ?? { id: s.flavor, name: s.flavor, vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0, isPublic: true, extraSpecs: {} };
    const newFlavor = microversion[0] > 2 || (microversion[0] === 2 && microversion[1] >= 47);
    const vmState = { ACTIVE: 'active', SHUTOFF: 'stopped', ERROR: 'error', DELETED: 'deleted' }[s.status as string] ?? 'building';
    const doc: Record<string, unknown> = {
      id: s.id,
      name: s.name,
      status: s.status,
      tenant_id: s.projectId,
      user_id: s.userId,
      metadata: s.metadata,
      hostId: this.hostId(s),
      image: s.image ? { id: s.image, links: [] } : '',
      flavor: newFlavor
        ? {
            original_name: flavor.name,
            vcpus: flavor.vcpus,
            ram: flavor.ram,
            disk: flavor.disk,
            ephemeral: flavor.ephemeral,
            swap: flavor.swap,
            extra_specs: flavor.extraSpecs,
          }
        : { id: flavor.id, links: [] },
      created: s.createdAt,
      updated: s.updatedAt,
      addresses: this.addresses(s),
      accessIPv4: '',
      accessIPv6: '',
      links: this.links(s),
      'OS-DCF:diskConfig': 'MANUAL',
      progress: 0,
      'OS-EXT-AZ:availability_zone': s.availabilityZone,
      config_drive: '',
      key_name: s.keyName,
      'OS-SRV-USG:launched_at': s.createdAt.replace('Z', '.000000'),
      'OS-SRV-USG:terminated_at': s.status === 'DELETED' ? s.updatedAt.replace('Z', '.000000') : null,
      'OS-EXT-SRV-ATTR:host': s.host,
      'OS-EXT-SRV-ATTR:instance_name': s.instanceName,
      'OS-EXT-SRV-ATTR:hypervisor_hostname': s.host,
      'OS-EXT-STS:task_state': null,
      'OS-EXT-STS:vm_state': vmState,
      'OS-EXT-STS:power_state': s.status === 'ACTIVE' ? 1 : 4,
      'os-extended-volumes:volumes_attached': s.volumeIds.map((id) => ({ id, delete_on_termination: false })),
      security_groups: [{ name: 'default' }],
    };
    if (s.status === 'ERROR' && s.fault) doc.fault = s.fault;
    return doc;
  }

  /**
   * Handles `/v2.1[/{project_id}]/...`; returns `undefined` for other paths. `token` is the
   * already validated caller (the router rejects anonymous requests).
   */
  handle(req: SimRequest, token: TokenInfo): SimResponse | undefined {
    const first = req.segments[0];
    if (first !== 'v2.1' && first !== 'v2') return undefined;
    const s: string[] = req.segments.slice(1);
    if (s[0] !== undefined && /^[0-9a-f]{32}$/.test(s[0])) s.shift();
    const mv = parseMicroversion(req);
    const vHeaders = { 'X-OpenStack-Nova-API-Version': `${mv[0]}.${mv[1]}`, Vary: 'X-OpenStack-Nova-API-Version' };
    if (s.length === 0 && req.method === 'GET') {
      return {
        status: 200,
        body: {
          version: {
            id: 'v2.1',
            status: 'CURRENT',
            version: '2.96',
            min_version: '2.1',
            updated: '2013-07-23T11:33:21Z',
            links: [{ rel: 'self', href: `${this.baseUrl()}/v2.1/` }],
            'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.compute+json;version=2.1' }],
          },
        },
      };
    }
    const isAdmin = token.roles.includes('admin');
    const visible = (srv: SimServer): boolean => {
      const all = req.query.get('all_tenants');
      if (isAdmin && all !== null && all !== '0' && all.toLowerCase() !== 'false') return true;
      return srv.projectId === token.project?.id;
    };
    if (s[0] === 'servers') {
      if (s.length === 1 || (s.length === 2 && s[1] === 'detail')) {
        if (req.method !== 'GET') {
          throw new SimHttpError(405, { error: { code: 405, message: 'Servers are created through Heat in this simulated cloud.' } });
        }
        const list = listServers(this, req, visible, isAdmin);
        const detail = s[1] === 'detail';
        return {
          status: 200,
          headers: vHeaders,
          body: {
            servers: list.map((x) => (detail ? this.serverDoc(x, mv) : { id: x.id, name: x.name, links: this.links(x) })),
          },
        };
      }
      const id = s[1] as string;
      const srv = this.servers.get(id);
      if (!srv || (!visible(srv) && !isAdmin)) throw itemNotFound(`Instance ${id} could not be found.`);
      if (s.length === 2) {
        if (req.method === 'GET') return { status: 200, headers: vHeaders, body: { server: this.serverDoc(srv, mv) } };
        if (req.method === 'DELETE') {
          this.deleteServer(id);
          return { status: 204 };
        }
      }
      if (s.length === 3 && s[2] === 'action' && req.method === 'POST') return this.action(srv, req.body);
      if (s.length === 3 && s[2] === 'metadata' && req.method === 'GET') return { status: 200, body: { metadata: srv.metadata } };
      if (s.length === 3 && s[2] === 'os-interface' && req.method === 'GET') {
        return {
          status: 200,
          body: {
            interfaceAttachments: srv.portIds
              .map((pid) => this.network.ports.get(pid))
              .filter((p) => p !== undefined)
              .map((p) => ({
                port_id: p.id,
                net_id: p.networkId,
                mac_addr: p.macAddress,
                port_state: 'ACTIVE',
                fixed_ips: p.fixedIps,
              })),
          },
        };
      }
      throw itemNotFound('The resource could not be found.');
    }
    if (s[0] === 'flavors' && req.method === 'GET') {
      if (s.length === 1 || s[1] === 'detail') {
        return {
          status: 200,
          body: {
            flavors: [...this.flavors.values()].map((f) =>
              s[1] === 'detail'
                ? { id: f.id, name: f.name, vcpus: f.vcpus, ram: f.ram, disk: f.disk, 'os-flavor-access:is_public': f.isPublic }
                : { id: f.id, name: f.name },
            ),
          },
        };
      }
      const f = this.flavors.get(s[1] as string);
      if (!f) throw itemNotFound(`Flavor ${s[1]} could not be found.`);
      return { status: 200, body: { flavor: { id: f.id, name: f.name, vcpus: f.vcpus, ram: f.ram, disk: f.disk } } };
    }
    if (s[0] === 'os-server-groups' && req.method === 'GET') {
      const list = [...this.groups.values()].filter((g) => isAdmin || g.projectId === token.project?.id);
      return { status: 200, body: { server_groups: list.map((g) => this.groupDoc(g)) } };
    }
    if ((s[0] === 'os-hypervisors' || s[0] === 'os-services') && req.method === 'GET') {
      if (!isAdmin) throw new SimHttpError(403, { forbidden: { code: 403, message: 'Policy does not allow this.' } });
      if (s[0] === 'os-services') {
        return {
          status: 200,
          body: {
            services: this.hosts.map((h, i) => ({
              id: i + 1,
              binary: 'nova-compute',
              host: h.name,
              zone: 'nova',
              status: 'enabled',
              state: h.state,
              updated_at: isoSeconds(),
              forced_down: h.state === 'down',
            })),
          },
        };
      }
      return {
        status: 200,
        body: {
          hypervisors: this.hosts.map((h, i) => ({
            id: i + 1,
            hypervisor_hostname: h.name,
            state: h.state,
            status: 'enabled',
            running_vms: this.load(h.name),
          })),
        },
      };
    }
    throw itemNotFound('The resource could not be found.');
  }

  /** A Nova-like server group document. */
  groupDoc(g: SimServerGroup): Record<string, unknown> {
    return { id: g.id, name: g.name, policies: g.policies, members: [...g.members], project_id: g.projectId, metadata: {} };
  }

  private action(srv: SimServer, body: unknown): SimResponse {
    const b = (body ?? {}) as Record<string, unknown>;
    const key = Object.keys(b)[0];
    const now = isoSeconds();
    switch (key) {
      case 'os-stop':
        if (srv.status !== 'ACTIVE' && srv.status !== 'ERROR') {
          throw conflictingState(`Cannot 'stop' instance ${srv.id} while it is in vm_state ${srv.status.toLowerCase()}`);
        }
        srv.status = 'SHUTOFF';
        break;
      case 'os-start':
        if (srv.status !== 'SHUTOFF') {
          throw conflictingState(`Cannot 'start' instance ${srv.id} while it is in vm_state ${srv.status.toLowerCase()}`);
        }
        srv.status = 'ACTIVE';
        break;
      case 'reboot': {
        const hostUp = this.hosts.find((h) => h.name === srv.host)?.state === 'up';
        if (!hostUp) throw conflictingState(`Compute host ${srv.host} is down.`);
        srv.status = 'ACTIVE';
        srv.fault = undefined;
        break;
      }
      default:
        throw new SimHttpError(400, { badRequest: { code: 400, message: `Unsupported server action: ${String(key)}` } });
    }
    srv.updatedAt = now;
    this.emitLifecycle('server.updated', key === 'os-stop' ? 'stop' : key === 'os-start' ? 'start' : 'reboot', srv);
    return { status: 202 };
  }
}
