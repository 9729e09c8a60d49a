/**
 * Lists in SQL: 10,000 VNF instances (1,000 of them INSTANTIATED, with instance info shaped like
 * the engine's, and an INSTANTIATE op occ each), inserted directly through the store, then over
 * HTTP on loopback:
 *
 * - list page p50/p99 (`GET /vnflcm/v2/vnf_instances`, first and later pages, page size 100)
 * - filtered list p99 (column filters pushed to SQL; a nested-JSON filter evaluated in memory)
 * - op occ list page p99, show p99 (`GET /vnf_instances/{id}`)
 * - 20 concurrent listers for N seconds with `/healthz` probed every 50 ms on the API port and,
 *   by a second prober, on the liveness port (`health.livenessPort`, answered by a worker thread
 *   of the server); both probers run in a worker thread of the client: list p99, healthz p50/p99
 *   of each, list requests/s
 * - RSS at the end
 *
 *   npx tsx bench/lists.ts [--db pglite|postgres] [--instances 10000] [--instantiated 1000] [--seconds 10]
 *
 * `--db postgres` needs VNFM_BENCH_PG_URL (or VNFM_TEST_PG_URL): a server where the user may create
 * a database; a fresh `vnfm_bench_*` database is created and dropped.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { startVnfm } from '../src/main/server.ts';
import { json, openStore, type Store } from '../src/store/db.ts';

const argv = process.argv;
const arg = (name: string, def: string) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? (argv[i + 1] as string) : def;
};
const DB = arg('db', 'pglite');
const N = Number(arg('instances', '10000'));
const INSTANTIATED = Number(arg('instantiated', '1000'));
const SECONDS = Number(arg('seconds', '10'));

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN) * 10) / 10;
}

// The VNFM runs in a child process (`--serve`), so the load generator's own CPU (fetch, JSON
// parsing) does not count against the server, and RSS is the server's.
if (!argv.includes('--serve')) {
  const child: ChildProcess = fork(new URL(import.meta.url).pathname, [...argv.slice(2), '--serve'], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<{ url: string; livenessUrl: string; ids: string[]; loadMs: number; rssAfterLoad: number }>((res, rej) => {
    child.once('message', (m) => res(m as { url: string; livenessUrl: string; ids: string[]; loadMs: number; rssAfterLoad: number }));
    child.once('exit', (code) => rej(new Error(`server exited ${code}`)));
  });
  await runClient(ready.url, ready.livenessUrl, ready.ids, ready.loadMs, ready.rssAfterLoad, async () => {
    child.send('rss');
    return new Promise<number>((res) => child.once('message', (m) => res((m as { rss: number }).rss)));
  });
  child.send('stop');
  await new Promise((res) => child.once('exit', res));
  process.exit(0);
}

// ------------------------------------------------------------------ database

let dropDb: (() => Promise<void>) | undefined;
let store: Store;
if (DB === 'postgres') {
  const base = process.env.VNFM_BENCH_PG_URL ?? process.env.VNFM_TEST_PG_URL;
  if (!base) throw new Error('--db postgres needs VNFM_BENCH_PG_URL or VNFM_TEST_PG_URL');
  const name = `vnfm_bench_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const admin = async (q: string) => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    try {
      await c.query(q);
    } finally {
      await c.end();
    }
  };
  await admin(`create database ${name}`);
  dropDb = () => admin(`drop database if exists ${name} with (force)`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  store = await openStore({ databaseUrl: u.toString() });
} else {
  store = await openStore({ dataDir: 'memory://' });
}

// ------------------------------------------------------------------ data

const PKG = randomUUID();
const VNFD = 'b1bb0ce7-ebca-4fa7-95ed-4840d70a1177';
await store.db
  .insertInto('vnf_package')
  .values({
    id: PKG,
    onboarding_state: 'ONBOARDED',
    operational_state: 'ENABLED',
    usage_state: 'IN_USE',
    vnfd_id: VNFD,
    vnf_provider: 'Company',
    vnf_product_name: 'Sample VNF',
    vnf_software_version: '1.0',
    vnfd_version: '1.0',
    checksum: json({ algorithm: 'SHA-256', hash: 'x'.repeat(64) }),
    user_defined_data: json({}),
    vnfd: json(null),
  })
  .execute();

function instanceInfo(i: number): Record<string, unknown> {
  const vnfc = (k: number) => ({
    id: `vnfc-${i}-${k}`,
    vduId: `VDU${k + 1}`,
    computeResource: { vimConnectionId: 'vim1', resourceId: randomUUID(), vimLevelResourceType: 'OS::Nova::Server' },
    storageResourceIds: [`st-${i}-${k}`],
    vnfcCpInfo: [{ id: `cp-${i}-${k}`, cpdId: `VDU${k + 1}_CP1`, vnfExtCpId: `ext-${i}` }],
    metadata: { stableKey: `VDU${k + 1}` },
  });
  return {
    flavourId: 'simple',
    vnfState: 'STARTED',
    instantiationLevelId: 'instantiation_level_1',
    scaleStatus: [{ aspectId: 'VDU1_scale', scaleLevel: 0 }],
    maxScaleLevels: [{ aspectId: 'VDU1_scale', scaleLevel: 2 }],
    extCpInfo: [{ id: `ext-${i}`, cpdId: 'VDU1_CP1', cpProtocolInfo: [{ layerProtocol: 'IP_OVER_ETHERNET' }], extLinkPortId: `lp-${i}` }],
    extVirtualLinkInfo: [{ id: 'ext-vl', resourceHandle: { resourceId: randomUUID() }, extLinkPorts: [{ id: `lp-${i}`, resourceHandle: { resourceId: randomUUID() }, cpInstanceId: `cp-${i}-0` }] }],
    vnfcResourceInfo: [vnfc(0), vnfc(1)],
    vnfVirtualLinkResourceInfo: [{ id: `vl-${i}`, vnfVirtualLinkDescId: 'internalVL1', networkResource: { resourceId: randomUUID(), vimLevelResourceType: 'OS::Neutron::Net' }, vnfLinkPorts: [{ id: `lp2-${i}`, resourceHandle: { resourceId: randomUUID() } }] }],
    virtualStorageResourceInfo: [0, 1].map((k) => ({ id: `st-${i}-${k}`, virtualStorageDescId: `VirtualStorage${k}`, storageResource: { resourceId: randomUUID(), vimLevelResourceType: 'OS::Cinder::Volume' } })),
    vnfcInfo: [0, 1].map((k) => ({ id: `VDU${k + 1}-vnfc-${i}-${k}`, vduId: `VDU${k + 1}`, vnfcResourceInfoId: `vnfc-${i}-${k}`, vnfcState: 'STARTED' })),
  };
}

const t0 = Date.now();
const ids: string[] = [];
const instantiatedIds: string[] = [];
const BATCH = 500;
const created0 = Date.now() - N * 1000;
for (let start = 0; start < N; start += BATCH) {
  const rows = [];
  const ops = [];
  for (let i = start; i < Math.min(N, start + BATCH); i++) {
    const id = randomUUID();
    ids.push(id);
    const inst = i % Math.max(1, Math.floor(N / INSTANTIATED)) === 0 && instantiatedIds.length < INSTANTIATED;
    if (inst) instantiatedIds.push(id);
    const created = new Date(created0 + i * 1000).toISOString();
    rows.push({
      id,
      vnf_instance_name: `bench-${String(i).padStart(5, '0')}`,
      vnf_instance_description: `benchmark instance ${i}`,
      vnfd_id: VNFD,
      vnf_pkg_id: PKG,
      vnf_provider: 'Company',
      vnf_product_name: 'Sample VNF',
      vnf_software_version: '1.0',
      vnfd_version: '1.0',
      instantiation_state: inst ? 'INSTANTIATED' : 'NOT_INSTANTIATED',
      vnf_configurable_properties: json(inst ? { isAutoscaleEnabled: false } : null),
      vim_connection_info: json(inst ? { vim1: { vimId: randomUUID(), vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3', interfaceInfo: { endpoint: 'http://127.0.0.1:5000/v3' } } } : {}),
      vim_secrets: null,
      instantiated_vnf_info: json(inst ? instanceInfo(i) : null),
      metadata: json({ tier: i % 10 === 0 ? 'gold' : 'silver', owner: `team-${i % 7}` }),
      extensions: json(null),
      created_api: 'v2',
      created_at: created,
      rev: 0,
    });
    if (inst) {
      ops.push({
        id: randomUUID(),
        vnf_instance_id: id,
        operation: 'INSTANTIATE',
        operation_state: 'COMPLETED',
        state_entered_time: new Date(created0 + i * 1000 + 30_000).toISOString(),
        start_time: new Date(created0 + i * 1000 + 1_000).toISOString(),
        is_automatic_invocation: false,
        is_cancel_pending: false,
        cancel_mode: null,
        operation_params: json({ flavourId: 'simple', instantiationLevelId: 'instantiation_level_1', additionalParams: { lcm_hook: false } }),
        error: json(null),
        resource_changes: json({ affectedVnfcs: [0, 1].map((k) => ({ id: `vnfc-${i}-${k}`, vduId: `VDU${k + 1}`, changeType: 'ADDED', computeResource: { resourceId: randomUUID() } })) }),
        changed_info: json(null),
        grant_id: randomUUID(),
        grant_request: json({ big: 'g'.repeat(2000) }),
        grant: json({ big: 'g'.repeat(2000) }),
        ctx: json({ steps: ['grant', 'infra', 'observe'], journal: 'j'.repeat(4000) }),
        pending: null,
        attempts: 1,
        api_version: 'v2',
        created_at: new Date(created0 + i * 1000 + 1_000).toISOString(),
      });
    }
  }
  await store.db.insertInto('vnf_instance').values(rows).execute();
  if (ops.length) await store.db.insertInto('op_occ').values(ops).execute();
}
const loadMs = Date.now() - t0;

// ------------------------------------------------------------------ server

/** A free port on 127.0.0.1 for the liveness server (its port 0 means "off"). */
const livenessPort = await new Promise<number>((res, rej) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => {
    const a = s.address();
    s.close(() => (a && typeof a === 'object' ? res(a.port) : rej(new Error('no port'))));
  });
});
const config = resolveConfig({ flags: { sim: false, sync: { intervalMs: 0 }, logLevel: 'warn', host: '127.0.0.1', port: 0, health: { livenessPort }, dataDir: 'memory://', runner: { pollMs: 1000, leaseMs: 30000, concurrency: 1, workerId: 'bench' } } });
const vnfm = await startVnfm(config, { store, logger: createLogger('warn') });
process.send?.({ url: vnfm.url, livenessUrl: vnfm.livenessUrl, ids: instantiatedIds, loadMs, rssAfterLoad: process.memoryUsage().rss });
process.on('message', async (m) => {
  if (m === 'rss') process.send?.({ rss: process.memoryUsage().rss });
  if (m === 'stop') {
    await vnfm.close();
    await dropDb?.();
    process.exit(0);
  }
});

