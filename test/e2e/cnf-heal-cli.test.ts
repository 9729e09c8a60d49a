/**
 * CNF heal with the real OpenStack Tacker CLI (python3-tackerclient) against the listening VNFM
 * and the simulated Kubernetes cluster: `openstack vnflcm heal <id> --vnfc-instance <x>` with API
 * v1 (a vnfcResourceInfo id) and v2 (a vnfcInfo id), and the whole-CNF heal with an additional
 * parameter file. Checks the printed line, then follows the operation to COMPLETED through the
 * API (and once through the CLI's own `vnflcm op list`), and the pods in the cluster. Then, for v1
 * and v2, the Tacker flow of a subset instantiate: `openstack vnflcm instantiate <id> <file.json>`
 * naming only some manifests in `lcm-kubernetes-def-files`, into a namespace that does not exist
 * (the VNFM creates it), a heal of one deployed VNFC, and `openstack vnflcm terminate` (which
 * deletes the namespace again).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CREATED_FOR_LABEL, VDU_LABEL } from '../../src/infra/kubernetes/manifests.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { stage } from '../helpers/stages.ts';
import { TackerCli } from '../helpers/tacker-cli.ts';
import { type CnfEnv, createInstance, getInstance, instantiate, type Json, podsOf, startCnfEnv, vnfcsOf, waitOp } from './cnf-fixture.ts';

const { skip } = await stage('tacker-cli');

const NS = 'cnf-cli';

let env: CnfEnv;
let cli: TackerCli;
let inst: string;

/** The HEAL op occ of the instance started since `known` was taken (the CLI prints no op id). */
async function newHealOp(known: Set<string>): Promise<string> {
  const list = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
  const fresh = list.filter((o) => o.operation === 'HEAL' && o.vnfInstanceId === inst && !known.has(o.id as string));
  assert.equal(fresh.length, 1, JSON.stringify(list));
  return (fresh[0] as Json).id as string;
}

async function healOpIds(): Promise<Set<string>> {
  const list = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
  return new Set(list.filter((o) => o.operation === 'HEAL').map((o) => o.id as string));
}

before(async () => {
  if (skip) return;
  env = await startCnfEnv();
  cli = new TackerCli(env.vnfm.url);
  inst = await createInstance(env, 'v2', 'cnf-cli');
  await instantiate(env, inst, NS, 'v2');
});

after(async () => {
  cli?.close();
  await env?.close();
});

