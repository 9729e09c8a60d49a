/**
 * v1 cancel (SOL003 2.6.1 clause 5.4.17) of an operation that is running, with the fake infra
 * driver held at a known point (its heal waits for a promise the test releases) and the grant
 * request held likewise:
 *
 * - PROCESSING: 202 with an empty body; the op shows isCancelPending=true and the cancelMode while
 *   the VIM operation in flight goes on (GRACEFUL waits for it; FORCEFUL does not abort it either);
 *   then FAILED_TEMP with the reason, isCancelPending=false, cancelMode gone, a RESULT notification;
 *   retry continues after the finished step (the driver is not called again) to COMPLETED, or
 *   fail ends it FAILED.
 * - STARTING (grant in flight, or not claimed yet): ROLLED_BACK, nothing done on the VIM.
 * - 409 for COMPLETED and FAILED_TEMP ops, 404 for unknown ones; no cancel in the v2 API.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Runner } from '../../src/lcm/runner.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

let vnfm: TestVnfm;
let fake: FakeDriver;
let vnfdId: string;
/** A promise the code under test waits on (`wait`), with `reached` (it is waiting) and `release`. */
interface Gate {
  reached: Promise<void>;
  release: () => void;
  wait: () => Promise<void>;
}
function gate(): Gate {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  const released = new Promise<void>((r) => (release = r));
  return {
    reached,
    release,
    wait: async () => {
      reach();
      await released;
    },
  };
}

/** Grant requests seen, and a gate the next one waits on. */
let grantCalls = 0;
let grantGate: Gate | undefined;

/** Holds the fake driver's next `op` call; `reached` resolves once the driver is inside it. */
function holdDriver(op: string): { reached: Promise<void>; release: () => void } {
  let release!: () => void;
  fake.hold.set(op, new Promise<void>((r) => (release = r)));
  const count = () => fake.calls.filter((c) => c === op).length;
  const before = count();
  // The fake driver records the call, then waits for the hold.
  const reached = (async () => {
    while (count() === before) await new Promise((r) => setTimeout(r, 5));
  })();
  return {
    reached,
    release: () => {
      fake.hold.delete(op);
      release();
    },
  };
}

async function req(method: 'GET' | 'POST', url: string, payload?: unknown) {
  return vnfm.app.inject({ method, url, ...(url.includes('/v2/') ? { headers: { version: '2.0.0' } } : {}), ...(payload !== undefined ? { payload: payload as object } : {}) });
}

async function accepted(url: string, payload?: unknown): Promise<string> {
  const r = await req('POST', url, payload);
  assert.equal(r.statusCode, 202, r.body);
  assert.equal(r.body, '');
  return String(r.headers.location).split('/').pop() as string;
}

async function opOcc(id: string): Promise<Json> {
  const r = await req('GET', `/vnflcm/v1/vnf_lcm_op_occs/${id}`);
  assert.equal(r.statusCode, 200, r.body);
  return r.json();
}

async function vnfcs(id: string): Promise<{ id: string; resourceId: string }[]> {
  const r = await req('GET', `/vnflcm/v1/vnf_instances/${id}`);
  return r.json().instantiatedVnfInfo.vnfcResourceInfo.map((x: Json) => ({ id: x.id, resourceId: x.computeResource.resourceId }));
}

async function settle(): Promise<void> {
  await vnfm.ctx.engine?.runner.idle();
}

