/**
 * The durable VNFC health model (table `vnfc_health`, src/store/migrations/health.ts): one row per
 * VNFC of an instantiated VNF, keyed by (vnf instance, vnfcResourceInfo id).
 *
 * - {@link HealthStore.apply} writes observations in one transaction and returns the condition
 *   changes (old -> new); `since` (when the condition began) is kept while the same condition of
 *   the same resource is observed again, so it survives restarts; a change of condition or of the
 *   VNFC's resource (a heal replaced it) starts a new episode (`since` = the observation's time,
 *   `reported_at` cleared). Observations older than the stored one are ignored. Each change is
 *   written to the event feed (`event_log`, `VnfcHealthChanged`) in the same transaction.
 * - {@link HealthStore.reconcile} keeps the rows in line with the instances: rows of instances no
 *   longer INSTANTIATED and of VNFCs that are gone are deleted, new VNFCs get an `unknown` row.
 * - Sustained faults: {@link HealthStore.unreportedFaults}, {@link HealthStore.claimReport}.
 */
import { type Kysely, sql } from 'kysely';
import type { HealthCondition, HealthSource, WatchedResourceKind } from '../model/vnfc-health.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';

/** Name of the event written to the event feed when a VNFC's condition changes. */
export const VNFC_HEALTH_CHANGED = 'VnfcHealthChanged';
/** Reason of a row whose VNFC was not observed yet. */
export const NOT_OBSERVED = 'NotObserved';
/** Reason of a row whose observations are held while an LCM operation of its instance runs. */
export const OPERATION_IN_PROGRESS = 'operation in progress';

/** A VNFC of an instance, as the monitor maps VIM resources to it. */
export interface VnfcRef {
  vnfInstanceId: string;
  /** Project of the instance (tenant scoping of the API and the event feed). */
  project: string | null;
  /** The vnfcInfo id, or the vnfcResourceInfo id when the instance has no vnfcInfo for it. */
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  vduId: string;
  /** `computeResource.resourceId`: a server id, a pod name. */
  resourceId: string;
  vimConnectionId?: string;
}

/** What is known of one VNFC. */
export interface HealthObservation {
  ref: VnfcRef;
  condition: HealthCondition;
  reason: string;
  detail?: string;
  source: HealthSource;
  kind?: WatchedResourceKind;
  observedAt: Date;
}

/** A condition change written by {@link HealthStore.apply}. */
export interface HealthChange {
  ref: VnfcRef;
  /** null: the VNFC had no row yet. */
  oldCondition: HealthCondition | null;
  newCondition: HealthCondition;
  reason: string;
  source: HealthSource;
  since: Date;
  observedAt: Date;
}

/** One row of the model, as the API shows it. */
export interface VnfcHealthRecord {
  vnfInstanceId: string;
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  vduId: string;
  resourceId: string;
  resourceKind: WatchedResourceKind | null;
  vimConnectionId: string | null;
  condition: HealthCondition;
  reason: string;
  detail: string | null;
  source: HealthSource;
  since: string;
  observedAt: string;
  updatedAt: string;
  /** When the fault episode was handed to the sustained fault callback. */
  reportedAt: string | null;
}

/** A faulty VNFC whose episode was not reported yet, with the instance's override (seconds) if any. */
export interface UnreportedFault {
  record: VnfcHealthRecord;
  unhealthyFor: unknown;
}

const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : iso(v));

/** The row id: one VNFC of one instance. */
export const rowId = (vnfInstanceId: string, vnfcResourceInfoId: string): string => `${vnfInstanceId}/${vnfcResourceInfoId}`;

/** Builds the API record of a `vnfc_health` row. */
export function healthFromRow(r: Record<string, unknown>): VnfcHealthRecord {
  return {
    vnfInstanceId: String(r.vnf_instance_id),
    vnfcInfoId: String(r.vnfc_info_id),
    vnfcResourceInfoId: String(r.vnfc_resource_info_id),
    vduId: String(r.vdu_id),
    resourceId: String(r.resource_id),
    resourceKind: (r.resource_kind ?? null) as WatchedResourceKind | null,
    vimConnectionId: (r.vim_connection_id ?? null) as string | null,
    condition: r.condition as HealthCondition,
    reason: String(r.reason ?? ''),
    detail: (r.detail ?? null) as string | null,
    source: r.source as HealthSource,
    since: iso(r.since),
    observedAt: iso(r.observed_at),
    updatedAt: iso(r.updated_at),
    reportedAt: isoOrNull(r.reported_at),
  };
}

interface StoredRow {
  id: string;
  condition: HealthCondition;
  resource_id: string;
  since: Date | string;
  observed_at: Date | string;
  reported_at: Date | string | null;
}

/** Reads and writes `vnfc_health`. */
export class HealthStore {
  constructor(readonly db: Kysely<Database>) {}

