/**
 * A thin port over `@kubernetes/client-node` 1.4 for the Kubernetes infra driver: generic object
 * create / replace / merge-patch / delete / get / list (kind-aware URLs through the library's
 * discovery), and raw watch streams, with bounded retries.
 *
 * Why a port instead of the library directly:
 * - Retries in one place. A Kubernetes API server behind a load balancer answers 502/503/429 or
 *   drops connections during upgrades; a heal must ride over such blips (exponential back-off with
 *   jitter), and only when they last does the caller get `VNFM_ERR_VIM_UNREACHABLE`, which the
 *   engine turns into FAILED_TEMP. 4xx answers are never retried: they become {@link KubeApiError}
 *   with Kubernetes' reason, so callers can branch on 404/409.
 * - Plain JSON. The library's typed deserializer turns timestamps into `Date`s and drops fields its
 *   models do not know; the driver keeps objects (and its persisted state) as plain JSON, exactly
 *   as the API server sent them.
 * - A timeout per request (the library has none), so a hung API server cannot stall an operation.
 * - A connection built from a SOL `VimConnection` (endpoint, bearer token, CA certificate), never
 *   from a kubeconfig file on the VNFM host.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as K8s from '@kubernetes/client-node';
import type { CoreV1Api, KubeConfig, KubernetesObject, KubernetesObjectApi, ResponseContext, Watch } from '@kubernetes/client-node';
import { isIP } from 'node:net';
import { parseRetryAfter, vnfmError } from '../../errors.ts';
import { OUTBOUND_DENIED, type OutboundGuard, outboundDenial } from '../../net/outbound.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import { KUBE_RETRY_STATUSES, KubeApiError } from './kube-error.ts';

/** A Kubernetes object as plain JSON. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
    [key: string]: unknown;
  };
  // biome-ignore lint/suspicious/noExplicitAny: spec/status of arbitrary kinds are schemaless JSON here
  spec?: any;
  // biome-ignore lint/suspicious/noExplicitAny: see spec
  status?: any;
  [key: string]: unknown;
}

/** Identifies one object. `namespace` is ignored for cluster-scoped kinds. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

/** Options of {@link KubeClient}. */
export interface KubeClientOptions {
  /** Tries of one call in all, the first included. @default 4 */
  attempts?: number;
  /** Cap of the first retry delay; doubles per retry. @default 200 */
  baseDelayMs?: number;
  /** Largest delay between two tries. @default 2000 */
  maxDelayMs?: number;
  /** Timeout of one request (until the whole answer is read). @default 30000 */
  requestTimeoutMs?: number;
  /** Random source in [0, 1) for the jitter. @default Math.random */
  random?: () => number;
  /** Told before each retry sleep (for logs). */
  onRetry?: (event: { op: string; attempt: number; delayMs: number; reason: string }) => void;
  /**
   * The outbound rules of VIM endpoints: the API server's URL is checked before every call and
   * watch, and each connection resolves its host name through the rules and connects to the
   * checked addresses (pinned). @default none
   */
  outbound?: OutboundGuard;
  /** Told of every HTTP request sent (each try of a call, discovery included; a watch stream once), for metrics. */
  onRequest?: () => void;
}

/** Options of {@link KubeClient.delete}. */
export interface DeleteOptions {
  gracePeriodSeconds?: number;
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  /** Delete only this incarnation of the object (a same-named replacement is left alone: 409). */
  uid?: string;
}

/** One watch event, as the API server streams it. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject;
}

/** A running watch; `stop()` closes the stream. */
export interface WatchHandle {
  stop(): void;
}

/**
 * Outcome of a pod eviction: accepted, the pod did not exist, or refused for now because a
 * PodDisruptionBudget allows no disruption (HTTP 429; `message` is Kubernetes' explanation).
 */
export type EvictionOutcome = { outcome: 'evicted' } | { outcome: 'gone' } | { outcome: 'blocked'; message: string };

/** Result of a list call. */
export interface KubeList {
  items: KubeObject[];
  /** The list's resourceVersion, to start a watch from. */
  resourceVersion: string | undefined;
}

/** The Kubernetes client library's exports. */
export type KubeLib = typeof K8s;

let libLoad: Promise<KubeLib> | undefined;

