/**
 * The op runner: claims op occs that have a pending action from the database (lease with expiry
 * and heartbeat, `FOR UPDATE SKIP LOCKED`), executes them, and releases them. Several runner
 * processes on one PostgreSQL execute each op exactly once; a crashed runner's lease expires and
 * another runner (or the restarted one) takes the op over. The op occ table is the queue.
 */
import { EventEmitter } from 'node:events';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { VnfmMetrics } from '../api/metrics.ts';
import { type OpOccRecord, opOccFromRow } from '../model/op-occ.ts';
import type { Database } from '../store/schema.ts';
import type { Executor } from './executor.ts';

/** Options of the runner. */
export interface RunnerOptions {
  workerId: string;
  leaseMs: number;
  pollMs: number;
  concurrency: number;
  /** Embedded single-process database: leases of earlier processes are void at start. */
  singleProcess: boolean;
}

/** Emits `finished(vnfInstanceId, opOccId)` whenever an op leaves the runner. */
export class Runner extends EventEmitter {
  private running = false;
  private inflight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private wakeRequested = false;
  private loopPromise: Promise<void> | undefined;
  private wakeResolve: (() => void) | undefined;

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

  /** Asks the loop to look for work now. */
  wake(): void {
    this.wakeRequested = true;
    this.wakeResolve?.();
  }

  /** Stops claiming; waits for ops in flight to finish. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loopPromise;
    await Promise.allSettled([...this.inflight.values()]);
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
        }
      } catch (e) {
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

  /** Claims up to `n` runnable op occs. */
  async claim(n: number): Promise<{ op: OpOccRecord; resumed: boolean }[]> {
    const until = new Date(Date.now() + this.opts.leaseMs);
    return this.db.transaction().execute(async (tx) => {
      const rows = await tx
        .selectFrom('op_occ')
        .select(['id', 'lease_owner'])
        .where('pending', 'is not', null)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', sql<Date>`now()`)]))
        .orderBy('created_at')
        .limit(n)
        .forUpdate()
        .skipLocked()
        .execute();
      if (rows.length === 0) return [];
      const updated = await tx
        .updateTable('op_occ')
        .set((eb) => ({ lease_owner: this.opts.workerId, lease_until: until, attempts: eb('attempts', '+', 1) }))
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
    const hb = setInterval(() => {
      void this.db
        .updateTable('op_occ')
        .set({ lease_until: new Date(Date.now() + this.opts.leaseMs) })
        .where('id', '=', op.id)
        .where('lease_owner', '=', this.opts.workerId)
        .execute()
        .catch((e) => this.log.warn({ err: e, opOccId: op.id }, 'lease heartbeat failed'));
    }, Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    const p = this.executor
      .execute(op, resumed)
      .catch((e) => this.log.error({ err: e, opOccId: op.id }, 'executor crashed'))
      .finally(() => {
        clearInterval(hb);
        this.inflight.delete(op.id);
        this.metrics.lcmInflight.dec();
        this.emit('finished', op.vnfInstanceId, op.id);
        this.wake();
      });
    this.inflight.set(op.id, p);
  }
}
