/**
 * The VNFC health API: `GET /vnfm/v1/vnfc_health` (filters, paging, a bad condition is a 400)
 * and `GET /vnfm/v1/vnf_instances/{id}/health` (worst condition, 404 for an unknown instance).
 * Rows are written through the health store (no watcher runs).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { HealthObservation, VnfcRef } from '../../src/health/health-store.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { putInstance } from './fixture.ts';

const ref = (inst: string, rid: string): VnfcRef => ({ vnfInstanceId: inst, project: null, vnfcInfoId: `vnfc-${rid}`, vnfcResourceInfoId: rid, vduId: 'VDU1', resourceId: `srv-${rid}` });
const obs = (r: VnfcRef, condition: HealthObservation['condition']): HealthObservation => ({ ref: r, condition, reason: condition, source: 'vim-watch', kind: 'server', observedAt: new Date() });

describe('VNFC health API', () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm({ without: ['sync', 'notifications', 'autoheal'], config: { pageSize: 2 } });
    await putInstance(vnfm.store, 'inst-a', [{ rid: 'a1', vduId: 'VDU1', resourceId: 'srv-a1' }, { rid: 'a2', vduId: 'VDU1', resourceId: 'srv-a2' }]);
    await putInstance(vnfm.store, 'inst-b', [{ rid: 'b1', vduId: 'VDU1', resourceId: 'srv-b1' }]);
    await putInstance(vnfm.store, 'inst-c', []);
    const hs = vnfm.ctx.health?.store;
    assert.ok(hs, 'the health module is built by default');
    await hs.apply([obs(ref('inst-a', 'a1'), 'healthy'), obs(ref('inst-a', 'a2'), 'faulty'), obs(ref('inst-b', 'b1'), 'degraded')]);
  });
  after(async () => vnfm?.close());

  const get = async (url: string) => vnfm.app.inject({ method: 'GET', url, headers: { version: '2.0.0' } });

  it('lists every VNFC, filtered by instance and condition, paged like the other lists', async () => {
    const all = await get('/vnfm/v1/vnfc_health');
    assert.equal(all.statusCode, 200, all.body);
    assert.equal(JSON.parse(all.body).length, 2, 'pageSize 2');
    assert.match(String(all.headers.link), /nextpage_opaque_marker=/);
    const byInst = JSON.parse((await get('/vnfm/v1/vnfc_health?vnfInstanceId=inst-a')).body) as { vnfcResourceInfoId: string; condition: string; _links: unknown }[];
    assert.deepEqual(byInst.map((r) => [r.vnfcResourceInfoId, r.condition]).sort(), [['a1', 'healthy'], ['a2', 'faulty']]);
    const faulty = JSON.parse((await get('/vnfm/v1/vnfc_health?condition=faulty')).body) as { vnfInstanceId: string; vnfcInfoId: string }[];
    assert.deepEqual(faulty.map((r) => [r.vnfInstanceId, r.vnfcInfoId]), [['inst-a', 'vnfc-a2']]);
    const sol = JSON.parse((await get(`/vnfm/v1/vnfc_health?filter=${encodeURIComponent('(eq,condition,degraded)')}`)).body) as { vnfInstanceId: string }[];
    assert.deepEqual(sol.map((r) => r.vnfInstanceId), ['inst-b']);
  });

  it('a condition that does not exist is a 400 ProblemDetails', async () => {
    const r = await get('/vnfm/v1/vnfc_health?condition=sick');
    assert.equal(r.statusCode, 400);
    const p = JSON.parse(r.body) as { status: number; detail: string };
    assert.equal(p.status, 400);
    assert.match(p.detail, /condition must be one of healthy, degraded, faulty, unknown/);
  });

  it("an instance's health: its VNFCs and the worst condition; unknown without rows; 404 for an unknown instance", async () => {
    const a = JSON.parse((await get('/vnfm/v1/vnf_instances/inst-a/health')).body) as { condition: string; vnfcs: unknown[]; instantiationState: string };
    assert.equal(a.condition, 'faulty');
    assert.equal(a.vnfcs.length, 2);
    assert.equal(a.instantiationState, 'INSTANTIATED');
    assert.equal(JSON.parse((await get('/vnfm/v1/vnf_instances/inst-b/health')).body).condition, 'degraded');
    assert.equal(JSON.parse((await get('/vnfm/v1/vnf_instances/inst-c/health')).body).condition, 'unknown');
    const missing = await get('/vnfm/v1/vnf_instances/nope/health');
    assert.equal(missing.statusCode, 404);
    assert.match(JSON.parse(missing.body).detail, /VnfInstance nope not found/);
  });

  it('left out with the health module: no routes', async () => {
    const v = await testVnfm({ without: ['sync', 'notifications', 'autoheal', 'health'] });
    try {
      assert.equal((await v.app.inject({ method: 'GET', url: '/vnfm/v1/vnfc_health' })).statusCode, 404);
      assert.equal(v.ctx.health, undefined);
    } finally {
      await v.close();
    }
  });
});
