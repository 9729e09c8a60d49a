/**
 * The cluster's Kubernetes API as the driver uses it (spec §2.3 rule 2: object operations from the
 * VNFM, host-bound actions over SSH): the exact subset of {@link KubeClient} calls the driver makes
 * (so tests can stand a small in-memory API in), clients built from the driver's sealed admin
 * token or, once at instantiate, from the main master's `admin.conf`, and the admin token bootstrap
 * (ServiceAccount + ClusterRoleBinding + an explicit `kubernetes.io/service-account-token` Secret,
 * polled until the token controller fills it: works from Kubernetes 1.24 on too).
 */
import { parse as parseYaml } from 'yaml';
import { vnfmError } from '../../../errors.ts';
import { type EvictionOutcome, type KubeClientOptions, type KubeList, type KubeObject, KubeClient, kubeLib, type ObjectRef } from '../../../infra/kubernetes/kube-client.ts';

export type { EvictionOutcome, KubeList, KubeObject, ObjectRef };

/** The calls the driver makes (a structural subset of {@link KubeClient}). */
export interface KubeApi {
  get(ref: ObjectRef): Promise<KubeObject | undefined>;
  list(apiVersion: string, kind: string, namespace: string | undefined, selectors?: { labelSelector?: string; fieldSelector?: string }): Promise<KubeList>;
  create(obj: KubeObject): Promise<KubeObject>;
  mergePatch(ref: ObjectRef, patch: Record<string, unknown>): Promise<KubeObject>;
  delete(ref: ObjectRef, opts?: { gracePeriodSeconds?: number }): Promise<'deleted' | 'gone'>;
  evict(pod: { name: string; namespace: string }, opts?: { gracePeriodSeconds?: number }): Promise<EvictionOutcome>;
}

/** How to reach the cluster's API server. */
export interface ClusterConnection {
  /** API server URL as the VNFM reaches it. */
  server: string;
  /** Cluster CA (PEM). */
  caCert?: string;
  /** Name the server certificate is checked against when the URL host is not in it (floating IP). */
  tlsServerName?: string;
  /** Verification off (only when explicitly requested). */
  insecure?: boolean;
  /** Bearer token (the admin ServiceAccount's), or ... */
  token?: string;
  /** ... a kubeconfig (the main master's admin.conf) whose user credentials are used. */
  kubeconfig?: string;
  signal?: AbortSignal;
}

/** Builds the API of a cluster. */
export type KubeApiFactory = (c: ClusterConnection) => KubeApi;

/** The default factory: a {@link KubeClient} (bounded retries, per-request timeout). */
export function kubeClientFactory(options: KubeClientOptions = {}): KubeApiFactory {
  return (c) => {
    const cluster = {
      name: 'cluster',
      server: c.server,
      skipTLSVerify: c.insecure === true || c.server.startsWith('http:'),
      ...(c.caCert ? { caData: Buffer.from(c.caCert, 'utf8').toString('base64') } : {}),
      ...(c.tlsServerName ? { tlsServerName: c.tlsServerName } : {}),
    };
    const contexts = [{ name: 'c', cluster: 'cluster', user: 'admin' }];
    let build: ConstructorParameters<typeof KubeClient>[1];
    if (c.token) {
      const token = c.token;
      build = (lib) => {
        const kc = new lib.KubeConfig();
        kc.loadFromOptions({ clusters: [cluster], users: [{ name: 'admin', token }], contexts, currentContext: 'c' });
        return kc;
      };
    } else if (c.kubeconfig) {
      const text = c.kubeconfig;
      const parts = kubeconfigParts(text);
      if (!parts.hasUser) throw vnfmError('VNFM_ERR_MGMT_FAILED', 'the admin kubeconfig of the cluster has no user');
      build = (lib) => {
        const src = new lib.KubeConfig();
        src.loadFromString(text);
        const user = src.getCurrentUser();
        if (!user) throw vnfmError('VNFM_ERR_MGMT_FAILED', 'the admin kubeconfig of the cluster has no user');
        const kc = new lib.KubeConfig();
        kc.loadFromOptions({
          clusters: [{ ...cluster, ...(cluster.caData === undefined && parts.caData ? { caData: parts.caData } : {}) }],
          users: [{ ...user, name: 'admin' }],
          contexts,
          currentContext: 'c',
        });
        return kc;
      };
    } else {
      throw vnfmError('VNFM_ERR_MGMT_FAILED', 'no credentials for the cluster API');
    }
    return new KubeClient(c.server, build, options).withSignal(c.signal);
  };
}

