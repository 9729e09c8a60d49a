/**
 * The liveness port (`health.livenessPort`): `/healthz` answered by a worker thread.
 *
 * - off by default; when on it answers GET/HEAD `/healthz` (query string, trailing slash) with
 *   `{"status":"ok","mainLoopLagMs":n}`, 405 for other methods, 404 for other paths (readiness
 *   stays on the API port); `health.public: false` puts it behind the API token;
 * - in a child process whose main thread is wedged (test/helpers/liveness-child.ts): the liveness
 *   port answers 200 while the block lasts and the API port does not answer; the block is released
 *   by the test only after that answer, and the child confirms it was released (not ended by its
 *   guard), so the answer came during the block. With `maxStallMs: 300` the answer turns 503
 *   `stalled` during a block and 200 again after it;
 * - close() frees the port (it can be bound again); a port in use fails the start with a message
 *   naming the setting; config validation.
 *
 * Nothing is timed: each step waits for a state (a file, a message, an answer). Probe latency under
 * load belongs to bench/lists.ts.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, resolveConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startVnfm } from '../../src/main/server.ts';
import { freePort, testVnfm } from '../helpers/app.ts';
import { testStore } from '../helpers/db.ts';
import { ROOT } from '../helpers/packages.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

/** Resolves when a server can listen on `port` (the port is free), rejects with the listen error. */
function bindable(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => s.close(() => resolve()));
  });
}

describe('liveness port', () => {
  it('is off by default', async () => {
    const vnfm = await testVnfm({ listen: true });
    try {
      assert.equal(vnfm.livenessUrl, undefined);
      assert.ok(!vnfm.logs.some((l) => l.includes('liveness server listening')));
    } finally {
      await vnfm.close();
    }
  });

  it('answers GET/HEAD /healthz only; readiness stays on the API port; close() frees the port', async () => {
    const port = await freePort();
    const vnfm = await testVnfm({ listen: true, config: { health: { livenessPort: port } } });
    let closed = false;
    try {
      assert.equal(vnfm.livenessUrl, `http://127.0.0.1:${port}`);
      for (const path of ['/healthz', '/healthz?probe=k8s', '/healthz/']) {
        const r: Response = await fetch(`${vnfm.livenessUrl}${path}`);
        assert.equal(r.status, 200, path);
        assert.equal(r.headers.get('cache-control'), 'no-store');
        const body = (await r.json()) as Json;
        assert.equal(body.status, 'ok');
        assert.equal(typeof body.mainLoopLagMs, 'number');
        assert.ok(body.mainLoopLagMs >= 0);
      }
      const head = await fetch(`${vnfm.livenessUrl}/healthz`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
      const post = await fetch(`${vnfm.livenessUrl}/healthz`, { method: 'POST', body: 'x' });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get('allow'), 'GET, HEAD');
      assert.equal((await fetch(`${vnfm.livenessUrl}/readyz`)).status, 404);
      assert.equal((await fetch(`${vnfm.livenessUrl}/vnflcm/v2/vnf_instances`)).status, 404);
      // the API port keeps both probes
      assert.deepEqual(await (await fetch(`${vnfm.url}/healthz`)).json(), { status: 'ok' });
      assert.equal((await fetch(`${vnfm.url}/readyz`)).status, 200);
      await assert.rejects(bindable(port), /EADDRINUSE/);
      await vnfm.close();
      closed = true;
      await assert.rejects(fetch(`${vnfm.livenessUrl}/healthz`));
      await bindable(port);
    } finally {
      if (!closed) await vnfm.close();
    }
  });

  it('needs the API token with health.public false; open with health.public true', async () => {
    const closedVnfm = await testVnfm({ listen: true, config: { apiAuth: 'token', apiTokens: ['s3cret', 'other'], health: { public: false, livenessPort: await freePort() } } });
    try {
      const url = `${closedVnfm.livenessUrl}/healthz`;
      const none = await fetch(url);
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal((await fetch(url, { headers: { 'x-auth-token': 'wrong' } })).status, 401);
      assert.equal((await fetch(url, { headers: { authorization: 'Bearer s3cret' } })).status, 200);
      assert.equal((await fetch(url, { headers: { 'x-auth-token': 'other' } })).status, 200);
      assert.ok(!closedVnfm.logs.some((l) => l.includes('s3cret')), 'tokens are not logged');
    } finally {
      await closedVnfm.close();
    }
    const open = await testVnfm({ listen: true, config: { apiAuth: 'token', apiTokens: ['s3cret'], health: { livenessPort: await freePort() } } });
    try {
      assert.equal((await fetch(`${open.livenessUrl}/healthz`)).status, 200);
    } finally {
      await open.close();
    }
  });

  it('a liveness port in use fails the start, naming the setting', async () => {
    const blocker = createServer();
    const port = await new Promise<number>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)));
    const store = await testStore();
    try {
      const config = resolveConfig({ flags: { sim: false, dataDir: 'memory://', host: '127.0.0.1', port: 0, sync: { intervalMs: 0 }, health: { livenessPort: port } } });
      await assert.rejects(startVnfm(config, { store, logger: createLogger('silent') }), /health\.livenessPort.*EADDRINUSE/);
    } finally {
      await store.close();
      await new Promise((r) => blocker.close(r));
    }
  });
});

