/**
 * Restart on a big embedded data directory: 10,000 VNF instances (1,000 INSTANTIATED with an op
 * occ each; bench/seed-instances.ts) in a PGlite data directory on disk, then `vnfm start` (the
 * CLI, as `npm start` runs it: `tsx src/cli/main.ts start --no-sim`) on it, measuring
 *
 * - start-up: time from spawn to the first `200` on `/healthz`, and to the first `200` on `/readyz`;
 * - memory of the server process: RSS (and peak) when ready, after a short idle, after traffic;
 *   with the split JS heap / external + array buffers / WASM linear memory of the embedded database,
 *   read from `/metrics` (`vnfm_process_*`, `vnfm_db_wasm_memory_bytes`);
 * - show (`GET /vnflcm/v2/vnf_instances/{id}`) p50/p99 over 1,000 sequential requests, and a list
 *   page p50/p99, right after the restart.
 *
 *   npx tsx bench/restart.ts [--instances 10000] [--instantiated 1000] [--data-dir DIR] [--runs 2] [--entry tsx|dist]
 *
 * `--entry dist` starts the built CLI (`npm run build`; `node dist/cli/main.js start`, what the
 * `vnfm` command runs) instead of the sources through tsx (`npm start`).
 *
 * A data directory is seeded once (in a child process) and reused by later runs (`--data-dir`);
 * without `--data-dir` a temporary one is made and removed at the end.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { timedGetter } from './http-client.ts';

const argv = process.argv;
const arg = (name: string, def: string) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? (argv[i + 1] as string) : def;
};
const N = Number(arg('instances', '10000'));
const INSTANTIATED = Number(arg('instantiated', '1000'));
const RUNS = Number(arg('runs', '2'));
const ENTRY = arg('entry', 'tsx');

// ------------------------------------------------------------------ seeding (child)

if (argv.includes('--seed')) {
  const dir = arg('seed', '');
  const { openStore } = await import('../src/store/db.ts');
  const { seedInstances } = await import('./seed-instances.ts');
  const store = await openStore({ dataDir: dir });
  const seeded = await seedInstances(store, N, INSTANTIATED);
  await store.close();
  writeFileSync(join(dir, 'bench-seeded.json'), JSON.stringify({ n: N, instantiated: seeded.instantiatedIds.length, loadMs: seeded.loadMs, instantiatedIds: seeded.instantiatedIds.slice(0, 1000) }));
  process.exit(0);
}

// ------------------------------------------------------------------ driver

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN) * 10) / 10;
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

function procMem(pid: number): { rssMb: number; hwmMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMb: Math.round(kb('VmRSS') / 1024), hwmMb: Math.round(kb('VmHWM') / 1024) };
}

/** The tsx node process under `npm start`-like spawning: we spawn node with tsx's loader directly, so the pid is the server's. */
function startServer(dataDir: string, port: number): ChildProcess {
  const entry = ENTRY === 'dist' ? ['dist/cli/main.js'] : ['--import', 'tsx', 'src/cli/main.ts'];
  return spawn(process.execPath, [...entry, 'start', '--no-sim', '--data-dir', dataDir, '--port', String(port), '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0' },
  });
}

async function pollUntil200(url: string, deadline: number): Promise<number> {
  for (;;) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status === 200) return performance.now();
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) throw new Error(`${url} did not answer 200 in time`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function metrics(base: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const name of ['vnfm_process_resident_memory_bytes', 'vnfm_process_nodejs_heap_size_used_bytes', 'vnfm_process_nodejs_heap_size_total_bytes', 'vnfm_process_nodejs_external_memory_bytes', 'vnfm_db_wasm_memory_bytes']) {
    const m = new RegExp(`^${name} (\\S+)`, 'm').exec(text);
    if (m) out[name.replace(/^vnfm_(process_)?/, '').replace(/_bytes$/, 'Mb')] = Math.round(Number(m[1]) / 1048576);
  }
  return out;
}

const dir = argv.includes('--data-dir') ? arg('data-dir', '') : mkdtempSync(join(tmpdir(), 'vnfm-bench-restart-'));
const temporary = !argv.includes('--data-dir');
if (!existsSync(join(dir, 'bench-seeded.json'))) {
  const t = Date.now();
  const seeder = fork(new URL(import.meta.url).pathname, ['--seed', dir, '--instances', String(N), '--instantiated', String(INSTANTIATED)], { execArgv: process.execArgv, stdio: 'inherit' });
  const code = await new Promise<number | null>((res) => seeder.once('exit', res));
  if (code !== 0) throw new Error(`seeding failed (${code})`);
  console.error(`seeded ${N} instances into ${dir} in ${Date.now() - t} ms`);
}
const seeded = JSON.parse(readFileSync(join(dir, 'bench-seeded.json'), 'utf8')) as { n: number; instantiatedIds: string[] };

const results = [];
for (let run = 0; run < RUNS; run++) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const load0 = loadavg()[0];
  const t0 = performance.now();
  const server = startServer(dir, port);
  const exited = new Promise<number | null>((res) => server.once('exit', res));
  const tHealth = await pollUntil200(`${base}/healthz`, t0 + 120_000);
  const tReady = await pollUntil200(`${base}/readyz`, t0 + 120_000);
  const pid = server.pid as number;
  const atReady = { ...procMem(pid), ...(await metrics(base)) };
  await new Promise((r) => setTimeout(r, 3000));
  const idle = { ...procMem(pid), ...(await metrics(base)) };

  const client = timedGetter(base, { version: '2.0.0' });
  const get = async (path: string) => {
    const r = await client.get(path);
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text.slice(0, 200)}`);
    const link = r.headers.link;
    return { ms: r.ms, serverMs: r.serverMs ?? Number.NaN, link: typeof link === 'string' ? link : null };
  };
  const ids = seeded.instantiatedIds;
  for (let k = 0; k < 100; k++) await get(`/vnflcm/v2/vnf_instances/${ids[k % ids.length]}`); // warm-up
  const show: number[] = [];
  const showServer: number[] = [];
  for (let k = 0; k < 1000; k++) {
    const r = await get(`/vnflcm/v2/vnf_instances/${ids[(k * 7) % ids.length]}`);
    show.push(r.ms);
    showServer.push(r.serverMs);
  }
  const list: number[] = [];
  let path: string | undefined = '/vnflcm/v2/vnf_instances';
  for (let k = 0; k < 100; k++) {
    const r = await get(path ?? '/vnflcm/v2/vnf_instances');
    list.push(r.ms);
    const m = r.link ? /^<([^>]+)>/.exec(r.link) : null;
    path = m ? new URL(m[1] as string).pathname + new URL(m[1] as string).search : undefined;
  }
  client.close();
  const afterTraffic = { ...procMem(pid), ...(await metrics(base)) };
  server.kill('SIGTERM');
  await exited;
  results.push({
    run,
    startup: { healthzMs: Math.round(tHealth - t0), readyzMs: Math.round(tReady - t0) },
    memory: { atReady, idle, afterTraffic },
    show: { p50: pct(show, 50), p99: pct(show, 99), serverP50: pct(showServer, 50), serverP99: pct(showServer, 99) },
    list: { p50: pct(list, 50), p99: pct(list, 99) },
    loadavg1: { start: load0, end: loadavg()[0] },
  });
}
if (temporary) rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ bench: 'restart', db: 'pglite', entry: ENTRY, instances: seeded.n, instantiated: seeded.instantiatedIds.length, results }, null, 1));
