/**
 * Durable notification delivery: the worker that empties the `outbox` table.
 *
 * Guarantees (the reasons this exists instead of Tacker's fire-and-forget threads):
 * - **Order per subscription.** Only the lowest-id PENDING row of a subscription (its "head") is
 *   ever eligible; the next one waits until the head is DELIVERED or DEAD. "Lowest" is the row's
 *   delivery sequence (`seq`), not its id: ids are drawn at insert and transactions may commit in
 *   the other order, so each claim first stamps the rows that became visible since the last one
 *   with the next sequence numbers (in id order among them), one stamper at a time (an advisory
 *   transaction lock). A row is stamped once, when it is first seen, so the order is the commit
 *   order and never changes; the notifications of one op are in its order (each is committed
 *   before the next is created).
 * - **Isolation.** A consumer that is down or slow delays only its own subscription; other
 *   subscriptions are delivered in parallel (bounded), and LCM work never waits for delivery.
 * - **At most one delivery in flight per row, across processes.** Heads are claimed with
 *   `FOR UPDATE SKIP LOCKED`, and the claim moves `next_attempt_at` ahead as a lease. The result
 *   is written only if the lease is still ours, so a worker that overran its lease cannot
 *   overwrite the outcome of the worker that took the row over.
 * - **Durability.** Nothing is held only in memory: after a restart PENDING rows are picked up
 *   again (a row whose lease was running is retried once the lease expires).
 * - **Retries for a duration, not a count** (back-off doubling from `backoffMs` to `maxBackoffMs`,
 *   with jitter). A row goes DEAD only when the subscriber has been failing for
 *   `notifications.retryForMs` (default 24 h): the streak starts at the row's first failed attempt
 *   (`failing_since`); when a row goes DEAD the next row of the subscription inherits the streak
 *   (the subscriber has been failing all along), so a subscriber that never comes back does not
 *   hold every later row for another full period. A subscriber down for minutes or hours loses
 *   nothing, and gets everything in order when it is back. The reason is kept in `last_error`
 *   (never credentials).
 * - **No silent loss.** A row going DEAD is logged at error level and counted
 *   (`vnfm_notifications_delivery_total{result="dead"}`, gauge `vnfm_notifications_dead`); dead
 *   rows stay listable (`GET /vnfm/v1/notifications?state=dead`) and can be redelivered one by one
 *   or per subscription ({@link DeliveryWorker.redeliver}, {@link DeliveryWorker.redeliverSubscription}).
 *   Only a row whose subscription was deleted dies at once (nobody to deliver to).
 */
