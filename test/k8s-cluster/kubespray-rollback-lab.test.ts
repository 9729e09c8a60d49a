/**
 * What a Kubespray cluster instance that did not get instantiated leaves on the operator's hosts
 * (stage `lab`; the sample package `samples/k8s-cluster-kubespray` through the VNFM API, the real
 * `ansible-playbook` on the lab's Ansible server, the lab's LB host with real HAProxy):
 *
 * - an instantiate whose play fails (after the cluster's API frontend was published on the LB) and
 *   is then rolled back leaves neither its LB section nor its inventory directory;
 * - an instantiate that failed and was marked failed (its instance then deleted) leaves its
 *   section behind; it does not block the next cluster: the stale section (its instance unknown
 *   to the VNFM) is removed, and that is logged.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { csarOf, onboard, ROOT } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { sshRun } from '../lab/lab-helpers.ts';
import { type Json, labInfo as labInfoOf, vnfmApi } from './cluster-lab.ts';

const lab = await stage('lab');
if (!lab.skip) await labTestsExclusive();

const PKG = join(ROOT, 'samples/k8s-cluster-kubespray');
const FIXTURE = join(ROOT, 'test/fixtures/kubespray');
const LAB_PASSWORD = 'lab-pass-41d0c7e2';

describe('k8s-kubespray: instances that were not instantiated leave nothing in the way', { skip: lab.skip }, () => {
  let vnfm: TestVnfm;
  let osVimId = '';
  let vnfdId = '';
  let dataDir = '';
  let work = '';
  let sprayRoot = '';
  let noSpray = '';
  let lbIp = '';
  let ansibleIp = '';

  const { call, settle, lcm } = vnfmApi(() => vnfm, 900_000);
  const labInfo = () => labInfoOf(vnfm);
  const ssh = (ip: string, cmd: string) => sshRun(ip, 'hvlab', LAB_PASSWORD, cmd);
  const lbConfig = async (): Promise<string> => (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
  const exists = async (path: string): Promise<boolean> => (await ssh(ansibleIp, `test -e ${path} && echo present || echo gone`)).stdout.trim() === 'present';

  /** The sample request for an inventory path and a Kubespray root (a root without playbooks makes the play fail). */
  const request = (inventory: string, root: string): Json =>
    JSON.parse(
      readFileSync(join(PKG, 'requests', 'instantiate.json'), 'utf8')
        .replaceAll('<lab password>', LAB_PASSWORD)
        .replaceAll('<OpenStack VIM id>', osVimId)
        .replaceAll('<Ansible server address>', ansibleIp)
        .replaceAll('<LB address>', lbIp)
        .replaceAll('<Kubespray root path>', root)
        .replaceAll('<inventory path>', inventory)
        .replaceAll('"<VIM name>"', `"kubespray-${inventory.split('/').pop()}"`),
    );

  /** Instantiates a new instance whose play fails: FAILED_TEMP, with its API frontend already on the LB. */
  const failedInstantiate = async (name: string): Promise<{ id: string; opId: string; inventory: string }> => {
    const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: name });
    const id = c.body.id as string;
    const inventory = join(work, 'inventories', name);
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, request(inventory, noSpray));
    assert.equal(occ.operationState, 'FAILED_TEMP', JSON.stringify(occ.error));
    assert.match(await lbConfig(), new RegExp(`^# BEGIN healvnfm cluster-${id}$`, 'm'), 'the API frontend was published before the play');
    assert.ok(await exists(inventory), 'the inventory directory was made before the play');
    return { id, opId: occ.id as string, inventory };
  };

  before(async () => {
    dataDir = mkdtempSync('/tmp/vnfm-kubespray-rb-lab-');
    work = mkdtempSync('/tmp/hvksrb-');
    chmodSync(work, 0o755);
    sprayRoot = join(work, 'kubespray');
    cpSync(FIXTURE, sprayRoot, { recursive: true });
    noSpray = join(work, 'no-kubespray');
    mkdirSync(noSpray);
    mkdirSync(join(work, 'inventories'));
    chmodSync(join(work, 'inventories'), 0o1777);
    execFileSync('chmod', ['-R', 'a+rX', sprayRoot, noSpray]);
    vnfm = await testVnfm({
      config: {
        dataDir,
        sim: true,
        simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 },
        lab: { enabled: true, password: LAB_PASSWORD, kubernetesPort: 0, waitForLockMs: 900_000, serviceHosts: true },
        runner: { pollMs: 50, leaseMs: 120_000 },
        mgmt: { kubespray: { playPollMs: 300, pollIntervalMs: 250, tokenPollIntervalMs: 250, evictionRetryMs: 500, sshBackoffInitialMs: 500, sshNewVmBackoffMaxMs: 1000, drainTimeoutSeconds: 60 } },
      } as never,
    });
    const sh = labInfo().serviceHosts;
    assert.ok(sh, 'the lab has its service hosts');
    lbIp = sh.lb;
    ansibleIp = sh.ansible;
    osVimId = (await vnfm.ctx.vims.list()).find((v) => v.name === 'sim-openstack')?.id ?? '';
    assert.ok(osVimId);
    const pkg = await onboard(vnfm.app, csarOf(PKG), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
  });
  after(async () => {
    await vnfm?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  it('a rolled-back instantiate leaves no LB section and no inventory directory', async () => {
    const a = await failedInstantiate('rb-a');
    const r = await call('POST', `/vnflcm/v2/vnf_lcm_op_occs/${a.opId}/rollback`);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    await settle();
    const occ = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${a.opId}`)).body;
    assert.equal(occ.operationState, 'ROLLED_BACK', JSON.stringify(occ.error));
    assert.doesNotMatch(await lbConfig(), new RegExp(`cluster-${a.id}`), 'the section is gone from the LB');
    assert.equal(await exists(a.inventory), false, 'the inventory directory is gone');
    assert.equal((await call('DELETE', `/vnflcm/v2/vnf_instances/${a.id}`)).status, 204);
  });

  it('a section left by a failed, deleted instance does not block a new cluster: removed, and logged', async () => {
    const b = await failedInstantiate('rb-b');
    const f = await call('POST', `/vnflcm/v2/vnf_lcm_op_occs/${b.opId}/fail`);
    assert.equal(f.status, 200, JSON.stringify(f.body));
    assert.equal((await call('DELETE', `/vnflcm/v2/vnf_instances/${b.id}`)).status, 204);
    assert.match(await lbConfig(), new RegExp(`cluster-${b.id}`), 'marked failed: its section stays');
    // a new cluster (its own inventory) publishes the same API frontend
    const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'rb-c' });
    const id = c.body.id as string;
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, request(join(work, 'inventories', 'rb-c'), sprayRoot));
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const cfg = await lbConfig();
    assert.doesNotMatch(cfg, new RegExp(`cluster-${b.id}`), 'the stale section is gone');
    assert.match(cfg, new RegExp(`^# BEGIN healvnfm cluster-${id}$`, 'm'));
    assert.ok(
      vnfm.logs.some((l) => l.includes('stale section') && l.includes(`cluster-${b.id}`)),
      'the removal is logged',
    );
    const t = await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
    assert.equal(t.operationState, 'COMPLETED', JSON.stringify(t.error));
    assert.doesNotMatch(await lbConfig(), /# BEGIN healvnfm cluster-/);
  });
});
