/**
 * Cluster VNFs on the live-VM lab (stage `lab`): the sample package `samples/k8s-cluster-kubeadm`
 * instantiated, healed, scaled and terminated through the VNFM API, with the built-in
 * `k8s-kubeadm` driver reaching the VNF's "VMs" (network namespaces with sshd) over real SSH,
 * real etcd and HAProxy on the masters, and the lab's Kubernetes API for Nodes.
 *
 * Each scenario asserts what the API shows and what the hosts really are (etcd members, HAProxy
 * configuration, Nodes).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { csarOf, onboard, ROOT } from '../helpers/packages.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { stage } from '../helpers/stages.ts';
import { sampleCommandLines, sshRun } from '../lab/lab-helpers.ts';
import { ETCDCTL, type Json, labInfo, labKubernetes, masterReads, serverOf, vnfmApi } from './cluster-lab.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

const PKG = join(ROOT, 'samples/k8s-cluster-kubeadm');
const LAB_PASSWORD = 'lab-pass-4d9c2e71';

describe('k8s-kubeadm cluster VNFs on the lab', { skip: lab.skip }, () => {
  let vnfm: TestVnfm;
  let osVimId = '';
  let vnfdId = '';

  // Installs and joins take a while on a loaded machine: a generous bound that only fails the test.
  const { call, settle, lcm, instance, clusterNodes, simAdmin } = vnfmApi(() => vnfm, 600_000);
  const kube = labKubernetes(() => labInfo(vnfm));
  const labKubeReq = kube.req;
  const nodes = kube.nodes;

  /** The sample request with the lab's VIM and password filled in. */
  const request = (name: string): Json => {
    const text = readFileSync(join(PKG, 'requests', name), 'utf8').replaceAll('<lab password>', LAB_PASSWORD).replaceAll('<OpenStack VIM id>', osVimId);
    return JSON.parse(text);
  };

  const ssh = (ip: string, cmd: string) => sshRun(ip, 'hvlab', LAB_PASSWORD, cmd);

  let dataDir = '';
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'vnfm-k8s-lab-'));
    vnfm = await testVnfm({
      config: {
        dataDir,
        sim: true,
        simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 },
        lab: { enabled: true, password: LAB_PASSWORD, kubernetesPort: 0, waitForLockMs: 900_000 },
        runner: { pollMs: 50, leaseMs: 120_000 },
        mgmt: { kubeadm: { pollIntervalMs: 250, tokenPollIntervalMs: 250, evictionRetryMs: 500, sshBackoffInitialMs: 500, sshNewVmBackoffMaxMs: 1000 } },
      } as never,
    });
    osVimId = (await vnfm.ctx.vims.list()).find((v) => v.name === 'sim-openstack')?.id ?? '';
    assert.ok(osVimId);
    const pkg = await onboard(vnfm.app, csarOf(PKG), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
  });
  after(async () => {
    await vnfm?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Ready state of the lab Nodes of one cluster (by the names the driver recorded). */
  const readyOf = async (id: string): Promise<Record<string, boolean>> => {
    const all = await nodes();
    return Object.fromEntries(Object.keys(await clusterNodes(id)).map((n) => [n, all[n] === true]));
  };
  const allReady = async (id: string, count: number) => {
    const r = await readyOf(id);
    assert.equal(Object.keys(r).length, count, JSON.stringify(r));
    assert.ok(Object.values(r).every(Boolean), JSON.stringify(r));
  };
  const { etcdMembers, haproxyServers } = masterReads(ssh);
  /** The masters the running HAProxy of a master serves (its runtime API): what a reload took in. */
  const haproxyLive = async (ip: string): Promise<string[]> => {
    const r = await ssh(ip, "echo 'show servers state kubernetes-apiserver' | sudo socat stdio /etc/haproxy/admin.sock");
    assert.equal(r.code, 0, r.stderr);
    return [...r.stdout.matchAll(/^\d+ kubernetes-apiserver \d+ (master\d+) /gm)].map((m) => m[1] as string).sort();
  };

  /** Samples every process's command line on the machine while the scenarios run (secrets check: the password, join tokens). */
  const seenInPs = new Set<string>();
  let stopSampling: (() => void) | undefined;
  before(() => {
    // the lab password, or anything shaped like a kubeadm bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`)
    stopSampling = sampleCommandLines((line) => {
      if (line.includes(LAB_PASSWORD) || /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/.test(line)) seenInPs.add(line);
    });
  });
  after(() => stopSampling?.());

  describe('one master, two workers', () => {
    let id = '';

    it('instantiates: cluster built over SSH, VIM registered, one vimConnectionInfo entry, Nodes Ready', async () => {
      const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'k8s-simple' });
      id = c.body.id;
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, request('instantiate-simple.json'));
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.ok(!JSON.stringify(occ).includes(LAB_PASSWORD), 'password masked in the op occ');
      assert.equal(occ.operationParams.additionalParams.k8s_cluster_installation_param.master_node.password, '****');
      const inst = await instance(id);
      const k8s = inst.instantiatedVnfInfo.metadata.k8sCluster;
      const entries = Object.values(inst.vimConnectionInfo as Record<string, Json>).filter((e) => /KUBERNETES/.test(e.vimType));
      assert.equal(entries.length, 1);
      assert.equal(entries[0].vimId, k8s.vimId);
      const vim = (await vnfm.ctx.vims.list()).find((v) => v.id === k8s.vimId);
      assert.ok(vim, 'the cluster VIM is registered');
      assert.equal(vim.name, `kubernetes_vim_${id}`);
      assert.ok(vim.config.sslCaCert?.includes('BEGIN CERTIFICATE'), 'registered with the cluster CA');
      // The registered VIM works: the VNFM lists the cluster's Nodes through it.
      const { KubeClient } = await import('../../src/infra/kubernetes/kube-client.ts');
      const conn = await vnfm.ctx.vims.complete({ vimId: vim.id });
      const listed = await KubeClient.fromVim(conn).list('v1', 'Node', undefined);
      assert.ok(listed.items.length >= 3);
      await allReady(id, 3);
      const roles = Object.values(k8s.nodes as Record<string, Json>).map((n) => n.role).sort();
      assert.deepEqual(roles, ['master', 'worker', 'worker']);
    });

    it('heals a live worker: drained, replaced, joined again, Ready', async () => {
      const inst = await instance(id);
      const worker = inst.instantiatedVnfInfo.vnfcInfo.find((v: Json) => v.vduId === 'workerNode');
      const before = serverOf(inst, worker.id);
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id] });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.notEqual(serverOf(await instance(id), worker.id), before, 'the server was replaced');
      await allReady(id, 3);
    });

    it('heals a dead worker (its VM failed): no drain wait, replaced, Ready', async () => {
      const inst = await instance(id);
      const worker = inst.instantiatedVnfInfo.vnfcInfo.filter((v: Json) => v.vduId === 'workerNode')[1];
      const server = serverOf(inst, worker.id);
      await simAdmin(`/_sim/servers/${server}/fail`);
      const name = Object.entries(await clusterNodes(id)).find(([, n]) => n.vnfcInfoId === worker.id)?.[0] as string;
      for (let i = 0; i < 200 && (await nodes())[name] !== false; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal((await nodes())[name], false, 'the dead worker\'s Node is NotReady');
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id] });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.notEqual(serverOf(await instance(id), worker.id), server);
      await allReady(id, 3);
    });

    it('a PodDisruptionBudget blocking the drain: FAILED_TEMP naming it; retry after it is relaxed completes', async () => {
      const inst = await instance(id);
      const worker = inst.instantiatedVnfInfo.vnfcInfo.find((v: Json) => v.vduId === 'workerNode');
      const name = Object.entries(await clusterNodes(id)).find(([, n]) => n.vnfcInfoId === worker.id)?.[0] as string;
      const pod = await labKubeReq('POST', '/api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'guarded', labels: { app: 'guarded' } }, spec: { nodeName: name, containers: [{ name: 'c', image: 'busybox' }] } });
      assert.equal(pod.status, 201, JSON.stringify(pod.body));
      const pdb = await labKubeReq('POST', '/apis/policy/v1/namespaces/default/poddisruptionbudgets', { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'guarded-pdb' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'guarded' } } } });
      assert.equal(pdb.status, 201, JSON.stringify(pdb.body));
      for (let i = 0; i < 200; i++) {
        const st = (await labKubeReq('GET', '/apis/policy/v1/namespaces/default/poddisruptionbudgets/guarded-pdb')).body;
        if (st?.status?.currentHealthy === 1) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id], additionalParams: { drain: { timeoutSeconds: 3 } } });
      assert.equal(occ.operationState, 'FAILED_TEMP');
      assert.match(occ.error.detail, /guarded-pdb/);
      assert.match(occ.error.detail, /guarded/);
      assert.equal((await nodes())[name], true, 'the node was not removed');
      // The operator relaxes the budget, then retries.
      const del = await labKubeReq('DELETE', '/apis/policy/v1/namespaces/default/poddisruptionbudgets/guarded-pdb');
      assert.ok(del.status < 300);
      const r = await call('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occ.id}/retry`);
      assert.equal(r.status, 202, JSON.stringify(r.body));
      await settle();
      const done = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${occ.id}`)).body;
      assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
      await allReady(id, 3);
    });

    it('scales workers out and in: the new node joins; the removed one is drained and deleted', async () => {
      const out = await lcm(`/vnflcm/v2/vnf_instances/${id}/scale`, request('scale-out.json'));
      assert.equal(out.operationState, 'COMPLETED', JSON.stringify(out.error));
      await allReady(id, 4);
      const before = Object.keys(await clusterNodes(id));
      const inn = await lcm(`/vnflcm/v2/vnf_instances/${id}/scale`, { ...request('scale-out.json'), type: 'SCALE_IN' });
      assert.equal(inn.operationState, 'COMPLETED', JSON.stringify(inn.error));
      await allReady(id, 3);
      const now = Object.keys(await clusterNodes(id));
      const removed = before.filter((n) => !now.includes(n));
      assert.equal(removed.length, 1);
      assert.equal((await nodes())[removed[0] as string], undefined, 'the removed node is deleted from the cluster');
    });

    it('refuses a master scale (400) and a heal of a non-node VNFC id (422) without an op occ', async () => {
      const r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'master_instance', numberOfSteps: 1 });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      const single = await call('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [Object.values(await clusterNodes(id)).find((n: Json) => n.role === 'master').vnfcInfoId] });
      assert.equal(single.status, 422, JSON.stringify(single.body));
      assert.match(single.body.detail, /1 or less|single|one master/i);
    });

    it('heals the whole VNF: new stack, new cluster, the old VIM replaced by a new one, one entry', async () => {
      const old = (await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.vimId;
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { additionalParams: { all: true } });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      const inst = await instance(id);
      const entries = Object.values(inst.vimConnectionInfo as Record<string, Json>).filter((e) => /KUBERNETES/.test(e.vimType));
      assert.equal(entries.length, 1);
      assert.notEqual(entries[0].vimId, old);
      const vims = await vnfm.ctx.vims.list();
      assert.equal(vims.find((v) => v.id === old), undefined, 'the old VIM is deleted');
      assert.equal(vims.filter((v) => v.name === `kubernetes_vim_${id}`).length, 1);
      await allReady(id, 3);
    });

    it('terminates: the VIM is deleted', async () => {
      const vimId = (await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.vimId;
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.equal((await vnfm.ctx.vims.list()).find((v) => v.id === vimId), undefined);
    });
  });

  describe('three masters (etcd + HAProxy on the masters, VIP), two workers', () => {
    let id = '';
    const masterIps = async () => Object.values(await clusterNodes(id)).filter((n: Json) => n.role === 'master').map((n: Json) => n.nicIp as string).sort();

    it('instantiates: 3 voting etcd members, every master\'s HAProxy lists all masters, Nodes Ready', async () => {
      const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'k8s-ha' });
      id = c.body.id;
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, request('instantiate-complex.json'));
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      const ips = await masterIps();
      assert.equal(ips.length, 3);
      const members = await etcdMembers(ips[0] as string);
      assert.deepEqual(Object.values(members), [false, false, false], JSON.stringify(members));
      const names = Object.keys(members).sort();
      for (const ip of ips) assert.deepEqual(await haproxyServers(ip), names);
      await allReady(id, 5);
      assert.match((await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.apiUrl, /:16443$/);
    });

    it('refuses two master targets at once (422, nothing changed)', async () => {
      const masters = Object.values(await clusterNodes(id)).filter((n: Json) => n.role === 'master');
      const r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: masters.slice(0, 2).map((n: Json) => n.vnfcInfoId) });
      assert.equal(r.status, 422, JSON.stringify(r.body));
    });

    for (const which of ['a non-leader', 'the leader'] as const) {
      it(`heals ${which} master: quorum kept, member replaced, survivors' HAProxy lists it again, Nodes Ready`, async () => {
        const ips = await masterIps();
        const status = await ssh(ips[0] as string, `${ETCDCTL} endpoint status --cluster -w json`);
        const leaderId = (JSON.parse(status.stdout) as Json[])[0].Status.leader;
        const endpoints = JSON.parse(status.stdout) as Json[];
        const leaderIp = new URL(endpoints.find((e) => e.Status.header.member_id === leaderId).Endpoint).hostname;
        const targetIp = which === 'the leader' ? leaderIp : (ips.find((ip) => ip !== leaderIp) as string);
        const [name, node] = Object.entries(await clusterNodes(id)).find(([, n]) => n.nicIp === targetIp) as [string, Json];
        const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [node.vnfcInfoId] });
        assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
        const survivor = ips.find((ip) => ip !== targetIp) as string;
        const members = await etcdMembers(survivor);
        assert.equal(Object.keys(members).length, 3, JSON.stringify(members));
        assert.ok(Object.values(members).every((l) => l === false), 'no learner left');
        assert.ok(name in members);
        for (const ip of ips) assert.deepEqual(await haproxyServers(ip), Object.keys(members).sort(), `HAProxy configuration of ${ip}`);
        // The survivors' running HAProxy serves the healed master (validated and reloaded).
        for (const ip of ips.filter((x) => x !== targetIp)) assert.deepEqual(await haproxyLive(ip), Object.keys(members).sort(), `running HAProxy of ${ip}`);
        assert.notEqual((await clusterNodes(id))[name].etcdMemberId, node.etcdMemberId, 'a new member id recorded');
        await allReady(id, 5);
      });
    }

    it('refuses to heal a healthy master while another master is down (quorum), then heals the dead one', async () => {
      const inst = await instance(id);
      const masters = Object.entries(await clusterNodes(id)).filter(([, n]) => n.role === 'master');
      const [deadName, dead] = masters[2] as [string, Json];
      const healthy = (masters[0] as [string, Json])[1];
      await simAdmin(`/_sim/servers/${serverOf(inst, dead.vnfcInfoId)}/fail`);
      for (let i = 0; i < 200 && (await nodes())[deadName] !== false; i++) await new Promise((r) => setTimeout(r, 100));
      const r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [healthy.vnfcInfoId] });
      if (r.status === 202) {
        await settle();
        const occ = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${String(r.location).split('/').pop()}`)).body;
        assert.equal(occ.operationState, 'FAILED_TEMP');
        assert.match(occ.error.detail, /quorum/i);
        assert.equal((await call('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occ.id}/fail`)).status, 200);
      } else {
        assert.equal(r.status, 422, JSON.stringify(r.body));
        assert.match(r.body.detail, /quorum/i);
      }
      const survivor = (masters[0] as [string, Json])[1].nicIp as string;
      assert.equal(Object.keys(await etcdMembers(survivor)).length, 3, 'no member was removed');
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [dead.vnfcInfoId] });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.deepEqual(Object.values(await etcdMembers(survivor)), [false, false, false]);
      await allReady(id, 5);
    });

    it('a heal whose infra step fails after the member was removed: retry resumes without removing anything twice', async () => {
      const masters = Object.entries(await clusterNodes(id)).filter(([, n]) => n.role === 'master');
      const [name, node] = masters[1] as [string, Json];
      await simAdmin('/_sim/heat/failures', { operation: 'update', count: 1, reason: 'injected: compute host lost' });
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [node.vnfcInfoId] });
      assert.equal(occ.operationState, 'FAILED_TEMP', JSON.stringify(occ));
      const survivor = (masters[0] as [string, Json])[1].nicIp as string;
      assert.equal(Object.keys(await etcdMembers(survivor)).includes(name), false, 'heal_start removed the member');
      const r = await call('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occ.id}/retry`);
      assert.equal(r.status, 202);
      await settle();
      const done = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${occ.id}`)).body;
      assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
      assert.deepEqual(Object.values(await etcdMembers(survivor)), [false, false, false]);
      await allReady(id, 5);
    });

    it('terminates', async () => {
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    });
  });

  it('no password in logs, in any process\'s command line (nor a join token), or in the database', async () => {
    assert.ok(!vnfm.logs.join('').includes(LAB_PASSWORD), 'not logged');
    assert.deepEqual([...seenInPs], [], 'no password nor join token on a command line');
    for (const table of ['op_occ', 'vnf_instance', 'mgmt_state', 'vim', 'outbox'] as const) {
      const dump = JSON.stringify(await vnfm.store.db.selectFrom(table).selectAll().execute());
      assert.ok(!dump.includes(LAB_PASSWORD), `not in ${table}`);
    }
  });
});
