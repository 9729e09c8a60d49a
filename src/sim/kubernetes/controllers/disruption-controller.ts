/**
 * The simulated disruption controller and the PodDisruptionBudget check of the eviction
 * subresource, after the real `pkg/controller/disruption` and `pods/eviction`:
 *
 * - status: `expectedPods` (the pods' controllers' scale for a `maxUnavailable` or a percentage
 *   `minAvailable`, the number of selected pods for an integer `minAvailable`), `desiredHealthy`,
 *   `currentHealthy` (Ready pods that are neither terminating nor just evicted),
 *   `disruptionsAllowed`, `disruptedPods`, `observedGeneration` and the `DisruptionAllowed`
 *   condition; a PDB whose pods have a controller without a scale (a DaemonSet) fails its sync
 *   (`disruptionsAllowed` 0, reason `SyncFailed`);
 * - selectors of policy/v1: a null selector selects nothing, an empty one every pod of the
 *   namespace;
 * - eviction: terminal, pending or terminating pods are deleted without a check; more than one
 *   matching PDB is a 500; an unready pod is deleted when the budget is currently met (or the PDB
 *   says `unhealthyPodEvictionPolicy: AlwaysAllow`); otherwise a PDB with `disruptionsAllowed` 0
 *   answers 429 TooManyRequests naming the PDB in the cause, else the budget is decremented and
 *   the pod recorded in `disruptedPods`.
 *
 * The status is computed afresh at each eviction (not read from a possibly stale object), so a
 * PDB created right before an eviction already guards it.
 */
import { ApiError } from '../api-errors.ts';
import { nowTs } from '../names.ts';
import { mustResource, R } from '../resource-registry.ts';
import { fromLabelSelector, matchLabels } from '../selectors.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { controllerOf, isPodReady, setCondition } from './helpers.ts';

/** The PodDisruptionBudget resource (policy/v1). */
export const PDBS = mustResource('policy', 'poddisruptionbudgets');

/** How long an eviction's entry in `disruptedPods` keeps its pod out of `currentHealthy` (the real DeletionTimeout). */
const DELETION_TIMEOUT_MS = 2 * 60 * 1000;

/** Whether a PDB's selector (policy/v1 semantics) selects a pod. */
export function pdbSelects(pdb: KubeObject, pod: KubeObject | undefined): boolean {
  if (!pod || pod.metadata.namespace !== pdb.metadata.namespace) return false;
  const sel = pdb.spec?.selector;
  if (sel === undefined || sel === null) return false;
  return matchLabels(fromLabelSelector(sel), pod.metadata.labels);
}

function scaledValue(v: Loose, total: number): number {
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(String(v));
  return m ? Math.ceil((Number(m[1]) * total) / 100) : Number(v) || 0;
}

