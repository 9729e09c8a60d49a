/**
 * The `/_sim/watches` controls and pod health controls of the simulated Kubernetes: held events
 * are sent on release and lost when the streams are ended, a compaction makes a resume from an
 * older resourceVersion 410 Gone, bookmarks on demand and before a stream's timeout, and a pod
 * made not Ready / crash-looping / Ready again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from './sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

/** An open watch: its events as they come, and when it ended. */
function openWatch(sim: KubernetesSim, path: string): { events: Obj[]; next: (pred: (e: Obj) => boolean) => Promise<Obj>; ended: Promise<void>; stop: () => void } {
  const events: Obj[] = [];
  const waiters: { pred: (e: Obj) => boolean; resolve: (e: Obj) => void }[] = [];
  const ac = new AbortController();
  const ended = (async () => {
    const res = await fetch(`${sim.httpUrl}${path}`, { headers: { authorization: `Bearer ${sim.token}` }, signal: ac.signal });
    assert.equal(res.status, 200);
    let buf = '';
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          const ev = JSON.parse(buf.slice(0, i));
          buf = buf.slice(i + 1);
          events.push(ev);
          for (const w of [...waiters]) {
            if (w.pred(ev)) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve(ev);
            }
          }
        }
      }
    } catch (e) {
      if (!ac.signal.aborted) throw e;
    }
  })();
  return {
    events,
    ended,
    stop: () => ac.abort(),
    next: (pred) => {
      const hit = events.find(pred);
      return hit ? Promise.resolve(hit) : new Promise((resolve) => waiters.push({ pred, resolve }));
    },
  };
}

describe('simulated Kubernetes watch and pod health controls', () => {
  let sim: KubernetesSim;
  const post = async (path: string, body: unknown = {}, status = 200): Promise<Obj> => {
    const r = await simFetch(sim, 'POST', path, body);
    assert.equal(r.status, status, r.text);
    return r.body;
  };
  const rv = async (): Promise<string> => (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods')).body.metadata.resourceVersion;

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: 10 });
    await post('/api/v1/namespaces/default/pods', { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'img:1' }] } }, 201);
    await waitFor('pod running', async () => (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods/p')).body.status?.phase === 'Running');
  });

  after(async () => {
    await sim?.close();
  });

  it('makes a running pod not Ready, crash-looping and Ready again', async () => {
    const pod = async (): Promise<Obj> => (await simFetch(sim, 'GET', '/api/v1/namespaces/default/pods/p')).body;
    const ready = (p: Obj) => p.status.conditions.find((c: Obj) => c.type === 'Ready').status;
    await post('/_sim/pods/default/p/unready');
    let p = await pod();
    assert.deepEqual([p.status.phase, ready(p), p.status.containerStatuses[0].ready, !!p.status.containerStatuses[0].state.running], ['Running', 'False', false, true]);
    await post('/_sim/pods/default/p/crashloop');
    p = await pod();
    assert.equal(p.status.containerStatuses[0].state.waiting.reason, 'CrashLoopBackOff');
    assert.equal(ready(p), 'False');
    await post('/_sim/pods/default/p/ready');
    p = await pod();
    assert.deepEqual([ready(p), p.status.containerStatuses[0].ready, !!p.status.containerStatuses[0].state.running], ['True', true, true]);
    assert.equal((await simFetch(sim, 'POST', '/_sim/pods/default/nope/unready', {})).status, 404);
  });

  it('holds events back until released', async () => {
    const w = openWatch(sim, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${await rv()}`);
    await waitFor('watch open', async () => (await simFetch(sim, 'GET', '/_sim/state?pods=false')).body.watches === 1);
    await post('/_sim/watches/hold');
    await post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'held' } }, 201);
    assert.equal(w.events.length, 0);
    await simFetch(sim, 'DELETE', '/_sim/watches/hold');
    const ev = await w.next((e) => e.object?.metadata?.name === 'held');
    assert.equal(ev.type, 'ADDED');
    w.stop();
    await w.ended;
  });

  it('a compaction makes an older resourceVersion 410 Gone; ending held streams drops their events', async () => {
    const from = await rv();
    const w = openWatch(sim, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${from}`);
    await waitFor('watch open', async () => (await simFetch(sim, 'GET', '/_sim/state?pods=false')).body.watches === 1);
    await post('/_sim/watches/hold');
    await post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'lost' } }, 201);
    const c = await post('/_sim/watches/compact', { endWatches: true });
    assert.ok(Number(c.compactedResourceVersion) > Number(from));
    await w.ended;
    assert.deepEqual(w.events, []);
    await simFetch(sim, 'DELETE', '/_sim/watches/hold');
    const again = openWatch(sim, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${from}`);
    await again.ended;
    assert.equal(again.events[0]?.type, 'ERROR');
    assert.equal(again.events[0]?.object?.code, 410);
  });

  it('sends bookmarks on demand and before a stream times out, to streams that allow them', async () => {
    const w = openWatch(sim, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${await rv()}&allowWatchBookmarks=true&timeoutSeconds=1`);
    const plain = openWatch(sim, `/api/v1/namespaces/default/secrets?watch=1&resourceVersion=${await rv()}`);
    await waitFor('watches open', async () => (await simFetch(sim, 'GET', '/_sim/state?pods=false')).body.watches === 2);
    const b = await post('/_sim/watches/bookmark');
    assert.equal(b.bookmarks, 1);
    const first = await w.next((e) => e.type === 'BOOKMARK');
    assert.equal(first.object.metadata.resourceVersion, b.resourceVersion);
    await w.ended;
    assert.equal(w.events.filter((e) => e.type === 'BOOKMARK').length, 2, 'one on demand, one before the timeout');
    plain.stop();
    await plain.ended;
    assert.deepEqual(plain.events, []);
  });
});
