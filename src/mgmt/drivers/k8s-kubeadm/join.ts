/**
 * Joining nodes to the kubeadm cluster (scale out, heal): join material from a master, the worker
 * join, the control-plane join and the waits for its etcd member, Node and static pods.
 */
import { terminalError, vnfmError } from '../../../errors.ts';
import { deleteNode, waitNodeReady } from '../k8s-common/drain.ts';
import type { ClusterNode, Inventory } from '../k8s-common/inventory.ts';
import { isNodeReady, type KubeApi, nodeRef } from '../k8s-common/kube.ts';
import { findMember, memberIdHex, membersWithPeerIp } from './etcd.ts';
import { checkAddition, checkRemoval } from './quorum.ts';
import { clusterCa, createJoinToken, etcdRemoveMember, type EtcdView, etcdView, type Host, runInstall, uploadCerts } from './remote.ts';
import { ADMIN_CONF, RunContext } from './run-context.ts';
import { installReporting, record } from './hook-support.ts';

// ================================================================== joins

interface JoinContext {
  inv: Inventory;
  clusterIp: string;
  script: Buffer;
  env: Record<string, string>;
  /** Join material fetched ahead (while the new VM boots); fetched at the join otherwise. */
  material?: () => Promise<JoinMaterial>;
}

interface JoinMaterial {
  token: string;
  caHash: string;
  certificateKey?: string;
}

/**
 * Join material from a master: token and CA hash (and, for a control-plane join, a certificate
 * key), read side by side on the master's one session.
 */
async function joinMaterial(rc: RunContext, master: Host, controlPlane: boolean): Promise<JoinMaterial> {
  const [token, { caHash }, certificateKey] = await Promise.all([createJoinToken(master), clusterCa(master), controlPlane ? uploadCerts(master) : Promise.resolve(undefined)]);
  rc.secret(token);
  if (certificateKey === undefined) return { token, caHash };
  rc.secret(certificateKey);
  return { token, caHash, certificateKey };
}

/**
 * Starts fetching join material now and hands the same result to every join of this hook run
 * (a bootstrap token lives 1 h, an uploaded certificate key 2 h). A failure is reported by the
 * join that asks for it, not as an unhandled rejection.
 */
export function prefetchMaterial(rc: RunContext, master: Promise<Host>, controlPlane: boolean): () => Promise<JoinMaterial> {
  const p = master.then((h) => joinMaterial(rc, h, controlPlane));
  p.catch(() => undefined);
  return () => p;
}

/** Marker files kubeadm writes on a node that joined (worker) or joined the control plane. */
const KUBELET_CONF = '/etc/kubernetes/kubelet.conf';

/**
 * Check first: whether the VM already joined (its kubeadm file exists) and its Node is Ready. A
 * Node of that name that the VM does not back (the replaced VM's) is deleted before the join
 * (kubeadm refuses to join over a Ready Node of the same name).
 */
async function joinState(rc: RunContext, api: KubeApi, h: Host, name: string, marker: string): Promise<{ vmJoined: boolean; ready: boolean }> {
  const vmJoined = await h.exists(marker);
  const n = await api.get(nodeRef(name));
  if (n && !vmJoined) {
    await deleteNode(api, name);
    rc.info(`stale Node ${name} (not backed by the new VM) deleted before the join`);
    return { vmJoined, ready: false };
  }
  return { vmJoined, ready: isNodeReady(n) };
}

export async function joinWorker(rc: RunContext, api: KubeApi, node: ClusterNode, j: JoinContext & { master: Host }): Promise<{ skipped: boolean }> {
  const h = await rc.host(node, true);
  const st = await joinState(rc, api, h, node.name, KUBELET_CONF);
  if (st.vmJoined && st.ready) return { skipped: true };
  if (!st.vmJoined) {
    const m = await (j.material ?? (() => joinMaterial(rc, j.master, false)))();
    rc.progress('join-worker', node.name, 'kubeadm join');
    await runInstall(h, {
      script: j.script,
      remotePath: rc.cfg.installScriptRemotePath,
      args: ['-w', node.nicIp, '-i', j.clusterIp],
      secrets: { token: m.token, caHash: m.caHash },
      env: j.env,
      ...installReporting(rc, 'join-worker', node.name),
    });
  }
  rc.progress('wait-ready', node.name);
  await waitNodeReady(api, node.name, { timeoutMs: rc.cfg.nodeReadyTimeoutMs, pollMs: rc.cfg.pollIntervalMs, clock: rc.clock, signal: rc.signal });
  return { skipped: st.vmJoined };
}

/** Polls the member list and health until every member is healthy (bounded); returns the last view. */
export async function waitEtcdHealthy(rc: RunContext, h: Host, timeoutMs: number): Promise<EtcdView> {
  const end = rc.clock.now() + timeoutMs;
  for (;;) {
    const v = await etcdView(h, rc.cfg.etcdMaxRaftLag);
    if (v.withHealth.every((m) => m.healthy) || rc.clock.now() >= end) return v;
    rc.progressDetail('etcd-health', h.name, `waiting for etcd members: ${v.withHealth.filter((m) => !m.healthy).map((m) => m.name || memberIdHex(m.id)).join(', ')}`);
    await rc.clock.sleep(rc.cfg.pollIntervalMs, rc.signal);
  }
}

