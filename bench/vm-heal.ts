/**
 * VM heal cost: what the VNFM adds to one VNFC heal through the OpenStack driver.
 *
 * 1. Simulated OpenStack with instant Heat (heat delay 0): N sequential VNFC heals (v2 API,
 *    alternating VNFCs) of one instance of samples/vm-basic. Reports accepted (202) -> COMPLETED
 *    as the engine records it (op occ startTime -> stateEnteredTime) at p50/p99, the time of the
 *    POST itself, the per-step split (from the "step done" log lines), and the OpenStack HTTP
 *    requests made per heal and their total time (the rest is the VNFM's own cost).
 * 2. With VNFM_REAL_HEAT=1 (scripts/real-heat.sh up): against the real Keystone + Heat (stand-in
 *    nova/neutron/cinder), for a VNF of 3 VNFCs (2 x VDU1 in a scaling group + VDU2) and one of 30
 *    VNFCs (the same package with a 29-member VDU1 group, instantiation_level_2): `--real-runs`
 *    single-VNFC heals (a VDU1 member) and `--real-entire-runs` entire heals. Per heal: accepted ->
 *    COMPLETED, Heat's own time of the stack update (from its events: first `*_IN_PROGRESS` of the
 *    stack to its `*_COMPLETE`, 1 s resolution; for an entire heal the DELETE of the old stack plus
 *    the CREATE of the new one), the same from heat-engine's log when it is readable (ms
 *    resolution), and the VNFM overhead = total - Heat's own.
 *
 *   npx tsx bench/vm-heal.ts [--heals 50] [--real-runs 5] [--real-entire-runs 3] [--sizes 3,30] [--with-hooks] [--no-sim] [--trace]
 *
 * `--sizes 30` alone runs the 30-VNFC variant only. `--trace` prints, per real-Heat heal, every
 * OpenStack request (ms after the op's start, its duration, method and path) to stderr.
 *
 * Prints one JSON document. The hook scripts of the sample package are dropped unless
 * `--with-hooks` (they are the package's cost, not the VNFM's).
 */
import { closeSync, cpSync, fstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
const REAL_RUNS = num('real-runs', 5);
const REAL_ENTIRE_RUNS = num('real-entire-runs', 3);
const SIZES = (argv.includes('--sizes') ? String(argv[argv.indexOf('--sizes') + 1]) : '3,30').split(',').map(Number);
const NO_SIM = argv.includes('--no-sim');
const ENGINE_LOG = process.env.HEAT_ENGINE_LOG ?? '/var/log/heat/heat-engine.log';
const WITH_HOOKS = argv.includes('--with-hooks');
/** Print each real-Heat heal's OpenStack requests (start relative to the op's start, duration) to stderr. */
const TRACE = argv.includes('--trace');
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
  method: string;
  /** Epoch ms when the request was sent. */
  at: number;
  ms: number;
}
let httpLog: HttpSample[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const method = init?.method ?? (typeof input === 'object' && 'method' in input ? input.method : 'GET');
  const at = Date.now();
  const t0 = performance.now();
  try {
    return await realFetch(input, init);
  } finally {
    httpLog.push({ url, method, at, ms: performance.now() - t0 });
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

/**
 * The sample package, without its hook scripts unless asked. `vdu1Max` > 3 widens the VDU1 group
 * (template max_size, VDU profile, scaling aspect) and makes instantiation_level_2 that size.
 */
function packageZip(vdu1Max = 3): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'bench-vm-pkg-'));
  cpSync('samples/vm-basic', dir, { recursive: true });
  const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
  let text = readFileSync(df, 'utf8');
  if (!WITH_HOOKS) text = text.replace(/\n {6}interfaces:[\s\S]*?\n(?= {4}VDU1:)/, '\n');
  if (vdu1Max > 3) {
    const must = (from: RegExp, to: string) => {
      if (!from.test(text)) throw new Error(`package: ${from} not found`);
      text = text.replace(from, to);
    };
    must(/max_number_of_instances: 3/, `max_number_of_instances: ${vdu1Max}`);
    must(/max_scale_level: 2/, `max_scale_level: ${vdu1Max - 1}`);
    must(/(instantiation_level_2:\s+description: [^\n]*\n\s+scale_info:\s+VDU1_scale:\s+scale_level: )2/, `$1${vdu1Max - 1}`);
    must(/(VDU1_instantiation_levels:[\s\S]*?instantiation_level_2:\s+number_of_instances: )3/, `$1${vdu1Max}`);
    const top = join(dir, 'BaseHOT/simple/sample.yaml');
    writeFileSync(top, readFileSync(top, 'utf8').replace('max_size: 3', `max_size: ${vdu1Max}`));
  }
  writeFileSync(df, text);
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

