/**
 * The Kubernetes health watcher: what the pods (and nodes) of the VNFM's CNFs look like right now,
 * told to the health monitor as it changes.
 *
 * One watch per cluster connection (a health target: one per VIM project), not per VNF: for each
 * namespace of the target, the pods are listed, then watched from the list's resourceVersion (with
 * bookmarks, so a quiet namespace's resourceVersion stays recent); nodes likewise when the target
 * names some. A stream that ends is resumed from the last resourceVersion seen; a 410 Gone (the
 * server's history no longer reaches back that far) re-lists and reports every resource of the
 * target again; any other failure (no connection, 5xx, 401/403) tells the monitor the target is
 * unreachable (its resources become `unknown`, never `faulty`) and re-lists with back-off, then
 * reports everything again. The targets are read again every `periodMs`: namespaces added or
 * removed start or stop their streams, a changed connection (token, CA) restarts them.
 *
 * Mapping: see health-status.ts ({@link podHealth}, {@link nodeHealth}). The monitor applies grace times; this file
 * reports what the API server says, as soon as it says it.
 */
import type { ResourceHealth } from '../../model/vnfc-health.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { HealthWatcherDeps, HealthWatchTarget, VimHealthWatcher } from '../vim-plugin.ts';
import { deletedHealth, nodeHealth, oneLine, podHealth, signature } from './health-status.ts';
import { KubeClient, type KubeClientOptions, type KubeList, type KubeObject, type WatchEvent, type WatchHandle } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';

export { nodeHealth, podHealth } from './health-status.ts';

/** The name the requests are counted under (`vnfm_health_watch_requests_total{vim_type}`). */
const COUNTED_AS = 'kubernetes';

/** Server-side timeout of a watch stream: streams are renewed (from their resourceVersion) periodically. */
const WATCH_TIMEOUT_SECONDS = 300;

/**
 * A stream silent for longer than this (no event, no bookmark, not ended by the server at its
 * timeout) is taken for a dead connection: it is dropped and resumed.
 */
const SILENT_STREAM_MS = (WATCH_TIMEOUT_SECONDS + 60) * 1000;

/** A stream that ends sooner than this after it opened, without an event, counts as a failure (back-off). */
const QUICK_END_MS = 1000;

/** Options of {@link createKubernetesHealthWatcher} (tests). */
export interface KubernetesHealthWatcherOptions {
  /** First back-off delay after a failure; doubles per failure (equal jitter). @default 500 */
  backoffBaseMs?: number;
  /** Largest back-off delay. @default 30000 */
  backoffMaxMs?: number;
  /** Random source in [0, 1) of the jitter. @default Math.random */
  random?: () => number;
  /** API client settings (each call is tried once: the watcher backs off itself). */
  client?: KubeClientOptions;
}

/** The Kubernetes health watcher, with what tests synchronise on. */
export interface KubernetesHealthWatcher extends VimHealthWatcher {
  /** Resolves once the targets were read and every stream of them has been listed once (or failed once). */
  ready(): Promise<void>;
  /** Resolves when the targets were read and every stream of every target has its watch open. */
  settled(): Promise<void>;
  /** The open or opening streams: `<target key> pods <namespace>` / `<target key> nodes`. */
  streams(): string[];
  /** Reads the targets now (as every `periodMs` does) and starts, updates or stops their watches. */
  refresh(): Promise<void>;
}

/** Why a request failed, for the monitor and the log (no credentials: method, path and the server's answer). */
function failureReason(what: string, e: unknown): string {
  if (e instanceof KubeApiError) return e.message;
  const status = (e as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === 'number') return `Kubernetes API ${what} answered ${status}`;
  const code = (e as { code?: unknown; cause?: { code?: unknown } } | null)?.code ?? (e as { cause?: { code?: unknown } } | null)?.cause?.code;
  if (typeof code === 'string') return `Kubernetes API ${what}: connection failed (${code})`;
  const msg = e instanceof Error ? e.message : String(e);
  return `Kubernetes API ${what}: ${oneLine([msg]) ?? 'failed'}`;
}

// ---------------------------------------------------------------------------------------------
// Streams

type StreamKind = 'pods' | 'nodes';
type StreamState = 'listing' | 'watching' | 'backoff' | 'closed';

/** What a stream needs from its target. */
interface StreamOwner {
  readonly client: KubeClient;
  readonly key: string;
  listed(s: Stream, before: ReadonlySet<string>): void;
  changed(s: Stream, name: string, obj: KubeObject | undefined): void;
  failed(s: Stream, reason: string): void;
  stateChanged(): void;
  track<T>(p: Promise<T>): Promise<T>;
  backoff(failures: number): number;
}

