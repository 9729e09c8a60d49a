/**
 * Observe: what Heat (and Nova, for status, zone and addresses) has now for the instance's stack,
 * mapped by {@link observeFromListing}. After a VNFC heal only the nested stacks the heal changed
 * are listed again (the rest comes from the last observation kept in memory, when it still matches
 * the instance information); after an entire heal the listing read while the stack was created is
 * used. A missing stack is `VNFM_ERR_INFRA_STACK_MISSING`, never "no resources" (except where
 * nothing is expected, see {@link expectsNothing}).
 */
import { expectsNothing, type ObserveContext, type ObservedResources } from '../infra-driver.ts';
import type { HeatResource, HeatStackRef } from './heat-client.ts';
import { HEAT_TYPES, observeFromListing, type PortFacts, portFactsOf as portFactsOfRow, type ServerFacts, serverAddresses } from './heat-observer.ts';
import { changedStacks, isObject, str } from './heal-plan.ts';
import { parseNfvParameter } from './hot-params.ts';
import { OpenStackError, OpenStackErrorKind } from './openstack-error.ts';
import { findStack, type OpenStackSessions, type Prefetch, refOf, stackMissing, stackOfRow, type VimSession } from './session.ts';

/** A listing of the whole stack made of the kept observation and the changed stacks read again. */
interface PartialListing {
  top: HeatStackRef;
  rows: HeatResource[];
  ports: Promise<Map<string, PortFacts> | undefined> | undefined;
  changed: HeatStackRef[];
}

/** What an observation says about the servers and volumes of a VNF (sorted ids by VDU / storage). */
export function fingerprintOfObserved(o: ObservedResources): string {
  return JSON.stringify([o.vnfcs.map((v) => `${v.vduId}:${v.computeResource.resourceId}`).sort(), o.storages.map((v) => v.resourceId).sort()]);
}

/** The same of the instance information an operation started from. */
export function fingerprintOfInstance(ctx: Pick<ObserveContext, 'instance'>): string {
  const info = ctx.instance.instantiatedVnfInfo;
  return JSON.stringify([
    (info?.vnfcResourceInfo ?? []).map((v) => `${v.vduId}:${v.computeResource.resourceId}`).sort(),
    (info?.virtualStorageResourceInfo ?? []).map((v) => v.storageResource.resourceId).sort(),
  ]);
}

export async function observe(rt: OpenStackSessions, ctx: ObserveContext): Promise<ObservedResources> {
  const s = rt.session(ctx.vim);
  // After a VNFC heal the stack is known: its changed stacks are listed while it is read.
  const known = str(ctx.state?.stack);
  const slash = known?.lastIndexOf('/') ?? -1;
  const knownRef = known === undefined || slash <= 0 ? undefined : { name: known.slice(0, slash), id: known.slice(slash + 1) };
  // The wait of this operation's heal just read the stack (and maybe its resources): used once.
  const pre = knownRef === undefined ? undefined : rt.takePrefetch(ctx, knownRef.id);
  const full = pre?.listing === undefined ? undefined : await pre.listing;
  const early = knownRef === undefined || full !== undefined ? undefined : partialListing(rt, ctx, s, knownRef, pre);
  early?.catch(() => undefined); // awaited below, or dropped with the stack
  const stack = pre?.stack ?? (await findStack(ctx, s.heat));
  if (stack === null) {
    // "No stack" is never "no resources", except where nothing is expected: a terminate, or an
    // instantiate that has not created its stack yet.
    if (expectsNothing(ctx, str(ctx.state?.stack) !== undefined)) return { vnfcs: [], storages: [], virtualLinks: [], metadata: {} };
    throw stackMissing(ctx);
  }
  const ref = refOf(stack);
  const early2 = early === undefined ? undefined : await early;
  const partial = early2 !== undefined && early2.top.id === ref.id ? early2 : undefined;
  // Without Nova the CP ports' facts are always needed: read them while the stack is listed.
  const fullPorts = full?.portRows === undefined ? undefined : portFactsFromRows(ctx, full.portRows);
  const portsAhead = partial === undefined && fullPorts === undefined && (s.noNova || !rt.useNova) && Object.keys(ctx.flavour.cps).length > 0 ? portFactsOf(ctx, s, ref, rt.nestedDepth) : undefined;
  portsAhead?.catch(() => undefined);
  const rows = full?.rows ?? partial?.rows ?? (await s.heat.listResources(ref, { nestedDepth: rt.nestedDepth, signal: ctx.signal }));
  const serverIds = rows.filter((r) => r.resource_type === HEAT_TYPES.server && r.physical_resource_id).map((r) => r.physical_resource_id);
  const servers = serverIds.length > 0 ? await serverFacts(rt, ctx, s, serverIds) : new Map<string, ServerFacts>();
  let ports: Map<string, PortFacts> | undefined;
  if (needPortFacts(ctx, rows, servers)) {
    if (fullPorts !== undefined) ports = fullPorts;
    else if (partial !== undefined && partial.ports !== undefined) ports = await partial.ports;
    else ports = await (portsAhead ?? portFactsOf(ctx, s, ref, rt.nestedDepth));
  } else await portsAhead;
  const observed = observeFromListing({ top: ref, rows, flavour: ctx.flavour, servers, nfv: parseNfvParameter(stack.parameters?.nfv), ...(ports === undefined ? {} : { ports }) });
  rt.remember(ref, { rows, ports, fingerprint: fingerprintOfObserved(observed) });
  if (partial !== undefined) ctx.log.debug({ step: 'observe', stacks: partial.changed.map((c) => c.name), prefetched: pre !== undefined }, 'observed: re-listed only the nested stacks the heal changed');
  if (full !== undefined) ctx.log.debug({ step: 'observe' }, 'observed: the listing read while the stack was created');
  return observed;
}

