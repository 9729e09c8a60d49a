/**
 * PodDisruptionBudgets (policy/v1) in the simulated cluster: the disruption controller's status
 * (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed) from minAvailable /
 * maxUnavailable and the Ready pods, and the eviction subresource honouring it: 429
 * TooManyRequests with the real message and a cause naming the budget when no disruption is
 * allowed, decrement + disruptedPods otherwise, unready pods and pods without a budget evicted,
 * two budgets on one pod a 500, validation of the spec.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from './sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

const NS = '/api/v1/namespaces/default';
const PDBS = '/apis/policy/v1/namespaces/default/poddisruptionbudgets';

describe('simulated Kubernetes: PodDisruptionBudgets and evictions', () => {
  let sim: KubernetesSim;
  const deployment = (name: string, replicas: number) => ({
    metadata: { name },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
  });
  const bare = (name: string, app: string) => ({ metadata: { name, labels: { app } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } });
  const pods = async (app: string): Promise<Obj[]> => (await simFetch(sim, 'GET', `${NS}/pods?labelSelector=app%3D${app}`)).body.items;
  const readyPods = async (app: string): Promise<Obj[]> =>
    (await pods(app)).filter((p: Obj) => !p.metadata.deletionTimestamp && (p.status?.conditions ?? []).some((c: Obj) => c.type === 'Ready' && c.status === 'True'));
  const evict = (name: string, extra: Obj = {}) => simFetch(sim, 'POST', `${NS}/pods/${name}/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name }, ...extra });
  const pdb = async (name: string): Promise<Obj> => (await simFetch(sim, 'GET', `${PDBS}/${name}`)).body;
  const statusOf = async (name: string, want: (s: Obj) => boolean): Promise<Obj> => waitFor(`status of PDB ${name}`, async () => {
    const s = (await pdb(name)).status;
    return s && want(s) ? s : undefined;
  });

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: 5 });
  });
  after(async () => {
    await sim?.close();
  });

  it('computes the status from minAvailable and the Ready pods, and refuses an eviction with 429 naming the budget', async () => {
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', deployment('web', 2))).status, 201);
    await waitFor('two ready web pods', async () => (await readyPods('web')).length === 2);
    const created = await simFetch(sim, 'POST', PDBS, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web-pdb' }, spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } } });
    assert.equal(created.status, 201, created.text);
    const st = await statusOf('web-pdb', (s) => s.currentHealthy === 2);
    assert.equal(st.desiredHealthy, 2);
    assert.equal(st.expectedPods, 2);
    assert.equal(st.disruptionsAllowed, 0);
    assert.equal(st.observedGeneration, 1);
    assert.equal(st.conditions.find((c: Obj) => c.type === 'DisruptionAllowed').reason, 'InsufficientPods');

    const victim = (await readyPods('web'))[0].metadata.name;
    const r = await evict(victim);
    assert.equal(r.status, 429, r.text);
    assert.equal(r.body.kind, 'Status');
    assert.equal(r.body.reason, 'TooManyRequests');
    assert.equal(r.body.code, 429);
    assert.equal(r.body.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    assert.deepEqual(r.body.details.causes, [{ reason: 'DisruptionBudget', message: 'The disruption budget web-pdb needs 2 healthy pods and has 2 currently' }]);
    assert.equal((await pods('web')).find((p: Obj) => p.metadata.name === victim)?.metadata.deletionTimestamp, undefined, 'the pod is not deleted');
    const journal = (await simFetch(sim, 'GET', '/_sim/journal')).body.deletions;
    assert.equal(journal.filter((e: Obj) => e.name === victim).length, 0, 'a refused eviction deletes nothing');
  });

  it('computes expectedPods from the controllers\' scale for maxUnavailable and percentages', async () => {
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', deployment('api', 3))).status, 201);
    await waitFor('three ready api pods', async () => (await readyPods('api')).length === 3);
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'api-max' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'api' } } } })).status, 201);
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'api-pct' }, spec: { minAvailable: '50%', selector: { matchLabels: { app: 'api' } } } })).status, 201);
    const max = await statusOf('api-max', (s) => s.currentHealthy === 3);
    assert.deepEqual([max.expectedPods, max.desiredHealthy, max.disruptionsAllowed], [3, 2, 1]);
    assert.equal(max.conditions.find((c: Obj) => c.type === 'DisruptionAllowed').reason, 'SufficientPods');
    const pct = await statusOf('api-pct', (s) => s.currentHealthy === 3);
    assert.deepEqual([pct.expectedPods, pct.desiredHealthy, pct.disruptionsAllowed], [3, 2, 1], '50% of 3 rounds up to 2');
    // the expected count follows the Deployment's scale, not the pods that happen to exist
    assert.equal((await simFetch(sim, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/api', { spec: { replicas: 5 } }, { contentType: 'application/merge-patch+json' })).status, 200);
    const scaled = await statusOf('api-max', (s) => s.expectedPods === 5 && s.currentHealthy === 5);
    assert.deepEqual([scaled.desiredHealthy, scaled.disruptionsAllowed], [4, 1]);
  });

  it('allows one disruption per spare healthy pod, then refuses; a dry run changes nothing', async () => {
    for (const n of ['b1', 'b2', 'b3']) assert.equal((await simFetch(sim, 'POST', `${NS}/pods`, bare(n, 'trio'))).status, 201);
    await waitFor('three ready trio pods', async () => (await readyPods('trio')).length === 3);
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'trio-pdb' }, spec: { minAvailable: 2, selector: { matchLabels: { app: 'trio' } } } })).status, 201);
    const st = await statusOf('trio-pdb', (s) => s.currentHealthy === 3);
    assert.deepEqual([st.expectedPods, st.desiredHealthy, st.disruptionsAllowed], [3, 2, 1]);
    const dry = await evict('b1', { deleteOptions: { dryRun: ['All'] } });
    assert.equal(dry.status, 201, dry.text);
    assert.equal((await pdb('trio-pdb')).status.disruptionsAllowed, 1, 'a dry run changes nothing');
    assert.equal((await pods('trio')).find((p: Obj) => p.metadata.name === 'b1').metadata.deletionTimestamp, undefined);
    const ok = await evict('b1');
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.status, 'Success');
    assert.equal((await pdb('trio-pdb')).status.disruptionsAllowed, 0, 'the budget is used up');
    const refused = await evict('b2');
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.details.causes[0].message, 'The disruption budget trio-pdb needs 2 healthy pods and has 2 currently');
    const deletions = (await simFetch(sim, 'GET', '/_sim/journal')).body.deletions.filter((e: Obj) => e.via === 'eviction').map((e: Obj) => e.name);
    assert.ok(deletions.includes('b1') && !deletions.includes('b2'));
  });

  it('unready pods: evicted while the budget is met, protected when it is not, unless AlwaysAllow; pods without a budget are evicted', async () => {
    for (const n of ['u1', 'u2', 'u3']) assert.equal((await simFetch(sim, 'POST', `${NS}/pods`, bare(n, 'uneven'))).status, 201);
    await waitFor('three ready uneven pods', async () => (await readyPods('uneven')).length === 3);
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'uneven-pdb' }, spec: { minAvailable: 2, selector: { matchLabels: { app: 'uneven' } } } })).status, 201);
    const unready = async (name: string) =>
      assert.equal((await simFetch(sim, 'PATCH', `${NS}/pods/${name}/status`, { status: { conditions: [{ type: 'Ready', status: 'False' }] } }, { contentType: 'application/merge-patch+json' })).status, 200);
    await unready('u1');
    await statusOf('uneven-pdb', (s) => s.currentHealthy === 2 && s.disruptionsAllowed === 0);
    assert.equal((await evict('u1')).status, 201, 'an unready pod goes while the budget is met (2 healthy of 2)');
    assert.equal((await evict('u2')).status, 429, 'a Ready pod is protected');
    await unready('u2');
    await statusOf('uneven-pdb', (s) => s.currentHealthy === 1);
    const r = await evict('u2');
    assert.equal(r.status, 429, 'an unready pod is protected while the budget is not met');
    assert.equal(r.body.details.causes[0].message, 'The disruption budget uneven-pdb needs 2 healthy pods and has 1 currently');
    assert.equal((await simFetch(sim, 'PATCH', `${PDBS}/uneven-pdb`, { spec: { unhealthyPodEvictionPolicy: 'AlwaysAllow' } }, { contentType: 'application/merge-patch+json' })).status, 200);
    assert.equal((await evict('u2')).status, 201, 'AlwaysAllow lets unready pods go');

    assert.equal((await simFetch(sim, 'POST', `${NS}/pods`, bare('free', 'free'))).status, 201);
    await waitFor('free pod ready', async () => (await readyPods('free')).length === 1);
    assert.equal((await evict('free')).status, 201, 'no budget selects it');
  });

  it('answers 500 when two budgets select the pod; a null selector selects nothing, an empty one everything', async () => {
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', deployment('db', 1))).status, 201);
    await waitFor('one ready db pod', async () => (await readyPods('db')).length === 1);
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'none' }, spec: { maxUnavailable: 0 } })).status, 201);
    const nothing = await statusOf('none', (s) => s.observedGeneration === 1);
    assert.equal(nothing.expectedPods, 0, 'a null selector selects no pod');
    const pod = (await readyPods('db'))[0].metadata.name;
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'db-a' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'db' } } } })).status, 201);
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'db-b' }, spec: { maxUnavailable: '50%', selector: {} } })).status, 201);
    const everything = await statusOf('db-b', (s) => s.expectedPods > 1);
    assert.ok(everything.currentHealthy > 1, 'an empty selector selects every pod of the namespace');
    const r = await evict(pod);
    assert.equal(r.status, 500);
    assert.equal(r.body.message, 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
    for (const n of ['none', 'db-a', 'db-b']) assert.equal((await simFetch(sim, 'DELETE', `${PDBS}/${n}`)).status, 200);
  });

  it('fails the sync of a budget over pods whose controller has no scale (a DaemonSet): 0 disruptions', async () => {
    const ds = { metadata: { name: 'agent' }, spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } } };
    assert.equal((await simFetch(sim, 'POST', '/apis/apps/v1/namespaces/default/daemonsets', ds)).status, 201);
    await waitFor('agent pods ready', async () => (await readyPods('agent')).length >= 1);
    assert.equal((await simFetch(sim, 'POST', PDBS, { metadata: { name: 'agent-pdb' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'agent' } } } })).status, 201);
    const st = await statusOf('agent-pdb', (s) => s.conditions !== undefined);
    const cond = st.conditions.find((c: Obj) => c.type === 'DisruptionAllowed');
    assert.equal(cond.reason, 'SyncFailed');
    assert.match(cond.message, /DaemonSet.* "agent" does not implement the scale subresource/);
    const r = await evict((await readyPods('agent'))[0].metadata.name);
    assert.equal(r.status, 429);
    assert.match(r.body.details.causes[0].message, /^The disruption budget agent-pdb does not allow evicting pods currently because it failed sync: /);
  });

  it('validates the spec: minAvailable and maxUnavailable exclusive, values non-negative or percentages', async () => {
    const both = await simFetch(sim, 'POST', PDBS, { metadata: { name: 'bad' }, spec: { minAvailable: 1, maxUnavailable: 1, selector: {} } });
    assert.equal(both.status, 422);
    assert.match(both.body.message, /minAvailable and maxUnavailable cannot be both set/);
    const neg = await simFetch(sim, 'POST', PDBS, { metadata: { name: 'bad' }, spec: { minAvailable: -1, selector: {} } });
    assert.equal(neg.status, 422);
    const pct = await simFetch(sim, 'POST', PDBS, { metadata: { name: 'bad' }, spec: { maxUnavailable: '150%', selector: {} } });
    assert.equal(pct.status, 422);
  });
});
