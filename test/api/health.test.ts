/**
 * Liveness (`/healthz`) and readiness (`/readyz`):
 *
 * - both answer with `app.inject` and over a listening server (GET and HEAD); readiness names its
 *   checks (database, runner, simulator when the sim runs);
 * - liveness answers 200 while 20 requests are stuck inside the app and the embedded database is
 *   held by a long transaction; readiness then says 503 with the database check failed, and 200
 *   again once the transaction ends; a stopped runner or a closed store is 503 too;
 * - with `apiAuth: token` both stay open (`health.public` default true) while the API asks for a
 *   token; `health.public: false` puts them behind the token.
 *
 * No timing bounds here: probe latency under load belongs to bench/ (bench/lists.ts probes /healthz
 * every 50 ms under 20 concurrent listers).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../src/core/services.ts';
import type { Runner } from '../../src/lcm/runner.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

/** A promise released by the test. */
function gate(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((r) => (release = r));
  return { wait, release };
}

/** Holds the database: a transaction that stays open until released (PGlite serializes every query behind it). */
async function holdDatabase(vnfm: TestVnfm): Promise<{ release: () => Promise<void> }> {
  const g = gate();
  let started!: () => void;
  const inside = new Promise<void>((r) => (started = r));
  const tx = vnfm.ctx.store.db.transaction().execute(async (t) => {
    await t.selectFrom('op_occ').select('id').limit(1).execute();
    started();
    await g.wait;
  });
  await inside;
  return {
    release: async () => {
      g.release();
      await tx;
    },
  };
}

