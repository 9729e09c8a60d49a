/**
 * What the kubeadm driver's hooks share (src/mgmt/drivers/k8s-kubeadm/hooks.ts): the cluster
 * metadata recorded on the instance, install environment and API address, node removal (drain,
 * delete, wait for the owners) and the targets of an operation.
 */
import { isIP } from 'node:net';
import { terminalError, vnfmError } from '../../../errors.ts';
import type { MgmtContext, MgmtResult, MgmtTarget } from '../../mgmt-driver.ts';
import { deleteNode, drainNode, isDeadNode, type OwnerKey, waitOwnersReady } from '../k8s-common/drain.ts';
import { allNodes, clusterAddress, type ClusterNode, findNode, floatingApiHost, type Inventory } from '../k8s-common/inventory.ts';
import { isNodeReady, type KubeApi, type KubeObject, nodeRef, readyCondition } from '../k8s-common/kube.ts';
import { previousClusterMeta, registerClusterVim } from '../k8s-common/vim.ts';
import type { KubeadmDriverConfig } from './config.ts';
import type { DrainParams, KubeadmParams } from './params.ts';
import { clusterCa, type HaproxySettings, type Host, type InstallRun, isSensitiveOutput } from './remote.ts';
import { ADMIN_CONF, RunContext } from './run-context.ts';

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

/**
 * How an install script run reports: its timeout, a log line when it finished, the secrets it
 * printed (redacted from then on), and its lines that carry no secret as progress of `step` on `node`.
 */
export function installReporting(rc: RunContext, step: string, node: string): Pick<InstallRun, 'timeoutMs' | 'onDone' | 'onSecret' | 'onLine'> {
  return {
    timeoutMs: rc.cfg.installTimeoutMs,
    onDone: (ms) => rc.info('install script finished', { step: 'install', ms }),
    onSecret: (x) => rc.secret(x),
    onLine: (l) => {
      if (!isSensitiveOutput(l)) rc.progressDetail(step, node, l);
    },
  };
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

export function previousMeta(ctx: MgmtContext): K8sClusterMeta | undefined {
  return previousClusterMeta<K8sClusterMeta>(ctx);
}

// ================================================================== shared pieces

export function haproxySettings(cfg: KubeadmDriverConfig): HaproxySettings {
  return { configPath: cfg.haproxyConfigPath, backend: cfg.haproxyBackend, reloadCommand: cfg.haproxyReloadCommand, port: cfg.apiServerPort };
}

export function hostsEntries(inv: Inventory): { ip: string; name: string }[] {
  return allNodes(inv).map((n) => ({ ip: n.nicIp, name: n.name }));
}

export function clusterIpOf(rc: RunContext, inv: Inventory): string {
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
export function installEnv(p: KubeadmParams, inv: Inventory, clusterIp: string): Record<string, string> {
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

export async function scriptBytes(rc: RunContext): Promise<Buffer> {
  const files = await rc.ctx.files();
  const b = files.get(rc.params.scriptPath) ?? files.get(`./${rc.params.scriptPath}`);
  if (!b) throw vnfmError('VNFM_ERR_MGMT_FAILED', `k8s-kubeadm: install script ${rc.params.scriptPath} is not in the VNF package`);
  return b;
}

function hostOf(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

/** The URL the VNFM registers and uses for the cluster's API, and the certificate name to check. */
export function apiUrlOf(rc: RunContext, inv: Inventory, clusterIp: string, candidates: (string | undefined)[]): { url: string; tlsServerName?: string } {
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
export function fallbackMaster(rc: RunContext, inv: Inventory, masters: readonly ClusterNode[]) {
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

export function nodesMeta(inv: Inventory, prev: K8sClusterMeta | undefined, o: { members?: Record<string, string>; notJoined?: ReadonlySet<string>; dropMember?: ReadonlySet<string> } = {}): Record<string, K8sNodeMeta> {
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

export function metaResult(rc: RunContext, meta: K8sClusterMeta): MgmtResult {
  return { vnfInfoMetadata: { k8sCluster: meta } };
}

/** Records what a start hook removed (for an operator or a later rollback), in the op's state. */
export async function record(rc: RunContext, what: Obj): Promise<void> {
  const st = (rc.ctx.state.k8sKubeadm ??= { removed: [] }) as { removed: Obj[] };
  st.removed.push({ ...what, at: new Date(rc.clock.now()).toISOString() });
  await rc.ctx.checkpoint();
}

/** Connects to every node of a list (the preflight: all must answer). */
export async function connectAll(rc: RunContext, nodes: readonly ClusterNode[], created: (n: ClusterNode) => boolean): Promise<Map<string, Host>> {
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

export function need<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw vnfmError('VNFM_ERR_MGMT_FAILED', `k8s-kubeadm: ${what}`);
  return v;
}

export async function registerVim(rc: RunContext): Promise<{ vimId: string; entryId: string; created: boolean }> {
  const r = await registerClusterVim(rc.ctx, 'k8s-kubeadm', await rc.instanceState(), { name: rc.params.vimName, description: `Kubernetes cluster of VNF instance ${rc.ctx.instance.id}` });
  rc.info(`Kubernetes VIM ${rc.params.vimName} ${r.created ? 'registered' : 'already registered'} (${r.vimId})`);
  return r;
}

// ================================================================== node removal (scale in, heal start)

/**
 * Takes a node out: no Node = done; dead (NotReady beyond the grace period, or NotReady and
 * unreachable) = delete the Node at once; else cordon + PDB-respecting drain, then delete.
 */
export async function removeNode(rc: RunContext, api: KubeApi, node: ClusterNode, drain: DrainParams): Promise<{ status: 'gone' | 'dead' | 'drained'; owners: OwnerKey[] }> {
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

export async function waitOwners(rc: RunContext, api: KubeApi, owners: OwnerKey[]): Promise<void> {
  if (owners.length === 0) return;
  const left = await rc.step('owners-ready', undefined, async () => {
    const notReady = await waitOwnersReady(api, owners, { timeoutMs: rc.cfg.ownerWaitTimeoutMs, pollMs: rc.cfg.pollIntervalMs, clock: rc.clock, signal: rc.signal });
    return { notReady };
  });
  if (left.notReady.length > 0) rc.warn(`owners of drained pods not back to their ready counts: ${left.notReady.join(', ')}`);
}

export function targetNodes(rc: RunContext, inv: Inventory, targets: readonly MgmtTarget[], change: MgmtTarget['change']): ClusterNode[] {
  const out: ClusterNode[] = [];
  for (const t of targets.filter((x) => x.change === change)) {
    const n = findNode(inv, t);
    if (!n) throw terminalError('VNFM_ERR_MGMT_REFUSED', `VNFC ${t.vnfcInfoId} (VDU ${t.vduId}) is not a node of the Kubernetes cluster (neither the master VDU ${inv.masterVduId} nor the worker VDU ${inv.workerVduId})`);
    out.push(n);
  }
  return out;
}
