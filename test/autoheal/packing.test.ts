/**
 * Packing and batch outcomes end to end (HTTP intake -> batch -> heal op occ, fake driver):
 * several notifications in one window become ONE automatic heal; a busy VNF delays the heal
 * instead of dropping it; a FAILED_TEMP op holds the batch until resolved; stale targets are
 * dropped with a note; the storm guard suppresses and an operator releases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { HealBatchRecord } from '../../src/autoheal/ledger.ts';
import { type AutohealVnfm, type TestVnfc, V2, faultBody, healsOf, holdDriver, instantiateVnf, notify, onboardSample, opOcc, startAutohealVnfm, vnfcsOf, waitFor } from './fixture.ts';

const WINDOW = 400;
/** The fallback retry of a batch waiting for a busy VNF: long enough that only the end of the blocking op can fire it in a test. */
const BUSY_RETRY_MS = 600_000;
let h: AutohealVnfm;
let vnfdId: string;

async function batches(instanceId: string): Promise<(HealBatchRecord & { notifications?: { status: string; reason: string | null }[] })[]> {
  const r = await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches?vnfInstanceId=${instanceId}` });
  assert.equal(r.statusCode, 200);
  return r.json();
}
async function batch(id: string) {
  return (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches/${id}` })).json();
}
async function post(instanceId: string, v: TestVnfc, over: Record<string, unknown> = {}) {
  const r = await notify(h.vnfm, instanceId, v.serverId, faultBody(v, over));
  assert.equal(r.statusCode, 204, r.body);
}
async function completedHeals(instanceId: string, n: number) {
  await waitFor(async () => (await healsOf(h.vnfm, instanceId)).filter((o) => o.operationState === 'COMPLETED').length >= n, 15_000, `${n} heal(s) COMPLETED`);
  await h.ctx.engine?.runner.idle();
}
/** One full batcher cycle, run by the test: a positive sync point ("the batcher has looked at every due batch"). */
async function cycle(): Promise<number> {
  const b = h.ctx.autoheal?.batcher;
  assert.ok(b, 'auto-heal wired in');
  return b.cycle();
}
async function metric(name: string, label: string): Promise<number> {
  const m = (await h.vnfm.app.inject({ method: 'GET', url: '/metrics' })).body;
  return Number(new RegExp(`${name}\\{${label}\\} (\\d+)`).exec(m)?.[1] ?? Number.NaN);
}

before(async () => {
  h = await startAutohealVnfm({ windowMs: WINDOW, config: { autoheal: { sweepMs: 100, busyRetryMs: BUSY_RETRY_MS } } });
  vnfdId = await onboardSample(h.vnfm);
});
after(async () => {
  await h?.vnfm.close();
});

