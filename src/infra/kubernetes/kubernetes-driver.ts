/**
 * The Kubernetes infra driver: instantiates, terminates, scales, heals and observes CNFs made of
 * Pods, ReplicaSets, Deployments, DaemonSets and StatefulSets (one workload per VDU), on a VIM of
 * type `ETSINFV.KUBERNETES.V_1`.
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
import { vnfmError } from '../../errors.ts';
import type { VnfcResourceInfo } from '../../model/vnf-instance.ts';
import { vnfcCountAtLevel } from '../../packages/vnfd-scaling.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { VduCpModel, VduModel } from '../../packages/vnfd-model.ts';
import { type DeploymentArgs, expectsNothing, type HealPlan, type InfraContext, type InfraDriver, type ObservedCp, type ObservedExtCp, type ObservedResources, type ObservedStorage, type ObservedVnfc, type ScalePlan } from '../infra-driver.ts';
import { describe, KubeClient, type KubeClientOptions, type KubeObject, type ObjectRef } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';
import {
  buildPlan,
  CREATED_FOR_LABEL,
  checkDeployedVdus,
  type CnfPlan,
  type CnfRecord,
  INSTANCE_LABEL,
  instanceSelector,
  isNamespaced,
  loadManifests,
  type PlannedObject,
  type ResourceRecord,
  refKey,
  resolveDefFiles,
  resolveNamespace,
  SCALABLE_KINDS,
  WORKLOAD_KINDS,
  type WorkloadKind,
} from './manifests.ts';
import { createdAt, isActive, isPodReady, isTerminating, ownedBy, stableKeyOf, statefulSetOrdinal, type VduWorkload, workloadOfPod } from './pods.ts';
import { type VduExpectation, waitForGone, waitForNoPods, waitForPodIncarnationGone, waitForVdus, watchUntil } from './readiness.ts';

/** Options of {@link createKubernetesDriver}. */
export interface KubernetesDriverOptions {
  /** Retry / timeout settings of the API client. */
  client?: KubeClientOptions;
  /** Builds the API client of a VIM (tests may wrap it). @default {@link KubeClient.fromVim} */
  clientFactory?: (vim: VimConnection, options: KubeClientOptions) => KubeClient;
}

/** What heal does with one target. */
type HealAction = 'delete' | 'accept' | 'wait' | 'recreate';

/** Persisted progress of one heal target. */
interface HealTargetState {
  vduId: string;
  kind: WorkloadKind;
  /** The pod name the request named. */
  requested: string;
  /** The pod actually healed (differs from `requested` after drift). */
  podName?: string;
  podUid?: string;
  action: HealAction;
  /** The pod's node is not Ready: delete with grace 0 (its kubelet cannot confirm a graceful stop). */
  force?: boolean;
  deleted?: boolean;
  recreated?: boolean;
}

/** Persisted progress of a VNFC heal. */
interface HealState {
  targets: HealTargetState[];
  /** Pods wanted per affected VDU (scalable kinds: the live `spec.replicas`). */
  expected: Record<string, number>;
}

/** Persisted progress of a whole-CNF heal. */
interface EntireHealState {
  phase: 'delete' | 'create' | 'wait';
  oldPodUids: string[];
  counts: Record<string, number>;
}

/** The driver's part of `ctx.state`. */
interface DriverState {
  /** The CNF as this operation deployed it (instantiate, whole-CNF heal). */
  cnf?: CnfRecord;
  /** Objects created or adopted by this operation (refKey). */
  created?: string[];
  heal?: HealState;
  entire?: EntireHealState;
  /** Instantiate: the namespace was checked (and created when missing). */
  namespaceReady?: boolean;
  /** Terminate / rollback: the namespace the VNFM created was deleted, or deliberately kept. */
  namespaceReleased?: boolean;
}

const STATE_KEY = 'kubernetes';

