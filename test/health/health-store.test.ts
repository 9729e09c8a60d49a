/**
 * The VNFC health store: `since` kept while the same condition is observed again (also after the
 * embedded database is closed and reopened), condition changes returned and written to the event
 * feed, stale observations ignored, rows reconciled with the instances' VNFCs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type HealthObservation, HealthStore, NOT_OBSERVED, type VnfcRef } from '../../src/health/health-store.ts';
import { type Store, openStore } from '../../src/store/db.ts';
import { templateDump, testStore } from '../helpers/db.ts';
import { healthEvents, putInstance } from './fixture.ts';

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const ref = (inst: string, rid: string, resourceId = `srv-${rid}`): VnfcRef => ({ vnfInstanceId: inst, project: null, vnfcInfoId: `info-${rid}`, vnfcResourceInfoId: rid, vduId: 'VDU1', resourceId, vimConnectionId: 'vim1' });
const obs = (r: VnfcRef, condition: HealthObservation['condition'], s: number, reason = condition.toUpperCase()): HealthObservation => ({ ref: r, condition, reason, source: 'vim-watch', kind: 'server', observedAt: at(s) });

describe('VNFC health store', () => {
  let store: Store;
  let hs: HealthStore;
  before(async () => {
    store = await testStore();
    hs = new HealthStore(store.db);
    await putInstance(store, 'inst-1', [{ rid: 'r1', vduId: 'VDU1', resourceId: 'srv-r1' }]);
    await putInstance(store, 'inst-2', [{ rid: 'r1', vduId: 'VDU1', resourceId: 'srv-x' }]);
  });
  after(async () => store?.close());

  it('keeps since while the condition stays, starts a new episode on a change, and ignores older observations', async () => {
    const r = ref('inst-1', 'r1');
    assert.deepEqual((await hs.apply([obs(r, 'healthy', 0)])).map((c) => [c.oldCondition, c.newCondition]), [[null, 'healthy']]);
    assert.deepEqual(await hs.apply([obs(r, 'healthy', 10)]), []);
    let [row] = await hs.ofInstance('inst-1');
    assert.equal(row?.since, at(0).toISOString());
    assert.equal(row?.observedAt, at(10).toISOString());
    const changes = await hs.apply([obs(r, 'faulty', 20, 'ERROR')]);
    assert.deepEqual(changes.map((c) => [c.oldCondition, c.newCondition, c.reason]), [['healthy', 'faulty', 'ERROR']]);
    // an observation older than the stored one changes nothing
    assert.deepEqual(await hs.apply([obs(r, 'healthy', 15)]), []);
    [row] = await hs.ofInstance('inst-1');
    assert.equal(row?.condition, 'faulty');
    assert.equal(row?.since, at(20).toISOString());
    assert.equal(row?.vnfcInfoId, 'info-r1');
    const events = (await healthEvents(store)).filter((e) => e.vnfInstanceId === 'inst-1');
    assert.deepEqual(events.map((e) => [e.oldCondition, e.newCondition]), [[null, 'healthy'], ['healthy', 'faulty']]);
    assert.equal(events[1]?.vnfcInfoId, 'info-r1');
    assert.equal(events[1]?.source, 'vim-watch');
  });

  it('lists by instance and condition; counts per condition', async () => {
    await hs.apply([obs(ref('inst-2', 'r1', 'srv-x'), 'healthy', 5)]);
    assert.deepEqual((await hs.list({ condition: 'faulty' })).map((r) => r.vnfInstanceId), ['inst-1']);
    assert.deepEqual((await hs.list({ vnfInstanceId: 'inst-2' })).map((r) => r.condition), ['healthy']);
    assert.deepEqual(await hs.counts(), { healthy: 1, degraded: 0, faulty: 1, unknown: 0 });
  });

  it('a fault episode is claimed once; a new episode can be claimed again', async () => {
    const [f] = await hs.unreportedFaults();
    assert.ok(f);
    assert.equal(await hs.claimReport(f.record, at(60)), true);
    assert.equal(await hs.claimReport(f.record, at(61)), false);
    assert.deepEqual(await hs.unreportedFaults(), []);
    // the same condition again: still the reported episode
    await hs.apply([obs(ref('inst-1', 'r1'), 'faulty', 70)]);
    assert.deepEqual(await hs.unreportedFaults(), []);
    await hs.apply([obs(ref('inst-1', 'r1'), 'healthy', 80), obs(ref('inst-1', 'r1'), 'faulty', 90)]);
    assert.deepEqual((await hs.unreportedFaults()).map((u) => u.record.since), [at(90).toISOString()]);
  });

  it('reconcile: new VNFCs get an unknown row, gone ones and a replaced resource are reset, non-instantiated instances lose their rows', async () => {
    const changes = await hs.reconcile([ref('inst-1', 'r1', 'srv-new'), ref('inst-1', 'r2')], at(100));
    assert.deepEqual(changes.map((c) => [c.ref.vnfcResourceInfoId, c.oldCondition, c.newCondition]), [['r1', 'faulty', 'unknown']]);
    const rows = await hs.ofInstance('inst-1');
    assert.deepEqual(rows.map((r) => [r.vnfcResourceInfoId, r.resourceId, r.condition, r.reason]), [['r1', 'srv-new', 'unknown', NOT_OBSERVED], ['r2', 'srv-r2', 'unknown', NOT_OBSERVED]]);
    await hs.reconcile([ref('inst-1', 'r2')], at(101));
    assert.deepEqual((await hs.ofInstance('inst-1')).map((r) => r.vnfcResourceInfoId), ['r2']);
    await sql`update vnf_instance set instantiation_state = 'NOT_INSTANTIATED' where id = 'inst-2'`.execute(store.db);
    await hs.reconcile([], at(102));
    assert.deepEqual(await hs.ofInstance('inst-2'), []);
    // deleting an instance deletes its rows (FK cascade)
    await sql`delete from vnf_instance where id = 'inst-1'`.execute(store.db);
    assert.deepEqual(await hs.list(), []);
    // an observation of a deleted instance is dropped
    assert.deepEqual(await hs.apply([obs(ref('inst-1', 'r2'), 'faulty', 200)]), []);
  });
});

describe('VNFC health store across a restart of the embedded database', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'vnfm-health-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('since and the reported episode survive closing and reopening the database', async () => {
    // the first open starts the data directory from the migrated template (no initdb)
    let store = await openStore({ dataDir: dir, loadDataDir: await templateDump() });
    try {
      await putInstance(store, 'inst-r', [{ rid: 'r1', vduId: 'VDU1', resourceId: 'srv-r1' }]);
      const hs = new HealthStore(store.db);
      await hs.apply([obs(ref('inst-r', 'r1'), 'faulty', 0)]);
      const [f] = await hs.unreportedFaults();
      assert.ok(f && (await hs.claimReport(f.record, at(30))));
    } finally {
      await store.close();
    }
    store = await openStore({ dataDir: dir });
    try {
      const hs = new HealthStore(store.db);
      assert.deepEqual(await hs.apply([obs(ref('inst-r', 'r1'), 'faulty', 40)]), []);
      const [row] = await hs.ofInstance('inst-r');
      assert.equal(row?.since, at(0).toISOString());
      assert.equal(row?.reportedAt, at(30).toISOString());
      assert.deepEqual(await hs.unreportedFaults(), []);
    } finally {
      await store.close();
    }
  });
});
