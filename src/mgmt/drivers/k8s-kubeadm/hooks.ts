/**
 * The hooks of the `k8s-kubeadm` driver (spec §2.4), each a list of journaled steps
 * (`ctx.step`: a retried op resumes at the first unfinished step), each step checking first
 * whether its effect is already there:
 *
 * - instantiate_end: hosts blocks, main master install, admin token, other masters, workers,
 *   etcd member ids, VIM registration; result: the vimConnectionInfo entry and
 *   `metadata.k8sCluster`;
 * - terminate_end: delete the VIM, drop its vimConnectionInfo entry and the sealed state;
 * - scale_start (SCALE_IN): drain (or dead-node path) and delete each removed worker's Node,
 *   wait for the drained pods' owners, hosts blocks of the survivors;
 * - scale_end (SCALE_OUT): join each added worker (fresh token / CA hash), wait Ready, hosts
 *   blocks everywhere;
 * - heal_start (VNFCs): workers drained (or dead path) and deleted; masters by the ordered steps
 *   of §2.3 (quorum gate, leader transfer, HAProxy on every survivor, drain + delete Node, etcd
 *   member remove by exact id, stop the old VM's kubelet/etcd if it still answers);
 * - heal_end (VNFCs): per target, one at a time: join material right before the join, quorum
 *   re-check, stale member removed, install/join, wait for a healthy voting member and a Ready
 *   Node, the master back in every peer's HAProxy (validated, reloaded, verified);
 * - whole heal: heal_start = delete the VIM and its entry; heal_end = instantiate_end with the
 *   stored instantiate parameters (and the request's overrides).
 */
import { isIP } from 'node:net';
import { terminalError, vnfmError } from '../../../errors.ts';
import type { MgmtContext, MgmtResult, MgmtTarget } from '../../mgmt-driver.ts';
import type { KubeadmDriverConfig } from './config.ts';
import { deleteNode, drainNode, isDeadNode, type OwnerKey, waitNodeReady, waitOwnersReady } from '../k8s-common/drain.ts';
import { findMember, leaderOf, type MemberHealth, memberIdHex, membersWithPeerIp } from './etcd.ts';
import { allNodes, buildInventory, type ClusterNode, clusterAddress, findNode, floatingApiHost, type Inventory } from '../k8s-common/inventory.ts';
import { isNodeReady, type KubeApi, type KubeObject, nodeRef, readyCondition } from '../k8s-common/kube.ts';
import { type DrainParams, drainParamsOf, type EffectiveParams, effectiveInstallationParam, installationParamOf, type KubeadmParams, parseKubeadmParams } from './params.ts';
import { checkAddition, checkRemoval, masterTargetsRefusal } from './quorum.ts';
import {
  clusterCa,
  createJoinToken,
  etcdMembers,
  etcdMoveLeader,
  etcdRemoveMember,
  type EtcdView,
  etcdView,
  type HaproxySettings,
  haproxyAddServer,
  haproxyMaint,
  type HaproxyRemoval,
  haproxyRemoveServer,
  type Host,
  isSensitiveOutput,
  requireInstallMarkers,
  runInstall,
  updateHostsBlock,
  uploadCerts,
} from './remote.ts';
import { deleteClusterVims, previousClusterMeta, registerClusterVim } from '../k8s-common/vim.ts';
import { ADMIN_CONF, RunContext } from './run-context.ts';
import { KUBERNETES_VIM_TYPE } from '../../../infra/kubernetes/vim-type.ts';

/** `instantiatedVnfInfo.metadata.k8sCluster`, per node. */
export interface K8sNodeMeta {
  role: 'master' | 'worker';
  vnfcInfoId?: string;
  vnfcResourceInfoId: string;
  nicIp: string;
  sshIp: string;
  /** etcd member id (hex, as etcdctl prints it), masters only. */
  etcdMemberId?: string;
  joined: boolean;
}

/** `instantiatedVnfInfo.metadata.k8sCluster`. */
export interface K8sClusterMeta {
  nodes: Record<string, K8sNodeMeta>;
  vimId?: string;
  vimName: string;
  apiUrl?: string;
  clusterIp?: string;
  /** The op occurrence that last changed the stored credentials. */
  credentialsVersion?: string;
}

