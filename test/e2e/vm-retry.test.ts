/**
 * Automatic step retries end to end on the simulated OpenStack: VIM errors injected through the
 * sim's fault API (`/_sim/api/break`) during a VNFC heal. The OpenStack driver is built without
 * its own per-request retries here (one attempt per HTTP request), so every injected answer
 * reaches the engine:
 *
 * - Heat answering 503 twice: the engine re-runs the infra step with back-off and the heal
 *   COMPLETES without any retry request; both failed attempts are recorded on the op occ.
 * - Heat answering 429 with Retry-After: the next attempt waits at least that long.
 * - Heat answering 400 or 404: terminal, FAILED_TEMP at once after one attempt.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenStackDriver } from '../../src/infra/openstack/index.ts';
import { getInstance, instantiated, type Json, notificationsOf, request, serversOf, startVmEnv, type VmEnv, waitOp } from './vm-fixture.ts';

let env: VmEnv;

before(async () => {
  env = await startVmEnv({
    target: 'sim',
    heatDelayMs: 20,
    config: { runner: { stepRetries: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 5000 } } },
    plugins: [(ctx) => ctx.engine?.drivers.register(createOpenStackDriver({ http: { attempts: 1 } }))],
  });
});
after(async () => {
  await env?.close();
});

async function opRow(id: string): Promise<Json> {
  return env.vnfm.store.db.selectFrom('op_occ').selectAll().where('id', '=', id).executeTakeFirstOrThrow() as Promise<Json>;
}

async function healFirstVnfc(id: string): Promise<{ opId: string; before: Json }> {
  const before = await getInstance(env, id);
  const opId = await request(env, 'v2', id, 'heal', { vnfcInstanceId: [before.instantiatedVnfInfo.vnfcInfo[0].id] });
  return { opId, before };
}

describe('automatic retries on the simulated OpenStack', () => {
  it('Heat answering 503 twice: the heal is retried and COMPLETES without a retry request; attempts recorded', async () => {
    const id = await instantiated(env, 'v2', 'vm-retry-503');
    await env.simControl('POST', 'api/break', { count: 2, status: 503, services: ['orchestration'] });
    const { opId, before } = await healFirstVnfc(id);
    const occ = await waitOp(env, opId, 'COMPLETED');
    assert.equal(occ.error, undefined);
    const row = await opRow(opId);
    // The heal reads the stack and the target's nested stack at once: the two 503s fail one attempt
    // (both requests of it) or two (one each); either way the infra step is re-run until it completes.
    const retries = row.ctx.retries.map((r: Json) => [r.step, r.attempt]);
    assert.ok(retries.length === 1 || retries.length === 2, JSON.stringify(retries));
    assert.deepEqual(retries, retries.map((_: unknown, i: number) => ['infra', i + 1]));
    for (const r of row.ctx.retries) assert.match(r.detail, /answered 503/);
    assert.equal(row.step_attempts, 0);
    assert.equal((await env.simControl('GET', 'state')).config.breakRemaining, 0, 'both injected answers were used');
    assert.deepEqual(await notificationsOf(env, opId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT']);
    const after = await getInstance(env, id);
    const changed = [...serversOf(after)].filter(([rid, srv]) => serversOf(before).get(rid) !== srv);
    assert.equal(changed.length, 1, 'exactly the target was replaced');
  });

  it('Heat answering 429 with Retry-After: the next attempt waits for it', async () => {
    const id = await instantiated(env, 'v2', 'vm-retry-429');
    await env.simControl('POST', 'api/break', { count: 1, status: 429, services: ['orchestration'], retryAfter: 1 });
    const { opId } = await healFirstVnfc(id);
    await waitOp(env, opId, 'COMPLETED');
    const [entry, ...more] = (await opRow(opId)).ctx.retries;
    assert.equal(more.length, 0);
    assert.match(entry.detail, /answered 429/);
    assert.ok(entry.delayMs >= 1000, `delay ${entry.delayMs} ms honours Retry-After: 1`);
  });

  // 404: the heal reads the target's nested stack (a 404 there only means its stored location is
  // stale: the driver falls back to the listing) while it looks the stack up by id, then by name;
  // three 404s leave the stack unfound either way = the stack is gone.
  for (const { status, count } of [
    { status: 400, count: 1 },
    { status: 404, count: 3 },
  ]) {
    it(`Heat answering ${status}: terminal, FAILED_TEMP at once after one attempt; retry then completes`, async () => {
      const id = await instantiated(env, 'v2', `vm-retry-${status}`);
      await env.simControl('POST', 'api/break', { count, status, services: ['orchestration'] });
      const { opId } = await healFirstVnfc(id);
      const occ = await waitOp(env, opId, 'FAILED_TEMP');
      assert.ok(occ.error?.detail, JSON.stringify(occ.error));
      const row = await opRow(opId);
      assert.equal(row.ctx.retries, undefined, 'no automatic retry');
      assert.equal(row.step_attempts, 0);
      assert.deepEqual(await notificationsOf(env, opId), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT']);
      const retry = await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`);
      assert.equal(retry.status, 202, retry.text);
      await waitOp(env, opId, 'COMPLETED');
    });
  }
});