describe('openstack vnflcm heal on a CNF (real python-tackerclient)', { skip }, () => {
  it('v1: heal --vnfc-instance <vnfcResourceInfo id> is accepted and replaces that pod only', async () => {
    const before = await getInstance(env, inst, 'v1');
    const target = (before.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((r) => r.vduId === 'VDU3') as Json;
    const oldPod = target.computeResource.resourceId as string;
    const known = await healOpIds();
    const r = await cli.run(['vnflcm', 'heal', inst, '--vnfc-instance', target.id as string, '--cause', 'cli v1'], { api: 1 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `Heal request for VNF Instance ${inst} has been accepted.`);
    const opId = await newHealOp(known);
    const occ = await waitOp(env, opId, 'COMPLETED', 'v1');
    assert.deepEqual(occ.operationParams.vnfcInstanceId, [target.id]);
    assert.deepEqual((occ.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType]), [[target.id, 'MODIFIED']]);
    const names = (await podsOf(env, NS, inst)).filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name);
    assert.ok(!names.includes(oldPod), 'the old pod is gone');
    const after = await getInstance(env, inst, 'v1');
    const healed = (after.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((x) => x.id === target.id) as Json;
    assert.notEqual(healed.computeResource.resourceId, oldPod);
    assert.ok(names.includes(healed.computeResource.resourceId));
  });

  it('v2: heal --vnfc-instance <vnfcInfo id> with --os-tacker-api-version 2', async () => {
    const before = await getInstance(env, inst);
    const [target] = vnfcsOf(before, 'VDU1');
    assert.ok(target);
    const oldUid = (await podsOf(env, NS, inst)).find((p) => p.metadata.name === 'web-pod')?.metadata.uid;
    const known = await healOpIds();
    const r = await cli.run(['vnflcm', 'heal', inst, '--vnfc-instance', target.info.id as string], { api: 2 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `Heal request for VNF Instance ${inst} has been accepted.`);
    const opId = await newHealOp(known);
    const occ = await waitOp(env, opId, 'COMPLETED');
    assert.deepEqual((occ.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType, a.metadata?.replacedResourceId]), [[target.res.id, 'MODIFIED', 'web-pod']]);
    const pod = (await podsOf(env, NS, inst)).find((p) => p.metadata.name === 'web-pod' && !p.metadata.deletionTimestamp);
    assert.ok(pod && pod.metadata.uid !== oldUid, 'web-pod re-created');
  });

  it('v2: whole-CNF heal with --additional-param-file {"additionalParams": {"all": true}}', async () => {
    const uidsBefore = new Set((await podsOf(env, NS, inst)).map((p) => p.metadata.uid));
    const known = await healOpIds();
    const file = cli.file('heal-all.json', { additionalParams: { all: true } });
    const r = await cli.run(['vnflcm', 'heal', inst, '--additional-param-file', file], { api: 2 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `Heal request for VNF Instance ${inst} has been accepted.`);
    const opId = await newHealOp(known);
    await waitOp(env, opId, 'COMPLETED');
    // The CLI's own view of the operation.
    const rows = await cli.json<Json[]>(['vnflcm', 'op', 'list', '--filter', `(eq,vnfInstanceId,${inst})`], { api: 2 });
    assert.deepEqual(rows.filter((r) => r.ID === opId).map((r) => [r.Operation, r['Operation State']]), [['HEAL', 'COMPLETED']]);
    const live = (await podsOf(env, NS, inst)).filter((p) => !p.metadata.deletionTimestamp);
    assert.ok(live.length >= 9);
    assert.ok(live.every((p) => !uidsBefore.has(p.metadata.uid)), 'every pod re-created');
  });
});

/** The op occ of `operation` on `id` started since `known` was taken (the CLI prints no op id). */
async function newOp(id: string, operation: string, known: Set<string>): Promise<string> {
  const list = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
  const fresh = list.filter((o) => o.operation === operation && o.vnfInstanceId === id && !known.has(o.id as string));
  assert.equal(fresh.length, 1, JSON.stringify(list));
  return (fresh[0] as Json).id as string;
}

async function opIds(): Promise<Set<string>> {
  return new Set(((await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[]).map((o) => o.id as string));
}

const SUBSET_FILES = ['Files/kubernetes/deployment.yaml', 'Files/kubernetes/statefulset.yaml'];

describe('openstack vnflcm instantiate of a subset of the manifests, heal, terminate (real python-tackerclient)', { skip }, () => {
  for (const api of [1, 2] as const) {
    const v = api === 1 ? 'v1' : 'v2';
    it(`${v}: instantiate <id> file.json with some lcm-kubernetes-def-files into a new namespace, heal, terminate`, async () => {
      const ns = `cnf-cli-subset-${v}`;
      const id = await createInstance(env, v, `cnf-cli-subset-${v}`);
      const request: Json = { flavourId: 'simple', additionalParams: { 'lcm-kubernetes-def-files': SUBSET_FILES, namespace: ns } };
      if (api === 2) request.vimConnectionInfo = { vim1: { vimId: env.vimId, vimType: 'kubernetes' } };
      const file = cli.file(`instantiate-subset-${v}.json`, request);

      // instantiate
      let known = await opIds();
      let r = await cli.run(['vnflcm', 'instantiate', id, file], { api });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), `Instantiate request for VNF Instance ${id} has been accepted.`);
      const instOp = await newOp(id, 'INSTANTIATE', known);
      const occ = await waitOp(env, instOp, 'COMPLETED', v);
      expectEtsiValid(v, 'VnfLcmOpOcc', occ);
      assert.deepEqual((occ.resourceChanges.affectedVnfcs as Json[]).map((a) => a.vduId).sort(), ['VDU3', 'VDU3', 'VDU5']);
      const inst = await getInstance(env, id, v);
      const res = inst.instantiatedVnfInfo.vnfcResourceInfo as Json[];
      assert.deepEqual(res.map((x) => x.vduId).sort(), ['VDU3', 'VDU3', 'VDU5']);
      const live = await env.kube.get({ apiVersion: 'v1', kind: 'Namespace', name: ns });
      assert.equal(live?.metadata.labels?.[CREATED_FOR_LABEL], id, 'namespace created for the instance');
      const vdus = (await podsOf(env, ns, id)).map((p) => p.metadata.labels?.[VDU_LABEL]).sort();
      assert.deepEqual(vdus, ['VDU3', 'VDU3', 'VDU5']);

      // heal one deployed VNFC (v1: vnfcResourceInfo id, v2: vnfcInfo id)
      const target = res.find((x) => x.vduId === 'VDU5') as Json;
      const vnfcId = api === 1 ? (target.id as string) : (vnfcsOf(await getInstance(env, id), 'VDU5')[0]?.info.id as string);
      known = await opIds();
      r = await cli.run(['vnflcm', 'heal', id, '--vnfc-instance', vnfcId], { api });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), `Heal request for VNF Instance ${id} has been accepted.`);
      const healOp = await newOp(id, 'HEAL', known);
      const healed = await waitOp(env, healOp, 'COMPLETED', v);
      expectEtsiValid(v, 'VnfLcmOpOcc', healed);
      assert.deepEqual((healed.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.vduId, a.changeType]), [[target.id, 'VDU5', 'MODIFIED']]);

      // terminate
      known = await opIds();
      r = await cli.run(['vnflcm', 'terminate', id, '--termination-type', 'FORCEFUL'], { api });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), `Terminate request for VNF Instance '${id}' has been accepted.`);
      const termOp = await newOp(id, 'TERMINATE', known);
      const term = await waitOp(env, termOp, 'COMPLETED', v);
      expectEtsiValid(v, 'VnfLcmOpOcc', term);
      assert.deepEqual((term.resourceChanges.affectedVnfcs as Json[]).map((a) => `${a.vduId}/${a.changeType}`).sort(), ['VDU3/REMOVED', 'VDU3/REMOVED', 'VDU5/REMOVED']);
      assert.equal((await getInstance(env, id, v)).instantiationState, 'NOT_INSTANTIATED');
      assert.equal(await env.kube.get({ apiVersion: 'v1', kind: 'Namespace', name: ns }), undefined, 'namespace deleted');
    });
  }
});
