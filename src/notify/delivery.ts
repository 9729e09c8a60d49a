/**
 * Durable notification delivery: the worker that empties the `outbox` table.
 *
 * Guarantees (the reasons this exists instead of Tacker's fire-and-forget threads):
 * - **Order per subscription.** Only the lowest-id PENDING row of a subscription (its "head") is
 *   ever eligible; the next one waits until the head is DELIVERED or DEAD.
 * - **Isolation.** A consumer that is down or slow delays only its own subscription; other
 *   subscriptions are delivered in parallel (bounded), and LCM work never waits for delivery.
 * - **At most one delivery in flight per row, across processes.** Heads are claimed with
 *   `FOR UPDATE SKIP LOCKED`, and the claim moves `next_attempt_at` ahead as a lease. The result
 *   is written only if the lease is still ours, so a worker that overran its lease cannot
 *   overwrite the outcome of the worker that took the row over.
 * - **Durability.** Nothing is held only in memory: after a restart PENDING rows are picked up
 *   again (a row whose lease was running is retried once the lease expires).
 * - **Retries with back-off** (doubling from `backoffMs` to `maxBackoffMs`, with jitter), then
 *   DEAD after `maxAttempts`; the reason is kept in `last_error` (never credentials).
 */
import { type Kysely, sql } from 'kysely';
import type { VnfmMetrics } from '../api/metrics.ts';
import type { VnfmConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';
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
    const r = await this.db.deleteFrom('outbox').where('status', 'in', ['DELIVERED', 'DEAD']).where('created_at', '<', before).executeTakeFirst();
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
            where status = 'PENDING' order by subscription_id, id) h`.execute(this.db);
    const ms = r.rows[0]?.ms;
    return ms === null || ms === undefined ? undefined : Math.ceil(Number(ms));
  }

  private async refreshPendingGauge(): Promise<void> {
    const r = await this.db.selectFrom('outbox').select((eb) => eb.fn.countAll<string>().as('n')).where('status', '=', 'PENDING').executeTakeFirst();
    this.metrics.notificationsPending.set(Number(r?.n ?? 0));
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
      const picked = await sql<{ id: number | string }>`
        select o.id from outbox o
        where o.id in (select distinct on (subscription_id) id from outbox
                       where status = 'PENDING' order by subscription_id, id)
          and o.status = 'PENDING' and o.next_attempt_at <= now()
        order by o.id
        limit ${limit}
        for update of o skip locked`.execute(tx);
      if (picked.rows.length === 0) return [];
      const ids = picked.rows.map((r) => Number(r.id));
      const leased = await sql<{ id: number | string; subscription_id: string; notification: Record<string, unknown>; attempts: number; lease: Date | string; callback_uri: string | null; api_version: string | null; auth_secret: string | null }>`
        with l as (
          update outbox set next_attempt_at = date_trunc('milliseconds', now() + ${leaseMs} * interval '1 millisecond')
          where id in (${sql.join(ids)})
          returning id, subscription_id, notification, attempts, next_attempt_at as lease
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
    const dead = attempts >= this.config.notifications.maxAttempts || row.callbackUri === null;
    const error = outcome.error.slice(0, 500);
    if (dead) {
      const r = await owned().set({ status: OUTBOX_STATUS.DEAD, attempts, last_error: error }).executeTakeFirst();
      this.metrics.notifications.inc({ result: 'dead' });
      this.log.warn({ ...base, result: 'dead', error, recorded: Number(r.numUpdatedRows) === 1 }, 'notification given up');
      return;
    }
    const delay = this.backoffMs(attempts);
    const r = await owned()
      .set({ attempts, last_error: error, next_attempt_at: sql<Date>`now() + ${delay} * interval '1 millisecond'` })
      .executeTakeFirst();
    this.metrics.notifications.inc({ result: 'failed' });
    this.log.warn({ ...base, result: 'failed', error, retryInMs: delay, recorded: Number(r.numUpdatedRows) === 1 }, 'notification delivery failed');
  }
}
