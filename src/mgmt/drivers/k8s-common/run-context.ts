/**
 * What one hook run of a Kubernetes cluster driver shares: the SSH sessions (one per node for the
 * hook, host keys trusted on first use per VNFC resource id and pinned in the sealed instance
 * state), the cluster API client (admin token sealed in the same state), the secrets to redact from
 * everything shown (progress, logs, errors), journaled steps with progress, and the clock.
 */
import { isVnfmError, VnfmError, vnfmError } from '../../../errors.ts';
import type { MgmtContext } from '../../mgmt-driver.ts';
import type { ConnectOptions, SshSession, SshTarget } from '../../ssh/ssh-executor.ts';
import { type Clock, type ClusterConnection, ensureAdminToken, type KubeApi, type KubeApiFactory, kubeconfigServer } from './kube.ts';
import { Host } from './host.ts';
import type { ClusterNode } from './nodes.ts';
import type { NodeAccess } from './params.ts';

/** How the driver opens SSH sessions (the executor's `connectSsh`, or a fake in tests). */
export type SshConnect = (target: SshTarget, o?: ConnectOptions) => Promise<SshSession>;

/** The knobs the shared run context reads. */
export interface RunKnobs {
  sshAttempts: number;
  sshBackoffInitialMs: number;
  sshBackoffMaxMs: number;
  sshNewVmDeadlineMs: number;
  sshNewVmBackoffInitialMs: number;
  sshNewVmBackoffMaxMs: number;
  commandTimeoutMs: number;
  tokenPollIntervalMs: number;
  tokenWaitTimeoutMs: number;
}

/** A short connection budget for a host that must answer at once (see {@link ClusterRunContext.hostOf}). */
export interface ConnectBound {
  attempts: number;
  /** Per attempt (TCP + SSH handshake); the back-off between attempts is at most this long too. */
  readyTimeoutMs: number;
}

/** A host the driver logs in to: a node, or another host of the cluster (Ansible server, LB). */
export interface HostSpec {
  /** Host key pins are kept under this key (a VNFC's resource id, or e.g. `ansible:<ip>`). */
  pinKey: string;
  /** For messages. */
  name: string;
  sshIp: string;
  access: NodeAccess;
}

/** A driver's sealed instance-scoped state (the shared part). */
export interface ClusterInstanceState {
  /** VNFC resource (server) id -> pinned host key fingerprint. */
  hostKeys?: Record<string, string>;
  /** The admin ServiceAccount token of the cluster and how to reach the API. */
  adminToken?: string;
  apiUrl?: string;
  caCert?: string;
  tlsServerName?: string;
  insecure?: boolean;
}

const MASK = '***';

/** The admin kubeconfig kubeadm writes on every master. */
export const ADMIN_CONF = '/etc/kubernetes/admin.conf';

/** Replaces every secret (4+ chars, longest first) by `***`. */
export function redactWith(secrets: Iterable<string>, text: string): string {
  const list = [...new Set([...secrets].filter((s) => typeof s === 'string' && s.length >= 4))].sort((a, b) => b.length - a.length);
  let out = text;
  for (const s of list) out = out.split(s).join(MASK);
  return out;
}

/** Shared state of one hook run (each driver extends it with its parameters). */
export abstract class ClusterRunContext<C extends RunKnobs = RunKnobs> {
  readonly secrets = new Set<string>();
  private readonly hosts = new Map<string, Promise<Host>>();
  protected state: ClusterInstanceState | undefined;
  private saving: Promise<void> = Promise.resolve();
  private api: KubeApi | undefined;
  private lastProgressAt = 0;

  constructor(
    readonly ctx: MgmtContext,
    readonly cfg: C,
    readonly driverName: string,
    private readonly connectFn: SshConnect,
    private readonly kubeFactory: KubeApiFactory,
    readonly clock: Clock,
    /** Register / reach the cluster API without certificate verification (explicitly requested). */
    readonly insecureApi: boolean,
    access: readonly NodeAccess[],
  ) {
    for (const n of access) for (const s of [n.password, n.privateKey, n.passphrase]) if (s) this.secrets.add(s);
  }

