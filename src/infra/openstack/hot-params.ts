/**
 * Builds Tacker's `nfv` Heat parameter for a VNF's BaseHOT: the one JSON parameter every
 * Tacker-style template reads with `get_param: [nfv, VDU|CP, <name>, <key>]`.
 *
 * Why a builder of its own: the same value is needed at instantiate, scale, entire heal and
 * scale rollback, and it must be computed the same way each time (VNFD defaults, then what the
 * NFVO granted, then what the user asked), so existing Tacker packages run unchanged and a user
 * override given at instantiate survives later operations (the driver feeds the stack's current
 * `nfv` back in as `current`).
 *
 * Shape produced (keys only where a value is known):
 * - `VDU.<vduId>.computeFlavourId`: granted flavour (`vimAssets.computeResourceFlavours`), else
 *   the VDU's first `requested_additional_capability_name`.
 * - `VDU.<vduId>.vcImageId`: granted image (`vimAssets.softwareImages`), else the VDU's
 *   `sw_image_data.name`; also `VDU.<storageId>.vcImageId` for a virtual storage with an image
 *   (boot volumes, as in Tacker's samples).
 * - `VDU.<vduId>.flavor` / `VDU.<vduId>.image` (and `VDU.<storageId>.image`): the same two values
 *   under the names Tacker's v1 "UserData" BaseHOTs read (e.g. its Kubernetes cluster packages:
 *   `get_param: [nfv, VDU, masterNode, flavor]`), so both template styles get the VNFD's flavour
 *   and image whichever keys they read.
 * - `VDU.<vduId>.desired_capacity`: the number of VNFCs the VNF must have after the operation.
 * - `VDU.<vduId>.locationConstraints`: the zone the grant placed the VDU in.
 * - `CP.<cpdId>.{network, fixed_ips[{ip_address?, subnet?}], mac_address?, port?}`: from the
 *   request's `extVirtualLinks` (external connection points only).
 */
import { parse as parseYaml } from 'yaml';
import type { FlavourModel } from '../../packages/vnfd-model.ts';

/** A JSON object. */
export type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/**
 * RFC 7396 JSON merge patch: objects merge key by key, `null` deletes, anything else replaces.
 * Why: Tacker merges `additionalParams.nfv` (grant, request) over the computed value this way,
 * so a user can override one key without restating the rest.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Inputs of {@link buildNfvParameter}. */
export interface NfvBuildInput {
  flavour: FlavourModel;
  /** VNFC count per VDU after the operation (`desired_capacity`). */
  vduCounts: Readonly<Record<string, number>>;
  /** The grant of the operation (vimAssets, zones, addResources, additionalParams.nfv), or null. */
  grant?: JsonObject | null;
  /** The grant request (to map granted addResources back to VDUs), or null. */
  grantRequest?: JsonObject | null;
  /** The stack's current `nfv` (scale, heal): kept unless recomputed or overridden. */
  current?: JsonObject | null;
  /** `extVirtualLinks` of the LCM request (instantiate), for `CP.<cpd>.network` / `fixed_ips`. */
  extVirtualLinks?: readonly unknown[] | undefined;
  /** `additionalParams.nfv` of the LCM request; merged last (the user wins). */
  requestNfv?: unknown;
}

/** Granted flavour / image / zone per VDU, read from a SOL Grant. */
interface GrantedAssets {
  flavours: Map<string, string>;
  images: Map<string, string>;
  zones: Map<string, string>;
}

