/**
 * Shape converters: one stored model, two API versions. v2 follows SOL 3.3.1 (vimConnectionInfo
 * map, vnfcInfo, vnfVirtualLinkResourceInfo), v1 follows SOL 2.6.1 (vimConnectionInfo array,
 * virtualLinkResourceInfo, vnfPkgId). Nothing else in the code knows the differences.
 */
import type { OpOccRecord } from '../../model/op-occ.ts';
import { resourceChangesToV1 } from '../../model/sol-shapes.ts';
import { maskSealed } from '../../model/sealed-params.ts';
import type { VnfInstanceRecord } from '../../model/vnf-instance.ts';

/** API version of a facade. */
export type ApiVersion = 'v1' | 'v2';

function defined(o: Record<string, unknown>): Record<string, unknown> {
  for (const k of Object.keys(o)) if (o[k] === undefined || o[k] === null) delete o[k];
  return o;
}

/** VnfInstance body for the given API version. */
export function instanceToApi(i: VnfInstanceRecord, v: ApiVersion, publicUrl: string): Record<string, unknown> {
  const base = `${publicUrl}/vnflcm/${v}/vnf_instances/${i.id}`;
  // Only task resources this VNFM serves (src/api/vnflcm/lcm-routes.ts): no scaleToLevel,
  // changeExtConn, changeFlavour, operate, snapshots.
  const links: Record<string, { href: string }> = { self: { href: base } };
  if (i.instantiationState === 'NOT_INSTANTIATED') links.instantiate = { href: `${base}/instantiate` };
  else for (const k of ['terminate', 'scale', 'heal'] as const) links[k] = { href: `${base}/${k}` };
  const body: Record<string, unknown> = {
    id: i.id,
    vnfInstanceName: i.vnfInstanceName ?? undefined,
    vnfInstanceDescription: i.vnfInstanceDescription ?? undefined,
    vnfdId: i.vnfdId,
    vnfProvider: i.vnfProvider,
    vnfProductName: i.vnfProductName,
    vnfSoftwareVersion: i.vnfSoftwareVersion,
    vnfdVersion: i.vnfdVersion,
  };
  if (v === 'v1') body.vnfPkgId = i.vnfPkgId;
  if (i.vnfConfigurableProperties) body.vnfConfigurableProperties = i.vnfConfigurableProperties;
  const vci = Object.entries(i.vimConnectionInfo ?? {});
  if (v === 'v2') {
    if (vci.length) body.vimConnectionInfo = Object.fromEntries(vci.map(([k, c]) => [k, defined({ vimId: c.vimId, vimType: c.vimType, interfaceInfo: c.interfaceInfo, extra: c.extra && Object.keys(c.extra).length ? c.extra : undefined })]));
  } else {
    body.vimConnectionInfo = vci.map(([k, c]) => defined({ id: k, vimId: c.vimId, vimType: c.vimType, interfaceInfo: c.interfaceInfo, extra: c.extra && Object.keys(c.extra).length ? c.extra : undefined }));
  }
  body.instantiationState = i.instantiationState;
  if (i.instantiationState === 'INSTANTIATED' && i.instantiatedVnfInfo) body.instantiatedVnfInfo = v === 'v2' ? i.instantiatedVnfInfo : instantiatedInfoToV1(i.instantiatedVnfInfo);
  if (i.metadata) body.metadata = i.metadata;
  if (i.extensions) body.extensions = i.extensions;
  body._links = links;
  return defined(body);
}

function instantiatedInfoToV1(info: NonNullable<VnfInstanceRecord['instantiatedVnfInfo']>): Record<string, unknown> {
  const { vnfVirtualLinkResourceInfo, vnfcInfo, maxScaleLevels, ...rest } = info;
  const out: Record<string, unknown> = { ...rest };
  // SOL 2.6.1 names the array virtualLinkResourceInfo; its entries keep vnfVirtualLinkDescId.
  if (vnfVirtualLinkResourceInfo) out.virtualLinkResourceInfo = vnfVirtualLinkResourceInfo;
  if (info.vnfcResourceInfo) out.vnfcResourceInfo = info.vnfcResourceInfo.map((r) => ({ ...r, ...(r.storageResourceIds?.length ? {} : { storageResourceIds: undefined }) }));
  if (info.extCpInfo && info.extCpInfo.length === 0) delete out.extCpInfo;
  void vnfcInfo;
  void maxScaleLevels;
  return defined(out);
}

/** VnfLcmOpOcc body for the given API version. */
export function opOccToApi(o: OpOccRecord, v: ApiVersion, publicUrl: string): Record<string, unknown> {
  const base = `${publicUrl}/vnflcm/${v}`;
  const self = `${base}/vnf_lcm_op_occs/${o.id}`;
  // No `grant` link: grants are not a resource of this VNFM (the local NFVO keeps none, an external
  // NFVO's grant lives at the NFVO); grantId still names it.
  const links: Record<string, { href: string }> = { self: { href: self }, vnfInstance: { href: `${base}/vnf_instances/${o.vnfInstanceId}` } };
  if (o.operationState === 'FAILED_TEMP') {
    links.retry = { href: `${self}/retry` };
    links.rollback = { href: `${self}/rollback` };
    links.fail = { href: `${self}/fail` };
  }
  if (v === 'v1' && (o.operationState === 'PROCESSING' || o.operationState === 'STARTING')) links.cancel = { href: `${self}/cancel` };
  // Vendor attribute (not in SOL002/003; ETSI's definitions allow extra attributes): present only
  // while a step waits for its automatic retry. The op keeps its SOL state (e.g. PROCESSING).
  const retry = o.pending !== null && o.nextAttemptAt !== null ? (o.ctx.retry as { step?: string; attempts?: number; maxAttempts?: number; lastError?: unknown } | undefined) : undefined;
  const progress = o.operationState === 'PROCESSING' || o.operationState === 'ROLLING_BACK' ? (o.ctx.progress as Record<string, unknown> | undefined) : undefined;
  return defined({
    id: o.id,
    operationState: o.operationState,
    stateEnteredTime: o.stateEnteredTime.toISOString(),
    startTime: o.startTime.toISOString(),
    vnfInstanceId: o.vnfInstanceId,
    grantId: o.grantId ?? undefined,
    operation: o.operation,
    isAutomaticInvocation: o.isAutomaticInvocation,
    operationParams: maskSealed(o.operationParams),
    isCancelPending: o.isCancelPending,
    cancelMode: o.cancelMode ?? undefined,
    error: o.error ?? undefined,
    resourceChanges: (v === 'v1' ? resourceChangesToV1(o.resourceChanges) : o.resourceChanges) ?? undefined,
    changedInfo: o.changedInfo ?? undefined,
    vnfmRetry: retry
      ? { step: retry.step, failedAttempts: retry.attempts, maxAttempts: retry.maxAttempts, nextAttemptTime: (o.nextAttemptAt as Date).toISOString(), lastError: retry.lastError }
      : undefined,
    // Vendor attribute: the management hook step running now (e.g. "heal_start: drain worker12").
    vnfmProgress: progress,
    _links: links,
  });
}


/** Attributes excluded by default in list responses (SOL013 exclude_default). */
export const INSTANCE_DEFAULT_EXCLUDED = ['vnfConfigurableProperties', 'vimConnectionInfo', 'instantiatedVnfInfo', 'metadata', 'extensions'];
/** Attributes excluded by default in op occ list responses. */
export const OPOCC_DEFAULT_EXCLUDED = ['operationParams', 'error', 'resourceChanges', 'changedInfo', 'changedExtConnectivity', 'vnfmRetry', 'vnfmProgress'];
