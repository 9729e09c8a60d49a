/**
 * Cluster-VNF heal cost on the live-VM lab (root; docs/lab.md): what the VNFM adds to a worker heal
 * and to a master heal of a Kubernetes cluster VNF built with the `k8s-kubeadm` driver.
 *
 * One VNFM with the simulated cloud and the lab; the sample package `samples/k8s-cluster-kubeadm`,
 * flavour `complex` (3 masters with etcd and HAProxy behind a VIP, 2 workers); then N worker
 * heals (alternating workers) and N master heals (rotating masters, the etcd leader included).
 * Per heal:
 *   total   = accepted -> COMPLETED as the engine records it (op occ startTime -> stateEnteredTime)
 *   vm      = the infra step (the VM re-created by Heat) plus the new VM's boot: from the end of
 *             the infra step until the lab host's sshd accepts connections ('lab host up')
 *   join    = the install script on the new VM (the stand-ins' kubeadm join, etcd member start)
 *   overhead = total - vm - join: the VNFM's own work (grant, quorum checks, drain, etcd member
 *             removal and health waits, HAProxy edits on the survivors, SSH, API calls), plus
 *             what it waits for: polling lag for the new VM's sshd, etcd's strict reconfiguration
 *             check (membership changes refused for ~5 s after the previous one)
 *   heal_start / heal_end = the two management hook steps (inside total)
 *
 * Heals are spaced by --gap-ms (6 s): etcd refuses membership changes for ~5 s after the previous
 * one, and operators do not heal masters back to back.
 *
 *   sudo npx tsx bench/k8s-cluster-heal.ts [--heals 10] [--gap-ms 6000]
 *
 * Prints one JSON document (p50 / p90 / min / max per kind).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { startVnfm } from '../src/main/server.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';

const argv = process.argv.slice(2);
const HEALS = argv.includes('--heals') ? Number(argv[argv.indexOf('--heals') + 1]) : 10;
// pause between two heals: etcd refuses a membership change for ~5 s after the previous one
// (strict reconfiguration check); operators do not heal masters back to back
const GAP_MS = argv.includes('--gap-ms') ? Number(argv[argv.indexOf('--gap-ms') + 1]) : 6000;
const PKG = join(import.meta.dirname, '..', 'samples', 'k8s-cluster-kubeadm');
const PASSWORD = 'bench-lab-pass-7c1e';
const H = { version: '2.0.0' };
// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
type Json = Record<string, any>;

const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const summary = (xs: readonly number[]) => ({ p50: Math.round(pct(xs, 50)), p90: Math.round(pct(xs, 90)), min: Math.round(Math.min(...xs)), max: Math.round(Math.max(...xs)) });

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the lab needs root: sudo npx tsx bench/k8s-cluster-heal.ts');
  const dataDir = mkdtempSync(join(tmpdir(), 'vnfm-bench-k8s-'));
  const lines: Json[] = [];
  const sink = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l));
      cb();
    },
  });
  const config = resolveConfig({
    flags: {
      dataDir,
      port: 0,
      simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 },
      lab: { enabled: true, password: PASSWORD, kubernetesPort: 0, waitForLockMs: 600_000 },
      runner: { pollMs: 20 },
      sync: { intervalMs: 0 },
    } as never,
  });
  const vnfm = await startVnfm(config, { logger: createLogger('info', sink), noListen: true });
  const call = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
    const r = await vnfm.app.inject({ method, url, headers: H, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: r.statusCode, body: r.body ? (JSON.parse(r.body) as Json) : {}, location: String(r.headers.location ?? '') };
  };
  const waitOp = async (opId: string): Promise<Json> => {
    for (;;) {
      const o = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).body;
      if (['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(o.operationState)) return o;
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const lcm = async (url: string, payload: unknown): Promise<Json> => {
    const r = await call('POST', url, payload);
    if (r.status !== 202) throw new Error(`${url}: ${r.status} ${JSON.stringify(r.body)}`);
    const o = await waitOp(r.location.split('/').pop() as string);
    if (o.operationState !== 'COMPLETED') throw new Error(`${url}: ${o.operationState} ${JSON.stringify(o.error)}`);
    return o;
  };
  try {
    const created = await call('POST', '/vnfpkgm/v1/vnf_packages', {});
    await vnfm.ctx.packages.upload(created.body.id, buildCsarFromDir(PKG));
    await vnfm.ctx.packages.idle();
    const vnfdId = (await call('GET', `/vnfpkgm/v1/vnf_packages/${created.body.id}`)).body.vnfdId;
    const osVim = (await vnfm.ctx.vims.list()).find((v) => v.name === 'sim-openstack')?.id as string;
    const req = JSON.parse(readFileSync(join(PKG, 'requests', 'instantiate-complex.json'), 'utf8').replaceAll('<lab password>', PASSWORD).replaceAll('<OpenStack VIM id>', osVim));
    const id = (await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId })).body.id;
    const t0 = Date.now();
    await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, req);
    const instantiateMs = Date.now() - t0;

    const measure = async (vnfcInfoId: string) => {
      const o = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [vnfcInfoId] });
      const mine = lines.filter((l) => l.opOccId === o.id);
      const infraLine = mine.find((l) => l.msg === 'step done' && l.step === 'infra');
      const infraEnd = infraLine ? Date.parse(infraLine.time) : Number.NaN;
      // the new VM's boot: from the end of the infra step until the lab host's sshd accepts
      // connections ('lab host up', logged by the lab when its new server's host is reachable)
      const up = lines.filter((l) => l.msg === 'lab host up' && Date.parse(l.time) >= Date.parse(o.startTime) && Date.parse(l.time) <= Date.parse(o.stateEnteredTime));
      const boot = up.length > 0 && Number.isFinite(infraEnd) ? Math.max(0, Math.max(...up.map((l) => Date.parse(l.time))) - infraEnd) : 0;
      const vm = mine.filter((l) => l.msg === 'step done' && l.step === 'infra').reduce((a, l) => a + Number(l.ms), 0) + boot;
      const joinMs = mine.filter((l) => l.msg === 'install script finished').reduce((a, l) => a + Number(l.ms), 0);
      // the old master's own `kubeadm reset` (the stand-in's time), reported apart
      const resetMs = mine.filter((l) => l.msg === 'kubeadm reset finished').reduce((a, l) => a + Number(l.ms), 0);
      const total = new Date(o.stateEnteredTime).getTime() - new Date(o.startTime).getTime();
      const stepMs = (name: string) => mine.filter((l) => l.msg === 'step done' && l.step === name).reduce((a, l) => a + Number(l.ms), 0);
      const driverSteps: Record<string, number> = {};
      for (const l of mine.filter((x) => x.msg === 'driver step finished' || x.msg === 'step done' || x.msg === 'nodes connected')) {
        const k = l.msg === 'step done' ? `engine:${l.step}` : l.msg === 'nodes connected' ? `${l.hook}:(ssh connect)` : `${l.hook}:${l.step}`;
        driverSteps[k] = (driverSteps[k] ?? 0) + Number(l.ms);
      }
      driverSteps['lab:boot'] = boot;
      driverSteps['lab:reset'] = resetMs;
      return { total, vm, join: joinMs, overhead: total - vm - joinMs, healStart: stepMs('mgmt-start'), healEnd: stepMs('mgmt-end'), driverSteps };
    };
    const nodes = async () => (await call('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo.metadata.k8sCluster.nodes as Record<string, Json>;
    const results: Record<'worker' | 'master', { total: number; vm: number; join: number; overhead: number; healStart: number; healEnd: number; driverSteps: Record<string, number> }[]> = { worker: [], master: [] };
    const stepsOf = (rs: readonly { driverSteps: Record<string, number> }[]) => {
      const names = [...new Set(rs.flatMap((r) => Object.keys(r.driverSteps)))];
      return Object.fromEntries(names.map((n) => [n, Math.round(pct(rs.map((r) => r.driverSteps[n] ?? 0), 50))]));
    };
    for (const role of ['worker', 'master'] as const) {
      for (let i = 0; i < HEALS; i++) {
        const list = Object.values(await nodes()).filter((n) => n.role === role);
        const target = list[i % list.length] as Json;
        if (GAP_MS > 0) await new Promise((r) => setTimeout(r, GAP_MS));
        results[role].push(await measure(target.vnfcInfoId));
      }
    }
    const out = {
      machine: { cpus: cpus().length, load: loadavg().map((x) => Math.round(x * 10) / 10) },
      heals: HEALS,
      gapMs: GAP_MS,
      instantiateComplexMs: instantiateMs,
      worker: { totalMs: summary(results.worker.map((r) => r.total)), vmMs: summary(results.worker.map((r) => r.vm)), joinMs: summary(results.worker.map((r) => r.join)), overheadMs: summary(results.worker.map((r) => r.overhead)), healStartMs: summary(results.worker.map((r) => r.healStart)), healEndMs: summary(results.worker.map((r) => r.healEnd)), driverStepsP50Ms: stepsOf(results.worker) },
      master: { totalMs: summary(results.master.map((r) => r.total)), vmMs: summary(results.master.map((r) => r.vm)), joinMs: summary(results.master.map((r) => r.join)), overheadMs: summary(results.master.map((r) => r.overhead)), healStartMs: summary(results.master.map((r) => r.healStart)), healEndMs: summary(results.master.map((r) => r.healEnd)), driverStepsP50Ms: stepsOf(results.master) },
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await vnfm.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