type Obj = Record<string, unknown>;

function previousMeta(ctx: MgmtContext): K8sClusterMeta | undefined {
  return previousClusterMeta<K8sClusterMeta>(ctx);
}

/** The parameters of a hook (instantiate: the request; later hooks: stored + overrides). */
export function paramsFor(ctx: MgmtContext): EffectiveParams {
  if (ctx.hook.startsWith('instantiate_')) {
    const ap = ctx.command.operation === 'INSTANTIATE' ? ctx.command.additionalParams : ctx.params;
    return { param: installationParamOf(ap ?? ctx.params), overridden: [] };
  }
  return effectiveInstallationParam(ctx.instantiateParams, ctx.params);
}

/** Runs one hook. */
export async function runKubeadmHook(rc: RunContext, eff: EffectiveParams): Promise<MgmtResult | undefined> {
  const ctx = rc.ctx;
  for (const k of rc.params.ignored) rc.warn(`parameter ${k} is accepted but not acted on by the k8s-kubeadm driver`);
  const cmd = ctx.command;
  let result: MgmtResult | undefined;
  switch (ctx.hook) {
    case 'instantiate_end':
      result = await instantiateEnd(rc);
      break;
    case 'terminate_end':
      result = await removeVim(rc, 'terminate');
      break;
    case 'scale_start':
      if (cmd.operation === 'SCALE' && cmd.type === 'SCALE_IN') result = await scaleIn(rc);
      break;
    case 'scale_end':
      if (cmd.operation === 'SCALE' && cmd.type === 'SCALE_OUT') result = await scaleOut(rc);
      break;
    case 'heal_start':
      if (cmd.operation === 'HEAL') result = cmd.scope === 'entire' ? await removeVim(rc, 'heal') : await healStart(rc);
      break;
    case 'heal_end':
      if (cmd.operation === 'HEAL') result = cmd.scope === 'entire' ? await instantiateEnd(rc) : await healEnd(rc);
      break;
    default:
      return undefined;
  }
  // credential overrides that worked: persisted by the engine only if the whole operation completes
  if (result && eff.persist && ctx.hook !== 'terminate_end') {
    result.instantiateParams = eff.persist;
    const k = result.vnfInfoMetadata?.k8sCluster as K8sClusterMeta | null | undefined;
    if (k) k.credentialsVersion = ctx.opOcc.id;
  }
  return result;
}

// ================================================================== shared pieces

function haproxySettings(cfg: KubeadmDriverConfig): HaproxySettings {
  return { configPath: cfg.haproxyConfigPath, backend: cfg.haproxyBackend, reloadCommand: cfg.haproxyReloadCommand, port: cfg.apiServerPort };
}

function hostsEntries(inv: Inventory): { ip: string; name: string }[] {
  return allNodes(inv).map((n) => ({ ip: n.nicIp, name: n.name }));
}

function clusterIpOf(rc: RunContext, inv: Inventory): string {
  const ip = clusterAddress(rc.ctx.instance, inv, rc.params);
  if (!ip) {
    throw vnfmError(
      'VNFM_ERR_MGMT_FAILED',
      `k8s-kubeadm: no address found for cluster_cp_name '${rc.params.masterNode.clusterCpName}' (neither a master CP, an external CP nor a port of the VNF carries it); give master_node.cluster_ip`,
    );
  }
  return ip;
}

function net24(ip: string): string | undefined {
  if (isIP(ip) !== 4) return undefined;
  const o = ip.split('.');
  return `${o[0]}.${o[1]}.${o[2]}.0/24`;
}

