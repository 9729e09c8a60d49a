/** VDUs and their storage in a flavour: profiles, software images, virtual compute, storages and links. */
import type { SwImageModel, VduModel, VirtualComputeModel, VirtualLinkModel, VirtualLinkProtocolModel, VirtualStorageModel } from '../vnfd-model.ts';
import { type ArtifactDecl, isObj, type NodeT, own, Parser, type Scope } from './templates.ts';

function swImageOf(p: Parser, node: NodeT, scope: Scope): SwImageModel | undefined {
  const slot = p.propSlot(node, 'sw_image_data');
  const d = p.map(slot, scope, `${node.name}: properties.sw_image_data`);
  if (!d) return undefined;
  const l = `${node.name}: properties.sw_image_data`;
  const img: { -readonly [K in keyof SwImageModel]: SwImageModel[K] } = { name: p.str({ holder: d, key: 'name' }, scope, `${l}.name`, true) };
  const version = p.str({ holder: d, key: 'version' }, scope, `${l}.version`);
  if (version !== undefined) img.version = version;
  const provider = p.str({ holder: d, key: 'provider' }, scope, `${l}.provider`);
  if (provider !== undefined) img.provider = provider;
  const meta: Record<string, unknown> = {};
  const os = p.str({ holder: d, key: 'operating_system' }, scope, `${l}.operating_system`);
  if (os !== undefined) meta.operatingSystem = os;
  const envs = own(d, 'supported_virtualisation_environments');
  if (Array.isArray(envs) && envs.every((e) => typeof e === 'string')) meta.supportedVirtualisationEnvironments = [...envs];
  if (Object.keys(meta).length > 0) img.userMetadata = meta;
  const ck = p.map({ holder: d, key: 'checksum' }, scope, `${l}.checksum`);
  if (ck) {
    img.checksum = {
      algorithm: p.str({ holder: ck, key: 'algorithm' }, scope, `${l}.checksum.algorithm`, true),
      hash: p.str({ holder: ck, key: 'hash' }, scope, `${l}.checksum.hash`, true),
    };
  }
  const fields: [keyof SwImageModel, string][] = [
    ['containerFormat', 'container_format'],
    ['diskFormat', 'disk_format'],
    ['minDisk', 'min_disk'],
    ['minRam', 'min_ram'],
    ['size', 'size'],
  ];
  for (const [k, yk] of fields) {
    const v = p.str({ holder: d, key: yk }, scope, `${l}.${yk}`);
    if (v !== undefined) (img as Record<string, unknown>)[k] = v;
  }
  const arts = new Map<string, ArtifactDecl>();
  p.artifactsOf(node.def, node.file, node.name, arts);
  const art = arts.get('sw_image') ?? [...arts.values()].find((a) => a.type === 'tosca.artifacts.nfv.SwImage');
  if (art) img.file = p.packagePath(art.file, art.declaredIn, art.slot.holder, art.slot.key, `${node.name}: image artifact file`);
  return img;
}

