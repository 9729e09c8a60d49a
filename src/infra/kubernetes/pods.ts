/**
 * What a pod means to the VNFM: which VDU it belongs to, whether it is Ready, whether it is on
 * its way out, and which stable identity it has (singleton Pod name, StatefulSet ordinal).
 *
 * Why one module: observe, the readiness waits and heal must agree exactly on "this pod is VNFC
 * x of VDU y and it is healthy"; a disagreement would make a wait end too early or never.
 */
import type { KubeObject } from './kube-client.ts';
import { INSTANCE_LABEL, VDU_LABEL, type WorkloadKind } from './manifests.ts';

/** A VDU's workload in the cluster. */
export interface VduWorkload {
  vduId: string;
  kind: WorkloadKind;
  name: string;
  namespace: string;
  apiVersion: string;
  /** StatefulSet claim template names. */
  claimTemplates?: string[];
}

/** True when the pod is being deleted (it no longer counts as a VNFC). */
export function isTerminating(pod: KubeObject): boolean {
  return typeof pod.metadata.deletionTimestamp === 'string' && pod.metadata.deletionTimestamp !== '';
}

/**
 * True when the pod counts as one of its controller's pods: not being deleted and not finished
 * (Failed/Succeeded pods linger until garbage-collected, but their controller already replaced them).
 */
export function isActive(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return !isTerminating(pod) && phase !== 'Failed' && phase !== 'Succeeded';
}

/** True when the pod runs, passes its readiness checks and is not being deleted. */
export function isPodReady(pod: KubeObject): boolean {
  if (isTerminating(pod)) return false;
  if (pod.status?.phase !== 'Running') return false;
  const conds: unknown = pod.status?.conditions;
  if (!Array.isArray(conds)) return false;
  return conds.some((c) => c !== null && typeof c === 'object' && (c as { type?: unknown }).type === 'Ready' && (c as { status?: unknown }).status === 'True');
}

/** The controller owner of a pod (kind and name), if any. */
function controllerOf(pod: KubeObject): { kind: string; name: string } | undefined {
  const refs = pod.metadata.ownerReferences ?? [];
  const c = refs.find((r) => r.controller === true) ?? refs[0];
  return c === undefined ? undefined : { kind: c.kind, name: c.name };
}

/**
 * The VDU workload a pod belongs to: by the `vnfm.io/vdu-id` label, else by its controller
 * (a Deployment's pods are owned by a ReplicaSet named `<deployment>-<pod-template-hash>`), else,
 * for a bare pod, by name.
 */
export function workloadOfPod(pod: KubeObject, workloads: readonly VduWorkload[]): VduWorkload | undefined {
  const vduId = pod.metadata.labels?.[VDU_LABEL];
  if (vduId !== undefined) {
    const w = workloads.find((x) => x.vduId === vduId);
    if (w !== undefined) return w;
  }
  const owner = controllerOf(pod);
  if (owner === undefined) return workloads.find((w) => w.kind === 'Pod' && w.name === pod.metadata.name);
  const direct = workloads.find((w) => w.kind === owner.kind && w.name === owner.name);
  if (direct !== undefined) return direct;
  if (owner.kind === 'ReplicaSet') {
    const hash = pod.metadata.labels?.['pod-template-hash'];
    const deployName = hash !== undefined && owner.name.endsWith(`-${hash}`) ? owner.name.slice(0, -hash.length - 1) : owner.name.replace(/-[a-z0-9]+$/, '');
    return workloads.find((w) => w.kind === 'Deployment' && w.name === deployName);
  }
  return undefined;
}

/** The ordinal of a StatefulSet pod (`<sts>-<n>`), or undefined. */
export function statefulSetOrdinal(podName: string, stsName: string): number | undefined {
  if (!podName.startsWith(`${stsName}-`)) return undefined;
  const tail = podName.slice(stsName.length + 1);
  return /^(0|[1-9][0-9]*)$/.test(tail) ? Number(tail) : undefined;
}

/**
 * The identity of a VNFC that survives replacement: `Pod/<name>` for a singleton Pod,
 * `StatefulSet/<sts>/<ordinal>` for a StatefulSet pod; undefined for pods of ReplicaSets,
 * Deployments and DaemonSets, whose replacements get new names.
 */
export function stableKeyOf(pod: KubeObject, w: VduWorkload): string | undefined {
  const name = pod.metadata.name ?? '';
  if (w.kind === 'Pod') return `Pod/${name}`;
  if (w.kind === 'StatefulSet') {
    const n = statefulSetOrdinal(name, w.name);
    return n === undefined ? undefined : `StatefulSet/${w.name}/${n}`;
  }
  return undefined;
}

/** True when the object carries the instance label of `instanceId`. */
export function ownedBy(obj: KubeObject, instanceId: string): boolean {
  return obj.metadata.labels?.[INSTANCE_LABEL] === instanceId;
}

/** Creation time in ms (0 when unknown), to order pods deterministically. */
export function createdAt(obj: KubeObject): number {
  const t = Date.parse(obj.metadata.creationTimestamp ?? '');
  return Number.isNaN(t) ? 0 : t;
}
