/** The OpenStack (Keystone + Heat) infra driver and its building blocks. */
export { createOpenStackDriver, OpenStackDriver, stackNameOf, type OpenStackDriverOptions } from './openstack-driver.ts';
export { observeFromListing, locateResources, HEAT_TYPES, type LocatedResource, type ObserveInput, type ServerFacts } from './heat-observer.ts';
export { buildNfvParameter, mergePatch, parseNfvParameter, declaredParameters, type NfvBuildInput } from './hot-params.ts';
export { HeatClient, type HeatResource, type HeatStack, type HeatStackRef } from './heat-client.ts';
export { KeystoneAuth, type KeystoneAuthOptions } from './keystone-auth.ts';
export { NovaClient, type NovaServer } from './nova-client.ts';
export { OpenStackError, OpenStackErrorKind } from './openstack-error.ts';
export { openstackVimPlugin } from './vim-plugin.ts';
export { OPENSTACK_VIM_KIND, OPENSTACK_VIM_TYPE, OPENSTACK_VIM_TYPE_ALIASES } from './vim-type.ts';
