/**
 * Knobs of the `k8s-kubespray` driver (spec §2.5, healvnfm values). Defaults here; the VNFM
 * configuration may override any of them: `mgmt: { kubespray: { factsTimeoutMs: 900000 } }`.
 */
import type { VnfmConfig } from '../../../config.ts';
import { mergeKnobs } from '../k8s-common/binding.ts';
import type { RunKnobs } from '../k8s-common/run-context.ts';

/** Every knob of the driver. */
export interface KubesprayDriverConfig extends RunKnobs {
  /** `cluster.yml`: this long per node. */
  clusterTimeoutPerNodeMs: number;
  /** `facts.yml`. */
  factsTimeoutMs: number;
  /** `scale.yml`: this long per added node. */
  scaleTimeoutPerNodeMs: number;
  /** `remove-node.yml` (one node). */
  removeNodeTimeoutMs: number;
  /** SSH to the Ansible server (an operator's server that must answer): attempts, and the limit of each. */
  ansibleConnectAttempts: number;
  ansibleConnectTimeoutMs: number;
  /** How often a running play's exit code is polled. */
  playPollMs: number;
  /** Poll interval of the other waits (Node Ready, Node gone). */
  pollIntervalMs: number;
  /** After a play that adds nodes, how long to wait for the Nodes to be Ready. */
  nodeReadyTimeoutMs: number;
  /** Drain before remove-node (PDB-aware, through the API). */
  drainTimeoutSeconds: number;
  evictionRetryMs: number;
  /** API server port on the masters, and the LB's API frontend port. */
  apiServerPort: number;
  lbApiPort: number;
  /** HAProxy on the LB VM. */
  lbConfigPath: string;
  lbReloadCommand: string;
  lbStartCommand: string;
  lbIsActiveCommand: string;
}

export const KUBESPRAY_DEFAULTS: Readonly<KubesprayDriverConfig> = Object.freeze({
  sshAttempts: 3,
  sshBackoffInitialMs: 5_000,
  sshBackoffMaxMs: 60_000,
  sshNewVmDeadlineMs: 600_000,
  sshNewVmBackoffInitialMs: 500,
  sshNewVmBackoffMaxMs: 15_000,
  commandTimeoutMs: 60_000,
  tokenPollIntervalMs: 2_000,
  tokenWaitTimeoutMs: 120_000,
  clusterTimeoutPerNodeMs: 2_700_000,
  factsTimeoutMs: 600_000,
  scaleTimeoutPerNodeMs: 2_700_000,
  removeNodeTimeoutMs: 2_700_000,
  ansibleConnectAttempts: 2,
  ansibleConnectTimeoutMs: 10_000,
  playPollMs: 2_000,
  pollIntervalMs: 1_000,
  nodeReadyTimeoutMs: 600_000,
  drainTimeoutSeconds: 600,
  evictionRetryMs: 5_000,
  apiServerPort: 6443,
  lbApiPort: 8383,
  lbConfigPath: '/etc/haproxy/haproxy.cfg',
  lbReloadCommand: 'systemctl reload haproxy',
  lbStartCommand: 'systemctl start haproxy',
  lbIsActiveCommand: 'systemctl is-active haproxy',
});

/** Defaults, overridden by `config.mgmt.kubespray`, then by `overrides`; an unknown knob or a wrong type is an error naming it. */
export function kubesprayConfig(config: VnfmConfig | undefined, overrides: Partial<KubesprayDriverConfig> = {}): KubesprayDriverConfig {
  const section = ((config?.mgmt as { kubespray?: unknown } | undefined)?.kubespray ?? {}) as Partial<KubesprayDriverConfig>;
  return mergeKnobs(KUBESPRAY_DEFAULTS, 'k8s-kubespray', 'mgmt.kubespray', section, overrides);
}
