/**
 * The liveness server, run in a worker thread (`liveness.ts` starts it): its own event loop, so a
 * liveness probe is answered in a few ms however busy the VNFM's main loop is (lists, database
 * waits, request backlog). It answers GET/HEAD `/healthz` only:
 *
 * - 200 `{"status":"ok","mainLoopLagMs":n}` while the main thread ticks;
 * - 503 `{"status":"stalled","mainLoopLagMs":n,"maxStallMs":m}` when the main thread has not ticked
 *   for longer than `maxStallMs` (its loop is wedged: a probe that always said OK would be useless).
 *
 * The main thread stores `process.hrtime.bigint()` (CLOCK_MONOTONIC, the same clock in every thread
 * of the process) into a shared `BigInt64Array` from a timer every `tickMs`; the worker compares it
 * with its own reading. `mainLoopLagMs` is how late the main thread's next tick is: the time since
 * its last tick minus the tick interval, at least 0.
 *
 * Deliberately tiny: it imports only Node built-ins (never the app) and logs nothing; it reports
 * listening and errors to the main thread, which logs them. With `tokenHashes` (the API tokens'
 * SHA-256, when `health.public` is false), a probe must carry one of the tokens like any API call.
 * With `delegate`, a token that is not a static one is sent to the main thread (`check`), which
 * answers with the API's own authentication (Keystone, OAuth 2.0); an accepted token's hash is kept
 * for `probeCacheMs`, so only the first probe with a token waits for the main thread (a main
 * thread that does not answer within `checkTimeoutMs`: 503).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

/** What the main thread passes to the worker. */
export interface LivenessWorkerData {
  host: string;
  port: number;
  /** The shared tick: one BigInt64 slot holding the main thread's last `process.hrtime.bigint()`. */
  tick: SharedArrayBuffer;
  tickMs: number;
  maxStallMs: number;
  /** SHA-256 (hex) of each accepted API token; empty: no token needed (unless `closed`). */
  tokenHashes: string[];
  /** A probe needs a credential but none can be checked (no static token, no delegation): every probe is refused. */
  closed?: boolean;
  /** Tokens other than the static ones are checked by the main thread. */
  delegate?: boolean;
  /** How long an accepted delegated token is kept. */
  probeCacheMs?: number;
  /** How long to wait for the main thread's answer. */
  checkTimeoutMs?: number;
}

/** Messages from the worker to the main thread. */
export type LivenessWorkerMessage =
  | { type: 'listening'; port: number }
  | { type: 'error'; message: string; code?: string }
  | { type: 'closed' }
  | { type: 'check'; id: number; headers: Record<string, string | undefined> };

/** Messages from the main thread to the worker. */
export type LivenessWorkerCommand = { type: 'close' } | { type: 'checked'; id: number; ok: boolean; status?: 401 | 503 };

const data = workerData as LivenessWorkerData;
const port = parentPort;
if (!port) throw new Error('liveness-worker must run in a worker thread');
const tick = new BigInt64Array(data.tick);
const hashes = data.tokenHashes.map((h) => Buffer.from(h, 'hex'));

