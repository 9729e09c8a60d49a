/**
 * Executes one claimed op occ as checkpointed steps:
 *   STARTING: grant -> PROCESSING (+notification)
 *   PROCESSING: mgmt <op>_start -> infra driver -> mgmt <op>_end -> finalize
 *   finalize: observe the VIM, rebuild instantiatedVnfInfo, resourceChanges, COMPLETED (+notification)
 * Each step is recorded in `op_occ.ctx.done` when it finishes, so a retry or a resume after a
 * crash continues at the first step not done. A step that fails with a retryable error (see
 * `classifyFailure` in src/errors.ts) is run again automatically with exponential back-off: the op
 * keeps its state and `pending` action, is released with `next_attempt_at`, and any runner claims
 * it again when that time has come (no worker slot is held while it waits). Terminal failures, and
 * retryable ones past `runner.stepRetries.maxAttempts`, move the op to FAILED_TEMP with a
 * ProblemDetails `error`; rollback runs the driver's undo and ends in ROLLED_BACK.
 *
 * Every write made while executing an op is fenced by the op's lease (src/lcm/lease.ts): when this
 * process no longer holds it, the write changes nothing, the op's AbortSignal fires, and the
 * executor stops without another write, notification or VIM call. The lease is confirmed right
 * before each driver call and each hook.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { VnfmMetrics } from '../core/metrics.ts';
import type { VnfmConfig } from '../config.ts';
import { classifyFailure, isVnfmError, terminalError, type VnfmError, vnfmError } from '../errors.ts';
import type { HealPlan, InfraContext, InfraDriverRegistry, ObservedResources, ScalePlan } from '../infra/infra-driver.ts';
import type { HookName, MgmtContext, MgmtResult, MgmtRunner } from '../mgmt/mgmt-driver.ts';
import type { OpOccRecord } from '../model/op-occ.ts';
import type { InstantiatedVnfInfo, VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { GrantClient, GrantRequest, ResourceDefinition } from '../nfvo/grant-client.ts';
import type { Notifier } from '../notify/notifier.ts';
import { mergePatch, type PackageService } from '../packages/package-service.ts';
import { scaleLevelsAtInstantiationLevel, validateScale, vnfcCountAtLevel } from '../packages/vnfd-scaling.ts';
import type { FlavourModel, VnfPackageModel } from '../packages/vnfd-model.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import type { VimConnection } from '../vims/vim-registry.ts';
import type { InstanceService } from './instance-service.ts';
import { factsOf } from './instance-service.ts';
import { rebuildInstantiatedInfo } from './instance-info.ts';
import type { LcmService } from './lcm-service.ts';
import { dbNowPlus, isStop, type OpLease } from './lease.ts';
import { getOpOcc } from './op-occ-repo.ts';

/** Persistent engine context of one op occ (the `ctx` column). */
interface OpCtx {
  done: string[];
  /** Step started but not finished (crash detection). */
  current?: string;
  flavourId?: string;
  instantiationLevelId?: string;
  targetScaleLevels?: Record<string, number>;
  targetVduCounts?: Record<string, number>;
  fromLevel?: number;
  toLevel?: number;
  /** vnfcResourceInfo ids healed. */
  healedIds?: string[];
  driver: Record<string, unknown>;
  mgmt: Record<string, unknown>;
  mgmtResult?: MgmtResult;
  /** The step in flight when it was declared safe to repeat at its start (idempotent hooks only). */
  resumableStep?: string;
  /** The automatic retry pending or last made (cleared when its step completes). */
  retry?: RetryState;
  /** Every automatic retry of this op, oldest first (at most {@link RETRY_LOG_MAX}). */
  retries?: RetryLogEntry[];
  [k: string]: unknown;
}

/** The state of an automatic step retry (`ctx.retry`, shown as `vnfmRetry` on the op occ while it waits). */
export interface RetryState {
  step: string;
  /** Failed attempts of `step` so far. */
  attempts: number;
  maxAttempts: number;
  delayMs: number;
  /** ProblemDetails of the last failure. */
  lastError: Record<string, unknown>;
}

/** One automatic retry, kept in `ctx.retries`. */
export interface RetryLogEntry {
  step: string;
  attempt: number;
  delayMs: number;
  at: string;
  detail: string;
}

const RETRY_LOG_MAX = 50;
const FORWARD_STEPS = ['grant', 'mgmt-start', 'infra', 'mgmt-end', 'finalize'];
const ROLLBACK_STEPS = ['mgmt-start', 'infra', 'mgmt-end'];

/**
 * Delay before the next attempt after `failed` failed attempts of a step: "equal jitter"
 * exponential back-off (half of min(max, base * 2^(failed-1)) fixed, the other half random), raised
 * to a VIM's Retry-After, never above `maxDelayMs`.
 */
export function stepRetryDelay(failed: number, cfg: { baseDelayMs: number; maxDelayMs: number }, retryAfterMs?: number, random: () => number = Math.random): number {
  const cap = Math.min(cfg.maxDelayMs, cfg.baseDelayMs * 2 ** Math.max(0, failed - 1));
  const jittered = cap / 2 + random() * (cap / 2);
  return Math.round(Math.min(cfg.maxDelayMs, Math.max(jittered, retryAfterMs ?? 0)));
}

