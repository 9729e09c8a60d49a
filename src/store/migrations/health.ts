/**
 * The VNFC health model (src/health/): one row per VNFC of an instantiated VNF, fed by the VIM
 * health watchers. Listed in src/store/migrations/index.ts with every other migration.
 *
 * `since` is when the current condition began (kept when the same condition is observed again, so
 * it survives restarts); `reported_at` marks the fault episode already handed to the sustained
 * fault callback (null again when the condition changes). Rows go with their instance (FK
 * cascade); the monitor removes those of instances that are no longer INSTANTIATED.
 */
import { type Kysely, type Migration, sql } from 'kysely';

export const VNFC_HEALTH_MIGRATION = '230_vnfc_health';

export const m230: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table vnfc_health (
        id text not null unique,
        vnf_instance_id text not null references vnf_instance (id) on delete cascade,
        project text,
        vnfc_info_id text not null,
        vnfc_resource_info_id text not null,
        vdu_id text not null,
        resource_id text not null,
        resource_kind text,
        vim_connection_id text,
        condition text not null,
        reason text not null default '',
        detail text,
        source text not null,
        since timestamptz not null,
        observed_at timestamptz not null,
        reported_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        primary key (vnf_instance_id, vnfc_resource_info_id)
      )`.execute(db);
    await sql`create index vnfc_health_list on vnfc_health (created_at, id)`.execute(db);
    await sql`create index vnfc_health_unreported_faults on vnfc_health (since) where condition = 'faulty' and reported_at is null`.execute(db);
  },
};
