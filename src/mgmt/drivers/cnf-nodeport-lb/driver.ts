/**
 * The built-in `cnf-nodeport-lb` management driver (Tacker's `mgmt-drivers-cnf-nodeport`, spec
 * §1.2.3, §3): publishes a CNF's NodePort Services on an external HAProxy load balancer VM, in
 * front of the nodes of the Kubernetes cluster the CNF runs on.
 *
 * - instantiate_end: the CNF's Services (found through the Kubernetes API by the VNFM's own label
 *   `vnfm.io/vnf-instance-id=<id>`, not by re-parsing manifests) of type NodePort/LoadBalancer, with
 *   fixed or auto-assigned node ports, become one frontend per TCP port on the LB
 *   (`np_<id8>_<ns>_<svc>_<nodePort>`, `bind *:<nodePort>`), each with its own backend of every Ready
 *   schedulable node on that port. The CNF's frontends are one owner section of the LB file
 *   (`cnf-<instance id>`), so CNFs sharing an LB never touch each other's lines.
 * - heal_end (whole CNF, or VNFCs) and scale_end: the same reconcile; a whole-CNF heal that gave
 *   the Services new node ports replaces the old frontends by the new ones in one validated
 *   reload (the old port is refused afterwards). Nothing changes when the ports did not.
 * - terminate_end: the CNF's section removed (its ports refused), other CNFs untouched.
 *
 * Every apply is validated with `haproxy -c` on the LB before anything goes live; an invalid
 * configuration leaves the live one untouched and the op FAILED_TEMP naming haproxy's message; a
 * retry re-runs the reconcile. The LB's SSH host key is pinned at first contact (per instance).
 * Drivers of different instances sharing the LB are serialised (`lb:<ip>` lock).
 */
import { isVnfmError, terminalError, vnfmError } from '../../../errors.ts';
import { type KubeClientOptions, KubeClient, type KubeList } from '../../../infra/kubernetes/kube-client.ts';
import type { VimConnection } from '../../../vims/vim-registry.ts';
import { type LbHostOptions, type LbNode, lbOwner, type LbService, nodePortFrontends, reconcileOwner, removeOwner } from '../../lb/index.ts';
import type { HookArtifact, HookName, MgmtContext, MgmtDriver, MgmtResult, MgmtValidation } from '../../mgmt-driver.ts';
import { type ConnectOptions, connectSsh, type SshSession, type SshTarget } from '../../ssh/ssh-executor.ts';
import { effectiveLbAccess, type LbAccess, PARAM_KEY, ParamError, parseNodePortLbParams } from './params.ts';

export const NODEPORT_LB_DRIVER_NAME = 'cnf-nodeport-lb';
export const NODEPORT_LB_ARTIFACT_NAME = 'mgmt-drivers-cnf-nodeport';

/** The instance label the Kubernetes infra driver puts on every object of a CNF. */
const INSTANCE_LABEL = 'vnfm.io/vnf-instance-id';

/** The Kubernetes calls the driver makes. */
export interface NodePortKubeApi {
  list(apiVersion: string, kind: string, namespace: string | undefined, selectors?: { labelSelector?: string }): Promise<KubeList>;
}

/** What the driver is built with (tests inject fakes). */
export interface NodePortLbDriverDeps {
  connect?: (target: SshTarget, o: ConnectOptions) => Promise<SshSession>;
  kube?: (vim: VimConnection, signal: AbortSignal) => NodePortKubeApi;
  /** SSH connect options (attempts, back-off). */
  ssh?: Pick<ConnectOptions, 'attempts' | 'backoffInitialMs' | 'backoffMaxMs' | 'readyTimeoutMs'>;
  /** How the LB host is driven (config path, reload command...). */
  lb?: Omit<LbHostOptions, 'lastAppliedHash' | 'signal' | 'name'>;
  kubeClient?: KubeClientOptions;
}

/** Instance-scoped state (sealed by the engine). */
interface DriverState {
  /** LB address -> pinned SSH host key fingerprint. */
  hostKeys?: Record<string, string>;
  /** LB address and hash of the CNF's section as last applied. */
  lb?: string;
  hash?: string | null;
}

/** What the operator sees in `instantiatedVnfInfo.metadata.nodePortLb`. */
export interface NodePortLbMeta {
  lb: string;
  owner: string;
  frontends: { frontend: string; port: number; service: string; servers: string[] }[];
  unpublished: { service: string; port: number; protocol: string; reason: string }[];
  appliedAt: string;
}

const HOOKS = new Set<HookName>(['instantiate_end', 'terminate_end', 'heal_end', 'scale_end']);

function hookArtifactOf(ctx: Pick<MgmtContext, 'flavour' | 'hook'>): HookArtifact | undefined {
  const h = ctx.flavour?.lcmHooks?.[ctx.hook];
  return h ? { artifactName: h.artifactName, file: h.file, type: h.type, properties: { ...(h.properties ?? {}) } } : undefined;
}

