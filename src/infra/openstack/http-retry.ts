/**
 * HTTP with bounded retries for the OpenStack clients, on the built-in `fetch`.
 *
 * Why: an OpenStack control plane drops requests during restarts, behind load balancers and
 * while RPC to heat-engine times out (502/503/504, refused or reset connections). A heal must
 * ride over such blips instead of failing the whole LCM operation, but it must never repeat a
 * request OpenStack refused on purpose (4xx) nor blindly repeat a non-idempotent one (a second
 * scaling signal scales twice). Each attempt has its own timeout, and the delays grow
 * exponentially with jitter so that many VNFMs do not hammer a recovering API in lock-step.
 */
import { setTimeout as sleepTimer } from 'node:timers/promises';
import { outboundDenial } from '../../net/outbound.ts';
import { OpenStackError, OpenStackErrorKind, parseOpenStackErrorBody } from './openstack-error.ts';

/** Retry and timeout settings (every field optional; see {@link resolveHttpRetryOptions}). */
export interface HttpRetryOptions {
  /** Tries of one request in all, the first one included. @default 4 */
  attempts?: number;
  /** Delay cap of the first retry; doubles per retry. @default 200 */
  baseDelayMs?: number;
  /** Largest delay between two tries. @default 5000 */
  maxDelayMs?: number;
  /** Timeout of one try (until the whole body is read). @default 30000 */
  timeoutMs?: number;
  /** HTTP statuses retried. Only 5xx are accepted here (4xx are never retried). @default [502, 503, 504] */
  retryStatuses?: readonly number[];
  /** Random source in [0, 1) for the jitter (tests pin it). @default Math.random */
  random?: () => number;
  /** Called before each retry sleep (for logs/metrics). Never receives request bodies or headers. */
  onRetry?: (event: RetryEvent) => void;
  /** HTTP client: one with the VIM's TLS settings (CA bundle, `cert_verify: false`). @default the built-in fetch */
  fetch?: typeof fetch;
}

/** {@link HttpRetryOptions} with defaults filled in. */
export interface ResolvedHttpRetryOptions {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
  retryStatuses: readonly number[];
  random: () => number;
  onRetry: ((event: RetryEvent) => void) | undefined;
  fetch: typeof fetch | undefined;
}

/** What {@link HttpRetryOptions.onRetry} is told. */
export interface RetryEvent {
  service: string;
  method: string;
  /** URL without query string. */
  url: string;
  /** The try that just failed (1-based). */
  attempt: number;
  delayMs: number;
  /** HTTP status, or the error code ('ECONNREFUSED', 'TIMEOUT', ...). */
  reason: string;
}

/** One HTTP request as the OpenStack clients describe it. */
export interface HttpRequest {
  /** Service label used in errors ('keystone', 'heat', 'nova'). */
  service: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** Already serialised body. */
  body?: string;
  /**
   * Whether sending the request twice is harmless. Non-idempotent requests are retried only when
   * the server surely did not act on them (connection refused, 502, 503), never after a timeout,
   * a reset or a 504. @default true for every method but POST
   */
  idempotent?: boolean;
  /**
   * Opt-in retry of a 409 answer: return true when the conflict is transient (Heat's
   * `ActionInProgress`: another action on the stack will end). Receives Heat's `error.type`.
   */
  retryConflict?: (errorType: string | undefined, bodyText: string) => boolean;
  /** Overrides {@link HttpRetryOptions.timeoutMs} for this request. */
  timeoutMs?: number;
  /** Overrides {@link HttpRetryOptions.attempts} for this request. */
  attempts?: number;
  /** Cancels the request and any pending retry. */
  signal?: AbortSignal;
  /** Strings to scrub from error messages (password, token). */
  secrets?: readonly string[];
}

/** A fully read HTTP answer (body as text: OpenStack bodies are small JSON documents). */
export interface HttpResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The URL that was requested (redirects are not followed: see `redirect: 'manual'`). */
  url: string;
  method: string;
  service: string;
  /** How many tries it took. */
  attempts: number;
}

