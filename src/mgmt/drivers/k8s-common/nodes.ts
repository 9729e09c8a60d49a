/**
 * Nodes of a Kubernetes cluster VNF as the cluster drivers see them (spec §2.0.2, §2.0.3): a VNFC
 * of the master or worker VDU with its ids, addresses and name (`master<last octet>` /
 * `worker<last octet>`, Tacker's naming), names compared exactly everywhere.
 */
import { isIP } from 'node:net';

export type NodeRole = 'master' | 'worker';

/** One node of the cluster. */
export interface ClusterNode {
  name: string;
  role: NodeRole;
  vnfcResourceInfoId: string;
  /** vnfcInfo id (the id heal requests name), when the instance has one for this VNFC. */
  vnfcInfoId?: string;
  vduId: string;
  /** The VIM resource (server id): host key pins are kept per resource. */
  resourceId: string;
  /** Cluster address (kubelet / etcd / API server). */
  nicIp: string;
  /** Where the driver logs in. */
  sshIp: string;
}

/** `master<N>` / `worker<N>`: N = last octet of an IPv4 address (last group of an IPv6 one). */
export function nodeName(role: NodeRole, ip: string): string {
  const v = isIP(ip);
  if (v === 4) return `${role}${ip.split('.')[3]}`;
  const last = ip.split(':').pop() ?? '';
  return `${role}${last === '' ? '0' : last.toLowerCase()}`;
}

/** Names given to more than one node: `name -> VNFC ids`. Empty when all names are distinct. */
export function nameCollisions(nodes: readonly ClusterNode[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const n of nodes) by.set(n.name, [...(by.get(n.name) ?? []), n.vnfcResourceInfoId]);
  for (const [k, v] of by) if (v.length < 2) by.delete(k);
  return by;
}

