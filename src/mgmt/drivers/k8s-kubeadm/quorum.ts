/**
 * The etcd quorum gate of a master heal (spec §2.3 "Master heal" step 1, the Cluster API
 * KubeadmControlPlane remediation rule of §4.1):
 *
 * - removal: project the member list without the targets; V = voting members left, U = unhealthy
 *   among them, Q = floor(V/2)+1; allowed only when V - U >= Q and no learner is present;
 * - addition (re-join in heal_end): the new member is assumed unhealthy (worst case) unless the
 *   cluster has at most one member; same test, no learner present;
 * - one heal op accepts at most floor((masters-1)/2) master targets, and never a single master.
 *
 * Refusals name the members that would break quorum.
 */

/** One etcd member with its observed health. */
export interface GateMember {
  /** Member id (decimal string of the uint64). */
  id: string;
  /** Member name (the node name with kubeadm); '' for a learner that has not started. */
  name: string;
  isLearner: boolean;
  healthy: boolean;
  /** Why it is unhealthy (for messages). */
  reason?: string;
}

/** Verdict of the gate. */
export type GateResult = { ok: true; voting: number; unhealthy: number; quorum: number } | { ok: false; voting: number; unhealthy: number; quorum: number; message: string };

function label(m: GateMember): string {
  return m.name !== '' ? m.name : `member ${BigInt(m.id).toString(16)}`;
}

function unhealthyList(ms: GateMember[]): string {
  return ms.map((m) => `${label(m)}${m.reason ? ` (${m.reason})` : ''}`).join(', ');
}

/** Q = floor(V/2)+1. */
export function quorumOf(voting: number): number {
  return Math.floor(voting / 2) + 1;
}

/** The most master targets one heal op may carry: floor((masters-1)/2). */
export function maxMasterTargets(masters: number): number {
  return Math.max(0, Math.floor((masters - 1) / 2));
}

/**
 * Why a set of master targets is refused before anything runs (undefined when acceptable):
 * a single master (Tacker's wording), or more targets than the cluster can lose at once.
 */
export function masterTargetsRefusal(masters: number, targets: number): string | undefined {
  if (targets === 0) return undefined;
  if (masters <= 1) return 'The number of Master-Nodes is 1 or less. If you want to heal, please respawn.';
  const max = maxMasterTargets(masters);
  if (targets > max) {
    return max === 0
      ? `a cluster of ${masters} masters cannot lose a member without losing etcd quorum: no master can be healed by VNFC (heal the whole VNF instead)`
      : `a cluster of ${masters} masters keeps etcd quorum with at most ${max} master(s) replaced at a time; ${targets} master targets were requested (send one heal per master)`;
  }
  return undefined;
}

/** The removal gate: may the members `targetIds` be removed now? */
export function checkRemoval(members: readonly GateMember[], targetIds: readonly string[]): GateResult {
  const targets = new Set(targetIds);
  const learners = members.filter((m) => m.isLearner);
  const left = members.filter((m) => !targets.has(m.id) && !m.isLearner);
  const unhealthy = left.filter((m) => !m.healthy);
  const V = left.length;
  const U = unhealthy.length;
  const Q = quorumOf(V);
  const removed = members.filter((m) => targets.has(m.id)).map(label);
  const what = removed.length > 0 ? `removing ${removed.join(', ')}` : 'the change';
  if (learners.length > 0) {
    return { ok: false, voting: V, unhealthy: U, quorum: Q, message: `etcd quorum gate: ${what} refused while a learner member is present (${learners.map(label).join(', ')}); wait until it is promoted or removed` };
  }
  if (V === 0) return { ok: false, voting: 0, unhealthy: 0, quorum: 1, message: `etcd quorum gate: ${what} would leave no voting member` };
  if (V - U < Q) {
    return {
      ok: false,
      voting: V,
      unhealthy: U,
      quorum: Q,
      message: `etcd quorum gate: ${what} would leave ${V} voting member(s) of which ${U} unhealthy (${unhealthyList(unhealthy)}); quorum needs ${Q} healthy: refused`,
    };
  }
  return { ok: true, voting: V, unhealthy: U, quorum: Q };
}

/**
 * The addition gate (before a control-plane join): the joining member counts as unhealthy unless
 * the cluster has at most one member; no learner may be present.
 */
export function checkAddition(members: readonly GateMember[]): GateResult {
  const learners = members.filter((m) => m.isLearner);
  const voting = members.filter((m) => !m.isLearner);
  const unhealthy = voting.filter((m) => !m.healthy);
  const worst = members.length > 1 ? 1 : 0;
  const V = voting.length + 1;
  const U = unhealthy.length + worst;
  const Q = quorumOf(V);
  if (learners.length > 0) {
    return { ok: false, voting: V, unhealthy: U, quorum: Q, message: `etcd quorum gate: a new member cannot join while a learner member is present (${learners.map(label).join(', ')})` };
  }
  if (V - U < Q) {
    return {
      ok: false,
      voting: V,
      unhealthy: U,
      quorum: Q,
      message: `etcd quorum gate: adding a member to ${voting.length} voting member(s) of which ${unhealthy.length} unhealthy (${unhealthyList(unhealthy)}) could lose quorum (needs ${Q} healthy of ${V}): refused`,
    };
  }
  return { ok: true, voting: V, unhealthy: U, quorum: Q };
}
