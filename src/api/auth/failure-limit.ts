/**
 * Failed authentications per client address (`auth.failureLimit`): a token bucket per address
 * (IPv4 address, or IPv6 /64), `burst` failures at once, refilled at `perMinute`. A client whose
 * bucket is empty gets `429` with `Retry-After` for any credential that would cost a round trip
 * (an uncached Keystone or introspection token); what the VNFM checks without asking anyone (a
 * static token, a built-in OAuth 2.0 token, a validated token still cached) is accepted as before, so a
 * caller behind the same address as a failing one is not slowed. At most `maxClients` addresses
 * are tracked (least recently failed dropped first; a dropped address starts with a full bucket).
 */
import { isIP } from 'node:net';

export interface FailureLimitSettings {
  /** Failures a client may make at once (0: no limit). */
  burst: number;
  /** Failures per minute a client regains. */
  perMinute: number;
  /** Client addresses tracked at most. */
  maxClients: number;
}

/** The key of a client address: the IPv4 address (IPv4-mapped ones unwrapped), or the /64 of an IPv6 one. */
export function clientKey(address: string | undefined): string {
  const a = (address ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (isIP(a) !== 6) return a;
  const [head = '', tail = ''] = a.split('::') as [string, string?];
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = a.includes('::') ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export class FailureLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly ratePerMs: number;

  constructor(private readonly s: FailureLimitSettings) {
    this.ratePerMs = s.perMinute / 60_000;
  }

  get enabled(): boolean {
    return this.s.burst > 0;
  }

  private level(key: string, now: number): number {
    const b = this.buckets.get(key);
    if (!b) return this.s.burst;
    return Math.min(this.s.burst, b.tokens + (now - b.at) * this.ratePerMs);
  }

  /** Seconds until the client may fail again; 0 while it may. */
  retryAfterSeconds(key: string, now = Date.now()): number {
    if (!this.enabled) return 0;
    const l = this.level(key, now);
    if (l >= 1) return 0;
    return this.ratePerMs > 0 ? Math.max(1, Math.ceil((1 - l) / this.ratePerMs / 1000)) : 3600;
  }

  /** Counts one failed authentication of the client. */
  fail(key: string, now = Date.now()): void {
    if (!this.enabled) return;
    const tokens = Math.max(0, this.level(key, now) - 1);
    this.buckets.delete(key);
    this.buckets.set(key, { tokens, at: now });
    while (this.buckets.size > this.s.maxClients) {
      const oldest = this.buckets.keys().next().value;
      if (oldest === undefined) break;
      this.buckets.delete(oldest);
    }
  }

  /** Addresses tracked now. */
  get size(): number {
    return this.buckets.size;
  }
}
