/**
 * Rebuilds `instantiatedVnfInfo` from what the VIM reports and computes `resourceChanges`.
 * Identities are stable: a VNFC keeps its vnfcResourceInfo id and vnfcInfo id when the VIM replaces
 * its resource (heal, or drift such as Kubernetes replacing a pod). Matching order: same resource id,
 * then same stable key (Heat resource path, StatefulSet ordinal), then the remaining old and new
 * resources of the same VDU are paired (heal targets first). Only truly new resources get new ids.
 */
import { randomUUID } from 'node:crypto';
import type { ObservedIpAddress, ObservedResources, ObservedVnfc } from '../infra/infra-driver.ts';
import type { CpProtocolInfo, InstantiatedVnfInfo, IpAddressInfo, VirtualStorageResourceInfo, VnfVirtualLinkResourceInfo, VnfcCpInfo, VnfcInfo, VnfcResourceInfo } from '../model/vnf-instance.ts';
import type { ExtCpModel } from '../packages/vnfd-model.ts';

/** Options of {@link rebuildInstantiatedInfo}. */
export interface RebuildOptions {
  flavourId: string;
  vimConnectionId: string;
  scaleStatus: { aspectId: string; scaleLevel: number }[];
  maxScaleLevels: { aspectId: string; scaleLevel: number }[];
  instantiationLevelId?: string | undefined;
  /** vnfcResourceInfo ids targeted by a heal: reported MODIFIED even when the resource id is unchanged. */
  healedIds?: ReadonlySet<string>;
  /** Extra metadata to merge per vnfcResourceInfo id (from management hooks). */
  vnfcMetadata?: Record<string, Record<string, unknown>>;
  /** ExtVirtualLinkData of the instantiate request; later operations reuse the stored extVirtualLinkInfo. */
  extVirtualLinks?: Record<string, unknown>[];
  /** The flavour's external CPs (VNFD), see `externalCps()` in src/packages/ext-cps.ts. */
  externalCps?: readonly ExtCpModel[];
  /**
   * Ids to give resources that are new (no previous record), by VIM resource id: `vnfc:<id>`,
   * `vnfcInfo:<id>`, `storage:<id>`. Filled with the ids of each rebuild ({@link newIdsOf}), so
   * two rebuilds of one operation (before the end hook, at completion) name new resources alike.
   */
  newIds?: Readonly<Record<string, string>>;
}

/** The ids a rebuilt info gave its resources, keyed as {@link RebuildOptions.newIds}. */
export function newIdsOf(info: Partial<InstantiatedVnfInfo>): Record<string, string> {
  const out: Record<string, string> = {};
  const infoByRes = new Map((info.vnfcInfo ?? []).map((i) => [i.vnfcResourceInfoId, i.id]));
  for (const r of info.vnfcResourceInfo ?? []) {
    out[`vnfc:${r.computeResource.resourceId}`] = r.id;
    const i = infoByRes.get(r.id);
    if (i) out[`vnfcInfo:${r.computeResource.resourceId}`] = i;
  }
  for (const st of info.virtualStorageResourceInfo ?? []) out[`storage:${st.storageResource.resourceId}`] = st.id;
  return out;
}

/** `IPV4` / `IPV6` of an address. */
function ipType(a: ObservedIpAddress): 'IPV4' | 'IPV6' {
  return a.type ?? (a.address.includes(':') ? 'IPV6' : 'IPV4');
}

/**
 * SOL `cpProtocolInfo` of a CP: one IP-over-Ethernet entry with the MAC and the addresses grouped
 * per type, subnet and kind (own / floating); `[]` when the VIM reports neither. An address is
 * dynamic unless the request fixed it (`fixed`).
 */
