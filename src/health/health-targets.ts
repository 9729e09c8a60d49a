/**
 * What the health watchers watch, read from the store: the VNFCs of the INSTANTIATED instances
 * whose VIM connection is of a watched VIM type, grouped by connection key (one target per VIM
 * project, not per VNF), each VIM resource (`vnfcResourceInfo[].computeResource.resourceId`)
 * mapped back to its VNFC(s).
 *
 * Connection key: `<vimType>:<vimId>` for a registered VIM, else `<vimType>:<endpoint>|<project>`
 * (the project is read from the opened connection). A VNFC's connection is its
 * `computeResource.vimConnectionId` when the instance has that entry, else the instance's infra
 * connection ({@link InstanceService.infraConnectionKey}). Kubernetes namespaces come from
 * `instantiatedVnfInfo.metadata.namespace`, where the Kubernetes infra driver records them.
 */
import { type Kysely, sql } from 'kysely';
import type { HealthWatchTarget } from '../infra/vim-plugin.ts';
import { InstanceService } from '../lcm/instance-service.ts';
import type { InstantiatedVnfInfo } from '../model/vnf-instance.ts';
import type { Database } from '../store/schema.ts';
import type { VimConnection } from '../vims/vim-registry.ts';
import type { VnfcRef } from './health-store.ts';

/** One target as loaded: its VNFCs by resource id, and where its opened connection comes from. */
export interface LoadedTarget {
  key: string;
  vimType: string;
  /** The opened connection (secrets included). */
  vim: VimConnection;
  resources: Map<string, VnfcRef[]>;
  namespaces: Set<string>;
}

/** Everything watched now. */
export interface Watched {
  targets: Map<string, LoadedTarget>;
  vnfcs: VnfcRef[];
}

interface InstanceRow {
  id: string;
  project: string | null;
  vim_connection_info: Record<string, Partial<VimConnection>> | null;
  instantiated_vnf_info: InstantiatedVnfInfo | null;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The stable key of a connection (see the module comment). */
export function connectionKey(conn: Partial<VimConnection> & { vimType: string }): string {
  const vimId = str(conn.vimId);
  if (vimId) return `${conn.vimType}:${vimId}`;
  const a = conn.accessInfo ?? {};
  const project = str(a.project) ?? str(a.projectId) ?? str(a.project_id) ?? str(a.tenant) ?? '';
  return `${conn.vimType}:${str(conn.interfaceInfo?.endpoint) ?? ''}|${project}`;
}

/** The VNFCs of one instance with the connection entry each lives on. */
export function vnfcsOf(row: Pick<InstanceRow, 'id' | 'project' | 'vim_connection_info' | 'instantiated_vnf_info'>): { ref: VnfcRef; connectionId: string }[] {
  const conns = row.vim_connection_info ?? {};
  const info = row.instantiated_vnf_info;
  if (!info) return [];
  const infraKey = InstanceService.infraConnectionKey(conns as Record<string, { extra?: Record<string, unknown> }>);
  const vnfcInfoOf = new Map((info.vnfcInfo ?? []).map((v) => [v.vnfcResourceInfoId, v.id]));
  const out: { ref: VnfcRef; connectionId: string }[] = [];
  for (const r of info.vnfcResourceInfo ?? []) {
    const resourceId = str(r.computeResource?.resourceId);
    if (!resourceId) continue;
    const own = str(r.computeResource.vimConnectionId);
    const connectionId = own !== undefined && conns[own] ? own : infraKey;
    if (connectionId === undefined) continue;
    out.push({
      connectionId,
      ref: { vnfInstanceId: row.id, project: row.project ?? null, vnfcInfoId: vnfcInfoOf.get(r.id) ?? r.id, vnfcResourceInfoId: r.id, vduId: r.vduId, resourceId, vimConnectionId: connectionId },
    });
  }
  return out;
}

/** Loads the targets and VNFCs on VIMs of `vimTypes`, opening each target's connection once. */
export async function loadWatched(db: Kysely<Database>, instances: Pick<InstanceService, 'vimConnections'>, vimTypes: readonly string[]): Promise<Watched> {
  const targets = new Map<string, LoadedTarget>();
  const vnfcs: VnfcRef[] = [];
  if (vimTypes.length === 0) return { targets, vnfcs };
  const rows = await sql<InstanceRow>`
    select id, project, vim_connection_info, instantiated_vnf_info from vnf_instance
    where instantiation_state = 'INSTANTIATED' order by created_at, id`.execute(db);
  for (const row of rows.rows) {
    const conns = row.vim_connection_info ?? {};
    let opened: Record<string, VimConnection> | undefined;
    const open = async () => {
      opened ??= await instances.vimConnections(row.id).catch(() => ({}));
      return opened;
    };
    const namespace = str(row.instantiated_vnf_info?.metadata?.namespace);
    for (const { ref, connectionId } of vnfcsOf(row)) {
      const stored = conns[connectionId];
      const vimType = str(stored?.vimType);
      if (!stored || !vimType || !vimTypes.includes(vimType)) continue;
      // a connection without vimId is keyed by its project, which only the opened connection has;
      // one with a vimId is opened once per target
      const known = str(stored.vimId) ? targets.get(connectionKey({ ...stored, vimType })) : undefined;
      const vim = known ? known.vim : (await open())[connectionId];
      if (!vim) continue;
      const key = known ? known.key : connectionKey(vim);
      let t = targets.get(key);
      if (!t) {
        t = { key, vimType, vim, resources: new Map(), namespaces: new Set() };
        targets.set(key, t);
      }
      const list = t.resources.get(ref.resourceId) ?? [];
      list.push(ref);
      t.resources.set(ref.resourceId, list);
      if (namespace) t.namespaces.add(namespace);
      vnfcs.push(ref);
    }
  }
  return { targets, vnfcs };
}

/** The watcher's view of a loaded target. */
export function toWatchTarget(t: LoadedTarget): HealthWatchTarget {
  return { key: t.key, vim: t.vim, resources: new Set(t.resources.keys()), ...(t.namespaces.size > 0 ? { namespaces: [...t.namespaces].sort() } : {}) };
}
