/**
 * Rebuilds `instantiatedVnfInfo` from what the VIM reports and computes `resourceChanges`.
 * Identities are stable: a VNFC keeps its vnfcResourceInfo id and vnfcInfo id when the VIM replaces
 * its resource (heal, or drift such as Kubernetes replacing a pod). Matching order: same resource id,
 * then same stable key (Heat resource path, StatefulSet ordinal), then the remaining old and new
 * resources of the same VDU are paired (heal targets first). Only truly new resources get new ids.
 */
import { randomUUID } from 'node:crypto';
import type { ObservedResources, ObservedVnfc } from '../infra/infra-driver.ts';
import type { InstantiatedVnfInfo, VirtualStorageResourceInfo, VnfVirtualLinkResourceInfo, VnfcInfo, VnfcResourceInfo } from '../model/vnf-instance.ts';

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
}

/** SOL resourceChanges. */
export interface ResourceChanges {
  affectedVnfcs: Record<string, unknown>[];
  affectedVirtualLinks: Record<string, unknown>[];
  affectedVirtualStorages: Record<string, unknown>[];
}

/** Computes the new instantiatedVnfInfo and the changes against `prev`. */
export function rebuildInstantiatedInfo(prev: InstantiatedVnfInfo | null, observed: ObservedResources, opts: RebuildOptions): { info: InstantiatedVnfInfo; changes: ResourceChanges } {
  const handle = (resourceId: string, type: string) => ({ vimConnectionId: opts.vimConnectionId, resourceId, vimLevelResourceType: type });

  // --- storages
  const prevSt = prev?.virtualStorageResourceInfo ?? [];
  const usedSt = new Set<string>();
  const storages: VirtualStorageResourceInfo[] = [];
  const storageIdByResource = new Map<string, string>();
  const affectedVirtualStorages: Record<string, unknown>[] = [];
  for (const s of observed.storages) {
    let old = prevSt.find((p) => !usedSt.has(p.id) && p.storageResource.resourceId === s.resourceId);
    let replaced = false;
    if (!old && s.stableKey) {
      old = prevSt.find((p) => !usedSt.has(p.id) && p.metadata?.stableKey === s.stableKey);
      replaced = !!old;
    }
    const id = old?.id ?? randomUUID();
    if (old) usedSt.add(old.id);
    const info: VirtualStorageResourceInfo = { id, virtualStorageDescId: s.virtualStorageDescId, storageResource: handle(s.resourceId, s.vimLevelResourceType), metadata: { ...(s.metadata ?? {}), ...(s.stableKey ? { stableKey: s.stableKey } : {}) } };
    storages.push(info);
    storageIdByResource.set(s.resourceId, id);
    if (!old) affectedVirtualStorages.push({ id, virtualStorageDescId: s.virtualStorageDescId, changeType: 'ADDED', storageResource: info.storageResource });
    else if (replaced) affectedVirtualStorages.push({ id, virtualStorageDescId: s.virtualStorageDescId, changeType: 'MODIFIED', storageResource: info.storageResource, metadata: { replacedResourceId: old.storageResource.resourceId } });
  }
  for (const p of prevSt) if (!usedSt.has(p.id)) affectedVirtualStorages.push({ id: p.id, virtualStorageDescId: p.virtualStorageDescId, changeType: 'REMOVED', storageResource: p.storageResource });

  // --- VNFCs
  const prevV = prev?.vnfcResourceInfo ?? [];
  const prevInfo = new Map((prev?.vnfcInfo ?? []).map((i) => [i.vnfcResourceInfoId, i]));
  const healed = opts.healedIds ?? new Set<string>();
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

  const vnfcs: VnfcResourceInfo[] = [];
  const vnfcInfo: VnfcInfo[] = [];
  const affectedVnfcs: Record<string, unknown>[] = [];
  for (const o of observed.vnfcs) {
    const old = pairs.get(o);
    const id = old?.id ?? randomUUID();
    const storageIds = (o.storageResourceIds ?? []).map((r) => storageIdByResource.get(r)).filter((x): x is string => !!x);
    // Hook metadata may be keyed by vnfcResourceInfo id or, for VNFCs created by this very
    // operation (whose final id is only known now), by the VIM resource id. `null` removes a key.
    const hookMeta = { ...(opts.vnfcMetadata?.[o.computeResource.resourceId] ?? {}), ...(old ? (opts.vnfcMetadata?.[old.id] ?? {}) : {}) };
    const meta: Record<string, unknown> = { ...(old?.metadata ?? {}), ...(o.metadata ?? {}), ...hookMeta };
    for (const [k, v] of Object.entries(hookMeta)) if (v === null) delete meta[k];
    if (o.stableKey) meta.stableKey = o.stableKey;
    delete meta.replacedResourceId;
    const replacedId = old && old.computeResource.resourceId !== o.computeResource.resourceId ? old.computeResource.resourceId : undefined;
    const rec: VnfcResourceInfo = {
      id,
      vduId: o.vduId,
      computeResource: { ...handle(o.computeResource.resourceId, o.computeResource.vimLevelResourceType), ...(o.computeResource.resourceProviderId ? { resourceProviderId: o.computeResource.resourceProviderId } : {}) },
      ...(o.zoneId ? { zoneId: o.zoneId } : {}),
      ...(storageIds.length ? { storageResourceIds: storageIds } : {}),
      ...(o.cps?.length ? { vnfcCpInfo: o.cps.map((c, i) => ({ id: `${id.slice(0, 8)}-${c.cpdId}-${i}`, cpdId: c.cpdId })) } : {}),
      metadata: meta,
    };
    vnfcs.push(rec);
    const pi = old ? prevInfo.get(old.id) : undefined;
    vnfcInfo.push({ id: pi?.id ?? randomUUID(), vduId: o.vduId, vnfcResourceInfoId: id, vnfcState: 'STARTED', ...(pi?.vnfcConfigurableProperties ? { vnfcConfigurableProperties: pi.vnfcConfigurableProperties } : {}) });
    const oldSt = new Set(old?.storageResourceIds ?? []);
    const newSt = new Set(storageIds);
    const addedSt = storageIds.filter((s) => !oldSt.has(s) || affectedVirtualStorages.some((a) => a.id === s && a.changeType !== 'REMOVED'));
    const removedSt = [...oldSt].filter((s) => !newSt.has(s));
    if (!old) {
      affectedVnfcs.push({ id, vduId: o.vduId, changeType: 'ADDED', computeResource: rec.computeResource, ...(storageIds.length ? { addedStorageResourceIds: storageIds } : {}) });
    } else if (replacedId || healed.has(old.id)) {
      affectedVnfcs.push({
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
    if (!used.has(p.id)) affectedVnfcs.push({ id: p.id, vduId: p.vduId, changeType: 'REMOVED', computeResource: p.computeResource, ...(p.storageResourceIds?.length ? { removedStorageResourceIds: p.storageResourceIds } : {}) });
  }

  // --- virtual links
  const prevL = prev?.vnfVirtualLinkResourceInfo ?? [];
  const usedL = new Set<string>();
  const links: VnfVirtualLinkResourceInfo[] = [];
  const affectedVirtualLinks: Record<string, unknown>[] = [];
  for (const l of observed.virtualLinks) {
    const old = prevL.find((p) => !usedL.has(p.id) && p.networkResource.resourceId === l.resourceId) ?? prevL.find((p) => !usedL.has(p.id) && p.vnfVirtualLinkDescId === l.vnfVirtualLinkDescId);
    const id = old?.id ?? randomUUID();
    if (old) usedL.add(old.id);
    const rec: VnfVirtualLinkResourceInfo = { id, vnfVirtualLinkDescId: l.vnfVirtualLinkDescId, networkResource: handle(l.resourceId, l.vimLevelResourceType), ...(l.metadata ? { metadata: l.metadata } : {}) };
    links.push(rec);
    if (!old) affectedVirtualLinks.push({ id, vnfVirtualLinkDescId: l.vnfVirtualLinkDescId, changeType: 'ADDED', networkResource: rec.networkResource });
    else if (old.networkResource.resourceId !== l.resourceId) affectedVirtualLinks.push({ id, vnfVirtualLinkDescId: l.vnfVirtualLinkDescId, changeType: 'MODIFIED', networkResource: rec.networkResource });
  }
  for (const p of prevL) if (!usedL.has(p.id)) affectedVirtualLinks.push({ id: p.id, vnfVirtualLinkDescId: p.vnfVirtualLinkDescId, changeType: 'REMOVED', networkResource: p.networkResource });

  // --- external CPs: every VNFC CP whose cpdId is connected by an external virtual link
  const extVls: { id: string; resourceId?: string; extCps: { cpdId: string; cpConfig?: Record<string, unknown> }[] }[] = (
    opts.extVirtualLinks ??
    (prev?.extVirtualLinkInfo ?? []).map((l) => ({ id: l.id, resourceId: (l.resourceHandle as { resourceId?: string } | undefined)?.resourceId, extCps: (l.currentVnfExtCpData ?? []) as never }))
  ).map((l) => ({ id: String(l.id), ...(l.resourceId !== undefined ? { resourceId: String(l.resourceId) } : {}), extCps: (Array.isArray(l.extCps) ? l.extCps : []) as { cpdId: string; cpConfig?: Record<string, unknown> }[] }));
  const extCpInfo: Record<string, unknown>[] = [];
  for (const vl of extVls) {
    for (const cp of vl.extCps) {
      const cpConfigId = Object.keys(cp.cpConfig ?? {})[0] ?? 'default';
      for (const v of vnfcs) {
        for (const c of v.vnfcCpInfo ?? []) {
          if (c.cpdId !== cp.cpdId) continue;
          const id = `${c.id}-ext`;
          c.vnfExtCpId = id;
          extCpInfo.push({ id, cpdId: cp.cpdId, cpConfigId, cpProtocolInfo: [], associatedVnfcCpId: c.id });
        }
      }
    }
  }
  const extVirtualLinkInfo = extVls.map((l) => ({ id: l.id, resourceHandle: { vimConnectionId: opts.vimConnectionId, resourceId: l.resourceId ?? l.id }, currentVnfExtCpData: l.extCps }));

  const info: InstantiatedVnfInfo = {
    flavourId: opts.flavourId,
    vnfState: 'STARTED',
    ...(opts.instantiationLevelId ? { instantiationLevelId: opts.instantiationLevelId } : {}),
    ...(opts.scaleStatus.length ? { scaleStatus: opts.scaleStatus } : {}),
    ...(opts.maxScaleLevels.length ? { maxScaleLevels: opts.maxScaleLevels } : {}),
    ...(extCpInfo.length ? { extCpInfo } : {}),
    ...(extVirtualLinkInfo.length ? { extVirtualLinkInfo } : {}),
    vnfcResourceInfo: vnfcs,
    vnfVirtualLinkResourceInfo: links,
    virtualStorageResourceInfo: storages,
    vnfcInfo,
    metadata: { ...(prev?.metadata ?? {}), ...(observed.metadata ?? {}) },
  };
  return { info, changes: { affectedVnfcs, affectedVirtualLinks, affectedVirtualStorages } };
}