function grantedAssets(grant: JsonObject | null | undefined, grantRequest: JsonObject | null | undefined): GrantedAssets {
  const out: GrantedAssets = { flavours: new Map(), images: new Map(), zones: new Map() };
  if (!isObject(grant)) return out;
  const assets = isObject(grant.vimAssets) ? grant.vimAssets : {};
  for (const f of arr(assets.computeResourceFlavours)) {
    if (!isObject(f)) continue;
    const vdu = str(f.vnfdVirtualComputeDescId);
    const id = str(f.vimFlavourId);
    if (vdu && id) out.flavours.set(vdu, id);
  }
  for (const i of arr(assets.softwareImages)) {
    if (!isObject(i)) continue;
    const desc = str(i.vnfdSoftwareImageId);
    const id = str(i.vimSoftwareImageId);
    if (desc && id) out.images.set(desc, id);
  }
  // zone: grant.addResources[].zoneId -> grant.zones[].zoneId, mapped to the VDU through the
  // grant request's resource definitions.
  const zoneNames = new Map<string, string>();
  for (const z of arr(grant.zones)) {
    if (!isObject(z)) continue;
    const id = str(z.id);
    const name = str(z.zoneId);
    if (id && name) zoneNames.set(id, name);
  }
  const defToVdu = new Map<string, string>();
  if (isObject(grantRequest)) {
    for (const d of arr(grantRequest.addResources)) {
      if (!isObject(d) || d.type !== 'COMPUTE') continue;
      const id = str(d.id);
      const vdu = str(d.resourceTemplateId) ?? str(d.vduId);
      if (id && vdu) defToVdu.set(id, vdu);
    }
  }
  for (const r of arr(grant.addResources)) {
    if (!isObject(r)) continue;
    const vdu = defToVdu.get(str(r.resourceDefinitionId) ?? '');
    const zone = zoneNames.get(str(r.zoneId) ?? '');
    if (vdu && zone && !out.zones.has(vdu)) out.zones.set(vdu, zone);
  }
  return out;
}

/** The `CP` part from the request's external virtual links (SOL v2 map or v1 list `cpConfig`). */
function cpParams(extVirtualLinks: readonly unknown[] | undefined): JsonObject {
  const out: JsonObject = {};
  for (const vl of extVirtualLinks ?? []) {
    if (!isObject(vl)) continue;
    const network = str(vl.resourceId);
    const linkPorts = new Map<string, string>();
    for (const lp of arr(vl.extLinkPorts)) {
      if (!isObject(lp)) continue;
      const handle = isObject(lp.resourceHandle) ? lp.resourceHandle : {};
      const id = str(lp.id);
      const rid = str(handle.resourceId);
      if (id && rid) linkPorts.set(id, rid);
    }
    for (const cp of arr(vl.extCps)) {
      if (!isObject(cp)) continue;
      const cpdId = str(cp.cpdId);
      if (!cpdId) continue;
      const entry: JsonObject = {};
      if (network) entry.network = network;
      const configs = Array.isArray(cp.cpConfig) ? cp.cpConfig : isObject(cp.cpConfig) ? Object.values(cp.cpConfig) : [];
      const fixedIps: JsonObject[] = [];
      for (const cfg of configs) {
        if (!isObject(cfg)) continue;
        const port = linkPorts.get(str(cfg.linkPortId) ?? '');
        if (port) entry.port = port;
        for (const pd of arr(cfg.cpProtocolData)) {
          if (!isObject(pd) || !isObject(pd.ipOverEthernet)) continue;
          const mac = str(pd.ipOverEthernet.macAddress);
          if (mac) entry.mac_address = mac;
          for (const ip of arr(pd.ipOverEthernet.ipAddresses)) {
            if (!isObject(ip)) continue;
            const subnet = str(ip.subnetId);
            const fixed = arr(ip.fixedAddresses).filter((a): a is string => typeof a === 'string');
            if (fixed.length > 0) for (const a of fixed) fixedIps.push({ ip_address: a, ...(subnet ? { subnet } : {}) });
            else if (subnet) fixedIps.push({ subnet });
          }
        }
      }
      if (fixedIps.length > 0) entry.fixed_ips = fixedIps;
      if (Object.keys(entry).length > 0) out[cpdId] = mergePatch(out[cpdId], entry);
    }
  }
  return out;
}

/** The VDU keys that name the same value: the SOL (v2) name and the Tacker v1 "UserData" one. */
const VDU_KEY_ALIASES: readonly (readonly [string, string])[] = [
  ['computeFlavourId', 'flavor'],
  ['vcImageId', 'image'],
];