/** Environment of the install script: `ha_flag`, and the proxies when both are set. */
function installEnv(p: KubeadmParams, inv: Inventory, clusterIp: string): Record<string, string> {
  const env: Record<string, string> = { ha_flag: inv.masters.length > 1 ? 'True' : 'False' };
  const x = p.proxy;
  if (x?.httpProxy && x.httpsProxy) {
    env.http_proxy = x.httpProxy;
    env.https_proxy = x.httpsProxy;
    const first = inv.masters[0]?.nicIp;
    const extra = [x.k8sNodeCidr ?? (first ? net24(first) : undefined)].filter((v): v is string => !!v);
    const list = [...(x.noProxy ?? '').split(','), p.masterNode.podCidr, p.masterNode.clusterCidr, '127.0.0.1', 'localhost', clusterIp, ...allNodes(inv).map((n) => n.nicIp), ...extra]
      .map((s) => s.trim())
      .filter((s) => s !== '');
    env.no_proxy = [...new Set(list)].join(',');
  }
  return env;
}

async function scriptBytes(rc: RunContext): Promise<Buffer> {
  const files = await rc.ctx.files();
  const b = files.get(rc.params.scriptPath) ?? files.get(`./${rc.params.scriptPath}`);
  if (!b) throw vnfmError('VNFM_ERR_MGMT_FAILED', `k8s-kubeadm: install script ${rc.params.scriptPath} is not in the VNF package`);
  return b;
}

function hostOf(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

/** The URL the VNFM registers and uses for the cluster's API, and the certificate name to check. */
function apiUrlOf(rc: RunContext, inv: Inventory, clusterIp: string, candidates: (string | undefined)[]): { url: string; tlsServerName?: string } {
  const ha = inv.masters.length > 1;
  const valid = candidates.find((c) => {
    if (!c) return false;
    try {
      return new URL(c).protocol === 'https:';
    } catch {
      return false;
    }
  });
  let url = (valid ?? `https://${hostOf(clusterIp)}:${ha ? rc.cfg.haApiPort : rc.cfg.apiServerPort}`).replace(/\/+$/, '');
  const floating = floatingApiHost(rc.ctx.instance, inv, rc.params);
  if (!floating) return { url };
  const u = new URL(url);
  const original = u.hostname.replace(/^\[|\]$/g, '');
  if (original === floating) return { url };
  u.hostname = hostOf(floating);
  url = u.toString().replace(/\/+$/, '');
  return { url, tlsServerName: original };
}

/** A fallback for clusters whose admin token the driver does not hold: bootstrap from a master. */
function fallbackMaster(rc: RunContext, inv: Inventory, masters: readonly ClusterNode[]) {
  return async () => {
    const clusterIp = clusterIpOf(rc, inv);
    for (const m of masters) {
      if (!(await rc.answers(m))) continue;
      const host = await rc.host(m);
      const conf = await host.read(ADMIN_CONF, true);
      const { url, tlsServerName } = apiUrlOf(rc, inv, clusterIp, [RunContext.serverOf(conf)]);
      const { caCert } = await clusterCa(host);
      return { host, apiUrl: url, caCert, ...(tlsServerName ? { tlsServerName } : {}) };
    }
    throw vnfmError('VNFM_ERR_SSH_UNREACHABLE', 'k8s-kubeadm: no master answers to recover the cluster credentials', { retryable: true });
  };
}

function nodesMeta(inv: Inventory, prev: K8sClusterMeta | undefined, o: { members?: Record<string, string>; notJoined?: ReadonlySet<string>; dropMember?: ReadonlySet<string> } = {}): Record<string, K8sNodeMeta> {
  const out: Record<string, K8sNodeMeta> = {};
  for (const n of allNodes(inv)) {
    const old = prev?.nodes?.[n.name];
    const member = n.role === 'master' ? (o.dropMember?.has(n.name) ? undefined : (o.members?.[n.name] ?? old?.etcdMemberId)) : undefined;
    out[n.name] = {
      role: n.role,
      ...(n.vnfcInfoId ? { vnfcInfoId: n.vnfcInfoId } : {}),
      vnfcResourceInfoId: n.vnfcResourceInfoId,
      nicIp: n.nicIp,
      sshIp: n.sshIp,
      ...(member ? { etcdMemberId: member } : {}),
      joined: !o.notJoined?.has(n.name),
    };
  }
  return out;
}

function metaResult(rc: RunContext, meta: K8sClusterMeta): MgmtResult {
  return { vnfInfoMetadata: { k8sCluster: meta } };
}

/** Records what a start hook removed (for an operator or a later rollback), in the op's state. */
async function record(rc: RunContext, what: Obj): Promise<void> {
  const st = (rc.ctx.state.k8sKubeadm ??= { removed: [] }) as { removed: Obj[] };
  st.removed.push({ ...what, at: new Date(rc.clock.now()).toISOString() });
  await rc.ctx.checkpoint();
}

/** Connects to every node of a list (the preflight: all must answer). */
async function connectAll(rc: RunContext, nodes: readonly ClusterNode[], created: (n: ClusterNode) => boolean): Promise<Map<string, Host>> {
  rc.progress('preflight', undefined, `connecting to ${nodes.length} node(s)`);
  const t0 = rc.clock.now();
  const took: Record<string, number> = {};
  const hosts = await Promise.all(
    nodes.map(async (n) => {
      const h = await rc.host(n, created(n));
      took[n.name] = rc.clock.now() - t0;
      return h;
    }),
  );
  rc.ctx.log.info({ hook: rc.ctx.hook, driver: 'k8s-kubeadm', ms: rc.clock.now() - t0, nodes: took }, 'nodes connected');
  return new Map(nodes.map((n, i) => [n.name, hosts[i] as Host]));
}

function need<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw vnfmError('VNFM_ERR_MGMT_FAILED', `k8s-kubeadm: ${what}`);
  return v;
}

