/**
 * v1 (SOL 2.6.1) and v2 (SOL 3.3.1) LCM requests to canonical commands (src/model/lcm-command.ts).
 * This is the only place that knows how the two versions differ in what they ask for:
 * - heal: v1 names VNFCs by vnfcResourceInfo id and heals the entire VNF when it names none; v2
 *   names them by vnfcInfo id, heals every VNFC when it names none, and the entire VNF with
 *   `additionalParams.all: true` (which also re-creates storage);
 * - vimConnectionInfo: a v1 array (entries with `id`) becomes the v2 map.
 * Ids of the other kind are accepted too (Tacker does), and unknown ones are a 422 naming them.
 */
import { vnfmError } from '../../errors.ts';
import type { HealCommand, InstantiateCommand, ScaleCommand, TerminateCommand } from '../../model/lcm-command.ts';
import type { VnfInstanceRecord } from '../../model/vnf-instance.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { ApiVersion } from './converters.ts';
import { checkVnfmProperties } from '../../model/vnfm-properties.ts';

type Body = Record<string, unknown>;

function obj(v: unknown): Body {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Body) : {};
}

/** A v1 vimConnectionInfo array as the v2 map (entries without an id get `vim_<index>`). */
export function v1Connections(list: unknown[] | undefined): Record<string, Partial<VimConnection>> | undefined {
  if (!list) return undefined;
  const out: Record<string, Partial<VimConnection>> = {};
  list.forEach((e, i) => {
    const { id, ...rest } = e as Partial<VimConnection> & { id?: string };
    out[id ?? `vim_${i}`] = rest;
  });
  return out;
}

/** InstantiateVnfRequest -> command, and the VIM connections it brings (with their credentials). */
export function instantiateCommand(b: Body, v: ApiVersion): { command: InstantiateCommand; vimConnectionInfo?: Record<string, Partial<VimConnection>> } {
  checkVnfmProperties(b.vnfConfigurableProperties);
  const command: InstantiateCommand = {
    operation: 'INSTANTIATE',
    flavourId: b.flavourId as string,
    ...(b.instantiationLevelId !== undefined ? { instantiationLevelId: b.instantiationLevelId as string } : {}),
    ...(Array.isArray(b.extVirtualLinks) ? { extVirtualLinks: b.extVirtualLinks as Body[] } : {}),
    ...(Array.isArray(b.extManagedVirtualLinks) ? { extManagedVirtualLinks: b.extManagedVirtualLinks as Body[] } : {}),
    ...(b.vnfConfigurableProperties !== undefined ? { vnfConfigurableProperties: obj(b.vnfConfigurableProperties) } : {}),
    ...(b.extensions !== undefined ? { extensions: obj(b.extensions) } : {}),
    ...(typeof b.localizationLanguage === 'string' ? { localizationLanguage: b.localizationLanguage } : {}),
    additionalParams: obj(b.additionalParams),
  };
  const raw = b.vimConnectionInfo;
  if (raw === undefined) return { command };
  return { command, vimConnectionInfo: v === 'v1' || Array.isArray(raw) ? v1Connections(raw as unknown[]) : (raw as Record<string, Partial<VimConnection>>) };
}

/** TerminateVnfRequest -> command (SOL: FORCEFUL when not given). */
export function terminateCommand(b: Body): TerminateCommand {
  return {
    operation: 'TERMINATE',
    terminationType: b.terminationType === 'GRACEFUL' ? 'GRACEFUL' : 'FORCEFUL',
    ...(typeof b.gracefulTerminationTimeout === 'number' ? { gracefulTerminationTimeout: b.gracefulTerminationTimeout } : {}),
    additionalParams: obj(b.additionalParams),
  };
}

/** ScaleVnfRequest -> command (one step when not given). */
export function scaleCommand(b: Body): ScaleCommand {
  return { operation: 'SCALE', type: b.type as 'SCALE_OUT' | 'SCALE_IN', aspectId: b.aspectId as string, numberOfSteps: (b.numberOfSteps as number | undefined) ?? 1, additionalParams: obj(b.additionalParams) };
}

/** HealVnfRequest -> command, VNFC ids resolved against the instance (see the module comment). */
export function healCommand(b: Body, v: ApiVersion, inst: VnfInstanceRecord): HealCommand {
  const additionalParams = obj(b.additionalParams);
  if (additionalParams.all !== undefined && typeof additionalParams.all !== 'boolean') throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'additionalParams.all must be a boolean');
  const all = additionalParams.all === true;
  const base = { operation: 'HEAL' as const, includeStorage: all, additionalParams, ...(typeof b.cause === 'string' ? { cause: b.cause } : {}) };
  const ids = [...new Set((b.vnfcInstanceId as string[] | undefined) ?? [])];
  if (ids.length === 0) return { ...base, scope: v === 'v1' || all ? 'entire' : 'allVnfcs', vnfcInfoIds: [] };
  const info = inst.instantiatedVnfInfo;
  const byInfoId = new Map((info?.vnfcInfo ?? []).map((x) => [x.id, x.id]));
  const byResourceId = new Map((info?.vnfcInfo ?? []).map((x) => [x.vnfcResourceInfoId, x.id]));
  // The version's own id kind first, then the other one.
  const [first, second] = v === 'v1' ? [byResourceId, byInfoId] : [byInfoId, byResourceId];
  const vnfcInfoIds: string[] = [];
  const missing: string[] = [];
  for (const x of ids) {
    const id = first.get(x) ?? second.get(x);
    if (id === undefined) missing.push(x);
    else if (!vnfcInfoIds.includes(id)) vnfcInfoIds.push(id);
  }
  if (missing.length) throw vnfmError('VNFM_ERR_INST_INVALID', `vnfcInstanceId(${missing.join(', ')}) does not exist.`, { extra: { unknownVnfcInstanceIds: missing } });
  return { ...base, scope: 'vnfcs', vnfcInfoIds };
}