/** One listed-and-watched collection: the pods of a namespace, or the nodes. */
class Stream {
  items = new Map<string, KubeObject>();
  /** The last list succeeded and no failure came since. */
  healthy = false;
  /** A list was tried (it succeeded or failed). */
  attempted = false;
  state: StreamState = 'listing';
  private rv: string | undefined;
  private handle: WatchHandle | undefined;
  private timer: NodeJS.Timeout | undefined;
  private silence: NodeJS.Timeout | undefined;
  private failures = 0;
  /** Identifies the current watch: callbacks of an older one are ignored. */
  private generation = 0;
  private openedAt = 0;
  private sawEvent = false;
  private gone = false;

  constructor(
    private readonly owner: StreamOwner,
    readonly kind: StreamKind,
    readonly namespace: string | undefined,
  ) {}

  isClosed(): boolean {
    return this.state === 'closed';
  }

  get label(): string {
    return this.kind === 'pods' ? `pods ${this.namespace ?? ''}` : 'nodes';
  }

  private get what(): string {
    return this.kind === 'pods' ? `Pod in namespace ${this.namespace ?? ''}` : 'Node';
  }

  start(): void {
    void this.relist();
  }

  close(): void {
    this.setState('closed');
    this.generation++;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.silence !== undefined) clearTimeout(this.silence);
    this.silence = undefined;
    this.handle?.stop();
    this.handle = undefined;
  }

  /** (Re)starts the wait for the next sign of life of the current watch. */
  private armSilence(): void {
    if (this.silence !== undefined) clearTimeout(this.silence);
    const gen = this.generation;
    this.silence = setTimeout(() => {
      this.silence = undefined;
      if (gen !== this.generation || this.handle === undefined) return;
      this.generation++;
      this.handle.stop();
      this.handle = undefined;
      void this.openWatch();
    }, SILENT_STREAM_MS);
    this.silence.unref?.();
  }

  private setState(s: StreamState): void {
    if (this.state === 'closed' || this.state === s) return;
    this.state = s;
    this.owner.stateChanged();
  }

  private async relist(): Promise<void> {
    if (this.isClosed()) return;
    this.setState('listing');
    let list: KubeList;
    try {
      list = await this.owner.track(this.owner.client.list('v1', this.kind === 'pods' ? 'Pod' : 'Node', this.namespace));
    } catch (e) {
      this.fail(failureReason(`list ${this.what}`, e));
      return;
    }
    if (this.isClosed()) return;
    const before = new Set(this.items.keys());
    this.items = new Map(list.items.map((o) => [o.metadata.name ?? '', o]));
    this.rv = list.resourceVersion;
    this.healthy = true;
    this.attempted = true;
    this.owner.listed(this, before);
    await this.openWatch();
  }

  private async openWatch(): Promise<void> {
    if (this.isClosed()) return;
    const gen = ++this.generation;
    this.openedAt = Date.now();
    this.sawEvent = false;
    let handle: WatchHandle;
    try {
      handle = await this.owner.client.watch(
        'v1',
        this.kind === 'pods' ? 'Pod' : 'Node',
        this.namespace,
        { ...(this.rv === undefined ? {} : { resourceVersion: this.rv }), timeoutSeconds: WATCH_TIMEOUT_SECONDS },
        (ev) => {
          if (gen === this.generation) this.onEvent(ev);
        },
        (err) => {
          if (gen === this.generation) this.onEnd(err);
        },
      );
    } catch (e) {
      if (gen === this.generation) this.fail(failureReason(`watch ${this.what}`, e));
      return;
    }
    if (gen !== this.generation) {
      // closed, or the stream already ended (an error answer) while it opened
      handle.stop();
      return;
    }
    this.handle = handle;
    this.armSilence();
    this.setState('watching');
  }

  private onEvent(ev: WatchEvent): void {
    const obj = ev.object;
    const rv = obj?.metadata?.resourceVersion;
    const name = obj?.metadata?.name ?? '';
    if (ev.type !== 'ERROR') {
      this.gone = false;
      if (this.handle !== undefined) this.armSilence();
    }
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.items.set(name, obj);
        break;
      case 'DELETED':
        this.items.delete(name);
        break;
      case 'BOOKMARK':
        if (rv !== undefined) this.rv = rv;
        return;
      default: {
        // ERROR: a Status; 410 Gone means our resourceVersion is too old -> re-list
        const code = (obj as { code?: unknown } | undefined)?.code;
        this.generation++;
        this.handle?.stop();
        this.handle = undefined;
        if (code === 410) this.onGone();
        else this.fail(`Kubernetes API watch ${this.what}: error event ${typeof code === 'number' ? code : ''} ${oneLine([String((obj as { reason?: unknown })?.reason ?? ''), String((obj as { message?: unknown })?.message ?? '')]) ?? ''}`.trim());
        return;
      }
    }
    if (rv !== undefined) this.rv = rv;
    this.sawEvent = true;
    this.failures = 0;
    this.owner.changed(this, name, ev.type === 'DELETED' ? undefined : obj);
  }

  private onEnd(err: unknown): void {
    this.generation++;
    this.handle = undefined;
    if (err !== null && err !== undefined) {
      if ((err as { statusCode?: unknown }).statusCode === 410) this.onGone();
      else this.fail(failureReason(`watch ${this.what}`, err));
      return;
    }
    // The server ended the stream (its timeout, a restart): carry on from the last resourceVersion.
    if (this.sawEvent || Date.now() - this.openedAt >= QUICK_END_MS) {
      this.failures = 0;
      void this.openWatch();
      return;
    }
    this.failures++;
    this.schedule(() => void this.openWatch());
  }

  /** 410 Gone: re-list at once (with back-off when it happens again before any event). */
  private onGone(): void {
    if (this.gone) {
      this.failures++;
      this.schedule(() => void this.relist());
      return;
    }
    this.gone = true;
    void this.relist();
  }

  private fail(reason: string): void {
    if (this.isClosed()) return;
    this.generation++;
    this.handle?.stop();
    this.handle = undefined;
    this.healthy = false;
    this.attempted = true;
    this.failures++;
    this.owner.failed(this, reason);
    this.schedule(() => void this.relist());
  }

  private schedule(fn: () => void): void {
    if (this.isClosed()) return;
    this.setState('backoff');
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      fn();
    }, this.owner.backoff(this.failures));
    this.timer.unref?.();
  }
}

