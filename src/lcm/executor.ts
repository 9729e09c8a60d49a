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
 *
 * This module is the sequencer; the steps live in ./steps/: loading and planning (load.ts), the
 * grant (grant.ts), management hooks (mgmt-hooks.ts), the completion with its instance write
 * (complete.ts), failures and retries (failure.ts); what they share is in op-ctx.ts.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { VnfmMetrics } from '../core/metrics.ts';
import type { VnfmConfig } from '../config.ts';
import { terminalError, vnfmError } from '../errors.ts';
import type { InfraContext, InfraDriverRegistry, ObservedResources } from '../infra/infra-driver.ts';
import type { HookName, MgmtRunner } from '../mgmt/mgmt-driver.ts';
import type { OpOccRecord } from '../model/op-occ.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { GrantClient } from '../nfvo/grant-client.ts';
import type { PackageService } from '../packages/package-service.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import type { VimConnection } from '../vims/vim-registry.ts';
import type { InstanceService } from './instance-service.ts';
import { newIdsOf } from './instance-info.ts';
import { isStop, type OpLease } from './lease.ts';
import type { OpOccStates } from './op-occ-state.ts';
import type { MgmtStore } from './mgmt-context.ts';
import type { RunInput } from './operations/handler.ts';
import { complete, NOTHING, rebuildInfo } from './steps/complete.ts';
import { Cancelled, onStepFailure } from './steps/failure.ts';
import { type GrantDeps, grantOf, requestGrant } from './steps/grant.ts';
import { loadOp, planOp } from './steps/load.ts';
import { MgmtHooks } from './steps/mgmt-hooks.ts';
import { type Loaded, type OpCtx, type Run, runInput } from './steps/op-ctx.ts';

const FORWARD_STEPS = ['grant', 'mgmt-start', 'infra', 'mgmt-end', 'finalize'];
const ROLLBACK_STEPS = ['mgmt-start', 'infra', 'mgmt-end'];

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

/** Runs op occs. */
export class Executor {
  /** The lease of each execution in progress, by its ctx object (one per execution). */
  private readonly leases = new WeakMap<OpCtx, OpLease>();
  /** Executions whose op reached its final state (the lease is given back: no more writes). */
  private readonly finished = new WeakSet<OpCtx>();
  private readonly saving = new Map<string, Promise<void>>();
  private readonly hooks: MgmtHooks;
  private readonly grantDeps: GrantDeps;

  constructor(private readonly d: ExecutorDeps) {
    this.hooks = new MgmtHooks(d);
    this.grantDeps = { db: d.db, publicUrl: d.config.publicUrl, grants: d.grants, mgmtStore: d.mgmtStore, states: d.states };
  }

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

