/**
 * Taking a node out of a cluster through the Kubernetes API (spec §2.3 rules 3 and 4):
 *
 * - cordon, then evict pod by pod through the Eviction API, which honours PodDisruptionBudgets
 *   (DaemonSet pods and mirror pods are skipped, emptyDir is allowed); an eviction refused with
 *   429 is retried every `retryMs` until the drain timeout, then the drain FAILS naming the
 *   blocking budgets and pods, and the node is NOT deleted; `force` deletes the pods instead;
 * - a dead node (Ready Unknown/False for longer than the grace period, or unreachable) is not
 *   drained: its Node object is deleted so its pods are garbage-collected;
 * - after a drain, wait until the drained pods' owners are back to their ready counts (bounded;
 *   the caller warns when they are not); after a join, wait until the Node is Ready.
 *
 * Every wait uses the injected {@link Clock}, so tests run without real time passing.
 */
import { terminalError, vnfmError } from '../../../errors.ts';
import { type Clock, isNodeReady, type KubeApi, type KubeObject, nodeRef, readyCondition } from './kube.ts';

/** A pod, by namespace and name. */
export interface PodKey {
  namespace: string;
  name: string;
}

/** The controller of a drained pod. */
export interface OwnerKey {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

export interface DrainOptions {
  timeoutMs: number;
  retryMs: number;
  force: boolean;
  clock: Clock;
  signal?: AbortSignal;
  onProgress?: (detail: string) => void;
}

export interface DrainResult {
  /** False when the Node did not exist (nothing drained). */
  found: boolean;
  evicted: PodKey[];
  owners: OwnerKey[];
}

const key = (p: PodKey) => `${p.namespace}/${p.name}`;

function podKey(p: KubeObject): PodKey {
  return { namespace: p.metadata.namespace ?? 'default', name: p.metadata.name ?? '' };
}

function controllerOf(p: KubeObject) {
  return (p.metadata.ownerReferences ?? []).find((o) => o.controller === true) ?? (p.metadata.ownerReferences ?? [])[0];
}

/** DaemonSet pods stay (their controller would recreate them on the node anyway). */
export function isDaemonSetPod(p: KubeObject): boolean {
  return controllerOf(p)?.kind === 'DaemonSet';
}

/** Mirror pods (static pods such as the control plane's) cannot be evicted through the API. */
export function isMirrorPod(p: KubeObject): boolean {
  return p.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined;
}

/** The pods bound to a node, all namespaces. */
export async function podsOnNode(api: KubeApi, node: string): Promise<KubeObject[]> {
  const l = await api.list('v1', 'Pod', undefined, { fieldSelector: `spec.nodeName=${node}` });
  return l.items.filter((p) => p.spec?.nodeName === undefined || p.spec.nodeName === node);
}

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** Kubernetes label selector semantics (an empty selector matches everything). */
export function selectorMatches(sel: LabelSelector | undefined, labels: Record<string, string> = {}): boolean {
  if (!sel) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const v = labels[e.key];
    switch (e.operator) {
      case 'In':
        if (!has || !(e.values ?? []).includes(v as string)) return false;
        break;
      case 'NotIn':
        if (has && (e.values ?? []).includes(v as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** The PodDisruptionBudgets (`namespace/name`) selecting a pod. */
export async function budgetsOf(api: KubeApi, pod: KubeObject): Promise<string[]> {
  const ns = pod.metadata.namespace ?? 'default';
  const l = await api.list('policy/v1', 'PodDisruptionBudget', ns);
  return l.items.filter((b) => selectorMatches(b.spec?.selector as LabelSelector | undefined, pod.metadata.labels ?? {})).map((b) => `${ns}/${b.metadata.name}`);
}

/** Marks a node unschedulable; false when the Node does not exist. */
export async function cordon(api: KubeApi, node: string): Promise<boolean> {
  const n = await api.get(nodeRef(node));
  if (!n) return false;
  if (n.spec?.unschedulable === true) return true;
  try {
    await api.mergePatch(nodeRef(node), { spec: { unschedulable: true } });
  } catch (e) {
    if ((e as { status?: number }).status === 404) return false;
    throw e;
  }
  return true;
}

/** Marks a node schedulable again (rollback of a cordon); false when it does not exist. */
export async function uncordon(api: KubeApi, node: string): Promise<boolean> {
  const n = await api.get(nodeRef(node));
  if (!n) return false;
  if (n.spec?.unschedulable !== true) return true;
  await api.mergePatch(nodeRef(node), { spec: { unschedulable: null } });
  return true;
}

/** Deletes a Node object ('gone' when it did not exist). */
export function deleteNode(api: KubeApi, node: string): Promise<'deleted' | 'gone'> {
  return api.delete(nodeRef(node));
}

/** Dead: Ready is Unknown/False and has been for longer than `graceMs`. */
export function isDeadNode(node: KubeObject, now: number, graceMs: number): boolean {
  const c = readyCondition(node);
  if (c.status === 'True') return false;
  return c.since !== undefined && now - c.since > graceMs;
}

/**
 * Cordons and drains a node. Returns what was evicted and their owners; throws (terminal
 * `VNFM_ERR_MGMT_FAILED`) when evictions stay refused until the timeout, naming the budgets and
 * pods, or when evicted pods do not go away in time.
 */
export async function drainNode(api: KubeApi, node: string, o: DrainOptions): Promise<DrainResult> {
  if (!(await cordon(api, node))) return { found: false, evicted: [], owners: [] };
  const end = o.clock.now() + o.timeoutMs;
  const evicted = new Map<string, PodKey>();
  const owners = new Map<string, OwnerKey>();
  for (;;) {
    o.signal?.throwIfAborted();
    const pods = (await podsOnNode(api, node)).filter((p) => !isDaemonSetPod(p) && !isMirrorPod(p));
    if (pods.length === 0) return { found: true, evicted: [...evicted.values()], owners: [...owners.values()] };
    const blocked: KubeObject[] = [];
    const terminating: KubeObject[] = [];
    for (const p of pods) {
      const k = podKey(p);
      if (p.metadata.deletionTimestamp) {
        terminating.push(p);
        continue;
      }
      const owner = controllerOf(p);
      const remember = () => {
        evicted.set(key(k), k);
        if (owner) owners.set(`${owner.kind}/${k.namespace}/${owner.name}`, { apiVersion: owner.apiVersion, kind: owner.kind, namespace: k.namespace, name: owner.name });
      };
      if (o.force) {
        await api.delete({ apiVersion: 'v1', kind: 'Pod', name: k.name, namespace: k.namespace });
        remember();
        terminating.push(p);
        continue;
      }
      const r = await api.evict(k);
      if (r.outcome === 'blocked') blocked.push(p);
      else {
        if (r.outcome === 'evicted') remember();
        terminating.push(p);
      }
    }
    if (o.clock.now() >= end) {
      const seconds = Math.round(o.timeoutMs / 1000);
      if (blocked.length > 0) {
        const budgets = new Set<string>();
        for (const p of blocked) for (const b of await budgetsOf(api, p)) budgets.add(b);
        const pdbs = budgets.size > 0 ? `PodDisruptionBudget(s) ${[...budgets].join(', ')}` : 'a PodDisruptionBudget';
        throw terminalError(
          'VNFM_ERR_MGMT_FAILED',
          `drain of node ${node} did not finish in ${seconds} s: evictions refused by ${pdbs} (pods ${blocked.map((p) => key(podKey(p))).join(', ')}); the node was cordoned but not removed. Retry when the budget allows it, or send additionalParams.drain {force: true} to delete the pods`,
          { extra: { node, podDisruptionBudgets: [...budgets], pods: blocked.map((p) => key(podKey(p))) } },
        );
      }
      throw terminalError('VNFM_ERR_MGMT_FAILED', `drain of node ${node} did not finish in ${seconds} s: pods still terminating (${terminating.map((p) => key(podKey(p))).join(', ')})`, { extra: { node, pods: terminating.map((p) => key(podKey(p))) } });
    }
    const parts: string[] = [];
    if (blocked.length) parts.push(`${blocked.length} blocked by a PodDisruptionBudget (${blocked.map((p) => key(podKey(p))).join(', ')})`);
    if (terminating.length) parts.push(`${terminating.length} terminating`);
    o.onProgress?.(`draining ${node}: ${parts.join(', ')}`);
    await o.clock.sleep(o.retryMs, o.signal);
  }
}

function readyOf(o: KubeObject): { ready: number; want: number } {
  const want = typeof o.spec?.replicas === 'number' ? o.spec.replicas : 1;
  const ready = typeof o.status?.readyReplicas === 'number' ? o.status.readyReplicas : 0;
  return { ready, want };
}

/**
 * Waits until the owners of drained pods (ReplicaSets, StatefulSets, ReplicationControllers) have
 * their ready counts back; returns the ones that did not in `timeoutMs` (the caller warns).
 */
export async function waitOwnersReady(api: KubeApi, owners: readonly OwnerKey[], o: { timeoutMs: number; pollMs: number; clock: Clock; signal?: AbortSignal }): Promise<string[]> {
  const watched = owners.filter((w) => ['ReplicaSet', 'StatefulSet', 'ReplicationController'].includes(w.kind));
  const end = o.clock.now() + o.timeoutMs;
  for (;;) {
    const notReady: string[] = [];
    for (const w of watched) {
      const obj = await api.get({ apiVersion: w.apiVersion, kind: w.kind, name: w.name, namespace: w.namespace });
      if (!obj) continue; // gone (scaled away, replaced): nothing to wait for
      const r = readyOf(obj);
      if (r.ready < r.want) notReady.push(`${w.kind} ${w.namespace}/${w.name} (${r.ready}/${r.want} ready)`);
    }
    if (notReady.length === 0 || o.clock.now() >= end) return notReady;
    await o.clock.sleep(o.pollMs, o.signal);
  }
}

/** Waits until the Node exists and is Ready; terminal failure after `timeoutMs`. */
export async function waitNodeReady(api: KubeApi, node: string, o: { timeoutMs: number; pollMs: number; clock: Clock; signal?: AbortSignal }): Promise<void> {
  const end = o.clock.now() + o.timeoutMs;
  for (;;) {
    const n = await api.get(nodeRef(node));
    if (isNodeReady(n)) return;
    if (o.clock.now() >= end) {
      throw vnfmError('VNFM_ERR_MGMT_FAILED', `node ${node} ${n ? 'did not become Ready' : 'did not register'} within ${Math.round(o.timeoutMs / 1000)} s after joining`);
    }
    await o.clock.sleep(o.pollMs, o.signal);
  }
}