// ---------------------------------------------------------------------------------------------
// Targets

/** The connection fields a client is built from: another value means another client. */
function connectionKey(vim: VimConnection): string {
  return JSON.stringify([vim.interfaceInfo.endpoint, vim.accessInfo.bearer_token, vim.interfaceInfo.ssl_ca_cert ?? null, vim.interfaceInfo.skipCertificateVerification ?? null]);
}

/** The watch of one target (one cluster connection). */
class TargetWatch implements StreamOwner {
  readonly key: string;
  private connKey = '';
  private clientOrNone: KubeClient | undefined;
  private abort = new AbortController();
  private resources: ReadonlySet<string> = new Set();
  private nodes: ReadonlySet<string> = new Set();
  private readonly streamsById = new Map<string, Stream>();
  /** Told unreachable, and not every stream has been listed again since. */
  private unreachable = false;
  /** Last reported signature per `<kind>/<resource id>`. */
  private readonly last = new Map<string, string>();

  constructor(
    private readonly w: Watcher,
    target: HealthWatchTarget,
  ) {
    this.key = target.key;
    this.update(target);
  }

  get client(): KubeClient {
    if (this.clientOrNone === undefined) throw new Error('no client');
    return this.clientOrNone;
  }

  streams(): Stream[] {
    return [...this.streamsById.values()];
  }

  /** Applies a fresh read of the target. */
  update(target: HealthWatchTarget): void {
    const ck = connectionKey(target.vim);
    if (ck !== this.connKey) {
      this.connKey = ck;
      this.closeStreams();
      this.abort = new AbortController();
      try {
        this.clientOrNone = KubeClient.fromVim(target.vim, { ...this.w.clientOptions, attempts: 1, outbound: this.w.deps.vimOutbound, onRequest: () => this.w.deps.countRequest(COUNTED_AS) }).withSignal(this.abort.signal);
      } catch (e) {
        this.clientOrNone = undefined;
        this.failed(undefined, failureReason('connection', e));
      }
    }
    const oldResources = this.resources;
    const oldNodes = this.nodes;
    this.resources = new Set(target.resources);
    this.nodes = new Set(target.nodes ?? []);
    for (const k of [...this.last.keys()]) {
      const at = k.indexOf('/');
      const id = k.slice(at + 1);
      if (k.slice(0, at) === 'node' ? !this.nodes.has(id) : !this.resources.has(id)) this.last.delete(k);
    }
    if (this.clientOrNone !== undefined) this.reconcileStreams(target);
    const added = [...this.resources].filter((r) => !oldResources.has(r)).length + [...this.nodes].filter((n) => !oldNodes.has(n)).length;
    if (added > 0) this.reportNew(oldResources, oldNodes);
  }

