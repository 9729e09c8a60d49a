/**
 * VM healing through the real OpenStack Tacker CLI (python3-tackerclient, `openstack vnflcm ...`,
 * API v1) against the VNFM and the simulated OpenStack: instantiate from a parameter file, heal one
 * VNFC by its v1 vnfcResourceInfo id, scale out, list and show op occurrences, and the error
 * handling of a heal whose Heat update failed: `op retry` (completes) and `op fail` (FAILED, the
 * instance usable again). Printed lines are the ones tackerclient prints (docs: spec of the CLI).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { stage } from '../helpers/stages.ts';
import { TackerCli } from '../helpers/tacker-cli.ts';
import { EXT_VLS, getInstance, type Json, notificationsOf, serversOf, startVmEnv, type VmEnv, waitOp } from './vm-fixture.ts';

const { skip } = await stage('tacker-cli');

let env: VmEnv;
let cli: TackerCli;

before(async () => {
  if (skip) return;
  env = await startVmEnv({ target: 'sim', heatDelayMs: 20 });
  cli = new TackerCli(env.vnfm.url);
});
after(async () => {
  cli?.close();
  await env?.close();
});

/** Runs the CLI and asserts exit 0; returns stdout. */
async function ok(args: string[]): Promise<string> {
  const r = await cli.run(args);
  assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** The op occ ids of an instance, newest first (through the API). */
async function opsOf(id: string): Promise<Json[]> {
  const r = await env.api('GET', `/vnflcm/v1/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${id})`);
  assert.equal(r.status, 200, r.text);
  return (r.body as unknown as Json[]).sort((a, b) => String(b.startTime).localeCompare(String(a.startTime)));
}

/** Runs an async CLI command and returns the id of the op occ it started. */
async function started(id: string, args: string[], line: string): Promise<string> {
  const known = new Set((await opsOf(id)).map((o) => o.id as string));
  const out = await ok(args);
  assert.equal(out.trim(), line);
  const fresh = (await opsOf(id)).filter((o) => !known.has(o.id as string));
  assert.equal(fresh.length, 1, 'one new op occurrence');
  return fresh[0]?.id as string;
}

/** A `| Field | Value |` row of a CLI table. */
function row(out: string, field: string): string | undefined {
  const re = new RegExp(`^\\|\\s*${field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*\\|\\s*(.*?)\\s*\\|\\s*$`, 'm');
  return re.exec(out)?.[1];
}

function vdu1Resources(inst: Json): Json[] {
  return (inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).filter((r) => r.vduId === 'VDU1');
}

describe('openstack vnflcm (real python-tackerclient): VM heal on the simulated OpenStack', { skip }, () => {
  let id = '';
  let healOp = '';

  it('instantiate <id> file.json on the default VIM', async () => {
    const c = await env.api('POST', '/vnflcm/v1/vnf_instances', { vnfdId: env.vnfdId, vnfInstanceName: 'vm-cli' });
    assert.equal(c.status, 201, c.text);
    id = c.body.id as string;
    const file = cli.file('instantiate.json', { flavourId: 'simple', extVirtualLinks: EXT_VLS });
    const op = await started(id, ['vnflcm', 'instantiate', id, file], `Instantiate request for VNF Instance ${id} has been accepted.`);
    await waitOp(env, op, 'COMPLETED', 'v1');
    const inst = await getInstance(env, id, 'v1');
    assert.equal(inst.instantiationState, 'INSTANTIATED');
    assert.equal(vdu1Resources(inst).length, 2);
    assert.equal(inst.vimConnectionInfo[0].vimId, env.vimId, 'the default VIM was used');
  });

  it('heal <id> --vnfc-instance <v1 vnfcResourceInfo id> replaces that server only', async () => {
    const before = await getInstance(env, id, 'v1');
    const target = vdu1Resources(before)[0] as Json;
    healOp = await started(id, ['vnflcm', 'heal', id, '--vnfc-instance', target.id, '--cause', 'cli heal'], `Heal request for VNF Instance ${id} has been accepted.`);
    await waitOp(env, healOp, 'COMPLETED', 'v1');
    const after = await getInstance(env, id, 'v1');
    const s0 = serversOf(before);
    const s1 = serversOf(after);
    assert.notEqual(s1.get(target.id), s0.get(target.id));
    for (const [rid, srv] of s0) if (rid !== target.id) assert.equal(s1.get(rid), srv);
    assert.deepEqual(await notificationsOf(env, healOp), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT']);
  });

  it('scale <id> --type SCALE_OUT --aspect-id VDU1_scale adds a member', async () => {
    const op = await started(id, ['vnflcm', 'scale', id, '--type', 'SCALE_OUT', '--aspect-id', 'VDU1_scale'], `Scale request for VNF Instance ${id} has been accepted.`);
    await waitOp(env, op, 'COMPLETED', 'v1');
    assert.equal(vdu1Resources(await getInstance(env, id, 'v1')).length, 3);
  });

  it('op list and op show report the operations', async () => {
    const rows = await cli.json<Json[]>(['vnflcm', 'op', 'list']);
    assert.deepEqual(Object.keys(rows[0] ?? {}), ['ID', 'Operation State', 'VNF Instance ID', 'Operation']);
    const mine = rows.filter((r) => r['VNF Instance ID'] === id).map((r) => `${r.Operation}/${r['Operation State']}`).sort();
    assert.deepEqual(mine, ['HEAL/COMPLETED', 'INSTANTIATE/COMPLETED', 'SCALE/COMPLETED']);
    const shown = await ok(['vnflcm', 'op', 'show', healOp]);
    assert.equal(row(shown, 'ID'), healOp);
    assert.equal(row(shown, 'Operation State'), 'COMPLETED');
    assert.equal(row(shown, 'Operation'), 'HEAL');
    assert.equal(row(shown, 'VNF Instance ID'), id);
    assert.equal(row(shown, 'Is Automatic Invocation'), 'False');
    assert.match(shown, /"changeType": "MODIFIED"/, 'resource changes printed');
  });

  it('a heal whose Heat update fails: op show FAILED_TEMP, op retry completes it', async () => {
    const target = vdu1Resources(await getInstance(env, id, 'v1'))[1] as Json;
    await env.simControl('POST', 'heat/failures', { operation: 'update', reason: 'Error: resources.VDU1: simulated compute outage' });
    const op = await started(id, ['vnflcm', 'heal', id, '--vnfc-instance', target.id], `Heal request for VNF Instance ${id} has been accepted.`);
    await waitOp(env, op, 'FAILED_TEMP', 'v1');
    const shown = await cli.json<Json>(['vnflcm', 'op', 'show', op]);
    assert.equal(shown['Operation State'], 'FAILED_TEMP');
    assert.match(JSON.stringify(shown.Error), /simulated compute outage/);
    await env.simControl('DELETE', 'heat/failures');
    assert.equal((await ok(['vnflcm', 'op', 'retry', op])).trim(), `Retry request for LCM operation ${op} has been accepted`);
    await waitOp(env, op, 'COMPLETED', 'v1');
    assert.deepEqual(await notificationsOf(env, op), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT', 'PROCESSING/START', 'COMPLETED/RESULT']);
  });

  it('a heal whose Heat update fails: op fail ends it FAILED, the next heal repairs the VNFC', async () => {
    const before = await getInstance(env, id, 'v1');
    const target = vdu1Resources(before)[0] as Json;
    await env.simControl('POST', 'heat/failures', { operation: 'update', reason: 'Error: resources.VDU1: simulated compute outage' });
    const op = await started(id, ['vnflcm', 'heal', id, '--vnfc-instance', target.id], `Heal request for VNF Instance ${id} has been accepted.`);
    await waitOp(env, op, 'FAILED_TEMP', 'v1');
    await env.simControl('DELETE', 'heat/failures');
    const failed = await ok(['vnflcm', 'op', 'fail', op]);
    assert.equal(row(failed, 'ID'), op);
    assert.equal(row(failed, 'Operation State'), 'FAILED');
    assert.deepEqual(await notificationsOf(env, op), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT', 'FAILED/RESULT']);
    // FAILED is final: the instance takes requests again, and a new heal of the same VNFC completes.
    const again = await env.api('POST', `/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    assert.equal(again.status, 202, again.text);
    await waitOp(env, String(again.headers.get('location')).split('/').pop() as string, 'COMPLETED', 'v1');
    const after = await getInstance(env, id, 'v1');
    assert.notEqual(serversOf(after).get(target.id), serversOf(before).get(target.id));
    assert.equal(vdu1Resources(after).length, 3);
  });
});
