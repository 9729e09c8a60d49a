/**
 * Authentication of the VNFM toward notification consumers (SOL013 8.3.4 "SubscriptionAuthentication"):
 * HTTP Basic, or an OAuth 2.0 bearer token obtained with the client credentials grant. Both the
 * callback test at subscription time and the delivery worker use this module, so a subscriber sees
 * the same credentials on the test GET and on every notification POST.
 *
 * Credentials are only ever held in memory here; at rest they are sealed in `subscription.auth_secret`.
 * Error messages produced here never contain a password, client password or token.
 */
import { createHash } from 'node:crypto';

/** Authentication types we can use toward a notification endpoint. */
export const NOTIFICATION_AUTH_TYPES = {
  BASIC: 'BASIC',
  OAUTH2_CLIENT_CREDENTIALS: 'OAUTH2_CLIENT_CREDENTIALS',
} as const;
/** One supported authentication type. */
export type NotificationAuthType = (typeof NOTIFICATION_AUTH_TYPES)[keyof typeof NOTIFICATION_AUTH_TYPES];

/** The secret part of a subscription's authentication, sealed at rest. */
export interface NotificationCredentials {
  basic?: { userName: string; password: string };
  oauth2?: { clientId: string; clientPassword: string; tokenEndpoint: string };
}

/** Raised when a callback or token endpoint cannot be used; `message` is safe to store and log. */
export class CallbackError extends Error {
  /** HTTP status of the failing response, when there was one. */
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.name = 'CallbackError';
    this.status = status;
  }
}

/** Describes a fetch failure without leaking URLs' credentials or bodies. */
export function describeFetchError(e: unknown, timeoutMs: number): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') return `no response within ${timeoutMs} ms`;
  const code = err?.cause?.code;
  if (code === 'VNFM_OUTBOUND_DENIED') return `refused by the outbound rules: ${err?.cause?.message ?? ''}`;
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `host not found (${code})`;
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return `connection reset (${code})`;
  if (code) return `connection failed (${code})`;
  return `request failed: ${err?.cause?.message ?? err?.message ?? String(e)}`;
}

/**
 * Runs `fn` with an abort signal that fires after `ms`. An explicit timer (held until `fn` settles)
 * is used instead of `AbortSignal.timeout`, so the deadline also covers reading the body and
 * cannot be lost with a collected signal.
 */
async function withDeadline<T>(ms: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(new DOMException(`no response within ${ms} ms`, 'TimeoutError')), ms);
  try {
    return await fn(ac.signal);
  } finally {
    clearTimeout(t);
  }
}

function basicHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

interface CachedToken {
  token: string;
  /** Epoch ms after which the token is not used any more; Infinity when the server gave no lifetime. */
  until: number;
}

/**
 * Produces the `Authorization` header for a subscription's credentials. OAuth2 tokens are cached
 * per (token endpoint, client id, client password) until shortly before they expire, so a burst of
 * notifications costs one token request; {@link invalidate} drops a token the consumer rejected.
 */
export class CallbackAuthenticator {
  private readonly tokens = new Map<string, CachedToken>();
  private readonly inflight = new Map<string, Promise<CachedToken>>();

  constructor(private readonly opts: { timeoutMs: number; fetch?: typeof fetch }) {}

  /** Headers to add to a request toward the consumer (empty when no authentication is configured). */
  async headers(creds: NotificationCredentials | null | undefined): Promise<Record<string, string>> {
    if (!creds) return {};
    // SOL013 leaves the choice to the VNFM when several types are accepted; the token-based one is
    // preferred because it does not send a long-lived secret with every request.
    if (creds.oauth2) return { authorization: `Bearer ${await this.token(creds.oauth2)}` };
    if (creds.basic) return { authorization: basicHeader(creds.basic.userName, creds.basic.password) };
    return {};
  }

  /** True when a 401 from the consumer may be cured by fetching a fresh token. */
  canRefresh(creds: NotificationCredentials | null | undefined): boolean {
    return Boolean(creds?.oauth2);
  }

