/**
 * The simulated ReplicaSet controller: keeps `spec.replicas` active pods (`<rs>-<5 chars>`), replacing
 * deleted, terminating and Failed pods at once (Failed pods stay listed, as on a real cluster),
 * removing surplus pods (unscheduled, pending and not-ready ones first) and maintaining status.
 */
import { R } from '../resource-registry.ts';
import type { KubeObject } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { controllerOf, isPodActive, isPodReady, ownedPods, podFromTemplate } from './helpers.ts';

function deletionRank(p: KubeObject): number[] {
  const phaseRank = p.status?.phase === 'Pending' ? 0 : p.status?.phase === 'Unknown' ? 1 : 2;
  return [p.spec?.nodeName ? 1 : 0, phaseRank, isPodReady(p) ? 1 : 0, -Date.parse(p.metadata.creationTimestamp ?? '')];
}

function compareRank(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

/** Reconciles ReplicaSets. */
export class ReplicaSetController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.replicasets) {
        if (ev.type !== 'DELETED') this.enqueue(ev.obj.metadata.namespace as string, ev.obj.metadata.name as string);
      } else if (ev.def === R.pods) {
        const ref = controllerOf(ev.obj) ?? controllerOf(ev.old);
        if (ref?.kind === 'ReplicaSet') this.enqueue(ev.obj.metadata.namespace as string, ref.name);
      }
    });
  }

  private enqueue(ns: string, name: string): void {
    this.ctx.queue.add(`rs:${ns}/${name}`, () => this.reconcile(ns, name));
  }

  private reconcile(ns: string, name: string): void {
    const { store, api, events } = this.ctx;
    const rs = store.get(R.replicasets, ns, name);
    if (!rs) return;
    const uid = rs.metadata.uid as string;
    let pods = ownedPods(store, uid);
    if (!rs.metadata.deletionTimestamp) {
      const active = pods.filter(isPodActive);
      const want = rs.spec?.replicas ?? 1;
      if (active.length < want) {
        const n = Math.min(want - active.length, 500);
        for (let i = 0; i < n; i++) {
          const pod = api.create(R.pods, ns, podFromTemplate(rs.spec.template, ns, rs, { generateName: `${name}-` }));
          events.record(rs, 'Normal', 'SuccessfulCreate', `Created pod: ${pod.metadata.name}`, 'replicaset-controller');
        }
      } else if (active.length > want) {
        const victims = [...active].sort((a, b) => compareRank(deletionRank(a), deletionRank(b))).slice(0, active.length - want);
        for (const v of victims) {
          try {
            api.delete(R.pods, ns, v.metadata.name as string);
            events.record(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${v.metadata.name}`, 'replicaset-controller');
          } catch {
            // already gone
          }
        }
      }
      pods = ownedPods(store, uid);
    }
    const active = pods.filter(isPodActive);
    const ready = active.filter(isPodReady).length;
    const cur = store.get(R.replicasets, ns, name);
    if (!cur) return;
    const status: Record<string, unknown> = {
      replicas: active.length,
      fullyLabeledReplicas: active.length,
      readyReplicas: ready,
      availableReplicas: ready,
      observedGeneration: cur.metadata.generation,
    };
    if (!ready) {
      delete status.readyReplicas;
      delete status.availableReplicas;
    }
    if (!active.length) delete status.fullyLabeledReplicas;
    api.writeStatus(R.replicasets, cur, status);
  }
}
