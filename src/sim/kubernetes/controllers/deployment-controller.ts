/**
 * The simulated Deployment controller: one ReplicaSet per pod template (`<deploy>-<pod-template-hash>`),
 * RollingUpdate (maxSurge / maxUnavailable, same arithmetic as the real controller) and Recreate
 * strategies, scaling, revision annotations, old ReplicaSet clean-up and the status/conditions that
 * `kubectl rollout status` waits on.
 */
import { templateHash } from '../names.ts';
import { clone } from '../patch.ts';
import { R } from '../resource-registry.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { controllerOf, controllerRef, intOrPercent, owned, setCondition } from './helpers.ts';

const REVISION = 'deployment.kubernetes.io/revision';

function revisionOf(rs: KubeObject): number {
  return Number(rs.metadata.annotations?.[REVISION] ?? 0) || 0;
}

function specReplicas(rs: KubeObject): number {
  return rs.spec?.replicas ?? 0;
}

function byAge(a: KubeObject, b: KubeObject): number {
  const d = Date.parse(a.metadata.creationTimestamp ?? '') - Date.parse(b.metadata.creationTimestamp ?? '');
  return d !== 0 ? d : revisionOf(a) - revisionOf(b);
}

/** Reconciles Deployments. */
export class DeploymentController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.deployments) {
        if (ev.type !== 'DELETED') this.enqueue(ev.obj.metadata.namespace as string, ev.obj.metadata.name as string);
      } else if (ev.def === R.replicasets) {
        const ref = controllerOf(ev.obj) ?? controllerOf(ev.old);
        if (ref?.kind === 'Deployment') this.enqueue(ev.obj.metadata.namespace as string, ref.name);
      }
    });
  }

  private enqueue(ns: string, name: string): void {
    this.ctx.queue.add(`deploy:${ns}/${name}`, () => this.reconcile(ns, name));
  }

  private limits(d: KubeObject): { maxSurge: number; maxUnavailable: number } {
    const want = d.spec?.replicas ?? 1;
    const ru = d.spec?.strategy?.rollingUpdate ?? {};
    const maxSurge = intOrPercent(ru.maxSurge, want, true, 1);
    let maxUnavailable = intOrPercent(ru.maxUnavailable, want, false, 0);
    if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
    return { maxSurge, maxUnavailable: Math.min(maxUnavailable, want) };
  }

  private scale(d: KubeObject, rs: KubeObject, to: number): void {
    const from = specReplicas(rs);
    if (from === to) return;
    const want = d.spec?.replicas ?? 1;
    const { maxSurge } = this.limits(d);
    this.ctx.api.mutate(R.replicasets, rs.metadata.namespace as string, rs.metadata.name as string, (x) => {
      x.spec.replicas = to;
      x.metadata.annotations = {
        ...(x.metadata.annotations ?? {}),
        'deployment.kubernetes.io/desired-replicas': String(want),
        'deployment.kubernetes.io/max-replicas': String(want + (d.spec?.strategy?.type === 'Recreate' ? 0 : maxSurge)),
      };
    });
    this.ctx.events.record(d, 'Normal', 'ScalingReplicaSet', `Scaled ${to > from ? 'up' : 'down'} replica set ${rs.metadata.name} from ${from} to ${to}`, 'deployment-controller');
  }

  private fresh(rs: KubeObject): KubeObject {
    return this.ctx.store.get(R.replicasets, rs.metadata.namespace as string, rs.metadata.name as string) ?? rs;
  }

  private reconcile(ns: string, name: string): void {
    const { store, api } = this.ctx;
    const d = store.get(R.deployments, ns, name);
    if (!d || d.metadata.deletionTimestamp) return;
    const uid = d.metadata.uid as string;
    const all = owned(store, uid, 'ReplicaSet');
    const tpl = d.spec?.template ?? {};
    const hash = templateHash(tpl, d.status?.collisionCount ?? 0);
    let newRS = all.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash);
    let olds = all.filter((rs) => rs !== newRS);
    const maxOldRevision = olds.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);
    const want: number = d.spec?.replicas ?? 1;
    const recreate = d.spec?.strategy?.type === 'Recreate';
    const { maxSurge, maxUnavailable } = this.limits(d);
    let createdNew = false;

    if (!d.spec?.paused) {
      if (!newRS) {
        const rsName = `${name}-${hash}`;
        const existing = store.get(R.replicasets, ns, rsName);
        if (existing) {
          if (!controllerOf(existing)) {
            newRS = api.mutate(R.replicasets, ns, rsName, (x) => {
              x.metadata.ownerReferences = [...(x.metadata.ownerReferences ?? []), controllerRef(d)];
            });
          } else {
            api.writeStatus(R.deployments, d, { ...(d.status ?? {}), collisionCount: (d.status?.collisionCount ?? 0) + 1 });
            return;
          }
        } else {
          let initial = 0;
          if (recreate) initial = olds.some((rs) => specReplicas(rs) > 0 || (rs.status?.replicas ?? 0) > 0) ? 0 : want;
          else {
            const total = all.reduce((s, rs) => s + specReplicas(rs), 0);
            initial = Math.max(0, Math.min(want + maxSurge - total, want));
            if (olds.every((rs) => specReplicas(rs) === 0)) initial = want;
          }
          const labels = { ...(tpl.metadata?.labels ?? {}), 'pod-template-hash': hash };
          const template = clone(tpl);
          template.metadata = { ...(template.metadata ?? {}), labels };
          const sel = d.spec.selector ?? {};
          const rsBody: Loose = {
            apiVersion: 'apps/v1',
            kind: 'ReplicaSet',
            metadata: {
              name: rsName,
              namespace: ns,
              labels,
              annotations: {
                'deployment.kubernetes.io/desired-replicas': String(want),
                'deployment.kubernetes.io/max-replicas': String(want + (recreate ? 0 : maxSurge)),
                [REVISION]: String(maxOldRevision + 1),
              },
              ownerReferences: [controllerRef(d)],
            },
            spec: {
              replicas: initial,
              minReadySeconds: d.spec.minReadySeconds ?? 0,
              selector: { ...clone(sel), matchLabels: { ...(sel.matchLabels ?? {}), 'pod-template-hash': hash } },
              template,
            },
          };
          newRS = api.create(R.replicasets, ns, rsBody);
          createdNew = true;
          if (initial > 0) this.ctx.events.record(d, 'Normal', 'ScalingReplicaSet', `Scaled up replica set ${rsName} from 0 to ${initial}`, 'deployment-controller');
        }
      } else if (revisionOf(newRS) <= maxOldRevision) {
        // Rolling back to an older template makes its ReplicaSet the newest revision again.
        newRS = api.mutate(R.replicasets, ns, newRS.metadata.name as string, (x) => {
          x.metadata.annotations = { ...(x.metadata.annotations ?? {}), [REVISION]: String(maxOldRevision + 1) };
        });
      }
      if (newRS) {
        olds = olds.map((rs) => this.fresh(rs));
        newRS = this.fresh(newRS);
        if (recreate) this.recreate(d, newRS, olds, want);
        else this.rolling(d, newRS, olds, want, maxSurge, maxUnavailable);
        this.cleanup(d, olds.map((rs) => this.fresh(rs)));
      }
    }

    // Status.
    const cur = store.get(R.deployments, ns, name);
    if (!cur) return;
    const rsNow = owned(store, uid, 'ReplicaSet');
    const nrs = newRS ? rsNow.find((rs) => rs.metadata.uid === newRS?.metadata.uid) : undefined;
    const sum = (f: (rs: KubeObject) => number) => rsNow.reduce((s, rs) => s + f(rs), 0);
    const replicas = sum((rs) => rs.status?.replicas ?? 0);
    const updated = nrs?.status?.replicas ?? 0;
    const ready = sum((rs) => rs.status?.readyReplicas ?? 0);
    const available = sum((rs) => rs.status?.availableReplicas ?? 0);
    const unavailable = Math.max(0, want - available);
    const status: Loose = { observedGeneration: cur.metadata.generation };
    if (replicas) status.replicas = replicas;
    if (updated) status.updatedReplicas = updated;
    if (ready) status.readyReplicas = ready;
    if (available) status.availableReplicas = available;
    if (unavailable) status.unavailableReplicas = unavailable;
    if (cur.status?.collisionCount) status.collisionCount = cur.status.collisionCount;
    let conds = cur.status?.conditions;
    conds = available >= want - maxUnavailable
      ? setCondition(conds, { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' }, true)
      : setCondition(conds, { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' }, true);
    if (nrs) {
      const complete = updated === want && replicas === want && available === want;
      const rsName = nrs.metadata.name as string;
      if (cur.spec?.paused) {
        conds = setCondition(conds, { type: 'Progressing', status: 'Unknown', reason: 'DeploymentPaused', message: 'Deployment is paused' }, true);
      } else if (complete) {
        conds = setCondition(conds, { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: `ReplicaSet "${rsName}" has successfully progressed.` }, true);
      } else if (createdNew && !cur.status?.conditions?.some((c: Loose) => c.type === 'Progressing')) {
        conds = setCondition(conds, { type: 'Progressing', status: 'True', reason: 'NewReplicaSetCreated', message: `Created new replica set "${rsName}"` }, true);
      } else {
        conds = setCondition(conds, { type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', message: `ReplicaSet "${rsName}" is progressing.` }, true);
      }
    }
    // Keep the real controller's order: Available first, then Progressing.
    status.conditions = [...conds].sort((a: Loose, b: Loose) => (a.type === 'Available' ? -1 : b.type === 'Available' ? 1 : 0));
    const rev = nrs?.metadata.annotations?.[REVISION];
    let target = cur;
    if (rev && cur.metadata.annotations?.[REVISION] !== rev) {
      target =
        api.mutate(R.deployments, ns, name, (x) => {
          x.metadata.annotations = { ...(x.metadata.annotations ?? {}), [REVISION]: rev };
        }) ?? cur;
    }
    api.writeStatus(R.deployments, target, status);
  }

  private recreate(d: KubeObject, newRS: KubeObject, olds: KubeObject[], want: number): void {
    let oldsRunning = false;
    for (const rs of olds) {
      if (specReplicas(rs) > 0) this.scale(d, rs, 0);
      if ((rs.status?.replicas ?? 0) > 0) oldsRunning = true;
      for (const p of owned(this.ctx.store, rs.metadata.uid as string, 'Pod')) if (p) oldsRunning = true;
    }
    if (!oldsRunning) this.scale(d, newRS, want);
  }

  private rolling(d: KubeObject, newRS: KubeObject, olds: KubeObject[], want: number, maxSurge: number, maxUnavailable: number): void {
    const activeOlds = olds.filter((rs) => specReplicas(rs) > 0);
    if (activeOlds.length === 0) {
      this.scale(d, newRS, want);
      return;
    }
    // Scale up the new ReplicaSet within maxSurge.
    const cur = specReplicas(newRS);
    if (cur > want) this.scale(d, newRS, want);
    else if (cur < want) {
      const total = specReplicas(newRS) + olds.reduce((s, rs) => s + specReplicas(rs), 0);
      const room = want + maxSurge - total;
      if (room > 0) this.scale(d, newRS, cur + Math.min(room, want - cur));
    }
    const nrs = this.fresh(newRS);
    let os = olds.map((rs) => this.fresh(rs)).sort(byAge);
    const allTotal = specReplicas(nrs) + os.reduce((s, rs) => s + specReplicas(rs), 0);
    const minAvailable = want - maxUnavailable;
    const newUnavailable = specReplicas(nrs) - (nrs.status?.availableReplicas ?? 0);
    let maxScaledDown = allTotal - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return;
    // First remove unhealthy old replicas, they do not count towards availability anyway.
    for (const rs of os) {
      if (maxScaledDown <= 0) break;
      const unhealthy = specReplicas(rs) - (rs.status?.availableReplicas ?? 0);
      if (unhealthy <= 0) continue;
      const down = Math.min(maxScaledDown, unhealthy);
      this.scale(d, rs, specReplicas(rs) - down);
      maxScaledDown -= down;
    }
    os = os.map((rs) => this.fresh(rs));
    const totalAvailable = (nrs.status?.availableReplicas ?? 0) + os.reduce((s, rs) => s + Math.min(rs.status?.availableReplicas ?? 0, specReplicas(rs)), 0);
    let scaleDown = totalAvailable - minAvailable;
    for (const rs of os) {
      if (scaleDown <= 0) break;
      const n = specReplicas(rs);
      if (n === 0) continue;
      const down = Math.min(n, scaleDown);
      this.scale(d, rs, n - down);
      scaleDown -= down;
    }
  }

  private cleanup(d: KubeObject, olds: KubeObject[]): void {
    const limit = d.spec?.revisionHistoryLimit ?? 10;
    const idle = olds.filter((rs) => specReplicas(rs) === 0 && (rs.status?.replicas ?? 0) === 0 && !rs.metadata.deletionTimestamp).sort((a, b) => revisionOf(a) - revisionOf(b));
    const excess = idle.length - limit;
    for (let i = 0; i < excess; i++) {
      const rs = idle[i] as KubeObject;
      try {
        this.ctx.api.delete(R.replicasets, rs.metadata.namespace as string, rs.metadata.name as string);
      } catch {
        // already gone
      }
    }
  }
}