  /** How the driver logs in to a node of the cluster. */
  protected abstract access(node: ClusterNode): NodeAccess;

  get signal(): AbortSignal {
    return this.ctx.signal;
  }

  /** Registers a secret learned during the run (join token, certificate key, admin token). */
  secret(s: string | undefined): void {
    if (s) this.secrets.add(s);
  }

  redact(text: string): string {
    return redactWith(this.secrets, text);
  }

  /** Shows the running step (redacted). */
  progress(step: string, node?: string, detail?: string): void {
    this.ctx.progress({ step, ...(node ? { node } : {}), ...(detail ? { detail: this.redact(detail) } : {}) });
  }

  /** A streamed detail of a long step, at most every 5 s. */
  progressDetail(step: string, node: string | undefined, detail: string): void {
    const now = this.clock.now();
    if (now - this.lastProgressAt < 5000) return;
    this.lastProgressAt = now;
    this.progress(step, node, detail);
  }

  /** A journaled step of this hook (`<hook>:<name>`), with progress when it runs. */
  step<T>(name: string, node: string | undefined, fn: () => Promise<T>): Promise<T> {
    return this.ctx.step(`${this.ctx.hook}:${name}${node ? `:${node}` : ''}`, async () => {
      this.progress(name, node);
      const t0 = this.clock.now();
      try {
        return await fn();
      } finally {
        this.ctx.log.info({ hook: this.ctx.hook, driver: this.driverName, step: name, ...(node ? { node } : {}), ms: this.clock.now() - t0 }, 'driver step finished');
      }
    });
  }

  /** A log line (redacted). */
  info(msg: string, extra: Record<string, unknown> = {}): void {
    this.ctx.log.info({ hook: this.ctx.hook, driver: this.driverName, ...extra }, this.redact(msg));
  }

  warn(msg: string, extra: Record<string, unknown> = {}): void {
    this.ctx.log.warn({ hook: this.ctx.hook, driver: this.driverName, ...extra }, this.redact(msg));
  }

  /** An error with every secret removed from its message (same code and class). */
  sanitize(e: unknown): unknown {
    if (!(e instanceof Error)) return e;
    const msg = this.redact(e.message);
    if (msg === e.message) return e;
    if (isVnfmError(e)) return new VnfmError(e.code, msg, { retryable: e.retryable, ...(e.extra ? { extra: JSON.parse(this.redact(JSON.stringify(e.extra))) } : {}), ...(e.retryAfterMs !== undefined ? { retryAfterMs: e.retryAfterMs } : {}) });
    return new Error(msg);
  }

  // ------------------------------------------------------------ sealed instance state

  async instanceState(): Promise<ClusterInstanceState> {
    this.state ??= ((await this.ctx.instanceState.get()) ?? {}) as ClusterInstanceState;
    return this.state;
  }

  /** Changes the sealed state and saves it (serialised). */
  async updateState(change: (s: ClusterInstanceState) => void): Promise<void> {
    const s = await this.instanceState();
    change(s);
    const snapshot = structuredClone(s) as Record<string, unknown>;
    this.saving = this.saving.then(() => this.ctx.instanceState.save(snapshot));
    await this.saving;
  }

  // ------------------------------------------------------------ SSH

  /** The host spec of a node. */
  nodeSpec(node: ClusterNode): HostSpec {
    return { pinKey: node.resourceId, name: node.name, sshIp: node.sshIp, access: this.access(node) };
  }

