/**
 * The node inventory of a Kubernetes cluster VNF, built from the instance the engine observed (spec
 * §2.0.2), never from ad-hoc VIM calls: for every VNFC of the master / worker VDU its ids, resource
 * id, NIC (cluster) address, SSH address and node name (`master<last octet>` / `worker<last octet>`,
 * Tacker's naming). Names are compared exactly everywhere; two nodes with the same name are refused
 * (422) before anything is touched (§2.0.3).
 */
import { isIP } from 'node:net';
import { type ClusterNode, nameCollisions, nodeName, type NodeRole } from './nodes.ts';
import { vnfmError } from '../../../errors.ts';
import type { VnfcResourceInfo, VnfInstanceRecord } from '../../../model/vnf-instance.ts';
import type { FlavourModel } from '../../../packages/vnfd-model.ts';
import { addressByCpName, type CpAddressKind, vnfcAddresses, vnfPortAddresses } from '../../addresses.ts';

export { type ClusterNode, nameCollisions, nodeName, type NodeRole };

/** How a role's nodes are found and reached (`master_node` / `worker_node` of either driver). */
export interface NodeParams {
  aspectId?: string;
  vduId?: string;
  sshCpName: string;
  nicCpName?: string;
  /** Which address of the `ssh_cp_name` CP SSH goes to (default `fixed`, as Tacker). */
  sshAddress?: CpAddressKind;
}

/** The parameters the inventory reads. */
interface RoleParams {
  masterNode: NodeParams & { clusterCpName?: string; clusterIp?: string; clusterFipName?: string };
  workerNode: NodeParams;
}

/** The whole inventory. */
export interface Inventory {
  /** In the instance's order; the first is the main master. */
  masters: ClusterNode[];
  workers: ClusterNode[];
  masterVduId: string;
  workerVduId: string;
}

/**
 * The VDU of one role: `vdu_id` when given, else the VDU bound to `nic_cp_name` (or `ssh_cp_name`)
 * in the flavour. Undefined when none matches.
 */
export function roleVdu(flavour: Pick<FlavourModel, 'vdus' | 'cps'>, n: Pick<NodeParams, 'vduId' | 'nicCpName' | 'sshCpName'>): string | undefined {
  if (n.vduId) return flavour.vdus[n.vduId] ? n.vduId : undefined;
  for (const cp of [n.nicCpName, n.sshCpName]) {
    if (!cp) continue;
    const vdu = flavour.cps[cp]?.vduId;
    if (vdu && flavour.vdus[vdu]) return vdu;
  }
  return undefined;
}

/** The VDUs of both roles; 422 when one cannot be found or both are the same. */
export function roleVdus(flavour: Pick<FlavourModel, 'vdus' | 'cps'>, p: RoleParams): { master: string; worker: string } {
  const master = roleVdu(flavour, p.masterNode);
  const worker = roleVdu(flavour, p.workerNode);
  if (!master) throw vnfmError('VNFM_ERR_MGMT_FAILED', `no VDU of the flavour is bound to master_node's CP '${p.masterNode.nicCpName ?? p.masterNode.sshCpName}' (give master_node.vdu_id)`);
  if (!worker) throw vnfmError('VNFM_ERR_MGMT_FAILED', `no VDU of the flavour is bound to worker_node's CP '${p.workerNode.nicCpName ?? p.workerNode.sshCpName}' (give worker_node.vdu_id)`);
  if (master === worker) throw vnfmError('VNFM_ERR_MGMT_FAILED', `master_node and worker_node resolve to the same VDU '${master}'`);
  return { master, worker };
}

function vnfcInfoIdOf(instance: VnfInstanceRecord, r: VnfcResourceInfo): string | undefined {
  return instance.instantiatedVnfInfo?.vnfcInfo?.find((v) => v.vnfcResourceInfoId === r.id)?.id;
}

function nodeOf(instance: VnfInstanceRecord, r: VnfcResourceInfo, role: NodeRole, n: NodeParams): ClusterNode {
  const nicCp = n.nicCpName ?? n.sshCpName;
  const nicIp = addressByCpName(r, nicCp, 'fixed');
  const sshIp = addressByCpName(r, n.sshCpName, n.sshAddress ?? 'fixed');
  if (!nicIp || !sshIp) {
    const which = !nicIp ? `nic_cp_name '${nicCp}'` : `ssh_cp_name '${n.sshCpName}'${n.sshAddress === 'floating' ? ' (ssh_address: floating: the CP has no floating IP)' : ''}`;
    throw vnfmError('VNFM_ERR_MGMT_FAILED', `VNFC ${r.id} (${r.vduId}) has no address for ${which}`);
  }
  const id = vnfcInfoIdOf(instance, r);
  return { name: nodeName(role, nicIp), role, vnfcResourceInfoId: r.id, ...(id ? { vnfcInfoId: id } : {}), vduId: r.vduId, resourceId: r.computeResource.resourceId, nicIp, sshIp };
}

