/**
 * The health monitor over a fake VIM plugin's watcher: targets grouped per VIM project, reports
 * mapped to VNFCs (faulty / healthy / unknown, `unreachable` never faulty), observations held
 * while an operation of the instance runs, and the sustained fault callback called exactly once
 * per episode, also across a monitor restart. Time is a fake clock handed to the monitor; sweeps
 * are called by the test (no timer).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { VnfmMetrics } from '../../src/core/metrics.ts';
import { HealthMonitor, type HealthOptions, type SustainedFault, VIM_UNREACHABLE } from '../../src/health/health-monitor.ts';
import { OPERATION_IN_PROGRESS } from '../../src/health/health-store.ts';
import { VimPlugins } from '../../src/infra/vim-plugin.ts';
import type { ResourceHealth } from '../../src/model/vnfc-health.ts';
import { OutboundGuard } from '../../src/net/outbound.ts';
import type { Store } from '../../src/store/db.ts';
import { testStore } from '../helpers/db.ts';
import { endOp, fakeHealthPlugin, fakeInstances, healthEvents, putInstance, setVnfcs, startOp } from './fixture.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const OPTIONS: HealthOptions = { enabled: true, periodMs: 5000, unhealthyForMs: { vm: 30_000, pod: 60_000 } };

function seen(resourceId: string, condition: ResourceHealth['condition'], s: number, reason = condition === 'faulty' ? 'ERROR' : 'ACTIVE'): ResourceHealth {
  return { resourceId, kind: 'server', condition, reason, observedAt: new Date(T0 + s * 1000) };
}

describe('VNFC health monitor', () => {
  let store: Store;
  let clock = T0;
  const faults: SustainedFault[] = [];
  const monitors: HealthMonitor[] = [];
  const metrics = new VnfmMetrics();

  /** A monitor over the fake plugin, started (as after a restart when called again). */
  async function monitor(o: { onSustainedFault?: (f: SustainedFault) => void | Promise<void> } = {}) {
    const fake = fakeHealthPlugin();
    const m = new HealthMonitor({
      db: store.db,
      instances: fakeInstances(store),
      vimPlugins: new VimPlugins([fake.plugin]),
      vimOutbound: new OutboundGuard({ allow: [], deny: [], vimAllow: [] }, () => ({ host: '127.0.0.1', port: 1 })),
      log: pino({ level: 'silent' }),
      metrics,
      options: OPTIONS,
      onSustainedFault: o.onSustainedFault ?? ((f) => void faults.push(f)),
      sweepMs: 0,
      now: () => new Date(clock),
    });
    monitors.push(m);
    await m.start();
    return { m, fake };
  }

  before(async () => {
    store = await testStore();
    // two VNFs on one registered VIM (one target), one on a connection without vimId
    await putInstance(store, 'vnf-a', [{ rid: 'a1', vduId: 'VDU1', resourceId: 'srv-a1', infoId: 'vnfc-a1' }, { rid: 'a2', vduId: 'VDU2', resourceId: 'srv-a2' }], { vimId: 'vim-x', project: 'p1' });
    await putInstance(store, 'vnf-b', [{ rid: 'b1', vduId: 'VDU1', resourceId: 'srv-b1' }], { vimId: 'vim-x', props: { unhealthyFor: 5 } });
    await putInstance(store, 'vnf-c', [{ rid: 'c1', vduId: 'VDU1', resourceId: 'pod-c1' }], { namespace: 'ns-c' });
    await putInstance(store, 'vnf-off', [{ rid: 'o1', vduId: 'VDU1', resourceId: 'srv-o1' }], { vimId: 'vim-x', state: 'NOT_INSTANTIATED' });
  });
  after(async () => {
    for (const m of monitors) await m.stop();
    await store?.close();
  });

  it('starts one watcher per plugin that has one; targets are one per VIM project with the instances\' resources', async () => {
    const { m, fake } = await monitor();
    assert.equal(fake.started(), 1);
    const targets = await fake.deps().targets();
    const byKey = Object.fromEntries(targets.map((t) => [t.key, t]));
    assert.deepEqual(Object.keys(byKey).sort(), ['ETSINFV.FAKEHEALTH.V_1:http://127.0.0.1:1/fake|demo', 'ETSINFV.FAKEHEALTH.V_1:vim-x']);
    assert.deepEqual([...(byKey['ETSINFV.FAKEHEALTH.V_1:vim-x']?.resources ?? [])].sort(), ['srv-a1', 'srv-a2', 'srv-b1']);
    assert.deepEqual(byKey['ETSINFV.FAKEHEALTH.V_1:http://127.0.0.1:1/fake|demo']?.namespaces, ['ns-c']);
    assert.equal(fake.deps().periodMs, 5000);
    await m.stop();
    assert.equal(fake.stopped(), 1);
  });

  it('maps reports to VNFCs (healthy, faulty); unreachable makes them unknown, never faulty; changes go to the event feed', async () => {
    const { m, fake } = await monitor();
    const d = fake.deps();
    await d.targets();
    await m.sweep(); // reconcile: every VNFC gets a row
    assert.deepEqual((await m.store.list()).map((r) => [r.vnfcResourceInfoId, r.condition]).sort(), [['a1', 'unknown'], ['a2', 'unknown'], ['b1', 'unknown'], ['c1', 'unknown']]);
    d.report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-a1', 'healthy', 1), seen('srv-a2', 'faulty', 1), seen('srv-b1', 'healthy', 1), seen('srv-unknown', 'faulty', 1)]);
    await m.idle();
    const rows = Object.fromEntries((await m.store.list()).map((r) => [r.vnfcResourceInfoId, r]));
    assert.equal(rows.a1?.condition, 'healthy');
    assert.equal(rows.a1?.vnfcInfoId, 'vnfc-a1');
    assert.equal(rows.a2?.condition, 'faulty');
    assert.equal(rows.a2?.vnfcInfoId, 'a2', 'without vnfcInfo the vnfcResourceInfo id names the VNFC');
    assert.equal(rows.a2?.reason, 'ERROR');
    clock = T0 + 2000;
    d.unreachable('ETSINFV.FAKEHEALTH.V_1:vim-x', 'connect ECONNREFUSED');
    await m.idle();
    const after = await m.store.list({ vnfInstanceId: 'vnf-a' });
    assert.deepEqual(after.map((r) => [r.condition, r.reason]), [['unknown', VIM_UNREACHABLE], ['unknown', VIM_UNREACHABLE]]);
    const ev = (await healthEvents(store)).filter((e) => e.vnfcResourceInfoId === 'a2');
    assert.deepEqual(ev.map((e) => [e.oldCondition, e.newCondition]), [['unknown', 'faulty'], ['faulty', 'unknown']]);
    assert.ok((await metrics.registry.getSingleMetricAsString('vnfm_health_detection_seconds')).includes('vnfm_health_detection_seconds_count'));
    await m.stop();
  });

  it('holds observations while an operation of the instance runs, and applies the latest after it', async () => {
    const { m, fake } = await monitor();
    const d = fake.deps();
    await d.targets();
    d.report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-a1', 'healthy', 10), seen('srv-a2', 'healthy', 10)]);
    await m.idle();
    await startOp(store, 'vnf-a', 'op-1');
    d.report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-a1', 'faulty', 11), seen('srv-a2', 'faulty', 11)]);
    d.report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-a1', 'faulty', 12, 'SHUTOFF')]);
    await m.idle();
    let rows = await m.store.list({ vnfInstanceId: 'vnf-a' });
    assert.deepEqual(rows.map((r) => [r.condition, r.reason]), [['healthy', OPERATION_IN_PROGRESS], ['healthy', OPERATION_IN_PROGRESS]]);
    await m.sweep(); // still running: nothing applied
    assert.deepEqual((await m.store.list({ vnfInstanceId: 'vnf-a' })).map((r) => r.condition), ['healthy', 'healthy']);
    // the operation replaced a2's server: its held observation is dropped
    await setVnfcs(store, 'vnf-a', [{ rid: 'a1', vduId: 'VDU1', resourceId: 'srv-a1', infoId: 'vnfc-a1' }, { rid: 'a2', vduId: 'VDU2', resourceId: 'srv-a2-new' }]);
    await endOp(store, 'op-1');
    await m.sweep();
    rows = await m.store.list({ vnfInstanceId: 'vnf-a' });
    const a1 = rows.find((r) => r.vnfcResourceInfoId === 'a1');
    const a2 = rows.find((r) => r.vnfcResourceInfoId === 'a2');
    assert.deepEqual([a1?.condition, a1?.reason, a1?.since], ['faulty', 'SHUTOFF', new Date(T0 + 12_000).toISOString()]);
    assert.deepEqual([a2?.condition, a2?.resourceId], ['unknown', 'srv-a2-new']);
    await m.stop();
  });

  it('calls onSustainedFault once per episode after unhealthyFor (per-VNF override), and not again after a restart', async () => {
    let { m, fake } = await monitor();
    await fake.deps().targets();
    clock = T0 + 100_000;
    // a1 was left faulty by the test before: a fresh episode for both
    fake.deps().report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-a1', 'healthy', 99), seen('srv-b1', 'healthy', 99)]);
    fake.deps().report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-a1', 'faulty', 100), seen('srv-b1', 'faulty', 100)]);
    await m.idle();
    clock = T0 + 104_000;
    await m.sweep();
    assert.equal(faults.length, 0);
    clock = T0 + 105_000; // vnf-b: unhealthyFor 5 s
    await m.sweep();
    assert.deepEqual(faults.map((f) => [f.vnfInstanceId, f.vnfcResourceInfoId, f.resourceId, f.reason, f.since.getTime()]), [['vnf-b', 'b1', 'srv-b1', 'ERROR', T0 + 100_000]]);
    clock = T0 + 131_000; // vnf-a: the VM default, 30 s
    fake.deps().report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-a1', 'faulty', 131), seen('srv-b1', 'faulty', 131)]);
    await m.sweep();
    await m.sweep();
    assert.deepEqual(faults.map((f) => f.vnfcResourceInfoId), ['b1', 'a1']);
    assert.equal(faults[1]?.vnfcInfoId, 'vnfc-a1');
    await m.stop();
    // restart: nothing is reported again
    ({ m, fake } = await monitor());
    await fake.deps().targets();
    await m.sweep();
    assert.equal(faults.length, 2);
    // a new episode of b1 (healthy, then faulty again) is reported again
    fake.deps().report('ETSINFV.FAKEHEALTH.V_1:vim-x', [seen('srv-b1', 'healthy', 140), seen('srv-b1', 'faulty', 141)]);
    clock = T0 + 146_000;
    await m.sweep();
    assert.deepEqual(faults.map((f) => f.vnfcResourceInfoId), ['b1', 'a1', 'b1']);
    await m.stop();
  });

  it('a due episode not reported before a restart is reported after it; a failing callback is retried', async () => {
    // this monitor has a callback that fails
    let calls = 0;
    let { m, fake } = await monitor({
      onSustainedFault: (f) => {
        if (f.vnfInstanceId !== 'vnf-c') return;
        calls++;
        throw new Error('ledger down');
      },
    });
    await fake.deps().targets();
    clock = T0 + 200_000;
    fake.deps().report('ETSINFV.FAKEHEALTH.V_1:http://127.0.0.1:1/fake|demo', [{ resourceId: 'pod-c1', kind: 'pod', condition: 'faulty', reason: 'CrashLoopBackOff', observedAt: new Date(clock) }]);
    clock = T0 + 259_000;
    await m.sweep();
    assert.equal(calls, 0, 'pods: 60 s by default');
    clock = T0 + 260_000;
    await m.sweep();
    assert.equal(calls, 1);
    assert.equal((await m.store.list({ vnfInstanceId: 'vnf-c' }))[0]?.reportedAt, null, 'a failed call is not marked');
    await m.stop();
    ({ m, fake } = await monitor());
    await m.sweep();
    assert.deepEqual(faults.at(-1) && [faults.at(-1)?.vnfInstanceId, faults.at(-1)?.reason], ['vnf-c', 'CrashLoopBackOff']);
    await m.sweep();
    assert.equal(faults.filter((f) => f.vnfInstanceId === 'vnf-c').length, 1);
    await m.stop();
  });

  it('a watcher that fails to start or stop does not stop the monitor', async () => {
    const broken = { kind: 'broken', vimType: 'BROKEN.V_1', aliases: [], healthWatcher: () => ({ start: () => Promise.reject(new Error('no')), stop: () => Promise.reject(new Error('no')) }) };
    const m = new HealthMonitor({
      db: store.db,
      instances: fakeInstances(store),
      vimPlugins: new VimPlugins([broken as never]),
      vimOutbound: new OutboundGuard({ allow: [], deny: [], vimAllow: [] }, () => ({ host: '127.0.0.1', port: 1 })),
      log: pino({ level: 'silent' }),
      options: OPTIONS,
      sweepMs: 0,
    });
    await m.start();
    await m.sweep();
    await m.stop();
  });

  it('no rows for instances that are not instantiated; the gauge counts VNFCs per condition', async () => {
    const { m } = await monitor();
    await m.sweep();
    assert.deepEqual(await m.store.list({ vnfInstanceId: 'vnf-off' }), []);
    const text = await metrics.registry.getSingleMetricAsString('vnfm_vnfc_health');
    const counts = await m.store.counts();
    assert.ok(text.includes(`vnfm_vnfc_health{condition="faulty"} ${counts.faulty}`), text);
    await m.stop();
  });
});
