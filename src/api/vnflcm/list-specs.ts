/**
 * How the VNF LCM collections are listed in SQL (src/api/sol/sql-list.ts): which API attributes
 * are plain columns (filtered in the database), when a JSON attribute is present at all, and
 * which heavy JSON columns may be skipped when the response will not show them.
 */
import { sql } from 'kysely';
import { opOccFromRow } from '../../model/op-occ.ts';
import { instanceFromRow } from '../../model/vnf-instance.ts';
import type { FilterPathSegment, SimpleFilterExpr } from '../sol/filter.ts';
import type { JsonAttr } from '../sol/json-filter.ts';
import type { SqlListSpec } from '../sol/sql-list.ts';
import { type ApiVersion, instanceToApi, opOccToApi } from './converters.ts';

const jsonPresent = (column: string) => sql<boolean>`coalesce(jsonb_typeof(${sql.ref(column)}), 'null') <> 'null'`;

/** An attribute stored as it is shown: nested filters on it are decided in SQL. */
const asStored = (column: string): JsonAttr => ({ expr: sql.ref(column) });

const attrStep = (s: FilterPathSegment | undefined): string | undefined => (s?.kind === 'attr' ? s.name : undefined);
const NEGATED = new Set(['neq', 'nin', 'ncont']);

/**
 * v1 `instantiatedVnfInfo` is the stored (v2) one renamed (src/api/vnflcm/converters.ts):
 * `virtualLinkResourceInfo` is the stored `vnfVirtualLinkResourceInfo`; `vnfcInfo`, `maxScaleLevels`
 * do not exist; empty `storageResourceIds` / `extCpInfo` arrays are dropped (matters only to the
 * negated operators); `@key` sees those renames everywhere, so it is left to memory.
 */
function v1InstantiatedPath(steps: readonly FilterPathSegment[], term: SimpleFilterExpr): readonly FilterPathSegment[] | 'never' | 'memory' {
  if (steps.some((s) => s.kind === 'key')) return 'memory';
  const first = attrStep(steps[0]);
  if (first === 'vnfVirtualLinkResourceInfo' || first === 'vnfcInfo' || first === 'maxScaleLevels') return 'never';
  const names = steps.map(attrStep);
  if (NEGATED.has(term.op) && ((names.length === 1 && first === 'extCpInfo') || (names.length === 2 && first === 'vnfcResourceInfo' && names[1] === 'storageResourceIds'))) return 'memory';
  if (first === 'virtualLinkResourceInfo') return [{ kind: 'attr', name: 'vnfVirtualLinkResourceInfo' }, ...steps.slice(1)];
  return steps;
}

/**
 * v2 `vimConnectionInfo` shows of each stored entry only `vimId`, `vimType`, `interfaceInfo` and a
 * non-empty `extra` (never `accessInfo`).
 */
function v2VimConnectionPath(steps: readonly FilterPathSegment[], term: SimpleFilterExpr): readonly FilterPathSegment[] | 'never' | 'memory' {
  if (steps.length < 2) return steps;
  const field = steps[1] as FilterPathSegment;
  if (field.kind === 'key') return 'memory';
  if (field.name === 'extra') return steps.length === 2 && NEGATED.has(term.op) ? 'memory' : steps;
  return field.name === 'vimId' || field.name === 'vimType' || field.name === 'interfaceInfo' ? steps : 'never';
}

const INSTANCE_COLUMNS = [
  'id',
  'vnf_instance_name',
  'vnf_instance_description',
  'vnfd_id',
  'vnf_pkg_id',
  'vnf_provider',
  'vnf_product_name',
  'vnf_software_version',
  'vnfd_version',
  'instantiation_state',
  'vnf_configurable_properties',
  'vim_connection_info',
  'instantiated_vnf_info',
  'metadata',
  'extensions',
  'created_api',
  'created_at',
  'rev',
];

