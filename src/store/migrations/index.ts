/**
 * Versioned schema migrations, applied at start-up by {@link migrateToLatest}. Append-only: a
 * released migration is never edited; a change is a new entry.
 *
 * {@link MIGRATIONS} is the one list of every migration, core and per module (the module ones are
 * in this folder too: autoheal.ts, lcm.ts, mgmt.ts, notify.ts, packages.ts, security.ts, tenancy.ts, events.ts, health.ts), in the order they apply. What
 * a process migrates never depends on which modules it imported. Names sort in list order (checked
 * at load), which is the order Kysely applies and verifies them in on existing databases.
 */
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import { AUTOHEAL_INTAKE_MIGRATION, AUTOHEAL_MIGRATION, m100 as autoheal100, m101 as autohealIntake101 } from './autoheal.ts';
import { LCM_COMMAND_ORIGIN_MIGRATION, LCM_RETRY_FENCING_MIGRATION, m110 as lcmRetryFencing110, m150 as lcmCommandOrigin150 } from './lcm.ts';
import { OUTBOX_RETRY_WINDOW_MIGRATION, m120 as outboxRetryWindow120, OUTBOX_COMMIT_ORDER_MIGRATION, m160 as outboxCommitOrder160 } from './notify.ts';
import { PACKAGE_INFO_MIGRATION, PACKAGE_ONBOARD_ATTEMPTS_MIGRATION, m140 as packageOnboardAttempts140, m225 as packageInfo225 } from './packages.ts';
import { MGMT_STATE_MIGRATION, m170 as mgmtState170 } from './mgmt.ts';
import { SERVER_NOTIFIER_MIGRATION, m180 as serverNotifier180 } from './security.ts';
import { AUTH_TENANT_MIGRATION, m190 as authTenants190 } from './auth.ts';
import { TENANCY_MIGRATION, m205 as tenancy205 } from './tenancy.ts';
import { EVENT_LOG_MIGRATION, m210 as eventLog210 } from './events.ts';
import { VNFC_HEALTH_MIGRATION, m230 as vnfcHealth230 } from './health.ts';

