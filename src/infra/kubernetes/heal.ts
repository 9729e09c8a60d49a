/**
 * Heal: what {@link ./heal-plan.ts} decided, done against the Kubernetes API. VNFC heal deletes
 * the target pods (exact incarnation) and lets their controllers replace them, re-creates
 * singleton Pods from the package manifest, and waits until the old pods are gone and each
 * affected VDU has its Ready count again. Whole-CNF heal deletes every object but the
 * PersistentVolumeClaims (and Namespaces) and creates them again from the package. Both are
 * resumable through `ctx.state.kubernetes` (`heal`, `entire`).
 */
import { vnfmError } from '../../errors.ts';
import type { VnfcResourceInfo } from '../../model/vnf-instance.ts';
import type { HealPlan, InfraContext } from '../infra-driver.ts';
import { countsToRead, expectedPods, forceOnDownNodes, type HealState, healWaitPlan, planEntireHeal, planPodHeal, podsToDelete, singletonsToRecreate, affectedVdus } from './heal-plan.ts';
import { describe, type KubeClient, type KubeObject } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';
import { type CnfRecord, instanceSelector, type PlannedObject } from './manifests.ts';
import { isTerminating, ownedBy, type VduWorkload } from './pods.ts';
import { waitForPodIncarnationGone, waitForVdus } from './readiness.ts';
import { requirePresent } from './observe.ts';
import { createAll } from './instantiate.ts';
import { deleteCnf } from './terminate.ts';
import { driverState, expectations, type KubeClients, notReadyNodes, optGrace, planFor, podRef, requireRecord, vduWorkloads, waitMs, withNamespaceOf, workloadRef } from './session.ts';

export async function heal(clients: KubeClients, ctx: InfraContext, plan: HealPlan): Promise<void> {
  if (plan.entire) return healEntire(clients, ctx, plan);
  if (plan.targets.length === 0) return;
  return healVnfcs(clients, ctx, plan);
}

async function healVnfcs(clients: KubeClients, ctx: InfraContext, plan: HealPlan): Promise<void> {
  const s = driverState(ctx);
  const cnf = await requireRecord(ctx, 'heal');
  const ns = cnf.namespace;
  const workloads = vduWorkloads(cnf);
  const client = clients.client(ctx);
  const grace = optGrace(plan.additionalParams.gracePeriodSeconds);
  const log = { vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id };

  if (s.heal === undefined) {
    s.heal = await resolveHealTargets(ctx, client, cnf, workloads, plan.targets.map((t) => t.vnfcResourceInfo));
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
  await recreateSingletons(ctx, client, cnf, h, grace);

  // 3. Wait: replaced pods gone from the API, every affected VDU back to its Ready count.
  const { expectations: wanted, goneUids } = healWaitPlan(h, workloads);
  await waitForVdus(
    client,
    { instanceId: ctx.instance.id, namespace: ns, workloads, expectations: wanted, goneUids },
    { timeoutMs: waitMs(ctx) + (grace ?? 0) * 1000, what: `heal of VNF ${ctx.instance.id}: replacement pods Ready`, log: ctx.log },
  );
}

/** Singleton Pods of the heal: each old one waited out, then created again with the same name. */
async function recreateSingletons(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, h: HealState, grace: number | undefined): Promise<void> {
  const singles = singletonsToRecreate(h);
  if (singles.length === 0) return;
  const ns = cnf.namespace;
  const planned = await planFor(ctx, cnf.defFiles, ns, ctx.targetVduCounts);
  for (const t of singles) {
    const o = planned.objects.find((x) => x.vduId === t.vduId);
    if (o === undefined) throw vnfmError('VNFM_ERR_VIM_FAILED', `VDU ${t.vduId}: its Pod manifest is not in ${cnf.defFiles.join(', ')}`);
    if (t.podUid !== undefined) {
      await waitForPodIncarnationGone(
        client,
        { instanceId: ctx.instance.id, namespace: ns, name: o.ref.name, uid: t.podUid },
        { timeoutMs: waitMs(ctx) + (grace ?? 30) * 1000, what: `heal of VNF ${ctx.instance.id}: old pod ${o.ref.name} gone (VDU ${t.vduId})`, log: ctx.log },
      );
    }
    await recreatePod(ctx, client, o, t.podUid);
    t.recreated = true;
    await ctx.checkpoint();
    ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, pod: o.ref.name, vduId: t.vduId }, 'heal: singleton pod re-created');
  }
}

