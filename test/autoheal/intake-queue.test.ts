/**
 * The intake's group commit, without HTTP: notifications submitted together are validated and
 * written as one group (one facts lookup, one group write); each waiter gets its own answer (the
 * exact 400/404 details, its own database error); large queues are split; and the batcher lets a
 * notification storm go first, for a bounded time.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { VnfmMetrics } from '../../src/core/metrics.ts';
import { HealBatcher } from '../../src/autoheal/batcher.ts';
import type { InstanceFacts } from '../../src/autoheal/instance-facts.ts';
import { type IntakeRequest, IntakeQueue, validateNotification } from '../../src/autoheal/intake-queue.ts';
import { FaultLedger, type GroupItem, type GroupOutcome } from '../../src/autoheal/ledger.ts';
import { resolveAutohealOptions } from '../../src/autoheal/storm-guard.ts';
import { resolveConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import type { Store } from '../../src/store/db.ts';
import { testStore } from '../helpers/db.ts';

function facts(id: string, o: Partial<InstanceFacts> = {}): InstanceFacts {
  return {
    id,
    rev: 1,
    instantiated: true,
    autohealEnabled: true,
    faultIds: ['1234'],
    servers: new Map([
      ['srv-1', { vnfcResourceInfoId: 'res-1', alarmId: 'alarm-1', vnfcInfoId: 'vnfc-1' }],
      ['srv-2', { vnfcResourceInfoId: 'res-2', alarmId: 'alarm-2', vnfcInfoId: undefined }],
    ]),
    ...o,
  };
}

function req(vnfInstanceId: string, over: Partial<IntakeRequest['notification']> = {}, serverId = 'srv-1'): IntakeRequest {
  return { vnfInstanceId, serverId, notification: { alarm_id: 'alarm-1', fault_id: '1234', fault_type: '10', ...over } };
}

/** A queue over stub storage that records every call. */
function stubQueue(o: { maxGroup?: number; failPack?: boolean; failLookup?: boolean; known?: Record<string, InstanceFacts> } = {}) {
  const calls = { lookups: [] as string[][], groups: [] as GroupItem[][] };
  const known = o.known ?? { vnf: facts('vnf'), off: facts('off', { autohealEnabled: false }), bare: facts('bare', { instantiated: false }) };
  const queue = new IntakeQueue({
    maxGroup: o.maxGroup,
    workerId: 'w1',
    windowMs: () => 1000,
    facts: {
      async lookup(ids) {
        calls.lookups.push([...ids]);
        if (o.failLookup) throw new Error('database down');
        return new Map(ids.filter((id) => known[id]).map((id) => [id, known[id] as InstanceFacts]));
      },
    },
    ledger: {
      async packGroup(items) {
        calls.groups.push([...items]);
        if (o.failPack) throw new Error('write failed');
        return items.map((it, i): GroupOutcome => {
          if (it.input.faultType === '21') return { kind: 'error', error: new Error(`row ${i} refused`) };
          return it.kind === 'ignore' ? { kind: 'ignored', notificationId: `n${i}` } : { kind: 'packed', notificationId: `n${i}`, batchId: `b-${it.input.vnfInstanceId}`, deadline: new Date().toISOString(), opened: i === 0 };
        });
      },
    },
  });
  return { queue, calls };
}

