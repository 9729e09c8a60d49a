/**
 * The OpenStack heal planner: pure functions (no I/O, no VIM client) that decide, from the
 * instance information, the heal request and what Heat lists, what a heal does:
 *
 * - the kind of heal ({@link healKind}): the entire VNF (delete and re-create the stack), some
 *   VNFCs (mark their servers, and with `includeStorage` their volumes, unhealthy in the stack that
 *   owns them, then ONE update of the top stack), or nothing;
 * - where each target's server is ({@link locateTarget}): where its metadata says (owning stack +
 *   resource name) while that row still holds the server, else wherever the server id is (a group
 *   member's nested stack found again in a fresh listing), else the stored location or resource
 *   path; a target found nowhere is an error (observe again before healing);
 * - what to mark, in order ({@link planVnfcMarks}): per target its server, then its volumes;
 *   a target already replaced by an earlier attempt of the same heal is skipped;
 * - whether a resource is marked again ({@link markAction}): once per operation, again only when
 *   Heat dropped the mark (same physical id, `*_COMPLETE` again);
 * - which nested stacks the heal changes ({@link changedStacks}, {@link waitLevels}), so the
 *   observation after it re-lists only those.
 */
import { vnfmError } from '../../errors.ts';
import type { VnfInstanceRecord } from '../../model/vnf-instance.ts';
import type { FlavourModel } from '../../packages/vnfd-model.ts';
import type { HealPlan, HealTarget } from '../infra-driver.ts';
import type { HeatResource, HeatStackRef } from './heat-client.ts';
import { HEAT_TYPES, type LocatedResource } from './heat-observer.ts';

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The stack id part of `name/id` (or the value itself when it has no '/'). */
export function idOf(stackId: string): string {
  const i = stackId.lastIndexOf('/');
  return i < 0 ? stackId : stackId.slice(i + 1);
}

/** Persisted progress of a VNFC heal, scale or scale rollback (`ctx.state[<key>]`). */
export interface UpdateProgress {
  /** `<owning stack id>/<resource name>#<physical id>` of every resource marked unhealthy so far. */
  marked: string[];
  /** The PATCH update was (about to be) sent; a retry re-sends it instead of marking again. */
  updateIssued: boolean;
  /** The update also changed the stack's parameters (then every nested stack may change). */
  patched?: boolean;
}

/** Persisted progress of an entire heal (`ctx.state.entireHeal`). */
export interface EntireHealProgress {
  phase: 'deleting' | 'deleted' | 'created';
  /** The parameters of the new stack, fixed before the old one is deleted. */
  parameters: Record<string, unknown>;
  oldStack?: string;
}

/** What a heal request makes the driver do. */
export type HealKind = 'entire' | 'vnfcs' | 'none';

/** The entire VNF (stack re-created), some VNFCs (marks + one update), or nothing to heal. */
export function healKind(plan: Pick<HealPlan, 'entire' | 'targets'>): HealKind {
  if (plan.entire) return 'entire';
  return plan.targets.length > 0 ? 'vnfcs' : 'none';
}

/** The reason given to Heat with each mark. */
export function healReason(plan: Pick<HealPlan, 'cause'>): string {
  return plan.cause ? `heal by the VNFM: ${plan.cause}` : 'heal by the VNFM';
}

/** `<owning stack id>/<resource name>`: where a resource is, whatever its physical id. */
export function resourceKey(l: LocatedResource): string {
  return `${l.stack.id}/${l.row.resource_name}`;
}

/** The recorded mark (`<key>#<physical id at marking time>`) of a resource, if any. */
export function markedEntry(progress: Pick<UpdateProgress, 'marked'>, l: LocatedResource): string | undefined {
  const prefix = `${resourceKey(l)}#`;
  return progress.marked.find((m) => m.startsWith(prefix));
}

/**
 * What to do with a heal resource given what this operation already marked: `mark` (never marked),
 * `skip` (marked, and still `CHECK_FAILED` / `*_FAILED` or already replaced: the next update replaces
 * or finishes it), or `remark` (marked earlier, but Heat shows it `*_COMPLETE` again with the SAME
 * physical id: Heat dropped the mark; `entry` is the record to drop before marking again).
 */
export function markAction(progress: Pick<UpdateProgress, 'marked'>, l: LocatedResource): { action: 'mark' | 'skip' } | { action: 'remark'; entry: string; status: string } {
  const entry = markedEntry(progress, l);
  if (entry === undefined) return { action: 'mark' };
  const status = l.row.resource_status ?? '';
  const sameId = entry.slice(entry.lastIndexOf('#') + 1) === l.row.physical_resource_id;
  if (!(sameId && status.endsWith('_COMPLETE') && !status.startsWith('CHECK_'))) return { action: 'skip' };
  return { action: 'remark', entry, status };
}

