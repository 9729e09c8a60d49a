/**
 * HEAL: re-create the VNFCs named (scope `vnfcs`), every VNFC one by one (`allVnfcs`), or the whole
 * VNF (`entire`). Targets are vnfcInfo ids, resolved against the instance when the op runs; the
 * replaced VNFCs keep their ids (the rebuild reports them MODIFIED).
 */
import { vnfmError } from '../../errors.ts';
import type { HealPlan, HealTarget } from '../../infra/infra-driver.ts';
import type { HealCommand } from '../../model/lcm-command.ts';
import type { VnfInstanceRecord } from '../../model/vnf-instance.ts';
import type { ResourceDefinition } from '../../nfvo/grant-client.ts';
import { type OperationHandler, removeCompute, steadyPlan } from './handler.ts';

/** The VNFCs with these vnfcInfo ids; unknown ids -> 422 naming them. */
export function resolveVnfcs(instance: VnfInstanceRecord, vnfcInfoIds: readonly string[]): HealTarget[] {
  const info = instance.instantiatedVnfInfo;
  const res = info?.vnfcResourceInfo ?? [];
  const targets: HealTarget[] = [];
  const missing: string[] = [];
  for (const id of [...new Set(vnfcInfoIds)]) {
    const vnfcInfo = (info?.vnfcInfo ?? []).find((v) => v.id === id);
    const vnfcResourceInfo = vnfcInfo ? res.find((r) => r.id === vnfcInfo.vnfcResourceInfoId) : undefined;
    if (!vnfcInfo || !vnfcResourceInfo) missing.push(id);
    else targets.push({ vnfcInfo, vnfcResourceInfo });
  }
  if (missing.length) throw vnfmError('VNFM_ERR_INST_INVALID', `vnfcInstanceId(${missing.join(', ')}) does not exist.`, { extra: { unknownVnfcInstanceIds: missing } });
  return targets;
}

/** The driver's view of a heal, resolved against the instance as it is now. */
export function healPlanOf(command: HealCommand, instance: VnfInstanceRecord): HealPlan {
  const entire = command.scope === 'entire';
  const ids = command.scope === 'vnfcs' ? command.vnfcInfoIds : command.scope === 'allVnfcs' ? (instance.instantiatedVnfInfo?.vnfcInfo ?? []).map((v) => v.id) : [];
  return { targets: resolveVnfcs(instance, ids), entire, includeStorage: command.includeStorage, additionalParams: command.additionalParams, ...(command.cause !== undefined ? { cause: command.cause } : {}) };
}

export const heal: OperationHandler<'HEAL'> = {
  operation: 'HEAL',
  hook: 'heal',
  accept(instance, _vnfd, command) {
    if (instance.instantiationState !== 'INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${instance.id} isn't instantiated.`);
    if (command.scope === 'vnfcs') {
      if (command.vnfcInfoIds.length === 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'a heal of VNFCs names at least one VNFC');
      resolveVnfcs(instance, command.vnfcInfoIds);
    }
    return { ...command, vnfcInfoIds: [...new Set(command.vnfcInfoIds)] };
  },
  flavourId: (_command, instance) => instance.instantiatedVnfInfo?.flavourId,
  plan: (_command, instance, flavour) => steadyPlan(instance, flavour),
  grant({ command, instance }) {
    const add: ResourceDefinition[] = [];
    const remove: ResourceDefinition[] = [];
    const plan = healPlanOf(command, instance);
    const targets = plan.entire ? (instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => ({ vnfcResourceInfo: r })) : plan.targets;
    for (const t of targets) {
      const r = t.vnfcResourceInfo;
      remove.push(removeCompute(r));
      add.push({ id: `${r.id}-new`, type: 'COMPUTE', vduId: r.vduId, resourceTemplateId: r.vduId });
      if (!plan.includeStorage && !plan.entire) continue;
      for (const sid of r.storageResourceIds ?? []) {
        const st = instance.instantiatedVnfInfo?.virtualStorageResourceInfo?.find((s) => s.id === sid);
        if (!st) continue;
        remove.push({ id: st.id, type: 'STORAGE', vduId: r.vduId, resourceTemplateId: st.virtualStorageDescId, resource: { resourceId: st.storageResource.resourceId } });
        add.push({ id: `${st.id}-new`, type: 'STORAGE', vduId: r.vduId, resourceTemplateId: st.virtualStorageDescId });
      }
    }
    return { add, remove };
  },
  async infra(driver, ictx, { command, instance }, step) {
    const plan = healPlanOf(command, instance);
    await step.remember(plan.entire ? (instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => r.id) : plan.targets.map((t) => t.vnfcResourceInfo.id));
    await driver.heal(ictx, plan);
  },
  observes: true,
  instantiatedAfter: true,
};