/** Throws 422 when two nodes would get the same name. */
export function assertNoCollision(nodes: readonly ClusterNode[]): void {
  const c = nameCollisions(nodes);
  if (c.size === 0) return;
  const list = [...c].map(([name, ids]) => `${name} (VNFCs ${ids.join(', ')})`).join('; ');
  throw vnfmError('VNFM_ERR_MGMT_REFUSED', `node names collide (names come from the last octet of the NIC address): ${list}; nothing was changed`);
}

/**
 * The inventory of an instance. Every VNFC of the master and worker VDUs must have its addresses;
 * with `checkCollisions` (instantiate, scale out, heal end) duplicate names are refused.
 */
export function buildInventory(instance: VnfInstanceRecord, flavour: Pick<FlavourModel, 'vdus' | 'cps'>, p: RoleParams, opts: { checkCollisions?: boolean } = {}): Inventory {
  const vdus = roleVdus(flavour, p);
  const vnfcs = instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
  const masters = vnfcs.filter((r) => r.vduId === vdus.master).map((r) => nodeOf(instance, r, 'master', p.masterNode));
  const workers = vnfcs.filter((r) => r.vduId === vdus.worker).map((r) => nodeOf(instance, r, 'worker', p.workerNode));
  if (opts.checkCollisions) assertNoCollision([...masters, ...workers]);
  return { masters, workers, masterVduId: vdus.master, workerVduId: vdus.worker };
}

/** All nodes, masters first. */
export function allNodes(inv: Inventory): ClusterNode[] {
  return [...inv.masters, ...inv.workers];
}

/** The node of a VNFC, by vnfcInfo id or vnfcResourceInfo id (exact). */
export function findNode(inv: Inventory, id: { vnfcInfoId?: string; vnfcResourceInfoId?: string }): ClusterNode | undefined {
  return allNodes(inv).find((n) => (id.vnfcResourceInfoId !== undefined && n.vnfcResourceInfoId === id.vnfcResourceInfoId) || (id.vnfcInfoId !== undefined && n.vnfcInfoId === id.vnfcInfoId));
}

function addressesOfExtCp(instance: VnfInstanceRecord, cpdId: string): string[] {
  const out: string[] = [];
  for (const e of instance.instantiatedVnfInfo?.extCpInfo ?? []) {
    if (e.cpdId !== cpdId) continue;
    for (const pi of (e.cpProtocolInfo as { ipOverEthernet?: { ipAddresses?: { addresses?: string[] }[] } }[] | undefined) ?? []) {
      for (const ip of pi.ipOverEthernet?.ipAddresses ?? []) out.push(...(ip.addresses ?? []));
    }
  }
  return out;
}

/**
 * The cluster (API) address (`-i` of the install script): `master_node.cluster_ip` when given; a
 * master CP named `cluster_cp_name` (the master's own port for a single master; the first
 * master's when several masters carry it); an external CP of that name (e.g. the VIP port); a
 * CP of that name recorded on any VNFC. Undefined when nothing carries it.
 */
export function clusterAddress(instance: VnfInstanceRecord, inv: Inventory, p: Pick<RoleParams, 'masterNode'>): string | undefined {
  const m = p.masterNode;
  if (m.clusterIp) return m.clusterIp;
  if (!m.clusterCpName) return undefined;
  const cpName = m.clusterCpName;
  const vnfcs = instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
  for (const node of inv.masters) {
    const r = vnfcs.find((v) => v.id === node.vnfcResourceInfoId);
    const cp = r ? vnfcAddresses(r).find((c) => c.cpdId === m.clusterCpName) : undefined;
    if (cp?.fixed[0]) return cp.fixed[0];
  }
  const ext = addressesOfExtCp(instance, cpName).find((a) => isIP(a) !== 0);
  if (ext) return ext;
  // A port of the VNF outside every VNFC (the VIP port of an HA cluster).
  const port = vnfPortAddresses(instance, cpName).find((a) => isIP(a) !== 0);
  if (port) return port;
  for (const r of vnfcs) {
    const cp = vnfcAddresses(r).find((c) => c.cpdId === m.clusterCpName);
    if (cp?.fixed[0]) return cp.fixed[0];
  }
  return undefined;
}

/**
 * The address the VNFM uses for the API server when the nodes are reached through floating IPs
 * (Tacker: the VIP's floating IP `cluster_fip_name`, else the first master's SSH address);
 * undefined when SSH goes to the fixed addresses.
 */
export function floatingApiHost(instance: VnfInstanceRecord, inv: Inventory, p: Pick<RoleParams, 'masterNode'>): string | undefined {
  const first = inv.masters[0];
  if (!first || first.sshIp === first.nicIp) return undefined;
  const vnfc = (instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).find((r) => r.id === first.vnfcResourceInfoId);
  // SSH to another fixed address (another CP of the master) is not SSH through a floating IP
  if (vnfc && !vnfcAddresses(vnfc).some((c) => c.floating.includes(first.sshIp))) return undefined;
  const fip = p.masterNode.clusterFipName;
  if (fip) {
    const ext = addressesOfExtCp(instance, fip)[0];
    if (ext) return ext;
    for (const r of instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []) {
      const cp = vnfcAddresses(r).find((c) => c.cpdId === fip);
      const a = cp?.floating[0] ?? cp?.fixed[0];
      if (a) return a;
    }
  }
  return first.sshIp;
}
