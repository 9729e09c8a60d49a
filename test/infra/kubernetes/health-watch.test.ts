/**
 * The Kubernetes health watcher against the simulated cluster over real HTTP: the initial full
 * report, pod faults (not Ready, CrashLoopBackOff, evicted, deleted) and recovery reported by the
 * watch, node NotReady, one stream per namespace, a 410 Gone after a compaction (re-list, full
 * report, the change made while the stream was down not missed), an API outage (unreachable,
 * then a full report), a refused token, namespaces added and removed.
 * Every step waits on the report it expects, never on time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { createKubernetesHealthWatcher, type KubernetesHealthWatcher, nodeHealth, podHealth } from '../../../src/infra/kubernetes/health-watch.ts';
import type { HealthWatcherDeps, HealthWatchTarget } from '../../../src/infra/vim-plugin.ts';
import type { ResourceHealth } from '../../../src/model/vnfc-health.ts';
import { vimOutboundGuard } from '../../../src/net/outbound.ts';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import type { VimConnection } from '../../../src/vims/vim-registry.ts';
import { simFetch, waitFor } from '../../sim/kubernetes/sim-test-helpers.ts';

type Entry = { kind: 'report'; key: string; obs: readonly ResourceHealth[] } | { kind: 'unreachable'; key: string; reason: string };

/** What the watcher told the monitor, in order, with waits on what comes next. */
class Recorder {
  readonly log: Entry[] = [];
  requests = 0;
  private readonly waiters: { from: number; pred: (e: Entry) => boolean; resolve: (e: Entry) => void }[] = [];

  push(e: Entry): void {
    this.log.push(e);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i] as (typeof this.waiters)[number];
      if (this.log.length - 1 >= w.from && w.pred(e)) {
        this.waiters.splice(i, 1);
        w.resolve(e);
      }
    }
  }

  /** Resolves with the first entry at index >= `from` (default: from now on) that satisfies `pred`. */
  next(pred: (e: Entry) => boolean, from = this.log.length): Promise<Entry> {
    const hit = this.log.slice(from).find(pred);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve) => this.waiters.push({ from, pred, resolve }));
  }

  /** The next report that has `id` in `condition`/`reason`. */
  nextHealth(key: string, id: string, reason: string, from = this.log.length): Promise<ResourceHealth> {
    return this.next((e) => e.kind === 'report' && e.key === key && e.obs.some((o) => o.resourceId === id && o.reason === reason), from).then(
      (e) => (e as Extract<Entry, { kind: 'report' }>).obs.find((o) => o.resourceId === id && o.reason === reason) as ResourceHealth,
    );
  }
}

const KEY = 'vim-k8s/default';

