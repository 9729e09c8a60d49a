/**
 * REST semantics of the simulated API server over raw HTTP: discovery, metadata (uid,
 * resourceVersion, generation), selectors, paging, Status errors, the patch flavours, deletion
 * (grace period, propagation policies, deletecollection), watches (resume, 410, filtered
 * transitions), StatefulSet ordering, service address allocation and server-side Table printing.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from './sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

const KUBELET_DELAY = 50;

function pod(name: string, labels: Record<string, string> = {}): Obj {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'img:1' }] } };
}

/** Opens a watch and collects `type name` lines until `stop()`. */
function openWatch(sim: KubernetesSim, path: string): { lines: Obj[]; stop: () => void; ended: Promise<void> } {
  const lines: Obj[] = [];
  const url = new URL(`${sim.httpUrl}${path}`);
  let buf = '';
  let resolveEnded: () => void = () => {};
  const ended = new Promise<void>((r) => {
    resolveEnded = r;
  });
  const req = request(url, { headers: { authorization: `Bearer ${sim.token}` } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buf += chunk;
      let i = buf.indexOf('\n');
      while (i >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
        i = buf.indexOf('\n');
      }
    });
    res.on('end', resolveEnded);
    res.on('close', resolveEnded);
  });
  req.on('error', resolveEnded);
  req.end();
  return { lines, stop: () => req.destroy(), ended };
}

