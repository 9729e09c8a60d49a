/**
 * The built-in `k8s-kubespray` management driver (Tacker's `mgmt-drivers-kubespray`): builds a
 * Kubernetes cluster on a VNF's VMs with Kubespray run by Ansible on the operator's Ansible server,
 * publishes the API servers (and the cluster's NodePorts) on an external HAProxy LB through the LB
 * reconciler, registers the cluster as a Kubernetes VIM at the LB's address, scales and heals its
 * workers, rebuilds it on a whole heal and removes it at terminate.
 *
 * Hook flows: ./hooks.ts. Ansible runs: ./ansible.ts. Acceptance checks: {@link KubesprayMgmtDriver.validate}.
 */
import { vnfmError } from '../../../errors.ts';
import { appliesToHook, CLUSTER_HOOKS, claimsArtifact } from '../k8s-common/binding.ts';
import { connectSsh } from '../../ssh/ssh-executor.ts';
import type { HookArtifact, MgmtContext, MgmtDriver, MgmtResult, MgmtValidation } from '../../mgmt-driver.ts';
import { buildInventory, findNode, roleVdus } from '../k8s-common/inventory.ts';
import { type Clock, type KubeApiFactory, kubeClientFactory, realClock } from '../k8s-common/kube.ts';
import type { SshConnect } from '../k8s-common/run-context.ts';
import { type KubesprayDriverConfig, kubesprayConfig } from './config.ts';
import { DRIVER, inventoryKey, runSprayHook, SprayRun } from './hooks.ts';
import { effectiveSprayParam, installationParamOf, type KubesprayParams, parseKubesprayParams, refusedOverrides, type SprayEffective } from './params.ts';

export const KUBESPRAY_DRIVER_NAME = DRIVER;
export const KUBESPRAY_ARTIFACT_NAME = 'mgmt-drivers-kubespray';

/** Which instance (if any) already uses an inventory (`<ansible ip>:<path>`), for the acceptance check. */
export type InventoryOwner = (key: string) => Promise<string | undefined>;

/** What the driver is built with (all optional; tests inject fakes). */
export interface KubesprayDriverDeps {
  connect?: SshConnect;
  kubeApi?: KubeApiFactory;
  clock?: Clock;
  /** Settings over the defaults (the engine passes the config's `mgmt.kubespray` section, resolved once). */
  config?: Partial<KubesprayDriverConfig>;
  /** Finds the instance using an inventory path (the engine reads the drivers' sealed states). */
  inventoryOwner?: InventoryOwner;
  /**
   * Whether a section of the external LB belongs to a VNF instance that is gone or not
   * instantiated with no operation in progress (the engine answers from its database); such a
   * section in the way of the cluster's is removed. Without it, a clash refuses.
   */
  lbOwnerIsStale?: (owner: string) => Promise<boolean>;
}

function badRequest(e: unknown): never {
  const msg = e instanceof Error ? e.message : String(e);
  throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `k8s-kubespray parameters: ${msg}`);
}

/** The `k8s-kubespray` management driver. */
export class KubesprayMgmtDriver implements MgmtDriver {
  readonly name = KUBESPRAY_DRIVER_NAME;
  private readonly connect: SshConnect;
  private readonly kubeApi: KubeApiFactory;
  private readonly clock: Clock;
  /** The driver's settings, checked once when the driver is built. */
  private readonly settings: KubesprayDriverConfig;

  constructor(private readonly deps: KubesprayDriverDeps = {}) {
    this.connect = deps.connect ?? connectSsh;
    this.kubeApi = deps.kubeApi ?? kubeClientFactory();
    this.clock = deps.clock ?? realClock;
    this.settings = kubesprayConfig(undefined, deps.config);
  }

  claims(a: HookArtifact): boolean {
    return claimsArtifact(a, KUBESPRAY_DRIVER_NAME, KUBESPRAY_ARTIFACT_NAME);
  }

  /** The flavour binds this hook to this driver (and the operation is one the hook acts on). */
  applies(ctx: MgmtContext): boolean {
    // the rollback of an instantiate undoes what instantiate_end did, whether or not the VNFD
    // binds a rollback hook of its own (Tacker's packages bind none)
    if (ctx.hook === 'instantiate_rollback_start') return ctx.command.operation === 'INSTANTIATE' && appliesToHook({ ...ctx, hook: 'instantiate_end' }, (a) => this.claims(a));
    return appliesToHook(ctx, (a) => this.claims(a));
  }


  /**
   * Every hook is a list of check-first journaled steps, and a play interrupted by a VNFM restart
   * is found again by its journaled run id (its result is picked up, it is not started again):
   * resuming after a crash is safe.
   */
  idempotent(ctx: MgmtContext): boolean {
    return CLUSTER_HOOKS.has(ctx.hook) || ctx.hook === 'instantiate_rollback_start';
  }