describe('intake validation', () => {
  it('answers like a single request: 404 unknown instance, then 400 state, fault id, server, alarm, vnfcInfo', () => {
    const f = facts('vnf');
    const err = (r: IntakeRequest, x: InstanceFacts | undefined) => {
      try {
        validateNotification(r, x, 'w');
      } catch (e) {
        return e as { httpStatus: number; message: string };
      }
      assert.fail('accepted');
    };
    assert.equal(err(req('nope'), undefined).httpStatus, 404);
    assert.equal(err(req('nope'), undefined).message, 'VnfInstance nope not found.');
    assert.match(err(req('vnf'), { ...f, instantiated: false }).message, /is not instantiated/);
    assert.equal(err(req('vnf', { fault_id: '9999' }), f).message, 'fault_id does not match.');
    assert.match(err(req('vnf', {}, 'srv-x'), f).message, /no VNFC of VnfInstance vnf runs on server srv-x/);
    assert.match(err(req('vnf', { alarm_id: 'alarm-2' }), f).message, /alarm_id alarm-2 is not the alarm registered for server srv-1/);
    assert.match(err(req('vnf', { alarm_id: 'alarm-2' }, 'srv-2'), f).message, /server srv-2 has no vnfcInfo/);
    assert.equal(err(req('vnf', { fault_id: '9999' }), f).httpStatus, 400);
    const ok = validateNotification(req('vnf', { host_id: 'h1' }), f, 'w');
    assert.equal(ok.kind, 'pack');
    assert.deepEqual(ok.input, { vnfInstanceId: 'vnf', serverId: 'srv-1', alarmId: 'alarm-1', faultId: '1234', faultType: '10', hostId: 'h1', faultOption: undefined, vnfcInfoId: 'vnfc-1', vnfcResourceInfoId: 'res-1', receivedBy: 'w' });
    const off = validateNotification(req('vnf'), { ...f, autohealEnabled: false }, 'w');
    assert.equal(off.kind, 'ignore');
  });
});

describe('intake queue', () => {
  it('validates and writes notifications submitted together as ONE group, answering each', async () => {
    const { queue, calls } = stubQueue();
    const results = await Promise.allSettled([
      queue.submit(req('vnf')),
      queue.submit(req('nope')),
      queue.submit(req('vnf', { fault_id: '0000' })),
      queue.submit(req('off')),
      queue.submit(req('bare')),
      queue.submit(req('vnf', { fault_type: '21' })),
      queue.submit(req('vnf')),
    ]);
    assert.equal(calls.lookups.length, 1, 'one facts lookup for the group');
    assert.deepEqual([...new Set(calls.lookups[0])].sort(), ['bare', 'nope', 'off', 'vnf']);
    assert.equal(calls.groups.length, 1, 'one write for the group');
    assert.deepEqual(
      calls.groups[0]?.map((i) => i.kind),
      ['pack', 'ignore', 'pack', 'pack'],
      'refused notifications are not written',
    );
    const st = results.map((r) => (r.status === 'fulfilled' ? r.value.kind : ((r.reason as { httpStatus?: number }).httpStatus ?? (r.reason as Error).message)));
    assert.deepEqual(st, ['packed', 404, 400, 'ignored', 400, 'row 2 refused', 'packed']);
    assert.deepEqual(queue.stats, { groups: 1, written: 4 });
    assert.equal(queue.pending, 0);
  });

  it('splits a long queue into groups of at most maxGroup; later arrivals form the next group', async () => {
    const { queue, calls } = stubQueue({ maxGroup: 4 });
    const first = Array.from({ length: 10 }, () => queue.submit(req('vnf')));
    assert.equal(queue.pending, 10);
    await Promise.all(first);
    assert.deepEqual(calls.groups.map((g) => g.length), [4, 4, 2]);
    await Promise.all([queue.submit(req('vnf')), queue.submit(req('vnf'))]);
    assert.deepEqual(calls.groups.map((g) => g.length), [4, 4, 2, 2]);
  });

  it('a failed lookup or write rejects every notification of the group with that error; the next group is written', async () => {
    let q = stubQueue({ failLookup: true });
    let r = await Promise.allSettled([q.queue.submit(req('vnf')), q.queue.submit(req('nope'))]);
    assert.deepEqual(r.map((x) => (x.status === 'rejected' ? (x.reason as Error).message : 'ok')), ['database down', 'database down']);
    q = stubQueue({ failPack: true });
    r = await Promise.allSettled([q.queue.submit(req('vnf')), q.queue.submit(req('nope'))]);
    assert.deepEqual(r.map((x) => (x.status === 'rejected' ? ((x.reason as { httpStatus?: number }).httpStatus ?? (x.reason as Error).message) : 'ok')), ['write failed', 404]);
    assert.equal(q.queue.pending, 0);
  });

  it('measures the arrival rate over the last half second', async () => {
    const { queue } = stubQueue();
    assert.equal(queue.rate(), 0);
    await Promise.all(Array.from({ length: 50 }, () => queue.submit(req('vnf'))));
    const r = queue.rate();
    assert.ok(r >= 50 && r <= 100, `rate ${r}`);
    assert.equal(queue.rate(Date.now() + 1100), 0, 'nothing in the last half second');
  });
});