  /** Writes observations (one transaction) and returns the condition changes, oldest first. */
  async apply(observations: readonly HealthObservation[]): Promise<HealthChange[]> {
    if (observations.length === 0) return [];
    return this.db.transaction().execute(async (tx) => {
      const ids = [...new Set(observations.map((o) => rowId(o.ref.vnfInstanceId, o.ref.vnfcResourceInfoId)))];
      const rows = await sql<StoredRow>`
        select id, condition, resource_id, since, observed_at, reported_at from vnfc_health
        where id in (${sql.join(ids)}) for update`.execute(tx);
      const stored = new Map(rows.rows.map((r) => [r.id, r]));
      const instanceIds = [...new Set(observations.map((o) => o.ref.vnfInstanceId))];
      const live = new Set((await sql<{ id: string }>`select id from vnf_instance where id in (${sql.join(instanceIds)})`.execute(tx)).rows.map((r) => r.id));
      const changes: HealthChange[] = [];
      for (const o of observations) {
        const id = rowId(o.ref.vnfInstanceId, o.ref.vnfcResourceInfoId);
        const old = stored.get(id);
        // older than what is stored of the same resource (a replaced resource starts afresh)
        if (old && old.resource_id === o.ref.resourceId && new Date(old.observed_at).getTime() > o.observedAt.getTime()) continue;
        const sameEpisode = old !== undefined && old.resource_id === o.ref.resourceId && old.condition === o.condition;
        const since = sameEpisode ? new Date(old.since) : o.observedAt;
        const reportedAt = sameEpisode && old.reported_at !== null ? new Date(old.reported_at) : null;
        const r = o.ref;
        if (!live.has(r.vnfInstanceId)) continue; // deleted meanwhile
        await sql`
          insert into vnfc_health (id, vnf_instance_id, project, vnfc_info_id, vnfc_resource_info_id, vdu_id, resource_id, resource_kind,
            vim_connection_id, condition, reason, detail, source, since, observed_at, reported_at, updated_at)
          values (${id}, ${r.vnfInstanceId}, ${r.project}, ${r.vnfcInfoId}, ${r.vnfcResourceInfoId}, ${r.vduId}, ${r.resourceId}, ${o.kind ?? null},
            ${r.vimConnectionId ?? null}, ${o.condition}, ${o.reason}, ${o.detail ?? null}, ${o.source}, ${since}, ${o.observedAt}, ${reportedAt}, now())
          on conflict (vnf_instance_id, vnfc_resource_info_id) do update set
            project = excluded.project, vnfc_info_id = excluded.vnfc_info_id, vdu_id = excluded.vdu_id, resource_id = excluded.resource_id,
            resource_kind = coalesce(excluded.resource_kind, vnfc_health.resource_kind), vim_connection_id = excluded.vim_connection_id,
            condition = excluded.condition, reason = excluded.reason, detail = excluded.detail, source = excluded.source,
            since = excluded.since, observed_at = excluded.observed_at, reported_at = excluded.reported_at, updated_at = now()`.execute(tx);
        stored.set(id, { id, condition: o.condition, resource_id: r.resourceId, since, observed_at: o.observedAt, reported_at: reportedAt });
        const oldCondition = old?.condition ?? null;
        if (oldCondition === o.condition || (oldCondition === null && o.condition === 'unknown')) continue;
        const change: HealthChange = { ref: r, oldCondition, newCondition: o.condition, reason: o.reason, source: o.source, since, observedAt: o.observedAt };
        changes.push(change);
        await sql`insert into event_log (project, vnf_instance_id, event) values (${r.project}, ${r.vnfInstanceId}, ${json(changeEvent(change))}::jsonb)`.execute(tx);
      }
      return changes;
    });
  }

  /** Notes on the rows of these VNFCs that their observations are held (condition and since unchanged). */
  async hold(refs: readonly VnfcRef[]): Promise<void> {
    if (refs.length === 0) return;
    const ids = refs.map((r) => rowId(r.vnfInstanceId, r.vnfcResourceInfoId));
    await sql`update vnfc_health set reason = ${OPERATION_IN_PROGRESS}, updated_at = now() where id in (${sql.join(ids)}) and reason <> ${OPERATION_IN_PROGRESS}`.execute(this.db);
  }