export function cpProtocolInfoOf(macAddress: string | undefined, addresses: readonly ObservedIpAddress[], fixed: ReadonlySet<string> = new Set()): CpProtocolInfo[] {
  if (macAddress === undefined && addresses.length === 0) return [];
  const groups = new Map<string, IpAddressInfo>();
  for (const a of addresses) {
    const isDynamic = !fixed.has(a.address);
    const key = JSON.stringify([ipType(a), a.subnetId ?? null, a.floating === true, isDynamic]);
    let g = groups.get(key);
    if (g === undefined) {
      g = { type: ipType(a), addresses: [], isDynamic, ...(a.subnetId !== undefined && a.floating !== true ? { subnetId: a.subnetId } : {}) };
      groups.set(key, g);
    }
    if (!g.addresses.includes(a.address)) g.addresses.push(a.address);
  }
  const ipAddresses = [...groups.values()];
  return [{ layerProtocol: 'IP_OVER_ETHERNET', ipOverEthernet: { ...(macAddress !== undefined ? { macAddress } : {}), ...(ipAddresses.length > 0 ? { ipAddresses } : {}) } }];
}

/** Addresses an ext CP's `cpConfig` fixes (`cpProtocolData[].ipOverEthernet.ipAddresses[].fixedAddresses`). */
function fixedAddressesOf(cpConfig: Record<string, unknown> | undefined): Set<string> {
  const out = new Set<string>();
  const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  for (const c of Object.values(cpConfig ?? {})) {
    for (const pd of arr((c as { cpProtocolData?: unknown } | null)?.cpProtocolData)) {
      const ioe = (pd as { ipOverEthernet?: { ipAddresses?: unknown } } | null)?.ipOverEthernet;
      for (const ip of arr(ioe?.ipAddresses)) for (const a of arr((ip as { fixedAddresses?: unknown } | null)?.fixedAddresses)) if (typeof a === 'string') out.add(a);
    }
  }
  return out;
}

/** SOL resourceChanges. */
export interface ResourceChanges {
  affectedVnfcs: Record<string, unknown>[];
  affectedVirtualLinks: Record<string, unknown>[];
  affectedVirtualStorages: Record<string, unknown>[];
}

type Handle = (resourceId: string, type: string) => { vimConnectionId: string; resourceId: string; vimLevelResourceType: string };

/** Computes the new instantiatedVnfInfo and the changes against `prev`. */
export function rebuildInstantiatedInfo(prev: InstantiatedVnfInfo | null, observed: ObservedResources, opts: RebuildOptions): { info: InstantiatedVnfInfo; changes: ResourceChanges } {
  const handle: Handle = (resourceId, type) => ({ vimConnectionId: opts.vimConnectionId, resourceId, vimLevelResourceType: type });
  const st = rebuildStorages(prev, observed, handle, opts);
  const v = rebuildVnfcs(prev, observed, st, handle, opts);
  const l = rebuildVirtualLinks(prev, observed, handle);
  const { extCpInfo, extVirtualLinkInfo } = externalCpsOf(prev, observed, v.vnfcs, l.links, opts);
  const info: InstantiatedVnfInfo = {
    flavourId: opts.flavourId,
    vnfState: 'STARTED',
    ...(opts.instantiationLevelId ? { instantiationLevelId: opts.instantiationLevelId } : {}),
    ...(opts.scaleStatus.length ? { scaleStatus: opts.scaleStatus } : {}),
    ...(opts.maxScaleLevels.length ? { maxScaleLevels: opts.maxScaleLevels } : {}),
    ...(extCpInfo.length ? { extCpInfo } : {}),
    ...(extVirtualLinkInfo.length ? { extVirtualLinkInfo } : {}),
    vnfcResourceInfo: v.vnfcs,
    vnfVirtualLinkResourceInfo: l.links,
    virtualStorageResourceInfo: st.storages,
    vnfcInfo: v.vnfcInfo,
    metadata: { ...(prev?.metadata ?? {}), ...(observed.metadata ?? {}) },
  };
  return { info, changes: { affectedVnfcs: v.affected, affectedVirtualLinks: l.affected, affectedVirtualStorages: st.affected } };
}

