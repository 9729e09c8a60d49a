/**
 * The operator's view of auto-heal (`/vnfm/v1`): the fault notification ledger and the heal
 * batches, read-only, plus the one action an operator needs: releasing a batch that the storm
 * guard suppressed or that a FAILED_TEMP operation holds. Lists accept simple query filters
 * (`vnfInstanceId`, `status`, `batchId`) and the SOL013 `filter`, attribute selectors and paging.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type RawBuilder, sql } from 'kysely';
import { Type } from 'typebox';
import type { AppContext } from '../../core/services.ts';
import { tenantWhere } from '../auth/index.ts';
import { type SqlListSpec, sendSqlList } from '../sol/sql-list.ts';
import type { HealBatcher } from '../../autoheal/batcher.ts';
import { type FaultLedger, batchFromRow, notificationFromRow } from '../../autoheal/ledger.ts';

/** Base path of the auto-heal API. */
export const AUTOHEAL_API_BASE = '/vnfm/v1';

const ListQuery = Type.Object(
  {
    vnfInstanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    status: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    batchId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  },
  { additionalProperties: true },
);
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

type Q = { vnfInstanceId?: string; status?: string; batchId?: string };

/** The legacy equality query parameters as fixed SQL conditions (`limit` is the uniform page size). */
function legacyWhere(req: FastifyRequest, batchIdColumn: boolean): RawBuilder<boolean>[] {
  const q = req.query as Q;
  const out: RawBuilder<boolean>[] = [];
  if (q.vnfInstanceId) out.push(sql<boolean>`vnf_instance_id = ${q.vnfInstanceId}`);
  if (q.status) out.push(sql<boolean>`status = ${q.status}`);
  if (q.batchId && batchIdColumn) out.push(sql<boolean>`batch_id = ${q.batchId}`);
  return out;
}

const NOTIFICATION_COLUMNS = ['id', 'vnf_instance_id', 'server_id', 'alarm_id', 'fault_id', 'fault_type', 'host_id', 'fault_option', 'vnfc_info_id', 'vnfc_resource_info_id', 'status', 'reason', 'batch_id', 'received_by', 'received_at', 'updated_at'];
const BATCH_COLUMNS = ['id', 'vnf_instance_id', 'status', 'reason', 'reason_code', 'targets', 'healed_vnfc_ids', 'notes', 'notification_count', 'deadline', 'next_attempt_at', 'attempts', 'released', 'op_occ_id', 'created_at', 'updated_at', 'fired_at', 'finished_at'];

/** Fault notifications, newest first (received_at desc, id). */
export function notificationSpec(where: RawBuilder<boolean>[]): SqlListSpec {
  return {
    collection: 'vnfm/v1/fault_notifications',
    table: 'fault_notification',
    orderColumn: 'received_at',
    orderDir: 'desc',
    columns: NOTIFICATION_COLUMNS,
    attrs: {
      id: { column: 'id', type: 'text' },
      vnfInstanceId: { column: 'vnf_instance_id', type: 'text' },
      serverId: { column: 'server_id', type: 'text' },
      alarmId: { column: 'alarm_id', type: 'text' },
      faultId: { column: 'fault_id', type: 'text' },
      faultType: { column: 'fault_type', type: 'text' },
      hostId: { column: 'host_id', type: 'text' },
      vnfcInstanceId: { column: 'vnfc_info_id', type: 'text' },
      vnfcResourceInfoId: { column: 'vnfc_resource_info_id', type: 'text' },
      status: { column: 'status', type: 'text' },
      reason: { column: 'reason', type: 'text' },
      batchId: { column: 'batch_id', type: 'text' },
      receivedBy: { column: 'received_by', type: 'text' },
      receivedAt: { column: 'received_at', type: 'time' },
      updatedAt: { column: 'updated_at', type: 'time' },
    },
    // shown as stored: nested filters decided in SQL (src/api/sol/json-filter.ts)
    jsonAttrs: { faultOption: { expr: sql.ref('fault_option') } },
    where,
    toApi: (row) => notificationFromRow(row) as unknown as Record<string, unknown>,
  };
}

