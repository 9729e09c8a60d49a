/**
 * The fault notification ledger and the heal batches, in the database. Every accepted fault
 * notification is stored in the same transaction that adds its VNFC to the VNF's pending heal
 * batch, so a notification is never acknowledged (204) without being durably packed; every
 * batch state change is a guarded update (`status` + `lease_owner`) so that several VNFM
 * processes never act twice on one batch.
 *
 * Why a ledger (Masakari-style) and not just a queue: operators must be able to see what the
 * VIM side reported, what became of it (packed, healing, done, ignored, suppressed and why) and
 * which heal it caused, long after the fact.
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, type Transaction, sql } from 'kysely';
import { vnfmError } from '../errors.ts';
import { json } from '../store/db.ts';
import type { Database, Json } from '../store/schema.ts';

/** States of a heal batch. */
export const BATCH_STATUSES = {
  /** Collecting notifications until its deadline. */
  open: 'open',
  /** Claimed by one VNFM process that is creating the heal right now. */
  firing: 'firing',
  /** The VNF was busy with another operation; retried when that ends. */
  waiting: 'waiting',
  /** The VNF has a FAILED_TEMP operation; resumes when it is resolved, or on release. */
  held: 'held',
  /** The storm guard (or a disabled auto-heal) stopped it; released by an operator. */
  suppressed: 'suppressed',
  /** Its heal op occ is running. */
  healing: 'healing',
  /** Its heal op occ COMPLETED. */
  done: 'done',
  /** Its heal op occ failed (FAILED_TEMP, FAILED or ROLLED_BACK). */
  failed: 'failed',
  /** Nothing left to heal (targets gone or already replaced, instance terminated). */
  dropped: 'dropped',
} as const;
/** See {@link BATCH_STATUSES}. */
export type BatchStatus = keyof typeof BATCH_STATUSES;

/** States of a fault notification in the ledger. */
export const NOTIFICATION_STATUSES = {
  new: 'new',
  /** In a pending batch. */
  packed: 'packed',
  /** Its batch's heal is running. */
  healing: 'healing',
  done: 'done',
  /** Auto-heal disabled for the VNF: recorded only. */
  ignored: 'ignored',
  suppressed: 'suppressed',
  /** Its target no longer needed a heal when the batch fired (see `reason`). */
  dropped: 'dropped',
  failed: 'failed',
} as const;
/** See {@link NOTIFICATION_STATUSES}. */
export type NotificationStatus = keyof typeof NOTIFICATION_STATUSES;

/** Batch statuses that still accept new notifications of their VNF. */
export const PACKABLE_STATUSES: readonly BatchStatus[] = ['open', 'waiting', 'held'];

/** One VNFC a batch wants healed, with the server the fault was reported for. */
export interface BatchTarget {
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  serverId: string;
}

/** A line of a batch's history (kept as evidence). */
export interface BatchNote {
  at: string;
  text: string;
}

type Ts = import('kysely').ColumnType<Date, Date | string, Date | string>;
type DefTs = import('kysely').ColumnType<Date, Date | string | undefined, Date | string>;

/** Row of `autoheal_batch`. */
export interface AutohealBatchTable {
  id: string;
  vnf_instance_id: string;
  status: string;
  reason: string | null;
  reason_code: string | null;
  targets: Json<BatchTarget[]>;
  healed_vnfc_ids: Json<string[]>;
  notes: Json<BatchNote[]>;
  notification_count: number;
  deadline: Ts;
  next_attempt_at: Ts | null;
  attempts: number;
  released: boolean;
  op_occ_id: string | null;
  /** Last seen state of the heal op occ. */
  op_state: string | null;
  lease_owner: string | null;
  lease_until: Ts | null;
  created_at: DefTs;
  updated_at: DefTs;
  fired_at: Ts | null;
  finished_at: Ts | null;
}

/** Row of `fault_notification`. */
export interface FaultNotificationTable {
  id: string;
  vnf_instance_id: string;
  server_id: string;
  alarm_id: string;
  fault_id: string;
  fault_type: string;
  host_id: string | null;
  fault_option: Json<Record<string, unknown> | null>;
  vnfc_info_id: string | null;
  vnfc_resource_info_id: string | null;
  status: string;
  reason: string | null;
  batch_id: string | null;
  received_by: string | null;
  received_at: DefTs;
  updated_at: DefTs;
}

/** The core database plus the auto-heal tables. */
export type AutohealDatabase = Database & { autoheal_batch: AutohealBatchTable; fault_notification: FaultNotificationTable };
type Db = Kysely<AutohealDatabase> | Transaction<AutohealDatabase>;

