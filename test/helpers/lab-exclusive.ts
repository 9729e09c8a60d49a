/**
 * One lab test file at a time on a machine. The lab itself allows one lab per machine and, when a
 * lab starts, cleans up what another data directory's lab left; a test that kills its VNFM and
 * restarts it (to show the hosts are adopted) must not see another test file's lab start in
 * between. The runner runs test files in parallel, so every test file that starts a lab takes this
 * lock first (a directory created atomically, with the holder's pid; a dead holder's lock is taken
 * over) and keeps it until its process exits.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const LOCK = '/run/vnfm-lab-tests.lock';
let held = false;

function holderAlive(): boolean {
  try {
    const pid = Number(readFileSync(`${LOCK}/pid`, 'utf8'));
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits until this process is the only lab test file running; idempotent. */
export async function labTestsExclusive(): Promise<void> {
  if (held) return;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(`${LOCK}/pid`, String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // a holder that died (or has not written its pid yet: give it a moment)
      if (!holderAlive()) {
        await sleep(200);
        if (!holderAlive()) rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
      await sleep(200);
    }
  }
  held = true;
  process.once('exit', () => rmSync(LOCK, { recursive: true, force: true }));
}
