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
import { terminalError, vnfmError } from '../../../errors.ts';
import type { MgmtContext, MgmtResult } from '../../mgmt-driver.ts';
import { type OwnerKey, waitNodeReady } from '../k8s-common/drain.ts';
import { allNodes, buildInventory, type ClusterNode, type Inventory } from '../k8s-common/inventory.ts';
import { warmKubeLibrary } from '../k8s-common/kube.ts';
import { deleteClusterVims } from '../k8s-common/vim.ts';
import { memberIdHex } from './etcd.ts';
import { drainParamsOf, effectiveInstallationParam, type EffectiveParams, installationParamOf, type KubeadmParams, parseKubeadmParams } from './params.ts';
import { clusterCa, etcdMembers, type Host, requireInstallMarkers, runInstall, updateHostsBlock } from './remote.ts';
import { ADMIN_CONF, RunContext } from './run-context.ts';
import { KUBERNETES_VIM_TYPE } from '../../../infra/kubernetes/vim-type.ts';
import { healEnd, healStart } from './heal.ts';
import { apiUrlOf, clusterIpOf, connectAll, fallbackMaster, hostsEntries, installEnv, installReporting, type K8sClusterMeta, metaResult, nodesMeta, previousMeta, registerVim, removeNode, scriptBytes, targetNodes, waitOwners } from './hook-support.ts';
import { joinMaster, joinWorker } from './join.ts';

export type { K8sClusterMeta, K8sNodeMeta } from './hook-support.ts';

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
  warmKubeLibrary();
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
      ...installReporting(rc, 'install-master', main.name),
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

/** The validated parameters of a hook. */
export function validatedParams(ctx: MgmtContext, eff: EffectiveParams): KubeadmParams {
  return parseKubeadmParams(eff.param, { instanceId: ctx.instance.id, packageFiles: ctx.vnfd?.files });
}
