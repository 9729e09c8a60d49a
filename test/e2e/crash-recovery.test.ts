/**
 * Kill -9 in the middle of a heal. The VNFM runs as a real child process on an embedded data
 * directory and heals a VNFC on the simulated OpenStack; it is killed with SIGKILL at a point the
 * test controls, and started again on the same data directory.
 *
 * - Inside the infra step (the sim holds the Heat stack update, so the kill lands while the stack
 *   is UPDATE_IN_PROGRESS): the restarted VNFM resumes the op BY ITSELF to COMPLETED, without a
 *   retry; the VNFC keeps its ids, its server is replaced exactly once (one mark-unhealthy in the
 *   sim's journal), and no server is left over or missing.
 * - Inside a management hook script (heal_start blocks until the test releases it): the step is
 *   not known to be safe to repeat, so the restarted VNFM does NOT resume it; the op goes
 *   FAILED_TEMP saying so, the infra step has not run, and `retry` runs the hook again and
 *   completes the heal.
 * - Inside the Server Notifier alarm removal of an automatic heal (the Server Notifier sim holds the
 *   alarm DELETE): that hook is idempotent by construction (a DELETE answered 404 is done), so the
 *   restarted VNFM resumes it by itself; the repeated DELETE gets 404, the heal COMPLETES and the
 *   new server is registered exactly once.
 *
 * No sleeps position the kill: the sim's hold says when Heat got the update, the hook's marker
 * file says when the script runs. Timeouts only guard against hangs (the machine may be loaded).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { type ServerNotifierSim, startServerNotifierSim } from '../../src/sim/server-notifier/index.ts';
import { freePort } from '../helpers/app.ts';
import { ROOT } from '../helpers/packages.ts';
import { guard as guardPromise, until as waitUntil } from '../helpers/wait.ts';

const V2 = { version: '2.0.0' };
/** Failure guards only: how long a step may take on a loaded 2-core machine before the test gives up. */
const START_GUARD_MS = 180_000;
const OP_GUARD_MS = 120_000;

let sim: OpenStackSim;
let notifier: ServerNotifierSim;
let work: string;
let dataDir: string;
let port: number;
let url: string;
let child: ChildProcess | undefined;
let vmVnfdId = '';
let hookVnfdId = '';
/** Written by the blocking hook script: one line `<pid> <cwd>` per run. */
let marker: string;
/** The blocking hook script returns once this file exists. */
let release: string;

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, guardMs = OP_GUARD_MS): Promise<T> => waitUntil(what, fn, guardMs, 100);
const guard = <T>(what: string, p: Promise<T>, guardMs = OP_GUARD_MS): Promise<T> => guardPromise(what, p, guardMs);

async function startVnfmProcess(): Promise<void> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '--no-sim', '--data-dir', dataDir, '--port', String(port), '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    // A short packing window: an automatic heal starts soon after its fault notification.
    // Loopback endpoints (the simulators) allowed; hook scripts as this user (they write markers into the test's folder).
    env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0', VNFM_FAULT_WINDOW_MS: '100', VNFM_OUTBOUND_ALLOW: '127.0.0.0/8', VNFM_OUTBOUND_VIM_ALLOW: '127.0.0.0/8', VNFM_MGMT_SCRIPT_USER: 'self' },
  });
  child = proc;
  let exited = false;
  proc.once('exit', () => {
    exited = true;
  });
  await until(
    'the VNFM to answer /healthz',
    async () => {
      if (exited) throw new Error('the VNFM process exited during start');
      try {
        return (await fetch(`${url}/healthz`)).ok;
      } catch {
        return false;
      }
    },
    START_GUARD_MS,
  );
}

