/**
 * MODIFY_INFO: changes instance attributes without the VIM, synchronously: the op occ is created
 * PROCESSING and completed in the same transaction as the instance change, with its START and
 * RESULT notifications (through the op occ state module like every other operation).
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { vnfmError } from '../../errors.ts';
import { ALL_PROJECTS, type ProjectScope, scopeWhere } from '../../model/project-scope.ts';
import type { OpOccRecord } from '../../model/op-occ.ts';
import { mergePatch } from '../../packages/package-service.ts';
import { json } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { InstanceService, ModifyInstanceInput } from '../instance-service.ts';
import type { OpOccStates } from '../op-occ-state.ts';
import { getOpOcc } from '../op-occ-repo.ts';
import { type InstancePatch, updateInstanceRow } from '../instance-state.ts';

/** What a modification needs. */
export interface ModifyInfoDeps {
  db: Kysely<Database>;
  instances: InstanceService;
  states: OpOccStates;
  log: Logger;
}

/** VnfInfoModificationRequest (v1 arrays already converted to the map form by the API). */
export async function modifyInfo(d: ModifyInfoDeps, id: string, patch: ModifyInstanceInput, apiVersion: 'v1' | 'v2', scopes: { packages?: ProjectScope; vims?: ProjectScope } = {}): Promise<OpOccRecord> {
  const given = Object.fromEntries(Object.entries(patch.vimConnectionInfo ?? {}).filter((e): e is [string, Partial<VimConnection>] => e[1] !== null));
  const newConns = Object.keys(given).length ? await d.instances.completeConnections(given, scopes.vims) : {};
  let opId = '';
  await d.db.transaction().execute(async (tx) => {
    const inst = await d.instances.get(id, tx);
    const op = await d.states.create(tx, { instance: inst, operation: 'MODIFY_INFO', command: { operation: 'MODIFY_INFO' }, params: withoutAccessInfo(patch), apiVersion, automatic: false, state: 'PROCESSING', pending: null });
    opId = op.id;
    const set: InstancePatch = {};
    const changed: Record<string, unknown> = {};
    if (patch.vnfInstanceName !== undefined) set.vnfInstanceName = changed.vnfInstanceName = patch.vnfInstanceName;
    if (patch.vnfInstanceDescription !== undefined) set.vnfInstanceDescription = changed.vnfInstanceDescription = patch.vnfInstanceDescription;
    for (const [attr, cur] of [
      ['vnfConfigurableProperties', inst.vnfConfigurableProperties],
      ['metadata', inst.metadata],
      ['extensions', inst.extensions],
    ] as const) {
      const p = patch[attr];
      if (p === undefined) continue;
      const v = p === null ? null : mergePatch(cur ?? {}, p);
      set[attr] = v;
      changed[attr] = v;
    }
    if (patch.vimConnectionInfo !== undefined) {
      const cur = await d.instances.vimConnections(id, tx);
      for (const [k, v] of Object.entries(patch.vimConnectionInfo)) {
        if (v === null) delete cur[k];
        else cur[k] = newConns[k] as VimConnection;
      }
      const sealed = await d.instances.sealConnections(cur);
      set.vimConnectionInfo = sealed.info;
      set.vimSecrets = sealed.secrets;
      changed.vimConnectionInfo = sealed.info;
    }
    if (patch.vnfdId !== undefined && patch.vnfdId !== inst.vnfdId) {
      if (inst.instantiationState !== 'NOT_INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `vnfdId of VnfInstance ${id} can only change while NOT_INSTANTIATED.`);
      let q = tx.selectFrom('vnf_package').selectAll().where('vnfd_id', '=', patch.vnfdId).where('onboarding_state', '=', 'ONBOARDED');
      // another project's package is answered as not onboarded
      for (const w of scopeWhere(scopes.packages ?? ALL_PROJECTS)) q = q.where(w);
      const pkg = await q.executeTakeFirst();
      if (!pkg) throw vnfmError('VNFM_ERR_VNFD_NOT_FOUND', `VNF package with vnfdId ${patch.vnfdId} is not onboarded.`);
      set.package = { vnfdId: patch.vnfdId, vnfPkgId: pkg.id, vnfProvider: pkg.vnf_provider ?? '', vnfProductName: pkg.vnf_product_name ?? '', vnfSoftwareVersion: pkg.vnf_software_version ?? '', vnfdVersion: pkg.vnfd_version ?? '' };
      changed.vnfdId = patch.vnfdId;
      await tx.updateTable('vnf_package').set({ usage_state: 'IN_USE' }).where('id', '=', pkg.id).execute();
    }
    await updateInstanceRow(tx, id, inst.rev, set);
    if (changed.vnfdId) {
      const others = await tx.selectFrom('vnf_instance').select('id').where('vnf_pkg_id', '=', inst.vnfPkgId).executeTakeFirst();
      if (!others) await tx.updateTable('vnf_package').set({ usage_state: 'NOT_IN_USE' }).where('id', '=', inst.vnfPkgId).execute();
    }
    const write = async (s: Record<string, unknown>) => {
      await tx.updateTable('op_occ').set(s as never).where('id', '=', op.id).execute();
    };
    await d.states.finished(tx, write, op, 'COMPLETED', { changed_info: json(changed), pending: null }, { instanceId: id, full: { changedInfo: changed } });
  });
  d.log.info({ vnfInstanceId: id, opOccId: opId }, 'vnf instance modified');
  return getOpOcc(d.db, opId);
}

/** The request as kept in `operationParams`: VIM credentials (accessInfo) are sealed elsewhere and never echoed. */
function withoutAccessInfo(patch: ModifyInstanceInput): Record<string, unknown> {
  if (!patch.vimConnectionInfo) return { ...patch };
  const vci = Object.fromEntries(
    Object.entries(patch.vimConnectionInfo).map(([k, c]) => {
      if (c === null) return [k, null];
      const { accessInfo: _secret, ...rest } = c;
      return [k, rest];
    }),
  );
  return { ...patch, vimConnectionInfo: vci };
}
