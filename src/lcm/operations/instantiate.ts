/** INSTANTIATE: create the VNF's resources at the instantiation level asked for (or the default). */
import { vnfmError } from '../../errors.ts';
import { mergePatch } from '../../packages/package-service.ts';
import { scaleLevelsAtInstantiationLevel, vnfcCountAtLevel } from '../../packages/vnfd-scaling.ts';
import type { ResourceDefinition } from '../../nfvo/grant-client.ts';
import type { InstancePatch } from '../instance-state.ts';
import { addCompute, type OperationHandler } from './handler.ts';

export const instantiate: OperationHandler<'INSTANTIATE'> = {
  operation: 'INSTANTIATE',
  hook: 'instantiate',
  accept(instance, vnfd, command) {
    if (instance.instantiationState !== 'NOT_INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${instance.id} is already INSTANTIATED.`);
    const flavour = vnfd.flavours[command.flavourId];
    if (!flavour) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `flavourId ${command.flavourId} is not defined in VNFD ${vnfd.vnfdId}; known: ${Object.keys(vnfd.flavours).join(', ')}`);
    const level = command.instantiationLevelId;
    if (level !== undefined && !flavour.instantiationLevels[level]) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `instantiationLevelId ${level} is not defined in flavour ${flavour.flavourId}; known: ${Object.keys(flavour.instantiationLevels).join(', ') || 'none'}`);
    return command;
  },
  flavourId: (command) => command.flavourId,
  plan(command, _instance, flavour) {
    const lvl = command.instantiationLevelId;
    const instantiationLevelId = lvl ?? flavour.defaultInstantiationLevelId;
    return { ...(instantiationLevelId ? { instantiationLevelId } : {}), targetScaleLevels: scaleLevelsAtInstantiationLevel(flavour, lvl), targetVduCounts: vnfcCountAtLevel(flavour, lvl) };
  },
  grant({ flavour, plan }) {
    const add: ResourceDefinition[] = [];
    for (const [vdu, n] of Object.entries(plan.targetVduCounts)) addCompute(flavour, vdu, n, add);
    return { add, remove: [] };
  },
  infra: (driver, ictx, { command }) => driver.instantiate(ictx, command as unknown as Record<string, unknown>),
  observes: true,
  instantiatedAfter: true,
  completedInstanceUpdate(command, instance) {
    const set: InstancePatch = {};
    if (command.vnfConfigurableProperties) set.vnfConfigurableProperties = mergePatch(instance.vnfConfigurableProperties ?? {}, command.vnfConfigurableProperties);
    if (command.extensions) set.extensions = mergePatch(instance.extensions ?? {}, command.extensions);
    return set;
  },
  rollback: {
    refused: () => undefined,
    infra: (driver, ictx) => driver.rollbackInstantiate(ictx),
    planAfter: ({ plan }) => plan,
    observes: false,
    instantiatedAfter: false,
  },
};