function driverState(ctx: InfraContext): DriverState {
  const cur = ctx.state[STATE_KEY];
  if (cur !== null && typeof cur === 'object' && !Array.isArray(cur)) return cur as DriverState;
  const fresh: DriverState = {};
  ctx.state[STATE_KEY] = fresh;
  return fresh;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function isResourceRecord(v: unknown): v is ResourceRecord {
  return isObj(v) && typeof v.apiVersion === 'string' && typeof v.kind === 'string' && typeof v.name === 'string';
}

/** The metadata kept in instantiatedVnfInfo.metadata (Tacker's keys where they exist). */
function cnfMetadata(cnf: CnfRecord): Record<string, unknown> {
  return {
    namespace: cnf.namespace,
    tenant: cnf.namespace,
    'lcm-kubernetes-def-files': cnf.defFiles,
    kubernetesResources: cnf.resources,
    ...(cnf.namespaceCreated ? { namespaceCreatedByVnfm: true } : {}),
  };
}

/** A record rebuilt from the package, keeping what the old record knew of its namespace. */
function withNamespaceOf(record: CnfRecord, old: CnfRecord): CnfRecord {
  return old.namespaceCreated ? { ...record, namespaceCreated: true } : record;
}

/**
 * What may live in a namespace without being anybody's workload: what Kubernetes creates in every
 * namespace by itself (the `default` ServiceAccount, the `kube-root-ca.crt` ConfigMap, service
 * account token Secrets).
 */
function isNamespaceFurniture(o: KubeObject): boolean {
  const name = o.metadata.name;
  if (o.kind === 'ConfigMap') return name === 'kube-root-ca.crt';
  if (o.kind === 'ServiceAccount') return name === 'default';
  if (o.kind === 'Secret') return (o as { type?: unknown }).type === 'kubernetes.io/service-account-token';
  return false;
}

/** Kinds checked before a namespace the VNFM created is deleted (anything else in it keeps it). */
const NAMESPACE_CONTENT_KINDS: readonly { apiVersion: string; kind: string }[] = [
  { apiVersion: 'v1', kind: 'Pod' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'apps/v1', kind: 'ReplicaSet' },
  { apiVersion: 'batch/v1', kind: 'Job' },
  { apiVersion: 'batch/v1', kind: 'CronJob' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim' },
];

function vduWorkloads(cnf: CnfRecord): VduWorkload[] {
  const out: VduWorkload[] = [];
  for (const r of cnf.resources) {
    if (r.vduId === undefined || !(WORKLOAD_KINDS as readonly string[]).includes(r.kind)) continue;
    out.push({
      vduId: r.vduId,
      kind: r.kind as WorkloadKind,
      name: r.name,
      namespace: r.namespace ?? cnf.namespace,
      apiVersion: r.apiVersion,
      ...(r.claimTemplates === undefined ? {} : { claimTemplates: r.claimTemplates }),
    });
  }
  return out;
}

function workloadRef(w: VduWorkload): ObjectRef {
  return { apiVersion: w.apiVersion, kind: w.kind, name: w.name, namespace: w.namespace };
}

function podRef(namespace: string, name: string): ObjectRef {
  return { apiVersion: 'v1', kind: 'Pod', name, namespace };
}

/** The ordinal of a StatefulSet claim named `<template>-<sts>-<ordinal>`, or undefined. */
function claimOrdinal(pvcName: string, template: string, sts: string): number | undefined {
  return pvcName.startsWith(`${template}-`) ? statefulSetOrdinal(pvcName.slice(template.length + 1), sts) : undefined;
}

/** Whether the request names its manifests (then a subset of the VDUs may be deployed). */
function hasDefFiles(addl: Record<string, unknown>): boolean {
  return addl['lcm-kubernetes-def-files'] !== undefined && addl['lcm-kubernetes-def-files'] !== null;
}

function optGrace(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

/** The Kubernetes infra driver (see the module comment for its behaviour). */
export class KubernetesDriver implements InfraDriver {
  readonly vimTypes = ['ETSINFV.KUBERNETES.V_1'] as const;
  private readonly clientOptions: KubeClientOptions;
  private readonly clientFactory: (vim: VimConnection, options: KubeClientOptions) => KubeClient;

  constructor(options: KubernetesDriverOptions = {}) {
    this.clientOptions = options.client ?? {};
    this.clientFactory = options.clientFactory ?? ((vim, o) => KubeClient.fromVim(vim, o));
  }

  /**
   * API clients are cached per VIM connection (endpoint, token, CA): client-node caches API
   * discovery per client, so a fresh client per call would repeat discovery round trips.
   */
  private readonly clients = new Map<string, KubeClient>();

  /** The cached client of the VIM, as a view whose calls and waits stop on the op's signal. */
  private client(ctx: InfraContext): KubeClient {
    return this.vimClient(ctx).withSignal(ctx.signal);
  }

  private vimClient(ctx: InfraContext): KubeClient {
    const key = JSON.stringify([ctx.vim.interfaceInfo.endpoint, ctx.vim.accessInfo.bearer_token, ctx.vim.interfaceInfo.ssl_ca_cert ?? null, ctx.vim.interfaceInfo.skipCertificateVerification ?? null]);
    const hit = this.clients.get(key);
    if (hit) return hit;
    const log = ctx.log;
    const c = this.clientFactory(ctx.vim, {
      ...this.clientOptions,
      onRetry: (ev) => {
        log.warn({ endpoint: ctx.vim.interfaceInfo.endpoint, op: ev.op, attempt: ev.attempt, delayMs: ev.delayMs, reason: ev.reason }, 'kubernetes API call failed; retrying');
        this.clientOptions.onRetry?.(ev);
      },
    });
    if (this.clients.size > 32) this.clients.clear();
    this.clients.set(key, c);
    return c;
  }

  private waitMs(ctx: InfraContext): number {
    return ctx.vimSettings.kubernetesWaitMs;
  }

  // ---------------------------------------------------------------------------------------------
  // Plans and records

  private async planFor(ctx: InfraContext, defFiles: readonly string[], namespace: string, counts: Readonly<Record<string, number>>): Promise<CnfPlan> {
    const files = await ctx.files();
    const objects = loadManifests(files, defFiles);
    return buildPlan({ objects, defFiles, namespace, instanceId: ctx.instance.id, flavour: ctx.flavour, vduCounts: counts });
  }

  /** The plan of an instantiate request (deterministic: also used by rollback). */
  private async planFromRequest(ctx: InfraContext, req: Record<string, unknown>): Promise<CnfPlan> {
    const addl = isObj(req.additionalParams) ? req.additionalParams : {};
    const defFiles = resolveDefFiles(ctx.vnfd, addl);
    const files = await ctx.files();
    const objects = loadManifests(files, defFiles);
    const namespace = resolveNamespace(objects, addl.namespace);
    return buildPlan({ objects, defFiles, namespace, instanceId: ctx.instance.id, flavour: ctx.flavour, vduCounts: ctx.targetVduCounts, subset: hasDefFiles(addl) });
  }

  /** The CNF as recorded in the instance (instantiatedVnfInfo.metadata), rebuilt from the package when only the files are known. */
  private async recordFromInstance(ctx: InfraContext): Promise<CnfRecord | undefined> {
    const md = ctx.instance.instantiatedVnfInfo?.metadata;
    if (!isObj(md)) return undefined;
    const namespace = typeof md.namespace === 'string' && md.namespace !== '' ? md.namespace : undefined;
    const files = md['lcm-kubernetes-def-files'];
    const defFiles = Array.isArray(files) && files.every((f) => typeof f === 'string') ? (files as string[]) : undefined;
    if (namespace === undefined) return undefined;
    const created = md.namespaceCreatedByVnfm === true ? { namespaceCreated: true } : {};
    const resources = md.kubernetesResources;
    if (Array.isArray(resources) && resources.every(isResourceRecord)) {
      return { namespace, defFiles: defFiles ?? [...ctx.vnfd.kubernetesFiles], resources: resources as ResourceRecord[], ...created };
    }
    const plan = await this.planFor(ctx, defFiles ?? ctx.vnfd.kubernetesFiles, namespace, ctx.targetVduCounts);
    return { ...plan.record, ...created };
  }

  private async currentRecord(ctx: InfraContext): Promise<CnfRecord | undefined> {
    return driverState(ctx).cnf ?? (await this.recordFromInstance(ctx));
  }

  private async requireRecord(ctx: InfraContext, op: string): Promise<CnfRecord> {
    const cnf = await this.currentRecord(ctx);
    if (cnf === undefined) {
      throw vnfmError('VNFM_ERR_VIM_FAILED', `cannot ${op} VNF instance ${ctx.instance.id}: it has no record of its Kubernetes resources (instantiatedVnfInfo.metadata.namespace is missing)`);
    }
    return cnf;
  }

  // ---------------------------------------------------------------------------------------------
  // Building blocks

  /**
   * Creates the planned objects not yet in `created`, adopting existing objects that carry our
   * label (after a crash between create and checkpoint). Checkpoints after each object.
   */
  private async createAll(ctx: InfraContext, client: KubeClient, plan: CnfPlan, s: DriverState): Promise<void> {
    s.created ??= [];
    for (const o of plan.objects) {
      const key = refKey(o.ref);
      if (s.created.includes(key)) continue;
      await this.createOne(ctx, client, o);
      s.created.push(key);
      await ctx.checkpoint();
    }
  }

  private async createOne(ctx: InfraContext, client: KubeClient, o: PlannedObject): Promise<void> {
    for (let round = 0; ; round++) {
      try {
        await client.create(o.body);
        return;
      } catch (e) {
        if (!KubeApiError.isStatus(e, 409) || round >= 2) throw e;
      }
      const live = await client.get(o.ref);
      if (live === undefined) continue; // deleted in between: create again
      if (!ownedBy(live, ctx.instance.id)) {
        throw vnfmError(
          'VNFM_ERR_VIM_FAILED',
          `${describe(o.ref)} already exists and does not belong to VNF instance ${ctx.instance.id} (no ${INSTANCE_LABEL} label); remove it or deploy into another namespace`,
        );
      }
      if (isTerminating(live)) {
        // Ours, but on its way out (a previous incarnation being deleted): wait, then create.
        await this.waitObjectGone(ctx, client, o.ref, live.metadata.uid ?? '');
        continue;
      }
      const want = o.body.spec?.replicas;
      if (o.vduId !== undefined && typeof want === 'number' && live.spec?.replicas !== want) {
        await client.mergePatch(o.ref, { spec: { replicas: want } });
      }
      ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, object: describe(o.ref) }, 'kubernetes object already exists with our label; adopted');
      return;
    }
  }

  /**
   * Makes sure the CNF's namespace exists before anything is created in it. A namespace that does
   * not exist (and that no manifest of the CNF creates) is created, labelled
   * `vnfm.io/created-for=<instance id>`, unless `vim.kubernetesCreateNamespace` is off. The label is
   * the proof of ownership: a resumed operation that finds the namespace with our label knows it
   * created it (crash between the create and the checkpoint); one without it is somebody else's
   * and is never deleted by the VNFM. Checkpointed once done.
   */
  private async ensureNamespace(ctx: InfraContext, client: KubeClient, plan: CnfPlan, s: DriverState): Promise<void> {
    if (s.namespaceReady) return;
    const ns = plan.record.namespace;
    const ref: ObjectRef = { apiVersion: 'v1', kind: 'Namespace', name: ns };
    const log = { vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, namespace: ns };
    const inManifests = plan.objects.some((o) => o.ref.kind === 'Namespace' && o.ref.name === ns);
    for (let round = 0; !inManifests; round++) {
      let live: KubeObject | undefined;
      try {
        live = await client.get(ref);
      } catch (e) {
        // Reading Namespaces may be forbidden to the VIM's account: deploy, and let the API say.
        if (!KubeApiError.isStatus(e, 403)) throw e;
        ctx.log.warn(log, 'namespace cannot be read (forbidden); assuming it exists');
        break;
      }
      if (live !== undefined && isTerminating(live)) {
        // A namespace being deleted accepts no new content: wait until it is gone, then create it.
        ctx.log.info(log, 'namespace is being deleted; waiting until it is gone');
        await this.waitNamespaceGone(ctx, client, ns, live.metadata.uid ?? '');
        continue;
      }
      if (live !== undefined) {
        if (live.metadata.labels?.[CREATED_FOR_LABEL] === ctx.instance.id) {
          (s.cnf as CnfRecord).namespaceCreated = true;
          plan.record.namespaceCreated = true;
        }
        break;
      }
      if (!ctx.vimSettings.kubernetesCreateNamespace) {
        throw vnfmError('VNFM_ERR_VIM_FAILED', `namespace ${ns} does not exist (and vim.kubernetesCreateNamespace is off, so the VNFM does not create it); create it or deploy into another namespace`);
      }
      if (round >= 3) throw vnfmError('VNFM_ERR_VIM_FAILED', `namespace ${ns} could not be created: it keeps appearing and disappearing`);
      try {
        await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { [CREATED_FOR_LABEL]: ctx.instance.id } } });
        ctx.log.info(log, 'namespace did not exist; created for the VNF instance');
      } catch (e) {
        if (!KubeApiError.isStatus(e, 409)) throw e;
      }
      // Read it back: ours (label) or created by somebody else meanwhile.
    }
    s.namespaceReady = true;
    await ctx.checkpoint();
  }

  /**
   * Terminate / rollback, after the CNF's objects are gone: deletes the namespace when the VNFM
   * created it for this instance (its `vnfm.io/created-for` label names the instance) and nothing
   * else lives in it; otherwise leaves it, saying why. Waits until it is gone. Idempotent (a
   * namespace already gone is fine) and checkpointed once done.
   */
  private async releaseNamespace(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, what: string): Promise<void> {
    const s = driverState(ctx);
    if (s.namespaceReleased) return;
    const ns = cnf.namespace;
    const log = { vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, namespace: ns };
    let live: KubeObject | undefined;
    try {
      live = await client.get({ apiVersion: 'v1', kind: 'Namespace', name: ns });
    } catch (e) {
      if (!KubeApiError.isStatus(e, 403)) throw e;
      if (cnf.namespaceCreated) ctx.log.warn(log, `${what}: namespace created for the instance is kept: it cannot be read (forbidden)`);
    }
    if (live !== undefined && live.metadata.labels?.[CREATED_FOR_LABEL] === ctx.instance.id) {
      const others = await this.otherContent(ctx, client, ns);
      if (others.length > 0) {
        ctx.log.info({ ...log, objects: others.slice(0, 10), count: others.length }, `${what}: namespace created for the instance is kept: other objects live in it`);
      } else {
        if (!isTerminating(live)) {
          await client.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns }, live.metadata.uid ? { uid: live.metadata.uid } : {}).catch((e: unknown) => {
            if (!KubeApiError.isStatus(e, 409)) throw e;
          });
          ctx.log.info(log, `${what}: namespace created for the instance deleted`);
        }
        await this.waitNamespaceGone(ctx, client, ns, live.metadata.uid ?? '');
      }
    } else if (live !== undefined && cnf.namespaceCreated) {
      ctx.log.warn(log, `${what}: namespace is kept: it no longer carries the ${CREATED_FOR_LABEL} label of the instance`);
    }
    s.namespaceReleased = true;
    await ctx.checkpoint();
  }

  /**
   * What lives in a namespace besides the instance's own objects on their way out and what
   * Kubernetes puts in every namespace: `Kind/name` of each. PersistentVolumeClaims of the
   * instance that terminate kept (`deletePvcs: false`) count: deleting the namespace would delete
   * them.
   */
  private async otherContent(ctx: InfraContext, client: KubeClient, ns: string): Promise<string[]> {
    const out: string[] = [];
    for (const { apiVersion, kind } of NAMESPACE_CONTENT_KINDS) {
      let items: KubeObject[];
      try {
        items = (await client.list(apiVersion, kind, ns)).items;
      } catch (e) {
        // A kind the cluster does not serve (404) holds nothing; one we may not list (403) might.
        if (KubeApiError.isStatus(e, 404)) continue;
        if (KubeApiError.isStatus(e, 403)) {
          out.push(`${kind}/* (cannot be listed)`);
          continue;
        }
        throw e;
      }
      for (const o of items) {
        if (isNamespaceFurniture({ ...o, kind })) continue;
        if (ownedBy(o, ctx.instance.id) && (kind !== 'PersistentVolumeClaim' || isTerminating(o))) continue;
        out.push(`${kind}/${o.metadata.name ?? ''}`);
      }
    }
    return out;
  }

  private waitNamespaceGone(ctx: InfraContext, client: KubeClient, ns: string, uid: string): Promise<void> {
    return watchUntil(
      client,
      [{ apiVersion: 'v1', kind: 'Namespace', namespace: '' }],
      ([objs = []]) => {
        const o = objs.find((x) => x.metadata.name === ns);
        return o === undefined || (uid !== '' && o.metadata.uid !== uid) ? { done: true } : { done: false, progress: `namespace ${ns} is still being deleted` };
      },
      { timeoutMs: this.waitMs(ctx), what: `VNF ${ctx.instance.id}: deletion of namespace ${ns}`, log: ctx.log },
    );
  }

  private waitObjectGone(ctx: InfraContext, client: KubeClient, ref: ObjectRef, uid: string): Promise<void> {
    return watchUntil(
      client,
      [{ apiVersion: ref.apiVersion, kind: ref.kind, namespace: ref.namespace ?? '', labelSelector: instanceSelector(ctx.instance.id) }],
      ([objs = []]) => {
        const o = objs.find((x) => x.metadata.name === ref.name);
        return o === undefined || o.metadata.uid !== uid ? { done: true } : { done: false, progress: `${describe(ref)} is still being deleted` };
      },
      { timeoutMs: this.waitMs(ctx), what: `VNF ${ctx.instance.id}: deletion of ${describe(ref)}`, log: ctx.log },
    );
  }

  /** Expectations of every VDU of a plan/record, with counts. */
  private expectations(workloads: readonly VduWorkload[], counts: Readonly<Record<string, number>>, fallback: (w: VduWorkload) => number | undefined): VduExpectation[] {
    return workloads.map((w) => {
      if (w.kind === 'Pod') return { workload: w, expected: 1 };
      if (w.kind === 'DaemonSet') return { workload: w };
      const n = counts[w.vduId] ?? fallback(w) ?? 1;
      return { workload: w, expected: n };
    });
  }

  /**
   * Deletes the CNF's objects: every object carrying our instance label, of every kind the CNF
   * is made of (so leftovers of an interrupted operation go too, and an object of the same name
   * that is not ours is never touched), in reverse creation order; then its pods with
   * `gracePeriodSeconds`; then (unless `keepStorage`) its PVCs; and waits until no pod (and no
   * deleted PVC) is left.
   */
  private async deleteCnf(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, opts: { gracePeriodSeconds: number | undefined; keepStorage: boolean; what: string }): Promise<void> {
    const ns = cnf.namespace;
    const selector = instanceSelector(ctx.instance.id);
    const keepKinds = new Set(opts.keepStorage ? ['PersistentVolumeClaim', 'PersistentVolume', 'Namespace'] : []);
    // Kinds in reverse creation order (the record is in creation order); Namespaces last, since
    // deleting one takes everything in it along.
    const kinds: { apiVersion: string; kind: string }[] = [];
    for (const r of [...cnf.resources].reverse()) {
      if (keepKinds.has(r.kind) || kinds.some((k) => k.kind === r.kind && k.apiVersion === r.apiVersion)) continue;
      kinds.push({ apiVersion: r.apiVersion, kind: r.kind });
    }
    kinds.sort((a, b) => Number(a.kind === 'Namespace') - Number(b.kind === 'Namespace'));
    for (const { apiVersion, kind } of kinds) {
      const listed = await client.list(apiVersion, kind, isNamespaced(kind) ? ns : undefined, { labelSelector: selector });
      for (const o of listed.items) {
        if (o.metadata.name === undefined || isTerminating(o)) continue;
        const ref: ObjectRef = { apiVersion, kind, name: o.metadata.name, ...(isNamespaced(kind) ? { namespace: o.metadata.namespace ?? ns } : {}) };
        await client.delete(ref, {
          propagationPolicy: 'Background',
          ...(o.metadata.uid ? { uid: o.metadata.uid } : {}),
          ...(kind === 'Pod' && opts.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: opts.gracePeriodSeconds } : {}),
        }).catch((e: unknown) => {
          if (!KubeApiError.isStatus(e, 409)) throw e;
        });
      }
    }
    // The controllers are gone: delete their pods now, with our grace period (the garbage
    // collector would use each pod's own).
    const pods = await client.list('v1', 'Pod', ns, { labelSelector: selector });
    const down = opts.gracePeriodSeconds === 0 ? new Set<string>() : await this.notReadyNodes(client, pods.items);
    for (const p of pods.items) {
      if (p.metadata.name === undefined) continue;
      const grace = typeof p.spec?.nodeName === 'string' && down.has(p.spec.nodeName) ? 0 : opts.gracePeriodSeconds;
      if (isTerminating(p) && grace !== 0) continue;
      await client.delete(podRef(ns, p.metadata.name), { ...(grace === undefined ? {} : { gracePeriodSeconds: grace }), ...(p.metadata.uid ? { uid: p.metadata.uid } : {}) }).catch((e: unknown) => {
        if (!KubeApiError.isStatus(e, 409)) throw e;
      });
    }
    const graceMs = (opts.gracePeriodSeconds ?? 30) * 1000;
    const wait = { timeoutMs: this.waitMs(ctx) + graceMs, log: ctx.log };
    await waitForNoPods(client, { instanceId: ctx.instance.id, namespace: ns }, { ...wait, what: `${opts.what} of VNF ${ctx.instance.id}: pods gone` });
    if (!opts.keepStorage) {
      const claims = await this.claimsOf(ctx, client, cnf);
      for (const c of claims) await client.delete({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: c.metadata.name as string, namespace: ns });
      await waitForGone(
        client,
        { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, names: claims.map((c) => c.metadata.name as string) },
        { ...wait, what: `${opts.what} of VNF ${ctx.instance.id}: PersistentVolumeClaims gone` },
      );
    }
  }

  /** PVCs of the CNF: labelled with our instance, or named after one of its StatefulSets' claim templates. */
  private async claimsOf(ctx: InfraContext, client: KubeClient, cnf: CnfRecord): Promise<KubeObject[]> {
    const all = await client.list('v1', 'PersistentVolumeClaim', cnf.namespace);
    const sets = cnf.resources.filter((r) => r.kind === 'StatefulSet');
    return all.items.filter((pvc) => {
      if (ownedBy(pvc, ctx.instance.id)) return true;
      const name = pvc.metadata.name ?? '';
      return sets.some((r) => (r.claimTemplates ?? []).some((tpl) => claimOrdinal(name, tpl, r.name) !== undefined));
    });
  }

  // ---------------------------------------------------------------------------------------------
  // InfraDriver

  async instantiate(ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
    const s = driverState(ctx);
    const client = this.client(ctx);
    let plan: CnfPlan;
    if (s.cnf === undefined) {
      plan = await this.planFromRequest(ctx, req);
      s.cnf = structuredClone(plan.record);
      s.created = [];
      await ctx.checkpoint();
    } else {
      plan = await this.planFor(ctx, s.cnf.defFiles, s.cnf.namespace, ctx.targetVduCounts);
    }
    if (s.cnf?.namespaceCreated) plan.record.namespaceCreated = true;
    await this.ensureNamespace(ctx, client, plan, s);
    ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, namespace: plan.record.namespace, objects: plan.objects.length }, 'creating kubernetes objects');
    await this.createAll(ctx, client, plan, s);
    const workloads = vduWorkloads(plan.record);
    const byVdu = new Map(plan.objects.filter((o) => o.vduId !== undefined).map((o) => [o.vduId as string, o]));
    await waitForVdus(
      client,
      {
        instanceId: ctx.instance.id,
        namespace: plan.record.namespace,
        workloads,
        expectations: this.expectations(workloads, ctx.targetVduCounts, (w) => byVdu.get(w.vduId)?.body.spec?.replicas),
      },
      { timeoutMs: this.waitMs(ctx), what: `instantiate of VNF ${ctx.instance.id}: pods Ready`, log: ctx.log },
    );
  }

  async terminate(ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
    const cnf = await this.currentRecord(ctx);
    if (cnf === undefined) {
      ctx.log.warn({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id }, 'no record of kubernetes resources; nothing to delete');
      return;
    }
    const graceful = req.terminationType === 'GRACEFUL';
    const grace = graceful ? optGrace(req.gracefulTerminationTimeout) : 0;
    const addl = isObj(req.additionalParams) ? req.additionalParams : {};
    const deletePvcs = addl.deletePvcs !== false;
    const client = this.client(ctx);
    const s = driverState(ctx);
    if (!s.namespaceReleased) await this.deleteCnf(ctx, client, cnf, { gracePeriodSeconds: grace, keepStorage: !deletePvcs, what: 'terminate' });
    await this.releaseNamespace(ctx, client, cnf, 'terminate');
  }

  async scale(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    await this.setReplicas(ctx, plan.aspectId, ctx.targetVduCounts, 'scale');
  }

  async rollbackScaleOut(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    const levels = { ...ctx.targetScaleLevels, [plan.aspectId]: plan.fromLevel };
    const counts = vnfcCountAtLevel(ctx.flavour, undefined, levels);
    await this.setReplicas(ctx, plan.aspectId, counts, 'scale-out rollback');
  }

  private async setReplicas(ctx: InfraContext, aspectId: string, counts: Readonly<Record<string, number>>, what: string): Promise<void> {
    const aspect = Object.hasOwn(ctx.flavour.scalingAspects, aspectId) ? ctx.flavour.scalingAspects[aspectId] : undefined;
    if (aspect === undefined) throw vnfmError('VNFM_ERR_INST_INVALID', `aspect '${aspectId}' is not a scaling aspect of flavour ${ctx.flavour.flavourId}`);
    const cnf = await this.requireRecord(ctx, what);
    const workloads = vduWorkloads(cnf);
    const client = this.client(ctx);
    const expectations: VduExpectation[] = [];
    const vduIds = Object.keys(aspect.vduDeltas);
    const deployed = vduIds.filter((v) => workloads.some((x) => x.vduId === v));
    if (deployed.length === 0) {
      throw vnfmError('VNFM_ERR_VIM_FAILED', `aspect ${aspectId} scales VDU ${vduIds.join(', ')}, none of which is deployed (not in lcm-kubernetes-def-files ${cnf.defFiles.join(', ')})`);
    }
    for (const vduId of vduIds) {
      const w = workloads.find((x) => x.vduId === vduId);
      if (w === undefined) {
        // Subset instantiate: this VDU's workload was not deployed, so it has no pods to scale.
        ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, vduId, aspectId }, `${what}: VDU is not deployed; skipped`);
        continue;
      }
      const n = counts[vduId];
      if (n === undefined) continue;
      if (!SCALABLE_KINDS.includes(w.kind)) {
        throw vnfmError('VNFM_ERR_VIM_FAILED', `VDU ${vduId} is a ${w.kind} (${w.name}); only Deployments, ReplicaSets and StatefulSets can be scaled`);
      }
      try {
        await client.mergePatch(workloadRef(w), { spec: { replicas: n } });
      } catch (e) {
        if (KubeApiError.isStatus(e, 404)) throw vnfmError('VNFM_ERR_VIM_FAILED', `${describe(workloadRef(w))} (VDU ${vduId}) does not exist any more; heal the whole VNF first`, { cause: e });
        throw e;
      }
      expectations.push({ workload: w, expected: n });
    }
    await waitForVdus(
      client,
      { instanceId: ctx.instance.id, namespace: cnf.namespace, workloads, expectations },
      { timeoutMs: this.waitMs(ctx), what: `${what} of VNF ${ctx.instance.id}: pods Ready`, log: ctx.log },
    );
  }

  async heal(ctx: InfraContext, plan: HealPlan): Promise<void> {
    if (plan.entire) return this.healEntire(ctx, plan);
    if (plan.targets.length === 0) return;
    return this.healVnfcs(ctx, plan);
  }

  private async healVnfcs(ctx: InfraContext, plan: HealPlan): Promise<void> {
    const s = driverState(ctx);
    const cnf = await this.requireRecord(ctx, 'heal');
    const ns = cnf.namespace;
    const workloads = vduWorkloads(cnf);
    const client = this.client(ctx);
    const grace = optGrace(plan.additionalParams.gracePeriodSeconds);
    const log = { vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id };

    if (s.heal === undefined) {
      s.heal = await this.resolveHealTargets(ctx, client, cnf, workloads, plan.targets.map((t) => t.vnfcResourceInfo));
      await ctx.checkpoint();
    }
    const h = s.heal;

    // 1. Delete the target pods (exact incarnation); controllers start replacing them at once.
    for (const t of h.targets) {
      if (t.action !== 'delete' || t.deleted || t.podName === undefined) continue;
      try {
        const g = t.force ? 0 : grace;
        const r = await client.delete(podRef(ns, t.podName), { ...(t.podUid ? { uid: t.podUid } : {}), ...(g === undefined ? {} : { gracePeriodSeconds: g }) });
        ctx.log.info({ ...log, pod: t.podName, vduId: t.vduId, result: r, force: t.force === true }, 'heal: pod deleted');
      } catch (e) {
        // 409: the uid precondition failed, so that incarnation is gone already.
        if (!KubeApiError.isStatus(e, 409)) throw e;
      }
      t.deleted = true;
      await ctx.checkpoint();
    }

    // 2. Singleton Pods: wait the old one out, then create it again with the same name.
    const singles = h.targets.filter((t) => t.kind === 'Pod' && (t.action === 'delete' || t.action === 'recreate') && !t.recreated);
    if (singles.length > 0) {
      const planned = await this.planFor(ctx, cnf.defFiles, ns, ctx.targetVduCounts);
      for (const t of singles) {
        const o = planned.objects.find((x) => x.vduId === t.vduId);
        if (o === undefined) throw vnfmError('VNFM_ERR_VIM_FAILED', `VDU ${t.vduId}: its Pod manifest is not in ${cnf.defFiles.join(', ')}`);
        if (t.podUid !== undefined) {
          await waitForPodIncarnationGone(
            client,
            { instanceId: ctx.instance.id, namespace: ns, name: o.ref.name, uid: t.podUid },
            { timeoutMs: this.waitMs(ctx) + (grace ?? 30) * 1000, what: `heal of VNF ${ctx.instance.id}: old pod ${o.ref.name} gone (VDU ${t.vduId})`, log: ctx.log },
          );
        }
        await this.recreatePod(ctx, client, o, t.podUid);
        t.recreated = true;
        await ctx.checkpoint();
        ctx.log.info({ ...log, pod: o.ref.name, vduId: t.vduId }, 'heal: singleton pod re-created');
      }
    }

    // 3. Wait: replaced pods gone from the API, every affected VDU back to its Ready count.
    const affected = [...new Set(h.targets.map((t) => t.vduId))];
    const expectations: VduExpectation[] = affected.map((vduId) => {
      const w = workloads.find((x) => x.vduId === vduId) as VduWorkload;
      const n = h.expected[vduId];
      return n === undefined || w.kind === 'DaemonSet' ? { workload: w } : { workload: w, expected: n };
    });
    const gone = new Set(h.targets.filter((t) => t.action === 'delete' && t.podUid !== undefined).map((t) => t.podUid as string));
    await waitForVdus(
      client,
      { instanceId: ctx.instance.id, namespace: ns, workloads, expectations, goneUids: gone },
      { timeoutMs: this.waitMs(ctx) + (grace ?? 0) * 1000, what: `heal of VNF ${ctx.instance.id}: replacement pods Ready`, log: ctx.log },
    );
  }

  /** Decides, once per heal, which pod each target is and what to do with it (see the module comment on drift). */
  private async resolveHealTargets(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, workloads: readonly VduWorkload[], targets: readonly VnfcResourceInfo[]): Promise<HealState> {
    const ns = cnf.namespace;
    const pods = (await client.list('v1', 'Pod', ns, { labelSelector: instanceSelector(ctx.instance.id) })).items;
    // No pod at all: the CNF may be gone (namespace deleted, or a cluster emptied), which is
    // VNFM_ERR_INFRA_STACK_MISSING like for observe, not a failure of one workload.
    if (pods.length === 0) await this.requirePresent(ctx, client, cnf, workloads);
    const known = new Set((ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => r.computeResource.resourceId));
    const claimed = new Set<string>();
    const out: HealTargetState[] = [];
    const vduOf = (p: KubeObject): string | undefined => workloadOfPod(p, workloads)?.vduId;
    for (const r of targets) {
      const w = workloads.find((x) => x.vduId === r.vduId);
      if (w === undefined) throw vnfmError('VNFM_ERR_VIM_FAILED', `VNFC ${r.id}: VDU ${r.vduId} has no workload in the CNF`);
      const requested = r.computeResource.resourceId;
      const knownUid = isObj(r.metadata) && typeof r.metadata.uid === 'string' ? r.metadata.uid : undefined;
      const byName = pods.find((p) => p.metadata.name === requested && vduOf(p) === w.vduId);
      const base = { vduId: w.vduId, kind: w.kind, requested };
      let chosen: KubeObject | undefined;
      if (byName !== undefined && (knownUid === undefined || byName.metadata.uid === knownUid)) {
        chosen = byName;
      } else {
        // The pod the VNFM knew is gone: Kubernetes replaced it (same name for Pods/StatefulSets,
        // a new name otherwise). Heal the replacement only if it is not healthy.
        const candidates = pods
          .filter((p) => vduOf(p) === w.vduId && isActive(p) && !claimed.has(p.metadata.name ?? '') && !known.has(p.metadata.name ?? ''))
          .sort((a, b) => createdAt(a) - createdAt(b) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
        const replacement = byName ?? candidates[0];
        if (replacement !== undefined && isPodReady(replacement)) {
          claimed.add(replacement.metadata.name ?? '');
          out.push({ ...base, podName: replacement.metadata.name as string, ...(replacement.metadata.uid ? { podUid: replacement.metadata.uid } : {}), action: 'accept' });
          ctx.log.info({ vnfInstanceId: ctx.instance.id, requested, replacement: replacement.metadata.name }, 'heal: target pod was already replaced by a Ready pod; accepted');
          continue;
        }
        chosen = replacement;
      }
      if (chosen === undefined) {
        out.push({ ...base, action: w.kind === 'Pod' ? 'recreate' : 'wait' });
        ctx.log.info({ vnfInstanceId: ctx.instance.id, requested, vduId: w.vduId }, 'heal: target pod does not exist; waiting for its controller / re-creating it');
        continue;
      }
      claimed.add(chosen.metadata.name ?? '');
      out.push({
        ...base,
        podName: chosen.metadata.name as string,
        ...(chosen.metadata.uid ? { podUid: chosen.metadata.uid } : {}),
        action: 'delete',
        // A pod already being deleted needs no delete call, only its replacement.
        ...(isTerminating(chosen) ? { deleted: true } : {}),
      });
    }
    // Pods on a node that is not Ready would stay Terminating forever: force-delete them.
    const down = await this.notReadyNodes(client, pods.filter((p) => out.some((t) => t.action === 'delete' && t.podUid === p.metadata.uid)));
    for (const t of out) {
      const node = pods.find((p) => p.metadata.uid === t.podUid)?.spec?.nodeName;
      if (t.action === 'delete' && typeof node === 'string' && down.has(node)) t.force = true;
    }
    const expected: Record<string, number> = {};
    for (const vduId of new Set(out.map((t) => t.vduId))) {
      const w = workloads.find((x) => x.vduId === vduId) as VduWorkload;
      if (w.kind === 'Pod') {
        expected[vduId] = 1;
        continue;
      }
      const live = await client.get(workloadRef(w));
      if (live === undefined || isTerminating(live)) {
        throw vnfmError('VNFM_ERR_VIM_FAILED', `VDU ${vduId}: ${describe(workloadRef(w))} does not exist any more, so its pods cannot come back; heal the whole VNF to re-create it`);
      }
      if (SCALABLE_KINDS.includes(w.kind)) {
        const n = live.spec?.replicas;
        expected[vduId] = typeof n === 'number' ? n : (ctx.targetVduCounts[vduId] ?? 1);
      }
    }
    return { targets: out, expected };
  }

  /**
   * Names of the nodes (of these pods) that are not Ready. Reading nodes needs cluster-scope
   * permission; without it (403/404) nodes are assumed Ready and pods are deleted gracefully.
   */
  private async notReadyNodes(client: KubeClient, pods: readonly KubeObject[]): Promise<Set<string>> {
    const out = new Set<string>();
    const names = new Set(pods.map((p) => p.spec?.nodeName).filter((n): n is string => typeof n === 'string' && n !== ''));
    for (const name of names) {
      let node: KubeObject | undefined;
      try {
        node = await client.get({ apiVersion: 'v1', kind: 'Node', name });
      } catch (e) {
        if (e instanceof KubeApiError && e.code === 'VNFM_ERR_VIM_FAILED') continue;
        throw e;
      }
      const ready = Array.isArray(node?.status?.conditions) && (node.status.conditions as { type?: string; status?: string }[]).some((c) => c.type === 'Ready' && c.status === 'True');
      if (node !== undefined && !ready) out.add(name);
    }
    return out;
  }

  /** Creates a singleton Pod again; adopts one that already exists with our label and a new uid. */
  private async recreatePod(ctx: InfraContext, client: KubeClient, o: PlannedObject, oldUid: string | undefined): Promise<void> {
    try {
      await client.create(o.body);
      return;
    } catch (e) {
      if (!KubeApiError.isStatus(e, 409)) throw e;
    }
    const live = await client.get(o.ref);
    if (live !== undefined && ownedBy(live, ctx.instance.id) && live.metadata.uid !== oldUid && !isTerminating(live)) return;
    throw vnfmError('VNFM_ERR_VIM_FAILED', `heal: cannot re-create ${describe(o.ref)}: a pod with that name exists and is not the replacement`);
  }

  private async healEntire(ctx: InfraContext, plan: HealPlan): Promise<void> {
    const s = driverState(ctx);
    const client = this.client(ctx);
    const grace = optGrace(plan.additionalParams.gracePeriodSeconds);
    if (s.entire === undefined) {
      const cnf = await this.requireRecord(ctx, 'heal');
      const pods = await client.list('v1', 'Pod', cnf.namespace, { labelSelector: instanceSelector(ctx.instance.id) });
      const counts: Record<string, number> = {};
      for (const w of vduWorkloads(cnf)) {
        if (!SCALABLE_KINDS.includes(w.kind)) continue;
        const target = ctx.targetVduCounts[w.vduId];
        if (target !== undefined) counts[w.vduId] = target;
        else {
          const live = await client.get(workloadRef(w));
          if (typeof live?.spec?.replicas === 'number') counts[w.vduId] = live.spec.replicas;
        }
      }
      s.cnf = cnf;
      s.entire = { phase: 'delete', oldPodUids: pods.items.map((p) => p.metadata.uid ?? '').filter((u) => u !== ''), counts };
      await ctx.checkpoint();
    }
    const e = s.entire;
    const cnf = s.cnf as CnfRecord;
    if (e.phase === 'delete') {
      ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id }, 'heal: deleting the whole CNF (PersistentVolumeClaims kept)');
      await this.deleteCnf(ctx, client, cnf, { gracePeriodSeconds: grace, keepStorage: true, what: 'heal' });
      e.phase = 'create';
      s.created = [];
      await ctx.checkpoint();
    }
    const planned = await this.planFor(ctx, cnf.defFiles, cnf.namespace, e.counts);
    if (e.phase === 'create') {
      ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id }, 'heal: creating the whole CNF again');
      // Kept PVCs / Namespaces still exist with our label: createAll adopts them.
      await this.createAll(ctx, client, planned, s);
      s.cnf = withNamespaceOf(planned.record, cnf);
      e.phase = 'wait';
      await ctx.checkpoint();
    }
    const workloads = vduWorkloads(planned.record);
    const byVdu = new Map(planned.objects.filter((o) => o.vduId !== undefined).map((o) => [o.vduId as string, o]));
    await waitForVdus(
      client,
      {
        instanceId: ctx.instance.id,
        namespace: cnf.namespace,
        workloads,
        expectations: this.expectations(workloads, e.counts, (w) => byVdu.get(w.vduId)?.body.spec?.replicas),
        goneUids: new Set(e.oldPodUids),
      },
      { timeoutMs: this.waitMs(ctx), what: `heal of VNF ${ctx.instance.id}: re-created pods Ready`, log: ctx.log },
    );
  }

  async rollbackInstantiate(ctx: InfraContext): Promise<void> {
    let cnf = driverState(ctx).cnf;
    if (cnf === undefined) {
      try {
        cnf = (await this.planFromRequest(ctx, ctx.command as unknown as Record<string, unknown>)).record;
      } catch (e) {
        ctx.log.warn({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, err: (e as Error).message }, 'rollback: the instantiate request cannot be planned; nothing was created');
        return;
      }
    }
    const client = this.client(ctx);
    if (!driverState(ctx).namespaceReleased) await this.deleteCnf(ctx, client, cnf, { gracePeriodSeconds: 0, keepStorage: false, what: 'instantiate rollback' });
    await this.releaseNamespace(ctx, client, cnf, 'instantiate rollback');
  }

  /**
   * Throws `VNFM_ERR_INFRA_STACK_MISSING` when the CNF's namespace is gone (or being deleted), or
   * when none of its VDU workloads exists any more. Reading Namespaces may be forbidden to the
   * VIM's account: then only the workloads are checked.
   */
  private async requirePresent(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, workloads: readonly VduWorkload[]): Promise<void> {
    const ns = cnf.namespace;
    const missing = (what: string) =>
      vnfmError(
        'VNFM_ERR_INFRA_STACK_MISSING',
        `${what}: the CNF of VNF instance ${ctx.instance.id} was deleted outside the VNFM. The VNFM cannot see the VNF's resources, so the instance information was left unchanged; mark the operation failed, then heal the entire VNF (additionalParams.all: true) to re-create it, or terminate the instance`,
      );
    let namespace: KubeObject | undefined;
    let readable = true;
    try {
      namespace = await client.get({ apiVersion: 'v1', kind: 'Namespace', name: ns });
    } catch (e) {
      if (!KubeApiError.isStatus(e, 403)) throw e;
      readable = false;
    }
    if (readable && namespace === undefined) throw missing(`namespace ${ns} does not exist`);
    if (namespace !== undefined && (isTerminating(namespace) || namespace.status?.phase === 'Terminating')) throw missing(`namespace ${ns} is being deleted`);
    if (workloads.length === 0) return;
    for (const w of workloads) {
      const o = await client.get(workloadRef(w));
      if (o !== undefined && !isTerminating(o)) return;
    }
    throw missing(`none of the ${workloads.length} workloads of the CNF (${workloads.map((w) => `${w.kind}/${w.name}`).join(', ')}) exists in namespace ${ns}`);
  }

  /**
   * The VDUs the CNF consists of: for an INSTANTIATE, those whose workload is in the request's
   * `lcm-kubernetes-def-files` (Tacker's subset instantiate; none at all is `VNFM_ERR_INST_INVALID`,
   * as is a VDU without workload when the request names no files); later, those of the instance's
   * record. undefined when unknown (no record).
   */
  async deployedVdus(args: DeploymentArgs): Promise<string[] | undefined> {
    const { command, vnfd, flavour } = args;
    if (command.operation === 'INSTANTIATE') {
      const addl = command.additionalParams ?? {};
      const defFiles = resolveDefFiles(vnfd, addl);
      const objects = loadManifests(await args.files(), defFiles);
      resolveNamespace(objects, addl.namespace);
      return checkDeployedVdus(objects, flavour, defFiles, hasDefFiles(addl));
    }
    const md = args.instance.instantiatedVnfInfo?.metadata;
    const resources = isObj(md) ? md.kubernetesResources : undefined;
    if (!Array.isArray(resources) || !resources.every(isResourceRecord)) return undefined;
    const ids = new Set((resources as ResourceRecord[]).map((r) => r.vduId).filter((v): v is string => v !== undefined));
    return Object.keys(flavour.vdus).filter((v) => ids.has(v));
  }

  async observe(ctx: InfraContext): Promise<ObservedResources> {
    const cnf = await this.currentRecord(ctx);
    if (cnf === undefined) return { vnfcs: [], storages: [], virtualLinks: [] };
    const client = this.client(ctx);
    const ns = cnf.namespace;
    const workloads = vduWorkloads(cnf);
    const none = Promise.resolve({ items: [] as KubeObject[] });
    const [pods, pvcs, services] = await Promise.all([
      client.list('v1', 'Pod', ns, { labelSelector: instanceSelector(ctx.instance.id) }),
      workloads.some((w) => w.kind === 'StatefulSet' && (w.claimTemplates ?? []).length > 0) ? client.list('v1', 'PersistentVolumeClaim', ns) : none,
      cnf.resources.some((r) => r.kind === 'Service') ? client.list('v1', 'Service', ns, { labelSelector: instanceSelector(ctx.instance.id) }) : none,
    ]);

    // Storage: the claims of StatefulSet VDUs (`<template>-<sts>-<ordinal>`).
    const storages: (ObservedStorage & { sts: string; ordinal: number })[] = [];
    for (const w of workloads) {
      if (w.kind !== 'StatefulSet') continue;
      const vdu = ctx.flavour.vdus[w.vduId];
      (w.claimTemplates ?? []).forEach((tpl, i) => {
        for (const pvc of pvcs.items) {
          const name = pvc.metadata.name ?? '';
          const ordinal = isTerminating(pvc) ? undefined : claimOrdinal(name, tpl, w.name);
          if (ordinal === undefined) continue;
          storages.push({
            virtualStorageDescId: vdu?.virtualStorageIds[i] ?? tpl,
            resourceId: `${ns}/${name}`,
            vimLevelResourceType: 'PersistentVolumeClaim',
            stableKey: `StatefulSet/${w.name}/${ordinal}/${tpl}`,
            metadata: { namespace: ns, name, uid: pvc.metadata.uid, claimTemplate: tpl, statefulSet: w.name, ordinal, phase: pvc.status?.phase, volumeName: pvc.spec?.volumeName },
            sts: w.name,
            ordinal,
          });
        }
      });
    }

    const vnfcs: ObservedVnfc[] = [];
    for (const p of pods.items) {
      if (isTerminating(p)) continue;
      const w = workloadOfPod(p, workloads);
      if (w === undefined) continue;
      // A finished pod of a controller lingers in the API, but its controller has already
      // replaced it: the replacement is the VNFC now. (A singleton Pod stays the VNFC, unhealthy.)
      if (w.kind !== 'Pod' && !isActive(p)) continue;
      const name = p.metadata.name as string;
      const ready = isPodReady(p);
      const phase = p.status?.phase as string | undefined;
      const nodeName = typeof p.spec?.nodeName === 'string' ? (p.spec.nodeName as string) : undefined;
      const stableKey = stableKeyOf(p, w);
      const ordinal = w.kind === 'StatefulSet' ? statefulSetOrdinal(name, w.name) : undefined;
      const storageIds = ordinal === undefined ? [] : storages.filter((st) => st.sts === w.name && st.ordinal === ordinal).map((st) => st.resourceId);
      vnfcs.push({
        vduId: w.vduId,
        computeResource: { resourceId: name, vimLevelResourceType: w.kind },
        ...(nodeName === undefined ? {} : { zoneId: nodeName }),
        ...(stableKey === undefined ? {} : { stableKey }),
        ...(storageIds.length > 0 ? { storageResourceIds: storageIds } : {}),
        cps: podCps(ctx.flavour.vdus[w.vduId], w.vduId, ctx.flavour.cps, p),
        metadata: { namespace: ns, kind: w.kind, workloadName: w.name, nodeName: nodeName ?? null, podPhase: phase ?? null, ready, uid: p.metadata.uid },
        ...(phase === 'Failed' || phase === 'Unknown' || (phase === 'Running' && !ready) ? { unhealthy: true } : {}),
      });
    }
    // No pod at all is "no resources" only when the CNF itself is there (e.g. workloads scaled to
    // 0, or pods being replaced); a deleted namespace, or workloads all gone, is an error.
    if (vnfcs.length === 0 && !expectsNothing(ctx, (driverState(ctx).created ?? []).length > 0)) await this.requirePresent(ctx, client, cnf, workloads);
    vnfcs.sort((a, b) => a.vduId.localeCompare(b.vduId) || a.computeResource.resourceId.localeCompare(b.computeResource.resourceId));
    storages.sort((a, b) => a.resourceId.localeCompare(b.resourceId));
    const podLabels = new Map(pods.items.map((p) => [p.metadata.name ?? '', p.metadata.labels ?? {}]));
    const extCps = serviceExtCps(services.items, vnfcs, podLabels);
    return {
      vnfcs,
      storages: storages.map(({ sts: _s, ordinal: _o, ...rest }) => rest),
      virtualLinks: [],
      ...(extCps.length > 0 ? { extCps } : {}),
      metadata: cnfMetadata(cnf),
    };
  }
}

