/**
 * Tables of the auto-heal module: the fault notification ledger and the durable heal batches.
 * Listed in src/store/migrations/index.ts with every other migration.
 *
 * Why tables and not timers: a packing window kept in memory is lost at restart and cannot be
 * shared by several VNFM processes; a batch row with a deadline can be claimed by exactly one
 * process (`FOR UPDATE SKIP LOCKED`) whenever it is due, whoever received the notifications.
 */
import { type Kysely, type Migration, sql } from 'kysely';

/** Name of the auto-heal migration (sorts after the core ones). */
export const AUTOHEAL_MIGRATION = '100_autoheal';
/** Name of the migration adding the intake's database functions. */
export const AUTOHEAL_INTAKE_MIGRATION = '101_autoheal_intake';

export const m100: Migration = {
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

/**
 * The two statements of the fault intake's group commit, as database functions. Why functions:
 * PL/pgSQL keeps the plans of its statements for the session, so a call costs no parsing or
 * planning of these large statements (which was most of their cost on the embedded database,
 * where every statement runs in turn), and the text sent per call is a few bytes. Change them
 * with a new migration (`create or replace function`).
 *
 * `autoheal_intake_facts(ids, revs)`: per existing instance its id and rev, plus (only when the
 * rev differs from `revs[id]`) the small facts validation needs, extracted with jsonb operators
 * so the large `instantiated_vnf_info` never leaves the database (see instance-facts.ts).
 *
 * `autoheal_pack_group(rows, window_secs, note_at)`: stores a group of validated notifications
 * and upserts the open batch of each VNF, atomically (see FaultLedger.packGroup). Returns one row
 * per VNF whose notifications were packed; a VNF with a waiting or held batch is left out (its
 * notifications are not stored here, the caller packs them one by one).
 */
export const m101: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create or replace function autoheal_intake_facts(p_ids text[], p_revs jsonb)
      returns table (o_id text, o_rev integer, o_facts jsonb)
      language plpgsql stable as $fn$
      begin
        return query
        select i.id, i.rev, case when i.rev is distinct from (p_revs->>i.id)::int then jsonb_build_object(
          'state', i.instantiation_state,
          'hasInfo', coalesce(jsonb_typeof(i.instantiated_vnf_info) = 'object', false),
          'autoheal', i.vnf_configurable_properties->'isAutohealEnabled',
          'mdFault', i.metadata->'ServerNotifierFaultID',
          'infoFault', i.instantiated_vnf_info->'metadata'->'ServerNotifierFaultID',
          -- the instantiate request's additionalParams, only read when neither of the above is usable
          'opFault', case when coalesce(jsonb_typeof(i.metadata->'ServerNotifierFaultID'), '') not in ('string', 'array')
                           and coalesce(jsonb_typeof(i.instantiated_vnf_info->'metadata'->'ServerNotifierFaultID'), '') not in ('string', 'array') then (
            select o.operation_params->'additionalParams' from op_occ o
            where o.vnf_instance_id = i.id and o.operation = 'INSTANTIATE' and o.operation_state = 'COMPLETED'
            order by o.created_at desc limit 1) end,
          -- [vnfcResourceInfo.id, server id, metadata.server_notification] in order
          'res', (select jsonb_agg(jsonb_build_array(e.r->>'id', e.r->'computeResource'->>'resourceId', e.r->'metadata'->'server_notification') order by e.o)
                  from jsonb_array_elements(case when jsonb_typeof(i.instantiated_vnf_info->'vnfcResourceInfo') = 'array'
                                                 then i.instantiated_vnf_info->'vnfcResourceInfo' else '[]'::jsonb end) with ordinality as e(r, o)),
          -- [vnfcInfo.id, vnfcResourceInfoId] in order
          'vnfcs', (select jsonb_agg(jsonb_build_array(e.v->>'id', e.v->>'vnfcResourceInfoId') order by e.o)
                    from jsonb_array_elements(case when jsonb_typeof(i.instantiated_vnf_info->'vnfcInfo') = 'array'
                                                   then i.instantiated_vnf_info->'vnfcInfo' else '[]'::jsonb end) with ordinality as e(v, o))
        ) end
        from vnf_instance i where i.id = any(p_ids);
      end $fn$`.execute(db);
    await sql`
      create or replace function autoheal_pack_group(p_rows jsonb, p_window_secs float8, p_note_at text)
      returns table (o_vnf text, o_batch_id text, o_deadline timestamptz, o_opened boolean)
      language plpgsql as $fn$
      begin
        return query
        with x as (
          -- k > 1: an earlier notification of this group has the same target
          select r.*, row_number() over (partition by r.vnf, r.vnfc_info_id, r.server_id, r.ignored is null order by r.ord) as k
          from jsonb_to_recordset(p_rows) as r(
            ord int, id text, vnf text, server_id text, alarm_id text, fault_id text, fault_type text, host_id text,
            fault_option jsonb, vnfc_info_id text, vnfc_resource_info_id text, received_by text, ignored text)
        ), g as (
          -- per VNF: the group's new targets (first occurrence of each), count and first server
          select x.vnf, count(*)::int as n, (array_agg(x.server_id order by x.ord))[1] as first_server,
            jsonb_agg(jsonb_build_object('vnfcInfoId', x.vnfc_info_id, 'vnfcResourceInfoId', x.vnfc_resource_info_id, 'serverId', x.server_id) order by x.ord)
              filter (where x.k = 1) as targets
          from x where x.ignored is null group by x.vnf
        ), p as (
          -- packed here unless the VNF has a batch waiting for it (busy, held)
          select g.* from g
          where not exists (select 1 from autoheal_batch w where w.vnf_instance_id = g.vnf and w.status in ('waiting', 'held'))
        ), b as (
          -- in VNF id order: two processes writing groups for the same VNFs lock batches in the same order
          insert into autoheal_batch as ab (id, vnf_instance_id, status, deadline, targets, notification_count, notes)
          select gen_random_uuid()::text, p.vnf, 'open', now() + make_interval(secs => p_window_secs), p.targets, p.n,
            jsonb_build_array(jsonb_build_object('at', p_note_at, 'text', 'opened by a fault notification for server ' || p.first_server))
          from p order by p.vnf
          on conflict (vnf_instance_id) where status = 'open' do update set
            targets = ab.targets || coalesce((
              select jsonb_agg(e.t order by e.o) from jsonb_array_elements(excluded.targets) with ordinality as e(t, o)
              where not ab.targets @> jsonb_build_array(jsonb_build_object('vnfcInfoId', e.t->'vnfcInfoId', 'serverId', e.t->'serverId'))), '[]'::jsonb),
            notification_count = ab.notification_count + excluded.notification_count,
            updated_at = now()
          returning ab.id, ab.vnf_instance_id, ab.deadline, (ab.xmax = 0) as opened
        ), n as (
          insert into fault_notification as fn (id, vnf_instance_id, server_id, alarm_id, fault_id, fault_type, host_id, fault_option, vnfc_info_id,
            vnfc_resource_info_id, status, reason, batch_id, received_by, received_at)
          select x.id, x.vnf, x.server_id, x.alarm_id, x.fault_id, x.fault_type, x.host_id, coalesce(x.fault_option, 'null'::jsonb), x.vnfc_info_id,
            x.vnfc_resource_info_id,
            case when x.ignored is null then 'packed' else 'ignored' end,
            case
              when x.ignored is not null then x.ignored
              -- an earlier notification of this group, or the batch as it was before this statement, has the VNFC
              when x.k > 1 or exists (select 1 from autoheal_batch pb where pb.id = b.id
                                      and pb.targets @> jsonb_build_array(jsonb_build_object('vnfcInfoId', x.vnfc_info_id, 'serverId', x.server_id)))
              then 'duplicate: the VNFC is already in the batch'
            end,
            -- in the group's order (the embedded database's clock has millisecond resolution)
            b.id, x.received_by, clock_timestamp() + x.ord * interval '1 microsecond'
          from x left join b on b.vnf_instance_id = x.vnf and x.ignored is null
          where x.ignored is not null or b.id is not null
          order by x.ord
          returning fn.id
        )
        select b.vnf_instance_id, b.id, b.deadline, b.opened from b
        -- referencing n makes it part of this query's result dependencies (it runs regardless)
        where (select count(*) from n) >= 0;
      end $fn$`.execute(db);
  },
};