/** A fault notification as the API shows it. */
export interface FaultNotificationRecord {
  id: string;
  vnfInstanceId: string;
  serverId: string;
  alarmId: string;
  faultId: string;
  faultType: string;
  hostId: string | null;
  faultOption: Record<string, unknown> | null;
  vnfcInstanceId: string | null;
  vnfcResourceInfoId: string | null;
  status: NotificationStatus;
  reason: string | null;
  batchId: string | null;
  receivedBy: string | null;
  receivedAt: string;
  updatedAt: string;
}

/** A heal batch as the API shows it. */
export interface HealBatchRecord {
  id: string;
  vnfInstanceId: string;
  status: BatchStatus;
  reason: string | null;
  reasonCode: string | null;
  targets: BatchTarget[];
  /** vnfcInfo ids sent in the heal request. */
  healedVnfcInstanceIds: string[];
  notes: BatchNote[];
  notificationCount: number;
  deadline: string;
  nextAttemptAt: string | null;
  attempts: number;
  released: boolean;
  vnfLcmOpOccId: string | null;
  createdAt: string;
  updatedAt: string;
  firedAt: string | null;
  finishedAt: string | null;
}

/** What the intake stores for one notification. */
export interface NotificationInput {
  vnfInstanceId: string;
  serverId: string;
  alarmId: string;
  faultId: string;
  faultType: string;
  hostId?: string | undefined;
  faultOption?: Record<string, unknown> | undefined;
  vnfcInfoId?: string | undefined;
  vnfcResourceInfoId?: string | undefined;
  receivedBy: string;
}

const iso = (d: Date | string | null | undefined): string | null => (d === null || d === undefined ? null : new Date(d).toISOString());

/** A heal batch row as a record (also used by the SQL list in ledger-routes.ts). */
export function batchFromRow(r: Record<string, unknown>): HealBatchRecord {
  return {
    id: r.id as string,
    vnfInstanceId: r.vnf_instance_id as string,
    status: r.status as BatchStatus,
    reason: (r.reason as string | null) ?? null,
    reasonCode: (r.reason_code as string | null) ?? null,
    targets: (r.targets as BatchTarget[]) ?? [],
    healedVnfcInstanceIds: (r.healed_vnfc_ids as string[]) ?? [],
    notes: (r.notes as BatchNote[]) ?? [],
    notificationCount: Number(r.notification_count ?? 0),
    deadline: iso(r.deadline as Date) as string,
    nextAttemptAt: iso(r.next_attempt_at as Date | null),
    attempts: Number(r.attempts ?? 0),
    released: r.released === true,
    vnfLcmOpOccId: (r.op_occ_id as string | null) ?? null,
    createdAt: iso(r.created_at as Date) as string,
    updatedAt: iso(r.updated_at as Date) as string,
    firedAt: iso(r.fired_at as Date | null),
    finishedAt: iso(r.finished_at as Date | null),
  };
}

/** A fault notification row as a record (also used by the SQL list in ledger-routes.ts). */
export function notificationFromRow(r: Record<string, unknown>): FaultNotificationRecord {
  return {
    id: r.id as string,
    vnfInstanceId: r.vnf_instance_id as string,
    serverId: r.server_id as string,
    alarmId: r.alarm_id as string,
    faultId: r.fault_id as string,
    faultType: r.fault_type as string,
    hostId: (r.host_id as string | null) ?? null,
    faultOption: (r.fault_option as Record<string, unknown> | null) ?? null,
    vnfcInstanceId: (r.vnfc_info_id as string | null) ?? null,
    vnfcResourceInfoId: (r.vnfc_resource_info_id as string | null) ?? null,
    status: r.status as NotificationStatus,
    reason: (r.reason as string | null) ?? null,
    batchId: (r.batch_id as string | null) ?? null,
    receivedBy: (r.received_by as string | null) ?? null,
    receivedAt: iso(r.received_at as Date) as string,
    updatedAt: iso(r.updated_at as Date) as string,
  };
}

/** A note line stamped now. */
export function note(text: string): BatchNote {
  return { at: new Date().toISOString(), text };
}

/** Filters of the list queries (all optional, combined with AND). */
export interface LedgerQuery {
  vnfInstanceId?: string | undefined;
  status?: string | undefined;
  batchId?: string | undefined;
  /** Newest first, at most this many. @default 1000 */
  limit?: number | undefined;
}

