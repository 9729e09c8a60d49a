/**
 * Tenants and OAuth 2.0 clients.
 *
 * - `project` on instances, op occs, subscriptions, fault notifications and heal batches: the
 *   project (tenant) a resource belongs to. Rows from before have none (null): admins see them,
 *   and so does the unauthenticated mode. Op occs, fault notifications and heal batches take
 *   their instance's project when inserted without one (a trigger), so no writer can forget it.
 * - `oauth_client`: clients of the built-in OAuth 2.0 token endpoint (secret hashed with scrypt).
 * - `oauth_token`: the opaque access tokens it issued, by SHA-256 (the token itself is not kept),
 *   with the certificate thumbprint of a certificate-bound token (RFC 8705 `x5t#S256`).
 */
import { type Kysely, type Migration, sql } from 'kysely';

export const AUTH_TENANT_MIGRATION = '190_auth_tenants_oauth_clients';

export const m190: Migration = {
  async up(db: Kysely<unknown>) {
    for (const t of ['vnf_instance', 'op_occ', 'subscription', 'fault_notification', 'autoheal_batch']) {
      await sql`alter table ${sql.table(t)} add column if not exists project text`.execute(db);
    }
    await sql`create index if not exists vnf_instance_project on vnf_instance (project, created_at, id)`.execute(db);
    await sql`create index if not exists op_occ_project on op_occ (project, created_at, id)`.execute(db);
    await sql`create index if not exists subscription_project on subscription (project, created_at, id)`.execute(db);
    await sql`
      create or replace function vnfm_inherit_project() returns trigger
      language plpgsql as $fn$
      begin
        if new.project is null then
          select project into new.project from vnf_instance where id = new.vnf_instance_id;
        end if;
        return new;
      end
      $fn$`.execute(db);
    for (const t of ['op_occ', 'fault_notification', 'autoheal_batch']) {
      await sql`create trigger ${sql.raw(`${t}_inherit_project`)} before insert on ${sql.table(t)} for each row execute function vnfm_inherit_project()`.execute(db);
    }
    await sql`
      create table oauth_client (
        id text primary key,
        name text not null,
        secret_hash text not null,
        project text,
        role text not null,
        certificate_bound boolean not null default false,
        created_at timestamptz not null default now()
      )`.execute(db);
    await sql`
      create table oauth_token (
        token_hash text primary key,
        client_id text not null references oauth_client (id) on delete cascade,
        role text not null,
        scope text not null,
        cnf_x5t text,
        expires_at timestamptz not null,
        created_at timestamptz not null default now()
      )`.execute(db);
    await sql`create index oauth_token_expiry on oauth_token (expires_at)`.execute(db);
  },
};