import { type Kysely, sql } from 'kysely';
import type { VnfmMetrics } from '../core/metrics.ts';
import type { VnfmConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { stampCommitOrder } from '../store/commit-order.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';
import { vnfmError } from '../errors.ts';
import { CallbackAuthenticator, CallbackError, type NotificationCredentials, callConsumer } from './auth.ts';

/** Status values of an outbox row. */
export const OUTBOX_STATUS = { PENDING: 'PENDING', DELIVERED: 'DELIVERED', DEAD: 'DEAD' } as const;
/** One outbox row status. */
export type OutboxStatus = (typeof OUTBOX_STATUS)[keyof typeof OUTBOX_STATUS];

/** What the worker needs. */
export interface DeliveryWorkerDeps {
  db: Kysely<Database>;
  box: SecretBox;
  config: VnfmConfig;
  log: Logger;
  metrics: VnfmMetrics;
  /** Max deliveries in flight in this process (different subscriptions). @default 16 */
  concurrency?: number;
  /** Longest idle sleep before looking for work again (other processes may enqueue). @default config.runner.pollMs */
  pollMs?: number;
  /** HTTP client (tests may inject one). @default global fetch */
  fetch?: typeof fetch;
}

interface ClaimedRow {
  id: number;
  subscriptionId: string;
  notification: Record<string, unknown>;
  attempts: number;
  lease: Date;
  /** Start of the failure streak this row belongs to, or null. */
  failingSince: Date | null;
  callbackUri: string | null;
  apiVersion: string | null;
  authSecret: string | null;
}

type Outcome = { ok: true; status: number } | { ok: false; error: string };

/** Version header value per subscription API version. */
const VERSION_HEADER: Record<string, string> = { v1: '1.3.0', v2: '2.0.0' };

/**
 * Delivers PENDING outbox rows to subscribers. `start()` runs it in the background; `drainOnce()`
 * does one claim-and-deliver round (tests, tools). Several workers, in one or many processes over
 * the same database, cooperate safely.
 */
export class DeliveryWorker {
  private readonly db: Kysely<Database>;
  private readonly box: SecretBox;
  private readonly config: VnfmConfig;
  private readonly log: Logger;
  private readonly metrics: VnfmMetrics;
  private readonly concurrency: number;
  private readonly pollMs: number;
  private readonly fetchImpl: typeof fetch | undefined;
  private readonly auth: CallbackAuthenticator;
  private readonly inflight = new Set<Promise<void>>();
  private running = false;
  private loopDone: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;

  constructor(deps: DeliveryWorkerDeps) {
    this.db = deps.db;
    this.box = deps.box;
    this.config = deps.config;
    this.log = deps.log;
    this.metrics = deps.metrics;
    this.concurrency = Math.max(1, deps.concurrency ?? 16);
    this.pollMs = Math.max(10, deps.pollMs ?? deps.config.runner.pollMs ?? 500);
    this.fetchImpl = deps.fetch;
    this.auth = new CallbackAuthenticator({ timeoutMs: deps.config.notifications.timeoutMs, ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  }

  /** How long a claimed row stays reserved: a token request and a delivery, plus slack. */
  private get leaseMs(): number {
    return 2 * this.config.notifications.timeoutMs + 5_000;
  }

  /** Starts the background loop (idempotent). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Stops the loop and waits for deliveries in flight to finish (each is bounded by the timeout). */
  async stop(): Promise<void> {
    if (!this.running) {
      await Promise.allSettled([...this.inflight]);
      return;
    }
    this.running = false;
    this.wake();
    await this.loopDone;
    await Promise.allSettled([...this.inflight]);
    await this.refreshPendingGauge().catch(() => undefined);
  }

  /** Looks for work now instead of at the next poll (call after committing new notifications). */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /**
   * One round: claims the due head row of up to `concurrency` subscriptions, delivers them in
   * parallel and records the outcomes. Returns the number of delivery attempts made.
   */
  async drainOnce(): Promise<number> {
    const rows = await this.claim(this.concurrency);
    await Promise.allSettled(rows.map((r) => this.attempt(r)));
    await this.refreshPendingGauge();
    return rows.length;
  }

  /**
   * Deletes DELIVERED and DEAD rows older than `notifications.retentionMs`, so the outbox does not
   * grow without bound; PENDING rows are never touched. Returns the number of rows removed.
   */
  async purge(now = Date.now()): Promise<number> {
    const before = new Date(now - this.config.notifications.retentionMs);
    // Counted from when the row ended (delivered or given up), so a row that waited long is kept.
    const r = await this.db
      .deleteFrom('outbox')
      .where('status', 'in', ['DELIVERED', 'DEAD'])
      .where(sql<Date>`coalesce(delivered_at, dead_at, created_at)`, '<', before)
      .executeTakeFirst();
    const n = Number(r.numDeletedRows ?? 0);
    if (n > 0) this.log.info({ rows: n }, 'old notifications purged from the outbox');
    return n;
  }

  private async loop(): Promise<void> {
    let lastGauge = 0;
    let lastPurge = 0;
    while (this.running) {
      if (Date.now() - lastPurge >= 3_600_000) {
        lastPurge = Date.now();
        await this.purge().catch((e) => this.log.warn({ err: (e as Error).message }, 'outbox purge failed'));
      }
      this.woken = false;
      let claimed = 0;
      const free = this.concurrency - this.inflight.size;
      if (free > 0) {
        try {
          const rows = await this.claim(free);
          claimed = rows.length;
          for (const r of rows) this.launch(r);
        } catch (e) {
          this.log.warn({ err: (e as Error).message }, 'notification claim failed');
        }
      }
      if (!this.running) break;
      if (claimed > 0 && this.inflight.size < this.concurrency) continue;
      let delay = this.pollMs;
      try {
        if (Date.now() - lastGauge >= 1000) {
          await this.refreshPendingGauge();
          lastGauge = Date.now();
        }
        // With every slot busy, a finishing delivery wakes the loop; do not spin on due rows.
        const next = this.inflight.size < this.concurrency ? await this.nextDueInMs() : undefined;
        // A due head we could not claim is locked by another worker's claim: look again shortly.
        if (next !== undefined) delay = Math.min(delay, Math.max(claimed === 0 ? 10 : 0, next));
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'notification queue check failed');
      }
      if (delay > 0 && !this.woken && this.running) await this.sleep(delay);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        done();
      };
    });
  }

  private launch(row: ClaimedRow): void {
    const p: Promise<void> = this.attempt(row)
      .catch((e) => this.log.error({ err: (e as Error).message, outboxId: row.id }, 'notification delivery bookkeeping failed'))
      .finally(() => {
        this.inflight.delete(p);
        this.wake();
      });
    this.inflight.add(p);
  }

  /** Milliseconds until the earliest head row becomes due (negative = already due), or undefined. */
  private async nextDueInMs(): Promise<number | undefined> {
    const r = await sql<{ ms: number | string | null }>`
      select extract(epoch from (min(h.next_attempt_at) - now())) * 1000 as ms
      from (select distinct on (subscription_id) next_attempt_at from outbox
            where status = 'PENDING' order by subscription_id, seq nulls last, id) h`.execute(this.db);
    const ms = r.rows[0]?.ms;
    return ms === null || ms === undefined ? undefined : Math.ceil(Number(ms));
  }

  private async refreshPendingGauge(): Promise<void> {
    const r = await sql<{ pending: string | number; dead: string | number }>`
      select count(*) filter (where status = 'PENDING') as pending, count(*) filter (where status = 'DEAD') as dead
      from outbox where status in ('PENDING', 'DEAD')`.execute(this.db);
    this.metrics.notificationsPending.set(Number(r.rows[0]?.pending ?? 0));
    this.metrics.notificationsDead.set(Number(r.rows[0]?.dead ?? 0));
  }

  /**
   * Puts a DEAD row back in its subscription's queue (PENDING, due now, a fresh retry period). It
   * becomes the head of the subscription (lowest id) and is delivered before newer rows. Throws
   * 404 for an unknown row, 409 when it is not DEAD or its subscription was deleted.
   */
  async redeliver(id: number): Promise<void> {
    const r = await this.db
      .updateTable('outbox')
      .set({ status: OUTBOX_STATUS.PENDING, attempts: 0, failing_since: null, dead_at: null, next_attempt_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where('status', '=', OUTBOX_STATUS.DEAD)
      .where(({ exists, selectFrom }) => exists(selectFrom('subscription').select('subscription.id').whereRef('subscription.id', '=', 'outbox.subscription_id')))
      .returning(['subscription_id'])
      .executeTakeFirst();
    if (!r) {
      const row = await this.db.selectFrom('outbox').select(['status', 'subscription_id']).where('id', '=', id).executeTakeFirst();
      if (!row) throw vnfmError('VNFM_ERR_API_NOT_FOUND', `notification ${id} not found in the outbox`);
      if (row.status !== OUTBOX_STATUS.DEAD) throw vnfmError('VNFM_ERR_API_CONFLICT', `notification ${id} is ${row.status}; only DEAD notifications can be redelivered`);
      throw vnfmError('VNFM_ERR_API_CONFLICT', `notification ${id} cannot be redelivered: its subscription ${row.subscription_id} was deleted`);
    }
    this.metrics.notifications.inc({ result: 'redelivered' });
    this.log.info({ outboxId: id, subscriptionId: r.subscription_id }, 'dead notification put back for delivery');
    await this.refreshPendingGauge().catch(() => undefined);
    this.wake();
  }

  /**
   * Puts every DEAD row of a subscription back in its queue, in their original order. Returns the
   * row ids. Throws 404 for an unknown subscription, 409 when it has no DEAD row.
   */
  async redeliverSubscription(subscriptionId: string): Promise<number[]> {
    const sub = await this.db.selectFrom('subscription').select('id').where('id', '=', subscriptionId).executeTakeFirst();
    if (!sub) throw vnfmError('VNFM_ERR_SUB_NOT_FOUND', `subscription ${subscriptionId} not found`);
    const rows = await this.db
      .updateTable('outbox')
      .set({ status: OUTBOX_STATUS.PENDING, attempts: 0, failing_since: null, dead_at: null, next_attempt_at: sql<Date>`now()` })
      .where('subscription_id', '=', subscriptionId)
      .where('status', '=', OUTBOX_STATUS.DEAD)
      .returning('id')
      .execute();
    if (rows.length === 0) throw vnfmError('VNFM_ERR_API_CONFLICT', `subscription ${subscriptionId} has no DEAD notification to redeliver`);
    const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
    this.metrics.notifications.inc({ result: 'redelivered' }, ids.length);
    this.log.info({ subscriptionId, rows: ids.length }, 'dead notifications of a subscription put back for delivery');
    await this.refreshPendingGauge().catch(() => undefined);
    this.wake();
    return ids;
  }

  /**
   * Claims due head rows. The subquery finds each subscription's head; the outer conditions are
   * on the locked row itself so PostgreSQL re-checks them against the newest row version when
   * another worker changed it meanwhile (a row leased by someone else is then skipped).
   */
  private async claim(limit: number): Promise<ClaimedRow[]> {
    if (limit <= 0) return [];
    const leaseMs = this.leaseMs;
    return this.db.transaction().execute(async (tx) => {
      // Stamp what became visible since the last claim (its own statement: a snapshot taken after
      // the previous stamper committed).
      await stampCommitOrder(tx, 'outbox');
      const picked = await sql<{ id: number | string }>`
        select o.id from outbox o
        where o.id in (select distinct on (subscription_id) id from outbox
                       -- only rows stamped above: one that became visible since waits for the next claim
                       where status = 'PENDING' and seq is not null order by subscription_id, seq)
          and o.status = 'PENDING' and o.next_attempt_at <= now()
        order by o.seq
        limit ${limit}
        for update of o skip locked`.execute(tx);
      if (picked.rows.length === 0) return [];
      const ids = picked.rows.map((r) => Number(r.id));
      const leased = await sql<{ id: number | string; subscription_id: string; notification: Record<string, unknown>; attempts: number; lease: Date | string; failing_since: Date | string | null; callback_uri: string | null; api_version: string | null; auth_secret: string | null }>`
        with l as (
          update outbox set next_attempt_at = date_trunc('milliseconds', now() + ${leaseMs} * interval '1 millisecond')
          where id in (${sql.join(ids)})
          returning id, subscription_id, notification, attempts, next_attempt_at as lease, failing_since
        )
        select l.*, s.callback_uri, s.api_version, s.auth_secret
        from l left join subscription s on s.id = l.subscription_id
        order by l.id`.execute(tx);
      return leased.rows.map((r) => ({
        id: Number(r.id),
        subscriptionId: r.subscription_id,
        notification: r.notification,
        attempts: r.attempts,
        lease: new Date(r.lease),
        failingSince: r.failing_since === null ? null : new Date(r.failing_since),
        callbackUri: r.callback_uri,
        apiVersion: r.api_version,
        authSecret: r.auth_secret,
      }));
    });
  }

  private async send(row: ClaimedRow): Promise<Outcome> {
    if (row.callbackUri === null) return { ok: false, error: 'subscription no longer exists' };
    let creds: NotificationCredentials | null = null;
    if (row.authSecret) {
      try {
        creds = this.box.open<NotificationCredentials>(row.authSecret);
      } catch {
        return { ok: false, error: 'stored subscription credentials cannot be decrypted (secret key changed?)' };
      }
    }
    try {
      const res = await callConsumer(this.auth, creds, {
        method: 'POST',
        url: row.callbackUri,
        headers: { 'content-type': 'application/json', accept: 'application/json', version: VERSION_HEADER[row.apiVersion ?? 'v2'] ?? '2.0.0' },
        body: JSON.stringify(row.notification),
        timeoutMs: this.config.notifications.timeoutMs,
        ...(this.fetchImpl ? { fetch: this.fetchImpl } : {}),
      });
      if (res.status >= 200 && res.status <= 299) return { ok: true, status: res.status };
      return { ok: false, error: `callback answered HTTP ${res.status}` };
    } catch (e) {
      return { ok: false, error: e instanceof CallbackError ? e.message : `delivery failed: ${(e as Error).message}` };
    }
  }

  /** Back-off before attempt `attempts + 1`: doubling, capped, with up to 25% jitter either way. */
  private backoffMs(attempts: number): number {
    const n = this.config.notifications;
    const base = Math.min(n.maxBackoffMs, n.backoffMs * 2 ** Math.max(0, attempts - 1));
    return Math.max(0, Math.round(base * (0.75 + Math.random() * 0.5)));
  }

  private async attempt(row: ClaimedRow): Promise<void> {
    const t0 = Date.now();
    const outcome = await this.send(row);
    const attempts = row.attempts + 1;
    const notificationType = String(row.notification.notificationType ?? '');
    const base = { subscriptionId: row.subscriptionId, outboxId: row.id, notificationType, attempt: attempts, ms: Date.now() - t0 };
    // Only while our lease holds: a worker that took the row over after expiry owns the outcome.
    const owned = () => this.db.updateTable('outbox').where('id', '=', row.id).where('status', '=', OUTBOX_STATUS.PENDING).where('next_attempt_at', '=', row.lease);

    if (outcome.ok) {
      const r = await owned().set({ status: OUTBOX_STATUS.DELIVERED, attempts, delivered_at: sql<Date>`now()`, last_error: null }).executeTakeFirst();
      this.metrics.notifications.inc({ result: 'delivered' });
      this.log.info({ ...base, result: 'delivered', httpStatus: outcome.status, recorded: Number(r.numUpdatedRows) === 1 }, 'notification delivered');
      return;
    }
    const error = outcome.error.slice(0, 500);
    if (row.callbackUri === null) {
      // The subscription was deleted: nobody to deliver to (its waiting rows went with it).
      const r = await owned().set({ status: OUTBOX_STATUS.DEAD, attempts, last_error: error, dead_at: sql<Date>`now()` }).executeTakeFirst();
      this.metrics.notifications.inc({ result: 'dead' });
      this.log.warn({ ...base, result: 'dead', error, recorded: Number(r.numUpdatedRows) === 1 }, 'notification dropped: its subscription was deleted');
      return;
    }
    const delay = this.backoffMs(attempts);
    const retryForMs = this.config.notifications.retryForMs;
    // One statement on the database clock: the streak starts at the first failure, and the row is
    // given up only once the streak is older than retryForMs (SET sees the old failing_since).
    const outcomeRow = await this.db.transaction().execute(async (tx) => {
      const upd = await sql<{ status: string; failing_since: Date | string; subscription_id: string }>`
        update outbox set
          attempts = ${attempts},
          last_error = ${error},
          failing_since = coalesce(failing_since, now()),
          status = case when coalesce(failing_since, now()) <= now() - ${retryForMs} * interval '1 millisecond' then 'DEAD' else 'PENDING' end,
          dead_at = case when coalesce(failing_since, now()) <= now() - ${retryForMs} * interval '1 millisecond' then now() else null end,
          next_attempt_at = now() + ${delay} * interval '1 millisecond'
        where id = ${row.id} and status = 'PENDING' and next_attempt_at = ${row.lease}
        returning status, failing_since, subscription_id`.execute(tx);
      const u = upd.rows[0];
      if (u?.status === OUTBOX_STATUS.DEAD) {
        // The subscriber has been failing all along: the next row continues the same streak.
        await sql`
          update outbox set failing_since = ${new Date(u.failing_since)}
          where id = (select id from outbox where subscription_id = ${u.subscription_id} and status = 'PENDING' order by seq nulls last, id limit 1)
            and failing_since is null`.execute(tx);
      }
      return u;
    });
    const recorded = outcomeRow !== undefined;
    if (outcomeRow?.status === OUTBOX_STATUS.DEAD) {
      this.metrics.notifications.inc({ result: 'dead' });
      await this.refreshPendingGauge().catch(() => undefined);
      this.log.error(
        { ...base, result: 'dead', error, failingSince: new Date(outcomeRow.failing_since).toISOString(), retryForMs, recorded },
        `notification given up: the subscriber kept failing for notifications.retryForMs; list it with GET /vnfm/v1/notifications?state=dead and redeliver it with POST /vnfm/v1/notifications/${row.id}/redeliver`,
      );
      return;
    }
    this.metrics.notifications.inc({ result: 'failed' });
    this.log.warn({ ...base, result: 'failed', error, retryInMs: delay, recorded }, 'notification delivery failed');
  }
}
