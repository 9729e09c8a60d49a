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
import type { InfraContext, InfraDriverRegistry, ObservedResources } from '../infra/infra-driver.ts';
import { type DriverScope, type HookName, type MgmtContext, type MgmtProgress, type MgmtResult, type MgmtRunner, mergeResult } from '../mgmt/mgmt-driver.ts';
import { commandOf, type LcmCommand } from '../model/lcm-command.ts';
import { maskSealed } from '../model/sealed-params.ts';
import type { OpOccRecord } from '../model/op-occ.ts';
import type { InstantiatedVnfInfo, VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { GrantClient, GrantRequest } from '../nfvo/grant-client.ts';
import { mergePatch, type PackageService } from '../packages/package-service.ts';
import type { FlavourModel, VnfPackageModel } from '../packages/vnfd-model.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import type { VimConnection } from '../vims/vim-registry.ts';
import { InstanceService } from './instance-service.ts';
import { externalCps } from '../packages/ext-cps.ts';
import { newIdsOf, rebuildInstantiatedInfo } from './instance-info.ts';
import { dbNowPlus, isStop, type OpLease } from './lease.ts';
import type { OpOccStates } from './op-occ-state.ts';
import { getOpOcc } from './op-occ-repo.ts';
import { journalStep, type MgmtStore, mgmtTargets } from './mgmt-context.ts';
import type { OperationHandler, OpPlan, RunInput } from './operations/handler.ts';
import { handlerFor } from './operations/index.ts';

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
  /** Ids given to new resources by the first rebuild of this op (see RebuildOptions.newIds). */
  newIds?: Record<string, string>;
  driver: Record<string, unknown>;
  mgmt: Record<string, unknown>;
  mgmtResult?: MgmtResult;
  /** The step in flight when it was declared safe to repeat at its start (idempotent hooks only). */
  resumableStep?: string;
  /** Progress of the running hook step (shown as `vnfmProgress` on the op occ). */
  progress?: MgmtProgress & { hook: string; startedAt: string; updatedAt: string };
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
const RESUMABLE_STEPS = new Set(['grant', 'infra', 'finalize', 'rollback-infra']);

/** Dependencies of the executor. */
export interface ExecutorDeps {
  db: Kysely<Database>;
  config: VnfmConfig;
  log: Logger;
  metrics: VnfmMetrics;
  states: OpOccStates;
  instances: InstanceService;
  packages: PackageService;
  drivers: InfraDriverRegistry;
  mgmt: MgmtRunner;
  /** Driver state, instantiate parameters, locks and the VIM facade of management contexts. */
  mgmtStore: MgmtStore;
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
  private readonly saving = new Map<string, Promise<void>>();

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

  /**
   * Writes the op's checkpoint. Writes of one op are serialised and each serialises the context
   * when it runs, so concurrent driver steps (journaled in parallel) never let an older snapshot
   * land after a newer one.
   */
  private save(opId: string, ctx: OpCtx): Promise<void> {
    const prior = this.saving.get(opId) ?? Promise.resolve();
    const next = prior.catch(() => undefined).then(() => this.lease(ctx).write({ ctx: json(ctx) }));
    const tail = next.catch(() => undefined);
    this.saving.set(opId, tail);
    void tail.then(() => {
      if (this.saving.get(opId) === tail) this.saving.delete(opId);
    });
    return next;
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
    const handler = handlerFor(op.operation);
    // Frozen at the first run: a legacy row's command (derived from its request) names the VNFCs as they were then.
    ctx.command ??= commandOf(op, instance);
    // Stored sealed (secrets of additionalParams); the engine and its drivers work on the clear command.
    const command = this.d.mgmtStore.unseal(ctx.command as LcmCommand);
    const vnfd = await this.d.packages.vnfd(instance.vnfPkgId);
    const flavourId = ctx.flavourId ?? handler.flavourId(command as never, instance);
    const flavour = flavourId ? vnfd.flavours[flavourId] : undefined;
    if (!flavour) throw vnfmError('VNFM_ERR_INST_INVALID', `flavour ${flavourId} not found in VNFD ${vnfd.vnfdId}`);
    ctx.flavourId = flavour.flavourId;
    const conns = await this.d.instances.vimConnections(instance.id);
    const vimKey = InstanceService.infraConnectionKey(conns);
    const vim = vimKey ? conns[vimKey] : undefined;
    let filesCache: Promise<Map<string, Buffer>> | undefined;
    const files = () => {
      filesCache ??= this.d.packages.files(instance.vnfPkgId);
      return filesCache;
    };
    return { instance, handler, command, vnfd, flavour, vim, vimKey: vimKey ?? 'vim1', files };
  }

  /** Computes and freezes the op's targets (levels, VNFC counts) in its checkpoint, so retries use the same. */
  private async plan(ctx: OpCtx, all: Loaded): Promise<OpPlan> {
    if (!ctx.targetScaleLevels || !ctx.targetVduCounts) {
      const p = all.handler.plan(all.command as never, all.instance, all.flavour);
      // VDUs the VIM driver does not deploy for this VNF (a subset instantiate) have no VNFCs.
      const drv = all.vim ? this.d.drivers.find(all.vim.vimType) : undefined;
      const deployed = drv?.deployedVdus ? await drv.deployedVdus({ instance: all.instance, command: all.command, vnfd: all.vnfd, flavour: all.flavour, files: all.files }) : undefined;
      if (deployed !== undefined) for (const vdu of Object.keys(p.targetVduCounts)) if (!deployed.includes(vdu)) p.targetVduCounts[vdu] = 0;
      ctx.targetScaleLevels = p.targetScaleLevels;
      ctx.targetVduCounts = p.targetVduCounts;
      if (p.instantiationLevelId !== undefined) ctx.instantiationLevelId = p.instantiationLevelId;
      if (p.fromLevel !== undefined) ctx.fromLevel = p.fromLevel;
      if (p.toLevel !== undefined) ctx.toLevel = p.toLevel;
    }
    return planOf(ctx);
  }

  private runInput(ctx: OpCtx, all: Loaded): RunInput<never> {
    return { command: all.command, instance: all.instance, flavour: all.flavour, plan: planOf(ctx) } as unknown as RunInput<never>;
  }

  private infraContext(op: OpOccRecord, ctx: OpCtx, all: Loaded, grant: Record<string, unknown> | null, log: Logger): InfraContext {
    if (!all.vim) throw vnfmError('VNFM_ERR_INST_INVALID', `VnfInstance ${op.vnfInstanceId} has no vimConnectionInfo`);
    return {
      instance: all.instance,
      op: { id: op.id, operation: op.operation },
      command: all.command,
      vnfd: all.vnfd,
      flavour: all.flavour,
      vim: all.vim,
      files: all.files,
      grant,
      grantRequest: op.grantRequest,
      state: ctx.driver,
      checkpoint: () => this.save(op.id, ctx),
      signal: this.lease(ctx).signal,
      targetScaleLevels: ctx.targetScaleLevels ?? {},
      targetVduCounts: ctx.targetVduCounts ?? {},
      log,
      vimSettings: this.d.config.vim,
    };
  }

  private driverFor(vim: VimConnection | undefined) {
    if (!vim) throw vnfmError('VNFM_ERR_INST_INVALID', 'the VNF instance has no vimConnectionInfo');
    const drv = this.d.drivers.find(vim.vimType);
    if (!drv) throw vnfmError('VNFM_ERR_VIM_INVALID', `no infra driver for VIM type ${vim.vimType}`);
    return drv;
  }

  private mgmtContext(op: OpOccRecord, ctx: OpCtx, hook: HookName, all: Loaded, grant: Record<string, unknown> | null, log: Logger, previous?: VnfInstanceRecord): MgmtContext {
    const before = previous ?? all.instance;
    const removed = all.command.operation === 'SCALE' && all.command.type === 'SCALE_IN' ? all.handler.grant(this.runInput(ctx, all)).remove.map((r) => (r.resource as { resourceId?: string } | undefined)?.resourceId).filter((x): x is string => typeof x === 'string') : [];
    const lease = this.lease(ctx);
    const store = this.d.mgmtStore;
    return {
      hook,
      instance: all.instance,
      previousInstance: before,
      targets: mgmtTargets(all.command, before, all.instance, removed),
      params: (all.command as { additionalParams?: Record<string, unknown> }).additionalParams ?? {},
      // INSTANTIATE: its own parameters; other operations: read in hook(), only when a driver acts.
      instantiateParams: all.command.operation === 'INSTANTIATE' ? ((all.command as { additionalParams?: Record<string, unknown> }).additionalParams ?? {}) : {},
      opOcc: op,
      command: all.command,
      request: op.operationParams,
      vnfd: all.vnfd,
      flavour: all.flavour,
      vim: all.vim,
      grantRequest: op.grantRequest,
      grant,
      files: all.files,
      state: ctx.mgmt,
      checkpoint: () => this.save(op.id, ctx),
      signal: lease.signal,
      log,
      config: this.d.config,
      publicUrl: this.d.config.publicUrl,
      progress: (p) => this.progress(op.id, ctx, hook, p),
      step: (name, fn) => journalStep(ctx.mgmt, name, fn, () => this.save(op.id, ctx)),
      lock: (key) => store.lock(key, op.id, lease.signal),
      vims: store.vims(all.instance.id),
      instanceState: store.instanceState(all.instance.id, 'default'),
    };
  }

  /** Each management driver's own step journal (in the op's mgmt state) and instance state. */
  private driverScope(op: OpOccRecord, ctx: OpCtx, instanceId: string): DriverScope {
    return (driver) => {
      const journal = (ctx.mgmt[`driver:${driver}`] ??= {}) as Record<string, unknown>;
      return {
        step: (name, fn) => journalStep(journal, name, fn, () => this.save(op.id, ctx)),
        instanceState: this.d.mgmtStore.instanceState(instanceId, driver),
      };
    };
  }

  /** Records hook progress on the op occ: at most one write per second, the latest kept. */
  private readonly progressWrites = new WeakMap<OpCtx, { last: number; timer?: NodeJS.Timeout }>();
  private progress(opId: string, ctx: OpCtx, hook: string, p: MgmtProgress): void {
    const now = new Date().toISOString();
    const startedAt = ctx.progress && ctx.progress.hook === hook && ctx.progress.step === p.step && ctx.progress.node === p.node ? ctx.progress.startedAt : now;
    ctx.progress = { hook, step: p.step, ...(p.node !== undefined ? { node: p.node } : {}), ...(p.detail !== undefined ? { detail: p.detail.slice(0, 500) } : {}), startedAt, updatedAt: now };
    const w = this.progressWrites.get(ctx) ?? { last: 0 };
    this.progressWrites.set(ctx, w);
    if (w.timer) return;
    const flush = (): void => {
      w.timer = undefined;
      w.last = Date.now();
      if (this.finished.has(ctx)) return;
      this.save(opId, ctx).catch(() => undefined);
    };
    const wait = w.last + 1000 - Date.now();
    if (wait <= 0) flush();
    else w.timer = setTimeout(flush, wait);
  }

  /** The op's stored Grant with its sealed values opened. */
  private grantOf(op: OpOccRecord): Record<string, unknown> | null {
    return op.grant ? this.d.mgmtStore.unseal(op.grant) : op.grant;
  }

  private async hook(op: OpOccRecord, ctx: OpCtx, hook: HookName, all: Loaded, grant: Record<string, unknown> | null, log: Logger, previous?: VnfInstanceRecord): Promise<void | 'skipped'> {
    const mctx = this.mgmtContext(op, ctx, hook, all, grant, log, previous);
    if (!this.d.mgmt.applies(mctx)) return 'skipped';
    if (all.command.operation !== 'INSTANTIATE') mctx.instantiateParams = await this.d.mgmtStore.instantiateParams(all.instance.id);
    await this.lease(ctx).confirm();
    try {
      const r = await this.d.mgmt.run(mctx, this.driverScope(op, ctx, all.instance.id));
      // Parameter overrides may hold credentials: sealed before they reach the op's checkpoint.
      if (r.instantiateParams) r.instantiateParams = this.d.mgmtStore.seal(r.instantiateParams);
      if (Object.keys(r).length > 0) ctx.mgmtResult = mergeResult(ctx.mgmtResult ?? {}, r);
    } finally {
      const w = this.progressWrites.get(ctx);
      if (w?.timer) clearTimeout(w.timer);
      this.progressWrites.delete(ctx);
      delete ctx.progress;
      await this.d.mgmtStore.releaseLocks(op.id).catch((e) => log.warn({ err: e }, 'could not release management locks'));
    }
  }

  /** Whether every driver acting on this hook declares it safe to repeat (then a crash inside it is resumed). */
  private hookIdempotent(op: OpOccRecord, ctx: OpCtx, hook: HookName, all: Loaded): boolean {
    return this.d.mgmt.idempotent({ ...this.mgmtContext(op, ctx, hook, all, null, this.d.log), grantRequest: null, checkpoint: async () => undefined });
  }

  private hookNeeded(op: OpOccRecord, ctx: OpCtx, hook: HookName, all: Loaded): boolean {
    return this.d.mgmt.applies({ ...this.mgmtContext(op, ctx, hook, all, null, this.d.log), grantRequest: null, checkpoint: async () => undefined });
  }

  private grantRequest(op: OpOccRecord, ctx: OpCtx, all: Loaded): GrantRequest {
    const base = `${this.d.config.publicUrl}/vnflcm/${op.apiVersion}`;
    const { add, remove } = all.handler.grant(this.runInput(ctx, all));
    const additionalParams = (all.command as { additionalParams?: Record<string, unknown> }).additionalParams;
    return {
      vnfInstanceId: all.instance.id,
      vnfLcmOpOccId: op.id,
      vnfdId: all.vnfd.vnfdId,
      flavourId: all.flavour.flavourId,
      operation: op.operation,
      isAutomaticInvocation: op.isAutomaticInvocation,
      ...(ctx.instantiationLevelId && op.operation === 'INSTANTIATE' ? { instantiationLevelId: ctx.instantiationLevelId } : {}),
      ...(add.length ? { addResources: add } : {}),
      ...(remove.length ? { removeResources: remove } : {}),
      // Secrets of the request (e.g. SSH passwords for management drivers) never leave the VNFM.
      ...(additionalParams && Object.keys(additionalParams).length ? { additionalParams: maskSealed(additionalParams) } : {}),
      _links: { vnfLcmOpOcc: { href: `${base}/vnf_lcm_op_occs/${op.id}` }, vnfInstance: { href: `${base}/vnf_instances/${all.instance.id}` } },
    };
  }

  private async run(op0: OpOccRecord, ctx: OpCtx, log: Logger): Promise<void> {
    let op = op0;
    const all = await this.loadAll(op, ctx);
    const { handler } = all;
    await this.plan(ctx, all);
    // Stored sealed (VIM credentials an NFVO may grant); drivers get it in clear.
    let grant = this.grantOf(op);
    if (op.operationState === 'STARTING' || !ctx.done.includes('grant')) {
      await this.step(op.id, ctx, 'grant', log, async () => {
        const gr = this.grantRequest(op, ctx, all);
        try {
          grant = await this.d.grants.grant(gr, { signal: this.lease(ctx).signal });
        } catch (e) {
          if (isVnfmError(e, 'VNFM_ERR_GRANT_REJECTED')) throw Object.assign(e, { rollBack: true });
          throw e;
        }
        const lease = this.lease(ctx);
        await this.d.db.transaction().execute(async (tx) => {
          const set = { grant_request: json(gr), grant: json(grant ? this.d.mgmtStore.sealGrant(grant) : grant), grant_id: (grant?.id as string) ?? null };
          if (op.operationState !== 'STARTING') {
            await lease.write(set, tx);
            return;
          }
          // Fenced; a cancel that came while the grant was requested (read in the same statement,
          // the row is locked from here on): a STARTING op is rolled back instead (the rollback of
          // this transaction undoes the update).
          const cur = await lease.writeReturning(set, ['is_cancel_pending', 'cancel_mode'], tx);
          if (cur.is_cancel_pending) throw new Cancelled(cur.cancel_mode ?? 'GRACEFUL', true);
          await this.d.states.started(tx, (s, t) => lease.write(s, t), op, all.instance, {});
        });
        op = await getOpOcc(this.d.db, op.id);
      });
    }
    const hooks = { start: `${handler.hook}_start` as HookName, end: `${handler.hook}_end` as HookName };
    const drv = this.driverFor(all.vim);
    await this.step(op.id, ctx, 'mgmt-start', log, () => this.hook(op, ctx, hooks.start, all, grant, log), () => this.hookNeeded(op, ctx, hooks.start, all), () => this.hookIdempotent(op, ctx, hooks.start, all));
    await this.step(op.id, ctx, 'infra', log, async () => {
      const ictx = this.infraContext(op, ctx, all, grant, log);
      await this.lease(ctx).confirm();
      await handler.infra(drv, ictx, this.runInput(ctx, all), {
        remember: async (ids) => {
          ctx.healedIds = ids;
          // A fenced write: it also confirms the lease right before the driver acts.
          await this.save(op.id, ctx);
        },
      });
    });
    // Observe before the end hook so that it sees the new resources.
    let observed: ObservedResources | undefined;
    if (handler.observes) observed = await this.observe(drv, this.infraContext(op, ctx, all, grant, log), ctx);
    const infoAfter = observed ? this.rebuild(all.instance, observed, ctx, all).info : null;
    // The end hook names the new VNFCs by these ids (e.g. in metadata.k8sCluster): completion keeps them.
    if (infoAfter) {
      const known = new Set(Object.values(newIdsOf(all.instance.instantiatedVnfInfo ?? {})));
      const fresh = Object.entries(newIdsOf(infoAfter)).filter(([, id]) => !known.has(id));
      if (fresh.length > 0) ctx.newIds = { ...Object.fromEntries(fresh), ...(ctx.newIds ?? {}) };
    }
    const instAfter: VnfInstanceRecord = { ...all.instance, instantiationState: handler.instantiatedAfter ? 'INSTANTIATED' : 'NOT_INSTANTIATED', instantiatedVnfInfo: infoAfter };
    let endHookRan = false;
    await this.step(op.id, ctx, 'mgmt-end', log, async () => {
      const r = await this.hook(op, ctx, hooks.end, { ...all, instance: instAfter }, grant, log, all.instance);
      endHookRan = r !== 'skipped';
      return r;
    }, () => this.hookNeeded(op, ctx, hooks.end, all), () => this.hookIdempotent(op, ctx, hooks.end, all));
    await this.step(op.id, ctx, 'finalize', log, async () => {
      // The end hook may have changed the VIM (e.g. registered alarms): observe again then.
      if (handler.observes && (endHookRan || !observed)) observed = await this.observe(drv, this.infraContext(op, ctx, all, grant, log), ctx);
      await this.complete(op, ctx, all, observed ?? NOTHING, log, 'COMPLETED', handler.instantiatedAfter);
    });
  }

  /** `drv.observe` with the lease confirmed right before. */
  private async observe(drv: ReturnType<Executor['driverFor']>, ictx: InfraContext, ctx: OpCtx): Promise<ObservedResources> {
    await this.lease(ctx).confirm();
    return drv.observe(ictx);
  }

  private rebuild(instance: VnfInstanceRecord, observed: ObservedResources, ctx: OpCtx, all: Loaded) {
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

  /** The op ends COMPLETED or ROLLED_BACK: op occ, instance and RESULT notification in one (fenced) transaction. */
  private async complete(op: OpOccRecord, ctx: OpCtx, all: Loaded, observed: ObservedResources, log: Logger, finalState: 'COMPLETED' | 'ROLLED_BACK', instantiated: boolean): Promise<void> {
    const inst = await this.d.instances.get(op.vnfInstanceId);
    const { info, changes } = this.rebuild(inst, observed, ctx, all);
    const mr = ctx.mgmtResult;
    const newInfo: InstantiatedVnfInfo | null = instantiated ? (mr?.vnfInfoMetadata ? { ...info, metadata: replaceKeys(info.metadata ?? {}, mr.vnfInfoMetadata) } : info) : null;
    const lease = this.lease(ctx);
    await this.d.db.transaction().execute(async (tx) => {
      const rc = changes.affectedVnfcs.length || changes.affectedVirtualLinks.length || changes.affectedVirtualStorages.length ? changes : null;
      delete ctx.current;
      // Fenced and first: a lost lease rolls the whole transaction back (no instance change, no notification).
      // A cancel that came during the last step had nothing left to stop: it is not pending any more.
      const set = { resource_changes: json(rc), error: json(null), pending: null, lease_owner: null, lease_until: null, next_attempt_at: null, step_attempts: 0, ctx: json(ctx), grant: json(null), is_cancel_pending: false, cancel_mode: null };
      await this.d.states.finished(
        tx,
        async (s, t) => {
          await lease.write(s, t);
          const iset: Record<string, unknown> = { instantiation_state: instantiated ? 'INSTANTIATED' : 'NOT_INSTANTIATED', instantiated_vnf_info: json(newInfo), rev: inst.rev + 1 };
          if (ctx.mgmtResult?.metadata) iset.metadata = json(mergePatch(inst.metadata ?? {}, ctx.mgmtResult.metadata));
          if (ctx.mgmtResult?.extensions) iset.extensions = json(mergePatch(inst.extensions ?? {}, ctx.mgmtResult.extensions));
          if (mr?.vimConnectionInfo) {
            // Entries a management driver added (a VIM it registered) or removed (a VIM it deleted).
            const gone = new Set(mr.vimConnectionInfo.removeVimIds ?? []);
            const vci = Object.fromEntries(Object.entries(inst.vimConnectionInfo).filter(([, c]) => !(c.vimId && gone.has(c.vimId))));
            const added = Object.fromEntries(Object.entries(mr.vimConnectionInfo.add ?? {}).map(([k, c]) => [k, { ...c, extra: { ...(c.extra ?? {}), 'vnfm.io/registered-by': 'mgmt' } }]));
            iset.vim_connection_info = json({ ...vci, ...added });
          }
          if (finalState === 'COMPLETED' && instantiated && all.handler.completedInstanceUpdate) Object.assign(iset, all.handler.completedInstanceUpdate(all.command as never, inst));
          await t.updateTable('vnf_instance').set(iset as never).where('id', '=', op.vnfInstanceId).execute();
        },
        op,
        finalState,
        set,
        { instanceId: op.vnfInstanceId, full: { affectedVnfcs: changes.affectedVnfcs, affectedVirtualLinks: changes.affectedVirtualLinks, affectedVirtualStorages: changes.affectedVirtualStorages } },
      );
    });
    this.finished.add(ctx);
    // Parameter overrides a driver asked to keep (e.g. a credential that now works): completed ops only.
    if (finalState === 'COMPLETED' && mr?.instantiateParams) {
      await this.d.mgmtStore.persistInstantiateParams(op.vnfInstanceId, mr.instantiateParams).catch((e) => log.error({ err: e }, 'could not persist the instantiate parameter overrides of a management driver'));
    }
    log.info({ state: finalState, ms: Date.now() - op.startTime.getTime() }, 'lcm operation finished');
  }

  private async rollback(op: OpOccRecord, ctx: OpCtx, log: Logger): Promise<void> {
    const all = await this.loadAll(op, ctx);
    await this.plan(ctx, all);
    const rb = all.handler.rollback;
    if (!rb) throw terminalError('VNFM_ERR_OPOCC_UNSUPPORTED', `Rollback of ${op.operation} is not supported; retry it or fail it.`);
    const drv = this.driverFor(all.vim);
    const hook = all.handler.hook;
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
    await rstep('mgmt-start', () => this.hook(op, ctx, `${hook}_rollback_start` as HookName, all, this.grantOf(op), log));
    await rstep('infra', async () => {
      const ictx = this.infraContext(op, ctx, all, this.grantOf(op), log);
      await this.lease(ctx).confirm();
      await rb.infra(drv, ictx, this.runInput(ctx, all));
    });
    await rstep('mgmt-end', () => this.hook(op, ctx, `${hook}_rollback_end` as HookName, all, this.grantOf(op), log));
    const after = rb.planAfter(this.runInput(ctx, all));
    ctx.targetScaleLevels = after.targetScaleLevels;
    ctx.targetVduCounts = after.targetVduCounts;
    const observed = rb.observes ? await this.observe(drv, this.infraContext(op, ctx, all, this.grantOf(op), log), ctx) : NOTHING;
    await this.complete(op, ctx, all, observed, log, 'ROLLED_BACK', rb.instantiatedAfter);
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
    const lease = this.lease(ctx);
    await this.d.db.transaction().execute(async (tx) => {
      // Read under the lock of the fenced write below; its state is the transition's origin.
      const op = await getOpOcc(tx, opId);
      const set = {
        error: json(err),
        pending: null,
        lease_owner: null,
        lease_until: null,
        next_attempt_at: null,
        ...(exhausted ? { step_attempts: exhausted.attempts } : {}),
        ctx: json(ctx),
        is_cancel_pending: false,
        cancel_mode: null,
      };
      // Fenced: with the lease lost nothing is written and nothing is notified.
      await this.d.states.finished(tx, (s, t) => lease.write(s, t), op, state, set, { instanceId: op.vnfInstanceId, error: err });
    });
  }
}

type Loaded = Awaited<ReturnType<Executor['loadAll']>> & { handler: OperationHandler; command: LcmCommand };

const NOTHING: ObservedResources = { vnfcs: [], storages: [], virtualLinks: [] };

/** `base` with each key of `patch` replaced as a whole (a null value removes the key). */
function replaceKeys(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** The op's plan as frozen in its checkpoint. */
function planOf(ctx: OpCtx): OpPlan {
  return {
    targetScaleLevels: ctx.targetScaleLevels ?? {},
    targetVduCounts: ctx.targetVduCounts ?? {},
    ...(ctx.instantiationLevelId !== undefined ? { instantiationLevelId: ctx.instantiationLevelId } : {}),
    ...(ctx.fromLevel !== undefined ? { fromLevel: ctx.fromLevel } : {}),
    ...(ctx.toLevel !== undefined ? { toLevel: ctx.toLevel } : {}),
  };
}
