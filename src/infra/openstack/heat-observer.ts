/**
 * Turns a Heat resource listing (`GET .../resources?nested_depth=N`) into the driver's
 * {@link ObservedResources}: VNFCs, storage and internal virtual links, each with the exact Heat
 * location (owning stack, resource name, path from the top stack) that a later heal needs.
 *
 * Why the full path: a heal must mark the server resource in the stack that owns it, and a
 * server inside an AutoScalingGroup member often has the same name as a top-level resource
 * (Tacker bug 1924214: the group and the server both named `VDU1`). The path
 * `VDU1_scale_group/<member>/VDU1` is unique, and it stays the same when Heat replaces the
 * server, so it also serves as the VNFC's stable key.
 */
import type { ObservedCp, ObservedIpAddress, ObservedResources, ObservedStorage, ObservedVirtualLink, ObservedVnfc } from '../infra-driver.ts';
import type { FlavourModel, VduModel } from '../../packages/vnfd-model.ts';
import { HeatClient, type HeatResource, type HeatStackRef } from './heat-client.ts';

/** Heat types the observer maps. */
export const HEAT_TYPES = {
  server: 'OS::Nova::Server',
  volume: 'OS::Cinder::Volume',
  net: 'OS::Neutron::Net',
  port: 'OS::Neutron::Port',
} as const;

/** One entry of Nova's server `addresses` (`{<network>: [{addr, version, OS-EXT-IPS:type, OS-EXT-IPS-MAC:mac_addr}]}`). */
export interface ServerAddress {
  address: string;
  /** 4 or 6. */
  version?: number | undefined;
  /** `fixed` or `floating`. */
  kind?: string | undefined;
  /** MAC of the port the address belongs to (or, for a floating one, is associated with). */
  mac?: string | undefined;
  network?: string | undefined;
}

/** What Nova says about a server, when Nova can be asked. */
export interface ServerFacts {
  status?: string | undefined;
  availabilityZone?: string | undefined;
  host?: string | undefined;
  addresses?: ServerAddress[] | undefined;
}

/** What Heat's detailed listing says about a port (`mac_address`, `fixed_ips` attributes). */
export interface PortFacts {
  macAddress?: string | undefined;
  fixedIps: { address: string; subnetId?: string | undefined }[];
}

/** Flattens Nova's `addresses` map (unknown shapes are skipped). */
export function serverAddresses(addresses: Record<string, unknown> | undefined): ServerAddress[] {
  const out: ServerAddress[] = [];
  for (const [network, list] of Object.entries(addresses ?? {})) {
    if (!Array.isArray(list)) continue;
    for (const e of list) {
      if (e === null || typeof e !== 'object') continue;
      const o = e as Record<string, unknown>;
      if (typeof o.addr !== 'string' || o.addr === '') continue;
      out.push({
        address: o.addr,
        version: typeof o.version === 'number' ? o.version : undefined,
        kind: typeof o['OS-EXT-IPS:type'] === 'string' ? o['OS-EXT-IPS:type'] : undefined,
        mac: typeof o['OS-EXT-IPS-MAC:mac_addr'] === 'string' ? (o['OS-EXT-IPS-MAC:mac_addr'] as string).toLowerCase() : undefined,
        network,
      });
    }
  }
  return out;
}

/** A port row's facts from its `attributes` (detailed listing); undefined without them. */
export function portFactsOf(row: HeatResource): PortFacts | undefined {
  const a = row.attributes;
  if (a === undefined || a === null || typeof a !== 'object') return undefined;
  const mac = typeof a.mac_address === 'string' && a.mac_address !== '' ? a.mac_address.toLowerCase() : undefined;
  const fixedIps: PortFacts['fixedIps'] = [];
  if (Array.isArray(a.fixed_ips)) {
    for (const f of a.fixed_ips) {
      const o = (f ?? {}) as Record<string, unknown>;
      if (typeof o.ip_address === 'string' && o.ip_address !== '') fixedIps.push({ address: o.ip_address, ...(typeof o.subnet_id === 'string' && o.subnet_id !== '' ? { subnetId: o.subnet_id } : {}) });
    }
  }
  return mac === undefined && fixedIps.length === 0 ? undefined : { macAddress: mac, fixedIps };
}