/** Fills in defaults and checks ranges, so a bad configuration fails at start-up, not mid-heal. */
export function resolveHttpRetryOptions(options: HttpRetryOptions = {}): ResolvedHttpRetryOptions {
  const attempts = options.attempts ?? 4;
  const baseDelayMs = options.baseDelayMs ?? 200;
  const maxDelayMs = options.maxDelayMs ?? 5000;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retryStatuses = options.retryStatuses ?? [502, 503, 504];
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError('http retry: attempts must be an integer >= 1');
  if (!(baseDelayMs >= 0) || !(maxDelayMs >= baseDelayMs)) {
    throw new RangeError('http retry: need 0 <= baseDelayMs <= maxDelayMs');
  }
  if (!(timeoutMs > 0)) throw new RangeError('http retry: timeoutMs must be > 0');
  for (const s of retryStatuses) {
    if (!Number.isInteger(s) || s < 500 || s > 599) {
      throw new RangeError(`http retry: only 5xx statuses may be retried (got ${s})`);
    }
  }
  return { attempts, baseDelayMs, maxDelayMs, timeoutMs, retryStatuses, random: options.random ?? Math.random, onRetry: options.onRetry, fetch: options.fetch };
}

/**
 * Delay before retry number `retry` (1 = first retry): "equal jitter" exponential back-off,
 * i.e. half of min(max, base * 2^(retry-1)) fixed plus a random part up to the other half, so
 * there is always some back-off but concurrent clients spread out. A server's `Retry-After`
 * (seconds) raises it, within `maxDelayMs`.
 */
export function backoffDelay(retry: number, options: ResolvedHttpRetryOptions, retryAfterMs?: number): number {
  const cap = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.max(0, retry - 1));
  const delay = cap / 2 + options.random() * (cap / 2);
  const wanted = retryAfterMs === undefined ? delay : Math.max(delay, retryAfterMs);
  return Math.round(Math.min(options.maxDelayMs, wanted));
}

/** How a thrown fetch error is classified. */
interface NetworkFailure {
  kind: typeof OpenStackErrorKind.timeout | typeof OpenStackErrorKind.connection | typeof OpenStackErrorKind.aborted;
  /** Error code ('ECONNREFUSED', 'ECONNRESET', 'TIMEOUT', ...). */
  code: string;
  /** Worth another try at all. */
  retryable: boolean;
  /** The request surely never reached the server (safe to repeat even if not idempotent). */
  notSent: boolean;
}

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
const RETRYABLE_CODES = new Set([
  ...NOT_SENT_CODES,
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

function errorCode(err: unknown, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 5) return undefined;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && e.code !== 'ERR_INVALID_ARG_TYPE') return e.code;
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const c = errorCode(inner, depth + 1);
      if (c !== undefined) return c;
    }
  }
  return errorCode(e.cause, depth + 1);
}

function classify(err: unknown, timedOut: boolean, callerAborted: boolean): NetworkFailure {
  if (callerAborted) return { kind: OpenStackErrorKind.aborted, code: 'ABORTED', retryable: false, notSent: false };
  if (timedOut) return { kind: OpenStackErrorKind.timeout, code: 'TIMEOUT', retryable: true, notSent: false };
  const code = errorCode(err) ?? 'UNKNOWN';
  return {
    kind: code === 'UND_ERR_CONNECT_TIMEOUT' ? OpenStackErrorKind.timeout : OpenStackErrorKind.connection,
    code,
    retryable: RETRYABLE_CODES.has(code),
    notSent: NOT_SENT_CODES.has(code),
  };
}