  /** A step failed: retry it later (retryable, attempts left) or FAILED_TEMP at once (./steps/failure.ts). */
  private async onFailure(op: OpOccRecord, ctx: OpCtx, e: unknown, log: Logger): Promise<void> {
    await onStepFailure(this.d, this.lease(ctx), op, ctx, ctx.current ?? this.nextStep(op, ctx), e, log);
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

  /** The execution's handle, as its steps see it. */
  private runOf(opId: string, ctx: OpCtx, log: Logger): Run {
    return { ctx, lease: this.lease(ctx), log, save: () => this.save(opId, ctx), finished: () => this.finished.has(ctx), finish: () => this.finished.add(ctx) };
  }

  private runInput(ctx: OpCtx, all: Loaded): RunInput<never> {
    return runInput(ctx, all);
  }

  /** The op's stored Grant with its sealed values opened. */
  private grantOf(op: OpOccRecord): Record<string, unknown> | null {
    return grantOf(this.d.mgmtStore, op);
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

  private async run(op0: OpOccRecord, ctx: OpCtx, log: Logger): Promise<void> {
    let op = op0;
    const all = await loadOp(this.d, op, ctx);
    const { handler } = all;
    const run = this.runOf(op.id, ctx, log);
    await planOp(this.d, ctx, all);
    // Stored sealed (VIM credentials an NFVO may grant); drivers get it in clear.
    let grant = this.grantOf(op);
    if (op.operationState === 'STARTING' || !ctx.done.includes('grant')) {
      await this.step(op.id, ctx, 'grant', log, async () => {
        ({ grant, op } = await requestGrant(this.grantDeps, run, op, all));
      });
    }
    const hooks = { start: `${handler.hook}_start` as HookName, end: `${handler.hook}_end` as HookName };
    const drv = this.driverFor(all.vim);
    await this.step(op.id, ctx, 'mgmt-start', log, () => this.hooks.run(run, op, hooks.start, all, grant), () => this.hooks.needed(run, op, hooks.start, all), () => this.hooks.idempotent(run, op, hooks.start, all));
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
    const infoAfter = observed ? rebuildInfo(all.instance, observed, ctx, all).info : null;
    // The end hook names the new VNFCs by these ids (e.g. in metadata.k8sCluster): completion keeps them.
    if (infoAfter) {
      const known = new Set(Object.values(newIdsOf(all.instance.instantiatedVnfInfo ?? {})));
      const fresh = Object.entries(newIdsOf(infoAfter)).filter(([, id]) => !known.has(id));
      if (fresh.length > 0) ctx.newIds = { ...Object.fromEntries(fresh), ...(ctx.newIds ?? {}) };
    }
    const instAfter: VnfInstanceRecord = { ...all.instance, instantiationState: handler.instantiatedAfter ? 'INSTANTIATED' : 'NOT_INSTANTIATED', instantiatedVnfInfo: infoAfter };
    let endHookRan = false;
    await this.step(op.id, ctx, 'mgmt-end', log, async () => {
      const r = await this.hooks.run(run, op, hooks.end, { ...all, instance: instAfter }, grant, all.instance);
      endHookRan = r !== 'skipped';
      return r;
    }, () => this.hooks.needed(run, op, hooks.end, all), () => this.hooks.idempotent(run, op, hooks.end, all));
    await this.step(op.id, ctx, 'finalize', log, async () => {
      // The end hook may have changed the VIM (e.g. registered alarms): observe again then.
      if (handler.observes && (endHookRan || !observed)) observed = await this.observe(drv, this.infraContext(op, ctx, all, grant, log), ctx);
      await complete(this.d, run, op, all, observed ?? NOTHING, 'COMPLETED', handler.instantiatedAfter);
    });
  }

  /** `drv.observe` with the lease confirmed right before. */
  private async observe(drv: ReturnType<Executor['driverFor']>, ictx: InfraContext, ctx: OpCtx): Promise<ObservedResources> {
    await this.lease(ctx).confirm();
    return drv.observe(ictx);
  }

  private async rollback(op: OpOccRecord, ctx: OpCtx, log: Logger): Promise<void> {
    const all = await loadOp(this.d, op, ctx);
    await planOp(this.d, ctx, all);
    const rb = all.handler.rollback;
    if (!rb) throw terminalError('VNFM_ERR_OPOCC_UNSUPPORTED', `Rollback of ${op.operation} is not supported; retry it or fail it.`);
    const run = this.runOf(op.id, ctx, log);
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
    await rstep('mgmt-start', () => this.hooks.run(run, op, `${hook}_rollback_start` as HookName, all, this.grantOf(op)));
    await rstep('infra', async () => {
      const ictx = this.infraContext(op, ctx, all, this.grantOf(op), log);
      await this.lease(ctx).confirm();
      await rb.infra(drv, ictx, this.runInput(ctx, all));
    });
    await rstep('mgmt-end', () => this.hooks.run(run, op, `${hook}_rollback_end` as HookName, all, this.grantOf(op)));
    const after = rb.planAfter(this.runInput(ctx, all));
    ctx.targetScaleLevels = after.targetScaleLevels;
    ctx.targetVduCounts = after.targetVduCounts;
    const observed = rb.observes ? await this.observe(drv, this.infraContext(op, ctx, all, this.grantOf(op), log), ctx) : NOTHING;
    await complete(this.d, run, op, all, observed, 'ROLLED_BACK', rb.instantiatedAfter);
  }
}