function virtualComputeOf(p: Parser, node: NodeT, scope: Scope): VirtualComputeModel | undefined {
  const caps = own(node.def, 'capabilities');
  if (caps === undefined || caps === null) return undefined;
  if (!isObj(caps)) p.fail(`${node.name}: capabilities must be a map`, node.def, 'capabilities', node.file);
  const vc = p.map({ holder: caps, key: 'virtual_compute' }, scope, `${node.name}: capabilities.virtual_compute`);
  if (!vc) return undefined;
  const l = `${node.name}: capabilities.virtual_compute.properties`;
  const props = p.map({ holder: vc, key: 'properties' }, scope, l) ?? {};
  const out: { -readonly [K in keyof VirtualComputeModel]: VirtualComputeModel[K] } = { localStorageSizes: [], requestedAdditionalCapabilityNames: [] };
  const mem = p.map({ holder: props, key: 'virtual_memory' }, scope, `${l}.virtual_memory`);
  const memSize = mem ? p.str({ holder: mem, key: 'virtual_mem_size' }, scope, `${l}.virtual_memory.virtual_mem_size`) : undefined;
  if (memSize !== undefined) out.virtualMemSize = memSize;
  const cpu = p.map({ holder: props, key: 'virtual_cpu' }, scope, `${l}.virtual_cpu`);
  const nCpu = cpu ? p.int({ holder: cpu, key: 'num_virtual_cpu' }, scope, `${l}.virtual_cpu.num_virtual_cpu`, { min: 1 }) : undefined;
  if (nCpu !== undefined) out.numVirtualCpu = nCpu;
  const storages = p.list({ holder: props, key: 'virtual_local_storage' }, scope, `${l}.virtual_local_storage`) ?? [];
  const sizes: string[] = [];
  storages.forEach((s, i) => {
    if (!isObj(s)) p.fail(`${l}.virtual_local_storage[${i}] must be a map`, storages, i, node.file);
    const size = p.str({ holder: s, key: 'size_of_storage' }, scope, `${l}.virtual_local_storage[${i}].size_of_storage`);
    if (size !== undefined) sizes.push(size);
  });
  out.localStorageSizes = sizes;
  const rac = p.map({ holder: props, key: 'requested_additional_capabilities' }, scope, `${l}.requested_additional_capabilities`);
  const names: string[] = [];
  if (rac) {
    for (const [k, v] of Object.entries(rac)) {
      if (!isObj(v)) continue;
      const n = p.str({ holder: v, key: 'requested_additional_capability_name' }, scope, `${l}.requested_additional_capabilities.${k}.requested_additional_capability_name`);
      if (n !== undefined) names.push(n);
    }
  }
  out.requestedAdditionalCapabilityNames = names;
  return out;
}

/** The VDUs of a flavour as they are built: the model, mutable, plus the ids of their CPs. */
export type VduDraft = { -readonly [K in keyof VduModel]: VduModel[K] } & { cpIds: string[] };

/** The virtual storages and the internal virtual links of a flavour. */
export function storagesAndLinksOf(p: Parser, nodes: readonly NodeT[], scope: Scope): { virtualStorages: Record<string, VirtualStorageModel>; virtualLinks: Record<string, VirtualLinkModel> } {
  const file = scope.file;
  const virtualStorages: Record<string, VirtualStorageModel> = {};
  const virtualLinks: Record<string, VirtualLinkModel> = {};
  for (const n of nodes) {
    if (n.kind === 'BlockStorage' || n.kind === 'ObjectStorage' || n.kind === 'FileStorage') {
      const dataProp = n.kind === 'BlockStorage' ? 'virtual_block_storage_data' : n.kind === 'ObjectStorage' ? 'virtual_object_storage_data' : 'virtual_file_storage_data';
      const sizeKey = n.kind === 'ObjectStorage' ? 'max_size_of_storage' : 'size_of_storage';
      const data = p.map(p.propSlot(n, dataProp), scope, `${n.name}: properties.${dataProp}`);
      const size = data ? p.str({ holder: data, key: sizeKey }, scope, `${n.name}: properties.${dataProp}.${sizeKey}`) : undefined;
      const st: { -readonly [K in keyof VirtualStorageModel]: VirtualStorageModel[K] } = { id: n.name, type: n.kind };
      if (size !== undefined) st.sizeOfStorage = size;
      const img = swImageOf(p, n, scope);
      if (img) st.swImage = img;
      virtualStorages[n.name] = st;
    } else if (n.kind === 'vl') {
      const l = `${n.name}: properties`;
      const conn = p.map(p.propSlot(n, 'connectivity_type'), scope, `${l}.connectivity_type`);
      const layerProtocols = conn ? p.strList({ holder: conn, key: 'layer_protocols' }, scope, `${l}.connectivity_type.layer_protocols`) : [];
      const profile = p.map(p.propSlot(n, 'vl_profile'), scope, `${l}.vl_profile`);
      const pdl = profile ? (p.list({ holder: profile, key: 'virtual_link_protocol_data' }, scope, `${l}.vl_profile.virtual_link_protocol_data`) ?? []) : [];
      const protocolData: VirtualLinkProtocolModel[] = pdl.map((d, i) => {
        const dl = `${l}.vl_profile.virtual_link_protocol_data[${i}]`;
        if (!isObj(d)) p.fail(`${dl} must be a map`, pdl, i, file);
        const out: { -readonly [K in keyof VirtualLinkProtocolModel]: VirtualLinkProtocolModel[K] } = {};
        const alp = p.str({ holder: d, key: 'associated_layer_protocol' }, scope, `${dl}.associated_layer_protocol`);
        if (alp !== undefined) out.associatedLayerProtocol = alp;
        const l3 = p.map({ holder: d, key: 'l3_protocol_data' }, scope, `${dl}.l3_protocol_data`);
        if (l3) {
          const ipv = p.str({ holder: l3, key: 'ip_version' }, scope, `${dl}.l3_protocol_data.ip_version`);
          if (ipv !== undefined) out.ipVersion = ipv;
          const cidr = p.str({ holder: l3, key: 'cidr' }, scope, `${dl}.l3_protocol_data.cidr`);
          if (cidr !== undefined) out.cidr = cidr;
          const gw = p.str({ holder: l3, key: 'gateway_ip' }, scope, `${dl}.l3_protocol_data.gateway_ip`);
          if (gw !== undefined) out.gatewayIp = gw;
          const dhcp = p.bool({ holder: l3, key: 'dhcp_enabled' }, scope, `${dl}.l3_protocol_data.dhcp_enabled`);
          if (dhcp !== undefined) out.dhcpEnabled = dhcp;
        }
        return out;
      });
      virtualLinks[n.name] = {
        virtualLinkId: n.name,
        description: p.str(p.propSlot(n, 'description'), scope, `${l}.description`) ?? '',
        layerProtocols,
        protocolData,
      };
    }
  }

  return { virtualStorages, virtualLinks };
}