/**
 * `@kubernetes/client-node`, loaded on first use: it is the largest package the VNFM depends on
 * (~2,500 generated model modules), and a VNFM that has no Kubernetes work yet does not pay for it
 * at start-up.
 */
export function kubeLib(): Promise<KubeLib> {
  libLoad ??= import('@kubernetes/client-node');
  return libLoad;
}

/** The `KubernetesObjectApi` of a {@link KubeClient}: plain JSON answers, and the kind -> URL mapping. */
interface PlainObjectApi extends KubernetesObjectApi {
  /** The collection path (`/apis/apps/v1/namespaces/ns/deployments`) of a kind. */
  collectionPath(apiVersion: string, kind: string, namespace: string | undefined): Promise<string>;
}

/**
 * `KubernetesObjectApi` answering plain JSON, and exposing the library's kind -> URL mapping
 * (discovery-backed, cached) for watch paths.
 */
function plainObjectApi(lib: KubeLib, config: ConstructorParameters<typeof KubernetesObjectApi>[0]): PlainObjectApi {
  class Plain extends lib.KubernetesObjectApi {
    protected override async processResponse<T extends KubernetesObject>(response: ResponseContext): Promise<T> {
      const text = await response.body.text();
      if (response.httpStatusCode >= 200 && response.httpStatusCode <= 299) {
        return (text === '' ? {} : JSON.parse(text)) as T;
      }
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON (a proxy's HTML page): keep the text
      }
      throw new lib.ApiException(response.httpStatusCode, 'Unsuccessful HTTP Request', body, response.headers);
    }

    collectionPath(apiVersion: string, kind: string, namespace: string | undefined): Promise<string> {
      return this.specUriPath({ apiVersion, kind, metadata: namespace === undefined ? {} : { namespace } }, 'list');
    }
  }
  return new Plain(config);
}

/** The library objects of a client, made on its first call. */
interface Parts {
  lib: KubeLib;
  api: PlainObjectApi;
  core: CoreV1Api;
  watcher: Watch;
}

function errorCode(err: unknown, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 5) return undefined;
  const e = err as { code?: unknown; errno?: unknown; name?: unknown; cause?: unknown; type?: unknown };
  if (e.name === 'AbortError' || e.type === 'aborted') return 'TIMEOUT';
  if (typeof e.code === 'string') return e.code;
  if (typeof e.errno === 'string') return e.errno;
  return errorCode(e.cause, depth + 1);
}

/** Longest message taken from an API server's answer. */
const MAX_KUBE_MESSAGE = 200;

/** One line, control characters removed, at most {@link MAX_KUBE_MESSAGE} characters. */
function boundMessage(v: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const one = v.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim();
  if (one === '') return undefined;
  return one.length > MAX_KUBE_MESSAGE ? `${one.slice(0, MAX_KUBE_MESSAGE)}...` : one;
}

/**
 * Kubernetes' reason and message, only from a JSON `Status` object (`{"kind": "Status", "reason",
 * "message", ...}`), the message bounded to one short line. Anything else (HTML from a proxy,
 * plain text, JSON of another shape: whatever a server that is not Kubernetes answers) gives
 * nothing, so no foreign body is ever echoed.
 */
function statusOf(body: unknown): { reason?: string; message?: string } {
  if (typeof body === 'string' && body.trimStart().startsWith('{')) {
    try {
      return statusOf(JSON.parse(body));
    } catch {
      return {};
    }
  }
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as { kind?: unknown; reason?: unknown; message?: unknown };
    if (b.kind !== 'Status') return {};
    const message = typeof b.message === 'string' ? boundMessage(b.message) : undefined;
    return {
      ...(typeof b.reason === 'string' && /^[A-Za-z][A-Za-z0-9]{0,63}$/.test(b.reason) ? { reason: b.reason } : {}),
      ...(message === undefined ? {} : { message }),
    };
  }
  return {};
}

/** The op's abort signal of the call in progress (read by the request middleware). */
const callSignal = new AsyncLocalStorage<AbortSignal | undefined>();

/** `Retry-After` of an API answer, in ms. */
function retryAfterOf(headers: unknown): number | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (k.toLowerCase() === 'retry-after') return parseRetryAfter(Array.isArray(v) ? String(v[0]) : String(v));
  }
  return undefined;
}

function pemToCaData(pem: string): string {
  return pem.includes('-----BEGIN') ? Buffer.from(pem, 'utf8').toString('base64') : pem.replace(/\s+/g, '');
}

