/**
 * Small predicates and builders shared by the workload controllers (pod readiness, ownership,
 * conditions, pods from templates), mirroring the helpers of the real controller manager.
 */
import type { ObjectStore } from '../object-store.ts';
import { clone } from '../patch.ts';
import { nowTs } from '../names.ts';
import { R } from '../resource-registry.ts';
import type { KubeObject, Loose, OwnerReference } from '../types.ts';

/** The controlling owner reference of an object, if any. */
export function controllerOf(obj: KubeObject | undefined): OwnerReference | undefined {
  return obj?.metadata.ownerReferences?.find((r) => r.controller === true);
}

/** An owner reference making `owner` the controller of a dependent. */
export function controllerRef(owner: KubeObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name as string,
    uid: owner.metadata.uid as string,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether a pod counts towards a controller's replicas (not terminating, not finished). */
export function isPodActive(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return !pod.metadata.deletionTimestamp && phase !== 'Failed' && phase !== 'Succeeded';
}

/** Whether a pod has condition Ready=True. */
export function isPodReady(pod: KubeObject): boolean {
  return (pod.status?.conditions ?? []).some((c: Loose) => c.type === 'Ready' && c.status === 'True');
}

/** Whether a node has condition Ready=True. */
export function isNodeReady(node: KubeObject | undefined): boolean {
  return !!node && (node.status?.conditions ?? []).some((c: Loose) => c.type === 'Ready' && c.status === 'True');
}

/** Pods whose controller is `ownerUid`. */
export function ownedPods(store: ObjectStore, ownerUid: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const d of store.dependentsOf(ownerUid)) {
    if (d.def === R.pods && controllerOf(d.obj)?.uid === ownerUid) out.push(d.obj);
  }
  return out;
}

/** Objects of a kind whose controller is `ownerUid`. */
export function owned(store: ObjectStore, ownerUid: string, kind: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const d of store.dependentsOf(ownerUid)) {
    if (d.def.kind === kind && controllerOf(d.obj)?.uid === ownerUid) out.push(d.obj);
  }
  return out;
}

/** A condition entry (timestamps kept when the status does not change). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  [k: string]: unknown;
}

/**
 * Returns `conds` with `c` set: lastTransitionTime moves only when the status flips, like the real
 * controllers. `withUpdateTime` adds `lastUpdateTime` (Deployment conditions carry it).
 */
export function setCondition(conds: Loose[] | undefined, c: Condition, withUpdateTime = false): Loose[] {
  const list = [...(conds ?? [])];
  const i = list.findIndex((x) => x.type === c.type);
  const prev = i >= 0 ? list[i] : undefined;
  const now = nowTs();
  const same = prev && prev.status === c.status && prev.reason === c.reason && prev.message === c.message;
  const next: Loose = { type: c.type, status: c.status };
  if (withUpdateTime) next.lastUpdateTime = same ? (prev.lastUpdateTime ?? now) : now;
  next.lastTransitionTime = prev && prev.status === c.status ? (prev.lastTransitionTime ?? now) : now;
  if (c.reason !== undefined) next.reason = c.reason;
  if (c.message !== undefined) next.message = c.message;
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

/** A pod manifest built from a workload's pod template. */
export function podFromTemplate(
  template: Loose,
  ns: string,
  owner: KubeObject,
  naming: { name?: string; generateName?: string },
  extraLabels: Record<string, string> = {},
): KubeObject {
  const tm = template?.metadata ?? {};
  const metadata: Loose = {
    ...naming,
    namespace: ns,
    labels: { ...(tm.labels ?? {}), ...extraLabels },
    ownerReferences: [controllerRef(owner)],
  };
  if (tm.annotations) metadata.annotations = clone(tm.annotations);
  if (tm.finalizers) metadata.finalizers = clone(tm.finalizers);
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: clone(template?.spec ?? {}) };
}

/** Resolves an int-or-percent field (maxSurge / maxUnavailable) against a total. */
export function intOrPercent(v: Loose, total: number, roundUp: boolean, dflt: number): number {
  if (v === undefined || v === null) return dflt;
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(String(v));
  if (m) {
    const x = (Number(m[1]) * total) / 100;
    return roundUp ? Math.ceil(x) : Math.floor(x);
  }
  const n = Number(v);
  return Number.isFinite(n) ? n : dflt;
}

/** `ns/name` key of an object. */
export function keyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}
