/**
 * The hooks of the `k8s-kubespray` driver (spec §2.2 with the healvnfm rules of §2.3), each a list
 * of journaled steps (`ctx.step`: a retried or resumed op continues at the first unfinished step):
 *
 * - instantiate_end: inventory directory on the Ansible server (refused when it exists and was not
 *   created by this instance), `hosts.yaml` rendered by the VNFM and uploaded atomically, the LB's
 *   API frontend (through the LB reconciler), `cluster.yml`, the admin token made with the first
 *   master's admin.conf (read in memory, never copied), Nodes Ready through the API, the LB's
 *   NodePort frontends, the VIM registered at `https://<LB>:8383` with the cluster CA;
 * - scale_end (SCALE_OUT) / heal_end (worker VNFCs): inventory, stale known_hosts entries of the
 *   new VMs removed, `facts.yml`, `scale.yml --limit=<new nodes>`, Nodes Ready, LB backends;
 * - scale_start (SCALE_IN) / heal_start (worker VNFCs): per node, a PDB-aware drain through the API
 *   when the node is alive, `remove-node.yml -e node=<one>` (with `reset_nodes=false
 *   allow_ungraceful_removal=true` when it is dead), the Node verified gone (deleted through the
 *   API if Kubespray left it), then inventory (scale in) and LB backends;
 * - terminate_end / whole heal_start: VIM deleted, the cluster's LB section removed, the inventory
 *   directory removed (only when its marker names this instance); whole heal_end = instantiate_end.
 *
 * Plays run detached on the Ansible server (./ansible.ts); their run ids are journaled before the
 * start, so a VNFM restarted during a play waits for that play's result instead of starting it again.
 */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { stringify } from 'yaml';
import { isVnfmError, terminalError, vnfmError } from '../../../errors.ts';
import type { VnfInstanceRecord } from '../../../model/vnf-instance.ts';
import { vnfcAddresses, vnfcOfAddress, vnfPortAddresses } from '../../addresses.ts';
import { INSTANCE_LABEL } from '../../../infra/kubernetes/manifests.ts';
import { apiServerFrontend, type LbFrontend, type LbHostOptions, type LbNode, lbOwner, type LbService, nodePortFrontends, parseLbConfig, parseOwnerSection, readLbState, reconcileNodeMembers, reconcileOwner, removeOwner } from '../../lb/index.ts';
import type { MgmtContext, MgmtResult, MgmtTarget } from '../../mgmt-driver.ts';
import type { ClusterInstanceState, HostSpec, SshConnect } from '../k8s-common/run-context.ts';
import { ClusterRunContext } from '../k8s-common/run-context.ts';
import { deleteNode, drainNode, waitNodeReady } from '../k8s-common/drain.ts';
import type { Host } from '../k8s-common/host.ts';
import { shq } from '../k8s-common/host.ts';
import { allNodes, buildInventory, type ClusterNode, findNode, type Inventory } from '../k8s-common/inventory.ts';
import { type Clock, isNodeReady, type KubeApi, type KubeApiFactory, kubeconfigParts, nodeRef, warmKubeLibrary } from '../k8s-common/kube.ts';
import type { NodeAccess } from '../k8s-common/params.ts';
import { deleteClusterVims, previousClusterMeta, registerClusterVim } from '../k8s-common/vim.ts';
import { newRunId, type PlaySpec, startPlay, runState, waitPlay } from './ansible.ts';
import type { KubesprayDriverConfig } from './config.ts';
import { type KubesprayParams, type SprayEffective } from './params.ts';
import { KUBERNETES_VIM_TYPE } from '../../../infra/kubernetes/vim-type.ts';

export const DRIVER = 'k8s-kubespray';

/** The driver's sealed instance state. */
export interface SprayInstanceState extends ClusterInstanceState {
  /** Where this cluster's inventory lives (for the acceptance check of other instances). */
  inventory?: { host: string; path: string };
  /** sha256 of the hosts.yaml last uploaded (drift report). */
  inventoryDigest?: string;
  /** Hash of the cluster's LB section as last applied. */
  lbHash?: string | null;
  lbIp?: string;
  /** The LB is this VNFC of the instance (Tacker's layout: an `externalLB` VDU in the same stack). */
  lbVnfc?: { vnfcResourceInfoId: string; vduId: string };
}

/** `instantiatedVnfInfo.metadata.k8sCluster` of a Kubespray cluster. */
export interface SprayClusterMeta {
  nodes: Record<string, { role: 'master' | 'worker'; vnfcInfoId?: string; vnfcResourceInfoId: string; nicIp: string; sshIp: string }>;
  vimId?: string;
  vimName: string;
  apiUrl?: string;
  lbIp?: string;
  inventory?: string;
  credentialsVersion?: string;
}

/** Run context of one hook. */
export class SprayRun extends ClusterRunContext<KubesprayDriverConfig> {
  constructor(
    ctx: MgmtContext,
    cfg: KubesprayDriverConfig,
    readonly params: KubesprayParams,
    connectFn: SshConnect,
    kubeFactory: KubeApiFactory,
    clock: Clock,
    /** Whether an LB section's owner is gone (see KubesprayDriverDeps.lbOwnerIsStale). */
    readonly lbOwnerIsStale?: (owner: string) => Promise<boolean>,
  ) {
    super(ctx, cfg, DRIVER, connectFn, kubeFactory, clock, params.insecure, [params.masterNode, params.workerNode, params.ansible, params.externalLb]);
  }