function typeOfVersion(version: number | undefined, address: string): 'IPV4' | 'IPV6' {
  if (version === 6) return 'IPV6';
  if (version === 4) return 'IPV4';
  return address.includes(':') ? 'IPV6' : 'IPV4';
}

/**
 * The CPs of one server: its `OS::Neutron::Port` rows named after a VduCp of the VDU (same
 * stack), each with the port's MAC and fixed IPs (Heat's port attributes when listed with
 * detail) and the server's Nova addresses of that MAC (fixed ones Heat did not give, and the
 * floating IPs associated with the port). A port whose MAC is unknown gets the server's only
 * unclaimed MAC; a VduCp without a port row (a port Nova created from `networks`) gets the
 * server's addresses when it is the only such CP and one MAC is left.
 */
export function cpsOfServer(vdu: VduModel, portRows: readonly HeatResource[], server: ServerFacts | undefined, ports: ReadonlyMap<string, PortFacts> | undefined): ObservedCp[] {
  const nova = server?.addresses ?? [];
  const macs = [...new Set(nova.map((a) => a.mac).filter((m): m is string => m !== undefined))];
  const entries = portRows.map((r) => ({ cpdId: r.resource_name, resourceId: r.physical_resource_id as string | undefined, facts: ports?.get(r.physical_resource_id), mac: ports?.get(r.physical_resource_id)?.macAddress }));
  const claimed = () => new Set(entries.map((e) => e.mac).filter((m): m is string => m !== undefined));
  const unknown = entries.filter((e) => e.mac === undefined);
  if (unknown.length === 1) {
    const left = macs.filter((m) => !claimed().has(m));
    if (left.length === 1) (unknown[0] as { mac?: string }).mac = left[0];
  }
  const withPort = new Set(entries.map((e) => e.cpdId));
  const portless = vdu.cpIds.filter((c) => !withPort.has(c));
  if (portless.length === 1) {
    const left = macs.filter((m) => !claimed().has(m));
    if (left.length === 1) entries.push({ cpdId: portless[0] as string, resourceId: undefined, facts: undefined, mac: left[0] });
  }
  return entries.map((e) => {
    const addresses: ObservedIpAddress[] = [];
    const has = (a: string) => addresses.some((x) => x.address === a);
    for (const f of e.facts?.fixedIps ?? []) if (!has(f.address)) addresses.push({ address: f.address, type: typeOfVersion(undefined, f.address), ...(f.subnetId ? { subnetId: f.subnetId } : {}) });
    for (const a of nova) {
      if (e.mac === undefined || a.mac !== e.mac || has(a.address)) continue;
      addresses.push({ address: a.address, type: typeOfVersion(a.version, a.address), ...(a.kind === 'floating' ? { floating: true } : {}) });
    }
    return { cpdId: e.cpdId, ...(e.resourceId ? { resourceId: e.resourceId } : {}), ...(e.mac ? { macAddress: e.mac } : {}), ...(addresses.length ? { addresses } : {}) };
  });
}

/** One row of the listing with its location resolved. */
export interface LocatedResource {
  row: HeatResource;
  /** The stack the row lives in (from its `stack` link). */
  stack: HeatStackRef;
  /** Path of that stack from the top stack ('' for the top stack itself), e.g. `VDU1_scale_group/abc123`. */
  stackPath: string;
  /** `<stackPath>/<resource_name>` (or just the name at the top). */
  path: string;
}

/** Joins path segments, skipping the empty top-level path. */
function join(parent: string, name: string): string {
  return parent === '' ? name : `${parent}/${name}`;
}

/**
 * Resolves where every row lives: `stack` link -> stack, and stack -> path from the top, by
 * following the `nested` links of the rows (a group's nested stack, a member's template
 * stack). Rows whose stack cannot be placed get the path of their stack name (never thrown
 * away: Heat may list rows of a nested stack before the row that owns it).
 */
