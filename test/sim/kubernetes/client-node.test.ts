/**
 * @kubernetes/client-node 1.4 against the simulated cluster: typed APIs (CoreV1Api, AppsV1Api),
 * KubernetesObjectApi, Watch, the three patch flavours, optimistic concurrency and error codes,
 * plus the event-driven ordering the VNFM heal (and its benchmark) relies on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { waitFor } from './sim-test-helpers.ts';

const KUBELET_DELAY = 40;

function deployment(name: string, replicas: number): k8s.V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'cnf', labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: 'registry.local/vnf:1.0', env: [{ name: 'MODE', value: 'a' }] }] } },
    },
  };
}

function isReady(p: k8s.V1Pod): boolean {
  return p.status?.phase === 'Running' && !!p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && !p.metadata?.deletionTimestamp;
}

/** Status code of a client-node ApiException. */
function codeOf(err: unknown): number | undefined {
  return (err as { code?: number }).code;
}

describe('simulated Kubernetes with @kubernetes/client-node', () => {
  let sim: KubernetesSim;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let objects: k8s.KubernetesObjectApi;

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: KUBELET_DELAY });
    kc = new k8s.KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    core = kc.makeApiClient(k8s.CoreV1Api);
    apps = kc.makeApiClient(k8s.AppsV1Api);
    objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    await core.createNamespace({ body: { metadata: { name: 'cnf' } } });
  });

  after(async () => {
    await sim?.close();
  });

  it('lists nodes and system namespaces', async () => {
    const nodes = await core.listNode();
    assert.deepEqual(
      nodes.items.map((n) => n.metadata?.name),
      ['worker-1', 'worker-2', 'worker-3'],
    );
    for (const n of nodes.items) {
      assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
      assert.equal(n.status?.capacity?.pods, '110');
    }
    const ns = await core.listNamespace();
    assert.deepEqual(ns.items.map((n) => n.metadata?.name).sort(), ['cnf', 'default', 'kube-node-lease', 'kube-public', 'kube-system']);
  });

  it('creates a Deployment and watches its pods become Ready', async () => {
    const events: string[] = [];
    const ready = new Set<string>();
    const watch = new k8s.Watch(kc);
    const ctl = await watch.watch(
      '/api/v1/namespaces/cnf/pods',
      { labelSelector: 'app=vnfc' },
      (type, pod: k8s.V1Pod) => {
        events.push(type);
        if (isReady(pod)) ready.add(pod.metadata?.name as string);
      },
      () => {},
    );
    try {
      const created = await apps.createNamespacedDeployment({ namespace: 'cnf', body: deployment('vnfc', 3) });
      assert.ok(created.metadata?.uid);
      assert.equal(created.metadata?.generation, 1);
      assert.ok(Number(created.metadata?.resourceVersion) > 0);
      await waitFor('3 ready pods seen on the watch', () => ready.size >= 3);
      assert.ok(events.includes('ADDED') && events.includes('MODIFIED'));
      const d = await waitFor('deployment status', async () => {
        const x = await apps.readNamespacedDeployment({ name: 'vnfc', namespace: 'cnf' });
        return x.status?.availableReplicas === 3 ? x : undefined;
      });
      assert.equal(d.status?.observedGeneration, 1);
      const rs = await apps.listNamespacedReplicaSet({ namespace: 'cnf', labelSelector: 'app=vnfc' });
      assert.equal(rs.items.length, 1);
      const hash = rs.items[0]?.metadata?.labels?.['pod-template-hash'];
      assert.equal(rs.items[0]?.metadata?.name, `vnfc-${hash}`);
      assert.equal(rs.items[0]?.metadata?.ownerReferences?.[0]?.uid, d.metadata?.uid);
      const pods = await core.listNamespacedPod({ namespace: 'cnf', labelSelector: 'app=vnfc' });
      for (const p of pods.items) {
        assert.match(p.metadata?.name ?? '', new RegExp(`^vnfc-${hash}-[a-z0-9]{5}$`));
        assert.ok(p.status?.podIP && p.status.hostIP && p.status.startTime);
        assert.equal(p.status?.containerStatuses?.[0]?.ready, true);
        assert.equal(p.metadata?.ownerReferences?.[0]?.kind, 'ReplicaSet');
      }
    } finally {
      ctl.abort();
    }
  });

  it('replaces a pod being deleted at once: the replacement exists before the old pod is gone', async () => {
    const pods = await core.listNamespacedPod({ namespace: 'cnf', labelSelector: 'app=vnfc' });
    const victim = pods.items[0]?.metadata?.name as string;
    const before = new Set(pods.items.map((p) => p.metadata?.name));
    const rv = pods.metadata?.resourceVersion as string;
    const deleted = (await core.deleteNamespacedPod({ name: victim, namespace: 'cnf', propagationPolicy: 'Foreground' })) as k8s.V1Pod;
    assert.ok(deleted.metadata?.deletionTimestamp, 'graceful deletion marks the pod');
    const replacement = await waitFor(
      'replacement Ready',
      async () => {
        const now = await core.listNamespacedPod({ namespace: 'cnf', labelSelector: 'app=vnfc' });
        return now.items.find((p) => !before.has(p.metadata?.name) && isReady(p));
      },
      30_000,
    );
    await waitFor('old pod gone', async () => {
      try {
        await core.readNamespacedPod({ name: victim, namespace: 'cnf' });
        return false;
      } catch (err) {
        return codeOf(err) === 404;
      }
    });
    // Order, from the sim's own history: a watch from the resourceVersion listed before the delete
    // replays every change since. The ReplicaSet created the replacement while the old pod was
    // still terminating (one kubelet delay on a heal's critical path, not two: what bench/cnf-heal
    // measures), i.e. its ADDED comes before the old pod's DELETED.
    const seen: string[] = [];
    const ctl = await new k8s.Watch(kc).watch('/api/v1/namespaces/cnf/pods', { resourceVersion: rv, labelSelector: 'app=vnfc' }, (type, obj: k8s.V1Pod) => seen.push(`${type} ${obj.metadata?.name}`), () => {});
    try {
      await waitFor('the old pod DELETED in the replay', () => seen.includes(`DELETED ${victim}`));
    } finally {
      ctl.abort();
    }
    const added = seen.indexOf(`ADDED ${replacement.metadata?.name}`);
    assert.ok(added >= 0 && added < seen.indexOf(`DELETED ${victim}`), seen.join(', '));
    const marked = seen.indexOf(`MODIFIED ${victim}`);
    assert.ok(marked >= 0 && marked < added, `marked for deletion first: ${seen.join(', ')}`);
  });

  it('patches with JSON patch, merge patch and strategic merge patch', async () => {
    // Default content type of the generated client is JSON patch.
    const p1 = await apps.patchNamespacedDeployment({ name: 'vnfc', namespace: 'cnf', body: [{ op: 'add', path: '/metadata/labels/tier', value: 'data' }] });
    assert.equal(p1.metadata?.labels?.tier, 'data');
    assert.equal(p1.metadata?.generation, 1, 'metadata changes do not bump generation');
    const p2 = await apps.patchNamespacedDeployment({ name: 'vnfc', namespace: 'cnf', body: { metadata: { labels: { tier: null } } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    assert.equal(p2.metadata?.labels?.tier, undefined);
    const p3 = await apps.patchNamespacedDeployment(
      {
        name: 'vnfc',
        namespace: 'cnf',
        body: { spec: { template: { spec: { containers: [{ name: 'main', env: [{ name: 'EXTRA', value: '1' }] }, { name: 'sidecar', image: 'registry.local/proxy:2' }] } } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
    const containers = p3.spec?.template.spec?.containers ?? [];
    assert.deepEqual(
      containers.map((c) => c.name),
      ['main', 'sidecar'],
    );
    assert.equal(containers[0]?.image, 'registry.local/vnf:1.0', 'merged by name, image kept');
    assert.deepEqual(
      containers[0]?.env?.map((e) => e.name),
      ['MODE', 'EXTRA'],
    );
    assert.equal(p3.metadata?.generation, 2, 'template change bumps generation');
    await waitFor('rollout of the patched template', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'vnfc', namespace: 'cnf' });
      return d.status?.observedGeneration === 2 && d.status.updatedReplicas === 3 && d.status.availableReplicas === 3 && d.status.replicas === 3;
    });
    const pods = await core.listNamespacedPod({ namespace: 'cnf', labelSelector: 'app=vnfc' });
    assert.equal(pods.items.filter((p) => !p.metadata?.deletionTimestamp).length, 3);
    for (const p of pods.items.filter((x) => !x.metadata?.deletionTimestamp)) assert.equal(p.spec?.containers.length, 2);
  });

  it('rejects a stale replace with 409 Conflict and accepts a fresh one', async () => {
    const cm = await core.createNamespacedConfigMap({ namespace: 'cnf', body: { metadata: { name: 'cfg' }, data: { a: '1' } } });
    const updated = await core.replaceNamespacedConfigMap({ name: 'cfg', namespace: 'cnf', body: { ...cm, data: { a: '2' } } });
    assert.ok(Number(updated.metadata?.resourceVersion) > Number(cm.metadata?.resourceVersion));
    await assert.rejects(core.replaceNamespacedConfigMap({ name: 'cfg', namespace: 'cnf', body: { ...cm, data: { a: '3' } } }), (err) => codeOf(err) === 409);
    await assert.rejects(core.createNamespacedConfigMap({ namespace: 'cnf', body: { metadata: { name: 'cfg' } } }), (err) => codeOf(err) === 409);
    await assert.rejects(core.readNamespacedConfigMap({ name: 'missing', namespace: 'cnf' }), (err) => codeOf(err) === 404);
    await assert.rejects(core.createNamespacedPod({ namespace: 'cnf', body: { metadata: { name: 'x' }, spec: { containers: [{ name: 'c' } as k8s.V1Container] } } }), (err) => codeOf(err) === 422);
  });

  it('works through KubernetesObjectApi (create, read, patch, list, delete)', async () => {
    const svc = await objects.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'vnfc', namespace: 'cnf' }, spec: { type: 'NodePort', selector: { app: 'vnfc' }, ports: [{ port: 80 }] } } as k8s.V1Service);
    const s = svc as k8s.V1Service;
    assert.match(s.spec?.clusterIP ?? '', /^10\.96\.\d+\.\d+$/);
    const np = s.spec?.ports?.[0]?.nodePort as number;
    assert.ok(np >= 30000 && np <= 32767);
    const read = (await objects.read({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'vnfc', namespace: 'cnf' } })) as k8s.V1Service;
    assert.equal(read.spec?.ports?.[0]?.nodePort, np);
    const patched = await objects.patch({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'vnfc', namespace: 'cnf', labels: { x: 'y' } } } as k8s.KubernetesObject);
    assert.equal(patched.metadata?.labels?.x, 'y');
    const list = await objects.list('apps/v1', 'Deployment', 'cnf');
    assert.deepEqual(
      list.items.map((d) => d.metadata?.name),
      ['vnfc'],
    );
    const ep = await waitFor('endpoints', async () => {
      const e = await core.readNamespacedEndpoints({ name: 'vnfc', namespace: 'cnf' });
      return (e.subsets?.[0]?.addresses?.length ?? 0) === 3 ? e : undefined;
    });
    assert.equal(ep.subsets?.[0]?.ports?.[0]?.port, 80);
    await objects.delete({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'vnfc', namespace: 'cnf' } });
    await assert.rejects(core.readNamespacedService({ name: 'vnfc', namespace: 'cnf' }), (err) => codeOf(err) === 404);
  });

  it('reads and updates the scale subresource', async () => {
    const scale = await apps.readNamespacedDeploymentScale({ name: 'vnfc', namespace: 'cnf' });
    assert.equal(scale.spec?.replicas, 3);
    assert.equal(scale.status?.selector, 'app=vnfc');
    await apps.replaceNamespacedDeploymentScale({ name: 'vnfc', namespace: 'cnf', body: { ...scale, spec: { replicas: 1 } } });
    await waitFor('scaled in', async () => (await core.listNamespacedPod({ namespace: 'cnf', labelSelector: 'app=vnfc' })).items.length === 1);
  });

  it('resumes a watch from a resourceVersion and sees DELETED events', async () => {
    const list = await core.listNamespacedConfigMap({ namespace: 'cnf' });
    const rv = list.metadata?.resourceVersion as string;
    await core.createNamespacedConfigMap({ namespace: 'cnf', body: { metadata: { name: 'later' } } });
    await core.deleteNamespacedConfigMap({ name: 'later', namespace: 'cnf' });
    const seen: string[] = [];
    const ctl = await new k8s.Watch(kc).watch('/api/v1/namespaces/cnf/configmaps', { resourceVersion: rv }, (type, obj: k8s.V1ConfigMap) => seen.push(`${type} ${obj.metadata?.name}`), () => {});
    try {
      await waitFor('replayed events', () => seen.length >= 2);
      assert.deepEqual(seen, ['ADDED later', 'DELETED later']);
    } finally {
      ctl.abort();
    }
  });

  it('deletes a Deployment in the background and collects its ReplicaSets and pods', async () => {
    await apps.deleteNamespacedDeployment({ name: 'vnfc', namespace: 'cnf' });
    await waitFor('garbage collection', async () => {
      const rs = await apps.listNamespacedReplicaSet({ namespace: 'cnf' });
      const pods = await core.listNamespacedPod({ namespace: 'cnf' });
      return rs.items.length === 0 && pods.items.length === 0;
    });
  });
});
