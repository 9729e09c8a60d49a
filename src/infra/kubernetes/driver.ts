/**
 * The Kubernetes infra driver: instantiates, terminates, scales, heals and observes CNFs made of
 * Pods, ReplicaSets, Deployments, DaemonSets and StatefulSets (one workload per VDU), on a VIM of
 * type `ETSINFV.KUBERNETES.V_1`. This file only dispatches: each operation lives in its own file
 * (see index.ts); what a heal does is decided by the pure planner in heal-plan.ts.
 *
 * Behaviour, in the words an operator needs:
 *
 * - **Instantiate** deploys the manifests named by `additionalParams['lcm-kubernetes-def-files']`
 *   (default: every `Files/kubernetes/*.yaml` of the package) into `additionalParams.namespace`
 *   (default: the manifests' own namespace, else `default`). Files naming only some VDUs' workloads
 *   deploy only those VDUs (Tacker's subset instantiate, see {@link KubernetesDriver.deployedVdus});
 *   files naming none are refused. A namespace that does not exist (and that no manifest creates)
 *   is created first, labelled `vnfm.io/created-for=<instanceId>` (off with
 *   `vim.kubernetesCreateNamespace: false`: then the instantiate fails). Every object, and every pod, is labelled
 *   `vnfm.io/vnf-instance-id=<instanceId>`; VDU workloads get `spec.replicas` from the instance
 *   counts. It ends when every VDU has its pods Ready (watch-based). An object that already exists
 *   with our label (a resumed operation) is adopted; one without it fails the operation
 *   (`VNFM_ERR_VIM_FAILED`), never overwritten.
 * - **Terminate** deletes every object of the CNF (Background propagation) and then its pods with
 *   the grace period `gracefulTerminationTimeout` (GRACEFUL; the pods' own
 *   `terminationGracePeriodSeconds` when absent) or 0 (FORCEFUL), and waits until no pod is left.
 *   PersistentVolumeClaims of the CNF (StatefulSet claims and PVC manifests) are **deleted by
 *   default**, like any other resource of the VNF (no storage leaks, and a later instantiate with
 *   the same names never silently re-attaches old data); `additionalParams.deletePvcs: false`
 *   keeps them (and a Namespace the manifests created, which would take them along). Then the
 *   namespace the VNFM created for the instance (its `vnfm.io/created-for` label) is deleted, but
 *   only when nothing else lives in it (foreign workloads, services, config, kept claims: then it
 *   is kept and the log says why); a namespace that existed before is never deleted.
 * - **Scale** patches `spec.replicas` of the aspect's VDUs to the new counts and waits until
 *   exactly that many pods are Ready. Pods and DaemonSets cannot be scaled.
 * - **Heal of VNFCs** (targets given): only the target pods are touched. Pods of ReplicaSets,
 *   Deployments, DaemonSets and StatefulSets are deleted (exactly that incarnation: uid
 *   precondition) and their controller re-creates them; a singleton Pod is deleted, waited out,
 *   and re-created from the package manifest with the same name (on whatever node the scheduler
 *   picks, not pinned to the old one). The heal ends when the old pods are gone from the API and
 *   each affected VDU has its expected number of Ready pods. When the instance has no pod at all,
 *   the namespace and workloads are checked first, as for observe: a CNF that is gone fails with
 *   `VNFM_ERR_INFRA_STACK_MISSING`. Drift: when the pod a target names no
 *   longer exists (Kubernetes replaced it outside any operation), the target is its replacement,
 *   i.e. a pod of the same VDU that the VNFM does not know yet; a replacement that is already
 *   Ready is **accepted as healed and not deleted** (no needless restart of a healthy VNFC), one
 *   that is not Ready is healed like any target; with no replacement at all the heal waits for the
 *   controller (or re-creates the singleton Pod). Same for a StatefulSet/singleton pod whose uid
 *   differs from the one last observed. `additionalParams.gracePeriodSeconds` overrides the pods'
 *   own grace period. A pod on a node that is not Ready is deleted with grace 0 (a graceful
 *   deletion would wait forever for its unreachable kubelet), as terminate also does; this needs
 *   read access to Nodes, without which pods are deleted gracefully.
 * - **Heal of the whole CNF** (`entire`): every object is deleted and created again from the
 *   package (terminate + instantiate), except PersistentVolumeClaims (and Namespaces), so the new
 *   StatefulSet pods re-attach their data. `includeStorage` does not recreate storage on
 *   Kubernetes: data is never destroyed by a heal.
 * - **Observe** never reports "no resources" for a CNF it cannot see: when no pod of the instance
 *   is found outside a TERMINATE (or an INSTANTIATE that created nothing yet), it checks the
 *   namespace and the VDU workloads, and a deleted namespace or workloads all gone fail with
 *   `VNFM_ERR_INFRA_STACK_MISSING` (terminal; the instance information is kept).
 * - **Observe** lists the instance's pods by label and maps them to VDUs (`stableKey`
 *   `Pod/<name>` for a singleton Pod, `StatefulSet/<sts>/<ordinal>` for StatefulSet pods), and
 *   reports StatefulSet PVCs as storage. Pods being deleted are left out, and so are Failed or
 *   Succeeded pods of controllers (their controller has replaced them already); a Failed
 *   singleton Pod is reported, as an unhealthy VNFC.
 *
 * Every method is resumable: progress is kept in `ctx.state.kubernetes` and checkpointed after
 * each visible action; API failures are retried with back-off in the client, then surface as
 * `VNFM_ERR_VIM_UNREACHABLE`, retryable (no answer, 5xx, 429 with its Retry-After: the engine runs
 * the step again after a back-off, continuing where it stopped) or `VNFM_ERR_VIM_FAILED`, terminal
 * (4xx: invalid object, refused credentials or RBAC, quota, conflict: FAILED_TEMP at once).
 * Waits time out after `config.vim.kubernetesWaitMs` with `VNFM_ERR_LCM_TIMEOUT` (terminal),
 * naming the VDU and how many pods were Ready of how many. Every call and wait stops when the op's
 * `ctx.signal` aborts (lease lost, shutdown).
 */
