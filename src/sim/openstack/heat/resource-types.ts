/**
 * Native ("leaf") resource types of the simulated Heat: Nova, Neutron and Cinder resources backed
 * by the sim's in-memory services, plus Heat's own utility types. Each type declares its
 * properties, which changes it can apply in place (others replace it, giving a new physical id as
 * on a real cloud) and its attributes, so `get_attr` and `resource show` behave like Heat's.
 * Nested templates and groups are handled by the engine, not here.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { ComputeError, type ComputeService, type SimServer } from '../compute-service.ts';
import { uuid } from '../ids.ts';
import { NetworkError, type NetworkService } from '../network-service.ts';
import type { VolumeService } from '../volume-service.ts';
import { pyJson } from './hot-template.ts';

/** What a leaf type needs to act on the simulated cloud. */
export interface LeafContext {
  readonly projectId: string;
  readonly userId: string;
  readonly stackId: string;
  readonly stackName: string;
  readonly resourceName: string;
  readonly compute: ComputeService;
  readonly network: NetworkService;
  readonly volumes: VolumeService;
  /** `<stack>-<resource>-<short id>`, Heat's generated name for unnamed cloud objects. */
  physicalName(): string;
  /** The base URL of the stack in the Heat API (signal URLs). */
  stackUrl(): string;
}

/** The persistent part of a created leaf resource. */
export interface LeafState {
  physicalId: string;
  data: Record<string, unknown>;
}

/** A failure Heat would report as `<type>: resources.<name>: <message>`. */
export class ResourceError extends Error {
  readonly type: string;

  constructor(type: string, message: string) {
    super(message);
    this.type = type;
  }
}

/** Behaviour of one native resource type. */
export interface LeafHandler {
  /** Property names the type accepts (`'any'` for `OS::Heat::None`). */
  readonly properties: readonly string[] | 'any';
  readonly required: readonly string[];
  /** Properties whose change is applied in place; a change to any other replaces the resource. `'keep'`: never replaced nor updated. */
  readonly updatable: readonly string[] | 'all' | 'keep';
  /** Attribute names (for validation and the `attributes` of `resource show`); `'any'` accepts every name. */
  readonly attributes: readonly string[] | 'any';
  create(ctx: LeafContext, props: Record<string, unknown>): LeafState;
  /** Applies an in-place update (only called when every changed property is updatable). */
  update?(ctx: LeafContext, state: LeafState, oldProps: Record<string, unknown>, newProps: Record<string, unknown>): void;
  /** Extra replacement rule on top of {@link updatable} (e.g. a volume cannot shrink). */
  needsReplace?(oldProps: Record<string, unknown>, newProps: Record<string, unknown>): boolean;
  delete(ctx: LeafContext, state: LeafState): void;
  attr(ctx: LeafContext, state: LeafState, props: Record<string, unknown>, name: string): unknown;
  /** What `get_resource` returns; the physical id by default. */
  refId?(state: LeafState): unknown;
}

