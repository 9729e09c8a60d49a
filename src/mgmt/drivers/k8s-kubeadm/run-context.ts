/**
 * What one hook run of the `k8s-kubeadm` driver shares: the shared cluster run context (SSH
 * sessions with host keys pinned per VNFC resource id, the cluster API with the sealed admin
 * token, redaction, journaled steps) with the driver's parameters and knobs.
 */
import type { MgmtContext } from '../../mgmt-driver.ts';
import { ClusterRunContext, type ClusterInstanceState, type SshConnect } from '../k8s-common/run-context.ts';
import type { Clock, KubeApiFactory } from '../k8s-common/kube.ts';
import type { KubeadmDriverConfig } from './config.ts';
import type { ClusterNode } from '../k8s-common/inventory.ts';
import type { KubeadmParams, NodeAccess } from './params.ts';

export { ADMIN_CONF, redactWith, type SshConnect } from '../k8s-common/run-context.ts';

/** The driver's sealed instance-scoped state. */
export type KubeadmInstanceState = ClusterInstanceState;

/** Shared state of one hook run of the `k8s-kubeadm` driver. */
export class RunContext extends ClusterRunContext<KubeadmDriverConfig> {
  constructor(
    ctx: MgmtContext,
    cfg: KubeadmDriverConfig,
    readonly params: KubeadmParams,
    connectFn: SshConnect,
    kubeFactory: KubeApiFactory,
    clock: Clock,
  ) {
    super(ctx, cfg, 'k8s-kubeadm', connectFn, kubeFactory, clock, params.insecure, [params.masterNode, params.workerNode]);
  }

  protected access(node: ClusterNode): NodeAccess {
    return node.role === 'master' ? this.params.masterNode : this.params.workerNode;
  }
}