  protected access(node: ClusterNode): NodeAccess {
    return node.role === 'master' ? this.params.masterNode : this.params.workerNode;
  }

  get sprayState(): Promise<SprayInstanceState> {
    return this.instanceState() as Promise<SprayInstanceState>;
  }

  ansibleSpec(): HostSpec {
    return { pinKey: `ansible:${this.params.ansible.ipAddress}`, name: 'ansible-server', sshIp: this.params.ansible.ipAddress, access: this.params.ansible };
  }

  /**
   * The Ansible server's session. It is the operator's own server, not a VM being created: a few
   * short attempts (`ansibleConnectAttempts` x `ansibleConnectTimeoutMs`), then FAILED_TEMP at once
   * naming it (no automatic step retries: the operator brings it back and retries the operation).
   */
  async ansible(): Promise<Host> {
    const ip = this.params.ansible.ipAddress;
    try {
      return await this.hostOf(this.ansibleSpec(), false, { attempts: this.cfg.ansibleConnectAttempts, readyTimeoutMs: this.cfg.ansibleConnectTimeoutMs });
    } catch (e) {
      if (isVnfmError(e, 'VNFM_ERR_SSH_UNREACHABLE')) {
        throw terminalError('VNFM_ERR_SSH_UNREACHABLE', `${DRIVER}: the Ansible server ${ip} (ansible.ip_address) does not answer SSH: ${(e as Error).message}. Nothing was changed by this step; retry the operation once the server answers.`, { extra: { host: ip, role: 'ansible-server' } });
      }
      throw e;
    }
  }

  lb(ip: string): Promise<Host> {
    return this.hostOf({ pinKey: `lb:${ip}`, name: 'load-balancer', sshIp: ip, access: this.params.externalLb });
  }
}

type Obj = Record<string, unknown>;

// ================================================================== paths and inventory

const MARKER = '.healvnfm-owner';

function paths(p: KubesprayParams) {
  const inv = p.ansible.transferringInventoryPath;
  return {
    root: p.ansible.kubesprayRootPath,
    inv,
    hosts: `${inv}/hosts.yaml`,
    vars: `${inv}/group_vars/all/zz-healvnfm.yml`,
    marker: `${inv}/${MARKER}`,
    knownHosts: `${inv}/.healvnfm/known_hosts`,
    runs: `${inv}/.healvnfm/runs`,
    playbook: (name: string) => `${p.ansible.kubesprayRootPath}/${name}`,
  };
}

/** The acceptance key of an inventory: Ansible server + path. */
export function inventoryKey(p: Pick<KubesprayParams, 'ansible'>): string {
  return `${p.ansible.ipAddress}:${p.ansible.transferringInventoryPath}`;
}

/** hosts.yaml (no secret in it): Kubespray's groups with the real names. */
export function renderHostsYaml(inv: Inventory, p: Pick<KubesprayParams, 'masterNode' | 'workerNode'>): string {
  const hosts: Obj = {};
  for (const n of allNodes(inv)) {
    const a = n.role === 'master' ? p.masterNode : p.workerNode;
    hosts[n.name] = { ansible_host: n.sshIp, ip: n.nicIp, access_ip: n.nicIp, ansible_user: a.username };
  }
  const group = (nodes: ClusterNode[]) => ({ hosts: Object.fromEntries(nodes.map((n) => [n.name, null])) });
  const doc = {
    all: {
      hosts,
      children: {
        kube_control_plane: group(inv.masters),
        etcd: group(inv.masters),
        kube_node: group(inv.workers),
        k8s_cluster: { children: { kube_control_plane: null, kube_node: null } },
        calico_rr: { hosts: {} },
      },
    },
  };
  return `# Managed by the VNFM (k8s-kubespray driver): rewritten before every play.\n${stringify(doc)}`;
}

/** Variables of the cluster (CIDRs, proxies, the external LB) as a group_vars file. */
export function renderVars(p: KubesprayParams, lbIp: string, apiPort: number): string {
  const v: Obj = { loadbalancer_apiserver: { address: lbIp, port: apiPort }, loadbalancer_apiserver_localhost: false };
  if (p.masterNode.clusterCidr && p.masterNode.podCidr) {
    v.kube_service_addresses = p.masterNode.clusterCidr;
    v.kube_pods_subnet = p.masterNode.podCidr;
  }
  if (p.proxy?.httpProxy) v.http_proxy = p.proxy.httpProxy;
  if (p.proxy?.httpsProxy) v.https_proxy = p.proxy.httpsProxy;
  return `# Managed by the VNFM (k8s-kubespray driver).\n${stringify(v)}`;
}

/** The secret inventory of a play (passwords / key files), removed when the play ends. */
function secretInventory(inv: Inventory, p: KubesprayParams, runDir: string): { doc: Obj; keys: Record<string, string> } {
  const hosts: Obj = {};
  const keys: Record<string, string> = {};
  for (const n of allNodes(inv)) {
    const a = n.role === 'master' ? p.masterNode : p.workerNode;
    const h: Obj = {};
    if (a.password) {
      h.ansible_password = a.password;
      h.ansible_become_password = a.password;
    }
    if (a.privateKey) {
      keys[`key-${n.role}`] = a.privateKey.endsWith('\n') ? a.privateKey : `${a.privateKey}\n`;
      h.ansible_ssh_private_key_file = `${runDir}/key-${n.role}`;
    }
    hosts[n.name] = h;
  }
  return { doc: { all: { hosts } }, keys };
}