/**
 * Finds a heal target's server in a fresh listing: where its metadata says (owning stack +
 * resource name) when that row still holds the server, else wherever the server id is, else the
 * stored location or resource path (the server was replaced since the last observation). Throws
 * `VNFM_ERR_VIM_FAILED` when it is nowhere.
 */
export function locateTarget(located: readonly LocatedResource[], target: HealTarget): LocatedResource {
  const info = target.vnfcResourceInfo;
  const md = info.metadata ?? {};
  const rid = info.computeResource.resourceId;
  const servers = located.filter((l) => l.row.resource_type === HEAT_TYPES.server);
  const mdStack = str(md.stack_id);
  const mdName = str(md.resource_name) ?? info.vduId;
  const atMetadata = mdStack === undefined ? undefined : servers.find((l) => l.stack.id === idOf(mdStack) && l.row.resource_name === mdName);
  if (atMetadata !== undefined && atMetadata.row.physical_resource_id === rid) return atMetadata;
  const byId = servers.find((l) => l.row.physical_resource_id === rid);
  if (byId !== undefined) return byId;
  if (atMetadata !== undefined) return atMetadata;
  const path = str(md.heat_resource_path);
  const byPath = path === undefined ? undefined : servers.find((l) => l.path === path);
  if (byPath !== undefined) return byPath;
  throw vnfmError(
    'VNFM_ERR_VIM_FAILED',
    `VNFC ${target.vnfcInfo.id} (server ${rid}, VDU ${info.vduId}) is not in Heat stack ${located[0]?.stack.name ?? ''}: observe the instance again before healing`,
  );
}

/**
 * The server of a heal target, or undefined when a previous attempt already handled it: after
 * the update was issued a target whose original server is gone has been replaced. `retry` says
 * the server is still the original one after the update was issued (not replaced yet).
 */
export function findHealTarget(located: readonly LocatedResource[], target: HealTarget, progress: Pick<UpdateProgress, 'updateIssued'>): { server: LocatedResource; retry: boolean } | undefined {
  if (!progress.updateIssued) return { server: locateTarget(located, target), retry: false };
  const rid = target.vnfcResourceInfo.computeResource.resourceId;
  const still = located.find((l) => l.row.resource_type === HEAT_TYPES.server && l.row.physical_resource_id === rid);
  return still === undefined ? undefined : { server: still, retry: true };
}

/** Volumes of a heal target: its storage in the server's own stack, plus any listed by id. */
export function targetVolumes(flavour: FlavourModel, instance: VnfInstanceRecord, located: readonly LocatedResource[], server: LocatedResource, target: HealTarget): LocatedResource[] {
  const vdu = flavour.vdus[target.vnfcResourceInfo.vduId];
  const ids = new Set(target.vnfcResourceInfo.storageResourceIds ?? []);
  for (const v of instance.instantiatedVnfInfo?.virtualStorageResourceInfo ?? []) if (ids.has(v.id)) ids.add(v.storageResource.resourceId);
  return located.filter(
    (l) =>
      l.row.resource_type === HEAT_TYPES.volume &&
      (ids.has(l.row.physical_resource_id) || (l.stack.id === server.stack.id && (vdu?.virtualStorageIds ?? []).includes(l.row.resource_name))),
  );
}

/** One target of a VNFC heal: its server and volumes to mark, or why it has none. */
export type TargetMarks =
  | { target: HealTarget; server: LocatedResource; volumes: LocatedResource[]; retry: boolean }
  /** Replaced by an earlier attempt of this heal: nothing to mark. */
  | { target: HealTarget; replaced: true }
  /** Not in the stack: the heal fails here (targets before it are marked). */
  | { target: HealTarget; error: unknown };

/** What {@link planVnfcMarks} reads. */
export interface VnfcMarksInput {
  plan: Pick<HealPlan, 'targets' | 'includeStorage'>;
  /** The stack's resources (a full listing, or the targets' own stacks). */
  located: readonly LocatedResource[];
  flavour: FlavourModel;
  /** The instance information (its storage, for `includeStorage`). */
  instance: VnfInstanceRecord;
  progress: Pick<UpdateProgress, 'updateIssued'>;
}

/**
 * The resources a VNFC heal marks, target by target in request order: each target's server, then
 * (with `includeStorage`) its volumes. Planning stops at the first target not in the stack (its
 * entry carries the error); those before it are marked first, as the heal always did.
 */
