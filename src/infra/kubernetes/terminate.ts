/**
 * Terminate and instantiate rollback: every object of the CNF deleted (Background propagation),
 * then its pods with the requested grace period, then (by default) its PersistentVolumeClaims;
 * and the namespace the VNFM created for the instance released when nothing else lives in it.
 * The deletion of the CNF is also the first half of a whole-CNF heal (claims kept).
 */
import type { InfraContext } from '../infra-driver.ts';
import type { KubeClient, KubeObject, ObjectRef } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';
import { type CnfRecord, CREATED_FOR_LABEL, instanceSelector, isNamespaced } from './manifests.ts';
import { isTerminating, ownedBy } from './pods.ts';
import { waitForGone, waitForNoPods } from './readiness.ts';
import { claimOrdinal, currentRecord, driverState, isObj, type KubeClients, notReadyNodes, optGrace, planFromRequest, podRef, waitMs, waitNamespaceGone } from './session.ts';

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

export async function terminate(clients: KubeClients, ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
  const cnf = await currentRecord(ctx);
  if (cnf === undefined) {
    ctx.log.warn({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id }, 'no record of kubernetes resources; nothing to delete');
    return;
  }
  const graceful = req.terminationType === 'GRACEFUL';
  const grace = graceful ? optGrace(req.gracefulTerminationTimeout) : 0;
  const addl = isObj(req.additionalParams) ? req.additionalParams : {};
  const deletePvcs = addl.deletePvcs !== false;
  const client = clients.client(ctx);
  const s = driverState(ctx);
  if (!s.namespaceReleased) await deleteCnf(ctx, client, cnf, { gracePeriodSeconds: grace, keepStorage: !deletePvcs, what: 'terminate' });
  await releaseNamespace(ctx, client, cnf, 'terminate');
}

export async function rollbackInstantiate(clients: KubeClients, ctx: InfraContext): Promise<void> {
  let cnf = driverState(ctx).cnf;
  if (cnf === undefined) {
    try {
      cnf = (await planFromRequest(ctx, ctx.command as unknown as Record<string, unknown>)).record;
    } catch (e) {
      ctx.log.warn({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, err: (e as Error).message }, 'rollback: the instantiate request cannot be planned; nothing was created');
      return;
    }
  }
  const client = clients.client(ctx);
  if (!driverState(ctx).namespaceReleased) await deleteCnf(ctx, client, cnf, { gracePeriodSeconds: 0, keepStorage: false, what: 'instantiate rollback' });
  await releaseNamespace(ctx, client, cnf, 'instantiate rollback');
}

/**
 * Deletes the CNF's objects: every object carrying our instance label, of every kind the CNF
 * is made of (so leftovers of an interrupted operation go too, and an object of the same name
 * that is not ours is never touched), in reverse creation order; then its pods with
 * `gracePeriodSeconds`; then (unless `keepStorage`) its PVCs; and waits until no pod (and no
 * deleted PVC) is left.
 */
export async function deleteCnf(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, opts: { gracePeriodSeconds: number | undefined; keepStorage: boolean; what: string }): Promise<void> {
  const ns = cnf.namespace;
  await deleteObjects(ctx, client, cnf, opts.keepStorage, opts.gracePeriodSeconds);
  await deletePods(ctx, client, ns, opts.gracePeriodSeconds);
  const graceMs = (opts.gracePeriodSeconds ?? 30) * 1000;
  const wait = { timeoutMs: waitMs(ctx) + graceMs, log: ctx.log };
  await waitForNoPods(client, { instanceId: ctx.instance.id, namespace: ns }, { ...wait, what: `${opts.what} of VNF ${ctx.instance.id}: pods gone` });
  if (!opts.keepStorage) {
    const claims = await claimsOf(ctx, client, cnf);
    for (const c of claims) await client.delete({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: c.metadata.name as string, namespace: ns });
    await waitForGone(
      client,
      { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, names: claims.map((c) => c.metadata.name as string) },
      { ...wait, what: `${opts.what} of VNF ${ctx.instance.id}: PersistentVolumeClaims gone` },
    );
  }
}

/** Every labelled object of the CNF's kinds, in reverse creation order (Namespaces last). */
async function deleteObjects(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, keepStorage: boolean, gracePeriodSeconds: number | undefined): Promise<void> {
  const ns = cnf.namespace;
  const selector = instanceSelector(ctx.instance.id);
  const keepKinds = new Set(keepStorage ? ['PersistentVolumeClaim', 'PersistentVolume', 'Namespace'] : []);
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
        ...(kind === 'Pod' && gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
      }).catch((e: unknown) => {
        if (!KubeApiError.isStatus(e, 409)) throw e;
      });
    }
  }
}

/**
 * The controllers are gone: deletes their pods now, with our grace period (the garbage collector
 * would use each pod's own); a pod on a node that is not Ready with grace 0.
 */
async function deletePods(ctx: InfraContext, client: KubeClient, ns: string, gracePeriodSeconds: number | undefined): Promise<void> {
  const pods = await client.list('v1', 'Pod', ns, { labelSelector: instanceSelector(ctx.instance.id) });
  const down = gracePeriodSeconds === 0 ? new Set<string>() : await notReadyNodes(client, pods.items);
  for (const p of pods.items) {
    if (p.metadata.name === undefined) continue;
    const grace = typeof p.spec?.nodeName === 'string' && down.has(p.spec.nodeName) ? 0 : gracePeriodSeconds;
    if (isTerminating(p) && grace !== 0) continue;
    await client.delete(podRef(ns, p.metadata.name), { ...(grace === undefined ? {} : { gracePeriodSeconds: grace }), ...(p.metadata.uid ? { uid: p.metadata.uid } : {}) }).catch((e: unknown) => {
      if (!KubeApiError.isStatus(e, 409)) throw e;
    });
  }
}

/** PVCs of the CNF: labelled with our instance, or named after one of its StatefulSets' claim templates. */
async function claimsOf(ctx: InfraContext, client: KubeClient, cnf: CnfRecord): Promise<KubeObject[]> {
  const all = await client.list('v1', 'PersistentVolumeClaim', cnf.namespace);
  const sets = cnf.resources.filter((r) => r.kind === 'StatefulSet');
  return all.items.filter((pvc) => {
    if (ownedBy(pvc, ctx.instance.id)) return true;
    const name = pvc.metadata.name ?? '';
    return sets.some((r) => (r.claimTemplates ?? []).some((tpl) => claimOrdinal(name, tpl, r.name) !== undefined));
  });
}

/**
 * Terminate / rollback, after the CNF's objects are gone: deletes the namespace when the VNFM
 * created it for this instance (its `vnfm.io/created-for` label names the instance) and nothing
 * else lives in it; otherwise leaves it, saying why. Waits until it is gone. Idempotent (a
 * namespace already gone is fine) and checkpointed once done.
 */
async function releaseNamespace(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, what: string): Promise<void> {
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
    const others = await otherContent(ctx, client, ns);
    if (others.length > 0) {
      ctx.log.info({ ...log, objects: others.slice(0, 10), count: others.length }, `${what}: namespace created for the instance is kept: other objects live in it`);
    } else {
      if (!isTerminating(live)) {
        await client.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns }, live.metadata.uid ? { uid: live.metadata.uid } : {}).catch((e: unknown) => {
          if (!KubeApiError.isStatus(e, 409)) throw e;
        });
        ctx.log.info(log, `${what}: namespace created for the instance deleted`);
      }
      await waitNamespaceGone(ctx, client, ns, live.metadata.uid ?? '');
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
async function otherContent(ctx: InfraContext, client: KubeClient, ns: string): Promise<string[]> {
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