/**
 * The CPs of a pod: the VDU's VduCps (the primary one, lowest `order`, first), or one CP
 * `<vduId>_pod` when the VNFD declares none. The primary CP carries the pod's IPs
 * (`status.podIPs`, else `status.podIP`); further CPs (secondary networks) carry none.
 */
export function podCps(vdu: VduModel | undefined, vduId: string, cps: Readonly<Record<string, VduCpModel>>, pod: KubeObject): ObservedCp[] {
  const ids = [...(vdu?.cpIds ?? [])];
  ids.sort((a, b) => (cps[a]?.order ?? Number.MAX_SAFE_INTEGER) - (cps[b]?.order ?? Number.MAX_SAFE_INTEGER));
  if (ids.length === 0) ids.push(`${vduId}_pod`);
  const st = (pod.status ?? {}) as { podIPs?: unknown; podIP?: unknown };
  const listed = Array.isArray(st.podIPs) ? st.podIPs.map((x) => (x as { ip?: unknown } | null)?.ip).filter((ip): ip is string => typeof ip === 'string' && ip !== '') : [];
  const ips = listed.length > 0 ? listed : typeof st.podIP === 'string' && st.podIP !== '' ? [st.podIP] : [];
  return ids.map((cpdId, i) => ({ cpdId, ...(i === 0 && ips.length > 0 ? { addresses: ips.map((address) => ({ address })) } : {}) }));
}