function paramFailure(e: unknown): never {
  if (e instanceof ParamError) throw vnfmError(e.status === 400 ? 'VNFM_ERR_API_BAD_REQUEST' : 'VNFM_ERR_MGMT_REFUSED', `${NODEPORT_LB_DRIVER_NAME} parameters: ${e.message}`);
  throw e;
}

/** The `cnf-nodeport-lb` management driver. */
export class NodePortLbMgmtDriver implements MgmtDriver {
  readonly name = NODEPORT_LB_DRIVER_NAME;
  constructor(private readonly deps: NodePortLbDriverDeps = {}) {}

  /** Serves hooks whose artifact is `mgmt-drivers-cnf-nodeport` or names this driver in `healvnfm_driver`. */
  claims(a: HookArtifact): boolean {
    const named = a.properties?.healvnfm_driver;
    if (typeof named === 'string' && named !== '') return named === NODEPORT_LB_DRIVER_NAME;
    return a.artifactName === NODEPORT_LB_ARTIFACT_NAME;
  }

  applies(ctx: MgmtContext): boolean {
    if (!HOOKS.has(ctx.hook)) return false;
    const art = hookArtifactOf(ctx);
    if (!art || !this.claims(art)) return false;
    const op = ctx.command.operation;
    return (
      (ctx.hook === 'instantiate_end' && op === 'INSTANTIATE') ||
      (ctx.hook === 'terminate_end' && op === 'TERMINATE') ||
      (ctx.hook === 'heal_end' && op === 'HEAL') ||
      (ctx.hook === 'scale_end' && op === 'SCALE')
    );
  }

  /** Every hook is a convergent reconcile (or a removal): safe to run again after an interruption. */
  idempotent(ctx: MgmtContext): boolean {
    return HOOKS.has(ctx.hook);
  }

  /** Acceptance: 400 for malformed parameters, 422 for a script_path not in the package. */
  async validate(v: MgmtValidation): Promise<void> {
    try {
      if (v.command.operation === 'INSTANTIATE') {
        if (!v.hooks.some((h) => h.startsWith('instantiate_'))) return;
        parseNodePortLbParams(v.command.additionalParams ?? v.params, v.vnfd.files);
        return;
      }
      if (v.params[PARAM_KEY] !== undefined) effectiveLbAccess(v.instantiateParams, v.params);
    } catch (e) {
      paramFailure(e);
    }
  }

  private access(ctx: MgmtContext): LbAccess {
    try {
      return ctx.command.operation === 'INSTANTIATE' ? parseNodePortLbParams(ctx.params).lb : effectiveLbAccess(ctx.instantiateParams, ctx.params);
    } catch (e) {
      return paramFailure(e);
    }
  }

  private async connect(ctx: MgmtContext, a: LbAccess, state: DriverState): Promise<SshSession> {
    const pinned = state.hostKeys?.[a.sshIp];
    const connect = this.deps.connect ?? connectSsh;
    return connect(
      { host: a.sshIp, port: a.sshPort, username: a.sshUsername, password: a.sshPassword },
      {
        attempts: 3,
        ...(this.deps.ssh ?? {}),
        signal: ctx.signal,
        hostKey: pinned
          ? { pinned }
          : {
              learn: async (fp) => {
                state.hostKeys = { ...(state.hostKeys ?? {}), [a.sshIp]: fp };
                await ctx.instanceState.save({ ...state });
              },
            },
      },
    );
  }

  private kube(ctx: MgmtContext): NodePortKubeApi {
    if (!ctx.vim) throw terminalError('VNFM_ERR_MGMT_FAILED', `${NODEPORT_LB_DRIVER_NAME}: the instance has no Kubernetes VIM connection`);
    if (this.deps.kube) return this.deps.kube(ctx.vim, ctx.signal);
    return KubeClient.fromVim(ctx.vim, this.deps.kubeClient).withSignal(ctx.signal);
  }

