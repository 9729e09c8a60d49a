/**
 * Commit-order sequence numbers for append-only tables read by cursors (the notification outbox,
 * the LCM event log). Rows are inserted with `seq` null inside the writers' transactions; one
 * stamper at a time (a transaction-scoped advisory lock per table) gives every row that has become
 * visible the next numbers, in id order. A reader that remembers the highest `seq` it has seen
 * therefore never skips a row that committed late with a lower id.
 *
 * Run it inside the caller's transaction, as its own statement, so its snapshot is taken after the
 * previous stamper committed.
 */
import { type Kysely, type Transaction, sql } from 'kysely';
import type { Database } from './schema.ts';

/** The tables stamped this way, with their advisory lock keys (distinct per table). */
export const COMMIT_ORDER_TABLES = {
  outbox: 0x76_6e_66_6d_01, // 'vnfm' + 1
  event_log: 7_340_021,
} as const;

export type CommitOrderTable = keyof typeof COMMIT_ORDER_TABLES;

/** Stamps the visible unstamped rows of `table` with the next sequence numbers, in id order. */
export async function stampCommitOrder(tx: Transaction<Database> | Kysely<Database>, table: CommitOrderTable): Promise<void> {
  const t = sql.table(table);
  await sql`select pg_advisory_xact_lock(${COMMIT_ORDER_TABLES[table]})`.execute(tx);
  await sql`
    update ${t} r set seq = s.n
    from (select id, (select coalesce(max(seq), 0) from ${t}) + row_number() over (order by id) as n
          from ${t} where seq is null) s
    where r.id = s.id`.execute(tx);
}
