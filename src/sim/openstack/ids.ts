/**
 * Identifier and timestamp helpers that reproduce the *shapes* real OpenStack services use, so a
 * client parsing ids or times from the sims exercises the same code paths it would against a cloud.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';

/** A dashed UUID (Heat stack ids, Nova server ids, Neutron/Cinder ids). */
export function uuid(): string {
  return randomUUID();
}

/** A 32-hex-digit id without dashes (Keystone users, projects, roles, endpoints). */
export function hexId(): string {
  return randomBytes(16).toString('hex');
}

/** A stable 32-hex-digit id derived from a seed, so default Keystone entities keep their ids across restarts. */
export function stableHexId(seed: string): string {
  return createHash('md5').update(seed).digest('hex');
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * A 12-character lowercase base32 id, the shape of Heat's `short_id` (AutoScalingGroup member
 * names and the random suffix of nested stack names).
 */
export function shortId(): string {
  const bytes = randomBytes(8);
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let out = '';
  for (let i = 0; i < 12; i++) {
    out += BASE32[Number(bits & 31n)];
    bits >>= 5n;
  }
  return out;
}

/** ISO-8601 time without fraction, `2024-01-02T03:04:05Z` (Heat and Nova timestamps). */
export function isoSeconds(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** ISO-8601 time with microseconds, `2024-01-02T03:04:05.000000Z` (Keystone token times). */
export function isoMicros(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
