/**
 * Exclusive lock on an embedded data directory: one VNFM process per PGlite data directory.
 *
 * Why: PGlite is a single-process database. Two VNFM processes on one data directory each run
 * their own PostgreSQL over the same files and silently overwrite each other's writes (acknowledged
 * requests vanish after a restart). The second process must refuse to start instead.
 *
 * How (no native code, no flock): the lock is a file `vnfm.lock/<generation>` in the data
 * directory, holding `{pid, hostname, startedAt}` of its owner. A generation file is created
 * atomically and complete (written to a temporary file, then `link(2)`ed to its name, which fails
 * when the name exists), so exactly one process creates each generation and nobody ever reads a
 * half-written lock. To acquire:
 *
 * 1. Read the newest generation `n`. When its holder is alive (or on another host, where we cannot
 *    tell), refuse: {@link DataDirLockedError} names the holder.
 * 2. Otherwise (no lock, or the holder's pid is not alive on this host: a crash left it) create
 *    generation `n + 1`. When that name is taken, someone else was quicker: start over at 1.
 * 3. Having created it, check that no newer generation appeared meanwhile (a racer that judged
 *    an older holder stale); if one did, withdraw and start over. Then remove the older,
 *    stale generations.
 *
 * Released by {@link DataDirLock.release} (at close); a process killed with -9 leaves its file
 * behind, and the next start takes it over with a warning.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { join, resolve } from 'node:path';

/** Who holds a data directory lock. */
export interface LockHolder {
  pid: number;
  hostname: string;
  /** ISO time the holder started. */
  startedAt: string;
}

/** A held lock. */
export interface DataDirLock {
  /** The lock file (`<dataDir>/vnfm.lock/<generation>`). */
  readonly file: string;
  readonly holder: LockHolder;
  /** The stale holder this lock was taken over from, if any. */
  readonly takenOverFrom: LockHolder | undefined;
  /** Removes the lock file (idempotent). */
  release(): void;
}

/** Raised when another live process holds the data directory. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
    readonly file: string,
  ) {
    super(
      `the data directory ${dataDir} is in use by another VNFM process (pid ${holder.pid} on host ${holder.hostname}, started ${holder.startedAt}); ` +
        `two processes on one embedded database lose data. Stop that process, or start this one with another --data-dir ` +
        `(or a shared PostgreSQL via --database-url). If no such process exists any more, delete ${file}.`,
    );
    this.name = 'DataDirLockedError';
  }
}

/** Options of {@link acquireDataDirLock} (tests). */
export interface AcquireOptions {
  /** Called once when a stale lock is taken over. */
  onStale?: (stale: LockHolder, file: string) => void;
  /** This process (defaults: the real pid and host name). */
  self?: { pid: number; hostname: string };
  /** Whether a pid is alive on this host. @default a signal-0 probe */
  isAlive?: (pid: number) => boolean;
}

/** Lock files held by this process (a second start in the same process must refuse too). */
const heldHere = new Set<string>();

const LOCK_DIR = 'vnfm.lock';

/** True when a process with this pid exists on this host (EPERM: it exists, owned by another user). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function generations(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return names
    .filter((n) => /^[0-9]{1,15}$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);
}

function readHolder(file: string): LockHolder | undefined | 'gone' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw e;
  }
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    if (typeof v.pid === 'number' && typeof v.hostname === 'string') return { pid: v.pid, hostname: v.hostname, startedAt: typeof v.startedAt === 'string' ? v.startedAt : 'unknown' };
  } catch {
    // unreadable: treated as stale below (files are published complete, so this is corruption)
  }
  return undefined;
}

function unlinkQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/**
 * Takes the exclusive lock of `dataDir` (created when missing). Throws {@link DataDirLockedError}
 * when another live process holds it; takes over a lock whose holder is dead (reported through
 * `onStale`).
 */
export function acquireDataDirLock(dataDir: string, opts: AcquireOptions = {}): DataDirLock {
  const root = resolve(dataDir);
  const dir = join(root, LOCK_DIR);
  mkdirSync(dir, { recursive: true });
  const self = opts.self ?? { pid: process.pid, hostname: osHostname() };
  const isAlive = opts.isAlive ?? pidAlive;
  const me: LockHolder = { pid: self.pid, hostname: self.hostname, startedAt: new Date().toISOString() };
  const tmp = join(dir, `.tmp-${self.pid}-${randomBytes(6).toString('hex')}`);
  writeFileSync(tmp, `${JSON.stringify(me)}\n`, { mode: 0o644 });
  let takenOverFrom: LockHolder | undefined;
  try {
    for (let round = 0; round < 1000; round++) {
      const gens = generations(dir);
      const top = gens.at(-1) ?? 0;
      if (top > 0) {
        const file = join(dir, String(top));
        const holder = readHolder(file);
        if (holder === 'gone') continue; // released meanwhile: look again
        if (holder !== undefined) {
          const here = holder.hostname === self.hostname;
          // Our own pid: either a lock this process holds (refuse), or one left by an earlier
          // incarnation that had the same pid (containers restart with the same pid): stale.
          const alive = !here || (holder.pid === self.pid ? heldHere.has(file) : isAlive(holder.pid));
          if (alive) throw new DataDirLockedError(root, holder, file);
        }
        takenOverFrom = holder ?? { pid: 0, hostname: 'unknown', startedAt: 'unknown (unreadable lock file)' };
      }
      const mine = join(dir, String(top + 1));
      try {
        linkSync(tmp, mine);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue; // another process was quicker
        throw e;
      }
      // A racer that judged an older generation stale may have created a newer one meanwhile.
      if ((generations(dir).at(-1) ?? 0) > top + 1) {
        unlinkQuiet(mine);
        takenOverFrom = undefined;
        continue;
      }
      for (const g of generations(dir)) if (g < top + 1) unlinkQuiet(join(dir, String(g)));
      if (takenOverFrom !== undefined) opts.onStale?.(takenOverFrom, join(dir, String(top)));
      heldHere.add(mine);
      let released = false;
      return {
        file: mine,
        holder: me,
        takenOverFrom,
        release() {
          if (released) return;
          released = true;
          heldHere.delete(mine);
          unlinkQuiet(mine);
        },
      };
    }
    throw new Error(`cannot lock the data directory ${root}: too much contention on ${dir}`);
  } finally {
    unlinkQuiet(tmp);
  }
}
