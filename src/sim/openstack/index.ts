/**
 * Simulated OpenStack (Keystone v3, Heat v1, Nova) for tests, demos and benchmarks of the VNFM's
 * OpenStack driver. Independent of the product code: it speaks only HTTP.
 */
export type { ComputeEvent, ServerLifecycleEvent, ServerPortView, ServerView } from './compute-service.ts';
export type { HeatJournalEntry, HeldStackOperation } from './heat/heat-engine.ts';
export { OPENSTACK_STATE_NAME, type OpenStackSim, type OpenStackSimCredentials, type OpenStackSnapshot, type StackOperationHold, startOpenStackSim } from './openstack-sim.ts';
export {
  DEFAULT_ADMIN_PASSWORD,
  DEFAULT_DOMAIN,
  DEFAULT_SIM_ADMIN_SECRET,
  type OpenStackSimOptions,
  type SimLogger,
  type SimNetworkConfig,
  type SimProjectConfig,
  type SimUserConfig,
} from './options.ts';