function str(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  return typeof v === 'string' ? v : String(v);
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function wrapCloudError(e: unknown): never {
  if (e instanceof ComputeError) {
    throw new ResourceError('ResourceInError', `Went to status ERROR due to "Message: ${e.message}, Code: 500"`);
  }
  if (e instanceof NetworkError) throw new ResourceError('BadRequest', e.message);
  throw e;
}

// ---------------------------------------------------------------------------------------------
// Nova

const SERVER_PROPS = [
  'admin_pass',
  'availability_zone',
  'block_device_mapping',
  'block_device_mapping_v2',
  'config_drive',
  'deployment_swift_data',
  'diskConfig',
  'flavor',
  'flavor_update_policy',
  'image',
  'image_update_policy',
  'key_name',
  'metadata',
  'name',
  'networks',
  'personality',
  'reservation_id',
  'scheduler_hints',
  'security_groups',
  'software_config_transport',
  'tags',
  'user_data',
  'user_data_format',
  'user_data_update_policy',
];

interface ServerPorts {
  portIds: string[];
  owned: string[];
}

function serverPorts(ctx: LeafContext, networks: unknown): ServerPorts {
  const out: ServerPorts = { portIds: [], owned: [] };
  for (const entry of list(networks)) {
    const n = obj(entry);
    const portRef = str(n.port);
    if (portRef) {
      const port = ctx.network.findPort(portRef);
      if (!port) throw new ResourceError('NotFound', `Port ${portRef} could not be found.`);
      out.portIds.push(port.id);
    } else {
      const netRef = str(n.network) ?? str(n.uuid);
      if (!netRef) continue;
      const net = ctx.network.resolveNetwork(netRef, ctx.projectId);
      const fixedIp = str(n.fixed_ip);
      const subnet = str(n.subnet);
      const port = ctx.network.createPort({
        networkId: net.id,
        projectId: ctx.projectId,
        fixedIps: fixedIp || subnet ? [{ ip_address: fixedIp, subnet }] : undefined,
        deviceOwner: 'compute:nova',
      });
      out.portIds.push(port.id);
      out.owned.push(port.id);
    }
    const fip = str(n.floating_ip);
    const last = out.portIds[out.portIds.length - 1];
    if (fip && last) {
      if (ctx.network.floatingIps.has(fip)) ctx.network.associateFloatingIp(fip, last);
    }
  }
  return out;
}

function serverVolumes(props: Record<string, unknown>): string[] {
  const ids: string[] = [];
  for (const e of [...list(props.block_device_mapping), ...list(props.block_device_mapping_v2)]) {
    const id = str(obj(e).volume_id);
    if (id) ids.push(id);
  }
  return ids;
}

/** The image a `block_device_mapping_v2` entry boots from (boot from image into a new volume). */
function bootImage(props: Record<string, unknown>): string | undefined {
  for (const e of list(props.block_device_mapping_v2)) {
    const image = str(obj(e).image) ?? str(obj(e).image_id);
    if (image) return image;
  }
  return undefined;
}

function serverOf(ctx: LeafContext, state: LeafState): SimServer | undefined {
  return ctx.compute.servers.get(state.physicalId);
}

/** Heat's view of addresses: Nova's plus the port id of each address. */
function heatAddresses(ctx: LeafContext, s: SimServer): Record<string, Record<string, unknown>[]> {
  const out: Record<string, Record<string, unknown>[]> = {};
  for (const pid of s.portIds) {
    const port = ctx.network.ports.get(pid);
    if (!port) continue;
    const net = ctx.network.networks.get(port.networkId);
    const key = net?.name || port.networkId;
    const l = out[key] ?? [];
    out[key] = l;
    for (const f of port.fixedIps) {
      l.push({
        version: 4,
        addr: f.ip_address,
        'OS-EXT-IPS:type': 'fixed',
        'OS-EXT-IPS-MAC:mac_addr': port.macAddress,
        port: port.id,
      });
    }
  }
  return out;
}

const server: LeafHandler = {
  properties: SERVER_PROPS,
  required: ['flavor'],
  updatable: [
    'name',
    'flavor',
    'flavor_update_policy',
    'image',
    'image_update_policy',
    'metadata',
    'networks',
    'admin_pass',
    'tags',
    'user_data_update_policy',
    'user_data_format',
    'software_config_transport',
    'deployment_swift_data',
    'personality',
    'security_groups',
    'key_name',
    'user_data',
    'diskConfig',
  ],
  attributes: [
    'name',
    'addresses',
    'networks',
    'first_address',
    'show',
    'accessIPv4',
    'accessIPv6',
    'instance_name',
    'console_urls',
    'os_collect_config',
    'tags',
  ],
  needsReplace(oldProps, newProps) {
    // user_data changes replace the server unless the policy says IGNORE (Heat's default is REPLACE).
    const policy = str(newProps.user_data_update_policy) ?? 'REPLACE';
    return policy === 'REPLACE' && (oldProps.user_data ?? null) !== (newProps.user_data ?? null);
  },
  create(ctx, props) {
    // Heat validates the flavor before anything is made (a get_param path the `nfv` parameter
    // lacks gives an empty value, refused like an unknown name).
    const flavorRef = str(props.flavor) ?? '';
    if (!ctx.compute.findFlavor(flavorRef)) {
      throw new ResourceError('StackValidationFailed', `Property error: ${ctx.resourceName}.Properties.flavor: Error validating value '${flavorRef}': The Flavor ID (${flavorRef}) could not be found.`);
    }
    const ports = serverPorts(ctx, props.networks);
    try {
      const hints = obj(props.scheduler_hints);
      const groupRef = str(Array.isArray(hints.group) ? hints.group[0] : hints.group);
      const metadata: Record<string, string> = {};
      for (const [k, v] of Object.entries(obj(props.metadata))) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
      const s = ctx.compute.createServer({
        name: str(props.name) ?? ctx.physicalName(),
        projectId: ctx.projectId,
        userId: ctx.userId,
        flavor: flavorRef,
        image: str(props.image) ?? bootImage(props) ?? '',
        availabilityZone: str(props.availability_zone),
        metadata,
        portIds: ports.portIds,
        ownedPortIds: ports.owned,
        volumeIds: serverVolumes(props),
        groupId: groupRef && ctx.compute.groups.has(groupRef) ? groupRef : undefined,
        keyName: str(props.key_name) ?? null,
        userData: str(props.user_data) ?? null,
        owner: { stackId: ctx.stackId, resourceName: ctx.resourceName },
      });
      return { physicalId: s.id, data: {} };
    } catch (e) {
      for (const pid of ports.owned) ctx.network.deletePort(pid);
      wrapCloudError(e);
    }
  },
  update(ctx, state, oldProps, newProps) {
    const s = serverOf(ctx, state);
    if (!s) throw new ResourceError('NotFound', `Instance ${state.physicalId} could not be found.`);
    s.name = str(newProps.name) ?? s.name;
    if (newProps.flavor !== oldProps.flavor) {
      const f = ctx.compute.findFlavor(str(newProps.flavor) ?? s.flavor);
      if (!f) throw new ResourceError('StackValidationFailed', `Property error: ${ctx.resourceName}.Properties.flavor: The Flavor ID (${str(newProps.flavor) ?? ''}) could not be found.`);
      s.flavor = f.name;
    }
    if (newProps.image !== oldProps.image) s.image = str(newProps.image) ?? s.image;
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(obj(newProps.metadata))) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
    s.metadata = metadata;
    if (JSON.stringify(oldProps.networks ?? null) !== JSON.stringify(newProps.networks ?? null)) {
      for (const pid of s.portIds) {
        const p = ctx.network.ports.get(pid);
        if (p && p.deviceId === s.id) p.deviceId = '';
      }
      for (const pid of s.ownedPortIds) ctx.network.deletePort(pid);
      s.ownedPortIds.splice(0);
      const ports = serverPorts(ctx, newProps.networks);
      s.portIds = ports.portIds;
      s.ownedPortIds.push(...ports.owned);
      for (const pid of s.portIds) {
        const p = ctx.network.ports.get(pid);
        if (p) {
          p.deviceId = s.id;
          p.deviceOwner = 'compute:nova';
        }
      }
    }
    s.updatedAt = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    ctx.compute.emitLifecycle('server.updated', 'update', s);
  },
  delete(ctx, state) {
    ctx.compute.deleteServer(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const s = serverOf(ctx, state);
    if (!s) return null;
    switch (name) {
      case 'name':
        return s.name;
      case 'addresses':
        return heatAddresses(ctx, s);
      case 'networks': {
        const out: Record<string, string[]> = {};
        for (const pid of s.portIds) {
          const port = ctx.network.ports.get(pid);
          if (!port) continue;
          const net = ctx.network.networks.get(port.networkId);
          const ips = port.fixedIps.map((f) => f.ip_address);
          const add = (k: string): void => {
            out[k] = [...(out[k] ?? []), ...ips];
          };
          if (net?.name) add(net.name);
          add(port.networkId);
        }
        return out;
      }
      case 'first_address': {
        const first = Object.values(heatAddresses(ctx, s))[0]?.[0];
        return first ? first.addr : '';
      }
      case 'show':
        return ctx.compute.serverDoc(s, [2, 79]);
      case 'accessIPv4':
      case 'accessIPv6':
        return '';
      case 'instance_name':
        return s.instanceName;
      case 'console_urls':
        return {};
      case 'os_collect_config':
        return {};
      case 'tags':
        return [];
      default:
        return undefined;
    }
  },
};

const serverGroup: LeafHandler = {
  properties: ['name', 'policies', 'policy', 'rules'],
  required: [],
  updatable: [],
  attributes: ['show'],
  create(ctx, props) {
    const policies = list(props.policies).map(String);
    const policy = str(props.policy);
    const g = ctx.compute.createServerGroup({
      name: str(props.name) ?? ctx.physicalName(),
      policies: policies.length > 0 ? policies : policy ? [policy] : ['anti-affinity'],
      projectId: ctx.projectId,
    });
    return { physicalId: g.id, data: {} };
  },
  delete(ctx, state) {
    ctx.compute.deleteServerGroup(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const g = ctx.compute.groups.get(state.physicalId);
    return name === 'show' && g ? ctx.compute.groupDoc(g) : undefined;
  },
};

const flavor: LeafHandler = {
  properties: ['ram', 'vcpus', 'disk', 'swap', 'ephemeral', 'rxtx_factor', 'is_public', 'flavorid', 'name', 'extra_specs', 'tenants'],
  required: ['ram', 'vcpus'],
  updatable: ['extra_specs', 'tenants'],
  attributes: ['is_public', 'show', 'name'],
  create(ctx, props) {
    const extra: Record<string, string> = {};
    for (const [k, v] of Object.entries(obj(props.extra_specs))) extra[k] = String(v);
    const f = ctx.compute.addFlavor({
      id: str(props.flavorid),
      name: str(props.name) ?? ctx.physicalName(),
      ram: Number(props.ram),
      vcpus: Number(props.vcpus),
      disk: props.disk === undefined ? 0 : Number(props.disk),
      swap: props.swap === undefined ? 0 : Number(props.swap),
      ephemeral: props.ephemeral === undefined ? 0 : Number(props.ephemeral),
      isPublic: props.is_public === undefined ? true : Boolean(props.is_public),
      extraSpecs: extra,
    });
    return { physicalId: f.id, data: {} };
  },
  update() {},
  delete(ctx, state) {
    ctx.compute.flavors.delete(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const f = ctx.compute.flavors.get(state.physicalId);
    if (!f) return null;
    if (name === 'is_public') return f.isPublic;
    if (name === 'name') return f.name;
    if (name === 'show') {
      return { id: f.id, name: f.name, ram: f.ram, vcpus: f.vcpus, disk: f.disk, swap: f.swap, 'OS-FLV-EXT-DATA:ephemeral': f.ephemeral, 'os-flavor-access:is_public': f.isPublic, extra_specs: f.extraSpecs };
    }
    return undefined;
  },
};

// ---------------------------------------------------------------------------------------------
// Neutron

const net: LeafHandler = {
  properties: ['name', 'admin_state_up', 'shared', 'value_specs', 'port_security_enabled', 'dns_domain', 'qos_policy', 'tenant_id', 'tags', 'dhcp_agent_ids'],
  required: [],
  updatable: ['name', 'admin_state_up', 'shared', 'value_specs', 'port_security_enabled', 'dns_domain', 'qos_policy', 'tags', 'dhcp_agent_ids'],
  attributes: ['name', 'subnets', 'status', 'admin_state_up', 'tenant_id', 'mtu', 'segments', 'qos_policy_id', 'port_security_enabled', 'l2_adjacency', 'show'],
  create(ctx, props) {
    const n = ctx.network.createNetwork({
      name: str(props.name) ?? ctx.physicalName(),
      projectId: ctx.projectId,
      shared: props.shared === true,
      adminStateUp: props.admin_state_up !== false,
      valueSpecs: obj(props.value_specs),
    });
    return { physicalId: n.id, data: {} };
  },
  update(ctx, state, _old, props) {
    const n = ctx.network.networks.get(state.physicalId);
    if (!n) return;
    n.name = str(props.name) ?? n.name;
    n.adminStateUp = props.admin_state_up !== false;
    n.shared = props.shared === true;
    n.valueSpecs = obj(props.value_specs);
  },
  delete(ctx, state) {
    ctx.network.deleteNetwork(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const n = ctx.network.networks.get(state.physicalId);
    if (!n) return null;
    switch (name) {
      case 'name':
        return n.name;
      case 'subnets':
        return [...n.subnetIds];
      case 'status':
        return 'ACTIVE';
      case 'admin_state_up':
        return n.adminStateUp;
      case 'tenant_id':
        return n.projectId;
      case 'mtu':
        return n.mtu;
      case 'segments':
        return [];
      case 'qos_policy_id':
        return null;
      case 'port_security_enabled':
        return true;
      case 'l2_adjacency':
        return true;
      case 'show':
        return ctx.network.networkDoc(n);
      default:
        return undefined;
    }
  },
};

const subnet: LeafHandler = {
  properties: [
    'network',
    'network_id',
    'cidr',
    'ip_version',
    'name',
    'gateway_ip',
    'allocation_pools',
    'enable_dhcp',
    'dns_nameservers',
    'host_routes',
    'subnetpool',
    'prefixlen',
    'ipv6_address_mode',
    'ipv6_ra_mode',
    'value_specs',
    'tenant_id',
    'segment',
    'tags',
  ],
  required: [],
  updatable: ['name', 'gateway_ip', 'allocation_pools', 'enable_dhcp', 'dns_nameservers', 'host_routes', 'value_specs', 'tags', 'segment'],
  attributes: ['name', 'network_id', 'tenant_id', 'allocation_pools', 'gateway_ip', 'host_routes', 'ip_version', 'cidr', 'dns_nameservers', 'enable_dhcp', 'segment_id', 'show'],
  create(ctx, props) {
    const netRef = str(props.network) ?? str(props.network_id);
    if (!netRef) throw new ResourceError('PropertyUnspecifiedError', 'At least one of the following properties must be specified: network, network_id.');
    const n = ctx.network.resolveNetwork(netRef, ctx.projectId);
    try {
      const pools = list(props.allocation_pools).map((p) => ({ start: String(obj(p).start), end: String(obj(p).end) }));
      const s = ctx.network.createSubnet({
        networkId: n.id,
        projectId: ctx.projectId,
        cidr: str(props.cidr),
        name: str(props.name) ?? ctx.physicalName(),
        ipVersion: props.ip_version === undefined ? 4 : Number(props.ip_version),
        gatewayIp: props.gateway_ip === undefined ? undefined : props.gateway_ip === null ? null : String(props.gateway_ip),
        allocationPools: pools,
        enableDhcp: props.enable_dhcp !== false,
        dnsNameservers: list(props.dns_nameservers).map(String),
      });
      return { physicalId: s.id, data: {} };
    } catch (e) {
      wrapCloudError(e);
    }
  },
  update(ctx, state, _old, props) {
    const s = ctx.network.subnets.get(state.physicalId);
    if (!s) return;
    s.name = str(props.name) ?? s.name;
    if (props.gateway_ip !== undefined) s.gatewayIp = props.gateway_ip === null ? null : String(props.gateway_ip);
    s.enableDhcp = props.enable_dhcp !== false;
    s.dnsNameservers = list(props.dns_nameservers).map(String);
    const pools = list(props.allocation_pools).map((p) => ({ start: String(obj(p).start), end: String(obj(p).end) }));
    if (pools.length > 0) s.allocationPools = pools;
  },
  delete(ctx, state) {
    ctx.network.deleteSubnet(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const s = ctx.network.subnets.get(state.physicalId);
    if (!s) return null;
    const doc = ctx.network.subnetDoc(s);
    if (name === 'show') return doc;
    if (name === 'segment_id') return null;
    if (name in doc) return doc[name];
    return undefined;
  },
};

const PORT_PROPS = [
  'network',
  'network_id',
  'name',
  'fixed_ips',
  'mac_address',
  'allowed_address_pairs',
  'security_groups',
  'admin_state_up',
  'binding:vnic_type',
  'value_specs',
  'device_id',
  'device_owner',
  'port_security_enabled',
  'qos_policy',
  'replacement_policy',
  'dns_name',
  'tags',
  'propagate_uplink_status',
  'no_fixed_ips',
  'binding:profile',
];

function portFixedIps(v: unknown): { subnet?: string; ip_address?: string }[] | undefined {
  const l = list(v);
  if (l.length === 0) return undefined;
  return l.map((e) => {
    const o = obj(e);
    return { subnet: str(o.subnet) ?? str(o.subnet_id), ip_address: str(o.ip_address) };
  });
}

const port: LeafHandler = {
  properties: PORT_PROPS,
  required: [],
  updatable: [
    'name',
    'fixed_ips',
    'allowed_address_pairs',
    'security_groups',
    'admin_state_up',
    'binding:vnic_type',
    'value_specs',
    'device_id',
    'device_owner',
    'port_security_enabled',
    'qos_policy',
    'replacement_policy',
    'dns_name',
    'tags',
    'propagate_uplink_status',
    'no_fixed_ips',
    'binding:profile',
  ],
  attributes: [
    'admin_state_up',
    'allowed_address_pairs',
    'device_id',
    'device_owner',
    'dns_assignment',
    'fixed_ips',
    'mac_address',
    'name',
    'network',
    'network_id',
    'port_security_enabled',
    'qos_policy_id',
    'security_groups',
    'status',
    'subnets',
    'tenant_id',
    'show',
  ],
  create(ctx, props) {
    const netRef = str(props.network) ?? str(props.network_id);
    if (!netRef) throw new ResourceError('PropertyUnspecifiedError', 'At least one of the following properties must be specified: network, network_id.');
    const n = ctx.network.resolveNetwork(netRef, ctx.projectId);
    try {
      const p = ctx.network.createPort({
        networkId: n.id,
        projectId: ctx.projectId,
        name: str(props.name) ?? ctx.physicalName(),
        fixedIps: props.no_fixed_ips === true ? [] : portFixedIps(props.fixed_ips),
        allowedAddressPairs: list(props.allowed_address_pairs).map((e) => {
          const o = obj(e);
          return { ip_address: String(o.ip_address ?? ''), ...(o.mac_address ? { mac_address: String(o.mac_address) } : {}) };
        }),
        securityGroups: props.security_groups === undefined ? undefined : list(props.security_groups).map(String),
        macAddress: str(props.mac_address),
        adminStateUp: props.admin_state_up !== false,
        vnicType: str(props['binding:vnic_type']),
        valueSpecs: obj(props.value_specs),
      });
      return { physicalId: p.id, data: {} };
    } catch (e) {
      wrapCloudError(e);
    }
  },
  update(ctx, state, oldProps, props) {
    const p = ctx.network.ports.get(state.physicalId);
    if (!p) return;
    p.name = str(props.name) ?? p.name;
    p.adminStateUp = props.admin_state_up !== false;
    if (props.security_groups !== undefined) p.securityGroups = list(props.security_groups).map(String);
    p.allowedAddressPairs = list(props.allowed_address_pairs).map((e) => {
      const o = obj(e);
      return { ip_address: String(o.ip_address ?? '') };
    });
    if (JSON.stringify(oldProps.fixed_ips ?? null) !== JSON.stringify(props.fixed_ips ?? null)) {
      // Re-address the port: free the old addresses, allocate the requested ones.
      for (const f of p.fixedIps) ctx.network.subnets.get(f.subnet_id)?.used.delete(f.ip_address);
      const tmp = ctx.network.createPort({ networkId: p.networkId, projectId: p.projectId, fixedIps: portFixedIps(props.fixed_ips) });
      p.fixedIps = tmp.fixedIps;
      ctx.network.ports.delete(tmp.id);
    }
    ctx.network.portChanged(p.id, 'update');
  },
  delete(ctx, state) {
    ctx.network.deletePort(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const p = ctx.network.ports.get(state.physicalId);
    if (!p) return null;
    switch (name) {
      case 'fixed_ips':
        return p.fixedIps.map((f) => ({ subnet_id: f.subnet_id, ip_address: f.ip_address }));
      case 'mac_address':
        return p.macAddress;
      case 'name':
        return p.name;
      case 'network_id':
        return p.networkId;
      case 'network': {
        const n = ctx.network.networks.get(p.networkId);
        return n ? ctx.network.networkDoc(n) : null;
      }
      case 'subnets':
        return p.fixedIps
          .map((f) => ctx.network.subnets.get(f.subnet_id))
          .filter((s) => s !== undefined)
          .map((s) => ctx.network.subnetDoc(s));
      case 'allowed_address_pairs':
        return p.allowedAddressPairs;
      case 'device_id':
        return p.deviceId;
      case 'device_owner':
        return p.deviceOwner;
      case 'status':
        return p.deviceId ? 'ACTIVE' : 'DOWN';
      case 'security_groups':
        return p.securityGroups;
      case 'admin_state_up':
        return p.adminStateUp;
      case 'tenant_id':
        return p.projectId;
      case 'port_security_enabled':
        return true;
      case 'qos_policy_id':
        return null;
      case 'dns_assignment':
        return null;
      case 'show':
        return ctx.network.portDoc(p);
      default:
        return undefined;
    }
  },
};

const floatingIp: LeafHandler = {
  properties: ['floating_network', 'floating_network_id', 'port_id', 'fixed_ip_address', 'floating_ip_address', 'value_specs', 'floating_subnet', 'dns_name', 'dns_domain'],
  required: [],
  updatable: ['port_id', 'fixed_ip_address', 'value_specs'],
  attributes: ['floating_ip_address', 'fixed_ip_address', 'floating_network_id', 'port_id', 'router_id', 'tenant_id', 'show'],
  create(ctx, props) {
    const netRef = str(props.floating_network) ?? str(props.floating_network_id);
    if (!netRef) {
      throw new ResourceError('PropertyUnspecifiedError', 'At least one of the following properties must be specified: floating_network, floating_network_id.');
    }
    try {
      const f = ctx.network.createFloatingIp({
        floatingNetwork: netRef,
        projectId: ctx.projectId,
        portId: str(props.port_id),
        fixedIpAddress: str(props.fixed_ip_address),
        floatingIpAddress: str(props.floating_ip_address),
      });
      return { physicalId: f.id, data: {} };
    } catch (e) {
      wrapCloudError(e);
    }
  },
  update(ctx, state, _old, props) {
    if (!ctx.network.floatingIps.has(state.physicalId)) return;
    ctx.network.associateFloatingIp(state.physicalId, str(props.port_id) ?? null, str(props.fixed_ip_address) ?? null);
  },
  delete(ctx, state) {
    ctx.network.deleteFloatingIp(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const f = ctx.network.floatingIps.get(state.physicalId);
    if (!f) return null;
    const doc = ctx.network.floatingIpDoc(f);
    if (name === 'show') return doc;
    if (name === 'router_id') return null;
    return name in doc ? doc[name] : undefined;
  },
};

const router: LeafHandler = {
  properties: ['name', 'external_gateway_info', 'admin_state_up', 'value_specs', 'distributed', 'ha', 'l3_agent_ids', 'tags'],
  required: [],
  updatable: ['name', 'external_gateway_info', 'admin_state_up', 'value_specs', 'l3_agent_ids', 'tags'],
  attributes: ['name', 'external_gateway_info', 'status', 'admin_state_up', 'tenant_id', 'show'],
  create(ctx, props) {
    const r = ctx.network.createRouter({
      name: str(props.name) ?? ctx.physicalName(),
      projectId: ctx.projectId,
      externalGatewayInfo: props.external_gateway_info ? obj(props.external_gateway_info) : null,
      adminStateUp: props.admin_state_up !== false,
    });
    return { physicalId: r.id, data: {} };
  },
  update(ctx, state, _old, props) {
    const r = ctx.network.routers.get(state.physicalId);
    if (!r) return;
    r.name = str(props.name) ?? r.name;
    r.externalGatewayInfo = props.external_gateway_info ? obj(props.external_gateway_info) : null;
    r.adminStateUp = props.admin_state_up !== false;
  },
  delete(ctx, state) {
    ctx.network.routers.delete(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const r = ctx.network.routers.get(state.physicalId);
    if (!r) return null;
    const doc = ctx.network.routerDoc(r);
    if (name === 'show') return doc;
    return name in doc ? doc[name] : undefined;
  },
};

const routerInterface: LeafHandler = {
  properties: ['router', 'router_id', 'subnet', 'subnet_id', 'port', 'port_id'],
  required: [],
  updatable: [],
  attributes: ['show'],
  create(ctx, props) {
    const routerId = str(props.router) ?? str(props.router_id) ?? '';
    const subnetId = str(props.subnet) ?? str(props.subnet_id);
    const portId = str(props.port) ?? str(props.port_id);
    const r = ctx.network.routers.get(routerId);
    const id = uuid();
    r?.interfaces.push({ id, subnetId, portId });
    const physicalId = subnetId ? `${routerId}:subnet_id=${subnetId}` : `${routerId}:port_id=${portId ?? ''}`;
    return { physicalId, data: { routerId, subnetId, portId, id } };
  },
  delete(ctx, state) {
    const r = ctx.network.routers.get(String(state.data.routerId));
    if (r) {
      const i = r.interfaces.findIndex((x) => x.id === state.data.id);
      if (i >= 0) r.interfaces.splice(i, 1);
    }
  },
  attr(_ctx, state, _props, name) {
    if (name !== 'show') return undefined;
    return { id: state.data.routerId, subnet_id: state.data.subnetId ?? null, port_id: state.data.portId ?? null };
  },
};

// ---------------------------------------------------------------------------------------------
// Cinder

const volume: LeafHandler = {
  properties: [
    'size',
    'name',
    'description',
    'image',
    'volume_type',
    'metadata',
    'availability_zone',
    'snapshot_id',
    'source_volid',
    'backup_id',
    'scheduler_hints',
    'read_only',
    'multiattach',
  ],
  required: [],
  updatable: ['size', 'name', 'description', 'metadata', 'volume_type', 'read_only', 'multiattach', 'backup_id'],
  attributes: [
    'availability_zone',
    'size',
    'snapshot_id',
    'display_name',
    'display_description',
    'volume_type',
    'metadata',
    'metadata_values',
    'source_volid',
    'status',
    'created_at',
    'bootable',
    'encrypted',
    'attachments',
    'attachments_list',
    'multiattach',
    'show',
  ],
  needsReplace(oldProps, newProps) {
    return newProps.size !== undefined && oldProps.size !== undefined && Number(newProps.size) < Number(oldProps.size);
  },
  create(ctx, props) {
    const typeRef = str(props.volume_type);
    const type = typeRef ? ctx.volumes.findType(typeRef) : undefined;
    const v = ctx.volumes.createVolume({
      name: str(props.name) ?? ctx.physicalName(),
      size: props.size === undefined ? 1 : Number(props.size),
      imageRef: str(props.image) ?? null,
      volumeType: type?.name ?? typeRef ?? '__DEFAULT__',
      metadata: obj(props.metadata),
      availabilityZone: str(props.availability_zone),
      projectId: ctx.projectId,
      multiattach: props.multiattach === true,
    });
    return { physicalId: v.id, data: {} };
  },
  update(ctx, state, _old, props) {
    const v = ctx.volumes.volumes.get(state.physicalId);
    if (!v) return;
    v.name = str(props.name) ?? v.name;
    if (props.size !== undefined) v.size = Number(props.size);
    v.metadata = obj(props.metadata);
    const typeRef = str(props.volume_type);
    if (typeRef) v.volumeType = ctx.volumes.findType(typeRef)?.name ?? typeRef;
    v.multiattach = props.multiattach === true;
  },
  delete(ctx, state) {
    const v = ctx.volumes.volumes.get(state.physicalId);
    if (v) {
      for (const a of [...v.attachments]) {
        const s = ctx.compute.servers.get(a.server_id);
        if (s) s.volumeIds = s.volumeIds.filter((id) => id !== v.id);
      }
    }
    ctx.volumes.deleteVolume(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const v = ctx.volumes.volumes.get(state.physicalId);
    if (!v) return null;
    switch (name) {
      case 'availability_zone':
        return v.availabilityZone;
      case 'size':
        return v.size;
      case 'snapshot_id':
      case 'source_volid':
        return null;
      case 'display_name':
        return v.name;
      case 'display_description':
        return '';
      case 'volume_type':
        return v.volumeType;
      case 'metadata':
        // Heat returns this one as a JSON string; `metadata_values` is the map.
        return pyJson(v.metadata);
      case 'metadata_values':
        return v.metadata;
      case 'status':
        return v.status;
      case 'created_at':
        return v.createdAt;
      case 'bootable':
        return v.imageRef ? 'true' : 'false';
      case 'encrypted':
        return false;
      case 'attachments':
      case 'attachments_list':
        return v.attachments.map((a) => ({ ...a }));
      case 'multiattach':
        return v.multiattach;
      case 'show':
        return ctx.volumes.volumeDoc(v);
      default:
        return undefined;
    }
  },
};

const volumeType: LeafHandler = {
  properties: ['name', 'metadata', 'is_public', 'description', 'projects'],
  required: [],
  updatable: ['name', 'metadata', 'is_public', 'description', 'projects'],
  attributes: ['show'],
  create(ctx, props) {
    const t = ctx.volumes.createType({
      name: str(props.name) ?? ctx.physicalName(),
      metadata: obj(props.metadata),
      isPublic: props.is_public !== false,
      description: str(props.description),
    });
    return { physicalId: t.id, data: {} };
  },
  update() {},
  delete(ctx, state) {
    ctx.volumes.types.delete(state.physicalId);
  },
  attr(ctx, state, _props, name) {
    const t = ctx.volumes.types.get(state.physicalId);
    if (name !== 'show' || !t) return name === 'show' ? null : undefined;
    return { id: t.id, name: t.name, extra_specs: t.metadata, is_public: t.isPublic, description: t.description };
  },
};

const volumeAttachment: LeafHandler = {
  properties: ['instance_uuid', 'volume_id', 'mountpoint'],
  required: ['instance_uuid', 'volume_id'],
  updatable: 'all',
  attributes: ['show'],
  create(ctx, props) {
    const serverId = String(props.instance_uuid);
    const volumeId = String(props.volume_id);
    const s = ctx.compute.servers.get(serverId);
    if (!s) throw new ResourceError('NotFound', `Instance ${serverId} could not be found.`);
    if (!ctx.volumes.volumes.has(volumeId)) throw new ResourceError('NotFound', `Volume ${volumeId} could not be found.`);
    const id = ctx.volumes.attach(volumeId, serverId, str(props.mountpoint) ?? '') ?? uuid();
    s.volumeIds.push(volumeId);
    return { physicalId: id, data: { serverId, volumeId } };
  },
  update(ctx, state, _old, props) {
    volumeAttachment.delete(ctx, state);
    const fresh = volumeAttachment.create(ctx, props);
    state.physicalId = fresh.physicalId;
    state.data = fresh.data;
  },
  delete(ctx, state) {
    const serverId = String(state.data.serverId);
    const volumeId = String(state.data.volumeId);
    ctx.volumes.detach(volumeId, serverId);
    const s = ctx.compute.servers.get(serverId);
    if (s) s.volumeIds = s.volumeIds.filter((id) => id !== volumeId);
  },
  attr(_ctx, state, props, name) {
    if (name !== 'show') return undefined;
    return { id: state.physicalId, serverId: state.data.serverId, volumeId: state.data.volumeId, device: props.mountpoint ?? null };
  },
};

// ---------------------------------------------------------------------------------------------
// Heat's own types

const noneResource: LeafHandler = {
  properties: 'any',
  required: [],
  updatable: 'keep',
  attributes: 'any',
  create() {
    return { physicalId: uuid(), data: {} };
  },
  delete() {},
  attr() {
    return null;
  },
};

const CHAR_CLASSES: Record<string, string> = {
  lettersdigits: 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789',
  letters: 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
  lowercase: 'abcdefghijklmnopqrstuvwxyz',
  uppercase: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
  digits: '0123456789',
  hexdigits: '0123456789abcdefABCDEF',
  octdigits: '01234567',
};

function randomString(props: Record<string, unknown>): string {
  const length = props.length === undefined ? 32 : Number(props.length);
  let pool = '';
  const chars: string[] = [];
  const seq = str(props.sequence);
  if (seq) pool = CHAR_CLASSES[seq] ?? CHAR_CLASSES.lettersdigits ?? '';
  for (const c of list(props.character_classes)) {
    const o = obj(c);
    const cls = CHAR_CLASSES[String(o.class ?? 'lettersdigits')] ?? '';
    pool += cls;
    for (let i = 0; i < Number(o.min ?? 1); i++) chars.push(cls[randomInt(cls.length)] ?? 'a');
  }
  for (const c of list(props.character_sequences)) {
    const o = obj(c);
    const s = String(o.sequence ?? '');
    pool += s;
    for (let i = 0; i < Number(o.min ?? 1) && s.length > 0; i++) chars.push(s[randomInt(s.length)] ?? 'a');
  }
  if (pool === '') pool = CHAR_CLASSES.lettersdigits ?? '';
  while (chars.length < length) chars.push(pool[randomInt(pool.length)] ?? 'a');
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j] as string, chars[i] as string];
  }
  return chars.join('');
}

const randomStringResource: LeafHandler = {
  properties: ['length', 'sequence', 'character_classes', 'character_sequences', 'salt'],
  required: [],
  updatable: [],
  attributes: ['value'],
  create(ctx, props) {
    return { physicalId: ctx.physicalName(), data: { value: randomString(props) } };
  },
  delete() {},
  attr(_ctx, state, _props, name) {
    return name === 'value' ? state.data.value : undefined;
  },
  refId(state) {
    return state.data.value;
  },
};

const testResource: LeafHandler = {
  properties: [
    'value',
    'update_replace',
    'fail',
    'client_name',
    'entity_name',
    'wait_secs',
    'action_wait_secs',
    'attr_wait_secs',
    'constraint_prop_secs',
    'update_replace_value',
  ],
  required: [],
  updatable: 'all',
  attributes: ['output'],
  needsReplace(oldProps, newProps) {
    return newProps.update_replace === true || (newProps.update_replace_value !== undefined && newProps.update_replace_value !== oldProps.update_replace_value);
  },
  create(ctx, props) {
    if (props.fail === true) throw new ResourceError('ResourceFailure', 'Test Resource failed oops');
    return { physicalId: ctx.physicalName(), data: { value: props.value ?? 'test_string' } };
  },
  update(_ctx, state, _old, props) {
    if (props.fail === true) throw new ResourceError('ResourceFailure', 'Test Resource failed oops');
    state.data.value = props.value ?? 'test_string';
  },
  delete() {},
  attr(_ctx, state, _props, name) {
    return name === 'output' ? state.data.value : undefined;
  },
};

const valueResource: LeafHandler = {
  properties: ['value', 'type'],
  required: ['value'],
  updatable: 'all',
  attributes: ['value'],
  create(ctx, props) {
    return { physicalId: ctx.physicalName(), data: { value: props.value } };
  },
  update(_ctx, state, _old, props) {
    state.data.value = props.value;
  },
  delete() {},
  attr(_ctx, state, _props, name) {
    return name === 'value' ? state.data.value : undefined;
  },
};

function configResource(props: readonly string[]): LeafHandler {
  return {
    properties: props,
    required: [],
    updatable: [],
    attributes: ['config'],
    create(_ctx, p) {
      const config = p.config ?? p.cloud_config ?? p.parts ?? '';
      return { physicalId: uuid(), data: { config } };
    },
    delete() {},
    attr(_ctx, state, _props, name) {
      if (name !== 'config') return undefined;
      const c = state.data.config;
      return typeof c === 'string' ? c : JSON.stringify(c);
    },
  };
}

const scalingPolicy: LeafHandler = {
  properties: ['auto_scaling_group_id', 'adjustment_type', 'scaling_adjustment', 'cooldown', 'min_adjustment_step'],
  required: ['auto_scaling_group_id', 'adjustment_type', 'scaling_adjustment'],
  updatable: ['adjustment_type', 'scaling_adjustment', 'cooldown', 'min_adjustment_step'],
  attributes: ['alarm_url', 'signal_url'],
  create(ctx) {
    return { physicalId: `${ctx.stackName}-${ctx.resourceName}-${randomBytes(6).toString('hex')}`, data: {} };
  },
  update() {},
  delete() {},
  attr(ctx, _state, _props, name) {
    if (name === 'alarm_url' || name === 'signal_url') return `${ctx.stackUrl()}/resources/${ctx.resourceName}/signal`;
    return undefined;
  },
};

/** The native types, by name. */
export const LEAF_TYPES: ReadonlyMap<string, LeafHandler> = new Map<string, LeafHandler>([
  ['OS::Nova::Server', server],
  ['OS::Nova::ServerGroup', serverGroup],
  ['OS::Nova::Flavor', flavor],
  ['OS::Neutron::Net', net],
  ['OS::Neutron::Subnet', subnet],
  ['OS::Neutron::Port', port],
  ['OS::Neutron::FloatingIP', floatingIp],
  ['OS::Neutron::Router', router],
  ['OS::Neutron::RouterInterface', routerInterface],
  ['OS::Cinder::Volume', volume],
  ['OS::Cinder::VolumeType', volumeType],
  ['OS::Cinder::VolumeAttachment', volumeAttachment],
  ['OS::Heat::None', noneResource],
  ['OS::Heat::RandomString', randomStringResource],
  ['OS::Heat::TestResource', testResource],
  ['OS::Heat::Value', valueResource],
  ['OS::Heat::SoftwareConfig', configResource(['group', 'config', 'options', 'inputs', 'outputs'])],
  ['OS::Heat::CloudConfig', configResource(['cloud_config'])],
  ['OS::Heat::MultipartMime', configResource(['parts', 'group'])],
  ['OS::Heat::ScalingPolicy', scalingPolicy],
]);

/** Types handled by the engine itself (nested stacks). */
export const GROUP_TYPES: ReadonlySet<string> = new Set(['OS::Heat::AutoScalingGroup', 'OS::Heat::ResourceGroup']);