/** Kubernetes API client of one VIM. */
export class KubeClient {
  /** The library objects, shared by every {@link withSignal} view; made on the first call. */
  private readonly made: { parts?: Promise<Parts> } = {};
  private readonly build: (lib: KubeLib) => KubeConfig;
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly random: () => number;
  private readonly onRetry: KubeClientOptions['onRetry'];
  private readonly outbound: OutboundGuard | undefined;
  private readonly onRequest: (() => void) | undefined;
  /** API server URL (no credentials), for messages. */
  readonly server: string;
  /** Cancels every call and wait made through this view (see {@link withSignal}). */
  protected boundSignal: AbortSignal | undefined;

  /**
   * @param server the API server URL (for messages; the one `build`'s current cluster names)
   * @param build makes the client's kubeconfig from the library, on the first call
   */
  constructor(server: string, build: (lib: KubeLib) => KubeConfig, options: KubeClientOptions = {}) {
    if (!server) throw vnfmError('VNFM_ERR_VIM_INVALID', 'Kubernetes VIM: no cluster configured');
    this.server = server;
    this.build = build;
    this.attempts = options.attempts ?? 4;
    this.baseDelayMs = options.baseDelayMs ?? 200;
    this.maxDelayMs = options.maxDelayMs ?? 2000;
    this.random = options.random ?? Math.random;
    this.onRetry = options.onRetry;
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.outbound = options.outbound;
    this.onRequest = options.onRequest;
  }

  /**
   * The outbound rules before a call: a literal address is judged here (node:net never looks it
   * up); a host name is judged by the agent's lookup at each connection (see {@link parts}).
   */
  private async precheck(op: string): Promise<void> {
    if (this.outbound === undefined) return;
    let host: string;
    try {
      host = new URL(this.server).hostname.replace(/^\[|\]$/g, '');
    } catch {
      return;
    }
    if (isIP(host) === 0) return;
    const why = await this.outbound.check(this.server);
    if (why) throw refusedError(op, this.server, why);
  }

  /** Loads the library and makes the API objects (once per client). */
  private parts(): Promise<Parts> {
    this.made.parts ??= kubeLib().then((lib) => {
      const kc = this.build(lib);
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw vnfmError('VNFM_ERR_VIM_INVALID', 'Kubernetes VIM: no cluster configured');
      if (this.outbound !== undefined) {
        // every agent the library makes (API calls, watches) resolves the API server's name
        // through the outbound rules and connects to the checked addresses
        const lookup = this.outbound.lookupFor(cluster.server);
        const k = kc as unknown as { createAgent: (c: unknown, o: Record<string, unknown>) => unknown };
        const createAgent = k.createAgent.bind(kc);
        k.createAgent = (c, o) => createAgent(c, { ...o, lookup });
      }
      const timeoutMs = this.timeoutMs;
      const onRequest = this.onRequest;
      const config = lib.createConfiguration({
        baseServer: new lib.ServerConfiguration(cluster.server, {}),
        authMethods: { default: kc },
        promiseMiddleware: [
          {
            pre: async (ctx) => {
              onRequest?.();
              const op = callSignal.getStore();
              ctx.setSignal(op === undefined ? AbortSignal.timeout(timeoutMs) : AbortSignal.any([AbortSignal.timeout(timeoutMs), op]));
              return ctx;
            },
            post: async (res) => res,
          },
        ],
      });
      return { lib, api: plainObjectApi(lib, config), core: new lib.CoreV1Api(config), watcher: new lib.Watch(kc) };
    });
    return this.made.parts;
  }

