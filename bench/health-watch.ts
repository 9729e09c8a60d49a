/**
 * VNFC health watch on the simulated clouds (docs/health.md): how fast the VNFM's own watchers see
 * a fault, how long a fault takes to be healed and verified healthy, and what watching costs when
 * nothing happens.
 *
 * 1. Detection latency (auto-heal off): `--faults` servers of a VM VNF (samples/vm-basic, hook
 *    scripts left out) failed through the OpenStack sim's `/_sim/servers/{id}/fail`, and as many
 *    Deployment pods of a CNF (samples/cnf-all-kinds, VDU3) made not Ready through the Kubernetes
 *    sim's `/_sim/pods/{ns}/{pod}/unready`, one at a time, recovered (`/recover`, `/ready`) and
 *    seen healthy again in between. Per fault, from the moment it was injected: the row's
 *    `observedAt` (the watcher saw it), its `updatedAt` (the model wrote it) and when a client
 *    polling `GET /vnfm/v1/vnf_instances/{id}/health` every 20 ms saw it `faulty`.
 * 2. Fault -> verified healthy (auto-heal on, `--unhealthy-for-ms` and the packing window
 *    `--window-ms` small): `--heals` faults per cloud, each until the healed VNFC's row is healthy
 *    on its new server / pod; split into detection, the configured unhealthyFor + window, the gap
 *    to the heal op (sweeps), the heal op itself, and the heal's end to the row healthy.
 * 3. Idle watching cost: a second VNFM (fresh database, `--idle-period-ms`, the default 5 s)
 *    watching N VNFs of one OpenStack VIM project for `--idle-seconds`, for each N of
 *    `--idle-sizes`: one VNF instantiated for real, the others copies of its database row whose
 *    VNFCs point at stand-alone servers created in the sim. VIM requests per minute (the
 *    `vnfm_health_watch_requests_total` metric) and the process's CPU (`process.cpuUsage` delta;
 *    the sims and the embedded database run in the same process, the bench itself only waits), and
 *    the same for `--baseline-seconds` with the health monitor stopped: the difference is the
 *    watch's own CPU. OpenStack faults wait a random part of a poll period before they are injected
 *    (a healthy row is seen just after a poll, so faults would otherwise all land a period before
 *    the next one).
 *
 *   npx tsx bench/health-watch.ts [--faults 20] [--heals 5] [--period-ms 1000] [--unhealthy-for-ms 500]
 *     [--window-ms 200] [--idle-sizes 100,1000] [--idle-seconds 60] [--idle-period-ms 5000] [--baseline-seconds 30] [--skip-idle]
 *
 * Prints one JSON document; the numbers depend on the machine's load, which is included.
 */
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { startVnfm, type Vnfm } from '../src/main/server.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';
import { startKubernetesSim } from '../src/sim/kubernetes/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../src/sim/openstack/index.ts';
import { json, openStore, type Store } from '../src/store/db.ts';
import { apiClient, type Json } from './http-client.ts';

const argv = process.argv;
const arg = (name: string, def: string): string => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? (argv[i + 1] as string) : def;
};
const FAULTS = Number(arg('faults', '20'));
const HEALS = Number(arg('heals', '5'));
const PERIOD_MS = Number(arg('period-ms', '1000'));
const UNHEALTHY_MS = Number(arg('unhealthy-for-ms', '500'));
const WINDOW_MS = Number(arg('window-ms', '200'));
const IDLE_SIZES = arg('idle-sizes', '100,1000').split(',').map(Number);
const IDLE_SECONDS = Number(arg('idle-seconds', '60'));
const IDLE_PERIOD_MS = Number(arg('idle-period-ms', '5000'));
const BASELINE_SECONDS = Number(arg('baseline-seconds', '30'));
const SKIP_IDLE = argv.includes('--skip-idle');
const POLL_MS = 20;
const KUBELET_MS = 20;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}
function stats(xs: number[]) {
  return { n: xs.length, p50_ms: Math.round(pct(xs, 50)), p99_ms: Math.round(pct(xs, 99)), min_ms: Math.round(Math.min(...xs)), max_ms: Math.round(Math.max(...xs)) };
}
const la = () => loadavg().map((x) => Math.round(x * 100) / 100);

