/**
 * The per-process cap on in-flight API requests (`api.maxInFlightRequests`, src/api/concurrency-cap.ts):
 *
 * - with 3 requests held inside the app, a 4th API request is answered at once with 503
 *   ProblemDetails (`VNFM_ERR_API_BUSY`) and `Retry-After`, a request with a body too; the refusal
 *   is counted in `vnfm_http_rejected_busy_total`;
 * - `/healthz`, `/readyz` and `/metrics` are exempt (answered normally while the cap is full);
 * - once the held requests finish (or their clients disconnect), requests are served again;
 * - configuration: defaults, env vars and validation.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { ConfigError, resolveConfig } from '../../src/config.ts';
import type { AppContext } from '../../src/core/services.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { until } from '../helpers/wait.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

function gate(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((r) => (release = r));
  return { wait, release };
}

describe('API concurrency cap', () => {
  let vnfm: TestVnfm;
  let stuck = gate();
  let entered = 0;
  let left = 0;

  before(async () => {
    vnfm = await testVnfm({
      listen: true,
      config: { api: { maxInFlightRequests: 3, busyRetryAfterSeconds: 7 } },
      plugins: [
        (ctx: AppContext) => {
          ctx.extraRoutes?.push((app: FastifyInstance) => {
            app.get('/test/stuck', async () => {
              entered++;
              try {
                await stuck.wait;
              } finally {
                left++;
              }
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

  const rejectedCount = async () => (await vnfm.ctx.metrics.httpRejectedBusy.get()).values.reduce((n, v) => n + v.value, 0);

  it('refuses the request beyond the cap at once with 503 + Retry-After; probes and metrics are exempt', async () => {
    stuck = gate();
    entered = 0;
    left = 0;
    const before = await rejectedCount();
    const held = Array.from({ length: 3 }, () => fetch(`${vnfm.url}/test/stuck`).then(async (r) => ({ status: r.status, body: (await r.json()) as Json })));
    await until('3 requests inside the app', () => entered === 3, 30_000, 5);

    const list = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { headers: { version: '2.0.0' } });
    assert.equal(list.status, 503);
    assert.equal(list.headers.get('retry-after'), '7');
    assert.match(list.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const p = (await list.json()) as Json;
    assert.equal(p.status, 503);
    assert.equal(p.type, 'urn:vnfm:error:VNFM_ERR_API_BUSY');
    assert.match(p.detail, /api\.maxInFlightRequests/);

    // a request with a body is refused too (its body drained, the connection reusable)
    const post = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { method: 'POST', headers: { version: '2.0.0', 'content-type': 'application/json' }, body: JSON.stringify({ vnfdId: 'x'.repeat(10_000) }) });
    assert.equal(post.status, 503);
    await post.arrayBuffer();

    // exempt: liveness, readiness, metrics
    assert.equal((await fetch(`${vnfm.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${vnfm.url}/readyz`)).status, 200);
    const metrics = await fetch(`${vnfm.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /vnfm_http_rejected_busy_total 2/);
    assert.equal(await rejectedCount(), before + 2);

    stuck.release();
    for (const r of await Promise.all(held)) assert.deepEqual(r, { status: 200, body: { done: true } });
    const again = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { headers: { version: '2.0.0' } });
    assert.equal(again.status, 200);
    assert.ok(Array.isArray(await again.json()));
  });

  it('a client that disconnects frees its slot', async () => {
    stuck = gate();
    entered = 0;
    left = 0;
    // 3 requests whose clients go away while the app still holds them
    const reqs = Array.from({ length: 3 }, () => {
      const r = httpRequest(`${vnfm.url}/test/stuck`);
      r.on('error', () => {});
      r.end();
      return r;
    });
    await until('3 requests inside the app', () => entered === 3, 30_000, 5);
    assert.equal((await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { headers: { version: '2.0.0' } })).status, 503);
    for (const r of reqs) r.destroy();
    // the slots are free as soon as the server sees the connections close, before the handlers return
    const ok = await until(
      'a request is served after the clients went away',
      async () => ((await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { headers: { version: '2.0.0' } })).status === 200 ? true : undefined),
      30_000,
      20,
    );
    assert.equal(ok, true);
    assert.equal(left, 0, 'the handlers were still waiting when the slots were given back');
    stuck.release();
    await until('handlers finished', () => left === 3, 30_000, 5);
  });
});

describe('api.* configuration', () => {
  it('has defaults, env vars and validation', () => {
    const d = resolveConfig({});
    assert.deepEqual(d.api, { maxInFlightRequests: 256, busyRetryAfterSeconds: 1 });
    const e = resolveConfig({ env: { VNFM_API_MAX_IN_FLIGHT_REQUESTS: '0', VNFM_API_BUSY_RETRY_AFTER_SECONDS: '3' } });
    assert.deepEqual(e.api, { maxInFlightRequests: 0, busyRetryAfterSeconds: 3 });
    assert.throws(() => resolveConfig({ flags: { api: { maxInFlightRequests: -1 } } }), (err: unknown) => err instanceof ConfigError && /api\.maxInFlightRequests/.test(err.message));
    assert.throws(() => resolveConfig({ flags: { api: { busyRetryAfterSeconds: 0 } } }), (err: unknown) => err instanceof ConfigError && /api\.busyRetryAfterSeconds/.test(err.message));
  });
});

describe('module settings checked once, at start', () => {
  it('refuses a VNFM whose cluster driver settings name an unknown knob or a wrong type', async () => {
    await assert.rejects(testVnfm({ config: { mgmt: { kubeadm: { pollIntervalMsx: 1 } } } as never }), (err: unknown) => err instanceof ConfigError && /mgmt\.kubeadm\.pollIntervalMsx: unknown setting/.test(err.message));
    await assert.rejects(testVnfm({ config: { mgmt: { kubespray: { playPollMs: 'fast' } } } as never }), (err: unknown) => err instanceof ConfigError && /mgmt\.kubespray\.playPollMs: must be a number/.test(err.message));
    assert.throws(() => resolveConfig({ flags: { sync: { settleAttempts: 0 } } as never }), (err: unknown) => err instanceof ConfigError && /sync\.settleAttempts/.test(err.message));
  });
});