async function killVnfm(): Promise<void> {
  const proc = child as ChildProcess;
  const gone = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await gone;
  child = undefined;
}

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; location: string; body: Json }> {
  const r = await fetch(`${url}${path}`, { method, headers: body === undefined ? V2 : { ...V2, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  return { status: r.status, location: r.headers.get('location') ?? '', body: text ? JSON.parse(text) : {} };
}

/** Waits for one of the FINAL-ish states and returns the op occ (the caller asserts which one). */
async function waitOp(id: string, states: string[]): Promise<Json> {
  return until(`op ${id} in ${states.join('/')}`, async () => {
    const o = await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${id}`);
    return states.includes(o.body.operationState) ? o.body : undefined;
  });
}

async function onboard(dir: string): Promise<string> {
  const pkg = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
  assert.equal(pkg.status, 201);
  const up = await fetch(`${url}/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(buildCsarFromDir(dir)) });
  assert.equal(up.status, 202);
  const p = await until(`package ${pkg.body.id} onboarded`, async () => {
    const g = await api('GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
    assert.notEqual(g.body.onboardingState, 'ERROR', JSON.stringify(g.body.onboardingFailureDetails));
    return g.body.onboardingState === 'ONBOARDED' ? g.body : undefined;
  });
  return p.vnfdId as string;
}

/** samples/vm-basic with another VNFD id and a heal_start hook that blocks until `release` exists. */
function blockingHookPackage(): string {
  const dir = join(work, 'pkg-blocking-hook');
  cpSync(join(ROOT, 'samples/vm-basic'), dir, { recursive: true });
  const oldId = '5a0c8a32-3b1e-4f2a-9d63-7c1f2e4b8a01';
  const newId = '5a0c8a32-3b1e-4f2a-9d63-00000000c4a5';
  for (const f of readdirSync(join(dir, 'Definitions'))) {
    const p = join(dir, 'Definitions', f);
    writeFileSync(p, readFileSync(p, 'utf8').split(oldId).join(newId));
  }
  const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
  let text = readFileSync(df, 'utf8');
  const hooks = '        Vnflcm:\n';
  const artifacts = '      artifacts:\n';
  assert.ok(text.includes(hooks) && text.includes(artifacts), 'the sample flavour declares hooks and artifacts');
  text = text.replace(hooks, `${hooks}          heal_start:\n            implementation: blocking-hook\n`);
  text = text.replace(
    artifacts,
    `${artifacts}        blocking-hook:\n          description: Test hook that blocks until released\n          type: tosca.artifacts.Implementation.Bash\n          file: ../Scripts/blocking_hook.sh\n`,
  );
  writeFileSync(df, text);
  writeFileSync(
    join(dir, 'Scripts/blocking_hook.sh'),
    ['#!/bin/sh', 'cat >/dev/null', `echo "$$ $(pwd)" >> '${marker}'`, `while [ ! -e '${release}' ]; do sleep 0.05; done`, 'exit 0', ''].join('\n'),
    { mode: 0o755 },
  );
  return dir;
}

function markerRuns(): string[] {
  return existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').filter(Boolean) : [];
}

async function instantiate(vnfdId: string): Promise<{ id: string; info: Json }> {
  const inst = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId });
  assert.equal(inst.status, 201, JSON.stringify(inst.body));
  const id = inst.body.id as string;
  const ins = await api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple' });
  assert.equal(ins.status, 202, JSON.stringify(ins.body));
  const occ = await waitOp(ins.location.split('/').pop() as string, ['COMPLETED', 'FAILED_TEMP', 'ROLLED_BACK', 'FAILED']);
  assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
  return { id, info: (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo };
}

function resourceOf(info: Json, vnfc: Json): Json {
  return info.vnfcResourceInfo.find((r: Json) => r.id === vnfc.vnfcResourceInfoId);
}

async function simState(): Promise<Json> {
  const r = await fetch(`${sim.url}/_sim/state`, { headers: { 'X-Sim-Admin-Secret': sim.adminSecret } });
  assert.equal(r.status, 200);
  return r.json();
}

/** Server ids the sim holds in the stacks of one VNF instance (its stack and nested ones). */
async function simServersOf(instanceId: string): Promise<string[]> {
  const st = await simState();
  const stacks = new Set((st.stacks as Json[]).filter((s) => !s.deleted && String(s.name).startsWith(`vnf-${instanceId}`)).map((s) => s.id));
  return (st.servers as Json[]).filter((s) => stacks.has(s.stack_id)).map((s) => s.id as string);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'vnfm-crash-'));
  dataDir = join(work, 'data');
  marker = join(work, 'hook-runs');
  release = join(work, 'hook-release');
  sim = await startOpenStackSim({ heatDelayMs: 50 });
  notifier = await startServerNotifierSim({ openstackUrl: sim.url });
  port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await startVnfmProcess();
  const c = sim.credentials;
  const vim = await api('POST', '/v1.0/vims', { vim: { name: 'os', type: 'openstack', is_default: true, auth_url: c.authUrl, auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain }, vim_project: { name: c.project, project_domain_name: c.projectDomain } } });
  assert.equal(vim.status, 201, JSON.stringify(vim.body));
  // The notifier an instantiate names must be registered for its VIM.
  const reg = await api('POST', '/vnfm/v1/server-notifiers', { name: 'sim-notifier', uri: notifier.url, vimId: vim.body.vim.id });
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  vmVnfdId = await onboard(join(ROOT, 'samples/vm-basic'));
  hookVnfdId = await onboard(blockingHookPackage());
});