export function locateResources(top: HeatStackRef, rows: readonly HeatResource[]): LocatedResource[] {
  const stackPaths = new Map<string, string>([[top.id, '']]);
  const owners: { nestedId: string; ownerStackId: string; name: string }[] = [];
  const stacks: (HeatStackRef | undefined)[] = rows.map((r) => {
    try {
      return HeatClient.stackOfResource(r);
    } catch {
      return undefined;
    }
  });
  rows.forEach((r, i) => {
    const nested = HeatClient.nestedStackOfResource(r);
    const own = stacks[i];
    if (nested !== undefined && own !== undefined) owners.push({ nestedId: nested.id, ownerStackId: own.id, name: r.resource_name });
  });
  // Fixpoint: a nested stack's path is known once its owner's stack path is.
  for (let changed = true; changed; ) {
    changed = false;
    for (const o of owners) {
      if (stackPaths.has(o.nestedId)) continue;
      const parent = stackPaths.get(o.ownerStackId);
      if (parent === undefined) continue;
      stackPaths.set(o.nestedId, join(parent, o.name));
      changed = true;
    }
  }
  const out: LocatedResource[] = [];
  rows.forEach((row, i) => {
    const stack = stacks[i] ?? top;
    const stackPath = stackPaths.get(stack.id) ?? (row.parent_resource ? `?${row.parent_resource}` : '');
    out.push({ row, stack, stackPath, path: join(stackPath, row.resource_name) });
  });
  return out;
}

/** `name/id`, the way Tacker keeps a stack in metadata and Heat wants it in URLs. */
export function stackRefString(ref: HeatStackRef): string {
  return `${ref.name}/${ref.id}`;
}

/** Location metadata shared by VNFC and storage entries. */
function locationMetadata(l: LocatedResource, byStackId: Map<string, LocatedResource>): Record<string, unknown> {
  const md: Record<string, unknown> = {
    stack_id: stackRefString(l.stack),
    stack_name: l.stack.name,
    resource_name: l.row.resource_name,
    parent_stack: l.stackPath,
    heat_resource_path: l.path,
  };
  if (l.row.parent_resource) md.parent_resource = l.row.parent_resource;
  // Tacker's names for the member resource that owns this row's stack (scale-in marks it).
  const owner = byStackId.get(l.stack.id);
  if (owner !== undefined) {
    md.parent_stack_id = stackRefString(owner.stack);
    md.parent_resource_name = owner.row.resource_name;
  }
  if (l.row.creation_time) md.creation_time = l.row.creation_time;
  return md;
}

/** Inputs of {@link observeFromListing}. */
export interface ObserveInput {
  top: HeatStackRef;
  rows: readonly HeatResource[];
  flavour: FlavourModel;
  /** Nova facts per server id (empty when Nova cannot be asked). */
  servers?: ReadonlyMap<string, ServerFacts>;
  /** The stack's `nfv` parameter (for `flavor` / `image-<VDU>` metadata, as Tacker reports them). */
  nfv?: Record<string, unknown> | null;
  /** Port facts per port id (from a detailed listing of the CP ports), when read. */
  ports?: ReadonlyMap<string, PortFacts>;
}

/**
 * Maps the listing to {@link ObservedResources}. Only rows named after a node of the flavour are
 * kept (Tacker's rule): `OS::Nova::Server` named like a VDU, `OS::Cinder::Volume` like a virtual
 * storage, `OS::Neutron::Net` like a virtual link, `OS::Neutron::Port` like a VduCp (reported as
 * the VNFC's `cps` when in the same stack as the server). A server counts as unhealthy when Nova
 * says ERROR or Heat has the resource in a `*_FAILED` state (e.g. marked unhealthy).
 */