  /** Services of the CNF and the cluster's nodes, as the LB sees them. */
  private async inputs(ctx: MgmtContext): Promise<{ services: LbService[]; nodes: LbNode[] }> {
    const api = this.kube(ctx);
    const [svcs, nodes] = await Promise.all([api.list('v1', 'Service', undefined, { labelSelector: `${INSTANCE_LABEL}=${ctx.instance.id}` }), api.list('v1', 'Node', undefined)]);
    // biome-ignore lint/suspicious/noExplicitAny: Kubernetes JSON
    const services: LbService[] = (svcs.items as any[]).map((s) => ({
      namespace: String(s.metadata?.namespace ?? 'default'),
      name: String(s.metadata?.name),
      type: String(s.spec?.type ?? 'ClusterIP'),
      // biome-ignore lint/suspicious/noExplicitAny: Kubernetes JSON
      ports: ((s.spec?.ports ?? []) as any[]).map((p) => ({ ...(p.name ? { name: String(p.name) } : {}), port: Number(p.port), ...(p.nodePort ? { nodePort: Number(p.nodePort) } : {}), protocol: String(p.protocol ?? 'TCP') })),
    }));
    // biome-ignore lint/suspicious/noExplicitAny: Kubernetes JSON
    const lbNodes: LbNode[] = (nodes.items as any[]).flatMap((n) => {
      // biome-ignore lint/suspicious/noExplicitAny: Kubernetes JSON
      const addr = ((n.status?.addresses ?? []) as any[]).find((a) => a.type === 'InternalIP')?.address;
      if (typeof addr !== 'string') return [];
      // biome-ignore lint/suspicious/noExplicitAny: Kubernetes JSON
      const ready = ((n.status?.conditions ?? []) as any[]).some((c) => c.type === 'Ready' && c.status === 'True');
      return [{ name: String(n.metadata?.name), address: addr, ready, schedulable: n.spec?.unschedulable !== true }];
    });
    return { services, nodes: lbNodes };
  }

  async run(ctx: MgmtContext): Promise<MgmtResult | undefined> {
    if (!this.applies(ctx)) return undefined;
    const a = this.access(ctx);
    const owner = lbOwner('cnf', ctx.instance.id);
    const state = ((await ctx.instanceState.get()) ?? {}) as DriverState;
    const lbOpts: LbHostOptions = {
      ...(this.deps.lb ?? {}),
      signal: ctx.signal,
      name: a.sshIp,
      onStaleOwnerRemoved: (o, ports) => ctx.log.warn({ lb: a.sshIp, owner, staleOwner: o, ports }, 'cnf-nodeport-lb: a stale section of the load balancer (its VNF instance is gone or not instantiated) was in the way and was removed'),
    };
    ctx.progress({ step: 'lb-connect', node: a.sshIp });
    const release = await ctx.lock(`lb:${a.sshIp}`);
    let session: SshSession | undefined;
    try {
      session = await this.connect(ctx, a, state);
      if (ctx.hook === 'terminate_end') {
        ctx.progress({ step: 'lb-remove', node: a.sshIp, detail: owner });
        const r = await removeOwner(session, owner, lbOpts);
        ctx.log.info({ lb: a.sshIp, owner, action: r.action, removedPorts: r.ports.before }, 'cnf-nodeport-lb: the CNF\'s frontends removed from the load balancer');
        await ctx.instanceState.save({ ...state, lb: a.sshIp, hash: null });
        return { vnfInfoMetadata: { nodePortLb: null } };
      }
      ctx.progress({ step: 'lb-desired', node: a.sshIp, detail: 'reading Services and Nodes' });
      const { services, nodes } = await this.inputs(ctx);
      const { frontends, unpublished } = nodePortFrontends({ instanceId: ctx.instance.id, services, nodes });
      ctx.progress({ step: 'lb-apply', node: a.sshIp, detail: `${frontends.length} frontend(s)` });
      const r = await reconcileOwner(session, { owner, frontends }, { ...lbOpts, ...(state.lb === a.sshIp && state.hash !== undefined ? { lastAppliedHash: state.hash } : {}) });
      if (r.drift) ctx.log.warn({ lb: a.sshIp, owner, drift: r.drift }, 'cnf-nodeport-lb: the load balancer differed from what was last applied (drift); re-applied');
      for (const u of unpublished) ctx.log.warn({ lb: a.sshIp, ...u }, 'cnf-nodeport-lb: Service port not published');
      ctx.log.info({ lb: a.sshIp, owner, action: r.action, ports: r.ports }, 'cnf-nodeport-lb: the CNF\'s NodePorts published on the load balancer');
      await ctx.instanceState.save({ ...state, lb: a.sshIp, hash: r.hash });
      const meta: NodePortLbMeta = {
        lb: a.sshIp,
        owner,
        frontends: frontends
          .map((f) => ({ frontend: f.name, port: f.bind, service: (f.comment ?? '').replace(/^service (\S+) .*$/, '$1'), servers: f.servers.map((s) => s.name).sort() }))
          .sort((x, y) => x.port - y.port),
        unpublished,
        appliedAt: new Date().toISOString(),
      };
      return { vnfInfoMetadata: { nodePortLb: meta } };
    } catch (e) {
      if (isVnfmError(e)) throw e;
      throw vnfmError('VNFM_ERR_MGMT_FAILED', `${NODEPORT_LB_DRIVER_NAME} ${ctx.hook}: ${(e as Error).message}`);
    } finally {
      session?.close();
      await release();
    }
  }
}

/** The driver with its defaults (the SSH executor, a KubeClient from the instance's VIM). */
export function createNodePortLbDriver(deps: NodePortLbDriverDeps = {}): NodePortLbMgmtDriver {
  return new NodePortLbMgmtDriver(deps);
}
