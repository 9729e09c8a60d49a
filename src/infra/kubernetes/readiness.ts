/**
 * Watch-based waits: "every VDU has its Ready pods", "the old pods are gone", "no pod is left".
 *
 * Why watches and not polling: a heal is judged by how fast the VNFC is back. Polling every 10 s
 * (what Tacker does) adds up to 10 s to every heal and hammers the API server when many
 * operations run; a watch reacts to the very event that makes the condition true. Each wait
 * lists the collections it needs (the truth at that moment), then follows their watch streams
 * and re-evaluates its condition on every change. A stream that ends is resumed from the last
 * resourceVersion; one that fails (or answers 410 Gone) is re-listed with back-off. When the API
 * stays unreachable, the list's own retries end with `VNFM_ERR_VIM_UNREACHABLE`; when the
 * condition is not met in time the wait fails with `VNFM_ERR_LCM_TIMEOUT`, saying what was
 * missing (which VDU, how many Ready of how many).
 */
import type { Logger } from 'pino';
import { terminalError } from '../../errors.ts';
import type { KubeClient, KubeObject, WatchEvent, WatchHandle } from './kube-client.ts';
import { instanceSelector } from './manifests.ts';
import { isActive, isPodReady, type VduWorkload, workloadOfPod } from './pods.ts';

/** A collection a wait follows. */
export interface WatchSource {
  apiVersion: string;
  kind: string;
  namespace: string;
  labelSelector?: string;
}

/** Outcome of one evaluation of a wait condition. */
export type Verdict = { done: true } | { done: false; progress: string };

/** Options of a wait. */
export interface WaitOptions {
  timeoutMs: number;
  /** What is awaited, for the timeout message ("heal of VNF x: pods Ready"). */
  what: string;
  log?: Logger;
}

/** Server-side watch timeout: streams are renewed periodically even on a quiet cluster. */
const WATCH_TIMEOUT_SECONDS = 240;

/** One listed-and-watched collection, kept up to date. */
class Collection {
  items = new Map<string, KubeObject>();
  synced = false;
  private rv: string | undefined;
  private handle: WatchHandle | undefined;
  private closed = false;
  private failures = 0;
  private openedAt = 0;
  private mustRelist = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly source: WatchSource,
    private readonly onChange: () => void,
    private readonly onFatal: (e: unknown) => void,
    private readonly log: Logger | undefined,
  ) {}

  start(): void {
    void this.relist();
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.handle?.stop();
    this.handle = undefined;
  }

  private async relist(): Promise<void> {
    if (this.closed) return;
    let list: Awaited<ReturnType<KubeClient['list']>>;
    try {
      const sel = this.source.labelSelector === undefined ? {} : { labelSelector: this.source.labelSelector };
      list = await this.client.list(this.source.apiVersion, this.source.kind, this.source.namespace, sel);
    } catch (e) {
      if (!this.closed) this.onFatal(e);
      return;
    }
    if (this.closed) return;
    this.items = new Map(list.items.map((o) => [o.metadata.name ?? '', o]));
    this.rv = list.resourceVersion;
    this.synced = true;
    this.mustRelist = false;
    this.onChange();
    await this.openWatch();
  }

  private async openWatch(): Promise<void> {
    if (this.closed) return;
    this.openedAt = Date.now();
    let handle: WatchHandle;
    try {
      const { apiVersion, kind, namespace, labelSelector } = this.source;
      handle = await this.client.watch(
        apiVersion,
        kind,
        namespace,
        {
          ...(labelSelector === undefined ? {} : { labelSelector }),
          ...(this.rv === undefined ? {} : { resourceVersion: this.rv }),
          timeoutSeconds: WATCH_TIMEOUT_SECONDS,
        },
        (ev) => this.onEvent(ev),
        (err) => this.onEnd(err),
      );
    } catch (e) {
      if (!this.closed) this.onFatal(e);
      return;
    }
    if (this.closed) handle.stop();
    else this.handle = handle;
  }

  private onEvent(ev: WatchEvent): void {
    if (this.closed) return;
    const obj = ev.object;
    const rv = obj?.metadata?.resourceVersion;
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.items.set(obj.metadata.name ?? '', obj);
        if (rv !== undefined) this.rv = rv;
        this.failures = 0;
        this.onChange();
        break;
      case 'DELETED':
        this.items.delete(obj.metadata.name ?? '');
        if (rv !== undefined) this.rv = rv;
        this.failures = 0;
        this.onChange();
        break;
      case 'BOOKMARK':
        if (rv !== undefined) this.rv = rv;
        break;
      default:
        // ERROR (410 Gone: our resourceVersion is too old, or a server error): start over from a list.
        this.mustRelist = true;
        this.handle?.stop();
        this.handle = undefined;
        this.onEnd(obj);
    }
  }

  private onEnd(err: unknown): void {
    if (this.closed) return;
    this.handle = undefined;
    const quick = Date.now() - this.openedAt < 1000;
    if (err === null && !this.mustRelist && !quick) {
      // The server ended the stream (its timeout): carry on from where we were.
      void this.openWatch();
      return;
    }
    this.failures++;
    const delay = Math.min(2000, 100 * 2 ** Math.min(this.failures - 1, 5));
    this.log?.debug({ kind: this.source.kind, failures: this.failures, delayMs: delay }, 'kubernetes watch ended; re-listing');
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.relist();
    }, delay);
  }
}

