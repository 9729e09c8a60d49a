/**
 * A Kubespray cluster package in Tacker's layout on the live-VM lab (stage `lab`): the external
 * load balancer is a VM of the VNF (`externalLB` VDU in the same stack, its address given to the
 * driver by `external_lb_param.ssh_cp_name`), and every port has a floating IP, as Tacker's
 * Kubespray BaseHOT has them (`*_FloatingIP` on the public network, which the VNFM cannot reach).
 *
 * `ssh_cp_name` names the ports: SSH goes to their fixed addresses (as Tacker). Instantiate, heal
 * of a worker (republished on the package's own LB) and terminate complete; at terminate the LB
 * went away with the stack, so its configuration is not cleaned up.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { csarOf, onboard, ROOT } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { sshRun } from '../lab/lab-helpers.ts';
import { type Json, labInfo as labInfoOf, serverOf, vnfmApi } from './cluster-lab.ts';

const lab = await stage('lab');
if (!lab.skip) await labTestsExclusive();

const PKG = join(ROOT, 'test/fixtures/kubespray-tacker-layout');
const FIXTURE = join(ROOT, 'test/fixtures/kubespray');
const LAB_PASSWORD = 'lab-pass-5e02c7a1';

describe('k8s-kubespray, Tacker layout: the LB VM in the VNF, floating IPs on the ports', { skip: lab.skip }, () => {
  let vnfm: TestVnfm;
  let osVimId = '';
  let vnfdId = '';
  let dataDir = '';
  let work = '';
  let sprayRoot = '';
  let ansibleIp = '';
  let pkg: Json;

  const { call, lcm, instance, clusterNodes } = vnfmApi(() => vnfm, 900_000);
  const ssh = (ip: string, cmd: string) => sshRun(ip, 'hvlab', LAB_PASSWORD, cmd);

  const extVl = (cpdId: string) => ({ id: `lab-net-${cpdId}`, resourceId: 'lab-net', extCps: [{ cpdId, cpConfig: { [`${cpdId}_config`]: { cpProtocolData: [{ layerProtocol: 'IP_OVER_ETHERNET' }] } } }] });
  const node = (role: 'master' | 'worker') => {
    const cp = role === 'master' ? 'masterNode_CP1' : 'workerNode_CP2';
    return { aspect_id: `${role}_instance`, ssh_cp_name: cp, nic_cp_name: cp, username: 'hvlab', password: LAB_PASSWORD };
  };
  const instantiateRequest = (inventory: string): Json => ({
    flavourId: 'simple',
    instantiationLevelId: 'instantiation_level_1',
    extVirtualLinks: ['masterNode_CP1', 'workerNode_CP2', 'externalLB_CP3'].map(extVl),
    vimConnectionInfo: { vim1: { vimId: osVimId, vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } },
    additionalParams: {
      k8s_cluster_installation_param: {
        master_node: { ...node('master'), pod_cidr: '192.168.0.0/16', cluster_cidr: '10.199.187.0/24' },
        worker_node: node('worker'),
        ansible: { ip_address: ansibleIp, username: 'hvlab', password: LAB_PASSWORD, kubespray_root_path: sprayRoot, transferring_inventory_path: inventory },
        external_lb_param: { ssh_cp_name: 'externalLB_CP3', ssh_username: 'hvlab', ssh_password: LAB_PASSWORD, script_path: 'Scripts/install_external_lb.sh' },
        vim_name: 'kubespray-tacker-layout',
      },
    },
  });

  /** The fixed and floating addresses of a VNFC's CP as the instance shows them. */
  const cpAddresses = (inst: Json, vduId: string): { fixed: string[]; floating: string[] }[] =>
    (inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).filter((r) => r.vduId === vduId).map((r) => Object.values(r.metadata.cpAddresses as Record<string, { fixed: string[]; floating: string[] }>)[0] as { fixed: string[]; floating: string[] });

  const nodesViaVim = async (id: string): Promise<Record<string, boolean>> => {
    const vimId = (await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.vimId;
    const { KubeClient } = await import('../../src/infra/kubernetes/kube-client.ts');
    const conn = await vnfm.ctx.vims.complete({ vimId });
    const list = await KubeClient.fromVim(conn).list('v1', 'Node', undefined);
    const mine = new Set(Object.keys(await clusterNodes(id)));
    return Object.fromEntries(list.items.filter((n) => mine.has(n.metadata.name as string)).map((n) => [n.metadata.name, ((n.status?.conditions ?? []) as Json[]).some((c) => c.type === 'Ready' && c.status === 'True')]));
  };
  const allReadyViaVim = async (id: string, count: number) => {
    const r = await nodesViaVim(id);
    assert.equal(Object.keys(r).length, count, JSON.stringify(r));
    assert.ok(Object.values(r).every(Boolean), JSON.stringify(r));
  };
  const backendServers = (cfg: string, re: RegExp): string[] => {
    const name = re.exec(cfg)?.[1];
    if (!name) return [];
    const at = cfg.search(new RegExp(`^backend ${name.replace(/[.]/g, '\\.')}$`, 'm'));
    const out: string[] = [];
    for (const l of cfg.slice(at).split('\n').slice(1)) {
      const m = /^\s+server\s+(\S+)\s/.exec(l);
      if (m) out.push(m[1] as string);
      else if (/^\S/.test(l)) break;
    }
    return out.sort();
  };

  before(async () => {
    dataDir = mkdtempSync('/tmp/vnfm-kubespray-tl-lab-');
    work = mkdtempSync('/tmp/hvkt-');
    chmodSync(work, 0o755);
    sprayRoot = join(work, 'kubespray');
    cpSync(FIXTURE, sprayRoot, { recursive: true });
    mkdirSync(join(work, 'inventories'));
    chmodSync(join(work, 'inventories'), 0o1777);
    execFileSync('chmod', ['-R', 'a+rX', sprayRoot]);
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
    const sh = labInfoOf(vnfm).serviceHosts;
    assert.ok(sh, 'the lab has its service hosts (the Ansible server)');
    ansibleIp = sh.ansible;
    osVimId = (await vnfm.ctx.vims.list()).find((v) => v.name === 'sim-openstack')?.id ?? '';
    assert.ok(osVimId);
    pkg = await onboard(vnfm.app, csarOf(PKG), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
  });
  after(async () => {
    await vnfm?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  let id = '';
  let inventory = '';
  let lbIp = '';

  it('instantiates: SSH to the fixed addresses of the named ports (each has a floating IP), the LB is the externalLB VM, Nodes Ready through it', async () => {
    const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'kubespray-tacker-layout' });
    id = c.body.id;
    inventory = join(work, 'inventories', 'tl1');
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, instantiateRequest(inventory));
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const inst = await instance(id);
    // every port has a floating IP (Tacker's BaseHOT), on the public network the VNFM cannot reach
    for (const vdu of ['masterNode', 'workerNode', 'externalLB']) {
      const cps = cpAddresses(inst, vdu);
      assert.ok(cps.length > 0, vdu);
      for (const cp of cps) assert.equal(cp.floating.length, 1, `${vdu}: ${JSON.stringify(cp)}`);
    }
    const k8s = inst.instantiatedVnfInfo.metadata.k8sCluster;
    for (const [name, n] of Object.entries(k8s.nodes as Record<string, Json>)) assert.equal(n.sshIp, n.nicIp, `${name}: SSH to the fixed address of ssh_cp_name`);
    lbIp = (cpAddresses(inst, 'externalLB')[0] as { fixed: string[] }).fixed[0] as string;
    assert.equal(k8s.lbIp, lbIp, "the LB is the externalLB VM's fixed address");
    assert.equal(k8s.apiUrl, `https://${lbIp}:8383`);
    await allReadyViaVim(id, 3);
    const cfg = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.deepEqual(backendServers(cfg, /^backend (kubernetes-apiserver)$/m), Object.entries(k8s.nodes as Record<string, Json>).filter(([, n]) => n.role === 'master').map(([n]) => n));
  });

  it("heals a worker: replaced, Ready through the VIM, republished on the package's own LB", async () => {
    const inst = await instance(id);
    const worker = inst.instantiatedVnfInfo.vnfcInfo.find((v: Json) => v.vduId === 'workerNode');
    const before = serverOf(inst, worker.id);
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id] });
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.notEqual(serverOf(await instance(id), worker.id), before, 'the server was replaced');
    await allReadyViaVim(id, 3);
    const cfg = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.match(cfg, new RegExp(`# BEGIN healvnfm cluster-${id}`), "the cluster's section is on its own LB");
    assert.deepEqual(backendServers(cfg, /^backend (kubernetes-apiserver)$/m).length, 1);
  });

  it('refuses a heal of the LB VNFC (422): the driver heals workers only', async () => {
    const inst = await instance(id);
    const lb = inst.instantiatedVnfInfo.vnfcInfo.find((v: Json) => v.vduId === 'externalLB');
    const r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [lb.id] });
    assert.equal(r.status, 422, JSON.stringify(r.body));
  });

  it('terminates COMPLETED: the LB went with the stack (no clean-up attempted), VIM and inventory removed', async () => {
    const vimId = (await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.vimId;
    const logsBefore = vnfm.logs.length;
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.equal((await vnfm.ctx.vims.list()).find((v) => v.id === vimId), undefined, 'the VIM is deleted');
    assert.equal((await ssh(ansibleIp, `test -e ${inventory} && echo present || echo gone`)).stdout.trim(), 'gone');
    const logs = vnfm.logs.slice(logsBefore).join('');
    assert.match(logs, new RegExp(`the load balancer ${lbIp.replaceAll('.', '\\.')} is VNFC \\S+ \\(VDU externalLB\\) of this VNF: it goes with the VNF`));
    assert.doesNotMatch(logs, /EHOSTUNREACH|ECONNREFUSED/, 'no connection to the deleted LB was tried');
  });

  it('no password in logs or in the database', async () => {
    assert.ok(!vnfm.logs.join('').includes(LAB_PASSWORD), 'not logged');
    for (const table of ['op_occ', 'vnf_instance', 'mgmt_state', 'vim'] as const) {
      const dump = JSON.stringify(await vnfm.store.db.selectFrom(table).selectAll().execute());
      assert.ok(!dump.includes(LAB_PASSWORD), `not in ${table}`);
    }
  });
});
