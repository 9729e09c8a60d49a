/**
 * The built-in `k8s-kubeadm` management driver: builds a kubeadm Kubernetes cluster inside a VNF's
 * VMs at instantiate and registers it as a Kubernetes VIM; scales and heals its workers and
 * masters safely (drain that respects PodDisruptionBudgets, etcd quorum gate, leader transfer,
 * HAProxy updates, joins); removes the VIM at terminate. It serves the hooks of Tacker packages
 * whose artifact is named `mgmt-drivers-kubernetes` (or whose artifact has
 * `properties.healvnfm_driver: k8s-kubeadm`); the package's Python file is not run.
 *
 * Hook flows: ./hooks.ts. Request validation at acceptance: {@link KubeadmMgmtDriver.validate}.
 */
import { vnfmError } from '../../../errors.ts';
import { appliesToHook, claimsArtifact } from '../k8s-common/binding.ts';
import { connectSsh } from '../../ssh/ssh-executor.ts';
import type { HookArtifact, HookName, MgmtContext, MgmtDriver, MgmtResult, MgmtValidation } from '../../mgmt-driver.ts';
import { driverConfig, type KubeadmDriverConfig } from './config.ts';
import { paramsFor, runKubeadmHook, validatedParams } from './hooks.ts';
import { buildInventory, findNode, roleVdus } from '../k8s-common/inventory.ts';
import { type Clock, type KubeApiFactory, kubeClientFactory, realClock } from '../k8s-common/kube.ts';

export { realClock };
import { checkFlatOverrides, drainParamsOf, effectiveInstallationParam, installationParamOf, type KubeadmParams, parseKubeadmParams } from './params.ts';
import { masterTargetsRefusal } from './quorum.ts';
import { RunContext, type SshConnect } from './run-context.ts';

/** The driver's id, and the Tacker artifact name it serves. */
export const KUBEADM_DRIVER_NAME = 'k8s-kubeadm';
export const KUBEADM_ARTIFACT_NAME = 'mgmt-drivers-kubernetes';

/** What the driver is built with (all optional; tests inject fakes). */
export interface KubeadmDriverDeps {
  /** Opens an SSH session. @default connectSsh of the SSH executor */
  connect?: SshConnect;
  /** Builds the cluster API client. @default a KubeClient */
  kubeApi?: KubeApiFactory;
  /** Clock of every wait. @default real time */
  clock?: Clock;
  /** Settings over the defaults (the engine passes the config's `mgmt.kubeadm` section, resolved once). */
  config?: Partial<KubeadmDriverConfig>;
}

/** Hooks made only of check-first, journaled removals: safe to resume automatically after a crash. */
const IDEMPOTENT = new Set<HookName>(['terminate_end', 'scale_start', 'heal_start']);

function badRequest(e: unknown): never {
  const msg = e instanceof Error ? e.message : String(e);
  throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `k8s-kubeadm parameters: ${msg.replace(/^k8s-kubeadm: /, '')}`);
}

/** Parameters good enough to delete the VIM when the stored ones no longer validate. */
function removalParams(instanceId: string, raw: Record<string, unknown>): KubeadmParams {
  const vimName = typeof raw.vim_name === 'string' && raw.vim_name !== '' ? raw.vim_name : `kubernetes_vim_${instanceId}`;
  const node = { sshCpName: '', username: '' };
  return { scriptPath: '', vimName, masterNode: { ...node, podCidr: '', clusterCidr: '', clusterCpName: '' }, workerNode: node, ignored: [], insecure: false };
}

/** The `k8s-kubeadm` management driver. */
export class KubeadmMgmtDriver implements MgmtDriver {
  readonly name = KUBEADM_DRIVER_NAME;
  private readonly connect: SshConnect;
  private readonly kubeApi: KubeApiFactory;
  private readonly clock: Clock;
  /** The driver's settings, checked once when the driver is built. */
  private readonly settings: KubeadmDriverConfig;

  constructor(private readonly deps: KubeadmDriverDeps = {}) {
    this.connect = deps.connect ?? connectSsh;
    this.kubeApi = deps.kubeApi ?? kubeClientFactory();
    this.clock = deps.clock ?? realClock;
    this.settings = driverConfig(undefined, deps.config);
  }

  /** Serves hooks whose artifact is `mgmt-drivers-kubernetes` or names this driver in `healvnfm_driver`. */
  claims(a: HookArtifact): boolean {
    return claimsArtifact(a, KUBEADM_DRIVER_NAME, KUBEADM_ARTIFACT_NAME);
  }

  /** The flavour binds this hook to this driver (and the operation is one the hook acts on). */
  applies(ctx: MgmtContext): boolean {
    return appliesToHook(ctx, (a) => this.claims(a));
  }


