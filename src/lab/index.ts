/**
 * The live-VM lab: the simulated OpenStack's servers become real hosts (network namespaces with
 * sshd, see hosts.ts) that management drivers reach over SSH, bound to the cloud by the
 * provisioner (provisioner.ts), with a Kubernetes simulator of their own on the bridge address that
 * the hosts' stand-ins register Nodes into. Loaded only by the composition root, with a dynamic
 * `import()`, when `lab.enabled` (`vnfm start --lab`). See docs/lab.md.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type KubernetesSim, KUBERNETES_STATE_NAME, startKubernetesSim } from '../sim/kubernetes/index.ts';
import type { OpenStackSim } from '../sim/openstack/index.ts';
import { ensureUser, installSudoers, loadSecrets, removeSudoers, SUDOERS_FILE } from './access.ts';
import { intToIp, ipToInt, LAB_BRIDGE, parseLabCidr } from './addresses.ts';
import { FloatingNat } from './floating.ts';
import { Fleet, type LabLogger } from './hosts.ts';
import { NodePortProxy } from './nodeports.ts';
import { Provisioner } from './provisioner.ts';
import { run } from './sh.ts';

export { compareIps, LAB_BRIDGE, LAB_PREFIX, namespaceOf, parseLabCidr, vethOf } from './addresses.ts';
export { Fleet, type FleetOptions, type HostInfo, type LabLogger, labAddress } from './hosts.ts';
export { acquireLabLock, LabBusyError } from './lock.ts';
export { type NodePortListener, NodePortProxy, type NodePortProxyOptions } from './nodeports.ts';
export { type LabCloud, type LabNodes, Provisioner, type ProvisionerOptions } from './provisioner.ts';
export { SUDOERS_FILE } from './access.ts';

/** The lab cannot run here; the message names what is missing. */
export class LabUnavailableError extends Error {}

/** The commands the lab runs, with the Debian package of each. */
const TOOLS: readonly [string, string][] = [
  ['ip', 'iproute2'],
  ['sshd', 'openssh-server'],
  ['ssh-keygen', 'openssh-client'],
  ['unshare', 'util-linux'],
  ['useradd', 'passwd'],
  ['chpasswd', 'passwd'],
  ['getent', 'libc-bin'],
  ['sudo', 'sudo'],
  ['visudo', 'sudo'],
];

function findTool(name: string): string | undefined {
  for (const d of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    const p = join(d, name);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      // not there
    }
  }
  return undefined;
}

/**
 * What the lab needs and this machine lacks: root, the commands above, `/usr/sbin/sshd` (started by
 * absolute path), a working `ip netns`. Empty when the lab can run.
 */
export async function labPrerequisites(): Promise<string[]> {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root (network namespaces, a local user and sudoers need it: run `sudo npm start -- --lab`)');
  const tools = TOOLS.filter(([t]) => !findTool(t));
  if (tools.length > 0) missing.push(`the commands ${tools.map(([t, p]) => `${t} (Debian package ${p})`).join(', ')}`);
  else if (!existsSync('/usr/sbin/sshd')) missing.push('/usr/sbin/sshd (Debian package openssh-server)');
  if (missing.length === 0) {
    const r = await run('ip', ['netns', 'list'], { allowFail: true });
    if (r.code !== 0) missing.push(`a working \`ip netns\` (${r.stderr.trim() || `exit ${r.code}`})`);
  }
  return missing;
}

/** The stand-ins' directory: `src/lab/bin` of the repository (also when running from `dist/`). */
export function defaultBinDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'bin'), resolve(here, '..', '..', 'src', 'lab', 'bin')];
  return candidates.find((d) => existsSync(d)) ?? (candidates[0] as string);
}

