/**
 * The typed, JSON-serializable model of an onboarded VNF package, as the rest of the VNFM needs it.
 *
 * The engine, the infra drivers and the grant builder never look at TOSCA again: they read this
 * model (stored as jsonb next to the package row). It keeps only what lifecycle management uses
 * (VDUs with their instance bounds, storage, connection points, virtual links, scaling aspects,
 * instantiation levels, LCM hook scripts, Heat/Kubernetes files) with every cross-reference
 * already resolved and validated at onboarding, so operations never fail on a malformed VNFD.
 *
 * All members are plain data (records, arrays, strings, numbers, booleans): no classes, no
 * `undefined` inside arrays, so `JSON.parse(JSON.stringify(model))` round-trips.
 */

/** Software image of a VDU or a virtual storage (`sw_image_data`), what the VIM must boot from. */
export interface SwImageModel {
  readonly name: string;
  readonly version?: string;
  /** `provider` (SOL001 3.3.1+), shown in the package's softwareImages. */
  readonly provider?: string;
  /** `operating_system` and `supported_virtualisation_environments`, shown as the image's userMetadata. */
  readonly userMetadata?: Readonly<Record<string, unknown>>;
  readonly checksum?: { readonly algorithm: string; readonly hash: string };
  readonly containerFormat?: string;
  readonly diskFormat?: string;
  /** As written in the VNFD, e.g. `1 GB`. */
  readonly minDisk?: string;
  /** As written in the VNFD, e.g. `256 MB`. */
  readonly minRam?: string;
  /** As written in the VNFD, e.g. `12 GB`. */
  readonly size?: string;
  /** Image file shipped in the package (artifact of type `tosca.artifacts.nfv.SwImage`), package-relative; or a URI. */
  readonly file?: string;
}

/** Compute requirements of a VDU (`capabilities.virtual_compute.properties`), used to pick a flavour. */
export interface VirtualComputeModel {
  /** As written, e.g. `512 MB`. */
  readonly virtualMemSize?: string;
  readonly numVirtualCpu?: number;
  /** `virtual_local_storage[].size_of_storage`, as written. */
  readonly localStorageSizes: readonly string[];
  /**
   * `requested_additional_capability_name` values (e.g. `m1.tiny`); Tacker uses the first as the
   * compute flavour when the grant gives none.
   */
  readonly requestedAdditionalCapabilityNames: readonly string[];
}

/** One VDU (`tosca.nodes.nfv.Vdu.Compute`): a VM, or a Kubernetes workload for a CNF. */
export interface VduModel {
  /** Node template name, e.g. `VDU1`; the id used in SOL APIs (`vduId`). */
  readonly vduId: string;
  /** `properties.name`; for a CNF it equals the workload's `metadata.name`. */
  readonly name: string;
  readonly description: string;
  /** `vdu_profile.min_number_of_instances`. */
  readonly minInstances: number;
  /** `vdu_profile.max_number_of_instances`. */
  readonly maxInstances: number;
  /** `VduInitialDelta.initial_delta.number_of_instances`; 1 when the VNFD declares none. */
  readonly initialDelta: number;
  /** Ids of the virtual storages attached (`requirements.virtual_storage`), in declaration order. */
  readonly virtualStorageIds: readonly string[];
  /** Ids of the VduCps bound to this VDU, in node-template declaration order. */
  readonly cpIds: readonly string[];
  readonly swImage?: SwImageModel;
  readonly flavour?: VirtualComputeModel;
  /** The node type as written (may be a type derived from `tosca.nodes.nfv.Vdu.Compute`). */
  readonly nodeType: string;
}

/** A VDU connection point (`tosca.nodes.nfv.VduCp`). */
export interface VduCpModel {
  readonly cpId: string;
  /** The VDU it is bound to (`requirements.virtual_binding`). */
  readonly vduId: string;
  /** The internal virtual link it attaches to (`requirements.virtual_link`); absent for external CPs. */
  readonly virtualLinkId?: string;
  readonly order?: number;
  readonly layerProtocols: readonly string[];
}

/**
 * An external connection point of the VNF (`VnfExtCp` in SOL 003 terms): a VduCp that the flavour's
 * `substitution_mappings.requirements` maps a VNF requirement onto (`virtual_link_ext: [VDU1_CP2,
 * virtual_link]`), a VduCp bound to no internal virtual link, or a `tosca.nodes.nfv.VnfExtCp` node
 * that exposes an internal virtual link.
 */