describe('storm priority of the batcher', () => {
  let store: Store;
  let ledger: FaultLedger;
  const heals: string[] = [];
  const load = { rate: 0, pending: 0 };
  const vnfs = new Map<string, string>();

  before(async () => {
    store = await testStore();
    ledger = new FaultLedger(store.db);
  });
  after(async () => {
    await store?.close();
  });

  function batcher(maxMs: number) {
    const config = resolveConfig({ flags: { dataDir: 'memory://' } });
    return new HealBatcher({
      ledger,
      workerId: 'w1',
      metrics: new VnfmMetrics(),
      log: createLogger('silent'),
      options: resolveAutohealOptions(config, { intakePriorityRate: 100, intakePriorityMaxMs: maxMs, concurrency: 2 }),
      intake: { rate: () => load.rate, get pending() { return load.pending; } },
      lcm: {
        heal: async (id: string) => {
          heals.push(id);
          return { id: randomUUID() } as never;
        },
      },
      instances: {
        get: async (id: string) =>
          ({
            id,
            rev: 1,
            instantiationState: 'INSTANTIATED',
            vnfConfigurableProperties: { isAutohealEnabled: true },
            instantiatedVnfInfo: { vnfcResourceInfo: [{ id: 'res-a', computeResource: { resourceId: vnfs.get(id) } }], vnfcInfo: [{ id: 'a', vnfcResourceInfoId: 'res-a' }] },
          }) as never,
      },
    });
  }

  async function dueBatch(): Promise<string> {
    const vnf = randomUUID();
    vnfs.set(vnf, `srv-${vnf}`);
    await ledger.pack({ vnfInstanceId: vnf, serverId: `srv-${vnf}`, alarmId: 'x', faultId: '1234', faultType: '10', vnfcInfoId: 'a', vnfcResourceInfoId: 'res-a', receivedBy: 't' }, 0);
    return vnf;
  }

  it('does not fire due batches while notifications pour in; fires them once the storm is over', async () => {
    const b = batcher(60_000);
    const vnf = await dueBatch();
    load.rate = 500;
    load.pending = 20;
    assert.equal(await b.cycle(), 0, 'storm: deferred');
    // Heals started during a storm slow the intake: a lower rate with answers still due is the same storm.
    load.rate = 10;
    assert.equal(await b.cycle(), 0, 'still notifications waiting for their answer');
    assert.deepEqual(heals, []);
    load.pending = 0;
    assert.equal(await b.cycle(), 1, 'storm over: fired');
    assert.deepEqual(heals, [vnf]);
  });

  it('in a storm longer than intakePriorityMaxMs fires one small round, then defers again', async () => {
    heals.length = 0;
    const b = batcher(300);
    const due = [await dueBatch(), await dueBatch(), await dueBatch()];
    load.rate = 500;
    load.pending = 5;
    assert.equal(await b.cycle(), 0);
    await new Promise((r) => setTimeout(r, 350));
    assert.equal(await b.cycle(), 2, 'one round of `concurrency` batches');
    assert.equal(await b.cycle(), 0, 'a new deferral period');
    assert.equal(heals.length, 2);
    load.rate = 0;
    load.pending = 0;
    assert.equal(await b.cycle(), 1);
    assert.deepEqual([...heals].sort(), [...due].sort());
  });
});