/** Options of {@link startLab}. */
export interface LabOptions {
  /** The running simulated OpenStack (in this process). */
  openstack: Pick<OpenStackSim, 'onServerLifecycle' | 'serverViews' | 'ensureNetwork' | 'ensureServer'>;
  /** The VNFM's data directory: the lab keeps its files in `<dataDir>/lab`; `memory://...` = a temporary directory. */
  dataDir: string;
  /** @default '10.87.0.0/24' */
  cidr?: string;
  /** Name of the lab network in the simulated Neutron. @default 'lab-net' */
  network?: string;
  /** The external network floating IPs are allocated from (made when absent). @default 'public' */
  floatingNetwork?: string;
  /** Its subnet (outside the lab subnet). @default '172.24.4.0/24' */
  floatingCidr?: string;
  /** Login user of the hosts. @default 'hvlab' */
  user?: string;
  /** Its password. @default generated once, kept in `<dataDir>/lab/credentials.json` (0600) */
  password?: string;
  /** Port of the lab Kubernetes on the bridge address (0 = a free port). @default 26443 */
  kubernetesPort?: number;
  /** When the pods of a failed Node are evicted. @default 300000 */
  podEvictionTimeoutMs?: number;
  /** How long to wait for another lab on this machine to stop. @default 0 */
  waitForLockMs?: number;
  /**
   * Boot the operator's service hosts (an external load balancer `hvlab-lb` and an Ansible server
   * `hvlab-ansible`) as stand-alone servers of the simulated Nova on the lab network, at the top of
   * the allocation pool (see {@link serviceHostAddresses}). @default false (`vnfm start --lab`: true)
   */
  serviceHosts?: boolean;
  /** `HVLAB_BIN`. @default {@link defaultBinDir} */
  binDir?: string;
  logger?: LabLogger;
}

/** A running lab. */
export interface Lab {
  /** The lab subnet (`10.87.0.0/24`). */
  readonly cidr: string;
  /** The bridge's address (`10.87.0.1`): the hosts' gateway, where the lab Kubernetes listens. */
  readonly bridgeIp: string;
  /** The lab network of the simulated Neutron. */
  readonly network: { name: string; id: string; subnetId: string; subnetName: string };
  /** How to log in to every host. Not logged anywhere. */
  readonly credentials: { user: string; password: string };
  /** Where the lab keeps its files. */
  readonly labDir: string;
  /** `<labDir>/credentials.json` (generated password, Kubernetes token), when the data directory is on disk. */
  readonly credentialsFile: string | undefined;
  /**
   * The operator's service hosts (their IPs), when started with `serviceHosts`: the external load
   * balancer VM and the Ansible server VM. Servers of the cloud outside any stack, so VNF
   * operations never touch them; undefined without `serviceHosts`.
   */
  readonly serviceHosts: { lb: string; ansible: string } | undefined;
  /** The lab's own Kubernetes (zero nodes at first; the hosts' stand-ins register theirs). */
  readonly kubernetes: { url: string; token: string; caCert: string; caFile: string; sim: KubernetesSim };
  readonly fleet: Fleet;
  readonly provisioner: Provisioner;
  /**
   * The stand-in kube-proxy: every node port of every NodePort Service answers on the hosts whose
   * Node is Ready (see nodeports.ts); undefined when the machine has no socat.
   */
  readonly nodePorts: NodePortProxy | undefined;
  /** Resolves when the hosts are in line with the cloud (no reconcile running or pending). */
  settled(): Promise<void>;
  /** "The VM died" behind the cloud's back: processes killed, Node failed, VIPs moved (see {@link Provisioner.killHost}). */
  killHost(ip: string): Promise<void>;
  /** Starts a killed host again (reboot: same key and disk), Node Ready again. */
  startHost(ip: string): Promise<void>;
  /** Tears everything down (hosts, bridge, sudoers, the lab Kubernetes' state). */
  close(): Promise<void>;
}

const silent: LabLogger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** Names of the service hosts' servers in the simulated Nova. */
export const SERVICE_HOST_NAMES = { lb: 'hvlab-lb', ansible: 'hvlab-ansible' } as const;