export function planVnfcMarks(input: VnfcMarksInput): TargetMarks[] {
  const out: TargetMarks[] = [];
  for (const target of input.plan.targets) {
    let found: ReturnType<typeof findHealTarget>;
    try {
      found = findHealTarget(input.located, target, input.progress);
    } catch (error) {
      out.push({ target, error });
      return out;
    }
    if (found === undefined) {
      out.push({ target, replaced: true });
      continue;
    }
    const volumes = input.plan.includeStorage ? targetVolumes(input.flavour, input.instance, input.located, found.server, target) : [];
    out.push({ target, server: found.server, volumes, retry: found.retry });
  }
  return out;
}

/** Where a target's metadata says its server is: the owning stack, the resource name and its parent path. */
export interface MetadataLocation {
  owner: HeatStackRef;
  name: string;
  parent: string;
}

/** The stored location of a target (`metadata.stack_id`, `resource_name`, `parent_stack`), or undefined when incomplete. */
export function metadataLocation(target: HealTarget): MetadataLocation | undefined {
  const info = target.vnfcResourceInfo;
  const md = info.metadata ?? {};
  const stackId = str(md.stack_id);
  const name = str(md.resource_name) ?? info.vduId;
  const parent = typeof md.parent_stack === 'string' ? md.parent_stack : undefined;
  const slash = stackId?.lastIndexOf('/') ?? -1;
  if (stackId === undefined || parent === undefined || slash <= 0) return undefined;
  return { owner: { name: stackId.slice(0, slash), id: stackId.slice(slash + 1) }, name, parent };
}

/**
 * The rows of one owning stack as located resources (paths relative to the top stack through
 * `parent`); `stackOf` gives a row's own stack (rows of deeper stacks get a `?<id>` path).
 */
export function locateInOwner(owner: HeatStackRef, parent: string, raw: readonly HeatResource[], stackOf: (r: HeatResource) => HeatStackRef | undefined): LocatedResource[] {
  return raw.map((row) => {
    const own = stackOf(row) ?? owner;
    return {
      row,
      stack: own,
      stackPath: own.id === owner.id ? parent : `?${own.id}`,
      path: own.id === owner.id ? (parent === '' ? row.resource_name : `${parent}/${row.resource_name}`) : `?${own.id}/${row.resource_name}`,
    };
  });
}

/**
 * Whether a target is where its metadata says in `rows` (its owner's listing): the row named
 * `loc.name` there still holds the target's server and, with `includeStorage`, every volume of the
 * target is in that listing.
 */
export function targetAtMetadata(rows: readonly LocatedResource[], loc: MetadataLocation, target: HealTarget, includeStorage: boolean, instance: VnfInstanceRecord): boolean {
  const info = target.vnfcResourceInfo;
  const server = rows.find((l) => l.stack.id === loc.owner.id && l.row.resource_type === HEAT_TYPES.server && l.row.resource_name === loc.name);
  if (server === undefined || server.row.physical_resource_id !== info.computeResource.resourceId) return false;
  if (includeStorage) {
    const vols = new Set(rows.filter((l) => l.row.resource_type === HEAT_TYPES.volume).map((l) => l.row.physical_resource_id));
    const ids = new Set(info.storageResourceIds ?? []);
    for (const v of instance.instantiatedVnfInfo?.virtualStorageResourceInfo ?? []) if (ids.has(v.id) && !vols.has(v.storageResource.resourceId)) return false;
  }
  return true;
}

/**
 * The stacks owning the marked resources (`<stack id>/...` of each mark), by id, from `refs`;
 * undefined when one is not in `refs`.
 */
export function changedStacks(marked: readonly string[], refs: ReadonlyMap<string, HeatStackRef>): HeatStackRef[] | undefined {
  const changed: HeatStackRef[] = [];
  for (const m of marked) {
    const id = m.slice(0, m.indexOf('/'));
    const own = refs.get(id);
    if (own === undefined) return undefined;
    if (!changed.some((c) => c.id === id)) changed.push(own);
  }
  return changed;
}

/**
 * The stacks a heal update walks through, bottom up: the changed (nested) stacks, then their
 * parents level by level up to (not including) the top stack, at most 8 levels. `chainComplete`
 * is false when a stack's parent is unknown.
 */
export function waitLevels(changed: readonly HeatStackRef[], parentOf: ReadonlyMap<string, HeatStackRef>, topId: string): { levels: HeatStackRef[][]; chainComplete: boolean } {
  const levels: HeatStackRef[][] = [];
  let chainComplete = changed.length > 0;
  for (let level = [...changed]; level.length > 0 && levels.length < 8; ) {
    levels.push(level);
    const up = new Map<string, HeatStackRef>();
    for (const r of level) {
      const parent = parentOf.get(r.id);
      if (parent === undefined) chainComplete = false;
      else if (parent.id !== topId) up.set(parent.id, parent);
    }
    level = [...up.values()];
  }
  return { levels, chainComplete };
}
