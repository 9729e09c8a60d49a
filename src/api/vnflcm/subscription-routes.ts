/**
 * HTTP side of notifications: the SOL `/subscriptions` resources inside each VNF LCM facade, the
 * operator's view of the outbox (`/vnfm/v1/notifications`: list, one row, redelivery of DEAD rows
 * one by one or per subscription). The services come from `ctx.notifications` (built by
 * src/notify/setup.ts). Subscription credentials never appear in these answers.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import { vnfmError } from '../../errors.ts';
import { type DeliveryWorker, OUTBOX_STATUS } from '../../notify/delivery.ts';
import { type SubscriptionApiVersion, type SubscriptionRecord, type SubscriptionService, lccnSubscriptionRequestSchema } from '../../notify/subscriptions.ts';
import type { OutboxTable } from '../../store/schema.ts';
import type { AppContext } from '../../core/services.ts';
import { sql } from 'kysely';
import { subscriptionFromRow } from '../../notify/subscriptions.ts';
import { projectOf, tenantWhere } from '../auth/index.ts';
import { type SqlListSpec, sendSqlList } from '../sol/sql-list.ts';

/** A list spec limited to what the caller may see (src/api/auth/tenant.ts). */
function withTenant(spec: SqlListSpec, req: FastifyRequest): SqlListSpec {
  return { ...spec, where: [...(spec.where ?? []), ...tenantWhere(req)] };
}
import { IdParams } from './schemas.ts';

const SUBSCRIPTION_ATTRS = ['id', 'filter', 'callbackUri', 'verbosity', '_links'];

/** The LccnSubscription body of a stored subscription (credentials are never part of it, per SOL). */
export function subscriptionToApi(s: SubscriptionRecord, v: SubscriptionApiVersion, publicUrl: string): Record<string, unknown> {
  return {
    id: s.id,
    ...(s.filter ? { filter: s.filter } : {}),
    callbackUri: s.callbackUri,
    ...(v === 'v2' ? { verbosity: s.verbosity } : {}),
    _links: { self: { href: `${publicUrl}/vnflcm/${v}/subscriptions/${s.id}` } },
  };
}

/** `/vnflcm/{v}/subscriptions` listed in SQL (src/api/sol/sql-list.ts), oldest first; credentials are never read. */
export function subscriptionListSpec(v: SubscriptionApiVersion, publicUrl: string): SqlListSpec {
  return {
    collection: `vnflcm/${v}/subscriptions`,
    table: 'subscription',
    orderColumn: 'created_at',
    orderDir: 'asc',
    columns: ['id', 'api_version', 'callback_uri', 'filter', 'verbosity', 'auth_types', 'created_at'],
    attrs: {
      id: { column: 'id', type: 'text' },
      callbackUri: { column: 'callback_uri', type: 'text' },
      ...(v === 'v2' ? { verbosity: { column: 'verbosity', type: 'text' } as const } : {}),
    },
    // the filter is shown as stored: nested filters decided in SQL (src/api/sol/json-filter.ts)
    jsonAttrs: { filter: { expr: sql.ref('filter') } },
    presence: { filter: sql<boolean>`coalesce(jsonb_typeof(filter), 'null') <> 'null'`, ...(v === 'v1' ? { verbosity: sql<boolean>`false` } : {}) },
    where: [sql<boolean>`api_version = ${v}`],
    toApi: (row) => subscriptionToApi(subscriptionFromRow(row as never), v, publicUrl),
  };
}

/**
 * Adds `POST/GET /subscriptions` and `GET/DELETE /subscriptions/:id` to the facade plugin `r`
 * (so the facade's Version header rules and ProblemDetails handling apply).
 */
