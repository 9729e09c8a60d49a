/**
 * CNF drift and faults end to end (VNFM over HTTP + simulated Kubernetes): healing a VNFC whose pod
 * Kubernetes already replaced, a cluster API outage in the middle of a heal (FAILED_TEMP, then
 * retry), and the drift sync (`POST /vnflcm/v2/vnf_instances/{id}/sync` and the periodic pass)
 * that records pods replaced outside any operation with stable VNFC ids. Runs on PGlite and on
 * PostgreSQL (describeStores; the PostgreSQL half is the `pg` stage).
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { KubeObject } from '../../src/infra/kubernetes/index.ts';
import { VDU_LABEL } from '../../src/infra/kubernetes/index.ts';
import { DriftSync, resolveSyncOptions } from '../../src/lcm/sync.ts';
import { describeStores } from '../helpers/db.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { type CnfEnv, createInstance, getInstance, instantiate, isReady, type Json, notificationsOf, opIdOf, podsOf, startCnfEnv, until, vnfcsOf, waitOp } from './cnf-fixture.ts';

const NS = 'cnf-drift';

let env: CnfEnv;
let inst: string;

function vduPods(pods: KubeObject[], vduId: string): KubeObject[] {
  return pods.filter((p) => p.metadata.labels?.[VDU_LABEL] === vduId);
}

/** Fails a pod through the simulator and waits until its controller has a Ready replacement (other uid). */
async function failAndWaitReplacement(vduId: string, podName: string): Promise<KubeObject> {
  const old = (await podsOf(env, NS, inst)).find((p) => p.metadata.name === podName);
  assert.ok(old, `pod ${podName}`);
  await env.simControl('POST', `pods/${NS}/${podName}/fail`, { exitCode: 137 });
  const known = new Set((await getInstance(env, inst)).instantiatedVnfInfo.vnfcResourceInfo.map((r: Json) => r.computeResource.resourceId as string));
  return until(`a Ready replacement of ${podName}`, async () => {
    const pods = vduPods(await podsOf(env, NS, inst), vduId);
    return pods.find((p) => isReady(p) && p.metadata.uid !== old.metadata.uid && (p.metadata.name === podName || !known.has(p.metadata.name ?? '')));
  });
}

async function sync(id: string) {
  return env.api('POST', `/vnflcm/v2/vnf_instances/${id}/sync`);
}

