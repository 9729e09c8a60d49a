/**
 * The VNFC health model (`/vnfm/v1`, docs/health.md), read-only:
 * - `GET /vnfm/v1/vnfc_health`: every VNFC's condition, oldest row first; simple query filters
 *   `vnfInstanceId` and `condition`, the SOL013 `filter`, attribute selectors and paging like the
 *   other `/vnfm/v1` lists;
 * - `GET /vnfm/v1/vnf_instances/{id}/health`: one instance's VNFCs and their worst condition.
 * Tenant scoping: a caller sees the rows of its project's instances (the row's `project`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type RawBuilder, sql } from 'kysely';
import { Type } from 'typebox';
import type { AppContext } from '../../core/services.ts';
import { vnfmError } from '../../errors.ts';
import type { HealthHandle } from '../../health/health-plugin.ts';
import { healthFromRow, type VnfcHealthRecord } from '../../health/health-store.ts';
import { HEALTH_CONDITIONS, type HealthCondition } from '../../model/vnfc-health.ts';
import { tenantWhere } from '../auth/index.ts';
import { type SqlListSpec, sendSqlList } from '../sol/sql-list.ts';

/** Base path of the health API. */
export const HEALTH_API_BASE = '/vnfm/v1';

const ListQuery = Type.Object(
  {
    vnfInstanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    condition: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  },
  { additionalProperties: true },
);
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

const COLUMNS = ['id', 'vnf_instance_id', 'vnfc_info_id', 'vnfc_resource_info_id', 'vdu_id', 'resource_id', 'resource_kind', 'vim_connection_id', 'condition', 'reason', 'detail', 'source', 'since', 'observed_at', 'updated_at', 'reported_at', 'created_at'];

/** Worst first: the instance's condition is the worst of its VNFCs'. */
const SEVERITY: Record<HealthCondition, number> = { faulty: 3, degraded: 2, unknown: 1, healthy: 0 };

/** The condition of a set of VNFCs: the worst one (`unknown` for none). */
export function worstCondition(rows: readonly Pick<VnfcHealthRecord, 'condition'>[]): HealthCondition {
  let worst: HealthCondition | undefined;
  for (const r of rows) if (worst === undefined || SEVERITY[r.condition] > SEVERITY[worst]) worst = r.condition;
  return worst ?? 'unknown';
}

/** The simple query filters as SQL conditions; a condition that does not exist is a 400. */
function queryWhere(req: FastifyRequest): RawBuilder<boolean>[] {
  const q = req.query as { vnfInstanceId?: string; condition?: string };
  const out: RawBuilder<boolean>[] = [];
  if (q.vnfInstanceId) out.push(sql<boolean>`vnf_instance_id = ${q.vnfInstanceId}`);
  if (q.condition !== undefined) {
    if (!(HEALTH_CONDITIONS as readonly string[]).includes(q.condition)) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `condition must be one of ${HEALTH_CONDITIONS.join(', ')}`);
    out.push(sql<boolean>`condition = ${q.condition}`);
  }
  return out;
}

/** The list of VNFC health rows (created_at, id). */
export function healthSpec(where: RawBuilder<boolean>[], links: (r: VnfcHealthRecord) => unknown): SqlListSpec {
  return {
    collection: 'vnfm/v1/vnfc_health',
    table: 'vnfc_health',
    orderColumn: 'created_at',
    orderDir: 'asc',
    columns: COLUMNS,
    attrs: {
      vnfInstanceId: { column: 'vnf_instance_id', type: 'text' },
      vnfcInfoId: { column: 'vnfc_info_id', type: 'text' },
      vnfcResourceInfoId: { column: 'vnfc_resource_info_id', type: 'text' },
      vduId: { column: 'vdu_id', type: 'text' },
      resourceId: { column: 'resource_id', type: 'text' },
      resourceKind: { column: 'resource_kind', type: 'text' },
      vimConnectionId: { column: 'vim_connection_id', type: 'text' },
      condition: { column: 'condition', type: 'text' },
      reason: { column: 'reason', type: 'text' },
      detail: { column: 'detail', type: 'text' },
      source: { column: 'source', type: 'text' },
      since: { column: 'since', type: 'time' },
      observedAt: { column: 'observed_at', type: 'time' },
      updatedAt: { column: 'updated_at', type: 'time' },
      reportedAt: { column: 'reported_at', type: 'time' },
    },
    where,
    toApi: (row) => {
      const r = healthFromRow(row);
      return { ...r, _links: links(r) } as unknown as Record<string, unknown>;
    },
  };
}

/** Registers the health API routes. */
export function healthRoutes(ctx: AppContext, health: HealthHandle): (app: FastifyInstance) => Promise<void> {
  const links = (r: Pick<VnfcHealthRecord, 'vnfInstanceId'>) => ({
    vnfInstance: { href: `${ctx.config.publicUrl}/vnflcm/v2/vnf_instances/${r.vnfInstanceId}` },
    health: { href: `${ctx.config.publicUrl}${HEALTH_API_BASE}/vnf_instances/${r.vnfInstanceId}/health` },
  });
  return async (app) => {
    await app.register(
      async (r) => {
        r.get('/vnfc_health', { schema: { querystring: ListQuery, tags: ['health'], summary: 'The health of every VNFC (filters: vnfInstanceId, condition, SOL013 filter)' } }, async (req, reply) => {
          return sendSqlList(req, reply, ctx.store.db, healthSpec([...queryWhere(req), ...tenantWhere(req)], links), { defaultExcluded: [], pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}${HEALTH_API_BASE}/vnfc_health` });
        });
        r.get('/vnf_instances/:id/health', { schema: { params: IdParams, tags: ['health'], summary: "The health of a VNF instance's VNFCs and their worst condition" } }, async (req) => {
          const inst = await ctx.instances.get((req.params as { id: string }).id);
          const vnfcs = await health.store.ofInstance(inst.id);
          return { vnfInstanceId: inst.id, instantiationState: inst.instantiationState, condition: worstCondition(vnfcs), vnfcs, _links: links({ vnfInstanceId: inst.id }) };
        });
      },
      { prefix: HEALTH_API_BASE },
    );
  };
}
