/**
 * CNF heal with the real OpenStack Tacker CLI (python3-tackerclient) against the listening VNFM
 * and the simulated Kubernetes cluster: `openstack vnflcm heal <id> --vnfc-instance <x>` with API
 * v1 (a vnfcResourceInfo id) and v2 (a vnfcInfo id), and the whole-CNF heal with an additional
 * parameter file. Checks the printed line, then follows the operation to COMPLETED through the
 * API (and once through the CLI's own `vnflcm op list`), and the pods in the cluster.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
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