describe('Kubernetes health watcher (simulated cluster)', { timeout: 120_000 }, () => {
  let sim: KubernetesSim;
  let vim: VimConnection;
  let watcher: KubernetesHealthWatcher;
  const rec = new Recorder();
  let targets: HealthWatchTarget[] = [];

  const post = async (path: string, body: unknown = {}, status = 200): Promise<void> => {
    const r = await simFetch(sim, 'POST', path, body);
    assert.equal(r.status, status, r.text);
  };
  const target = (over: Partial<HealthWatchTarget> = {}): HealthWatchTarget => ({
    key: KEY,
    vim,
    resources: new Set(['a-1', 'a-2', 'a-3', 'b-1', 'ghost']),
    namespaces: ['ns-a', 'ns-b'],
    ...over,
  });

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: 10 });
    vim = { vimId: 'vim-k8s', vimType: 'ETSINFV.KUBERNETES.V_1', interfaceInfo: { endpoint: sim.url, ssl_ca_cert: sim.caCert }, accessInfo: { bearer_token: sim.token } };
    for (const ns of ['ns-a', 'ns-b', 'ns-c']) await post('/api/v1/namespaces', { metadata: { name: ns } }, 201);
    const pods: [string, string][] = [
      ['ns-a', 'a-1'],
      ['ns-a', 'a-2'],
      ['ns-a', 'a-3'],
      ['ns-a', 'other'],
      ['ns-b', 'b-1'],
      ['ns-c', 'c-1'],
    ];
    for (const [ns, name] of pods) {
      await post(`/api/v1/namespaces/${ns}/pods`, { metadata: { name, labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'img:1' }] } }, 201);
    }
    await waitFor('pods running', async () => {
      const all = (await simFetch(sim, 'GET', '/api/v1/pods')).body.items as { status?: { phase?: string } }[];
      return all.length === pods.length && all.every((p) => p.status?.phase === 'Running');
    });
    targets = [target()];
    const deps: HealthWatcherDeps = {
      vimOutbound: vimOutboundGuard({ allow: [], deny: [], vimAllow: ['127.0.0.0/8'] }),
      log: pino({ level: 'silent' }),
      targets: async () => targets,
      report: (key, obs) => rec.push({ kind: 'report', key, obs }),
      unreachable: (key, reason) => rec.push({ kind: 'unreachable', key, reason }),
      // the tests read the targets again with refresh(); the period never fires during them
      periodMs: 3_600_000,
      countRequest: (t) => {
        assert.equal(t, 'kubernetes');
        rec.requests++;
      },
    };
    watcher = createKubernetesHealthWatcher(deps, { backoffBaseMs: 20, backoffMaxMs: 100 });
    watcher.start();
  });

  after(async () => {
    await watcher?.stop();
    await sim?.close();
  });

  it('lists, then reports every target pod (and a missing one as Deleted), nothing else', async () => {
    await watcher.ready();
    const reports = rec.log.filter((e): e is Extract<Entry, { kind: 'report' }> => e.kind === 'report');
    const latest = new Map<string, ResourceHealth>();
    for (const r of reports) for (const o of r.obs) latest.set(o.resourceId, o);
    assert.deepEqual([...latest.keys()].sort(), ['a-1', 'a-2', 'a-3', 'b-1', 'ghost']);
    for (const id of ['a-1', 'a-2', 'a-3', 'b-1']) assert.deepEqual([latest.get(id)?.condition, latest.get(id)?.reason, latest.get(id)?.kind], ['healthy', 'Ready', 'pod'], id);
    assert.deepEqual([latest.get('ghost')?.condition, latest.get('ghost')?.reason], ['faulty', 'Deleted']);
    assert.equal(rec.log.some((e) => e.kind === 'unreachable'), false);
  });

  it('opens one watch stream per namespace, whatever the number of pods', async () => {
    await watcher.settled();
    assert.deepEqual(watcher.streams().sort(), [`${KEY} pods ns-a`, `${KEY} pods ns-b`]);
    const state = (await simFetch(sim, 'GET', '/_sim/state?pods=false')).body;
    assert.equal(state.watches, 2);
    // two lists and two watches, plus the API discovery of the client
    assert.ok(rec.requests >= 4 && rec.requests <= 6, `requests: ${rec.requests}`);
  });

  it('reports a pod not Ready as faulty NotReady, and healthy again once Ready', async () => {
    const notReady = rec.nextHealth(KEY, 'a-1', 'NotReady');
    await post('/_sim/pods/ns-a/a-1/unready');
    assert.equal((await notReady).condition, 'faulty');
    const back = rec.nextHealth(KEY, 'a-1', 'Ready');
    await post('/_sim/pods/ns-a/a-1/ready');
    assert.equal((await back).condition, 'healthy');
  });

  it('reports a crash-looping container as faulty CrashLoopBackOff', async () => {
    const looping = rec.nextHealth(KEY, 'a-2', 'CrashLoopBackOff');
    await post('/_sim/pods/ns-a/a-2/crashloop');
    const h = await looping;
    assert.equal(h.condition, 'faulty');
    assert.match(h.detail ?? '', /container c/);
    const back = rec.nextHealth(KEY, 'a-2', 'Ready');
    await post('/_sim/pods/ns-a/a-2/ready');
    await back;
  });

  it('reports an evicted pod as faulty Evicted and a deleted pod as faulty Deleted', async () => {
    const evicted = rec.nextHealth(KEY, 'a-2', 'Evicted');
    await post('/_sim/pods/ns-a/a-2/fail', { reason: 'Evicted', message: 'The node was low on resource: memory.' });
    const h = await evicted;
    assert.equal(h.condition, 'faulty');
    assert.match(h.detail ?? '', /low on resource/);
    const gone = rec.nextHealth(KEY, 'a-3', 'Deleted');
    const r = await simFetch(sim, 'DELETE', '/api/v1/namespaces/ns-a/pods/a-3?gracePeriodSeconds=0');
    assert.equal(r.status, 200, r.text);
    assert.equal((await gone).condition, 'faulty');
  });

  it('does not report pods that are not targets', async () => {
    const from = rec.log.length;
    const mark = rec.nextHealth(KEY, 'a-1', 'NotReady');
    await post('/_sim/pods/ns-a/other/unready');
    await post('/_sim/pods/ns-a/a-1/unready');
    await mark;
    assert.equal(
      rec.log.slice(from).some((e) => e.kind === 'report' && e.obs.some((o) => o.resourceId === 'other')),
      false,
    );
    const back = rec.nextHealth(KEY, 'a-1', 'Ready');
    await post('/_sim/pods/ns-a/a-1/ready');
    await back;
  });

  it('watches the target nodes: NotReady when the node fails, Ready when it recovers', async () => {
    // a node of its own, without pods: its failure changes no pod
    await post('/_sim/nodes', { name: 'edge-1' });
    const first = rec.nextHealth(KEY, 'edge-1', 'Ready');
    targets = [target({ nodes: new Set(['edge-1']) })];
    await watcher.refresh();
    const h = await first;
    assert.equal(h.kind, 'node');
    await watcher.settled();
    assert.equal(watcher.streams().length, 3);
    const down = rec.nextHealth(KEY, 'edge-1', 'NotReady');
    await post('/_sim/nodes/edge-1/fail', { evictAfterMs: 3_600_000 });
    assert.equal((await down).condition, 'faulty');
    const up = rec.nextHealth(KEY, 'edge-1', 'Ready');
    await post('/_sim/nodes/edge-1/recover');
    assert.equal((await up).condition, 'healthy');
  });

  it('on 410 Gone re-lists and reports every target resource again, with the change it did not see', async () => {
    await watcher.settled();
    const lists = rec.requests;
    // the change is made while the streams hold their events back; the compaction then ends the
    // streams (their held events are lost) and the resumed watches get 410 Gone
    await post('/_sim/watches/hold');
    await post('/_sim/pods/ns-b/b-1/unready');
    const full = rec.next((e) => e.kind === 'report' && e.obs.some((o) => o.resourceId === 'b-1' && o.reason === 'NotReady'));
    await post('/_sim/watches/compact', { endWatches: true });
    const e = (await full) as Extract<Entry, { kind: 'report' }>;
    const ids = new Set(e.obs.map((o) => o.resourceId));
    for (const id of ['a-1', 'a-2', 'a-3', 'b-1', 'ghost', 'edge-1']) assert.ok(ids.has(id), `${id} in the full report`);
    assert.equal(e.obs.find((o) => o.resourceId === 'a-3')?.reason, 'Deleted');
    assert.ok(rec.requests > lists, 're-listed');
    assert.equal((await simFetch(sim, 'DELETE', '/_sim/watches/hold')).status, 200);
    const back = rec.nextHealth(KEY, 'b-1', 'Ready');
    await post('/_sim/pods/ns-b/b-1/ready');
    await back;
    assert.equal(rec.log.some((x) => x.kind === 'unreachable'), false, 'a 410 is not an outage');
  });

  it('resumes from the resourceVersion of a bookmark: no 410, no re-list, after a compaction', async () => {
    await watcher.settled();
    // the cluster's resourceVersion moves on where no stream looks; only a bookmark tells the streams
    await post('/api/v1/namespaces/ns-c/configmaps', { metadata: { name: 'moved-on' }, data: {} }, 201);
    const r = await simFetch(sim, 'POST', '/_sim/watches/bookmark', {});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.bookmarks, 3);
    const from = rec.log.length;
    // the streams end right after their bookmark; they resume from it, which the compaction still covers
    await post('/_sim/watches/compact', { endWatches: true });
    const a1 = rec.nextHealth(KEY, 'a-1', 'NotReady', from);
    const b1 = rec.nextHealth(KEY, 'b-1', 'NotReady', from);
    const w2 = rec.nextHealth(KEY, 'edge-1', 'NotReady', from);
    await post('/_sim/pods/ns-a/a-1/unready');
    await post('/_sim/pods/ns-b/b-1/unready');
    await post('/_sim/nodes/edge-1/fail', { evictAfterMs: 3_600_000 });
    await Promise.all([a1, b1, w2]);
    const since = rec.log.slice(from);
    assert.equal(since.some((e) => e.kind === 'report' && e.obs.some((o) => o.resourceId === 'ghost')), false, 'no full report: no stream re-listed');
    const back = [rec.nextHealth(KEY, 'a-1', 'Ready'), rec.nextHealth(KEY, 'b-1', 'Ready'), rec.nextHealth(KEY, 'edge-1', 'Ready')];
    await post('/_sim/pods/ns-a/a-1/ready');
    await post('/_sim/pods/ns-b/b-1/ready');
    await post('/_sim/nodes/edge-1/recover');
    await Promise.all(back);
  });

  it('an API outage makes the target unreachable (never faulty), then a full report follows', async () => {
    await watcher.settled();
    const from = rec.log.length;
    const down = rec.next((e) => e.kind === 'unreachable' && e.key === KEY, from);
    await post('/_sim/api/break', { dropWatches: true });
    const u = (await down) as Extract<Entry, { kind: 'unreachable' }>;
    assert.match(u.reason, /503/);
    assert.doesNotMatch(u.reason, new RegExp(sim.token));
    const upFrom = rec.log.length;
    const full = rec.next((e) => e.kind === 'report' && e.key === KEY && ['a-1', 'a-2', 'b-1', 'edge-1'].every((id) => e.obs.some((o) => o.resourceId === id)), upFrom);
    const r = await simFetch(sim, 'DELETE', '/_sim/api/break');
    assert.equal(r.status, 200, r.text);
    const e = (await full) as Extract<Entry, { kind: 'report' }>;
    assert.equal(e.obs.find((o) => o.resourceId === 'a-1')?.condition, 'healthy');
    const during = rec.log.slice(from, upFrom).filter((x) => x.kind === 'report');
    assert.deepEqual(during, [], 'nothing reported while unreachable');
    await watcher.settled();
  });

  it('a refused token makes its target unreachable; namespaces added and removed start and stop streams', async () => {
    const bad = rec.next((e) => e.kind === 'unreachable' && e.key === 'bad');
    targets = [
      target({ namespaces: ['ns-a', 'ns-c'], resources: new Set(['a-1', 'c-1']) }),
      { key: 'bad', vim: { ...vim, accessInfo: { bearer_token: 'not-the-token' } }, resources: new Set(['x']), namespaces: ['ns-a'] },
    ];
    const c1 = rec.nextHealth(KEY, 'c-1', 'Ready');
    await watcher.refresh();
    assert.match(((await bad) as Extract<Entry, { kind: 'unreachable' }>).reason, /401/);
    await c1;
    assert.deepEqual(watcher.streams().sort(), ['bad pods ns-a', `${KEY} pods ns-a`, `${KEY} pods ns-c`]);
    assert.equal(rec.log.some((e) => e.kind === 'report' && e.key === 'bad'), false);
    // a pod that becomes a target in a namespace already watched is reported from what the stream holds
    const other = rec.nextHealth(KEY, 'other', 'NotReady');
    targets = [target({ namespaces: ['ns-a', 'ns-c'], resources: new Set(['a-1', 'c-1', 'other']) }), targets[1] as HealthWatchTarget];
    await watcher.refresh();
    await other;
    targets = [target({ namespaces: ['ns-c'], resources: new Set(['c-1']) })];
    await watcher.refresh();
    await watcher.settled();
    assert.deepEqual(watcher.streams(), [`${KEY} pods ns-c`]);
    await waitFor('the sim sees one watch', async () => (await simFetch(sim, 'GET', '/_sim/state?pods=false')).body.watches === 1);
  });

  it('stop() ends every stream', async () => {
    await watcher.stop();
    assert.deepEqual(watcher.streams(), []);
    await waitFor('no watch left', async () => (await simFetch(sim, 'GET', '/_sim/state?pods=false')).body.watches === 0);
  });
});

