/**
 * The OpenStack (Keystone + Heat) infra driver and its building blocks.
 *
 * Files (every infra driver folder has the same set, plus its own clients and helpers):
 * - `index.ts`        these exports
 * - `driver.ts`       the InfraDriver: dispatches each operation, maps errors (orchestration only)
 * - `session.ts`      options, clients per VIM connection, caches, stack find/wait/settle/mark
 * - `instantiate.ts`  stack fields from the package, stack created or adopted
 * - `terminate.ts`    stack deleted (terminate, instantiate rollback)
 * - `scale.ts`        desired capacities, scale-in members chosen and marked
 * - `heal.ts`         VNFC heal (marks + one update) and entire heal (stack re-created)
 * - `heal-plan.ts`    the pure heal planner: which resources to mark, in what order
 * - `observe.ts`      the observation (Heat listing, Nova facts, partial re-listing)
 * - `health-watch.ts` the health watcher (Nova changes-since and DOWN ports per VIM project)
 * Clients and helpers: keystone-auth.ts, heat-client.ts, nova-client.ts, http-retry.ts,
 * openstack-error.ts, stack-watch.ts, heat-observer.ts, hot-params.ts.
 */
export { createOpenStackDriver, OpenStackDriver } from './driver.ts';
export { stackNameOf, type OpenStackDriverOptions } from './session.ts';
export { observeFromListing, locateResources, HEAT_TYPES, type LocatedResource, type ObserveInput, type ServerFacts } from './heat-observer.ts';
export { buildNfvParameter, mergePatch, parseNfvParameter, declaredParameters, type NfvBuildInput } from './hot-params.ts';
export { HeatClient, type HeatResource, type HeatStack, type HeatStackRef } from './heat-client.ts';
export { KeystoneAuth, type KeystoneAuthOptions } from './keystone-auth.ts';
export { NovaClient, type NovaServer } from './nova-client.ts';
export { OpenStackError, OpenStackErrorKind } from './openstack-error.ts';
export { createOpenStackHealthWatcher, type OpenStackHealthWatcher, type OpenStackHealthWatchOptions } from './health-watch.ts';
export { openstackVimPlugin } from './vim-plugin.ts';
export { OPENSTACK_VIM_KIND, OPENSTACK_VIM_TYPE, OPENSTACK_VIM_TYPE_ALIASES } from './vim-type.ts';
