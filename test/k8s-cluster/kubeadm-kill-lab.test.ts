/**
 * The VNFM killed in the middle of a master heal (stage `lab`): `vnfm start --lab` as a child
 * process builds the sample 3-master cluster; a master heal runs heal_start (the master's etcd
 * member removed, out of the survivors' HAProxy) and reaches the infra step, which the simulated
 * Heat holds; the VNFM is killed with SIGKILL there, between "member removed" and "VM replaced".
 * The restarted VNFM (same data directory; the lab adopts the hosts left running) carries the
 * operation to COMPLETED, directly or through a retry, without running heal_start's steps again:
 * 3 voting etcd members, no learner, the healed master back in both survivors' HAProxy, every Node
 * Ready.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/app.ts';
import { vnfmRequest } from '../helpers/http.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { csarOf, ROOT } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { guard, until } from '../helpers/wait.ts';
import { type Cli, type Line, sshRun, started, startCli } from '../lab/lab-helpers.ts';
import { labKubernetes, masterReads } from './cluster-lab.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
type Json = any;

const PKG = join(ROOT, 'samples/k8s-cluster-kubeadm');
const LAB_PASSWORD = 'kill-lab-pass-5d2a91';
const SIM_ADMIN = { 'x-sim-admin-secret': 'sim-admin-secret', 'content-type': 'application/json' };
const FINAL = ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'];

describe('k8s-kubeadm: the VNFM killed between "member removed" and "VM replaced"', { skip: lab.skip }, () => {
  let dir = '';
  let cli: Cli | undefined;
  let base = '';
  let openstack = '';
  let id = '';
  let target: Json;
  let survivors: Json[] = [];
  let healOp = '';

  const api = (method: string, path: string, body?: unknown) => vnfmRequest(base, method, path, body);
  const op = async (opId: string): Promise<Json> => (await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).body;
  const finished = (opId: string) => until(`op ${opId} to finish`, async () => {
    const o = await op(opId);
    return FINAL.includes(o.operationState) ? o : undefined;
  }, 900_000, 250);
  const ssh = (ip: string, cmd: string) => sshRun(ip, 'hvlab', LAB_PASSWORD, cmd);
  const { etcdMembers: members, haproxyServers } = masterReads(ssh);
  /** The lab Kubernetes of the running VNFM child: its files in the data directory, its URL from its log line. */
  const labKube = labKubernetes(() => ({ labDir: join(dir, 'data', 'lab'), kubernetesUrl: (cli as Cli).lines.find((l: Line) => l.msg === 'lab started').kubernetes }));
  /** Every VNFM process started (all stopped at the end, whatever failed). */
  const clis: Cli[] = [];
  const up = async (): Promise<void> => {
    cli = startCli(dir);
    clis.push(cli);
    const line = await started(cli);
    base = line.url;
    // the simulated OpenStack's origin (the line names its Keystone URL)
    openstack = new URL((cli.lines.find((l: Line) => typeof l.msg === 'string' && l.msg.startsWith('simulated cloud started')) as Line).openstack).origin;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vnfm-kubeadm-kill-'));
    // fixed ports for the restart: the instance keeps the simulated OpenStack's Keystone URL, and
    // the hosts the lab adopts keep the lab Kubernetes' URL (a real cloud does not move either)
    const [openstackPort, kubernetesPort, notifierPort, labKubernetesPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({
        simPorts: { openstack: openstackPort, kubernetes: kubernetesPort, serverNotifier: notifierPort },
        lab: { password: LAB_PASSWORD, kubernetesPort: labKubernetesPort, waitForLockMs: 900_000 },
        runner: { shutdownGraceMs: 1000, pollMs: 50 },
        sync: { intervalMs: 0 },
        mgmt: { kubeadm: { pollIntervalMs: 250, tokenPollIntervalMs: 250, evictionRetryMs: 500, sshBackoffInitialMs: 500 } },
      }),
    );
    await up();
  });
  after(async () => {
    for (const c of clis) {
      if (c.child.exitCode !== null || c.child.signalCode !== null) continue;
      c.child.kill('SIGTERM');
      await guard('the VNFM to stop', c.exited, 120_000).catch(() => c.child.kill('SIGKILL'));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('builds the 3-master cluster', async () => {
    const pkg = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
    assert.equal(pkg.status, 201, pkg.text);
    const upload = await api('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, csarOf(PKG));
    assert.equal(upload.status, 202, upload.text);
    const onboarded = await until('the package onboarded', async () => {
      const p = (await api('GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`)).body;
      return p.onboardingState === 'ONBOARDED' || p.onboardingState === 'ERROR' ? p : undefined;
    }, 300_000, 200);
    assert.equal(onboarded.onboardingState, 'ONBOARDED', JSON.stringify(onboarded));
    const vims = (await api('GET', '/v1.0/vims')).body.vims as Json[];
    const osVim = vims.find((v) => v.name === 'sim-openstack');
    assert.ok(osVim, JSON.stringify(vims));
    const req = JSON.parse(readFileSync(join(PKG, 'requests', 'instantiate-complex.json'), 'utf8').replaceAll('<lab password>', LAB_PASSWORD).replaceAll('<OpenStack VIM id>', osVim.id));
    id = (await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId: onboarded.vnfdId, vnfInstanceName: 'k8s-kill' })).body.id;
    const inst = await api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, req);
    assert.equal(inst.status, 202, inst.text);
    const done = await finished(String(inst.headers.get('location')).split('/').pop() as string);
    assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
    const nodes = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo.metadata.k8sCluster.nodes as Record<string, Json>;
    const masters = Object.entries(nodes).filter(([, n]) => n.role === 'master').map(([name, n]) => ({ name, ...n }));
    assert.equal(masters.length, 3);
    [target, ...survivors] = masters;
    assert.deepEqual(Object.values(await members(survivors[0].sshIp)), [false, false, false]);
  });

  it('kills the VNFM after heal_start removed the member, while Heat replaces the VM', async () => {
    const hold = await fetch(`${openstack}/_sim/heat/holds`, { method: 'POST', headers: SIM_ADMIN, body: JSON.stringify({ operation: 'update' }) });
    assert.equal(hold.status, 201);
    const holdId = ((await hold.json()) as Json).hold.id as string;
    const heal = await api('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.vnfcInfoId] });
    assert.equal(heal.status, 202, heal.text);
    healOp = String(heal.headers.get('location')).split('/').pop() as string;
    // the stack update is held: heal_start is over
    await until('the stack update held', async () => {
      const h = (await (await fetch(`${openstack}/_sim/heat/holds/${holdId}`, { headers: SIM_ADMIN })).json()) as Json;
      return h.hold.held.length > 0 ? true : undefined;
    }, 600_000, 100);
    const m = await members(survivors[0].sshIp);
    assert.deepEqual(Object.keys(m).sort(), survivors.map((s) => s.name).sort(), 'the target\'s member was removed');
    for (const s of survivors) assert.ok(!(await haproxyServers(s.sshIp)).includes(target.name), `${target.name} out of ${s.name}'s HAProxy`);
    assert.equal((await op(healOp)).operationState, 'PROCESSING');

    const c = cli as Cli;
    c.child.kill('SIGKILL');
    await guard('the VNFM to die', c.exited, 60_000);
  });

  it('the restarted VNFM completes the heal without removing anything twice', async () => {
    assert.ok(healOp && (cli as Cli).child.signalCode === 'SIGKILL', 'the VNFM was killed during the heal');
    await up();
    const c = cli as Cli;
    assert.ok(c.lines.some((l: Line) => typeof l.msg === 'string' && l.msg.startsWith('lab: hosts left running by the previous lab adopted')), 'the hosts were adopted');
    let o = await finished(healOp);
    if (o.operationState === 'FAILED_TEMP') {
      const r = await api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${healOp}/retry`);
      assert.equal(r.status, 202, r.text);
      // the retry is accepted in PROCESSING (one transaction): the next final state is the retry's
      o = await finished(healOp);
    }
    assert.equal(o.operationState, 'COMPLETED', JSON.stringify(o.error));
    // heal_start's steps ran before the kill only (journaled): none ran again in this process
    const again = c.lines.filter((l: Line) => l.msg === 'driver step finished' && l.hook === 'heal_start');
    assert.deepEqual(again, [], 'no heal_start step ran again');
    assert.ok(c.lines.some((l: Line) => l.msg === 'driver step finished' && l.hook === 'heal_end' && l.step === 'join-master'), 'the new VM joined in this process');
    // the cluster is whole again
    const m = await members(survivors[0].sshIp);
    assert.deepEqual(Object.keys(m).sort(), [target.name, ...survivors.map((s: Json) => s.name)].sort());
    assert.ok(Object.values(m).every((learner) => !learner), 'no learner');
    for (const s of survivors) assert.deepEqual(await haproxyServers(s.sshIp), [target.name, ...survivors.map((x: Json) => x.name)].sort());
    const ready = await labKube.nodes();
    assert.equal(Object.keys(ready).length, 5, JSON.stringify(ready));
    assert.ok(Object.values(ready).every(Boolean), JSON.stringify(ready));
  });

  it('terminates', async () => {
    const t = await api('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
    assert.equal(t.status, 202, t.text);
    const done = await finished(String(t.headers.get('location')).split('/').pop() as string);
    assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
  });
});