/** Storages: kept by resource id, else by stable key (a replacement: MODIFIED); the others ADDED or REMOVED. */
function rebuildStorages(prev: InstantiatedVnfInfo | null, observed: ObservedResources, handle: Handle, opts: RebuildOptions) {
  const prevSt = prev?.virtualStorageResourceInfo ?? [];
  const usedSt = new Set<string>();
  const storages: VirtualStorageResourceInfo[] = [];
  const idByResource = new Map<string, string>();
  const affected: Record<string, unknown>[] = [];
  for (const s of observed.storages) {
    let old = prevSt.find((p) => !usedSt.has(p.id) && p.storageResource.resourceId === s.resourceId);
    let replaced = false;
    if (!old && s.stableKey) {
      old = prevSt.find((p) => !usedSt.has(p.id) && p.metadata?.stableKey === s.stableKey);
      replaced = !!old;
    }
    const id = old?.id ?? opts.newIds?.[`storage:${s.resourceId}`] ?? randomUUID();
    if (old) usedSt.add(old.id);
    const info: VirtualStorageResourceInfo = { id, virtualStorageDescId: s.virtualStorageDescId, storageResource: handle(s.resourceId, s.vimLevelResourceType), metadata: { ...(s.metadata ?? {}), ...(s.stableKey ? { stableKey: s.stableKey } : {}) } };
    storages.push(info);
    idByResource.set(s.resourceId, id);
    if (!old) affected.push({ id, virtualStorageDescId: s.virtualStorageDescId, changeType: 'ADDED', storageResource: info.storageResource });
    else if (replaced) affected.push({ id, virtualStorageDescId: s.virtualStorageDescId, changeType: 'MODIFIED', storageResource: info.storageResource, metadata: { replacedResourceId: old.storageResource.resourceId } });
  }
  for (const p of prevSt) if (!usedSt.has(p.id)) affected.push({ id: p.id, virtualStorageDescId: p.virtualStorageDescId, changeType: 'REMOVED', storageResource: p.storageResource });
  return { storages, idByResource, affected };
}

/**
 * The previous record of each observed VNFC: same resource id, then same stable key, then the
 * remaining old records of the same VDU (heal targets first). `used`: the old records paired.
 */
function pairVnfcs(prevV: readonly VnfcResourceInfo[], observed: ObservedResources, healed: ReadonlySet<string>) {
  const pairs = new Map<ObservedVnfc, VnfcResourceInfo | undefined>();
  const used = new Set<string>();
  for (const o of observed.vnfcs) {
    const old = prevV.find((p) => !used.has(p.id) && p.vduId === o.vduId && p.computeResource.resourceId === o.computeResource.resourceId);
    if (old) {
      used.add(old.id);
      pairs.set(o, old);
    }
  }
  for (const o of observed.vnfcs) {
    if (pairs.has(o) || !o.stableKey) continue;
    const old = prevV.find((p) => !used.has(p.id) && p.vduId === o.vduId && p.metadata?.stableKey === o.stableKey);
    if (old) {
      used.add(old.id);
      pairs.set(o, old);
    }
  }
  for (const o of observed.vnfcs) {
    if (pairs.has(o)) continue;
    const candidates = prevV.filter((p) => !used.has(p.id) && p.vduId === o.vduId);
    const old = candidates.find((p) => healed.has(p.id)) ?? (candidates.length > 0 && !o.stableKey ? candidates[0] : undefined);
    if (old) used.add(old.id);
    pairs.set(o, old);
  }
  return { pairs, used };
}

