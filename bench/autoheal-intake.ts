/**
 * Auto-heal intake benchmark: N fault notifications for M VNFs posted over real HTTP as fast as
 * possible (fixed concurrency) to a listening VNFM with a short packing window and a fake infra
 * driver. Reports the intake rate and latency, whether every accepted notification is in the
 * ledger (none lost), the number of heal op occs (one per VNF expected), and the delay from the
 * end of each packing window to its heal op occ being created (STARTING).
 *
 *   npx tsx bench/autoheal-intake.ts [--vnfs 1000] [--notifications 10000] [--concurrency 50] [--window-ms 1000] [--intake-priority-rate 200]
 *
 * Each VNF's notifications are sent as one burst (a host or VM fault reported for its servers),
 * VNFs in random order, so the VNFs' windows overlap the way they do in a large outage.
 */
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AutohealOptions } from '../src/autoheal/storm-guard.ts';
import { resolveConfig } from '../src/config.ts';
import type { InfraContext, ObservedResources } from '../src/infra/infra-driver.ts';
import { createLogger } from '../src/logger.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';
import { startVnfm } from '../src/main/server.ts';
import { openStore } from '../src/store/db.ts';
import { NOOP_VIM_TYPE, NoopDriver } from './noop-driver.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const VNFS = arg('vnfs', 1000);
const NOTIFICATIONS = arg('notifications', 10_000);
const CONCURRENCY = arg('concurrency', 50);
const WINDOW_MS = arg('window-ms', 1000);
/** Notifications/s from which due heals wait for the intake (autoheal.intakePriorityRate); 0 = heals run during the intake. */
const INTAKE_PRIORITY = arg('intake-priority-rate', 200);

/** The no-op driver, whose servers report a Server Notifier alarm id (`alarm-<serverId>`). */
class AlarmNoopDriver extends NoopDriver {
  override async observe(ctx: InfraContext): Promise<ObservedResources> {
    const o = await super.observe(ctx);
    return { ...o, vnfcs: o.vnfcs.map((v) => ({ ...v, metadata: { ...(v.metadata ?? {}), server_notification: { alarmId: `alarm-${v.computeResource.resourceId}`, serverId: v.computeResource.resourceId } } })) };
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}

/** The load generator (plain JavaScript, run in a worker thread): posts `work` with fixed concurrency. */
const CLIENT = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { work, concurrency } = workerData;
// One keep-alive connection per concurrent sender (plain node:http: cheaper per request than fetch).
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const post = (w) => new Promise((resolve) => {
  const u = new URL(w.url);
  const req = http.request({ agent, host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(w.body) } }, (res) => {
    res.resume();
    res.on('end', () => resolve(res.statusCode));
    res.on('error', () => resolve(-1));
  });
  req.on('error', () => resolve(-1));
  req.end(w.body);
});
const statuses = new Map();
const lat = [];
let next = 0;
(async () => {
  const t0 = Date.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < work.length) {
      const w = work[next++];
      const s = performance.now();
      const status = await post(w);
      lat.push(performance.now() - s);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  }));
  agent.destroy();
  parentPort.postMessage({ statuses: [...statuses], lat, t0, ms: Date.now() - t0 });
})();
`;

const log = (msg: string) => process.stderr.write(`[autoheal-intake] ${msg}\n`);

const store = await openStore({ dataDir: 'memory://' });
const config = resolveConfig({
  flags: { sim: false, outbound: { vimAllow: ['127.0.0.0/8'] }, logLevel: 'warn', dataDir: 'memory://', port: 0, runner: { pollMs: 200, leaseMs: 30_000, concurrency: 16, workerId: 'bench' }, faultNotification: { windowMs: WINDOW_MS } },
});
config.autoheal = { ...config.autoheal, sweepMs: 200, concurrency: 16 };
// an auto-heal module option (see src/autoheal/storm-guard.ts)
Object.assign(config.autoheal, { intakePriorityRate: INTAKE_PRIORITY } satisfies Partial<AutohealOptions>);
const vnfm = await startVnfm(config, {
  store,
  logger: createLogger('warn'),
  without: ['sync'],
  modules: { autoheal: { noMgmtDriver: true } },
  plugins: [(ctx) => ctx.engine.drivers.register(new AlarmNoopDriver())],
});
const app = vnfm.app;
const H = { version: '2.0.0' };

// The sample package without its hook scripts (their cost is the package's, not auto-heal's).
const dir = mkdtempSync(join(tmpdir(), 'bench-pkg-'));
cpSync('samples/vm-basic', dir, { recursive: true });
const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
writeFileSync(df, readFileSync(df, 'utf8').replace(/\n {6}interfaces:[\s\S]*?\n(?= {4}VDU1:)/, '\n'));
const pkg = (await app.inject({ method: 'POST', url: '/vnfpkgm/v1/vnf_packages', payload: {} })).json();
await app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${pkg.id}/package_content`, payload: buildCsarFromDir(dir), headers: { 'content-type': 'application/zip' } });
await vnfm.ctx.packages.idle();
const vnfdId = (await app.inject({ method: 'GET', url: `/vnfpkgm/v1/vnf_packages/${pkg.id}` })).json().vnfdId;