describe('health probes', () => {
  let vnfm: TestVnfm;
  /** Requests to /test/stuck wait here. */
  let stuck = gate();
  let stuckEntered = 0;

  before(async () => {
    vnfm = await testVnfm({
      listen: true,
      plugins: [
        (ctx: AppContext) => {
          ctx.extraRoutes?.push((app: FastifyInstance) => {
            app.get('/test/stuck', async () => {
              stuckEntered++;
              await stuck.wait;
              return { done: true };
            });
          });
        },
      ],
    });
  });
  after(async () => {
    stuck.release();
    await vnfm?.close();
  });

  it('answers liveness and readiness with app.inject', async () => {
    const live = await vnfm.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(live.statusCode, 200);
    assert.deepEqual(live.json(), { status: 'ok' });
    assert.equal((await vnfm.app.inject({ method: 'HEAD', url: '/healthz' })).statusCode, 200);
    const ready = await vnfm.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 200, ready.body);
    const body: Json = ready.json();
    assert.equal(body.status, 'ok');
    assert.equal(body.checks.database.status, 'ok');
    assert.equal(body.checks.runner.status, 'ok');
    assert.equal(body.checks.runner.running, true);
    assert.equal(body.checks.simulator, undefined, 'no simulator check when the sim does not run');
    assert.equal((await vnfm.app.inject({ method: 'POST', url: '/healthz' })).statusCode, 405);
  });

  it('answers over the listening server (GET, HEAD, query string, trailing slash)', async () => {
    const routed = async () => (await vnfm.ctx.metrics.httpRequests.get()).values.filter((v) => v.labels.route === '/healthz').reduce((n, v) => n + v.value, 0);
    const before = await routed();
    for (const path of ['/healthz', '/healthz?probe=k8s', '/healthz/']) {
      const r = await fetch(`${vnfm.url}${path}`);
      assert.equal(r.status, 200, path);
      assert.deepEqual(await r.json(), { status: 'ok' });
    }
    const head = await fetch(`${vnfm.url}/healthz`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    const ready = await fetch(`${vnfm.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(((await ready.json()) as Json).status, 'ok');
    // a routed answer says how long the VNFM took (W3C Server-Timing)
    const timing = ready.headers.get('server-timing') ?? '';
    assert.match(timing, /^app;dur=\d+\.\d{2}$/);
    assert.ok(Number(timing.split("=")[1]) >= 0, timing);
    // answered before Fastify: the router's request counter did not see them
    assert.equal(await routed(), before, 'liveness over the server is answered before routing');
    assert.ok(!vnfm.logs.some((l) => l.includes('short-circuit not installed')));
    // other methods still reach the router
    assert.equal((await fetch(`${vnfm.url}/healthz`, { method: 'DELETE' })).status, 405);
  });

  it('liveness answers while 20 requests are stuck in the app and the database is held; readiness is 503 until it is free', async () => {
    stuck = gate();
    stuckEntered = 0;
    // 20 requests that never finish while the test runs, plus 20 list requests that queue behind the held database
    const stuckReqs = Array.from({ length: 20 }, () => fetch(`${vnfm.url}/test/stuck`).then((r) => r.status));
    while (stuckEntered < 20) await new Promise((r) => setTimeout(r, 5));
    const db = await holdDatabase(vnfm);
    const lists = Array.from({ length: 20 }, (_, i) => fetch(`${vnfm.url}/vnflcm/${i % 2 ? 'v1' : 'v2'}/vnf_lcm_op_occs`, { headers: { version: '2.0.0' } }).then((r) => r.status));
    try {
      for (let i = 0; i < 3; i++) {
        const live = await fetch(`${vnfm.url}/healthz`);
        assert.equal(live.status, 200);
        assert.deepEqual(await live.json(), { status: 'ok' });
        assert.equal((await vnfm.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      }
      const ready = await fetch(`${vnfm.url}/readyz`);
      assert.equal(ready.status, 503);
      const body = (await ready.json()) as Json;
      assert.equal(body.status, 'fail');
      assert.equal(body.checks.database.status, 'fail');
      assert.match(body.checks.database.detail, /did not answer within/);
      // a second probe during the block shares the stuck query and answers too
      assert.equal((await vnfm.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503);
    } finally {
      await db.release();
      stuck.release();
    }
    assert.deepEqual(await Promise.all(stuckReqs), Array(20).fill(200));
    assert.deepEqual(await Promise.all(lists), Array(20).fill(200));
    const again = await fetch(`${vnfm.url}/readyz`);
    assert.equal(again.status, 200);
    assert.equal(((await again.json()) as Json).checks.database.status, 'ok');
  });

  it('readiness is 503 while the runner is stopped, liveness stays 200', async () => {
    const runner = vnfm.ctx.engine?.runner as Runner;
    await runner.stop();
    try {
      const r = await vnfm.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(r.statusCode, 503);
      const body: Json = r.json();
      assert.equal(body.checks.runner.status, 'fail');
      assert.equal(body.checks.runner.running, false);
      assert.equal(body.checks.database.status, 'ok');
      assert.equal((await fetch(`${vnfm.url}/healthz`)).status, 200);
    } finally {
      await runner.start();
    }
    assert.equal((await vnfm.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  });
});

describe('health probes with a closed store', () => {
  it('readiness 503 (database and runner), liveness 200', async () => {
    const vnfm = await testVnfm({ listen: true, config: { health: { readyTimeoutMs: 300 } } });
    try {
      await vnfm.ctx.engine?.runner.stop();
      await vnfm.store.close();
      const ready = await fetch(`${vnfm.url}/readyz`);
      assert.equal(ready.status, 503);
      const body = (await ready.json()) as Json;
      assert.equal(body.checks.database.status, 'fail');
      assert.equal((await fetch(`${vnfm.url}/healthz`)).status, 200);
      assert.equal((await vnfm.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    } finally {
      // workers stop, the server closes; the second close of the store is expected to fail
      await vnfm.close().catch(() => undefined);
    }
  });
});

describe('health probes with API auth', () => {
  it('are open by default when apiAuth is token; the API is not', async () => {
    const vnfm = await testVnfm({ listen: true, config: { apiAuth: 'token', apiTokens: ['s3cret'] } });
    try {
      for (const path of ['/healthz', '/readyz']) {
        assert.equal((await vnfm.app.inject({ method: 'GET', url: path })).statusCode, 200, `inject ${path}`);
        assert.equal((await fetch(`${vnfm.url}${path}`)).status, 200, `listening ${path}`);
      }
      const api = await fetch(`${vnfm.url}/vnflcm/v1/vnf_instances`);
      assert.equal(api.status, 401);
      assert.equal((await fetch(`${vnfm.url}/vnflcm/v1/vnf_instances`, { headers: { 'x-auth-token': 's3cret' } })).status, 200);
    } finally {
      await vnfm.close();
    }
  });

  it('need the token with health.public false', async () => {
    const vnfm = await testVnfm({ listen: true, config: { apiAuth: 'token', apiTokens: ['s3cret'], health: { public: false } } });
    try {
      for (const path of ['/healthz', '/readyz']) {
        const inj = await vnfm.app.inject({ method: 'GET', url: path });
        assert.equal(inj.statusCode, 401, `inject ${path}`);
        assert.equal(inj.headers['content-type'], 'application/problem+json; charset=utf-8');
        assert.equal((await fetch(`${vnfm.url}${path}`)).status, 401, `listening ${path}`);
        assert.equal((await fetch(`${vnfm.url}${path}`, { headers: { authorization: 'Bearer s3cret' } })).status, 200, `with token ${path}`);
        assert.equal((await vnfm.app.inject({ method: 'GET', url: path, headers: { 'x-auth-token': 's3cret' } })).statusCode, 200);
      }
    } finally {
      await vnfm.close();
    }
  });
});

describe('readiness with the simulated cloud', () => {
  it('names the simulator check', async () => {
    const vnfm = await testVnfm({ config: { sim: true, simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 } } });
    try {
      const r = await vnfm.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(r.statusCode, 200, r.body);
      const body: Json = r.json();
      assert.equal(body.checks.simulator.status, 'ok');
      assert.deepEqual(Object.keys(body.checks.simulator.servers).sort(), ['kubernetes', 'openstack', 'serverNotifier']);
    } finally {
      await vnfm.close();
    }
  });
});
