/**
 * The lease of one claimed op occ, as the executor holds it: the fencing token of every write, the
 * heartbeat, and the AbortSignal that stops the op's VIM work.
 *
 * Why fencing and not only an expiry: a runner can stop for longer than its lease without knowing
 * it (a GC pause, SIGSTOP, a slow network, a hung VIM call). Another runner then claims the op and
 * continues it. When the first one wakes up it must neither write its stale view into the op occ
 * nor keep talking to the VIM for it. So every write made while executing the op is an UPDATE
 * `where id = <op> and lease_owner = <worker> and lease_epoch = <epoch of this claim>`; each claim
 * increments `lease_epoch`, so even a new claim by the same worker id (a restart with a fixed id)
 * fences the old executor. A write that affects no row means the lease is lost: the op's signal is
 * aborted with {@link LeaseLostError}, the executor stops and does nothing more for the op (no
 * notification, no VIM call, no state write). Lease deadlines are computed by the database
 * (`now() + interval`), never by the host clock, so hosts with skewed clocks agree on them.
 *
 * Every fenced write also renews the lease, so a write is a heartbeat; {@link OpLease.confirm} is a
 * write of nothing, done before each VIM action and hook unless a fenced write succeeded just
 * before (within {@link OpLease.freshMs}: the lease then still has almost its whole duration).
 */
import { performance } from 'node:perf_hooks';
import { type Kysely, type Transaction, type UpdateObject, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../store/schema.ts';

/** The op's lease is gone: another runner owns the op (or nobody may act for it now). */
export class LeaseLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LeaseLostError';
  }
}

/** The op was stopped on purpose (VNFM shutdown): its lease is released for the next process. */
export class OpAbortedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OpAbortedError';
  }
}

/** `now() + <ms>` on the database clock. */
export function dbNowPlus(ms: number) {
  return sql<Date>`now() + ${`${Math.round(ms)} milliseconds`}::interval`;
}

type Db = Kysely<Database> | Transaction<Database>;

/** What a lease needs. */
export interface OpLeaseInit {
  db: Kysely<Database>;
  opId: string;
  owner: string;
  epoch: number;
  leaseMs: number;
  log: Logger;
  /** Told once when the lease is found lost (metrics). */
  onLost?: (reason: string) => void;
  /** Where heartbeats renew the lease (a connection pool of their own); @default db */
  heartbeatDb?: Kysely<Database> | undefined;
}

/** The lease of one claimed op (see the module comment). */
export class OpLease {
  readonly opId: string;
  readonly owner: string;
  readonly epoch: number;
  readonly leaseMs: number;
  /** A fenced write younger than this counts as a confirmation. */
  readonly freshMs: number;
  private readonly db: Kysely<Database>;
  private readonly heartbeatDb: Kysely<Database>;
  private readonly log: Logger;
  private readonly onLost: ((reason: string) => void) | undefined;
  private readonly controller = new AbortController();
  /** Monotonic time at which the last successful fenced write was sent. */
  private confirmedAt: number;
  private lostReason: string | undefined;
  private beating = false;
  private ended = false;

  constructor(init: OpLeaseInit) {
    this.db = init.db;
    this.heartbeatDb = init.heartbeatDb ?? init.db;
    this.opId = init.opId;
    this.owner = init.owner;
    this.epoch = init.epoch;
    this.leaseMs = init.leaseMs;
    this.log = init.log;
    this.onLost = init.onLost;
    this.freshMs = Math.min(1000, Math.floor(init.leaseMs / 10));
    // The claim itself was the first fenced write (it set the lease on the database clock).
    this.confirmedAt = performance.now();
  }

  /** Aborted when the op must stop (lease lost, shutdown). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True once a fenced write found the lease gone (or it could not be renewed in time). */
  get lost(): boolean {
    return this.lostReason !== undefined;
  }

  /** Stops the op's work with `reason` (e.g. an {@link OpAbortedError} at shutdown). */
  abort(reason: Error): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** Marks the lease lost, aborts the signal; returns the error to throw. */
  private markLost(reason: string): LeaseLostError {
    const err = new LeaseLostError(`lease of op occ ${this.opId} lost: ${reason}`);
    if (this.lostReason === undefined) {
      this.lostReason = reason;
      this.log.warn({ opOccId: this.opId, leaseEpoch: this.epoch, reason }, 'lease lost; this process stops working on the operation');
      this.onLost?.(reason);
    }
    this.abort(err);
    return err;
  }

