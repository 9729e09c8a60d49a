/**
 * The kubeadm driver's heal of nodes: heal_start removes the failed masters (six ordered steps)
 * and workers from the cluster, heal_end joins their replacements.
 */
import { terminalError, vnfmError } from '../../../errors.ts';
import type { MgmtResult } from '../../mgmt-driver.ts';
import type { OwnerKey } from '../k8s-common/drain.ts';
import { allNodes, buildInventory, type ClusterNode, type Inventory } from '../k8s-common/inventory.ts';
import { isNodeReady, type KubeApi } from '../k8s-common/kube.ts';
import { findMember, leaderOf, type MemberHealth, memberIdHex } from './etcd.ts';
import { type DrainParams, drainParamsOf } from './params.ts';
import { checkRemoval, masterTargetsRefusal } from './quorum.ts';
import { etcdMembers, etcdMoveLeader, etcdRemoveMember, etcdView, haproxyAddServer, haproxyMaint, type HaproxyRemoval, haproxyRemoveServer, type Host, updateHostsBlock } from './remote.ts';
import { RunContext } from './run-context.ts';
import { clusterIpOf, connectAll, fallbackMaster, haproxySettings, hostsEntries, installEnv, metaResult, need, nodesMeta, previousMeta, record, removeNode, scriptBytes, targetNodes, waitOwners } from './hook-support.ts';
import { joinMaster, joinWorker, prefetchMaterial, waitEtcdHealthy } from './join.ts';

// ================================================================== heal_start (VNFCs)

function healTargets(rc: RunContext, inv: Inventory): { masters: ClusterNode[]; workers: ClusterNode[] } {
  const ctx = rc.ctx;
  let targets = targetNodes(rc, inv, ctx.targets, 'heal');
  if (targets.length === 0 && ctx.command.operation === 'HEAL' && ctx.command.scope === 'allVnfcs') targets = allNodes(inv);
  const masters = targets.filter((n) => n.role === 'master');
  const refusal = masterTargetsRefusal(inv.masters.length, masters.length);
  if (refusal) throw terminalError('VNFM_ERR_MGMT_REFUSED', refusal);
  return { masters, workers: targets.filter((n) => n.role === 'worker') };
}

export async function healStart(rc: RunContext): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const inv = buildInventory(ctx.previousInstance ?? ctx.instance, ctx.flavour, rc.params);
  const t = healTargets(rc, inv);
  const targetNames = new Set([...t.masters, ...t.workers].map((n) => n.name));
  const survivors = inv.masters.filter((m) => !targetNames.has(m.name));
  // preflight: the surviving masters answer (each one's HAProxy is edited), the API answers. A
  // master heal while another master is down is refused by the quorum gate, which speaks first.
  // A worker heal needs no master over SSH (the drain goes through the API) once the driver holds
  // the cluster's credentials.
  const sshToMasters = t.masters.length > 0 || !(await rc.hasCredentials());
  // whether each master target still answers (its control plane is stopped last), probed meanwhile
  const targetAnswers = new Map(t.masters.map((m) => [m.name, rc.answers(m).catch(() => false)]));
  rc.progress('preflight', undefined, `connecting to ${sshToMasters ? survivors.length : 0} node(s)`);
  const tried = sshToMasters ? await Promise.allSettled(survivors.map((n) => rc.host(n, false))) : [];
  const hosts = new Map<string, Host>();
  const unreachable: { node: ClusterNode; error: unknown }[] = [];
  tried.forEach((r, i) => {
    const node = survivors[i] as ClusterNode;
    if (r.status === 'fulfilled') hosts.set(node.name, r.value);
    else unreachable.push({ node, error: r.reason });
  });
  // Worker targets need no master over SSH (the drain goes through the API).
  if (unreachable.length > 0 && t.masters.length === 0) rc.ctx.log.warn({ unreachable: unreachable.map((u) => u.node.name) }, 'k8s-kubeadm: surviving masters unreachable over SSH (not needed for a worker heal)');
  if (unreachable.length > 0 && t.masters.length > 0) {
    const peerNode = survivors.find((n) => hosts.has(n.name));
    if (peerNode) {
      const view = await etcdView(hosts.get(peerNode.name) as Host, rc.cfg.etcdMaxRaftLag);
      const ids = t.masters.map((n) => findMember(view.members, n.name, n.nicIp)?.id).filter((x): x is string => x !== undefined);
      const gate = checkRemoval(view.withHealth, ids);
      if (!gate.ok) throw terminalError('VNFM_ERR_MGMT_REFUSED', gate.message);
    }
    throw (unreachable[0] as { error: unknown }).error;
  }
  const api = await rc.kube(fallbackMaster(rc, inv, survivors));
  const nodes = await api.list('v1', 'Node', undefined);
  const drain = drainParamsOf(ctx.params);
  const prev = previousMeta(ctx);

  if (t.masters.length > 0) {
    const ready = new Set(nodes.items.filter((n) => isNodeReady(n)).map((n) => n.metadata.name));
    if (!survivors.some((s) => ready.has(s.name))) {
      throw terminalError('VNFM_ERR_MGMT_REFUSED', `no surviving master has a Ready Node (${survivors.map((s) => s.name).join(', ')}): the control plane would not survive the heal`);
    }
    const peer = hosts.get((survivors[0] as ClusterNode).name) as Host;
    for (let i = 0; i < t.masters.length; i++) {
      const target = t.masters[i] as ClusterNode;
      await removeMaster(rc, api, peer, target, t.masters.slice(i), survivors, hosts, drain, i > 0, targetAnswers.get(target.name) ?? Promise.resolve(false));
    }
  }
  const owners: OwnerKey[] = [];
  for (const w of t.workers) {
    const r = await rc.step('remove-worker', w.name, () => removeNode(rc, api, w, drain));
    owners.push(...r.owners);
  }
  await waitOwners(rc, api, owners);
  const names = new Set(t.masters.map((m) => m.name));
  return metaResult(rc, { ...(prev ?? { vimName: rc.params.vimName }), nodes: nodesMeta(inv, prev, { notJoined: targetNames, dropMember: names }) });
}