function pathOf(url: string | undefined): string {
  const u = url ?? '';
  const q = u.indexOf('?');
  const p = q === -1 ? u : u.slice(0, q);
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

function tokenOf(h: IncomingMessage['headers']): string | undefined {
  const x = h['x-auth-token'];
  if (typeof x === 'string') return x;
  return typeof h.authorization === 'string' && h.authorization.startsWith('Bearer ') ? h.authorization.slice(7) : undefined;
}

/** Delegated tokens the main thread accepted: SHA-256 hex -> until (ms). */
const accepted = new Map<string, number>();
const pending = new Map<number, (v: { ok: boolean; status?: 401 | 503 }) => void>();
let nextId = 1;

/** 'ok', or the status refusing the probe. */
async function allowed(h: IncomingMessage['headers']): Promise<'ok' | 401 | 503> {
  if (data.closed) return 401;
  if (hashes.length === 0 && !data.delegate) return 'ok';
  const t = tokenOf(h);
  if (t === undefined) return 401;
  const d = createHash('sha256').update(t, 'utf8').digest();
  let ok = false;
  for (const e of hashes) ok = timingSafeEqual(d, e) || ok;
  if (ok) return 'ok';
  if (!data.delegate) return 401;
  const key = d.toString('hex');
  const now = Date.now();
  if ((accepted.get(key) ?? 0) > now) return 'ok';
  accepted.delete(key);
  const id = nextId++;
  const verdict = await new Promise<{ ok: boolean; status?: 401 | 503 }>((resolve) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      resolve({ ok: false, status: 503 });
    }, data.checkTimeoutMs ?? 5000);
    pending.set(id, (v) => {
      clearTimeout(timer);
      pending.delete(id);
      resolve(v);
    });
    const headers = { 'x-auth-token': typeof h['x-auth-token'] === 'string' ? h['x-auth-token'] : undefined, authorization: typeof h.authorization === 'string' ? h.authorization : undefined };
    port?.postMessage({ type: 'check', id, headers } satisfies LivenessWorkerMessage);
  });
  if (!verdict.ok) return verdict.status ?? 401;
  if (accepted.size >= 1000) accepted.clear();
  accepted.set(key, Date.now() + (data.probeCacheMs ?? 30_000));
  return 'ok';
}

function send(req: IncomingMessage, res: ServerResponse, status: number, body: object, contentType = 'application/json; charset=utf-8', headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
  res.end(req.method === 'HEAD' ? undefined : text);
}

const server = createServer((req, res) => {
  // a body (if any) is not read: drain it so the connection stays usable
  req.resume();
  if (pathOf(req.url) !== '/healthz') return send(req, res, 404, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'this port serves GET /healthz only' }, 'application/problem+json; charset=utf-8');
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(req, res, 405, { type: 'about:blank', title: 'Method Not Allowed', status: 405, detail: `method ${req.method} is not allowed on /healthz; allowed: GET, HEAD` }, 'application/problem+json; charset=utf-8', { allow: 'GET, HEAD' });
  void allowed(req.headers).then((verdict) => {
    if (verdict === 401) return send(req, res, 401, { type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'a valid X-Auth-Token or Bearer token is required' }, 'application/problem+json; charset=utf-8');
    if (verdict === 503) return send(req, res, 503, { type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'the credential could not be checked now' }, 'application/problem+json; charset=utf-8');
    answer(req, res);
  });
});

function answer(req: IncomingMessage, res: ServerResponse): void {
  const sinceMs = Number(process.hrtime.bigint() - Atomics.load(tick, 0)) / 1e6;
  const mainLoopLagMs = Math.max(0, Math.round(sinceMs - data.tickMs));
  if (sinceMs > data.maxStallMs) return send(req, res, 503, { status: 'stalled', mainLoopLagMs, maxStallMs: data.maxStallMs });
  send(req, res, 200, { status: 'ok', mainLoopLagMs });
}
server.keepAliveTimeout = 5000;
server.on('error', (e: NodeJS.ErrnoException) => {
  port.postMessage({ type: 'error', message: e.message, ...(e.code ? { code: e.code } : {}) } satisfies LivenessWorkerMessage);
});
server.listen(data.port, data.host, () => {
  const a = server.address();
  port.postMessage({ type: 'listening', port: a && typeof a === 'object' ? a.port : data.port } satisfies LivenessWorkerMessage);
});
port.on('message', (m: LivenessWorkerCommand) => {
  if (m.type === 'checked') {
    pending.get(m.id)?.({ ok: m.ok, ...(m.status ? { status: m.status } : {}) });
    return;
  }
  if (m.type !== 'close') return;
  server.close(() => {
    port.postMessage({ type: 'closed' } satisfies LivenessWorkerMessage);
    port.close();
  });
  server.closeAllConnections();
});