log(`instantiating ${VNFS} VNFs`);
const tInst = Date.now();
const ids: string[] = [];
for (let i = 0; i < VNFS; i++) {
  const r = await app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: H, payload: { vnfdId } });
  const id = r.json().id as string;
  const ir = await app.inject({
    method: 'POST',
    url: `/vnflcm/v2/vnf_instances/${id}/instantiate`,
    headers: H,
    payload: { flavourId: 'simple', vimConnectionInfo: { v: { vimType: NOOP_VIM_TYPE, interfaceInfo: { e: 1 }, accessInfo: { a: 1 } } }, vnfConfigurableProperties: { isAutohealEnabled: true }, additionalParams: { ServerNotifierFaultID: ['1234'] } },
  });
  if (ir.statusCode !== 202) throw new Error(`instantiate: ${ir.statusCode} ${ir.body}`);
  ids.push(id);
}
await vnfm.ctx.engine?.runner.idle(900_000);
log(`instantiated in ${Date.now() - tInst} ms`);

// Targets: the servers of each VNF, as the VNFM reports them.
const rows = await store.db.selectFrom('vnf_instance').select(['id', 'instantiated_vnf_info']).where('id', 'in', ids).execute();
const servers = new Map<string, { serverId: string; alarmId: string }[]>();
for (const r of rows) {
  const info = r.instantiated_vnf_info as { vnfcResourceInfo?: { computeResource: { resourceId: string }; metadata?: { server_notification?: { alarmId?: string } } }[] } | null;
  servers.set(r.id, (info?.vnfcResourceInfo ?? []).map((c) => ({ serverId: c.computeResource.resourceId, alarmId: c.metadata?.server_notification?.alarmId as string })));
}
const order = [...ids].sort(() => Math.random() - 0.5);
const perVnf = Math.ceil(NOTIFICATIONS / VNFS);
const work: { url: string; body: string }[] = [];
for (const id of order) {
  const s = servers.get(id) ?? [];
  for (let k = 0; k < perVnf && work.length < NOTIFICATIONS; k++) {
    const t = s[k % s.length] as { serverId: string; alarmId: string };
    work.push({
      url: `${vnfm.url}${config.faultNotification.prefix}/vnf_instances/${id}/servers/${t.serverId}/notify`,
      body: JSON.stringify({ notification: { host_id: `host-${k % 3}`, alarm_id: t.alarmId, fault_id: '1234', fault_type: k % 2 ? '10' : '20', fault_option: { seq: k, id: randomUUID() } } }),
    });
  }
}

log(`posting ${work.length} notifications, concurrency ${CONCURRENCY}`);
// The load generator runs in a worker thread: it must not share the VNFM's event loop (a real
// Server Notifier is another process), so the VNFM gets its own core for the intake.
const client = new Worker(CLIENT, { eval: true, workerData: { work, concurrency: CONCURRENCY } });
const result = await new Promise<{ statuses: [number, number][]; lat: number[]; t0: number; ms: number }>((resolve, reject) => {
  client.once('message', resolve);
  client.once('error', reject);
});
await client.terminate();
const statuses = new Map<number, number>(result.statuses);
const intakeLat = result.lat;
const intakeMs = result.ms;
const t0 = result.t0;
const groups = vnfm.ctx.autoheal?.intake.stats ?? { groups: 0, written: 0 };
log(`intake done in ${intakeMs} ms; waiting for the heals`);

