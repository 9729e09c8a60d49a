/**
 * A small bounded cache of validated credentials, keyed by the SHA-256 of the credential (the
 * credential itself is never kept as a key), each entry with its own expiry. Oldest entries go
 * first when full.
 */
import { createHash } from 'node:crypto';

/** SHA-256 hex of a credential. */
export function credentialHash(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

export class ExpiringCache<V> {
  private readonly map = new Map<string, { value: V; until: number }>();
  constructor(private readonly maxEntries: number) {}

  get(key: string, now = Date.now()): V | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (e.until <= now) {
      this.map.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V, until: number): void {
    if (until <= Date.now()) return;
    this.map.delete(key);
    while (this.map.size >= this.maxEntries) {
      const oldest = this.map.keys().next().value;
      if (oldest === undefined) break;
      this.map.delete(oldest);
    }
    this.map.set(key, { value, until });
  }

  /** Drops every entry whose value matches. */
  deleteWhere(pred: (v: V) => boolean): void {
    for (const [k, e] of this.map) if (pred(e.value)) this.map.delete(k);
  }

  /** Drops every entry. */
  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}
