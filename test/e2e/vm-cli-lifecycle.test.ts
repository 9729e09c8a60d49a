/**
 * Every `openstack vnflcm` subcommand an operator uses, through the real python-tackerclient, with
 * API v1 and v2, against the VNFM and the simulated OpenStack: versions; subsc create / list / show
 * / delete (with a real callback server); create --I (create + instantiate); list and show; heal of
 * one VNFC and of the whole VNF; scale out and in; op list (filtered) and op show; a scale whose
 * Heat update fails rolled back with `op rollback`; terminate --D (terminate, wait, delete); delete
 * of several instances. Exit codes and the lines the CLI prints are checked, and the server's state
 * behind the CLI's back.
 *
 * The CLI sends `Content-Type: application/json` on its DELETE and body-less POST requests: those
 * must be accepted (a regression here broke `terminate --D`).
 */
import assert from 'node:assert/strict';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { stage } from '../helpers/stages.ts';
import { TackerCli } from '../helpers/tacker-cli.ts';
import { EXT_VLS, getInstance, type Json, startVmEnv, type VmEnv, waitOp } from './vm-fixture.ts';

const { skip } = await stage('tacker-cli');

let env: VmEnv;
let cli: TackerCli;
let callback: Server;
let callbackUrl = '';
const callbackRequests: string[] = [];