/** The metadata of a VNFC's record: the old record's, the VIM's, the hooks' (`null` removes a key), CP addresses. */
function vnfcMetadataOf(o: ObservedVnfc, old: VnfcResourceInfo | undefined, opts: RebuildOptions): Record<string, unknown> {
  // Hook metadata may be keyed by vnfcResourceInfo id or, for VNFCs created by this very
  // operation (whose final id is only known now), by the VIM resource id. `null` removes a key.
  const hookMeta = { ...(opts.vnfcMetadata?.[o.computeResource.resourceId] ?? {}), ...(old ? (opts.vnfcMetadata?.[old.id] ?? {}) : {}) };
  const meta: Record<string, unknown> = { ...(old?.metadata ?? {}), ...(o.metadata ?? {}), ...hookMeta };
  for (const [k, v] of Object.entries(hookMeta)) if (v === null) delete meta[k];
  if (o.stableKey) meta.stableKey = o.stableKey;
  delete meta.replacedResourceId;
  // Fixed and floating addresses per CP, for management drivers (src/mgmt/addresses.ts); SOL's
  // cpProtocolInfo cannot tell a floating address from a fixed one.
  delete meta.cpAddresses;
  if (o.cps?.some((c) => (c.addresses ?? []).length > 0)) {
    meta.cpAddresses = Object.fromEntries(
      o.cps.map((c) => [c.cpdId, { fixed: (c.addresses ?? []).filter((a) => a.floating !== true).map((a) => a.address), floating: (c.addresses ?? []).filter((a) => a.floating === true).map((a) => a.address) }]),
    );
  }
  return meta;
}

/** VNFCs: records with stable ids (see {@link pairVnfcs}), their vnfcInfo, and the VNFC changes. */
function rebuildVnfcs(prev: InstantiatedVnfInfo | null, observed: ObservedResources, st: { idByResource: ReadonlyMap<string, string>; affected: readonly Record<string, unknown>[] }, handle: Handle, opts: RebuildOptions) {
  const prevV = prev?.vnfcResourceInfo ?? [];
  const prevInfo = new Map((prev?.vnfcInfo ?? []).map((i) => [i.vnfcResourceInfoId, i]));
  const healed = opts.healedIds ?? new Set<string>();
  const { pairs, used } = pairVnfcs(prevV, observed, healed);
  const vnfcs: VnfcResourceInfo[] = [];
  const vnfcInfo: VnfcInfo[] = [];
  const affected: Record<string, unknown>[] = [];
  for (const o of observed.vnfcs) {
    const old = pairs.get(o);
    const id = old?.id ?? opts.newIds?.[`vnfc:${o.computeResource.resourceId}`] ?? randomUUID();
    const storageIds = (o.storageResourceIds ?? []).map((r) => st.idByResource.get(r)).filter((x): x is string => !!x);
    const meta = vnfcMetadataOf(o, old, opts);
    const replacedId = old && old.computeResource.resourceId !== o.computeResource.resourceId ? old.computeResource.resourceId : undefined;
    const rec: VnfcResourceInfo = {
      id,
      vduId: o.vduId,
      computeResource: { ...handle(o.computeResource.resourceId, o.computeResource.vimLevelResourceType), ...(o.computeResource.resourceProviderId ? { resourceProviderId: o.computeResource.resourceProviderId } : {}) },
      ...(o.zoneId ? { zoneId: o.zoneId } : {}),
      ...(storageIds.length ? { storageResourceIds: storageIds } : {}),
      ...(o.cps?.length
        ? {
            vnfcCpInfo: o.cps.map((c, i): VnfcCpInfo => {
              const cpProtocolInfo = cpProtocolInfoOf(c.macAddress, c.addresses ?? []);
              return { id: `${id.slice(0, 8)}-${c.cpdId}-${i}`, cpdId: c.cpdId, ...(cpProtocolInfo.length > 0 ? { cpProtocolInfo } : {}) };
            }),
          }
        : {}),
      metadata: meta,
    };
    vnfcs.push(rec);
    const pi = old ? prevInfo.get(old.id) : undefined;
    vnfcInfo.push({ id: pi?.id ?? opts.newIds?.[`vnfcInfo:${o.computeResource.resourceId}`] ?? randomUUID(), vduId: o.vduId, vnfcResourceInfoId: id, vnfcState: 'STARTED', ...(pi?.vnfcConfigurableProperties ? { vnfcConfigurableProperties: pi.vnfcConfigurableProperties } : {}) });
    const oldSt = new Set(old?.storageResourceIds ?? []);
    const newSt = new Set(storageIds);
    const addedSt = storageIds.filter((s) => !oldSt.has(s) || st.affected.some((a) => a.id === s && a.changeType !== 'REMOVED'));
    const removedSt = [...oldSt].filter((s) => !newSt.has(s));
    if (!old) {
      affected.push({ id, vduId: o.vduId, changeType: 'ADDED', computeResource: rec.computeResource, ...(storageIds.length ? { addedStorageResourceIds: storageIds } : {}) });
    } else if (replacedId || healed.has(old.id)) {
      affected.push({
        id,
        vduId: o.vduId,
        changeType: 'MODIFIED',
        computeResource: rec.computeResource,
        metadata: { replacedResourceId: old.computeResource.resourceId },
        ...(addedSt.length ? { addedStorageResourceIds: addedSt } : {}),
        ...(removedSt.length ? { removedStorageResourceIds: removedSt } : {}),
      });
    }
  }
  for (const p of prevV) {
    if (!used.has(p.id)) affected.push({ id: p.id, vduId: p.vduId, changeType: 'REMOVED', computeResource: p.computeResource, ...(p.storageResourceIds?.length ? { removedStorageResourceIds: p.storageResourceIds } : {}) });
  }
  return { vnfcs, vnfcInfo, affected };
}