  /** Forgets the cached token of these credentials (after the consumer answered 401). */
  invalidate(creds: NotificationCredentials | null | undefined): void {
    if (creds?.oauth2) this.tokens.delete(this.key(creds.oauth2));
  }

  private key(o: NonNullable<NotificationCredentials['oauth2']>): string {
    return createHash('sha256').update(`${o.tokenEndpoint}\u0000${o.clientId}\u0000${o.clientPassword}`).digest('hex');
  }

  private async token(o: NonNullable<NotificationCredentials['oauth2']>): Promise<string> {
    const key = this.key(o);
    const cached = this.tokens.get(key);
    if (cached && cached.until > Date.now()) return cached.token;
    let p = this.inflight.get(key);
    if (!p) {
      p = this.requestToken(o).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    const t = await p;
    this.tokens.set(key, t);
    return t.token;
  }

  private async requestToken(o: NonNullable<NotificationCredentials['oauth2']>): Promise<CachedToken> {
    const f = this.opts.fetch ?? fetch;
    const timeoutMs = this.opts.timeoutMs;
    const { res, body } = await withDeadline(timeoutMs, async (signal) => {
      let r: Response;
      try {
        r = await f(o.tokenEndpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: basicHeader(o.clientId, o.clientPassword) },
          body: 'grant_type=client_credentials',
          redirect: 'manual',
          signal,
        });
      } catch (e) {
        throw new CallbackError(`OAuth2 token endpoint: ${describeFetchError(e, timeoutMs)}`);
      }
      let b: unknown;
      try {
        b = await r.json();
      } catch {
        b = undefined;
      }
      return { res: r, body: b };
    });
    if (res.status < 200 || res.status > 299) throw new CallbackError(`OAuth2 token endpoint answered HTTP ${res.status}`, res.status);
    const b = (body ?? {}) as { access_token?: unknown; expires_in?: unknown };
    if (typeof b.access_token !== 'string' || b.access_token === '') throw new CallbackError('OAuth2 token endpoint answered without access_token');
    const life = typeof b.expires_in === 'number' ? b.expires_in : typeof b.expires_in === 'string' ? Number(b.expires_in) : Number.NaN;
    // Renew a little before the server-side expiry (10% of the lifetime, at most 30 s).
    const until = Number.isFinite(life) && life > 0 ? Date.now() + life * 1000 - Math.min(30_000, life * 100) : Number.POSITIVE_INFINITY;
    return { token: b.access_token, until };
  }
}

/** Result of one HTTP exchange with a consumer. */
export interface CallbackResponse {
  status: number;
}

/**
 * Sends one request to a consumer endpoint with its authentication; on a 401 with OAuth2 it fetches
 * a new token and tries once more. Network failures become {@link CallbackError}s with a safe message.
 */
export async function callConsumer(
  auth: CallbackAuthenticator,
  creds: NotificationCredentials | null | undefined,
  req: { method: 'GET' | 'POST'; url: string; headers?: Record<string, string>; body?: string; timeoutMs: number; fetch?: typeof fetch },
): Promise<CallbackResponse> {
  const f = req.fetch ?? fetch;
  const once = async (): Promise<CallbackResponse> => {
    const authHeaders = await auth.headers(creds);
    return withDeadline(req.timeoutMs, async (signal) => {
      let res: Response;
      try {
        res = await f(req.url, {
          method: req.method,
          headers: { ...(req.headers ?? {}), ...authHeaders },
          ...(req.body !== undefined ? { body: req.body } : {}),
          redirect: 'manual',
          signal,
        });
      } catch (e) {
        throw new CallbackError(describeFetchError(e, req.timeoutMs));
      }
      // Drain the body so the connection can be reused; its content is not needed.
      await res.arrayBuffer().catch(() => undefined);
      return { status: res.status };
    });
  };
  const first = await once();
  if (first.status === 401 && auth.canRefresh(creds)) {
    auth.invalidate(creds);
    return once();
  }
  return first;
}