  private connectOptions(node: HostSpec, pinned: string | undefined, created: boolean, attempts?: number, bound?: ConnectBound): ConnectOptions {
    const hostKey = pinned
      ? { pinned }
      : {
          learn: async (fp: string) => {
            await this.updateState((s) => {
              s.hostKeys = { ...(s.hostKeys ?? {}), [node.pinKey]: fp };
            });
          },
        };
    const base: ConnectOptions = { hostKey, signal: this.signal, secrets: [...this.secrets], backoffInitialMs: this.cfg.sshBackoffInitialMs };
    if (bound) return { ...base, attempts: bound.attempts, readyTimeoutMs: bound.readyTimeoutMs, backoffInitialMs: Math.min(this.cfg.sshBackoffInitialMs, bound.readyTimeoutMs), backoffMaxMs: bound.readyTimeoutMs };
    if (attempts !== undefined) return { ...base, attempts, backoffMaxMs: this.cfg.sshBackoffMaxMs };
    if (created) return { ...base, deadlineMs: this.cfg.sshNewVmDeadlineMs, backoffInitialMs: this.cfg.sshNewVmBackoffInitialMs, backoffMaxMs: this.cfg.sshNewVmBackoffMaxMs };
    return { ...base, attempts: this.cfg.sshAttempts, backoffMaxMs: this.cfg.sshBackoffMaxMs };
  }

  private target(node: HostSpec): SshTarget {
    const a = node.access;
    return { host: node.sshIp, username: a.username, ...(a.password ? { password: a.password } : {}), ...(a.privateKey ? { privateKey: a.privateKey } : {}), ...(a.passphrase ? { passphrase: a.passphrase } : {}) };
  }

  /**
   * The session of a node (one per node and hook). `created`: the VM was created by this
   * operation (it may still be booting: up to `sshNewVmDeadlineMs`; its key is learned).
   */
  host(node: ClusterNode, created = false): Promise<Host> {
    return this.hostOf(this.nodeSpec(node), created);
  }

  /**
   * The session of any host (one per host and hook); see {@link host}. `bound`: a host that is
   * not a new VM and should answer at once (an operator's server): a few short attempts only.
   */
  hostOf(node: HostSpec, created = false, bound?: ConnectBound): Promise<Host> {
    const key = `${node.pinKey}|${node.sshIp}`;
    let h = this.hosts.get(key);
    if (!h) {
      h = (async () => {
        const pinned = (await this.instanceState()).hostKeys?.[node.pinKey];
        this.progress('ssh-connect', node.name);
        const session = await this.connectFn(this.target(node), this.connectOptions(node, pinned, created, undefined, bound));
        return new Host(session, { name: node.name, commandTimeoutMs: this.cfg.commandTimeoutMs, signal: this.signal });
      })();
      this.hosts.set(key, h);
      h.catch(() => this.hosts.delete(key));
    }
    return h;
  }

  /** Whether a node answers SSH at all (one short attempt); auth / host key failures count as answering. */
  answers(node: ClusterNode): Promise<boolean> {
    return this.answersAt(this.nodeSpec(node));
  }

  /** {@link answers} for any host. */
  async answersAt(node: HostSpec): Promise<boolean> {
    const key = `${node.pinKey}|${node.sshIp}`;
    if (this.hosts.has(key)) {
      try {
        await this.hosts.get(key);
        return true;
      } catch {
        // fall through to a fresh probe
      }
    }
    try {
      const pinned = (await this.instanceState()).hostKeys?.[node.pinKey];
      const session = await this.connectFn(this.target(node), this.connectOptions(node, pinned, false, 1));
      const h = new Host(session, { name: node.name, commandTimeoutMs: this.cfg.commandTimeoutMs, signal: this.signal });
      this.hosts.set(key, Promise.resolve(h));
      return true;
    } catch (e) {
      if (isVnfmError(e, 'VNFM_ERR_SSH_UNREACHABLE')) return false;
      if (isVnfmError(e, 'VNFM_ERR_SSH_AUTH', 'VNFM_ERR_SSH_HOST_KEY')) return true;
      throw e;
    }
  }

