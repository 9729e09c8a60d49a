/**
 * Builds the notification module of a VNFM: the subscription service and the delivery worker.
 * Their routes (the SOL `/subscriptions` resources and the operator's outbox API) live in
 * src/api/vnflcm/subscription-routes.ts and are served from `Services.notifications`.
 */
import { readFileSync } from 'node:fs';
import type { BaseServices } from '../core/base-services.ts';
import { fetchByPrefixTls } from '../net/tls-fetch.ts';
import { DeliveryWorker } from './delivery.ts';
import { SubscriptionService } from './subscriptions.ts';

/** What {@link createNotifications} built. */
export interface NotificationServices {
  subscriptions: SubscriptionService;
  worker: DeliveryWorker;
}

/** Options of {@link createNotifications} beyond the config (tests). */
export interface NotificationOptions {
  concurrency?: number;
  pollMs?: number;
}

/** What the notification module is built over. */
export type NotificationDeps = Pick<BaseServices, 'config' | 'store' | 'log' | 'box' | 'metrics' | 'outbound'>;

/**
 * Builds the subscription service and the delivery worker (which the API serves). The worker is
 * not started here: call `worker.start()` once the server runs and `await worker.stop()` at shutdown.
 */
export function createNotifications(ctx: NotificationDeps, opts: NotificationOptions = {}): NotificationServices {
  // Every callback and token request goes through the outbound rules, checked again at send time
  // and pinned to the checked addresses; https is verified against the CA bundle of its URL prefix
  // (notifications.tls), else notifications.caFile, else the system CAs.
  const n = ctx.config.notifications;
  const read = (setting: string, path: string): string => {
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      throw new Error(`${setting} ${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  };
  const perPrefix = n.tls.map((e, i) => ({ prefix: e.prefix, ca: read(`notifications.tls[${i}].caFile`, e.caFile) }));
  const fetch = ctx.outbound.fetch(fetchByPrefixTls(perPrefix, n.caFile ? { ca: read('notifications.caFile', n.caFile) } : {}));
  const subscriptions = new SubscriptionService(ctx.store.db, ctx.box, ctx.config, ctx.log, { fetch, checkUrl: (u) => ctx.outbound.check(u) });
  const worker = new DeliveryWorker({ db: ctx.store.db, box: ctx.box, config: ctx.config, log: ctx.log, metrics: ctx.metrics, fetch, ...opts });
  return { subscriptions, worker };
}