describe('liveness config', () => {
  it('has defaults and reads the environment', () => {
    const d = resolveConfig();
    assert.equal(d.health.livenessPort, 0);
    assert.equal(d.health.livenessHost, undefined);
    assert.equal(d.health.maxStallMs, 10_000);
    const e = resolveConfig({ env: { VNFM_HEALTH_LIVENESS_PORT: '9889', VNFM_HEALTH_LIVENESS_HOST: '0.0.0.0', VNFM_HEALTH_MAX_STALL_MS: '5000' } });
    assert.deepEqual([e.health.livenessPort, e.health.livenessHost, e.health.maxStallMs], [9889, '0.0.0.0', 5000]);
  });

  it('rejects bad values with messages naming the setting', () => {
    const bad: [Json, RegExp][] = [
      [{ health: { livenessPort: -1 } }, /health\.livenessPort: must be 0 \(off\) or a port 1-65535, got -1/],
      [{ health: { livenessPort: 70000 } }, /health\.livenessPort/],
      [{ health: { livenessPort: 1.5 } }, /health\.livenessPort/],
      [{ port: 9890, health: { livenessPort: 9890 } }, /health\.livenessPort: must differ from the API port \(9890\)/],
      [{ health: { livenessHost: '' } }, /health\.livenessHost/],
      [{ health: { maxStallMs: 100 } }, /health\.maxStallMs: must be an integer >= 200/],
      [{ health: { maxStallMs: 'soon' } }, /health\.maxStallMs/],
    ];
    for (const [flags, message] of bad) assert.throws(() => resolveConfig({ flags }), (e: Error) => e instanceof ConfigError && message.test(e.message), JSON.stringify(flags));
    assert.throws(() => resolveConfig({ env: { VNFM_HEALTH_MAX_STALL_MS: 'x' } }), /VNFM_HEALTH_MAX_STALL_MS: not a number/);
    // the same port on another address is allowed
    assert.equal(resolveConfig({ flags: { port: 9890, health: { livenessPort: 9890, livenessHost: '127.0.0.2' } } }).health.livenessPort, 9890);
  });
});

interface ChildUrls {
  api: string;
  liveness: string;
}

describe('liveness port while the main thread is wedged (child process)', () => {
  const work = mkdtempSync(join(tmpdir(), 'vnfm-liveness-'));
  let child: ChildProcess;
  let stderr = '';
  const messages: Json[] = [];
  let exited = false;
  let patient: ChildUrls;
  let strict: ChildUrls;
  let blocks = 0;

  /** The next message of `type` from the child (fails if the child exits first). */
  async function message(type: string): Promise<Json> {
    for (;;) {
      const i = messages.findIndex((m) => m.type === type);
      if (i >= 0) return messages.splice(i, 1)[0];
      assert.ok(!exited, `the child exited before sending ${type}: ${stderr}`);
      await sleep(20);
    }
  }

  /** Wedges the child's main thread; resolves once it is inside the block. */
  async function wedge(): Promise<{ release: () => Promise<boolean> }> {
    blocks++;
    const started = join(work, `started-${blocks}`);
    const release = join(work, `release-${blocks}`);
    child.send({ type: 'block', started, release });
    while (!existsSync(started)) {
      assert.ok(!exited, `the child exited: ${stderr}`);
      await sleep(10);
    }
    return {
      release: async () => {
        writeFileSync(release, '');
        return (await message('unblocked')).released as boolean;
      },
    };
  }

  before(async () => {
    child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/helpers/liveness-child.ts')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-8192);
    });
    child.on('message', (m) => messages.push(m));
    child.once('exit', () => {
      exited = true;
    });
    const ready = await message('ready');
    patient = ready.patient;
    strict = ready.strict;
  });
  after(async () => {
    if (!exited) child.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
  });

  it('answers 200 while the main thread is blocked; the API port does not answer until the block ends', async () => {
    const block = await wedge();
    let apiAnswered = false;
    const api = fetch(`${patient.api}/healthz`).then((r) => {
      apiAnswered = true;
      return r.status;
    });
    let status: number;
    let body: Json;
    try {
      const r = await fetch(`${patient.liveness}/healthz`);
      status = r.status;
      body = await r.json();
    } finally {
      assert.equal(apiAnswered, false, 'the API port answered while the main thread was blocked');
      assert.equal(await block.release(), true, 'the block was released by the test (not ended by its guard)');
    }
    assert.equal(status, 200);
    assert.equal(body.status, 'ok');
    assert.equal(typeof body.mainLoopLagMs, 'number');
    assert.equal(await api, 200);
  });

  it('answers 503 stalled once the main thread has not ticked for longer than maxStallMs, 200 again after', async () => {
    const block = await wedge();
    let stalled: Json;
    try {
      for (;;) {
        const r = await fetch(`${strict.liveness}/healthz`);
        const body = (await r.json()) as Json;
        if (r.status === 503) {
          stalled = body;
          break;
        }
        assert.equal(r.status, 200);
        await sleep(20);
      }
    } finally {
      assert.equal(await block.release(), true, 'the block was released by the test (not ended by its guard)');
    }
    assert.equal(stalled.status, 'stalled');
    assert.equal(stalled.maxStallMs, 300);
    assert.ok(stalled.mainLoopLagMs > 0);
    // the main thread turns again: the next ticks bring liveness back
    for (;;) {
      const r = await fetch(`${strict.liveness}/healthz`);
      await r.arrayBuffer();
      if (r.status === 200) break;
      assert.equal(r.status, 503);
      await sleep(20);
    }
  });

  it('frees both liveness ports when the VNFMs close', async () => {
    child.send({ type: 'close' });
    await message('closed');
    for (const u of [patient.liveness, strict.liveness]) {
      await assert.rejects(fetch(`${u}/healthz`));
      await bindable(Number(new URL(u).port));
    }
  });
});