async function onboard(vnfm: Vnfm, vdu1Max = 3): Promise<string> {
  const pkg = await call(vnfm, 'POST', '/vnfpkgm/v1/vnf_packages', {});
  await vnfm.app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, payload: packageZip(vdu1Max), headers: { 'content-type': 'application/zip' } });
  await vnfm.ctx.packages.idle();
  return (await call(vnfm, 'GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`)).body.vnfdId;
}

async function instantiate(vnfm: Vnfm, vnfdId: string, timeoutMs: number, instantiationLevelId?: string): Promise<string> {
  const id = (await call(vnfm, 'POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'bench-vm-heal' })).body.id as string;
  const r = await call(vnfm, 'POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', ...(instantiationLevelId ? { instantiationLevelId } : {}) });
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
}

/** Runs `n` sequential VNFC heals, alternating over the instance's VNFCs. */
async function heals(vnfm: Vnfm, id: string, n: number, vimBase: string, timeoutMs: number): Promise<HealSample[]> {
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
    out.push({
      acceptMs,
      totalMs: new Date(occ.stateEnteredTime).getTime() - new Date(occ.startTime).getTime(),
      steps: steps.get(opId) ?? {},
      httpRequests: vim.length,
      httpMs: vim.reduce((a, h) => a + h.ms, 0),
    });
  }
  return out;
}

function report(samples: readonly HealSample[]): Record<string, unknown> {
  const stepNames = [...new Set(samples.flatMap((s) => Object.keys(s.steps)))];
  return {
    heals: samples.length,
    accepted_to_completed_ms: summary(samples.map((s) => s.totalMs)),
    post_to_202_ms: summary(samples.map((s) => s.acceptMs)),
    steps_p50_ms: Object.fromEntries(stepNames.map((k) => [k, round(pct(samples.map((s) => s.steps[k] ?? 0), 50))])),
    openstack_requests_per_heal: summary(samples.map((s) => s.httpRequests)),
    openstack_http_ms_per_heal: summary(samples.map((s) => s.httpMs)),
    // Heat answers at once: whatever is not an OpenStack request is the VNFM's own work.
    vnfm_own_ms: summary(samples.map((s) => Math.max(0, s.totalMs - s.httpMs))),
  };
}

async function newVnfm(): Promise<{ vnfm: Vnfm; close(): Promise<void> }> {
  const store = await openStore({ dataDir: 'memory://' });
  const config = resolveConfig({ flags: { sim: false, outbound: { vimAllow: ['127.0.0.0/8'] }, logLevel: 'info', dataDir: 'memory://', runner: { pollMs: 500, leaseMs: 30_000, concurrency: 8, workerId: 'bench' } } });
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
if (!NO_SIM) {
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
    result.simulator = { heat_delay_ms: 0, wall_s: round((performance.now() - t0) / 1000), ...report(samples) };
  } finally {
    await close();
    await sim.close();
  }
}

// ---- real Heat: Heat's own time of each heal, from its events and from heat-engine's log

interface HeatApi {
  get(path: string): Promise<Json>;
}

/** A token-carrying GET to the real Heat (admin-openrc credentials). */
async function heatApi(): Promise<HeatApi> {
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
  if (!heatUrl) throw new Error('no orchestration endpoint in the catalog');
  return {
    async get(path) {
      const r = await realFetch(`${heatUrl}${path}`, { headers: { 'x-auth-token': token } });
      if (r.status !== 200) throw new Error(`GET ${path}: ${r.status}`);
      return (await r.json()) as Json;
    },
  };
}

/**
 * Heat's own time of one stack action from the stack's own events (1 s resolution): the first
 * `<action>_IN_PROGRESS` at or after `fromMs` (truncated to the second) to the next
 * `<action>_COMPLETE`.
 */
async function eventSpan(api: HeatApi, name: string, id: string, action: string, fromMs: number): Promise<number | undefined> {
  // Newest first: the stack's own events (resource_name = the stack) of this op are the latest ones.
  const body = await api.get(`/stacks/${name}/${id}/events?resource_name=${name}&sort_dir=desc&limit=100`);
  const events = (body.events as { resource_name: string; resource_status: string; event_time: string }[])
    .filter((x) => x.resource_name === name)
    .map((x) => ({ s: x.resource_status, t: Date.parse(x.event_time.endsWith('Z') ? x.event_time : `${x.event_time}Z`) }));
  const from = Math.floor(fromMs / 1000) * 1000;
  const end = events.find((x) => x.t >= from && x.s === `${action}_COMPLETE`);
  // The first IN_PROGRESS of this action after `from` (the list is newest first).
  const start = end && events.filter((x) => x.t >= from && x.t <= end.t && x.s === `${action}_IN_PROGRESS`).at(-1);
  return start && end ? end.t - start.t : undefined;
}

/** Bytes of heat-engine's log so far (undefined when it cannot be read). */
function engineLogSize(): number | undefined {
  try {
    return statSync(ENGINE_LOG).size;
  } catch {
    return undefined;
  }
}

/**
 * Heat's own time from heat-engine's log (ms resolution), written after `offset`: `Updating
 * stack <name>` -> `Stack UPDATE COMPLETE (<name>)` for a VNFC heal, `Deleting stack` -> `Stack
 * DELETE COMPLETE` plus `Creating stack` -> `Stack CREATE COMPLETE` for an entire heal.
 */
function engineLogSpan(offset: number | undefined, name: string, entire: boolean, marks?: Record<string, number>): number | undefined {
  if (offset === undefined) return undefined;
  let text: string;
  try {
    const fd = openSync(ENGINE_LOG, 'r');
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - offset));
    readSync(fd, buf, 0, buf.length, offset);
    closeSync(fd);
    text = buf.toString('utf8');
  } catch {
    return undefined;
  }
  const at = (re: RegExp): number | undefined => {
    for (const line of text.split('\n')) {
      if (!re.test(line)) continue;
      const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+)/.exec(line);
      if (m) {
        const t = Date.parse(`${m[1]}T${m[2]}Z`);
        if (marks !== undefined) marks[re.source.replace(/\\/g, '').replace(/ [^ ]*$/, '')] = t;
        return t;
      }
    }
    return undefined;
  };
  const span = (startRe: RegExp, endRe: RegExp): number | undefined => {
    const a = at(startRe);
    const b = at(endRe);
    return a !== undefined && b !== undefined ? b - a : undefined;
  };
  const n = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (!entire) return span(new RegExp(`Updating stack ${n}$`), new RegExp(`Stack UPDATE COMPLETE \\(${n}\\)`));
  const del = span(new RegExp(`Deleting stack ${n}$`), new RegExp(`Stack DELETE COMPLETE \\(${n}\\)`));
  const cre = span(new RegExp(`Creating stack ${n}$`), new RegExp(`Stack CREATE COMPLETE \\(${n}\\)`));
  return del !== undefined && cre !== undefined ? del + cre : undefined;
}