await describeStores('CNF drift and faults through the VNFM API (simulated Kubernetes)', (stores) => {
  before(async () => {
    env = await startCnfEnv({ store: await stores.open() });
    inst = await createInstance(env, 'v2', 'cnf-drift');
    await instantiate(env, inst, NS, 'v2');
  });

  after(async () => {
    await env?.close();
  });

  it('heals a Deployment VNFC whose failed pod Kubernetes already replaced: the replacement is kept, not restarted', async () => {
    const before = await getInstance(env, inst);
    const [target] = vnfcsOf(before, 'VDU3');
    assert.ok(target);
    const failedName = target.res.computeResource.resourceId as string;
    const replacement = await failAndWaitReplacement('VDU3', failedName);

    const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${inst}/heal`, { vnfcInstanceId: [target.info.id] }));
    const occ = await waitOp(env, opId, 'COMPLETED');

    const pods = vduPods(await podsOf(env, NS, inst), 'VDU3');
    assert.ok(!pods.some((p) => p.metadata.name === failedName), 'the failed pod was removed');
    assert.equal(pods.filter((p) => !p.metadata.deletionTimestamp).length, 2);
    assert.ok(pods.some((p) => p.metadata.uid === replacement.metadata.uid && isReady(p)), 'the Ready replacement was not restarted');
    const affected = occ.resourceChanges.affectedVnfcs as Json[];
    assert.deepEqual(affected.map((a) => [a.id, a.changeType, a.metadata?.replacedResourceId, a.computeResource.resourceId]), [[target.res.id, 'MODIFIED', failedName, replacement.metadata.name]]);
    const after = await getInstance(env, inst);
    const res = (after.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((r) => r.id === target.res.id) as Json;
    assert.equal(res.computeResource.resourceId, replacement.metadata.name);
    assert.ok((after.instantiatedVnfInfo.vnfcInfo as Json[]).some((c) => c.id === target.info.id && c.vnfcResourceInfoId === target.res.id));
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    expectEtsiValid('v2', 'VnfInstance', after);
    expectEtsiValid('v1', 'VnfInstance', await getInstance(env, inst, 'v1'));
  });

  it('heals a StatefulSet VNFC whose pod was re-created under the same name: accepted as healed', async () => {
    const before = await getInstance(env, inst);
    const [target] = vnfcsOf(before, 'VDU5');
    assert.ok(target);
    const replacement = await failAndWaitReplacement('VDU5', 'db-0');
    const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${inst}/heal`, { vnfcInstanceId: [target.info.id] }));
    const occ = await waitOp(env, opId, 'COMPLETED');
    const db0 = vduPods(await podsOf(env, NS, inst), 'VDU5').find((p) => p.metadata.name === 'db-0');
    assert.equal(db0?.metadata.uid, replacement.metadata.uid, 'not restarted');
    assert.deepEqual((occ.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType, a.metadata?.replacedResourceId]), [[target.res.id, 'MODIFIED', 'db-0']]);
    const res = ((await getInstance(env, inst)).instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((r) => r.id === target.res.id) as Json;
    assert.equal(res.metadata.uid, replacement.metadata.uid);
  });

  it('cluster API failing mid-heal: FAILED_TEMP (sync and heal refused with 409), then retry after recovery: COMPLETED', async () => {
    const before = await getInstance(env, inst);
    const [target] = vnfcsOf(before, 'VDU2');
    assert.ok(target);
    const oldName = target.res.computeResource.resourceId as string;
    await env.simControl('PUT', 'kubelet', { delayMs: 1500 });
    try {
      const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${inst}/heal`, { vnfcInstanceId: [target.info.id] }));
      // Break the API once the target pod is being deleted (the VNFM then waits for its replacement).
      await until('the target pod being deleted', async () => {
        const st = await env.simControl('GET', 'state');
        const p = (st.pods as Json[]).find((x) => x.namespace === NS && x.name === oldName);
        return p === undefined || p.terminating ? true : undefined;
      });
      await env.simControl('POST', 'api/break', { dropWatches: true });
      const failed = await waitOp(env, opId, 'FAILED_TEMP');
      assert.equal(failed.error.status, 503, JSON.stringify(failed.error));
      assert.match(failed.error.detail as string, /./);
      expectEtsiValid('v2', 'VnfLcmOpOcc', failed);

      const busy = await sync(inst);
      assert.equal(busy.status, 409, busy.text);
      assert.equal(busy.body.conflictingLcmOpOccId ?? opId, opId);
      const heal2 = await env.api('POST', `/vnflcm/v2/vnf_instances/${inst}/heal`, { vnfcInstanceId: [target.info.id] });
      assert.equal(heal2.status, 409, heal2.text);

      await env.simControl('DELETE', 'faults');
      await env.simControl('PUT', 'kubelet', { delayMs: 50 });
      const retry = await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`);
      assert.equal(retry.status, 202, retry.text);
      const occ = await waitOp(env, opId, 'COMPLETED');
      assert.deepEqual((occ.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType, a.metadata?.replacedResourceId]), [[target.res.id, 'MODIFIED', oldName]]);
      expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
      assert.deepEqual(await notificationsOf(env, opId), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT', 'PROCESSING/START', 'COMPLETED/RESULT']);

      const pods = vduPods(await podsOf(env, NS, inst), 'VDU2').filter((p) => !p.metadata.deletionTimestamp);
      assert.equal(pods.length, 2);
      assert.ok(pods.every(isReady));
      assert.ok(!pods.some((p) => p.metadata.name === oldName));
      const after = await getInstance(env, inst);
      assert.deepEqual(
        (after.instantiatedVnfInfo.vnfcInfo as Json[]).map((c) => c.id).sort(),
        (before.instantiatedVnfInfo.vnfcInfo as Json[]).map((c) => c.id).sort(),
      );
    } finally {
      await env.simControl('DELETE', 'faults');
      await env.simControl('PUT', 'kubelet', { delayMs: 50 });
    }
  });

  it('sync records a pod Kubernetes replaced: new resource id, same VNFC ids, a MODIFY_INFO op occ', async () => {
    const before = await getInstance(env, inst);
    const target = vnfcsOf(before, 'VDU3')[1] as { info: Json; res: Json };
    const failedName = target.res.computeResource.resourceId as string;
    const replacement = await failAndWaitReplacement('VDU3', failedName);

    const r = await sync(inst);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.changed, true);
    assert.equal(r.body.settled, true);
    assert.deepEqual((r.body.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType, a.metadata?.replacedResourceId, a.computeResource.resourceId]), [[target.res.id, 'MODIFIED', failedName, replacement.metadata.name]]);

    const after = await getInstance(env, inst);
    const res = (after.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((x) => x.id === target.res.id) as Json;
    assert.equal(res.computeResource.resourceId, replacement.metadata.name);
    assert.ok((after.instantiatedVnfInfo.vnfcInfo as Json[]).some((c) => c.id === target.info.id && c.vnfcResourceInfoId === target.res.id));
    assert.deepEqual(
      (after.instantiatedVnfInfo.vnfcInfo as Json[]).map((c) => c.id).sort(),
      (before.instantiatedVnfInfo.vnfcInfo as Json[]).map((c) => c.id).sort(),
    );

    const occ = (await env.api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${r.body.vnfLcmOpOccId}`)).body;
    assert.equal(occ.operation, 'MODIFY_INFO');
    assert.equal(occ.operationState, 'COMPLETED');
    assert.equal(occ.isAutomaticInvocation, true);
    assert.deepEqual(occ.operationParams, { sync: true });
    assert.deepEqual(occ.resourceChanges.affectedVnfcs, r.body.affectedVnfcs);
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    expectEtsiValid('v1', 'VnfLcmOpOcc', (await env.api('GET', `/vnflcm/v1/vnf_lcm_op_occs/${r.body.vnfLcmOpOccId}`)).body);
    const listed = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
    assert.ok(listed.some((o) => o.id === r.body.vnfLcmOpOccId));
    assert.deepEqual(await notificationsOf(env, r.body.vnfLcmOpOccId as string), [], 'no notification for a sync');

    const again = await sync(inst);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { changed: false, settled: true, affectedVnfcs: [], affectedVirtualStorages: [], affectedVirtualLinks: [] });
    const metrics = await (await fetch(`${env.vnfm.url}/metrics`)).text();
    assert.match(metrics, /vnfm_sync_total\{result="changed"\} 1/);
  });

  it('sync recognises a StatefulSet pod re-created under the same name (new uid)', async () => {
    const before = await getInstance(env, inst);
    const [target] = vnfcsOf(before, 'VDU5');
    assert.ok(target);
    const replacement = await failAndWaitReplacement('VDU5', 'db-0');
    const r = await sync(inst);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.changed, true);
    assert.deepEqual((r.body.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType, a.metadata?.replacedResourceId]), [[target.res.id, 'MODIFIED', 'db-0']]);
    const res = ((await getInstance(env, inst)).instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((x) => x.id === target.res.id) as Json;
    assert.equal(res.metadata.uid, replacement.metadata.uid);
    assert.deepEqual(res.storageResourceIds, target.res.storageResourceIds);
  });

  it('sync stores nothing while the VIM shows another size than stored (settled: false)', async () => {
    const ref = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-deploy', namespace: NS };
    const before = await getInstance(env, inst);
    await env.kube.mergePatch(ref, { spec: { replicas: 3 } });
    try {
      await until('3 web-deploy pods', async () => (vduPods(await podsOf(env, NS, inst), 'VDU3').filter((p) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Failed').length === 3 ? true : undefined));
      const r = await sync(inst);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.changed, false);
      assert.equal(r.body.settled, false);
      assert.match(r.body.detail as string, /VDU3: 3 observed, 2 stored/);
      assert.deepEqual((await getInstance(env, inst)).instantiatedVnfInfo, before.instantiatedVnfInfo);
    } finally {
      await env.kube.mergePatch(ref, { spec: { replicas: 2 } });
    }
    await until('back to 2 web-deploy pods', async () => (vduPods(await podsOf(env, NS, inst), 'VDU3').filter((p) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Failed').length === 2 ? true : undefined));
    const r = await sync(inst);
    assert.equal(r.body.settled, true, r.text);
    // The ReplicaSet may have removed one of the original pods when scaling back: then the VNFC is
    // reported MODIFIED, never as a new or removed VNFC.
    for (const a of (r.body.affectedVnfcs ?? []) as Json[]) assert.equal(a.changeType, 'MODIFIED', r.text);
    const ids = (i: Json) => (i.instantiatedVnfInfo.vnfcInfo as Json[]).map((v) => v.id).sort();
    assert.deepEqual(ids(await getInstance(env, inst)), ids(before));
  });

  it('the periodic sync finds and records drift by itself', async () => {
    const ctx = env.vnfm.ctx;
    assert.ok(ctx.engine);
    const before = await getInstance(env, inst);
    const target = vnfcsOf(before, 'VDU2')[0] as { info: Json; res: Json };
    const replacement = await failAndWaitReplacement('VDU2', target.res.computeResource.resourceId as string);
    const periodic = new DriftSync({ ctx, engine: ctx.engine, options: resolveSyncOptions({ intervalMs: 100, initialDelayMs: 0, settleDelayMs: 100 }, ctx.vimPlugins.syncVimTypes()) });
    periodic.start();
    try {
      const occ = await until('a sync op occ', async () => {
        const list = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs?all_fields')).body as Json[];
        return list.find((o) => o.vnfInstanceId === inst && o.operation === 'MODIFY_INFO' && o.resourceChanges?.affectedVnfcs?.some((a: Json) => a.id === target.res.id));
      });
      assert.equal(occ.isAutomaticInvocation, true);
    } finally {
      await periodic.stop();
    }
    const res = ((await getInstance(env, inst)).instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((x) => x.id === target.res.id) as Json;
    assert.equal(res.computeResource.resourceId, replacement.metadata.name);
  });

  it('sync: 404 for an unknown instance, 409 for one not instantiated', async () => {
    const r404 = await sync('6d0b3d5e-0000-4000-8000-000000000000');
    assert.equal(r404.status, 404, r404.text);
    const fresh = await createInstance(env, 'v2', 'not-instantiated');
    const r409 = await sync(fresh);
    assert.equal(r409.status, 409, r409.text);
    const v1 = await env.api('POST', `/vnflcm/v1/vnf_instances/${inst}/sync`);
    assert.equal(v1.status, 404, 'v2 only');
  });
});