  /** Acceptance: 400 malformed parameters / overrides / master scale; 422 inventory in use, master or LB heal target. */
  async validate(v: MgmtValidation): Promise<void> {
    const c = v.command;
    const bound = (prefix: string) => v.hooks.some((h) => h.startsWith(prefix));
    switch (c.operation) {
      case 'INSTANTIATE': {
        if (!bound('instantiate_')) return;
        const p = parseKubesprayParams(installationParamOf(c.additionalParams ?? v.params), { instanceId: v.instance.id, packageFiles: v.vnfd.files });
        const unknown: string[] = [];
        for (const [k, n] of [['master_node', p.masterNode], ['worker_node', p.workerNode]] as const) {
          // the node address comes from a CP of the flavour (ssh_cp_name may name a floating IP resource when nic_cp_name is given)
          if (n.nicCpName && !v.flavour.cps[n.nicCpName]) unknown.push(`${k}.nic_cp_name '${n.nicCpName}' is not a CP of flavour ${v.flavour.flavourId}`);
          if (!n.nicCpName && !v.flavour.cps[n.sshCpName]) unknown.push(`${k}.ssh_cp_name '${n.sshCpName}' is not a CP of flavour ${v.flavour.flavourId}`);
        }
        if (unknown.length > 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `invalid k8s-kubespray parameters: ${unknown.join('; ')}`);
        try {
          roleVdus(v.flavour, p);
        } catch (e) {
          badRequest(e);
        }
        await this.checkInventoryFree(p, v.instance.id);
        return;
      }
      case 'SCALE': {
        if (!bound('scale_')) return;
        const p = this.opParams(v, false);
        const vdus = this.vdus(v, p);
        const aspect = v.flavour.scalingAspects?.[c.aspectId];
        const scalesMaster = (p.masterNode.aspectId !== undefined && c.aspectId === p.masterNode.aspectId) || (aspect !== undefined && Object.hasOwn(aspect.vduDeltas ?? {}, vdus.master));
        if (scalesMaster) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `aspect ${c.aspectId} scales the Kubernetes master, which the k8s-kubespray driver does not support (only the worker aspect can be scaled)`);
        return;
      }
      case 'HEAL': {
        if (!bound('heal_')) return;
        const whole = c.scope === 'entire';
        const p = this.opParams(v, whole);
        if (whole) return;
        const inv = buildInventory(v.instance, v.flavour, p);
        const infos = v.instance.instantiatedVnfInfo?.vnfcInfo ?? [];
        const ids = c.scope === 'allVnfcs' ? infos.map((x) => x.id) : c.vnfcInfoIds;
        for (const id of ids) {
          const info = infos.find((x) => x.id === id);
          const node = findNode(inv, { vnfcInfoId: id, ...(info ? { vnfcResourceInfoId: info.vnfcResourceInfoId } : {}) });
          if (!node) {
            const vdu = info?.vduId ?? 'unknown';
            throw vnfmError('VNFM_ERR_MGMT_REFUSED', `VNFC ${id} (VDU ${vdu}) is not a worker of the Kubernetes cluster: the k8s-kubespray driver heals workers only (the load balancer and other VNFCs cannot be healed one by one; heal the whole VNF instead)`);
          }
          if (node.role === 'master') throw vnfmError('VNFM_ERR_MGMT_REFUSED', `VNFC ${id} is the cluster's master (${node.name}): the k8s-kubespray driver heals workers only (a Kubespray cluster has one master; heal the whole VNF to rebuild it)`);
        }
        return;
      }
      default:
        return;
    }
  }

  private opParams(v: MgmtValidation, wholeHeal: boolean): KubesprayParams {
    const refused = refusedOverrides(v.params, wholeHeal);
    if (refused.length > 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `k8s-kubespray: k8s_cluster_installation_param of a scale or VNFC heal may give worker_node, ansible and external_lb_param only (not ${refused.join(', ')})`);
    return parseKubesprayParams(effectiveSprayParam(v.instantiateParams, v.params, wholeHeal).param, { instanceId: v.instance.id });
  }

  private vdus(v: MgmtValidation, p: KubesprayParams): { master: string; worker: string } {
    try {
      return roleVdus(v.flavour, p);
    } catch (e) {
      badRequest(e);
    }
  }

  private async checkInventoryFree(p: KubesprayParams, instanceId: string): Promise<void> {
    if (!this.deps.inventoryOwner) return;
    const owner = await this.deps.inventoryOwner(inventoryKey(p));
    if (owner && owner !== instanceId) {
      throw vnfmError('VNFM_ERR_MGMT_REFUSED', `k8s-kubespray: ansible.transferring_inventory_path ${p.ansible.transferringInventoryPath} on ${p.ansible.ipAddress} is already used by VNF instance ${owner}; every cluster needs its own inventory directory`);
    }
  }

  private effective(ctx: MgmtContext): SprayEffective {
    if (ctx.hook.startsWith('instantiate_')) {
      const ap = ctx.command.operation === 'INSTANTIATE' ? ctx.command.additionalParams : ctx.params;
      return { param: installationParamOf(ap ?? ctx.params), overridden: [] };
    }
    const whole = ctx.command.operation === 'HEAL' && ctx.command.scope === 'entire';
    return effectiveSprayParam(ctx.instantiateParams, ctx.params, whole);
  }

  async run(ctx: MgmtContext): Promise<MgmtResult | undefined> {
    if (!this.applies(ctx)) return undefined;
    const eff = this.effective(ctx);
    const params = parseKubesprayParams(eff.param, { instanceId: ctx.instance.id, packageFiles: ctx.vnfd?.files });
    const cfg = this.settings;
    const rc = new SprayRun(ctx, cfg, params, this.connect, this.kubeApi, this.clock, this.deps.lbOwnerIsStale);
    try {
      return await runSprayHook(rc, eff);
    } catch (e) {
      throw rc.sanitize(e);
    } finally {
      rc.close();
    }
  }
}

export function createKubesprayDriver(deps: KubesprayDriverDeps = {}): KubesprayMgmtDriver {
  return new KubesprayMgmtDriver(deps);
}
