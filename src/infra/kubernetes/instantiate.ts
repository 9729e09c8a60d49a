/**
 * Instantiate: the plan from the request's manifests, the namespace made sure of (created for the
 * instance when missing), every object created (or adopted when it carries our label), and the
 * wait until every VDU has its pods Ready. Also which VDUs a request deploys (subset instantiate).
 */
import { vnfmError } from '../../errors.ts';
import type { DeploymentArgs, InfraContext } from '../infra-driver.ts';
import { describe, type KubeClient, type KubeObject, type ObjectRef } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';
import { checkDeployedVdus, type CnfPlan, type CnfRecord, CREATED_FOR_LABEL, INSTANCE_LABEL, loadManifests, type PlannedObject, type ResourceRecord, refKey, resolveDefFiles, resolveNamespace } from './manifests.ts';
import { isTerminating, ownedBy } from './pods.ts';
import { waitForVdus } from './readiness.ts';
import { type DriverState, driverState, expectations, hasDefFiles, isObj, isResourceRecord, type KubeClients, planFor, planFromRequest, vduWorkloads, waitMs, waitNamespaceGone, waitObjectGone } from './session.ts';

export async function instantiate(clients: KubeClients, ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
  const s = driverState(ctx);
  const client = clients.client(ctx);
  let plan: CnfPlan;
  if (s.cnf === undefined) {
    plan = await planFromRequest(ctx, req);
    s.cnf = structuredClone(plan.record);
    s.created = [];
    await ctx.checkpoint();
  } else {
    plan = await planFor(ctx, s.cnf.defFiles, s.cnf.namespace, ctx.targetVduCounts);
  }
  if (s.cnf?.namespaceCreated) plan.record.namespaceCreated = true;
  await ensureNamespace(ctx, client, plan, s);
  ctx.log.info({ vnfInstanceId: ctx.instance.id, opOccId: ctx.op.id, namespace: plan.record.namespace, objects: plan.objects.length }, 'creating kubernetes objects');
  await createAll(ctx, client, plan, s);
  const workloads = vduWorkloads(plan.record);
  const byVdu = new Map(plan.objects.filter((o) => o.vduId !== undefined).map((o) => [o.vduId as string, o]));
  await waitForVdus(
    client,
    {
      instanceId: ctx.instance.id,
      namespace: plan.record.namespace,
      workloads,
      expectations: expectations(workloads, ctx.targetVduCounts, (w) => byVdu.get(w.vduId)?.body.spec?.replicas),
    },
    { timeoutMs: waitMs(ctx), what: `instantiate of VNF ${ctx.instance.id}: pods Ready`, log: ctx.log },
  );
}

/**
 * Creates the planned objects not yet in `created`, adopting existing objects that carry our
 * label (after a crash between create and checkpoint). Checkpoints after each object.
 */
export async function createAll(ctx: InfraContext, client: KubeClient, plan: CnfPlan, s: DriverState): Promise<void> {
  s.created ??= [];
  for (const o of plan.objects) {
    const key = refKey(o.ref);
    if (s.created.includes(key)) continue;
    await createOne(ctx, client, o);
    s.created.push(key);
    await ctx.checkpoint();
  }
}

async function createOne(ctx: InfraContext, client: KubeClient, o: PlannedObject): Promise<void> {
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
      await waitObjectGone(ctx, client, o.ref, live.metadata.uid ?? '');
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
async function ensureNamespace(ctx: InfraContext, client: KubeClient, plan: CnfPlan, s: DriverState): Promise<void> {
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
      await waitNamespaceGone(ctx, client, ns, live.metadata.uid ?? '');
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
 * The VDUs the CNF consists of: for an INSTANTIATE, those whose workload is in the request's
 * `lcm-kubernetes-def-files` (Tacker's subset instantiate; none at all is `VNFM_ERR_INST_INVALID`,
 * as is a VDU without workload when the request names no files); later, those of the instance's
 * record. undefined when unknown (no record).
 */
export async function deployedVdus(args: DeploymentArgs): Promise<string[] | undefined> {
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
