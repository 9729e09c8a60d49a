/**
 * Faults the VNFM detected itself (its health model) go through the same ledger, packing window
 * and heal batches as Server Notifier reports: one automatic heal per fault, a Server Notifier
 * report of the same VNFC in the same window is a duplicate of it, and a VNF with auto-heal off
 * keeps the evidence and is not healed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DETECTED_ALARM_ID } from '../../src/autoheal/detected-faults.ts';
import { type AutohealVnfm, type TestVnfc, V2, VIM, faultBody, healsOf, instantiateVnf, notify, onboardSample, opOcc, startAutohealVnfm, vnfcsOf, waitFor } from './fixture.ts';

let h: AutohealVnfm;
let vnfdId: string;

async function batches(instanceId: string) {
  const r = await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches?vnfInstanceId=${instanceId}` });
  assert.equal(r.statusCode, 200);
  return r.json() as { id: string; status: string; notificationCount: number }[];
}
function detected(id: string, v: TestVnfc, reason = 'ERROR') {
  const a = h.ctx.autoheal;
  assert.ok(a, 'auto-heal wired in');
  return a.reportDetected({ vnfInstanceId: id, vnfcInfoId: v.vnfcInfoId, vnfcResourceInfoId: v.vnfcResourceInfoId, resourceId: v.serverId, reason, source: 'vim-watch', since: new Date() });
}

before(async () => {
  h = await startAutohealVnfm({ windowMs: 300, config: { autoheal: { sweepMs: 100 } } });
  vnfdId = await onboardSample(h.vnfm);
});
after(async () => {
  await h?.vnfm.close();
});

describe('auto-heal of faults the VNFM detected itself', () => {
  it('packs a detected fault and a Server Notifier report of the same VNFC into one automatic heal', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId);
    const [v] = vnfcs as [TestVnfc];
    const batcher = h.ctx.autoheal?.batcher;
    assert.ok(batcher);
    // stopped while both arrive: the window cannot close between them on a slow machine
    await batcher.stop();
    const r = await detected(id, v);
    assert.equal(r.kind, 'packed');
    const n = await notify(h.vnfm, id, v.serverId, faultBody(v));
    assert.equal(n.statusCode, 204, n.body);
    await batcher.start();
    await waitFor(async () => (await healsOf(h.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 15_000, 'heal COMPLETED');
    await waitFor(async () => (await batches(id))[0]?.status === 'done', 5000, 'batch done');
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 1, 'one fault, one heal');
    assert.equal(heals[0]?.isAutomaticInvocation, true);
    assert.deepEqual(heals[0]?.operationParams.vnfcInstanceId, [v.vnfcInfoId]);
    const all = await batches(id);
    assert.equal(all.length, 1);
    assert.equal(all[0]?.notificationCount, 2);
    const after = await vnfcsOf(h.vnfm, id);
    assert.notEqual(after.find((x) => x.vnfcInfoId === v.vnfcInfoId)?.serverId, v.serverId, 'server replaced');
    assert.equal((await opOcc(h.vnfm, heals[0]?.id as string)).operationState, 'COMPLETED');
  });

  it('records a detected fault of a VNF with auto-heal off as ignored, and heals nothing', async () => {
    const { id, vnfcs } = await instantiateVnf(h.vnfm, vnfdId, { autoheal: false });
    const r = await detected(id, vnfcs[0] as TestVnfc, 'SHUTOFF');
    assert.equal(r.kind, 'ignored');
    const list = await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/fault_notifications?vnfInstanceId=${id}` });
    assert.equal(list.statusCode, 200, list.body);
    const rows = list.json() as { status: string; alarmId: string; faultId: string }[];
    assert.ok(rows.some((x) => x.status === 'ignored' && x.alarmId === DETECTED_ALARM_ID && x.faultId === 'vim-watch:SHUTOFF'), JSON.stringify(rows));
    assert.equal(await h.ctx.autoheal?.batcher.cycle(), 0);
    assert.equal((await healsOf(h.vnfm, id)).length, 0);
  });

  it('refuses a detected fault of an instance that is gone, without storing it', async () => {
    const r = await h.ctx.autoheal?.reportDetected({ vnfInstanceId: '00000000-0000-4000-8000-000000000000', vnfcInfoId: 'x', vnfcResourceInfoId: 'y', resourceId: 'z', reason: 'ERROR', source: 'vim-watch', since: new Date() });
    assert.equal(r?.kind, 'refused');
  });

  it('refuses a bad unhealthyFor or storm-guard value at instantiate and PATCH with a 400 naming it, changing nothing', async () => {
    const c = await h.vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId, vnfInstanceName: 'bad-props' } });
    const id = c.json().id as string;
    const r = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: VIM }, vnfConfigurableProperties: { unhealthyFor: '30s' } } });
    assert.equal(r.statusCode, 400, r.body);
    assert.match(r.json().detail, /vnfConfigurableProperties\.unhealthyFor must be a number of seconds >= 0/);
    assert.equal((await h.vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${id}`, headers: V2 })).json().instantiationState, 'NOT_INSTANTIATED');
    const { id: live } = await instantiateVnf(h.vnfm, vnfdId, { vnfConfigurableProperties: { unhealthyFor: 45 } });
    for (const bad of [{ unhealthyFor: -1 }, { autohealMaxUnhealthy: 'lots' }, { autohealMaxHealsPerVnfc: 1.5 }]) {
      const p = await h.vnfm.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${live}`, headers: { ...V2, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ vnfConfigurableProperties: bad }) });
      assert.equal(p.statusCode, 400, p.body);
      assert.match(p.json().detail, new RegExp(`vnfConfigurableProperties\\.${Object.keys(bad)[0]}`));
    }
    const after = (await h.vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${live}`, headers: V2 })).json();
    assert.equal(after.vnfConfigurableProperties.unhealthyFor, 45, 'unchanged');
    const ok = await h.vnfm.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${live}`, headers: { ...V2, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ vnfConfigurableProperties: { unhealthyFor: null } }) });
    assert.equal(ok.statusCode, 202, ok.body);
  });
});