// ================================================================== instantiate_end

async function instantiateEnd(rc: RunContext): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const p = rc.params;
  const inv = buildInventory(ctx.instance, ctx.flavour, p, { checkCollisions: true });
  if (inv.masters.length === 0) throw vnfmError('VNFM_ERR_MGMT_FAILED', `k8s-kubeadm: the instance has no VNFC of the master VDU ${inv.masterVduId}`);
  const clusterIp = clusterIpOf(rc, inv);
  const main = inv.masters[0] as ClusterNode;
  const script = await scriptBytes(rc);
  const env = installEnv(p, inv, clusterIp);
  const all = allNodes(inv);
  const hosts = await connectAll(rc, all, () => true);
  const mainHost = hosts.get(main.name) as Host;

  for (const n of all) {
    await rc.step('hosts', n.name, async () => ({ changed: await updateHostsBlock(hosts.get(n.name) as Host, rc.cfg.hostsPath, hostsEntries(inv)) }));
  }

  const mastersCsv = inv.masters.map((m) => m.nicIp).join(',');
  const mainOut = await rc.step('install-master', main.name, async () => {
    if (await mainHost.exists(ADMIN_CONF)) return { skipped: true, server: null as string | null };
    const report = await runInstall(mainHost, {
      script,
      remotePath: rc.cfg.installScriptRemotePath,
      args: ['-m', mastersCsv, '-i', clusterIp, '-p', p.masterNode.podCidr, '-a', p.masterNode.clusterCidr],
      secrets: {},
      env,
      timeoutMs: rc.cfg.installTimeoutMs,
      onDone: (ms) => rc.info('install script finished', { step: 'install', ms }),
      onSecret: (x) => rc.secret(x),
    onLine: (l) => {
        if (!isSensitiveOutput(l)) rc.progressDetail('install-master', main.name, l);
      },
    });
    rc.secret(report.token);
    rc.secret(report.certificateKey);
    requireInstallMarkers(report, { host: `${main.name} (${main.sshIp})`, ha: inv.masters.length > 1 });
    return { skipped: false, server: report.server ?? null };
  });

  await rc.step('admin-credentials', undefined, async () => {
    const conf = await mainHost.read(ADMIN_CONF, true);
    const { url, tlsServerName } = apiUrlOf(rc, inv, clusterIp, [mainOut.server ?? undefined, RunContext.serverOf(conf)]);
    const { caCert } = await clusterCa(mainHost);
    await rc.bootstrapAdmin(mainHost, url, caCert, tlsServerName, conf);
    return { apiUrl: url };
  });
  const api = await rc.kube();
  await waitNodeReady(api, main.name, { timeoutMs: rc.cfg.nodeReadyTimeoutMs, pollMs: rc.cfg.pollIntervalMs, clock: rc.clock, signal: rc.signal });

  const members: Record<string, string> = {};
  for (const m of inv.masters.slice(1)) {
    const r = await rc.step('join-master', m.name, () => joinMaster(rc, api, m, { inv, clusterIp, peer: mainHost, mastersCsv, script, env: { ...env, ha_flag: 'True' } }));
    if (r.memberId) members[m.name] = r.memberId;
  }
  for (const w of inv.workers) {
    await rc.step('join-worker', w.name, () => joinWorker(rc, api, w, { inv, clusterIp, master: mainHost, script, env }));
  }
  const ids = await rc.step('etcd-members', undefined, async () => {
    const out: Record<string, string> = {};
    for (const m of await etcdMembers(mainHost)) if (m.name !== '') out[m.name] = memberIdHex(m.id);
    return out;
  });
  Object.assign(members, ids);

  const vim = await rc.step('register-vim', undefined, () => registerVim(rc));
  await rc.prunePins(all.map((n) => n.resourceId));
  const st = await rc.instanceState();
  return {
    vimConnectionInfo: { add: { [vim.entryId]: { vimId: vim.vimId, vimType: KUBERNETES_VIM_TYPE, interfaceInfo: { endpoint: st.apiUrl as string } } } },
    vnfInfoMetadata: { k8sCluster: { nodes: nodesMeta(inv, undefined, { members }), vimId: vim.vimId, vimName: p.vimName, apiUrl: st.apiUrl as string, clusterIp } satisfies K8sClusterMeta },
  };
}

