/**
 * Scale and scale-out rollback: `spec.replicas` of the aspect's VDU workloads patched to the new
 * counts, then the wait until exactly that many pods are Ready. Pods and DaemonSets cannot be
 * scaled; a VDU a subset instantiate did not deploy is skipped.
 */
import { vnfmError } from '../../errors.ts';
import { vnfcCountAtLevel } from '../../packages/vnfd-scaling.ts';
import type { InfraContext, ScalePlan } from '../infra-driver.ts';
import { describe } from './kube-client.ts';
import { KubeApiError } from './kube-error.ts';
import { SCALABLE_KINDS } from './manifests.ts';
import { type VduExpectation, waitForVdus } from './readiness.ts';
import { type KubeClients, requireRecord, vduWorkloads, waitMs, workloadRef } from './session.ts';

export async function scale(clients: KubeClients, ctx: InfraContext, plan: ScalePlan): Promise<void> {
  await setReplicas(clients, ctx, plan.aspectId, ctx.targetVduCounts, 'scale');
}

export async function rollbackScaleOut(clients: KubeClients, ctx: InfraContext, plan: ScalePlan): Promise<void> {
  const levels = { ...ctx.targetScaleLevels, [plan.aspectId]: plan.fromLevel };
  const counts = vnfcCountAtLevel(ctx.flavour, undefined, levels);
  await setReplicas(clients, ctx, plan.aspectId, counts, 'scale-out rollback');
}

async function setReplicas(clients: KubeClients, ctx: InfraContext, aspectId: string, counts: Readonly<Record<string, number>>, what: string): Promise<void> {
  const aspect = Object.hasOwn(ctx.flavour.scalingAspects, aspectId) ? ctx.flavour.scalingAspects[aspectId] : undefined;
  if (aspect === undefined) throw vnfmError('VNFM_ERR_INST_INVALID', `aspect '${aspectId}' is not a scaling aspect of flavour ${ctx.flavour.flavourId}`);
  const cnf = await requireRecord(ctx, what);
  const workloads = vduWorkloads(cnf);
  const client = clients.client(ctx);
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
    { timeoutMs: waitMs(ctx), what: `${what} of VNF ${ctx.instance.id}: pods Ready`, log: ctx.log },
  );
}