/** `/vnflcm/{v}/vnf_instances`, oldest first. */
export function instanceListSpec(v: ApiVersion, publicUrl: string): SqlListSpec {
  return {
    collection: `vnflcm/${v}/vnf_instances`,
    table: 'vnf_instance',
    orderColumn: 'created_at',
    orderDir: 'asc',
    columns: INSTANCE_COLUMNS,
    attrs: {
      id: { column: 'id', type: 'text' },
      vnfInstanceName: { column: 'vnf_instance_name', type: 'text' },
      vnfInstanceDescription: { column: 'vnf_instance_description', type: 'text' },
      vnfdId: { column: 'vnfd_id', type: 'text' },
      vnfProvider: { column: 'vnf_provider', type: 'text' },
      vnfProductName: { column: 'vnf_product_name', type: 'text' },
      vnfSoftwareVersion: { column: 'vnf_software_version', type: 'text' },
      vnfdVersion: { column: 'vnfd_version', type: 'text' },
      // SOL 2.6.1 only; in v2 the attribute does not exist, so a term on it matches nothing
      ...(v === 'v1' ? { vnfPkgId: { column: 'vnf_pkg_id', type: 'text' } as const } : {}),
      instantiationState: { column: 'instantiation_state', type: 'text' },
    },
    presence: {
      vnfConfigurableProperties: jsonPresent('vnf_configurable_properties'),
      instantiatedVnfInfo: sql<boolean>`(instantiation_state = 'INSTANTIATED' and ${jsonPresent('instantiated_vnf_info')})`,
      metadata: jsonPresent('metadata'),
      extensions: jsonPresent('extensions'),
      ...(v === 'v2' ? { vimConnectionInfo: sql<boolean>`(jsonb_typeof(vim_connection_info) = 'object' and vim_connection_info <> '{}'::jsonb)` } : {}),
      ...(v === 'v2' ? { vnfPkgId: sql<boolean>`false` } : {}),
    },
    json: {
      vnfConfigurableProperties: 'vnf_configurable_properties',
      vimConnectionInfo: 'vim_connection_info',
      instantiatedVnfInfo: 'instantiated_vnf_info',
      metadata: 'metadata',
      extensions: 'extensions',
    },
    jsonAttrs: {
      vnfConfigurableProperties: asStored('vnf_configurable_properties'),
      instantiatedVnfInfo: v === 'v2' ? asStored('instantiated_vnf_info') : { expr: sql.ref('instantiated_vnf_info'), map: v1InstantiatedPath },
      metadata: asStored('metadata'),
      extensions: asStored('extensions'),
      // v1 shows the map as an array of entries with `id` = the key: decided in memory
      ...(v === 'v2' ? { vimConnectionInfo: { expr: sql.ref('vim_connection_info'), map: v2VimConnectionPath } } : {}),
    },
    lazy: {
      vnfConfigurableProperties: 'vnf_configurable_properties',
      vimConnectionInfo: 'vim_connection_info',
      instantiatedVnfInfo: 'instantiated_vnf_info',
      metadata: 'metadata',
      extensions: 'extensions',
    },
    toApi: (row) => instanceToApi(instanceFromRow(row), v, publicUrl),
  };
}

const OPOCC_COLUMNS = [
  'id',
  'vnf_instance_id',
  'operation',
  'operation_state',
  'state_entered_time',
  'start_time',
  'is_automatic_invocation',
  'is_cancel_pending',
  'cancel_mode',
  'operation_params',
  'error',
  'resource_changes',
  'changed_info',
  'grant_id',
  'pending',
  'lease_owner',
  'lease_until',
  'attempts',
  'api_version',
  'created_at',
];

/** `/vnflcm/{v}/vnf_lcm_op_occs`, oldest first. Engine-only columns (ctx, grant) are never read. */
export function opOccListSpec(v: ApiVersion, publicUrl: string): SqlListSpec {
  return {
    collection: `vnflcm/${v}/vnf_lcm_op_occs`,
    table: 'op_occ',
    orderColumn: 'created_at',
    orderDir: 'asc',
    columns: OPOCC_COLUMNS,
    attrs: {
      id: { column: 'id', type: 'text' },
      operationState: { column: 'operation_state', type: 'text' },
      stateEnteredTime: { column: 'state_entered_time', type: 'time' },
      startTime: { column: 'start_time', type: 'time' },
      vnfInstanceId: { column: 'vnf_instance_id', type: 'text' },
      grantId: { column: 'grant_id', type: 'text' },
      operation: { column: 'operation', type: 'text' },
      isAutomaticInvocation: { column: 'is_automatic_invocation', type: 'bool' },
      isCancelPending: { column: 'is_cancel_pending', type: 'bool' },
      cancelMode: { column: 'cancel_mode', type: 'text' },
    },
    presence: {
      error: jsonPresent('error'),
      resourceChanges: jsonPresent('resource_changes'),
      changedInfo: jsonPresent('changed_info'),
    },
    // operationParams is shown masked (sealed and secret-named values as ****): decided in memory;
    // v1 resourceChanges is converted (src/model/sol-shapes.ts): decided in memory
    jsonAttrs: { error: asStored('error'), changedInfo: asStored('changed_info'), ...(v === 'v2' ? { resourceChanges: asStored('resource_changes') } : {}) },
    json: { operationParams: 'operation_params', error: 'error', resourceChanges: 'resource_changes', changedInfo: 'changed_info' },
    lazy: {
      operationParams: 'operation_params',
      error: 'error',
      resourceChanges: 'resource_changes',
      changedInfo: 'changed_info',
    },
    toApi: (row) => opOccToApi(opOccFromRow(row), v, publicUrl),
  };
}