async function registerVim(rc: RunContext): Promise<{ vimId: string; entryId: string; created: boolean }> {
  const r = await registerClusterVim(rc.ctx, 'k8s-kubeadm', await rc.instanceState(), { name: rc.params.vimName, description: `Kubernetes cluster of VNF instance ${rc.ctx.instance.id}` });
  rc.info(`Kubernetes VIM ${rc.params.vimName} ${r.created ? 'registered' : 'already registered'} (${r.vimId})`);
  return r;
}

// ================================================================== terminate_end / whole heal_start

async function removeVim(rc: RunContext, why: 'terminate' | 'heal'): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const prev = previousMeta(ctx);
  const name = prev?.vimName ?? rc.params.vimName;
  const removed = await rc.step('delete-vim', undefined, async () => ({ vimIds: await deleteClusterVims(ctx, name, prev?.vimId) }));
  // the VIM entries pointing at the deleted VIMs
  const entryVims = new Set(removed.vimIds);
  await rc.step('forget-cluster', undefined, async () => {
    await ctx.instanceState.save({});
    return {};
  });
  rc.info(`Kubernetes VIM ${name} removed (${why})`);
  return { vimConnectionInfo: { removeVimIds: [...entryVims] }, vnfInfoMetadata: { k8sCluster: null } };
}

// ================================================================== node removal (scale in, heal start)

/**
 * Takes a node out: no Node = done; dead (NotReady beyond the grace period, or NotReady and
 * unreachable) = delete the Node at once; else cordon + PDB-respecting drain, then delete.
 */
async function removeNode(rc: RunContext, api: KubeApi, node: ClusterNode, drain: DrainParams): Promise<{ status: 'gone' | 'dead' | 'drained'; owners: OwnerKey[] }> {
  let n = await api.get(nodeRef(node.name));
  if (!n) return { status: 'gone', owners: [] };
  const graceMs = rc.cfg.deadNodeGraceSeconds * 1000;
  // NotReady but answering SSH within the grace period: wait (bounded by the grace) for a verdict
  let dead = false;
  for (;;) {
    if (isNodeReady(n)) break;
    if (isDeadNode(n as KubeObject, rc.clock.now(), graceMs) || !(await rc.answers(node))) {
      dead = true;
      break;
    }
    rc.progressDetail('node-state', node.name, 'node not Ready: waiting for the grace period');
    await rc.clock.sleep(rc.cfg.pollIntervalMs, rc.signal);
    n = await api.get(nodeRef(node.name));
    if (!n) return { status: 'gone', owners: [] };
    if (!isNodeReady(n) && readyCondition(n).since === undefined) {
      dead = true;
      break;
    }
  }
  if (dead) {
    rc.progress('delete-node', node.name, 'node is not ready: deleting the Node without a drain');
    await deleteNode(api, node.name);
    await record(rc, { kind: 'node', node: node.name, dead: true });
    return { status: 'dead', owners: [] };
  }
  const r = await drainNode(api, node.name, {
    timeoutMs: (drain.timeoutSeconds ?? rc.cfg.drainTimeoutSeconds) * 1000,
    retryMs: rc.cfg.evictionRetryMs,
    force: drain.force,
    clock: rc.clock,
    signal: rc.signal,
    onProgress: (d) => rc.progressDetail('drain', node.name, d),
  });
  await deleteNode(api, node.name);
  await record(rc, { kind: 'node', node: node.name, evicted: r.evicted.length });
  return { status: 'drained', owners: r.owners };
}

