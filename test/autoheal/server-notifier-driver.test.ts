/**
 * The Server Notifier alarm registration driver, with the fake infra driver and a stand-in alarm
 * API: registration after instantiate / scale-out / heal (Keystone token, notify URL, fault ids),
 * removal before terminate / scale-in / heal, the journal that makes retry and rollback leave no
 * orphan or duplicate alarm, and the full loop with the fault intake (notification -> heal ->
 * new registration).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { createServerNotifierMgmtDriver } from '../../src/mgmt/drivers/server-notifier/index.ts';
import { type HookName, type MgmtContext, MgmtRunner } from '../../src/mgmt/mgmt-driver.ts';
import { AlarmFakeDriver, type AutohealVnfm, type NotifierStub, STUB_TOKEN, STUB_VIM_ID, registerNotifier, type TestVnfc, V2, faultBody, healsOf, instantiateVnf, keystoneVim, notify, onboardSample, opOcc, startAutohealVnfm, startNotifierStub, vnfcsOf, waitFor } from './fixture.ts';

let stub: NotifierStub;
let h: AutohealVnfm;
let vnfdId: string;

async function instantiate(extra: Record<string, unknown> = {}, expect?: string) {
  return instantiateVnf(h.vnfm, vnfdId, { vim: keystoneVim(stub.url), additionalParams: { ServerNotifierUri: stub.url, ServerNotifierFaultID: ['1234', '0002'], ...extra }, ...(expect ? { expect } : {}) });
}
async function run(method: 'POST' | 'PATCH', url: string, payload?: unknown) {
  const r = await h.vnfm.app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
  assert.equal(r.statusCode, 202, r.body);
  return String(r.headers.location).split('/').pop() as string;
}
async function task(occ: string, name: 'retry' | 'rollback') {
  const r = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_lcm_op_occs/${occ}/${name}`, headers: V2 });
  assert.equal(r.statusCode, 202, r.body);
}
async function until(occ: string, state: string) {
  await waitFor(async () => (await opOcc(h.vnfm, occ)).operationState === state, 15_000, `${occ} ${state}`);
}
/** Every current server has exactly one alarm at the stub, and the VNFC metadata names it. */
function assertRegistrationsMatch(vnfcs: TestVnfc[], instanceId: string) {
  const mine = [...stub.alarms.entries()].filter(([, a]) => a.faultAction.includes(instanceId));
  assert.equal(mine.length, vnfcs.length, `one alarm per server (${mine.length} for ${vnfcs.length})`);
  for (const v of vnfcs) {
    const a = stub.alarms.get(v.alarmId as string);
    assert.ok(a, `alarm ${v.alarmId} of ${v.vnfcInfoId} registered`);
    assert.equal(a?.serverId, v.serverId);
  }
}

before(async () => {
  stub = await startNotifierStub();
  const fake = new AlarmFakeDriver();
  fake.withAlarms = false;
  h = await startAutohealVnfm({ fake, windowMs: 300, plugin: { noMgmtDriver: false, serverNotifier: { backoffMs: 10 } }, config: { autoheal: { sweepMs: 100 } } });
  vnfdId = await onboardSample(h.vnfm);
  await registerNotifier(h.vnfm, stub.url, STUB_VIM_ID);
});
afterEach(async () => {
  stub.failPost = undefined;
  await h.ctx.engine?.runner.idle();
});
after(async () => {
  await h?.vnfm.close();
  await stub?.close();
});

