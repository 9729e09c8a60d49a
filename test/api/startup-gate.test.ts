/**
 * Start-up: the port opens before the modules start (the simulated cloud registers its default
 * VIMs, the runner resumes operations). API requests that arrive in between wait for the start-up
 * and are then answered with the started VNFM's data (a script that lists VIMs right after the
 * port opened sees the default VIMs); `/healthz` answers at once and `/readyz` says 503 with a
 * `startup` check (and how many requests wait) until every module started.
 *
 * The start-up is held by a last module whose start waits for the test, so the request is known to
 * be waiting (the `/readyz` count) before the start-up is released.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AppContext } from '../../src/core/services.ts';
import { testVnfm } from '../helpers/app.ts';
import { until } from '../helpers/wait.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

describe('start-up gate', () => {
  it('holds API requests until every module started; /readyz is 503 meanwhile, /healthz 200', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let listening!: (url: string) => void;
    const urlKnown = new Promise<string>((r) => (listening = r));
    const starting = testVnfm({
      listen: true,
      config: { sim: true, simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 } },
      plugins: [
        (ctx: AppContext) => ({
          async start() {
            listening(ctx.config.publicUrl);
            await held;
          },
        }),
      ],
    });
    const url = await urlKnown;
    let released = false;
    let answeredBeforeRelease = false;
    const vims = fetch(`${url}/v1.0/vims`).then(async (r) => {
      answeredBeforeRelease = !released;
      return { status: r.status, body: (await r.json()) as Json };
    });
    // the request is held: /readyz counts it; /healthz answers meanwhile
    await until(
      'the VIM list request to wait for the start-up',
      async () => {
        const r = await fetch(`${url}/readyz`);
        const b = (await r.json()) as Json;
        assert.equal(r.status, 503);
        assert.equal(b.checks.startup.status, 'fail');
        return b.checks.startup.waitingRequests === 1;
      },
      30_000,
    );
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    assert.equal(answeredBeforeRelease, false);
    released = true;
    release();
    const vnfm = await starting;
    try {
      const r = await vims;
      assert.equal(answeredBeforeRelease, false, 'the request was answered after the start-up, not before');
      assert.equal(r.status, 200);
      const names = (r.body.vims as Json[]).map((v) => v.name).sort();
      assert.deepEqual(names, ['sim-kubernetes', 'sim-openstack']);
      const ready = await fetch(`${url}/readyz`);
      const b = (await ready.json()) as Json;
      assert.equal(b.checks.startup, undefined, 'no startup check once started');
      assert.equal(ready.status, 200, JSON.stringify(b));
    } finally {
      await vnfm.close();
    }
  });
});
