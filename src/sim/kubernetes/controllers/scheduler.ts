/**
 * The simulated kube-scheduler: binds Pending, unassigned pods to Ready, schedulable nodes that
 * satisfy nodeSelector, required node affinity, taints/tolerations and required pod anti-affinity on
 * the hostname, spreading pods of the same controller and then the overall pod count across nodes.
 * Pods that fit nowhere get `PodScheduled=False/Unschedulable` and are retried whenever nodes or pods
 * change.
 */
import { R } from '../resource-registry.ts';
import { fromLabelSelector, matchLabels } from '../selectors.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { controllerOf, isNodeReady, isPodActive, keyOf, setCondition } from './helpers.ts';

function tolerates(pod: KubeObject, taint: Loose): boolean {
  for (const t of (pod.spec?.tolerations ?? []) as Loose[]) {
    if (t.effect && t.effect !== taint.effect) continue;
    if (!t.key) {
      if (t.operator === 'Exists') return true;
      continue;
    }
    if (t.key !== taint.key) continue;
    if (t.operator === 'Exists') return true;
    if ((t.value ?? '') === (taint.value ?? '')) return true;
  }
  return false;
}

function matchNodeSelectorTerm(term: Loose, node: KubeObject): boolean {
  const labels = node.metadata.labels ?? {};
  for (const e of (term.matchExpressions ?? []) as Loose[]) {
    const v = labels[e.key];
    const vals: string[] = (e.values ?? []).map(String);
    switch (e.operator) {
      case 'In':
        if (v === undefined || !vals.includes(v)) return false;
        break;
      case 'NotIn':
        if (v !== undefined && vals.includes(v)) return false;
        break;
      case 'Exists':
        if (v === undefined) return false;
        break;
      case 'DoesNotExist':
        if (v !== undefined) return false;
        break;
      case 'Gt':
        if (v === undefined || !(Number(v) > Number(vals[0]))) return false;
        break;
      case 'Lt':
        if (v === undefined || !(Number(v) < Number(vals[0]))) return false;
        break;
      default:
        return false;
    }
  }
  for (const f of (term.matchFields ?? []) as Loose[]) {
    if (f.key !== 'metadata.name') return false;
    const inList = (f.values ?? []).includes(node.metadata.name);
    if (f.operator === 'In' ? !inList : inList) return false;
  }
  return true;
}

/** Binds pending pods to nodes. */
export class Scheduler {
  private readonly waiting = new Set<string>();

  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.pods) {
        if (ev.type === 'DELETED') {
          this.waiting.delete(keyOf(ev.obj));
          if (this.waiting.size) this.retryWaiting();
          return;
        }
        const p = ev.obj;
        if (!p.spec?.nodeName && !p.metadata.deletionTimestamp && (p.status?.phase ?? 'Pending') === 'Pending') this.enqueue(p.metadata.namespace ?? '', p.metadata.name as string);
      } else if (ev.def === R.nodes && this.waiting.size) this.retryWaiting();
    });
  }

  private enqueue(ns: string, name: string): void {
    this.ctx.queue.add(`sched:${ns}/${name}`, () => this.schedule(ns, name));
  }

  private retryWaiting(): void {
    for (const k of this.waiting) {
      const i = k.indexOf('/');
      this.enqueue(k.slice(0, i), k.slice(i + 1));
    }
  }

  /** Whether `pod` may run on `node` (predicates only). */
  fits(pod: KubeObject, node: KubeObject, podsOnNode: KubeObject[]): boolean {
    if (!isNodeReady(node)) return false;
    if (node.spec?.unschedulable && !tolerates(pod, { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' })) return false;
    for (const taint of (node.spec?.taints ?? []) as Loose[]) {
      if ((taint.effect === 'NoSchedule' || taint.effect === 'NoExecute') && !tolerates(pod, taint)) return false;
    }
    const labels = node.metadata.labels ?? {};
    for (const [k, v] of Object.entries((pod.spec?.nodeSelector ?? {}) as Record<string, string>)) if (labels[k] !== v) return false;
    const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    if (Array.isArray(terms) && terms.length && !terms.some((t: Loose) => matchNodeSelectorTerm(t, node))) return false;
    const maxPods = Number(node.status?.allocatable?.pods ?? 110);
    if (podsOnNode.length >= maxPods) return false;
    for (const term of (pod.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) as Loose[]) {
      if (term.topologyKey !== 'kubernetes.io/hostname') continue;
      const sel = fromLabelSelector(term.labelSelector);
      const nss: string[] = term.namespaces?.length ? term.namespaces : [pod.metadata.namespace];
      if (podsOnNode.some((o) => nss.includes(o.metadata.namespace as string) && matchLabels(sel, o.metadata.labels))) return false;
    }
    return true;
  }

  private schedule(ns: string, name: string): void {
    const { store, api, events } = this.ctx;
    const key = `${ns}/${name}`;
    const pod = store.get(R.pods, ns, name);
    if (!pod || pod.spec?.nodeName || pod.metadata.deletionTimestamp || (pod.status?.phase ?? 'Pending') !== 'Pending') {
      this.waiting.delete(key);
      return;
    }
    if (pod.spec?.schedulerName && pod.spec.schedulerName !== 'default-scheduler') return;
    const owner = controllerOf(pod)?.uid;
    const ownerCount = new Map<string, number>();
    if (owner) {
      for (const d of store.dependentsOf(owner)) {
        const n = d.obj.spec?.nodeName;
        if (d.def === R.pods && n && isPodActive(d.obj)) ownerCount.set(n, (ownerCount.get(n) ?? 0) + 1);
      }
    }
    let best: { name: string; score: number } | undefined;
    let total = 0;
    for (const node of store.list(R.nodes)) {
      total++;
      const nodeName = node.metadata.name as string;
      const onNode = store.podsOnNode(nodeName).filter(isPodActive);
      if (!this.fits(pod, node, onNode)) continue;
      const score = (ownerCount.get(nodeName) ?? 0) * 100000 + onNode.length;
      if (!best || score < best.score || (score === best.score && nodeName < best.name)) best = { name: nodeName, score };
    }
    if (!best) {
      const msg = `0/${total} nodes are available: ${total} node(s) didn't match Pod's node affinity/selector or were not ready. preemption: 0/${total} nodes are available.`;
      const already = (pod.status?.conditions ?? []).some((c: Loose) => c.type === 'PodScheduled' && c.status === 'False');
      if (!already) {
        api.writeStatus(R.pods, pod, { ...pod.status, conditions: setCondition(pod.status?.conditions, { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: msg }) });
        events.record(pod, 'Warning', 'FailedScheduling', msg, 'default-scheduler');
      }
      this.waiting.add(key);
      return;
    }
    this.waiting.delete(key);
    const node = best.name;
    const bound = api.mutate(R.pods, ns, name, (d) => {
      d.spec.nodeName = node;
      d.status = { ...(d.status ?? {}), conditions: setCondition(d.status?.conditions, { type: 'PodScheduled', status: 'True' }) };
    });
    if (bound) events.record(bound, 'Normal', 'Scheduled', `Successfully assigned ${ns}/${name} to ${node}`, 'default-scheduler');
  }
}
