/**
 * Permissions of the data directory: created 0700, nothing in it accessible to group or others.
 *
 * The embedded database (PGlite: PostgreSQL compiled to WebAssembly over Node's `fs`) sets the
 * modes of the files it creates itself, with `chmod` (0666 for most of them), which the process
 * umask does not limit. So {@link restrictFileModes} sets the process umask to 077 and makes
 * `fs.chmodSync` / `fs.fchmodSync` (what the embedded database calls) drop the group and other
 * bits of the modes they set below the data directory: every file is private from its creation,
 * and a process killed at any moment (SIGKILL) leaves nothing group/world-accessible.
 * {@link secureDataDir} fixes what an earlier version (or a copy) left group/world-accessible.
 */
import fs, { chmodSync, lstatSync, mkdirSync, readdirSync, realpathSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';

/** Sets the process umask to 077 (new files and directories private to the VNFM's user); returns the previous one. */
export function restrictUmask(): number {
  return process.umask(0o077);
}

const privateDirs = new Set<string>();
const publicDirs = new Set<string>();
let patched = false;

/** True when `path` is `dir` or below it. */
function below(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

/** The resolved path of `fd` (Linux: /proc/self/fd), or undefined. */
function fdPath(fd: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

/**
 * Sets the process umask to 077 (unless `umask: false`) and, for the files below `dir` (the data
 * directory) but not below `except` (the live-VM lab's host trees, which other users read), makes
 * the modes `fs.chmodSync` and `fs.fchmodSync` set private to the VNFM's user (group and other
 * bits dropped). Idempotent; more than one directory may be registered.
 */
export function restrictFileModes(dir: string, opts: { umask?: boolean; except?: readonly string[] } = {}): void {
  if (opts.umask !== false) restrictUmask();
  privateDirs.add(resolve(dir));
  for (const e of opts.except ?? []) publicDirs.add(resolve(e));
  try {
    privateDirs.add(realpathSync(dir));
  } catch {
    // not created yet: the resolved path is what the embedded database uses
  }
  if (patched) return;
  patched = true;
  const isPrivate = (p: string | undefined): boolean => p !== undefined && [...privateDirs].some((d) => below(p, d)) && ![...publicDirs].some((d) => below(p, d));
  const mask = (mode: fs.Mode): fs.Mode => (typeof mode === 'number' ? mode & ~0o077 : (Number.parseInt(mode, 8) & ~0o077));
  const chmod = fs.chmodSync;
  const fchmod = fs.fchmodSync;
  fs.chmodSync = (path: fs.PathLike, mode: fs.Mode): void => chmod(path, isPrivate(resolve(String(path))) ? mask(mode) : mode);
  fs.fchmodSync = (fd: number, mode: fs.Mode): void => fchmod(fd, isPrivate(fdPath(fd)) ? mask(mode) : mode);
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