/** Heal batches, newest first (created_at desc, id). */
export function batchSpec(where: RawBuilder<boolean>[], links: (b: { id: string; vnfInstanceId: string; vnfLcmOpOccId?: string | null }) => unknown): SqlListSpec {
  return {
    collection: 'vnfm/v1/heal_batches',
    table: 'autoheal_batch',
    orderColumn: 'created_at',
    orderDir: 'desc',
    columns: BATCH_COLUMNS,
    attrs: {
      id: { column: 'id', type: 'text' },
      vnfInstanceId: { column: 'vnf_instance_id', type: 'text' },
      status: { column: 'status', type: 'text' },
      reason: { column: 'reason', type: 'text' },
      reasonCode: { column: 'reason_code', type: 'text' },
      vnfLcmOpOccId: { column: 'op_occ_id', type: 'text' },
      released: { column: 'released', type: 'bool' },
      deadline: { column: 'deadline', type: 'time' },
      nextAttemptAt: { column: 'next_attempt_at', type: 'time' },
      createdAt: { column: 'created_at', type: 'time' },
      updatedAt: { column: 'updated_at', type: 'time' },
      firedAt: { column: 'fired_at', type: 'time' },
      finishedAt: { column: 'finished_at', type: 'time' },
    },
    // shown as stored, an absent (null) list as []: nested filters decided in SQL (src/api/sol/json-filter.ts)
    jsonAttrs: {
      targets: { expr: sql`coalesce(targets, '[]'::jsonb)` },
      healedVnfcInstanceIds: { expr: sql`coalesce(healed_vnfc_ids, '[]'::jsonb)` },
      notes: { expr: sql`coalesce(notes, '[]'::jsonb)` },
    },
    where,
    toApi: (row) => {
      const b = batchFromRow(row);
      return { ...b, _links: links(b) } as unknown as Record<string, unknown>;
    },
  };
}

/** Registers the auto-heal API routes. */
export function ledgerRoutes(ctx: AppContext, ledger: FaultLedger, batcher: HealBatcher): (app: FastifyInstance) => Promise<void> {
  const links = (b: { id: string; vnfInstanceId: string; vnfLcmOpOccId?: string | null }) => ({
    self: { href: `${ctx.config.publicUrl}${AUTOHEAL_API_BASE}/heal_batches/${b.id}` },
    vnfInstance: { href: `${ctx.config.publicUrl}/vnflcm/v2/vnf_instances/${b.vnfInstanceId}` },
    ...(b.vnfLcmOpOccId ? { vnfLcmOpOcc: { href: `${ctx.config.publicUrl}/vnflcm/v2/vnf_lcm_op_occs/${b.vnfLcmOpOccId}` } } : {}),
  });
  return async (app) => {
    await app.register(
      async (r) => {
        r.get('/fault_notifications', { schema: { querystring: ListQuery, tags: ['auto-heal'], summary: 'Fault notification ledger (newest first)' } }, async (req, reply) => {
          return sendSqlList(req, reply, ctx.store.db, notificationSpec([...legacyWhere(req, true), ...tenantWhere(req)]), { defaultExcluded: [], pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}${AUTOHEAL_API_BASE}/fault_notifications` });
        });
        r.get('/fault_notifications/:id', { schema: { params: IdParams, tags: ['auto-heal'] } }, async (req) => ledger.getNotification((req.params as { id: string }).id));
        r.get('/heal_batches', { schema: { querystring: ListQuery, tags: ['auto-heal'], summary: 'Heal batches (newest first)' } }, async (req, reply) => {
          return sendSqlList(req, reply, ctx.store.db, batchSpec([...legacyWhere(req, false), ...tenantWhere(req)], links), { defaultExcluded: [], pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}${AUTOHEAL_API_BASE}/heal_batches` });
        });
        r.get('/heal_batches/:id', { schema: { params: IdParams, tags: ['auto-heal'], summary: 'One heal batch with its notifications' } }, async (req) => {
          const b = await ledger.getBatch((req.params as { id: string }).id);
          return { ...b, notifications: await ledger.notificationsOf(b.id), _links: links(b) };
        });
        r.post('/heal_batches/:id/release', { schema: { params: IdParams, tags: ['auto-heal'], summary: 'Release a suppressed or held batch (heals it, skipping the storm guard)' } }, async (req, reply) => {
          const b = await ledger.release((req.params as { id: string }).id);
          req.log.info({ batchId: b.id, vnfInstanceId: b.vnfInstanceId }, 'auto-heal batch released by operator');
          batcher.kick();
          reply.code(202);
          return { ...b, _links: links(b) };
        });
      },
      { prefix: AUTOHEAL_API_BASE },
    );
  };
}