async function waitState(id: string, state: string): Promise<Json> {
  for (let i = 0; ; i++) {
    const o = await opOcc(id);
    if (o.operationState === state) return o;
    if (i > 2000) throw new Error(`op ${id} still ${o.operationState}, expected ${state}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** `operationState/notificationStatus` of the notifications written for one op, in order. */
async function notifications(opId: string): Promise<Json[]> {
  const rows = await vnfm.store.db.selectFrom('outbox').select(['notification', 'id']).orderBy('id').execute();
  return rows.map((r) => r.notification as Json).filter((n) => n.vnfLcmOpOccId === opId);
}
const shape = (ns: Json[]) => ns.map((n) => `${n.operationState}/${n.notificationStatus}`);

async function instantiated(): Promise<string> {
  const c = await req('POST', '/vnflcm/v1/vnf_instances', { vnfdId, vnfInstanceName: 'cancel-test' });
  assert.equal(c.statusCode, 201, c.body);
  const id = c.json().id as string;
  const occ = await accepted(`/vnflcm/v1/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: [{ id: 'vim1', ...FAKE_VIM }] });
  await settle();
  assert.equal((await opOcc(occ)).operationState, 'COMPLETED');
  return id;
}

/** Starts a v1 heal of one VNFC and returns once the driver is inside its (held) heal call. */
async function healHeldInDriver(id: string): Promise<{ occId: string; release: () => void; target: { id: string; resourceId: string } }> {
  const target = (await vnfcs(id))[0] as { id: string; resourceId: string };
  const hold = holdDriver('heal');
  const occId = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
  await hold.reached;
  return { occId, release: hold.release, target };
}

before(async () => {
  fake = new FakeDriver();
  vnfm = await testVnfm({
    plugins: [
      (ctx) => {
        ctx.engine?.drivers.register(fake);
        const grants = ctx.engine?.grants;
        if (!grants) throw new Error('no engine');
        const grant = grants.grant.bind(grants);
        grants.grant = async (r) => {
          grantCalls++;
          const g = grantGate;
          if (g) {
            grantGate = undefined;
            await g.wait();
          }
          return grant(r);
        };
      },
    ],
    config: { runner: { pollMs: 50, leaseMs: 5000, concurrency: 4, workerId: 'cancel-w1' } },
  });
  const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
  vnfdId = pkg.vnfdId as string;
  // a v1 subscription, so that notifications are written to the outbox (in the v1 shape)
  await vnfm.store.db.insertInto('subscription').values({ id: 'sub-cancel', api_version: 'v1', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'cancel' }).execute();
});
after(async () => {
  await vnfm?.close();
});