/** Decides, once per heal, which pod each target is and what to do with it (see heal-plan.ts on drift). */
async function resolveHealTargets(ctx: InfraContext, client: KubeClient, cnf: CnfRecord, workloads: readonly VduWorkload[], targets: readonly VnfcResourceInfo[]): Promise<HealState> {
  const ns = cnf.namespace;
  const pods = (await client.list('v1', 'Pod', ns, { labelSelector: instanceSelector(ctx.instance.id) })).items;
  // No pod at all: the CNF may be gone (namespace deleted, or a cluster emptied), which is
  // VNFM_ERR_INFRA_STACK_MISSING like for observe, not a failure of one workload.
  if (pods.length === 0) await requirePresent(ctx, client, cnf, workloads);
  const knownResourceIds = new Set((ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => r.computeResource.resourceId));
  const { targets: out, notes } = planPodHeal({ targets, workloads, pods, knownResourceIds });
  for (const n of notes) {
    if (n.kind === 'accepted') ctx.log.info({ vnfInstanceId: ctx.instance.id, requested: n.requested, replacement: n.replacement }, 'heal: target pod was already replaced by a Ready pod; accepted');
    else ctx.log.info({ vnfInstanceId: ctx.instance.id, requested: n.requested, vduId: n.vduId }, 'heal: target pod does not exist; waiting for its controller / re-creating it');
  }
  // Pods on a node that is not Ready would stay Terminating forever: force-delete them.
  forceOnDownNodes(out, pods, await notReadyNodes(client, podsToDelete(out, pods)));
  // The live workloads of the affected VDUs (their replicas), read one by one until one is gone.
  const live = new Map<string, KubeObject | undefined>();
  for (const vduId of affectedVdus(out)) {
    const w = workloads.find((x) => x.vduId === vduId) as VduWorkload;
    if (w.kind === 'Pod') continue;
    const o = await client.get(workloadRef(w));
    live.set(vduId, o);
    if (o === undefined || isTerminating(o)) break;
  }
  const expected = expectedPods(out, workloads, live, ctx.targetVduCounts, (w) => describe(workloadRef(w)));
  return { targets: out, expected };
}

/** Creates a singleton Pod again; adopts one that already exists with our label and a new uid. */
async function recreatePod(ctx: InfraContext, client: KubeClient, o: PlannedObject, oldUid: string | undefined): Promise<void> {
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

async function healEntire(clients: KubeClients, ctx: InfraContext, plan: HealPlan): Promise<void> {
  const s = driverState(ctx);
  const client = clients.client(ctx);
  const grace = optGrace(plan.additionalParams.gracePeriodSeconds);
  if (s.entire === undefined) {
    const cnf = await requireRecord(ctx, 'heal');
    const pods = await client.list('v1', 'Pod', cnf.namespace, { labelSelector: instanceSelector(ctx.instance.id) });
    const workloads = vduWorkloads(cnf);
    const liveReplicas = new Map<string, number>();
    for (const w of countsToRead(workloads, ctx.targetVduCounts)) {
      const live = await client.get(workloadRef(w));
      if (typeof live?.spec?.replicas === 'number') liveReplicas.set(w.vduId, live.spec.replicas);
    }
    s.cnf = cnf;
    s.entire = planEntireHeal(workloads, pods.items, ctx.targetVduCounts, liveReplicas);
    await ctx.checkpoint();
  }
  const e = s.entire;
  const cnf = s.cnf as CnfRecord;
  if (e.phase === 'delete') {
    ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id }, 'heal: deleting the whole CNF (PersistentVolumeClaims kept)');
    await deleteCnf(ctx, client, cnf, { gracePeriodSeconds: grace, keepStorage: true, what: 'heal' });
    e.phase = 'create';
    s.created = [];
    await ctx.checkpoint();
  }
  const planned = await planFor(ctx, cnf.defFiles, cnf.namespace, e.counts);
  if (e.phase === 'create') {
    ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id }, 'heal: creating the whole CNF again');
    // Kept PVCs / Namespaces still exist with our label: createAll adopts them.
    await createAll(ctx, client, planned, s);
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
      expectations: expectations(workloads, e.counts, (w) => byVdu.get(w.vduId)?.body.spec?.replicas),
      goneUids: new Set(e.oldPodUids),
    },
    { timeoutMs: waitMs(ctx), what: `heal of VNF ${ctx.instance.id}: re-created pods Ready`, log: ctx.log },
  );
}