/** The six ordered steps of a master's removal (spec §2.3 "Master heal", heal_start). */
async function removeMaster(
  rc: RunContext,
  api: KubeApi,
  peer: Host,
  target: ClusterNode,
  pending: readonly ClusterNode[],
  survivors: readonly ClusterNode[],
  hosts: Map<string, Host>,
  drain: DrainParams,
  afterAnother: boolean,
  answers: Promise<boolean>,
): Promise<void> {
  // 1. quorum gate, while the target is still a member (a retry after its removal skips it)
  const view = afterAnother ? await waitEtcdHealthy(rc, peer, rc.cfg.etcdWaitTimeoutMs) : await etcdView(peer, rc.cfg.etcdMaxRaftLag);
  const member = findMember(view.members, target.name, target.nicIp);
  if (member) {
    rc.progress('quorum-gate', target.name);
    const pendingIds = pending.map((n) => findMember(view.members, n.name, n.nicIp)?.id).filter((x): x is string => x !== undefined);
    const gate = checkRemoval(view.withHealth, pendingIds);
    if (!gate.ok) throw terminalError('VNFM_ERR_MGMT_REFUSED', gate.message);
  }
  // 2. leader transfer (decided on the view the gate just read)
  await rc.step('leader-transfer', target.name, async () => {
    const v = view;
    const m = findMember(v.members, target.name, target.nicIp);
    const leader = leaderOf(v.status);
    if (!m || leader !== m.id) return { moved: false };
    const pendingNames = new Set(pending.map((n) => n.name));
    const to = v.withHealth.find((x: MemberHealth) => x.healthy && !x.isLearner && x.id !== m.id && !pendingNames.has(x.name));
    if (!to) throw terminalError('VNFM_ERR_MGMT_REFUSED', `etcd leader ${target.name} cannot hand leadership over: no healthy surviving member`);
    const leaderUrl = need(m.clientUrls[0], `etcd leader ${target.name} has no client URL`);
    rc.progress('leader-transfer', target.name, `moving etcd leadership to ${to.name}`);
    await etcdMoveLeader(peer, leaderUrl, to.id);
    const after = leaderOf((await etcdView(peer, rc.cfg.etcdMaxRaftLag)).status);
    if (after === m.id) throw vnfmError('VNFM_ERR_MGMT_FAILED', `etcd leadership did not leave ${target.name}`, { retryable: true });
    return { moved: true, to: to.name };
  });
  // 3. out of every survivor's HAProxy at once through the runtime API (`maint`: no new connection
  // reaches the target from here on; the validated file follows in step 5)
  const settings = haproxySettings(rc.cfg);
  const maint = new Map<string, { text: string; runtime: HaproxyRemoval['runtime'] }>();
  await Promise.all(
    survivors.map(async (s) => {
      const h = hosts.get(s.name) as Host;
      const text = await h.read(settings.configPath, true);
      maint.set(s.name, { text, runtime: await haproxyMaint(h, settings, text, target.name) });
    }),
  );
  // 4. drain (control-plane static pods are mirror pods: skipped) and delete the Node, while the
  // target still runs (its pods leave gracefully)
  await rc.step('remove-node', target.name, async () => {
    const r = await removeNode(rc, api, target, drain);
    return { status: r.status };
  });
  // 5-7 side by side: the validated HAProxy files without the target (reloaded), the etcd member
  // removed by exact id (name AND peer URL; not found = done), and the old VM's kubelet/etcd
  // stopped if it still answers (probed since the preflight) so it cannot re-register before Heat
  // deletes it. Its member is stopped (`--skip-phases=remove-etcd-member`) or removed in either
  // order: quorum was checked with the target counted as lost, and etcd accepts removing a stopped
  // member.
  const haproxyFiles = survivors.map((s) =>
    rc.step('haproxy-remove', `${target.name}@${s.name}`, async () => {
      const before = maint.get(s.name);
      const r = await haproxyRemoveServer(hosts.get(s.name) as Host, settings, target.name, before);
      if (r.fileChanged) await record(rc, { kind: 'haproxy', survivor: s.name, server: target.name });
      return { ...r };
    }),
  );
  const memberRemoval = rc.step('etcd-remove', target.name, async () => {
    const m = findMember(await etcdMembers(peer), target.name, target.nicIp);
    if (!m) return { removed: false };
    const removed = await etcdRemoveMember(peer, m.id);
    if (removed) await record(rc, { kind: 'etcd-member', node: target.name, id: memberIdHex(m.id) });
    return { removed, id: memberIdHex(m.id) };
  });
  const stopOld = rc.step('stop-old', target.name, async () => {
    try {
      if (!(await answers)) return { stopped: false, reason: 'unreachable' };
      const h = await rc.host(target);
      const t0 = rc.clock.now();
      const r = await h.exec('kubeadm reset -f --skip-phases=remove-etcd-member || kubeadm reset -f', { sudo: true });
      rc.info('kubeadm reset finished', { step: 'reset', node: target.name, ms: rc.clock.now() - t0, code: r.code });
      if (r.code !== 0) rc.warn(`kubeadm reset on ${target.name} exited ${r.code}`);
      return { stopped: r.code === 0 };
    } catch (e) {
      rc.warn(`could not stop the old control plane of ${target.name}: ${(e as Error).message}`);
      return { stopped: false, reason: 'error' };
    }
  });
  const settled = await Promise.allSettled([...haproxyFiles, memberRemoval, stopOld]);
  const failed = settled.find((x) => x.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

// ================================================================== heal_end (VNFCs)

export async function healEnd(rc: RunContext): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const inv = buildInventory(ctx.instance, ctx.flavour, rc.params, { checkCollisions: true });
  const t = healTargets(rc, inv);
  const targets = [...t.masters, ...t.workers];
  const targetNames = new Set(targets.map((n) => n.name));
  const survivors = inv.masters.filter((m) => !targetNames.has(m.name));
  const all = allNodes(inv);
  const peerNode = need(survivors[0] ?? inv.masters.find((m) => !targetNames.has(m.name)), 'no surviving master to heal from');
  // the join material is read on the peer while the new VM(s) come up
  const material = targets.length > 0 ? prefetchMaterial(rc, rc.host(peerNode), t.masters.length > 0) : undefined;
  const hosts = await connectAll(rc, all, (n) => targetNames.has(n.name));
  const clusterIp = clusterIpOf(rc, inv);
  const api = await rc.kube(fallbackMaster(rc, inv, survivors));
  await api.list('v1', 'Node', undefined);
  const script = await scriptBytes(rc);
  const env = installEnv(rc.params, inv, clusterIp);
  const prev = previousMeta(ctx);
  const members: Record<string, string> = {};
  const peer = hosts.get(peerNode.name) as Host;
  // -m lists the survivors first (so the healed VM takes the "other master" path), then the targets
  const mastersCsv = [...survivors, ...t.masters].map((m) => m.nicIp).join(',');
  const joined: ClusterNode[] = [];
  for (const m of t.masters) {
    await rc.step('hosts', m.name, async () => ({ changed: await updateHostsBlock(hosts.get(m.name) as Host, rc.cfg.hostsPath, hostsEntries(inv)) }));
    const r = await rc.step('join-master', m.name, () => joinMaster(rc, api, m, { inv, clusterIp, peer, mastersCsv, script, env: { ...env, ha_flag: 'True' }, survivors, ...(material ? { material } : {}) }));
    if (r.memberId) members[m.name] = r.memberId;
    // back in the HAProxy of every master already serving (survivors and targets healed before), side by side
    await Promise.all([...survivors, ...joined].map((s) => rc.step('haproxy-add', `${m.name}@${s.name}`, async () => ({ ...(await haproxyAddServer(hosts.get(s.name) as Host, haproxySettings(rc.cfg), m.name, m.nicIp)) }))));
    joined.push(m);
  }
  for (const w of t.workers) {
    await rc.step('hosts', w.name, async () => ({ changed: await updateHostsBlock(hosts.get(w.name) as Host, rc.cfg.hostsPath, hostsEntries(inv)) }));
    await rc.step('join-worker', w.name, () => joinWorker(rc, api, w, { inv, clusterIp, master: peer, script, env, ...(material ? { material } : {}) }));
  }
  await Promise.all(all.filter((n) => !targetNames.has(n.name)).map((n) => rc.step('hosts', n.name, async () => ({ changed: await updateHostsBlock(hosts.get(n.name) as Host, rc.cfg.hostsPath, hostsEntries(inv)) }))));
  await rc.prunePins(all.map((n) => n.resourceId));
  return metaResult(rc, { ...(prev ?? { vimName: rc.params.vimName }), nodes: nodesMeta(inv, prev, { members }), clusterIp });
}
