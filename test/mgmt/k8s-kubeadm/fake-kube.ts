/**
 * A tiny in-memory Kubernetes API implementing exactly the calls the k8s-kubeadm driver makes
 * (get / list with a `spec.nodeName` field selector / create / merge patch / delete / evict),
 * with PodDisruptionBudget-aware evictions (429 when the budget allows no disruption), a token
 * controller for `kubernetes.io/service-account-token` Secrets, and a clock that only moves when
 * somebody sleeps.
 */
import { KubeApiError } from '../../../src/infra/kubernetes/kube-error.ts';
import type { Clock, EvictionOutcome, KubeApi, KubeList, KubeObject, ObjectRef } from '../../../src/mgmt/drivers/k8s-common/kube.ts';
import { selectorMatches } from '../../../src/mgmt/drivers/k8s-common/drain.ts';

const CLUSTER_SCOPED = new Set(['Node', 'ClusterRoleBinding', 'ClusterRole', 'Namespace']);

/** A clock advanced by sleeps only; `onSleep` lets a test change the world between polls. */
export class FakeClock implements Clock {
  t = 1_000_000;
  sleeps: number[] = [];
  onSleep: ((c: FakeClock) => void) | undefined;
  now(): number {
    return this.t;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.sleeps.push(ms);
    this.t += ms;
    this.onSleep?.(this);
  }
}

function merge(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete target[k];
    else if (v && typeof v === 'object' && !Array.isArray(v) && target[k] && typeof target[k] === 'object') merge(target[k] as Record<string, unknown>, v as Record<string, unknown>);
    else target[k] = structuredClone(v);
  }
  return target;
}

export class FakeKube implements KubeApi {
  readonly store = new Map<string, KubeObject>();
  readonly calls: string[] = [];
  /** The token the token controller puts in service-account-token Secrets. */
  adminToken = 'eyJhbGciOiJSUzI1NiJ9.admin-token-value';
  /** Gets of an unfilled token Secret before the controller fills it. */
  tokenAfterGets = 2;
  private tokenGets = 0;
  /** Fails every call when set (API down). */
  down = false;

  constructor(readonly clock: FakeClock = new FakeClock()) {}

  private key(kind: string, ns: string | undefined, name: string): string {
    return `${kind}/${CLUSTER_SCOPED.has(kind) ? '' : (ns ?? 'default')}/${name}`;
  }