const m001: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table vnf_package (
        id text primary key,
        onboarding_state text not null,
        operational_state text not null,
        usage_state text not null,
        vnfd_id text,
        vnf_provider text,
        vnf_product_name text,
        vnf_software_version text,
        vnfd_version text,
        checksum jsonb,
        user_defined_data jsonb not null default '{}',
        vnfd jsonb,
        onboarding_error text,
        content bytea,
        created_at timestamptz not null default now()
      )`.execute(db);
    await sql`create unique index vnf_package_vnfd_id on vnf_package (vnfd_id) where onboarding_state = 'ONBOARDED'`.execute(db);
    await sql`
      create table vim (
        id text primary key,
        name text not null unique,
        type text not null,
        description text not null default '',
        is_default boolean not null default false,
        config jsonb not null,
        secret text not null,
        status text not null default 'REACHABLE',
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`.execute(db);
    await sql`create unique index vim_one_default_per_type on vim (type) where is_default`.execute(db);
    await sql`
      create table vnf_instance (
        id text primary key,
        vnf_instance_name text,
        vnf_instance_description text,
        vnfd_id text not null,
        vnf_pkg_id text not null references vnf_package (id),
        vnf_provider text not null,
        vnf_product_name text not null,
        vnf_software_version text not null,
        vnfd_version text not null,
        instantiation_state text not null,
        vnf_configurable_properties jsonb,
        vim_connection_info jsonb not null default '{}',
        vim_secrets text,
        instantiated_vnf_info jsonb,
        metadata jsonb,
        extensions jsonb,
        created_api text not null,
        created_at timestamptz not null default now(),
        rev integer not null default 0
      )`.execute(db);
    await sql`
      create table op_occ (
        id text primary key,
        vnf_instance_id text not null references vnf_instance (id) on delete cascade,
        operation text not null,
        operation_state text not null,
        state_entered_time timestamptz not null,
        start_time timestamptz not null,
        is_automatic_invocation boolean not null default false,
        is_cancel_pending boolean not null default false,
        cancel_mode text,
        operation_params jsonb not null default '{}',
        error jsonb,
        resource_changes jsonb,
        changed_info jsonb,
        grant_id text,
        grant_request jsonb,
        "grant" jsonb,
        ctx jsonb not null default '{}',
        pending text,
        lease_owner text,
        lease_until timestamptz,
        attempts integer not null default 0,
        api_version text not null,
        created_at timestamptz not null default now()
      )`.execute(db);
    // One operation per VNF instance at a time, enforced by the database.
    await sql`create unique index op_occ_one_active_per_instance on op_occ (vnf_instance_id)
      where operation_state in ('STARTING', 'PROCESSING', 'FAILED_TEMP', 'ROLLING_BACK')`.execute(db);
    await sql`create index op_occ_pending on op_occ (created_at) where pending is not null`.execute(db);
    await sql`create index op_occ_instance on op_occ (vnf_instance_id, created_at)`.execute(db);
    await sql`
      create table subscription (
        id text primary key,
        api_version text not null,
        callback_uri text not null,
        filter jsonb,
        verbosity text not null,
        auth_types jsonb not null default '[]',
        auth_secret text,
        dedupe_key text not null,
        created_at timestamptz not null default now()
      )`.execute(db);
    await sql`create index subscription_dedupe on subscription (dedupe_key)`.execute(db);
    await sql`
      create table outbox (
        id bigint generated always as identity primary key,
        subscription_id text not null,
        notification jsonb not null,
        status text not null default 'PENDING',
        attempts integer not null default 0,
        next_attempt_at timestamptz not null default now(),
        last_error text,
        created_at timestamptz not null default now(),
        delivered_at timestamptz
      )`.execute(db);
    await sql`create index outbox_pending on outbox (subscription_id, id) where status = 'PENDING'`.execute(db);
    await sql`create table kv (key text primary key, value jsonb not null)`.execute(db);
  },
};

/**
 * Keyset indexes of the SQL lists (src/api/sol/sql-list.ts): every list reads `order by created_at,
 * id` after a cursor `(created_at, id) > (...)`, so a page is an index range scan. Named after the
 * module migrations (100-120) so databases that already ran those apply it in order.
 */
const m130: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`create index if not exists vnf_instance_list on vnf_instance (created_at, id)`.execute(db);
    await sql`create index if not exists vnf_instance_list_state on vnf_instance (instantiation_state, created_at, id)`.execute(db);
    // equality / in filters on the instance name (the most common "find my VNF" query)
    await sql`create index if not exists vnf_instance_name on vnf_instance (vnf_instance_name)`.execute(db);
    await sql`create index if not exists op_occ_list on op_occ (created_at, id)`.execute(db);
    await sql`create index if not exists op_occ_list_state on op_occ (operation_state, created_at, id)`.execute(db);
    await sql`create index if not exists subscription_list on subscription (created_at, id)`.execute(db);
    await sql`create index if not exists vnf_package_list on vnf_package (created_at, id)`.execute(db);
  },
};

/** Every migration, in the order it applies. Ids and SQL of a released entry never change. */
export const MIGRATIONS: readonly (readonly [name: string, migration: Migration])[] = [
  ['001_initial', m001],
  [AUTOHEAL_MIGRATION, autoheal100],
  [AUTOHEAL_INTAKE_MIGRATION, autohealIntake101],
  [LCM_RETRY_FENCING_MIGRATION, lcmRetryFencing110],
  [OUTBOX_RETRY_WINDOW_MIGRATION, outboxRetryWindow120],
  ['130_list_keyset_indexes', m130],
  [PACKAGE_ONBOARD_ATTEMPTS_MIGRATION, packageOnboardAttempts140],
  [LCM_COMMAND_ORIGIN_MIGRATION, lcmCommandOrigin150],
  [OUTBOX_COMMIT_ORDER_MIGRATION, outboxCommitOrder160],
  [MGMT_STATE_MIGRATION, mgmtState170],
  [SERVER_NOTIFIER_MIGRATION, serverNotifier180],
  [AUTH_TENANT_MIGRATION, authTenants190],
  [TENANCY_MIGRATION, tenancy205],
  [EVENT_LOG_MIGRATION, eventLog210],
  [PACKAGE_INFO_MIGRATION, packageInfo225],
  [VNFC_HEALTH_MIGRATION, vnfcHealth230],
];

// Kysely applies (and checks executed ones) in name order: the list must already be in that order.
for (let i = 1; i < MIGRATIONS.length; i++) {
  const prev = MIGRATIONS[i - 1]?.[0] ?? '';
  const name = MIGRATIONS[i]?.[0] ?? '';
  if (!(prev < name)) throw new Error(`migration ${name} is listed after ${prev} but does not sort after it`);
}

class StaticProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return knownMigrations();
  }
}

/** Every migration, by name. */
export function knownMigrations(): Record<string, Migration> {
  return Object.fromEntries(MIGRATIONS);
}

/** Applies every pending migration; throws with the failing migration's name. */
export async function migrateToLatest(db: Kysely<unknown>): Promise<void> {
  const migrator = new Migrator({ db, provider: new StaticProvider(), migrationTableName: 'vnfm_migration', migrationLockTableName: 'vnfm_migration_lock' });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? String(error)}`, { cause: error });
}
