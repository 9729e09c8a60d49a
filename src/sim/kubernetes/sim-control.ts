/**
 * The `/_sim` control API: fault injection and inspection from outside the process (tests, demos,
 * benchmarks). Fail / restart a pod, make it not Ready / crash-looping / Ready again, fail / recover /
 * add a node, add API latency, break the API (5xx for N requests or until cleared), hold / end /
 * bookmark the open watch streams and compact the watch history (410 Gone), change the kubelet
 * delay, read a state summary and the journal of client deletions (`GET /_sim/journal?since=N`).
 */
import type { ClusterApi } from './cluster-api.ts';
import type { ControllerContext } from './controllers/context.ts';
import { isNodeReady, isPodReady, setCondition } from './controllers/helpers.ts';
import type { Kubelet } from './controllers/kubelet.ts';
import { type NodeController, workerNode } from './controllers/node-controller.ts';
import type { ApiFaults } from './faults.ts';
import type { WatchStreams } from './watch-streams.ts';
import type { DeleteJournal } from './journal.ts';
import { nowTs } from './names.ts';
import { R } from './resource-registry.ts';
import type { Loose } from './types.ts';

/** What the control API needs from the simulator. */
export interface SimControlDeps {
  ctx: ControllerContext;
  api: ClusterApi;
  faults: ApiFaults;
  kubelet: Kubelet;
  nodes: NodeController;
  /** Ends open watch streams (simulated outage). */
  endWatches: () => void;
  watchCount: () => number;
  /** The open watch streams (hold, release, bookmark). */
  watches: () => WatchStreams | undefined;
  /** Client deletions (`GET /_sim/journal?since=N`). */
  journal: DeleteJournal;
}

interface Reply {
  code: number;
  body: Loose;
}

function ok(body: Loose = {}): Reply {
  return { code: 200, body: { ok: true, ...body } };
}

function err(code: number, message: string): Reply {
  return { code, body: { ok: false, message } };
}

function num(v: unknown, dflt: number): number {
  const n = Number(v);
  return v === undefined || v === null || v === '' || !Number.isFinite(n) ? dflt : n;
}

