/**
 * Engine overhead: pushes N heal operations through the runner with a no-op infra driver on the
 * embedded database and reports request-accepted -> COMPLETED at p50/p99 (as recorded by the
 * engine: op occ startTime to the COMPLETED stateEnteredTime), plus throughput.
 *
 *   npx tsx bench/engine-overhead.ts [--ops 1000] [--instances 50]
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';
import { startVnfm } from '../src/main/server.ts';
import { openStore } from '../src/store/db.ts';
import { NOOP_VIM_TYPE, NoopDriver } from './noop-driver.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const OPS = arg('ops', 1000);
const INSTANCES = arg('instances', 50);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}

const store = await openStore({ dataDir: 'memory://' });
const config = resolveConfig({ flags: { sim: false, outbound: { vimAllow: ['127.0.0.0/8'] }, sync: { intervalMs: 0 }, logLevel: 'warn', dataDir: 'memory://', runner: { pollMs: 500, leaseMs: 30000, concurrency: 16, workerId: 'bench' } } });
const vnfm = await startVnfm(config, { store, noListen: true, logger: createLogger('warn'), plugins: [(ctx) => ctx.engine?.drivers.register(new NoopDriver())] });
const app = vnfm.app;
const H = { version: '2.0.0' };
const dir = mkdtempSync(join(tmpdir(), 'bench-pkg-'));
cpSync('samples/vm-basic', dir, { recursive: true });
// Hook scripts are the package's own cost, not the engine's: drop their declarations.
const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
writeFileSync(df, readFileSync(df, 'utf8').replace(/\n {6}interfaces:[\s\S]*?\n(?= {4}VDU1:)/, '\n'));
const pkg = (await app.inject({ method: 'POST', url: '/vnfpkgm/v1/vnf_packages', payload: {} })).json();
await app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${pkg.id}/package_content`, payload: buildCsarFromDir(dir), headers: { 'content-type': 'application/zip' } });
await vnfm.ctx.packages.idle();
const vnfdId = (await app.inject({ method: 'GET', url: `/vnfpkgm/v1/vnf_packages/${pkg.id}` })).json().vnfdId;

const ids: string[] = [];
for (let i = 0; i < INSTANCES; i++) {
  const r = await app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: H, payload: { vnfdId } });
  const id = r.json().id;
  await app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: H, payload: { flavourId: 'simple', vimConnectionInfo: { v: { vimType: NOOP_VIM_TYPE, interfaceInfo: { e: 1 }, accessInfo: { a: 1 } } } } });
  ids.push(id);
}
await vnfm.ctx.engine?.runner.idle(120_000);

const perInstance = Math.ceil(OPS / INSTANCES);
const t0 = Date.now();
let accepted = 0;
await Promise.all(
  ids.map(async (id) => {
    for (let k = 0; k < perInstance && accepted < OPS; k++) {
      for (;;) {
        const r = await app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/heal`, headers: H, payload: {} });
        if (r.statusCode === 202) {
          accepted++;
          break;
        }
        if (r.statusCode !== 409) throw new Error(`heal: ${r.statusCode} ${r.body}`);
        await new Promise((res) => setTimeout(res, 2));
      }
    }
  }),
);
await vnfm.ctx.engine?.runner.idle(600_000);
const wall = Date.now() - t0;
const rows = await store.db.selectFrom('op_occ').select(['start_time', 'state_entered_time', 'operation_state']).where('operation', '=', 'HEAL').execute();
const lat = rows.filter((r) => r.operation_state === 'COMPLETED').map((r) => new Date(r.state_entered_time).getTime() - new Date(r.start_time).getTime());
console.log(JSON.stringify({ ops: rows.length, completed: lat.length, p50_ms: pct(lat, 50), p99_ms: pct(lat, 99), max_ms: Math.max(...lat), wall_ms: wall, ops_per_s: Math.round((lat.length * 1000) / wall) }));
await vnfm.close();
await store.close();