/** Keeps PodDisruptionBudget status current and decides evictions. */
export class DisruptionController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === PDBS) {
        if (ev.type !== 'DELETED') this.enqueue(ev.obj.metadata.namespace as string, ev.obj.metadata.name as string);
      } else if (ev.def === R.pods) {
        const ns = ev.obj.metadata.namespace as string;
        for (const pdb of ctx.store.list(PDBS, ns)) {
          if (pdbSelects(pdb, ev.obj) || pdbSelects(pdb, ev.old)) this.enqueue(ns, pdb.metadata.name as string);
        }
      } else if (ev.def === R.deployments || ev.def === R.replicasets || ev.def === R.statefulsets) {
        if (ev.type === 'MODIFIED' && ev.old?.spec?.replicas === ev.obj.spec?.replicas) return;
        const ns = ev.obj.metadata.namespace as string;
        for (const pdb of ctx.store.list(PDBS, ns)) this.enqueue(ns, pdb.metadata.name as string);
      }
    });
  }

  private enqueue(ns: string, name: string): void {
    this.ctx.queue.add(`pdb:${ns}/${name}`, () => this.sync(ns, name));
  }

  /** Recomputes and stores a PDB's status; returns the stored PDB (undefined when it is gone). */
  sync(ns: string, name: string, now = Date.now()): KubeObject | undefined {
    const pdb = this.ctx.store.get(PDBS, ns, name);
    if (!pdb) return undefined;
    return this.ctx.api.writeStatus(PDBS, pdb, this.status(pdb, now));
  }

  /** Sum of the scales of the selected pods' controllers; throws when a controller has no scale. */
  private expectedScale(pods: KubeObject[]): number {
    const { store } = this.ctx;
    const counted = new Map<string, number>();
    for (const pod of pods) {
      const ref = controllerOf(pod);
      if (!ref) continue; // an unmanaged pod counts for nothing (the real controller reports it)
      const owner = store.getByUid(ref.uid);
      if (!owner) continue;
      let scaleOwner = owner;
      if (owner.def === R.replicasets) {
        const dref = controllerOf(owner.obj);
        const dep = dref?.kind === 'Deployment' ? store.getByUid(dref.uid) : undefined;
        if (dep && dep.def === R.deployments) scaleOwner = dep;
      }
      const kind = scaleOwner.def;
      if (kind !== R.replicasets && kind !== R.deployments && kind !== R.statefulsets) {
        throw new Error(`${scaleOwner.def.kind}.${scaleOwner.def.group || 'core'} "${scaleOwner.obj.metadata.name}" does not implement the scale subresource`);
      }
      counted.set(scaleOwner.obj.metadata.uid as string, scaleOwner.obj.spec?.replicas ?? 1);
    }
    let n = 0;
    for (const v of counted.values()) n += v;
    return n;
  }

  /** The status the real disruption controller would write for `pdb` now. */
  status(pdb: KubeObject, now = Date.now()): Loose {
    const { store } = this.ctx;
    const pods = store.list(R.pods, pdb.metadata.namespace as string).filter((p) => pdbSelects(pdb, p));
    const generation = pdb.metadata.generation ?? 1;
    const spec = pdb.spec ?? {};
    let expected = 0;
    let desired = 0;
    try {
      if (spec.maxUnavailable !== undefined && spec.maxUnavailable !== null) {
        expected = this.expectedScale(pods);
        desired = Math.max(0, expected - scaledValue(spec.maxUnavailable, expected));
      } else if (spec.minAvailable !== undefined && spec.minAvailable !== null) {
        if (typeof spec.minAvailable === 'number') {
          desired = spec.minAvailable;
          expected = pods.length;
        } else {
          expected = this.expectedScale(pods);
          desired = scaledValue(spec.minAvailable, expected);
        }
      }
    } catch (e) {
      return {
        ...(pdb.status ?? {}),
        disruptionsAllowed: 0,
        observedGeneration: generation,
        conditions: setCondition(pdb.status?.conditions, { type: 'DisruptionAllowed', status: 'False', reason: 'SyncFailed', message: (e as Error).message, observedGeneration: generation }),
      };
    }
    const previous = (pdb.status?.disruptedPods ?? {}) as Record<string, string>;
    const disrupted: Record<string, string> = {};
    for (const p of pods) {
      const name = p.metadata.name as string;
      if (p.metadata.deletionTimestamp || previous[name] === undefined) continue;
      if (Date.parse(previous[name]) + DELETION_TIMEOUT_MS > now) disrupted[name] = previous[name];
    }
    const healthy = pods.filter((p) => !p.metadata.deletionTimestamp && disrupted[p.metadata.name as string] === undefined && isPodReady(p)).length;
    let allowed = healthy - desired;
    if (expected <= 0 || allowed <= 0) allowed = 0;
    const status: Loose = {
      observedGeneration: generation,
      ...(Object.keys(disrupted).length > 0 ? { disruptedPods: disrupted } : {}),
      disruptionsAllowed: allowed,
      currentHealthy: healthy,
      desiredHealthy: desired,
      expectedPods: expected,
      conditions: setCondition(pdb.status?.conditions, {
        type: 'DisruptionAllowed',
        status: allowed > 0 ? 'True' : 'False',
        reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
        message: '',
        observedGeneration: generation,
      }),
    };
    return status;
  }

  /**
   * The PDB check of `POST .../pods/<name>/eviction`: throws the API error the real server answers
   * with (429 naming the budget, 500 for several budgets), else records the disruption (unless a
   * dry run) so the caller may delete the pod.
   */
  admitEviction(pod: KubeObject, dryRun: boolean): void {
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || pod.metadata.deletionTimestamp) return;
    const pdbs = this.ctx.store.list(PDBS, pod.metadata.namespace as string).filter((p) => pdbSelects(p, pod));
    if (pdbs.length === 0) return;
    if (pdbs.length > 1) throw new ApiError(500, 'InternalError', 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
    const pdb = pdbs[0] as KubeObject;
    const now = Date.now();
    const status = this.status(pdb, now);
    if (!dryRun) this.ctx.api.writeStatus(PDBS, pdb, status);
    if (!isPodReady(pod)) {
      if (pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow') return;
      if (status.currentHealthy >= status.desiredHealthy && status.desiredHealthy > 0) return;
    }
    const name = pdb.metadata.name as string;
    if (status.disruptionsAllowed < 0) throw new ApiError(403, 'Forbidden', `poddisruptionbudgets.policy "${name}" is forbidden: pdb disruptions allowed is negative`, { name, group: 'policy', kind: 'poddisruptionbudgets' });
    if (status.disruptionsAllowed === 0) {
      const sync = ((status.conditions ?? []) as Loose[]).find((c) => c.type === 'DisruptionAllowed' && c.reason === 'SyncFailed');
      const why = sync
        ? `The disruption budget ${name} does not allow evicting pods currently because it failed sync: ${sync.message}`
        : `The disruption budget ${name} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`;
      throw new ApiError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", { causes: [{ reason: 'DisruptionBudget', message: why }] });
    }
    if (dryRun) return;
    const next: Loose = {
      ...status,
      disruptionsAllowed: status.disruptionsAllowed - 1,
      disruptedPods: { ...(status.disruptedPods ?? {}), [pod.metadata.name as string]: nowTs(now) },
    };
    if (next.disruptionsAllowed === 0) {
      next.conditions = setCondition(status.conditions, { type: 'DisruptionAllowed', status: 'False', reason: 'InsufficientPods', message: '', observedGeneration: status.observedGeneration });
    }
    const stored = this.ctx.store.get(PDBS, pdb.metadata.namespace as string, name);
    if (stored) this.ctx.api.writeStatus(PDBS, stored, next);
  }
}
