/**
 * Encrypts secrets at rest (VIM credentials, subscription auth) with AES-256-GCM. The key comes from
 * config or is generated once into the data directory (mode 0600), so a copy of the database alone
 * does not reveal credentials.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Seals and opens JSON secrets. */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('secret key must be 32 bytes');
  }

  /** Encrypts any JSON value into an opaque string `v1:<iv>:<tag>:<data>`. */
  seal(value: unknown): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([c.update(JSON.stringify(value ?? null), 'utf8'), c.final()]);
    return `v1:${iv.toString('base64')}:${c.getAuthTag().toString('base64')}:${data.toString('base64')}`;
  }

  /** Decrypts what {@link seal} produced; throws when the key is wrong or the data was altered. */
  open<T = unknown>(sealed: string): T {
    const [v, iv, tag, data] = sealed.split(':');
    if (v !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    d.setAuthTag(Buffer.from(tag, 'base64'));
    return JSON.parse(Buffer.concat([d.update(Buffer.from(data, 'base64')), d.final()]).toString('utf8')) as T;
  }
}

/** Parses a configured key (64 hex chars or base64 of 32 bytes). */
export function parseSecretKey(s: string): Buffer {
  const b = /^[0-9a-fA-F]{64}$/.test(s) ? Buffer.from(s, 'hex') : Buffer.from(s, 'base64');
  if (b.length !== 32) throw new Error('secretKey must be 32 bytes (64 hex chars or base64)');
  return b;
}

/** Loads the key from config, else from `<dataDir>/secret.key`, generating it on first start. */
export function loadOrCreateKey(configured: string | undefined, dataDir: string | undefined): Buffer {
  if (configured) return parseSecretKey(configured);
  if (!dataDir || dataDir.startsWith('memory://')) return randomBytes(32);
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) return parseSecretKey(readFileSync(file, 'utf8').trim());
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex'), { mode: 0o600 });
  return key;
}