describe('Kubernetes health mapping', () => {
  const at = new Date(0);
  const pod = (status: Record<string, unknown>, meta: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', ...meta }, status });
  it('maps pod phases and conditions', () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }, 'healthy', 'Ready'],
      [{ phase: 'Running', conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }] }, 'faulty', 'NotReady'],
      [{ phase: 'Running', containerStatuses: [{ name: 'c', state: { waiting: { reason: 'CrashLoopBackOff' } } }] }, 'faulty', 'CrashLoopBackOff'],
      [{ phase: 'Failed', reason: 'Evicted' }, 'faulty', 'Evicted'],
      [{ phase: 'Failed', reason: 'Error' }, 'faulty', 'Failed'],
      [{ phase: 'Succeeded' }, 'faulty', 'Succeeded'],
      [{ phase: 'Pending', containerStatuses: [{ name: 'c', state: { waiting: { reason: 'ContainerCreating' } } }] }, 'degraded', 'Pending'],
      [{ phase: 'Unknown' }, 'unknown', 'Unknown'],
    ];
    for (const [status, condition, reason] of cases) {
      const h = podHealth(pod(status), at);
      assert.deepEqual([h.condition, h.reason, h.kind, h.resourceId], [condition, reason, 'pod', 'p'], JSON.stringify(status));
    }
    const terminating = podHealth(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }, { deletionTimestamp: '2026-01-01T00:00:00Z' }), at);
    assert.deepEqual([terminating.condition, terminating.reason], ['degraded', 'Terminating']);
  });
  it('maps the node Ready condition', () => {
    const node = (status: string | undefined) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, status: { conditions: status === undefined ? [] : [{ type: 'Ready', status }] } });
    assert.deepEqual([nodeHealth(node('True'), at).condition, nodeHealth(node('True'), at).reason], ['healthy', 'Ready']);
    for (const s of ['False', 'Unknown', undefined]) assert.deepEqual([nodeHealth(node(s), at).condition, nodeHealth(node(s), at).reason], ['faulty', 'NotReady']);
  });
});
