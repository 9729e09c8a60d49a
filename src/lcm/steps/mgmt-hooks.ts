/**
 * Management hooks around the infra step (`<op>_start`, `<op>_end` and the rollback pair): the
 * context a hook's drivers get (src/lcm/mgmt-context.ts has its store side), whether a hook applies
 * and is safe to repeat, running it with the lease confirmed right before, its progress written on
 * the op occ (at most once a second), and its result merged into the op's checkpoint
 * (`ctx.mgmtResult`, applied to the instance at completion, ./complete.ts).
 */
import type { Logger } from 'pino';
import type { VnfmConfig } from '../../config.ts';
import { type DriverScope, type HookName, type MgmtContext, type MgmtProgress, type MgmtRunner, mergeResult } from '../../mgmt/mgmt-driver.ts';
import type { OpOccRecord } from '../../model/op-occ.ts';
import type { VnfInstanceRecord } from '../../model/vnf-instance.ts';
import { journalStep, type MgmtStore, mgmtTargets } from '../mgmt-context.ts';
import { type Loaded, type OpCtx, type Run, runInput } from './op-ctx.ts';

/** What the hook steps need. */
export interface MgmtHookDeps {
  config: VnfmConfig;
  log: Logger;
  mgmt: MgmtRunner;
  /** Driver state, instantiate parameters, locks and the VIM facade of management contexts. */
  mgmtStore: MgmtStore;
}

/** Runs management hooks for the executor. */
export class MgmtHooks {
  /** Hook progress writes of each execution: at most one a second, the latest kept. */
  private readonly progressWrites = new WeakMap<OpCtx, { last: number; timer?: NodeJS.Timeout }>();

  constructor(private readonly d: MgmtHookDeps) {}

  /**
   * Runs `hook` when a driver applies ('skipped' otherwise). `all.instance` is the instance the hook
   * sees (after the infra step for an end hook); `previous` the one before it.
   */
  async run(run: Run, op: OpOccRecord, hook: HookName, all: Loaded, grant: Record<string, unknown> | null, previous?: VnfInstanceRecord): Promise<void | 'skipped'> {
    const mctx = this.context(run, op, hook, all, grant, run.log, previous);
    if (!this.d.mgmt.applies(mctx)) return 'skipped';
    if (all.command.operation !== 'INSTANTIATE') mctx.instantiateParams = await this.d.mgmtStore.instantiateParams(all.instance.id);
    await run.lease.confirm();
    const ctx = run.ctx;
    try {
      const r = await this.d.mgmt.run(mctx, this.driverScope(run, all.instance.id));
      // Parameter overrides may hold credentials: sealed before they reach the op's checkpoint.
      if (r.instantiateParams) r.instantiateParams = this.d.mgmtStore.seal(r.instantiateParams);
      if (Object.keys(r).length > 0) ctx.mgmtResult = mergeResult(ctx.mgmtResult ?? {}, r);
    } finally {
      const w = this.progressWrites.get(ctx);
      if (w?.timer) clearTimeout(w.timer);
      this.progressWrites.delete(ctx);
      delete ctx.progress;
      await this.d.mgmtStore.releaseLocks(op.id).catch((e) => run.log.warn({ err: e }, 'could not release management locks'));
    }
  }

  /** Whether a driver acts on this hook (otherwise its step has nothing to do). */
  needed(run: Run, op: OpOccRecord, hook: HookName, all: Loaded): boolean {
    return this.d.mgmt.applies({ ...this.context(run, op, hook, all, null, this.d.log), grantRequest: null, checkpoint: async () => undefined });
  }

  /** Whether every driver acting on this hook declares it safe to repeat (then a crash inside it is resumed). */
  idempotent(run: Run, op: OpOccRecord, hook: HookName, all: Loaded): boolean {
    return this.d.mgmt.idempotent({ ...this.context(run, op, hook, all, null, this.d.log), grantRequest: null, checkpoint: async () => undefined });
  }

  private context(run: Run, op: OpOccRecord, hook: HookName, all: Loaded, grant: Record<string, unknown> | null, log: Logger, previous?: VnfInstanceRecord): MgmtContext {
    const ctx = run.ctx;
    const before = previous ?? all.instance;
    const removed = all.command.operation === 'SCALE' && all.command.type === 'SCALE_IN' ? all.handler.grant(runInput(ctx, all)).remove.map((r) => (r.resource as { resourceId?: string } | undefined)?.resourceId).filter((x): x is string => typeof x === 'string') : [];
    const lease = run.lease;
    const store = this.d.mgmtStore;
    return {
      hook,
      instance: all.instance,
      previousInstance: before,
      targets: mgmtTargets(all.command, before, all.instance, removed),
      params: (all.command as { additionalParams?: Record<string, unknown> }).additionalParams ?? {},
      // INSTANTIATE: its own parameters; other operations: read in run(), only when a driver acts.
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
      checkpoint: () => run.save(),
      signal: lease.signal,
      log,
      config: this.d.config,
      publicUrl: this.d.config.publicUrl,
      progress: (p) => this.progress(run, hook, p),
      step: (name, fn) => journalStep(ctx.mgmt, name, fn, () => run.save()),
      lock: (key) => store.lock(key, op.id, lease.signal),
      vims: store.vims(all.instance.id),
      instanceState: store.instanceState(all.instance.id, 'default'),
    };
  }

  /** Each management driver's own step journal (in the op's mgmt state) and instance state. */
  private driverScope(run: Run, instanceId: string): DriverScope {
    return (driver) => {
      const journal = (run.ctx.mgmt[`driver:${driver}`] ??= {}) as Record<string, unknown>;
      return {
        step: (name, fn) => journalStep(journal, name, fn, () => run.save()),
        instanceState: this.d.mgmtStore.instanceState(instanceId, driver),
      };
    };
  }

  /** Records hook progress on the op occ: at most one write per second, the latest kept. */
  private progress(run: Run, hook: string, p: MgmtProgress): void {
    const ctx = run.ctx;
    const now = new Date().toISOString();
    const startedAt = ctx.progress && ctx.progress.hook === hook && ctx.progress.step === p.step && ctx.progress.node === p.node ? ctx.progress.startedAt : now;
    ctx.progress = { hook, step: p.step, ...(p.node !== undefined ? { node: p.node } : {}), ...(p.detail !== undefined ? { detail: p.detail.slice(0, 500) } : {}), startedAt, updatedAt: now };
    const w = this.progressWrites.get(ctx) ?? { last: 0 };
    this.progressWrites.set(ctx, w);
    if (w.timer) return;
    const flush = (): void => {
      w.timer = undefined;
      w.last = Date.now();
      if (run.finished()) return;
      run.save().catch(() => undefined);
    };
    const wait = w.last + 1000 - Date.now();
    if (wait <= 0) flush();
    else w.timer = setTimeout(flush, wait);
  }
}