/** The ProblemDetails recorded for a failure. */
function problemOf(e: unknown): { title: string; status: number; detail: string; type?: string } {
  if (isVnfmError(e)) return { title: e.title, status: e.httpStatus, detail: e.message, type: `urn:vnfm:error:${e.code}` };
  if (e instanceof Cancelled) return { title: 'Cancelled', status: 409, detail: e.message };
  return { title: 'Internal Server Error', status: 500, detail: `unexpected failure: ${(e as Error)?.message ?? String(e)}` };
}

/** Steps whose interruption by a crash is safe to resume automatically. */
const RESUMABLE_STEPS = new Set(['grant', 'infra', 'finalize', 'rollback-infra', 'rollback-finalize']);

/** Dependencies of the executor. */
export interface ExecutorDeps {
  db: Kysely<Database>;
  config: VnfmConfig;
  log: Logger;
  metrics: VnfmMetrics;
  notifier: Notifier;
  instances: InstanceService;
  packages: PackageService;
  lcm: LcmService;
  drivers: InfraDriverRegistry;
  mgmt: MgmtRunner;
  grants: GrantClient;
  /** Asks the runner to look for work again in `ms` (an automatic retry falls due then). */
  wakeAfter?: (ms: number) => void;
}

/**
 * Raised to stop an op at a step boundary (v1 cancel). A cancel seen before the op left STARTING
 * (not granted, nothing done) rolls it back (SOL003: STARTING -> ROLLED_BACK); later, FAILED_TEMP.
 */
class Cancelled extends Error {
  readonly rollBack: boolean;
  constructor(
    readonly mode: string,
    starting: boolean,
  ) {
    super(`the operation was cancelled by request (cancelMode ${mode})`);
    this.rollBack = starting;
  }
}

/** Runs op occs. */
export class Executor {
  /** The lease of each execution in progress, by its ctx object (one per execution). */
  private readonly leases = new WeakMap<OpCtx, OpLease>();
  /** Executions whose op reached its final state (the lease is given back: no more writes). */
  private readonly finished = new WeakSet<OpCtx>();

  constructor(private readonly d: ExecutorDeps) {}

  /**
   * Executes the op's pending action under `lease`; never throws (failures are recorded on the op,
   * or scheduled for an automatic retry). When the lease is lost or the op is aborted (shutdown) it
   * returns without writing anything more.
   */
  async execute(op: OpOccRecord, resumedAfterCrash: boolean, lease: OpLease): Promise<void> {
    const log = this.d.log.child({ vnfInstanceId: op.vnfInstanceId, opOccId: op.id, operation: op.operation });
    const ctx: OpCtx = { done: [], driver: {}, mgmt: {}, ...(op.ctx as Partial<OpCtx>) };
    this.leases.set(ctx, lease);
    try {
      if (resumedAfterCrash && ctx.current && !RESUMABLE_STEPS.has(ctx.current) && ctx.resumableStep !== ctx.current) {
        throw terminalError('VNFM_ERR_LCM_INTERRUPTED', `the VNFM stopped while step '${ctx.current}' was running; it was not resumed automatically because it is not known to be safe to repeat. Retry continues from that step.`);
      }
      if (resumedAfterCrash) log.warn({ step: ctx.current }, 'resuming operation after an interruption');
      if (op.pending === 'rollback') await this.rollback(op, ctx, log);
      else await this.run(op, ctx, log);
    } catch (e) {
      if (this.stopped(ctx, e, log)) return;
      try {
        await this.onFailure(op, ctx, e, log);
      } catch (e2) {
        if (this.stopped(ctx, e2, log)) return;
        throw e2;
      }
    }
  }

  private lease(ctx: OpCtx): OpLease {
    const l = this.leases.get(ctx);
    if (!l) throw new Error('executor: no lease for this execution');
    return l;
  }

  /** True when the op was stopped (lease lost, shutdown) rather than failed: nothing may be written. */
  private stopped(ctx: OpCtx, e: unknown, log: Logger): boolean {
    const lease = this.lease(ctx);
    if (!isStop(e) && !lease.signal.aborted) return false;
    const reason = lease.signal.aborted ? lease.signal.reason : e;
    log.warn({ step: ctx.current, reason: (reason as Error)?.message ?? String(reason), leaseLost: lease.lost }, 'operation stopped; nothing more is done for it by this process');
    return true;
  }