/** The VDUs of a flavour: profile, storages, software image and compute. */
export function vdusOf(p: Parser, nodes: readonly NodeT[], byName: ReadonlyMap<string, NodeT>, scope: Scope): Record<string, VduDraft> {
  const file = scope.file;
  const vdus: Record<string, VduDraft> = {};
  for (const n of nodes) {
    if (n.kind !== 'vdu') continue;
    const l = `${n.name}: properties`;
    const profile = p.map(p.propSlot(n, 'vdu_profile'), scope, `${l}.vdu_profile`, true);
    const minInstances = p.int({ holder: profile, key: 'min_number_of_instances' }, scope, `${l}.vdu_profile.min_number_of_instances`, { required: true }) as number;
    const maxInstances = p.int({ holder: profile, key: 'max_number_of_instances' }, scope, `${l}.vdu_profile.max_number_of_instances`, { required: true }) as number;
    if (maxInstances < minInstances) {
      p.fail(`${l}.vdu_profile: max_number_of_instances (${maxInstances}) is less than min_number_of_instances (${minInstances})`, profile, 'max_number_of_instances', file);
    }
    const virtualStorageIds: string[] = [];
    for (const r of p.requirements(n)) {
      if (r.name !== 'virtual_storage') continue;
      const t = byName.get(r.target);
      if (!t || (t.kind !== 'BlockStorage' && t.kind !== 'ObjectStorage' && t.kind !== 'FileStorage')) {
        p.fail(`${n.name}: requirement virtual_storage names '${r.target}', which is not a virtual storage node of this flavour`, r.slot.holder, r.slot.key, file);
      }
      if (!virtualStorageIds.includes(r.target)) virtualStorageIds.push(r.target);
    }
    const vdu: (typeof vdus)[string] = {
      vduId: n.name,
      name: p.str(p.propSlot(n, 'name'), scope, `${l}.name`, true),
      description: p.str(p.propSlot(n, 'description'), scope, `${l}.description`) ?? '',
      minInstances,
      maxInstances,
      initialDelta: 1,
      virtualStorageIds,
      cpIds: [],
      nodeType: n.type,
    };
    const img = swImageOf(p, n, scope);
    if (img) vdu.swImage = img;
    const vc = virtualComputeOf(p, n, scope);
    if (vc) vdu.flavour = vc;
    vdus[n.name] = vdu;
  }

  return vdus;
}
