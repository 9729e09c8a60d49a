/** SCALE: one aspect out or in by some steps, within the VNFD's maximum level. */
import { vnfmError } from '../../errors.ts';
import type { ScalePlan } from '../../infra/infra-driver.ts';
import type { ScaleCommand } from '../../model/lcm-command.ts';
import type { VnfcResourceInfo, VnfInstanceRecord } from '../../model/vnf-instance.ts';
import type { FlavourModel } from '../../packages/vnfd-model.ts';
import { validateScale, vnfcCountAtLevel } from '../../packages/vnfd-scaling.ts';
import type { ResourceDefinition } from '../../nfvo/grant-client.ts';
import { addCompute, currentLevels, type OpPlan, type OperationHandler, removeCompute } from './handler.ts';

/** The driver's view of a scale (`removeResourceIds`: the scale-in victims the grant names). */
export function scalePlanOf(command: ScaleCommand, plan: OpPlan, removeResourceIds?: string[]): ScalePlan {
  return { type: command.type, aspectId: command.aspectId, numberOfSteps: command.numberOfSteps, fromLevel: plan.fromLevel ?? 0, toLevel: plan.toLevel ?? 0, additionalParams: command.additionalParams, ...(removeResourceIds && removeResourceIds.length > 0 ? { removeResourceIds } : {}) };
}

/**
 * The VNFCs a scale in removes, per shrinking VDU the first ones of vnfcResourceInfo (the newest:
 * the instance lists them newest first, as Tacker). The grant request names them, the management
 * hooks act on them, and the infra driver removes exactly them.
 */
function scaleInVictims(instance: VnfInstanceRecord, flavour: FlavourModel, command: ScaleCommand, plan: OpPlan): VnfcResourceInfo[] {
  const existing = instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
  const cur = vnfcCountAtLevel(flavour, undefined, { ...plan.targetScaleLevels, [command.aspectId]: plan.fromLevel ?? 0 });
  const out: VnfcResourceInfo[] = [];
  for (const [vdu, n] of Object.entries(plan.targetVduCounts)) {
    const delta = n - (cur[vdu] ?? 0);
    if (delta < 0) out.push(...existing.filter((x) => x.vduId === vdu).slice(0, -delta));
  }
  return out;
}

export const scale: OperationHandler<'SCALE'> = {
  operation: 'SCALE',
  hook: 'scale',
  accept(instance, vnfd, command) {
    if (instance.instantiationState !== 'INSTANTIATED' || !instance.instantiatedVnfInfo) throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${instance.id} isn't instantiated.`);
    const flavour = vnfd.flavours[instance.instantiatedVnfInfo.flavourId];
    if (!flavour) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `flavourId ${instance.instantiatedVnfInfo.flavourId} is not defined in VNFD ${vnfd.vnfdId}; known: ${Object.keys(vnfd.flavours).join(', ')}`);
    const { aspectId } = command;
    if (!flavour.scalingAspects[aspectId]) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `aspectId ${aspectId} is not defined in flavour ${flavour.flavourId}; known: ${Object.keys(flavour.scalingAspects).join(', ') || 'none'}`);
    const cur = instance.instantiatedVnfInfo.scaleStatus?.find((s) => s.aspectId === aspectId)?.scaleLevel ?? 0;
    const r = validateScale(flavour, aspectId, cur, command.numberOfSteps, command.type);
    if (!r.ok) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', r.message);
    return command;
  },
  flavourId: (_command, instance) => instance.instantiatedVnfInfo?.flavourId,
  plan(command, instance, flavour) {
    const current = currentLevels(instance, flavour);
    const from = current[command.aspectId] ?? 0;
    const r = validateScale(flavour, command.aspectId, from, command.numberOfSteps, command.type);
    if (!r.ok) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', r.message);
    const targetScaleLevels = { ...current, [command.aspectId]: r.newLevel };
    return { targetScaleLevels, targetVduCounts: vnfcCountAtLevel(flavour, undefined, targetScaleLevels), fromLevel: from, toLevel: r.newLevel };
  },
  grant({ command, instance, flavour, plan }) {
    const add: ResourceDefinition[] = [];
    const cur = vnfcCountAtLevel(flavour, undefined, { ...plan.targetScaleLevels, [command.aspectId]: plan.fromLevel ?? 0 });
    for (const [vdu, n] of Object.entries(plan.targetVduCounts)) {
      const delta = n - (cur[vdu] ?? 0);
      if (delta > 0) addCompute(flavour, vdu, delta, add);
    }
    return { add, remove: scaleInVictims(instance, flavour, command, plan).map(removeCompute) };
  },
  infra: (driver, ictx, { command, plan, instance, flavour }) => driver.scale(ictx, scalePlanOf(command, plan, scaleInVictims(instance, flavour, command, plan).map((r) => r.computeResource.resourceId))),
  observes: true,
  instantiatedAfter: true,
  rollback: {
    refused: (command) => (command.type === 'SCALE_IN' ? 'Rollback of SCALE_IN is not supported; retry it or fail it.' : undefined),
    infra: (driver, ictx, { command, plan }) => driver.rollbackScaleOut({ ...ictx, targetScaleLevels: { ...plan.targetScaleLevels, [command.aspectId]: plan.fromLevel ?? 0 } }, scalePlanOf(command, plan)),
    planAfter: ({ command, plan }) => ({ ...plan, targetScaleLevels: { ...plan.targetScaleLevels, [command.aspectId]: plan.fromLevel ?? 0 } }),
    observes: true,
    instantiatedAfter: true,
  },
};
