/**
 * Fault injection through the `/_sim` HTTP endpoints: node failure (pods rescheduled, DaemonSet
 * shrinks) and recovery, pod failure per controller kind, container restarts, broken and slow API,
 * kubelet delay, auth on the control API and the state summary.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from './sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

const template = (app: string) => ({ metadata: { labels: { app } }, spec: { containers: [{ name: 'c', image: `${app}:1` }] } });

function ready(p: Obj): boolean {
  return p.status?.phase === 'Running' && p.status.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True') && !p.metadata.deletionTimestamp;
}

describe('simulated Kubernetes fault injection', () => {
  let sim: KubernetesSim;
  const pods = async (selector: string): Promise<Obj[]> => (await simFetch(sim, 'GET', `/api/v1/namespaces/default/pods?labelSelector=${encodeURIComponent(selector)}`)).body.items;

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: 20 });
    const post = async (path: string, body: unknown) => {
      const r = await simFetch(sim, 'POST', path, body);
      assert.equal(r.status, 201, r.text);
    };
    await post('/apis/apps/v1/namespaces/default/deployments', { metadata: { name: 'web' }, spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: template('web') } });
    await post('/apis/apps/v1/namespaces/default/daemonsets', { metadata: { name: 'agent' }, spec: { selector: { matchLabels: { app: 'agent' } }, template: template('agent') } });
    await post('/apis/apps/v1/namespaces/default/statefulsets', { metadata: { name: 'db' }, spec: { replicas: 2, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: template('db') } });
    await post('/api/v1/namespaces/default/pods', { metadata: { name: 'solo', labels: { app: 'solo' } }, spec: { containers: [{ name: 'c', image: 'solo:1' }] } });
    await waitFor('workloads ready', async () => {
      const all: Obj[] = (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods')).body.items;
      return all.length === 3 + 3 + 2 + 1 && all.every(ready);
    });
  });

  after(async () => {
    await sim?.close();
  });

  it('requires the bearer token on the control API and the Kubernetes API', async () => {
    assert.equal((await simFetch(sim, 'GET', '/_sim/state', undefined, { auth: false })).status, 401);
    const r = await simFetch(sim, 'GET', '/api/v1/pods', undefined, { auth: false });
    assert.equal(r.status, 401);
    assert.equal(r.body.kind, 'Status');
    assert.equal(r.body.reason, 'Unauthorized');
    assert.equal((await simFetch(sim, 'GET', '/version', undefined, { auth: false })).status, 200);
  });

  it('summarises the cluster in /_sim/state', async () => {
    const s = (await simFetch(sim, 'GET', '/_sim/state')).body;
    assert.equal(s.ok, true);
    assert.equal(s.kubeletDelayMs, 20);
    assert.deepEqual(
      s.nodes.map((n: Obj) => [n.name, n.ready]),
      [
        ['worker-1', true],
        ['worker-2', true],
        ['worker-3', true],
      ],
    );
    assert.equal(s.pods.length, 9);
    assert.equal(s.counts['apps/deployments'], 1);
    assert.equal(s.faults.broken, false);
  });

  it('fails a node: pods are evicted and rescheduled, the DaemonSet shrinks; recovery restores it', async () => {
    // a node hosting web pods but not the bare pod (a bare pod on a failed node is evicted for good)
    const soloNode = (await pods('app=solo'))[0]?.spec.nodeName;
    const victim = (await pods('app=web')).map((p) => p.spec.nodeName).find((n) => n && n !== soloNode) as string;
    assert.ok(victim, 'a node with web pods and without the bare pod');
    const r = await simFetch(sim, 'POST', `/_sim/nodes/${victim}/fail`, {});
    assert.equal(r.status, 200, r.text);
    const node = (await simFetch(sim, 'GET', `/api/v1/nodes/${victim}`)).body;
    assert.equal(node.status.conditions.find((c: Obj) => c.type === 'Ready').status, 'Unknown');
    assert.ok(node.spec.taints.some((t: Obj) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute'));
    await waitFor('web and db rescheduled off the failed node', async () => {
      const web = await pods('app=web');
      const db = await pods('app=db');
      return web.length === 3 && web.every(ready) && db.length === 2 && db.every(ready) && [...web, ...db].every((p) => p.spec.nodeName !== victim);
    });
    const agents = await pods('app=agent');
    assert.equal(agents.length, 2, 'DaemonSet pod on the failed node disappears');
    assert.ok(agents.every((p) => p.spec.nodeName !== victim));
    const ds = (await simFetch(sim, 'GET', '/apis/apps/v1/namespaces/default/daemonsets/agent')).body;
    assert.equal(ds.status.desiredNumberScheduled, 2);
    assert.equal((await pods('app=solo')).length, 1);

    assert.equal((await simFetch(sim, 'POST', `/_sim/nodes/${victim}/recover`, {})).status, 200);
    await waitFor('DaemonSet back to 3', async () => {
      const a = await pods('app=agent');
      return a.length === 3 && a.every(ready) && a.some((p) => p.spec.nodeName === victim);
    });
  });

  it('fails a Deployment pod: the ReplicaSet replaces it, the Failed pod stays', async () => {
    const victim = (await pods('app=web'))[0].metadata.name;
    const r = await simFetch(sim, 'POST', `/_sim/pods/default/${victim}/fail`, { reason: 'Evicted', message: 'simulated' });
    assert.equal(r.status, 200, r.text);
    await waitFor('replacement ready', async () => {
      const web = await pods('app=web');
      return web.filter(ready).length === 3 && web.length === 4 ? web : undefined;
    });
    const failed = (await simFetch(sim, 'GET', `/api/v1/namespaces/default/pods/${victim}`)).body;
    assert.equal(failed.status.phase, 'Failed');
    assert.equal(failed.status.reason, 'Evicted');
    const failedOnly = (await simFetch(sim, 'GET', `/api/v1/namespaces/default/pods?fieldSelector=${encodeURIComponent('status.phase=Failed')}`)).body.items;
    assert.deepEqual(
      failedOnly.map((p: Obj) => p.metadata.name),
      [victim],
    );
    await simFetch(sim, 'DELETE', `/api/v1/namespaces/default/pods/${victim}`);
  });

  it('fails a StatefulSet pod: the same name comes back with a new uid', async () => {
    const before = (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods/db-1')).body;
    assert.equal((await simFetch(sim, 'POST', '/_sim/pods/default/db-1/fail', {})).status, 200);
    const after = await waitFor('db-1 recreated', async () => {
      const p = (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods/db-1')).body;
      return p?.metadata?.uid && p.metadata.uid !== before.metadata.uid && ready(p) ? p : undefined;
    });
    assert.equal(after.metadata.name, 'db-1');
  });

  it('fails a bare pod: it stays Failed and nothing replaces it', async () => {
    assert.equal((await simFetch(sim, 'POST', '/_sim/pods/default/solo/fail', { exitCode: 1 })).status, 200);
    // Sync point after the controllers had their turn: they react to the failure on the next
    // drain of their queue, while a pod created afterwards needs that drain plus a kubelet delay to
    // be Ready. Once it is, whatever would replace or remove the failed pod would have done so.
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'probe', labels: { app: 'probe' } }, spec: { containers: [{ name: 'c', image: 'probe:1' }] } })).status, 201);
    await waitFor('probe pod ready', async () => ready((await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods/probe')).body));
    await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/pods/probe?gracePeriodSeconds=0');
    const solo = await pods('app=solo');
    assert.equal(solo.length, 1);
    assert.equal(solo[0].status.phase, 'Failed');
    assert.equal(solo[0].status.containerStatuses[0].state.terminated.exitCode, 1);
    assert.equal((await simFetch(sim, 'POST', '/_sim/pods/default/nope/fail', {})).status, 404);
  });

  it('restarts containers of a running pod', async () => {
    const name = (await pods('app=web')).find(ready).metadata.name;
    assert.equal((await simFetch(sim, 'POST', `/_sim/pods/default/${name}/restart`, {})).status, 200);
    const down = (await simFetch(sim, 'GET', `/api/v1/namespaces/default/pods/${name}`)).body;
    assert.equal(down.status.containerStatuses[0].restartCount, 1);
    assert.equal(ready(down), false);
    await waitFor('ready again', async () => ready((await simFetch(sim, 'GET', `/api/v1/namespaces/default/pods/${name}`)).body));
  });

  it('breaks the API for N requests, and until cleared; /_sim keeps working', async () => {
    assert.equal((await simFetch(sim, 'POST', '/_sim/api/break', { requests: 2 })).status, 200);
    const a = await simFetch(sim, 'GET', '/api/v1/pods');
    const b = await simFetch(sim, 'GET', '/api/v1/pods');
    const c = await simFetch(sim, 'GET', '/api/v1/pods');
    assert.deepEqual([a.status, b.status, c.status], [503, 503, 200]);
    assert.equal(a.body.reason, 'ServiceUnavailable');

    assert.equal((await simFetch(sim, 'POST', '/_sim/api/break', {})).status, 200);
    for (let i = 0; i < 5; i++) assert.equal((await simFetch(sim, 'GET', '/api/v1/nodes')).status, 503);
    assert.equal((await simFetch(sim, 'GET', '/_sim/state')).body.faults.breakRemaining, 'until-cleared');
    assert.equal((await simFetch(sim, 'DELETE', '/_sim/api/break')).status, 200);
    assert.equal((await simFetch(sim, 'GET', '/api/v1/nodes')).status, 200);
  });

  it('slows the API down and clears all faults; the control API is never slowed', { timeout: 120_000 }, async () => {
    assert.equal((await simFetch(sim, 'PUT', '/_sim/api/latency', { ms: 150 })).status, 200);
    const t0 = Date.now();
    assert.equal((await simFetch(sim, 'GET', '/api/v1/namespaces')).status, 200);
    assert.ok(Date.now() - t0 >= 140, 'latency applied');
    // With a 10-minute latency, an answer at all (the test's timeout guards it) is the proof: the
    // control API is not slowed, and after DELETE /_sim/faults the Kubernetes API is not either.
    // No Kubernetes API request is sent while that latency is set (it would wait for 10 minutes).
    assert.equal((await simFetch(sim, 'PUT', '/_sim/api/latency', { ms: 600_000 })).status, 200);
    assert.equal((await simFetch(sim, 'GET', '/_sim/state?pods=false')).body.faults.latencyMs, 600_000, 'control API answers under latency');
    assert.equal((await simFetch(sim, 'DELETE', '/_sim/faults')).status, 200);
    assert.equal((await simFetch(sim, 'GET', '/api/v1/namespaces')).status, 200, 'cleared: the API answers');
    assert.equal((await simFetch(sim, 'GET', '/_sim/state?pods=false')).body.faults.latencyMs, 0);
  });

  it('changes the kubelet delay at runtime', async () => {
    assert.equal((await simFetch(sim, 'PUT', '/_sim/kubelet', { delayMs: 300 })).status, 200);
    const t0 = Date.now();
    await simFetch(sim, 'POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'slow' }, spec: { containers: [{ name: 'c', image: 'x:1' }] } });
    await waitFor('slow pod ready', async () => ready((await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods/slow')).body));
    assert.ok(Date.now() - t0 >= 290, 'pod start took the kubelet delay');
    assert.equal((await simFetch(sim, 'PUT', '/_sim/kubelet', { delayMs: -1 })).status, 400);
    await simFetch(sim, 'PUT', '/_sim/kubelet', { delayMs: 20 });
  });

  it('adds a node that the DaemonSet and scheduler then use', async () => {
    const r = await simFetch(sim, 'POST', '/_sim/nodes', {});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.node, 'worker-4');
    await waitFor('daemon pod on worker-4', async () => (await pods('app=agent')).some((p) => p.spec.nodeName === 'worker-4' && ready(p)));
  });
});
