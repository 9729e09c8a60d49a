/**
 * Kubespray worker-heal cost on the live-VM lab (root; docs/lab.md): what the VNFM adds to a worker
 * heal of a Kubernetes cluster VNF built with the `k8s-kubespray` driver, minus the plays' own time.
 *
 * One VNFM with the simulated cloud and the lab (with its service hosts: the Ansible server runs
 * the machine's `ansible-playbook`, the LB runs HAProxy); the sample package
 * `samples/k8s-cluster-kubespray` (1 master, 2 workers) with the Kubespray-shaped fixture tree
 * `test/fixtures/kubespray`; then N worker heals (alternating workers). Per heal:
 *   total    = accepted -> COMPLETED as the engine records it (op occ startTime -> stateEnteredTime)
 *   vm       = the infra step (the VM re-created by Heat; the lab's host comes up)
 *   plays    = the Ansible plays' own run time (remove-node, facts, scale: the wrapper's clock)
 *   overhead = total - vm - plays: the VNFM's own work (grant, drain through the API, inventory
 *              upload, starting the detached plays and polling their exit codes, waiting for the
 *              Node to be Ready, the LB reconcile, SSH), plus the new VM's sshd coming up
 *   heal_start / heal_end = the two management hook steps (inside total)
 *
 *   sudo npx tsx bench/k8s-kubespray-heal.ts [--heals 5]
 *
 * Prints one JSON document (p50 / p90 / min / max per kind).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { startVnfm } from '../src/main/server.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';

const argv = process.argv.slice(2);
const HEALS = argv.includes('--heals') ? Number(argv[argv.indexOf('--heals') + 1]) : 5;
const ROOT = join(import.meta.dirname, '..');
const PKG = join(ROOT, 'samples', 'k8s-cluster-kubespray');
const PASSWORD = 'bench-lab-pass-5e2a';
const H = { version: '2.0.0' };
// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
type Json = Record<string, any>;

const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const summary = (xs: readonly number[]) => ({ p50: Math.round(pct(xs, 50)), p90: Math.round(pct(xs, 90)), min: Math.round(Math.min(...xs)), max: Math.round(Math.max(...xs)) });

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the lab needs root: sudo npx tsx bench/k8s-kubespray-heal.ts');
  const dataDir = mkdtempSync('/tmp/vnfm-bench-kubespray-');
  chmodSync(dataDir, 0o755);
  const sprayRoot = join(dataDir, 'kubespray');
  cpSync(join(ROOT, 'test', 'fixtures', 'kubespray'), sprayRoot, { recursive: true });
  execFileSync('chmod', ['-R', 'a+rX', sprayRoot]);
  mkdirSync(join(dataDir, 'inventories'));
  chmodSync(join(dataDir, 'inventories'), 0o1777);
  const lines: Json[] = [];
  const sink = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l));
      cb();
    },
  });
  const config = resolveConfig({
    flags: {
      dataDir: join(dataDir, 'vnfm'),
      port: 0,
      simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 },
      lab: { enabled: true, password: PASSWORD, kubernetesPort: 0, waitForLockMs: 600_000, serviceHosts: true },
      runner: { pollMs: 20 },
      sync: { intervalMs: 0 },
      mgmt: { kubespray: { playPollMs: 200, pollIntervalMs: 200 } },
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
    const service = (vnfm.ctx as { simCloud?: { lab?: { serviceHosts?: { lb: string; ansible: string } } } }).simCloud?.lab?.serviceHosts;
    if (!service) throw new Error('the lab has no service hosts');
    const created = await call('POST', '/vnfpkgm/v1/vnf_packages', {});
    await vnfm.ctx.packages.upload(created.body.id, buildCsarFromDir(PKG));
    await vnfm.ctx.packages.idle();
    const vnfdId = (await call('GET', `/vnfpkgm/v1/vnf_packages/${created.body.id}`)).body.vnfdId;
    const osVim = (await vnfm.ctx.vims.list()).find((v) => v.name === 'sim-openstack')?.id as string;
    const req = JSON.parse(
      readFileSync(join(PKG, 'requests', 'instantiate.json'), 'utf8')
        .replaceAll('<lab password>', PASSWORD)
        .replaceAll('<OpenStack VIM id>', osVim)
        .replaceAll('<Ansible server address>', service.ansible)
        .replaceAll('<LB address>', service.lb)
        .replaceAll('<Kubespray root path>', sprayRoot)
        .replaceAll('<inventory path>', join(dataDir, 'inventories', 'bench'))
        .replaceAll('<VIM name>', 'kubespray-bench'),
    );
    const id = (await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId })).body.id;
    const t0 = Date.now();
    await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, req);
    const instantiateMs = Date.now() - t0;

    const measure = async (vnfcInfoId: string) => {
      const o = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [vnfcInfoId] });
      const mine = lines.filter((l) => l.opOccId === o.id);
      const stepMs = (name: string) => mine.filter((l) => l.msg === 'step done' && l.step === name).reduce((a, l) => a + Number(l.ms), 0);
      const plays = mine.filter((l) => l.step === 'ansible' && typeof l.ms === 'number').reduce((a, l) => a + Number(l.ms), 0);
      const total = new Date(o.stateEnteredTime).getTime() - new Date(o.startTime).getTime();
      const vm = stepMs('infra');
      return { total, vm, plays, overhead: total - vm - plays, healStart: stepMs('mgmt-start'), healEnd: stepMs('mgmt-end') };
    };
    const nodes = async () => (await call('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo.metadata.k8sCluster.nodes as Record<string, Json>;
    const results: { total: number; vm: number; plays: number; overhead: number; healStart: number; healEnd: number }[] = [];
    for (let i = 0; i < HEALS; i++) {
      const list = Object.values(await nodes()).filter((n) => n.role === 'worker');
      results.push(await measure((list[i % list.length] as Json).vnfcInfoId));
    }
    const pick = (k: keyof (typeof results)[number]) => summary(results.map((r) => r[k]));
    console.log(
      JSON.stringify(
        {
          machine: { cpus: cpus().length, load: loadavg().map((x) => Math.round(x * 10) / 10) },
          heals: HEALS,
          instantiateMs,
          worker: { totalMs: pick('total'), vmMs: pick('vm'), playsMs: pick('plays'), overheadMs: pick('overhead'), healStartMs: pick('healStart'), healEndMs: pick('healEnd') },
        },
        null,
        2,
      ),
    );
    await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
  } finally {
    await vnfm.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