/**
 * Resolves when `check` says done, evaluated on the current contents of `sources` (one array of
 * objects per source, in the same order) after the initial lists and after every change.
 * Rejects with `VNFM_ERR_LCM_TIMEOUT` (message: `what` + the last progress) after `timeoutMs`, or
 * with the API error when a collection cannot be listed any more.
 */
export function watchUntil(client: KubeClient, sources: readonly WatchSource[], check: (views: KubeObject[][]) => Verdict, opts: WaitOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let finished = false;
    let progress = 'nothing observed yet';
    const started = Date.now();
    const finish = (err?: unknown): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      for (const c of collections) c.close();
      if (err === undefined) resolve();
      else reject(err);
    };
    const evaluate = (): void => {
      if (finished || collections.some((c) => !c.synced)) return;
      let v: Verdict;
      try {
        v = check(collections.map((c) => [...c.items.values()]));
      } catch (e) {
        finish(e);
        return;
      }
      if (v.done) {
        opts.log?.debug({ what: opts.what, ms: Date.now() - started }, 'kubernetes wait done');
        finish();
      } else progress = v.progress;
    };
    const collections: Collection[] = sources.map((s) => new Collection(client, s, evaluate, (e) => finish(e), opts.log));
    // The op's signal (lease lost, shutdown) ends the wait at once.
    const signal = client.signal;
    const onAbort = (): void => finish(terminalError('VNFM_ERR_LCM_INTERRUPTED', `${opts.what}: cancelled (${(signal?.reason as Error)?.message ?? 'aborted'})`));
    const timer = setTimeout(() => {
      const secs = Math.round(opts.timeoutMs / 100) / 10;
      // The VIM answered but did not converge within the whole wait budget: a retry would wait again.
      finish(terminalError('VNFM_ERR_LCM_TIMEOUT', `${opts.what}: not reached within ${secs} s: ${progress}`));
    }, opts.timeoutMs);
    if (signal?.aborted) {
      onAbort();
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    for (const c of collections) c.start();
  });
}

/** What a VDU must look like at the end of a wait. */
export interface VduExpectation {
  workload: VduWorkload;
  /** Ready pods wanted; undefined for a DaemonSet (its `status.desiredNumberScheduled`). */
  expected?: number;
}

/** Desired pods of a DaemonSet once its controller has seen its current spec; undefined before. */
function daemonSetDesired(dss: readonly KubeObject[], name: string): number | undefined {
  const ds = dss.find((d) => d.metadata.name === name);
  if (ds === undefined) return undefined;
  const observed = Number(ds.status?.observedGeneration ?? 0);
  if (observed < Number(ds.metadata.generation ?? 1)) return undefined;
  const n = ds.status?.desiredNumberScheduled;
  return typeof n === 'number' ? n : undefined;
}

/**
 * Waits until every VDU of `expectations` has exactly its expected number of active pods (not
 * terminating, not finished), all Ready, and no pod whose uid is in `goneUids` exists any more (the pods a heal
 * replaced: "gone" means removed from the API, not merely terminating). `workloads` lists every
 * VDU workload of the CNF (to map pods to VDUs).
 */