export function observeFromListing(input: ObserveInput): ObservedResources {
  const { flavour } = input;
  const located = locateResources(input.top, input.rows);
  const withId = located.filter((l) => l.row.physical_resource_id !== '' && l.row.physical_resource_id !== undefined && l.row.physical_resource_id !== null);
  const byNestedStack = new Map<string, LocatedResource>();
  for (const l of located) {
    const nested = HeatClient.nestedStackOfResource(l.row);
    if (nested !== undefined) byNestedStack.set(nested.id, l);
  }
  const vduNfv = (input.nfv?.VDU ?? {}) as Record<string, Record<string, unknown> | undefined>;

  const storages: ObservedStorage[] = [];
  const volumesByStack = new Map<string, LocatedResource[]>();
  for (const l of withId) {
    if (l.row.resource_type !== HEAT_TYPES.volume || !Object.hasOwn(flavour.virtualStorages, l.row.resource_name)) continue;
    storages.push({
      virtualStorageDescId: l.row.resource_name,
      resourceId: l.row.physical_resource_id,
      vimLevelResourceType: HEAT_TYPES.volume,
      stableKey: l.path,
      metadata: locationMetadata(l, byNestedStack),
    });
    const list = volumesByStack.get(l.stack.id) ?? [];
    list.push(l);
    volumesByStack.set(l.stack.id, list);
  }

  const virtualLinks: ObservedVirtualLink[] = [];
  for (const l of withId) {
    if (l.row.resource_type !== HEAT_TYPES.net || !Object.hasOwn(flavour.virtualLinks, l.row.resource_name)) continue;
    virtualLinks.push({
      vnfVirtualLinkDescId: l.row.resource_name,
      resourceId: l.row.physical_resource_id,
      vimLevelResourceType: HEAT_TYPES.net,
      metadata: { stack_id: stackRefString(l.stack), resource_name: l.row.resource_name, heat_resource_path: l.path },
    });
  }

  const vnfcs: ObservedVnfc[] = [];
  for (const l of withId) {
    if (l.row.resource_type !== HEAT_TYPES.server || !Object.hasOwn(flavour.vdus, l.row.resource_name)) continue;
    const vdu = flavour.vdus[l.row.resource_name];
    if (vdu === undefined) continue;
    const sameStack = withId.filter((o) => o.stack.id === l.stack.id);
    const storageIds = (volumesByStack.get(l.stack.id) ?? []).filter((v) => vdu.virtualStorageIds.includes(v.row.resource_name)).map((v) => v.row.physical_resource_id);
    const facts = input.servers?.get(l.row.physical_resource_id);
    const portRows = sameStack.filter((o) => o.row.resource_type === HEAT_TYPES.port && vdu.cpIds.includes(o.row.resource_name)).map((o) => o.row);
    const cps = cpsOfServer(vdu, portRows, facts, input.ports);
    const metadata = locationMetadata(l, byNestedStack);
    const v = vduNfv[vdu.vduId];
    if (v && typeof v.computeFlavourId === 'string') metadata.flavor = v.computeFlavourId;
    if (v && typeof v.vcImageId === 'string') metadata[`image-${vdu.vduId}`] = v.vcImageId;
    if (facts?.host) metadata.host = facts.host;
    const zone = facts?.availabilityZone;
    if (zone) metadata.zone = zone;
    const unhealthy = facts?.status === 'ERROR' || /_FAILED$/.test(l.row.resource_status ?? '');
    vnfcs.push({
      vduId: vdu.vduId,
      computeResource: { resourceId: l.row.physical_resource_id, vimLevelResourceType: HEAT_TYPES.server },
      ...(zone ? { zoneId: zone } : {}),
      stableKey: l.path,
      ...(storageIds.length > 0 ? { storageResourceIds: storageIds } : {}),
      ...(cps.length > 0 ? { cps } : {}),
      metadata,
      ...(unhealthy ? { unhealthy: true } : {}),
    });
  }
  // Newest first within a VDU, as Tacker orders vnfcResourceInfo (scale-in removes the head).
  vnfcs.sort((a, b) => (a.vduId === b.vduId ? String(b.metadata?.creation_time ?? '').localeCompare(String(a.metadata?.creation_time ?? '')) : a.vduId.localeCompare(b.vduId)));
  // Ports of the top stack that are no VDU's CP (a cluster's VIP port `vip_CP`, a load balancer's
  // port): their addresses, for management drivers (`instantiatedVnfInfo.metadata.ports`).
  const ports: Record<string, { resourceId: string; fixed: string[] }> = {};
  for (const l of withId) {
    if (l.row.resource_type !== HEAT_TYPES.port || l.stack.id !== input.top.id || Object.hasOwn(flavour.cps, l.row.resource_name)) continue;
    ports[l.row.resource_name] = { resourceId: l.row.physical_resource_id, fixed: (input.ports?.get(l.row.physical_resource_id)?.fixedIps ?? []).map((f) => f.address) };
  }
  return { vnfcs, storages, virtualLinks, metadata: { stack_id: input.top.id, stack_name: input.top.name, ...(input.nfv ? { nfv: input.nfv } : {}), ...(Object.keys(ports).length > 0 ? { ports } : {}) } };
}