function retryAfterMs(headers: Headers): number | undefined {
  const v = headers.get('retry-after');
  if (v === null) return undefined;
  const secs = Number(v);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function urlNoQuery(url: string): string {
  return url.split('?')[0] ?? url;
}

/**
 * Sends `req`, retrying as described in the module comment, and returns the final answer
 * whatever its status (callers turn unexpected statuses into {@link OpenStackError} with
 * {@link OpenStackError.fromResponse}). Redirects are returned, not followed, so a Heat 302
 * stays visible. Throws {@link OpenStackError} (kind `timeout`, `connection` or `aborted`)
 * when no answer could be had.
 */
export async function requestWithRetry(req: HttpRequest, options: ResolvedHttpRetryOptions): Promise<HttpResponse> {
  const attempts = req.attempts ?? options.attempts;
  const timeoutMs = req.timeoutMs ?? options.timeoutMs;
  const idempotent = req.idempotent ?? req.method.toUpperCase() !== 'POST';
  for (let attempt = 1; ; attempt++) {
    if (req.signal?.aborted) throw abortedError(req, attempt);
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onCallerAbort = (): void => controller.abort();
    req.signal?.addEventListener('abort', onCallerAbort, { once: true });
    let response: HttpResponse | undefined;
    let failure: NetworkFailure | undefined;
    let thrown: unknown;
    try {
      const init: RequestInit = { method: req.method, redirect: 'manual', signal: controller.signal };
      if (req.headers !== undefined) init.headers = req.headers;
      if (req.body !== undefined) init.body = req.body;
      const res = await (options.fetch ?? fetch)(req.url, init);
      const text = await res.text();
      response = { status: res.status, headers: res.headers, text, url: req.url, method: req.method, service: req.service, attempts: attempt };
    } catch (err) {
      const denied = outboundDenial(err);
      if (denied) {
        // a configuration matter (the VIM's URL or a catalog entry): no retry changes it
        throw new OpenStackError({
          service: req.service,
          kind: OpenStackErrorKind.refused,
          detail: `${req.service} ${req.method} ${urlNoQuery(req.url)}: refused by the outbound rules of VIM endpoints, nothing was sent: ${denied.reason}`,
          retryable: false,
          method: req.method,
          url: req.url,
          ...(req.secrets === undefined ? {} : { secrets: req.secrets }),
          cause: err,
        });
      }
      thrown = err;
      failure = classify(err, timedOut, req.signal?.aborted === true);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onCallerAbort);
    }

    let delayMs: number | undefined;
    let reason = '';
    if (response !== undefined) {
      const s = response.status;
      let retry = false;
      if (options.retryStatuses.includes(s)) retry = idempotent || s === 502 || s === 503;
      else if (s === 409 && req.retryConflict !== undefined) {
        retry = req.retryConflict(parseOpenStackErrorBody(response.text).type, response.text);
      }
      if (!retry || attempt >= attempts) return response;
      delayMs = backoffDelay(attempt, options, retryAfterMs(response.headers));
      reason = String(s);
    } else {
      const f = failure as NetworkFailure;
      const canRetry = f.retryable && (idempotent || f.notSent) && attempt < attempts;
      if (!canRetry) {
        if (f.kind === OpenStackErrorKind.aborted) throw abortedError(req, attempt, thrown);
        const what = f.kind === OpenStackErrorKind.timeout ? `no answer within ${timeoutMs} ms` : `connection failed (${f.code})`;
        throw new OpenStackError({
          service: req.service,
          kind: f.kind,
          detail: `${req.service} ${req.method} ${urlNoQuery(req.url)}: ${what} after ${attempt} attempt(s)`,
          retryable: f.retryable,
          method: req.method,
          url: req.url,
          ...(req.secrets === undefined ? {} : { secrets: req.secrets }),
          cause: thrown,
        });
      }
      delayMs = backoffDelay(attempt, options);
      reason = f.code;
    }
    options.onRetry?.({ service: req.service, method: req.method, url: urlNoQuery(req.url), attempt, delayMs, reason });
    try {
      await sleepTimer(delayMs, undefined, req.signal === undefined ? undefined : { signal: req.signal });
    } catch (err) {
      throw abortedError(req, attempt, err);
    }
  }
}

function abortedError(req: HttpRequest, attempt: number, cause?: unknown): OpenStackError {
  return new OpenStackError({
    service: req.service,
    kind: OpenStackErrorKind.aborted,
    detail: `${req.service} ${req.method} ${urlNoQuery(req.url)}: cancelled (attempt ${attempt})`,
    retryable: false,
    method: req.method,
    url: req.url,
    ...(cause === undefined ? {} : { cause }),
  });
}
