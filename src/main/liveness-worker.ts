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
  /** A probe needs a credential but no static token exists (Keystone, OAuth 2.0, mTLS only): every probe is refused. */
  closed?: boolean;
}

/** Messages from the worker to the main thread. */
export type LivenessWorkerMessage = { type: 'listening'; port: number } | { type: 'error'; message: string; code?: string } | { type: 'closed' };

/** Messages from the main thread to the worker. */
export type LivenessWorkerCommand = { type: 'close' };

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

function allowed(h: IncomingMessage['headers']): boolean {
  if (data.closed) return false;
  if (hashes.length === 0) return true;
  const t = tokenOf(h);
  if (t === undefined) return false;
  const d = createHash('sha256').update(t, 'utf8').digest();
  let ok = false;
  for (const e of hashes) ok = timingSafeEqual(d, e) || ok;
  return ok;
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
  if (!allowed(req.headers)) return send(req, res, 401, { type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'a valid X-Auth-Token or Bearer token is required' }, 'application/problem+json; charset=utf-8');
  const sinceMs = Number(process.hrtime.bigint() - Atomics.load(tick, 0)) / 1e6;
  const mainLoopLagMs = Math.max(0, Math.round(sinceMs - data.tickMs));
  if (sinceMs > data.maxStallMs) return send(req, res, 503, { status: 'stalled', mainLoopLagMs, maxStallMs: data.maxStallMs });
  send(req, res, 200, { status: 'ok', mainLoopLagMs });
});
server.keepAliveTimeout = 5000;
server.on('error', (e: NodeJS.ErrnoException) => {
  port.postMessage({ type: 'error', message: e.message, ...(e.code ? { code: e.code } : {}) } satisfies LivenessWorkerMessage);
});
server.listen(data.port, data.host, () => {
  const a = server.address();
  port.postMessage({ type: 'listening', port: a && typeof a === 'object' ? a.port : data.port } satisfies LivenessWorkerMessage);
});
port.on('message', (m: LivenessWorkerCommand) => {
  if (m.type !== 'close') return;
  server.close(() => {
    port.postMessage({ type: 'closed' } satisfies LivenessWorkerMessage);
    port.close();
  });
  server.closeAllConnections();
});
