/**
 * The contract of one LCM operation. Each operation is one module in this folder (instantiate,
 * scale, heal, terminate; MODIFY_INFO is synchronous, see modify-info.ts) that says what is
 * checked at acceptance, what the op aims at (levels and VNFC counts, frozen at its first run), what
 * is asked of the NFVO's grant, what the infra step does, and whether and how it rolls back. The
 * executor (../executor.ts) runs every operation through the same checkpointed steps (../steps/) and
 * owns leases, retries and cancellation; op occ states and notifications belong to
 * ../op-occ-state.ts, instance rows to ../instance-state.ts.
 *
 * A new operation is one module here, its entry in index.ts, and its route in src/api.
 */
import type { InfraContext, InfraDriver } from '../../infra/infra-driver.ts';
import type { CommandOf, LcmCommand } from '../../model/lcm-command.ts';
import type { VnfcResourceInfo, VnfInstanceRecord } from '../../model/vnf-instance.ts';
import type { ResourceDefinition } from '../../nfvo/grant-client.ts';
import { vnfcCountAtLevel } from '../../packages/vnfd-scaling.ts';
import type { FlavourModel, VnfPackageModel } from '../../packages/vnfd-model.ts';
import type { InstancePatch } from '../instance-state.ts';

/** What an op aims at, computed once and kept in the op's checkpoint (so retries use the same). */
export interface OpPlan {
  instantiationLevelId?: string;
  targetScaleLevels: Record<string, number>;
  targetVduCounts: Record<string, number>;
  /** SCALE: the aspect's level before and after. */
  fromLevel?: number;
  toLevel?: number;
}

/** What the handler's run-time parts get. */
export interface RunInput<C extends LcmCommand> {
  command: C;
  /** The instance as stored when the op (or this retry of it) started. */
  instance: VnfInstanceRecord;
  flavour: FlavourModel;
  plan: OpPlan;
}

/** The infra step's own checkpoint hooks. */
export interface InfraStep {
  /** Records the vnfcResourceInfo ids a heal replaces (kept, so the rebuild marks them MODIFIED). */
  remember(healedIds: string[]): Promise<void>;
}

/** Resources of a grant request. */
export interface GrantResources {
  add: ResourceDefinition[];
  remove: ResourceDefinition[];
}

/** One LCM operation executed by the runner. */
export interface OperationHandler<O extends 'INSTANTIATE' | 'SCALE' | 'HEAL' | 'TERMINATE' = 'INSTANTIATE' | 'SCALE' | 'HEAL' | 'TERMINATE'> {
  readonly operation: O;
  /** Prefix of its management hooks (`<hook>_start`, `<hook>_end`, `<hook>_rollback_start|end`). */
  readonly hook: 'instantiate' | 'scale' | 'heal' | 'terminate';
  /**
   * Checks made when the request is accepted (409 wrong state, 400/422 with the reason), before any
   * op occ exists; returns the command as it is stored (defaults filled in).
   */
  accept(instance: VnfInstanceRecord, vnfd: VnfPackageModel, command: CommandOf<O>): CommandOf<O>;
  /** The flavour the op runs in. */
  flavourId(command: CommandOf<O>, instance: VnfInstanceRecord): string | undefined;
  plan(command: CommandOf<O>, instance: VnfInstanceRecord, flavour: FlavourModel): OpPlan;
  grant(r: RunInput<CommandOf<O>>): GrantResources;
  /** The infra step (the lease is confirmed right before). */
  infra(driver: InfraDriver, ictx: InfraContext, r: RunInput<CommandOf<O>>, step: InfraStep): Promise<void>;
  /** Whether the VIM is observed after the infra step (TERMINATE: nothing is left to see). */
  readonly observes: boolean;
  /** Instantiation state after success. */
  readonly instantiatedAfter: boolean;
  /** Instance attributes set with COMPLETED besides the instance info (e.g. instantiate's extensions). */
  completedInstanceUpdate?(command: CommandOf<O>, instance: VnfInstanceRecord): InstancePatch;
  /** Rollback, when the operation has one (else `rollback` is answered 422). */
  readonly rollback?: OperationRollback<O>;
}

/** How an operation is rolled back. */
export interface OperationRollback<O extends 'INSTANTIATE' | 'SCALE' | 'HEAL' | 'TERMINATE'> {
  /** Why this op cannot be rolled back after all (e.g. a SCALE_IN), or undefined. */
  refused(command: CommandOf<O>): string | undefined;
  infra(driver: InfraDriver, ictx: InfraContext, r: RunInput<CommandOf<O>>): Promise<void>;
  /** The plan after the rollback (levels the instance is back at). */
  planAfter(r: RunInput<CommandOf<O>>): OpPlan;
  /** Whether the VIM is observed after the rollback, and the instantiation state then. */
  readonly observes: boolean;
  readonly instantiatedAfter: boolean;
}

/** Current scale levels of an instance (every aspect of the flavour, 0 when unknown). */
export function currentLevels(instance: VnfInstanceRecord, flavour: FlavourModel): Record<string, number> {
  const current: Record<string, number> = {};
  for (const s of instance.instantiatedVnfInfo?.scaleStatus ?? []) current[s.aspectId] = s.scaleLevel;
  for (const a of Object.keys(flavour.scalingAspects)) current[a] ??= 0;
  return current;
}

/** The plan of an op that keeps the instance's size (heal, terminate before zeroing). */
export function steadyPlan(instance: VnfInstanceRecord, flavour: FlavourModel): OpPlan {
  const current = currentLevels(instance, flavour);
  const instantiationLevelId = instance.instantiatedVnfInfo?.instantiationLevelId;
  const targetVduCounts =
    instance.instantiatedVnfInfo?.scaleStatus?.length || Object.keys(flavour.scalingAspects).length ? vnfcCountAtLevel(flavour, undefined, current) : vnfcCountAtLevel(flavour, instantiationLevelId);
  return { targetScaleLevels: current, targetVduCounts, ...(instantiationLevelId ? { instantiationLevelId } : {}) };
}

/** The grant's handle of an existing VNFC's compute resource. */
export function computeHandle(r: VnfcResourceInfo): NonNullable<ResourceDefinition['resource']> {
  return { resourceId: r.computeResource.resourceId, ...(r.computeResource.vimLevelResourceType ? { vimLevelResourceType: r.computeResource.vimLevelResourceType } : {}) };
}

/** Adds `n` new VNFCs of a VDU (compute and their storage) to a grant's resource list. */
export function addCompute(flavour: FlavourModel, vduId: string, n: number, out: ResourceDefinition[]): void {
  for (let i = 0; i < n; i++) out.push({ id: `${vduId}-${out.length}`, type: 'COMPUTE', vduId, resourceTemplateId: vduId });
  for (const st of flavour.vdus[vduId]?.virtualStorageIds ?? []) for (let i = 0; i < n; i++) out.push({ id: `${st}-${out.length}`, type: 'STORAGE', vduId, resourceTemplateId: st });
}

/** An existing VNFC's compute resource as a grant's removeResources entry. */
export function removeCompute(r: VnfcResourceInfo): ResourceDefinition {
  return { id: r.id, type: 'COMPUTE', vduId: r.vduId, resourceTemplateId: r.vduId, resource: computeHandle(r) };
}
