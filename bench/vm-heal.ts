/**
 * VM heal cost: what the VNFM adds to one VNFC heal through the OpenStack driver.
 *
 * 1. Simulated OpenStack with instant Heat (heat delay 0): N sequential VNFC heals (v2 API,
 *    alternating VNFCs) of one instance of samples/vm-basic. Reports accepted (202) -> COMPLETED
 *    as the engine records it (op occ startTime -> stateEnteredTime) at p50/p99, the time of the
 *    POST itself, the per-step split (from the "step done" log lines), and the OpenStack HTTP
 *    requests made per heal and their total time (the rest is the VNFM's own cost).
 * 2. With VNFM_REAL_HEAT=1 (scripts/real-heat.sh up): the same heal a few times against the real
 *    Keystone + Heat (stand-in nova/neutron/cinder), to show where the time of a real heal goes.
 *
 *   npx tsx bench/vm-heal.ts [--heals 50] [--real-runs 3] [--with-hooks]
 *
 * Prints one JSON document. The hook scripts of the sample package are dropped unless
 * `--with-hooks` (they are the package's cost, not the VNFM's).
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { parse as parseYaml } from 'yaml';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';
import { startVnfm, type Vnfm } from '../src/main/server.ts';
import { startOpenStackSim } from '../src/sim/openstack/index.ts';
import { openStore } from '../src/store/db.ts';

const argv = process.argv.slice(2);
const num = (name: string, def: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const HEALS = num('heals', 50);
const REAL_RUNS = num('real-runs', 3);
const WITH_HOOKS = argv.includes('--with-hooks');
const H = { version: '2.0.0' };
// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
type Json = Record<string, any>;
const round = (x: number): number => Math.round(x * 10) / 10;

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}

function summary(xs: readonly number[]): { p50: number; p99: number; min: number; max: number } {
  return { p50: round(pct(xs, 50)), p99: round(pct(xs, 99)), min: round(Math.min(...xs)), max: round(Math.max(...xs)) };
}

// ---- OpenStack HTTP accounting: every request the VNFM makes through fetch, by target base URL.
interface HttpSample {
  url: string;
  ms: number;
}
let httpLog: HttpSample[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const t0 = performance.now();
  try {
    return await realFetch(input, init);
  } finally {
    httpLog.push({ url, ms: performance.now() - t0 });
  }
}) as typeof fetch;

// ---- "step done" log lines of the engine, per op occ.
const steps = new Map<string, Record<string, number>>();
const sink = new Writable({
  write(chunk, _enc, cb) {
    for (const line of chunk.toString().split('\n')) {
      if (!line.includes('"step done"')) continue;
      try {
        const j = JSON.parse(line) as { opOccId?: string; step?: string; ms?: number };
        if (j.opOccId && j.step && typeof j.ms === 'number') {
          const m = steps.get(j.opOccId) ?? {};
          m[j.step] = j.ms;
          steps.set(j.opOccId, m);
        }
      } catch {
        // not JSON: ignore
      }
    }
    cb();
  },
});

/** The sample package, without its hook scripts unless asked. */
function packageZip(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'bench-vm-pkg-'));
  cpSync('samples/vm-basic', dir, { recursive: true });
  if (!WITH_HOOKS) {
    const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
    writeFileSync(df, readFileSync(df, 'utf8').replace(/\n {6}interfaces:[\s\S]*?\n(?= {4}VDU1:)/, '\n'));
  }
  const zip = buildCsarFromDir(dir);
  rmSync(dir, { recursive: true, force: true });
  return zip;
}