after(async () => {
  // Let a hook script orphaned by the kill finish, and remove the folder the killed VNFM left it in.
  if (release) writeFileSync(release, '');
  if (child) await killVnfm();
  await notifier?.close();
  await sim?.close();
  if (marker) {
    for (const line of markerRuns()) {
      const dir = line.slice(line.indexOf(' ') + 1);
      if (dir.startsWith(tmpdir())) rmSync(dir, { recursive: true, force: true });
    }
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('crash recovery (kill -9)', { timeout: 900_000 }, () => {
  it('a heal killed while Heat updates the stack resumes by itself after a restart: COMPLETED, same VNFC ids, server replaced once', async () => {
    const { id, info: before } = await instantiate(vmVnfdId);
    const target = before.vnfcInfo[0];
    const oldServer = resourceOf(before, target).computeResource.resourceId as string;
    const journalFrom = sim.heatJournal().length;

    const hold = sim.holdStackUpdates();
    const heal = await api('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    assert.equal(heal.status, 202);
    const occId = heal.location.split('/').pop() as string;
    const held = await guard('Heat to receive the stack update', hold.reached);
    assert.match(held.stackName, new RegExp(`^vnf-${id}`));
    assert.equal((await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${occId}`)).body.operationState, 'PROCESSING');

    await killVnfm();
    await startVnfmProcess();
    hold.release();

    // Any FAILED_TEMP would stop there (nothing retries it): reaching COMPLETED proves the resume.
    const occ = await waitOp(occId, ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK']);
    assert.equal(occ.operationState, 'COMPLETED', `resumed automatically, not ${occ.operationState}: ${JSON.stringify(occ.error)}`);
    assert.equal(occ.error, undefined);

    const afterInfo = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    const ids = (i: Json) => ({ vnfc: i.vnfcInfo.map((v: Json) => v.id).sort(), res: i.vnfcResourceInfo.map((r: Json) => r.id).sort() });
    assert.deepEqual(ids(afterInfo), ids(before), 'VNFC ids unchanged');
    const newServer = resourceOf(afterInfo, target).computeResource.resourceId as string;
    assert.notEqual(newServer, oldServer, 'the server was replaced');
    for (const v of before.vnfcInfo.filter((x: Json) => x.id !== target.id)) {
      assert.equal(resourceOf(afterInfo, v).computeResource.resourceId, resourceOf(before, v).computeResource.resourceId, `${v.id} untouched`);
    }
    assert.deepEqual(
      (occ.resourceChanges?.affectedVnfcs ?? []).map((a: Json) => [a.id, a.changeType]),
      [[target.vnfcResourceInfoId, 'MODIFIED']],
    );

    // What Heat saw: exactly one mark (the old server), so the resumed op did not mark the new
    // server again; the held update first, at most one more (the resumed op re-sends its PATCH).
    const seen = sim.heatJournal().slice(journalFrom);
    const marks = seen.filter((e) => e.operation === 'mark_unhealthy');
    assert.deepEqual(
      marks.map((m) => [m.physicalId, m.unhealthy]),
      [[oldServer, true]],
      JSON.stringify(seen),
    );
    const updates = seen.filter((e) => e.operation === 'update');
    assert.equal(updates[0]?.heldBy, hold.id);
    assert.ok(updates.length <= 2, `updates: ${JSON.stringify(updates)}`);
    assert.ok(updates.slice(1).every((u) => u.heldBy === undefined));
    assert.equal(seen.filter((e) => e.operation === 'create' || e.operation === 'delete').length, 0);
    assert.deepEqual(
      (await simServersOf(id)).sort(),
      afterInfo.vnfcResourceInfo.map((r: Json) => r.computeResource.resourceId).sort(),
      'the sim holds exactly the servers the VNFM reports',
    );
  });

  it('a heal killed inside a hook script is not resumed: FAILED_TEMP with the reason, then retry completes it', async () => {
    const { id, info: before } = await instantiate(hookVnfdId);
    const target = before.vnfcInfo[0];
    const oldServer = resourceOf(before, target).computeResource.resourceId as string;
    const runsBefore = markerRuns().length;

    const heal = await api('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    assert.equal(heal.status, 202);
    const occId = heal.location.split('/').pop() as string;
    await until('the heal_start hook script to run', () => markerRuns().length === runsBefore + 1);

    await killVnfm();
    await startVnfmProcess();
    const occ = await waitOp(occId, ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK']);
    assert.equal(occ.operationState, 'FAILED_TEMP', 'an interrupted hook is not repeated automatically');
    assert.equal(occ.error.type, 'urn:vnfm:error:VNFM_ERR_LCM_INTERRUPTED');
    assert.match(occ.error.detail, /step 'mgmt-start'.*not resumed automatically/);
    assert.equal(markerRuns().length, runsBefore + 1, 'the hook did not run again by itself');
    const during = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    assert.equal(resourceOf(during, target).computeResource.resourceId, oldServer, 'the infra step did not run');

    writeFileSync(release, '');
    const retry = await api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/retry`);
    assert.equal(retry.status, 202, JSON.stringify(retry.body));
    const done = await waitOp(occId, ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK']);
    assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
    assert.equal(markerRuns().length, runsBefore + 2, 'retry continued at the hook step and ran it again');
    const afterInfo = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    assert.deepEqual(afterInfo.vnfcInfo.map((v: Json) => v.id).sort(), before.vnfcInfo.map((v: Json) => v.id).sort());
    assert.notEqual(resourceOf(afterInfo, target).computeResource.resourceId, oldServer, 'the server was replaced');
  });

  it('an automatic heal killed inside the Server Notifier alarm removal resumes by itself (404 = done): COMPLETED, each server registered once', async () => {
    const inst = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId: vmVnfdId });
    assert.equal(inst.status, 201, JSON.stringify(inst.body));
    const id = inst.body.id as string;
    const ins = await api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, {
      flavourId: 'simple',
      vnfConfigurableProperties: { isAutohealEnabled: true },
      additionalParams: { ServerNotifierUri: notifier.url, ServerNotifierFaultID: ['1234'] },
    });
    assert.equal(ins.status, 202, JSON.stringify(ins.body));
    const occIns = await waitOp(ins.location.split('/').pop() as string, ['COMPLETED', 'FAILED_TEMP', 'ROLLED_BACK', 'FAILED']);
    assert.equal(occIns.operationState, 'COMPLETED', JSON.stringify(occIns.error));
    const before = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    const alarmOf = (r: Json) => r.metadata?.server_notification?.alarmId as string | undefined;
    for (const r of before.vnfcResourceInfo) assert.ok(alarmOf(r), `VNFC ${r.id} registered`);
    const target = before.vnfcResourceInfo[0];
    const oldServer = target.computeResource.resourceId as string;
    const oldAlarm = alarmOf(target) as string;

    // The server fails: the OpenStack sim tells the Server Notifier, which notifies the VNFM; the
    // automatic heal's first step removes the server's alarm, and that DELETE is held.
    const hold = notifier.holdAlarmRequests({ method: 'DELETE', serverId: oldServer });
    const failed = await fetch(`${sim.url}/_sim/servers/${oldServer}/fail`, { method: 'POST', headers: { 'X-Sim-Admin-Secret': sim.adminSecret, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(failed.status, 200);
    const held = await guard('the alarm removal to reach the Server Notifier', hold.reached);
    assert.equal(held.alarm_id, oldAlarm);
    const ops = (await api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
    const heal = ops.find((o) => o.vnfInstanceId === id && o.operation === 'HEAL');
    assert.ok(heal, 'an automatic heal was created');
    assert.equal(heal.isAutomaticInvocation, true);
    assert.equal(heal.operationState, 'PROCESSING');

    await killVnfm();
    // The Server Notifier applies the removal the killed VNFM asked for; its answer goes nowhere.
    hold.release();
    await until('the held DELETE to be applied', () => notifier.journal().some((e) => e.method === 'DELETE' && e.alarm_id === oldAlarm && e.held_by === hold.id));
    await startVnfmProcess();

    // A FAILED_TEMP would stay (nothing retries it): reaching COMPLETED proves the automatic resume.
    const occ = await waitOp(heal.id as string, ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK']);
    assert.equal(occ.operationState, 'COMPLETED', `resumed automatically, not ${occ.operationState}: ${JSON.stringify(occ.error)}`);
    const deletes = notifier.journal().filter((e) => e.method === 'DELETE' && e.alarm_id === oldAlarm);
    assert.deepEqual(
      deletes.map((e) => [e.status, e.held_by]),
      [
        [204, hold.id],
        [404, null],
      ],
      'the resumed step repeated the removal and took 404 as done',
    );
    const afterInfo = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    const healed = afterInfo.vnfcResourceInfo.find((r: Json) => r.id === target.id);
    assert.ok(healed, 'the VNFC keeps its id');
    const newServer = healed.computeResource.resourceId as string;
    assert.notEqual(newServer, oldServer, 'the server was replaced');
    const current = new Set<string>(afterInfo.vnfcResourceInfo.map((r: Json) => r.computeResource.resourceId as string));
    const mine = notifier.alarms().filter((a) => a.fault_action.includes(`/vnf_instances/${id}/`));
    assert.deepEqual(mine.map((a) => a.server_id).sort(), [...current].sort(), 'exactly one alarm per current server, none for the old one');
    assert.equal(alarmOf(healed), mine.find((a) => a.server_id === newServer)?.alarm_id);
  });
});
