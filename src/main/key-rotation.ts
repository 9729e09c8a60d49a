/**
 * `vnfm key rotate` / `vnfm key prune`: replaces the master key of the secrets at rest.
 *
 * - rotate, key file (`secretKeyFile`, or `<dataDir>/secret.key`): a new key is generated and
 *   written first in the file, the old keys stay after it (they still open); then every sealed
 *   value is re-sealed with the new key ({@link resealAll}). Running processes on the same
 *   PostgreSQL database pick the new key up from the file by themselves (when they meet its key id,
 *   and before sealing, at most 5 s late): no downtime.
 * - rotate, inline keys (`secretKey` / `VNFM_SECRET_KEY`, comma separated): the keys cannot be
 *   rewritten here; every sealed value is re-sealed with the first key of the list (put the new
 *   key first, the old one after it, on every process, then run this).
 * - prune: re-seals what is still sealed with an old key, then (key file) leaves only the current
 *   key in the file. Run it once every process seals with the new key (a minute after rotate).
 *
 * The embedded database is single-process: stop the VNFM first (the data directory lock says so).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { VnfmConfig } from '../config.ts';
import { openStore } from '../store/db.ts';
import { restrictFileModes } from '../store/data-dir-perms.ts';
import { type RekeyReport, resealAll } from '../store/rekey.ts';
import { SecretBox, keyFileOf, keyId, loadKeyRing, writeKeyFile } from '../store/secret-box.ts';

/** What a rotation did. */
export interface RotationResult {
  /** The key file written, when the keys live in one. */
  keyFile?: string;
  /** Id of the key everything is sealed with now. */
  currentKeyId: string;
  /** Ids of the keys still in the ring (the current one first). */
  keyIds: string[];
  report: RekeyReport;
}

/** Rotates (or, with `prune`, finishes a rotation of) the master key; see the module comment. */
export async function rotateKey(config: VnfmConfig, o: { prune?: boolean } = {}): Promise<RotationResult> {
  if (!config.dataDir.startsWith('memory://')) restrictFileModes(config.dataDir, { except: [join(config.dataDir, 'lab')] });
  const src = { configured: config.secretKey, file: config.secretKeyFile, dataDir: config.databaseUrl ? undefined : config.dataDir };
  const file = keyFileOf(src);
  // The database first: an embedded one in use by a running VNFM refuses here, before the key changes.
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const ring = loadKeyRing(src);
    let keys = ring;
    if (!o.prune && file) {
      keys = [randomBytes(32), ...ring];
      writeKeyFile(file, keys);
    }
    const box = new SecretBox(keys);
    const report = await resealAll(store.db, box);
    if (o.prune && file && report.contended === 0) {
      keys = [keys[0] as Buffer];
      writeKeyFile(file, keys);
    }
    return { ...(file ? { keyFile: file } : {}), currentKeyId: box.currentKeyId, keyIds: keys.map(keyId), report };
  } finally {
    await store.close();
  }
}
