/**
 * The simulated cloud of `vnfm start` survives a kill -9 of the VNFM, with real processes
 * (`vnfm start` through tsx, its own data directory and free ports, the built-in simulated cloud):
 *
 * - a VM VNF (sample vm-basic, simulated OpenStack) and a CNF (sample cnf-all-kinds, simulated
 *   Kubernetes) are instantiated, the process group is killed with SIGKILL once the simulators
 *   have saved their state (`<dataDir>/sim/*.json` name the stack and the pods), a new process
 *   starts on the same data directory: a v2 heal of one VNFC of each completes and the VNFC runs
 *   on a new server / pod;
 * - `--reset-sim` starts the cloud empty: a heal of the same VNFCs ends FAILED_TEMP with
 *   `VNFM_ERR_INFRA_STACK_MISSING` (409), not a server error, and the instance is untouched.
 *
 * Nothing is timed: each step waits for what the process logs, for an op state or for the saved
 * state files. Guards only stop a hang on a loaded machine.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { freePort } from '../helpers/app.ts';
import { type Reply, vnfmRequest } from '../helpers/http.ts';
import { ROOT } from '../helpers/packages.ts';
import { until as waitUntil } from '../helpers/wait.ts';
import { DEF_FILES } from './cnf-fixture.ts';
import { EXT_VLS, stackOf } from './vm-fixture.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

const START_GUARD_MS = 180_000;
const OP_GUARD_MS = 120_000;
const MISSING = 'urn:vnfm:error:VNFM_ERR_INFRA_STACK_MISSING';
const K8S_TOKEN = 'sim-kubernetes-token';
const NAMESPACE = 'restart-cnf';

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, guardMs = OP_GUARD_MS): Promise<T> => waitUntil(what, fn, guardMs, 50);

interface Vnfm {
  proc: ChildProcess;
  lines: string[];
  stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const work = mkdtempSync(join(tmpdir(), 'vnfm-sim-restart-'));
const dataDir = join(work, 'data');
const children: Vnfm[] = [];

after(async () => {
  for (const v of children) {
    if (v.proc.exitCode === null && v.proc.signalCode === null) {
      try {
        process.kill(-(v.proc.pid as number), 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  await Promise.all(children.map((v) => v.exited));
  rmSync(work, { recursive: true, force: true });
});

describe('the simulated cloud of `vnfm start` survives kill -9 (real processes)', { timeout: 900_000 }, () => {
  let url = '';
  let k8sUrl = '';
  const configFile = join(work, 'vnfm.json');

  function start(...extra: string[]): Vnfm {
    // Its own process group, so that kill -9 of the group takes every child along.
    const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '-c', configFile, '--data-dir', dataDir, '--log-level', 'info', ...extra], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, VNFM_SYNC_INTERVAL_MS: '0' },
    });
    const v: Vnfm = { proc, lines: [], stderr: '', exited: new Promise((r) => proc.once('exit', (code, signal) => r({ code, signal }))) };
    let buf = '';
    proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      v.lines.push(...parts);
    });
    proc.stderr?.on('data', (d: Buffer) => {
      v.stderr += d.toString();
    });
    children.push(v);
    return v;
  }

  async function logLine(v: Vnfm, msg: string): Promise<Json> {
    return until(
      `log "${msg}"`,
      () => {
        for (const l of v.lines) {
          if (!l.startsWith('{')) continue;
          const j = JSON.parse(l) as Json;
          if (j.msg === msg) return j;
        }
        if (v.proc.exitCode !== null || v.proc.signalCode !== null) throw new Error(`the VNFM exited before logging "${msg}": ${v.stderr}`);
        return undefined;
      },
      START_GUARD_MS,
    );
  }

  function api(method: string, path: string, body?: unknown): Promise<Reply> {
    return vnfmRequest(url, method, path, body);
  }

  async function onboard(dir: string): Promise<string> {
    const pkg = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
    assert.equal(pkg.status, 201, pkg.text);
    const up = await api('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, buildCsarFromDir(join(ROOT, dir)));
    assert.equal(up.status, 202, up.text);
    return until(`package ${dir} onboarded`, async () => {
      const g = await api('GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
      assert.notEqual(g.body.onboardingState, 'ERROR', g.text);
      return g.body.onboardingState === 'ONBOARDED' ? (g.body.vnfdId as string) : undefined;
    });
  }

  /** Sends an LCM request (v2), returns the op occ id. */
  async function lcm(id: string, op: string, body: unknown): Promise<string> {
    const r = await api('POST', `/vnflcm/v2/vnf_instances/${id}/${op}`, body);
    assert.equal(r.status, 202, r.text);
    const m = /\/vnf_lcm_op_occs\/([^/]+)$/.exec(r.headers.get('location') ?? '');
    assert.ok(m, 'Location of the op occ');
    return m[1] as string;
  }

  async function waitOp(opId: string, want: string): Promise<Json> {
    const occ = await until(`op ${opId} final`, async () => {
      const r = await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`);
      assert.equal(r.status, 200, r.text);
      return ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(r.body.operationState) ? r.body : undefined;
    });
    assert.equal(occ.operationState, want, `op ${opId}: ${JSON.stringify(occ.error ?? null)}`);
    return occ;
  }

  async function instance(id: string): Promise<Json> {
    const r = await api('GET', `/vnflcm/v2/vnf_instances/${id}`);
    assert.equal(r.status, 200, r.text);
    return r.body;
  }

  /** The first VNFC of `vduId`: its vnfcInfo id, its resource id and what it runs on (server id / pod name). */
  function vnfcOf(inst: Json, vduId: string): { infoId: string; resId: string; runsOn: string } {
    const res = (inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((r) => r.vduId === vduId);
    assert.ok(res, `a ${vduId} VNFC`);
    const info = (inst.instantiatedVnfInfo.vnfcInfo as Json[]).find((i) => i.vnfcResourceInfoId === res.id);
    assert.ok(info, `vnfcInfo of ${res.id}`);
    return { infoId: info.id as string, resId: res.id as string, runsOn: res.computeResource.resourceId as string };
  }

  function runsOn(inst: Json, resId: string): string {
    return (inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((r) => r.id === resId)?.computeResource.resourceId as string;
  }

  function savedState(name: string): Json | undefined {
    try {
      return JSON.parse(readFileSync(join(dataDir, 'sim', `${name}.json`), 'utf8')).state;
    } catch {
      return undefined;
    }
  }

  let vmId = '';
  let cnfId = '';
  let vmVnfc: { infoId: string; resId: string; runsOn: string };
  let cnfVnfc: { infoId: string; resId: string; runsOn: string };

  it('instantiates a VM VNF and a CNF, is killed with SIGKILL, and heals a VNFC of each after the restart', async () => {
    const [port, openstack, kubernetes, serverNotifier] = [await freePort(), await freePort(), await freePort(), await freePort()];
    writeFileSync(configFile, JSON.stringify({ port, simPorts: { openstack, kubernetes, serverNotifier }, runner: { pollMs: 100 }, vim: { stackTimeoutMs: 60_000, kubernetesWaitMs: 60_000 } }));
    url = `http://127.0.0.1:${port}`;
    k8sUrl = `http://127.0.0.1:${kubernetes}`;

    const first = start();
    await logLine(first, 'VNFM started');
    const banner = await logLine(first, 'simulated cloud started');
    assert.equal(banner.restored, false, 'a new data directory: an empty cloud');
    assert.equal(banner.stateDir, join(dataDir, 'sim'));

    const vims = (await api('GET', '/v1.0/vims')).body.vims as Json[];
    const k8sVim = vims.find((v) => v.name === 'sim-kubernetes');
    assert.ok(k8sVim, 'the simulated Kubernetes is registered');

    // The VM VNF on the default (simulated OpenStack) VIM.
    const vmVnfd = await onboard('samples/vm-basic');
    const c1 = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId: vmVnfd, vnfInstanceName: 'restart-vm' });
    assert.equal(c1.status, 201, c1.text);
    vmId = c1.body.id as string;
    await waitOp(await lcm(vmId, 'instantiate', { flavourId: 'simple', extVirtualLinks: EXT_VLS }), 'COMPLETED');

    // The CNF in its own namespace of the simulated cluster.
    const ns = await fetch(`${k8sUrl}/api/v1/namespaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${K8S_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: NAMESPACE } }),
    });
    assert.equal(ns.status, 201, await ns.text());
    const cnfVnfd = await onboard('samples/cnf-all-kinds');
    const c2 = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId: cnfVnfd, vnfInstanceName: 'restart-cnf' });
    assert.equal(c2.status, 201, c2.text);
    cnfId = c2.body.id as string;
    await waitOp(
      await lcm(cnfId, 'instantiate', { flavourId: 'simple', vimConnectionInfo: { vim1: { vimId: k8sVim.id, vimType: 'kubernetes' } }, additionalParams: { 'lcm-kubernetes-def-files': DEF_FILES, namespace: NAMESPACE } }),
      'COMPLETED',
    );

    const vmInst = await instance(vmId);
    const cnfInst = await instance(cnfId);
    vmVnfc = vnfcOf(vmInst, 'VDU1');
    cnfVnfc = vnfcOf(cnfInst, 'VDU3');
    const stackId = stackOf(vmInst).id;
    const podNames = (cnfInst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).map((r) => r.computeResource.resourceId as string);

    // Killed once the simulators have saved what the instances point at.
    await until('the simulated cloud state saved', () => {
      const os = savedState('openstack');
      const k8s = savedState('kubernetes');
      const servers = new Set(((os?.compute.servers ?? []) as Json[]).map((s) => s.id));
      const stackSaved = ((os?.heat.stacks ?? []) as Json[]).some((s) => s.id === stackId && s.status === 'COMPLETE');
      const pods = new Set(((k8s?.store.objects ?? []) as Json[]).filter((o) => o.key === '/pods' && o.obj.status?.phase === 'Running').map((o) => o.obj.metadata.name));
      return stackSaved && servers.has(vmVnfc.runsOn) && podNames.every((p) => pods.has(p));
    });
    process.kill(-(first.proc.pid as number), 'SIGKILL');
    assert.equal((await first.exited).signal, 'SIGKILL');

    const second = start();
    await logLine(second, 'VNFM started');
    const again = await logLine(second, 'simulated cloud started (state restored)');
    assert.equal(again.restored, true);

    const vmHeal = await waitOp(await lcm(vmId, 'heal', { vnfcInstanceId: [vmVnfc.infoId], cause: 'after a restart' }), 'COMPLETED');
    assert.equal(vmHeal.operation, 'HEAL');
    const vmAfter = await instance(vmId);
    assert.notEqual(runsOn(vmAfter, vmVnfc.resId), vmVnfc.runsOn, 'the healed VM VNFC runs on a new server');
    assert.ok(runsOn(vmAfter, vmVnfc.resId));

    await waitOp(await lcm(cnfId, 'heal', { vnfcInstanceId: [cnfVnfc.infoId], cause: 'after a restart' }), 'COMPLETED');
    const cnfAfter = await instance(cnfId);
    assert.notEqual(runsOn(cnfAfter, cnfVnfc.resId), cnfVnfc.runsOn, 'the healed CNF VNFC runs in a new pod');
    const pod = await fetch(`${k8sUrl}/api/v1/namespaces/${NAMESPACE}/pods/${runsOn(cnfAfter, cnfVnfc.resId)}`, { headers: { authorization: `Bearer ${K8S_TOKEN}` } });
    assert.equal(pod.status, 200, 'the new pod exists in the cluster');

    vmVnfc = { ...vmVnfc, runsOn: runsOn(vmAfter, vmVnfc.resId) };
    cnfVnfc = { ...cnfVnfc, runsOn: runsOn(cnfAfter, cnfVnfc.resId) };
    second.proc.kill('SIGTERM');
    assert.equal((await second.exited).code, 0);
  });

  it('--reset-sim starts the cloud empty: a heal then fails with VNFM_ERR_INFRA_STACK_MISSING, the instance untouched', async () => {
    assert.ok(vmId && cnfId, 'the instances of the previous test');
    const third = start('--reset-sim');
    await logLine(third, 'VNFM started');
    await logLine(third, 'simulated cloud reset: saved state deleted');
    const banner = await logLine(third, 'simulated cloud started');
    assert.equal(banner.restored, false);

    for (const [id, vnfc] of [
      [vmId, vmVnfc],
      [cnfId, cnfVnfc],
    ] as const) {
      const before = await instance(id);
      const occ = await waitOp(await lcm(id, 'heal', { vnfcInstanceId: [vnfc.infoId], cause: 'empty cloud' }), 'FAILED_TEMP');
      assert.equal(occ.error.type, MISSING, JSON.stringify(occ.error));
      assert.equal(occ.error.status, 409);
      const after = await instance(id);
      assert.deepEqual(after.instantiatedVnfInfo, before.instantiatedVnfInfo, 'the instance information is kept');
      assert.equal(runsOn(after, vnfc.resId), vnfc.runsOn);
    }
    third.proc.kill('SIGTERM');
    assert.equal((await third.exited).code, 0);
  });
});