// ================================================================== addresses

/**
 * The LB's SSH address: `ssh_ip`, else the VNF resource named `ssh_cp_name`: a VNFC's CP (its fixed
 * address, as Tacker; its floating IP with `ssh_address: floating`), an external CP, a port of the VNF.
 */
export function lbAddress(instance: VnfInstanceRecord, p: KubesprayParams): string {
  if (p.externalLb.sshIp) return p.externalLb.sshIp;
  const cp = p.externalLb.sshCpName as string;
  const floating = p.externalLb.sshAddress === 'floating';
  for (const r of instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []) {
    const c = vnfcAddresses(r).find((x) => x.cpdId === cp);
    if (!c) continue;
    const a = floating ? c.floating[0] : c.fixed[0];
    if (a) return a;
    if (floating) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${DRIVER}: external_lb_param.ssh_cp_name '${cp}' has no floating IP (ssh_address: floating)`);
  }
  for (const e of instance.instantiatedVnfInfo?.extCpInfo ?? []) {
    if (e.cpdId !== cp) continue;
    for (const pi of (e.cpProtocolInfo as { ipOverEthernet?: { ipAddresses?: { addresses?: string[] }[] } }[] | undefined) ?? []) {
      for (const ip of pi.ipOverEthernet?.ipAddresses ?? []) for (const a of ip.addresses ?? []) if (isIP(a)) return a;
    }
  }
  const port = vnfPortAddresses(instance, cp).find((a) => isIP(a) !== 0);
  if (port) return port;
  throw vnfmError('VNFM_ERR_MGMT_FAILED', `${DRIVER}: no address found for external_lb_param.ssh_cp_name '${cp}' (give external_lb_param.ssh_ip)`);
}

function hostPart(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

// ================================================================== plays

/**
 * Runs a play once per attempt: the run id is journaled (`ctx.step`) before the start; a resumed
 * op finds the run by that id and waits for it. A failed play bumps the attempt (in `ctx.state`),
 * so a retry starts a new run.
 */
async function play(rc: SprayRun, label: string, o: { playbook: string; inv: Inventory; extraVars?: Record<string, string>; limit?: string; timeoutMs: number }): Promise<void> {
  const ctx = rc.ctx;
  const st = (ctx.state.kubespray ??= { attempts: {} }) as { attempts: Record<string, number> };
  const key = `${ctx.hook}:${label}`;
  const attempt = st.attempts[key] ?? 0;
  const pth = paths(rc.params);
  await rc.step(`play:${label}:${attempt}`, undefined, async () => {
    const runId = await ctx.step(`${ctx.hook}:run-id:${label}:${attempt}`, async () => newRunId(label));
    const h = await rc.ansible();
    const runDir = `${pth.runs}/${runId}`;
    const spec: PlaySpec = { runId, playbook: pth.playbook(o.playbook), inventory: pth.hosts, secretInventory: {}, runDir, knownHosts: pth.knownHosts, ...(o.extraVars ? { extraVars: o.extraVars } : {}), ...(o.limit ? { limit: o.limit } : {}) };
    const now = await runState(h, runDir);
    if (now.state === 'absent') {
      const secrets = secretInventory(o.inv, rc.params, runDir);
      await h.run(`mkdir -p ${shq(runDir)} && chmod 700 ${shq(runDir)}`, { label: 'create the run directory' });
      for (const [name, text] of Object.entries(secrets.keys)) await h.session.upload(`${runDir}/${name}`, text, { mode: 0o600 });
      rc.info(`starting ${o.playbook} (run ${runId})`, { run: runId });
      rc.progress(`ansible ${o.playbook}`, o.limit, `run ${runId}`);
      await startPlay(h, { ...spec, secretInventory: secrets.doc });
    } else {
      rc.info(`waiting for the running ${o.playbook} (run ${runId}, ${now.state})`, { run: runId });
    }
    const verdict = await waitPlay(h, spec, {
      pollMs: rc.cfg.playPollMs,
      timeoutMs: o.timeoutMs,
      now: () => rc.clock.now(),
      sleep: (ms) => rc.clock.sleep(ms, rc.signal),
      onLine: (l) => rc.progressDetail(`ansible ${o.playbook}`, o.limit, l),
    });
    if (!verdict.ok) {
      st.attempts[key] = attempt + 1;
      await ctx.checkpoint();
      throw terminalError('VNFM_ERR_MGMT_FAILED', `${DRIVER}: ${o.playbook}${o.limit ? ` --limit=${o.limit}` : ''} failed (run ${runId}): ${verdict.summary}`, { extra: { run: runId, failedHosts: verdict.failedHosts, unreachableHosts: verdict.unreachableHosts } });
    }
    rc.info(`${o.playbook} succeeded (run ${runId})`, { run: runId, step: 'ansible', ...(verdict.durationMs !== undefined ? { ms: verdict.durationMs } : {}) });
    return { runId, rc: verdict.rc };
  });
}

/** Uploads hosts.yaml and the vars file (atomic), reporting a drift of the remote copy. */
async function uploadInventory(rc: SprayRun, inv: Inventory, lbIp: string): Promise<void> {
  const h = await rc.ansible();
  const pth = paths(rc.params);
  const text = renderHostsYaml(inv, rc.params);
  const digest = createHash('sha256').update(text).digest('hex');
  const st = await rc.sprayState;
  if (st.inventoryDigest) {
    const r = await h.exec(`sha256sum ${shq(pth.hosts)} 2>/dev/null | cut -d' ' -f1`);
    const remote = r.stdout.trim();
    if (remote !== '' && remote !== st.inventoryDigest) rc.warn(`the inventory ${pth.hosts} on the Ansible server was changed outside the VNFM (drift); it is rewritten`);
  }
  await h.run(`mkdir -p ${shq(`${pth.inv}/group_vars/all`)} ${shq(`${pth.inv}/.healvnfm/runs`)} && touch ${shq(pth.knownHosts)} && chmod 600 ${shq(pth.knownHosts)}`, { label: 'inventory directories' });
  await h.session.upload(pth.hosts, text, { mode: 0o644 });
  await h.session.upload(pth.vars, renderVars(rc.params, lbIp, rc.cfg.lbApiPort), { mode: 0o644 });
  await rc.updateState((s) => {
    (s as SprayInstanceState).inventoryDigest = digest;
  });
}

/** Removes the known_hosts entries of VMs replaced or created by the operation. */
async function forgetHostKeys(rc: SprayRun, nodes: readonly ClusterNode[]): Promise<void> {
  if (nodes.length === 0) return;
  const h = await rc.ansible();
  const kh = paths(rc.params).knownHosts;
  for (const n of nodes) await h.exec(`ssh-keygen -R ${shq(n.sshIp)} -f ${shq(kh)} >/dev/null 2>&1; rm -f ${shq(`${kh}.old`)}`);
}

// ================================================================== LB

/** The cluster's Nodes (of the inventory) as the LB sees them. */
async function lbNodes(api: KubeApi, inv: Inventory): Promise<LbNode[]> {
  const known = allNodes(inv);
  const names = new Set(known.map((n) => n.name));
  return (await api.list('v1', 'Node', undefined)).items
    .filter((n) => names.has(n.metadata.name as string))
    .map((n) => {
      const addr = ((n.status?.addresses ?? []) as { type?: string; address?: string }[]).find((a) => a.type === 'InternalIP')?.address;
      return { name: n.metadata.name as string, address: addr ?? known.find((x) => x.name === n.metadata.name)?.nicIp ?? '', ready: isNodeReady(n), schedulable: n.spec?.unschedulable !== true };
    })
    .filter((n) => n.address !== '');
}

async function clusterFrontends(rc: SprayRun, inv: Inventory, nodes: readonly LbNode[] | undefined, api: KubeApi | undefined, lbHost: Host): Promise<LbFrontend[]> {
  const frontends: LbFrontend[] = [apiServerFrontend({ masters: inv.masters.map((m) => ({ name: m.name, address: m.nicIp })), bind: rc.cfg.lbApiPort, port: rc.cfg.apiServerPort })];
  if (!api || !nodes) return frontends;
  // The cluster's own NodePorts (workers as servers): not the Services of CNF instances (their
  // driver publishes them in their own sections), nor ports another owner already publishes.
  const workers = nodes.filter((n) => inv.workers.some((w) => w.name === n.name));
  const services: LbService[] = (await api.list('v1', 'Service', undefined)).items.filter((s) => s.metadata.labels?.[INSTANCE_LABEL] === undefined).map((s) => ({
    namespace: s.metadata.namespace ?? 'default',
    name: s.metadata.name as string,
    type: String(s.spec?.type ?? 'ClusterIP'),
    ports: ((s.spec?.ports ?? []) as { name?: string; port: number; nodePort?: number; protocol?: string }[]).map((p) => ({ port: p.port, ...(p.name ? { name: p.name } : {}), ...(p.nodePort ? { nodePort: p.nodePort } : {}), ...(p.protocol ? { protocol: p.protocol } : {}) })),
  }));
  const state = await readLbState(lbHost.session, lbOptions(rc));
  const mine = lbOwner('cluster', rc.ctx.instance.id);
  const taken = new Set(Object.entries(state.owners).filter(([o]) => o !== mine).flatMap(([, v]) => v.ports));
  const np = nodePortFrontends({ instanceId: rc.ctx.instance.id, services, nodes: workers });
  const published = np.frontends.filter((f) => !taken.has(f.bind) && f.bind !== rc.cfg.lbApiPort);
  rc.info(`LB frontends of the cluster: the API servers and ${published.length} NodePort(s) over ${workers.length} worker(s)`, { services: services.length, skipped: np.frontends.length - published.length, unpublished: np.unpublished.length });
  return [...frontends, ...np.frontends.filter((f) => !taken.has(f.bind) && f.bind !== rc.cfg.lbApiPort)];
}

/** The LB reconciler's options for this driver (messages name the LB by its SSH address). */
export function sprayLbOptions(cfg: KubesprayDriverConfig, signal?: AbortSignal): LbHostOptions {
  return { configPath: cfg.lbConfigPath, reloadCommand: cfg.lbReloadCommand, startCommand: cfg.lbStartCommand, isActiveCommand: cfg.lbIsActiveCommand, commandTimeoutMs: cfg.commandTimeoutMs, ...(signal ? { signal } : {}) };
}

function lbOptions(rc: SprayRun): LbHostOptions {
  return {
    ...sprayLbOptions(rc.cfg, rc.signal),
    ...(rc.lbOwnerIsStale ? { ownerIsStale: rc.lbOwnerIsStale } : {}),
    onStaleOwnerRemoved: (owner, ports) =>
      rc.warn(`a stale section of the load balancer's configuration (${owner}: its VNF instance is gone, or not instantiated with no operation in progress) was in the way of this cluster's and was removed`, { staleOwner: owner, ports }),
  };
}

/** Converges the cluster's LB section (serialised per LB with other instances' drivers). */
async function reconcileLb(rc: SprayRun, inv: Inventory, lbIp: string, api: KubeApi | undefined, removedNames?: readonly string[]): Promise<{ action: string; cnfSections: number }> {
  const release = await rc.ctx.lock(`lb:${lbIp}`);
  try {
    const h = await rc.lb(lbIp);
    const nodes = api ? await lbNodes(api, inv) : undefined;
    const frontends = await clusterFrontends(rc, inv, nodes, api, h);
    const st = await rc.sprayState;
    const r = await reconcileOwner(h.session, { owner: lbOwner('cluster', rc.ctx.instance.id), frontends }, { ...lbOptions(rc), lastAppliedHash: st.lbHash ?? null });
    if (r.drift?.section) rc.warn('the cluster section of the LB configuration was changed outside the VNFM (drift); it was rewritten');
    const own = vnfcOfAddress(rc.ctx.instance, lbIp);
    await rc.updateState((s) => {
      const ss = s as SprayInstanceState;
      ss.lbHash = r.hash;
      ss.lbIp = lbIp;
      if (own) ss.lbVnfc = { vnfcResourceInfoId: own.id, vduId: own.vduId };
      else delete ss.lbVnfc;
    });
    let cnfSections = 0;
    if (nodes && removedNames) {
      // the CNFs deployed on this cluster (their sections' servers are this cluster's nodes, before or after the change) follow the nodes
      const mine = new Set([...allNodes(inv).map((n) => n.name), ...removedNames]);
      const live = await readLbState(h.session, lbOptions(rc));
      const parsed = live.text ? parseLbConfig(live.text) : undefined;
      const ours = new Set<string>();
      for (const [owner, section] of parsed?.owners ?? []) {
        if (!owner.startsWith('cnf-')) continue;
        const cfg = parseOwnerSection(section);
        if (cfg?.frontends.some((f) => f.servers.some((x) => mine.has(x.name)))) ours.add(owner);
      }
      if (ours.size > 0) {
        const m = await reconcileNodeMembers(h.session, nodes, { ...lbOptions(rc), owners: (o) => ours.has(o) });
        cnfSections = m.results.length;
        if (m.skipped.length > 0) rc.warn(`LB sections not updated for the node change (unreadable): ${m.skipped.join(', ')}`);
      }
    }
    return { action: r.action, cnfSections };
  } finally {
    await release();
  }
}

// ================================================================== the hooks

function previousMeta(ctx: MgmtContext): SprayClusterMeta | undefined {
  return previousClusterMeta<SprayClusterMeta>(ctx);
}

function nodesMeta(inv: Inventory): SprayClusterMeta['nodes'] {
  return Object.fromEntries(allNodes(inv).map((n) => [n.name, { role: n.role, ...(n.vnfcInfoId ? { vnfcInfoId: n.vnfcInfoId } : {}), vnfcResourceInfoId: n.vnfcResourceInfoId, nicIp: n.nicIp, sshIp: n.sshIp }]));
}

/** Runs one hook. */
export async function runSprayHook(rc: SprayRun, eff: SprayEffective): Promise<MgmtResult | undefined> {
  warmKubeLibrary();
  const ctx = rc.ctx;
  const cmd = ctx.command;
  let result: MgmtResult | undefined;
  switch (ctx.hook) {
    case 'instantiate_end':
      result = await instantiateEnd(rc);
      break;
    case 'terminate_end':
      result = await teardown(rc, 'terminate');
      break;
    case 'instantiate_rollback_start':
      // the rollback of an instantiate that failed after instantiate_end began: what it added
      // (LB section, inventory directory, a registered VIM) goes before the VMs do
      if (cmd.operation === 'INSTANTIATE') result = await teardown(rc, 'rollback');
      break;
    case 'scale_start':
      if (cmd.operation === 'SCALE' && cmd.type === 'SCALE_IN') result = await removeWorkers(rc, 'remove');
      break;
    case 'scale_end':
      if (cmd.operation === 'SCALE' && cmd.type === 'SCALE_OUT') result = await addWorkers(rc, 'add');
      break;
    case 'heal_start':
      if (cmd.operation === 'HEAL') result = cmd.scope === 'entire' ? await teardown(rc, 'heal') : await removeWorkers(rc, 'heal');
      break;
    case 'heal_end':
      if (cmd.operation === 'HEAL') result = cmd.scope === 'entire' ? await instantiateEnd(rc) : await addWorkers(rc, 'heal');
      break;
    default:
      return undefined;
  }
  if (result && eff.persist && ctx.hook !== 'terminate_end' && ctx.hook !== 'instantiate_rollback_start') {
    result.instantiateParams = eff.persist;
    const k = result.vnfInfoMetadata?.k8sCluster as SprayClusterMeta | null | undefined;
    if (k) k.credentialsVersion = ctx.opOcc.id;
  }
  return result;
}

/** The inventory directory: created from the sample (with this instance's marker), or reused when the marker is ours. */
async function ensureInventoryDir(rc: SprayRun): Promise<{ created: boolean }> {
  const h = await rc.ansible();
  const pth = paths(rc.params);
  const id = rc.ctx.instance.id;
  const r = await h.exec(`if [ -e ${shq(pth.inv)} ]; then if [ -f ${shq(pth.marker)} ]; then echo "owner $(cat ${shq(pth.marker)})"; else echo foreign; fi; else echo absent; fi`);
  const out = r.stdout.trim();
  if (out === `owner ${id}`) return { created: false };
  if (out !== 'absent') {
    throw terminalError('VNFM_ERR_MGMT_REFUSED', `${DRIVER}: ansible.transferring_inventory_path ${pth.inv} already exists on the Ansible server and was not created for this VNF instance${out.startsWith('owner ') ? ` (it belongs to instance ${out.slice(6)})` : ''}; choose another path`);
  }
  const sample = `${pth.root}/inventory/sample`;
  // the marker first: a directory interrupted while being filled is still recognised as ours
  await h.run(`mkdir -p ${shq(pth.inv)} && printf '%s' ${shq(id)} > ${shq(pth.marker)} && if [ -d ${shq(sample)} ]; then cp -r ${shq(sample)}/. ${shq(pth.inv)}/; fi`, { label: 'create the inventory directory' });
  return { created: true };
}

async function instantiateEnd(rc: SprayRun): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const p = rc.params;
  const inv = buildInventory(ctx.instance, ctx.flavour, p, { checkCollisions: true });
  if (inv.masters.length !== 1) throw terminalError('VNFM_ERR_MGMT_REFUSED', `${DRIVER}: the driver builds clusters with exactly one master (the instance has ${inv.masters.length})`);
  const lbIp = lbAddress(ctx.instance, p);
  const master = inv.masters[0] as ClusterNode;
  const apiUrl = `https://${hostPart(lbIp)}:${rc.cfg.lbApiPort}`;
  const release = await ctx.lock(`ansible:${inventoryKey(p)}`);
  try {
    await rc.step('inventory-dir', undefined, async () => {
      const r = await ensureInventoryDir(rc);
      await rc.updateState((s) => {
        (s as SprayInstanceState).inventory = { host: p.ansible.ipAddress, path: p.ansible.transferringInventoryPath };
      });
      return r;
    });
    await rc.step('inventory', undefined, async () => {
      await uploadInventory(rc, inv, lbIp);
      await forgetHostKeys(rc, allNodes(inv));
      return {};
    });
    await rc.step('lb-api-frontend', undefined, () => reconcileLb(rc, inv, lbIp, undefined));
    await play(rc, 'cluster', { playbook: 'cluster.yml', inv, timeoutMs: rc.cfg.clusterTimeoutPerNodeMs * allNodes(inv).length });
  } finally {
    await release();
  }
  await rc.step('admin-credentials', undefined, async () => {
    if ((await rc.hasCredentials()) && (await rc.sprayState).apiUrl === apiUrl) return { reused: true };
    const h = await rc.host(master);
    const conf = await h.read('/etc/kubernetes/admin.conf', true);
    const caCert = caOf(conf);
    await rc.bootstrapAdmin(h, apiUrl, caCert, undefined, conf);
    return { reused: false };
  });
  const api = await rc.kube();
  for (const n of allNodes(inv)) {
    rc.progress('wait-ready', n.name);
    await waitNodeReady(api, n.name, { timeoutMs: rc.cfg.nodeReadyTimeoutMs, pollMs: rc.cfg.pollIntervalMs, clock: rc.clock, signal: rc.signal });
  }
  await rc.step('lb', undefined, () => reconcileLb(rc, inv, lbIp, api));
  const vim = await rc.step('register-vim', undefined, () => registerVim(rc));
  await rc.prunePins([...allNodes(inv).map((n) => n.resourceId), rc.ansibleSpec().pinKey, `lb:${lbIp}`]);
  return {
    vimConnectionInfo: { add: { [vim.entryId]: { vimId: vim.vimId, vimType: KUBERNETES_VIM_TYPE, interfaceInfo: { endpoint: apiUrl } } } },
    vnfInfoMetadata: { k8sCluster: { nodes: nodesMeta(inv), vimId: vim.vimId, vimName: p.vimName, apiUrl, lbIp, inventory: `${p.ansible.ipAddress}:${p.ansible.transferringInventoryPath}` } satisfies SprayClusterMeta },
  };
}

/** The cluster CA (PEM) of an admin kubeconfig. */
function caOf(kubeconfig: string): string {
  const data = kubeconfigParts(kubeconfig).caData;
  if (!data) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${DRIVER}: the admin kubeconfig of the first master has no cluster CA`);
  return Buffer.from(data, 'base64').toString('utf8');
}

async function registerVim(rc: SprayRun): Promise<{ vimId: string; entryId: string }> {
  const r = await registerClusterVim(rc.ctx, DRIVER, await rc.sprayState, { name: rc.params.vimName, description: `Kubernetes cluster (Kubespray) of VNF instance ${rc.ctx.instance.id}` });
  rc.info(`Kubernetes VIM ${rc.params.vimName} ${r.created ? 'registered' : 'already registered'} (${r.vimId})`);
  return r;
}

function targetNodes(rc: SprayRun, inv: Inventory, targets: readonly MgmtTarget[], change: MgmtTarget['change']): ClusterNode[] {
  const out: ClusterNode[] = [];
  for (const t of targets.filter((x) => x.change === change)) {
    const n = findNode(inv, t);
    if (!n) throw terminalError('VNFM_ERR_MGMT_REFUSED', `${DRIVER}: VNFC ${t.vnfcInfoId} (VDU ${t.vduId}) is not a worker of the cluster; only workers can be healed or scaled (the master and the load balancer cannot)`);
    if (n.role !== 'worker') throw terminalError('VNFM_ERR_MGMT_REFUSED', `${DRIVER}: ${n.name} is the cluster's master; the k8s-kubespray driver heals and scales workers only (heal the whole VNF to rebuild the cluster)`);
    out.push(n);
  }
  return out;
}