  /**
   * A step failed: retry it later (retryable, attempts left) or FAILED_TEMP at once. The retry is
   * a fenced write that releases the op with `next_attempt_at` on the database clock.
   */
  private async onFailure(op: OpOccRecord, ctx: OpCtx, e: unknown, log: Logger): Promise<void> {
    const cls = e instanceof Cancelled ? { retryable: false } : classifyFailure(e);
    const step = ctx.current ?? this.nextStep(op, ctx);
    const failed = (ctx.retry?.step === step ? ctx.retry.attempts : 0) + 1;
    const cfg = this.d.config.runner.stepRetries;
    if (!cls.retryable || failed >= cfg.maxAttempts) {
      await this.failTemp(op.id, ctx, e, log, cls.retryable ? { step, attempts: failed } : undefined);
      return;
    }
    const delayMs = stepRetryDelay(failed, cfg, cls.retryAfterMs);
    const lastError = problemOf(e);
    ctx.retry = { step, attempts: failed, maxAttempts: cfg.maxAttempts, delayMs, lastError };
    ctx.retries = [...(ctx.retries ?? []), { step, attempt: failed, delayMs, at: new Date().toISOString(), detail: lastError.detail }].slice(-RETRY_LOG_MAX);
    // The step did not finish: it runs again from its start (drivers and hooks resume through their state).
    delete ctx.current;
    await this.lease(ctx).write({ ctx: json(ctx), step_attempts: failed, next_attempt_at: dbNowPlus(delayMs), lease_owner: null, lease_until: null });
    this.d.metrics.stepRetries.inc({ operation: op.operation, step });
    log.warn(
      { step, attempt: failed, maxAttempts: cfg.maxAttempts, delayMs, retryAfterMs: cls.retryAfterMs, error: lastError.detail, code: (e as VnfmError).code },
      'step failed with a retryable error; it runs again after the back-off',
    );
    this.d.wakeAfter?.(delayMs);
  }

  /** The step a retry will run first (a failure between steps belongs to the next one). */
  private nextStep(op: OpOccRecord, ctx: OpCtx): string {
    if (op.pending === 'rollback') {
      const rdone = (ctx.rollbackDone as string[] | undefined) ?? [];
      const s = ROLLBACK_STEPS.find((x) => !rdone.includes(x));
      return s ? `rollback-${s}` : 'rollback-finalize';
    }
    return FORWARD_STEPS.find((x) => !ctx.done.includes(x)) ?? 'finalize';
  }

  private async save(_opId: string, ctx: OpCtx): Promise<void> {
    await this.lease(ctx).write({ ctx: json(ctx) });
  }

  private async step(opId: string, ctx: OpCtx, name: string, log: Logger, fn: () => Promise<void | 'skipped'>, needed: () => boolean = () => true, resumable: () => boolean = () => false): Promise<void> {
    if (ctx.done.includes(name)) return;
    if (!needed()) {
      // Nothing to do in this step (e.g. no management hook applies): no checkpoint write needed.
      ctx.done.push(name);
      return;
    }
    ctx.current = name;
    // A step not in RESUMABLE_STEPS may still be safe to repeat this time (only idempotent hooks act).
    if (resumable()) ctx.resumableStep = name;
    else delete ctx.resumableStep;
    const lease = this.lease(ctx);
    // One write per step start: checkpoint "started" (crash detection), read the cancel flag; fenced,
    // so it also confirms (and renews) the lease right before the step acts.
    const row = await lease.writeReturning({ ctx: json(ctx) }, ['is_cancel_pending', 'cancel_mode', 'operation_state']);
    if (row.is_cancel_pending) throw new Cancelled(row.cancel_mode ?? 'GRACEFUL', row.operation_state === 'STARTING');
    const t = Date.now();
    const r = await fn();
    ctx.done.push(name);
    delete ctx.current;
    delete ctx.resumableStep;
    const retried = ctx.retry?.step === name;
    if (retried) delete ctx.retry;
    if (this.finished.has(ctx)) log.info({ step: name, ms: Date.now() - t }, 'step done');
    else if (r !== 'skipped' || retried) {
      await lease.write(retried ? { ctx: json(ctx), step_attempts: 0 } : { ctx: json(ctx) });
      log.info({ step: name, ms: Date.now() - t }, 'step done');
    }
  }

  private async loadAll(op: OpOccRecord, ctx: OpCtx) {
    const instance = await this.d.instances.get(op.vnfInstanceId);
    const vnfd = await this.d.lcm.vnfdOf(instance);
    const flavourId = ctx.flavourId ?? (op.operation === 'INSTANTIATE' ? (op.operationParams.flavourId as string) : instance.instantiatedVnfInfo?.flavourId);
    const flavour = flavourId ? vnfd.flavours[flavourId] : undefined;
    if (!flavour) throw vnfmError('VNFM_ERR_INST_INVALID', `flavour ${flavourId} not found in VNFD ${vnfd.vnfdId}`);
    ctx.flavourId = flavour.flavourId;
    const conns = await this.d.instances.vimConnections(instance.id);
    const vimKey = Object.keys(conns)[0];
    const vim = vimKey ? conns[vimKey] : undefined;
    let filesCache: Promise<Map<string, Buffer>> | undefined;
    const files = () => {
      filesCache ??= this.d.packages.files(instance.vnfPkgId);
      return filesCache;
    };
    return { instance, vnfd, flavour, vim, vimKey: vimKey ?? 'vim1', files };
  }