import type { DeploymentArgs, HealPlan, InfraContext, InfraDriver, ObserveContext, ObservedResources, ScalePlan } from '../infra-driver.ts';
import { heal } from './heal.ts';
import { deployedVdus, instantiate } from './instantiate.ts';
import { observe } from './observe.ts';
import { rollbackScaleOut, scale } from './scale.ts';
import { KubeClients, type KubernetesDriverOptions } from './session.ts';
import { rollbackInstantiate, terminate } from './terminate.ts';

/** The Kubernetes infra driver (see the module comment for its behaviour). */
export class KubernetesDriver implements InfraDriver {
  readonly vimTypes = ['ETSINFV.KUBERNETES.V_1'] as const;
  /** The API clients, cached per VIM connection. */
  private readonly clients: KubeClients;

  constructor(options: KubernetesDriverOptions = {}) {
    this.clients = new KubeClients(options);
  }

  instantiate(ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
    return instantiate(this.clients, ctx, req);
  }

  terminate(ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
    return terminate(this.clients, ctx, req);
  }

  scale(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    return scale(this.clients, ctx, plan);
  }

  rollbackScaleOut(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    return rollbackScaleOut(this.clients, ctx, plan);
  }

  heal(ctx: InfraContext, plan: HealPlan): Promise<void> {
    return heal(this.clients, ctx, plan);
  }

  rollbackInstantiate(ctx: InfraContext): Promise<void> {
    return rollbackInstantiate(this.clients, ctx);
  }

  /**
   * The VDUs the CNF consists of: for an INSTANTIATE, those whose workload is in the request's
   * `lcm-kubernetes-def-files` (Tacker's subset instantiate); later, those of the instance's record.
   */
  deployedVdus(args: DeploymentArgs): Promise<string[] | undefined> {
    return deployedVdus(args);
  }

  observe(ctx: ObserveContext): Promise<ObservedResources> {
    return observe(this.clients, ctx);
  }
}

/** Creates the Kubernetes infra driver (register it in the InfraDriverRegistry). */
export function createKubernetesDriver(options: KubernetesDriverOptions = {}): InfraDriver {
  return new KubernetesDriver(options);
}