/**
 * The fixed addresses of the service hosts in a lab subnet: the load balancer at the top of the
 * allocation pool (`.250` of a /24), the Ansible server just below it (`.249`). Stacks get their
 * addresses from the bottom of the pool, so they do not meet.
 */
export function serviceHostAddresses(cidr: string): { lb: string; ansible: string } {
  const subnet = parseLabCidr(cidr);
  const top = ipToInt(subnet.pool.end);
  return { lb: intToIp(top), ansible: intToIp(top - 1) };
}

/**
 * Starts the lab after the simulated cloud: checks the machine, takes the machine's lab lock,
 * prepares the login user and sudo, opens the fleet (cleaning up or adopting what a previous lab
 * left), starts the lab Kubernetes on the bridge address, creates the lab network in the cloud and
 * brings the hosts in line with the cloud's servers. Throws {@link LabUnavailableError} when the
 * machine cannot run it.
 */
export async function startLab(o: LabOptions): Promise<Lab> {
  const log = o.logger ?? silent;
  const missing = await labPrerequisites();
  if (missing.length > 0) throw new LabUnavailableError(`the live-VM lab needs ${missing.join('; ')}`);
  const subnet = parseLabCidr(o.cidr ?? '10.87.0.0/24');
  const user = o.user ?? 'hvlab';
  const binDir = o.binDir ?? defaultBinDir();
  const networkName = o.network ?? 'lab-net';
  const temporary = o.dataDir.startsWith('memory://');
  const labDir = temporary ? mkdtempSync(join(tmpdir(), 'hvlab-')) : resolve(o.dataDir, 'lab');
  mkdirSync(labDir, { recursive: true, mode: 0o700 });
  const credentialsFile = temporary ? undefined : join(labDir, 'credentials.json');
  const undo: (() => Promise<void> | void)[] = [];
  const unwind = async (): Promise<void> => {
    for (const u of undo.splice(0).reverse()) {
      try {
        await u();
      } catch (e) {
        log.warn({ err: (e as Error).message }, 'lab: cleaning up failed');
      }
    }
  };
  if (temporary) undo.push(() => rmSync(labDir, { recursive: true, force: true }));
  try {
    const secrets = loadSecrets(credentialsFile, o.password);
    const fleet = await Fleet.open({ cidr: subnet.cidr, labDir, binDir, user, logger: log, waitForLockMs: o.waitForLockMs ?? 0 });
    undo.push(() => fleet.close());
    // the lock is ours from here on: the machine-wide user and sudoers are safe to touch
    const created = await ensureUser(user, secrets.password, binDir);
    if (created) log.info({ user }, 'lab: login user created');
    await installSudoers(user, binDir);
    undo.push(() => removeSudoers());

    const k8sState = temporary ? undefined : join(labDir, 'kubernetes');
    const k8s = await startKubernetesSim({
      host: subnet.gatewayIp,
      port: o.kubernetesPort ?? 26443,
      token: secrets.kubernetesToken,
      nodes: 0,
      ...(k8sState ? { stateDir: k8sState } : {}),
    });
    undo.push(async () => {
      await k8s.close();
      // the hosts' Nodes go with the hosts; the serving certificate stays (kubernetes-tls.json)
      if (k8sState) rmSync(join(k8sState, `${KUBERNETES_STATE_NAME}.json`), { force: true });
    });
    const caFile = join(labDir, 'kubernetes-ca.pem');
    writeFileSync(caFile, k8s.caCert, { mode: 0o644 });
    fleet.setEnv({ HVLAB_K8S_URL: k8s.url, HVLAB_K8S_TOKEN: k8s.token, HVLAB_K8S_CA: caFile });

    let net: ReturnType<LabOptions['openstack']['ensureNetwork']>;
    try {
      net = o.openstack.ensureNetwork({ name: networkName, cidr: subnet.cidr, gatewayIp: subnet.gatewayIp, allocationPools: [subnet.pool] });
    } catch (e) {
      throw new Error(`the lab network: ${(e as Error).message} (start the simulated cloud empty with --reset-sim, or name another lab.network)`);
    }
    let serviceHosts: { lb: string; ansible: string } | undefined;
    if (o.serviceHosts === true) {
      serviceHosts = serviceHostAddresses(subnet.cidr);
      for (const role of ['lb', 'ansible'] as const) {
        const name = SERVICE_HOST_NAMES[role];
        try {
          const r = o.openstack.ensureServer({ name, networkId: net.networkId, fixedIp: serviceHosts[role], metadata: { 'hvlab.service': role } });
          log.info({ name, ip: serviceHosts[role], server: r.serverId, created: r.created }, 'lab: service host server');
        } catch (e) {
          throw new Error(`the lab's service host ${name} (${serviceHosts[role]}): ${(e as Error).message}`);
        }
      }
    }
    // the external network floating IPs come from, as an operator has one (DevStack's `public`)
    const floatingNetwork = o.floatingNetwork ?? 'public';
    const floatingCidr = o.floatingCidr ?? '172.24.4.0/24';
    try {
      o.openstack.ensureNetwork({ name: floatingNetwork, cidr: floatingCidr });
    } catch (e) {
      log.warn({ network: floatingNetwork, err: (e as Error).message }, 'lab: the floating IP network could not be made as configured; floating IPs come from the network as it is');
    }
    let floating: FloatingNat | undefined;
    if (FloatingNat.available()) {
      floating = new FloatingNat({ bridge: LAB_BRIDGE, bridgeIp: subnet.gatewayIp, cidr: subnet.cidr, logger: log });
      await floating.start();
      undo.push(() => floating?.stop());
    } else log.warn({}, 'lab: no /usr/sbin/nft (Debian package nftables): floating IPs do not reach their hosts');
    const provisioner = new Provisioner({ cloud: o.openstack, fleet, networkId: net.networkId, nodes: k8s, podEvictionTimeoutMs: o.podEvictionTimeoutMs ?? 300_000, logger: log, ...(floating ? { floating } : {}) });
    undo.push(() => provisioner.stop());
    await provisioner.start();
    let nodePorts: NodePortProxy | undefined;
    if (NodePortProxy.available()) {
      nodePorts = new NodePortProxy({ fleet, kube: { httpUrl: k8s.httpUrl, token: k8s.token }, logger: log });
      undo.push(() => nodePorts?.stop());
      await nodePorts.start();
    } else log.warn({}, 'lab: no /usr/bin/socat (Debian package socat): node ports of Services do not answer on the hosts');
    log.info(
      { bridge: subnet.gatewayIp, cidr: subnet.cidr, network: networkName, user, serviceHosts: serviceHosts ?? null, hosts: fleet.list().map((h) => h.ip), kubernetes: k8s.url, labDir, credentialsFile: credentialsFile ?? null, sudoers: SUDOERS_FILE },
      'lab started',
    );
    let closing: Promise<void> | undefined;
    return {
      cidr: subnet.cidr,
      bridgeIp: subnet.gatewayIp,
      network: { name: networkName, id: net.networkId, subnetId: net.subnetId, subnetName: net.subnetName },
      credentials: { user, password: secrets.password },
      labDir,
      credentialsFile,
      serviceHosts,
      kubernetes: { url: k8s.url, token: k8s.token, caCert: k8s.caCert, caFile, sim: k8s },
      fleet,
      provisioner,
      nodePorts,
      settled: () => provisioner.settled(),
      killHost: (ip) => provisioner.killHost(ip),
      startHost: (ip) => provisioner.startHost(ip),
      close: () => {
        closing ??= (async () => {
          const hosts = fleet.list().length;
          await unwind();
          log.info({ hosts }, 'lab stopped: hosts, bridge and sudoers removed');
        })();
        return closing;
      },
    };
  } catch (e) {
    await unwind();
    throw e;
  }
}