async function waitOwners(rc: RunContext, api: KubeApi, owners: OwnerKey[]): Promise<void> {
  if (owners.length === 0) return;
  const left = await rc.step('owners-ready', undefined, async () => {
    const notReady = await waitOwnersReady(api, owners, { timeoutMs: rc.cfg.ownerWaitTimeoutMs, pollMs: rc.cfg.pollIntervalMs, clock: rc.clock, signal: rc.signal });
    return { notReady };
  });
  if (left.notReady.length > 0) rc.warn(`owners of drained pods not back to their ready counts: ${left.notReady.join(', ')}`);
}

function targetNodes(rc: RunContext, inv: Inventory, targets: readonly MgmtTarget[], change: MgmtTarget['change']): ClusterNode[] {
  const out: ClusterNode[] = [];
  for (const t of targets.filter((x) => x.change === change)) {
    const n = findNode(inv, t);
    if (!n) throw terminalError('VNFM_ERR_MGMT_REFUSED', `VNFC ${t.vnfcInfoId} (VDU ${t.vduId}) is not a node of the Kubernetes cluster (neither the master VDU ${inv.masterVduId} nor the worker VDU ${inv.workerVduId})`);
    out.push(n);
  }
  return out;
}

// ================================================================== scale_start (SCALE_IN)

async function scaleIn(rc: RunContext): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const inv = buildInventory(ctx.previousInstance ?? ctx.instance, ctx.flavour, rc.params);
  const removed = targetNodes(rc, inv, ctx.targets, 'remove');
  const masters = removed.filter((n) => n.role === 'master');
  if (masters.length > 0) throw terminalError('VNFM_ERR_API_BAD_REQUEST', `masters cannot be scaled (${masters.map((m) => m.name).join(', ')}); heal a master instead`);
  const gone = new Set(removed.map((n) => n.name));
  const survivors = allNodes(inv).filter((n) => !gone.has(n.name));
  const hosts = await connectAll(rc, survivors, () => false);
  const api = await rc.kube(fallbackMaster(rc, inv, inv.masters));
  await api.list('v1', 'Node', undefined);
  const drain = drainParamsOf(ctx.params);
  const owners: OwnerKey[] = [];
  for (const w of removed) {
    const r = await rc.step('remove-worker', w.name, () => removeNode(rc, api, w, drain));
    owners.push(...r.owners);
  }
  await waitOwners(rc, api, owners);
  const left: Inventory = { ...inv, workers: inv.workers.filter((n) => !gone.has(n.name)) };
  for (const n of survivors) {
    await rc.step('hosts', n.name, async () => ({ changed: await updateHostsBlock(hosts.get(n.name) as Host, rc.cfg.hostsPath, hostsEntries(left), [...gone]) }));
  }
  const prev = previousMeta(ctx);
  return metaResult(rc, { ...(prev ?? { vimName: rc.params.vimName }), nodes: nodesMeta(left, prev) });
}

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
function prefetchMaterial(rc: RunContext, master: Promise<Host>, controlPlane: boolean): () => Promise<JoinMaterial> {
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

async function joinWorker(rc: RunContext, api: KubeApi, node: ClusterNode, j: JoinContext & { master: Host }): Promise<{ skipped: boolean }> {
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
      timeoutMs: rc.cfg.installTimeoutMs,
      onDone: (ms) => rc.info('install script finished', { step: 'install', ms }),
      onSecret: (x) => rc.secret(x),
    onLine: (l) => {
        if (!isSensitiveOutput(l)) rc.progressDetail('join-worker', node.name, l);
      },
    });
  }
  rc.progress('wait-ready', node.name);
  await waitNodeReady(api, node.name, { timeoutMs: rc.cfg.nodeReadyTimeoutMs, pollMs: rc.cfg.pollIntervalMs, clock: rc.clock, signal: rc.signal });
  return { skipped: st.vmJoined };
}

