/**
 * Kill -9 in the middle of a heal: the VNFM runs as a real child process on an embedded data
 * directory, heals a VNFC on the simulated OpenStack (slow Heat), is killed with SIGKILL while the
 * infra step runs, and is started again on the same data directory. The op occ must end COMPLETED
 * (resumed) — or FAILED_TEMP with a reason, and then `retry` completes it — and the VNFC keeps its id.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { freePort } from '../helpers/app.ts';
import { ROOT } from '../helpers/packages.ts';

const V2 = { version: '2.0.0', 'content-type': 'application/json' };
let sim: OpenStackSim;
let dataDir: string;
let port: number;
let url: string;
let child: ChildProcess | undefined;

function startVnfmProcess(): Promise<void> {
  child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '--no-sim', '--data-dir', dataDir, '--port', String(port), '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0' },
  });
  return (async () => {
    for (let i = 0; i < 300; i++) {
      try {
        if ((await fetch(`${url}/healthz`)).ok) return;
      } catch {
        /* not up yet */
      }
      await sleep(100);
    }
    throw new Error('VNFM did not start');
  })();
}

async function api(method: string, path: string, body?: unknown) {
  const r = await fetch(`${url}${path}`, { method, headers: V2, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  return { status: r.status, location: r.headers.get('location') ?? '', body: text ? JSON.parse(text) : {} };
}

async function waitOp(id: string, states: string[], timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const o = await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${id}`);
    if (states.includes(o.body.operationState)) return o.body;
    if (Date.now() > end) throw new Error(`op ${id} still ${o.body.operationState}`);
    await sleep(100);
  }
}

before(async () => {
  sim = await startOpenStackSim({ heatDelayMs: 50 });
  dataDir = mkdtempSync(join(tmpdir(), 'vnfm-crash-'));
  port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await startVnfmProcess();
});
after(async () => {
  child?.kill('SIGKILL');
  await sim?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('crash recovery (kill -9)', () => {
  it('a heal interrupted by SIGKILL finishes after a restart, VNFC ids unchanged', async () => {
    const c = sim.credentials;
    const vim = await api('POST', '/v1.0/vims', { vim: { name: 'os', type: 'openstack', is_default: true, auth_url: c.authUrl, auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain }, vim_project: { name: c.project, project_domain_name: c.projectDomain } } });
    assert.equal(vim.status, 201);
    const pkg = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
    const up = await fetch(`${url}/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(buildCsarFromDir(join(ROOT, 'samples/vm-basic'))) });
    assert.equal(up.status, 202);
    let vnfdId = '';
    for (let i = 0; i < 100 && !vnfdId; i++) {
      const p = await api('GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
      if (p.body.onboardingState === 'ONBOARDED') vnfdId = p.body.vnfdId;
      await sleep(100);
    }
    const inst = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId });
    const id = inst.body.id as string;
    const ins = await api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple' });
    assert.equal(ins.status, 202);
    await waitOp(ins.location.split('/').pop() as string, ['COMPLETED']);
    const before = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    const target = before.vnfcInfo[0];

    sim.setHeatDelayMs(2500);
    const heal = await api('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.id] });
    assert.equal(heal.status, 202);
    const occId = heal.location.split('/').pop() as string;
    await waitOp(occId, ['PROCESSING']);
    await sleep(800); // inside the infra step: marked unhealthy, stack update in progress
    child?.kill('SIGKILL');
    await new Promise((r) => child?.once('exit', r));
    sim.setHeatDelayMs(50);

    await startVnfmProcess();
    let occ = await waitOp(occId, ['COMPLETED', 'FAILED_TEMP']);
    if (occ.operationState === 'FAILED_TEMP') {
      assert.ok(occ.error?.detail, 'FAILED_TEMP says why');
      assert.equal((await api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/retry`)).status, 202);
      occ = await waitOp(occId, ['COMPLETED']);
    }
    assert.equal(occ.operationState, 'COMPLETED');
    const afterInfo = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo;
    assert.deepEqual(afterInfo.vnfcInfo.map((v: { id: string }) => v.id).sort(), before.vnfcInfo.map((v: { id: string }) => v.id).sort());
    const oldRes = before.vnfcResourceInfo.find((r: { id: string }) => r.id === target.vnfcResourceInfoId);
    const newRes = afterInfo.vnfcResourceInfo.find((r: { id: string }) => r.id === target.vnfcResourceInfoId);
    assert.notEqual(newRes.computeResource.resourceId, oldRes.computeResource.resourceId, 'the server was replaced');
  });
});