  private reconcileStreams(target: HealthWatchTarget): void {
    const want = new Map<string, [StreamKind, string | undefined]>();
    for (const ns of target.namespaces ?? []) if (ns !== '') want.set(`pods ${ns}`, ['pods', ns]);
    if (this.nodes.size > 0) want.set('nodes', ['nodes', undefined]);
    for (const [id, s] of this.streamsById) {
      if (want.has(id)) continue;
      s.close();
      this.streamsById.delete(id);
    }
    for (const [id, [kind, ns]] of want) {
      if (this.streamsById.has(id)) continue;
      const s = new Stream(this, kind, ns);
      this.streamsById.set(id, s);
      this.w.stateChanged();
      s.start();
    }
  }

  /** Resources that have just become targets: reported as their streams see them (when they do). */
  private reportNew(oldResources: ReadonlySet<string>, oldNodes: ReadonlySet<string>): void {
    const isNew = (h: ResourceHealth): boolean => (h.kind === 'node' ? !oldNodes.has(h.resourceId) : !oldResources.has(h.resourceId));
    const obs = this.fullObservations().filter(isNew);
    if (obs.length > 0) this.emit(obs);
  }

  private closeStreams(): void {
    this.abort.abort();
    for (const s of this.streamsById.values()) s.close();
    this.streamsById.clear();
  }

  close(): void {
    this.closeStreams();
  }

  private tracked(kind: 'pod' | 'node', name: string): boolean {
    return kind === 'node' ? this.nodes.has(name) : this.resources.has(name);
  }

  /** Every target resource whose stream is healthy: as seen, or Deleted when no healthy stream of its kind can have it. */
  private fullObservations(): ResourceHealth[] {
    const now = new Date();
    const out: ResourceHealth[] = [];
    const seen = new Set<string>();
    const podStreams = this.streams().filter((s) => s.kind === 'pods');
    for (const s of this.streams()) {
      if (!s.healthy) continue;
      const kind = s.kind === 'pods' ? 'pod' : 'node';
      for (const [name, obj] of s.items) {
        if (!this.tracked(kind, name)) continue;
        seen.add(`${kind}/${name}`);
        out.push(kind === 'pod' ? podHealth(obj, now) : nodeHealth(obj, now));
      }
    }
    if (podStreams.length > 0 && podStreams.every((s) => s.healthy)) {
      for (const r of this.resources) if (!seen.has(`pod/${r}`)) out.push(deletedHealth(r, 'pod', now));
    }
    if (this.streamsById.get('nodes')?.healthy === true) {
      for (const n of this.nodes) if (!seen.has(`node/${n}`)) out.push(deletedHealth(n, 'node', now));
    }
    return out;
  }

  /** A stream (re)listed: every target resource is reported again. */
  listed(s: Stream, before: ReadonlySet<string>): void {
    if (this.unreachable && this.streams().every((x) => x.healthy)) this.unreachable = false;
    const obs = this.fullObservations();
    // pods this stream knew and lost while it was not watching (another stream may not cover them)
    const kind = s.kind === 'pods' ? 'pod' : 'node';
    const now = new Date();
    for (const name of before) {
      if (s.items.has(name) || !this.tracked(kind, name) || obs.some((o) => o.kind === kind && o.resourceId === name)) continue;
      obs.push(deletedHealth(name, kind, now));
    }
    this.w.deps.log.debug({ target: this.key, stream: s.label, reported: obs.length }, 'kubernetes health watch: listed');
    this.emit(obs);
    this.w.stateChanged();
  }

  changed(s: Stream, name: string, obj: KubeObject | undefined): void {
    const kind = s.kind === 'pods' ? 'pod' : 'node';
    if (!this.tracked(kind, name)) return;
    const now = new Date();
    const h = obj === undefined ? deletedHealth(name, kind, now) : kind === 'pod' ? podHealth(obj, now) : nodeHealth(obj, now);
    if (this.last.get(`${kind}/${name}`) === signature(h)) return;
    this.emit([h]);
  }

  failed(s: Stream | undefined, reason: string): void {
    this.w.deps.log.debug({ target: this.key, stream: s?.label, reason }, 'kubernetes health watch failed');
    if (this.unreachable) return;
    this.unreachable = true;
    this.w.deps.log.warn({ target: this.key, reason }, 'kubernetes health watch: the cluster cannot be read; its resources are unknown until it can');
    try {
      this.w.deps.unreachable(this.key, reason);
    } catch (e) {
      this.w.deps.log.error({ target: this.key, err: e instanceof Error ? e.message : String(e) }, 'kubernetes health watch: the monitor refused an unreachable notice');
    }
  }

