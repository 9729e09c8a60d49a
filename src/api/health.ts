/**
 * Probes. Liveness (`/healthz`) says only "the process is alive and its event loop turns": it is
 * answered from the raw HTTP `request` event, before Fastify routes, runs hooks or reads the body,
 * and never touches the database or any queue, so a busy VNFM is not restarted by a probe timeout.
 * Readiness (`/readyz`) checks what serving needs: the database (`select 1` with a short timeout),
 * the op runner (started, its last claim query did not fail) and, when configured, the simulated
 * cloud (its servers accept connections); 200 when all pass, 503 otherwise, each check named.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { sql } from 'kysely';
import { authModes } from '../config.ts';
import type { AppContext } from '../core/services.ts';

/** Paths of the probes. */
export const LIVENESS_PATH = '/healthz';
export const READINESS_PATH = '/readyz';

const LIVENESS_BODY = JSON.stringify({ status: 'ok' });

/** The request path without query string and trailing slash. */
function pathOf(url: string | undefined): string {
  const u = url ?? '';
  const q = u.indexOf('?');
  const p = q === -1 ? u : u.slice(0, q);
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

/** True when `url` is a probe path. */
export function isProbePath(url: string | undefined): boolean {
  const p = pathOf(url);
  return p === LIVENESS_PATH || p === READINESS_PATH;
}

/** The API token a request carries (X-Auth-Token or Bearer), if any (the probes' own check of static tokens). */
export function requestToken(h: IncomingMessage['headers']): string | undefined {
  const x = h['x-auth-token'];
  if (typeof x === 'string') return x;
  return typeof h.authorization === 'string' && h.authorization.startsWith('Bearer ') ? h.authorization.slice(7) : undefined;
}

/**
 * Puts the liveness answer in front of Fastify's own `request` listener on its server: GET/HEAD
 * `/healthz` is answered synchronously there; everything else (other methods, a probe that needs a
 * token and has none) goes to Fastify unchanged. `app.inject` does not pass through the server;
 * the Fastify route registered by the app answers there.
 */
export function installLivenessShortCircuit(server: Server, ctx: AppContext): void {
  const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (listeners.length !== 1) {
    ctx.log.warn({ listeners: listeners.length }, 'liveness short-circuit not installed: unexpected request listeners; /healthz is served by the router');
    return;
  }
  const fastifyHandler = listeners[0] as (req: IncomingMessage, res: ServerResponse) => void;
  server.removeListener('request', fastifyHandler);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && pathOf(req.url) === LIVENESS_PATH && probeAllowed(ctx, req.headers)) {
      // the body (if any) is not read: drain it so the connection stays usable
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(LIVENESS_BODY), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : LIVENESS_BODY);
      return;
    }
    // Until every module started (the simulated cloud's default VIMs registered, the runner
    // claiming), API requests wait; the probes and /metrics are answered at once.
    const startup = ctx.startup;
    if (startup && !startup.done && !isProbePath(req.url) && pathOf(req.url) !== '/metrics') {
      startup.waiting++;
      startup.whenDone.then(
        () => {
          startup.waiting--;
          fastifyHandler.call(server, req, res);
        },
        () => {
          startup.waiting--;
          res.destroy();
        },
      );
      return;
    }
    fastifyHandler.call(server, req, res);
  });
}

/** Whether a probe request may be answered without going through API auth. */
export function probeAllowed(ctx: AppContext, h: IncomingMessage['headers']): boolean {
  if (authModes(ctx.config).includes('none') || ctx.config.health.public) return true;
  // a static token answers here; any other credential goes through the API's authentication
  const t = requestToken(h);
  return t !== undefined && ctx.config.apiTokens.some((x) => (typeof x === 'string' ? x : x.token) === t);
}

/** One readiness check. */
export interface CheckResult {
  status: 'ok' | 'fail';
  detail?: string;
  [k: string]: unknown;
}

/** The readiness answer. */
export interface Readiness {
  status: 'ok' | 'fail';
  checks: Record<string, CheckResult>;
}

/** Rejects after `ms` unless `p` settles first. */
function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Resolves when a TCP connection to `url`'s host and port opens within `ms`. */
function tcpReachable(url: string, ms: number): Promise<void> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve, reject) => {
    const s = connect({ host: u.hostname, port });
    const done = (e?: Error) => {
      clearTimeout(timer);
      s.destroy();
      if (e) reject(e);
      else resolve();
    };
    const timer = setTimeout(() => done(new Error(`no connection within ${ms} ms`)), ms);
    s.once('connect', () => done());
    s.once('error', (e) => done(e));
  });
}

/** Builds the readiness evaluator of a context; concurrent probes share one database query. */
export function readinessChecker(ctx: AppContext): () => Promise<Readiness> {
  let dbInFlight: Promise<void> | undefined;
  const dbPing = (): Promise<void> => {
    // a query stuck behind a blocked database is not repeated by every probe
    dbInFlight ??= sql`select 1`
      .execute(ctx.store.db)
      .then(() => undefined)
      .finally(() => {
        dbInFlight = undefined;
      });
    return dbInFlight;
  };

  async function database(): Promise<CheckResult> {
    const t0 = Date.now();
    try {
      await withTimeout(dbPing(), ctx.config.health.readyTimeoutMs, 'the database');
      return { status: 'ok', kind: ctx.store.kind, ms: Date.now() - t0 };
    } catch (e) {
      return { status: 'fail', kind: ctx.store.kind, detail: e instanceof Error ? e.message : String(e) };
    }
  }

  function runner(): CheckResult {
    const r = ctx.engine?.runner;
    if (!r) return { status: 'fail', detail: 'no op runner in this process' };
    const s = r.status();
    if (!s.running) return { status: 'fail', detail: 'the op runner is not running (starting or stopping)', ...s };
    if (s.lastClaimError) return { status: 'fail', detail: `the op runner's last claim failed: ${s.lastClaimError}`, ...s };
    return { status: 'ok', ...s };
  }

  async function simulator(): Promise<CheckResult> {
    const sim = ctx.simCloud;
    if (!sim) return { status: 'fail', detail: 'the simulated cloud is not started (yet)' };
    const targets = Object.entries({ openstack: sim.openstackUrl, kubernetes: sim.kubernetesUrl, serverNotifier: sim.serverNotifierUrl }).filter((e): e is [string, string] => typeof e[1] === 'string');
    const results = await Promise.all(targets.map(async ([name, url]) => [name, await tcpReachable(url, ctx.config.health.readyTimeoutMs).then(() => 'ok', (e: Error) => `fail: ${e.message}`)] as const));
    const failed = results.filter(([, r]) => r !== 'ok');
    return { status: failed.length === 0 ? 'ok' : 'fail', ...(failed.length ? { detail: failed.map(([n, r]) => `${n} ${r}`).join('; ') } : {}), servers: Object.fromEntries(results) };
  }

  return async () => {
    const checks: Record<string, CheckResult> = {};
    if (ctx.startup && !ctx.startup.done) checks.startup = { status: 'fail', detail: 'starting: the modules (simulated cloud, engine, workers) are not all started yet; API requests wait for them', waitingRequests: ctx.startup.waiting };
    const [db, sim] = await Promise.all([database(), ctx.config.sim ? simulator() : Promise.resolve(undefined)]);
    checks.database = db;
    checks.runner = runner();
    if (sim) checks.simulator = sim;
    const ok = Object.values(checks).every((c) => c.status === 'ok');
    return { status: ok ? 'ok' : 'fail', checks };
  };
}
