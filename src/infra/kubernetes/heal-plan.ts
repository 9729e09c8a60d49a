/**
 * The Kubernetes heal planner: pure functions (no I/O, no API client) that decide, from the
 * instance information, the heal request and the pods the API lists, what a heal does.
 *
 * VNFC heal ({@link planPodHeal}): per target, which pod it is and what to do with it:
 * - `delete`: the pod the VNFM knows (same name and, when known, same uid) is deleted (exactly
 *   that incarnation) and its controller re-creates it; a singleton Pod is then re-created from
 *   the package manifest. A pod already being deleted needs no delete call (`deleted`).
 * - drift: the known pod is gone (Kubernetes replaced it outside any operation): the target is its
 *   replacement, a pod of the same VDU the VNFM does not know yet (oldest first, each claimed by
 *   one target). A replacement already Ready is `accept`ed (no needless restart), one not Ready
 *   is deleted like any target; with none at all the heal `wait`s for the controller, or
 *   `recreate`s a singleton Pod.
 * - a target whose VDU has no workload in the CNF is an error.
 * Then {@link forceOnDownNodes} (pods on a node that is not Ready are deleted with grace 0), and
 * {@link expectedPods} (the Ready count each affected VDU must reach again).
 *
 * Whole-CNF heal ({@link planEntireHeal}): the pods to see gone and the replica counts to
 * re-create the scalable VDUs with (the operation's target, else the live count).
 */
import { vnfmError } from '../../errors.ts';
import type { VnfcResourceInfo } from '../../model/vnf-instance.ts';
import type { KubeObject } from './kube-client.ts';
import { SCALABLE_KINDS, type WorkloadKind } from './manifests.ts';
import { createdAt, isActive, isPodReady, isTerminating, type VduWorkload, workloadOfPod } from './pods.ts';
import type { VduExpectation } from './readiness.ts';

/** What heal does with one target. */
export type HealAction = 'delete' | 'accept' | 'wait' | 'recreate';

/** Persisted progress of one heal target. */
export interface HealTargetState {
  vduId: string;
  kind: WorkloadKind;
  /** The pod name the request named. */
  requested: string;
  /** The pod actually healed (differs from `requested` after drift). */
  podName?: string;
  podUid?: string;
  action: HealAction;
  /** The pod's node is not Ready: delete with grace 0 (its kubelet cannot confirm a graceful stop). */
  force?: boolean;
  deleted?: boolean;
  recreated?: boolean;
}

/** Persisted progress of a VNFC heal. */
export interface HealState {
  targets: HealTargetState[];
  /** Pods wanted per affected VDU (scalable kinds: the live `spec.replicas`). */
  expected: Record<string, number>;
}

/** Persisted progress of a whole-CNF heal. */
export interface EntireHealState {
  phase: 'delete' | 'create' | 'wait';
  oldPodUids: string[];
  counts: Record<string, number>;
}

/** What {@link planPodHeal} reads. */
export interface PodHealInput {
  /** The heal targets (their vnfcResourceInfo), in request order. */
  targets: readonly VnfcResourceInfo[];
  /** The CNF's VDU workloads. */
  workloads: readonly VduWorkload[];
  /** The instance's pods as the API lists them now. */
  pods: readonly KubeObject[];
  /** Resource ids (pod names) of every VNFC the instance information knows. */
  knownResourceIds: ReadonlySet<string>;
}

/** A decision of {@link planPodHeal} worth a log line. */
export type PodHealNote = { kind: 'accepted'; requested: string; replacement: string } | { kind: 'missing'; requested: string; vduId: string };

/**
 * Decides, once per heal, which pod each target is and what to do with it (see the module
 * comment on drift). Throws `VNFM_ERR_VIM_FAILED` for a target whose VDU has no workload.
 */