/** Builds the `/_sim` request handler. */
export function createSimControl(deps: SimControlDeps): (method: string, path: string, query: URLSearchParams, body: Loose) => Reply {
  const { ctx, api, faults } = deps;
  const { store } = ctx;

  const state = (query: URLSearchParams): Reply => {
    const nodes = store.list(R.nodes).map((n) => ({
      name: n.metadata.name,
      ready: isNodeReady(n),
      unschedulable: !!n.spec?.unschedulable,
      pods: store.podsOnNode(n.metadata.name as string).length,
    }));
    const body: Loose = {
      resourceVersion: String(store.currentRv()),
      kubeletDelayMs: ctx.settings.kubeletDelayMs,
      faults: faults.summary(),
      watches: deps.watchCount(),
      nodes,
      counts: store.counts(),
    };
    if (query.get('pods') !== 'false') {
      body.pods = store.list(R.pods).map((p) => ({
        namespace: p.metadata.namespace,
        name: p.metadata.name,
        phase: p.status?.phase,
        ready: isPodReady(p),
        terminating: !!p.metadata.deletionTimestamp,
        node: p.spec?.nodeName ?? null,
        ip: p.status?.podIP ?? null,
        owner: p.metadata.ownerReferences?.find((o) => o.controller)?.kind ?? null,
      }));
    }
    return ok(body);
  };

  const failPod = (ns: string, name: string, body: Loose): Reply => {
    const pod = store.get(R.pods, ns, name);
    if (!pod) return err(404, `pod ${ns}/${name} not found`);
    const now = nowTs();
    let conds = setCondition(pod.status?.conditions, { type: 'Ready', status: 'False', reason: 'PodFailed' });
    conds = setCondition(conds, { type: 'ContainersReady', status: 'False', reason: 'PodFailed' });
    const exitCode = num(body?.exitCode, 137);
    const status: Loose = {
      ...pod.status,
      phase: 'Failed',
      conditions: conds,
      containerStatuses: ((pod.spec?.containers ?? []) as Loose[]).map((c) => {
        const prev = ((pod.status?.containerStatuses ?? []) as Loose[]).find((x) => x.name === c.name) ?? {};
        return {
          ...prev,
          name: c.name,
          image: c.image,
          imageID: prev.imageID ?? '',
          ready: false,
          started: false,
          restartCount: prev.restartCount ?? 0,
          state: { terminated: { exitCode, reason: body?.containerReason ?? 'Error', startedAt: prev.state?.running?.startedAt ?? now, finishedAt: now } },
        };
      }),
    };
    if (body?.reason) status.reason = String(body.reason);
    if (body?.message) status.message = String(body.message);
    const failed = api.writeStatus(R.pods, pod, status);
    ctx.events.record(failed, 'Warning', body?.reason ? String(body.reason) : 'Failed', body?.message ? String(body.message) : `Pod failed (simulated fault, exit code ${exitCode})`, 'kubelet', pod.spec?.nodeName);
    return ok({ pod: { namespace: ns, name, phase: 'Failed' } });
  };

  return (method, path, query, body) => {
    const seg = path.split('/').filter(Boolean).slice(1);
    const [a, b, c, d] = seg;
    if (method === 'GET' && (a === 'state' || a === undefined)) return state(query);
    if (method === 'GET' && a === 'journal') return ok({ deletions: deps.journal.list(num(query.get('since'), 0)) });
    if (a === 'pods' && b && c && method === 'POST') {
      if (d === 'fail') return failPod(b, c, body);
      if (d === 'unready' || d === 'crashloop' || d === 'ready') {
        const pod = store.get(R.pods, b, c);
        if (!pod) return err(404, `pod ${b}/${c} not found`);
        if (pod.status?.phase !== 'Running') return err(409, `pod ${b}/${c} is not running`);
        deps.kubelet.setHealth(pod, d);
        return ok({ pod: { namespace: b, name: c, health: d } });
      }
      if (d === 'restart') {
        const pod = store.get(R.pods, b, c);
        if (!pod) return err(404, `pod ${b}/${c} not found`);
        if (pod.status?.phase !== 'Running') return err(409, `pod ${b}/${c} is not running`);
        deps.kubelet.restartContainers(pod);
        return ok({ pod: { namespace: b, name: c } });
      }
    }
    if (a === 'nodes') {
      if (method === 'POST' && !b) {
        const existing = store.list(R.nodes);
        const index = existing.length + 1;
        const name = body?.name ? String(body.name) : `worker-${index}`;
        if (store.get(R.nodes, '', name)) return err(409, `node ${name} already exists`);
        try {
          api.create(R.nodes, '', workerNode(name, index));
        } catch (e) {
          return err(422, (e as Error).message);
        }
        return ok({ node: name });
      }
      if (method === 'POST' && b && c === 'fail') {
        const node = deps.nodes.failNode(b, num(body?.evictAfterMs, 0));
        return node ? ok({ node: b, ready: false }) : err(404, `node ${b} not found`);
      }
      if (method === 'POST' && b && c === 'recover') {
        const node = deps.nodes.recoverNode(b);
        return node ? ok({ node: b, ready: true }) : err(404, `node ${b} not found`);
      }
    }
    if (a === 'api' && b === 'latency' && (method === 'PUT' || method === 'POST')) {
      const ms = num(body?.ms ?? query.get('ms'), Number.NaN);
      if (!Number.isFinite(ms) || ms < 0) return err(400, 'body must be {"ms": <non-negative number>}');
      faults.latencyMs = ms;
      return ok({ faults: faults.summary() });
    }
    if (a === 'api' && b === 'break') {
      if (method === 'DELETE') {
        faults.breakRemaining = 0;
        return ok({ faults: faults.summary() });
      }
      if (method === 'POST' || method === 'PUT') {
        const n = body?.requests ?? query.get('requests');
        const count = n === undefined || n === null || n === '' ? Infinity : num(n, Number.NaN);
        if (!(count > 0)) return err(400, '"requests" must be a positive number (omit it to break until cleared)');
        const status = num(body?.status ?? query.get('status'), 503);
        if (status < 500 || status > 599) return err(400, '"status" must be a 5xx code');
        faults.breakRemaining = count;
        faults.breakStatus = status;
        if (body?.dropWatches === true) deps.endWatches();
        return ok({ faults: faults.summary() });
      }
    }
    if (a === 'watches') {
      const w = deps.watches();
      if (b === 'hold' && (method === 'POST' || method === 'PUT')) {
        w?.hold();
        return ok({ held: true });
      }
      if (b === 'hold' && method === 'DELETE') {
        w?.release();
        return ok({ held: false });
      }
      if (b === 'bookmark' && method === 'POST') return ok({ bookmarks: w?.bookmarkAll() ?? 0, resourceVersion: String(store.currentRv()) });
      if (b === 'end' && method === 'POST') {
        deps.endWatches();
        return ok();
      }
      if (b === 'compact' && method === 'POST') {
        const rv = store.compact();
        if (body?.endWatches === true) deps.endWatches();
        return ok({ compactedResourceVersion: String(rv) });
      }
    }
    if (a === 'faults' && method === 'DELETE') {
      faults.clear();
      return ok({ faults: faults.summary() });
    }
    if (a === 'kubelet' && (method === 'PUT' || method === 'POST')) {
      const ms = num(body?.delayMs ?? query.get('delayMs'), Number.NaN);
      if (!Number.isFinite(ms) || ms < 0) return err(400, 'body must be {"delayMs": <non-negative number>}');
      ctx.settings.kubeletDelayMs = ms;
      return ok({ kubeletDelayMs: ms });
    }
    return err(404, `unknown simulator control endpoint: ${method} ${path}`);
  };
}