/** Outcome of {@link FaultLedger.pack}. */
export interface PackResult {
  notification: FaultNotificationRecord;
  batch: HealBatchRecord;
  /** True when this notification opened a new batch (its deadline starts now). */
  opened: boolean;
}

/** One validated notification of a group written by {@link FaultLedger.packGroup}. */
export type GroupItem =
  /** Accepted: packed into the VNF's pending batch. */
  | { kind: 'pack'; input: NotificationInput & { vnfcInfoId: string; vnfcResourceInfoId: string } }
  /** Recorded only (auto-heal disabled for the VNF), with the reason. */
  | { kind: 'ignore'; input: NotificationInput; reason: string };

/** What became of one item of a group: stored (packed or ignored), or the error it alone got. */
export type GroupOutcome =
  | { kind: 'packed'; notificationId: string; batchId: string; deadline: string; opened: boolean }
  | { kind: 'ignored'; notificationId: string }
  | { kind: 'error'; error: unknown };

/** Batch claimed by one process for firing. */
export type ClaimedBatch = HealBatchRecord & { leaseOwner: string };

/** Database access of the ledger and the batches. */
export class FaultLedger {
  readonly db: Kysely<AutohealDatabase>;

  constructor(db: Kysely<Database>) {
    this.db = db as unknown as Kysely<AutohealDatabase>;
  }

  private notificationValues(n: NotificationInput, status: NotificationStatus, reason: string | null, batchId: string | null) {
    return {
      id: randomUUID(),
      vnf_instance_id: n.vnfInstanceId,
      server_id: n.serverId,
      alarm_id: n.alarmId,
      fault_id: n.faultId,
      fault_type: n.faultType,
      host_id: n.hostId ?? null,
      fault_option: json(n.faultOption ?? null),
      vnfc_info_id: n.vnfcInfoId ?? null,
      vnfc_resource_info_id: n.vnfcResourceInfoId ?? null,
      status,
      reason,
      batch_id: batchId,
      received_by: n.receivedBy,
    };
  }

  /** Stores a notification that will not lead to a heal (e.g. auto-heal disabled). */
  async recordIgnored(n: NotificationInput, reason: string): Promise<FaultNotificationRecord> {
    const row = await this.db.insertInto('fault_notification').values(this.notificationValues(n, 'ignored', reason, null)).returningAll().executeTakeFirstOrThrow();
    return notificationFromRow(row as unknown as Record<string, unknown>);
  }

  /**
   * Stores an accepted notification and adds its VNFC to the VNF's pending batch (open, waiting
   * or held), opening a new batch with deadline `now + windowMs` when there is none. Atomic:
   * either both are stored or neither is.
   *
   * The common case (no waiting or held batch) is ONE statement: an upsert on the "one open
   * batch per VNF" index plus the ledger insert, so the intake costs little database time. A
   * batch claimed for firing meanwhile is no longer "open": the upsert then opens a new batch.
   * A VNF whose batch waits (busy VNF, FAILED_TEMP op) packs into that batch, in a transaction.
   */
  async pack(n: NotificationInput & { vnfcInfoId: string; vnfcResourceInfoId: string }, windowMs: number): Promise<PackResult> {
    // A waiting/held batch can appear or go between the two paths (claims, releases): try again.
    for (let i = 0; i < 5; i++) {
      const r = (await this.packIntoOpen(n, windowMs)) ?? (await this.packIntoPending(n));
      if (r) return r;
    }
    throw vnfmError('VNFM_ERR_INTERNAL', `could not pack the fault notification of VNF instance ${n.vnfInstanceId}; retry`);
  }

  /**
   * Stores a whole group of validated notifications in ONE statement (group commit): every
   * notification row, and one upsert per VNF of its open batch with the group's new targets and
   * count. The statement is atomic, so when it returns every notification of the group is stored
   * and packed, and none of them is when it fails. This is what makes the intake cheap on a
   * single database session: the cost is per group, not per notification.
   *
   * Notifications of a VNF whose batch is waiting or held are then packed one by one into that
   * batch ({@link pack}, rare). When the group statement fails (a row the database refuses, a
   * deadlock with another process), every item is retried alone so each gets its own outcome.
   * Never throws; outcomes are in the order of `items`.
   */
  async packGroup(items: readonly GroupItem[], windowMs: number): Promise<GroupOutcome[]> {
    if (items.length === 0) return [];
    const ids = items.map(() => randomUUID());
    let rows: { vnf: string; batch_id: string; deadline: Date | string; opened: boolean }[];
    try {
      rows = await this.packGroupStatement(items, ids, windowMs);
    } catch {
      return Promise.all(items.map((it) => this.storeAlone(it, windowMs)));
    }
    const byVnf = new Map(rows.map((r) => [r.vnf, r]));
    return Promise.all(
      items.map(async (it, i): Promise<GroupOutcome> => {
        if (it.kind === 'ignore') return { kind: 'ignored', notificationId: ids[i] as string };
        const r = byVnf.get(it.input.vnfInstanceId);
        if (r) return { kind: 'packed', notificationId: ids[i] as string, batchId: r.batch_id, deadline: iso(r.deadline) as string, opened: r.opened === true };
        // The VNF has a waiting or held batch: pack into it.
        return this.storeAlone(it, windowMs);
      }),
    );
  }

