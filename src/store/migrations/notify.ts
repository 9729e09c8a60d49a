/**
 * Outbox columns of time-bounded delivery retries (src/notify/delivery.ts), with a name that sorts
 * after every earlier migration (core, auto-heal, LCM engine; listed in src/store/migrations/index.ts).
 *
 * - `failing_since`: when the subscriber's current failure streak began, as seen by this row: set
 *   at the row's first failed attempt, or inherited from the row before it when that one went DEAD
 *   (the subscriber has been failing all along). A row is DEAD only once its failure streak is
 *   older than `notifications.retryForMs`. Null while nothing failed.
 * - `dead_at`: when the row went DEAD (retention counts from there, like `delivered_at`).
 */
import type { ColumnType, Kysely, Migration } from 'kysely';
import { sql } from 'kysely';

declare module '../schema.ts' {
  interface OutboxTable {
    /** Start of the failure streak this row belongs to; null while nothing failed. */
    failing_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
    /**
     * Delivery order of the row within its subscription: stamped by the delivery worker, one
     * stamper at a time, in the order rows became visible (commit order); null until stamped.
     */
    seq: ColumnType<string | number | null, string | number | null | undefined, string | number | null>;
    /** When the row went DEAD. */
    dead_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  }
}

/** Name of the migration (sorts after the core, auto-heal and LCM engine ones). */
export const OUTBOX_RETRY_WINDOW_MIGRATION = '120_outbox_retry_window';

export const m120: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table outbox add column failing_since timestamptz, add column dead_at timestamptz`.execute(db);
    // Dead rows are listed per subscription by the operator API.
    await sql`create index outbox_dead on outbox (subscription_id, id) where status = 'DEAD'`.execute(db);
  },
};

/** Name of the migration that orders delivery by commit (see `seq`). */
export const OUTBOX_COMMIT_ORDER_MIGRATION = '160_outbox_commit_order';

export const m160: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table outbox add column seq bigint`.execute(db);
    await sql`create index outbox_unstamped on outbox (id) where seq is null`.execute(db);
    await sql`create index outbox_pending_seq on outbox (subscription_id, seq) where status = 'PENDING'`.execute(db);
    await sql`create index outbox_seq on outbox (seq)`.execute(db);
  },
};
