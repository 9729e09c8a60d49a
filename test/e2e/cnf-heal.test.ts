/**
 * CNF heal end to end: the VNFM over HTTP against the simulated Kubernetes cluster, with the
 * sample CNF (a Pod, a ReplicaSet, a Deployment, a DaemonSet and a StatefulSet with a volume claim).
 * For each kind, healing one VNFC replaces exactly its pod and keeps the VNFC's ids; healing the
 * whole CNF (v2 `all: true`, v1 `{}`) re-creates every pod, keeps the replica counts and the
 * StatefulSet's claims; unknown VNFC ids are rejected.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { VDU_LABEL } from '../../src/infra/kubernetes/index.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import {
  type CnfEnv,
  claimsOf,
  createInstance,
  getInstance,
  instantiate,
  isReady,
  type Json,
  notificationsOf,
  opIdOf,
  podsOf,
  startCnfEnv,
  VDU_KINDS,
  vnfcsOf,
  waitOp,
} from './cnf-fixture.ts';

const NS_A = 'cnf-e2e-a';
const NS_B = 'cnf-e2e-b';

let env: CnfEnv;
let instA: string;

/** uid -> {name, vdu} of the instance's pods that are not being deleted. */
async function livePods(ns: string, instanceId: string): Promise<Map<string, { name: string; vdu: string; ready: boolean }>> {
  const out = new Map<string, { name: string; vdu: string; ready: boolean }>();
  for (const p of await podsOf(env, ns, instanceId)) {
    if (p.metadata.deletionTimestamp) continue;
    out.set(p.metadata.uid as string, { name: p.metadata.name as string, vdu: p.metadata.labels?.[VDU_LABEL] ?? '', ready: isReady(p) });
  }
  return out;
}

function countByVdu(pods: Map<string, { vdu: string }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of pods.values()) out[p.vdu] = (out[p.vdu] ?? 0) + 1;
  return out;
}

function ids(list: Json[]): string[] {
  return list.map((x) => x.id as string).sort();
}

before(async () => {
  env = await startCnfEnv();
  instA = await createInstance(env, 'v2', 'cnf-a');
  await instantiate(env, instA, NS_A, 'v2');
});

after(async () => {
  await env?.close();
});