export function planPodHeal(input: PodHealInput): { targets: HealTargetState[]; notes: PodHealNote[] } {
  const { pods, workloads, knownResourceIds: known } = input;
  const claimed = new Set<string>();
  const out: HealTargetState[] = [];
  const notes: PodHealNote[] = [];
  const vduOf = (p: KubeObject): string | undefined => workloadOfPod(p, workloads)?.vduId;
  for (const r of input.targets) {
    const w = workloads.find((x) => x.vduId === r.vduId);
    if (w === undefined) throw vnfmError('VNFM_ERR_VIM_FAILED', `VNFC ${r.id}: VDU ${r.vduId} has no workload in the CNF`);
    const requested = r.computeResource.resourceId;
    const md = r.metadata;
    const knownUid = md !== null && typeof md === 'object' && !Array.isArray(md) && typeof md.uid === 'string' ? md.uid : undefined;
    const byName = pods.find((p) => p.metadata.name === requested && vduOf(p) === w.vduId);
    const base = { vduId: w.vduId, kind: w.kind, requested };
    let chosen: KubeObject | undefined;
    if (byName !== undefined && (knownUid === undefined || byName.metadata.uid === knownUid)) {
      chosen = byName;
    } else {
      // The pod the VNFM knew is gone: Kubernetes replaced it (same name for Pods/StatefulSets,
      // a new name otherwise). Heal the replacement only if it is not healthy.
      const candidates = pods
        .filter((p) => vduOf(p) === w.vduId && isActive(p) && !claimed.has(p.metadata.name ?? '') && !known.has(p.metadata.name ?? ''))
        .sort((a, b) => createdAt(a) - createdAt(b) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
      const replacement = byName ?? candidates[0];
      if (replacement !== undefined && isPodReady(replacement)) {
        claimed.add(replacement.metadata.name ?? '');
        out.push({ ...base, podName: replacement.metadata.name as string, ...(replacement.metadata.uid ? { podUid: replacement.metadata.uid } : {}), action: 'accept' });
        notes.push({ kind: 'accepted', requested, replacement: replacement.metadata.name as string });
        continue;
      }
      chosen = replacement;
    }
    if (chosen === undefined) {
      out.push({ ...base, action: w.kind === 'Pod' ? 'recreate' : 'wait' });
      notes.push({ kind: 'missing', requested, vduId: w.vduId });
      continue;
    }
    claimed.add(chosen.metadata.name ?? '');
    out.push({
      ...base,
      podName: chosen.metadata.name as string,
      ...(chosen.metadata.uid ? { podUid: chosen.metadata.uid } : {}),
      action: 'delete',
      // A pod already being deleted needs no delete call, only its replacement.
      ...(isTerminating(chosen) ? { deleted: true } : {}),
    });
  }
  return { targets: out, notes };
}

/** The pods the plan deletes (their node's readiness decides the grace period). */
export function podsToDelete(targets: readonly HealTargetState[], pods: readonly KubeObject[]): KubeObject[] {
  return pods.filter((p) => targets.some((t) => t.action === 'delete' && t.podUid === p.metadata.uid));
}

/** Marks `force` on every deleted target whose pod runs on a node in `downNodes` (not Ready). */
export function forceOnDownNodes(targets: HealTargetState[], pods: readonly KubeObject[], downNodes: ReadonlySet<string>): void {
  for (const t of targets) {
    const node = pods.find((p) => p.metadata.uid === t.podUid)?.spec?.nodeName;
    if (t.action === 'delete' && typeof node === 'string' && downNodes.has(node)) t.force = true;
  }
}

/** The VDUs a heal touches, in target order. */
export function affectedVdus(targets: readonly HealTargetState[]): string[] {
  return [...new Set(targets.map((t) => t.vduId))];
}

/**
 * The Ready pods each affected VDU must have again: 1 for a singleton Pod; for a scalable kind
 * the live `spec.replicas` (`live`: the workload as read now, by VDU), else the operation's
 * target count, else 1; none for a DaemonSet (its size follows the nodes). Throws
 * `VNFM_ERR_VIM_FAILED` when an affected VDU's workload is gone (its pods cannot come back).
 */
export function expectedPods(
  targets: readonly HealTargetState[],
  workloads: readonly VduWorkload[],
  live: ReadonlyMap<string, KubeObject | undefined>,
  targetVduCounts: Readonly<Record<string, number>>,
  describeWorkload: (w: VduWorkload) => string,
): Record<string, number> {
  const expected: Record<string, number> = {};
  for (const vduId of affectedVdus(targets)) {
    const w = workloads.find((x) => x.vduId === vduId) as VduWorkload;
    if (w.kind === 'Pod') {
      expected[vduId] = 1;
      continue;
    }
    const o = live.get(vduId);
    if (o === undefined || isTerminating(o)) {
      throw vnfmError('VNFM_ERR_VIM_FAILED', `VDU ${vduId}: ${describeWorkload(w)} does not exist any more, so its pods cannot come back; heal the whole VNF to re-create it`);
    }
    if (SCALABLE_KINDS.includes(w.kind)) {
      const n = o.spec?.replicas;
      expected[vduId] = typeof n === 'number' ? n : (targetVduCounts[vduId] ?? 1);
    }
  }
  return expected;
}

/** The singleton-Pod targets still to re-create (deleted or missing, not re-created yet). */
export function singletonsToRecreate(h: HealState): HealTargetState[] {
  return h.targets.filter((t) => t.kind === 'Pod' && (t.action === 'delete' || t.action === 'recreate') && !t.recreated);
}

/** What the end of a VNFC heal waits for: each affected VDU back at its count, the deleted pods gone. */
export function healWaitPlan(h: HealState, workloads: readonly VduWorkload[]): { expectations: VduExpectation[]; goneUids: Set<string> } {
  const expectations: VduExpectation[] = affectedVdus(h.targets).map((vduId) => {
    const w = workloads.find((x) => x.vduId === vduId) as VduWorkload;
    const n = h.expected[vduId];
    return n === undefined || w.kind === 'DaemonSet' ? { workload: w } : { workload: w, expected: n };
  });
  const goneUids = new Set(h.targets.filter((t) => t.action === 'delete' && t.podUid !== undefined).map((t) => t.podUid as string));
  return { expectations, goneUids };
}

/** The scalable VDUs whose replica count is not in the operation's targets (their live count is read). */
export function countsToRead(workloads: readonly VduWorkload[], targetVduCounts: Readonly<Record<string, number>>): VduWorkload[] {
  return workloads.filter((w) => SCALABLE_KINDS.includes(w.kind) && targetVduCounts[w.vduId] === undefined);
}

/**
 * The plan of a whole-CNF heal: the uids of the pods of now (the heal ends when they are gone)
 * and the replicas of each scalable VDU (the operation's target, else `liveReplicas`).
 */
export function planEntireHeal(
  workloads: readonly VduWorkload[],
  pods: readonly KubeObject[],
  targetVduCounts: Readonly<Record<string, number>>,
  liveReplicas: ReadonlyMap<string, number>,
): EntireHealState {
  const counts: Record<string, number> = {};
  for (const w of workloads) {
    if (!SCALABLE_KINDS.includes(w.kind)) continue;
    const target = targetVduCounts[w.vduId];
    if (target !== undefined) counts[w.vduId] = target;
    else {
      const live = liveReplicas.get(w.vduId);
      if (live !== undefined) counts[w.vduId] = live;
    }
  }
  return { phase: 'delete', oldPodUids: pods.map((p) => p.metadata.uid ?? '').filter((u) => u !== ''), counts };
}