// Every VNF's heal created (one per VNF), then every heal finished.
const db = store.db as unknown as import('kysely').Kysely<Record<string, Record<string, unknown>>>;
const healCount = async () => Number((await store.db.selectFrom('op_occ').select((eb) => eb.fn.countAll().as('c')).where('operation', '=', 'HEAL').executeTakeFirstOrThrow()).c);
const until = async (fn: () => Promise<boolean>, ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() < end && !(await fn())) await new Promise((r) => setTimeout(r, 200));
};
await until(async () => (await healCount()) >= VNFS, 600_000);
const tAllCreated = Date.now();
await vnfm.ctx.engine?.runner.idle(900_000);
// Anything still due (a batch that had to wait) gets its chance before counting.
await new Promise((r) => setTimeout(r, WINDOW_MS + 1000));
await vnfm.ctx.engine?.runner.idle(900_000);

const heals = await store.db.selectFrom('op_occ').select(['id', 'vnf_instance_id', 'start_time', 'state_entered_time', 'operation_state', 'is_automatic_invocation']).where('operation', '=', 'HEAL').execute();
const batches = await db.selectFrom('autoheal_batch').select(['id', 'vnf_instance_id', 'deadline', 'status', 'op_occ_id', 'notification_count']).execute();
const ledger = Number((await db.selectFrom('fault_notification').select((eb) => eb.fn.countAll().as('c')).executeTakeFirstOrThrow()).c);
const healById = new Map(heals.map((h) => [h.id, h]));
const delays: number[] = [];
for (const b of batches) {
  const h = b.op_occ_id ? healById.get(b.op_occ_id as string) : undefined;
  if (h) delays.push(new Date(h.start_time).getTime() - new Date(b.deadline as string).getTime());
}
const accepted = statuses.get(204) ?? 0;
const perVnfHeals = new Map<string, number>();
for (const h of heals) perVnfHeals.set(h.vnf_instance_id, (perVnfHeals.get(h.vnf_instance_id) ?? 0) + 1);
const batchByStatus: Record<string, number> = {};
for (const b of batches) batchByStatus[b.status as string] = (batchByStatus[b.status as string] ?? 0) + 1;

console.log(
  JSON.stringify({
    vnfs: VNFS,
    notifications_sent: work.length,
    concurrency: CONCURRENCY,
    window_ms: WINDOW_MS,
    http_statuses: Object.fromEntries(statuses),
    intake_ms: intakeMs,
    intake_per_s: Math.round((work.length * 1000) / intakeMs),
    intake_groups: groups.groups,
    intake_mean_group: Math.round((groups.written / Math.max(1, groups.groups)) * 10) / 10,
    intake_latency_ms: { p50: Math.round(pct(intakeLat, 50) * 10) / 10, p99: Math.round(pct(intakeLat, 99) * 10) / 10, max: Math.round(Math.max(...intakeLat)) },
    ledger_rows: ledger,
    lost: accepted - ledger,
    heal_op_occs: heals.length,
    heal_op_occs_automatic: heals.filter((h) => h.is_automatic_invocation).length,
    vnfs_healed_more_than_once: [...perVnfHeals.values()].filter((n) => n > 1).length,
    vnfs_not_healed: VNFS - perVnfHeals.size,
    heals_completed: heals.filter((h) => h.operation_state === 'COMPLETED').length,
    batches: batchByStatus,
    window_end_to_heal_starting_ms: { p50: pct(delays, 50), p99: pct(delays, 99), max: Math.max(...delays), min: Math.min(...delays) },
    first_post_to_all_heals_created_ms: tAllCreated - t0,
    first_post_to_all_heals_completed_ms: Math.max(...heals.map((h) => new Date(h.state_entered_time).getTime())) - t0,
  }),
);
await vnfm.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
