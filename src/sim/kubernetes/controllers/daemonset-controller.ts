/**
 * The simulated DaemonSet controller: one pod per Ready node that matches the template's
 * nodeSelector / node affinity and whose taints are tolerated (DaemonSet pods tolerate the
 * not-ready, unreachable and unschedulable taints like on a real cluster, so cordoned nodes keep
 * theirs). Pods are bound directly to their node; pods on nodes that stop qualifying are removed;
 * Failed pods are replaced; RollingUpdate replaces outdated pods within maxUnavailable.
 */
import { templateHash } from '../names.ts';
import { R } from '../resource-registry.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { controllerOf, intOrPercent, isNodeReady, isPodActive, isPodReady, ownedPods, podFromTemplate } from './helpers.ts';

const AUTO_TOLERATIONS: Loose[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

function tolerated(tolerations: Loose[], taint: Loose): boolean {
  return tolerations.some((t) => (!t.effect || t.effect === taint.effect) && (t.operator === 'Exists' ? !t.key || t.key === taint.key : t.key === taint.key && (t.value ?? '') === (taint.value ?? '')));
}

/** Reconciles DaemonSets. */
export class DaemonSetController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.daemonsets) {
        if (ev.type !== 'DELETED') this.enqueue(ev.obj.metadata.namespace as string, ev.obj.metadata.name as string);
      } else if (ev.def === R.pods) {
        const ref = controllerOf(ev.obj) ?? controllerOf(ev.old);
        if (ref?.kind === 'DaemonSet') this.enqueue(ev.obj.metadata.namespace as string, ref.name);
      } else if (ev.def === R.nodes) {
        ctx.queue.add('ds:all', () => {
          for (const ds of ctx.store.list(R.daemonsets)) this.enqueue(ds.metadata.namespace as string, ds.metadata.name as string);
        });
      }
    });
  }

  private enqueue(ns: string, name: string): void {
    this.ctx.queue.add(`ds:${ns}/${name}`, () => this.reconcile(ns, name));
  }

  /**
   * Whether a daemon pod belongs on `node`. `existing` relaxes the taint check the way the real
   * controller does: a running daemon pod is only removed for an untolerated NoExecute taint.
   */
  private wantsNode(ds: KubeObject, node: KubeObject, existing: boolean): boolean {
    if (!isNodeReady(node)) return false;
    const spec = ds.spec?.template?.spec ?? {};
    const labels = node.metadata.labels ?? {};
    for (const [k, v] of Object.entries((spec.nodeSelector ?? {}) as Record<string, string>)) if (labels[k] !== v) return false;
    const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms as Loose[] | undefined;
    if (terms?.length) {
      const ok = terms.some((t) =>
        ((t.matchExpressions ?? []) as Loose[]).every((e) => {
          const v = labels[e.key];
          const vals: string[] = e.values ?? [];
          if (e.operator === 'In') return v !== undefined && vals.includes(v);
          if (e.operator === 'NotIn') return v === undefined || !vals.includes(v);
          if (e.operator === 'Exists') return v !== undefined;
          if (e.operator === 'DoesNotExist') return v === undefined;
          return true;
        }),
      );
      if (!ok) return false;
    }
    const tolerations = [...((spec.tolerations ?? []) as Loose[]), ...AUTO_TOLERATIONS];
    for (const taint of (node.spec?.taints ?? []) as Loose[]) {
      const blocks = taint.effect === 'NoExecute' || (taint.effect === 'NoSchedule' && !existing);
      if (blocks && !tolerated(tolerations, taint)) return false;
    }
    return true;
  }

  private reconcile(ns: string, name: string): void {
    const { store, api, events } = this.ctx;
    const ds = store.get(R.daemonsets, ns, name);
    if (!ds || ds.metadata.deletionTimestamp) return;
    const uid = ds.metadata.uid as string;
    const hash = templateHash(ds.spec?.template ?? {});
    const nodes = store.list(R.nodes);
    const byNode = new Map<string, KubeObject[]>();
    for (const p of ownedPods(store, uid)) {
      const n = p.spec?.nodeName ?? '';
      const l = byNode.get(n) ?? [];
      l.push(p);
      byNode.set(n, l);
    }
    const desired = new Set(
      nodes
        .filter((n) => this.wantsNode(ds, n, (byNode.get(n.metadata.name as string) ?? []).some(isPodActive)))
        .map((n) => n.metadata.name as string),
    );
    const del = (p: KubeObject) => {
      try {
        api.delete(R.pods, ns, p.metadata.name as string);
        events.record(ds, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata.name}`, 'daemonset-controller');
      } catch {
        // already gone
      }
    };
    for (const [nodeName, pods] of byNode) {
      if (!desired.has(nodeName)) {
        for (const p of pods) if (!p.metadata.deletionTimestamp) del(p);
        continue;
      }
      for (const p of pods) if (!p.metadata.deletionTimestamp && (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded')) del(p);
      const active = pods.filter(isPodActive);
      for (const extra of active.slice(1)) del(extra);
    }
    for (const nodeName of desired) {
      const pods = byNode.get(nodeName) ?? [];
      if (pods.some((p) => isPodActive(p) || p.metadata.deletionTimestamp)) continue;
      const pod = podFromTemplate(ds.spec.template, ns, ds, { generateName: `${name}-` }, {
        'controller-revision-hash': hash,
        'pod-template-generation': String(ds.metadata.generation ?? 1),
      });
      pod.spec.nodeName = nodeName;
      const tolerations = (pod.spec.tolerations ?? []) as Loose[];
      for (const t of AUTO_TOLERATIONS) if (!tolerations.some((x) => x.key === t.key && x.effect === t.effect)) tolerations.push({ ...t });
      pod.spec.tolerations = tolerations;
      const created = api.create(R.pods, ns, pod);
      events.record(ds, 'Normal', 'SuccessfulCreate', `Created pod: ${created.metadata.name}`, 'daemonset-controller');
    }
    // Rolling update within maxUnavailable.
    const pods = ownedPods(store, uid).filter((p) => desired.has(p.spec?.nodeName ?? ''));
    const active = pods.filter(isPodActive);
    if ((ds.spec?.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate') {
      const maxUnavailable = Math.max(1, intOrPercent(ds.spec?.updateStrategy?.rollingUpdate?.maxUnavailable, desired.size, false, 1));
      const unavailable = desired.size - active.filter(isPodReady).length;
      const outdated = active.filter((p) => p.metadata.labels?.['controller-revision-hash'] !== hash && isPodReady(p));
      let budget = maxUnavailable - unavailable;
      for (const p of outdated) {
        if (budget <= 0) break;
        del(p);
        budget--;
      }
    }
    const cur = store.get(R.daemonsets, ns, name);
    if (!cur) return;
    const all = ownedPods(store, uid).filter(isPodActive);
    const onDesired = all.filter((p) => desired.has(p.spec?.nodeName ?? ''));
    const ready = onDesired.filter(isPodReady).length;
    const status: Loose = {
      currentNumberScheduled: new Set(onDesired.map((p) => p.spec.nodeName)).size,
      desiredNumberScheduled: desired.size,
      numberMisscheduled: all.length - onDesired.length,
      numberReady: ready,
      observedGeneration: cur.metadata.generation,
      updatedNumberScheduled: onDesired.filter((p) => p.metadata.labels?.['controller-revision-hash'] === hash).length,
      numberAvailable: ready,
      numberUnavailable: desired.size - ready,
    };
    if (!status.numberAvailable) delete status.numberAvailable;
    if (!status.numberUnavailable) delete status.numberUnavailable;
    if (!status.updatedNumberScheduled) delete status.updatedNumberScheduled;
    api.writeStatus(R.daemonsets, cur, status);
  }
}
