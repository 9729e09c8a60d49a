/**
 * Columns of the LCM engine v2 on `op_occ`: automatic step retries and lease fencing, with a name
 * that sorts after every earlier migration (listed in src/store/migrations/index.ts).
 *
 * - `step_attempts`: failed attempts of the step being retried (0 when no retry is pending; reset
 *   when a step completes and by an operator's `retry`).
 * - `next_attempt_at`: when an op waiting for an automatic retry may be claimed again (database
 *   clock); null = claimable now. The op keeps its `pending` action and its SOL state meanwhile.
 * - `lease_epoch`: incremented by every claim. Every write made while executing an op is
 *   conditional on `lease_owner = <worker> and lease_epoch = <epoch of the claim>`, so a runner
 *   that lost its lease (even to a new claim by the same worker id) writes nothing.
 */
import type { ColumnType, Kysely, Migration } from 'kysely';
import { sql } from 'kysely';

declare module '../schema.ts' {
  interface OpOccTable {
    /** Failed attempts of the step being retried automatically. */
    step_attempts: ColumnType<number, number | undefined, number>;
    /** Earliest claim of an op waiting for an automatic retry (database clock); null = now. */
    next_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
    /** Incremented by each claim; fences every write of the claim's executor. */
    lease_epoch: ColumnType<number, number | undefined, number>;
    /** The canonical command (src/model/lcm-command.ts) the op was accepted with; null on older rows. */
    command: ColumnType<unknown, string | null | undefined, string | null>;
    /** Idempotency key of the op's creator (e.g. `autoheal-batch:<id>`): at most one op occ per key. */
    origin: ColumnType<string | null, string | null | undefined, string | null>;
  }
}

/** Name of the migration (sorts after the core and auto-heal ones). */
export const LCM_RETRY_FENCING_MIGRATION = '110_lcm_step_retry_lease_epoch';

export const m110: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table op_occ
      add column step_attempts integer not null default 0,
      add column next_attempt_at timestamptz,
      add column lease_epoch integer not null default 0`.execute(db);
  },
};

/** Name of the migration adding canonical commands and origins to op occs. */
export const LCM_COMMAND_ORIGIN_MIGRATION = '150_op_occ_command_origin';

/**
 * `command`: the canonical command (v1/v2 differences resolved at the API). `origin`: who created
 * the op and for what, unique, so a creator that retries (an auto-heal batch claimed again after a
 * crash) finds its op by key instead of matching free text, and can never create a second one.
 * Heals created by auto-heal batches before this migration get their origin from their `cause`.
 */
export const m150: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table op_occ add column command jsonb, add column origin text`.execute(db);
    await sql`update op_occ set origin = 'autoheal-batch:' || substring(operation_params->>'cause', '^auto-heal: batch ([0-9a-fA-F-]+)')
      where operation = 'HEAL' and is_automatic_invocation and operation_params->>'cause' ~ '^auto-heal: batch [0-9a-fA-F-]+'`.execute(db);
    await sql`create unique index op_occ_origin_uq on op_occ (origin) where origin is not null`.execute(db);
  },
};