/** scale_start (SCALE_IN) and heal_start (worker VNFCs). */
async function removeWorkers(rc: SprayRun, change: 'remove' | 'heal'): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const inv = buildInventory(ctx.previousInstance ?? ctx.instance, ctx.flavour, rc.params);
  const targets = targetNodes(rc, inv, ctx.targets, change);
  const lbIp = lbAddress(ctx.instance, rc.params);
  // preflight: the Ansible server and the API answer before anything changes
  await rc.ansible();
  const api = await rc.kube();
  await api.list('v1', 'Node', undefined);
  const release = await ctx.lock(`ansible:${inventoryKey(rc.params)}`);
  try {
    await rc.step('inventory', undefined, async () => {
      await uploadInventory(rc, inv, lbIp);
      return {};
    });
    for (const w of targets) {
      const alive = await rc.step('node-state', w.name, async () => ({ alive: (await rc.answers(w)) && isNodeReady(await api.get(nodeRef(w.name))) }));
      if (alive.alive) {
        await rc.step('drain', w.name, async () => {
          if (!(await api.get(nodeRef(w.name)))) return { found: false };
          const r = await drainNode(api, w.name, { timeoutMs: rc.cfg.drainTimeoutSeconds * 1000, retryMs: rc.cfg.evictionRetryMs, force: drainForce(ctx.params), clock: rc.clock, signal: rc.signal, onProgress: (d) => rc.progressDetail('drain', w.name, d) });
          return { found: r.found, evicted: r.evicted.length };
        });
      }
      const extraVars: Record<string, string> = { node: w.name, delete_nodes_confirmation: 'yes', skip_confirmation: 'true' };
      if (!alive.alive) Object.assign(extraVars, { reset_nodes: 'false', allow_ungraceful_removal: 'true' });
      await play(rc, `remove-node-${w.name}`, { playbook: 'remove-node.yml', inv, extraVars, timeoutMs: rc.cfg.removeNodeTimeoutMs });
      await rc.step('node-gone', w.name, async () => {
        const left = await api.get(nodeRef(w.name));
        if (!left) return { deletedByVnfm: false };
        rc.warn(`remove-node.yml left the Node ${w.name}: deleting it through the API`);
        await deleteNode(api, w.name);
        return { deletedByVnfm: true };
      });
    }
    const gone = new Set(targets.map((t) => t.name));
    const left: Inventory = change === 'remove' ? { ...inv, workers: inv.workers.filter((n) => !gone.has(n.name)) } : inv;
    if (change === 'remove') {
      await rc.step('inventory-after', undefined, async () => {
        await uploadInventory(rc, left, lbIp);
        return {};
      });
    }
    await rc.step('lb', undefined, () => reconcileLb(rc, { ...left, workers: left.workers.filter((n) => !gone.has(n.name)) }, lbIp, api, [...gone]));
    const prev = previousMeta(ctx);
    return { vnfInfoMetadata: { k8sCluster: { ...(prev ?? { vimName: rc.params.vimName }), nodes: nodesMeta(left) } } };
  } finally {
    await release();
  }
}

