/** The Kubernetes infra driver (CNFs on a VIM of type ETSINFV.KUBERNETES.V_1). */
export { createKubernetesDriver, KubernetesDriver, type KubernetesDriverOptions } from './kubernetes-driver.ts';
export { KubeClient, type KubeClientOptions, type KubeObject, type ObjectRef } from './kube-client.ts';
export { KubeApiError } from './kube-error.ts';
export { INSTANCE_LABEL, VDU_LABEL } from './manifests.ts';
export { kubernetesVimPlugin } from './vim-plugin.ts';
export { KUBERNETES_VIM_KIND, KUBERNETES_VIM_TYPE } from './vim-type.ts';