  /** Computes and freezes the target levels/counts of the op (so retries use the same). */
  private plan(op: OpOccRecord, ctx: OpCtx, instance: VnfInstanceRecord, flavour: FlavourModel): void {
    if (ctx.targetScaleLevels && ctx.targetVduCounts) return;
    const current: Record<string, number> = {};
    for (const s of instance.instantiatedVnfInfo?.scaleStatus ?? []) current[s.aspectId] = s.scaleLevel;
    for (const a of Object.keys(flavour.scalingAspects)) current[a] ??= 0;
    if (op.operation === 'INSTANTIATE') {
      const lvl = op.operationParams.instantiationLevelId as string | undefined;
      ctx.instantiationLevelId = lvl ?? flavour.defaultInstantiationLevelId;
      ctx.targetScaleLevels = scaleLevelsAtInstantiationLevel(flavour, lvl);
      ctx.targetVduCounts = vnfcCountAtLevel(flavour, lvl);
    } else if (op.operation === 'SCALE') {
      const aspectId = op.operationParams.aspectId as string;
      const from = current[aspectId] ?? 0;
      const r = validateScale(flavour, aspectId, from, (op.operationParams.numberOfSteps as number) ?? 1, op.operationParams.type as 'SCALE_OUT' | 'SCALE_IN');
      if (!r.ok) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', r.message);
      ctx.fromLevel = from;
      ctx.toLevel = r.newLevel;
      ctx.targetScaleLevels = { ...current, [aspectId]: r.newLevel };
      ctx.targetVduCounts = vnfcCountAtLevel(flavour, undefined, ctx.targetScaleLevels);
    } else {
      ctx.targetScaleLevels = current;
      ctx.instantiationLevelId = instance.instantiatedVnfInfo?.instantiationLevelId;
      ctx.targetVduCounts =
        instance.instantiatedVnfInfo?.scaleStatus?.length || Object.keys(flavour.scalingAspects).length ? vnfcCountAtLevel(flavour, undefined, current) : vnfcCountAtLevel(flavour, ctx.instantiationLevelId);
      if (op.operation === 'TERMINATE') ctx.targetVduCounts = Object.fromEntries(Object.keys(ctx.targetVduCounts).map((k) => [k, 0]));
    }
  }

  private infraContext(op: OpOccRecord, ctx: OpCtx, all: Awaited<ReturnType<Executor['loadAll']>>, grant: Record<string, unknown> | null, log: Logger): InfraContext {
    if (!all.vim) throw vnfmError('VNFM_ERR_INST_INVALID', `VnfInstance ${op.vnfInstanceId} has no vimConnectionInfo`);
    return {
      instance: all.instance,
      opOcc: op,
      vnfd: all.vnfd,
      flavour: all.flavour,
      vim: all.vim,
      files: all.files,
      grant,
      state: ctx.driver,
      checkpoint: () => this.save(op.id, ctx),
      signal: this.lease(ctx).signal,
      targetScaleLevels: ctx.targetScaleLevels ?? {},
      targetVduCounts: ctx.targetVduCounts ?? {},
      log,
      config: this.d.config,
      publicUrl: this.d.config.publicUrl,
    };
  }

  private driverFor(vim: VimConnection | undefined) {
    if (!vim) throw vnfmError('VNFM_ERR_INST_INVALID', 'the VNF instance has no vimConnectionInfo');
    const drv = this.d.drivers.find(vim.vimType);
    if (!drv) throw vnfmError('VNFM_ERR_VIM_INVALID', `no infra driver for VIM type ${vim.vimType}`);
    return drv;
  }

  private async hook(op: OpOccRecord, ctx: OpCtx, hook: HookName, all: Awaited<ReturnType<Executor['loadAll']>>, grant: Record<string, unknown> | null, log: Logger): Promise<void | 'skipped'> {
    const mctx: MgmtContext = {
      hook,
      instance: all.instance,
      opOcc: op,
      request: op.operationParams,
      vnfd: all.vnfd,
      flavour: all.flavour,
      vim: all.vim,
      grantRequest: op.grantRequest,
      grant,
      files: all.files,
      state: ctx.mgmt,
      checkpoint: () => this.save(op.id, ctx),
      signal: this.lease(ctx).signal,
      log,
      config: this.d.config,
      publicUrl: this.d.config.publicUrl,
    };
    if (!this.d.mgmt.applies(mctx)) return 'skipped';
    await this.lease(ctx).confirm();
    const r = await this.d.mgmt.run(mctx);
    if (r.metadata || r.extensions || r.vnfcMetadata) {
      const prev = ctx.mgmtResult ?? {};
      ctx.mgmtResult = {
        ...(r.metadata || prev.metadata ? { metadata: { ...(prev.metadata ?? {}), ...(r.metadata ?? {}) } } : {}),
        ...(r.extensions || prev.extensions ? { extensions: { ...(prev.extensions ?? {}), ...(r.extensions ?? {}) } } : {}),
        ...(r.vnfcMetadata || prev.vnfcMetadata ? { vnfcMetadata: { ...(prev.vnfcMetadata ?? {}), ...(r.vnfcMetadata ?? {}) } } : {}),
      };
    }
  }

  /** Whether every driver acting on this hook declares it safe to repeat (then a crash inside it is resumed). */
  private hookIdempotent(op: OpOccRecord, ctx: OpCtx, hook: HookName, all: Awaited<ReturnType<Executor['loadAll']>>): boolean {
    return this.d.mgmt.idempotent({ hook, instance: all.instance, opOcc: op, request: op.operationParams, vnfd: all.vnfd, flavour: all.flavour, vim: all.vim, grantRequest: null, grant: null, files: all.files, state: ctx.mgmt, checkpoint: async () => undefined, signal: this.lease(ctx).signal, log: this.d.log, config: this.d.config, publicUrl: this.d.config.publicUrl });
  }