  /** One item of a group on its own (the per-notification paths). */
  private async storeAlone(it: GroupItem, windowMs: number): Promise<GroupOutcome> {
    try {
      if (it.kind === 'ignore') return { kind: 'ignored', notificationId: (await this.recordIgnored(it.input, it.reason)).id };
      const r = await this.pack(it.input, windowMs);
      return { kind: 'packed', notificationId: r.notification.id, batchId: r.batch.id, deadline: r.batch.deadline, opened: r.opened };
    } catch (error) {
      return { kind: 'error', error };
    }
  }

  private async packGroupStatement(items: readonly GroupItem[], ids: readonly string[], windowMs: number) {
    const rows = items.map((it, ord) => {
      const n = it.input;
      return {
        ord,
        id: ids[ord],
        vnf: n.vnfInstanceId,
        server_id: n.serverId,
        alarm_id: n.alarmId,
        fault_id: n.faultId,
        fault_type: n.faultType,
        host_id: n.hostId ?? null,
        fault_option: n.faultOption ?? null,
        vnfc_info_id: n.vnfcInfoId ?? null,
        vnfc_resource_info_id: n.vnfcResourceInfoId ?? null,
        received_by: n.receivedBy,
        ignored: it.kind === 'ignore' ? it.reason : null,
      };
    });
    // One call of the group statement (migration 101_autoheal_intake): rows of VNFs packed here.
    const res = await sql<{ o_vnf: string; o_batch_id: string; o_deadline: Date | string; o_opened: boolean }>`
      select * from autoheal_pack_group(${JSON.stringify(rows)}::jsonb, ${windowMs / 1000}::float8, ${new Date().toISOString()}::text)`.execute(this.db);
    return res.rows.map((r) => ({ vnf: r.o_vnf, batch_id: r.o_batch_id, deadline: r.o_deadline, opened: r.o_opened }));
  }

  /** The one-statement path: upsert the open batch and insert the notification; undefined when the VNF has a waiting/held batch. */
  private async packIntoOpen(n: NotificationInput & { vnfcInfoId: string; vnfcResourceInfoId: string }, windowMs: number): Promise<PackResult | undefined> {
    const target = { vnfcInfoId: n.vnfcInfoId, vnfcResourceInfoId: n.vnfcResourceInfoId, serverId: n.serverId };
    const probe = json([{ vnfcInfoId: n.vnfcInfoId, serverId: n.serverId }]);
    const v = this.notificationValues(n, 'packed', null, null);
    const res = await sql<Record<string, unknown>>`
      with b as (
        insert into autoheal_batch as ab (id, vnf_instance_id, status, deadline, targets, notification_count, notes)
        select ${randomUUID()}, ${n.vnfInstanceId}, 'open', now() + make_interval(secs => ${windowMs / 1000}::float8), ${json([target])}::jsonb, 1,
               ${json([note(`opened by a fault notification for server ${n.serverId}`)])}::jsonb
        -- a VNF with a batch waiting for it (busy, held) packs into that one instead (below)
        where not exists (select 1 from autoheal_batch w where w.vnf_instance_id = ${n.vnfInstanceId} and w.status in ('waiting', 'held'))
        on conflict (vnf_instance_id) where status = 'open' do update set
          targets = case when ab.targets @> ${probe}::jsonb then ab.targets else ab.targets || ${json([target])}::jsonb end,
          notification_count = ab.notification_count + 1,
          updated_at = now()
        returning ab.*, (xmax = 0) as opened
      ), n as (
        insert into fault_notification (id, vnf_instance_id, server_id, alarm_id, fault_id, fault_type, host_id, fault_option, vnfc_info_id, vnfc_resource_info_id, status, reason, batch_id, received_by)
        select ${v.id}, ${v.vnf_instance_id}, ${v.server_id}, ${v.alarm_id}, ${v.fault_id}, ${v.fault_type}, ${v.host_id}, ${v.fault_option}::jsonb, ${v.vnfc_info_id}, ${v.vnfc_resource_info_id}, 'packed',
          -- sub-statements see the batch as it was before this statement: was the VNFC already in it?
          case when exists (select 1 from autoheal_batch p where p.id = b.id and p.targets @> ${probe}::jsonb) then 'duplicate: the VNFC is already in the batch' end,
          b.id, ${v.received_by}
        from b
        returning *
      )
      select row_to_json(b.*) as batch, row_to_json(n.*) as notification from b, n`.execute(this.db);
    const row = res.rows[0] as { batch: Record<string, unknown>; notification: Record<string, unknown> } | undefined;
    if (row) return { notification: notificationFromRow(row.notification), batch: batchFromRow(row.batch), opened: row.batch.opened === true };
    return undefined;
  }

