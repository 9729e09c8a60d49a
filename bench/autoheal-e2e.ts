/**
 * Auto-heal end to end, fault -> automatic heal COMPLETED, over real HTTP: the simulated OpenStack
 * (Heat delay --heat-delay-ms), the simulated Server Notifier and a listening VNFM (OpenStack
 * driver, alarm registration, fault intake, packing window --window-ms). Each round fails one
 * server of the sample VM VNF through the OpenStack sim's `/_sim` API (the notifier sends the
 * fault notification, as Tacker's FaultNotification flow) and waits for its automatic heal.
 * Reports, at p50/p99/max:
 *
 * - `total`: fault injected -> heal COMPLETED (stateEnteredTime);
 * - `beyondWindow`: total minus the packing window, i.e. what the notifier, the VNFM and Heat add
 *   to the wait the window imposes on purpose;
 * - `toLedger`: fault injected -> notification stored by the VNFM (ledger `receivedAt`);
 * - `fire`: batch deadline -> heal op occ created (op `startTime`), the batcher's lag;
 * - `heal`: heal op occ `startTime` -> COMPLETED.
 *
 *   npx tsx bench/autoheal-e2e.ts [--rounds 20] [--window-ms 1000] [--heat-delay-ms 20]
 *
 * The hook scripts of the sample package are left out (their cost is the package's). Prints one
 * JSON object; the numbers depend on the machine's load, which is included.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';
import { startVnfm } from '../src/main/server.ts';
import { startOpenStackSim } from '../src/sim/openstack/index.ts';
import { startServerNotifierSim } from '../src/sim/server-notifier/index.ts';
import { openStore } from '../src/store/db.ts';
import { apiClient, type Json } from './http-client.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const ROUNDS = arg('rounds', 20);
const WINDOW_MS = arg('window-ms', 1000);
const HEAT_DELAY_MS = arg('heat-delay-ms', 20);


function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}
function stats(xs: number[]) {
  return { p50_ms: pct(xs, 50), p99_ms: pct(xs, 99), min_ms: Math.min(...xs), max_ms: Math.max(...xs) };
}

/** samples/vm-basic without its hook scripts. */
function packageZip(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'bench-autoheal-pkg-'));
  cpSync('samples/vm-basic', dir, { recursive: true });
  const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
  writeFileSync(df, readFileSync(df, 'utf8').replace(/\n {6}interfaces:[\s\S]*?\n(?= {4}VDU1:)/, '\n'));
  const zip = buildCsarFromDir(dir);
  rmSync(dir, { recursive: true, force: true });
  return zip;
}

const load0 = loadavg();
const os = await startOpenStackSim({ heatDelayMs: HEAT_DELAY_MS });
const notifier = await startServerNotifierSim({ openstackUrl: os.url });
const store = await openStore({ dataDir: 'memory://' });
const config = resolveConfig({
  flags: {
    sim: false,
    // the simulated VIMs this benchmark registers listen on loopback
    outbound: { vimAllow: ['127.0.0.0/8'] },
    logLevel: 'warn',
    dataDir: 'memory://',
    port: 0,
    runner: { pollMs: 500, leaseMs: 30_000, concurrency: 8, workerId: 'bench' },
    faultNotification: { windowMs: WINDOW_MS },
    // every round heals one of 3 VNFCs: keep the per-VNFC frequency limit out of the way
    autoheal: { maxHealsPerVnfc: 1_000_000 },
  },
});
const vnfm = await startVnfm(config, { store, logger: createLogger('warn') });
const base = vnfm.url;

const { call, waitDone } = apiClient(base);

async function simFail(serverId: string): Promise<void> {
  const r = await fetch(`${os.url}/_sim/servers/${serverId}/fail`, { method: 'POST', headers: { 'X-Sim-Admin-Secret': os.adminSecret, 'content-type': 'application/json' }, body: '{}' });
  if (r.status !== 200) throw new Error(`fail server ${serverId}: ${r.status} ${await r.text()}`);
}

try {
  const c = os.credentials;
  await call('POST', '/v1.0/vims', { vim: { name: 'bench-os', type: 'openstack', is_default: true, auth_url: c.authUrl, auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain }, vim_project: { name: c.project, project_domain_name: c.projectDomain } } });
  const pkg = (await call('POST', '/vnfpkgm/v1/vnf_packages', {})).json;
  await call('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.id}/package_content`, packageZip());
  await vnfm.ctx.packages.idle();
  const vnfdId = (await call('GET', `/vnfpkgm/v1/vnf_packages/${pkg.id}`)).json.vnfdId as string;
  const id = (await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'bench-autoheal' })).json.id as string;
  const inst = await call('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, {
    flavourId: 'simple',
    vnfConfigurableProperties: { isAutohealEnabled: true },
    additionalParams: { ServerNotifierUri: notifier.url, ServerNotifierFaultID: ['1234'] },
  });
  await waitDone(String(inst.location).split('/').pop() as string);

  const total: number[] = [];
  const beyond: number[] = [];
  const toLedger: number[] = [];
  const fire: number[] = [];
  const heal: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const info = (await call('GET', `/vnflcm/v2/vnf_instances/${id}`)).json.instantiatedVnfInfo;
    const vnfc = info.vnfcInfo[i % info.vnfcInfo.length];
    const server = info.vnfcResourceInfo.find((r: Json) => r.id === vnfc.vnfcResourceInfoId).computeResource.resourceId as string;
    const known = new Set(((await call('GET', `/vnfm/v1/heal_batches?vnfInstanceId=${id}`)).json as Json[]).map((b) => b.id as string));
    const tFault = Date.now();
    await simFail(server);
    let batch: Json | undefined;
    for (;;) {
      const fresh = ((await call('GET', `/vnfm/v1/heal_batches?vnfInstanceId=${id}`)).json as Json[]).filter((b) => !known.has(b.id));
      batch = fresh.find((b) => b.status === 'done');
      if (batch) break;
      const bad = fresh.find((b) => ['failed', 'suppressed', 'held'].includes(b.status));
      if (bad) throw new Error(`batch ${bad.id} ${bad.status}: ${bad.reason}`);
      await sleep(5);
    }
    const occ = await waitDone(batch.vnfLcmOpOccId as string);
    const tDone = Date.parse(occ.stateEnteredTime);
    const notes = (await call('GET', `/vnfm/v1/fault_notifications?vnfInstanceId=${id}`)).json as Json[];
    const received = Math.min(...notes.filter((n) => n.batchId === batch.id).map((n) => Date.parse(n.receivedAt)));
    total.push(tDone - tFault);
    beyond.push(tDone - tFault - WINDOW_MS);
    toLedger.push(received - tFault);
    fire.push(Date.parse(occ.startTime) - Date.parse(batch.deadline));
    heal.push(tDone - Date.parse(occ.startTime));
  }
  console.log(
    JSON.stringify({
      bench: 'autoheal-e2e',
      rounds: total.length,
      windowMs: WINDOW_MS,
      heatDelayMs: HEAT_DELAY_MS,
      total: stats(total),
      beyondWindow: stats(beyond),
      toLedger: stats(toLedger),
      fire: stats(fire),
      heal: stats(heal),
      loadavg: { before: load0.map((x) => Math.round(x * 100) / 100), after: loadavg().map((x) => Math.round(x * 100) / 100) },
      cpus: cpus().length,
    }),
  );
} finally {
  await vnfm.close();
  await store.close();
  await notifier.close();
  await os.close();
}