  private hookNeeded(op: OpOccRecord, ctx: OpCtx, hook: HookName, all: Awaited<ReturnType<Executor['loadAll']>>): boolean {
    return this.d.mgmt.applies({ hook, instance: all.instance, opOcc: op, request: op.operationParams, vnfd: all.vnfd, flavour: all.flavour, vim: all.vim, grantRequest: null, grant: null, files: all.files, state: ctx.mgmt, checkpoint: async () => undefined, signal: this.lease(ctx).signal, log: this.d.log, config: this.d.config, publicUrl: this.d.config.publicUrl });
  }

  private healPlan(op: OpOccRecord, instance: VnfInstanceRecord): HealPlan {
    const p = op.operationParams;
    const ap = (p.additionalParams ?? {}) as Record<string, unknown>;
    const ids = (p.vnfcInstanceId as string[] | undefined) ?? [];
    const targets = this.d.lcm.resolveHealTargets(instance, ids, op.apiVersion);
    // v1: a heal without VNFC ids (SOL003) re-creates the whole VNF. v2: the whole VNF only with all=true; otherwise every VNFC.
    const entire = ids.length === 0 && (op.apiVersion === 'v1' || ap.all === true);
    const allTargets = ids.length === 0 && !entire ? this.d.lcm.resolveHealTargets(instance, (instance.instantiatedVnfInfo?.vnfcInfo ?? []).map((i) => i.id), 'v2') : targets;
    return { targets: allTargets, entire, includeStorage: ap.all === true, additionalParams: ap, ...(typeof p.cause === 'string' ? { cause: p.cause } : {}) };
  }

  private scalePlan(op: OpOccRecord, ctx: OpCtx): ScalePlan {
    const p = op.operationParams;
    return { type: p.type as 'SCALE_OUT' | 'SCALE_IN', aspectId: p.aspectId as string, numberOfSteps: (p.numberOfSteps as number) ?? 1, fromLevel: ctx.fromLevel ?? 0, toLevel: ctx.toLevel ?? 0, additionalParams: (p.additionalParams ?? {}) as Record<string, unknown> };
  }

  private grantRequest(op: OpOccRecord, ctx: OpCtx, instance: VnfInstanceRecord, vnfd: VnfPackageModel, flavour: FlavourModel): GrantRequest {
    const base = `${this.d.config.publicUrl}/vnflcm/${op.apiVersion}`;
    const add: ResourceDefinition[] = [];
    const remove: ResourceDefinition[] = [];
    const existing = instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
    const compute = (vduId: string, n: number, out: ResourceDefinition[]) => {
      for (let i = 0; i < n; i++) out.push({ id: `${vduId}-${out.length}`, type: 'COMPUTE', vduId, resourceTemplateId: vduId });
      for (const st of flavour.vdus[vduId]?.virtualStorageIds ?? []) for (let i = 0; i < n; i++) out.push({ id: `${st}-${out.length}`, type: 'STORAGE', vduId, resourceTemplateId: st });
    };
    const handleOf = (r: (typeof existing)[number]) => ({ resourceId: r.computeResource.resourceId, ...(r.computeResource.vimLevelResourceType ? { vimLevelResourceType: r.computeResource.vimLevelResourceType } : {}) });
    if (op.operation === 'INSTANTIATE') for (const [vdu, n] of Object.entries(ctx.targetVduCounts ?? {})) compute(vdu, n, add);
    else if (op.operation === 'TERMINATE') for (const r of existing) remove.push({ id: r.id, type: 'COMPUTE', vduId: r.vduId, resourceTemplateId: r.vduId, resource: handleOf(r) });
    else if (op.operation === 'SCALE') {
      const cur = vnfcCountAtLevel(flavour, undefined, { ...(ctx.targetScaleLevels ?? {}), [op.operationParams.aspectId as string]: ctx.fromLevel ?? 0 });
      for (const [vdu, n] of Object.entries(ctx.targetVduCounts ?? {})) {
        const delta = n - (cur[vdu] ?? 0);
        if (delta > 0) compute(vdu, delta, add);
        if (delta < 0)
          for (const r of existing.filter((x) => x.vduId === vdu).slice(delta))
            remove.push({ id: r.id, type: 'COMPUTE', vduId: r.vduId, resourceTemplateId: r.vduId, resource: handleOf(r) });
      }
    } else if (op.operation === 'HEAL') {
      const plan = this.healPlan(op, instance);
      const targets = plan.entire ? existing.map((r) => ({ vnfcResourceInfo: r })) : plan.targets;
      for (const t of targets) {
        const r = t.vnfcResourceInfo;
        remove.push({ id: r.id, type: 'COMPUTE', vduId: r.vduId, resourceTemplateId: r.vduId, resource: handleOf(r) });
        add.push({ id: `${r.id}-new`, type: 'COMPUTE', vduId: r.vduId, resourceTemplateId: r.vduId });
        if (plan.includeStorage || plan.entire) {
          for (const sid of r.storageResourceIds ?? []) {
            const st = instance.instantiatedVnfInfo?.virtualStorageResourceInfo?.find((s) => s.id === sid);
            if (!st) continue;
            remove.push({ id: st.id, type: 'STORAGE', vduId: r.vduId, resourceTemplateId: st.virtualStorageDescId, resource: { resourceId: st.storageResource.resourceId } });
            add.push({ id: `${st.id}-new`, type: 'STORAGE', vduId: r.vduId, resourceTemplateId: st.virtualStorageDescId });
          }
        }
      }
    }
    return {
      vnfInstanceId: instance.id,
      vnfLcmOpOccId: op.id,
      vnfdId: vnfd.vnfdId,
      flavourId: flavour.flavourId,
      operation: op.operation,
      isAutomaticInvocation: op.isAutomaticInvocation,
      ...(ctx.instantiationLevelId && op.operation === 'INSTANTIATE' ? { instantiationLevelId: ctx.instantiationLevelId } : {}),
      ...(add.length ? { addResources: add } : {}),
      ...(remove.length ? { removeResources: remove } : {}),
      ...(op.operationParams.additionalParams ? { additionalParams: op.operationParams.additionalParams as Record<string, unknown> } : {}),
      _links: { vnfLcmOpOcc: { href: `${base}/vnf_lcm_op_occs/${op.id}` }, vnfInstance: { href: `${base}/vnf_instances/${instance.id}` } },
    };
  }