  /**
   * Aligns the rows with the current VNFCs: deletes the rows of instances that are not
   * INSTANTIATED, and, for the instances in `vnfcs`, the rows of VNFCs they no longer have; VNFCs
   * without a row, or whose resource changed, get an `unknown` (`NotObserved`) row. Returns the
   * changes (a replaced resource's row going back to unknown).
   */
  async reconcile(vnfcs: readonly VnfcRef[], now: Date): Promise<HealthChange[]> {
    await sql`delete from vnfc_health h where not exists (select 1 from vnf_instance i where i.id = h.vnf_instance_id and i.instantiation_state = 'INSTANTIATED')`.execute(this.db);
    const instanceIds = [...new Set(vnfcs.map((v) => v.vnfInstanceId))];
    if (instanceIds.length === 0) return [];
    const rows = await sql<{ id: string; resource_id: string }>`select id, resource_id from vnfc_health where vnf_instance_id in (${sql.join(instanceIds)})`.execute(this.db);
    const want = new Map(vnfcs.map((v) => [rowId(v.vnfInstanceId, v.vnfcResourceInfoId), v]));
    const gone = rows.rows.filter((r) => !want.has(r.id)).map((r) => r.id);
    if (gone.length > 0) await sql`delete from vnfc_health where id in (${sql.join(gone)})`.execute(this.db);
    const have = new Map(rows.rows.map((r) => [r.id, r.resource_id]));
    const fresh = [...want.entries()].filter(([id, v]) => have.get(id) !== v.resourceId).map(([, v]) => v);
    return this.apply(fresh.map((ref) => ({ ref, condition: 'unknown', reason: NOT_OBSERVED, source: 'vim-watch', observedAt: now })));
  }

  /** The rows of one instance, by VDU and VNFC. */
  async ofInstance(vnfInstanceId: string): Promise<VnfcHealthRecord[]> {
    const r = await sql<Record<string, unknown>>`select * from vnfc_health where vnf_instance_id = ${vnfInstanceId} order by vdu_id, vnfc_info_id, vnfc_resource_info_id`.execute(this.db);
    return r.rows.map(healthFromRow);
  }

  /** Rows by filter (tests, tools; the API pages with its own list). */
  async list(filter: { vnfInstanceId?: string; condition?: HealthCondition } = {}): Promise<VnfcHealthRecord[]> {
    const where = [sql<boolean>`true`];
    if (filter.vnfInstanceId !== undefined) where.push(sql<boolean>`vnf_instance_id = ${filter.vnfInstanceId}`);
    if (filter.condition !== undefined) where.push(sql<boolean>`condition = ${filter.condition}`);
    const r = await sql<Record<string, unknown>>`select * from vnfc_health where ${sql.join(where, sql` and `)} order by created_at, id`.execute(this.db);
    return r.rows.map(healthFromRow);
  }

  /** Faulty VNFCs whose episode was not handed to the sustained fault callback yet. */
  async unreportedFaults(): Promise<UnreportedFault[]> {
    const r = await sql<Record<string, unknown>>`
      select h.*, i.vnf_configurable_properties -> 'unhealthyFor' as unhealthy_for
      from vnfc_health h join vnf_instance i on i.id = h.vnf_instance_id
      where h.condition = 'faulty' and h.reported_at is null and i.instantiation_state = 'INSTANTIATED'
      order by h.since`.execute(this.db);
    return r.rows.map((row) => ({ record: healthFromRow(row), unhealthyFor: row.unhealthy_for ?? undefined }));
  }

  /** Marks a fault episode reported; false when it is no longer the same unreported episode (another process, a change). */
  async claimReport(rec: Pick<VnfcHealthRecord, 'vnfInstanceId' | 'vnfcResourceInfoId' | 'since'>, at: Date): Promise<boolean> {
    const r = await sql`
      update vnfc_health set reported_at = ${at}
      where id = ${rowId(rec.vnfInstanceId, rec.vnfcResourceInfoId)} and condition = 'faulty' and reported_at is null and since = ${new Date(rec.since)}`.execute(this.db);
    return Number(r.numAffectedRows ?? 0) === 1;
  }

  /** Undoes {@link claimReport} (the callback failed: the next sweep tries again). */
  async unclaimReport(rec: Pick<VnfcHealthRecord, 'vnfInstanceId' | 'vnfcResourceInfoId' | 'since'>): Promise<void> {
    await sql`update vnfc_health set reported_at = null where id = ${rowId(rec.vnfInstanceId, rec.vnfcResourceInfoId)} and since = ${new Date(rec.since)}`.execute(this.db);
  }

  /** Rows per condition (every condition present, 0 when none). */
  async counts(): Promise<Record<HealthCondition, number>> {
    const r = await sql<{ condition: HealthCondition; n: string | number }>`select condition, count(*) as n from vnfc_health group by condition`.execute(this.db);
    const out: Record<HealthCondition, number> = { healthy: 0, degraded: 0, faulty: 0, unknown: 0 };
    for (const row of r.rows) if (row.condition in out) out[row.condition] = Number(row.n);
    return out;
  }
}

/** The event feed's body of a change. */
export function changeEvent(c: HealthChange): Record<string, unknown> {
  return {
    notificationType: VNFC_HEALTH_CHANGED,
    timeStamp: new Date().toISOString(),
    vnfInstanceId: c.ref.vnfInstanceId,
    vnfcInfoId: c.ref.vnfcInfoId,
    vnfcResourceInfoId: c.ref.vnfcResourceInfoId,
    vduId: c.ref.vduId,
    resourceId: c.ref.resourceId,
    oldCondition: c.oldCondition,
    newCondition: c.newCondition,
    reason: c.reason,
    source: c.source,
    since: c.since.toISOString(),
  };
}