/**
 * The listing of the whole stack without listing it whole, when this operation is a VNFC heal
 * whose update changed only the stacks owning the marked resources: the last observation of
 * this stack (kept in memory, and matching the instance information it produced) with the rows
 * of those stacks read again (in place, so the order is Heat's). Undefined (-> full listing)
 * otherwise: no heal update, a parameter change, no or an outdated kept observation, a changed
 * stack that cannot be listed.
 */
async function partialListing(rt: OpenStackSessions, ctx: ObserveContext, s: VimSession, ref: HeatStackRef, pre?: Prefetch): Promise<PartialListing | undefined> {
  const progress = ctx.state?.vnfcHeal;
  if (!isObject(progress) || progress.updateIssued !== true || progress.patched === true || !Array.isArray(progress.marked) || progress.marked.length === 0) return undefined;
  const cached = rt.listings.get(ref.id);
  if (cached === undefined || cached.fingerprint !== fingerprintOfInstance(ctx)) return undefined;
  const refs = new Map<string, HeatStackRef>([[ref.id, ref]]);
  for (const r of cached.rows) {
    const own = stackOfRow(r);
    if (own !== undefined) refs.set(own.id, own);
  }
  const changed = changedStacks(progress.marked as string[], refs);
  if (changed === undefined) return undefined;
  // The kept observation needed the CP ports' facts: those of the changed stacks are read alongside.
  const ports = cached.ports === undefined ? undefined : changedPortFacts(ctx, s, cached.ports, changed, pre);
  ports?.catch(() => undefined); // awaited by observe when still needed
  const fresh = new Map<string, HeatResource[]>();
  try {
    // Rows the heal's wait read once the stack had finished the update, else listed now.
    const lists = await Promise.all(
      changed.map(async (c) => (await pre?.changedRows.get(c.id)?.catch(() => undefined)) ?? s.heat.listResources(c, { signal: ctx.signal })),
    );
    changed.forEach((c, i) => fresh.set(c.id, lists[i] as HeatResource[]));
  } catch (e) {
    if (OpenStackError.isStatus(e, 404)) return undefined;
    throw e;
  }
  const rows: HeatResource[] = [];
  for (const r of cached.rows) {
    const id = stackOfRow(r)?.id;
    if (id === undefined || !changed.some((c) => c.id === id)) {
      rows.push(r);
      continue;
    }
    // The first row of a changed stack brings all of its rows; its other old rows go.
    const again = fresh.get(id);
    if (again !== undefined) rows.push(...again);
    fresh.delete(id);
  }
  for (const again of fresh.values()) rows.push(...again); // a changed stack without rows before
  return { top: ref, rows, ports, changed };
}

/** `ports` with the CP ports of the `changed` stacks read again (one detailed listing each). */
async function changedPortFacts(ctx: ObserveContext, s: VimSession, ports: ReadonlyMap<string, PortFacts>, changed: readonly HeatStackRef[], pre?: Prefetch): Promise<Map<string, PortFacts> | undefined> {
  const out = new Map(ports);
  for (const again of await Promise.all(changed.map(async (c) => (await pre?.changedPorts.get(c.id)?.catch(() => undefined)) ?? portFactsOf(ctx, s, c, 0)))) {
    if (again === undefined) return undefined;
    for (const [k, v] of again) out.set(k, v);
  }
  return out;
}

