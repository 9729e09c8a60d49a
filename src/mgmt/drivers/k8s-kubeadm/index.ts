/** Built-in `k8s-kubeadm` management driver (Tacker's `mgmt-drivers-kubernetes`). */
export { createKubeadmDriver, KUBEADM_ARTIFACT_NAME, KUBEADM_DRIVER_NAME, type KubeadmDriverDeps, KubeadmMgmtDriver, realClock } from './driver.ts';
export { driverConfig, KUBEADM_DEFAULTS, type KubeadmDriverConfig } from './config.ts';
export type { K8sClusterMeta, K8sNodeMeta } from './hooks.ts';
export type { Clock, ClusterConnection, KubeApi, KubeApiFactory } from '../k8s-common/kube.ts';
export { kubeClientFactory } from '../k8s-common/kube.ts';
export type { KubeadmInstanceState, SshConnect } from './run-context.ts';