/**
 * What the VNFM reads from a kubeconfig (the main master's `admin.conf`) itself: its current
 * context's cluster server and CA (`certificate-authority-data`, base64), and whether it names a
 * user. Empty when the text is not a kubeconfig.
 */
export function kubeconfigParts(text: string): { server?: string; caData?: string; hasUser: boolean } {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch {
    return { hasUser: false };
  }
  if (doc === null || typeof doc !== 'object') return { hasUser: false };
  const d = doc as { 'current-context'?: unknown; contexts?: unknown; clusters?: unknown; users?: unknown };
  const named = (list: unknown, name: unknown): Record<string, unknown> | undefined => {
    if (!Array.isArray(list) || typeof name !== 'string') return undefined;
    return list.find((x) => x !== null && typeof x === 'object' && (x as { name?: unknown }).name === name) as Record<string, unknown> | undefined;
  };
  const ctx = named(d.contexts, d['current-context'])?.context as { cluster?: unknown; user?: unknown } | undefined;
  const cluster = named(d.clusters, ctx?.cluster)?.cluster as { server?: unknown; 'certificate-authority-data'?: unknown } | undefined;
  return {
    ...(typeof cluster?.server === 'string' ? { server: cluster.server } : {}),
    ...(typeof cluster?.['certificate-authority-data'] === 'string' ? { caData: cluster['certificate-authority-data'] } : {}),
    hasUser: named(d.users, ctx?.user) !== undefined,
  };
}

/** The server URL of a kubeconfig's current cluster, if any. */
export function kubeconfigServer(text: string): string | undefined {
  return kubeconfigParts(text).server;
}

/** A Node's Ready condition: status and since when. */
export function readyCondition(node: KubeObject | undefined): { status: 'True' | 'False' | 'Unknown'; since?: number } {
  const c = ((node?.status?.conditions ?? []) as { type?: string; status?: string; lastTransitionTime?: string }[]).find((x) => x.type === 'Ready');
  const status = c?.status === 'True' || c?.status === 'False' ? c.status : 'Unknown';
  const since = c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : undefined;
  return since !== undefined && !Number.isNaN(since) ? { status, since } : { status };
}

export function isNodeReady(node: KubeObject | undefined): boolean {
  return node !== undefined && readyCondition(node).status === 'True';
}

export const nodeRef = (name: string): ObjectRef => ({ apiVersion: 'v1', kind: 'Node', name });

/** Names of the admin objects (Tacker's `create_admin_token.yaml`, plus the explicit Secret). */
export const ADMIN_SA = { namespace: 'kube-system', name: 'admin', binding: 'admin', secret: 'admin-token' } as const;

async function createIfAbsent(api: KubeApi, obj: KubeObject): Promise<void> {
  const ref = { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name as string, ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}) };
  if (await api.get(ref)) return;
  try {
    await api.create(obj);
  } catch (e) {
    if ((e as { status?: number }).status === 409) return;
    throw e;
  }
}

/** Clock and sleep, injectable so waits run instantly in tests. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Creates (idempotently) the admin ServiceAccount, its `cluster-admin` binding and a token Secret
 * for it, then polls until the token controller has filled the Secret; returns the token.
 */
export async function ensureAdminToken(api: KubeApi, clock: Clock, o: { intervalMs: number; timeoutMs: number; signal?: AbortSignal }): Promise<string> {
  const { namespace, name, binding, secret } = ADMIN_SA;
  await createIfAbsent(api, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  await createIfAbsent(api, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: binding },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  });
  await createIfAbsent(api, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secret, namespace, annotations: { 'kubernetes.io/service-account.name': name } },
    type: 'kubernetes.io/service-account-token',
  });
  const end = clock.now() + o.timeoutMs;
  for (;;) {
    const s = await api.get({ apiVersion: 'v1', kind: 'Secret', name: secret, namespace });
    const data = (s?.data ?? {}) as Record<string, string>;
    if (typeof data.token === 'string' && data.token !== '') {
      const token = Buffer.from(data.token, 'base64').toString('utf8');
      if (token !== '') return token;
    }
    if (clock.now() >= end) {
      throw vnfmError('VNFM_ERR_MGMT_FAILED', `the token of Secret ${namespace}/${secret} was not filled within ${Math.round(o.timeoutMs / 1000)} s (is the token controller running?)`, { retryable: true });
    }
    await clock.sleep(o.intervalMs, o.signal);
  }
}

/** Real time. */
export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/**
 * Starts loading the Kubernetes client library (imported on first use, seconds on a busy machine)
 * in the background, so that a hook's SSH connections and that load overlap instead of adding up.
 */
export function warmKubeLibrary(): void {
  kubeLib().catch(() => undefined);
}