// ------------------------------------------------------------------ client

async function runClient(base: string, livenessBase: string, instantiatedIds: string[], loadMs: number, rssAfterLoad: number, serverRss: () => Promise<number>): Promise<void> {
const H = { version: '2.0.0' };

async function get(path: string): Promise<{ ms: number; status: number; link: string | null; body: unknown }> {
  const s = performance.now();
  const r = await fetch(`${base}${path}`, { headers: H });
  const body = await r.json();
  const ms = performance.now() - s;
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(body)}`);
  return { ms, status: r.status, link: r.headers.get('link'), body };
}

function nextPath(link: string | null): string | undefined {
  const m = link ? /^<([^>]+)>/.exec(link) : null;
  if (!m) return undefined;
  const u = new URL(m[1] as string);
  return `${u.pathname}${u.search}`;
}

/** `count` requests: walks pages from `first` (restarting at the end), returns latencies. */
async function walkPages(first: string, count: number): Promise<number[]> {
  const ms: number[] = [];
  let path: string | undefined = first;
  for (let k = 0; k < count; k++) {
    const r = await get(path ?? first);
    ms.push(r.ms);
    path = nextPath(r.link) ?? first;
  }
  return ms;
}

// warm-up
await walkPages('/vnflcm/v2/vnf_instances', 20);

const listMs = await walkPages('/vnflcm/v2/vnf_instances', 200);
const filterState = await walkPages('/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,INSTANTIATED)', 100);
const filterName = await walkPages(`/vnflcm/v2/vnf_instances?filter=(in,vnfInstanceName,bench-00042,bench-05000,bench-09999)`, 100);
const filterNested = await walkPages('/vnflcm/v2/vnf_instances?filter=(eq,metadata/tier,gold)', 50);
const allFields = await walkPages('/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,INSTANTIATED)&all_fields', 50);
const opList = await walkPages('/vnflcm/v2/vnf_lcm_op_occs', 100);
const opFilter = await walkPages('/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,operationState,COMPLETED);(eq,operation,INSTANTIATE)', 100);
const showMs: number[] = [];
for (let k = 0; k < 500; k++) showMs.push((await get(`/vnflcm/v2/vnf_instances/${instantiatedIds[k % instantiatedIds.length]}`)).ms);

// 20 concurrent listers + /healthz probes (API port, liveness port)
const healthMs: number[] = [];
const livenessMs: number[] = [];
const concurrentMs: number[] = [];
const until = Date.now() + SECONDS * 1000;
const listers = Array.from({ length: 20 }, async (_, w) => {
  let path: string | undefined;
  const first = w % 4 === 3 ? '/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,INSTANTIATED)' : '/vnflcm/v2/vnf_instances';
  while (Date.now() < until) {
    const r = await get(path ?? first);
    concurrentMs.push(r.ms);
    path = nextPath(r.link);
  }
});
// The probers run in a worker thread of this process, so the listers' fetch and JSON parsing on
// this thread do not delay them: what they measure is the server's answer time.
const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
let stop = false;
parentPort.once('message', () => { stop = true; });
const probe = async (url) => {
  const ms = [];
  while (!stop) {
    const s = performance.now();
    const r = await fetch(url);
    await r.text();
    if (r.status !== 200) throw new Error('GET ' + url + ': ' + r.status);
    ms.push(performance.now() - s);
    await new Promise((res) => setTimeout(res, 50));
  }
  return ms;
};
Promise.all(workerData.map(probe)).then((r) => parentPort.postMessage(r));
`;
const prober = new Worker(PROBER, { eval: true, workerData: [`${base}/healthz`, `${livenessBase}/healthz`] });
const probed = new Promise<number[][]>((res, rej) => {
  prober.once('message', res);
  prober.once('error', rej);
});
await Promise.all(listers);
prober.postMessage('stop');
const [apiProbes, livenessProbes] = await probed;
healthMs.push(...(apiProbes ?? []));
livenessMs.push(...(livenessProbes ?? []));
await prober.terminate();

const rssMb = Math.round((await serverRss()) / 1048576);
const result = {
  bench: 'lists',
  db: DB,
  instances: N,
  instantiated: instantiatedIds.length,
  opOccs: instantiatedIds.length,
  loadMs,
  list: { p50: pct(listMs, 50), p99: pct(listMs, 99) },
  filterState: { p50: pct(filterState, 50), p99: pct(filterState, 99) },
  filterName: { p50: pct(filterName, 50), p99: pct(filterName, 99) },
  filterNestedInMemory: { p50: pct(filterNested, 50), p99: pct(filterNested, 99) },
  instantiatedAllFields: { p50: pct(allFields, 50), p99: pct(allFields, 99) },
  opOccList: { p50: pct(opList, 50), p99: pct(opList, 99) },
  opOccFilter: { p50: pct(opFilter, 50), p99: pct(opFilter, 99) },
  show: { p50: pct(showMs, 50), p99: pct(showMs, 99) },
  concurrent20: { requests: concurrentMs.length, perSecond: Math.round(concurrentMs.length / SECONDS), p50: pct(concurrentMs, 50), p99: pct(concurrentMs, 99) },
  healthzDuringLoad: { samples: healthMs.length, p50: pct(healthMs, 50), p99: pct(healthMs, 99) },
  livenessPortDuringLoad: { samples: livenessMs.length, p50: pct(livenessMs, 50), p99: pct(livenessMs, 99) },
  rssMb,
  rssAfterLoadMb: Math.round(rssAfterLoad / 1048576),
  loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
};
console.log(JSON.stringify(result));
}