describe('Server Notifier alarm registration driver', () => {
  it('registers every server after instantiate: tenant, notify URL, fault ids, Keystone token; settings kept in the instance metadata', async () => {
    const before = stub.calls.length;
    const { id, vnfcs } = await instantiate();
    const posts = stub.calls.slice(before).filter((c) => c.method === 'POST' && c.path.includes('/alarms'));
    assert.equal(posts.length, 3);
    for (const p of posts) {
      const server = /servers\/([^/]+)\/alarms$/.exec(p.path)?.[1] as string;
      assert.match(p.path, /^\/v2\/tenant-a\/servers\//);
      assert.equal(p.body?.fault_action, `${h.vnfm.ctx.config.publicUrl}/server_notification/vnf_instances/${id}/servers/${server}/notify`);
      assert.deepEqual(p.body?.fault_id, ['1234', '0002']);
      assert.equal(p.token, STUB_TOKEN);
      assert.ok(vnfcs.some((v) => v.serverId === server));
    }
    const inst = (await h.vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${id}`, headers: V2 })).json();
    assert.equal(inst.metadata.ServerNotifierUri, stub.url);
    assert.deepEqual(inst.metadata.ServerNotifierFaultID, ['1234', '0002']);
    const logs = h.vnfm.logs.join('');
    assert.ok(!logs.includes(STUB_TOKEN) && !logs.includes('vim-password-xyz'), 'no token or password in the logs');
  });

  it('stores the alarm id of each new server in vnfcResourceInfo.metadata.server_notification', async () => {
    const { id, vnfcs } = await instantiate();
    assertRegistrationsMatch(vnfcs, id);
  });

  it('heal: unregisters the target before, registers its new server after; other registrations untouched', async () => {
    const { id, vnfcs } = await instantiate();
    const [x, y, z] = vnfcs as [TestVnfc, TestVnfc, TestVnfc];
    const before = stub.calls.length;
    await until(await run('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [x.vnfcInfoId] }), 'COMPLETED');
    const calls = stub.calls.slice(before).filter((c) => c.path.includes('/alarms'));
    assert.deepEqual(calls.map((c) => c.method), ['DELETE', 'POST']);
    assert.ok(calls[0]?.path.endsWith(`/servers/${x.serverId}/alarms/${x.alarmId}`));
    const after = await vnfcsOf(h.vnfm, id);
    const nx = after.find((v) => v.vnfcInfoId === x.vnfcInfoId) as TestVnfc;
    assert.notEqual(nx.serverId, x.serverId);
    assert.notEqual(nx.alarmId, x.alarmId);
    for (const o of [y, z]) assert.equal(after.find((v) => v.vnfcInfoId === o.vnfcInfoId)?.alarmId, o.alarmId);
    assertRegistrationsMatch(after, id);
  });

  it('closes the loop: a fault notification with the registered alarm heals the VNFC and the new server is registered', async () => {
    const { id, vnfcs } = await instantiate();
    const v = vnfcs[2] as TestVnfc;
    const r = await notify(h.vnfm, id, v.serverId, faultBody(v, { fault_id: '0002' }));
    assert.equal(r.statusCode, 204, r.body);
    await waitFor(async () => (await healsOf(h.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 15_000, 'auto heal');
    await h.ctx.engine?.runner.idle();
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 1);
    assert.equal(heals[0]?.isAutomaticInvocation, true);
    const after = await vnfcsOf(h.vnfm, id);
    const nv = after.find((x) => x.vnfcInfoId === v.vnfcInfoId) as TestVnfc;
    assert.notEqual(nv.alarmId, v.alarmId, 're-registered with a new alarm id');
    assertRegistrationsMatch(after, id);
    const stale = await notify(h.vnfm, id, v.serverId, faultBody(v));
    assert.equal(stale.statusCode, 400, 'the old server/alarm is no longer accepted');
  });

  it('scale out registers the added server; scale in unregisters the removed one', async () => {
    const { id } = await instantiate();
    await until(await run('POST', `/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'VDU1_scale', numberOfSteps: 1 }), 'COMPLETED');
    const out = await vnfcsOf(h.vnfm, id);
    assert.equal(out.length, 4);
    assertRegistrationsMatch(out, id);
    await until(await run('POST', `/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_IN', aspectId: 'VDU1_scale', numberOfSteps: 1 }), 'COMPLETED');
    const inn = await vnfcsOf(h.vnfm, id);
    assert.equal(inn.length, 3);
    assertRegistrationsMatch(inn, id);
  });

  it('a failed registration fails the heal; retry finishes it without a duplicate or missing alarm', async () => {
    const { id, vnfcs } = await instantiate();
    const base = stub.posts;
    stub.failPost = (n) => n === base + 2;
    try {
      const occ = await run('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [vnfcs[0]?.vnfcInfoId, vnfcs[1]?.vnfcInfoId] });
      await until(occ, 'FAILED_TEMP');
      assert.match(JSON.stringify((await opOcc(h.vnfm, occ)).error), /Server Notifier alarm registration/);
      stub.failPost = undefined;
      await task(occ, 'retry');
      await until(occ, 'COMPLETED');
    } finally {
      stub.failPost = undefined;
    }
    assertRegistrationsMatch(await vnfcsOf(h.vnfm, id), id);
  });

  it('rollback of a failed instantiate removes the registrations it made', async () => {
    const base = stub.posts;
    stub.failPost = (n) => n === base + 2;
    let res: { id: string; opOccId: string };
    try {
      res = await instantiate({}, 'FAILED_TEMP');
    } finally {
      stub.failPost = undefined;
    }
    const mine = () => [...stub.alarms.values()].filter((a) => a.faultAction.includes(res.id));
    assert.equal(mine().length, 1, 'one registration made before the failure');
    await task(res.opOccId, 'rollback');
    await until(res.opOccId, 'ROLLED_BACK');
    assert.equal(mine().length, 0, 'no orphan alarm');
  });

  it('alarm removal is idempotent: an alarm already gone (DELETE 404) counts as removed; only removal hooks are declared resumable', async () => {
    const { id, vnfcs } = await instantiate();
    const [x] = vnfcs as [TestVnfc];
    // Removed behind the VNFM's back (or by an earlier attempt that died before its journal entry).
    stub.alarms.delete(x.alarmId as string);
    const before = stub.calls.length;
    await until(await run('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [x.vnfcInfoId] }), 'COMPLETED');
    const calls = stub.calls.slice(before).filter((c) => c.path.includes('/alarms'));
    assert.deepEqual(calls.map((c) => c.method), ['DELETE', 'POST'], 'the 404 did not stop the heal');
    assertRegistrationsMatch(await vnfcsOf(h.vnfm, id), id);

    const driver = createServerNotifierMgmtDriver();
    const idempotent = (hook: HookName) => driver.idempotent({ hook } as MgmtContext);
    for (const hook of ['heal_start', 'terminate_start', 'scale_start', 'instantiate_rollback_start', 'scale_rollback_start'] as HookName[]) assert.equal(idempotent(hook), true, hook);
    for (const hook of ['instantiate_end', 'heal_end', 'scale_end'] as HookName[]) assert.equal(idempotent(hook), false, `${hook} registers: a repeated POST could leave an orphan alarm`);
    // The engine resumes a hook step only when every driver acting on it says so.
    const runner = new MgmtRunner();
    runner.register({ name: 'removal', applies: () => true, run: async () => undefined, idempotent: () => true });
    assert.equal(runner.idempotent({ hook: 'heal_start' } as MgmtContext), true);
    runner.register({ name: 'script', applies: () => true, run: async () => undefined });
    assert.equal(runner.idempotent({ hook: 'heal_start' } as MgmtContext), false);
    assert.equal(new MgmtRunner().idempotent({ hook: 'heal_start' } as MgmtContext), false, 'no driver: nothing to resume');
  });

  it('terminate unregisters every server and drops the settings', async () => {
    const { id } = await instantiate();
    await until(await run('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' }), 'COMPLETED');
    assert.equal([...stub.alarms.values()].filter((a) => a.faultAction.includes(id)).length, 0);
    const inst = (await h.vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${id}`, headers: V2 })).json();
    assert.equal(inst.metadata?.ServerNotifierUri, undefined);
  });
});
