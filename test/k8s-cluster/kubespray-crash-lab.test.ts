/**
 * A VNFM killed (SIGKILL) while Ansible runs `cluster.yml` for a Kubespray cluster VNF (stage
 * `lab`). The VNFM runs as a child process (`vnfm start --lab`) on a data directory; the fixture's
 * hold switch keeps the play waiting on the Ansible server while the test kills the VNFM and starts
 * it again (same data directory: the lab adopts its hosts; the lab's Kubernetes API, which the
 * play's kubeadm needs, lives in the VNFM process, so the play is released only once the VNFM is
 * back). The restarted VNFM continues the instantiate BY ITSELF, finds the play by its journaled
 * run id and waits for its exit code: the play is NOT started again (one `cluster.yml` run on the
 * Ansible server) and the op completes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { freePort } from '../helpers/app.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { ROOT } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { guard, until as waitUntil } from '../helpers/wait.ts';
import { type Cli, started, startCli } from '../lab/lab-helpers.ts';

const lab = await stage('lab');
if (!lab.skip) await labTestsExclusive();

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

const V2 = { version: '2.0.0' };
const PKG = join(ROOT, 'samples/k8s-cluster-kubespray');
const FIXTURE = join(ROOT, 'test/fixtures/kubespray');
const LAB_PASSWORD = 'lab-pass-2f8d61c4';
/** Failure guards only (a loaded 2-core machine). */
const OP_GUARD_MS = 600_000;
const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, guardMs = OP_GUARD_MS): Promise<T> => waitUntil(what, fn, guardMs, 200);

