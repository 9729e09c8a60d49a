/**
 * Encrypts secrets at rest (VIM credentials, subscription auth, request secrets, management driver
 * state) with AES-256-GCM.
 *
 * Keys: a key ring whose first key seals and whose every key opens. A sealed value names the key
 * that sealed it (`v2:<key id>:<iv>:<tag>:<data>`, the key id being the first 8 hex digits of the
 * key's SHA-256), so values sealed with an old key keep opening while `vnfm key rotate` re-seals
 * them with a new one, and a process that meets a key id it does not know re-reads its key file
 * once (another process rotated). Values sealed before key ids existed (`v1:<iv>:<tag>:<data>`)
 * are opened by trying each key (GCM authenticates, so a wrong key cannot give a wrong value).
 *
 * Where the keys come from ({@link loadKeyRing}): `secretKey` (config / `VNFM_SECRET_KEY`, comma
 * separated), else `secretKeyFile` (config / `VNFM_SECRET_KEY_FILE`, one key per line), else
 * `<dataDir>/secret.key`; a key file that does not exist is created with a new key (mode 0600).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The id a sealed value carries for its key. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** Seals and opens JSON secrets. */
export class SecretBox {
  private keys: Buffer[];
  private byId = new Map<string, Buffer>();

  /**
   * @param keys one key, or the key ring (the first seals)
   * @param reload re-reads the key ring (from its file) when a value names an unknown key
   */
  private checkedAt = Date.now();

  constructor(
    keys: Buffer | readonly Buffer[],
    private readonly reload?: () => Buffer[],
    /** Returns the key ring when its source changed since the last call (checked before sealing, at most every 5 s). */
    private readonly changed?: () => Buffer[] | undefined,
  ) {
    this.keys = [];
    this.setKeys(Array.isArray(keys) ? [...keys] : [keys as Buffer]);
  }

  private setKeys(keys: Buffer[]): void {
    if (keys.length === 0) throw new Error('no secret key');
    for (const k of keys) if (k.length !== 32) throw new Error('secret key must be 32 bytes');
    this.keys = keys;
    this.byId = new Map(keys.map((k) => [keyId(k), k]));
  }

  /** Id of the key that seals. */
  get currentKeyId(): string {
    return keyId(this.keys[0] as Buffer);
  }

  /** Ids of every key that opens. */
  get keyIds(): string[] {
    return this.keys.map(keyId);
  }