/**
 * The CNF's Services as external CPs (cpdId = the Service name): their cluster IPs (not for a
 * headless Service), external IPs and load-balancer ingress IPs, and the observed pods their
 * selector picks. A Service without a selector, or selecting none of the pods, is left out.
 */
export function serviceExtCps(services: readonly KubeObject[], vnfcs: readonly ObservedVnfc[], podLabels: ReadonlyMap<string, Record<string, string>>): ObservedExtCp[] {
  const out: ObservedExtCp[] = [];
  for (const svc of services) {
    if (isTerminating(svc)) continue;
    const name = svc.metadata.name ?? '';
    const spec = (svc.spec ?? {}) as { selector?: Record<string, string>; clusterIP?: string; clusterIPs?: string[]; externalIPs?: string[] };
    const selector = spec.selector ?? {};
    if (Object.keys(selector).length === 0) continue;
    const behind = vnfcs
      .filter((v) => {
        const labels = podLabels.get(v.computeResource.resourceId) ?? {};
        return Object.entries(selector).every(([k, val]) => labels[k] === val);
      })
      .map((v) => v.computeResource.resourceId);
    if (behind.length === 0) continue;
    const ingress = (((svc.status ?? {}) as { loadBalancer?: { ingress?: { ip?: string }[] } }).loadBalancer?.ingress ?? []).map((i) => i.ip);
    const ips = [...(spec.clusterIPs ?? (spec.clusterIP ? [spec.clusterIP] : [])), ...(spec.externalIPs ?? []), ...ingress].filter((ip): ip is string => typeof ip === 'string' && ip !== '' && ip !== 'None');
    out.push({
      id: `svc-${name}`,
      cpdId: name,
      resourceId: `${svc.metadata.namespace ?? ''}/${name}`,
      vimLevelResourceType: 'Service',
      addresses: [...new Set(ips)].map((address) => ({ address })),
      vnfcResourceIds: behind,
    });
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/** Creates the Kubernetes infra driver (register it in the InfraDriverRegistry). */
export function createKubernetesDriver(options: KubernetesDriverOptions = {}): InfraDriver {
  return new KubernetesDriver(options);
}
