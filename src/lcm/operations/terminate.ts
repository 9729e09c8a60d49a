/** TERMINATE: delete every resource of the VNF; the instance becomes NOT_INSTANTIATED. */
import { vnfmError } from '../../errors.ts';
import { type OperationHandler, removeCompute, steadyPlan } from './handler.ts';

export const terminate: OperationHandler<'TERMINATE'> = {
  operation: 'TERMINATE',
  hook: 'terminate',
  accept(instance, _vnfd, command) {
    if (instance.instantiationState !== 'INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${instance.id} isn't instantiated.`);
    return command;
  },
  flavourId: (_command, instance) => instance.instantiatedVnfInfo?.flavourId,
  plan(_command, instance, flavour) {
    const p = steadyPlan(instance, flavour);
    return { ...p, targetVduCounts: Object.fromEntries(Object.keys(p.targetVduCounts).map((k) => [k, 0])) };
  },
  grant: ({ instance }) => ({ add: [], remove: (instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map(removeCompute) }),
  infra: (driver, ictx, { command }) => driver.terminate(ictx, command as unknown as Record<string, unknown>),
  observes: false,
  instantiatedAfter: false,
};
