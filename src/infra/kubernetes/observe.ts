/**
 * Observe: the instance's pods (by label) mapped to VDUs (`stableKey` `Pod/<name>` for a
 * singleton Pod, `StatefulSet/<sts>/<ordinal>` for StatefulSet pods), StatefulSet PVCs as
 * storage, the CNF's Services as external CPs. Pods being deleted are left out, and so are Failed
 * or Succeeded pods of controllers (their controller has replaced them already); a Failed
 * singleton Pod is reported, as an unhealthy VNFC. It never reports "no resources" for a CNF it
 * cannot see: without any pod (outside a TERMINATE, or an INSTANTIATE that created nothing yet) a
 * deleted namespace or workloads all gone fail with `VNFM_ERR_INFRA_STACK_MISSING`.
 */
import { vnfmError } from '../../errors.ts';
import type { VduCpModel, VduModel } from '../../packages/vnfd-model.ts';
import { expectsNothing, type ObserveContext, type ObservedCp, type ObservedExtCp, type ObservedResources, type ObservedStorage, type ObservedVnfc } from '../infra-driver.ts';
import type { KubeClient, KubeObject } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';
import { type CnfRecord, instanceSelector } from './manifests.ts';
import { isActive, isPodReady, isTerminating, stableKeyOf, statefulSetOrdinal, type VduWorkload, workloadOfPod } from './pods.ts';
import { claimOrdinal, cnfMetadata, currentRecord, type KubeClients, readState, vduWorkloads, workloadRef } from './session.ts';

export async function observe(clients: KubeClients, ctx: ObserveContext): Promise<ObservedResources> {
  const cnf = await currentRecord(ctx);
  if (cnf === undefined) return { vnfcs: [], storages: [], virtualLinks: [] };
  const client = clients.client(ctx);
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
  if (vnfcs.length === 0 && !expectsNothing(ctx, (readState(ctx).created ?? []).length > 0)) await requirePresent(ctx, client, cnf, workloads);
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

/**
 * Throws `VNFM_ERR_INFRA_STACK_MISSING` when the CNF's namespace is gone (or being deleted), or
 * when none of its VDU workloads exists any more. Reading Namespaces may be forbidden to the
 * VIM's account: then only the workloads are checked.
 */
export async function requirePresent(ctx: ObserveContext, client: KubeClient, cnf: CnfRecord, workloads: readonly VduWorkload[]): Promise<void> {
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
