/**
 * Seeds a store with the bench population: N VNF instances (every (N / instantiated)-th one
 * INSTANTIATED, with instance info shaped like the engine's: 2 VNFCs, storage, virtual links, ext
 * CPs, vimConnectionInfo; and an INSTANTIATE op occ with resource changes and engine checkpoints),
 * inserted directly through the store in batches of 500. Used by bench/lists.ts and
 * bench/restart.ts.
 */
import { randomUUID } from 'node:crypto';
import { json, type Store } from '../src/store/db.ts';

/** What was seeded. */
export interface Seeded {
  /** Every instance id, oldest first. */
  ids: string[];
  /** The INSTANTIATED ones. */
  instantiatedIds: string[];
  /** Time taken (ms). */
  loadMs: number;
}

/** Inserts the population into `store` (an empty, migrated database). */
export async function seedInstances(store: Store, N: number, INSTANTIATED: number): Promise<Seeded> {

  const PKG = randomUUID();
  const VNFD = 'b1bb0ce7-ebca-4fa7-95ed-4840d70a1177';
  await store.db
    .insertInto('vnf_package')
    .values({
      id: PKG,
      onboarding_state: 'ONBOARDED',
      operational_state: 'ENABLED',
      usage_state: 'IN_USE',
      vnfd_id: VNFD,
      vnf_provider: 'Company',
      vnf_product_name: 'Sample VNF',
      vnf_software_version: '1.0',
      vnfd_version: '1.0',
      checksum: json({ algorithm: 'SHA-256', hash: 'x'.repeat(64) }),
      user_defined_data: json({}),
      vnfd: json(null),
    })
    .execute();

  function instanceInfo(i: number): Record<string, unknown> {
    const vnfc = (k: number) => ({
      id: `vnfc-${i}-${k}`,
      vduId: `VDU${k + 1}`,
      computeResource: { vimConnectionId: 'vim1', resourceId: randomUUID(), vimLevelResourceType: 'OS::Nova::Server' },
      storageResourceIds: [`st-${i}-${k}`],
      vnfcCpInfo: [{ id: `cp-${i}-${k}`, cpdId: `VDU${k + 1}_CP1`, vnfExtCpId: `ext-${i}` }],
      metadata: { stableKey: `VDU${k + 1}` },
    });
    return {
      flavourId: 'simple',
      vnfState: 'STARTED',
      instantiationLevelId: 'instantiation_level_1',
      scaleStatus: [{ aspectId: 'VDU1_scale', scaleLevel: 0 }],
      maxScaleLevels: [{ aspectId: 'VDU1_scale', scaleLevel: 2 }],
      extCpInfo: [{ id: `ext-${i}`, cpdId: 'VDU1_CP1', cpProtocolInfo: [{ layerProtocol: 'IP_OVER_ETHERNET' }], extLinkPortId: `lp-${i}` }],
      extVirtualLinkInfo: [{ id: 'ext-vl', resourceHandle: { resourceId: randomUUID() }, extLinkPorts: [{ id: `lp-${i}`, resourceHandle: { resourceId: randomUUID() }, cpInstanceId: `cp-${i}-0` }] }],
      vnfcResourceInfo: [vnfc(0), vnfc(1)],
      vnfVirtualLinkResourceInfo: [{ id: `vl-${i}`, vnfVirtualLinkDescId: 'internalVL1', networkResource: { resourceId: randomUUID(), vimLevelResourceType: 'OS::Neutron::Net' }, vnfLinkPorts: [{ id: `lp2-${i}`, resourceHandle: { resourceId: randomUUID() } }] }],
      virtualStorageResourceInfo: [0, 1].map((k) => ({ id: `st-${i}-${k}`, virtualStorageDescId: `VirtualStorage${k}`, storageResource: { resourceId: randomUUID(), vimLevelResourceType: 'OS::Cinder::Volume' } })),
      vnfcInfo: [0, 1].map((k) => ({ id: `VDU${k + 1}-vnfc-${i}-${k}`, vduId: `VDU${k + 1}`, vnfcResourceInfoId: `vnfc-${i}-${k}`, vnfcState: 'STARTED' })),
    };
  }

  const t0 = Date.now();
  const ids: string[] = [];
  const instantiatedIds: string[] = [];
  const BATCH = 500;
  const created0 = Date.now() - N * 1000;
  for (let start = 0; start < N; start += BATCH) {
    const rows = [];
    const ops = [];
    for (let i = start; i < Math.min(N, start + BATCH); i++) {
      const id = randomUUID();
      ids.push(id);
      const inst = i % Math.max(1, Math.floor(N / INSTANTIATED)) === 0 && instantiatedIds.length < INSTANTIATED;
      if (inst) instantiatedIds.push(id);
      const created = new Date(created0 + i * 1000).toISOString();
      rows.push({
        id,
        vnf_instance_name: `bench-${String(i).padStart(5, '0')}`,
        vnf_instance_description: `benchmark instance ${i}`,
        vnfd_id: VNFD,
        vnf_pkg_id: PKG,
        vnf_provider: 'Company',
        vnf_product_name: 'Sample VNF',
        vnf_software_version: '1.0',
        vnfd_version: '1.0',
        instantiation_state: inst ? 'INSTANTIATED' : 'NOT_INSTANTIATED',
        vnf_configurable_properties: json(inst ? { isAutoscaleEnabled: false } : null),
        vim_connection_info: json(inst ? { vim1: { vimId: randomUUID(), vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3', interfaceInfo: { endpoint: 'http://127.0.0.1:5000/v3' } } } : {}),
        vim_secrets: null,
        instantiated_vnf_info: json(inst ? instanceInfo(i) : null),
        metadata: json({ tier: i % 10 === 0 ? 'gold' : 'silver', owner: `team-${i % 7}` }),
        extensions: json(null),
        created_api: 'v2',
        created_at: created,
        rev: 0,
      });
      if (inst) {
        ops.push({
          id: randomUUID(),
          vnf_instance_id: id,
          operation: 'INSTANTIATE',
          operation_state: 'COMPLETED',
          state_entered_time: new Date(created0 + i * 1000 + 30_000).toISOString(),
          start_time: new Date(created0 + i * 1000 + 1_000).toISOString(),
          is_automatic_invocation: false,
          is_cancel_pending: false,
          cancel_mode: null,
          operation_params: json({ flavourId: 'simple', instantiationLevelId: 'instantiation_level_1', additionalParams: { lcm_hook: false } }),
          error: json(null),
          resource_changes: json({ affectedVnfcs: [0, 1].map((k) => ({ id: `vnfc-${i}-${k}`, vduId: `VDU${k + 1}`, changeType: 'ADDED', computeResource: { resourceId: randomUUID() } })) }),
          changed_info: json(null),
          grant_id: randomUUID(),
          grant_request: json({ big: 'g'.repeat(2000) }),
          grant: json({ big: 'g'.repeat(2000) }),
          ctx: json({ steps: ['grant', 'infra', 'observe'], journal: 'j'.repeat(4000) }),
          pending: null,
          attempts: 1,
          api_version: 'v2',
          created_at: new Date(created0 + i * 1000 + 1_000).toISOString(),
        });
      }
    }
    await store.db.insertInto('vnf_instance').values(rows).execute();
    if (ops.length) await store.db.insertInto('op_occ').values(ops).execute();
  }
  const loadMs = Date.now() - t0;
  return { ids, instantiatedIds, loadMs };
}