describe('simulated Kubernetes API semantics', () => {
  let sim: KubernetesSim;
  const get = (path: string) => simFetch(sim, 'GET', path);

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: KUBELET_DELAY, nodes: 2 });
  });

  after(async () => {
    await sim?.close();
  });

  it('serves discovery, version and health', async () => {
    const v = await simFetch(sim, 'GET', '/version', undefined, { auth: false });
    assert.equal(v.body.major, '1');
    assert.equal((await get('/api')).body.versions[0], 'v1');
    const groups = (await get('/apis')).body.groups.map((g: Obj) => g.name);
    for (const g of ['apps', 'batch', 'policy', 'storage.k8s.io', 'rbac.authorization.k8s.io']) assert.ok(groups.includes(g), g);
    const apps = (await get('/apis/apps/v1')).body.resources;
    const scale = apps.find((r: Obj) => r.name === 'deployments/scale');
    assert.deepEqual([scale.group, scale.version, scale.kind], ['autoscaling', 'v1', 'Scale']);
    assert.deepEqual(apps.find((r: Obj) => r.name === 'deployments').shortNames, ['deploy']);
    const agg = await simFetch(sim, 'GET', '/apis', undefined, { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' });
    assert.equal(agg.body.kind, 'APIGroupDiscoveryList');
    assert.equal((await get('/openapi/v3')).status, 200);
    assert.equal((await get('/openapi/v2')).status, 404);
    assert.equal((await simFetch(sim, 'GET', '/healthz', undefined, { auth: false })).text, 'ok');
    assert.equal((await get('/apis/nope/v1/things')).status, 404);
  });

  it('stamps uid, creationTimestamp, monotonic resourceVersion and generation', async () => {
    const a = (await simFetch(sim, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'a' } })).body;
    const b = (await simFetch(sim, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'b' } })).body;
    assert.match(a.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.match(a.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(Number(b.metadata.resourceVersion) > Number(a.metadata.resourceVersion));
    const d = (
      await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', {
        metadata: { name: 'gen' },
        spec: { replicas: 1, selector: { matchLabels: { app: 'gen' } }, template: { metadata: { labels: { app: 'gen' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
      })
    ).body;
    assert.equal(d.metadata.generation, 1);
    assert.equal(d.spec.strategy.rollingUpdate.maxSurge, '25%', 'defaults applied');
    const labelled = (await simFetch(sim, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/gen', { metadata: { labels: { x: '1' } } }, { contentType: 'application/merge-patch+json' })).body;
    assert.equal(labelled.metadata.generation, 1);
    const scaled = (await simFetch(sim, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/gen', { spec: { replicas: 2 } }, { contentType: 'application/merge-patch+json' })).body;
    assert.equal(scaled.metadata.generation, 2);
    await waitFor('observedGeneration', async () => (await get('/apis/apps/v1/namespaces/default/deployments/gen')).body.status?.observedGeneration === 2);
    // The main resource ignores status changes; the status subresource ignores spec changes.
    // Read-modify-write as real clients do: the controller may update the object in between (409 Conflict).
    let viaMain: Obj;
    for (;;) {
      const cur = (await get('/apis/apps/v1/namespaces/default/deployments/gen')).body;
      const r = await simFetch(sim, 'PUT', '/apis/apps/v1/namespaces/default/deployments/gen', { ...cur, status: { ...cur.status, observedGeneration: 42 } });
      if (r.status === 409) continue;
      viaMain = r.body;
      break;
    }
    assert.equal(viaMain.status.observedGeneration, 2);
    const viaStatus = (await simFetch(sim, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/gen/status', { spec: { replicas: 7 }, status: { observedGeneration: 42 } }, { contentType: 'application/merge-patch+json' })).body;
    assert.equal(viaStatus.spec.replicas, 2);
    assert.equal(viaStatus.status.observedGeneration, 42);
    assert.equal(viaStatus.metadata.generation, 2);
    await simFetch(sim, 'DELETE', '/apis/apps/v1/namespaces/default/deployments/gen');
  });

  it('filters lists with label and field selectors and pages them', async () => {
    for (const [n, labels] of [
      ['s1', { app: 'a', tier: 'web' }],
      ['s2', { app: 'a', tier: 'db' }],
      ['s3', { app: 'b' }],
      ['s4', { app: 'c', tier: 'web' }],
    ] as const) {
      assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/default/pods', pod(n, { ...labels, sel: 'yes' }))).status, 201);
    }
    const names = async (q: string) => (await get(`/api/v1/namespaces/default/pods?${q}`)).body.items.map((p: Obj) => p.metadata.name);
    const ls = (s: string) => `labelSelector=${encodeURIComponent(`sel=yes,${s}`)}`;
    assert.deepEqual(await names(ls('app=a')), ['s1', 's2']);
    assert.deepEqual(await names(ls('app!=a')), ['s3', 's4']);
    assert.deepEqual(await names(ls('app in (a,c)')), ['s1', 's2', 's4']);
    assert.deepEqual(await names(ls('app notin (a,c)')), ['s3']);
    assert.deepEqual(await names(ls('tier')), ['s1', 's2', 's4']);
    assert.deepEqual(await names(ls('!tier')), ['s3']);
    assert.deepEqual(await names(ls('tier=web,app==c')), ['s4']);
    assert.equal((await get(`/api/v1/pods?labelSelector=${encodeURIComponent('app in (a')}`)).status, 400);
    await waitFor('pods running', async () => (await names(`${ls('app')}&fieldSelector=status.phase%3DRunning`)).length === 4);
    assert.deepEqual(await names('fieldSelector=metadata.name%3Ds3'), ['s3']);
    assert.deepEqual(await names(`${ls('app')}&fieldSelector=metadata.name!%3Ds3`), ['s1', 's2', 's4']);
    assert.deepEqual((await get('/api/v1/pods?fieldSelector=metadata.namespace%3Dkube-system')).body.items, []);
    const onNode = (await get('/api/v1/namespaces/default/pods/s1')).body.spec.nodeName;
    const sameNode = await names(`${ls('app')}&fieldSelector=spec.nodeName%3D${onNode}`);
    assert.ok(sameNode.includes('s1') && sameNode.length >= 1 && sameNode.length < 4);

    const p1 = (await get(`/api/v1/namespaces/default/pods?${ls('app')}&limit=3`)).body;
    assert.equal(p1.items.length, 3);
    assert.equal(p1.metadata.remainingItemCount, 1);
    const p2 = (await get(`/api/v1/namespaces/default/pods?${ls('app')}&limit=3&continue=${p1.metadata.continue}`)).body;
    assert.deepEqual(
      p2.items.map((p: Obj) => p.metadata.name),
      ['s4'],
    );
    assert.equal(p2.metadata.continue, undefined);
  });

  it('deletes a collection of pods by label', async () => {
    const r = await simFetch(sim, 'DELETE', `/api/v1/namespaces/default/pods?labelSelector=sel%3Dyes&gracePeriodSeconds=0`);
    assert.equal(r.status, 200);
    assert.equal(r.body.items.length, 4);
    assert.deepEqual((await get('/api/v1/namespaces/default/pods?labelSelector=sel%3Dyes')).body.items, []);
  });

  it('answers Status errors with the right codes', async () => {
    const nf = await get('/api/v1/namespaces/default/pods/ghost');
    assert.equal(nf.status, 404);
    assert.deepEqual([nf.body.kind, nf.body.status, nf.body.reason, nf.body.code], ['Status', 'Failure', 'NotFound', 404]);
    assert.equal(nf.body.message, 'pods "ghost" not found');
    const depNf = await get('/apis/apps/v1/namespaces/default/deployments/ghost');
    assert.equal(depNf.body.message, 'deployments.apps "ghost" not found');
    assert.equal(depNf.body.details.group, 'apps');
    const dup = await simFetch(sim, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'a' } });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.reason, 'AlreadyExists');
    const cur = (await get('/api/v1/namespaces/default/configmaps/a')).body;
    const stale = await simFetch(sim, 'PUT', '/api/v1/namespaces/default/configmaps/a', { ...cur, metadata: { ...cur.metadata, resourceVersion: '1' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, 'Conflict');
    const inv = await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', {
      metadata: { name: 'bad' },
      spec: { selector: { matchLabels: { app: 'x' } }, template: { metadata: { labels: { app: 'y' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } },
    });
    assert.equal(inv.status, 422);
    assert.equal(inv.body.reason, 'Invalid');
    assert.match(inv.body.message, /`selector` does not match template `labels`/);
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/nowhere/configmaps', { metadata: { name: 'x' } })).body.message, 'namespaces "nowhere" not found');
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x', namespace: 'other' } })).status, 400);
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'Bad_Name' } })).status, 422);
    assert.equal((await simFetch(sim, 'PATCH', '/api/v1/namespaces/default/configmaps/a', '{}', { contentType: 'text/plain' })).status, 415);
  });

  it('namespaces: 404 for content of a missing one, default content, Terminating then gone with everything in it', async () => {
    const missing = await simFetch(sim, 'POST', '/api/v1/namespaces/ns-life/pods', pod('early'));
    assert.equal(missing.status, 404);
    assert.equal(missing.body.message, 'namespaces "ns-life" not found');
    const created = await simFetch(sim, 'POST', '/api/v1/namespaces', { metadata: { name: 'ns-life', labels: { owner: 'me' } } });
    assert.equal(created.status, 201);
    assert.equal(created.body.status.phase, 'Active');
    assert.equal(created.body.metadata.labels.owner, 'me');
    assert.equal((await get('/api/v1/namespaces?labelSelector=owner%3Dme')).body.items.length, 1);
    // What a real cluster puts in every namespace.
    await waitFor('default ServiceAccount', async () => (await get('/api/v1/namespaces/ns-life/serviceaccounts/default')).status === 200);
    const ca = await waitFor('kube-root-ca.crt', async () => {
      const r = await get('/api/v1/namespaces/ns-life/configmaps/kube-root-ca.crt');
      return r.status === 200 ? r.body : undefined;
    });
    assert.match(ca.data['ca.crt'], /BEGIN CERTIFICATE/);
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/ns-life/pods', pod('p1'))).status, 201);
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/ns-life/configmaps', { metadata: { name: 'cfg' } })).status, 201);

    const del = await simFetch(sim, 'DELETE', '/api/v1/namespaces/ns-life');
    assert.equal(del.status, 200);
    assert.equal(del.body.status.phase, 'Terminating');
    const refused = await simFetch(sim, 'POST', '/api/v1/namespaces/ns-life/configmaps', { metadata: { name: 'late' } });
    assert.equal(refused.status, 403);
    await waitFor('namespace gone', async () => (await get('/api/v1/namespaces/ns-life')).status === 404, 10_000);
    assert.deepEqual((await get('/api/v1/namespaces/ns-life/pods')).body.items, []);
    assert.deepEqual((await get('/api/v1/namespaces/ns-life/configmaps')).body.items, []);
    assert.equal((await simFetch(sim, 'DELETE', '/api/v1/namespaces/ns-life')).status, 404);
  });

  it('applies strategic merge, merge and JSON patches', async () => {
    const body = {
      metadata: { name: 'sm' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'sm' } },
        template: {
          metadata: { labels: { app: 'sm' } },
          spec: { containers: [{ name: 'a', image: 'a:1', ports: [{ containerPort: 80 }], env: [{ name: 'X', value: '1' }] }, { name: 'b', image: 'b:1' }] },
        },
      },
    };
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', body)).status, 201);
    const path = '/apis/apps/v1/namespaces/default/deployments/sm';
    const smp = (
      await simFetch(sim, 'PATCH', path, { spec: { template: { spec: { containers: [{ name: 'a', image: 'a:2', ports: [{ containerPort: 443 }] }, { name: 'b', $patch: 'delete' }, { name: 'c', image: 'c:1' }] } } } }, { contentType: 'application/strategic-merge-patch+json' })
    ).body;
    const cs = smp.spec.template.spec.containers;
    assert.deepEqual(
      cs.map((c: Obj) => `${c.name}=${c.image}`),
      ['a=a:2', 'c=c:1'],
    );
    assert.deepEqual(
      cs[0].ports.map((p: Obj) => p.containerPort),
      [80, 443],
    );
    assert.deepEqual(cs[0].env, [{ name: 'X', value: '1' }]);
    const mp = (await simFetch(sim, 'PATCH', path, { spec: { template: { spec: { containers: [{ name: 'only', image: 'o:1' }] } } } }, { contentType: 'application/merge-patch+json' })).body;
    assert.deepEqual(
      mp.spec.template.spec.containers.map((c: Obj) => c.name),
      ['only'],
      'merge patch replaces lists',
    );
    const jp = (
      await simFetch(
        sim,
        'PATCH',
        path,
        [
          { op: 'test', path: '/spec/replicas', value: 1 },
          { op: 'replace', path: '/spec/replicas', value: 2 },
          { op: 'add', path: '/metadata/annotations', value: { note: 'x' } },
        ],
        { contentType: 'application/json-patch+json' },
      )
    ).body;
    assert.equal(jp.spec.replicas, 2);
    assert.equal(jp.metadata.annotations.note, 'x');
    const failedTest = await simFetch(sim, 'PATCH', path, [{ op: 'test', path: '/spec/replicas', value: 7 }], { contentType: 'application/json-patch+json' });
    assert.equal(failedTest.status, 422);
    await simFetch(sim, 'DELETE', path);
  });

  it('honours gracePeriodSeconds: terminating first, gone after the kubelet delay; 0 is immediate', async () => {
    await simFetch(sim, 'POST', '/api/v1/namespaces/default/pods', pod('g1'));
    await simFetch(sim, 'POST', '/api/v1/namespaces/default/pods', pod('g2'));
    await waitFor('running', async () => (await get('/api/v1/namespaces/default/pods/g2')).body.status.phase === 'Running');
    const t0 = Date.now();
    const del = await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/pods/g1', { gracePeriodSeconds: 30 });
    assert.equal(del.status, 200);
    assert.ok(del.body.metadata.deletionTimestamp);
    assert.equal(del.body.metadata.deletionGracePeriodSeconds, 30);
    assert.equal((await get('/api/v1/namespaces/default/pods/g1')).status, 200, 'still terminating');
    await waitFor('g1 gone', async () => (await get('/api/v1/namespaces/default/pods/g1')).status === 404);
    assert.ok(Date.now() - t0 >= KUBELET_DELAY - 5);
    const force = await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/pods/g2?gracePeriodSeconds=0');
    assert.equal(force.status, 200);
    assert.equal((await get('/api/v1/namespaces/default/pods/g2')).status, 404);
  });

  it('propagates deletes: Orphan keeps children, Foreground waits for them, Background collects them', async () => {
    const mk = async (name: string) => {
      await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/replicasets', {
        metadata: { name },
        spec: { replicas: 2, selector: { matchLabels: { rs: name } }, template: { metadata: { labels: { rs: name } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
      });
      await waitFor(`${name} pods`, async () => (await get(`/api/v1/namespaces/default/pods?labelSelector=rs%3D${name}`)).body.items.length === 2);
    };
    await mk('orphan');
    const orphan = await simFetch(sim, 'DELETE', '/apis/apps/v1/namespaces/default/replicasets/orphan', { propagationPolicy: 'Orphan' });
    assert.equal(orphan.status, 200);
    const orphans = async (): Promise<Obj[]> => (await get('/api/v1/namespaces/default/pods?labelSelector=rs%3Dorphan')).body.items;
    await waitFor('children orphaned', async () => (await orphans()).every((p: Obj) => !p.metadata.ownerReferences));
    assert.equal((await orphans()).length, 2);

    await mk('fg');
    const fg = await simFetch(sim, 'DELETE', '/apis/apps/v1/namespaces/default/replicasets/fg', { propagationPolicy: 'Foreground' });
    assert.equal(fg.status, 202);
    assert.ok(fg.body.metadata.finalizers.includes('foregroundDeletion'));
    assert.equal((await get('/apis/apps/v1/namespaces/default/replicasets/fg')).status, 200, 'owner waits for its pods');
    await waitFor('fg owner gone', async () => (await get('/apis/apps/v1/namespaces/default/replicasets/fg')).status === 404);
    assert.deepEqual((await get('/api/v1/namespaces/default/pods?labelSelector=rs%3Dfg')).body.items, []);

    await mk('bg');
    const bg = await simFetch(sim, 'DELETE', '/apis/apps/v1/namespaces/default/replicasets/bg');
    assert.equal(bg.status, 200);
    assert.equal(bg.body.kind, 'Status');
    assert.equal((await get('/apis/apps/v1/namespaces/default/replicasets/bg')).status, 404, 'owner gone at once');
    await waitFor('bg pods collected', async () => (await get('/api/v1/namespaces/default/pods?labelSelector=rs%3Dbg')).body.items.length === 0);
    // The garbage collector has run since the orphaning (it collected fg's and bg's pods): the
    // orphans are still there.
    assert.equal((await orphans()).length, 2, 'orphans are never collected');
  });

  it('streams watch events, resumes from a resourceVersion and reports 410 for compacted ones', async () => {
    const list = (await get('/api/v1/namespaces/default/configmaps')).body;
    const w = openWatch(sim, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}`);
    await simFetch(sim, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'w1' } });
    await simFetch(sim, 'PATCH', '/api/v1/namespaces/default/configmaps/w1', { data: { k: 'v' } }, { contentType: 'application/merge-patch+json' });
    await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/configmaps/w1');
    await waitFor('3 events', () => w.lines.length >= 3);
    w.stop();
    assert.deepEqual(
      w.lines.map((l) => `${l.type} ${l.object.metadata.name}`),
      ['ADDED w1', 'MODIFIED w1', 'DELETED w1'],
    );
    const rvs = w.lines.map((l) => Number(l.object.metadata.resourceVersion));
    assert.ok((rvs[0] as number) < (rvs[1] as number) && (rvs[1] as number) < (rvs[2] as number));

    const replay = openWatch(sim, `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=1`);
    await replay.ended;
    assert.deepEqual(
      replay.lines.map((l) => l.type),
      ['ADDED', 'MODIFIED', 'DELETED'],
    );

    const gone = openWatch(sim, '/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1');
    await gone.ended;
    assert.equal(gone.lines[0].type, 'ERROR');
    assert.equal(gone.lines[0].object.code, 410);
    assert.equal(gone.lines[0].object.reason, 'Expired');
  });

  it('sends synthetic ADDED events without resourceVersion and DELETED when an object leaves the selector', async () => {
    await simFetch(sim, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'sel', labels: { watch: 'me' } } });
    const w = openWatch(sim, '/api/v1/namespaces/default/configmaps?watch=1&labelSelector=watch%3Dme');
    await waitFor('initial ADDED', () => w.lines.length >= 1);
    await simFetch(sim, 'PATCH', '/api/v1/namespaces/default/configmaps/sel', { metadata: { labels: { watch: null } } }, { contentType: 'application/merge-patch+json' });
    await waitFor('DELETED on selector exit', () => w.lines.length >= 2);
    w.stop();
    assert.deepEqual(
      w.lines.map((l) => l.type),
      ['ADDED', 'DELETED'],
    );
  });

  it('creates StatefulSet pods in order, one at a time', async () => {
    await simFetch(sim, 'PUT', '/_sim/kubelet', { delayMs: 150 });
    try {
      await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/statefulsets', {
        metadata: { name: 'ord' },
        spec: { replicas: 3, serviceName: 'ord', selector: { matchLabels: { app: 'ord' } }, template: { metadata: { labels: { app: 'ord' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
      });
      const names = async () => (await get('/api/v1/namespaces/default/pods?labelSelector=app%3Dord')).body.items.map((p: Obj) => p.metadata.name).sort();
      await waitFor('ord-0', async () => (await names()).length >= 1);
      assert.deepEqual(await names(), ['ord-0']);
      await waitFor('ord-1', async () => (await names()).length >= 2);
      assert.deepEqual(await names(), ['ord-0', 'ord-1']);
      await waitFor('ord-2', async () => (await names()).length === 3, 5000);
      const p2 = (await get('/api/v1/namespaces/default/pods/ord-2')).body;
      assert.equal(p2.spec.hostname, 'ord-2');
      assert.equal(p2.spec.subdomain, 'ord');
      assert.equal(p2.metadata.labels['statefulset.kubernetes.io/pod-name'], 'ord-2');
    } finally {
      await simFetch(sim, 'PUT', '/_sim/kubelet', { delayMs: KUBELET_DELAY });
    }
  });

  it('allocates ClusterIPs and NodePorts and rejects a taken NodePort', async () => {
    const a = (await simFetch(sim, 'POST', '/api/v1/namespaces/default/services', { metadata: { name: 'np1' }, spec: { type: 'NodePort', selector: { app: 'x' }, ports: [{ port: 80 }] } })).body;
    assert.match(a.spec.clusterIP, /^10\.96\.\d+\.\d+$/);
    assert.deepEqual(a.spec.clusterIPs, [a.spec.clusterIP]);
    const np = a.spec.ports[0].nodePort;
    assert.ok(np >= 30000 && np <= 32767);
    assert.equal(a.spec.ports[0].targetPort, 80);
    const taken = await simFetch(sim, 'POST', '/api/v1/namespaces/default/services', { metadata: { name: 'np2' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: np }] } });
    assert.equal(taken.status, 422);
    assert.match(taken.body.message, /provided port is already allocated/);
    const fixed = (await simFetch(sim, 'POST', '/api/v1/namespaces/default/services', { metadata: { name: 'np3' }, spec: { type: 'NodePort', ports: [{ port: 81, nodePort: 31555 }] } })).body;
    assert.equal(fixed.spec.ports[0].nodePort, 31555);
    const lb = (await simFetch(sim, 'POST', '/api/v1/namespaces/default/services', { metadata: { name: 'lb' }, spec: { type: 'LoadBalancer', ports: [{ port: 443 }] } })).body;
    assert.match(lb.status.loadBalancer.ingress[0].ip, /^172\.18\.255\.\d+$/);
    await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/services/np1');
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/default/services', { metadata: { name: 'np4' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: np }] } })).status, 201, 'released on delete');
  });

  it('renders Tables for kubectl-style Accept headers', async () => {
    const t = await simFetch(sim, 'GET', '/api/v1/nodes', undefined, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' });
    assert.equal(t.body.kind, 'Table');
    assert.deepEqual(
      t.body.columnDefinitions.slice(0, 5).map((c: Obj) => c.name),
      ['Name', 'Status', 'Roles', 'Age', 'Version'],
    );
    assert.deepEqual(t.body.rows[0].cells.slice(0, 3), ['worker-1', 'Ready', 'worker']);
    assert.equal(t.body.rows[0].object.kind, 'PartialObjectMetadata');
  });
});
