/**
 * Instances and flavours shaped like Tacker's kubeadm sample package (VDUs masterNode/workerNode,
 * CPs masterNode_CP1/workerNode_CP2, aspects master_instance/worker_instance, the VIP port
 * vip_CP as an external CP), for the k8s-kubeadm driver tests.
 */
import type { VnfcResourceInfo, VnfInstanceRecord } from '../../../src/model/vnf-instance.ts';
import type { FlavourModel } from '../../../src/packages/vnfd-model.ts';

export const ARTIFACT = 'mgmt-drivers-kubernetes';
export const SCRIPT = 'Scripts/install_k8s_cluster.sh';
export const MASTER_PW = 'Master-Secret-Pw-1';
export const WORKER_PW = 'Worker-Secret-Pw-2';

export interface VmSpec {
  /** vnfcResourceInfo id (also the base of the vnfcInfo id `vi-<id>`). */
  id: string;
  ip: string;
  resourceId: string;
  floating?: string;
}

export function vnfc(vduId: 'masterNode' | 'workerNode', vm: VmSpec): VnfcResourceInfo {
  const cp = vduId === 'masterNode' ? 'masterNode_CP1' : 'workerNode_CP2';
  return {
    id: vm.id,
    vduId,
    computeResource: { resourceId: vm.resourceId, vimLevelResourceType: 'OS::Nova::Server' },
    vnfcCpInfo: [{ id: `${vm.id}-cp`, cpdId: cp }],
    metadata: { cpAddresses: { [cp]: { fixed: [vm.ip], floating: vm.floating ? [vm.floating] : [] } } },
  };
}

/** An instance with these masters and workers (and the VIP on `vip_CP` when given). */
export function instanceOf(masters: VmSpec[], workers: VmSpec[], vip?: string, id = 'inst-1'): VnfInstanceRecord {
  const vnfcs = [...masters.map((m) => vnfc('masterNode', m)), ...workers.map((w) => vnfc('workerNode', w))];
  return {
    id,
    vnfInstanceName: 'k8s',
    vnfInstanceDescription: null,
    vnfdId: 'vnfd-1',
    vnfPkgId: 'pkg-1',
    vnfProvider: 'Company',
    vnfProductName: 'Sample',
    vnfSoftwareVersion: '1.0',
    vnfdVersion: '1.0',
    instantiationState: 'INSTANTIATED',
    vnfConfigurableProperties: null,
    vimConnectionInfo: { vim1: { vimId: 'os-vim', vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } },
    instantiatedVnfInfo: {
      flavourId: 'simple',
      vnfState: 'STARTED',
      vnfcResourceInfo: vnfcs,
      vnfcInfo: vnfcs.map((r) => ({ id: `vi-${r.id}`, vduId: r.vduId, vnfcResourceInfoId: r.id, vnfcState: 'STARTED' as const })),
      ...(vip ? { extCpInfo: [{ id: 'vip-ext', cpdId: 'vip_CP', cpConfigId: 'default', cpProtocolInfo: [{ layerProtocol: 'IP_OVER_ETHERNET', ipOverEthernet: { ipAddresses: [{ type: 'IPV4', addresses: [vip], isDynamic: false }] } }] }] } : {}),
      metadata: {},
    },
    metadata: null,
    extensions: null,
    createdApi: 'v2',
    createdAt: new Date(0),
    rev: 1,
  };
}

const HOOKS = ['instantiate_end', 'terminate_end', 'scale_start', 'scale_end', 'heal_start', 'heal_end'];

export function flavour(): FlavourModel {
  return {
    flavourId: 'simple',
    description: '',
    definitionFile: 'Definitions/df.yaml',
    vdus: {
      masterNode: { vduId: 'masterNode', name: 'masterNode', description: '', minInstances: 1, maxInstances: 5, initialDelta: 1, virtualStorageIds: [], cpIds: ['masterNode_CP1'], nodeType: 'tosca.nodes.nfv.Vdu.Compute' },
      workerNode: { vduId: 'workerNode', name: 'workerNode', description: '', minInstances: 2, maxInstances: 4, initialDelta: 2, virtualStorageIds: [], cpIds: ['workerNode_CP2'], nodeType: 'tosca.nodes.nfv.Vdu.Compute' },
    },
    cps: {
      masterNode_CP1: { cpId: 'masterNode_CP1', vduId: 'masterNode', layerProtocols: ['ipv4'] },
      workerNode_CP2: { cpId: 'workerNode_CP2', vduId: 'workerNode', layerProtocols: ['ipv4'] },
    },
    virtualLinks: {},
    virtualStorages: {},
    scalingAspects: {
      master_instance: { aspectId: 'master_instance', name: 'master', description: '', maxScaleLevel: 2, stepDeltas: ['delta_1'], vduDeltas: { masterNode: { delta_1: 1 } } },
      worker_instance: { aspectId: 'worker_instance', name: 'worker', description: '', maxScaleLevel: 2, stepDeltas: ['delta_1'], vduDeltas: { workerNode: { delta_1: 1 } } },
    },
    instantiationLevels: {},
    lcmHooks: Object.fromEntries(HOOKS.map((h) => [h, { hook: h, artifactName: ARTIFACT, file: 'Scripts/kubernetes_mgmt.py', type: 'tosca.artifacts.Implementation.Python', fileInPackage: true }])),
    placementRules: [],
  } as unknown as FlavourModel;
}

/** Instantiate additionalParams (Tacker's sample, with the VIP port as cluster CP when HA). */
export function instantiateParams(o: { ha?: boolean; vimName?: string } = {}): Record<string, unknown> {
  return {
    k8s_cluster_installation_param: {
      script_path: SCRIPT,
      ...(o.vimName ? { vim_name: o.vimName } : {}),
      master_node: {
        aspect_id: 'master_instance',
        ssh_cp_name: 'masterNode_CP1',
        nic_cp_name: 'masterNode_CP1',
        username: 'ubuntu',
        password: MASTER_PW,
        pod_cidr: '192.168.0.0/16',
        cluster_cidr: '10.199.187.0/24',
        cluster_cp_name: o.ha ? 'vip_CP' : 'masterNode_CP1',
      },
      worker_node: { aspect_id: 'worker_instance', ssh_cp_name: 'workerNode_CP2', nic_cp_name: 'workerNode_CP2', username: 'ubuntu', password: WORKER_PW },
    },
  };
}