export function waitForVdus(
  client: KubeClient,
  args: {
    instanceId: string;
    namespace: string;
    workloads: readonly VduWorkload[];
    expectations: readonly VduExpectation[];
    goneUids?: ReadonlySet<string>;
  },
  opts: WaitOptions,
): Promise<void> {
  const selector = instanceSelector(args.instanceId);
  const sources: WatchSource[] = [{ apiVersion: 'v1', kind: 'Pod', namespace: args.namespace, labelSelector: selector }];
  const needDs = args.expectations.some((e) => e.expected === undefined && e.workload.kind === 'DaemonSet');
  if (needDs) sources.push({ apiVersion: 'apps/v1', kind: 'DaemonSet', namespace: args.namespace, labelSelector: selector });
  const gone = args.goneUids ?? new Set<string>();
  return watchUntil(
    client,
    sources,
    ([pods = [], dss = []]) => {
      const missing: string[] = [];
      const old = pods.filter((p) => gone.has(p.metadata.uid ?? ''));
      for (const exp of args.expectations) {
        const w = exp.workload;
        const mine = pods.filter((p) => workloadOfPod(p, args.workloads)?.vduId === w.vduId);
        const live = mine.filter((p) => isActive(p) && !gone.has(p.metadata.uid ?? ''));
        const ready = live.filter(isPodReady);
        const expected = w.kind === 'Pod' ? 1 : (exp.expected ?? (w.kind === 'DaemonSet' ? daemonSetDesired(dss, w.name) : undefined));
        const oldHere = old.filter((p) => mine.includes(p)).length;
        if (expected !== undefined && ready.length === expected && live.length === expected && oldHere === 0) continue;
        const parts = [`${ready.length} of ${expected ?? '?'} pod(s) Ready`];
        if (expected !== undefined && live.length > expected) parts.push(`${live.length - expected} pod(s) too many`);
        if (oldHere > 0) parts.push(`${oldHere} replaced pod(s) still present`);
        missing.push(`VDU ${w.vduId} (${w.kind} ${w.name}): ${parts.join(', ')}`);
      }
      if (old.length > 0 && missing.length === 0) missing.push(`${old.length} replaced pod(s) still present`);
      return missing.length === 0 ? { done: true } : { done: false, progress: missing.join('; ') };
    },
    opts,
  );
}

/** Waits until no pod of the instance exists any more (terminating ones included). */
export function waitForNoPods(client: KubeClient, args: { instanceId: string; namespace: string }, opts: WaitOptions): Promise<void> {
  const selector = instanceSelector(args.instanceId);
  return watchUntil(
    client,
    [{ apiVersion: 'v1', kind: 'Pod', namespace: args.namespace, labelSelector: selector }],
    ([pods = []]) => {
      if (pods.length === 0) return { done: true };
      const names = pods.map((p) => p.metadata.name).sort();
      return { done: false, progress: `${pods.length} pod(s) left: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', ...' : ''}` };
    },
    opts,
  );
}

/** Waits until no object of `kind` in `namespace` has one of `names` (e.g. deleted PVCs). */
export function waitForGone(client: KubeClient, args: { apiVersion: string; kind: string; namespace: string; names: readonly string[] }, opts: WaitOptions): Promise<void> {
  if (args.names.length === 0) return Promise.resolve();
  const wanted = new Set(args.names);
  return watchUntil(
    client,
    [{ apiVersion: args.apiVersion, kind: args.kind, namespace: args.namespace }],
    ([objs = []]) => {
      const left = objs.filter((o) => wanted.has(o.metadata.name ?? '')).map((o) => o.metadata.name as string);
      return left.length === 0 ? { done: true } : { done: false, progress: `${args.kind} still present: ${left.sort().join(', ')}` };
    },
    opts,
  );
}

/** Waits until the pod named `name` is gone or is a different incarnation than `uid`. */
export function waitForPodIncarnationGone(client: KubeClient, args: { instanceId: string; namespace: string; name: string; uid: string }, opts: WaitOptions): Promise<void> {
  return watchUntil(
    client,
    [{ apiVersion: 'v1', kind: 'Pod', namespace: args.namespace, labelSelector: instanceSelector(args.instanceId) }],
    ([pods = []]) => {
      const p = pods.find((x) => x.metadata.name === args.name);
      return p === undefined || p.metadata.uid !== args.uid ? { done: true } : { done: false, progress: `pod ${args.name} is still terminating` };
    },
    opts,
  );
}