/**
 * A copy of one layer of the `nfv` value where each VDU entry that sets only one key of an alias
 * pair sets the other too (a value or `null`), so a template reading either key sees the value
 * of the layer that last set either (a user's `computeFlavourId` also changes `flavor`).
 */
function withAliases(layer: JsonObject): JsonObject {
  if (!isObject(layer.VDU)) return layer;
  const vdus: JsonObject = {};
  for (const [name, entry] of Object.entries(layer.VDU)) {
    if (!isObject(entry)) {
      vdus[name] = entry;
      continue;
    }
    const e: JsonObject = { ...entry };
    for (const [a, b] of VDU_KEY_ALIASES) {
      if (Object.hasOwn(e, a) && !Object.hasOwn(e, b)) e[b] = e[a];
      else if (Object.hasOwn(e, b) && !Object.hasOwn(e, a)) e[a] = e[b];
    }
    vdus[name] = e;
  }
  return { ...layer, VDU: vdus };
}

/**
 * The `nfv` parameter for this operation: computed from the VNFD and the grant, laid over the
 * stack's `current` value (so earlier user overrides stay), with `desired_capacity` always taken
 * from `vduCounts`, then the grant's and the request's `additionalParams.nfv` merged on top.
 */
export function buildNfvParameter(input: NfvBuildInput): JsonObject {
  const { flavour } = input;
  const assets = grantedAssets(input.grant, input.grantRequest);
  const vdus: JsonObject = {};
  for (const vdu of Object.values(flavour.vdus)) {
    const e: JsonObject = {};
    const flavourId = assets.flavours.get(vdu.vduId) ?? vdu.flavour?.requestedAdditionalCapabilityNames[0];
    if (flavourId) e.computeFlavourId = flavourId;
    const image = assets.images.get(vdu.vduId) ?? vdu.swImage?.name;
    if (image) e.vcImageId = image;
    const zone = assets.zones.get(vdu.vduId);
    if (zone) e.locationConstraints = zone;
    vdus[vdu.vduId] = e;
  }
  for (const st of Object.values(flavour.virtualStorages)) {
    const image = assets.images.get(st.id) ?? st.swImage?.name;
    if (image && !(st.id in vdus)) vdus[st.id] = { vcImageId: image };
  }
  let nfv = mergePatch(withAliases({ VDU: vdus, CP: cpParams(input.extVirtualLinks) }), withAliases(input.current ?? {})) as JsonObject;
  // The count is never taken from the stack: it is what this operation must reach.
  const counts: JsonObject = {};
  for (const [vduId, n] of Object.entries(input.vduCounts)) if (Object.hasOwn(flavour.vdus, vduId)) counts[vduId] = { desired_capacity: n };
  nfv = mergePatch(nfv, { VDU: counts }) as JsonObject;
  const grantNfv = isObject(input.grant) && isObject(input.grant.additionalParams) ? input.grant.additionalParams.nfv : undefined;
  if (isObject(grantNfv)) nfv = mergePatch(nfv, withAliases(grantNfv)) as JsonObject;
  if (isObject(input.requestNfv)) nfv = mergePatch(nfv, withAliases(input.requestNfv)) as JsonObject;
  if (isObject(nfv.CP) && Object.keys(nfv.CP).length === 0) delete nfv.CP;
  return nfv;
}

/**
 * Reads a stack's `nfv` parameter as Heat returns it (a JSON string) or as given (an object);
 * null when absent or not JSON.
 */
export function parseNfvParameter(value: unknown): JsonObject | null {
  if (isObject(value)) return value;
  if (typeof value !== 'string' || value === '') return null;
  try {
    const v: unknown = JSON.parse(value);
    return isObject(v) ? v : null;
  } catch {
    return null;
  }
}

/** Names of the parameters a HOT template declares (`parameters:` section); empty when unparsable. */
export function declaredParameters(templateText: string): Set<string> {
  try {
    const doc: unknown = parseYaml(templateText);
    if (isObject(doc) && isObject(doc.parameters)) return new Set(Object.keys(doc.parameters));
  } catch {
    // Heat will report the syntax error itself, with a better message.
  }
  return new Set();
}
