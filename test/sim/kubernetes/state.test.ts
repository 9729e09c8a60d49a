/**
 * The simulated cluster keeps its state in a directory (`stateDir`): a cluster started again on
 * it lists the same objects with the same uids and resourceVersions (workloads of every kind,
 * services with their addresses, nodes, events), serves the same certificate, and its controllers
 * resume: a pod that was still Pending (slow kubelet) starts, a deleted pod of a Deployment is
 * replaced, new Services do not reuse addresses in use. Changes are saved without a clean close.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from './sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

const work = mkdtempSync(join(tmpdir(), 'k8s-sim-state-'));
const running: KubernetesSim[] = [];

after(async () => {
  for (const s of running) await s.close();
  rmSync(work, { recursive: true, force: true });
});

async function start(stateDir: string, kubeletDelayMs = 20): Promise<KubernetesSim> {
  const sim = await startKubernetesSim({ stateDir, kubeletDelayMs, token: 'state-test' });
  running.push(sim);
  return sim;
}

const template = (app: string) => ({ metadata: { labels: { app } }, spec: { containers: [{ name: 'c', image: `${app}:1` }] } });

function ready(p: Obj): boolean {
  return p.status?.phase === 'Running' && p.status.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True') && !p.metadata.deletionTimestamp;
}

async function post(sim: KubernetesSim, path: string, body: unknown): Promise<Obj> {
  const r = await simFetch(sim, 'POST', path, body);
  assert.equal(r.status, 201, r.text);
  return r.body;
}

async function get(sim: KubernetesSim, path: string): Promise<Obj> {
  const r = await simFetch(sim, 'GET', path);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

const LISTS = [
  '/api/v1/namespaces',
  '/api/v1/nodes',
  '/api/v1/namespaces/app/pods',
  '/api/v1/namespaces/app/services',
  '/api/v1/namespaces/app/configmaps',
  '/api/v1/namespaces/app/serviceaccounts',
  '/api/v1/namespaces/app/persistentvolumeclaims',
  '/api/v1/persistentvolumes',
  '/apis/apps/v1/namespaces/app/deployments',
  '/apis/apps/v1/namespaces/app/replicasets',
  '/apis/apps/v1/namespaces/app/statefulsets',
  '/apis/apps/v1/namespaces/app/daemonsets',
  '/api/v1/namespaces/app/events',
];

describe('simulated Kubernetes: state saved in stateDir and restored', () => {
  it('a restarted cluster lists the same objects (uids, resourceVersions), serves the same certificate, and its controllers go on', async () => {
    const dir = join(work, 'restart');
    const a = await start(dir);
    assert.equal(a.restored, false);
    await post(a, '/api/v1/namespaces', { metadata: { name: 'app' } });
    await post(a, '/apis/apps/v1/namespaces/app/deployments', { metadata: { name: 'web' }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: template('web') } });
    await post(a, '/apis/apps/v1/namespaces/app/daemonsets', { metadata: { name: 'agent' }, spec: { selector: { matchLabels: { app: 'agent' } }, template: template('agent') } });
    await post(a, '/apis/apps/v1/namespaces/app/statefulsets', {
      metadata: { name: 'db' },
      spec: { replicas: 1, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: template('db'), volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }] },
    });
    await post(a, '/api/v1/namespaces/app/pods', { metadata: { name: 'solo', labels: { app: 'solo' } }, spec: { containers: [{ name: 'c', image: 'solo:1' }] } });
    const svc = await post(a, '/api/v1/namespaces/app/services', { metadata: { name: 'web' }, spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ port: 80 }] } });
    await post(a, '/api/v1/namespaces/app/configmaps', { metadata: { name: 'cfg' }, data: { k: 'v' } });
    await waitFor('workloads ready', async () => {
      const pods: Obj[] = (await get(a, '/api/v1/namespaces/app/pods')).items;
      return pods.length === 2 + 3 + 1 + 1 && pods.every(ready);
    });
    // Let the controllers settle (status writes after the pods became ready).
    await new Promise((r) => setTimeout(r, 200));
    const before: Obj[] = [];
    for (const path of LISTS) before.push(await get(a, path));
    await a.close();

    const b = await start(dir);
    assert.equal(b.restored, true);
    assert.equal(b.caCert, a.caCert, 'the same serving certificate');
    const after: Obj[] = [];
    for (const path of LISTS) after.push(await get(b, path));
    for (const [i, path] of LISTS.entries()) assert.deepEqual(after[i], before[i], `${path}: same objects, uids, resourceVersions`);

    // Controllers go on: a deleted Deployment pod is replaced, a new Service gets fresh addresses.
    const web: Obj[] = after[2].items.filter((p: Obj) => p.metadata.labels?.app === 'web');
    const victim = web[0];
    assert.equal((await simFetch(b, 'DELETE', `/api/v1/namespaces/app/pods/${victim.metadata.name}?gracePeriodSeconds=0`)).status, 200);
    const replaced = await waitFor('a replacement pod', async () => {
      const pods: Obj[] = (await get(b, '/api/v1/namespaces/app/pods?labelSelector=app%3Dweb')).items;
      return pods.length === 2 && pods.every(ready) && !pods.some((p) => p.metadata.uid === victim.metadata.uid) ? pods : undefined;
    });
    assert.ok(replaced.some((p: Obj) => p.metadata.uid === web[1].metadata.uid), 'the other pod stays');
    assert.ok(Number(replaced.find((p: Obj) => p.metadata.uid !== web[1].metadata.uid).metadata.resourceVersion) > Number(after[2].metadata.resourceVersion), 'resourceVersions go on from the saved one');
    const svc2 = await post(b, '/api/v1/namespaces/app/services', { metadata: { name: 'other' }, spec: { type: 'NodePort', selector: { app: 'x' }, ports: [{ port: 80 }] } });
    assert.notEqual(svc2.spec.clusterIP, svc.spec.clusterIP);
    assert.notEqual(svc2.spec.ports[0].nodePort, svc.spec.ports[0].nodePort);
  });

  it('a pod still Pending when the cluster stopped (slow kubelet) is started after the restart, with its uid', async () => {
    const dir = join(work, 'pending');
    const a = await start(dir, 60_000);
    const pod = await post(a, '/api/v1/namespaces/default/pods', { metadata: { name: 'slow' }, spec: { containers: [{ name: 'c', image: 'slow:1' }] } });
    const bound = await waitFor('pod bound to a node', async () => {
      const p = await get(a, '/api/v1/namespaces/default/pods/slow');
      return p.spec.nodeName ? p : undefined;
    });
    assert.equal(bound.status.phase, 'Pending');
    await a.close();

    const b = await start(dir, 20);
    const runningPod = await waitFor('the pod running', async () => {
      const p = await get(b, '/api/v1/namespaces/default/pods/slow');
      return ready(p) ? p : undefined;
    });
    assert.equal(runningPod.metadata.uid, pod.metadata.uid);
    assert.equal(runningPod.spec.nodeName, bound.spec.nodeName);
  });

  it('changes are saved shortly after they happen, without a clean close', async () => {
    const dir = join(work, 'debounce');
    const a = await start(dir);
    const cm = await post(a, '/api/v1/namespaces/default/configmaps', { metadata: { name: 'quick' }, data: { a: '1' } });
    const saved = await waitFor('the state file with the ConfigMap', () => {
      try {
        const doc = JSON.parse(readFileSync(join(dir, 'kubernetes.json'), 'utf8'));
        return doc.state.store.objects.some((o: Obj) => o.obj.metadata.uid === cm.metadata.uid) ? doc : undefined;
      } catch {
        return undefined;
      }
    });
    assert.equal(saved.sim, 'kubernetes');
    assert.ok(saved.state.store.rv >= Number(cm.metadata.resourceVersion));
  });
});
