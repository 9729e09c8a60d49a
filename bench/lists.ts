/**
 * Lists in SQL: 10,000 VNF instances (1,000 of them INSTANTIATED, with instance info shaped like
 * the engine's, and an INSTANTIATE op occ each), inserted directly through the store, then over
 * HTTP on loopback:
 *
 * - list page p50/p99 (`GET /vnflcm/v2/vnf_instances`, first and later pages, page size 100)
 * - filtered list p99 (column filters and nested-JSON filters, all decided in SQL)
 * - op occ list page p99, show p99 (`GET /vnf_instances/{id}`, 1,000 sequential; end to end and the VNFM's own
 *   time from its `Server-Timing` header)
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
import { openStore, type Store } from '../src/store/db.ts';
import { timedGetter } from './http-client.ts';
import { seedInstances } from './seed-instances.ts';

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

const { instantiatedIds, loadMs } = await seedInstances(store, N, INSTANTIATED);

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

const client = timedGetter(base, H);
async function get(path: string): Promise<{ ms: number; serverMs: number; status: number; link: string | null; body: unknown }> {
  const r = await client.get(path);
  const body = JSON.parse(r.text) as unknown;
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  const link = r.headers.link;
  return { ms: r.ms, serverMs: r.serverMs ?? Number.NaN, status: r.status, link: typeof link === 'string' ? link : null, body };
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
const filterNestedNeq = await walkPages('/vnflcm/v2/vnf_instances?filter=(neq,metadata/owner,team-3)', 50);
const filterNestedDeep = await walkPages('/vnflcm/v2/vnf_instances?filter=(eq,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU2)', 50);
const allFields = await walkPages('/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,INSTANTIATED)&all_fields', 50);
const opList = await walkPages('/vnflcm/v2/vnf_lcm_op_occs', 100);
const opFilter = await walkPages('/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,operationState,COMPLETED);(eq,operation,INSTANTIATE)', 100);
const showMs: number[] = [];
const showServerMs: number[] = [];
for (let k = 0; k < 1000; k++) {
  const r = await get(`/vnflcm/v2/vnf_instances/${instantiatedIds[(k * 7) % instantiatedIds.length]}`);
  showMs.push(r.ms);
  showServerMs.push(r.serverMs);
}

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
  filterNested: { p50: pct(filterNested, 50), p99: pct(filterNested, 99) },
  filterNestedNeq: { p50: pct(filterNestedNeq, 50), p99: pct(filterNestedNeq, 99) },
  filterNestedDeep: { p50: pct(filterNestedDeep, 50), p99: pct(filterNestedDeep, 99) },
  instantiatedAllFields: { p50: pct(allFields, 50), p99: pct(allFields, 99) },
  opOccList: { p50: pct(opList, 50), p99: pct(opList, 99) },
  opOccFilter: { p50: pct(opFilter, 50), p99: pct(opFilter, 99) },
  show: { p50: pct(showMs, 50), p99: pct(showMs, 99), serverP50: pct(showServerMs, 50), serverP99: pct(showServerMs, 99) },
  concurrent20: { requests: concurrentMs.length, perSecond: Math.round(concurrentMs.length / SECONDS), p50: pct(concurrentMs, 50), p99: pct(concurrentMs, 99) },
  healthzDuringLoad: { samples: healthMs.length, p50: pct(healthMs, 50), p99: pct(healthMs, 99) },
  livenessPortDuringLoad: { samples: livenessMs.length, p50: pct(livenessMs, 50), p99: pct(livenessMs, 99) },
  rssMb,
  rssAfterLoadMb: Math.round(rssAfterLoad / 1048576),
  loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
};
console.log(JSON.stringify(result));
}