  private check(): void {
    if (this.down) throw new KubeApiError({ detail: 'Kubernetes API: connection failed (ECONNREFUSED)', retryable: true });
  }

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    this.check();
    this.calls.push(`get ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`);
    const o = this.store.get(this.key(ref.kind, ref.namespace, ref.name));
    if (o && ref.kind === 'Secret' && o.type === 'kubernetes.io/service-account-token' && !(o.data as Record<string, string> | undefined)?.token) {
      if (++this.tokenGets >= this.tokenAfterGets) o.data = { token: Buffer.from(this.adminToken).toString('base64') };
    }
    return o ? structuredClone(o) : undefined;
  }

  async list(_apiVersion: string, kind: string, namespace: string | undefined, selectors: { labelSelector?: string; fieldSelector?: string } = {}): Promise<KubeList> {
    this.check();
    this.calls.push(`list ${kind}${namespace ? ` ${namespace}` : ''}${selectors.fieldSelector ? ` ${selectors.fieldSelector}` : ''}`);
    const node = /^spec\.nodeName=(.*)$/.exec(selectors.fieldSelector ?? '')?.[1];
    const items = [...this.store.values()].filter((o) => o.kind === kind && (namespace === undefined || CLUSTER_SCOPED.has(kind) || o.metadata.namespace === namespace) && (node === undefined || o.spec?.nodeName === node));
    return { items: structuredClone(items), resourceVersion: '1' };
  }

  async create(obj: KubeObject): Promise<KubeObject> {
    this.check();
    const k = this.key(obj.kind, obj.metadata.namespace, obj.metadata.name as string);
    this.calls.push(`create ${obj.kind} ${obj.metadata.name}`);
    if (this.store.has(k)) throw new KubeApiError({ detail: 'AlreadyExists', status: 409, reason: 'AlreadyExists', retryable: false });
    const o = structuredClone(obj);
    this.store.set(k, o);
    return structuredClone(o);
  }

  async mergePatch(ref: ObjectRef, patch: Record<string, unknown>): Promise<KubeObject> {
    this.check();
    this.calls.push(`patch ${ref.kind} ${ref.name} ${JSON.stringify(patch)}`);
    const o = this.store.get(this.key(ref.kind, ref.namespace, ref.name));
    if (!o) throw new KubeApiError({ detail: 'NotFound', status: 404, reason: 'NotFound', retryable: false });
    merge(o as unknown as Record<string, unknown>, patch);
    return structuredClone(o);
  }

  async delete(ref: ObjectRef): Promise<'deleted' | 'gone'> {
    this.check();
    this.calls.push(`delete ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`);
    return this.store.delete(this.key(ref.kind, ref.namespace, ref.name)) ? 'deleted' : 'gone';
  }

  async evict(pod: { name: string; namespace: string }): Promise<EvictionOutcome> {
    this.check();
    this.calls.push(`evict ${pod.namespace}/${pod.name}`);
    const p = this.store.get(this.key('Pod', pod.namespace, pod.name));
    if (!p) return { outcome: 'gone' };
    for (const b of this.store.values()) {
      if (b.kind !== 'PodDisruptionBudget' || b.metadata.namespace !== pod.namespace) continue;
      if (selectorMatches(b.spec?.selector, p.metadata.labels ?? {}) && (b.status?.disruptionsAllowed ?? 0) <= 0) {
        return { outcome: 'blocked', message: `Kubernetes API evict Pod ${pod.namespace}/${pod.name} answered 429 TooManyRequests: Cannot evict pod as it would violate the pod's disruption budget.` };
      }
    }
    this.store.delete(this.key('Pod', pod.namespace, pod.name));
    return { outcome: 'evicted' };
  }

  // ------------------------------------------------------------ world helpers

  node(name: string, ready: boolean | 'Unknown' = true, sinceMs?: number, extra: Record<string, unknown> = {}): void {
    const status = ready === 'Unknown' ? 'Unknown' : ready ? 'True' : 'False';
    const since = new Date(sinceMs ?? this.clock.now()).toISOString();
    this.store.set(this.key('Node', undefined, name), { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: {} }, spec: {}, status: { conditions: [{ type: 'Ready', status, lastTransitionTime: since }] }, ...extra });
  }

  pod(ns: string, name: string, node: string, o: { owner?: { kind: string; name: string; apiVersion?: string }; labels?: Record<string, string>; mirror?: boolean; phase?: string } = {}): void {
    this.store.set(this.key('Pod', ns, name), {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: ns,
        labels: o.labels ?? {},
        ...(o.mirror ? { annotations: { 'kubernetes.io/config.mirror': 'x' } } : {}),
        ...(o.owner ? { ownerReferences: [{ apiVersion: o.owner.apiVersion ?? 'apps/v1', kind: o.owner.kind, name: o.owner.name, uid: `uid-${o.owner.name}`, controller: true }] } : {}),
      },
      spec: { nodeName: node },
      status: { phase: o.phase ?? 'Running' },
    });
  }

  pdb(ns: string, name: string, matchLabels: Record<string, string>, disruptionsAllowed: number): void {
    this.store.set(this.key('PodDisruptionBudget', ns, name), { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name, namespace: ns }, spec: { selector: { matchLabels } }, status: { disruptionsAllowed } });
  }

  replicaSet(ns: string, name: string, replicas: number, ready: number): void {
    this.store.set(this.key('ReplicaSet', ns, name), { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name, namespace: ns }, spec: { replicas }, status: { readyReplicas: ready } });
  }

  has(kind: string, ns: string | undefined, name: string): boolean {
    return this.store.has(this.key(kind, ns, name));
  }

  obj(kind: string, ns: string | undefined, name: string): KubeObject | undefined {
    return this.store.get(this.key(kind, ns, name));
  }
}