/** samples/vm-basic without its hook scripts (their cost is the package's). */
function vmPackage(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'bench-health-pkg-'));
  cpSync('samples/vm-basic', dir, { recursive: true });
  const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
  writeFileSync(df, readFileSync(df, 'utf8').replace(/\n {6}interfaces:[\s\S]*?\n(?= {4}VDU1:)/, '\n'));
  const zip = buildCsarFromDir(dir);
  rmSync(dir, { recursive: true, force: true });
  return zip;
}

type Call = ReturnType<typeof apiClient>['call'];

interface Env {
  vnfm: Vnfm;
  store: Store;
  call: Call;
  waitDone(opId: string): Promise<Json>;
}

async function startEnv(flags: Record<string, unknown>): Promise<Env> {
  const store = await openStore({ dataDir: 'memory://' });
  const config = resolveConfig({
    flags: {
      sim: false,
      // the simulated VIMs this benchmark registers listen on loopback
      outbound: { vimAllow: ['127.0.0.0/8'] },
      logLevel: 'warn',
      dataDir: 'memory://',
      port: 0,
      runner: { pollMs: 100, leaseMs: 30_000, concurrency: 8, workerId: 'bench' },
      sync: { intervalMs: 0 },
      ...flags,
    } as never,
  });
  const vnfm = await startVnfm(config, { store, logger: createLogger('warn', process.stderr) });
  const { call, waitDone } = apiClient(vnfm.url);
  return { vnfm, store, call, waitDone };
}

async function registerOpenStack(call: Call, os: OpenStackSim): Promise<void> {
  const c = os.credentials;
  await call('POST', '/v1.0/vims', { vim: { name: 'bench-os', type: 'openstack', is_default: true, auth_url: c.authUrl, auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain }, vim_project: { name: c.project, project_domain_name: c.projectDomain } } });
}

async function onboard(env: Env, zip: Buffer): Promise<string> {
  const pkg = (await env.call('POST', '/vnfpkgm/v1/vnf_packages', {})).json;
  await env.call('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.id}/package_content`, zip);
  await env.vnfm.ctx.packages.idle();
  return (await env.call('GET', `/vnfpkgm/v1/vnf_packages/${pkg.id}`)).json.vnfdId as string;
}

async function instantiate(env: Env, vnfdId: string, name: string, autoheal: boolean, additionalParams: Json = {}): Promise<string> {
  const id = (await env.call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: name })).json.id as string;
  const r = await env.call('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vnfConfigurableProperties: { isAutohealEnabled: autoheal }, additionalParams });
  await env.waitDone(String(r.location).split('/').pop() as string);
  return id;
}

/** VNFCs of an instance: vnfcInfo id, VDU, resource id. */
async function vnfcs(env: Env, id: string): Promise<{ id: string; vduId: string; resourceId: string }[]> {
  const info = (await env.call('GET', `/vnflcm/v2/vnf_instances/${id}`)).json.instantiatedVnfInfo;
  return (info.vnfcInfo as Json[]).map((v) => ({ id: v.id, vduId: v.vduId, resourceId: (info.vnfcResourceInfo as Json[]).find((r) => r.id === v.vnfcResourceInfoId)?.computeResource.resourceId as string }));
}

/** Polls the instance's health every {@link POLL_MS} until `pick` returns a row; returns it and when it was seen. */
async function untilRow(env: Env, id: string, what: string, pick: (rows: Json[]) => Json | undefined, timeoutMs = 60_000): Promise<{ row: Json; seenAt: number }> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const rows = (await env.call('GET', `/vnfm/v1/vnf_instances/${id}/health`)).json.vnfcs as Json[];
    const row = pick(rows);
    if (row) return { row, seenAt: Date.now() };
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(POLL_MS);
  }
}
const rowWith = (resourceId: string, condition: string) => (rows: Json[]) => rows.find((r) => r.resourceId === resourceId && r.condition === condition);

interface Detection {
  observed: number[];
  written: number[];
  seen: number[];
}

/**
 * `n` faults, one at a time over the VNFCs `targets` (resource ids), each detected then recovered
 * and seen healthy again.
 */