  /** Adds a notification to the VNF's waiting or held batch; undefined when there is none any more. */
  private async packIntoPending(n: NotificationInput & { vnfcInfoId: string; vnfcResourceInfoId: string }): Promise<PackResult | undefined> {
    return this.db.transaction().execute(async (tx) => {
      const batchRow = (await tx
        .selectFrom('autoheal_batch')
        .selectAll()
        .where('vnf_instance_id', '=', n.vnfInstanceId)
        .where('status', 'in', ['waiting', 'held'])
        .orderBy('created_at')
        .limit(1)
        .forUpdate()
        .executeTakeFirst()) as Record<string, unknown> | undefined;
      if (!batchRow) return undefined;
      const targets = (batchRow.targets as BatchTarget[]) ?? [];
      const known = targets.some((t) => t.vnfcInfoId === n.vnfcInfoId && t.serverId === n.serverId);
      const nextTargets = known ? targets : [...targets, { vnfcInfoId: n.vnfcInfoId, vnfcResourceInfoId: n.vnfcResourceInfoId, serverId: n.serverId }];
      const updated = await tx
        .updateTable('autoheal_batch')
        .set((eb) => ({ targets: json(nextTargets), notification_count: eb('notification_count', '+', 1), updated_at: sql<Date>`now()` }))
        .where('id', '=', batchRow.id as string)
        .returningAll()
        .executeTakeFirstOrThrow();
      const reason = known ? 'duplicate: the VNFC is already in the batch' : `packed into a ${String(batchRow.status)} batch`;
      const nrow = await tx.insertInto('fault_notification').values(this.notificationValues(n, 'packed', reason, batchRow.id as string)).returningAll().executeTakeFirstOrThrow();
      return { notification: notificationFromRow(nrow as unknown as Record<string, unknown>), batch: batchFromRow(updated as unknown as Record<string, unknown>), opened: false };
    });
  }

  /** Notifications, newest first. */
  async listNotifications(q: LedgerQuery = {}): Promise<FaultNotificationRecord[]> {
    let s = this.db.selectFrom('fault_notification').selectAll().orderBy('received_at', 'desc').orderBy('id').limit(q.limit ?? 1000);
    if (q.vnfInstanceId) s = s.where('vnf_instance_id', '=', q.vnfInstanceId);
    if (q.status) s = s.where('status', '=', q.status);
    if (q.batchId) s = s.where('batch_id', '=', q.batchId);
    return (await s.execute()).map((r) => notificationFromRow(r as unknown as Record<string, unknown>));
  }

  /** One notification or 404. */
  async getNotification(id: string): Promise<FaultNotificationRecord> {
    const r = await this.db.selectFrom('fault_notification').selectAll().where('id', '=', id).executeTakeFirst();
    if (!r) throw vnfmError('VNFM_ERR_FAULT_NOT_FOUND', `fault notification ${id} not found`);
    return notificationFromRow(r as unknown as Record<string, unknown>);
  }

  /** Batches, newest first. */
  async listBatches(q: LedgerQuery = {}): Promise<HealBatchRecord[]> {
    let s = this.db.selectFrom('autoheal_batch').selectAll().orderBy('created_at', 'desc').orderBy('id').limit(q.limit ?? 1000);
    if (q.vnfInstanceId) s = s.where('vnf_instance_id', '=', q.vnfInstanceId);
    if (q.status) s = s.where('status', '=', q.status);
    return (await s.execute()).map((r) => batchFromRow(r as unknown as Record<string, unknown>));
  }