describe('v1 cancel of a running LCM operation', () => {
  it('GRACEFUL in PROCESSING: pending while the VIM operation finishes, then FAILED_TEMP; retry continues to COMPLETED', async () => {
    const id = await instantiated();
    const { occId, release, target } = await healHeldInDriver(id);
    const running = await opOcc(occId);
    assert.equal(running.operationState, 'PROCESSING');
    assert.equal(running.isCancelPending, false);
    assert.equal(running.cancelMode, undefined);
    assert.ok(running._links.cancel, 'a PROCESSING op links its cancel task');

    const c = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, { cancelMode: 'GRACEFUL' });
    assert.equal(c.statusCode, 202, c.body);
    assert.equal(c.body, '');
    // The driver is still inside its heal (held): the op is PROCESSING with the cancel pending.
    const pending = await opOcc(occId);
    assert.equal(pending.operationState, 'PROCESSING');
    assert.equal(pending.isCancelPending, true);
    assert.equal(pending.cancelMode, 'GRACEFUL');
    expectEtsiValid('v1', 'VnfLcmOpOcc', pending);

    const healsBefore = fake.calls.filter((x) => x === 'heal').length;
    release();
    await settle();
    const failed = await opOcc(occId);
    assert.equal(failed.operationState, 'FAILED_TEMP');
    assert.equal(failed.isCancelPending, false);
    assert.equal(failed.cancelMode, undefined, 'cancelMode is only shown while the cancel is pending');
    assert.match(failed.error.detail, /cancelled by request \(cancelMode GRACEFUL\)/);
    assert.ok(failed._links.retry && failed._links.fail && !failed._links.cancel);
    expectEtsiValid('v1', 'VnfLcmOpOcc', failed);
    // GRACEFUL: the VIM operation in flight was let finish (the fake VIM replaced the server),
    // and no later step ran (the instance info was not rebuilt from it).
    const vim = fake.vims.get(id) ?? [];
    assert.ok(!vim.some((v) => v.resourceId === target.resourceId), 'the held VIM operation completed');
    assert.equal((await vnfcs(id)).find((v) => v.id === target.id)?.resourceId, target.resourceId, 'finalize did not run');

    const ns = await notifications(occId);
    assert.deepEqual(shape(ns), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT']);
    assert.match(ns[2].error.detail, /cancelled by request/);
    for (const n of ns) expectEtsiValid('v1', 'VnfLcmOperationOccurrenceNotification', n);

    // A cancelled op is FAILED_TEMP: it cannot be cancelled again.
    assert.equal((await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, { cancelMode: 'GRACEFUL' })).statusCode, 409);

    // retry continues after the step that finished: the driver is not asked to heal again.
    const r = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/retry`);
    assert.equal(r.statusCode, 202, r.body);
    await settle();
    const done = await opOcc(occId);
    assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
    assert.equal(done.isCancelPending, false);
    assert.equal(fake.calls.filter((x) => x === 'heal').length, healsBefore);
    const after = await vnfcs(id);
    assert.deepEqual(after.map((v) => v.id).sort(), (await vnfcs(id)).map((v) => v.id).sort());
    assert.notEqual(after.find((v) => v.id === target.id)?.resourceId, target.resourceId, 'the healed server is reported after the retry');
    assert.deepEqual(shape(await notifications(occId)).slice(3), ['PROCESSING/START', 'COMPLETED/RESULT']);
  });

  it('FORCEFUL in PROCESSING (after a GRACEFUL request): mode updated, FAILED_TEMP, then fail -> FAILED', async () => {
    const id = await instantiated();
    const { occId, release } = await healHeldInDriver(id);
    assert.equal((await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, { cancelMode: 'GRACEFUL' })).statusCode, 202);
    const c = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, { cancelMode: 'FORCEFUL' });
    assert.equal(c.statusCode, 202, c.body);
    const pending = await opOcc(occId);
    assert.equal(pending.isCancelPending, true);
    assert.equal(pending.cancelMode, 'FORCEFUL');
    // FORCEFUL does not abort the VIM operation in flight (not supported): the op waits for it.
    assert.equal(pending.operationState, 'PROCESSING');
    release();
    const failed = await waitState(occId, 'FAILED_TEMP');
    assert.match(failed.error.detail, /cancelMode FORCEFUL/);
    assert.equal(failed.cancelMode, undefined);
    await settle();

    const f = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/fail`);
    assert.equal(f.statusCode, 200, f.body);
    assert.equal(f.json().operationState, 'FAILED');
    assert.equal((await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, {})).statusCode, 409, 'FAILED is final');
    assert.deepEqual(shape(await notifications(occId)), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT', 'FAILED/RESULT']);
    // The instance is free again: a new operation is accepted and completes.
    const next = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [(await vnfcs(id))[0]?.id] });
    await settle();
    assert.equal((await opOcc(next)).operationState, 'COMPLETED');
  });

  it('in STARTING while the grant is requested: cancel pending, then ROLLED_BACK with nothing done on the VIM', async () => {
    const id = await instantiated();
    const target = (await vnfcs(id))[0] as { id: string; resourceId: string };
    const g = gate();
    grantGate = g;
    const healsBefore = fake.calls.filter((x) => x === 'heal').length;
    const occId = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    await g.reached;
    const starting = await opOcc(occId);
    assert.equal(starting.operationState, 'STARTING');
    assert.ok(starting._links.cancel, 'a STARTING op links its cancel task');

    const c = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, { cancelMode: 'GRACEFUL' });
    assert.equal(c.statusCode, 202, c.body);
    const pending = await opOcc(occId);
    assert.equal(pending.operationState, 'STARTING', 'GRACEFUL waits for the grant request');
    assert.equal(pending.isCancelPending, true);
    assert.equal(pending.cancelMode, 'GRACEFUL');
    expectEtsiValid('v1', 'VnfLcmOpOcc', pending);

    g.release();
    await settle();
    const rolled = await opOcc(occId);
    assert.equal(rolled.operationState, 'ROLLED_BACK');
    assert.equal(rolled.isCancelPending, false);
    assert.equal(rolled.cancelMode, undefined);
    assert.match(rolled.error.detail, /cancelled by request/);
    expectEtsiValid('v1', 'VnfLcmOpOcc', rolled);
    assert.equal(fake.calls.filter((x) => x === 'heal').length, healsBefore, 'no resource management operation started');
    assert.equal((await vnfcs(id)).find((v) => v.id === target.id)?.resourceId, target.resourceId);
    assert.deepEqual(shape(await notifications(occId)), ['STARTING/START', 'ROLLED_BACK/RESULT']);
    assert.equal((await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, {})).statusCode, 409, 'ROLLED_BACK is final');
    assert.equal((await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/retry`)).statusCode, 409);
    // The instance is free again.
    const next = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    await settle();
    assert.equal((await opOcc(next)).operationState, 'COMPLETED');
  });

  it('in STARTING before any runner took it (no cancelMode given: GRACEFUL): ROLLED_BACK without a grant request', async () => {
    const id = await instantiated();
    const runner = vnfm.ctx.engine?.runner as Runner;
    await runner.stop();
    let occId: string;
    try {
      occId = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [(await vnfcs(id))[0]?.id] });
      const c = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, {});
      assert.equal(c.statusCode, 202, c.body);
      const pending = await opOcc(occId);
      assert.equal(pending.operationState, 'STARTING');
      assert.equal(pending.isCancelPending, true);
      assert.equal(pending.cancelMode, 'GRACEFUL');
    } finally {
      await runner.start();
    }
    const grantsBefore = grantCalls;
    await settle();
    const rolled = await opOcc(occId);
    assert.equal(rolled.operationState, 'ROLLED_BACK');
    assert.equal(grantCalls, grantsBefore, 'the grant was not requested');
    assert.deepEqual(shape(await notifications(occId)), ['STARTING/START', 'ROLLED_BACK/RESULT']);
  });

  it('answers 409 for COMPLETED and FAILED_TEMP ops, 404 for unknown ones, 400 for a bad mode; v2 has no cancel', async () => {
    const id = await instantiated();
    const target = (await vnfcs(id))[0] as { id: string };
    const done = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    await settle();
    assert.equal((await opOcc(done)).operationState, 'COMPLETED');
    const c1 = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${done}/cancel`, { cancelMode: 'GRACEFUL' });
    assert.equal(c1.statusCode, 409);
    assert.match(c1.json().detail, /is COMPLETED; only STARTING or PROCESSING/);
    assert.equal((await opOcc(done)).isCancelPending, false, 'a refused cancel leaves no trace');

    fake.failNext.add('heal');
    const failed = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    await settle();
    assert.equal((await opOcc(failed)).operationState, 'FAILED_TEMP');
    const c2 = await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${failed}/cancel`, { cancelMode: 'FORCEFUL' });
    assert.equal(c2.statusCode, 409);
    assert.match(c2.json().detail, /is FAILED_TEMP/);
    assert.equal((await opOcc(failed)).isCancelPending, false);

    assert.equal((await req('POST', '/vnflcm/v1/vnf_lcm_op_occs/no-such-op/cancel', {})).statusCode, 404);
    assert.equal((await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${failed}/cancel`, { cancelMode: 'SOMEHOW' })).statusCode, 400);
    assert.equal((await req('POST', `/vnflcm/v2/vnf_lcm_op_occs/${failed}/cancel`, {})).statusCode, 404, 'cancel is a v1 task only');
    await req('POST', `/vnflcm/v1/vnf_lcm_op_occs/${failed}/fail`);
  });
});