  /**
   * Builds a client from a SOL VimConnection of type `ETSINFV.KUBERNETES.V_1`:
   * `interfaceInfo.endpoint` (API server URL), `interfaceInfo.ssl_ca_cert` (PEM, optional),
   * `interfaceInfo.skipCertificateVerification` (optional), `accessInfo.bearer_token`.
   * Throws `VNFM_ERR_VIM_INVALID` when the endpoint or the token is missing.
   */
  static fromVim(vim: VimConnection, options: KubeClientOptions = {}): KubeClient {
    const endpoint = typeof vim.interfaceInfo.endpoint === 'string' ? vim.interfaceInfo.endpoint.replace(/\/+$/, '') : '';
    if (!/^https?:\/\//.test(endpoint)) {
      throw vnfmError('VNFM_ERR_VIM_INVALID', 'Kubernetes VIM connection needs interfaceInfo.endpoint (http(s) URL of the API server)');
    }
    const token = vim.accessInfo.bearer_token;
    if (typeof token !== 'string' || token === '') {
      throw vnfmError('VNFM_ERR_VIM_INVALID', 'Kubernetes VIM connection needs accessInfo.bearer_token');
    }
    const ca = vim.interfaceInfo.ssl_ca_cert;
    // client-node refuses plain http unless skipTLSVerify is set (there is no TLS to verify then).
    const skipTLSVerify = endpoint.startsWith('http:') || vim.interfaceInfo.skipCertificateVerification === true;
    const caData = typeof ca === 'string' && ca !== '' ? pemToCaData(ca) : undefined;
    return new KubeClient(
      endpoint,
      (lib) => {
        const kc = new lib.KubeConfig();
        kc.loadFromOptions({
          clusters: [{ name: 'vim', server: endpoint, skipTLSVerify, ...(caData === undefined ? {} : { caData }) }],
          users: [{ name: 'vnfm', token }],
          contexts: [{ name: 'vim', cluster: 'vim', user: 'vnfm' }],
          currentContext: 'vim',
        });
        return kc;
      },
      options,
    );
  }

  /**
   * The same client (same connection, caches and retry settings) whose calls and watches are
   * cancelled by `signal` (the op's: lease lost, shutdown). A cancelled call throws a terminal
   * {@link KubeApiError} and is never retried.
   */
  withSignal(signal: AbortSignal | undefined): KubeClient {
    if (signal === this.boundSignal) return this;
    const view = Object.create(this) as KubeClient;
    view.boundSignal = signal;
    return view;
  }

  /** The signal of this view, if any (waits stop on it). */
  get signal(): AbortSignal | undefined {
    return this.boundSignal;
  }

