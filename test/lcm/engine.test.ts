/**
 * LCM engine through the HTTP API with the fake infra driver: every state transition, the 409
 * rules, retry / rollback / fail, restart recovery, and ETSI-valid op occ bodies. Runs on PGlite
 * and on PostgreSQL (describeStores; the PostgreSQL half is the `pg` stage).
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Runner } from '../../src/lcm/runner.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { type StoreEnv, describeStores } from '../helpers/db.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

const V2 = { version: '2.0.0' };
let vnfm: TestVnfm;
let fake: FakeDriver;
let vnfdId: string;

async function createInstance(v: 'v1' | 'v2' = 'v2'): Promise<string> {
  const r = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_instances`, headers: V2, payload: { vnfdId, vnfInstanceName: 'engine-test' } });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().id;
}

async function op(method: 'POST', url: string, payload?: unknown) {
  return vnfm.app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
}

async function accepted(url: string, payload: unknown): Promise<string> {
  const r = await op('POST', url, payload);
  assert.equal(r.statusCode, 202, r.body);
  assert.equal(r.body, '');
  return String(r.headers.location).split('/').pop() as string;
}

/** Makes the lease on an op occ run out now (what a dead runner's lease does after leaseMs). */
async function expireLease(opOccId: string): Promise<void> {
  await sql`update op_occ set lease_until = now() - interval '1 hour' where id = ${opOccId}`.execute(vnfm.store.db);
}

async function settle(): Promise<void> {
  await vnfm.ctx.engine?.runner.idle();
}

async function opOcc(id: string, v: 'v1' | 'v2' = 'v2') {
  const r = await vnfm.app.inject({ method: 'GET', url: `/vnflcm/${v}/vnf_lcm_op_occs/${id}`, headers: V2 });
  assert.equal(r.statusCode, 200, r.body);
  return r.json();
}

async function instance(id: string, v: 'v1' | 'v2' = 'v2') {
  const r = await vnfm.app.inject({ method: 'GET', url: `/vnflcm/${v}/vnf_instances/${id}`, headers: V2 });
  return r.json();
}