export interface ExtCpModel {
  /** The CPD id (the node template name). */
  readonly cpdId: string;
  /** The VduCp that is the external CP (absent for a `VnfExtCp` node). */
  readonly vduCpId?: string;
  /** `VnfExtCp` only: the internal virtual link it exposes (`requirements.internal_virtual_link`). */
  readonly internalVirtualLinkId?: string;
  /** The VNF requirement mapped onto it (`substitution_mappings.requirements` key), if any. */
  readonly requirement?: string;
}

/** L3 data of a virtual link (`vl_profile.virtual_link_protocol_data[]`). */
export interface VirtualLinkProtocolModel {
  readonly associatedLayerProtocol?: string;
  readonly ipVersion?: string;
  readonly cidr?: string;
  readonly gatewayIp?: string;
  readonly dhcpEnabled?: boolean;
}

/** An internal virtual link (`tosca.nodes.nfv.VnfVirtualLink`). */
export interface VirtualLinkModel {
  readonly virtualLinkId: string;
  readonly description: string;
  readonly layerProtocols: readonly string[];
  readonly protocolData: readonly VirtualLinkProtocolModel[];
}

/** Kind of virtual storage, from the node type. */
export const VirtualStorageType = {
  BLOCK: 'BlockStorage',
  OBJECT: 'ObjectStorage',
  FILE: 'FileStorage',
} as const;
/** See {@link VirtualStorageType}. */
export type VirtualStorageType = (typeof VirtualStorageType)[keyof typeof VirtualStorageType];

/** A virtual storage (`tosca.nodes.nfv.Vdu.Virtual{Block,Object,File}Storage`), e.g. a Cinder volume. */
export interface VirtualStorageModel {
  readonly id: string;
  readonly type: VirtualStorageType;
  /** As written, e.g. `1 GB` (`size_of_storage`, or `max_size_of_storage` for object storage). */
  readonly sizeOfStorage?: string;
  /** Image to create the volume from (boot from volume). */
  readonly swImage?: SwImageModel;
}