async function detect(env: Env, id: string, targets: string[], n: number, jitterMs: number, fault: (r: string) => Promise<void>, recover: (r: string) => Promise<void>): Promise<Detection> {
  const out: Detection = { observed: [], written: [], seen: [] };
  for (const r of targets) await untilRow(env, id, 'healthy at start', rowWith(r, 'healthy'));
  for (let i = 0; i < n; i++) {
    const r = targets[i % targets.length] as string;
    // a healthy row is seen just after a poll: a random delay spreads the faults over the poll period
    if (jitterMs > 0) await sleep(Math.random() * jitterMs);
    const t0 = Date.now();
    await fault(r);
    const { row, seenAt } = await untilRow(env, id, `${r} faulty`, rowWith(r, 'faulty'));
    out.observed.push(Date.parse(row.observedAt) - t0);
    out.written.push(Date.parse(row.updatedAt) - t0);
    out.seen.push(seenAt - t0);
    await recover(r);
    await untilRow(env, id, `${r} healthy again`, rowWith(r, 'healthy'));
  }
  return out;
}

interface HealSplit {
  total: number[];
  detected: number[];
  toHealStart: number[];
  healOp: number[];
  afterHeal: number[];
}

/** `n` faults of the auto-healed instance `id` (VNFCs of `vdu`), each until the healed VNFC is healthy on its new resource. */
async function healRounds(env: Env, id: string, vdu: string | undefined, n: number, fault: (r: string) => Promise<void>): Promise<HealSplit> {
  const out: HealSplit = { total: [], detected: [], toHealStart: [], healOp: [], afterHeal: [] };
  const healsOf = async () => (await env.call('GET', `/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${id});(eq,operation,HEAL)`)).json as Json[];
  for (let i = 0; i < n; i++) {
    const all = (await vnfcs(env, id)).filter((v) => vdu === undefined || v.vduId === vdu);
    const v = all[i % all.length];
    if (!v) throw new Error('no VNFC to fault');
    for (const c of all) await untilRow(env, id, 'healthy at start', rowWith(c.resourceId, 'healthy'));
    const known = new Set((await healsOf()).map((o) => o.id as string));
    const t0 = Date.now();
    await fault(v.resourceId);
    const { row: faulty } = await untilRow(env, id, 'faulty', rowWith(v.resourceId, 'faulty'));
    const { row: healthy } = await untilRow(env, id, 'healthy on a new resource', (rows) => rows.find((r) => r.vnfcInfoId === v.id && r.resourceId !== v.resourceId && r.condition === 'healthy'));
    const heal = (await healsOf()).find((o) => !known.has(o.id) && o.operationState === 'COMPLETED');
    if (!heal) throw new Error('healthy again without a completed heal');
    const hStart = Date.parse(heal.startTime);
    const hEnd = Date.parse(heal.stateEnteredTime);
    out.total.push(Date.parse(healthy.observedAt) - t0);
    out.detected.push(Date.parse(faulty.observedAt) - t0);
    out.toHealStart.push(hStart - Date.parse(faulty.observedAt));
    out.healOp.push(hEnd - hStart);
    out.afterHeal.push(Date.parse(healthy.observedAt) - hEnd);
  }
  return out;
}

function summarize(d: Detection | HealSplit): Record<string, unknown> {
  return Object.fromEntries(Object.entries(d).map(([k, xs]) => [k, stats(xs as number[])]));
}