function drainForce(params: Obj): boolean {
  const d = (params as { drain?: { force?: unknown } }).drain;
  return d?.force === true;
}

/** scale_end (SCALE_OUT) and heal_end (worker VNFCs). */
async function addWorkers(rc: SprayRun, change: 'add' | 'heal'): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const inv = buildInventory(ctx.instance, ctx.flavour, rc.params, { checkCollisions: true });
  let added = targetNodes(rc, inv, ctx.targets, change);
  if (added.length === 0 && change === 'add') {
    const before = new Set((ctx.previousInstance?.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => r.id));
    added = inv.workers.filter((n) => !before.has(n.vnfcResourceInfoId));
  }
  const lbIp = lbAddress(ctx.instance, rc.params);
  await rc.ansible();
  const api = await rc.kube();
  await api.list('v1', 'Node', undefined);
  const limit = added.map((n) => n.name).join(',');
  const release = await ctx.lock(`ansible:${inventoryKey(rc.params)}`);
  try {
    await rc.step('inventory', undefined, async () => {
      await uploadInventory(rc, inv, lbIp);
      await forgetHostKeys(rc, added);
      return {};
    });
    if (added.length > 0) {
      // the new VMs may still be booting: wait until they answer SSH (bounded) before the plays
      for (const n of added) await rc.host(n, true);
      await play(rc, 'facts', { playbook: 'facts.yml', inv, timeoutMs: rc.cfg.factsTimeoutMs });
      await play(rc, `scale-${limit}`, { playbook: 'scale.yml', inv, limit, timeoutMs: rc.cfg.scaleTimeoutPerNodeMs * added.length });
    }
  } finally {
    await release();
  }
  for (const n of added) {
    rc.progress('wait-ready', n.name);
    await waitNodeReady(api, n.name, { timeoutMs: rc.cfg.nodeReadyTimeoutMs, pollMs: rc.cfg.pollIntervalMs, clock: rc.clock, signal: rc.signal });
  }
  await rc.step('lb', undefined, () => reconcileLb(rc, inv, lbIp, api, []));
  await rc.prunePins([...allNodes(inv).map((n) => n.resourceId), rc.ansibleSpec().pinKey, `lb:${lbIp}`]);
  const prev = previousMeta(ctx);
  return { vnfInfoMetadata: { k8sCluster: { ...(prev ?? { vimName: rc.params.vimName }), nodes: nodesMeta(inv) } } };
}