  private emit(obs: ResourceHealth[]): void {
    if (obs.length === 0) return;
    for (const h of obs) this.last.set(`${h.kind}/${h.resourceId}`, signature(h));
    try {
      this.w.deps.report(this.key, obs);
    } catch (e) {
      // the watch goes on; the monitor gets everything again at the next list
      this.w.deps.log.error({ target: this.key, err: e instanceof Error ? e.message : String(e) }, 'kubernetes health watch: the monitor refused a report');
    }
  }

  stateChanged(): void {
    this.w.stateChanged();
  }

  track<T>(p: Promise<T>): Promise<T> {
    return this.w.track(p);
  }

  backoff(failures: number): number {
    return this.w.backoff(failures);
  }
}

// ---------------------------------------------------------------------------------------------
// The watcher

class Watcher implements KubernetesHealthWatcher {
  readonly clientOptions: KubeClientOptions;
  private readonly targets = new Map<string, TargetWatch>();
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly waiters: { pred: () => boolean; resolve: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private firstSyncDone = false;
  private stopped = false;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;

  constructor(
    readonly deps: HealthWatcherDeps,
    options: KubernetesHealthWatcherOptions,
  ) {
    this.clientOptions = options.client ?? {};
    this.baseMs = options.backoffBaseMs ?? 500;
    this.maxMs = options.backoffMaxMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setInterval(() => void this.sync(), Math.max(10, this.deps.periodMs));
    this.timer.unref?.();
    void this.sync();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.syncing;
    for (const t of this.targets.values()) t.close();
    this.targets.clear();
    // Lists in flight end on the targets' abort signals. (A watch's HTTP request is aborted by its
    // handle once it has answered; one still waiting for the server's first answer is not awaited.)
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  async refresh(): Promise<void> {
    // a pass in progress may have read the targets before the caller changed them
    await this.syncing;
    await this.sync();
  }

  /** Reads the targets and starts, updates or stops their watches (one pass at a time). */
  private sync(): Promise<void> {
    this.syncing ??= this.syncOnce().finally(() => {
      this.syncing = undefined;
      this.firstSyncDone = true;
      this.stateChanged();
    });
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    if (this.stopped) return;
    let list: HealthWatchTarget[];
    try {
      list = await this.deps.targets();
    } catch (e) {
      this.deps.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'kubernetes health watch: the targets could not be read; keeping the current watches');
      return;
    }
    if (this.stopped) return;
    const seen = new Set<string>();
    for (const t of list) {
      if (seen.has(t.key)) continue;
      seen.add(t.key);
      const cur = this.targets.get(t.key);
      if (cur === undefined) this.targets.set(t.key, new TargetWatch(this, t));
      else cur.update(t);
    }
    for (const [key, t] of this.targets) {
      if (seen.has(key)) continue;
      t.close();
      this.targets.delete(key);
    }
  }

  private allStreams(): Stream[] {
    return [...this.targets.values()].flatMap((t) => t.streams());
  }

  ready(): Promise<void> {
    return this.when(() => this.firstSyncDone && this.allStreams().every((s) => s.attempted));
  }

  settled(): Promise<void> {
    return this.when(() => this.firstSyncDone && this.syncing === undefined && this.allStreams().every((s) => s.state === 'watching'));
  }

  streams(): string[] {
    return [...this.targets.values()].flatMap((t) => t.streams().map((s) => `${t.key} ${s.label}`));
  }

  private when(pred: () => boolean): Promise<void> {
    if (this.stopped || pred()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ pred, resolve }));
  }

  stateChanged(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i];
      if (w !== undefined && w.pred()) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    const done = (): void => {
      this.inflight.delete(p);
    };
    p.then(done, done);
    return p;
  }

  backoff(failures: number): number {
    const cap = Math.min(this.maxMs, this.baseMs * 2 ** Math.max(0, Math.min(failures - 1, 20)));
    return Math.round(cap / 2 + this.random() * (cap / 2));
  }
}

/**
 * The health watcher of Kubernetes VIMs (see the module comment): one per VNFM, built by the
 * health monitor through the plugin's `healthWatcher`.
 */
export function createKubernetesHealthWatcher(deps: HealthWatcherDeps, options: KubernetesHealthWatcherOptions = {}): KubernetesHealthWatcher {
  return new Watcher(deps, options);
}