/**
 * Whether the CP ports' own facts (MAC, fixed IPs) are needed to tell the servers' addresses
 * apart: not when every server with a CP port has exactly that one port and Nova shows one MAC
 * for it (then the server's addresses are the port's).
 */
function needPortFacts(ctx: ObserveContext, rows: readonly HeatResource[], servers: ReadonlyMap<string, ServerFacts>): boolean {
  const stackOf = (r: HeatResource) => r.links?.find((l) => l.rel === 'stack')?.href ?? '';
  const cpPorts = rows.filter((r) => r.resource_type === HEAT_TYPES.port && r.physical_resource_id && Object.hasOwn(ctx.flavour.cps, r.resource_name));
  // A port of the top stack that no VDU owns (e.g. a VIP): only Heat's port attributes give its address.
  if (rows.some((r) => r.resource_type === HEAT_TYPES.port && r.physical_resource_id && !r.parent_resource && !Object.hasOwn(ctx.flavour.cps, r.resource_name))) return true;
  if (cpPorts.length === 0) return false;
  for (const srv of rows) {
    if (srv.resource_type !== HEAT_TYPES.server || !srv.physical_resource_id) continue;
    const vdu = ctx.flavour.vdus[srv.resource_name];
    if (vdu === undefined) continue;
    const n = cpPorts.filter((p) => stackOf(p) === stackOf(srv) && vdu.cpIds.includes(p.resource_name)).length;
    if (n === 0) continue;
    const macs = new Set((servers.get(srv.physical_resource_id)?.addresses ?? []).map((a) => a.mac).filter((m) => m !== undefined));
    if (n > 1 || macs.size !== 1) return true;
  }
  return false;
}

/**
 * MAC and fixed IPs of the CP ports, from ONE detailed listing of just the ports (`with_detail`
 * and a `type` filter, so Heat resolves the attributes of the ports only). Not a `name` filter:
 * Heat descends only into resources a column filter selected, so it would miss every port in a
 * nested stack (a scaling group's members).
 * Best effort: without it the addresses come from Nova alone.
 */
export async function portFactsOf(ctx: ObserveContext, s: VimSession, ref: HeatStackRef, nestedDepth: number): Promise<Map<string, PortFacts> | undefined> {
  try {
    const rows = await s.heat.listResources(ref, { ...(nestedDepth > 0 ? { nestedDepth } : {}), withDetail: true, filters: { type: HEAT_TYPES.port }, signal: ctx.signal });
    return portFactsFromRows(ctx, rows);
  } catch (e) {
    if (e instanceof OpenStackError && e.kind === OpenStackErrorKind.aborted) throw e;
    ctx.log.warn({ step: 'heat.list_ports', err: e instanceof Error ? e.message : String(e) }, 'cannot read the CP ports from Heat; addresses from Nova only');
    return undefined;
  }
}

/** Port facts of detailed port rows: CP ports, and the top stack's other ports (a cluster's VIP port, reported in metadata.ports). */
function portFactsFromRows(ctx: ObserveContext, rows: readonly HeatResource[]): Map<string, PortFacts> {
  const out = new Map<string, PortFacts>();
  for (const r of rows) {
    if (r.resource_type !== HEAT_TYPES.port || !r.physical_resource_id || (!Object.hasOwn(ctx.flavour.cps, r.resource_name) && r.parent_resource)) continue;
    const f = portFactsOfRow(r);
    if (f !== undefined) out.set(r.physical_resource_id, f);
  }
  return out;
}

/** Status, zone and addresses of servers from Nova (one listing); empty when the cloud has no Nova. */
async function serverFacts(rt: OpenStackSessions, ctx: ObserveContext, s: VimSession, ids: readonly string[]): Promise<Map<string, ServerFacts>> {
  const out = new Map<string, ServerFacts>();
  if (!rt.useNova || s.noNova) return out;
  try {
    await s.auth.endpoint('compute');
  } catch (e) {
    if (e instanceof OpenStackError && e.kind === OpenStackErrorKind.catalog) {
      s.noNova = true;
      return out;
    }
    throw e;
  }
  try {
    const wanted = new Set(ids);
    const servers = await s.nova.listServers({ detail: true, signal: ctx.signal });
    for (const srv of servers) {
      if (!wanted.has(srv.id)) continue;
      out.set(srv.id, { status: srv.status, availabilityZone: srv.availabilityZone, host: srv.host, addresses: serverAddresses(srv.addresses) });
    }
  } catch (e) {
    // Heat's view is enough to observe; Nova only adds status and zone.
    ctx.log.warn({ step: 'nova.list', err: e instanceof Error ? e.message : String(e) }, 'cannot read servers from Nova');
  }
  return out;
}
