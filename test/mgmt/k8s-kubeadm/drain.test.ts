/**
 * Drain over the Kubernetes API: cordon, evictions pod by pod (DaemonSet and mirror pods
 * skipped), 429 from a PodDisruptionBudget retried every 5 s until the timeout, then a terminal
 * failure naming the budget and the pods (the node is not deleted); force deletes instead; dead
 * nodes; owner readiness and Node Ready waits. The clock only moves when the code sleeps.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import { cordon, drainNode, isDeadNode, selectorMatches, waitNodeReady, waitOwnersReady } from '../../../src/mgmt/drivers/k8s-common/drain.ts';
import { FakeClock, FakeKube } from './fake-kube.ts';

function world(): { kube: FakeKube; clock: FakeClock } {
  const clock = new FakeClock();
  const kube = new FakeKube(clock);
  kube.node('worker21');
  kube.node('worker22');
  kube.pod('default', 'web-1', 'worker21', { owner: { kind: 'ReplicaSet', name: 'web-rs' }, labels: { app: 'web' } });
  kube.pod('db', 'db-0', 'worker21', { owner: { kind: 'StatefulSet', name: 'db' }, labels: { app: 'db' } });
  kube.pod('kube-system', 'calico-node-x', 'worker21', { owner: { kind: 'DaemonSet', name: 'calico-node' } });
  kube.pod('kube-system', 'kube-apiserver-worker21', 'worker21', { mirror: true });
  kube.pod('default', 'other', 'worker22', { labels: { app: 'web' } });
  kube.replicaSet('default', 'web-rs', 2, 2);
  return { kube, clock };
}

const opts = (clock: FakeClock, extra: Partial<Parameters<typeof drainNode>[2]> = {}) => ({ timeoutMs: 600_000, retryMs: 5000, force: false, clock, ...extra });

describe('k8s-kubeadm drain', () => {
  it('cordons, evicts every pod except DaemonSet and mirror pods, returns the owners', async () => {
    const { kube, clock } = world();
    const r = await drainNode(kube, 'worker21', opts(clock));
    assert.equal(r.found, true);
    assert.equal(kube.obj('Node', undefined, 'worker21')?.spec?.unschedulable, true);
    assert.deepEqual(r.evicted.map((p) => `${p.namespace}/${p.name}`).sort(), ['db/db-0', 'default/web-1']);
    assert.deepEqual(r.owners.map((o) => `${o.kind} ${o.namespace}/${o.name}`).sort(), ['ReplicaSet default/web-rs', 'StatefulSet db/db']);
    assert.ok(kube.has('Pod', 'kube-system', 'calico-node-x'));
    assert.ok(kube.has('Pod', 'kube-system', 'kube-apiserver-worker21'));
    assert.ok(kube.has('Pod', 'default', 'other'), 'pods of other nodes untouched');
    assert.ok(kube.has('Node', undefined, 'worker21'), 'the drain itself does not delete the Node');
    assert.deepEqual(kube.calls.filter((c) => c.startsWith('evict')).sort(), ['evict db/db-0', 'evict default/web-1']);
  });

  it('a PodDisruptionBudget blocking: retried every 5 s until the timeout, then FAILED naming the budget and the pod', async () => {
    const { kube, clock } = world();
    kube.pdb('db', 'db-pdb', { app: 'db' }, 0);
    const t0 = clock.now();
    try {
      await drainNode(kube, 'worker21', opts(clock, { timeoutMs: 30_000 }));
      assert.fail('expected the drain to fail');
    } catch (e) {
      assert.ok(isVnfmError(e, 'VNFM_ERR_MGMT_FAILED'), String(e));
      assert.equal((e as { retryable: boolean }).retryable, false);
      assert.match((e as Error).message, /drain of node worker21 did not finish in 30 s: evictions refused by PodDisruptionBudget\(s\) db\/db-pdb \(pods db\/db-0\)/);
      assert.deepEqual((e as { extra: Record<string, unknown> }).extra.podDisruptionBudgets, ['db/db-pdb']);
    }
    assert.ok(clock.sleeps.every((s) => s === 5000), 'retries every 5 s');
    assert.equal(clock.now() - t0, 30_000);
    assert.equal(kube.calls.filter((c) => c === 'evict db/db-0').length, 7, 'one try at t=0 and one per 5 s up to 30 s');
    assert.ok(kube.has('Pod', 'db', 'db-0'));
    assert.ok(!kube.has('Pod', 'default', 'web-1'), 'unprotected pods were evicted');
  });

  it('succeeds once the budget allows the eviction', async () => {
    const { kube, clock } = world();
    kube.pdb('db', 'db-pdb', { app: 'db' }, 0);
    clock.onSleep = (c) => {
      if (c.sleeps.length === 3) kube.pdb('db', 'db-pdb', { app: 'db' }, 1);
    };
    const r = await drainNode(kube, 'worker21', opts(clock));
    assert.equal(r.evicted.length, 2);
    // three refused rounds, then one more poll to see the evicted pod gone
    assert.equal(clock.sleeps.length, 4);
    assert.equal(kube.calls.filter((c) => c === 'evict db/db-0').length, 4);
  });

  it('force deletes pods a budget protects', async () => {
    const { kube, clock } = world();
    kube.pdb('db', 'db-pdb', { app: 'db' }, 0);
    const r = await drainNode(kube, 'worker21', opts(clock, { force: true }));
    assert.equal(r.evicted.length, 2);
    assert.ok(!kube.has('Pod', 'db', 'db-0'));
    assert.equal(kube.calls.filter((c) => c.startsWith('evict')).length, 0);
    assert.ok(kube.calls.includes('delete Pod db/db-0'));
  });

  it('a missing node is nothing to drain', async () => {
    const { kube, clock } = world();
    assert.deepEqual(await drainNode(kube, 'worker99', opts(clock)), { found: false, evicted: [], owners: [] });
    assert.equal(await cordon(kube, 'worker99'), false);
  });

  it('dead node: Ready Unknown/False for longer than the grace period', () => {
    const { kube, clock } = world();
    kube.node('w-unknown', 'Unknown', clock.now() - 61_000);
    kube.node('w-recent', false, clock.now() - 10_000);
    kube.node('w-ready', true, clock.now() - 3_600_000);
    assert.equal(isDeadNode(kube.obj('Node', undefined, 'w-unknown') as never, clock.now(), 60_000), true);
    assert.equal(isDeadNode(kube.obj('Node', undefined, 'w-recent') as never, clock.now(), 60_000), false);
    assert.equal(isDeadNode(kube.obj('Node', undefined, 'w-ready') as never, clock.now(), 60_000), false);
  });

  it('waits for the owners of drained pods, and reports those not ready in time', async () => {
    const { kube, clock } = world();
    kube.replicaSet('default', 'web-rs', 2, 1);
    clock.onSleep = (c) => {
      if (c.sleeps.length === 2) kube.replicaSet('default', 'web-rs', 2, 2);
    };
    const owners = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'default', name: 'web-rs' }];
    assert.deepEqual(await waitOwnersReady(kube, owners, { timeoutMs: 60_000, pollMs: 2000, clock }), []);
    kube.replicaSet('default', 'web-rs', 3, 1);
    clock.onSleep = undefined;
    assert.deepEqual(await waitOwnersReady(kube, owners, { timeoutMs: 10_000, pollMs: 2000, clock }), ['ReplicaSet default/web-rs (1/3 ready)']);
  });

  it('waits for a Node to be Ready after a join, failing after the timeout', async () => {
    const { kube, clock } = world();
    clock.onSleep = (c) => {
      if (c.sleeps.length === 2) kube.node('worker23', true);
    };
    await waitNodeReady(kube, 'worker23', { timeoutMs: 60_000, pollMs: 2000, clock });
    clock.onSleep = undefined;
    await assert.rejects(waitNodeReady(kube, 'worker24', { timeoutMs: 6000, pollMs: 2000, clock }), /node worker24 did not register within 6 s after joining/);
  });

  it('label selectors', () => {
    assert.ok(selectorMatches({ matchLabels: { a: '1' } }, { a: '1', b: '2' }));
    assert.ok(!selectorMatches({ matchLabels: { a: '1' } }, { a: '2' }));
    assert.ok(selectorMatches({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1', '3'] }] }, { a: '3' }));
    assert.ok(!selectorMatches({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }, {}));
    assert.ok(selectorMatches({}, { x: 'y' }), 'an empty selector selects everything');
  });
});
