/**
 * A real `vnfm start` process (embedded database) stopped with SIGTERM while clients hold
 * connections: an SSE stream on `/vnfm/v1/events`, an idle keep-alive connection, a request whose
 * body never finishes, and a heal held at Heat (`sim.holdStackUpdates()`, the simulated OpenStack
 * in this process). The process must exit by itself, cleanly: the heal gets its grace period
 * (`runner.shutdownGraceMs`, 1 s here), then is aborted; the connections are closed by the VNFM.
 *
 * And the data directory after a SIGKILL mid-run: no file or directory the VNFM (or its embedded
 * database) created is accessible to group or others, without the next start fixing it.
 *
 * Time limits are hang guards only.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request as httpRequest, Agent, type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { ROOT } from '../helpers/packages.ts';
import { guard, until } from '../helpers/wait.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;
const V2 = { version: '2.0.0' };
const SECRET = '44'.repeat(32);
const GUARD_MS = 180_000;

interface Vnfm {
  proc: ChildProcess;
  url: string;
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

describe('VNFM process: stopping with open connections and an operation in flight; file modes after SIGKILL', () => {
  let sim: OpenStackSim;
  let work: string;
  const children: Vnfm[] = [];

  async function startVnfm(dataDir: string, extraEnv: Record<string, string> = {}): Promise<Vnfm> {
    const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '--no-sim', '--data-dir', dataDir, '--port', '0', '--log-level', 'info'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0', VNFM_SECRET_KEY: SECRET, VNFM_HEALTH_LIVENESS_PORT: '0', VNFM_OUTBOUND_VIM_ALLOW: '127.0.0.0/8', ...extraEnv },
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
      'the VNFM to start',
      () => {
        if (gone) throw new Error('the VNFM exited during start');
        const started = lines.find((l) => l.includes('"msg":"VNFM started"'));
        return started ? (JSON.parse(started).url as string) : undefined;
      },
      GUARD_MS,
      50,
    );
    return v;
  }

  async function api(v: Vnfm, method: string, path: string, body?: unknown): Promise<{ status: number; location: string; body: Json }> {
    const r = await fetch(`${v.url}${path}`, { method, headers: body === undefined ? V2 : { ...V2, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await r.text();
    return { status: r.status, location: r.headers.get('location') ?? '', body: text ? JSON.parse(text) : {} };
  }

  async function waitOp(v: Vnfm, id: string): Promise<Json> {
    return until(
      `op ${id} to end`,
      async () => {
        const o = await api(v, 'GET', `/vnflcm/v2/vnf_lcm_op_occs/${id}`);
        return ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(o.body.operationState) ? o.body : undefined;
      },
      GUARD_MS,
      50,
    );
  }

  /** A VIM, the vm-basic package and one instantiated VNF; returns the instance id and its first VNFC. */
  async function instantiate(v: Vnfm): Promise<{ id: string; vnfcId: string }> {
    const c = sim.credentials;
    const vim = await api(v, 'POST', '/v1.0/vims', { vim: { name: 'os', type: 'openstack', is_default: true, auth_url: c.authUrl, auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain }, vim_project: { name: c.project, project_domain_name: c.projectDomain } } });
    assert.equal(vim.status, 201, JSON.stringify(vim.body));
    const pkg = await api(v, 'POST', '/vnfpkgm/v1/vnf_packages', {});
    const up = await fetch(`${v.url}/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(buildCsarFromDir(join(ROOT, 'samples/vm-basic'))) });
    assert.equal(up.status, 202);
    const vnfdId = await until(
      'the package to be onboarded',
      async () => {
        const g = await api(v, 'GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
        assert.notEqual(g.body.onboardingState, 'ERROR');
        return g.body.onboardingState === 'ONBOARDED' ? (g.body.vnfdId as string) : undefined;
      },
      GUARD_MS,
      50,
    );
    const inst = await api(v, 'POST', '/vnflcm/v2/vnf_instances', { vnfdId });
    const id = inst.body.id as string;
    const ins = await api(v, 'POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple' });
    assert.equal(ins.status, 202, JSON.stringify(ins.body));
    const occ = await waitOp(v, ins.location.split('/').pop() as string);
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const info = (await api(v, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    return { id, vnfcId: info.vnfcInfo[0].id as string };
  }

  /** Every entry below `dir` (not following links) whose mode gives group or others any access. */
  function exposed(dir: string): string[] {
    const out: string[] = [];
    const walk = (p: string): void => {
      const st = lstatSync(p);
      if (st.isSymbolicLink()) return;
      if ((st.mode & 0o077) !== 0) out.push(`${p.slice(dir.length)} ${(st.mode & 0o777).toString(8)}`);
      if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
    };
    walk(dir);
    return out;
  }

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'vnfm-stop-proc-'));
    sim = await startOpenStackSim({ heatDelayMs: 20 });
  });
  after(async () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    await sim?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('SIGTERM with an SSE stream, an idle keep-alive connection, an unfinished request body and a held heal: the process closes them and exits 0', { timeout: 600_000 }, async () => {
    const v = await startVnfm(join(work, 'data-term'), { VNFM_SHUTDOWN_GRACE_MS: '1000' });
    const { id, vnfcId } = await instantiate(v);
    const hold = sim.holdStackUpdates();
    const heal = await api(v, 'POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [vnfcId] });
    assert.equal(heal.status, 202, JSON.stringify(heal.body));
    await guard('Heat to receive the stack update', hold.reached, GUARD_MS);

    const u = new URL(v.url);
    // 1. an SSE stream, open and read
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    const sse = await new Promise<IncomingMessage>((resolve, reject) => {
      const rq = httpRequest({ host: u.hostname, port: u.port, path: '/vnfm/v1/events', headers: { accept: 'text/event-stream' }, agent }, resolve);
      rq.on('error', reject);
      rq.end();
    });
    assert.equal(sse.statusCode, 200);
    await new Promise<void>((r) => sse.once('data', () => r()));
    const sseClosed = new Promise<void>((r) => {
      sse.on('close', () => r());
      sse.on('error', () => r());
      sse.resume();
    });
    // 2. an idle keep-alive connection (a request answered; the socket stays in the agent's pool)
    const idle = await new Promise<IncomingMessage>((resolve, reject) => {
      const rq = httpRequest({ host: u.hostname, port: u.port, path: '/healthz', agent }, resolve);
      rq.on('error', reject);
      rq.end();
    });
    idle.resume();
    await new Promise<void>((r) => idle.once('end', () => r()));
    // 3. a request whose body never ends (a stalled client)
    let stalled: ClientRequest | undefined;
    const stalledDone = new Promise<void>((r) => {
      stalled = httpRequest({ host: u.hostname, port: u.port, method: 'POST', path: '/vnflcm/v2/vnf_instances', headers: { ...V2, 'content-type': 'application/json', 'content-length': '1000' } });
      stalled.on('error', () => r());
      stalled.on('response', (res) => {
        res.resume();
        res.on('end', () => r());
        res.on('close', () => r());
      });
      stalled.on('close', () => r());
      stalled.write('{"vnfdId":');
    });

    v.proc.kill('SIGTERM');
    const exit = await guard('the VNFM to exit after SIGTERM (hang guard)', v.exited, 120_000);
    const logs = v.lines.join('\n');
    assert.deepEqual(exit, { code: 0, signal: null }, `a clean exit\n${v.lines.filter((l) => /"level":(40|50|60)/.test(l)).join('\n')}`);
    assert.match(logs, /aborting running operations/);
    assert.match(logs, /"msg":"stopped"/);
    await guard('the SSE stream to be closed by the VNFM', sseClosed, 10_000);
    await guard('the stalled request to be closed by the VNFM', stalledDone, 10_000);
    hold.release();
    agent.destroy();
  });

  it('SIGKILL mid-run: no file or directory of the data directory is accessible to group or others', { timeout: 600_000 }, async () => {
    const dir = join(work, 'data-kill');
    const v = await startVnfm(dir);
    await instantiate(v);
    // more writes while it runs: a heal
    const heal = await api(v, 'GET', '/vnflcm/v2/vnf_instances');
    assert.equal(heal.status, 200);
    v.proc.kill('SIGKILL');
    await guard('the VNFM to die', v.exited, 30_000);
    assert.deepEqual(exposed(dir), [], 'entries with group/other bits after SIGKILL');
  });
});