/** Phases 1 and 2: one VNFM, both clouds. */
async function activePhases(): Promise<Record<string, unknown>> {
  const os = await startOpenStackSim({ heatDelayMs: 0 });
  const k8s = await startKubernetesSim({ kubeletDelayMs: KUBELET_MS });
  const env = await startEnv({
    vnfcHealth: { enabled: true, periodMs: PERIOD_MS, unhealthyForMs: { vm: UNHEALTHY_MS, pod: UNHEALTHY_MS } },
    autoheal: { sweepMs: 100, maxHealsPerVnfc: 1_000_000 },
    faultNotification: { windowMs: WINDOW_MS },
  });
  const osCtl = async (path: string) => {
    const r = await fetch(`${os.url}/_sim/${path}`, { method: 'POST', headers: { 'x-sim-admin-secret': os.adminSecret, 'content-type': 'application/json' }, body: '{}' });
    if (!r.ok) throw new Error(`sim ${path}: ${r.status} ${await r.text()}`);
  };
  const kCtl = async (path: string) => {
    const r = await fetch(`${k8s.httpUrl}/_sim/${path}`, { method: 'POST', headers: { authorization: `Bearer ${k8s.token}`, 'content-type': 'application/json' }, body: '{}' });
    if (!r.ok) throw new Error(`sim ${path}: ${r.status} ${await r.text()}`);
  };
  try {
    await registerOpenStack(env.call, os);
    await env.call('POST', '/v1.0/vims', { vim: { name: 'bench-k8s', type: 'kubernetes', auth_url: k8s.url, auth_cred: { bearer_token: k8s.token, ssl_ca_cert: k8s.caCert }, vim_project: { name: 'default' }, is_default: true } });
    const vmVnfd = await onboard(env, vmPackage());
    const cnfVnfd = await onboard(env, buildCsarFromDir('samples/cnf-all-kinds'));
    const vmWatch = await instantiate(env, vmVnfd, 'bench-health-vm', false);
    const vmHeal = await instantiate(env, vmVnfd, 'bench-health-vm-heal', true);
    const cnfWatch = await instantiate(env, cnfVnfd, 'bench-health-cnf', false, { namespace: 'bench-watch' });
    const cnfHeal = await instantiate(env, cnfVnfd, 'bench-health-cnf-heal', true, { namespace: 'bench-heal' });

    const vmServers = (await vnfcs(env, vmWatch)).map((v) => v.resourceId);
    const osDetect = await detect(env, vmWatch, vmServers, FAULTS, PERIOD_MS, (s) => osCtl(`servers/${s}/fail`), (s) => osCtl(`servers/${s}/recover`));
    const pods = (await vnfcs(env, cnfWatch)).filter((v) => v.vduId === 'VDU3').map((v) => v.resourceId);
    const k8sDetect = await detect(env, cnfWatch, pods, FAULTS, 0, (p) => kCtl(`pods/bench-watch/${p}/unready`), (p) => kCtl(`pods/bench-watch/${p}/ready`));
    const osHeal = await healRounds(env, vmHeal, undefined, HEALS, (s) => osCtl(`servers/${s}/fail`));
    const k8sHeal = await healRounds(env, cnfHeal, 'VDU3', HEALS, (p) => kCtl(`pods/bench-heal/${p}/unready`));
    return {
      detection: {
        openstack: { periodMs: PERIOD_MS, expectMaxMs: PERIOD_MS + 500, vnfcs: vmServers.length, ...summarize(osDetect) },
        kubernetes: { expectMaxMs: 1000, pods: pods.length, ...summarize(k8sDetect) },
      },
      faultToHealthy: {
        configured: { unhealthyForMs: UNHEALTHY_MS, windowMs: WINDOW_MS, sumMs: UNHEALTHY_MS + WINDOW_MS, heatDelayMs: 0, kubeletDelayMs: KUBELET_MS },
        openstack: summarize(osHeal),
        kubernetes: summarize(k8sHeal),
      },
    };
  } finally {
    await env.vnfm.close();
    await env.store.close();
    await k8s.close();
    await os.close();
  }
}

/** Copies of the template instance's row, each VNFC on a new stand-alone server of the sim. */
async function seedCopies(env: Env, os: OpenStackSim, templateId: string, count: number, from: number, networkId: string): Promise<void> {
  const t = await env.store.db.selectFrom('vnf_instance').selectAll().where('id', '=', templateId).executeTakeFirstOrThrow();
  const rows = [];
  for (let i = from; i < from + count; i++) {
    const info = structuredClone(t.instantiated_vnf_info) as unknown as Json;
    for (const [k, r] of (info.vnfcResourceInfo as Json[]).entries()) {
      const n = i * 4 + k;
      const ip = `10.200.${Math.floor(n / 250)}.${(n % 250) + 2}`;
      r.computeResource.resourceId = os.ensureServer({ name: `bench-idle-${i}-${k}`, networkId, fixedIp: ip }).serverId;
    }
    const row: Record<string, unknown> = { ...t, id: randomUUID(), vnf_instance_name: `bench-idle-${i}`, instantiated_vnf_info: info };
    for (const [k, v] of Object.entries(row)) if (v !== null && typeof v === 'object' && !(v instanceof Date)) row[k] = json(v);
    rows.push(row);
  }
  for (let s = 0; s < rows.length; s += 200) await env.store.db.insertInto('vnf_instance').values(rows.slice(s, s + 200) as never).execute();
}

