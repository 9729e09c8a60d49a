/**
 * Management-driver tables.
 *
 * - `mgmt_state`: instance-scoped state of each management driver, sealed (host key pins, a
 *   cluster's admin credentials, persisted parameter overrides). Gone with the instance.
 * - `mgmt_lock`: advisory locks on resources shared by drivers of different instances (an Ansible
 *   server, a load balancer), held by an op occ for the length of a hook.
 */
import { type Kysely, type Migration, sql } from 'kysely';

export const MGMT_STATE_MIGRATION = '170_mgmt_state_and_locks';

export const m170: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table mgmt_state (
        instance_id text not null references vnf_instance (id) on delete cascade,
        driver text not null,
        sealed text not null,
        updated_at timestamptz not null default now(),
        primary key (instance_id, driver)
      )`.execute(db);
    await sql`
      create table mgmt_lock (
        key text primary key,
        op_occ_id text not null,
        acquired_at timestamptz not null default now()
      )`.execute(db);
  },
};
