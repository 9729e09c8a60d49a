/**
 * What every step of the Kubernetes driver shares: the driver's options, the API clients per VIM
 * connection, the driver's part of `ctx.state`, the CNF record (what the instance is made of) and
 * the plan built from the package's manifests, and small waits and helpers used by more than one
 * operation.
 */
import { vnfmError } from '../../errors.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { InfraContext, ObserveContext } from '../infra-driver.ts';
import type { EntireHealState, HealState } from './heal-plan.ts';
import { describe, KubeClient, type KubeClientOptions, type KubeObject, type ObjectRef } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';
import { buildPlan, type CnfPlan, type CnfRecord, instanceSelector, loadManifests, type ResourceRecord, resolveDefFiles, resolveNamespace, WORKLOAD_KINDS, type WorkloadKind } from './manifests.ts';
import { statefulSetOrdinal, type VduWorkload } from './pods.ts';
import { type VduExpectation, watchUntil } from './readiness.ts';

/** Options of {@link createKubernetesDriver}. */
export interface KubernetesDriverOptions {
  /** Retry / timeout settings of the API client. */
  client?: KubeClientOptions;
  /** Builds the API client of a VIM (tests may wrap it). @default {@link KubeClient.fromVim} */
  clientFactory?: (vim: VimConnection, options: KubeClientOptions) => KubeClient;
}

