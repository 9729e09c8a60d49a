/** The names of the OpenStack VIM type (Keystone v3 + Heat). */

/** SOL vimType of an OpenStack VIM's connections. */
export const OPENSTACK_VIM_TYPE = 'ETSINFV.OPENSTACK_KEYSTONE.V_3';

/** Registry type (`/v1.0/vims` `type`) of an OpenStack VIM. */
export const OPENSTACK_VIM_KIND = 'openstack';

/** Other SOL vimTypes accepted for it in a vimConnectionInfo entry (Keystone v2, as Tacker accepts). */
export const OPENSTACK_VIM_TYPE_ALIASES = ['ETSINFV.OPENSTACK_KEYSTONE.V_2'] as const;