/** terminate_end and whole heal_start: VIM, LB section, inventory directory, sealed state. */
async function teardown(rc: SprayRun, why: 'terminate' | 'heal' | 'rollback'): Promise<MgmtResult> {
  const ctx = rc.ctx;
  const prev = previousMeta(ctx);
  const name = prev?.vimName ?? rc.params.vimName;
  const removed = await rc.step('delete-vim', undefined, async () => ({ vimIds: await deleteClusterVims(ctx, name, prev?.vimId) }));
  const st = await rc.sprayState;
  const lbIp = st.lbIp ?? prev?.lbIp ?? safeLbAddress(ctx.previousInstance, rc.params);
  const ownLb = lbIp ? ownLbVnfc(ctx, st, lbIp) : undefined;
  if (lbIp && ownLb) {
    // Tacker's layout: the LB is a VM of this VNF; it goes with the stack (terminate) or is re-created
    // (whole heal), so its configuration needs no clean-up (and, at terminate_end, it is already gone).
    rc.info(`the load balancer ${lbIp} is VNFC ${ownLb.vnfcResourceInfoId} (VDU ${ownLb.vduId}) of this VNF: it goes with the VNF, its configuration is not cleaned up`, { step: 'lb-remove', lb: lbIp });
  } else if (lbIp) {
    await rc.step('lb-remove', undefined, async () => {
      const release = await ctx.lock(`lb:${lbIp}`);
      try {
        const h = await rc.lb(lbIp);
        const r = await removeOwner(h.session, lbOwner('cluster', ctx.instance.id), lbOptions(rc));
        return { action: r.action };
      } finally {
        await release();
      }
    });
  }
  await rc.step('inventory-remove', undefined, async () => {
    const pth = paths(rc.params);
    const release = await ctx.lock(`ansible:${inventoryKey(rc.params)}`);
    try {
      const h = await rc.ansible();
      const r = await h.exec(`if [ -f ${shq(pth.marker)} ] && [ "$(cat ${shq(pth.marker)})" = ${shq(ctx.instance.id)} ]; then rm -rf ${shq(pth.inv)} && echo removed; elif [ -e ${shq(pth.inv)} ]; then echo foreign; else echo absent; fi`);
      const out = r.stdout.trim();
      if (out === 'foreign') rc.warn(`the inventory directory ${pth.inv} was not created for this instance: left in place`);
      return { result: out };
    } finally {
      await release();
    }
  });
  await rc.step('forget-cluster', undefined, async () => {
    await ctx.instanceState.save({});
    return {};
  });
  rc.info(`Kubernetes cluster ${name} removed (${why})`);
  return { vimConnectionInfo: { removeVimIds: removed.vimIds }, vnfInfoMetadata: { k8sCluster: null } };
}

/** The VNFC of this instance that is the LB (recorded when the LB was configured, else found by address), if any. */
function ownLbVnfc(ctx: MgmtContext, st: SprayInstanceState, lbIp: string): { vnfcResourceInfoId: string; vduId: string } | undefined {
  if (st.lbVnfc && st.lbIp === lbIp) return st.lbVnfc;
  const r = vnfcOfAddress(ctx.previousInstance, lbIp) ?? vnfcOfAddress(ctx.instance, lbIp);
  return r ? { vnfcResourceInfoId: r.id, vduId: r.vduId } : undefined;
}

function safeLbAddress(instance: VnfInstanceRecord, p: KubesprayParams): string | undefined {
  try {
    return lbAddress(instance, p);
  } catch (e) {
    if (isVnfmError(e)) return undefined;
    throw e;
  }
}