  private async run(op0: OpOccRecord, ctx: OpCtx, log: Logger): Promise<void> {
    let op = op0;
    const all = await this.loadAll(op, ctx);
    this.plan(op, ctx, all.instance, all.flavour);
    let grant = op.grant;
    if (op.operationState === 'STARTING' || !ctx.done.includes('grant')) {
      await this.step(op.id, ctx, 'grant', log, async () => {
        const gr = this.grantRequest(op, ctx, all.instance, all.vnfd, all.flavour);
        try {
          grant = await this.d.grants.grant(gr);
        } catch (e) {
          if (isVnfmError(e, 'VNFM_ERR_GRANT_REJECTED')) throw Object.assign(e, { rollBack: true });
          throw e;
        }
        await this.d.db.transaction().execute(async (tx) => {
          // Fenced; a cancel that came while the grant was requested (read in the same statement,
          // the row is locked from here on): a STARTING op is rolled back instead (the rollback of
          // this transaction undoes the update).
          const cur = await this.lease(ctx).writeReturning(
            { operation_state: 'PROCESSING', state_entered_time: new Date(), grant_request: json(gr), grant: json(grant), grant_id: (grant?.id as string) ?? null },
            ['is_cancel_pending', 'cancel_mode'],
            tx,
          );
          if (cur.is_cancel_pending && op.operationState === 'STARTING') throw new Cancelled(cur.cancel_mode ?? 'GRACEFUL', true);
          if (op.operationState === 'STARTING') {
            await this.d.notifier.enqueue(tx, { kind: 'VnfLcmOperationOccurrenceNotification', instance: factsOf(all.instance), opOccId: op.id, operation: op.operation, operationState: 'PROCESSING', notificationStatus: 'START', isAutomaticInvocation: op.isAutomaticInvocation });
          }
        });
        op = await getOpOcc(this.d.db, op.id);
      });
    }
    const opName = op.operation === 'MODIFY_INFO' ? 'modify_information' : op.operation.toLowerCase();
    const drv = op.operation === 'MODIFY_INFO' ? undefined : this.driverFor(all.vim);
    await this.step(op.id, ctx, 'mgmt-start', log, () => this.hook(op, ctx, `${opName}_start` as HookName, all, grant, log), () => this.hookNeeded(op, ctx, `${opName}_start` as HookName, all), () => this.hookIdempotent(op, ctx, `${opName}_start` as HookName, all));
    await this.step(op.id, ctx, 'infra', log, async () => {
      if (!drv) return;
      const ictx = this.infraContext(op, ctx, all, grant, log);
      const lease = this.lease(ctx);
      if (op.operation !== 'HEAL') await lease.confirm();
      switch (op.operation) {
        case 'INSTANTIATE':
          await drv.instantiate(ictx, op.operationParams);
          break;
        case 'TERMINATE':
          await drv.terminate(ictx, op.operationParams);
          break;
        case 'SCALE':
          await drv.scale(ictx, this.scalePlan(op, ctx));
          break;
        case 'HEAL': {
          const plan = this.healPlan(op, all.instance);
          ctx.healedIds = (plan.entire ? (all.instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => r.id) : plan.targets.map((t) => t.vnfcResourceInfo.id));
          await this.save(op.id, ctx);
          await lease.confirm();
          await drv.heal(ictx, plan);
          break;
        }
      }
    });
    // Observe before the end hook so that it sees the new resources.
    let observed: ObservedResources | undefined;
    if (drv && op.operation !== 'TERMINATE') observed = await this.observe(drv, this.infraContext(op, ctx, all, grant, log), ctx);
    const infoAfter = observed ? this.rebuild(op, all.instance, observed, ctx, all).info : null;
    const instAfter: VnfInstanceRecord = { ...all.instance, instantiationState: op.operation === 'TERMINATE' ? 'NOT_INSTANTIATED' : 'INSTANTIATED', instantiatedVnfInfo: infoAfter };
    let endHookRan = false;
    await this.step(op.id, ctx, 'mgmt-end', log, async () => {
      const r = await this.hook(op, ctx, `${opName}_end` as HookName, { ...all, instance: instAfter }, grant, log);
      endHookRan = r !== 'skipped';
      return r;
    }, () => this.hookNeeded(op, ctx, `${opName}_end` as HookName, all), () => this.hookIdempotent(op, ctx, `${opName}_end` as HookName, all));
    await this.step(op.id, ctx, 'finalize', log, async () => {
      // The end hook may have changed the VIM (e.g. registered alarms): observe again then.
      if (drv && op.operation !== 'TERMINATE' && (endHookRan || !observed)) observed = await this.observe(drv, this.infraContext(op, ctx, all, grant, log), ctx);
      await this.complete(op, ctx, all, observed ?? { vnfcs: [], storages: [], virtualLinks: [] }, log);
    });
  }

