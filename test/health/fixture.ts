/**
 * Shared pieces of the VNFC health tests: instances written straight into the store (no LCM
 * operation), a fake VIM plugin whose health watcher hands the test its deps, op occs to start
 * and end.
 */
import { sql } from 'kysely';
import type { HealthWatcherDeps, VimPlugin } from '../../src/infra/vim-plugin.ts';
import type { VimConnection } from '../../src/vims/vim-registry.ts';
import type { Store } from '../../src/store/db.ts';

export const FAKE_VIM_TYPE = 'ETSINFV.FAKEHEALTH.V_1';

/** One VNFC of a test instance. */
export interface TestVnfc {
  rid: string;
  vduId: string;
  resourceId: string;
  /** vnfcInfo id (absent: the instance has no vnfcInfo for it). */
  infoId?: string;
}

/** Writes an INSTANTIATED instance with these VNFCs on `vim` (vimId set: a registered VIM). */
export async function putInstance(store: Store, id: string, vnfcs: TestVnfc[], o: { vimId?: string; project?: string | null; props?: Record<string, unknown>; namespace?: string; state?: string } = {}): Promise<void> {
  await sql`insert into vnf_package (id, onboarding_state, operational_state, usage_state) values ('pkg-health', 'ONBOARDED', 'ENABLED', 'IN_USE') on conflict do nothing`.execute(store.db);
  const conn = { vimType: FAKE_VIM_TYPE, ...(o.vimId ? { vimId: o.vimId } : {}), interfaceInfo: { endpoint: 'http://127.0.0.1:1/fake' } };
  const info = {
    flavourId: 'simple',
    vnfState: 'STARTED',
    vnfcResourceInfo: vnfcs.map((v) => ({ id: v.rid, vduId: v.vduId, computeResource: { resourceId: v.resourceId, vimConnectionId: 'vim1' } })),
    vnfcInfo: vnfcs.filter((v) => v.infoId).map((v) => ({ id: v.infoId, vduId: v.vduId, vnfcResourceInfoId: v.rid, vnfcState: 'STARTED' })),
    ...(o.namespace ? { metadata: { namespace: o.namespace } } : {}),
  };
  await sql`
    insert into vnf_instance (id, vnfd_id, vnf_pkg_id, vnf_provider, vnf_product_name, vnf_software_version, vnfd_version, instantiation_state,
      vnf_configurable_properties, vim_connection_info, instantiated_vnf_info, created_api, project)
    values (${id}, 'vnfd-health', 'pkg-health', 'p', 'n', '1', '1', ${o.state ?? 'INSTANTIATED'}, ${JSON.stringify(o.props ?? {})}::jsonb,
      ${JSON.stringify({ vim1: conn })}::jsonb, ${JSON.stringify(info)}::jsonb, 'v2', ${o.project ?? null})`.execute(store.db);
}

/** Replaces the VNFCs of an instance (what a heal or scale does). */
export async function setVnfcs(store: Store, id: string, vnfcs: TestVnfc[]): Promise<void> {
  const info = {
    flavourId: 'simple',
    vnfState: 'STARTED',
    vnfcResourceInfo: vnfcs.map((v) => ({ id: v.rid, vduId: v.vduId, computeResource: { resourceId: v.resourceId, vimConnectionId: 'vim1' } })),
    vnfcInfo: vnfcs.filter((v) => v.infoId).map((v) => ({ id: v.infoId, vduId: v.vduId, vnfcResourceInfoId: v.rid, vnfcState: 'STARTED' })),
  };
  await sql`update vnf_instance set instantiated_vnf_info = ${JSON.stringify(info)}::jsonb where id = ${id}`.execute(store.db);
}

/** Starts an operation of the instance (an active op occ). */
export async function startOp(store: Store, instanceId: string, opId: string): Promise<void> {
  await sql`insert into op_occ (id, vnf_instance_id, operation, operation_state, state_entered_time, start_time, api_version)
    values (${opId}, ${instanceId}, 'HEAL', 'PROCESSING', now(), now(), 'v2')`.execute(store.db);
}

/** Ends it. */
export async function endOp(store: Store, opId: string): Promise<void> {
  await sql`update op_occ set operation_state = 'COMPLETED' where id = ${opId}`.execute(store.db);
}

/** The connections of an instance as the LCM's InstanceService opens them (no sealed secrets here). */
export function fakeInstances(store: Store): { vimConnections(id: string): Promise<Record<string, VimConnection>> } {
  return {
    async vimConnections(id) {
      const r = (await sql<{ c: Record<string, VimConnection> }>`select vim_connection_info as c from vnf_instance where id = ${id}`.execute(store.db)).rows[0];
      const out: Record<string, VimConnection> = {};
      for (const [k, v] of Object.entries(r?.c ?? {})) out[k] = { ...v, accessInfo: { project: 'demo' } };
      return out;
    },
  };
}

/** A VIM plugin whose health watcher only records what it was built with. */
export function fakeHealthPlugin(): { plugin: VimPlugin; deps: () => HealthWatcherDeps; started: () => number; stopped: () => number } {
  let deps: HealthWatcherDeps | undefined;
  let started = 0;
  let stopped = 0;
  const plugin = {
    kind: 'fakehealth',
    vimType: FAKE_VIM_TYPE,
    aliases: [],
    healthWatcher(d: HealthWatcherDeps) {
      deps = d;
      return {
        start: () => {
          started++;
        },
        stop: () => {
          stopped++;
        },
      };
    },
  } as unknown as VimPlugin;
  return {
    plugin,
    deps: () => {
      if (!deps) throw new Error('the watcher was not built');
      return deps;
    },
    started: () => started,
    stopped: () => stopped,
  };
}

/** The VnfcHealthChanged events of the feed, oldest first. */
export async function healthEvents(store: Store): Promise<Record<string, unknown>[]> {
  const r = await sql<{ event: Record<string, unknown> }>`select event from event_log where event->>'notificationType' = 'VnfcHealthChanged' order by id`.execute(store.db);
  return r.rows.map((x) => x.event);
}
