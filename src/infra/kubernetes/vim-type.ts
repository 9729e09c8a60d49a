/** The names of the Kubernetes VIM type. */

/** SOL vimType of a Kubernetes VIM's connections (what a cluster driver registers its cluster as). */
export const KUBERNETES_VIM_TYPE = 'ETSINFV.KUBERNETES.V_1';

/** Registry type (`/v1.0/vims` `type`) of a Kubernetes VIM. */
export const KUBERNETES_VIM_KIND = 'kubernetes';
