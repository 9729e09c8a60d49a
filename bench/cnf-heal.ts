/**
 * CNF heal latency: heals one Deployment pod (VDU3 of samples/cnf-all-kinds) N times through the
 * VNFM's HTTP API against the simulated Kubernetes cluster, and reports, at p50/p99:
 *
 * - `total`: heal accepted (202) -> COMPLETED, as the engine records it (op occ startTime to the
 *   COMPLETED stateEnteredTime);
 * - `overhead`: total minus the simulated kubelet delay, i.e. what the VNFM (and the simulated API
 *   server) add. The old pod's stop and its replacement's start each take one kubelet delay, and
 *   they run in parallel (the ReplicaSet re-creates the pod as soon as the old one is being
 *   deleted), so one delay is on the critical path;
 * - `infraStep`: the driver's heal step alone (delete, wait for the replacement Ready), and
 *   `engine`: total minus that step (grant, checkpoints, observe, rebuild, notifications).
 *
 *   npx tsx bench/cnf-heal.ts [--heals 50] [--kubelet-delay-ms 100] [--warmup 3]
 *
 * Prints one JSON object. The numbers depend on the machine's load: the load average is included.
 */
import { loadavg } from 'node:os';
import { Writable } from 'node:stream';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';
import { startVnfm } from '../src/main/server.ts';
import { startKubernetesSim } from '../src/sim/kubernetes/index.ts';
import { openStore } from '../src/store/db.ts';
import { apiClient, type Json } from './http-client.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const HEALS = arg('heals', 50);
const KUBELET_MS = arg('kubelet-delay-ms', 100);
const WARMUP = arg('warmup', 3);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}
function stats(xs: number[]) {
  return { p50_ms: pct(xs, 50), p99_ms: pct(xs, 99), min_ms: Math.min(...xs), max_ms: Math.max(...xs) };
}

// Step durations from the engine's own log lines ("step done", with opOccId and ms).
const infraMs = new Map<string, number>();
const sink = new Writable({
  write(chunk, _enc, cb) {
    for (const line of chunk.toString().split('\n')) {
      if (!line.includes('"step done"')) continue;
      try {
        const o = JSON.parse(line) as { opOccId?: string; step?: string; ms?: number };
        if (o.step === 'infra' && o.opOccId && typeof o.ms === 'number') infraMs.set(o.opOccId, o.ms);
      } catch {
        // not a JSON line
      }
    }
    cb();
  },
});

const load0 = loadavg();
const sim = await startKubernetesSim({ kubeletDelayMs: KUBELET_MS });
const store = await openStore({ dataDir: 'memory://' });
const config = resolveConfig({ flags: { sim: false, outbound: { vimAllow: ['127.0.0.0/8'] }, logLevel: 'info', dataDir: 'memory://', port: 0, runner: { pollMs: 500, leaseMs: 30000, concurrency: 8, workerId: 'bench' } } });
const vnfm = await startVnfm(config, { store, logger: createLogger('info', sink) });
const base = vnfm.url;


const { call, waitDone } = apiClient(base);

try {
  await call('POST', '/v1.0/vims', { vim: { name: 'bench-k8s', type: 'kubernetes', auth_url: sim.url, auth_cred: { bearer_token: sim.token, ssl_ca_cert: sim.caCert }, vim_project: { name: 'default' }, is_default: true } });
  const pkg = (await call('POST', '/vnfpkgm/v1/vnf_packages', {})).json;
  await call('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.id}/package_content`, buildCsarFromDir('samples/cnf-all-kinds'));
  await vnfm.ctx.packages.idle();
  const vnfdId = (await call('GET', `/vnfpkgm/v1/vnf_packages/${pkg.id}`)).json.vnfdId as string;
  const id = (await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'bench' })).json.id as string;
  const inst = await call('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, {
    flavourId: 'simple',
    additionalParams: { namespace: 'default' },
  });
  await waitDone(String(inst.location).split('/').pop() as string);

  const total: number[] = [];
  const overhead: number[] = [];
  const infra: number[] = [];
  const engine: number[] = [];
  const client: number[] = [];
  for (let i = 0; i < WARMUP + HEALS; i++) {
    const info = (await call('GET', `/vnflcm/v2/vnf_instances/${id}`)).json.instantiatedVnfInfo;
    const target = (info.vnfcInfo as { id: string; vduId: string }[]).find((c) => c.vduId === 'VDU3');
    if (!target) throw new Error('no VDU3 VNFC');
    const r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    const t202 = performance.now();
    const opId = String(r.location).split('/').pop() as string;
    const occ = await waitDone(opId);
    const tSeen = performance.now();
    if (i < WARMUP) continue;
    const ms = Date.parse(occ.stateEnteredTime) - Date.parse(occ.startTime);
    total.push(ms);
    overhead.push(ms - KUBELET_MS);
    client.push(Math.round(tSeen - t202));
    const im = infraMs.get(opId);
    if (im !== undefined) {
      infra.push(im);
      engine.push(ms - im);
    }
  }
  console.log(
    JSON.stringify({
      bench: 'cnf-heal',
      heals: total.length,
      vdu: 'VDU3 (Deployment web-deploy, 2 replicas; the whole sample CNF is deployed)',
      kubeletDelayMs: KUBELET_MS,
      total: stats(total),
      overhead: stats(overhead),
      infraStep: stats(infra),
      engine: stats(engine),
      clientSeen: stats(client),
      loadavg: { before: load0.map((x) => Math.round(x * 100) / 100), after: loadavg().map((x) => Math.round(x * 100) / 100) },
      cpus: (await import('node:os')).cpus().length,
    }),
  );
} finally {
  await vnfm.close();
  await store.close();
  await sim.close();
}