  /** Encrypts any JSON value into an opaque string `v2:<key id>:<iv>:<tag>:<data>`. */
  seal(value: unknown): string {
    if (this.changed && Date.now() - this.checkedAt > 5000) {
      // Another process rotated the key: seal with the new one from now on.
      this.checkedAt = Date.now();
      try {
        const ring = this.changed();
        if (ring) this.setKeys(ring);
      } catch {
        // unreadable for a moment (being replaced): keep the current ring
      }
    }
    const key = this.keys[0] as Buffer;
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, iv);
    const data = Buffer.concat([c.update(JSON.stringify(value ?? null), 'utf8'), c.final()]);
    return `v2:${keyId(key)}:${iv.toString('base64')}:${c.getAuthTag().toString('base64')}:${data.toString('base64')}`;
  }

  /** The id of the key a sealed value names (undefined for the old format without one). */
  static keyIdOf(sealed: string): string | undefined {
    return sealed.startsWith('v2:') ? sealed.split(':')[1] : undefined;
  }

  /** Whether a sealed value was sealed with the current key (re-sealing it would change nothing). */
  isCurrent(sealed: string): boolean {
    return SecretBox.keyIdOf(sealed) === this.currentKeyId;
  }

  /** Decrypts what {@link seal} produced; throws when no key opens it or the data was altered. */
  open<T = unknown>(sealed: string): T {
    const parts = sealed.split(':');
    if (parts[0] === 'v2') {
      const [, kid, iv, tag, data] = parts;
      if (!kid || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
      let key = this.byId.get(kid);
      if (!key && this.reload) {
        // Another process rotated the key: pick up the new key ring once.
        this.setKeys(this.reload());
        key = this.byId.get(kid);
      }
      if (!key) throw new Error(`sealed with key ${kid}, which this process does not have (see docs/security.md, "Key rotation")`);
      return decrypt<T>(key, iv, tag, data);
    }
    const [v, iv, tag, data] = parts;
    if (v !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
    let last: unknown;
    for (const key of this.keys) {
      try {
        return decrypt<T>(key, iv, tag, data);
      } catch (e) {
        last = e;
      }
    }
    throw last instanceof Error ? new Error(`no key opens this sealed value: ${last.message}`) : new Error('no key opens this sealed value');
  }
}

function decrypt<T>(key: Buffer, iv: string, tag: string, data: string): T {
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
  d.setAuthTag(Buffer.from(tag, 'base64'));
  return JSON.parse(Buffer.concat([d.update(Buffer.from(data, 'base64')), d.final()]).toString('utf8')) as T;
}

/** Parses a configured key (64 hex chars or base64 of 32 bytes). */
export function parseSecretKey(s: string): Buffer {
  const t = s.trim();
  const b = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (b.length !== 32) throw new Error('secretKey must be 32 bytes (64 hex chars or base64)');
  return b;
}

/** Parses a key list (comma or newline separated; `#` comments in files). */
export function parseKeyRing(text: string): Buffer[] {
  const keys = text
    .split(/[\n,]/)
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l !== '')
    .map(parseSecretKey);
  if (keys.length === 0) throw new Error('the key list is empty');
  return keys;
}

/** Where the key ring comes from. */
export interface KeySource {
  /** `secretKey` of the config (comma-separated keys). */
  configured?: string | undefined;
  /** `secretKeyFile` of the config. */
  file?: string | undefined;
  /** The data directory (default key file `<dataDir>/secret.key`), embedded database only. */
  dataDir?: string | undefined;
}

/** The key file of a source, or undefined when the keys are configured inline or live in memory. */
export function keyFileOf(src: KeySource): string | undefined {
  if (src.configured) return undefined;
  if (src.file) return src.file;
  if (!src.dataDir || src.dataDir.startsWith('memory://')) return undefined;
  return join(src.dataDir, 'secret.key');
}

/** Writes a key ring file atomically (mode 0600; its directory is created 0700 when missing). */
export function writeKeyFile(file: string, keys: readonly Buffer[]): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${keys.map((k) => k.toString('hex')).join('\n')}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** Loads the key ring; creates the key file with a new key on first start. */
export function loadKeyRing(src: KeySource): Buffer[] {
  if (src.configured) return parseKeyRing(src.configured);
  const file = keyFileOf(src);
  if (!file) return [randomBytes(32)];
  if (existsSync(file)) {
    chmodSync(file, 0o600);
    return parseKeyRing(readFileSync(file, 'utf8'));
  }
  const key = randomBytes(32);
  writeKeyFile(file, [key]);
  return [key];
}

/** A SecretBox over a key source; one backed by a file re-reads it when it meets an unknown key id. */
export function openSecretBox(src: KeySource): SecretBox {
  const file = keyFileOf(src);
  const ring = loadKeyRing(src);
  if (!file) return new SecretBox(ring);
  let mtime = statSync(file).mtimeMs;
  const read = (): Buffer[] => {
    mtime = statSync(file).mtimeMs;
    return parseKeyRing(readFileSync(file, 'utf8'));
  };
  return new SecretBox(ring, read, () => (statSync(file).mtimeMs !== mtime ? read() : undefined));
}

/** Loads the key from config, else from `<dataDir>/secret.key`, generating it on first start (the first key of the ring). */
export function loadOrCreateKey(configured: string | undefined, dataDir: string | undefined): Buffer {
  return loadKeyRing({ configured, dataDir })[0] as Buffer;
}