async function instantiated(v: 'v1' | 'v2' = 'v2'): Promise<string> {
  const id = await createInstance(v);
  const occ = await accepted(`/vnflcm/${v}/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: v === 'v2' ? { vim1: FAKE_VIM } : [{ id: 'vim1', ...FAKE_VIM }] });
  await settle();
  assert.equal((await opOcc(occ)).operationState, 'COMPLETED');
  return id;
}

await describeStores('LCM engine', (env: StoreEnv) => {
  before(async () => {
    fake = new FakeDriver();
    // Leases far longer than any test: no lease of the main runner may run out under load.
    vnfm = await testVnfm({ store: await env.open(), plugins: [(ctx) => ctx.engine?.drivers.register(fake)], config: { runner: { pollMs: 50, leaseMs: 60_000, concurrency: 8, workerId: 'w1' } } });
    const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
    // a subscription row so that notifications are written to the outbox
    await vnfm.store.db.insertInto('subscription').values({ id: 'sub-1', api_version: 'v2', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'x' }).execute();
  });
  after(async () => {
    await vnfm?.close();
  });

  it('instantiates: STARTING -> PROCESSING -> COMPLETED with 3 notifications and ETSI-valid bodies', async () => {
    const id = await createInstance();
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } });
    await settle();
    const occ = await opOcc(occId);
    assert.equal(occ.operationState, 'COMPLETED');
    assert.equal(occ.operation, 'INSTANTIATE');
    assert.ok(occ.grantId);
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    expectEtsiValid('v1', 'VnfLcmOpOcc', await opOcc(occId, 'v1'));
    const inst = await instance(id);
    assert.equal(inst.instantiationState, 'INSTANTIATED');
    const vnfcs = inst.instantiatedVnfInfo.vnfcResourceInfo;
    assert.equal(vnfcs.filter((v: { vduId: string }) => v.vduId === 'VDU1').length, 2);
    assert.equal(vnfcs.filter((v: { vduId: string }) => v.vduId === 'VDU2').length, 1);
    assert.equal(occ.resourceChanges.affectedVnfcs.length, 3);
    assert.ok(!JSON.stringify(inst).includes('fake-secret-pw'), 'accessInfo never returned');
    const notes = await vnfm.store.db.selectFrom('outbox').select('notification').orderBy('id').execute();
    const mine = notes.map((n) => n.notification as Record<string, unknown>).filter((n) => n.vnfLcmOpOccId === occId);
    assert.deepEqual(
      mine.map((n) => `${n.operationState}/${n.notificationStatus}`),
      ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT'],
    );
    for (const n of mine) expectEtsiValid('v2', 'VnfLcmOperationOccurrenceNotification', n);
  });

  it('reports external CPs from extVirtualLinks, and the v2 instance validates against ETSI', async () => {
    const id = await createInstance();
    const extVirtualLinks = [{ id: 'ext-net-1', resourceId: 'net-123', extCps: [{ cpdId: 'VDU1_CP1', cpConfig: { c1: { cpProtocolData: [{ layerProtocol: 'IP_OVER_ETHERNET' }] } } }] }];
    await accepted(`/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', extVirtualLinks, vimConnectionInfo: { vim1: FAKE_VIM } });
    await settle();
    const inst = await instance(id);
    assert.equal(inst.instantiatedVnfInfo.extCpInfo.length, 2, 'one ext CP per VDU1 VNFC');
    expectEtsiValid('v2', 'VnfInstance', inst);
    expectEtsiValid('v1', 'VnfInstance', await instance(id, 'v1'));
    const vnfc = inst.instantiatedVnfInfo.vnfcInfo[0].id;
    await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [vnfc] });
    await settle();
    const healed = await instance(id);
    assert.deepEqual(healed.instantiatedVnfInfo.extCpInfo, inst.instantiatedVnfInfo.extCpInfo, 'ext CP ids stable across heal');
    expectEtsiValid('v2', 'VnfInstance', healed);
  });

  it('heals one VNFC: only it is replaced, ids stay stable, MODIFIED in resourceChanges', async () => {
    const id = await instantiated();
    const before = (await instance(id)).instantiatedVnfInfo;
    const target = before.vnfcInfo[0];
    const targetRes = before.vnfcResourceInfo.find((r: { id: string }) => r.id === target.vnfcResourceInfoId);
    const calls0 = fake.calls.length;
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id], cause: 'test' });
    await settle();
    const occ = await opOcc(occId);
    assert.equal(occ.operationState, 'COMPLETED');
    assert.equal(fake.calls.slice(calls0).filter((c) => c === 'observe').length, 2, 'observed before heal_end and again after it (the hook may change the VIM)');
    const after = (await instance(id)).instantiatedVnfInfo;
    assert.deepEqual(after.vnfcInfo.map((v: { id: string }) => v.id).sort(), before.vnfcInfo.map((v: { id: string }) => v.id).sort());
    const healed = after.vnfcResourceInfo.find((r: { id: string }) => r.id === targetRes.id);
    assert.notEqual(healed.computeResource.resourceId, targetRes.computeResource.resourceId);
    for (const r of before.vnfcResourceInfo) {
      if (r.id === targetRes.id) continue;
      assert.equal(after.vnfcResourceInfo.find((x: { id: string }) => x.id === r.id).computeResource.resourceId, r.computeResource.resourceId);
    }
    assert.deepEqual(
      occ.resourceChanges.affectedVnfcs.map((a: { id: string; changeType: string }) => [a.id, a.changeType]),
      [[targetRes.id, 'MODIFIED']],
    );
    assert.equal(occ.resourceChanges.affectedVnfcs[0].metadata.replacedResourceId, targetRes.computeResource.resourceId);
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
  });

  it('rejects unknown VNFC ids with 422 naming them, and heal of a NOT_INSTANTIATED instance with 409', async () => {
    const id = await instantiated();
    const r = await op('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: ['nope-1'] });
    assert.equal(r.statusCode, 422);
    assert.match(r.json().detail, /nope-1/);
    const fresh = await createInstance();
    const r2 = await op('POST', `/vnflcm/v2/vnf_instances/${fresh}/heal`, {});
    assert.equal(r2.statusCode, 409);
    const r3 = await op('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { additionalParams: { all: 'yes' } });
    assert.equal(r3.statusCode, 400);
  });

  it('answers 409 synchronously while another operation runs', async () => {
    const id = await instantiated();
    let release!: () => void;
    fake.hold.set('heal', new Promise<void>((r) => (release = r)));
    const first = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    const second = await op('POST', `/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'VDU1_scale' });
    assert.equal(second.statusCode, 409);
    assert.match(second.json().detail, /in progress/);
    fake.hold.delete('heal');
    release();
    await settle();
    assert.equal((await opOcc(first)).operationState, 'COMPLETED');
  });

  it('FAILED_TEMP blocks other requests; retry completes; fail is 200 with the body', async () => {
    const id = await instantiated();
    fake.failNext.add('heal');
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await settle();
    let occ = await opOcc(occId);
    assert.equal(occ.operationState, 'FAILED_TEMP');
    assert.match(occ.error.detail, /fake VIM failure/);
    assert.ok(occ._links.retry && occ._links.rollback && occ._links.fail);
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    assert.equal((await op('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, {})).statusCode, 409);
    const rb = await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/rollback`);
    assert.equal(rb.statusCode, 422, 'heal rollback refused synchronously');
    const retry = await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/retry`);
    assert.equal(retry.statusCode, 202);
    await settle();
    occ = await opOcc(occId);
    assert.equal(occ.operationState, 'COMPLETED');
    assert.equal((await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/retry`)).statusCode, 409);
    // fail
    fake.failNext.add('heal');
    const occ2 = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await settle();
    const f = await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occ2}/fail`);
    assert.equal(f.statusCode, 200);
    assert.equal(f.json().operationState, 'FAILED');
    assert.equal((await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occ2}/fail`)).statusCode, 409);
    assert.equal((await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/unknown/fail`)).statusCode, 404);
  });

  it('scales out and in within the VNFD limits; rollback of a failed scale-out', async () => {
    const id = await instantiated();
    const countVdu1 = async () => (await instance(id)).instantiatedVnfInfo.vnfcResourceInfo.filter((v: { vduId: string }) => v.vduId === 'VDU1').length;
    const level = async () => (await instance(id)).instantiatedVnfInfo.scaleStatus.find((s: { aspectId: string }) => s.aspectId === 'VDU1_scale').scaleLevel;
    const l0 = await level();
    const n0 = await countVdu1();
    const calls0 = fake.calls.length;
    const out = await accepted(`/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'VDU1_scale', numberOfSteps: 1 });
    await settle();
    assert.equal((await opOcc(out)).operationState, 'COMPLETED');
    assert.equal(fake.calls.slice(calls0).filter((c) => c === 'observe').length, 1, 'no scale_end hook: the VIM is observed once');
    assert.equal(await countVdu1(), n0 + 1);
    assert.equal(await level(), l0 + 1);
    const tooFar = await op('POST', `/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'VDU1_scale', numberOfSteps: 5 });
    assert.equal(tooFar.statusCode, 400);
    assert.equal((await op('POST', `/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'nope' })).statusCode, 400);
    const inn = await accepted(`/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_IN', aspectId: 'VDU1_scale' });
    await settle();
    assert.equal((await opOcc(inn)).operationState, 'COMPLETED');
    assert.equal(await countVdu1(), n0);
    fake.failNext.add('scale');
    const bad = await accepted(`/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'VDU1_scale' });
    await settle();
    assert.equal((await opOcc(bad)).operationState, 'FAILED_TEMP');
    assert.equal((await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${bad}/rollback`)).statusCode, 202);
    await settle();
    assert.equal((await opOcc(bad)).operationState, 'ROLLED_BACK');
    assert.equal(await level(), l0);
  });

  it('rolls back a failed instantiate to NOT_INSTANTIATED', async () => {
    const id = await createInstance();
    fake.failNext.add('instantiate');
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } });
    await settle();
    assert.equal((await opOcc(occId)).operationState, 'FAILED_TEMP');
    assert.equal((await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/rollback`)).statusCode, 202);
    await settle();
    assert.equal((await opOcc(occId)).operationState, 'ROLLED_BACK');
    assert.equal((await instance(id)).instantiationState, 'NOT_INSTANTIATED');
    assert.equal(fake.vims.has(id), false);
  });

  it('terminates and then deletes; v1 heal of the whole VNF; v1 cancel rules', async () => {
    const id = await instantiated('v1');
    const v1inst = await instance(id, 'v1');
    expectEtsiValid('v1', 'VnfInstance', v1inst);
    const res = v1inst.instantiatedVnfInfo.vnfcResourceInfo[0];
    const h = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [res.id] });
    await settle();
    assert.equal((await opOcc(h, 'v1')).operationState, 'COMPLETED');
    const c = await op('POST', `/vnflcm/v1/vnf_lcm_op_occs/${h}/cancel`, { cancelMode: 'GRACEFUL' });
    assert.equal(c.statusCode, 409);
    const t = await accepted(`/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
    await settle();
    assert.equal((await opOcc(t)).operationState, 'COMPLETED');
    assert.equal((await instance(id)).instantiationState, 'NOT_INSTANTIATED');
    const del = await vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/v2/vnf_instances/${id}`, headers: V2 });
    assert.equal(del.statusCode, 204);
  });

  it('resumes an op whose runner died, and puts an op interrupted in an unsafe step in FAILED_TEMP', async () => {
    const id = await instantiated();
    const main = vnfm.ctx.engine?.runner as Runner;
    const executor = (main as unknown as { executor: never }).executor;
    await main.stop();
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    // A runner claims the op and dies without running it. While its lease runs, no other runner
    // gets the op; then the lease runs out (set explicitly: no sleep racing a short lease).
    const ghost = new Runner(vnfm.store.db, {} as never, { workerId: 'ghost', leaseMs: 60_000, pollMs: 50, concurrency: 1, singleProcess: false }, vnfm.ctx.log, vnfm.ctx.metrics);
    assert.equal((await ghost.claim(1)).length, 1);
    const rival = new Runner(vnfm.store.db, {} as never, { workerId: 'rival', leaseMs: 60_000, pollMs: 50, concurrency: 1, singleProcess: false }, vnfm.ctx.log, vnfm.ctx.metrics);
    assert.equal((await rival.claim(1)).length, 0, 'a leased op is not claimed by another runner');
    await expireLease(occId);
    const r2 = new Runner(vnfm.store.db, executor, { workerId: 'w2', leaseMs: 60_000, pollMs: 50, concurrency: 4, singleProcess: false }, vnfm.ctx.log, vnfm.ctx.metrics);
    await r2.start();
    await r2.idle();
    assert.equal((await opOcc(occId)).operationState, 'COMPLETED', 'resumed from the grant step');
    await r2.stop();
    // Dead runner was inside the start hook (not known to be safe to repeat).
    const occ2 = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await vnfm.store.db
      .updateTable('op_occ')
      .set({ lease_owner: 'ghost', lease_until: new Date(Date.now() + 60_000), ctx: JSON.stringify({ done: ['grant'], current: 'mgmt-start', driver: {}, mgmt: {} }), operation_state: 'PROCESSING' })
      .where('id', '=', occ2)
      .execute();
    // PGlite: after a restart on the embedded database, leases of earlier processes are void at
    // once (singleProcess). PostgreSQL: other processes may be alive, so the lease must run out.
    const singleProcess = env.kind === 'pglite';
    if (!singleProcess) await expireLease(occ2);
    const r3 = new Runner(vnfm.store.db, executor, { workerId: 'w3', leaseMs: 60_000, pollMs: 50, concurrency: 4, singleProcess }, vnfm.ctx.log, vnfm.ctx.metrics);
    await r3.start();
    await r3.idle();
    const o2 = await opOcc(occ2);
    assert.equal(o2.operationState, 'FAILED_TEMP');
    assert.match(o2.error.detail, /not resumed automatically/);
    assert.equal((await op('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occ2}/retry`)).statusCode, 202);
    r3.wake();
    await r3.idle();
    assert.equal((await opOcc(occ2)).operationState, 'COMPLETED');
    await r3.stop();
  });
});
