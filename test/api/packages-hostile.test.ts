/**
 * Onboarding that cannot take the VNFM down. Hostile packages are built in memory
 * (test/packages/hostile-packages.ts) and uploaded over real HTTP, while the test keeps asking
 * `/healthz`: the assertions are that health ANSWERS while the package is still PROCESSING (an
 * answer, not a time bound: latency is measured by bench/onboarding.ts) and that the package ends
 * in a documented state with a clear reason.
 *
 * - a 150 MiB YAML scalar (~150 KB zipped): refused while inflating by packages.maxVnfdBytes; with
 *   the size limits lifted, the worker process runs out of its heap and the package ends ERROR
 *   ("exceeded the memory limit"), the VNFM lives on;
 * - a 10,000-VDU VNFD: onboarded in the worker while other requests are answered;
 * - uploads beyond packages.maxConcurrentOnboardings: 503 + Retry-After, ProblemDetails;
 * - start-up: a package found PROCESSING is resumed once more, then marked ERROR;
 * - a real VNFM process on a data directory whose package is PROCESSING with the hostile content
 *   (what the old VNFM left when it crashed): it starts, marks the package ERROR and stays up,
 *   also on the next restart;
 * - hook temp dirs of dead VNFM processes are removed at start-up, others are kept.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { cleanupStaleHookDirs } from '../../src/mgmt/script-runner.ts';
import { json, openStore } from '../../src/store/db.ts';
import { freePort, type TestVnfm, testVnfm } from '../helpers/app.ts';
import { ROOT } from '../helpers/packages.ts';
import { manyVdusCsar, scalarBombCsar } from '../packages/hostile-packages.ts';

/** Failure guards only (a loaded 2-core machine). */
const GUARD_MS = 240_000;
const MiB = 1024 * 1024;

let bomb: Buffer;
let manyVdus: { csar: Buffer; vnfdId: string };

before(() => {
  bomb = scalarBombCsar(150);
  manyVdus = manyVdusCsar(10_000);
});

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, guardMs = GUARD_MS): Promise<T> {
  const end = Date.now() + guardMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what} after ${guardMs} ms`);
    await sleep(50);
  }
}

async function createPkg(url: string): Promise<string> {
  const r = await fetch(`${url}/vnfpkgm/v1/vnf_packages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(r.status, 201);
  return ((await r.json()) as { id: string }).id;
}

