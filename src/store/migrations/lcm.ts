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