before(async () => {
  if (skip) return;
  env = await startVmEnv({ target: 'sim', heatDelayMs: 20 });
  cli = new TackerCli(env.vnfm.url);
  callback = createServer((req, res) => {
    callbackRequests.push(req.method ?? '');
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/lcm-events`;
});
after(async () => {
  cli?.close();
  callback?.close();
  await env?.close();
});

/** A `| Field | Value |` row of a CLI table. */
function row(out: string, field: string): string | undefined {
  const re = new RegExp(`^\\|\\s*${field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*\\|\\s*(.*?)\\s*\\|\\s*$`, 'm');
  return re.exec(out)?.[1];
}

for (const api of [1, 2] as const) {
  const v = `v${api}` as 'v1' | 'v2';

  describe(`openstack vnflcm --os-tacker-api-version ${api} (real python-tackerclient): the whole lifecycle`, { skip }, () => {
    let id = '';

    async function ok(args: string[]): Promise<string> {
      const r = await cli.run(args, { api, timeoutMs: 120_000 });
      assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr || r.stdout}`);
      return r.stdout;
    }

    /** The op occs of the instance, newest first. */
    async function opsOf(): Promise<Json[]> {
      const r = await env.api('GET', `/vnflcm/${v}/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${id})`);
      assert.equal(r.status, 200, r.text);
      return (r.body as unknown as Json[]).sort((a, b) => String(b.startTime).localeCompare(String(a.startTime)));
    }

    /** Runs an async CLI command; asserts its line; returns the op occ it started. */
    async function started(args: string[], line: string): Promise<string> {
      const known = new Set((await opsOf()).map((o) => o.id as string));
      assert.equal((await ok(args)).trim(), line);
      const fresh = (await opsOf()).filter((o) => !known.has(o.id as string));
      assert.equal(fresh.length, 1, 'one new op occurrence');
      return fresh[0]?.id as string;
    }

    /** VNFC ids the CLI's heal takes: v1 vnfcResourceInfo ids, v2 vnfcInfo ids. */
    function vnfcIds(inst: Json): string[] {
      const info = inst.instantiatedVnfInfo;
      return api === 1 ? (info.vnfcResourceInfo as Json[]).filter((r) => r.vduId === 'VDU1').map((r) => r.id) : (info.vnfcInfo as Json[]).filter((r) => r.vduId === 'VDU1').map((r) => r.id);
    }

    it('versions', async () => {
      const out = await ok(['vnflcm', 'versions']);
      assert.match(out, /uriPrefix/);
      assert.match(out, /apiVersions/);
    });

    it('subsc create / list / show / delete', async () => {
      const file = cli.file(`subsc-${v}.json`, { filter: { notificationTypes: ['VnfLcmOperationOccurrenceNotification'] }, callbackUri: callbackUrl });
      const created = await ok(['vnflcm', 'subsc', 'create', file]);
      const sid = row(created, 'ID') as string;
      assert.match(sid, /^[0-9a-f-]{36}$/);
      assert.equal(row(created, 'Callback URI'), callbackUrl);
      assert.ok(callbackRequests.includes('GET'), 'the callback was tested with a GET');
      const listed = await cli.json<Json[]>(['vnflcm', 'subsc', 'list'], { api });
      assert.ok(listed.some((s) => s.ID === sid));
      const shown = await ok(['vnflcm', 'subsc', 'show', sid]);
      assert.equal(row(shown, 'ID'), sid);
      assert.equal((await ok(['vnflcm', 'subsc', 'delete', sid])).trim(), `Lccn Subscription '${sid}' is deleted successfully`);
      assert.equal((await env.api('GET', `/vnflcm/${v}/subscriptions/${sid}`)).status, 404);
    });

    it('create --I file.json creates and instantiates; list and show', async () => {
      const file = cli.file(`instantiate-${v}.json`, { flavourId: 'simple', extVirtualLinks: EXT_VLS });
      const out = await ok(['vnflcm', 'create', env.vnfdId, '--name', `cli-life-${v}`, '--I', file]);
      id = (/VNF Instance ([0-9a-f-]{36}) is created and instantiation request has been accepted\./.exec(out) as RegExpExecArray)?.[1] as string;
      assert.ok(id, out);
      const [inst] = await opsOf();
      assert.equal(inst?.operation, 'INSTANTIATE');
      await waitOp(env, inst?.id as string, 'COMPLETED', v);
      const listed = await cli.json<Json[]>(['vnflcm', 'list'], { api });
      assert.equal(listed.find((r) => r.ID === id)?.['Instantiation State'], 'INSTANTIATED');
      const shown = await ok(['vnflcm', 'show', id]);
      assert.equal(row(shown, 'Instantiation State'), 'INSTANTIATED');
      assert.equal(row(shown, 'VNF Instance Name'), `cli-life-${v}`);
    });

    it('heal --vnfc-instance (one VNFC) and heal (the whole VNF)', async () => {
      const before = await getInstance(env, id, v);
      const [target] = vnfcIds(before);
      const one = await started(['vnflcm', 'heal', id, '--vnfc-instance', target as string, '--cause', `cli ${v}`], `Heal request for VNF Instance ${id} has been accepted.`);
      await waitOp(env, one, 'COMPLETED', v);
      const whole = await started(['vnflcm', 'heal', id], `Heal request for VNF Instance ${id} has been accepted.`);
      await waitOp(env, whole, 'COMPLETED', v);
      assert.deepEqual(vnfcIds(await getInstance(env, id, v)).sort(), vnfcIds(before).sort(), 'VNFC ids are stable across heals');
    });

    it('scale --type SCALE_OUT, then SCALE_IN', async () => {
      const out = await started(['vnflcm', 'scale', id, '--type', 'SCALE_OUT', '--aspect-id', 'VDU1_scale'], `Scale request for VNF Instance ${id} has been accepted.`);
      await waitOp(env, out, 'COMPLETED', v);
      assert.equal(vnfcIds(await getInstance(env, id, v)).length, 3);
      const inn = await started(['vnflcm', 'scale', id, '--type', 'SCALE_IN', '--aspect-id', 'VDU1_scale', '--number-of-steps', '1'], `Scale request for VNF Instance ${id} has been accepted.`);
      await waitOp(env, inn, 'COMPLETED', v);
      assert.equal(vnfcIds(await getInstance(env, id, v)).length, 2);
    });

    it('a scale whose Heat update fails: op rollback rolls it back', async () => {
      await env.simControl('POST', 'heat/failures', { operation: 'update', reason: 'Error: resources.VDU1: simulated quota exceeded' });
      const op = await started(['vnflcm', 'scale', id, '--type', 'SCALE_OUT', '--aspect-id', 'VDU1_scale'], `Scale request for VNF Instance ${id} has been accepted.`);
      await waitOp(env, op, 'FAILED_TEMP', v);
      await env.simControl('DELETE', 'heat/failures');
      assert.equal((await ok(['vnflcm', 'op', 'rollback', op])).trim(), `Rollback request for LCM operation ${op} has been accepted`);
      await waitOp(env, op, 'ROLLED_BACK', v);
      assert.equal(vnfcIds(await getInstance(env, id, v)).length, 2);
    });

    it('op list --filter and op show', async () => {
      const rows = await cli.json<Json[]>(['vnflcm', 'op', 'list', '--filter', `(eq,vnfInstanceId,${id})`], { api });
      const seen = rows.map((r) => `${r.Operation}/${r['Operation State']}`).sort();
      assert.deepEqual(seen, ['HEAL/COMPLETED', 'HEAL/COMPLETED', 'INSTANTIATE/COMPLETED', 'SCALE/COMPLETED', 'SCALE/COMPLETED', 'SCALE/ROLLED_BACK']);
      const first = rows[0]?.ID as string;
      const shown = await ok(['vnflcm', 'op', 'show', first]);
      assert.equal(row(shown, 'ID'), first);
      assert.equal(row(shown, 'VNF Instance ID'), id);
    });

    it('terminate --D terminates, waits, and deletes the instance', async () => {
      const out = await ok(['vnflcm', 'terminate', id, '--termination-type', 'FORCEFUL', '--D']);
      const lines = out.trim().split('\n').map((l) => l.trim());
      assert.deepEqual(lines, [`Terminate request for VNF Instance '${id}' has been accepted.`, 'Waiting for vnf instance to be terminated before deleting', `VNF Instance '${id}' is deleted successfully`]);
      assert.equal((await env.api('GET', `/vnflcm/${v}/vnf_instances/${id}`)).status, 404);
    });

    it('delete of several instances', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const c = await env.api('POST', `/vnflcm/${v}/vnf_instances`, { vnfdId: env.vnfdId, vnfInstanceName: `cli-del-${v}-${i}` });
        assert.equal(c.status, 201, c.text);
        ids.push(c.body.id as string);
      }
      assert.match(await ok(['vnflcm', 'delete', ...ids]), /All specified vnf instances are deleted successfully/);
      for (const x of ids) assert.equal((await env.api('GET', `/vnflcm/${v}/vnf_instances/${x}`)).status, 404);
    });
  });
}
