/**
 * Name, hash, uid and timestamp helpers producing the same shapes as the real control plane
 * (`<rs>-<5 chars>` pod names, `pod-template-hash` values, RFC 3339 second-precision timestamps).
 */
import { randomUUID } from 'node:crypto';

/** Alphabet the real control plane uses for generated suffixes (no vowels, no confusable digits). */
const SAFE = 'bcdfghjklmnpqrstvwxz2456789';

/** Random suffix as in `generateName` (`<prefix><5 chars>`). */
export function randomSuffix(n = 5): string {
  let s = '';
  for (let i = 0; i < n; i++) s += SAFE[Math.floor(Math.random() * SAFE.length)];
  return s;
}

/** Stable JSON (sorted keys) so equal templates hash equally whatever their key order. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** FNV-1a 32-bit hash of a string. */
export function fnv32a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * Template hash in the `pod-template-hash` / `controller-revision-hash` style: FNV of the template,
 * rendered through the safe alphabet so it is a valid label value and DNS label part.
 */
export function templateHash(template: unknown, collisionCount = 0): string {
  const h = fnv32a(stableJson(template) + (collisionCount ? String(collisionCount) : ''));
  return String(h)
    .split('')
    .map((d) => SAFE[d.charCodeAt(0) % SAFE.length] as string)
    .join('');
}

/** A new object uid. */
export function newUid(): string {
  return randomUUID();
}

let cachedSecond = -1;
let cachedTs = '';

/** Current time as the API server prints it (RFC 3339, seconds precision, UTC). */
export function nowTs(ms: number = Date.now()): string {
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedTs = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
  return cachedTs;
}

/** Whether a string is a DNS-1123 subdomain (object names of most kinds). */
export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s);
}

/** Whether a string is a DNS-1123 label (namespaces, services). */
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s);
}