  /** `drv.observe` with the lease confirmed right before. */
  private async observe(drv: ReturnType<Executor['driverFor']>, ictx: InfraContext, ctx: OpCtx): Promise<ObservedResources> {
    await this.lease(ctx).confirm();
    return drv.observe(ictx);
  }

  private rebuild(op: OpOccRecord, instance: VnfInstanceRecord, observed: ObservedResources, ctx: OpCtx, all: { flavour: FlavourModel; vimKey: string }) {
    const levels = ctx.targetScaleLevels ?? {};
    return rebuildInstantiatedInfo(instance.instantiatedVnfInfo, observed, {
      flavourId: all.flavour.flavourId,
      vimConnectionId: all.vimKey,
      scaleStatus: Object.entries(levels).map(([aspectId, scaleLevel]) => ({ aspectId, scaleLevel })),
      maxScaleLevels: Object.values(all.flavour.scalingAspects).map((a) => ({ aspectId: a.aspectId, scaleLevel: a.maxScaleLevel })),
      instantiationLevelId: ctx.instantiationLevelId,
      healedIds: new Set(ctx.healedIds ?? []),
      ...(op.operation === 'INSTANTIATE' && Array.isArray(op.operationParams.extVirtualLinks) ? { extVirtualLinks: op.operationParams.extVirtualLinks as Record<string, unknown>[] } : {}),
      ...(ctx.mgmtResult?.vnfcMetadata ? { vnfcMetadata: ctx.mgmtResult.vnfcMetadata } : {}),
    });
  }

  private async complete(op: OpOccRecord, ctx: OpCtx, all: Awaited<ReturnType<Executor['loadAll']>>, observed: ObservedResources, log: Logger, finalState: 'COMPLETED' | 'ROLLED_BACK' = 'COMPLETED', instantiated?: boolean): Promise<void> {
    const inst = await this.d.instances.get(op.vnfInstanceId);
    const terminated = instantiated === false || (instantiated === undefined && op.operation === 'TERMINATE');
    const { info, changes } = this.rebuild(op, inst, observed, ctx, all);
    const newInfo: InstantiatedVnfInfo | null = terminated ? null : info;
    await this.d.db.transaction().execute(async (tx) => {
      const rc = changes.affectedVnfcs.length || changes.affectedVirtualLinks.length || changes.affectedVirtualStorages.length ? changes : null;
      // Fenced and first: a lost lease rolls the whole transaction back (no instance change, no notification).
      delete ctx.current;
      await this.lease(ctx).write(
        // A cancel that came during the last step had nothing left to stop: it is not pending any more.
        { operation_state: finalState, state_entered_time: new Date(), resource_changes: json(rc), error: json(null), pending: null, lease_owner: null, lease_until: null, next_attempt_at: null, step_attempts: 0, ctx: json(ctx), grant: json(null), is_cancel_pending: false, cancel_mode: null },
        tx,
      );
      const set: Record<string, unknown> = {
        instantiation_state: terminated ? 'NOT_INSTANTIATED' : 'INSTANTIATED',
        instantiated_vnf_info: json(newInfo),
        rev: inst.rev + 1,
      };
      if (ctx.mgmtResult?.metadata) set.metadata = json(mergePatch(inst.metadata ?? {}, ctx.mgmtResult.metadata));
      if (ctx.mgmtResult?.extensions) set.extensions = json(mergePatch(inst.extensions ?? {}, ctx.mgmtResult.extensions));
      if (op.operation === 'INSTANTIATE' && !terminated) {
        const p = op.operationParams;
        if (p.vnfConfigurableProperties) set.vnf_configurable_properties = json(mergePatch(inst.vnfConfigurableProperties ?? {}, p.vnfConfigurableProperties));
        if (p.extensions) set.extensions = json(mergePatch(inst.extensions ?? {}, p.extensions));
      }
      await tx.updateTable('vnf_instance').set(set as never).where('id', '=', op.vnfInstanceId).execute();
      const after = await this.d.instances.get(op.vnfInstanceId, tx);
      await this.d.notifier.enqueue(tx, {
        kind: 'VnfLcmOperationOccurrenceNotification',
        instance: factsOf(after),
        opOccId: op.id,
        operation: op.operation,
        operationState: finalState,
        notificationStatus: 'RESULT',
        isAutomaticInvocation: op.isAutomaticInvocation,
        full: { affectedVnfcs: changes.affectedVnfcs, affectedVirtualLinks: changes.affectedVirtualLinks, affectedVirtualStorages: changes.affectedVirtualStorages },
      });
    });
    this.finished.add(ctx);
    this.d.metrics.lcmOps.inc({ operation: op.operation, result: finalState });
    this.d.metrics.lcmOpDuration.observe({ operation: op.operation }, (Date.now() - op.startTime.getTime()) / 1000);
    if (op.operation === 'HEAL') this.d.metrics.heals.inc({ trigger: op.isAutomaticInvocation ? 'auto' : 'manual', result: 'COMPLETED' });
    log.info({ state: finalState, ms: Date.now() - op.startTime.getTime() }, 'lcm operation finished');
  }