/** The driver's part of `ctx.state`. */
export interface DriverState {
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

/** The driver's state of the operation (created empty when missing). */
export function driverState(ctx: InfraContext): DriverState {
  const cur = ctx.state[STATE_KEY];
  if (cur !== null && typeof cur === 'object' && !Array.isArray(cur)) return cur as DriverState;
  const fresh: DriverState = {};
  ctx.state[STATE_KEY] = fresh;
  return fresh;
}

/** The driver's state of the operation an observation follows, to read; empty outside operations. */
export function readState(ctx: ObserveContext): Readonly<DriverState> {
  const cur = ctx.state?.[STATE_KEY];
  return cur !== null && typeof cur === 'object' && !Array.isArray(cur) ? (cur as DriverState) : {};
}

export function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function isResourceRecord(v: unknown): v is ResourceRecord {
  return isObj(v) && typeof v.apiVersion === 'string' && typeof v.kind === 'string' && typeof v.name === 'string';
}

/** The metadata kept in instantiatedVnfInfo.metadata (Tacker's keys where they exist). */
export function cnfMetadata(cnf: CnfRecord): Record<string, unknown> {
  return {
    namespace: cnf.namespace,
    tenant: cnf.namespace,
    'lcm-kubernetes-def-files': cnf.defFiles,
    kubernetesResources: cnf.resources,
    ...(cnf.namespaceCreated ? { namespaceCreatedByVnfm: true } : {}),
  };
}

/** A record rebuilt from the package, keeping what the old record knew of its namespace. */
export function withNamespaceOf(record: CnfRecord, old: CnfRecord): CnfRecord {
  return old.namespaceCreated ? { ...record, namespaceCreated: true } : record;
}

export function vduWorkloads(cnf: CnfRecord): VduWorkload[] {
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

export function workloadRef(w: VduWorkload): ObjectRef {
  return { apiVersion: w.apiVersion, kind: w.kind, name: w.name, namespace: w.namespace };
}

export function podRef(namespace: string, name: string): ObjectRef {
  return { apiVersion: 'v1', kind: 'Pod', name, namespace };
}

/** The ordinal of a StatefulSet claim named `<template>-<sts>-<ordinal>`, or undefined. */
export function claimOrdinal(pvcName: string, template: string, sts: string): number | undefined {
  return pvcName.startsWith(`${template}-`) ? statefulSetOrdinal(pvcName.slice(template.length + 1), sts) : undefined;
}

/** Whether the request names its manifests (then a subset of the VDUs may be deployed). */
export function hasDefFiles(addl: Record<string, unknown>): boolean {
  return addl['lcm-kubernetes-def-files'] !== undefined && addl['lcm-kubernetes-def-files'] !== null;
}

export function optGrace(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

export function waitMs(ctx: InfraContext): number {
  return ctx.vimSettings.kubernetesWaitMs;
}

/** Expectations of every VDU of a plan/record, with counts. */
export function expectations(workloads: readonly VduWorkload[], counts: Readonly<Record<string, number>>, fallback: (w: VduWorkload) => number | undefined): VduExpectation[] {
  return workloads.map((w) => {
    if (w.kind === 'Pod') return { workload: w, expected: 1 };
    if (w.kind === 'DaemonSet') return { workload: w };
    const n = counts[w.vduId] ?? fallback(w) ?? 1;
    return { workload: w, expected: n };
  });
}

/**
 * The API clients of the driver, cached per VIM connection (endpoint, token, CA): client-node
 * caches API discovery per client, so a fresh client per call would repeat discovery round trips.
 */
export class KubeClients {
  private readonly clientOptions: KubeClientOptions;
  private readonly clientFactory: (vim: VimConnection, options: KubeClientOptions) => KubeClient;
  private readonly clients = new Map<string, KubeClient>();

  constructor(options: KubernetesDriverOptions = {}) {
    this.clientOptions = options.client ?? {};
    this.clientFactory = options.clientFactory ?? ((vim, o) => KubeClient.fromVim(vim, o));
  }

  /** The cached client of the VIM, as a view whose calls and waits stop on the op's signal. */
  client(ctx: ObserveContext): KubeClient {
    return this.vimClient(ctx).withSignal(ctx.signal);
  }

  private vimClient(ctx: ObserveContext): KubeClient {
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
}

// ---------------------------------------------------------------------------------------------
// Plans and records

export async function planFor(ctx: ObserveContext, defFiles: readonly string[], namespace: string, counts: Readonly<Record<string, number>>): Promise<CnfPlan> {
  const files = await ctx.files();
  const objects = loadManifests(files, defFiles);
  return buildPlan({ objects, defFiles, namespace, instanceId: ctx.instance.id, flavour: ctx.flavour, vduCounts: counts });
}

/** The plan of an instantiate request (deterministic: also used by rollback). */
export async function planFromRequest(ctx: InfraContext, req: Record<string, unknown>): Promise<CnfPlan> {
  const addl = isObj(req.additionalParams) ? req.additionalParams : {};
  const defFiles = resolveDefFiles(ctx.vnfd, addl);
  const files = await ctx.files();
  const objects = loadManifests(files, defFiles);
  const namespace = resolveNamespace(objects, addl.namespace);
  return buildPlan({ objects, defFiles, namespace, instanceId: ctx.instance.id, flavour: ctx.flavour, vduCounts: ctx.targetVduCounts, subset: hasDefFiles(addl) });
}

/** The CNF as recorded in the instance (instantiatedVnfInfo.metadata), rebuilt from the package when only the files are known. */
async function recordFromInstance(ctx: ObserveContext): Promise<CnfRecord | undefined> {
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
  const plan = await planFor(ctx, defFiles ?? ctx.vnfd.kubernetesFiles, namespace, ctx.targetVduCounts);
  return { ...plan.record, ...created };
}

/** The CNF as this operation deployed it, else as the instance records it. */
export async function currentRecord(ctx: ObserveContext): Promise<CnfRecord | undefined> {
  return readState(ctx).cnf ?? (await recordFromInstance(ctx));
}

export async function requireRecord(ctx: InfraContext, op: string): Promise<CnfRecord> {
  const cnf = await currentRecord(ctx);
  if (cnf === undefined) {
    throw vnfmError('VNFM_ERR_VIM_FAILED', `cannot ${op} VNF instance ${ctx.instance.id}: it has no record of its Kubernetes resources (instantiatedVnfInfo.metadata.namespace is missing)`);
  }
  return cnf;
}

// ---------------------------------------------------------------------------------------------
// Shared waits and reads

export function waitNamespaceGone(ctx: InfraContext, client: KubeClient, ns: string, uid: string): Promise<void> {
  return watchUntil(
    client,
    [{ apiVersion: 'v1', kind: 'Namespace', namespace: '' }],
    ([objs = []]) => {
      const o = objs.find((x) => x.metadata.name === ns);
      return o === undefined || (uid !== '' && o.metadata.uid !== uid) ? { done: true } : { done: false, progress: `namespace ${ns} is still being deleted` };
    },
    { timeoutMs: waitMs(ctx), what: `VNF ${ctx.instance.id}: deletion of namespace ${ns}`, log: ctx.log },
  );
}

export function waitObjectGone(ctx: InfraContext, client: KubeClient, ref: ObjectRef, uid: string): Promise<void> {
  return watchUntil(
    client,
    [{ apiVersion: ref.apiVersion, kind: ref.kind, namespace: ref.namespace ?? '', labelSelector: instanceSelector(ctx.instance.id) }],
    ([objs = []]) => {
      const o = objs.find((x) => x.metadata.name === ref.name);
      return o === undefined || o.metadata.uid !== uid ? { done: true } : { done: false, progress: `${describe(ref)} is still being deleted` };
    },
    { timeoutMs: waitMs(ctx), what: `VNF ${ctx.instance.id}: deletion of ${describe(ref)}`, log: ctx.log },
  );
}

/**
 * Names of the nodes (of these pods) that are not Ready. Reading nodes needs cluster-scope
 * permission; without it (403/404) nodes are assumed Ready and pods are deleted gracefully.
 */
export async function notReadyNodes(client: KubeClient, pods: readonly KubeObject[]): Promise<Set<string>> {
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
