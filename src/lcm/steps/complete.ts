/**
 * The instance writes of an operation: instantiatedVnfInfo rebuilt from what the VIM shows
 * (../instance-info.ts), and the completion, where the op occ reaches COMPLETED or ROLLED_BACK,
 * the instance takes its new state (instantiation state, instantiatedVnfInfo, what the management
 * hooks asked for: metadata, extensions, vimConnectionInfo entries) and the RESULT notification is
 * queued, in one transaction whose first write is fenced by the op's lease. The instance row is
 * written by ../instance-state.ts (compare-and-set on its `rev`).
 */
import type { Kysely } from 'kysely';
import type { ObservedResources } from '../../infra/infra-driver.ts';
import type { OpOccRecord } from '../../model/op-occ.ts';
import type { InstantiatedVnfInfo, VnfInstanceRecord } from '../../model/vnf-instance.ts';
import { mergePatch } from '../../packages/package-service.ts';
import { externalCps } from '../../packages/ext-cps.ts';
import { json } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import { rebuildInstantiatedInfo, type ResourceChanges } from '../instance-info.ts';
import type { InstanceService } from '../instance-service.ts';
import { type InstancePatch, updateInstanceRow } from '../instance-state.ts';
import type { MgmtStore } from '../mgmt-context.ts';
import type { OpOccStates } from '../op-occ-state.ts';
import type { Loaded, OpCtx, Run } from './op-ctx.ts';

/** Nothing observed (an op that does not observe the VIM). */
export const NOTHING: ObservedResources = { vnfcs: [], storages: [], virtualLinks: [] };

/** What completion needs. */
export interface CompleteDeps {
  db: Kysely<Database>;
  instances: InstanceService;
  states: OpOccStates;
  mgmtStore: MgmtStore;
}

/** instantiatedVnfInfo of `instance` rebuilt from `observed`, at the op's targets, and the resource changes. */
export function rebuildInfo(instance: VnfInstanceRecord, observed: ObservedResources, ctx: OpCtx, all: Loaded): { info: InstantiatedVnfInfo; changes: ResourceChanges } {
  const levels = ctx.targetScaleLevels ?? {};
  const cmd = all.command;
  return rebuildInstantiatedInfo(instance.instantiatedVnfInfo, observed, {
    flavourId: all.flavour.flavourId,
    vimConnectionId: all.vimKey,
    scaleStatus: Object.entries(levels).map(([aspectId, scaleLevel]) => ({ aspectId, scaleLevel })),
    maxScaleLevels: Object.values(all.flavour.scalingAspects).map((a) => ({ aspectId: a.aspectId, scaleLevel: a.maxScaleLevel })),
    instantiationLevelId: ctx.instantiationLevelId,
    healedIds: new Set(ctx.healedIds ?? []),
    externalCps: externalCps(all.flavour),
    ...(cmd.operation === 'INSTANTIATE' && cmd.extVirtualLinks ? { extVirtualLinks: cmd.extVirtualLinks } : {}),
    ...(ctx.mgmtResult?.vnfcMetadata ? { vnfcMetadata: ctx.mgmtResult.vnfcMetadata } : {}),
    ...(ctx.newIds ? { newIds: ctx.newIds } : {}),
  });
}

/** The instance change of a finished op: its new state and info, and what the management hooks asked for. */
function instancePatchOf(inst: VnfInstanceRecord, ctx: OpCtx, all: Loaded, info: InstantiatedVnfInfo, finalState: 'COMPLETED' | 'ROLLED_BACK', instantiated: boolean): InstancePatch {
  const mr = ctx.mgmtResult;
  const newInfo: InstantiatedVnfInfo | null = instantiated ? (mr?.vnfInfoMetadata ? { ...info, metadata: replaceKeys(info.metadata ?? {}, mr.vnfInfoMetadata) } : info) : null;
  const patch: InstancePatch = { instantiationState: instantiated ? 'INSTANTIATED' : 'NOT_INSTANTIATED', instantiatedVnfInfo: newInfo };
  if (mr?.metadata) patch.metadata = mergePatch(inst.metadata ?? {}, mr.metadata);
  if (mr?.extensions) patch.extensions = mergePatch(inst.extensions ?? {}, mr.extensions);
  if (mr?.vimConnectionInfo) {
    // Entries a management driver added (a VIM it registered) or removed (a VIM it deleted).
    const gone = new Set(mr.vimConnectionInfo.removeVimIds ?? []);
    const vci = Object.fromEntries(Object.entries(inst.vimConnectionInfo).filter(([, c]) => !(c.vimId && gone.has(c.vimId))));
    const added = Object.fromEntries(Object.entries(mr.vimConnectionInfo.add ?? {}).map(([k, c]) => [k, { ...c, extra: { ...(c.extra ?? {}), 'vnfm.io/registered-by': 'mgmt' } }]));
    patch.vimConnectionInfo = { ...vci, ...added };
  }
  if (finalState === 'COMPLETED' && instantiated && all.handler.completedInstanceUpdate) Object.assign(patch, all.handler.completedInstanceUpdate(all.command as never, inst));
  return patch;
}

/** The op ends COMPLETED or ROLLED_BACK: op occ, instance and RESULT notification in one (fenced) transaction. */
export async function complete(d: CompleteDeps, run: Run, op: OpOccRecord, all: Loaded, observed: ObservedResources, finalState: 'COMPLETED' | 'ROLLED_BACK', instantiated: boolean): Promise<void> {
  const ctx = run.ctx;
  const inst = await d.instances.get(op.vnfInstanceId);
  const { info, changes } = rebuildInfo(inst, observed, ctx, all);
  const mr = ctx.mgmtResult;
  const lease = run.lease;
  await d.db.transaction().execute(async (tx) => {
    const rc = changes.affectedVnfcs.length || changes.affectedVirtualLinks.length || changes.affectedVirtualStorages.length ? changes : null;
    delete ctx.current;
    // Fenced and first: a lost lease rolls the whole transaction back (no instance change, no notification).
    // A cancel that came during the last step had nothing left to stop: it is not pending any more.
    const set = { resource_changes: json(rc), error: json(null), pending: null, lease_owner: null, lease_until: null, next_attempt_at: null, step_attempts: 0, ctx: json(ctx), grant: json(null), is_cancel_pending: false, cancel_mode: null };
    await d.states.finished(
      tx,
      async (s, t) => {
        await lease.write(s, t);
        await updateInstanceRow(t, op.vnfInstanceId, inst.rev, instancePatchOf(inst, ctx, all, info, finalState, instantiated));
      },
      op,
      finalState,
      set,
      { instanceId: op.vnfInstanceId, full: { affectedVnfcs: changes.affectedVnfcs, affectedVirtualLinks: changes.affectedVirtualLinks, affectedVirtualStorages: changes.affectedVirtualStorages } },
    );
  });
  run.finish();
  // Parameter overrides a driver asked to keep (e.g. a credential that now works): completed ops only.
  if (finalState === 'COMPLETED' && mr?.instantiateParams) {
    await d.mgmtStore.persistInstantiateParams(op.vnfInstanceId, mr.instantiateParams).catch((e) => run.log.error({ err: e }, 'could not persist the instantiate parameter overrides of a management driver'));
  }
  run.log.info({ state: finalState, ms: Date.now() - op.startTime.getTime() }, 'lcm operation finished');
}

/** `base` with each key of `patch` replaced as a whole (a null value removes the key). */
function replaceKeys(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}
