/**
 * Simulated Kubernetes cluster (API server + controllers + fault injection) for tests, demos and
 * benchmarks. Imports nothing from the VNFM.
 */
export { KUBERNETES_STATE_NAME, KUBERNETES_TLS_NAME, type KubernetesSim, type KubernetesSimOptions, type KubernetesSnapshot, startKubernetesSim } from './kubernetes-sim.ts';