describe('CNF heal through the VNFM API (simulated Kubernetes)', () => {
  it('instantiated the sample CNF: one VNFC per pod, all Ready', async () => {
    const inst = await getInstance(env, instA);
    // SOL003 3.7.1 makes extCpInfo 1..N: the CNF's Service `db` is its external CP.
    expectEtsiValid('v2', 'VnfInstance', inst);
    expectEtsiValid('v1', 'VnfInstance', await getInstance(env, instA, 'v1'));
    const ext = inst.instantiatedVnfInfo.extCpInfo as Json[];
    assert.deepEqual(ext.map((e) => [e.id, e.cpdId]), [['svc-db', 'db']]);
    const dbCps = (inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).filter((r) => r.vduId === 'VDU5').map((r) => r.vnfcCpInfo[0]);
    assert.ok(dbCps.some((c) => c.id === ext[0]?.associatedVnfcCpId), 'associated with a pod of the StatefulSet it selects');
    for (const c of dbCps) assert.equal(c.vnfExtCpId, 'svc-db');
    for (const r of inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]) {
      const ips = r.vnfcCpInfo[0].cpProtocolInfo[0].ipOverEthernet.ipAddresses[0].addresses as string[];
      assert.ok(ips.length > 0, `pod ${r.computeResource.resourceId} reports its IP`);
    }
    const pods = await livePods(NS_A, instA);
    assert.deepEqual(countByVdu(pods), { VDU1: 1, VDU2: 2, VDU3: 2, VDU4: 3, VDU5: 1 });
    assert.ok([...pods.values()].every((p) => p.ready));
    const res = inst.instantiatedVnfInfo.vnfcResourceInfo as Json[];
    assert.deepEqual(res.map((r) => r.computeResource.resourceId).sort(), [...pods.values()].map((p) => p.name).sort());
    assert.equal(inst.instantiatedVnfInfo.vnfcInfo.length, res.length);
  });

  for (const [vduId, kind] of Object.entries(VDU_KINDS)) {
    it(`heals one ${kind} VNFC (${vduId}): only its pod is replaced, its ids stay, MODIFIED with replacedResourceId`, async () => {
      const before = await getInstance(env, instA);
      const [target] = vnfcsOf(before, vduId);
      assert.ok(target, `a VNFC of ${vduId}`);
      const oldName = target.res.computeResource.resourceId as string;
      const podsBefore = await livePods(NS_A, instA);
      const oldUid = [...podsBefore].find(([, p]) => p.name === oldName)?.[0];
      assert.ok(oldUid, `pod ${oldName} exists`);

      const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${instA}/heal`, { vnfcInstanceId: [target.info.id], cause: `e2e ${kind}` }));
      const occ = await waitOp(env, opId, 'COMPLETED');

      // The cluster: exactly the target pod was replaced.
      const podsAfter = await livePods(NS_A, instA);
      assert.ok(!podsAfter.has(oldUid), 'the old pod is gone');
      const added = [...podsAfter].filter(([uid]) => !podsBefore.has(uid));
      assert.equal(added.length, 1, `one new pod: ${JSON.stringify(added)}`);
      const [, fresh] = added[0] as [string, { name: string; vdu: string; ready: boolean }];
      assert.equal(fresh.vdu, vduId);
      assert.ok(fresh.ready, 'the replacement is Ready');
      assert.deepEqual([...podsBefore.keys()].filter((u) => u !== oldUid).sort(), [...podsAfter.keys()].filter((u) => u !== added[0]?.[0]).sort(), 'other pods untouched');
      if (kind === 'Pod' || kind === 'StatefulSet') assert.equal(fresh.name, oldName, 'same name, new incarnation');
      else assert.notEqual(fresh.name, oldName);

      // The instance: same VNFC ids, the resource id is the new pod.
      const after = await getInstance(env, instA);
      assert.deepEqual(ids(after.instantiatedVnfInfo.vnfcInfo), ids(before.instantiatedVnfInfo.vnfcInfo));
      assert.deepEqual(ids(after.instantiatedVnfInfo.vnfcResourceInfo), ids(before.instantiatedVnfInfo.vnfcResourceInfo));
      const healedInfo = (after.instantiatedVnfInfo.vnfcInfo as Json[]).find((c) => c.id === target.info.id) as Json;
      assert.equal(healedInfo.vnfcResourceInfoId, target.res.id);
      const healedRes = (after.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((r) => r.id === target.res.id) as Json;
      assert.equal(healedRes.computeResource.resourceId, fresh.name);
      assert.equal(healedRes.metadata.uid, added[0]?.[0]);
      for (const r of before.instantiatedVnfInfo.vnfcResourceInfo as Json[]) {
        if (r.id === target.res.id) continue;
        const now = (after.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((x) => x.id === r.id) as Json;
        assert.equal(now.computeResource.resourceId, r.computeResource.resourceId);
      }
      if (kind === 'StatefulSet') assert.deepEqual(healedRes.storageResourceIds, target.res.storageResourceIds, 'the claim stays attached');
      // The new pod's IP replaces the old one; the CP keeps its id.
      const podIps = (r: Json) => r.vnfcCpInfo?.[0]?.cpProtocolInfo?.[0]?.ipOverEthernet?.ipAddresses?.[0]?.addresses as string[] | undefined;
      assert.equal(healedRes.vnfcCpInfo[0].id, target.res.vnfcCpInfo[0].id, 'same CP id');
      assert.ok((podIps(healedRes) ?? []).length > 0, 'the new pod reports its IP');
      assert.notDeepEqual(podIps(healedRes), podIps(target.res), 'the address of the new pod');
      expectEtsiValid('v2', 'VnfInstance', after);

      // The op occ and its notifications.
      assert.equal(occ.operation, 'HEAL');
      assert.deepEqual(
        (occ.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.vduId, a.changeType, a.metadata?.replacedResourceId]),
        [[target.res.id, vduId, 'MODIFIED', oldName]],
      );
      assert.equal(occ.resourceChanges.affectedVnfcs[0].computeResource.resourceId, fresh.name);
      assert.deepEqual(occ.operationParams.vnfcInstanceId, [target.info.id]);
      expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
      assert.deepEqual(await notificationsOf(env, opId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT']);
    });
  }

  it('after a scale-out, a VNFC heal keeps the scaled replica count', async () => {
    for (const aspectId of ['web_deploy_aspect', 'db_aspect']) {
      const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${instA}/scale`, { type: 'SCALE_OUT', aspectId }));
      await waitOp(env, opId, 'COMPLETED');
    }
    const before = await getInstance(env, instA);
    assert.equal(vnfcsOf(before, 'VDU3').length, 3);
    assert.equal(vnfcsOf(before, 'VDU5').length, 2);
    const target = vnfcsOf(before, 'VDU3')[1] as { info: Json; res: Json };
    const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${instA}/heal`, { vnfcInstanceId: [target.info.id] }));
    const occ = await waitOp(env, opId, 'COMPLETED');
    assert.deepEqual((occ.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType]), [[target.res.id, 'MODIFIED']]);
    const pods = await livePods(NS_A, instA);
    assert.equal(countByVdu(pods).VDU3, 3);
    assert.ok([...pods.values()].every((p) => p.ready));
    const deploy = await env.kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-deploy', namespace: NS_A });
    assert.equal(deploy?.spec?.replicas, 3);
    const after = await getInstance(env, instA);
    assert.deepEqual(ids(after.instantiatedVnfInfo.vnfcInfo), ids(before.instantiatedVnfInfo.vnfcInfo));
    assert.deepEqual(after.instantiatedVnfInfo.scaleStatus, before.instantiatedVnfInfo.scaleStatus);
  });

  it('heals the whole CNF (v2, additionalParams.all): every pod new, sizes kept, StatefulSet claims are the same objects', async () => {
    const before = await getInstance(env, instA);
    const podsBefore = await livePods(NS_A, instA);
    const claimsBefore = await claimsOf(env, NS_A);
    assert.deepEqual([...claimsBefore.keys()].sort(), ['data-db-0', 'data-db-1']);

    const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${instA}/heal`, { additionalParams: { all: true } }));
    const occ = await waitOp(env, opId, 'COMPLETED');

    const podsAfter = await livePods(NS_A, instA);
    assert.deepEqual([...podsAfter.keys()].filter((u) => podsBefore.has(u)), [], 'no pod survived');
    assert.deepEqual(countByVdu(podsAfter), countByVdu(podsBefore));
    assert.deepEqual(countByVdu(podsAfter), { VDU1: 1, VDU2: 2, VDU3: 3, VDU4: 3, VDU5: 2 });
    assert.ok([...podsAfter.values()].every((p) => p.ready));
    assert.deepEqual(await claimsOf(env, NS_A), claimsBefore, 'same claims, same uids');

    const after = await getInstance(env, instA);
    assert.deepEqual(ids(after.instantiatedVnfInfo.vnfcInfo), ids(before.instantiatedVnfInfo.vnfcInfo), 'VNFC ids stable');
    assert.deepEqual(ids(after.instantiatedVnfInfo.virtualStorageResourceInfo), ids(before.instantiatedVnfInfo.virtualStorageResourceInfo));
    const affected = occ.resourceChanges.affectedVnfcs as Json[];
    assert.equal(affected.length, podsBefore.size);
    assert.ok(affected.every((a) => a.changeType === 'MODIFIED' && typeof a.metadata?.replacedResourceId === 'string'));
    assert.deepEqual(after.instantiatedVnfInfo.scaleStatus, before.instantiatedVnfInfo.scaleStatus);
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    assert.deepEqual(await notificationsOf(env, opId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT']);
  });

  it('heals the whole CNF through v1 with an empty body (SOL003): every pod new, the claim kept', async () => {
    const instB = await createInstance(env, 'v1', 'cnf-b');
    await instantiate(env, instB, NS_B, 'v1');
    const before = await getInstance(env, instB, 'v1');
    const podsBefore = await livePods(NS_B, instB);
    const claimsBefore = await claimsOf(env, NS_B);
    assert.equal(claimsBefore.size, 1);

    const opId = opIdOf(await env.api('POST', `/vnflcm/v1/vnf_instances/${instB}/heal`, {}));
    const occ = await waitOp(env, opId, 'COMPLETED', 'v1');

    const podsAfter = await livePods(NS_B, instB);
    assert.deepEqual([...podsAfter.keys()].filter((u) => podsBefore.has(u)), [], 'no pod survived');
    assert.deepEqual(countByVdu(podsAfter), countByVdu(podsBefore));
    assert.deepEqual(await claimsOf(env, NS_B), claimsBefore);
    const after = await getInstance(env, instB, 'v1');
    assert.deepEqual(ids(after.instantiatedVnfInfo.vnfcResourceInfo), ids(before.instantiatedVnfInfo.vnfcResourceInfo), 'v1 VNFC ids stable');
    expectEtsiValid('v1', 'VnfLcmOpOcc', occ);
    // Instance A was not touched by B's heal.
    assert.equal(countByVdu(await livePods(NS_A, instA)).VDU3, 3);
  });

  it('rejects an unknown vnfcInstanceId with 422 naming it (v2 and v1), and starts nothing', async () => {
    const occsBefore = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
    const r2 = await env.api('POST', `/vnflcm/v2/vnf_instances/${instA}/heal`, { vnfcInstanceId: ['no-such-vnfc'] });
    assert.equal(r2.status, 422, r2.text);
    assert.match(r2.body.detail, /no-such-vnfc/);
    const r1 = await env.api('POST', `/vnflcm/v1/vnf_instances/${instA}/heal`, { vnfcInstanceId: ['nope-1'] });
    assert.equal(r1.status, 422, r1.text);
    assert.match(r1.body.detail, /nope-1/);
    const occsAfter = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
    assert.equal(occsAfter.length, occsBefore.length);
  });
});
