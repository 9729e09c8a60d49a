/**
 * The op runner: claims op occs that have a pending action from the database (lease with expiry
 * and heartbeat, `FOR UPDATE SKIP LOCKED`), executes them, and releases them. Several runner
 * processes on one PostgreSQL execute each op exactly once; a crashed runner's lease expires and
 * another runner (or the restarted one) takes the op over. The op occ table is the queue.
 *
 * Leases (src/lcm/lease.ts): a claim sets `lease_owner`, `lease_until = now() + leaseMs` on the
 * database clock and increments `lease_epoch`; the executor's writes are fenced by owner + epoch.
 * An op waiting for an automatic step retry has no lease and a `next_attempt_at`: the claim skips it
 * until then. On stop (SIGTERM, close) the runner stops claiming, lets running ops go on for
 * `shutdownGraceMs`, then aborts them at their next safe point and gives their leases back
 * (expired at once, epoch bumped), so the next process resumes them at their checkpoint.
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { VnfmMetrics } from '../core/metrics.ts';
import { type OpOccRecord, opOccFromRow } from '../model/op-occ.ts';
import type { Database } from '../store/schema.ts';
import type { Executor } from './executor.ts';
import { dbNowPlus, OpAbortedError, OpLease } from './lease.ts';

/** Options of the runner. */
export interface RunnerOptions {
  workerId: string;
  leaseMs: number;
  /** How long after its expiry a lease may be taken over (a late but live holder keeps it). @default 0 */
  leaseGraceMs?: number;
  pollMs: number;
  concurrency: number;
  /** Embedded single-process database: leases of earlier processes are void at start. */
  singleProcess: boolean;
  /** How long {@link Runner.stop} lets running ops go on before aborting them. @default 30000 */
  shutdownGraceMs?: number;
  /** After the abort, how long stop waits for the ops to reach a safe point. @default 10000 */
  abortWaitMs?: number;
  /** Connection pool of the lease renewals (heartbeats), apart from the other queries. @default the runner's db */
  heartbeatDb?: Kysely<Database> | undefined;
}

/** Resolves after `ms` unless `until` settles first; true when the time ran out. */
async function timedOut(until: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const out = await Promise.race([until.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), ms)))]);
  clearTimeout(timer);
  return out;
}

