/** Built-in `k8s-kubespray` management driver (Tacker's `mgmt-drivers-kubespray`). */
export { createKubesprayDriver, type InventoryOwner, KUBESPRAY_ARTIFACT_NAME, KUBESPRAY_DRIVER_NAME, type KubesprayDriverDeps, KubesprayMgmtDriver } from './driver.ts';
export { KUBESPRAY_DEFAULTS, type KubesprayDriverConfig, kubesprayConfig } from './config.ts';
export type { SprayClusterMeta, SprayInstanceState } from './hooks.ts';
export { failedTasks, judgePlay, parseRecap, type PlayVerdict, type RecapHost } from './ansible.ts';
