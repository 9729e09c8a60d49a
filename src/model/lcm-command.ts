/**
 * Canonical LCM commands: what an operation is asked to do, independent of the API version that
 * asked. The API facades convert v1 (SOL 2.6.1) and v2 (SOL 3.3.1) requests into these at the
 * edge (`src/api/vnflcm/commands.ts`); the engine, its operation handlers, the management drivers
 * and the auto-heal batcher only ever see this form. The request as received is kept next to it
 * (`operationParams`, secrets removed) for echoing in op occs only.
 *
 * A command is stored with its op occ (`op_occ.command`), so a retry, a rollback or a resume in
 * another process acts on exactly what was accepted.
 */
import type { VnfInstanceRecord } from './vnf-instance.ts';

type Params = Record<string, unknown>;

/** InstantiateVnfRequest. */
export interface InstantiateCommand {
  operation: 'INSTANTIATE';
  flavourId: string;
  instantiationLevelId?: string;
  extVirtualLinks?: Params[];
  extManagedVirtualLinks?: Params[];
  vnfConfigurableProperties?: Params;
  extensions?: Params;
  localizationLanguage?: string;
  additionalParams: Params;
}

/** ScaleVnfRequest. */
export interface ScaleCommand {
  operation: 'SCALE';
  type: 'SCALE_OUT' | 'SCALE_IN';
  aspectId: string;
  numberOfSteps: number;
  additionalParams: Params;
}

/**
 * What a heal re-creates:
 * - `vnfcs`: the VNFCs named by `vnfcInfoIds`;
 * - `allVnfcs`: every VNFC the instance has when the heal runs, one by one;
 * - `entire`: the whole VNF re-created (SOL003 v1 heal without VNFC ids, v2 `additionalParams.all`).
 */
export type HealScope = 'vnfcs' | 'allVnfcs' | 'entire';

/** HealVnfRequest. */
export interface HealCommand {
  operation: 'HEAL';
  scope: HealScope;
  /** vnfcInfo ids (scope `vnfcs`); empty otherwise. */
  vnfcInfoIds: string[];
  /** Re-create the VNFCs' storage too. */
  includeStorage: boolean;
  cause?: string;
  additionalParams: Params;
}

/** TerminateVnfRequest. */
export interface TerminateCommand {
  operation: 'TERMINATE';
  terminationType: 'GRACEFUL' | 'FORCEFUL';
  gracefulTerminationTimeout?: number;
  additionalParams: Params;
}

/** VnfInfoModificationRequest (already merged-patch shaped), or a drift sync that adopted the VIM's state. */
export interface ModifyInfoCommand {
  operation: 'MODIFY_INFO';
  /** True for a drift sync (no request; the VIM's state was adopted). */
  sync?: boolean;
}

export type LcmCommand = InstantiateCommand | ScaleCommand | HealCommand | TerminateCommand | ModifyInfoCommand;

/** The command of an op occ, narrowed to its operation. */
export type CommandOf<O extends LcmCommand['operation']> = Extract<LcmCommand, { operation: O }>;

/** What {@link commandOf} reads of an op occ (src/model/op-occ.ts `OpOccRecord` has these fields). */
export interface StoredOperation {
  operation: LcmCommand['operation'];
  command: LcmCommand | null;
  operationParams: Record<string, unknown>;
  apiVersion: 'v1' | 'v2';
}

function obj(v: unknown): Params {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Params) : {};
}

/**
 * The command of an op occ. Op occs accepted before commands were stored carry only the request
 * and the facade's version: their command is derived here once, with the rules those versions had
 * (v1 heal ids name vnfcResourceInfo, a v1 heal without ids is the entire VNF).
 */
export function commandOf(op: StoredOperation, instance?: VnfInstanceRecord): LcmCommand {
  if (op.command) return op.command;
  const p = op.operationParams;
  const additionalParams = obj(p.additionalParams);
  switch (op.operation) {
    case 'INSTANTIATE':
      return {
        operation: 'INSTANTIATE',
        flavourId: String(p.flavourId ?? ''),
        ...(typeof p.instantiationLevelId === 'string' ? { instantiationLevelId: p.instantiationLevelId } : {}),
        ...(Array.isArray(p.extVirtualLinks) ? { extVirtualLinks: p.extVirtualLinks as Params[] } : {}),
        ...(p.vnfConfigurableProperties ? { vnfConfigurableProperties: obj(p.vnfConfigurableProperties) } : {}),
        ...(p.extensions ? { extensions: obj(p.extensions) } : {}),
        additionalParams,
      };
    case 'SCALE':
      return { operation: 'SCALE', type: p.type === 'SCALE_IN' ? 'SCALE_IN' : 'SCALE_OUT', aspectId: String(p.aspectId ?? ''), numberOfSteps: typeof p.numberOfSteps === 'number' ? p.numberOfSteps : 1, additionalParams };
    case 'TERMINATE':
      return { operation: 'TERMINATE', terminationType: p.terminationType === 'GRACEFUL' ? 'GRACEFUL' : 'FORCEFUL', ...(typeof p.gracefulTerminationTimeout === 'number' ? { gracefulTerminationTimeout: p.gracefulTerminationTimeout } : {}), additionalParams };
    case 'HEAL': {
      const ids = (Array.isArray(p.vnfcInstanceId) ? p.vnfcInstanceId : []).filter((x): x is string => typeof x === 'string');
      const cause = typeof p.cause === 'string' ? { cause: p.cause } : {};
      const includeStorage = additionalParams.all === true;
      if (ids.length === 0) return { operation: 'HEAL', scope: op.apiVersion === 'v1' || additionalParams.all === true ? 'entire' : 'allVnfcs', vnfcInfoIds: [], includeStorage, additionalParams, ...cause };
      const info = instance?.instantiatedVnfInfo;
      const toInfoId = (x: string) => (info?.vnfcInfo ?? []).find((v) => v.vnfcResourceInfoId === x)?.id ?? x;
      return { operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: op.apiVersion === 'v1' ? ids.map(toInfoId) : ids, includeStorage, additionalParams, ...cause };
    }
    default:
      return { operation: 'MODIFY_INFO', ...(p.sync === true ? { sync: true } : {}) };
  }
}