/** Virtual links: kept by resource id, else by descriptor (a replacement: MODIFIED). */
function rebuildVirtualLinks(prev: InstantiatedVnfInfo | null, observed: ObservedResources, handle: Handle) {
  const prevL = prev?.vnfVirtualLinkResourceInfo ?? [];
  const usedL = new Set<string>();
  const links: VnfVirtualLinkResourceInfo[] = [];
  const affected: Record<string, unknown>[] = [];
  for (const l of observed.virtualLinks) {
    const old = prevL.find((p) => !usedL.has(p.id) && p.networkResource.resourceId === l.resourceId) ?? prevL.find((p) => !usedL.has(p.id) && p.vnfVirtualLinkDescId === l.vnfVirtualLinkDescId);
    const id = old?.id ?? randomUUID();
    if (old) usedL.add(old.id);
    const rec: VnfVirtualLinkResourceInfo = { id, vnfVirtualLinkDescId: l.vnfVirtualLinkDescId, networkResource: handle(l.resourceId, l.vimLevelResourceType), ...(l.metadata ? { metadata: l.metadata } : {}) };
    links.push(rec);
    if (!old) affected.push({ id, vnfVirtualLinkDescId: l.vnfVirtualLinkDescId, changeType: 'ADDED', networkResource: rec.networkResource });
    else if (old.networkResource.resourceId !== l.resourceId) affected.push({ id, vnfVirtualLinkDescId: l.vnfVirtualLinkDescId, changeType: 'MODIFIED', networkResource: rec.networkResource });
  }
  for (const p of prevL) if (!usedL.has(p.id)) affected.push({ id: p.id, vnfVirtualLinkDescId: p.vnfVirtualLinkDescId, changeType: 'REMOVED', networkResource: p.networkResource });
  return { links, affected };
}

/**
 * External CPs, each tied to one VNFC CP (or internal VL) so its id is as stable as the VNFC's
 * (the VNFC CPs exposed get their `vnfExtCpId`):
 * 1. the CPs the external virtual links of the request connect (cpConfigId from the request);
 * 2. the VNFD's external CPs (VduCps mapped by substitution_mappings or on no internal VL,
 *    VnfExtCps exposing an internal VL);
 * 3. external CPs the VIM reports besides the VNFC CPs (Kubernetes Services);
 * 4. when none of these gives one: the first CP of every VNFC (SOL003 3.x requires at least one).
 * Also the extVirtualLinkInfo: the request's external virtual links, else the stored ones.
 */
