/**
 * The LCM event feed of the operator dashboard (`GET /vnfm/v1/events`, src/api/events.ts).
 *
 * `event_log`: one row per LCM event the notifier turns into notifications (op occ state changes,
 * instance creation and deletion), written in the same transaction as the state change, whether
 * or not any subscription hears of it. `seq` is the order clients read it in: stamped in the order
 * rows became visible (commit order), one stamper at a time, like the outbox's `seq`; null until
 * stamped. `project` is the instance's project (tenant scoping of the feed).
 */
import { type Kysely, type Migration, sql } from 'kysely';

export const EVENT_LOG_MIGRATION = '210_event_log';

export const m210: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table event_log (
        id bigserial primary key,
        seq bigint,
        project text,
        vnf_instance_id text not null,
        event jsonb not null,
        created_at timestamptz not null default now()
      )`.execute(db);
    await sql`create unique index event_log_seq on event_log (seq) where seq is not null`.execute(db);
    await sql`create index event_log_unstamped on event_log (id) where seq is null`.execute(db);
    await sql`create index event_log_created on event_log (created_at)`.execute(db);
  },
};