  /** One batch or 404. */
  async getBatch(id: string, db: Db = this.db): Promise<HealBatchRecord> {
    const r = await db.selectFrom('autoheal_batch').selectAll().where('id', '=', id).executeTakeFirst();
    if (!r) throw vnfmError('VNFM_ERR_FAULT_NOT_FOUND', `heal batch ${id} not found`);
    return batchFromRow(r as unknown as Record<string, unknown>);
  }

  /** Notifications of a batch, oldest first. */
  async notificationsOf(batchId: string, db: Db = this.db): Promise<FaultNotificationRecord[]> {
    const rows = await db.selectFrom('fault_notification').selectAll().where('batch_id', '=', batchId).orderBy('received_at').orderBy('id').execute();
    return rows.map((r) => notificationFromRow(r as unknown as Record<string, unknown>));
  }

  /**
   * Operator release of a suppressed or held batch: it becomes due at once and skips the storm
   * guard. Other states are a 409 (nothing to release).
   */
  async release(id: string, by = 'operator'): Promise<HealBatchRecord> {
    return this.db.transaction().execute(async (tx) => {
      const r = await tx.selectFrom('autoheal_batch').select(['id', 'status']).where('id', '=', id).forUpdate().executeTakeFirst();
      if (!r) throw vnfmError('VNFM_ERR_FAULT_NOT_FOUND', `heal batch ${id} not found`);
      if (r.status !== 'suppressed' && r.status !== 'held') {
        throw vnfmError('VNFM_ERR_API_CONFLICT', `heal batch ${id} is ${r.status}; only suppressed or held batches can be released`);
      }
      await tx
        .updateTable('autoheal_batch')
        .set({
          status: 'waiting',
          released: true,
          reason: null,
          reason_code: null,
          next_attempt_at: sql<Date>`now()`,
          updated_at: sql<Date>`now()`,
          notes: sql`notes || ${json([note(`released by ${by} (was ${r.status}); the storm guard is skipped for this batch`)])}::jsonb`,
        })
        .where('id', '=', id)
        .execute();
      await tx.updateTable('fault_notification').set({ status: 'packed', reason: 'released by operator', updated_at: sql<Date>`now()` }).where('batch_id', '=', id).where('status', '=', 'suppressed').execute();
      return this.getBatch(id, tx);
    });
  }

  /**
   * Voids the claims (leases) of batches held by any other owner: with the embedded database only
   * this process can use the data, so such claims belong to a process that died (e.g. killed just
   * after a packing deadline). Their batches become claimable at once instead of after the lease.
   * Returns the ids of the batches whose claim was voided.
   */
  async voidForeignClaims(owner: string): Promise<string[]> {
    const res = await sql<{ id: string }>`
      update autoheal_batch set lease_until = now() - interval '1 millisecond', updated_at = now()
      where status = 'firing' and lease_owner is distinct from ${owner} and lease_until >= now()
      returning id`.execute(this.db);
    return res.rows.map((r) => r.id);
  }

  /**
   * Claims up to `limit` due batches for `owner`: open ones past their deadline, waiting ones
   * past their next attempt, and firing ones whose claimer's lease expired (crashed process).
   * One statement with `FOR UPDATE SKIP LOCKED`: two processes never claim the same batch.
   */
  async claimDue(owner: string, leaseMs: number, limit: number): Promise<ClaimedBatch[]> {
    const res = await sql<Record<string, unknown>>`
      update autoheal_batch set status = 'firing', lease_owner = ${owner},
        lease_until = now() + make_interval(secs => ${leaseMs / 1000}::float8),
        attempts = attempts + 1, updated_at = now(), fired_at = coalesce(fired_at, now())
      where id in (
        select id from autoheal_batch
        where (status = 'open' and deadline <= now())
           or (status = 'waiting' and next_attempt_at <= now())
           or (status = 'firing' and lease_until < now())
        order by deadline
        limit ${limit}
        for update skip locked)
      returning *`.execute(this.db);
    return res.rows.map((r) => ({ ...batchFromRow(r), leaseOwner: owner }));
  }