/** Polls the member list and health until every member is healthy (bounded); returns the last view. */
async function waitEtcdHealthy(rc: RunContext, h: Host, timeoutMs: number): Promise<EtcdView> {
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
async function joinMaster(rc: RunContext, api: KubeApi, node: ClusterNode, j: JoinContext & { peer: Host; mastersCsv: string; survivors?: readonly ClusterNode[] }): Promise<{ skipped: boolean; memberId?: string }> {
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
    timeoutMs: rc.cfg.installTimeoutMs,
    onDone: (ms) => rc.info('install script finished', { step: 'install', ms }),
    onSecret: (x) => rc.secret(x),
    onLine: (l) => {
      if (!isSensitiveOutput(l)) rc.progressDetail('join-master', node.name, l);
    },
  });
  rc.progress('wait-control-plane', node.name);
  const memberId = await waitControlPlane(rc, api, j.peer, node, staticPods);
  return { skipped: false, memberId };
}

// ================================================================== scale_end (SCALE_OUT)

async function scaleOut(rc: RunContext): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const inv = buildInventory(ctx.instance, ctx.flavour, rc.params, { checkCollisions: true });
  let added = targetNodes(rc, inv, ctx.targets, 'add');
  if (added.length === 0) {
    const before = new Set((ctx.previousInstance?.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => r.id));
    added = allNodes(inv).filter((n) => !before.has(n.vnfcResourceInfoId));
  }
  const masters = added.filter((n) => n.role === 'master');
  if (masters.length > 0) throw terminalError('VNFM_ERR_API_BAD_REQUEST', `masters cannot be scaled (${masters.map((m) => m.name).join(', ')})`);
  const addedNames = new Set(added.map((n) => n.name));
  const all = allNodes(inv);
  const hosts = await connectAll(rc, all, (n) => addedNames.has(n.name));
  const clusterIp = clusterIpOf(rc, inv);
  const api = await rc.kube(fallbackMaster(rc, inv, inv.masters));
  await api.list('v1', 'Node', undefined);
  const master = hosts.get((inv.masters[0] as ClusterNode).name) as Host;
  const script = await scriptBytes(rc);
  const env = installEnv(rc.params, inv, clusterIp);
  for (const w of added) {
    await rc.step('hosts', w.name, async () => ({ changed: await updateHostsBlock(hosts.get(w.name) as Host, rc.cfg.hostsPath, hostsEntries(inv)) }));
    await rc.step('join-worker', w.name, () => joinWorker(rc, api, w, { inv, clusterIp, master, script, env }));
  }
  for (const n of all) {
    if (addedNames.has(n.name)) continue;
    await rc.step('hosts', n.name, async () => ({ changed: await updateHostsBlock(hosts.get(n.name) as Host, rc.cfg.hostsPath, hostsEntries(inv)) }));
  }
  await rc.prunePins(all.map((n) => n.resourceId));
  const prev = previousMeta(ctx);
  return metaResult(rc, { ...(prev ?? { vimName: rc.params.vimName }), nodes: nodesMeta(inv, prev), clusterIp });
}

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

async function healStart(rc: RunContext): Promise<MgmtResult> {
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

async function healEnd(rc: RunContext): Promise<MgmtResult> {
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

/** The validated parameters of a hook. */
export function validatedParams(ctx: MgmtContext, eff: EffectiveParams): KubeadmParams {
  return parseKubeadmParams(eff.param, { instanceId: ctx.instance.id, packageFiles: ctx.vnfd?.files });
}