  /** A session already opened by {@link answers} or {@link host}, if any. */
  async openHost(node: ClusterNode): Promise<Host | undefined> {
    const h = this.hosts.get(`${node.resourceId}|${node.sshIp}`);
    if (!h) return undefined;
    try {
      return await h;
    } catch {
      return undefined;
    }
  }

  /** Drops host key pins of resources that are no longer part of the instance. */
  async prunePins(keep: readonly string[]): Promise<void> {
    const s = await this.instanceState();
    const pins = s.hostKeys ?? {};
    const stale = Object.keys(pins).filter((k) => !keep.includes(k));
    if (stale.length === 0) return;
    await this.updateState((x) => {
      const next = { ...(x.hostKeys ?? {}) };
      for (const k of stale) delete next[k];
      x.hostKeys = next;
    });
  }

  close(): void {
    for (const h of this.hosts.values()) h.then((x) => x.session.close()).catch(() => undefined);
    this.hosts.clear();
  }

  // ------------------------------------------------------------ Kubernetes API

  private connection(s: ClusterInstanceState): ClusterConnection {
    return {
      server: s.apiUrl as string,
      ...(s.caCert ? { caCert: s.caCert } : {}),
      ...(s.tlsServerName ? { tlsServerName: s.tlsServerName } : {}),
      ...(s.insecure ? { insecure: true } : {}),
      token: s.adminToken as string,
      signal: this.signal,
    };
  }

  /** Whether the sealed state has cluster credentials. */
  async hasCredentials(): Promise<boolean> {
    const s = await this.instanceState();
    return Boolean(s.adminToken && s.apiUrl);
  }

  /**
   * The cluster API with the sealed admin token. When the state has none (an instance built before
   * the token was kept), one is made from a master's admin kubeconfig: see {@link bootstrapAdmin}.
   */
  async kube(fallbackMaster?: () => Promise<{ host: Host; apiUrl: string; caCert: string; tlsServerName?: string }>): Promise<KubeApi> {
    if (this.api) return this.api;
    const s = await this.instanceState();
    if (s.adminToken && s.apiUrl) {
      this.secret(s.adminToken);
      this.api = this.kubeFactory(this.connection(s));
      return this.api;
    }
    if (!fallbackMaster) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${this.driverName}: the driver holds no credentials for this cluster`);
    const m = await fallbackMaster();
    await this.bootstrapAdmin(m.host, m.apiUrl, m.caCert, m.tlsServerName);
    return this.kube();
  }

  /**
   * Reads the master's `admin.conf` (in memory only), creates the admin ServiceAccount token with
   * it, and keeps the token sealed in the instance state.
   */
  async bootstrapAdmin(master: Host, apiUrl: string, caCert: string, tlsServerName?: string, adminConf?: string): Promise<void> {
    const kubeconfig = adminConf ?? (await master.read(ADMIN_CONF, true));
    const conn: ClusterConnection = { server: apiUrl, caCert, kubeconfig, signal: this.signal, ...(tlsServerName ? { tlsServerName } : {}), ...(this.insecureApi ? { insecure: true } : {}) };
    const boot = this.kubeFactory(conn);
    const token = await ensureAdminToken(boot, this.clock, { intervalMs: this.cfg.tokenPollIntervalMs, timeoutMs: this.cfg.tokenWaitTimeoutMs, signal: this.signal });
    this.secret(token);
    await this.updateState((s) => {
      s.adminToken = token;
      s.apiUrl = apiUrl;
      s.caCert = caCert;
      if (tlsServerName) s.tlsServerName = tlsServerName;
      else delete s.tlsServerName;
      if (this.insecureApi) s.insecure = true;
      else delete s.insecure;
    });
    this.api = undefined;
  }

  /** The API server URL a master's admin kubeconfig names. */
  static serverOf(kubeconfig: string): string | undefined {
    return kubeconfigServer(kubeconfig);
  }
}
