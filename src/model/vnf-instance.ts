/**
 * The stored VNF instance, in SOL 3.3.1 (v2) shape; v1 bodies are produced from it by converters
 * in the API layer. `vimConnectionInfo` here never carries `accessInfo` (sealed separately).
 */

/** SOL InstantiationState. */
export const INSTANTIATION_STATES = { NOT_INSTANTIATED: 'NOT_INSTANTIATED', INSTANTIATED: 'INSTANTIATED' } as const;
export type InstantiationState = keyof typeof INSTANTIATION_STATES;

/** SOL ResourceHandle. */
export interface ResourceHandle {
  vimConnectionId?: string;
  resourceProviderId?: string;
  resourceId: string;
  vimLevelResourceType?: string;
}

/** SOL IpOverEthernetAddressInfo.ipAddresses entry (fixed or dynamic addresses, one subnet). */
export interface IpAddressInfo {
  type: 'IPV4' | 'IPV6';
  addresses: string[];
  isDynamic: boolean;
  subnetId?: string;
}

/** SOL CpProtocolInfo (IP over Ethernet, the only layer protocol SOL defines). */
export interface CpProtocolInfo {
  layerProtocol: 'IP_OVER_ETHERNET';
  ipOverEthernet?: { macAddress?: string; ipAddresses?: IpAddressInfo[] };
}

/** SOL VnfcResourceInfo.vnfcCpInfo entry (same shape in 2.6.1 and 3.3.1). */
export interface VnfcCpInfo {
  id: string;
  cpdId: string;
  vnfExtCpId?: string;
  cpProtocolInfo?: CpProtocolInfo[];
  vnfLinkPortId?: string;
}

/** SOL VnfcResourceInfo (v2). `metadata` carries VIM locations (stack, parent) used by heal. */
export interface VnfcResourceInfo {
  id: string;
  vduId: string;
  computeResource: ResourceHandle;
  zoneId?: string;
  storageResourceIds?: string[];
  vnfcCpInfo?: VnfcCpInfo[];
  metadata?: Record<string, unknown>;
}

/** SOL VnfcInfo (v2). */
export interface VnfcInfo {
  id: string;
  vduId: string;
  vnfcResourceInfoId: string;
  vnfcState: 'STARTED' | 'STOPPED';
  vnfcConfigurableProperties?: Record<string, unknown>;
}

/** SOL VirtualStorageResourceInfo. */
export interface VirtualStorageResourceInfo {
  id: string;
  virtualStorageDescId: string;
  storageResource: ResourceHandle;
  metadata?: Record<string, unknown>;
}

/** SOL VnfVirtualLinkResourceInfo. */
export interface VnfVirtualLinkResourceInfo {
  id: string;
  vnfVirtualLinkDescId: string;
  networkResource: ResourceHandle;
  vnfLinkPorts?: { id: string; resourceHandle: ResourceHandle; cpInstanceId?: string; cpInstanceType?: string }[];
  metadata?: Record<string, unknown>;
}

/** SOL InstantiatedVnfInfo (v2 shape). */
export interface InstantiatedVnfInfo {
  flavourId: string;
  vnfState: 'STARTED' | 'STOPPED';
  instantiationLevelId?: string;
  scaleStatus?: { aspectId: string; scaleLevel: number }[];
  maxScaleLevels?: { aspectId: string; scaleLevel: number }[];
  extCpInfo?: Record<string, unknown>[];
  extVirtualLinkInfo?: Record<string, unknown>[];
  extManagedVirtualLinkInfo?: Record<string, unknown>[];
  vnfcResourceInfo?: VnfcResourceInfo[];
  vnfVirtualLinkResourceInfo?: VnfVirtualLinkResourceInfo[];
  virtualStorageResourceInfo?: VirtualStorageResourceInfo[];
  vnfcInfo?: VnfcInfo[];
  metadata?: Record<string, unknown>;
}

/** A VNF instance as stored. */
export interface VnfInstanceRecord {
  id: string;
  vnfInstanceName: string | null;
  vnfInstanceDescription: string | null;
  vnfdId: string;
  vnfPkgId: string;
  vnfProvider: string;
  vnfProductName: string;
  vnfSoftwareVersion: string;
  vnfdVersion: string;
  instantiationState: InstantiationState;
  vnfConfigurableProperties: Record<string, unknown> | null;
  /** Map form (v2), without accessInfo. */
  vimConnectionInfo: Record<string, { vimId?: string; vimType: string; interfaceInfo?: Record<string, unknown>; extra?: Record<string, unknown> }>;
  instantiatedVnfInfo: InstantiatedVnfInfo | null;
  metadata: Record<string, unknown> | null;
  extensions: Record<string, unknown> | null;
  createdApi: 'v1' | 'v2';
  createdAt: Date;
  rev: number;
  /** Project (tenant) of the instance, when the row was read with it (null: none). */
  project?: string | null;
}

/** Maps a DB row to the record. */
export function instanceFromRow(r: Record<string, unknown>): VnfInstanceRecord {
  return {
    id: r.id as string,
    vnfInstanceName: r.vnf_instance_name as string | null,
    vnfInstanceDescription: r.vnf_instance_description as string | null,
    vnfdId: r.vnfd_id as string,
    vnfPkgId: r.vnf_pkg_id as string,
    vnfProvider: r.vnf_provider as string,
    vnfProductName: r.vnf_product_name as string,
    vnfSoftwareVersion: r.vnf_software_version as string,
    vnfdVersion: r.vnfd_version as string,
    instantiationState: r.instantiation_state as InstantiationState,
    vnfConfigurableProperties: (r.vnf_configurable_properties ?? null) as Record<string, unknown> | null,
    vimConnectionInfo: (r.vim_connection_info ?? {}) as VnfInstanceRecord['vimConnectionInfo'],
    instantiatedVnfInfo: (r.instantiated_vnf_info ?? null) as InstantiatedVnfInfo | null,
    metadata: (r.metadata ?? null) as Record<string, unknown> | null,
    extensions: (r.extensions ?? null) as Record<string, unknown> | null,
    createdApi: r.created_api as 'v1' | 'v2',
    createdAt: new Date(r.created_at as string),
    rev: r.rev as number,
    ...(r.project !== undefined ? { project: (r.project ?? null) as string | null } : {}),
  };
}
