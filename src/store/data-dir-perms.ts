/**
 * Permissions of the data directory: created 0700, nothing in it accessible to group or others.
 * The embedded database (PGlite) creates its files 0666 under the default umask, so the VNFM sets
 * its process umask to 077 ({@link restrictUmask}) before it opens the database, and
 * {@link secureDataDir} fixes what an earlier run (or a copy) left group/world-accessible.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Sets the process umask to 077 (new files and directories private to the VNFM's user); returns the previous one. */
export function restrictUmask(): number {
  return process.umask(0o077);
}

/**
 * Creates `dir` (0700) when missing, makes it 0700, and removes the group and other bits of every
 * file and directory below it (symbolic links are not followed). `skip`: names of top-level
 * entries left alone (the live-VM lab's host trees, which other users must read). Returns how many
 * entries were changed.
 */
export function secureDataDir(dir: string, skip: readonly string[] = []): number {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let changed = 0;
  const fix = (p: string): void => {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) return;
    if ((st.mode & 0o077) !== 0) {
      chmodSync(p, st.mode & 0o7700);
      changed++;
    }
    if (st.isDirectory()) for (const name of readdirSync(p)) fix(join(p, name));
  };
  const top = lstatSync(dir);
  if ((top.mode & 0o777) !== 0o700) {
    chmodSync(dir, 0o700);
    changed++;
  }
  for (const name of readdirSync(dir)) if (!skip.includes(name)) fix(join(dir, name));
  return changed;
}
