/**
 * The operator's view of auto-heal (`/vnfm/v1`): the fault notification ledger and the heal
 * batches, read-only, plus the one action an operator needs: releasing a batch that the storm
 * guard suppressed or that a FAILED_TEMP operation holds. Lists accept simple query filters
 * (`vnfInstanceId`, `status`, `batchId`) and the SOL013 `filter`, attribute selectors and paging.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../api/context.ts';
import { sendList } from '../api/sol/list.ts';
import type { HealBatcher } from './batcher.ts';
import type { FaultLedger } from './ledger.ts';

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

type Q = { vnfInstanceId?: string; status?: string; batchId?: string; limit?: string };

function ledgerQuery(req: FastifyRequest) {
  const q = req.query as Q;
  return { vnfInstanceId: q.vnfInstanceId, status: q.status, batchId: q.batchId, limit: q.limit ? Math.min(100_000, Number(q.limit)) : 10_000 };
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
          const items = await ledger.listNotifications(ledgerQuery(req));
          return sendList(req, reply, items as unknown as Record<string, unknown>[], { defaultExcluded: [], pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}${AUTOHEAL_API_BASE}/fault_notifications` });
        });
        r.get('/fault_notifications/:id', { schema: { params: IdParams, tags: ['auto-heal'] } }, async (req) => ledger.getNotification((req.params as { id: string }).id));
        r.get('/heal_batches', { schema: { querystring: ListQuery, tags: ['auto-heal'], summary: 'Heal batches (newest first)' } }, async (req, reply) => {
          const items = (await ledger.listBatches(ledgerQuery(req))).map((b) => ({ ...b, _links: links(b) }));
          return sendList(req, reply, items as unknown as Record<string, unknown>[], { defaultExcluded: [], pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}${AUTOHEAL_API_BASE}/heal_batches` });
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