export async function registerSubscriptionRoutes(r: FastifyInstance, ctx: AppContext & { subscriptions: SubscriptionService }, v: SubscriptionApiVersion): Promise<void> {
  const base = () => `${ctx.config.publicUrl}/vnflcm/${v}/subscriptions`;
  const tags = [`vnflcm ${v}`];

  r.post('/subscriptions', { schema: { body: lccnSubscriptionRequestSchema(v), tags } }, async (req, reply) => {
    const { subscription, created } = await ctx.subscriptions.create(req.body, v, projectOf(req));
    const location = `${base()}/${subscription.id}`;
    if (!created) return reply.code(303).header('location', location).send();
    reply.code(201).header('location', location);
    return subscriptionToApi(subscription, v, ctx.config.publicUrl);
  });

  r.get('/subscriptions', { schema: { tags } }, async (req, reply) => {
    return sendSqlList(req, reply, ctx.store.db, withTenant(subscriptionListSpec(v, ctx.config.publicUrl), req), { defaultExcluded: [], pageSize: ctx.config.pageSize, baseUrl: base(), knownAttributes: SUBSCRIPTION_ATTRS });
  });

  r.get('/subscriptions/:id', { schema: { params: IdParams, tags } }, async (req) => {
    const { id } = req.params as { id: string };
    return subscriptionToApi(await ctx.subscriptions.get(id, v), v, ctx.config.publicUrl);
  });

  r.delete('/subscriptions/:id', { schema: { params: IdParams, tags } }, async (req, reply) => {
    const { id } = req.params as { id: string };
    await ctx.subscriptions.delete(id, v);
    return reply.code(204).send();
  });
}

const STATUS_VALUES = [OUTBOX_STATUS.PENDING, OUTBOX_STATUS.DELIVERED, OUTBOX_STATUS.DEAD];
const OutboxQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    /** Alias of `status`: `state=dead`. */
    state: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    subscriptionId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  },
  { additionalProperties: false },
);
const RowParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

const OUTBOX_COLUMNS = ['id', 'seq', 'subscription_id', 'notification', 'status', 'attempts', 'last_error', 'next_attempt_at', 'failing_since', 'dead_at', 'created_at', 'delivered_at'] as const;
type OutboxRow = Pick<Selectable<OutboxTable>, (typeof OUTBOX_COLUMNS)[number]>;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The operator's view of one outbox row (`withBody`: the notification as sent). */
function outboxView(r: OutboxRow, publicUrl: string, withBody = false): Record<string, unknown> {
  const self = `${publicUrl}/vnfm/v1/notifications/${r.id}`;
  return {
    id: String(r.id),
    // delivery order within the subscription (commit order); null until the worker has seen the row
    sequence: r.seq === null ? null : String(r.seq),
    subscriptionId: r.subscription_id,
    notificationId: r.notification.id ?? null,
    notificationType: r.notification.notificationType ?? null,
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error,
    nextAttemptAt: r.status === OUTBOX_STATUS.PENDING ? iso(r.next_attempt_at) : null,
    failingSince: r.status === OUTBOX_STATUS.DELIVERED ? null : iso(r.failing_since),
    deadAt: iso(r.dead_at),
    createdAt: iso(r.created_at),
    deliveredAt: iso(r.delivered_at),
    ...(withBody ? { notification: r.notification } : {}),
    _links: { self: { href: self }, ...(r.status === OUTBOX_STATUS.DEAD ? { redeliver: { href: `${self}/redeliver` } } : {}) },
  };
}

/** An outbox row id from the path, or undefined when it cannot be one (then: 404). */
function rowId(raw: string): number | undefined {
  return /^[0-9]{1,15}$/.test(raw) ? Number(raw) : undefined;
}

/**
 * The operator's outbox API (product extension, `/vnfm/v1`):
 * - `GET /vnfm/v1/notifications`: rows, newest first. Query `status` or `state` (PENDING |
 *   DELIVERED | DEAD, any case), `subscriptionId`, `limit` (default 1000, max 10000).
 * - `GET /vnfm/v1/notifications/{id}`: one row with the notification body.
 * - `POST /vnfm/v1/notifications/{id}/redeliver`: a DEAD row back to PENDING (202); 404 unknown,
 *   409 not DEAD (or its subscription was deleted).
 * - `POST /vnfm/v1/subscriptions/{id}/redeliver`: every DEAD row of a subscription (202); 404
 *   unknown subscription, 409 nothing DEAD.
 */