  private delay(retry: number): number {
    const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.max(0, retry - 1));
    return Math.round(cap / 2 + this.random() * (cap / 2));
  }

  private cancelled(op: string, cause?: unknown): KubeApiError {
    return new KubeApiError({ detail: `Kubernetes API ${op} at ${this.server}: cancelled`, retryable: false, ...(cause === undefined ? {} : { cause }) });
  }

  /**
   * Runs `fn`, retrying transient failures (a `Retry-After` raises the delay, within
   * `maxDelayMs`); maps every failure to a {@link KubeApiError}.
   */
  private async call<T>(op: string, fn: (p: Parts) => Promise<T>, noRetry?: ReadonlySet<number>): Promise<T> {
    const signal = this.boundSignal;
    const parts = await this.parts();
    await this.precheck(op);
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw this.cancelled(op, signal.reason);
      let err: KubeApiError;
      try {
        return await callSignal.run(signal, () => fn(parts));
      } catch (e) {
        if (signal?.aborted) throw this.cancelled(op, e);
        err = this.toError(op, e, attempt, parts.lib);
      }
      if (!err.retryable || attempt >= this.attempts || (err.status !== undefined && noRetry?.has(err.status))) throw err;
      const delayMs = Math.max(this.delay(attempt), Math.min(this.maxDelayMs, err.retryAfterMs ?? 0));
      this.onRetry?.({ op, attempt, delayMs, reason: err.status === undefined ? (errorCode(err.cause) ?? 'connection') : String(err.status) });
      try {
        await sleep(delayMs, undefined, signal === undefined ? undefined : { signal });
      } catch (e) {
        throw this.cancelled(op, e);
      }
    }
  }

  private toError(op: string, e: unknown, attempt: number, lib: KubeLib): KubeApiError {
    if (e instanceof KubeApiError) return e;
    const denied = outboundDenial(e);
    if (denied) return refusedError(op, this.server, denied.reason, e);
    if (errorCode(e) === OUTBOUND_DENIED) {
      const m = /outbound request refused: (.*)$/.exec(e instanceof Error ? e.message : '');
      return refusedError(op, this.server, m?.[1] ?? 'the API server URL is refused', e);
    }
    if (e instanceof lib.ApiException) {
      const status = e.code;
      const s = statusOf(e.body);
      const retryable = KUBE_RETRY_STATUSES.has(status);
      const tries = retryable ? ` after ${attempt} attempt(s)` : '';
      const retryAfterMs = retryable ? retryAfterOf(e.headers) : undefined;
      return new KubeApiError({
        detail: `Kubernetes API ${op} answered ${status}${s.reason ? ` ${s.reason}` : ''}${s.message ? `: ${s.message}` : ''}${tries}`,
        status,
        ...(s.reason === undefined ? {} : { reason: s.reason }),
        retryable,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        cause: e,
      });
    }
    const code = errorCode(e);
    if (code !== undefined && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code)) {
      // A certificate problem is a configuration error: retrying cannot fix it.
      return new KubeApiError({ detail: `Kubernetes API ${op} at ${this.server}: TLS verification failed (${code}); check the VIM's ssl_ca_cert`, retryable: false, cause: e });
    }
    if (code !== undefined) {
      const what = code === 'TIMEOUT' ? 'no answer in time' : `connection failed (${code})`;
      return new KubeApiError({ detail: `Kubernetes API ${op} at ${this.server}: ${what} after ${attempt} attempt(s)`, retryable: true, cause: e });
    }
    const msg = boundMessage(e instanceof Error ? e.message : String(e)) ?? 'unknown error';
    // e.g. "Unrecognized API version and kind" from the library's discovery
    return new KubeApiError({ detail: `Kubernetes API ${op}: ${msg}`, retryable: false, cause: e });
  }

  /** Creates an object (POST to its collection). Throws 409 `AlreadyExists` when the name is taken. */
  create(obj: KubeObject): Promise<KubeObject> {
    return this.call(`create ${describe(obj)}`, ({ api }) => api.create(structuredClone(obj) as KubernetesObject) as Promise<KubeObject>);
  }

  /** Replaces an object (PUT). */
  replace(obj: KubeObject): Promise<KubeObject> {
    return this.call(`replace ${describe(obj)}`, ({ api }) => api.replace(structuredClone(obj) as KubernetesObject) as Promise<KubeObject>);
  }

  /** Applies a JSON merge patch (RFC 7386) to an object, e.g. `{ spec: { replicas: 3 } }`. */
  mergePatch(ref: ObjectRef, patch: Record<string, unknown>): Promise<KubeObject> {
    const body = { ...structuredClone(patch), apiVersion: ref.apiVersion, kind: ref.kind, metadata: { ...((patch.metadata as object) ?? {}), ...header(ref) } };
    return this.call(`patch ${describe(ref)}`, ({ api, lib }) => api.patch(body as KubernetesObject, undefined, undefined, undefined, undefined, lib.PatchStrategy.MergePatch) as Promise<KubeObject>);
  }

  /**
   * Deletes an object. Returns 'deleted' when the API accepted the deletion (the object may still
   * exist while it terminates) and 'gone' when it did not exist. With `uid`, a 409 means another
   * incarnation now holds the name (it is not deleted).
   */
  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<'deleted' | 'gone'> {
    try {
      await this.call(`delete ${describe(ref)}`, ({ api }) =>
        api.delete(
          { apiVersion: ref.apiVersion, kind: ref.kind, metadata: header(ref) },
          undefined,
          undefined,
          opts.gracePeriodSeconds,
          undefined,
          opts.propagationPolicy,
          opts.uid === undefined ? undefined : { preconditions: { uid: opts.uid } },
        ),
      );
      return 'deleted';
    } catch (e) {
      if (KubeApiError.isStatus(e, 404)) return 'gone';
      throw e;
    }
  }

  /**
   * Evicts a pod through the Eviction API (`POST .../pods/<name>/eviction`, policy/v1), which
   * honours PodDisruptionBudgets. A 429 (a budget allows no disruption now) is not retried here:
   * it is returned as `blocked` and the caller decides when to try again.
   */
  async evict(pod: { name: string; namespace: string }, opts: { gracePeriodSeconds?: number } = {}): Promise<EvictionOutcome> {
    const body = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: pod.name, namespace: pod.namespace },
      ...(opts.gracePeriodSeconds === undefined ? {} : { deleteOptions: { gracePeriodSeconds: opts.gracePeriodSeconds } }),
    };
    try {
      await this.call(`evict Pod ${pod.namespace}/${pod.name}`, ({ core }) => core.createNamespacedPodEviction({ name: pod.name, namespace: pod.namespace, body }), new Set([429]));
      return { outcome: 'evicted' };
    } catch (e) {
      if (KubeApiError.isStatus(e, 404)) return { outcome: 'gone' };
      if (KubeApiError.isStatus(e, 429)) return { outcome: 'blocked', message: e.message };
      throw e;
    }
  }

  /** Reads an object; undefined when it does not exist. */
  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    try {
      return await this.call(`get ${describe(ref)}`, ({ api }) => api.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: header(ref) }) as Promise<KubeObject>);
    } catch (e) {
      if (KubeApiError.isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  /** Lists objects of a kind in a namespace (all namespaces when undefined), optionally filtered. */
  async list(apiVersion: string, kind: string, namespace: string | undefined, selectors: { labelSelector?: string; fieldSelector?: string } = {}): Promise<KubeList> {
    const where = namespace === undefined ? '' : ` in namespace ${namespace}`;
    const res = (await this.call(`list ${kind}${where}`, ({ api }) =>
      api.list(apiVersion, kind, namespace, undefined, undefined, undefined, selectors.fieldSelector, selectors.labelSelector),
    )) as unknown as { items?: KubeObject[]; metadata?: { resourceVersion?: string } };
    const items = (res.items ?? []).map((o) => ({ ...o, apiVersion: o.apiVersion ?? apiVersion, kind: o.kind ?? kind }));
    return { items, resourceVersion: res.metadata?.resourceVersion };
  }

  /**
   * Opens a watch stream on a kind's collection. `onEvent` receives every event; `onDone` is
   * called once when the stream ends for any reason (server close, error, `stop()`), with the
   * error if there was one. The caller re-lists and re-watches as it sees fit.
   */
  async watch(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    query: { labelSelector?: string; fieldSelector?: string; resourceVersion?: string; timeoutSeconds?: number },
    onEvent: (ev: WatchEvent) => void,
    onDone: (err: unknown) => void,
  ): Promise<WatchHandle> {
    const path = await this.call(`discover ${apiVersion} ${kind}`, ({ api }) => api.collectionPath(apiVersion, kind, namespace));
    const params: Record<string, string | number | boolean | undefined> = { allowWatchBookmarks: true };
    if (query.labelSelector !== undefined) params.labelSelector = query.labelSelector;
    if (query.fieldSelector !== undefined) params.fieldSelector = query.fieldSelector;
    if (query.resourceVersion !== undefined) params.resourceVersion = query.resourceVersion;
    if (query.timeoutSeconds !== undefined) params.timeoutSeconds = query.timeoutSeconds;
    let stopped = false;
    const signal = this.boundSignal;
    if (signal?.aborted) throw this.cancelled(`watch ${kind}`, signal.reason);
    const { watcher } = await this.parts();
    await this.precheck(`watch ${kind}`);
    this.onRequest?.();
    const controller = await watcher.watch(
      path,
      params,
      (type, obj) => {
        if (!stopped) onEvent({ type: type as WatchEvent['type'], object: obj as KubeObject });
      },
      (err) => {
        if (!stopped) {
          stopped = true;
          onDone(err ?? null);
        }
      },
    );
    const onAbort = (): void => {
      if (stopped) return;
      stopped = true;
      controller.abort();
      onDone(this.cancelled(`watch ${kind}`, signal?.reason));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    return {
      stop: () => {
        stopped = true;
        signal?.removeEventListener('abort', onAbort);
        controller.abort();
      },
    };
  }
}

/** A call the outbound rules of VIM endpoints refused (nothing was sent; terminal: no retry changes it). */
function refusedError(op: string, server: string, reason: string, cause?: unknown): KubeApiError {
  return new KubeApiError({ detail: `Kubernetes API ${op} at ${server}: refused by the outbound rules of VIM endpoints, nothing was sent: ${reason}`, retryable: false, ...(cause === undefined ? {} : { cause }) });
}

function header(ref: ObjectRef): { name: string; namespace?: string } {
  return ref.namespace === undefined ? { name: ref.name } : { name: ref.name, namespace: ref.namespace };
}

/** `Deployment ns/name`, for messages. */
export function describe(ref: { kind: string; metadata?: { name?: string; namespace?: string }; name?: string; namespace?: string }): string {
  const name = ref.name ?? ref.metadata?.name ?? '?';
  const ns = ref.namespace ?? ref.metadata?.namespace;
  return `${ref.kind} ${ns ? `${ns}/` : ''}${name}`;
}
