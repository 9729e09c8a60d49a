/**
 * The contract between the LCM engine and a VIM. Every VIM type (OpenStack/Heat, Kubernetes, test
 * fakes) implements this same interface with the same file set. Drivers act, then report what the
 * VIM *really* has ({@link InfraDriver.observe}); the engine rebuilds instance info from that,
 * never from what it asked for.
 *
 * Drivers must be resumable: the engine may call the same method again after a crash, an automatic
 * retry (a step that failed with a retryable error: see `classifyFailure` in src/errors.ts) or an
 * operator's retry.
 * `ctx.state` is persisted by `ctx.checkpoint()`, so a driver records what it already did (e.g.
 * "marked unhealthy: VDU1-abc", "stack update started") and skips it on the next call.
 */
import type { Logger } from 'pino';
import type { VnfmConfig } from '../config.ts';
import type { LcmCommand } from '../model/lcm-command.ts';
import type { Operation } from '../model/op-occ.ts';
import type { VnfcInfo, VnfcResourceInfo, VirtualStorageResourceInfo, VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { FlavourModel, VnfPackageModel } from '../packages/vnfd-model.ts';
import type { VimConnection } from '../vims/vim-registry.ts';

/** The VIM settings of the VNFM configuration (`config.vim`): stack and readiness timeouts, polls. */
export type VimSettings = VnfmConfig['vim'];

/** The operation a driver call belongs to: its op occ id and type (not the op occ itself). */
export interface OpRef {
  id: string;
  operation: Operation;
}

/**
 * What observing a VNF's resources needs ({@link InfraDriver.observe}): the VIM connection, the
 * instance information, the package, a logger and a signal. Outside an operation (drift sync) it
 * has no `op` and no `state`; the observation that ends an operation's step gets that operation's
 * reference and the driver's state of it, to read only.
 */
export interface ObserveContext {
  /** The instance as stored (instantiatedVnfInfo is the last observed). */
  instance: VnfInstanceRecord;
  vnfd: VnfPackageModel;
  flavour: FlavourModel;
  /** The VIM connection (with credentials) the VNF runs on. */
  vim: VimConnection;
  /** Package files (lazy: read on first call, cached). */
  files(): Promise<Map<string, Buffer>>;
  /** Number of instances per VDU the VNF should have (after the operation, or now). */
  targetVduCounts: Record<string, number>;
  /** Aborted when the observation must stop now (lease lost, VNFM shutting down). */
  signal: AbortSignal;
  log: Logger;
  /** The operation the observation follows; absent outside operations. */
  op?: OpRef;
  /** The driver's persisted state of that operation (read only); absent outside operations. */
  state?: Readonly<Record<string, unknown>>;
}

/** What an operation step (instantiate, terminate, scale, heal, their rollbacks) needs. */
export interface InfraContext extends ObserveContext {
  /** The instance as stored before this operation (instantiatedVnfInfo is the last observed). */
  instance: VnfInstanceRecord;
  /** The op occ being executed (id and operation). */
  op: OpRef;
  /** What the operation does, version-neutral (the request). */
  command: LcmCommand;
  /** The grant of this operation (local NFVO: everything granted), or null. */
  grant: Record<string, unknown> | null;
  /** The grant request the VNFM sent for this operation, or null. */
  grantRequest: Record<string, unknown> | null;
  /** Driver-private, persisted state of this op (survives crash / retry). */
  state: Record<string, unknown>;
  /**
   * Persists `state` now. Call after each externally visible action. It is a fenced write: it
   * throws (and `signal` aborts) when this process no longer holds the op's lease, so a driver
   * that checkpoints between VIM calls never acts for an op another runner has taken over.
   */
  checkpoint(): Promise<void>;
  /**
   * Aborted when the op must stop now: its lease was lost (another runner owns the op) or the
   * VNFM is shutting down. Pass it to every VIM request and wait; stop at the next safe point
   * (between calls, in wait loops). Nothing may be written or sent for the op after it aborts.
   */
  signal: AbortSignal;
  /** Scale levels per aspect the VNF should be at after this operation. */
  targetScaleLevels: Record<string, number>;
  /** Number of instances per VDU the VNF should have after this operation. */
  targetVduCounts: Record<string, number>;
  /** Timeouts and poll intervals of VIM waits (`config.vim`). */
  vimSettings: VimSettings;
}

/** A heal target, resolved by the engine from the request. */
export interface HealTarget {
  vnfcInfo: VnfcInfo;
  vnfcResourceInfo: VnfcResourceInfo;
}

/** Heal request after validation. */
export interface HealPlan {
  /** VNFCs to heal; empty with `entire` true = the whole VNF. */
  targets: HealTarget[];
  /** Heal the whole VNF (SOL003 heal without VNFC ids and `all: true`, or v1 SOL003 heal). */
  entire: boolean;
  /** Also heal the storage of the targets (`additionalParams.all`). */
  includeStorage: boolean;
  additionalParams: Record<string, unknown>;
  cause?: string;
}

/** Scale request after validation. */
export interface ScalePlan {
  type: 'SCALE_OUT' | 'SCALE_IN';
  aspectId: string;
  numberOfSteps: number;
  fromLevel: number;
  toLevel: number;
  additionalParams: Record<string, unknown>;
  /**
   * Scale in: the VIM resources (compute resource ids) the VNFM decided to remove, as its grant
   * request names them; drivers that can choose remove exactly these (management hooks acted on them).
   */
  removeResourceIds?: string[];
}

/** One VNFC as the VIM reports it. */
export interface ObservedVnfc {
  vduId: string;
  computeResource: { resourceId: string; vimLevelResourceType: string; resourceProviderId?: string };
  zoneId?: string;
  /**
   * A key that stays the same when the VIM replaces the resource (Heat resource path, StatefulSet
   * ordinal, singleton Pod name). Lets the engine keep the VNFC's id across heals.
   */
  stableKey?: string;
  /** Storage attached to this VNFC (resource ids of {@link ObservedStorage}). */
  storageResourceIds?: string[];
  /** The VNFC's connection points (ports, pod networks) with the addresses the VIM reports. */
  cps?: ObservedCp[];
  /** VIM location details kept in vnfcResourceInfo.metadata (stack name/id, parent, pod kind...). */
  metadata?: Record<string, unknown>;
  /** True when the resource is not healthy right now (ERROR server, failed pod). */
  unhealthy?: boolean;
}

/** One IP address of a connection point. */
export interface ObservedIpAddress {
  address: string;
  /** Derived from the address when absent. */
  type?: 'IPV4' | 'IPV6';
  /** The VIM's subnet of a fixed address, when known. */
  subnetId?: string;
  /** A floating (NAT) address associated with the CP rather than one of its own. */
  floating?: boolean;
}

/** One connection point of a VNFC as the VIM reports it. */
export interface ObservedCp {
  /** The VduCp (CPD id) it realises. */
  cpdId: string;
  /** The VIM's port id, when the CP is a port. */
  resourceId?: string;
  macAddress?: string;
  addresses?: ObservedIpAddress[];
}

/**
 * An external CP the VIM exposes besides the VNFC CPs (e.g. a Kubernetes Service in front of
 * pods), with the VNFCs whose CPs it leads to.
 */
export interface ObservedExtCp {
  /** Stable id of the ext CP within the instance (e.g. `svc-<name>`). */
  id: string;
  cpdId: string;
  resourceId: string;
  vimLevelResourceType: string;
  addresses: ObservedIpAddress[];
  /** Compute resource ids of the VNFCs behind it (their first CP is associated). */
  vnfcResourceIds: string[];
}

/** One storage resource as the VIM reports it. */
export interface ObservedStorage {
  virtualStorageDescId: string;
  resourceId: string;
  vimLevelResourceType: string;
  stableKey?: string;
  metadata?: Record<string, unknown>;
}

/** One internal virtual link as the VIM reports it. */
export interface ObservedVirtualLink {
  vnfVirtualLinkDescId: string;
  resourceId: string;
  vimLevelResourceType: string;
  metadata?: Record<string, unknown>;
}

/** What the VIM has now for one VNF instance. */
export interface ObservedResources {
  vnfcs: ObservedVnfc[];
  storages: ObservedStorage[];
  virtualLinks: ObservedVirtualLink[];
  /** External CPs that are not VNFC CPs (Kubernetes Services). */
  extCps?: ObservedExtCp[];
  /** Goes to instantiatedVnfInfo.metadata (e.g. stack id, namespace). */
  metadata?: Record<string, unknown>;
}

/** The operations every VIM type implements. */
export interface InfraDriver {
  /** VIM types this driver serves (SOL vimType values). */
  readonly vimTypes: readonly string[];
  instantiate(ctx: InfraContext, req: Record<string, unknown>): Promise<void>;
  terminate(ctx: InfraContext, req: Record<string, unknown>): Promise<void>;
  scale(ctx: InfraContext, plan: ScalePlan): Promise<void>;
  heal(ctx: InfraContext, plan: HealPlan): Promise<void>;
  /**
   * Reports the VIM's current resources of the instance. When the VIM shows nothing of a VNF
   * that should exist (see {@link expectsNothing}) it throws `VNFM_ERR_INFRA_STACK_MISSING`;
   * it never answers "no resources" for a VNF it cannot see.
   */
  observe(ctx: ObserveContext): Promise<ObservedResources>;
  /** Undo a failed instantiate (delete whatever was created). */
  rollbackInstantiate(ctx: InfraContext): Promise<void>;
  /** Undo a failed scale-out (back to `plan.fromLevel`). */
  rollbackScaleOut(ctx: InfraContext, plan: ScalePlan): Promise<void>;
  /**
   * The VDUs of the flavour the VNF is made of, for a driver that may deploy only some of them
   * (Kubernetes: `lcm-kubernetes-def-files` naming only some manifests). For an INSTANTIATE it
   * reads the request, later operations the instance; undefined = every VDU. The engine plans the
   * others at 0 VNFCs (no grant, no VNFC). Called when an INSTANTIATE is accepted, so a request
   * that deploys nothing is refused at once: it throws `VNFM_ERR_INST_INVALID` (422) saying why.
   */
  deployedVdus?(args: DeploymentArgs): Promise<string[] | undefined>;
}

/** What {@link InfraDriver.deployedVdus} reads. */
export interface DeploymentArgs {
  instance: VnfInstanceRecord;
  command: LcmCommand;
  vnfd: VnfPackageModel;
  flavour: FlavourModel;
  /** Package files (lazy). */
  files(): Promise<Map<string, Buffer>>;
}

/**
 * True when an observation may legitimately find none of the instance's resources: a TERMINATE,
 * or an INSTANTIATE before the driver created anything (`created`). Everywhere else a driver whose
 * VIM shows nothing of the VNF (Heat stack gone, Kubernetes namespace or workloads gone) throws
 * `VNFM_ERR_INFRA_STACK_MISSING` instead of reporting "no resources", which the engine would
 * store as a VNF without VNFCs.
 */
export function expectsNothing(ctx: Pick<ObserveContext, 'op'>, created: boolean): boolean {
  const operation = ctx.op?.operation;
  return operation === 'TERMINATE' || (operation === 'INSTANTIATE' && !created);
}

/** Picks the driver for a VIM type. */
export class InfraDriverRegistry {
  private readonly drivers: InfraDriver[] = [];
  register(d: InfraDriver): void {
    this.drivers.unshift(d);
  }
  /** The driver for `vimType`, or undefined. */
  find(vimType: string): InfraDriver | undefined {
    return this.drivers.find((d) => d.vimTypes.includes(vimType));
  }
}

export type { VirtualStorageResourceInfo };
