/**
 * Tables of the auto-heal module: the fault notification ledger and the durable heal batches.
 * Registered at import time so that any process that wires auto-heal migrates them with the core
 * schema (the store is opened after every module is imported).
 *
 * Why tables and not timers: a packing window kept in memory is lost at restart and cannot be
 * shared by several VNFM processes; a batch row with a deadline can be claimed by exactly one
 * process (`FOR UPDATE SKIP LOCKED`) whenever it is due, whoever received the notifications.
 */
import { type Kysely, type Migration, sql } from 'kysely';
import { registerMigration } from '../store/migrations/index.ts';

/** Name of the auto-heal migration (sorts after the core ones). */
export const AUTOHEAL_MIGRATION = '100_autoheal';

const m100: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table autoheal_batch (
        id text primary key,
        vnf_instance_id text not null,
        status text not null,
        reason text,
        reason_code text,
        targets jsonb not null default '[]',
        healed_vnfc_ids jsonb not null default '[]',
        notes jsonb not null default '[]',
        notification_count integer not null default 0,
        deadline timestamptz not null,
        next_attempt_at timestamptz,
        attempts integer not null default 0,
        released boolean not null default false,
        op_occ_id text,
        op_state text,
        lease_owner text,
        lease_until timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        fired_at timestamptz,
        finished_at timestamptz
      )`.execute(db);
    // At most one batch collecting notifications per VNF instance: concurrent intakes meet here.
    await sql`create unique index autoheal_batch_one_open on autoheal_batch (vnf_instance_id) where status = 'open'`.execute(db);
    await sql`create index autoheal_batch_pending on autoheal_batch (status, deadline) where status in ('open', 'waiting', 'firing', 'held', 'healing')`.execute(db);
    await sql`create index autoheal_batch_instance on autoheal_batch (vnf_instance_id, created_at)`.execute(db);
    await sql`create index autoheal_batch_created on autoheal_batch (created_at)`.execute(db);
    await sql`
      create table fault_notification (
        id text primary key,
        vnf_instance_id text not null,
        server_id text not null,
        alarm_id text not null,
        fault_id text not null,
        fault_type text not null,
        host_id text,
        fault_option jsonb,
        vnfc_info_id text,
        vnfc_resource_info_id text,
        status text not null,
        reason text,
        batch_id text,
        received_by text,
        received_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`.execute(db);
    await sql`create index fault_notification_batch on fault_notification (batch_id)`.execute(db);
    await sql`create index fault_notification_instance on fault_notification (vnf_instance_id, received_at)`.execute(db);
    await sql`create index fault_notification_received on fault_notification (received_at)`.execute(db);
  },
};

registerMigration(AUTOHEAL_MIGRATION, m100);