  private async rollback(op: OpOccRecord, ctx: OpCtx, log: Logger): Promise<void> {
    const all = await this.loadAll(op, ctx);
    this.plan(op, ctx, all.instance, all.flavour);
    const drv = this.driverFor(all.vim);
    const opName = op.operation.toLowerCase();
    // Rollback steps are tracked separately from the forward steps.
    ctx.rollbackDone ??= [];
    const rdone = ctx.rollbackDone as string[];
    const rstep = async (name: string, fn: () => Promise<void | 'skipped'>) => {
      if (rdone.includes(name)) return;
      ctx.current = `rollback-${name}`;
      await this.save(op.id, ctx);
      await fn();
      rdone.push(name);
      delete ctx.current;
      await this.save(op.id, ctx);
    };
    await rstep('mgmt-start', () => this.hook(op, ctx, `${opName}_rollback_start` as HookName, all, op.grant, log));
    await rstep('infra', async () => {
      const ictx = this.infraContext(op, ctx, all, op.grant, log);
      await this.lease(ctx).confirm();
      if (op.operation === 'INSTANTIATE') await drv.rollbackInstantiate(ictx);
      else await drv.rollbackScaleOut({ ...ictx, targetScaleLevels: { ...(ctx.targetScaleLevels ?? {}), [op.operationParams.aspectId as string]: ctx.fromLevel ?? 0 } }, this.scalePlan(op, ctx));
    });
    await rstep('mgmt-end', () => this.hook(op, ctx, `${opName}_rollback_end` as HookName, all, op.grant, log));
    if (op.operation === 'SCALE') ctx.targetScaleLevels = { ...(ctx.targetScaleLevels ?? {}), [op.operationParams.aspectId as string]: ctx.fromLevel ?? 0 };
    const observed = op.operation === 'INSTANTIATE' ? { vnfcs: [], storages: [], virtualLinks: [] } : await this.observe(drv, this.infraContext(op, ctx, all, op.grant, log), ctx);
    await this.complete(op, ctx, all, observed, log, 'ROLLED_BACK', op.operation !== 'INSTANTIATE');
  }

  private async failTemp(opId: string, ctx: OpCtx, e: unknown, log: Logger, exhausted?: { step: string; attempts: number }): Promise<void> {
    const cancelled = e instanceof Cancelled;
    const rolledBack = (e as { rollBack?: boolean })?.rollBack === true;
    const err = problemOf(e);
    // A retryable failure that ran out of automatic retries says so.
    if (exhausted && exhausted.attempts > 1) err.detail = `${err.detail} (step '${exhausted.step}' failed ${exhausted.attempts} times; no automatic retry left)`;
    if (!isVnfmError(e) && !cancelled) log.error({ err: e }, 'operation failed unexpectedly');
    else log.warn({ step: ctx.current, error: err.detail, attempts: exhausted?.attempts }, 'operation failed');
    const state = rolledBack ? 'ROLLED_BACK' : 'FAILED_TEMP';
    await this.d.db.transaction().execute(async (tx) => {
      // Fenced and first: with the lease lost nothing is written and nothing is notified.
      await this.lease(ctx).write(
        {
          operation_state: state,
          state_entered_time: new Date(),
          error: json(err),
          pending: null,
          lease_owner: null,
          lease_until: null,
          next_attempt_at: null,
          ...(exhausted ? { step_attempts: exhausted.attempts } : {}),
          ctx: json(ctx),
          is_cancel_pending: false,
          cancel_mode: null,
        },
        tx,
      );
      const row = await tx.selectFrom('op_occ').selectAll().where('id', '=', opId).executeTakeFirst();
      if (!row) return;
      const inst = await this.d.instances.get(row.vnf_instance_id, tx);
      await this.d.notifier.enqueue(tx, { kind: 'VnfLcmOperationOccurrenceNotification', instance: factsOf(inst), opOccId: opId, operation: row.operation, operationState: state, notificationStatus: 'RESULT', isAutomaticInvocation: row.is_automatic_invocation, error: err });
      this.d.metrics.lcmOps.inc({ operation: row.operation, result: state });
      if (row.operation === 'HEAL') this.d.metrics.heals.inc({ trigger: row.is_automatic_invocation ? 'auto' : 'manual', result: 'FAILED_TEMP' });
    });
  }
}
