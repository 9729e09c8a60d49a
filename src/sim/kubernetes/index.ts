/**
 * Simulated Kubernetes cluster (API server + controllers + fault injection) for tests, demos and
 * benchmarks. Imports nothing from the VNFM.
 */
export { type KubernetesSim, type KubernetesSimOptions, startKubernetesSim } from './kubernetes-sim.ts';