function externalCpsOf(prev: InstantiatedVnfInfo | null, observed: ObservedResources, vnfcs: readonly VnfcResourceInfo[], links: readonly VnfVirtualLinkResourceInfo[], opts: RebuildOptions) {
  const extVls: { id: string; resourceId?: string; extCps: { cpdId: string; cpConfig?: Record<string, unknown> }[] }[] = (
    opts.extVirtualLinks ??
    (prev?.extVirtualLinkInfo ?? []).map((l) => ({ id: l.id, resourceId: (l.resourceHandle as { resourceId?: string } | undefined)?.resourceId, extCps: (l.currentVnfExtCpData ?? []) as never }))
  ).map((l) => ({ id: String(l.id), ...(l.resourceId !== undefined ? { resourceId: String(l.resourceId) } : {}), extCps: (Array.isArray(l.extCps) ? l.extCps : []) as { cpdId: string; cpConfig?: Record<string, unknown> }[] }));
  const extCpInfo: Record<string, unknown>[] = [];
  const observedCp = new Map<string, { mac?: string; addresses: ObservedIpAddress[] }>();
  for (const o of observed.vnfcs) {
    const rec = vnfcs[observed.vnfcs.indexOf(o)];
    (o.cps ?? []).forEach((c, i) => {
      const cp = rec?.vnfcCpInfo?.[i];
      if (cp) observedCp.set(cp.id, { ...(c.macAddress !== undefined ? { mac: c.macAddress } : {}), addresses: c.addresses ?? [] });
    });
  }
  const exposeVnfcCp = (c: VnfcCpInfo, cpConfigId: string, fixed: ReadonlySet<string> = new Set()): void => {
    if (c.vnfExtCpId !== undefined) return;
    const id = `${c.id}-ext`;
    c.vnfExtCpId = id;
    const seen = observedCp.get(c.id);
    extCpInfo.push({ id, cpdId: c.cpdId, cpConfigId, cpProtocolInfo: cpProtocolInfoOf(seen?.mac, seen?.addresses ?? [], fixed), associatedVnfcCpId: c.id });
  };
  const allCps = vnfcs.flatMap((v) => v.vnfcCpInfo ?? []);
  for (const vl of extVls) {
    for (const cp of vl.extCps) {
      const cpConfigId = Object.keys(cp.cpConfig ?? {})[0] ?? 'default';
      const fixed = fixedAddressesOf(cp.cpConfig);
      for (const c of allCps) if (c.cpdId === cp.cpdId) exposeVnfcCp(c, cpConfigId, fixed);
    }
  }
  for (const e of opts.externalCps ?? []) {
    if (e.vduCpId !== undefined) {
      for (const c of allCps) if (c.cpdId === e.vduCpId) exposeVnfcCp(c, 'default');
    } else if (e.internalVirtualLinkId !== undefined) {
      const vl = links.find((l) => l.vnfVirtualLinkDescId === e.internalVirtualLinkId);
      if (vl) extCpInfo.push({ id: `${e.cpdId}-${vl.id.slice(0, 8)}-ext`, cpdId: e.cpdId, cpConfigId: 'default', cpProtocolInfo: [], associatedVnfVirtualLinkId: vl.id });
    }
  }
  for (const x of observed.extCps ?? []) {
    const behind = x.vnfcResourceIds
      .map((rid) => vnfcs.find((v) => v.computeResource.resourceId === rid)?.vnfcCpInfo?.[0])
      .filter((c): c is VnfcCpInfo => c !== undefined)
      .sort((a, b) => a.id.localeCompare(b.id));
    const first = behind[0];
    if (first === undefined) continue;
    for (const c of behind) c.vnfExtCpId ??= x.id;
    extCpInfo.push({ id: x.id, cpdId: x.cpdId, cpConfigId: 'default', cpProtocolInfo: cpProtocolInfoOf(undefined, x.addresses), associatedVnfcCpId: first.id, metadata: { resourceId: x.resourceId, vimLevelResourceType: x.vimLevelResourceType } });
  }
  if (extCpInfo.length === 0) {
    for (const v of vnfcs) {
      const c = v.vnfcCpInfo?.[0];
      if (c) exposeVnfcCp(c, 'default');
    }
  }
  const extVirtualLinkInfo = extVls.map((l) => ({ id: l.id, resourceHandle: { vimConnectionId: opts.vimConnectionId, resourceId: l.resourceId ?? l.id }, currentVnfExtCpData: l.extCps }));
  return { extCpInfo, extVirtualLinkInfo };
}
