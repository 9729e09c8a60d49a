/**
 * HTTP client of a Server Notifier's alarm API:
 * `POST {uri}/v2/{tenant}/servers/{serverId}/alarms` `{fault_action, fault_id: [...]}` -> `{alarm_id}`
 * and `DELETE {uri}/v2/{tenant}/servers/{serverId}/alarms/{alarmId}`, with the VIM's Keystone token
 * in `X-Auth-Token` when the VIM connection has Keystone credentials.
 *
 * Why retries differ per call: a DELETE can be repeated safely, so it is retried on network errors
 * and 5xx; a POST is only repeated when the request surely was not processed (connection refused,
 * 503), because a second registration would leave an orphan alarm behind.
 */
import { vnfmError } from '../../../errors.ts';

/** Options of {@link ServerNotifierClient}. */
export interface AlarmClientOptions {
  /** Per-request timeout. @default 10000 */
  timeoutMs?: number;
  /** Attempts per call (see the retry rules above). @default 3 */
  attempts?: number;
  /** First back-off, doubled per attempt. @default 200 */
  backoffMs?: number;
  /** fetch implementation (tests). @default globalThis.fetch */
  fetch?: typeof fetch;
  /** The op's signal: cancels requests and back-off sleeps (lease lost, shutdown). */
  signal?: AbortSignal;
}

/** Result of an unregistration. */
export type UnregisterResult = 'deleted' | 'absent';

function networkRefused(e: unknown): boolean {
  const code = (e as { cause?: { code?: string } })?.cause?.code ?? (e as { code?: string })?.code;
  return code === 'ECONNREFUSED';
}

/** Talks to one Server Notifier for one tenant. */
export class ServerNotifierClient {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly signal: AbortSignal | undefined;

  constructor(
    uri: string,
    private readonly tenant: string,
    private readonly token: () => Promise<string | undefined>,
    opts: AlarmClientOptions = {},
  ) {
    this.base = uri.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.attempts = Math.max(1, opts.attempts ?? 3);
    this.backoffMs = opts.backoffMs ?? 200;
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.signal = opts.signal;
  }

  private alarmsUrl(serverId: string): string {
    return `${this.base}/v2/${encodeURIComponent(this.tenant)}/servers/${encodeURIComponent(serverId)}/alarms`;
  }

  private async send(method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    const tok = await this.token();
    if (tok) headers['X-Auth-Token'] = tok;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await this.fetchImpl(url, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal: this.signal ? AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.signal]) : AbortSignal.timeout(this.timeoutMs) });
    return { status: res.status, text: await res.text() };
  }

  private async withRetry<T>(what: string, fn: () => Promise<{ done: true; value: T } | { done: false; retry: boolean; error: string }>): Promise<T> {
    let last = '';
    let retryable = false;
    for (let i = 0; i < this.attempts; i++) {
      this.signal?.throwIfAborted();
      if (i > 0) await new Promise((r) => setTimeout(r, this.backoffMs * 2 ** (i - 1)));
      this.signal?.throwIfAborted();
      const r = await fn();
      if (r.done) return r.value;
      last = r.error;
      retryable = r.retry;
      if (!r.retry) break;
    }
    // Retryable (the engine runs the hook step again later) only when the last failure was one the
    // call itself would have repeated: a POST surely not processed, a DELETE that failed transiently.
    // A refused request (4xx) or an ambiguous POST (timeout, 5xx) is terminal: no orphan alarm.
    throw vnfmError('VNFM_ERR_MGMT_FAILED', `Server Notifier ${what} failed: ${last}`, { retryable });
  }

  /** Registers the server; returns the alarm id. */
  async register(serverId: string, faultAction: string, faultIds: readonly string[]): Promise<string> {
    const url = this.alarmsUrl(serverId);
    return this.withRetry(`alarm registration of server ${serverId}`, async () => {
      let res: { status: number; text: string };
      try {
        res = await this.send('POST', url, { fault_action: faultAction, fault_id: [...faultIds] });
      } catch (e) {
        return { done: false, retry: networkRefused(e), error: `POST ${url}: ${(e as Error).message}` };
      }
      if (res.status >= 400) return { done: false, retry: res.status === 503, error: `POST ${url} answered ${res.status}: ${res.text.slice(0, 300)}` };
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(res.text) as Record<string, unknown>;
      } catch {
        return { done: false, retry: false, error: `POST ${url} answered ${res.status} without a JSON body` };
      }
      const nested = body.alarm && typeof body.alarm === 'object' ? (body.alarm as Record<string, unknown>) : undefined;
      const id = body.alarm_id ?? nested?.alarm_id ?? nested?.id;
      if (typeof id !== 'string' || id === '') return { done: false, retry: false, error: `POST ${url} answered ${res.status} without alarm_id` };
      return { done: true, value: id };
    });
  }

  /** Unregisters an alarm; an unknown alarm (404) counts as done. */
  async unregister(serverId: string, alarmId: string): Promise<UnregisterResult> {
    const url = `${this.alarmsUrl(serverId)}/${encodeURIComponent(alarmId)}`;
    return this.withRetry(`alarm removal ${alarmId} of server ${serverId}`, async () => {
      let res: { status: number; text: string };
      try {
        res = await this.send('DELETE', url);
      } catch (e) {
        return { done: false, retry: true, error: `DELETE ${url}: ${(e as Error).message}` };
      }
      if (res.status === 404) return { done: true, value: 'absent' as const };
      if (res.status >= 400) return { done: false, retry: res.status >= 500 || res.status === 429, error: `DELETE ${url} answered ${res.status}: ${res.text.slice(0, 300)}` };
      return { done: true, value: 'deleted' as const };
    });
  }
}