/** Whether the survivors run the control plane as static (mirror) pods visible in the API. */
async function hasStaticPods(api: KubeApi, survivors: readonly ClusterNode[]): Promise<boolean> {
  for (const s of survivors) {
    if (await api.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'kube-system', name: `kube-apiserver-${s.name}` })) return true;
  }
  return false;
}

const CONTROL_PLANE_PODS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

/** Waits for a joined master: started voting member, all members healthy, Node Ready, static pods Running. */
async function waitControlPlane(rc: RunContext, api: KubeApi, peer: Host, node: ClusterNode, staticPods: boolean): Promise<string> {
  const timeoutMs = Math.max(rc.cfg.etcdWaitTimeoutMs, rc.cfg.nodeReadyTimeoutMs);
  const end = rc.clock.now() + timeoutMs;
  for (;;) {
    const missing: string[] = [];
    const v = await etcdView(peer, rc.cfg.etcdMaxRaftLag);
    const m = findMember(v.members, node.name, node.nicIp);
    if (!m) missing.push('etcd member not listed');
    else if (m.isLearner) missing.push('etcd member is still a learner');
    else if (m.clientUrls.length === 0) missing.push('etcd member not started');
    const sick = v.withHealth.filter((x) => !x.healthy);
    if (sick.length > 0) missing.push(`unhealthy etcd members: ${sick.map((x) => `${x.name || memberIdHex(x.id)} (${x.reason})`).join(', ')}`);
    if (!isNodeReady(await api.get(nodeRef(node.name)))) missing.push('Node not Ready');
    if (staticPods) {
      for (const c of CONTROL_PLANE_PODS) {
        const pod = await api.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'kube-system', name: `${c}-${node.name}` });
        if (pod?.status?.phase !== 'Running') missing.push(`${c} pod not Running`);
      }
    }
    if (missing.length === 0 && m) return memberIdHex(m.id);
    if (rc.clock.now() >= end) throw vnfmError('VNFM_ERR_MGMT_FAILED', `control-plane node ${node.name} not ready ${Math.round(timeoutMs / 1000)} s after joining: ${missing.join('; ')}`);
    rc.progressDetail('wait-control-plane', node.name, missing.join('; '));
    await rc.clock.sleep(rc.cfg.pollIntervalMs, rc.signal);
  }
}

/**
 * Joins a master: check first (Ready Node and a voting member of that name and peer URL = done),
 * stale Node / stale member (same peer URL) removed, quorum re-check, join material fetched right
 * before the join, install, wait for the control plane. Returns the member id (hex).
 */
export async function joinMaster(rc: RunContext, api: KubeApi, node: ClusterNode, j: JoinContext & { peer: Host; mastersCsv: string; survivors?: readonly ClusterNode[] }): Promise<{ skipped: boolean; memberId?: string }> {
  const h = await rc.host(node, true);
  const staticPods = await hasStaticPods(api, j.survivors ?? j.inv.masters.filter((m) => m.name !== node.name));
  const st = await joinState(rc, api, h, node.name, ADMIN_CONF);
  if (st.vmJoined) {
    // joined before (a retry): wait for the control plane instead of installing again
    rc.progress('wait-control-plane', node.name);
    return { skipped: true, memberId: await waitControlPlane(rc, api, j.peer, node, staticPods) };
  }
  // stale members holding the node's peer URL (kubeadm#2095: "Peer URLs already exists")
  let view = await waitEtcdHealthy(rc, j.peer, rc.cfg.etcdWaitTimeoutMs);
  for (const stale of membersWithPeerIp(view.members, node.nicIp)) {
    const gate = checkRemoval(view.withHealth, [stale.id]);
    if (!gate.ok) throw terminalError('VNFM_ERR_MGMT_REFUSED', gate.message);
    rc.progress('etcd-remove-stale', node.name, `removing stale etcd member ${memberIdHex(stale.id)}`);
    await etcdRemoveMember(j.peer, stale.id);
    await record(rc, { kind: 'etcd-member', node: node.name, id: memberIdHex(stale.id), stale: true });
    view = await waitEtcdHealthy(rc, j.peer, rc.cfg.etcdWaitTimeoutMs);
  }
  const gate = checkAddition(view.withHealth);
  if (!gate.ok) throw terminalError('VNFM_ERR_MGMT_REFUSED', gate.message);
  const m = await (j.material ?? (() => joinMaterial(rc, j.peer, true)))();
  if (!m.certificateKey) throw vnfmError('VNFM_ERR_MGMT_FAILED', `k8s-kubeadm: no certificate key for the control-plane join of ${node.name}`);
  rc.progress('join-master', node.name, 'kubeadm join --control-plane');
  await runInstall(h, {
    script: j.script,
    remotePath: rc.cfg.installScriptRemotePath,
    args: ['-m', j.mastersCsv, '-i', j.clusterIp, '-p', rc.params.masterNode.podCidr, '-a', rc.params.masterNode.clusterCidr],
    secrets: { token: m.token, caHash: m.caHash, ...(m.certificateKey ? { certificateKey: m.certificateKey } : {}) },
    env: j.env,
    ...installReporting(rc, 'join-master', node.name),
  });
  rc.progress('wait-control-plane', node.name);
  const memberId = await waitControlPlane(rc, api, j.peer, node, staticPods);
  return { skipped: false, memberId };
}
