/**
 * Shared pieces of the notification tests: a recording HTTP receiver (notification consumer and
 * OAuth2 token endpoint), a VNFM with the notification module wired in, and event helpers.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { ConfigInput } from '../../src/config.ts';
import type { NotificationServices } from '../../src/notify/setup.ts';
import type { InstanceFacts, LcmEvent } from '../../src/notify/notifier.ts';
import type { Store } from '../../src/store/db.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';

/** One request the receiver got. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: Record<string, unknown> | undefined;
}

/** Decides the answer to one request; return a status (and optional JSON body). */
export type Handler = (r: Received) => number | { status: number; body?: unknown } | Promise<number | { status: number; body?: unknown }>;

/** A local HTTP server standing in for a notification consumer. */
export interface Receiver {
  url: string;
  port: number;
  requests: Received[];
  /** Per-path handlers; the default answers 204 to everything. */
  handlers: Map<string, Handler>;
  /** Notification POSTs to `path` (parsed bodies), in arrival order. */
  posts(path: string): Record<string, unknown>[];
  /** Stops listening (connections are dropped) - the consumer is "down". */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a receiver on an ephemeral port of 127.0.0.1 (or on `port`). */
export async function startReceiver(port = 0): Promise<Receiver> {
  const requests: Received[] = [];
  const handlers = new Map<string, Handler>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = body ? (JSON.parse(body) as Record<string, unknown>) : undefined;
      } catch {
        parsed = undefined;
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const r: Received = { method: req.method ?? '', path, headers: req.headers, body, json: parsed };
      requests.push(r);
      const h = handlers.get(path);
      const out = h ? await h(r) : 204;
      const o = typeof out === 'number' ? { status: out } : out;
      if (o.body !== undefined) {
        res.writeHead(o.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(o.body));
      } else {
        res.writeHead(o.status);
        res.end();
      }
    });
  };
  let server: Server = createServer(handle);
  const listen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, '127.0.0.1', () => {
        const a = server.address();
        resolve(a && typeof a === 'object' ? a.port : p);
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  const actual = await listen(port);
  let listening = true;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    requests,
    handlers,
    posts: (path) => requests.filter((r) => r.method === 'POST' && r.path === path).map((r) => r.json ?? {}),
    async down() {
      if (!listening) return;
      listening = false;
      await stop();
    },
    async up() {
      if (listening) return;
      server = createServer(handle);
      await listen(actual);
      listening = true;
    },
    async close() {
      if (!listening) return;
      listening = false;
      await stop();
    },
  };
}

/** A VNFM with subscriptions and the (not started) delivery worker. */
export interface NotifyVnfm extends TestVnfm {
  notify: NotificationServices;
}

/** Starts a test VNFM with the notification module; the delivery worker is left stopped. */
export async function notifyVnfm(opts: { config?: ConfigInput; listen?: boolean; store?: Store; concurrency?: number; pollMs?: number } = {}): Promise<NotifyVnfm> {
  const vnfm = await testVnfm({
    ...(opts.config ? { config: opts.config } : {}),
    ...(opts.listen ? { listen: true } : {}),
    ...(opts.store ? { store: opts.store } : {}),
    modules: { notifications: { manual: true, ...(opts.concurrency ? { concurrency: opts.concurrency } : {}), ...(opts.pollMs ? { pollMs: opts.pollMs } : {}) } },
  });
  const notify = vnfm.ctx.notifications;
  if (!notify) throw new Error('notification module was not set up');
  return Object.assign(vnfm, { notify });
}

/** Instance facts for events that do not need a real instance. */
export function facts(over: Partial<InstanceFacts> = {}): InstanceFacts {
  return { id: randomUUID(), vnfInstanceName: 'vnf-a', vnfdId: 'vnfd-1', vnfProvider: 'Acme', vnfProductName: 'Router', vnfSoftwareVersion: '1.0', vnfdVersion: '1.0', ...over };
}

/** An op occ notification event (PROCESSING, RESULT) of `instance`. */
export function opEvent(instance: InstanceFacts, operationState = 'PROCESSING', operation = 'HEAL'): LcmEvent {
  return { kind: 'VnfLcmOperationOccurrenceNotification', instance, opOccId: randomUUID(), operation, operationState, notificationStatus: operationState === 'STARTING' ? 'START' : 'RESULT', isAutomaticInvocation: false };
}

/** Calls `drainOnce` until it finds nothing due (or `maxRounds`); returns the attempts made. */
export async function drainAll(n: { worker: { drainOnce(): Promise<number> } }, maxRounds = 100): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxRounds; i++) {
    const k = await n.worker.drainOnce();
    if (k === 0) break;
    total += k;
  }
  return total;
}

/** Polls `cond` every 20 ms until true or `ms` elapsed. */
export async function waitFor(cond: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

/** v2 request headers. */
export const V2 = { version: '2.0.0', 'content-type': 'application/json' };