  private fenced(db: Db, set: UpdateObject<Database, 'op_occ'>) {
    return db
      .updateTable('op_occ')
      .set({ lease_until: dbNowPlus(this.leaseMs), ...set })
      .where('id', '=', this.opId)
      .where('lease_owner', '=', this.owner)
      .where('lease_epoch', '=', this.epoch);
  }

  /**
   * A fenced write of `set` (and a lease renewal, unless `set` says otherwise), on `tx` when given.
   * Throws {@link LeaseLostError} (and aborts the signal) when the lease is gone; inside a
   * transaction that rolls everything back.
   */
  async write(set: UpdateObject<Database, 'op_occ'>, tx?: Transaction<Database>): Promise<void> {
    return this.writeOn(tx ?? this.db, set);
  }

  private async writeOn(db: Db, set: UpdateObject<Database, 'op_occ'>): Promise<void> {
    if (this.lostReason !== undefined) throw new LeaseLostError(`lease of op occ ${this.opId} lost: ${this.lostReason}`);
    const sent = performance.now();
    const r = await this.fenced(db, set).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) throw this.markLost('the op occ is claimed by another runner (or released)');
    this.confirmedAt = sent;
  }

  /** Like {@link write}, returning the given columns of the row after the update. */
  async writeReturning<K extends keyof Database['op_occ'] & string>(set: UpdateObject<Database, 'op_occ'>, columns: readonly K[], tx?: Transaction<Database>) {
    if (this.lostReason !== undefined) throw new LeaseLostError(`lease of op occ ${this.opId} lost: ${this.lostReason}`);
    const sent = performance.now();
    const row = await this.fenced(tx ?? this.db, set)
      .returning(columns as K[])
      .executeTakeFirst();
    if (row === undefined) throw this.markLost('the op occ is claimed by another runner (or released)');
    this.confirmedAt = sent;
    return row;
  }

  /**
   * Makes sure the lease is held (and valid for about its whole duration) right before a VIM
   * action or a hook: a renewal, skipped when a fenced write succeeded within {@link freshMs}.
   * Throws when the op must stop.
   */
  async confirm(): Promise<void> {
    this.controller.signal.throwIfAborted();
    if (performance.now() - this.confirmedAt < this.freshMs) return;
    await this.write({});
  }

  /**
   * One heartbeat: renews the lease (on the heartbeat connection pool when there is one); true
   * when it was renewed. Lost lease -> abort. A failing renewal (database down) is
   * tried again at the next beat, but once the lease has run out by this host's monotonic clock
   * without a renewal, the op is aborted: it can no longer prove that it still owns the op.
   */
  async heartbeat(): Promise<boolean> {
    if (this.ended || this.beating || this.controller.signal.aborted) return false;
    this.beating = true;
    try {
      await this.writeOn(this.heartbeatDb, {});
      return true;
    } catch (e) {
      if (e instanceof LeaseLostError) return false;
      if (performance.now() - this.confirmedAt >= this.leaseMs) {
        this.markLost(`it could not be renewed before it expired (${(e as Error)?.message ?? String(e)})`);
      } else {
        this.log.warn({ err: e, opOccId: this.opId }, 'lease heartbeat failed; trying again');
      }
      return false;
    } finally {
      this.beating = false;
    }
  }

  /** The executor is done with the op: no more heartbeats. */
  end(): void {
    this.ended = true;
  }

  /**
   * Gives the op back without finishing it (shutdown): `lease_owner`/`lease_until` cleared, fenced,
   * so the next runner claims it at once and resumes it at its checkpoint. False when the lease was
   * not held any more (the op finished or was taken over).
   */
  async release(db: Db = this.db): Promise<boolean> {
    const r = await db
      .updateTable('op_occ')
      .set({ lease_owner: null, lease_until: null })
      .where('id', '=', this.opId)
      .where('lease_owner', '=', this.owner)
      .where('lease_epoch', '=', this.epoch)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }
}

/** True when `e` (or the signal's reason) says the op was stopped, not that it failed. */
export function isStop(e: unknown): boolean {
  return e instanceof LeaseLostError || e instanceof OpAbortedError;
}
