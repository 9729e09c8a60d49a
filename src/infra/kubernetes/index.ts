/**
 * The Kubernetes infra driver (CNFs on a VIM of type ETSINFV.KUBERNETES.V_1).
 *
 * Files (every infra driver folder has the same set, plus its own clients and helpers):
 * - `index.ts`        these exports
 * - `driver.ts`       the InfraDriver: dispatches each operation (orchestration only)
 * - `session.ts`      options, API clients per VIM connection, driver state, CNF record and plan
 * - `instantiate.ts`  namespace, objects created or adopted, pods Ready; deployed VDUs
 * - `terminate.ts`    objects, pods and claims deleted, namespace released (terminate, rollback)
 * - `scale.ts`        replicas patched, pods Ready
 * - `heal.ts`         VNFC heal (pods deleted / re-created) and whole-CNF heal
 * - `heal-plan.ts`    the pure heal planner: which pod each target is, what to do with it
 * - `observe.ts`      the observation (pods, claims, services)
 * Clients and helpers: kube-client.ts, kube-error.ts, manifests.ts, pods.ts, readiness.ts.
 * - `health-watch.ts` the health watcher of the plugin (pods and nodes watched per cluster connection),
 *   `health-status.ts` its mapping of a pod or node status to a VNFC health
 */
export { createKubernetesDriver, KubernetesDriver } from './driver.ts';
export { type KubernetesDriverOptions } from './session.ts';
export { KubeClient, type KubeClientOptions, type KubeObject, type ObjectRef } from './kube-client.ts';
export { KubeApiError } from './kube-error.ts';
export { INSTANCE_LABEL, VDU_LABEL } from './manifests.ts';
export { kubernetesVimPlugin } from './vim-plugin.ts';
export { KUBERNETES_VIM_KIND, KUBERNETES_VIM_TYPE } from './vim-type.ts';