interface RealHealSample {
  totalMs: number;
  /** Heat's own time from its events (1 s resolution). */
  heatEventsMs?: number | undefined;
  /** Heat's own time from heat-engine's log (ms resolution). */
  heatLogMs?: number | undefined;
  steps: Record<string, number>;
  httpRequests: number;
}

/** `n` sequential heals against the real Heat: VNFC heals of VDU1 members (alternating), or entire heals. */
async function realHeals(vnfm: Vnfm, api: HeatApi, id: string, n: number, entire: boolean): Promise<RealHealSample[]> {
  const out: RealHealSample[] = [];
  for (let i = 0; i < n; i++) {
    const inst = (await call(vnfm, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body;
    const md = inst.instantiatedVnfInfo.metadata as { stack_id: string; stack_name: string };
    const vdu1 = (inst.instantiatedVnfInfo.vnfcInfo as { id: string; vduId: string }[]).filter((v) => v.vduId === 'VDU1').map((v) => v.id);
    const body = entire ? { additionalParams: { all: true } } : { vnfcInstanceId: [vdu1[i % vdu1.length]] };
    const logOffset = engineLogSize();
    httpLog = [];
    const r = await call(vnfm, 'POST', `/vnflcm/v2/vnf_instances/${id}/heal`, body);
    if (r.status !== 202) throw new Error(`heal: ${r.status} ${JSON.stringify(r.body)}`);
    const opId = String(r.headers.location).split('/').pop() as string;
    const occ = await waitDone(vnfm, opId, 900_000);
    if (occ.operationState !== 'COMPLETED') throw new Error(`heal ended ${occ.operationState}: ${JSON.stringify(occ.error)}`);
    const startMs = new Date(occ.startTime).getTime();
    let heatEventsMs: number | undefined;
    if (!entire) heatEventsMs = await eventSpan(api, md.stack_name, md.stack_id, 'UPDATE', startMs);
    else {
      const after = (await call(vnfm, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo.metadata as { stack_id: string; stack_name: string };
      const del = await eventSpan(api, md.stack_name, md.stack_id, 'DELETE', startMs).catch(() => undefined);
      const cre = await eventSpan(api, after.stack_name, after.stack_id, 'CREATE', startMs);
      heatEventsMs = del !== undefined && cre !== undefined ? del + cre : undefined;
    }
    if (TRACE) {
      const marks: Record<string, number> = {};
      engineLogSpan(logOffset, md.stack_name, entire, marks);
      const lines = httpLog
        .filter((h) => /:(5000|8004)\//.test(h.url))
        .map((h) => `  +${String(h.at - startMs).padStart(6)} ${String(Math.round(h.ms)).padStart(5)}ms ${h.method.padEnd(6)} ${h.url.replace(/^https?:\/\/[^/]+\/v1\/[^/]+/, '').replace(/^https?:\/\/[^/]+/, '')}`);
      process.stderr.write(`heal ${entire ? 'entire' : 'vnfc'} ${i + 1}: total ${new Date(occ.stateEnteredTime).getTime() - startMs} ms, steps ${JSON.stringify(steps.get(opId) ?? {})}\n  heat-engine: ${Object.entries(marks).map(([k, t]) => `${k} +${t - startMs}`).join(', ')}\n${lines.join('\n')}\n`);
    }
    out.push({
      totalMs: new Date(occ.stateEnteredTime).getTime() - startMs,
      heatEventsMs,
      heatLogMs: engineLogSpan(logOffset, md.stack_name, entire),
      steps: steps.get(opId) ?? {},
      httpRequests: httpLog.filter((h) => /:(5000|8004)\//.test(h.url)).length,
    });
  }
  return out;
}

function realReport(samples: readonly RealHealSample[]): Record<string, unknown> {
  const by = (f: (s: RealHealSample) => number | undefined) => {
    const xs = samples.map(f).filter((x): x is number => x !== undefined && Number.isFinite(x));
    return xs.length ? summary(xs) : null;
  };
  const stepNames = [...new Set(samples.flatMap((s) => Object.keys(s.steps)))];
  return {
    heals: samples.length,
    accepted_to_completed_ms: by((s) => s.totalMs),
    heat_own_events_ms: by((s) => s.heatEventsMs),
    heat_own_engine_log_ms: by((s) => s.heatLogMs),
    vnfm_overhead_events_ms: by((s) => (s.heatEventsMs === undefined ? undefined : s.totalMs - s.heatEventsMs)),
    vnfm_overhead_engine_log_ms: by((s) => (s.heatLogMs === undefined ? undefined : s.totalMs - s.heatLogMs)),
    overhead_engine_log_each_ms: samples.map((s) => (s.heatLogMs === undefined ? null : Math.round(s.totalMs - s.heatLogMs))),
    steps_p50_ms: Object.fromEntries(stepNames.map((k) => [k, round(pct(samples.map((s) => s.steps[k] ?? 0), 50))])),
    openstack_requests_per_heal: by((s) => s.httpRequests),
    loadavg_after: loadavg().map(round),
  };
}

// ---- 2. real Keystone + Heat (opt-in)
if (process.env.VNFM_REAL_HEAT === '1') {
  const fakeDir = join(process.cwd(), 'scripts/real-heat/templates/fake-nova-neutron');
  const files: Record<string, string> = {};
  for (const f of readdirSync(fakeDir)) if (f.startsWith('fake_')) files[f] = readFileSync(join(fakeDir, f), 'utf8');
  const e = process.env;
  const real: Record<string, unknown> = {};
  result.real_heat = real;
  const api = await heatApi();
  for (const size of SIZES) {
    const { vnfm, close } = await newVnfm();
    let id: string | undefined;
    const key = `vnfcs_${size}`;
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
      // 3 VNFCs: the sample's default level (2 x VDU1 + VDU2); N: VDU1 group of N - 1 members + VDU2.
      const vnfdId = await onboard(vnfm, size <= 3 ? 3 : size - 1);
      const t0 = performance.now();
      id = await instantiate(vnfm, vnfdId, 900_000, size <= 3 ? undefined : 'instantiation_level_2');
      const got = ((await call(vnfm, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfcInfo as unknown[]).length;
      const entry: Record<string, unknown> = { vnfcs: got, instantiate_s: round((performance.now() - t0) / 1000), loadavg_before: loadavg().map(round) };
      real[key] = entry;
      entry.vnfc_heal = realReport(await realHeals(vnfm, api, id, REAL_RUNS, false));
      if (REAL_ENTIRE_RUNS > 0) entry.entire_heal = realReport(await realHeals(vnfm, api, id, REAL_ENTIRE_RUNS, true));
    } catch (err) {
      real[key] = { ...((real[key] as object) ?? {}), error: (err as Error).message };
    } finally {
      if (id !== undefined) {
        const t = await call(vnfm, 'POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
        if (t.status === 202) await waitDone(vnfm, String(t.headers.location).split('/').pop() as string, 900_000).catch(() => undefined);
      }
      await close();
    }
  }
} else {
  result.real_heat = 'skipped: set VNFM_REAL_HEAT=1 (scripts/real-heat.sh up)';
}

result.loadavg = { start: load0.map(round), end: loadavg().map(round) };
console.log(JSON.stringify(result, null, 2));