export async function registerOutboxRoutes(app: FastifyInstance, ctx: AppContext, worker: DeliveryWorker): Promise<void> {
  const getRow = async (id: number): Promise<OutboxRow | undefined> => ctx.store.db.selectFrom('outbox').select([...OUTBOX_COLUMNS]).where('id', '=', id).executeTakeFirst();
  const notFound = (raw: string) => vnfmError('VNFM_ERR_API_NOT_FOUND', `notification ${raw} not found in the outbox`);

  app.get('/vnfm/v1/notifications', { schema: { querystring: OutboxQuery, tags: ['vnfm'], summary: 'Notification outbox (newest first); state=dead lists what was given up' } }, async (req) => {
    const q = req.query as { status?: string; state?: string; subscriptionId?: string; limit?: string };
    const limit = q.limit === undefined ? 1000 : Number(q.limit);
    if (limit < 1 || limit > 10_000) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'limit must be between 1 and 10000');
    const wanted = (q.status ?? q.state)?.toUpperCase();
    if (q.status && q.state && q.status.toUpperCase() !== q.state.toUpperCase()) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'status and state are the same filter; give one');
    if (wanted !== undefined && !STATUS_VALUES.includes(wanted as (typeof STATUS_VALUES)[number])) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `${q.status !== undefined ? 'status' : 'state'} must be one of pending, delivered, dead (any case)`);
    let query = ctx.store.db.selectFrom('outbox').select([...OUTBOX_COLUMNS]).orderBy('id', 'desc').limit(limit);
    if (wanted) query = query.where('status', '=', wanted);
    if (q.subscriptionId) query = query.where('subscription_id', '=', q.subscriptionId);
    for (const w of tenantWhere(req, 's.project')) query = query.where(({ exists, selectFrom }) => exists(selectFrom('subscription as s').select('s.id').whereRef('s.id', '=', 'outbox.subscription_id').where(w)));
    return (await query.execute()).map((r) => outboxView(r, ctx.config.publicUrl));
  });

  app.get('/vnfm/v1/notifications/:id', { schema: { params: RowParams, tags: ['vnfm'], summary: 'One outbox row, with the notification as sent' } }, async (req) => {
    const raw = (req.params as { id: string }).id;
    const id = rowId(raw);
    const row = id === undefined ? undefined : await getRow(id);
    if (!row) throw notFound(raw);
    return outboxView(row, ctx.config.publicUrl, true);
  });

  app.post('/vnfm/v1/notifications/:id/redeliver', { schema: { params: RowParams, tags: ['vnfm'], summary: 'Deliver a DEAD notification again (it goes first in its subscription queue)' } }, async (req, reply) => {
    const raw = (req.params as { id: string }).id;
    const id = rowId(raw);
    if (id === undefined) throw notFound(raw);
    await worker.redeliver(id);
    req.log.info({ outboxId: id }, 'dead notification redelivered by operator');
    const row = await getRow(id);
    reply.code(202);
    return row ? outboxView(row, ctx.config.publicUrl) : {};
  });

  app.post('/vnfm/v1/subscriptions/:id/redeliver', { schema: { params: RowParams, tags: ['vnfm'], summary: 'Deliver every DEAD notification of a subscription again, in their order' } }, async (req, reply) => {
    const subscriptionId = (req.params as { id: string }).id;
    const ids = await worker.redeliverSubscription(subscriptionId);
    req.log.info({ subscriptionId, rows: ids.length }, 'dead notifications of a subscription redelivered by operator');
    reply.code(202);
    return { subscriptionId, redelivered: ids.length, notifications: ids.map((i) => ({ id: String(i), _links: { self: { href: `${ctx.config.publicUrl}/vnfm/v1/notifications/${i}` } } })) };
  });
}
