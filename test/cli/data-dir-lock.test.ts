/**
 * One VNFM process per embedded data directory, with real processes (`vnfm start` through tsx):
 * a second `start` on a data directory in use exits non-zero at once with a message naming the
 * holder (pid, host, start time) and without touching the database; after the holder is killed
 * with SIGKILL its lock is stale and the next `start` takes it over (with a warning in its log);
 * a stopped VNFM releases its lock.
 *
 * Nothing is timed: each step waits for what the process prints or for its exit. Guards only stop
 * a hang on a loaded machine.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ROOT } from '../helpers/packages.ts';

/** Failure guard only: a start on a loaded 2-core machine (PGlite initdb) may take long. */
const GUARD_MS = 180_000;

interface Vnfm {
  proc: ChildProcess;
  stdout: string[];
  stderr: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const work = mkdtempSync(join(tmpdir(), 'vnfm-dirlock-'));
const dataDir = join(work, 'data');
const running: Vnfm[] = [];

after(async () => {
  for (const v of running) if (v.proc.exitCode === null && v.proc.signalCode === null) v.proc.kill('SIGKILL');
  await Promise.all(running.map((v) => v.exit));
  rmSync(work, { recursive: true, force: true });
});

function start(): Vnfm {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '--no-sim', '--data-dir', dataDir, '--port', '0', '--log-level', 'info'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0' },
  });
  const v: Vnfm = {
    proc,
    stdout: [],
    stderr: '',
    exit: new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  let partial = '';
  proc.stdout?.on('data', (c: Buffer) => {
    const lines = (partial + c.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    v.stdout.push(...lines);
  });
  proc.stderr?.on('data', (c: Buffer) => {
    v.stderr += c.toString('utf8');
  });
  running.push(v);
  return v;
}

/** The parsed log line with message `msg`, once it appears (or the process exits: then it fails). */
async function logLine(v: Vnfm, msg: string): Promise<Record<string, unknown>> {
  const end = Date.now() + GUARD_MS;
  for (;;) {
    for (const l of v.stdout) {
      if (!l.startsWith('{')) continue;
      const j = JSON.parse(l) as Record<string, unknown>;
      if (j.msg === msg) return j;
    }
    if (v.proc.exitCode !== null || v.proc.signalCode !== null) throw new Error(`the VNFM exited before logging "${msg}": ${v.stderr}`);
    if (Date.now() > end) throw new Error(`gave up waiting for "${msg}"`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function healthy(v: Vnfm): Promise<string> {
  const started = await logLine(v, 'VNFM started');
  const url = String(started.url);
  const r = await fetch(`${url}/healthz`);
  assert.equal(r.status, 200);
  return url;
}

describe('one VNFM process per data directory (vnfm start)', { timeout: 900_000 }, () => {
  it('a second process refuses to start, naming the holder; after kill -9 of the holder a new one takes the stale lock over', async () => {
    const first = start();
    const firstUrl = await healthy(first);

    const second = start();
    const out = await second.exit;
    assert.notEqual(out.code, 0, 'the second process exits non-zero');
    assert.equal(out.code, 3);
    assert.match(second.stderr, /cannot start: the data directory .* is in use by another VNFM process/);
    assert.match(second.stderr, new RegExp(`pid ${first.proc.pid} on host ${hostname()}, started \\d{4}-\\d{2}-\\d{2}T`));
    assert.ok(!second.stdout.some((l) => l.includes('"VNFM started"')), 'it never started');
    // The first one was not disturbed.
    assert.equal((await fetch(`${firstUrl}/healthz`)).status, 200);

    first.proc.kill('SIGKILL');
    assert.equal((await first.exit).signal, 'SIGKILL');

    const third = start();
    await healthy(third);
    const warning = await logLine(third, 'data directory lock left by a process that is gone; taken over');
    assert.equal(warning.stalePid, first.proc.pid);
    assert.equal(warning.staleHost, hostname());
    assert.equal(warning.level, 40, 'logged as a warning');

    third.proc.kill('SIGTERM');
    assert.equal((await third.exit).code, 0);
    assert.deepEqual(readdirSync(join(dataDir, 'vnfm.lock')), [], 'a stopped VNFM releases its lock');

    const fourth = start();
    await healthy(fourth);
    assert.ok(!fourth.stdout.some((l) => l.includes('taken over')), 'a released lock is not stale');
    fourth.proc.kill('SIGTERM');
    assert.equal((await fourth.exit).code, 0);
  });
});
