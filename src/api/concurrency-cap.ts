/**
 * Per-process cap on in-flight API requests (`api.maxInFlightRequests`). A request that arrives
 * while that many are being served is answered at once with `503` ProblemDetails
 * (`urn:vnfm:error:VNFM_ERR_API_BUSY`) and `Retry-After`, from the raw HTTP `request` event: before
 * routing, authentication or body parsing, so a refused request costs microseconds and never joins
 * a queue behind the ones being served. The probes (`/healthz`, `/readyz`) and `/metrics` are
 * neither counted nor refused. Refusals are counted in `vnfm_http_rejected_busy_total`.
 *
 * A request counts from its `request` event until its response is finished or its connection
 * closes (`close` of the ServerResponse fires in both cases), so a client that disconnects early
 * frees its slot.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { ERRORS } from '../errors.ts';
import { LIVENESS_PATH, READINESS_PATH } from './health.ts';

/** Paths never counted nor refused by the cap. */
const EXEMPT = new Set([LIVENESS_PATH, READINESS_PATH, '/metrics']);

function pathOf(url: string | undefined): string {
  const u = url ?? '';
  const q = u.indexOf('?');
  const p = q === -1 ? u : u.slice(0, q);
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

/** Options of {@link installConcurrencyCap}. */
export interface ConcurrencyCapOptions {
  /** Requests served at once; 0 disables the cap. */
  readonly maxInFlight: number;
  /** `Retry-After` of the 503 (seconds). */
  readonly retryAfterSeconds: number;
  /** Called once per refused request (metrics). */
  readonly onReject?: (req: IncomingMessage) => void;
}

/** What the cap reports (tests, readiness details). */
export interface ConcurrencyCap {
  /** Requests being served now (exempt paths not counted). */
  inFlight(): number;
  /** Requests refused since start. */
  rejected(): number;
}

/**
 * Wraps the single `request` listener of `server` (Fastify's, or the liveness short-circuit in
 * front of it) with the cap. Returns undefined (nothing installed) when the cap is off or the
 * server's listeners are not the expected single one.
 */
export function installConcurrencyCap(server: Server, opts: ConcurrencyCapOptions): ConcurrencyCap | undefined {
  if (!(opts.maxInFlight > 0)) return undefined;
  const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (listeners.length !== 1) return undefined;
  const inner = listeners[0] as (req: IncomingMessage, res: ServerResponse) => void;
  server.removeListener('request', inner);
  const body = JSON.stringify({
    type: 'urn:vnfm:error:VNFM_ERR_API_BUSY',
    title: ERRORS.VNFM_ERR_API_BUSY.title,
    status: 503,
    detail: `the VNFM is serving ${opts.maxInFlight} requests (api.maxInFlightRequests); retry after ${opts.retryAfterSeconds} s`,
  });
  const headers = {
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'retry-after': String(opts.retryAfterSeconds),
    'cache-control': 'no-store',
  };
  let inFlight = 0;
  let rejected = 0;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (EXEMPT.has(pathOf(req.url))) {
      inner.call(server, req, res);
      return;
    }
    if (inFlight >= opts.maxInFlight) {
      rejected++;
      opts.onReject?.(req);
      // the body (if any) is not read: drain it so the connection stays usable
      req.resume();
      res.writeHead(503, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    inFlight++;
    res.once('close', () => {
      inFlight--;
    });
    inner.call(server, req, res);
  });
  return { inFlight: () => inFlight, rejected: () => rejected };
}
