/**
 * The drain over the real KubeClient against the simulated Kubernetes API: cordon (merge patch of
 * the Node), pods listed by field selector across namespaces, evictions through the subresource
 * (the simulator's journal shows them as evictions, not deletes), DaemonSet pods left, the owner
 * back to its ready count on the other node, the Node deleted. When the simulator honours
 * PodDisruptionBudgets, a budget allowing no disruption fails the drain naming it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { realClock } from '../../../src/mgmt/drivers/k8s-kubeadm/driver.ts';
import { deleteNode, drainNode, waitOwnersReady } from '../../../src/mgmt/drivers/k8s-common/drain.ts';
import { type KubeApi, kubeClientFactory } from '../../../src/mgmt/drivers/k8s-common/kube.ts';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from '../../sim/kubernetes/sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

const deployment = (name: string, replicas: number) => ({
  metadata: { name },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
});

function ready(p: Obj): boolean {
  return p.status?.phase === 'Running' && !p.metadata.deletionTimestamp && (p.status?.conditions ?? []).some((c: Obj) => c.type === 'Ready' && c.status === 'True');
}

describe('k8s-kubeadm drain against the simulated Kubernetes API', () => {
  let sim: KubernetesSim;
  let api: KubeApi;
  const pods = async (q = ''): Promise<Obj[]> => (await simFetch(sim, 'GET', `/api/v1/pods${q}`)).body.items;

  before(async () => {
    sim = await startKubernetesSim({ nodes: 2, kubeletDelayMs: 5 });
    api = kubeClientFactory({ baseDelayMs: 5, maxDelayMs: 20 })({ server: sim.url, caCert: sim.caCert, token: sim.token });
  });
  after(async () => {
    await sim?.close();
  });

  it('cordons, evicts the node\'s pods (DaemonSet pods stay), waits for the owner, deletes the Node', async () => {
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', deployment('web', 4))).status, 201);
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/kube-system/daemonsets', { metadata: { name: 'agent' }, spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'c', image: 'a:1' }] } } } })).status, 201);
    await waitFor('web and agent pods ready', async () => {
      const all = await pods();
      return all.filter((p) => p.metadata.labels?.app === 'web' && ready(p)).length === 4 && all.filter((p) => p.metadata.labels?.app === 'agent' && ready(p)).length === 2;
    });
    const onNode = (await pods('?fieldSelector=spec.nodeName%3Dworker-1')).filter((p) => p.metadata.labels?.app === 'web').map((p) => p.metadata.name);
    assert.ok(onNode.length > 0, 'the scheduler put web pods on worker-1');
    const journalFrom = (await simFetch(sim, 'GET', '/_sim/journal')).body.deletions.length;

    const r = await drainNode(api, 'worker-1', { timeoutMs: 60_000, retryMs: 20, force: false, clock: realClock });
    assert.equal(r.found, true);
    assert.deepEqual(r.evicted.map((p) => p.name).sort(), [...onNode].sort());
    assert.equal((await simFetch(sim, 'GET', '/api/v1/nodes/worker-1')).body.spec.unschedulable, true);
    const left = await pods('?fieldSelector=spec.nodeName%3Dworker-1');
    assert.deepEqual(left.map((p) => p.metadata.labels?.app), ['agent']);
    const evictions = (await simFetch(sim, 'GET', '/_sim/journal')).body.deletions.slice(journalFrom);
    assert.deepEqual(evictions.map((e: Obj) => e.via), onNode.map(() => 'eviction'));
    const notReady = await waitOwnersReady(api, r.owners, { timeoutMs: 60_000, pollMs: 20, clock: realClock });
    assert.deepEqual(notReady, []);
    assert.equal((await pods('?fieldSelector=spec.nodeName%3Dworker-2')).filter((p) => p.metadata.labels?.app === 'web' && ready(p)).length, 4);
    assert.equal(await deleteNode(api, 'worker-1'), 'deleted');
    assert.equal(await deleteNode(api, 'worker-1'), 'gone');
  });

  it('a budget allowing no disruption fails the drain naming it', async () => {
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', deployment('db', 1))).status, 201);
    const pod = await waitFor('db pod ready', async () => (await pods('?labelSelector=app%3Ddb')).find(ready));
    assert.equal((await simFetch(sim, 'POST', '/apis/policy/v1/namespaces/default/poddisruptionbudgets', { metadata: { name: 'db-pdb' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } } })).status, 201);
    // The simulator computes the budget's status first; then a dry-run eviction is refused.
    await waitFor('the budget computed', async () => (await simFetch(sim, 'GET', '/apis/policy/v1/namespaces/default/poddisruptionbudgets/db-pdb')).body.status?.disruptionsAllowed !== undefined);
    const probe = await simFetch(sim, 'POST', `/api/v1/namespaces/default/pods/${pod.metadata.name}/eviction?dryRun=All`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: pod.metadata.name } });
    assert.equal(probe.status, 429, 'the simulator refuses an eviction the budget forbids');
    await assert.rejects(drainNode(api, pod.spec.nodeName, { timeoutMs: 300, retryMs: 50, force: false, clock: realClock }), /evictions refused by PodDisruptionBudget\(s\) default\/db-pdb/);
    assert.ok((await pods('?labelSelector=app%3Ddb')).some((p) => p.metadata.name === pod.metadata.name && !p.metadata.deletionTimestamp));
  });
});