describe('k8s-kubespray: VNFM killed during a play', { skip: lab.skip }, () => {
  let dir = '';
  let sprayRoot = '';
  let inventory = '';
  let cli: Cli | undefined;

  let url = '';
  /** `vnfm start --lab` on the test's data directory; its URL. */
  const start = async (): Promise<Cli> => {
    const c = startCli(dir);
    url = (await started(c)).url;
    return c;
  };
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; location: string; body: Json }> => {
    const r = await fetch(`${url}${path}`, { method, headers: body === undefined ? V2 : { ...V2, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await r.text();
    return { status: r.status, location: r.headers.get('location') ?? '', body: text ? JSON.parse(text) : {} };
  };
  const runsOf = (playbook: string): string[] => {
    const runs = join(inventory, '.healvnfm', 'runs');
    if (!existsSync(runs)) return [];
    return readdirSync(runs).filter((r) => existsSync(join(runs, r, 'run.sh')) && readFileSync(join(runs, r, 'run.sh'), 'utf8').includes(`/${playbook}'`));
  };

  before(async () => {
    dir = mkdtempSync('/tmp/hvks-crash-');
    chmodSync(dir, 0o755);
    sprayRoot = join(dir, 'kubespray');
    cpSync(FIXTURE, sprayRoot, { recursive: true });
    mkdirSync(join(sprayRoot, 'hold-switch'));
    writeFileSync(join(sprayRoot, 'hold-switch', 'bootstrap'), '');
    mkdirSync(join(dir, 'inventories'));
    chmodSync(join(dir, 'inventories'), 0o1777);
    execFileSync('chmod', ['-R', 'a+rwX', join(sprayRoot, 'hold-switch')]);
    execFileSync('chmod', ['-R', 'a+rX', sprayRoot]);
    inventory = join(dir, 'inventories', 'crash1');
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({
        // fixed ports: the restarted VNFM's simulated cloud answers where the op's VIM points
        simPorts: { openstack: await freePort(), kubernetes: await freePort(), serverNotifier: await freePort() },
        lab: { kubernetesPort: await freePort(), waitForLockMs: 900_000, password: LAB_PASSWORD, serviceHosts: true },
        runner: { shutdownGraceMs: 1000, leaseMs: 15_000 },
        mgmt: { kubespray: { playPollMs: 300, pollIntervalMs: 250, tokenPollIntervalMs: 250, sshBackoffInitialMs: 500, sshNewVmBackoffMaxMs: 1000 } },
      }),
    );
  });
  after(async () => {
    if (cli && cli.child.exitCode === null && cli.child.signalCode === null) {
      cli.child.kill('SIGTERM');
      await guard('the VNFM to stop', cli.exited, 120_000).catch(() => cli?.child.kill('SIGKILL'));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('the restarted VNFM picks up the result of the play that ran on, without starting it again', async () => {
    cli = await start();
    const labLine = cli.lines.find((l) => l.msg === 'lab started');
    const service = labLine?.serviceHosts as { lb: string; ansible: string };
    assert.ok(service, 'the lab has its service hosts');
    const pkg = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
    const up = await fetch(`${url}/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(buildCsarFromDir(PKG)) });
    assert.equal(up.status, 202);
    const onboarded = await until('the package onboarded', async () => {
      const g = await api('GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
      return g.body.onboardingState === 'ONBOARDED' ? g.body : undefined;
    });
    const vims = (await api('GET', '/v1.0/vims')).body.vims as Json[];
    const osVim = vims.find((v) => v.name === 'sim-openstack')?.id as string;
    const text = readFileSync(join(PKG, 'requests', 'instantiate.json'), 'utf8')
      .replaceAll('<lab password>', LAB_PASSWORD)
      .replaceAll('<OpenStack VIM id>', osVim)
      .replaceAll('<Ansible server address>', service.ansible)
      .replaceAll('<LB address>', service.lb)
      .replaceAll('<Kubespray root path>', sprayRoot)
      .replaceAll('<inventory path>', inventory)
      .replaceAll('<VIM name>', 'kubespray-crash');
    const inst = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId: onboarded.vnfdId });
    const id = inst.body.id as string;
    const r = await api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, JSON.parse(text));
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const opId = r.location.split('/').pop() as string;

    // the play is running and holds (its log shows the hold task)
    const run = await until('cluster.yml running and holding', () => {
      const runs = runsOf('cluster.yml');
      if (runs.length !== 1) return undefined;
      const log = join(inventory, '.healvnfm', 'runs', runs[0] as string, 'log');
      return existsSync(log) && readFileSync(log, 'utf8').includes('fixture hold switch') ? (runs[0] as string) : undefined;
    });
    cli.child.kill('SIGKILL');
    await guard('the VNFM to die', cli.exited, 30_000);
    const rcFile = join(inventory, '.healvnfm', 'runs', run, 'rc');
    assert.equal(existsSync(rcFile), false, 'the play still runs without a VNFM');

    cli = await start();
    const restarted = cli;
    // the restarted VNFM resumes the op and waits for the same run, then the play goes on and ends
    await until('the restarted VNFM waiting for the running play', () => restarted.lines.some((l) => typeof l.msg === 'string' && l.msg.includes(`waiting for the running cluster.yml (run ${run}`)));
    writeFileSync(join(sprayRoot, 'hold-switch', 'release'), '');
    await until('cluster.yml finished', () => existsSync(rcFile));
    const runLog = join(inventory, '.healvnfm', 'runs', run, 'log');
    assert.equal(readFileSync(rcFile, 'utf8').trim(), '0', `the play failed; its log ends:\n${existsSync(runLog) ? readFileSync(runLog, 'utf8').split('\n').slice(-60).join('\n') : '(no log)'}\nthe restarted VNFM logged:\n${restarted.lines.map((l) => JSON.stringify(l)).slice(-80).join('\n')}`);
    assert.equal(existsSync(join(inventory, '.healvnfm', 'runs', run, 'secrets.yaml')), false, 'the secret inventory is gone with the play');
    const done = await until('the instantiate to end', async () => {
      const o = await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`);
      return ['COMPLETED', 'FAILED_TEMP', 'FAILED'].includes(o.body.operationState) ? o.body : undefined;
    });
    assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
    assert.deepEqual(runsOf('cluster.yml'), [run], 'cluster.yml ran once: the restarted VNFM waited for the same run');
    const k8s = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo.metadata.k8sCluster;
    assert.equal(k8s.apiUrl, `https://${service.lb}:8383`);
    assert.ok(!JSON.stringify(cli.lines).includes(LAB_PASSWORD), 'no password logged');

    const t = await api('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
    assert.equal(t.status, 202);
    const term = await until('the terminate to end', async () => {
      const o = await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${t.location.split('/').pop()}`);
      return ['COMPLETED', 'FAILED_TEMP', 'FAILED'].includes(o.body.operationState) ? o.body : undefined;
    });
    assert.equal(term.operationState, 'COMPLETED', JSON.stringify(term.error));
  });
});
