/**
 * Knobs of the `k8s-kubeadm` driver (timeouts and remote paths). Defaults here; the VNFM
 * configuration may override any of them: `mgmt: { kubeadm: { drainTimeoutSeconds: 900, ... } }`.
 */
import type { VnfmConfig } from '../../../config.ts';

/** Every knob of the driver. */
export interface KubeadmDriverConfig {
  /** SSH connection attempts to an existing VM, with exponential back-off between them. */
  sshAttempts: number;
  sshBackoffInitialMs: number;
  sshBackoffMaxMs: number;
  /** Total time allowed to reach a VM created by the running operation (it may still be booting). */
  sshNewVmDeadlineMs: number;
  /** First back-off while waiting for a VM created by the operation (it is booting: poll soon). */
  sshNewVmBackoffInitialMs: number;
  /** Back-off cap while waiting for a VM created by the operation. */
  sshNewVmBackoffMaxMs: number;
  /** Timeout of an ordinary remote command. */
  commandTimeoutMs: number;
  /** Timeout of the install script (a master or worker install). */
  installTimeoutMs: number;
  /** Drain: how long evictions refused by a PodDisruptionBudget are retried. */
  drainTimeoutSeconds: number;
  /** Drain: delay between two eviction attempts of a blocked pod. */
  evictionRetryMs: number;
  /** A Node whose Ready condition is Unknown/False for longer than this is treated as dead. */
  deadNodeGraceSeconds: number;
  /** After a drain, how long to wait for the drained pods' owners to be ready again (then warn and go on). */
  ownerWaitTimeoutMs: number;
  /** After a join, how long to wait for the Node to be Ready. */
  nodeReadyTimeoutMs: number;
  /** After a control-plane join, how long to wait for the etcd member to be a healthy voting member. */
  etcdWaitTimeoutMs: number;
  /** Poll interval of every wait on a condition. */
  pollIntervalMs: number;
  /** Admin token: poll interval and bound. */
  tokenPollIntervalMs: number;
  tokenWaitTimeoutMs: number;
  /** etcd: a member whose raft index lags the leader's by more than this is unhealthy. */
  etcdMaxRaftLag: number;
  /** Remote paths and commands. */
  installScriptRemotePath: string;
  hostsPath: string;
  haproxyConfigPath: string;
  haproxyBackend: string;
  haproxyReloadCommand: string;
  /** Port of the API server on every master (HAProxy backend port). */
  apiServerPort: number;
  /** Port of the master-local HAProxy frontend of an HA cluster. */
  haApiPort: number;
}

/** The defaults (spec §2.5, healvnfm values). */
export const KUBEADM_DEFAULTS: Readonly<KubeadmDriverConfig> = Object.freeze({
  sshAttempts: 3,
  sshBackoffInitialMs: 5_000,
  sshBackoffMaxMs: 60_000,
  sshNewVmDeadlineMs: 600_000,
  sshNewVmBackoffInitialMs: 250,
  sshNewVmBackoffMaxMs: 1_000,
  commandTimeoutMs: 60_000,
  installTimeoutMs: 2_700_000,
  drainTimeoutSeconds: 600,
  evictionRetryMs: 5_000,
  deadNodeGraceSeconds: 60,
  ownerWaitTimeoutMs: 600_000,
  nodeReadyTimeoutMs: 600_000,
  etcdWaitTimeoutMs: 600_000,
  pollIntervalMs: 500,
  tokenPollIntervalMs: 2_000,
  tokenWaitTimeoutMs: 120_000,
  etcdMaxRaftLag: 1_000,
  installScriptRemotePath: '/tmp/install_k8s_cluster.sh',
  hostsPath: '/etc/hosts',
  haproxyConfigPath: '/etc/haproxy/haproxy.cfg',
  haproxyBackend: 'kubernetes-apiserver',
  haproxyReloadCommand: 'systemctl reload haproxy',
  apiServerPort: 6443,
  haApiPort: 16443,
});

/**
 * The driver's knobs: defaults, overridden by `config.mgmt.kubeadm`, then by `overrides`. An
 * unknown knob or a value of the wrong type is an error naming it (checked at start-up).
 */
export function driverConfig(config: VnfmConfig | undefined, overrides: Partial<KubeadmDriverConfig> = {}): KubeadmDriverConfig {
  const section = (config?.mgmt?.kubeadm ?? {}) as Partial<KubeadmDriverConfig>;
  const out: KubeadmDriverConfig = { ...KUBEADM_DEFAULTS };
  for (const [where, src] of [['mgmt.kubeadm', section], ['driver overrides', overrides]] as const) {
    for (const [k, v] of Object.entries(src)) {
      if (!(k in KUBEADM_DEFAULTS)) throw new Error(`${where}.${k}: unknown setting of the k8s-kubeadm driver (known: ${Object.keys(KUBEADM_DEFAULTS).join(', ')})`);
      const def = (KUBEADM_DEFAULTS as unknown as Record<string, unknown>)[k];
      if (typeof v !== typeof def || (typeof v === 'number' && !(Number.isFinite(v) && v >= 0))) throw new Error(`${where}.${k}: must be a ${typeof def === 'number' ? 'number >= 0' : typeof def}, got ${JSON.stringify(v)}`);
      (out as unknown as Record<string, unknown>)[k] = v;
    }
  }
  return out;
}
