/**
 * Real VNFM processes (`vnfm start` children) against the simulated OpenStack, with the operation
 * positioned by a held Heat stack update (`sim.holdStackUpdates()`), never by sleeps:
 *
 * - SIGTERM mid-heal: the process stops claiming, gives the running heal its grace period
 *   (`runner.shutdownGraceMs`), then aborts it at a safe point (the Heat wait is cancelled), gives
 *   its lease back and exits 0. The op stays PROCESSING; the next process completes it from its
 *   checkpoint without any retry request (on PostgreSQL with a 10-minute lease, so only the release
 *   makes it claimable at once).
 * - PostgreSQL only: two processes on one database. The holder is stopped (SIGSTOP) while Heat
 *   updates the stack, its lease expires, the other process claims the op; after SIGCONT the first
 *   one finds its lease gone (heartbeat), stops without writing, and the op ends COMPLETED once,
 *   with one RESULT notification and one replacement server. (PGlite allows one process per data
 *   directory, so there is no second process to take over.)
 *
 * Time limits here are hang guards only (the machine may be loaded); the one timing assertion is
 * a lower bound: the process does wait for the grace period.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
// For its side effect: every module's migrations registered, so that the PostgreSQL test database
// this process creates is migrated exactly as the VNFM processes expect it.
import '../../src/main/server.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { type StoreEnv, type TestStore, describeStores } from '../helpers/db.ts';
import { ROOT } from '../helpers/packages.ts';
import { guard as guardPromise, until as waitUntil } from '../helpers/wait.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;
const V2 = { version: '2.0.0' };
const SECRET = '33'.repeat(32);
const START_GUARD_MS = 180_000;
const OP_GUARD_MS = 120_000;
const GRACE_MS = 1000;

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, guardMs = OP_GUARD_MS): Promise<T> => waitUntil(what, fn, guardMs, 50);
const guard = <T>(what: string, p: Promise<T>, guardMs = OP_GUARD_MS): Promise<T> => guardPromise(what, p, guardMs);

/** A `vnfm start` child process and its log lines (pino JSON on stdout). */
interface Vnfm {
  proc: ChildProcess;
  url: string;
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

await describeStores('VNFM processes: shutdown grace and lease loss', (env: StoreEnv) => {
  let sim: OpenStackSim;
  let work: string;
  let store: TestStore | undefined;
  let vnfdId = '';
  const children: Vnfm[] = [];

  async function startVnfm(workerId: string, extraEnv: Record<string, string> = {}): Promise<Vnfm> {
    const where = env.kind === 'postgres' ? ['--database-url', store?.url as string] : ['--data-dir', join(work, 'data')];
    // Port 0: the kernel picks a free port at listen time; the process logs its URL ('VNFM started').
    const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '--no-sim', ...where, '--port', '0', '--log-level', 'info'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0', VNFM_WORKER_ID: workerId, VNFM_SECRET_KEY: SECRET, VNFM_OUTBOUND_VIM_ALLOW: '127.0.0.0/8', ...extraEnv },
    });
    const lines: string[] = [];
    let buf = '';
    proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts);
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.once('exit', (code, signal) => r({ code, signal })));
    const v: Vnfm = { proc, url: '', lines, exited };
    children.push(v);
    let gone = false;
    void exited.then(() => (gone = true));
    v.url = await until(
      `VNFM ${workerId} to start`,
      () => {
        if (gone) throw new Error(`VNFM ${workerId} exited during start`);
        const started = lines.find((l) => l.includes('"msg":"VNFM started"'));
        return started ? (JSON.parse(started).url as string) : undefined;
      },
      START_GUARD_MS,
    );
    assert.ok((await fetch(`${v.url}/healthz`)).ok);
    return v;
  }

  async function stopVnfm(v: Vnfm): Promise<void> {
    if (v.proc.exitCode !== null || v.proc.signalCode !== null) return;
    v.proc.kill('SIGCONT');
    v.proc.kill('SIGTERM');
    await guard('a VNFM to exit', v.exited);
  }

  /** Runs a test body; a failure carries the warnings and errors the VNFM processes logged. */
  async function diagnosed(fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (e) {
      const logs = children.map((c, i) => `--- VNFM process ${i} (exit ${c.proc.exitCode ?? c.proc.signalCode ?? 'running'}):\n${c.lines.filter((l) => /"level":(40|50|60)/.test(l)).slice(-25).join('\n')}`).join('\n');
      if (e instanceof Error) e.message += `\n${logs}`;
      throw e;
    }
  }

  /** Stops what an earlier (failed) test may have left running, so that each test owns the database. */
  async function stopAll(): Promise<void> {
    for (const c of children) await stopVnfm(c).catch(() => undefined);
  }

  async function api(v: Vnfm, method: string, path: string, body?: unknown): Promise<{ status: number; location: string; body: Json }> {
    const r = await fetch(`${v.url}${path}`, { method, headers: body === undefined ? V2 : { ...V2, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await r.text();
    return { status: r.status, location: r.headers.get('location') ?? '', body: text ? JSON.parse(text) : {} };
  }

  async function waitOp(v: Vnfm, id: string): Promise<Json> {
    return until(`op ${id} to end`, async () => {
      const o = await api(v, 'GET', `/vnflcm/v2/vnf_lcm_op_occs/${id}`);
      return ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(o.body.operationState) ? o.body : undefined;
    });
  }

  async function setUp(v: Vnfm): Promise<void> {
    if (vnfdId) return;
    const c = sim.credentials;
    const vim = await api(v, 'POST', '/v1.0/vims', { vim: { name: 'os', type: 'openstack', is_default: true, auth_url: c.authUrl, auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain }, vim_project: { name: c.project, project_domain_name: c.projectDomain } } });
    assert.equal(vim.status, 201, JSON.stringify(vim.body));
    const pkg = await api(v, 'POST', '/vnfpkgm/v1/vnf_packages', {});
    const up = await fetch(`${v.url}/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(buildCsarFromDir(join(ROOT, 'samples/vm-basic'))) });
    assert.equal(up.status, 202);
    vnfdId = await until('the package to be onboarded', async () => {
      const g = await api(v, 'GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
      assert.notEqual(g.body.onboardingState, 'ERROR');
      return g.body.onboardingState === 'ONBOARDED' ? (g.body.vnfdId as string) : undefined;
    });
  }

  async function instantiate(v: Vnfm): Promise<{ id: string; info: Json }> {
    await setUp(v);
    const inst = await api(v, 'POST', '/vnflcm/v2/vnf_instances', { vnfdId });
    const id = inst.body.id as string;
    const ins = await api(v, 'POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple' });
    assert.equal(ins.status, 202, JSON.stringify(ins.body));
    const occ = await waitOp(v, ins.location.split('/').pop() as string);
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    return { id, info: (await api(v, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo };
  }

  const resourceOf = (info: Json, vnfc: Json): Json => info.vnfcResourceInfo.find((r: Json) => r.id === vnfc.vnfcResourceInfoId);
  const notes = async (occId: string): Promise<string[]> =>
    ((await store?.db.selectFrom('outbox').select(['id', 'notification']).orderBy('id').execute()) ?? [])
      .map((r) => r.notification as Json)
      .filter((n) => n.vnfLcmOpOccId === occId)
      .map((n) => `${n.operationState}/${n.notificationStatus}`);

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'vnfm-lease-proc-'));
    sim = await startOpenStackSim({ heatDelayMs: 20 });
    if (env.kind === 'postgres') {
      store = await env.open();
      // A subscription, so that every notification is written to the outbox.
      await store.db.insertInto('subscription').values({ id: 'sub-p', api_version: 'v2', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'p' }).execute();
    }
  });
  after(async () => {
    for (const c of children) await stopVnfm(c).catch(() => undefined);
    await sim?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('SIGTERM mid-heal: the process waits the grace period, aborts the heal, releases its lease and exits; the next process completes the op without retry', { timeout: 600_000 }, () => diagnosed(async () => {
    await stopAll();
    const a = await startVnfm('proc-a', { VNFM_SHUTDOWN_GRACE_MS: String(GRACE_MS), VNFM_LEASE_MS: '600000' });
    const { id, info: before } = await instantiate(a);
    const target = before.vnfcInfo[0];
    const oldServer = resourceOf(before, target).computeResource.resourceId as string;
    const journalFrom = sim.heatJournal().length;
    const hold = sim.holdStackUpdates();
    const heal = await api(a, 'POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    assert.equal(heal.status, 202);
    const occId = heal.location.split('/').pop() as string;
    await guard('Heat to receive the stack update', hold.reached);

    const t0 = Date.now();
    a.proc.kill('SIGTERM');
    const exit = await guard('the VNFM to exit after SIGTERM (hang guard: grace + margin)', a.exited, GRACE_MS + 60_000);
    assert.deepEqual(exit, { code: 0, signal: null }, 'a clean exit');
    assert.ok(Date.now() - t0 >= GRACE_MS, 'the running heal got its grace period');
    const logs = a.lines.join('\n');
    assert.match(logs, /aborting running operations/);
    assert.match(logs, /operation stopped; nothing more is done for it by this process/);
    assert.doesNotMatch(logs, /lease lost/);

    if (store) {
      const r = await store.db.selectFrom('op_occ').selectAll().where('id', '=', occId).executeTakeFirstOrThrow();
      assert.equal(r.operation_state, 'PROCESSING');
      assert.equal(r.pending, 'run');
      const expired = await sql<{ ok: boolean }>`select lease_until < now() as ok from op_occ where id = ${occId}`.execute(store.db);
      assert.equal(expired.rows[0]?.ok, true, 'the 10-minute lease was given back at once');
      assert.match(logs, /lease released: the operation is resumable by the next runner/);
      assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START'], 'no RESULT: not failed');
    }

    const b = await startVnfm('proc-b', { VNFM_LEASE_MS: '600000' });
    assert.equal((await api(b, 'GET', `/vnflcm/v2/vnf_lcm_op_occs/${occId}`)).body.operationState, 'PROCESSING');
    hold.release();
    const occ = await waitOp(b, occId);
    assert.equal(occ.operationState, 'COMPLETED', `resumed, not ${occ.operationState}: ${JSON.stringify(occ.error)}`);
    assert.equal(occ.error, undefined);
    if (store) assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT']);
    const afterInfo = (await api(b, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    assert.notEqual(resourceOf(afterInfo, target).computeResource.resourceId, oldServer, 'the server was replaced');
    for (const v of before.vnfcInfo.filter((x: Json) => x.id !== target.id)) {
      assert.equal(resourceOf(afterInfo, v).computeResource.resourceId, resourceOf(before, v).computeResource.resourceId, `${v.id} untouched`);
    }
    const seen = sim.heatJournal().slice(journalFrom);
    assert.deepEqual(
      seen.filter((e) => e.operation === 'mark_unhealthy').map((m) => [m.physicalId, m.unhealthy]),
      [[oldServer, true]],
      'marked once: the resumed op did not mark again',
    );
    await stopVnfm(b);
  }));

  it('two processes: the holder is stopped past its lease, the other takes the op over; the holder, continued, stops without a write; COMPLETED once', { skip: env.kind === 'pglite' ? 'PGlite: one process per data directory' : false, timeout: 600_000 }, () => diagnosed(async () => {
    await stopAll();
    const db = store?.db;
    assert.ok(db);
    // A renews every second (lease 3 s): after SIGCONT its next heartbeat finds the lease gone.
    const a = await startVnfm('holder', { VNFM_LEASE_MS: '3000' });
    const { id, info: before } = await instantiate(a);
    const target = before.vnfcInfo[0];
    const oldServer = resourceOf(before, target).computeResource.resourceId as string;
    const journalFrom = sim.heatJournal().length;
    const hold = sim.holdStackUpdates();
    const heal = await api(a, 'POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    assert.equal(heal.status, 202, JSON.stringify(heal.body));
    const occId = heal.location.split('/').pop() as string;
    await guard(
      'Heat to receive the stack update',
      Promise.race([hold.reached, waitOp(a, occId).then((o) => Promise.reject(new Error(`the heal ended ${o.operationState} before Heat got its update: ${JSON.stringify(o.error)}`)))]),
    );
    const held = await db.selectFrom('op_occ').select(['lease_owner', 'lease_epoch']).where('id', '=', occId).executeTakeFirstOrThrow();
    assert.equal(held.lease_owner, 'holder');

    a.proc.kill('SIGSTOP');
    const b = await startVnfm('taker', { VNFM_LEASE_MS: '60000' });
    // The stopped holder cannot renew; its lease is made to run out now (no waiting for it), unless
    // it ran out by itself already and the taker has claimed the op meanwhile (the update is fenced).
    await sql`update op_occ set lease_until = now() - interval '1 hour' where id = ${occId} and lease_owner = 'holder' and lease_epoch = ${held.lease_epoch}`.execute(db);
    await until('the other process to claim the op', async () => {
      const r = await db.selectFrom('op_occ').select(['lease_owner', 'lease_epoch']).where('id', '=', occId).executeTakeFirstOrThrow();
      return r.lease_owner === 'taker' && r.lease_epoch === held.lease_epoch + 1;
    });

    a.proc.kill('SIGCONT');
    await until('the holder to find its lease lost', () => a.lines.some((l) => l.includes('lease lost')));
    await until('the holder to stop the operation', () => a.lines.some((l) => l.includes('operation stopped; nothing more is done')));
    hold.release();
    const occ = await waitOp(b, occId);
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT'], 'one RESULT notification');
    const final = await db.selectFrom('op_occ').select(['lease_owner', 'lease_epoch', 'operation_state']).where('id', '=', occId).executeTakeFirstOrThrow();
    assert.deepEqual(final, { lease_owner: null, lease_epoch: held.lease_epoch + 1, operation_state: 'COMPLETED' }, 'taken over once, completed by the taker');
    const afterInfo = (await api(b, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    const changed = afterInfo.vnfcResourceInfo.filter((r: Json) => before.vnfcResourceInfo.find((x: Json) => x.id === r.id)?.computeResource.resourceId !== r.computeResource.resourceId);
    assert.equal(changed.length, 1, 'one replacement server');
    const seen = sim.heatJournal().slice(journalFrom);
    assert.deepEqual(
      seen.filter((e) => e.operation === 'mark_unhealthy').map((m) => [m.physicalId, m.unhealthy]),
      [[oldServer, true]],
    );
    const updates = seen.filter((e) => e.operation === 'update');
    assert.equal(updates[0]?.heldBy, hold.id, "the holder's update");
    assert.equal(updates.length, 2, "the holder's update and the taker's re-issued one, nothing more");
    assert.ok((await fetch(`${a.url}/healthz`)).ok, 'the holder lives on');
    await stopVnfm(a);
    await stopVnfm(b);
  }));
  it('a holder stalled past its lease but within leaseGraceMs keeps the op (no takeover, no ping-pong); the other process accepts and completes new ops meanwhile', { skip: env.kind === 'pglite' ? 'PGlite: one process per data directory' : false, timeout: 600_000 }, () => diagnosed(async () => {
    await stopAll();
    const db = store?.db;
    assert.ok(db);
    // 2 s leases (renewed every 667 ms), the default 5 s grace
    const p1 = await startVnfm('replica-1', { VNFM_LEASE_MS: '2000' });
    const p2 = await startVnfm('replica-2', { VNFM_LEASE_MS: '2000' });
    const { id, info: before } = await instantiate(p1);
    const hold = sim.holdStackUpdates();
    const heal = await api(p1, 'POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [before.vnfcInfo[0].id] });
    assert.equal(heal.status, 202, JSON.stringify(heal.body));
    const occId = heal.location.split('/').pop() as string;
    await guard('Heat to receive the stack update', hold.reached);
    const held = await db.selectFrom('op_occ').select(['lease_owner', 'lease_epoch']).where('id', '=', occId).executeTakeFirstOrThrow();
    const [holder, other] = held.lease_owner === 'replica-1' ? [p1, p2] : [p2, p1];

    // The holder stalls (a loaded host, a long pause) until its lease has run out for a second,
    // or until the other process has taken the op over (what the grace is there to prevent).
    holder.proc.kill('SIGSTOP');
    await until('the lease to run out for a second (or be taken over)', async () => {
      const r = await sql<{ owner: string; epoch: number; late: boolean }>`select lease_owner as owner, lease_epoch as epoch, lease_until < now() - interval '1 second' as late from op_occ where id = ${occId}`.execute(db);
      const row = r.rows[0];
      return row !== undefined && (row.owner !== held.lease_owner || row.epoch !== held.lease_epoch || row.late);
    });
    holder.proc.kill('SIGCONT');
    // New work is accepted and done by the other process meanwhile.
    const inst = await api(other, 'POST', '/vnflcm/v2/vnf_instances', { vnfdId });
    assert.equal(inst.status, 201, JSON.stringify(inst.body));
    const ins = await api(other, 'POST', `/vnflcm/v2/vnf_instances/${inst.body.id}/instantiate`, { flavourId: 'simple' });
    assert.equal(ins.status, 202, JSON.stringify(ins.body));
    assert.equal((await waitOp(other, ins.location.split('/').pop() as string)).operationState, 'COMPLETED');

    hold.release();
    const occ = await waitOp(other, occId);
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const final = await db.selectFrom('op_occ').select(['lease_epoch', 'operation_state']).where('id', '=', occId).executeTakeFirstOrThrow();
    assert.equal(final.lease_epoch, held.lease_epoch, 'claimed once: the late holder kept it, nobody took it over');
    assert.ok(!holder.lines.some((l) => l.includes('lease lost') && l.includes(occId)), 'the holder never lost the lease of the heal');
    assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT'], 'one RESULT notification');
    await stopVnfm(p1);
    await stopVnfm(p2);
  }));
});
