/**
 * `GET /_sim/journal`: the client deletions the API server accepted (single, collection,
 * eviction), with uid and labels; dry runs, refused deletions and the simulator's own deletions
 * (garbage collector) are not in it; `since` pages by sequence number.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from './sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

describe('simulated Kubernetes deletion journal', () => {
  let sim: KubernetesSim;
  const journal = async (since = 0): Promise<Obj[]> => (await simFetch(sim, 'GET', `/_sim/journal?since=${since}`)).body.deletions;
  const pod = (name: string, app = 'j') => ({ metadata: { name, labels: { app } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } });

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: 5 });
  });
  after(async () => {
    await sim?.close();
  });

  it('records accepted client deletions only, in order, with uid and labels', async () => {
    assert.deepEqual(await journal(), []);
    for (const n of ['a', 'b', 'c']) assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/default/pods', pod(n))).status, 201);
    const a = (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods/a')).body;
    assert.equal((await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/pods/a?dryRun=All')).status, 200);
    assert.equal((await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/pods/a', { preconditions: { uid: 'not-its-uid' } })).status, 409);
    assert.deepEqual(await journal(), [], 'dry run and refused deletions are not journaled');
    assert.equal((await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/pods/a', { gracePeriodSeconds: 0 })).status, 200);
    assert.equal((await simFetch(sim, 'POST', '/api/v1/namespaces/default/pods/b/eviction', { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'b' } })).status, 201);
    assert.equal((await simFetch(sim, 'DELETE', '/api/v1/namespaces/default/pods?labelSelector=app%3Dj')).status, 200);
    const all = await journal();
    assert.deepEqual(all.map((e: Obj) => [e.seq, e.kind, e.name, e.via]).slice(0, 3), [
      [1, 'Pod', 'a', 'delete'],
      [2, 'Pod', 'b', 'eviction'],
      [3, 'Pod', all[2].name, 'deletecollection'],
    ]);
    assert.equal(all[0].uid, a.metadata.uid);
    assert.deepEqual(all[0].labels, { app: 'j' });
    assert.equal(all[0].namespace, 'default');
    assert.ok(all.some((e: Obj) => e.name === 'c' && e.via === 'deletecollection'));
    assert.deepEqual((await journal(2)).map((e: Obj) => e.seq), all.filter((e: Obj) => e.seq > 2).map((e: Obj) => e.seq), 'since pages by seq');
  });

  it('leaves out what the simulator deletes by itself (garbage collection of a ReplicaSet\'s pods)', async () => {
    const from = (await journal()).at(-1)?.seq ?? 0;
    const rs = { metadata: { name: 'rs' }, spec: { replicas: 2, selector: { matchLabels: { app: 'rs' } }, template: { metadata: { labels: { app: 'rs' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } } };
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/replicasets', rs)).status, 201);
    const podsOf = async (): Promise<Obj[]> => (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods?labelSelector=app%3Drs')).body.items;
    await waitFor('the ReplicaSet pods', async () => (await podsOf()).length === 2);
    assert.equal((await simFetch(sim, 'DELETE', '/apis/apps/v1/namespaces/default/replicasets/rs', { propagationPolicy: 'Background' })).status, 200);
    await waitFor('the pods to be collected', async () => (await podsOf()).length === 0);
    assert.deepEqual((await journal(from)).map((e: Obj) => [e.kind, e.name]), [['ReplicaSet', 'rs']]);
  });
});
