/**
 * One lab per machine: the bridge, the namespace names and `/etc/sudoers.d/hvlab` are machine-wide,
 * so a lab holds `/run/hvlab/lock` (created atomically with link(2), holding the owner's pid). A
 * lock whose owner is gone is taken over. Within one process the lock is counted, so a test that
 * holds it may start and stop labs and fleets inside and still check what they left.
 */
import { linkSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** Directory of the lab's run-time files (lock, mount points it made). */
export const LAB_RUN_DIR = '/run/hvlab';
const LOCK = join(LAB_RUN_DIR, 'lock');

/** Another process runs a lab on this machine. */
export class LabBusyError extends Error {}

let held = 0;

function holder(): { pid: number; startedAt?: string; what?: string } | undefined {
  try {
    return JSON.parse(readFileSync(LOCK, 'utf8')) as { pid: number; startedAt?: string; what?: string };
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function tryTake(what: string): { pid: number; startedAt?: string; what?: string } | undefined {
  mkdirSync(LAB_RUN_DIR, { recursive: true, mode: 0o755 });
  const tmp = `${LOCK}.${process.pid}`;
  writeFileSync(tmp, JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), what }));
  try {
    for (let i = 0; i < 3; i++) {
      try {
        linkSync(tmp, LOCK);
        return undefined;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        const h = holder();
        if (h && h.pid !== process.pid && alive(h.pid)) return h;
        // left by a process that is gone (or unreadable half-written): take it over
        rmSync(LOCK, { force: true });
      }
    }
    return holder() ?? { pid: -1 };
  } finally {
    rmSync(tmp, { force: true });
  }
}

/**
 * Takes the machine's lab lock, waiting up to `waitMs` for another process to give it up.
 * Returns the release function (idempotent). Throws {@link LabBusyError} naming the holder.
 */
export async function acquireLabLock(opts: { waitMs?: number; what?: string } = {}): Promise<() => void> {
  if (held === 0) {
    const deadline = Date.now() + (opts.waitMs ?? 0);
    for (;;) {
      const busy = tryTake(opts.what ?? 'lab');
      if (!busy) break;
      if (Date.now() >= deadline) {
        throw new LabBusyError(`another lab runs on this machine (pid ${busy.pid}${busy.what ? `, ${busy.what}` : ''}${busy.startedAt ? `, since ${busy.startedAt}` : ''}); stop it first (lab.waitForLockMs waits for it)`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  held++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held--;
    if (held === 0) {
      try {
        if (holder()?.pid === process.pid) unlinkSync(LOCK);
      } catch {
        // already gone
      }
    }
  };
}