/** Emits `finished(vnfInstanceId, opOccId)` whenever an op leaves the runner. */
export class Runner extends EventEmitter {
  private running = false;
  private inflight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private wakeRequested = false;
  private loopPromise: Promise<void> | undefined;
  private wakeResolve: (() => void) | undefined;
  private readonly leases = new Map<string, OpLease>();
  private readonly heartbeats = new Map<string, NodeJS.Timeout>();
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  /** When the claim loop last queried for work, and its error if that query failed (readiness). */
  private lastClaim: { at: number; error?: string } | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly executor: Executor,
    private readonly opts: RunnerOptions,
    private readonly log: Logger,
    private readonly metrics: VnfmMetrics,
  ) {
    super();
  }

  /** Starts the loop. */
  async start(): Promise<void> {
    if (this.running) return;
    if (this.opts.singleProcess) {
      // Only this process can use the embedded database: earlier leases belong to dead processes.
      await this.db.updateTable('op_occ').set({ lease_until: new Date(0) }).where('lease_owner', 'is not', null).where('lease_owner', '!=', this.opts.workerId).execute();
    }
    this.running = true;
    this.loopPromise = this.loop();
  }

  /** For readiness probes: the loop runs (claims work), ops in flight, and how the last claim query went. */
  status(): { running: boolean; inflight: number; lastClaimAt?: number; lastClaimError?: string } {
    return { running: this.running, inflight: this.inflight.size, ...(this.lastClaim ? { lastClaimAt: this.lastClaim.at } : {}), ...(this.lastClaim?.error ? { lastClaimError: this.lastClaim.error } : {}) };
  }

  /** Asks the loop to look for work now. */
  wake(): void {
    this.wakeRequested = true;
    this.wakeResolve?.();
  }

  /**
   * Asks the loop to look for work in `ms` (an automatic retry falls due then). The claim query
   * decides on the database clock; this only avoids waiting for the next poll.
   */
  wakeAfter(ms: number): void {
    if (!this.running) return;
    const at = Date.now() + ms;
    if (this.wakeTimer !== undefined && this.wakeAt <= at) return;
    clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.wakeAt = Number.POSITIVE_INFINITY;
      this.wake();
    }, ms + 5);
    this.wakeTimer.unref?.();
  }

  /**
   * Stops claiming; lets ops in flight finish for up to `shutdownGraceMs`, then aborts them (they
   * stop at their next safe point: HTTP calls and waits are cancelled, hook scripts killed) and
   * releases their leases so that the next process resumes them at once.
   */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.wake();
    await this.loopPromise;
    if (this.inflight.size === 0) return;
    const all = Promise.allSettled([...this.inflight.values()]);
    const grace = this.opts.shutdownGraceMs ?? 30_000;
    if (!(await timedOut(all, grace))) return;
    this.abortAll(`the VNFM is shutting down (grace period of ${grace} ms over)`);
    if (!(await timedOut(all, this.opts.abortWaitMs ?? 10_000))) return;
    // Ops that do not reach a safe point: give their leases back anyway (their writes are fenced off)
    // and stop renewing them.
    for (const lease of [...this.leases.values()]) {
      clearInterval(this.heartbeats.get(lease.opId));
      lease.end();
      await this.release(lease);
    }
  }

  /** Aborts every op in flight now (their leases are released as they stop). */
  abortAll(reason = 'the VNFM is shutting down'): void {
    const n = this.leases.size;
    if (n > 0) this.log.warn({ operations: n, reason }, 'aborting running operations');
    for (const lease of this.leases.values()) lease.abort(new OpAbortedError(reason));
  }

  /**
   * Gives an aborted op's lease back: expired at once on the database clock and fenced off (epoch
   * bumped), owner kept so the next claim treats the op as interrupted (resumed at its checkpoint,
   * or FAILED_TEMP when the step in flight is not safe to repeat).
   */
  private async release(lease: OpLease): Promise<void> {
    try {
      const r = await this.db
        .updateTable('op_occ')
        // far in the past: claimable at once, whatever the claimer's grace
        .set((eb) => ({ lease_until: sql<Date>`to_timestamp(0)`, lease_epoch: eb('lease_epoch', '+', 1) }))
        .where('id', '=', lease.opId)
        .where('lease_owner', '=', lease.owner)
        .where('lease_epoch', '=', lease.epoch)
        .where('pending', 'is not', null)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) > 0) this.log.info({ opOccId: lease.opId }, 'lease released: the operation is resumable by the next runner');
    } catch (e) {
      this.log.warn({ err: e, opOccId: lease.opId }, 'could not release the lease; it expires by itself');
    }
  }

  /** Waits until nothing is in flight and nothing claimable is pending (tests). */
  async idle(timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const pending = await this.db.selectFrom('op_occ').select('id').where('pending', 'is not', null).executeTakeFirst();
      if (!pending && this.inflight.size === 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('runner not idle in time');
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.wakeRequested = false;
      try {
        const free = this.opts.concurrency - this.inflight.size;
        if (free > 0) {
          const claimed = await this.claim(free);
          for (const { op, resumed } of claimed) this.launch(op, resumed);
          this.lastClaim = { at: Date.now() };
        }
      } catch (e) {
        this.lastClaim = { at: Date.now(), error: e instanceof Error ? e.message : String(e) };
        this.log.error({ err: e }, 'runner claim failed');
      }
      if (this.wakeRequested || !this.running) continue;
      await new Promise<void>((resolve) => {
        this.wakeResolve = resolve;
        this.timer = setTimeout(resolve, this.opts.pollMs);
      });
      clearTimeout(this.timer);
      this.wakeResolve = undefined;
    }
  }

  /**
   * Claims up to `n` runnable op occs: a pending action, no live lease (none, given back, or run
   * out for longer than `leaseGraceMs`), and no automatic retry scheduled for later (all on the
   * database clock). Each claim increments `lease_epoch`.
   */
  async claim(n: number): Promise<{ op: OpOccRecord; resumed: boolean }[]> {
    return this.db.transaction().execute(async (tx) => {
      const rows = await tx
        .selectFrom('op_occ')
        .select(['id', 'lease_owner'])
        .where('pending', 'is not', null)
        // an expired lease is taken over only once its grace is over too (the holder may be late, not gone)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', dbNowPlus(-(this.opts.leaseGraceMs ?? 0)))]))
        .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', sql<Date>`now()`)]))
        .orderBy('created_at')
        .limit(n)
        .forUpdate()
        .skipLocked()
        .execute();
      if (rows.length === 0) return [];
      const updated = await tx
        .updateTable('op_occ')
        .set((eb) => ({ lease_owner: this.opts.workerId, lease_until: dbNowPlus(this.opts.leaseMs), attempts: eb('attempts', '+', 1), lease_epoch: eb('lease_epoch', '+', 1), next_attempt_at: null }))
        .where(
          'id',
          'in',
          rows.map((r) => r.id),
        )
        .returningAll()
        .execute();
      const prevOwner = new Map(rows.map((r) => [r.id, r.lease_owner]));
      return updated.map((r) => ({ op: opOccFromRow(r as unknown as Record<string, unknown>), resumed: prevOwner.get(r.id) !== null && prevOwner.get(r.id) !== undefined }));
    });
  }

  private launch(op: OpOccRecord, resumed: boolean): void {
    this.metrics.lcmInflight.inc();
    const lease = new OpLease({
      db: this.db,
      opId: op.id,
      owner: this.opts.workerId,
      epoch: op.leaseEpoch,
      leaseMs: this.opts.leaseMs,
      log: this.log,
      onLost: () => this.metrics.leaseLosses.inc(),
      heartbeatDb: this.opts.heartbeatDb,
    });
    this.leases.set(op.id, lease);
    // Renewed every third of the lease; how late each renewal is confirmed (the timer delayed by a
    // busy event loop, the query's wait and run) is measured from when it was due.
    const every = Math.max(50, Math.floor(this.opts.leaseMs / 3));
    let due = performance.now() + every;
    const hb = setInterval(() => {
      const dueAt = due;
      due = performance.now() + every;
      void lease.heartbeat().then((renewed) => {
        if (!renewed) return;
        const lateMs = performance.now() - dueAt;
        this.metrics.leaseRenewal.observe(Math.max(0, lateMs) / 1000);
        if (lateMs > every) this.log.warn({ opOccId: op.id, lateMs: Math.round(lateMs), leaseMs: this.opts.leaseMs }, 'lease renewed late (busy process or database); it is at risk when this nears leaseMs + leaseGraceMs');
      });
    }, every);
    // The heartbeat alone never keeps the process alive (the server or the op's own work does).
    hb.unref();
    this.heartbeats.set(op.id, hb);
    const p = this.executor
      .execute(op, resumed, lease)
      .catch((e) => this.log.error({ err: e, opOccId: op.id }, 'executor crashed'))
      .then(async () => {
        clearInterval(hb);
        lease.end();
        // Aborted at shutdown (not lost): give the lease back for the next process.
        if (lease.signal.aborted && !lease.lost) await this.release(lease);
      })
      .finally(() => {
        clearInterval(hb);
        this.heartbeats.delete(op.id);
        this.leases.delete(op.id);
        this.inflight.delete(op.id);
        this.metrics.lcmInflight.dec();
        this.emit('finished', op.vnfInstanceId, op.id);
        this.wake();
      });
    this.inflight.set(op.id, p);
  }
}
