/**
 * The embedded data directory lock (src/store/data-dir-lock.ts), in process: a live holder makes
 * the next acquisition fail naming it (pid, host, start time); a holder whose pid is not alive on
 * this host is taken over with a report; a holder on another host is never taken over; release
 * frees the directory; racing acquirers of a stale lock end with exactly one holder. The
 * two-process behaviour of `vnfm start` is test/cli/data-dir-lock.test.ts.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type DataDirLock, DataDirLockedError, type LockHolder, acquireDataDirLock } from '../../src/store/data-dir-lock.ts';
import { openStore } from '../../src/store/db.ts';

const root = mkdtempSync(join(tmpdir(), 'vnfm-lock-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => join(root, `d${n++}`);

/** Writes a lock file as another process would have left it. */
function plant(dir: string, gen: number, holder: LockHolder): string {
  mkdirSync(join(dir, 'vnfm.lock'), { recursive: true });
  const file = join(dir, 'vnfm.lock', String(gen));
  writeFileSync(file, JSON.stringify(holder));
  return file;
}

describe('data directory lock', () => {
  it('a second acquisition while the first is held fails, naming the holder; release frees the directory', () => {
    const dir = freshDir();
    const first = acquireDataDirLock(dir);
    assert.equal(first.holder.pid, process.pid);
    assert.equal(first.holder.hostname, hostname());
    assert.ok(existsSync(first.file));
    assert.throws(
      () => acquireDataDirLock(dir),
      (e: unknown) => {
        assert.ok(e instanceof DataDirLockedError);
        assert.deepEqual(e.holder, first.holder);
        assert.match(e.message, new RegExp(`pid ${process.pid} on host ${hostname()}, started ${first.holder.startedAt}`));
        assert.match(e.message, /in use by another VNFM process/);
        return true;
      },
    );
    first.release();
    assert.equal(existsSync(first.file), false, 'released: the lock file is gone');
    first.release(); // idempotent
    const second = acquireDataDirLock(dir);
    assert.equal(second.takenOverFrom, undefined, 'a released lock is not a stale one');
    second.release();
  });

  it('a lock of a dead process on this host is taken over and reported once', () => {
    const dir = freshDir();
    const stale: LockHolder = { pid: 4_000_001, hostname: hostname(), startedAt: '2024-01-01T00:00:00.000Z' };
    const staleFile = plant(dir, 7, stale);
    const reports: [LockHolder, string][] = [];
    const lock = acquireDataDirLock(dir, { onStale: (h, f) => reports.push([h, f]), isAlive: (pid) => pid !== stale.pid });
    try {
      assert.deepEqual(reports, [[stale, staleFile]]);
      assert.deepEqual(lock.takenOverFrom, stale);
      assert.equal(lock.file, join(dir, 'vnfm.lock', '8'));
      assert.equal(existsSync(staleFile), false, 'the stale generation is removed');
    } finally {
      lock.release();
    }
  });

  it('a lock whose pid is alive, or that is held on another host, is never taken over', () => {
    const dir = freshDir();
    const live: LockHolder = { pid: 4242, hostname: hostname(), startedAt: '2024-01-01T00:00:00.000Z' };
    plant(dir, 1, live);
    assert.throws(() => acquireDataDirLock(dir, { isAlive: () => true }), (e: unknown) => e instanceof DataDirLockedError && e.holder.pid === 4242);
    const other = freshDir();
    const remote: LockHolder = { pid: 1, hostname: `not-${hostname()}`, startedAt: '2024-01-01T00:00:00.000Z' };
    plant(other, 3, remote);
    assert.throws(() => acquireDataDirLock(other, { isAlive: () => false }), (e: unknown) => e instanceof DataDirLockedError && e.holder.hostname === remote.hostname);
  });

  it('our own pid in a lock this process does not hold is an earlier incarnation (containers reuse pids): taken over', () => {
    const dir = freshDir();
    const earlier: LockHolder = { pid: process.pid, hostname: hostname(), startedAt: '2024-01-01T00:00:00.000Z' };
    plant(dir, 2, earlier);
    const lock = acquireDataDirLock(dir, { isAlive: () => true });
    assert.deepEqual(lock.takenOverFrom, earlier);
    lock.release();
  });

  it('acquirers racing for one stale lock: exactly one wins, the others are refused naming it', () => {
    const dir = freshDir();
    const stale: LockHolder = { pid: 4_000_002, hostname: hostname(), startedAt: '2024-01-01T00:00:00.000Z' };
    plant(dir, 1, stale);
    // Several "processes" (distinct pids on this host) see the same stale generation; each is run
    // to completion in turn, which is the worst interleaving for the ones after the first.
    const pids = [5_000_001, 5_000_002, 5_000_003];
    const alive = new Set<number>(pids);
    const won: DataDirLock[] = [];
    const refused: DataDirLockedError[] = [];
    for (const pid of pids) {
      try {
        won.push(acquireDataDirLock(dir, { self: { pid, hostname: hostname() }, isAlive: (p) => alive.has(p) }));
      } catch (e) {
        assert.ok(e instanceof DataDirLockedError, String(e));
        refused.push(e);
      }
    }
    assert.equal(won.length, 1);
    assert.equal(refused.length, 2);
    for (const r of refused) assert.equal(r.holder.pid, won[0]?.holder.pid);
    assert.deepEqual(readdirSync(join(dir, 'vnfm.lock')), ['2'], 'one generation left, no temporary file');
    won[0]?.release();
  });

  it('openStore locks an embedded data directory until closed; memory:// needs no lock', async () => {
    const dir = freshDir();
    const a = await openStore({ dataDir: dir });
    try {
      await assert.rejects(openStore({ dataDir: dir }), (e: unknown) => e instanceof DataDirLockedError && e.holder.pid === process.pid);
    } finally {
      await a.close();
    }
    const b = await openStore({ dataDir: dir });
    await b.close();
    const m1 = await openStore({ dataDir: 'memory://' });
    const m2 = await openStore({ dataDir: 'memory://' });
    await m1.close();
    await m2.close();
  });
});