/** A scaling aspect (`tosca.policies.nfv.ScalingAspects`) with its per-VDU deltas. */
export interface ScalingAspectModel {
  readonly aspectId: string;
  readonly name: string;
  readonly description: string;
  readonly maxScaleLevel: number;
  /**
   * Delta id per scaling step: step `i` (1-based) uses `stepDeltas[min(i, length) - 1]`, so one
   * entry means a uniform delta.
   */
  readonly stepDeltas: readonly string[];
  /** `VduScalingAspectDeltas`: VDU id -> delta id -> number of instances added per step. */
  readonly vduDeltas: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

/** An instantiation level (`tosca.policies.nfv.InstantiationLevels` + `VduInstantiationLevels`). */
export interface InstantiationLevelModel {
  readonly levelId: string;
  readonly description: string;
  /** Aspect id -> scale level at this instantiation level (aspects not listed are at level 0). */
  readonly scaleInfo: Readonly<Record<string, number>>;
  /** VDU id -> number of instances, where the VNFD says so explicitly (`VduInstantiationLevels`). */
  readonly vduInstances: Readonly<Record<string, number>>;
}

/** A management script run around an LCM operation (`interfaces.Vnflcm.<hook>`). */
export interface LcmHookModel {
  /** The hook, e.g. `instantiate_end`, `heal_start`, `scale_rollback_start`. */
  readonly hook: string;
  /** Artifact name the hook's `implementation` refers to. */
  readonly artifactName: string;
  /** Package-relative path of the script (resolved from the declaring file, `../Scripts/x.py` -> `Scripts/x.py`). */
  readonly file: string;
  /** Artifact type as written, e.g. `tosca.artifacts.Implementation.Python`; `''` when not declared. */
  readonly type: string;
  /** Whether `file` is in the package; a missing script only fails the operation that runs the hook. */
  readonly fileInPackage: boolean;
  /** The artifact's `properties` (e.g. `healvnfm_driver`, naming a built-in management driver). */
  readonly properties?: Readonly<Record<string, unknown>>;
}

/** Kind of placement rule. */
export const PlacementRuleType = {
  AFFINITY: 'AFFINITY',
  ANTI_AFFINITY: 'ANTI_AFFINITY',
} as const;
/** See {@link PlacementRuleType}. */
export type PlacementRuleType = (typeof PlacementRuleType)[keyof typeof PlacementRuleType];

/** An affinity or anti-affinity rule, with group targets expanded to VDU ids (for grant placement constraints). */
export interface PlacementRuleModel {
  readonly ruleId: string;
  readonly type: PlacementRuleType;
  /** `nfvi_node`, `zone`, ... as written. */
  readonly scope: string;
  readonly vduIds: readonly string[];
}

/** A deployment flavour: everything needed to instantiate, scale and heal with it. */
export interface FlavourModel {
  readonly flavourId: string;
  readonly description: string;
  /** The file that describes the flavour (`substitution_mappings`), package-relative. */
  readonly definitionFile: string;
  readonly vdus: Readonly<Record<string, VduModel>>;
  readonly cps: Readonly<Record<string, VduCpModel>>;
  /**
   * External CPs by CPD id. Absent in models stored before it existed: read it through
   * `externalCps()` (src/packages/ext-cps.ts), which derives it then.
   */
  readonly extCps?: Readonly<Record<string, ExtCpModel>>;
  readonly virtualLinks: Readonly<Record<string, VirtualLinkModel>>;
  readonly virtualStorages: Readonly<Record<string, VirtualStorageModel>>;
  readonly scalingAspects: Readonly<Record<string, ScalingAspectModel>>;
  readonly instantiationLevels: Readonly<Record<string, InstantiationLevelModel>>;
  readonly defaultInstantiationLevelId?: string;
  readonly lcmHooks: Readonly<Record<string, LcmHookModel>>;
  readonly placementRules: readonly PlacementRuleModel[];
}

/** Heat templates of one flavour under `BaseHOT/<flavourId>/` (OpenStack VNFs). */
export interface BaseHotModel {
  readonly flavourId: string;
  /** `BaseHOT/<flavourId>`. */
  readonly dir: string;
  /** The top template (the one YAML file directly in `dir` with `heat_template_version`). */
  readonly topTemplate: string;
  /** Templates under `dir/nested/`, passed to Heat as files by their base name. */
  readonly nestedTemplates: readonly string[];
}

/** A Kubernetes object found in `Files/kubernetes/` (CNFs). */
export interface KubernetesResourceModel {
  readonly file: string;
  /** Index of the document in a multi-document file. */
  readonly index: number;
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

/** A file digest declared by TOSCA.meta or the manifest, verified at onboarding. */
export interface ManifestDigestModel {
  readonly algorithm: string;
  readonly hash: string;
  /** Where it was declared, e.g. `TOSCA-Metadata/TOSCA.meta:83`. */
  readonly declaredIn: string;
}

/** The whole onboarded package. */
export interface VnfPackageModel {
  readonly vnfdId: string;
  readonly vnfProvider: string;
  readonly vnfProductName: string;
  readonly vnfSoftwareVersion: string;
  readonly vnfdVersion: string;
  /** `vnfm_info` of the VNF node (e.g. `['Tacker']`). */
  readonly vnfmInfo: readonly string[];
  /** `description` of the entry definitions file. */
  readonly description: string;
  /** The VNF node type (e.g. `company.provider.VNF`). */
  readonly vnfNodeType: string;
  readonly flavours: Readonly<Record<string, FlavourModel>>;
  /** Package-relative path of the main VNFD file. */
  readonly entryDefinitions: string;
  /** VNFD files read (entry and imports), in load order; excludes the built-in ETSI types. */
  readonly definitionFiles: readonly string[];
  /** Every file of the package, sorted. */
  readonly files: readonly string[];
  /** Flavour id -> its Heat templates, for flavours that have a `BaseHOT/<flavourId>/` folder. */
  readonly baseHotDirs: Readonly<Record<string, BaseHotModel>>;
  /** YAML files under `Files/kubernetes/`, sorted. */
  readonly kubernetesFiles: readonly string[];
  /** Objects declared in {@link kubernetesFiles}. */
  readonly kubernetesResources: readonly KubernetesResourceModel[];
  /** Package-relative path (or URI) -> declared digest; present when TOSCA.meta or a manifest declares any. */
  readonly manifestDigests?: Readonly<Record<string, ManifestDigestModel>>;
  /** Non-fatal findings worth showing to the operator (e.g. a hook script missing from the package). */
  readonly warnings: readonly string[];
}
