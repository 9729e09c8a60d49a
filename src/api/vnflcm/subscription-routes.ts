/**
 * HTTP side of notifications: the SOL `/subscriptions` resources inside each VNF LCM facade, a
 * read-only view of the outbox for operators (`/vnfm/v1/notifications`), and the one-call wiring
 * ({@link setupNotifications}) that start-up code and tests use.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { vnfmError } from '../../errors.ts';
import { DeliveryWorker, OUTBOX_STATUS } from '../../notify/delivery.ts';
import { type SubscriptionApiVersion, type SubscriptionRecord, SubscriptionService, lccnSubscriptionRequestSchema } from '../../notify/subscriptions.ts';
import type { AppContext } from '../context.ts';
import { sendList } from '../sol/list.ts';
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

/**
 * Adds `POST/GET /subscriptions` and `GET/DELETE /subscriptions/:id` to the facade plugin `r`
 * (so the facade's Version header rules and ProblemDetails handling apply).
 */
export async function registerSubscriptionRoutes(r: FastifyInstance, ctx: AppContext & { subscriptions: SubscriptionService }, v: SubscriptionApiVersion): Promise<void> {
  const base = () => `${ctx.config.publicUrl}/vnflcm/${v}/subscriptions`;
  const tags = [`vnflcm ${v}`];

  r.post('/subscriptions', { schema: { body: lccnSubscriptionRequestSchema(v), tags } }, async (req, reply) => {
    const { subscription, created } = await ctx.subscriptions.create(req.body, v);
    const location = `${base()}/${subscription.id}`;
    if (!created) return reply.code(303).header('location', location).send();
    reply.code(201).header('location', location);
    return subscriptionToApi(subscription, v, ctx.config.publicUrl);
  });

  r.get('/subscriptions', { schema: { tags } }, async (req, reply) => {
    const items = (await ctx.subscriptions.list(v)).map((s) => subscriptionToApi(s, v, ctx.config.publicUrl));
    return sendList(req, reply, items, { defaultExcluded: [], pageSize: ctx.config.pageSize, baseUrl: base(), knownAttributes: SUBSCRIPTION_ATTRS });
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

/** The registrar to push into `ctx.lcmRoutes`, so both facades get the subscription resources. */
export function subscriptionLcmRoutes(ctx: AppContext & { subscriptions: SubscriptionService }): (r: FastifyInstance, v: 'v1' | 'v2') => Promise<void> {
  return (r, v) => registerSubscriptionRoutes(r, ctx, v);
}

const OutboxQuery = Type.Object(
  {
    status: Type.Optional(Type.Enum([OUTBOX_STATUS.PENDING, OUTBOX_STATUS.DELIVERED, OUTBOX_STATUS.DEAD])),
    subscriptionId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  },
  { additionalProperties: false },
);

/**
 * `GET /vnfm/v1/notifications` (product extension, read-only): the outbox rows, newest first, so
 * an operator can see what is waiting, what was delivered and why a notification died. Query:
 * `status` (PENDING | DELIVERED | DEAD), `subscriptionId`, `limit` (default 1000, max 10000).
 */
export async function registerOutboxRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get('/vnfm/v1/notifications', { schema: { querystring: OutboxQuery, tags: ['vnfm'] } }, async (req) => {
    const q = req.query as { status?: string; subscriptionId?: string; limit?: string };
    const limit = q.limit === undefined ? 1000 : Number(q.limit);
    if (limit < 1 || limit > 10_000) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'limit must be between 1 and 10000');
    let query = ctx.store.db
      .selectFrom('outbox')
      .select(['id', 'subscription_id', 'notification', 'status', 'attempts', 'last_error', 'next_attempt_at', 'created_at', 'delivered_at'])
      .orderBy('id', 'desc')
      .limit(limit);
    if (q.status) query = query.where('status', '=', q.status);
    if (q.subscriptionId) query = query.where('subscription_id', '=', q.subscriptionId);
    const rows = await query.execute();
    return rows.map((r) => ({
      id: String(r.id),
      subscriptionId: r.subscription_id,
      notificationId: r.notification.id ?? null,
      notificationType: r.notification.notificationType ?? null,
      status: r.status,
      attempts: r.attempts,
      lastError: r.last_error,
      nextAttemptAt: r.status === OUTBOX_STATUS.PENDING ? new Date(r.next_attempt_at).toISOString() : null,
      createdAt: new Date(r.created_at).toISOString(),
      deliveredAt: r.delivered_at ? new Date(r.delivered_at).toISOString() : null,
    }));
  });
}

/** What {@link setupNotifications} built. */
export interface NotificationServices {
  subscriptions: SubscriptionService;
  worker: DeliveryWorker;
}

/**
 * Builds the subscription service and the delivery worker over the context and registers their
 * routes (`ctx.lcmRoutes`, `ctx.extraRoutes`). Must run before `buildApp(ctx)`. The worker is not
 * started here: call `worker.start()` once the server runs and `await worker.stop()` at shutdown.
 */
export function setupNotifications(ctx: AppContext, opts: { concurrency?: number; pollMs?: number } = {}): NotificationServices {
  const subscriptions = new SubscriptionService(ctx.store.db, ctx.box, ctx.config, ctx.log);
  const worker = new DeliveryWorker({ db: ctx.store.db, box: ctx.box, config: ctx.config, log: ctx.log, metrics: ctx.metrics, ...opts });
  const withSubs = { ...ctx, subscriptions };
  ctx.lcmRoutes ??= [];
  ctx.extraRoutes ??= [];
  ctx.lcmRoutes.push(subscriptionLcmRoutes(withSubs));
  ctx.extraRoutes.push((app) => registerOutboxRoutes(app, ctx));
  return { subscriptions, worker };
}
