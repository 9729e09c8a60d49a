/**
 * Wiring of the live-VM lab (docs/lab.md) into the composition root. `src/lab/` is loaded only
 * from here, with a dynamic `import()`, and only when `lab.enabled` (`vnfm start --lab`), so a VNFM
 * without the lab loads none of it (scripts/check-deps.mjs enforces this). The simulated cloud's
 * start-up (sim-cloud.ts) starts the lab after the simulated OpenStack, whose servers it turns into
 * hosts.
 */
import type { VnfmConfig } from '../config.ts';
import type { Logger } from '../logger.ts';

/** The lab could not start (machine not fit for it, another lab running, ...); the message says why. */
export class LabStartError extends Error {}

/** What a running lab shows (banner, tests). */
export interface LabInfo {
  bridgeIp: string;
  cidr: string;
  network: string;
  user: string;
  kubernetesUrl: string;
  labDir: string;
  /** The operator's service hosts (IPs of the external load balancer and the Ansible server), when `lab.serviceHosts`. */
  serviceHosts?: { lb: string; ansible: string };
  /** `<dataDir>/lab/credentials.json` (the generated password), when the data directory is on disk. */
  credentialsFile?: string;
}

/**
 * Checks, before anything starts, that this machine can run the lab (root, `ip netns`, sshd, sudo);
 * throws {@link LabStartError} naming what is missing.
 */
export async function checkLabPrerequisites(): Promise<void> {
  const { labPrerequisites } = await import('../lab/index.ts');
  const missing = await labPrerequisites();
  if (missing.length > 0) throw new LabStartError(`--lab: the live-VM lab needs ${missing.join('; ')}`);
}

/**
 * Starts the lab over a running simulated OpenStack. Returns what it shows and how to stop it
 * (tears everything down). Any failure is a {@link LabStartError}.
 */
export async function startLabFor(config: VnfmConfig, openstack: unknown, log: Logger): Promise<{ info: LabInfo; close(): Promise<void> }> {
  const { startLab, LabBusyError, LabUnavailableError } = await import('../lab/index.ts');
  const l = config.lab;
  try {
    const lab = await startLab({
      openstack: openstack as Parameters<typeof startLab>[0]['openstack'],
      dataDir: config.dataDir,
      cidr: l.cidr,
      network: l.network,
      floatingNetwork: l.floatingNetwork,
      floatingCidr: l.floatingCidr,
      user: l.user,
      ...(l.password !== undefined ? { password: l.password } : {}),
      kubernetesPort: l.kubernetesPort,
      podEvictionTimeoutMs: l.podEvictionTimeoutMs,
      waitForLockMs: l.waitForLockMs,
      serviceHosts: l.serviceHosts,
      logger: log,
    });
    return {
      info: {
        bridgeIp: lab.bridgeIp,
        cidr: lab.cidr,
        network: lab.network.name,
        user: lab.credentials.user,
        kubernetesUrl: lab.kubernetes.url,
        labDir: lab.labDir,
        ...(lab.serviceHosts ? { serviceHosts: lab.serviceHosts } : {}),
        ...(lab.credentialsFile ? { credentialsFile: lab.credentialsFile } : {}),
      },
      close: () => lab.close(),
    };
  } catch (e) {
    if (e instanceof LabUnavailableError || e instanceof LabBusyError) throw new LabStartError(e.message);
    throw new LabStartError(`the live-VM lab did not start: ${(e as Error).message}`);
  }
}
