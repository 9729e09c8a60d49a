/**
 * Onboarding isolation benchmark: the latency of `GET /healthz` (p50/p99/max) on a listening VNFM
 * while hostile packages are onboarded, compared with an idle VNFM and with parsing on the event
 * loop (what onboarding did before it moved to a worker process).
 *
 *   npx tsx bench/onboarding.ts [--rounds 3] [--vdus 10000] [--bomb-mib 150] [--only many-entries]
 *
 * Scenarios (one JSON line each):
 * - idle: no onboarding;
 * - hostile: per round, one 150 MiB-scalar CSAR (refused while inflating) and one 10,000-VDU CSAR
 *   uploaded together (within packages.maxConcurrentOnboardings = 2), waited for;
 * - bomb-lifted: the 150 MiB scalar with the size limits lifted (the worker runs out of heap);
 * - inline: the 10,000-VDU CSAR read + parsed on the VNFM's event loop (the old behaviour);
 * - many-entries: per round, one valid CSAR of 10,000 ZIP entries (~1.1 MB) uploaded and waited
 *   for (the upload's bytes stored in the embedded database, the worker reads the ZIP).
 *
 * The prober runs in a worker thread (its own event loop), sending one request at a time, so a
 * stalled VNFM event loop shows up as latency instead of as missing samples.
 */
import { Worker } from 'node:worker_threads';
import { loadavg } from 'node:os';
import { resolveConfig, type ConfigInput } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { readCsar } from '../src/packages/csar-reader.ts';
import { parseVnfPackage } from '../src/packages/vnfd-parser.ts';
import { startVnfm } from '../src/main/server.ts';
import { manyEntriesCsar, manyVdusCsar, scalarBombCsar } from '../test/packages/hostile-packages.ts';
import { apiClient } from './http-client.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const ROUNDS = arg('rounds', 3);
const VDUS = arg('vdus', 10_000);
const BOMB_MIB = arg('bomb-mib', 150);
const MiB = 1024 * 1024;

const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
let stop = false;
parentPort.on('message', () => { stop = true; });
(async () => {
  const lat = [];
  while (!stop) {
    const t = performance.now();
    const r = await fetch(workerData.url + '/healthz');
    await r.arrayBuffer();
    lat.push(performance.now() - t);
  }
  parentPort.postMessage(lat);
})();
`;

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number * 10) / 10;
}

async function probeDuring(url: string, work: () => Promise<void>): Promise<{ samples: number; p50: number; p99: number; max: number; ms: number }> {
  const w = new Worker(PROBER, { eval: true, workerData: { url } });
  const got = new Promise<number[]>((r) => w.once('message', r));
  const t0 = Date.now();
  await work();
  const ms = Date.now() - t0;
  w.postMessage('stop');
  const lat = (await got).sort((a, b) => a - b);
  await w.terminate();
  return { samples: lat.length, p50: pct(lat, 50), p99: pct(lat, 99), max: Math.round((lat[lat.length - 1] ?? 0) * 10) / 10, ms };
}

async function vnfmWith(config: ConfigInput) {
  return startVnfm(resolveConfig({ flags: { sim: false, logLevel: 'warn', dataDir: 'memory://', host: '127.0.0.1', port: 0, sync: { intervalMs: 0 }, ...config } as ConfigInput }), { logger: createLogger('silent') });
}

async function onboardAll(url: string, zips: Buffer[]): Promise<string[]> {
  const api = apiClient(url);
  return Promise.all(
    zips.map(async (zip) => {
      const id = (await api.call('POST', '/vnfpkgm/v1/vnf_packages', {})).json.id as string;
      await api.call('PUT', `/vnfpkgm/v1/vnf_packages/${id}/package_content`, zip);
      for (;;) {
        const p = (await api.call('GET', `/vnfpkgm/v1/vnf_packages/${id}`)).json;
        if (p.onboardingState !== 'PROCESSING') return p.onboardingState as string;
        await new Promise((r) => setTimeout(r, 20));
      }
    }),
  );
}

const ONLY = (() => {
  const i = process.argv.indexOf('--only');
  return i > 0 ? process.argv[i + 1] : undefined;
})();
const bomb = scalarBombCsar(BOMB_MIB);
const line = (o: Record<string, unknown>) => console.log(JSON.stringify({ ...o, loadavg: loadavg()[0]?.toFixed(2) }));

if (ONLY === undefined || ONLY === 'many-entries') {
  const v = await vnfmWith({});
  line({ scenario: 'idle', ...(await probeDuring(v.url, () => new Promise((r) => setTimeout(r, 3000)))) });
  const results: string[] = [];
  const stats = await probeDuring(v.url, async () => {
    for (let i = 0; i < ROUNDS; i++) results.push(...(await onboardAll(v.url, [manyEntriesCsar(10_000, `m${i}`).csar])));
  });
  line({ scenario: 'many-entries', rounds: ROUNDS, results, ...stats });
  await v.close();
}
if (ONLY === undefined) {
  // both packages of a round come from this one client: allow it both slots
  const v = await vnfmWith({ packages: { maxConcurrentOnboardingsPerCaller: 2 } } as ConfigInput);
  line({ scenario: 'idle', ...(await probeDuring(v.url, () => new Promise((r) => setTimeout(r, 3000)))) });
  const results: string[] = [];
  const stats = await probeDuring(v.url, async () => {
    for (let i = 0; i < ROUNDS; i++) results.push(...(await onboardAll(v.url, [bomb, manyVdusCsar(VDUS, String(i)).csar])));
  });
  line({ scenario: 'hostile', rounds: ROUNDS, results, ...stats});
  await v.close();
}
if (ONLY === undefined) {
  const v = await vnfmWith({ packages: { maxFileBytes: 512 * MiB, maxVnfdBytes: 512 * MiB } } as ConfigInput);
  const results: string[] = [];
  const stats = await probeDuring(v.url, async () => {
    results.push(...(await onboardAll(v.url, [bomb])));
  });
  line({ scenario: 'bomb-lifted', results, ...stats});
  await v.close();
}
if (ONLY === undefined) {
  const v = await vnfmWith({});
  const zip = manyVdusCsar(VDUS, 'in').csar;
  const stats = await probeDuring(v.url, async () => {
    await new Promise((r) => setTimeout(r, 200)); // let the prober start
    parseVnfPackage(await readCsar(zip));
  });
  line({ scenario: 'inline', ...stats });
  await v.close();
}
