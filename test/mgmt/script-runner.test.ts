/**
 * Hook scripts and the op's AbortSignal: when the op must stop (lease lost, VNFM shutting down) the
 * running script gets SIGTERM, and SIGKILL when it ignores that for the kill grace period; the hook
 * ends with the terminal `VNFM_ERR_LCM_INTERRUPTED`. Positions are taken from the script's own
 * marker file (it writes its pid once it runs), never from sleeps.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isVnfmError } from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import type { MgmtContext } from '../../src/mgmt/mgmt-driver.ts';
import { ScriptMgmtDriver } from '../../src/mgmt/script-runner.ts';

let work: string;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'vnfm-hook-test-'));
});
after(() => {
  rmSync(work, { recursive: true, force: true });
});

/** A context running `script` as the heal_start hook; the script writes `<pid>` to `marker` first. */
function contextFor(script: string, signal: AbortSignal): MgmtContext {
  const file = 'Scripts/hook.sh';
  return {
    hook: 'heal_start',
    instance: { id: 'i-1' },
    opOcc: { id: 'o-1', operation: 'HEAL' },
    request: {},
    vnfd: {},
    flavour: { lcmHooks: { heal_start: { hook: 'heal_start', artifactName: 'hook', file, type: 'tosca.artifacts.Implementation.Bash' } } },
    vim: undefined,
    grantRequest: null,
    grant: null,
    files: async () => new Map([[file, Buffer.from(script)]]),
    state: {},
    checkpoint: async () => undefined,
    signal,
    log: createLogger('silent'),
    config: {},
    publicUrl: 'http://127.0.0.1:9890',
  } as unknown as MgmtContext;
}

async function pidFrom(marker: string): Promise<number> {
  for (;;) {
    if (existsSync(marker)) {
      const t = readFileSync(marker, 'utf8').trim();
      if (t !== '') return Number(t);
    }
    await sleep(10);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('hook scripts stop with the operation', () => {
  it('SIGTERM on abort: the script ends and the hook fails with VNFM_ERR_LCM_INTERRUPTED', async () => {
    const marker = join(work, 'term');
    const script = ['#!/bin/sh', 'cat >/dev/null', `echo $$ > '${marker}'`, 'exec sleep 600', ''].join('\n');
    const ac = new AbortController();
    const run = new ScriptMgmtDriver({ timeoutMs: 600_000, killGraceMs: 60_000 }).run(contextFor(script, ac.signal));
    const pid = await pidFrom(marker);
    ac.abort(new Error('the VNFM is shutting down'));
    await assert.rejects(run, (e: unknown) => {
      assert.ok(isVnfmError(e, 'VNFM_ERR_LCM_INTERRUPTED'), String(e));
      assert.equal(e.retryable, false);
      assert.match(e.message, /SIGTERM/);
      assert.match(e.message, /the VNFM is shutting down/);
      return true;
    });
    assert.equal(alive(pid), false, 'the script process is gone');
  });

  it('SIGKILL after the kill grace when the script ignores SIGTERM', async () => {
    const marker = join(work, 'kill');
    const script = ['#!/bin/sh', "trap '' TERM", 'cat >/dev/null', `echo $$ > '${marker}'`, 'while :; do sleep 0.05; done', ''].join('\n');
    const ac = new AbortController();
    const run = new ScriptMgmtDriver({ timeoutMs: 600_000, killGraceMs: 100 }).run(contextFor(script, ac.signal));
    const pid = await pidFrom(marker);
    ac.abort(new Error('lease lost'));
    await assert.rejects(run, (e: unknown) => isVnfmError(e, 'VNFM_ERR_LCM_INTERRUPTED') && /SIGKILL/.test(e.message));
    assert.equal(alive(pid), false);
  });

  it('an already aborted op does not start the script', async () => {
    const marker = join(work, 'never');
    const ac = new AbortController();
    ac.abort(new Error('lease lost'));
    await assert.rejects(new ScriptMgmtDriver().run(contextFor(`#!/bin/sh\necho $$ > '${marker}'\n`, ac.signal)), (e: unknown) => isVnfmError(e, 'VNFM_ERR_LCM_INTERRUPTED'));
    assert.equal(existsSync(marker), false);
  });
});

describe('hook script containment', () => {
  it('runs with a scrubbed environment: none of the VNFM\'s variables reach the script', async () => {
    process.env.VNFM_SECRET_KEY_PROBE = 'do-not-leak-1234';
    try {
      const ac = new AbortController();
      const r = (await new ScriptMgmtDriver().run(contextFor('#!/bin/sh\nprintf \'{"metadata":{"env":"%s"}}\' "$(env | sort | tr \'\\n\' \' \')"\n', ac.signal))) as { metadata: { env: string } };
      assert.doesNotMatch(r.metadata.env, /do-not-leak-1234|VNFM_SECRET_KEY_PROBE/);
      assert.match(r.metadata.env, /VNFM_HOOK=heal_start/);
      assert.match(r.metadata.env, /PATH=/);
    } finally {
      delete process.env.VNFM_SECRET_KEY_PROBE;
    }
  });

  it('a timeout kills the whole process group, children included', async () => {
    const marker = join(work, 'child.pid');
    const ac = new AbortController();
    // The script starts a child that would outlive it, records the child's pid, then hangs.
    const run = new ScriptMgmtDriver({ timeoutMs: 1500 }).run(contextFor(`#!/bin/sh\nsleep 600 &\necho $! > '${marker}'\nwait\n`, ac.signal));
    await assert.rejects(run, (e: unknown) => isVnfmError(e, 'VNFM_ERR_MGMT_FAILED') && /timed out/.test((e as Error).message));
    const child = await pidFrom(marker);
    for (let i = 0; i < 500 && alive(child); i++) await sleep(10);
    assert.equal(alive(child), false, 'the background child of the script was killed with it');
  });

  it('keeps only the tail of a large output', async () => {
    const ac = new AbortController();
    const run = new ScriptMgmtDriver({ outputMaxBytes: 1000 }).run(contextFor('#!/bin/sh\nhead -c 100000 /dev/zero | tr \'\\0\' x >&2\necho LAST-LINE >&2\nexit 3\n', ac.signal));
    await assert.rejects(run, (e: unknown) => {
      const m = (e as Error).message;
      assert.match(m, /LAST-LINE/);
      assert.match(m, /exit 3/);
      assert.ok(m.length < 3000, `message bounded (${m.length})`);
      return true;
    });
  });
});