  /** terminate_end, scale_start and heal_start are check-first removals, journaled step by step. */
  idempotent(ctx: MgmtContext): boolean {
    return IDEMPOTENT.has(ctx.hook);
  }

  /**
   * Acceptance checks (400 malformed parameters or a scale of the master aspect; 422 a heal target
   * that is not a node, a single master, more master targets than quorum allows).
   */
  async validate(v: MgmtValidation): Promise<void> {
    const c = v.command;
    const bound = (prefix: string) => v.hooks.some((h) => h.startsWith(prefix));
    switch (c.operation) {
      case 'INSTANTIATE': {
        if (!bound('instantiate_')) return;
        const p = parseKubeadmParams(installationParamOf(c.additionalParams ?? v.params), { instanceId: v.instance.id, packageFiles: v.vnfd.files });
        try {
          roleVdus(v.flavour, p);
        } catch (e) {
          badRequest(e);
        }
        return;
      }
      case 'SCALE': {
        if (!bound('scale_')) return;
        const problems = checkFlatOverrides(v.params);
        if (problems.length > 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `invalid k8s-kubeadm overrides: ${problems.join('; ')}`);
        const p = parseKubeadmParams(effectiveInstallationParam(v.instantiateParams, v.params).param, { instanceId: v.instance.id });
        drainParamsOf(v.params);
        let vdus: { master: string; worker: string };
        try {
          vdus = roleVdus(v.flavour, p);
        } catch (e) {
          badRequest(e);
        }
        const aspect = v.flavour.scalingAspects?.[c.aspectId];
        const scalesMaster = (p.masterNode.aspectId !== undefined && c.aspectId === p.masterNode.aspectId) || (aspect !== undefined && Object.hasOwn(aspect.vduDeltas ?? {}, vdus.master));
        if (scalesMaster) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `aspect ${c.aspectId} scales the Kubernetes masters, which the k8s-kubeadm driver does not support (only the worker aspect can be scaled; heal a master to replace it)`);
        return;
      }
      case 'HEAL': {
        if (!bound('heal_')) return;
        const problems = checkFlatOverrides(v.params);
        if (problems.length > 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `invalid k8s-kubeadm overrides: ${problems.join('; ')}`);
        const p = parseKubeadmParams(effectiveInstallationParam(v.instantiateParams, v.params).param, { instanceId: v.instance.id });
        drainParamsOf(v.params);
        if (c.scope === 'entire') return;
        const inv = buildInventory(v.instance, v.flavour, p);
        const infos = v.instance.instantiatedVnfInfo?.vnfcInfo ?? [];
        let masters = 0;
        if (c.scope === 'allVnfcs') masters = inv.masters.length;
        for (const id of c.vnfcInfoIds) {
          const info = infos.find((x) => x.id === id);
          const node = findNode(inv, { vnfcInfoId: id, ...(info ? { vnfcResourceInfoId: info.vnfcResourceInfoId } : {}) });
          if (!node) throw vnfmError('VNFM_ERR_MGMT_REFUSED', `VNFC ${id} is not a node of the Kubernetes cluster (neither the master VDU ${inv.masterVduId} nor the worker VDU ${inv.workerVduId})`);
          if (node.role === 'master') masters++;
        }
        const refusal = masterTargetsRefusal(inv.masters.length, masters);
        if (refusal) throw vnfmError('VNFM_ERR_MGMT_REFUSED', refusal);
        return;
      }
      default:
        return;
    }
  }

  async run(ctx: MgmtContext): Promise<MgmtResult | undefined> {
    if (!this.applies(ctx)) return undefined;
    const eff = paramsFor(ctx);
    const removal = ctx.hook === 'terminate_end' || (ctx.hook === 'heal_start' && ctx.command.operation === 'HEAL' && ctx.command.scope === 'entire');
    let params: KubeadmParams;
    try {
      params = validatedParams(ctx, eff);
    } catch (e) {
      if (!removal) throw e;
      params = removalParams(ctx.instance.id, eff.param);
    }
    const cfg = this.settings;
    const rc = new RunContext(ctx, cfg, params, this.connect, this.kubeApi, this.clock);
    try {
      return await runKubeadmHook(rc, eff);
    } catch (e) {
      throw rc.sanitize(e);
    } finally {
      rc.close();
    }
  }
}

/** The driver with its dependencies (defaults: the SSH executor, a KubeClient, real time). */
export function createKubeadmDriver(deps: KubeadmDriverDeps = {}): KubeadmMgmtDriver {
  return new KubeadmMgmtDriver(deps);
}