async function requestsCounted(env: Env): Promise<number> {
  const m = await env.vnfm.ctx.metrics.healthWatchRequests.get();
  return m.values.filter((v) => v.labels.vim_type === 'openstack').reduce((a, v) => a + v.value, 0);
}

/** Phase 3: idle watching of N VNFs on one VIM project. */
async function idlePhase(): Promise<Record<string, unknown>[]> {
  const os = await startOpenStackSim({ heatDelayMs: 0 });
  const env = await startEnv({ vnfcHealth: { enabled: true, periodMs: IDLE_PERIOD_MS }, runner: { pollMs: 500, leaseMs: 30_000, concurrency: 8, workerId: 'bench' } });
  const monitor = env.vnfm.ctx.health?.monitor;
  if (!monitor) throw new Error('no VNFC health model');
  const out: Record<string, unknown>[] = [];
  try {
    await registerOpenStack(env.call, os);
    const vnfd = await onboard(env, vmPackage());
    const template = await instantiate(env, vnfd, 'bench-idle-0', false);
    const net = os.ensureNetwork({ name: 'bench-idle-net', cidr: '10.200.0.0/16' });
    const perVnf = (await vnfcs(env, template)).length;
    let have = 1;
    for (const n of IDLE_SIZES) {
      if (n > have) await seedCopies(env, os, template, n - have, have, net.networkId);
      have = Math.max(have, n);
      // the next reconcile and the full listing of the grown target, then every VNFC healthy
      const until = Date.now() + 10 * IDLE_PERIOD_MS + 30_000;
      for (;;) {
        const c = await counts(env);
        if (c.healthy === have * perVnf) break;
        if (Date.now() > until) throw new Error(`N=${n}: VNFC rows not all healthy (${JSON.stringify(c)})`);
        await sleep(500);
      }
      await sleep(IDLE_PERIOD_MS);
      const watched = await idleWindow(env, IDLE_SECONDS);
      const vnfcCounts = await counts(env);
      // the same VNFM with its health monitor stopped: what the rest of an idle VNFM costs
      await monitor.stop();
      const baseline = BASELINE_SECONDS > 0 ? await idleWindow(env, BASELINE_SECONDS) : undefined;
      await monitor.start();
      const cpuPct = (w: IdleWindow) => Math.round((w.cpuMs / w.wallMs) * 1000) / 10;
      out.push({
        vnfs: have,
        vnfcs: vnfcCounts,
        periodMs: IDLE_PERIOD_MS,
        seconds: Math.round(watched.wallMs / 100) / 10,
        vimRequests: watched.requests,
        vimRequestsPerMin: Math.round((watched.requests / watched.wallMs) * 60_000 * 10) / 10,
        cpuPercent: cpuPct(watched),
        ...(baseline ? { baselineSeconds: Math.round(baseline.wallMs / 100) / 10, baselineCpuPercent: cpuPct(baseline), watchCpuMsPerPeriod: Math.round((watched.cpuMs / watched.wallMs - baseline.cpuMs / baseline.wallMs) * IDLE_PERIOD_MS) } : {}),
        rssMb: Math.round(process.memoryUsage().rss / 2 ** 20),
        loadavg: la(),
      });
    }
    return out;
  } finally {
    await env.vnfm.close();
    await env.store.close();
    await os.close();
  }
}

interface IdleWindow {
  wallMs: number;
  cpuMs: number;
  requests: number;
}

/** Waits `seconds`, counting the health watch's VIM requests and the process's CPU meanwhile. */
async function idleWindow(env: Env, seconds: number): Promise<IdleWindow> {
  const r0 = await requestsCounted(env);
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  await sleep(seconds * 1000);
  const wallMs = performance.now() - w0;
  const cpu = process.cpuUsage(c0);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, requests: (await requestsCounted(env)) - r0 };
}

async function counts(env: Env): Promise<Record<string, number>> {
  const h = env.vnfm.ctx.health;
  if (!h) throw new Error('no VNFC health model');
  return h.store.counts();
}

const load0 = la();
const active = await activePhases();
const idle = SKIP_IDLE ? [] : await idlePhase();
console.log(JSON.stringify({ bench: 'health-watch', ...active, idle, loadavg: { before: load0, after: la() }, cpus: cpus().length }));