describe('auto-heal packing', () => {
  it('packs 3 notifications within the window into exactly one automatic heal of the 3 VNFCs', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId);
    // Each 204 means the notification is in the ledger; once the batch holding all four is done,
    // nothing else can make a heal of them (no pause needed before counting).
    // The batcher is stopped while the four arrive, so a slow machine cannot let the window close
    // between two of them: an open batch past its deadline still packs until the batcher claims it.
    const batcher = h.ctx.autoheal?.batcher;
    assert.ok(batcher, 'auto-heal wired in');
    await batcher.stop();
    for (const v of vnfcs) await post(id, v, { fault_type: '20' });
    await post(id, vnfcs[0] as TestVnfc, { fault_type: '21' });
    await batcher.start();
    await completedHeals(id, 1);
    await waitFor(async () => (await batches(id))[0]?.status === 'done', 5000, 'batch done');
    const all = await batches(id);
    assert.equal(all.length, 1, 'one batch');
    assert.equal(all[0]?.notificationCount, 4);
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 1, 'exactly one heal');
    const [heal] = heals;
    assert.equal(heal?.isAutomaticInvocation, true);
    assert.deepEqual([...(heal?.operationParams.vnfcInstanceId ?? [])].sort(), vnfcs.map((v) => v.vnfcInfoId).sort());
    assert.match(heal?.operationParams.cause ?? '', /^auto-heal: batch .*4 fault notification\(s\) for 3 VNFC\(s\) \(fault_type 20, 21\)/);
    const occ = await opOcc(h.vnfm, heal?.id as string);
    assert.equal(occ.isAutomaticInvocation, true);
    assert.equal(occ.operationState, 'COMPLETED');
    const after = await vnfcsOf(h.vnfm, id);
    for (const v of vnfcs) assert.notEqual(after.find((x) => x.vnfcInfoId === v.vnfcInfoId)?.serverId, v.serverId, 'server replaced');
    const [b] = await batches(id);
    // Not before the window ends, from the ledger's own timestamps: the batch got its deadline when
    // the first notification opened it, and fired (and the heal started) after that deadline.
    assert.equal(Date.parse(b?.deadline as string) - Date.parse(b?.createdAt as string), WINDOW, 'deadline = opened + window');
    assert.ok(Date.parse(b?.firedAt as string) >= Date.parse(b?.deadline as string), 'fired after the deadline');
    assert.ok(Date.parse(occ.startTime as string) >= Date.parse(b?.deadline as string), 'heal started after the deadline');
    assert.equal(b?.vnfLcmOpOccId, heal?.id);
    assert.deepEqual([...(b?.healedVnfcInstanceIds ?? [])].sort(), vnfcs.map((v) => v.vnfcInfoId).sort());
    const full = await batch(b?.id as string);
    assert.deepEqual(full.notifications.map((n: { status: string }) => n.status), ['done', 'done', 'done', 'done']);
    assert.ok((await metric('vnfm_autoheal_batches_total', 'result="healed"')) >= 1);
  });

  it('waits for a busy VNF and heals right after the blocking op ends; a target healed meanwhile is dropped', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId);
    const [x, y] = vnfcs as [TestVnfc, TestVnfc];
    const release = holdDriver(h.fake, 'heal');
    const r = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/heal`, headers: V2, payload: { vnfcInstanceId: [x.vnfcInfoId] } });
    assert.equal(r.statusCode, 202);
    const manual = String(r.headers.location).split('/').pop() as string;
    await waitFor(async () => (await opOcc(h.vnfm, manual)).operationState === 'PROCESSING', 5000, 'manual heal PROCESSING');
    await post(id, x);
    await post(id, y);
    await waitFor(async () => (await batches(id))[0]?.status === 'waiting', 5000, 'batch waiting');
    const [w] = await batches(id);
    assert.match(w?.reason ?? '', new RegExp(`busy with HEAL ${manual}`));
    assert.ok(Date.parse(w?.nextAttemptAt as string) - Date.parse(w?.updatedAt as string) >= BUSY_RETRY_MS - 1000, 'fallback retry far away');
    assert.equal(await cycle(), 0, 'a batcher cycle while busy fires nothing');
    assert.equal((await healsOf(h.vnfm, id)).length, 1, 'no auto heal while busy');
    release();
    // The fallback retry is 10 minutes away: only the end of the blocking op can start this heal.
    await completedHeals(id, 2);
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 2);
    const auto = heals[1];
    assert.equal(auto?.isAutomaticInvocation, true);
    assert.deepEqual(auto?.operationParams.vnfcInstanceId, [y.vnfcInfoId], 'x was healed by the manual op: dropped');
    await waitFor(async () => (await batches(id))[0]?.status === 'done', 5000, 'batch done');
    const full = await batch(w?.id as string);
    assert.ok(full.notes.some((n: { text: string }) => /target dropped: server .* already replaced/.test(n.text)), JSON.stringify(full.notes));
    const statuses = Object.fromEntries(full.notifications.map((n: { vnfcInstanceId: string; status: string }) => [n.vnfcInstanceId, n.status]));
    assert.deepEqual(statuses, { [x.vnfcInfoId]: 'dropped', [y.vnfcInfoId]: 'done' });
  });

  it('holds the batch while the VNF has a FAILED_TEMP op and resumes when the op is resolved', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId);
    const [x, , z] = vnfcs as [TestVnfc, TestVnfc, TestVnfc];
    h.fake.failNext.add('heal');
    const r = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/heal`, headers: V2, payload: { vnfcInstanceId: [x.vnfcInfoId] } });
    const manual = String(r.headers.location).split('/').pop() as string;
    await waitFor(async () => (await opOcc(h.vnfm, manual)).operationState === 'FAILED_TEMP', 5000, 'FAILED_TEMP');
    await post(id, z);
    await waitFor(async () => (await batches(id))[0]?.status === 'held', 5000, 'batch held');
    const [held] = await batches(id);
    assert.match(held?.reason ?? '', new RegExp(`FAILED_TEMP HEAL operation ${manual}`));
    assert.equal((await healsOf(h.vnfm, id)).length, 1);
    const f = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_lcm_op_occs/${manual}/fail`, headers: V2 });
    assert.equal(f.statusCode, 200, f.body);
    await completedHeals(id, 1);
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 2);
    assert.deepEqual(heals[1]?.operationParams.vnfcInstanceId, [z.vnfcInfoId]);
    assert.ok((await metric('vnfm_autoheal_batches_total', 'result="held"')) >= 1);
  });

  it('suppresses a storm above maxUnhealthy with the reason and evidence; release heals it', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId, { vnfConfigurableProperties: { autohealMaxUnhealthy: '40%' } });
    const before = await metric('vnfm_autoheal_suppressed_total', 'reason="max_unhealthy"');
    await post(id, vnfcs[0] as TestVnfc);
    await post(id, vnfcs[1] as TestVnfc);
    await waitFor(async () => (await batches(id))[0]?.status === 'suppressed', 5000, 'batch suppressed');
    const [s] = await batches(id);
    assert.equal(s?.reasonCode, 'max_unhealthy');
    assert.match(s?.reason ?? '', /2 of 3 VNFCs .* maxUnhealthy 40% allows \(1\)/);
    const full = await batch(s?.id as string);
    assert.deepEqual(full.notifications.map((n: { status: string }) => n.status), ['suppressed', 'suppressed']);
    assert.equal(await metric('vnfm_autoheal_suppressed_total', 'reason="max_unhealthy"'), before + 1);
    assert.equal(await cycle(), 0, 'a batcher cycle fires nothing while suppressed');
    assert.equal((await healsOf(h.vnfm, id)).length, 0, 'no heal while suppressed');
    const rel = await h.vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/heal_batches/${s?.id}/release` });
    assert.equal(rel.statusCode, 202, rel.body);
    assert.equal(rel.json().released, true);
    await completedHeals(id, 1);
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 1);
    assert.deepEqual([...(heals[0]?.operationParams.vnfcInstanceId ?? [])].sort(), [vnfcs[0]?.vnfcInfoId, vnfcs[1]?.vnfcInfoId].sort());
    await waitFor(async () => (await batches(id))[0]?.status === 'done', 5000, 'released batch done');
  });

  it('suppresses a VNFC healed too often (frequency limit per instance)', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId, { vnfConfigurableProperties: { autohealMaxHealsPerVnfc: 1 } });
    await post(id, vnfcs[0] as TestVnfc);
    await completedHeals(id, 1);
    const again = (await vnfcsOf(h.vnfm, id)).find((v) => v.vnfcInfoId === vnfcs[0]?.vnfcInfoId) as TestVnfc;
    assert.notEqual(again.alarmId, vnfcs[0]?.alarmId, 'the new server has a new alarm');
    await post(id, again);
    await waitFor(async () => (await batches(id))[0]?.status === 'suppressed', 5000, 'second batch suppressed');
    const [s] = await batches(id);
    assert.equal(s?.reasonCode, 'frequency');
    assert.match(s?.reason ?? '', /already healed automatically the maximum of 1 times/);
    assert.equal((await healsOf(h.vnfm, id)).length, 1);
  });

  it('suppresses with reason "disabled" when auto-heal is switched off before the batch fires', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId);
    await post(id, vnfcs[2] as TestVnfc);
    const p = await h.vnfm.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${id}`, headers: { ...V2, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ vnfConfigurableProperties: { isAutohealEnabled: false } }) });
    assert.equal(p.statusCode, 202);
    await waitFor(async () => (await batches(id))[0]?.status === 'suppressed', 5000, 'batch suppressed');
    assert.equal((await batches(id))[0]?.reasonCode, 'disabled');
    assert.equal((await healsOf(h.vnfm, id)).length, 0);
  });
});