function putContent(url: string, id: string, zip: Buffer): Promise<Response> {
  return fetch(`${url}/vnfpkgm/v1/vnf_packages/${id}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(zip) });
}

// biome-ignore lint/suspicious/noExplicitAny: API JSON
async function getPkg(url: string, id: string): Promise<any> {
  return (await fetch(`${url}/vnfpkgm/v1/vnf_packages/${id}`)).json();
}

/**
 * Uploads `zip` and polls health and the package until it leaves PROCESSING. Returns the final
 * package and how many health answers came while the package was still PROCESSING afterwards.
 */
async function uploadWatchingHealth(url: string, zip: Buffer): Promise<{ pkg: Record<string, unknown> & { onboardingState: string }; healthDuring: number }> {
  const id = await createPkg(url);
  const up = await putContent(url, id, zip);
  assert.equal(up.status, 202, await up.text());
  let healthDuring = 0;
  const pkg = await until(`package ${id} to leave PROCESSING`, async () => {
    const h = await fetch(`${url}/healthz`);
    assert.equal(h.status, 200);
    const p = await getPkg(url, id);
    if (p.onboardingState === 'PROCESSING') {
      healthDuring++;
      return undefined;
    }
    return p;
  });
  return { pkg, healthDuring };
}

describe('hostile packages against a running VNFM', { timeout: 900_000 }, () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm({ listen: true });
  });
  after(async () => {
    await vnfm?.close();
  });

  it('a 150 MiB YAML scalar is refused while inflating (packages.maxVnfdBytes); the VNFM keeps answering', async () => {
    const { pkg } = await uploadWatchingHealth(vnfm.url, bomb);
    assert.equal(pkg.onboardingState, 'ERROR');
    const detail = (pkg.onboardingFailureDetails as { detail: string }).detail;
    assert.match(detail, /^Definitions\/vnfd\.yaml: the VNFD\/metadata file is larger than the limit of 4\.0 MiB \(packages\.maxVnfdBytes\)/);
    assert.equal((await fetch(`${vnfm.url}/healthz`)).status, 200);
  });

  it('a 10,000-VDU VNFD onboards in the worker while health and other requests are answered', async () => {
    const { pkg, healthDuring } = await uploadWatchingHealth(vnfm.url, manyVdus.csar);
    assert.ok(healthDuring > 0, 'health answered while the package was PROCESSING');
    // Onboarded, or refused by the documented time limit on a very slow machine.
    if (pkg.onboardingState === 'ERROR') assert.match((pkg.onboardingFailureDetails as { detail: string }).detail, /time limit .*packages\.onboardTimeoutMs/);
    else {
      assert.equal(pkg.onboardingState, 'ONBOARDED');
      assert.equal(pkg.vnfdId, manyVdus.vnfdId);
    }
  });
});

describe('with the size limits lifted, the worker runs out of heap, not the VNFM', { timeout: 900_000 }, () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm({ listen: true, config: { packages: { maxFileBytes: 512 * MiB, maxVnfdBytes: 512 * MiB, maxOldGenerationSizeMb: 64 } } });
  });
  after(async () => {
    await vnfm?.close();
  });

  it('ends ERROR with the memory limit in the reason; health answered during the onboarding', async () => {
    const { pkg, healthDuring } = await uploadWatchingHealth(vnfm.url, bomb);
    assert.equal(pkg.onboardingState, 'ERROR');
    assert.equal((pkg.onboardingFailureDetails as { detail: string }).detail, 'VNFD parsing exceeded the memory limit of 64 MiB (packages.maxOldGenerationSizeMb); the package is too large or too complex');
    assert.ok(healthDuring > 0, 'health answered while the package was PROCESSING');
  });
});

describe('onboarding concurrency and time limits', { timeout: 900_000 }, () => {
  let vnfm: TestVnfm;
  before(async () => {
    // one client uploads both: its per-caller share (429) is not what this test is about
    vnfm = await testVnfm({ listen: true, config: { packages: { maxConcurrentOnboardings: 1, maxConcurrentOnboardingsPerCaller: 2, busyRetryAfterSeconds: 7, onboardTimeoutMs: 1000 } } });
  });
  after(async () => {
    await vnfm?.close();
  });

  it('an upload beyond maxConcurrentOnboardings gets 503 + Retry-After (ProblemDetails), the package stays CREATED', async () => {
    const first = await createPkg(vnfm.url);
    const second = await createPkg(vnfm.url);
    assert.equal((await putContent(vnfm.url, first, manyVdus.csar)).status, 202);
    const r = await putContent(vnfm.url, second, buildCsarFromDir(join(ROOT, 'samples/vm-basic')));
    assert.equal(r.status, 503);
    assert.equal(r.headers.get('retry-after'), '7');
    assert.match(String(r.headers.get('content-type')), /^application\/problem\+json/);
    const p = (await r.json()) as { status: number; detail: string; type: string };
    assert.equal(p.status, 503);
    assert.equal(p.type, 'urn:vnfm:error:VNFM_ERR_PKG_BUSY');
    assert.match(p.detail, /packages\.maxConcurrentOnboardings/);
    assert.equal((await getPkg(vnfm.url, second)).onboardingState, 'CREATED');
    // The 1 s time limit ends the 10,000-VDU onboarding: ERROR with the limit named.
    await vnfm.ctx.packages.idle();
    const f = await getPkg(vnfm.url, first);
    assert.equal(f.onboardingState, 'ERROR');
    assert.equal(f.onboardingFailureDetails.detail, 'VNFD parsing exceeded the time limit of 1 s (packages.onboardTimeoutMs); the package is too large or too complex');
    // The slot is free again.
    assert.equal((await putContent(vnfm.url, second, buildCsarFromDir(join(ROOT, 'samples/vm-basic')))).status, 202);
    await vnfm.ctx.packages.idle();
  });
});

describe('start-up: a package found PROCESSING is resumed at most once more', { timeout: 600_000 }, () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm({ listen: true });
  });
  after(async () => {
    await vnfm?.close();
  });

  it('attempts < 2: onboarded again; attempts = 2: ERROR without another attempt', async () => {
    const db = vnfm.ctx.store.db;
    const good = buildCsarFromDir(join(ROOT, 'samples/vm-basic'));
    const base = { operational_state: 'DISABLED', usage_state: 'NOT_IN_USE', checksum: json(null), user_defined_data: json({}), vnfd: json(null) };
    await db
      .insertInto('vnf_package')
      .values([
        { ...base, id: 'resume-once', onboarding_state: 'PROCESSING', content: good, onboard_attempts: 1 },
        { ...base, id: 'gave-up', onboarding_state: 'PROCESSING', content: bomb, onboard_attempts: 2 },
      ])
      .execute();
    await vnfm.ctx.packages.recover(); // what startVnfm runs at start-up
    await vnfm.ctx.packages.idle();
    const resumed = await getPkg(vnfm.url, 'resume-once');
    assert.equal(resumed.onboardingState, 'ONBOARDED');
    const gaveUp = await getPkg(vnfm.url, 'gave-up');
    assert.equal(gaveUp.onboardingState, 'ERROR');
    assert.match(gaveUp.onboardingFailureDetails.detail, /^onboarding was interrupted 2 times .* upload the package content again/);
    const rows = await db.selectFrom('vnf_package').select(['id', 'onboard_attempts']).where('id', 'in', ['resume-once', 'gave-up']).orderBy('id').execute();
    assert.deepEqual(rows, [{ id: 'gave-up', onboard_attempts: 2 }, { id: 'resume-once', onboard_attempts: 2 }]);
  });
});

describe('a VNFM process restarted on a data directory holding the hostile package', { timeout: 900_000 }, () => {
  let work: string;
  let dataDir: string;
  let port: number;
  let url: string;
  let child: ChildProcess | undefined;
  let exited = false;

  async function start(): Promise<void> {
    exited = false;
    const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '--no-sim', '--data-dir', dataDir, '--port', String(port), '--log-level', 'warn'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      // The size limits lifted, so the 150 MiB scalar reaches the parser as it did in the probe.
      env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0', VNFM_PACKAGES_MAX_FILE_BYTES: String(512 * MiB), VNFM_PACKAGES_MAX_VNFD_BYTES: String(512 * MiB), VNFM_PACKAGES_MAX_OLD_GENERATION_SIZE_MB: '64' },
    });
    child = proc;
    proc.once('exit', () => {
      exited = true;
    });
    await until('the VNFM to answer /healthz', async () => {
      if (exited) throw new Error('the VNFM process exited during start');
      try {
        return (await fetch(`${url}/healthz`)).ok;
      } catch {
        return false;
      }
    });
  }

  async function stop(): Promise<void> {
    const proc = child;
    if (!proc || exited) return;
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await gone;
    child = undefined;
  }

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'vnfm-hostile-'));
    dataDir = join(work, 'data');
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    // What the old VNFM left behind: the package PROCESSING (it died while parsing it).
    const store = await openStore({ dataDir });
    await store.db
      .insertInto('vnf_package')
      .values({ id: 'hostile', onboarding_state: 'PROCESSING', operational_state: 'DISABLED', usage_state: 'NOT_IN_USE', checksum: json(null), user_defined_data: json({}), vnfd: json(null), content: bomb })
      .execute();
    await store.close();
  });
  after(async () => {
    if (child && !exited) child.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
  });

  it('starts, marks the package ERROR and stays up; the next start too', async () => {
    await start();
    const p = await until('the package to leave PROCESSING', async () => {
      assert.equal(exited, false, 'the VNFM process is alive');
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
      const b = await getPkg(url, 'hostile');
      return b.onboardingState === 'PROCESSING' ? undefined : b;
    });
    assert.equal(p.onboardingState, 'ERROR');
    assert.match(p.onboardingFailureDetails.detail, /exceeded the memory limit of 64 MiB/);
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    assert.equal(exited, false);
    await stop();
    await start();
    assert.equal((await getPkg(url, 'hostile')).onboardingState, 'ERROR');
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    assert.equal(exited, false);
    await stop();
  });
});

describe('hook script temp dirs', () => {
  it('dirs of dead VNFM processes are removed at start-up; live ones and foreign names are kept', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'vnfm-hookdirs-'));
    try {
      const dead = spawn(process.execPath, ['-e', '0']);
      const deadPid = await new Promise<number>((r) => dead.once('exit', () => r(dead.pid as number)));
      const mk = (name: string) => {
        mkdirSync(join(parent, name, 'Scripts'), { recursive: true });
        return join(parent, name);
      };
      const stale = mk(`vnfm-hook-${deadPid}-abc123`);
      const live = mk(`vnfm-hook-${process.ppid}-def456`);
      const mine = mk(`vnfm-hook-${process.pid}-ghi789`); // made by this process: in use
      const foreign = mk('vnfm-hook-XyZ12a');
      const removed = cleanupStaleHookDirs(parent);
      assert.deepEqual(removed, [stale]);
      assert.equal(existsSync(stale), false);
      for (const d of [live, mine, foreign]) assert.ok(existsSync(d), d);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