  /**
   * Applies a state change to a batch this process claimed, with the matching notification
   * updates, in one transaction. Returns false when the claim was lost (lease expired and another
   * process took the batch over): then nothing is written.
   */
  async settleClaimed(
    b: ClaimedBatch,
    change: {
      status: BatchStatus;
      reason?: string | null;
      reasonCode?: string | null;
      notes?: BatchNote[];
      opOccId?: string;
      healedVnfcIds?: string[];
      nextAttemptInMs?: number;
      /** Status of the batch's notifications that are still packed. */
      notifications?: { status: NotificationStatus; reason?: string | null };
      /** Per-notification changes (e.g. a dropped target). */
      perNotification?: { id: string; status: NotificationStatus; reason: string }[];
    },
  ): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const set: Record<string, unknown> = {
        status: change.status,
        reason: change.reason ?? null,
        reason_code: change.reasonCode ?? null,
        lease_owner: null,
        lease_until: null,
        updated_at: sql<Date>`now()`,
      };
      if (change.notes?.length) set.notes = sql`notes || ${json(change.notes)}::jsonb`;
      if (change.opOccId) {
        set.op_occ_id = change.opOccId;
        set.op_state = 'STARTING';
      }
      if (change.healedVnfcIds) set.healed_vnfc_ids = json(change.healedVnfcIds);
      if (change.nextAttemptInMs !== undefined) set.next_attempt_at = sql<Date>`now() + make_interval(secs => ${change.nextAttemptInMs / 1000}::float8)`;
      if (['done', 'failed', 'dropped'].includes(change.status)) set.finished_at = sql<Date>`now()`;
      const r = await tx.updateTable('autoheal_batch').set(set as never).where('id', '=', b.id).where('status', '=', 'firing').where('lease_owner', '=', b.leaseOwner).executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return false;
      for (const p of change.perNotification ?? []) {
        await tx.updateTable('fault_notification').set({ status: p.status, reason: p.reason, updated_at: sql<Date>`now()` }).where('id', '=', p.id).execute();
      }
      if (change.notifications) {
        await tx
          .updateTable('fault_notification')
          .set({ status: change.notifications.status, reason: change.notifications.reason ?? null, updated_at: sql<Date>`now()` })
          .where('batch_id', '=', b.id)
          .where('status', 'in', ['new', 'packed', 'suppressed'])
          .execute();
      }
      return true;
    });
  }

  /**
   * Moves healing / failed batches to the state their heal op occ is in now (COMPLETED -> done;
   * FAILED_TEMP, FAILED, ROLLED_BACK or vanished -> failed; back to healing when a failed op is
   * retried). Returns the batches that changed.
   */
  async followHeals(vnfInstanceId?: string): Promise<{ id: string; status: BatchStatus; opState: string | null; previous: BatchStatus }[]> {
    const res = await sql<{ id: string; status: BatchStatus; seen: string | null; op_state: string | null }>`
      select b.id, b.status, b.op_state as seen, o.operation_state as op_state
      from autoheal_batch b left join op_occ o on o.id = b.op_occ_id
      where b.status in ('healing', 'failed') and b.op_occ_id is not null
        ${vnfInstanceId ? sql`and b.vnf_instance_id = ${vnfInstanceId}` : sql``}
        and o.operation_state is distinct from b.op_state`.execute(this.db);
    const changed: { id: string; status: BatchStatus; opState: string | null; previous: BatchStatus }[] = [];
    for (const r of res.rows) {
      const opState = r.op_state;
      const target: BatchStatus = opState === 'COMPLETED' ? 'done' : opState === null || ['FAILED', 'FAILED_TEMP', 'ROLLED_BACK'].includes(opState) ? 'failed' : 'healing';
      const reason =
        target !== 'failed'
          ? null
          : opState === null
            ? 'the heal op occ no longer exists'
            : opState === 'FAILED_TEMP'
              ? 'the heal op occ is FAILED_TEMP: retry or fail it'
              : `the heal op occ ended ${opState}`;
      const ok = await this.db.transaction().execute(async (tx) => {
        const u = await tx
          .updateTable('autoheal_batch')
          .set({
            status: target,
            reason,
            reason_code: target === 'failed' ? `op_${(opState ?? 'gone').toLowerCase()}` : null,
            op_state: opState,
            updated_at: sql<Date>`now()`,
            finished_at: target === 'healing' ? null : sql<Date>`now()`,
            ...(target !== r.status ? { notes: sql`notes || ${json([note(`heal op occ is ${opState ?? 'gone'}`)])}::jsonb` } : {}),
          } as never)
          .where('id', '=', r.id)
          .where('status', '=', r.status)
          .where(sql<boolean>`op_state is not distinct from ${r.seen}`)
          .executeTakeFirst();
        if (Number(u.numUpdatedRows) !== 1) return false;
        await tx
          .updateTable('fault_notification')
          .set({ status: target === 'done' ? 'done' : target === 'failed' ? 'failed' : 'healing', reason, updated_at: sql<Date>`now()` })
          .where('batch_id', '=', r.id)
          .where('status', 'in', ['healing', 'failed', 'done'])
          .execute();
        return true;
      });
      if (ok && target !== r.status) changed.push({ id: r.id, status: target, opState, previous: r.status });
    }
    return changed;
  }

  /**
   * Held batches whose VNF no longer has a FAILED_TEMP operation become due again (the operator
   * resolved it with retry or fail). Returns how many were resumed.
   */
  async resumeHeld(): Promise<number> {
    const r = await sql`
      update autoheal_batch b set status = 'waiting', next_attempt_at = now(), updated_at = now(), reason = null, reason_code = null,
        notes = b.notes || ${json([note('the FAILED_TEMP operation was resolved; batch resumed')])}::jsonb
      where b.status = 'held' and not exists (
        select 1 from op_occ o where o.vnf_instance_id = b.vnf_instance_id and o.operation_state = 'FAILED_TEMP')`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }

  /** Makes the waiting batches of a VNF due now (its blocking operation just ended). */
  async wakeWaiting(vnfInstanceId: string): Promise<number> {
    const r = await this.db
      .updateTable('autoheal_batch')
      .set({ next_attempt_at: sql<Date>`now()` })
      .where('vnf_instance_id', '=', vnfInstanceId)
      .where('status', '=', 'waiting')
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** When the next batch becomes due (open deadline or waiting retry), or undefined. */
  async nextDue(): Promise<Date | undefined> {
    const r = await sql<{ at: Date | null }>`
      select min(t) as at from (
        select min(deadline) as t from autoheal_batch where status = 'open'
        union all select min(next_attempt_at) from autoheal_batch where status = 'waiting'
        union all select min(lease_until) from autoheal_batch where status = 'firing') x`.execute(this.db);
    const at = r.rows[0]?.at;
    return at ? new Date(at) : undefined;
  }

  /** The heal op occ created for a batch, found by its origin (the batch's idempotency key, unique). */
  async findHealOf(b: Pick<HealBatchRecord, 'id'>): Promise<string | undefined> {
    const r = await this.db.selectFrom('op_occ').select('id').where('origin', '=', batchOrigin(b.id)).executeTakeFirst();
    return r?.id;
  }

  /**
   * Automatic heals per vnfcInfo id of a VNF since `sinceMs` ago (from the op occs themselves, so
   * it counts what really ran, whichever process started it).
   */
  async recentAutoHeals(vnfInstanceId: string, sinceMs: number): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom('op_occ')
      .select(['operation_params'])
      .where('vnf_instance_id', '=', vnfInstanceId)
      .where('operation', '=', 'HEAL')
      .where('is_automatic_invocation', '=', true)
      .where('start_time', '>=', new Date(Date.now() - sinceMs))
      .execute();
    const out = new Map<string, number>();
    for (const r of rows) {
      const ids = (r.operation_params as { vnfcInstanceId?: unknown }).vnfcInstanceId;
      if (!Array.isArray(ids)) continue;
      for (const id of new Set(ids.filter((x): x is string => typeof x === 'string'))) out.set(id, (out.get(id) ?? 0) + 1);
    }
    return out;
  }

  /** vnfcInfo ids in suppressed (not released) batches of a VNF created within `sinceMs`. */
  async recentlySuppressedTargets(vnfInstanceId: string, sinceMs: number, exceptBatchId: string): Promise<Set<string>> {
    const rows = await this.db
      .selectFrom('autoheal_batch')
      .select(['targets'])
      .where('vnf_instance_id', '=', vnfInstanceId)
      .where('status', '=', 'suppressed')
      .where('id', '!=', exceptBatchId)
      .where('created_at', '>=', new Date(Date.now() - sinceMs))
      .execute();
    const out = new Set<string>();
    for (const r of rows) for (const t of r.targets as BatchTarget[]) out.add(t.vnfcInfoId);
    return out;
  }
}

/** The origin (idempotency key) of a batch's heal op occ: at most one heal per batch, ever. */
export function batchOrigin(batchId: string): string {
  return `autoheal-batch:${batchId}`;
}

/** The `cause` of a batch's heal starts with this (for people; the link is {@link batchOrigin}). */
export function healCausePrefix(batchId: string): string {
  return `auto-heal: batch ${batchId}`;
}