async function call(vnfm: Vnfm, method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown): Promise<{ status: number; body: Json; headers: Record<string, unknown> }> {
  const r = await vnfm.app.inject({ method, url, headers: url.startsWith('/vnflcm/v2') ? H : {}, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: r.statusCode, body: r.body ? JSON.parse(r.body) : null, headers: r.headers };
}

async function waitDone(vnfm: Vnfm, opId: string, timeoutMs: number): Promise<Json> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(vnfm, 'GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`);
    if (['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(r.body.operationState)) return r.body;
    if (Date.now() > end) throw new Error(`op ${opId} not done in ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

async function onboard(vnfm: Vnfm): Promise<string> {
  const pkg = await call(vnfm, 'POST', '/vnfpkgm/v1/vnf_packages', {});
  await vnfm.app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, payload: packageZip(), headers: { 'content-type': 'application/zip' } });
  await vnfm.ctx.packages.idle();
  return (await call(vnfm, 'GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`)).body.vnfdId;
}

async function instantiate(vnfm: Vnfm, vnfdId: string, timeoutMs: number): Promise<string> {
  const id = (await call(vnfm, 'POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'bench-vm-heal' })).body.id as string;
  const r = await call(vnfm, 'POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple' });
  if (r.status !== 202) throw new Error(`instantiate: ${r.status} ${JSON.stringify(r.body)}`);
  const occ = await waitDone(vnfm, String(r.headers.location).split('/').pop() as string, timeoutMs);
  if (occ.operationState !== 'COMPLETED') throw new Error(`instantiate ended ${occ.operationState}: ${JSON.stringify(occ.error)}`);
  return id;
}

interface HealSample {
  /** POST /heal until the 202 answer. */
  acceptMs: number;
  /** op occ startTime -> stateEnteredTime(COMPLETED), as the engine records it. */
  totalMs: number;
  steps: Record<string, number>;
  httpRequests: number;
  httpMs: number;
  /** Heat's own duration of the stack update (real Heat only: from its events). */
  heatUpdateMs?: number;
}

/** Reads Heat's own start/end of the last stack UPDATE from the stack events (real Heat). */
type HeatTiming = (stackName: string, stackId: string) => Promise<number | undefined>;

/** Runs `n` sequential VNFC heals, alternating over the instance's VNFCs. */
async function heals(vnfm: Vnfm, id: string, n: number, vimBase: string, timeoutMs: number, heatTiming?: HeatTiming): Promise<HealSample[]> {
  const out: HealSample[] = [];
  const inst = (await call(vnfm, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body;
  const vnfcIds = (inst.instantiatedVnfInfo.vnfcInfo as { id: string }[]).map((v) => v.id);
  for (let i = 0; i < n; i++) {
    httpLog = [];
    const t0 = performance.now();
    const r = await call(vnfm, 'POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [vnfcIds[i % vnfcIds.length]] });
    const acceptMs = performance.now() - t0;
    if (r.status !== 202) throw new Error(`heal: ${r.status} ${JSON.stringify(r.body)}`);
    const opId = String(r.headers.location).split('/').pop() as string;
    const occ = await waitDone(vnfm, opId, timeoutMs);
    if (occ.operationState !== 'COMPLETED') throw new Error(`heal ended ${occ.operationState}: ${JSON.stringify(occ.error)}`);
    const vim = httpLog.filter((h) => h.url.startsWith(vimBase) || /:(5000|8004)\//.test(h.url));
    const md = inst.instantiatedVnfInfo.metadata as { stack_id: string; stack_name: string };
    const heatUpdateMs = heatTiming ? await heatTiming(md.stack_name, md.stack_id) : undefined;
    out.push({
      acceptMs,
      totalMs: new Date(occ.stateEnteredTime).getTime() - new Date(occ.startTime).getTime(),
      steps: steps.get(opId) ?? {},
      httpRequests: vim.length,
      httpMs: vim.reduce((a, h) => a + h.ms, 0),
      ...(heatUpdateMs === undefined ? {} : { heatUpdateMs }),
    });
  }
  return out;
}

function report(samples: readonly HealSample[], real: boolean): Record<string, unknown> {
  const stepNames = [...new Set(samples.flatMap((s) => Object.keys(s.steps)))];
  const common = {
    heals: samples.length,
    accepted_to_completed_ms: summary(samples.map((s) => s.totalMs)),
    post_to_202_ms: summary(samples.map((s) => s.acceptMs)),
    steps_p50_ms: Object.fromEntries(stepNames.map((k) => [k, round(pct(samples.map((s) => s.steps[k] ?? 0), 50))])),
    openstack_requests_per_heal: summary(samples.map((s) => s.httpRequests)),
    openstack_http_ms_per_heal: summary(samples.map((s) => s.httpMs)),
  };
  if (!real) {
    // Heat answers at once: whatever is not an OpenStack request is the VNFM's own work.
    return { ...common, vnfm_own_ms: summary(samples.map((s) => Math.max(0, s.totalMs - s.httpMs))) };
  }
  const heat = samples.filter((s) => s.heatUpdateMs !== undefined);
  return {
    ...common,
    // Heat's own update (its events, 1 s resolution) vs. the driver step that waits for it.
    heat_stack_update_ms: heat.length ? summary(heat.map((s) => s.heatUpdateMs as number)) : null,
    infra_step_minus_heat_update_ms: heat.length ? summary(heat.map((s) => (s.steps.infra ?? 0) - (s.heatUpdateMs as number))) : null,
    // Engine work around the driver step: claim, grant, observe, rebuild, commit.
    outside_infra_step_ms: summary(samples.map((s) => s.totalMs - (s.steps.infra ?? 0))),
  };
}

async function newVnfm(): Promise<{ vnfm: Vnfm; close(): Promise<void> }> {
  const store = await openStore({ dataDir: 'memory://' });
  const config = resolveConfig({ flags: { sim: false, logLevel: 'info', dataDir: 'memory://', runner: { pollMs: 500, leaseMs: 30_000, concurrency: 8, workerId: 'bench' } } });
  const vnfm = await startVnfm(config, { store, noListen: true, logger: createLogger('info', sink) });
  return {
    vnfm,
    async close() {
      await vnfm.close();
      await store.close();
    },
  };
}

const load0 = loadavg();
const result: Record<string, unknown> = { node: process.version, cpus: cpus().length, hooks: WITH_HOOKS };

// ---- 1. simulator, instant Heat
{
  const sim = await startOpenStackSim({ heatDelayMs: 0 });
  const { vnfm, close } = await newVnfm();
  try {
    const c = sim.credentials;
    const reg = await call(vnfm, 'POST', '/v1.0/vims', {
      vim: { name: 'bench-sim', type: 'openstack', is_default: true, auth_url: c.authUrl, auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain }, vim_project: { name: c.project, project_domain_name: c.projectDomain } },
    });
    if (reg.status !== 201) throw new Error(`VIM: ${reg.status} ${JSON.stringify(reg.body)}`);
    const vnfdId = await onboard(vnfm);
    const id = await instantiate(vnfm, vnfdId, 60_000);
    await heals(vnfm, id, 3, sim.url, 30_000); // warm-up (JIT, token cache, validator)
    const t0 = performance.now();
    const samples = await heals(vnfm, id, HEALS, sim.url, 30_000);
    result.simulator = { heat_delay_ms: 0, wall_s: round((performance.now() - t0) / 1000), ...report(samples, false) };
  } finally {
    await close();
    await sim.close();
  }
}

/** Heat's own duration of the last UPDATE of a stack, from its stack-level events (real Heat). */
const heatUpdateTiming: HeatTiming = async (stackName, stackId) => {
  const e = process.env;
  const auth = await realFetch(`${(e.OS_AUTH_URL ?? 'http://127.0.0.1:5000/v3').replace(/\/+$/, '')}/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { name: e.OS_USERNAME ?? 'admin', domain: { name: e.OS_USER_DOMAIN_NAME ?? 'Default' }, password: e.OS_PASSWORD ?? 'admin-secret' } } },
        scope: { project: { name: e.OS_PROJECT_NAME ?? 'admin', domain: { name: e.OS_PROJECT_DOMAIN_NAME ?? 'Default' } } },
      },
    }),
  });
  const token = auth.headers.get('x-subject-token') ?? '';
  const catalog = ((await auth.json()) as { token: { catalog: { type: string; endpoints: { interface: string; url: string }[] }[] } }).token.catalog;
  const heatUrl = catalog.find((c) => c.type === 'orchestration')?.endpoints.find((x) => x.interface === 'public')?.url;
  if (!heatUrl) return undefined;
  const r = await realFetch(`${heatUrl}/stacks/${stackName}/${stackId}/events?resource_name=${stackName}&sort_dir=desc&limit=20`, { headers: { 'x-auth-token': token } });
  const events = ((await r.json()) as { events: { resource_status: string; event_time: string }[] }).events;
  const end = events.find((x) => x.resource_status === 'UPDATE_COMPLETE');
  const start = events.find((x) => x.resource_status === 'UPDATE_IN_PROGRESS');
  return end && start ? new Date(end.event_time).getTime() - new Date(start.event_time).getTime() : undefined;
};

// ---- 2. real Keystone + Heat (opt-in)
if (process.env.VNFM_REAL_HEAT === '1') {
  const fakeDir = join(process.cwd(), 'scripts/real-heat/templates/fake-nova-neutron');
  const files: Record<string, string> = {};
  for (const f of readdirSync(fakeDir)) if (f.startsWith('fake_')) files[f] = readFileSync(join(fakeDir, f), 'utf8');
  const e = process.env;
  const { vnfm, close } = await newVnfm();
  let id: string | undefined;
  try {
    const reg = await call(vnfm, 'POST', '/v1.0/vims', {
      vim: {
        name: 'bench-real-heat',
        type: 'openstack',
        is_default: true,
        auth_url: e.OS_AUTH_URL ?? 'http://127.0.0.1:5000/v3',
        auth_cred: { username: e.OS_USERNAME ?? 'admin', password: e.OS_PASSWORD ?? 'admin-secret', user_domain_name: e.OS_USER_DOMAIN_NAME ?? 'Default' },
        vim_project: { name: e.OS_PROJECT_NAME ?? 'admin', project_domain_name: e.OS_PROJECT_DOMAIN_NAME ?? 'Default' },
        extra: { heat_environment: parseYaml(readFileSync(join(fakeDir, 'env.yaml'), 'utf8')), heat_environment_files: files },
      },
    });
    if (reg.status !== 201) throw new Error(`VIM: ${reg.status} ${JSON.stringify(reg.body)}`);
    const vnfdId = await onboard(vnfm);
    const t0 = performance.now();
    id = await instantiate(vnfm, vnfdId, 300_000);
    const instantiateS = round((performance.now() - t0) / 1000);
    const samples = await heals(vnfm, id, REAL_RUNS, 'http://127.0.0.1:8004', 300_000, heatUpdateTiming);
    result.real_heat = { instantiate_s: instantiateS, ...report(samples, true) };
  } catch (err) {
    result.real_heat = { error: (err as Error).message };
  } finally {
    if (id !== undefined) {
      const t = await call(vnfm, 'POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
      if (t.status === 202) await waitDone(vnfm, String(t.headers.location).split('/').pop() as string, 300_000).catch(() => undefined);
    }
    await close();
  }
} else {
  result.real_heat = 'skipped: set VNFM_REAL_HEAT=1 (scripts/real-heat.sh up)';
}

result.loadavg = { start: load0.map(round), end: loadavg().map(round) };
console.log(JSON.stringify(result, null, 2));
