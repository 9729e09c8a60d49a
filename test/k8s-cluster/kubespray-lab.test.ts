/**
 * Kubespray cluster VNFs on the live-VM lab (stage `lab`): the sample package
 * `samples/k8s-cluster-kubespray` instantiated, healed, scaled and terminated through the VNFM API.
 * The built-in `k8s-kubespray` driver runs the real `ansible-playbook` on the lab's Ansible server
 * (a lab host) with the Kubespray-shaped fixture tree `test/fixtures/kubespray`, whose tasks call the
 * lab's kubeadm stand-in on the VNF's "VMs" over real SSH; the external LB is the lab's LB host
 * (real HAProxy, configured through the LB reconciler).
 *
 * Each scenario asserts what the API shows and what the hosts really are (Nodes, the LB's
 * HAProxy configuration, the Ansible runs on the Ansible server).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { csarOf, onboard, ROOT } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { sampleCommandLines, sshRun } from '../lab/lab-helpers.ts';
import { type Json, labInfo as labInfoOf, labKubernetes, serverOf, vnfmApi } from './cluster-lab.ts';

const lab = await stage('lab');
if (!lab.skip) await labTestsExclusive();

const PKG = join(ROOT, 'samples/k8s-cluster-kubespray');
const FIXTURE = join(ROOT, 'test/fixtures/kubespray');
const LAB_PASSWORD = 'lab-pass-7c1e93b5';

describe('k8s-kubespray cluster VNFs on the lab', { skip: lab.skip }, () => {
  let vnfm: TestVnfm;
  let osVimId = '';
  let vnfdId = '';
  let dataDir = '';
  let work = '';
  let sprayRoot = '';
  let lbIp = '';
  let ansibleIp = '';

  const { call, settle, lcm, instance, clusterNodes, simAdmin } = vnfmApi(() => vnfm, 900_000);
  const kube = labKubernetes(() => labInfoOf(vnfm));
  const labKubeReq = kube.req;
  const nodes = kube.nodes;
  const labInfo = () => labInfoOf(vnfm);

  const request = (name: string, inventory: string): Json => {
    const text = readFileSync(join(PKG, 'requests', name), 'utf8')
      .replaceAll('<lab password>', LAB_PASSWORD)
      .replaceAll('<OpenStack VIM id>', osVimId)
      .replaceAll('<Ansible server address>', ansibleIp)
      .replaceAll('<LB address>', lbIp)
      .replaceAll('<Kubespray root path>', sprayRoot)
      .replaceAll('<inventory path>', inventory)
      .replaceAll('"<VIM name>"', `"kubespray-${inventory.split('/').pop()}"`);
    return JSON.parse(text);
  };

  const ssh = (ip: string, cmd: string) => sshRun(ip, 'hvlab', LAB_PASSWORD, cmd);
  /** Nodes of the cluster as the VNFM lists them through the registered VIM (the LB's API frontend). */
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
  /** The servers of a backend in the LB's configuration file. */
  const lbConfig = async (): Promise<string> => (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
  const backendServers = (cfg: string, backend: string): string[] => {
    const at = cfg.search(new RegExp(`^backend ${backend.replace(/[.]/g, '\\.')}$`, 'm'));
    if (at < 0) return [];
    const rest = cfg.slice(at).split('\n').slice(1);
    const out: string[] = [];
    for (const l of rest) {
      const m = /^\s+server\s+(\S+)\s/.exec(l);
      if (m) out.push(m[1] as string);
      else if (/^\S/.test(l)) break;
    }
    return out.sort();
  };
  const nodePortBackend = async (): Promise<string[]> => {
    const cfg = await lbConfig();
    const name = /^backend (np_\S+_default_kubespray-web_\d+)/m.exec(cfg)?.[1];
    return name ? backendServers(cfg, name) : [];
  };

  const seenInPs = new Set<string>();
  let stopSampling: (() => void) | undefined;

  before(async () => {
    dataDir = mkdtempSync('/tmp/vnfm-kubespray-lab-');
    work = mkdtempSync('/tmp/hvks-');
    chmodSync(work, 0o755);
    sprayRoot = join(work, 'kubespray');
    cpSync(FIXTURE, sprayRoot, { recursive: true });
    mkdirSync(join(sprayRoot, 'fail-switch'));
    mkdirSync(join(sprayRoot, 'unreachable-switch'));
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
    const sh = labInfo().serviceHosts;
    assert.ok(sh, 'the lab has its service hosts');
    lbIp = sh.lb;
    ansibleIp = sh.ansible;
    osVimId = (await vnfm.ctx.vims.list()).find((v) => v.name === 'sim-openstack')?.id ?? '';
    assert.ok(osVimId);
    const pkg = await onboard(vnfm.app, csarOf(PKG), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
    // a NodePort Service of the cluster (published on the LB with the workers as backends)
    const svc = await labKubeReq('POST', '/api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kubespray-web' }, spec: { type: 'NodePort', selector: { app: 'kubespray-web' }, ports: [{ port: 80, protocol: 'TCP' }] } });
    assert.ok(svc.status === 201 || svc.status === 409, JSON.stringify(svc.body));
    stopSampling = sampleCommandLines((line) => {
      if (line.includes(LAB_PASSWORD)) seenInPs.add(line);
    });
  });
  after(async () => {
    stopSampling?.();
    await labKubeReq('DELETE', '/api/v1/namespaces/default/services/kubespray-web').catch(() => undefined);
    await vnfm?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  describe('one master, two workers, the external LB', () => {
    let id = '';
    let inventory = '';

    it('refuses bad parameters at acceptance: unknown ssh_cp_name (400), bad CIDR (400)', async () => {
      const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'kubespray-bad' });
      const good = request('instantiate.json', join(work, 'inventories', 'bad'));
      const badCidr = structuredClone(good);
      badCidr.additionalParams.k8s_cluster_installation_param.master_node.pod_cidr = '10.0.0.0/99';
      const r1 = await call('POST', `/vnflcm/v2/vnf_instances/${c.body.id}/instantiate`, badCidr);
      assert.equal(r1.status, 400, JSON.stringify(r1.body));
      assert.match(r1.body.detail, /master_node\.pod_cidr/);
      const badCp = structuredClone(good);
      badCp.additionalParams.k8s_cluster_installation_param.worker_node.ssh_cp_name = 'noSuchCp';
      badCp.additionalParams.k8s_cluster_installation_param.worker_node.nic_cp_name = 'noSuchCp';
      const r2 = await call('POST', `/vnflcm/v2/vnf_instances/${c.body.id}/instantiate`, badCp);
      assert.equal(r2.status, 400, JSON.stringify(r2.body));
      assert.match(r2.body.detail, /noSuchCp/);
      assert.ok(!JSON.stringify([r1.body, r2.body]).includes(LAB_PASSWORD));
      assert.equal((await call('DELETE', `/vnflcm/v2/vnf_instances/${c.body.id}`)).status, 204);
    });

    it('instantiates: inventory, cluster.yml by Ansible, LB frontends, VIM registered at the LB address, Nodes Ready through it', async () => {
      const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'kubespray-1' });
      id = c.body.id;
      inventory = join(work, 'inventories', 'cluster1');
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, request('instantiate.json', inventory));
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.ok(!JSON.stringify(occ).includes(LAB_PASSWORD), 'password masked in the op occ');
      const inst = await instance(id);
      const k8s = inst.instantiatedVnfInfo.metadata.k8sCluster;
      assert.equal(k8s.apiUrl, `https://${lbIp}:8383`);
      const entries = Object.values(inst.vimConnectionInfo as Record<string, Json>).filter((e) => /KUBERNETES/.test(e.vimType));
      assert.equal(entries.length, 1);
      const vim = (await vnfm.ctx.vims.list()).find((v) => v.id === k8s.vimId);
      assert.ok(vim);
      assert.ok(vim.config.sslCaCert?.includes('BEGIN CERTIFICATE'), 'registered with the cluster CA');
      await allReadyViaVim(id, 3);
      // the LB: API frontend on 8383 to the master, the NodePort frontend to both workers
      const cfg = await lbConfig();
      assert.deepEqual(backendServers(cfg, 'kubernetes-apiserver'), Object.entries(await clusterNodes(id)).filter(([, n]) => n.role === 'master').map(([n]) => n));
      assert.deepEqual(await nodePortBackend(), Object.entries(await clusterNodes(id)).filter(([, n]) => n.role === 'worker').map(([n]) => n).sort());
      // the inventory on the Ansible server: hosts.yaml with Kubespray's groups, no secret left
      const hosts = await ssh(ansibleIp, `cat ${inventory}/hosts.yaml`);
      for (const g of ['kube_control_plane', 'kube_node', 'etcd', 'k8s_cluster']) assert.match(hosts.stdout, new RegExp(`${g}:`));
      const leak = await ssh(ansibleIp, `grep -rl ${LAB_PASSWORD} ${inventory} ; find ${inventory} -name secrets.yaml`);
      assert.equal(leak.stdout.trim(), '', 'no password and no secret inventory left on the Ansible server');
      const conf = await ssh(Object.values(await clusterNodes(id)).find((n: Json) => n.role === 'master').nicIp, 'ls /tmp/config 2>&1; ls ~/.kube/config 2>&1');
      assert.doesNotMatch(conf.stdout, /^\/tmp\/config$/m, 'no kubeconfig copy left on the master');
    });

    it('refuses a master heal target (422 naming the reason) and a second cluster on the same inventory path (422)', async () => {
      const master = Object.values(await clusterNodes(id)).find((n: Json) => n.role === 'master');
      const r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [master.vnfcInfoId] });
      assert.equal(r.status, 422, JSON.stringify(r.body));
      assert.match(r.body.detail, /workers only/);
      const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'kubespray-dup' });
      const dup = await call('POST', `/vnflcm/v2/vnf_instances/${c.body.id}/instantiate`, request('instantiate.json', inventory));
      assert.equal(dup.status, 422, JSON.stringify(dup.body));
      assert.match(dup.body.detail, /transferring_inventory_path/);
      assert.equal((await call('DELETE', `/vnflcm/v2/vnf_instances/${c.body.id}`)).status, 204);
    });

    it('heals a live worker: drained, remove-node.yml, replaced, facts + scale --limit, Ready through the VIM', async () => {
      const inst = await instance(id);
      const worker = inst.instantiatedVnfInfo.vnfcInfo.find((v: Json) => v.vduId === 'workerNode');
      const before = serverOf(inst, worker.id);
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id] });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.notEqual(serverOf(await instance(id), worker.id), before, 'the server was replaced');
      await allReadyViaVim(id, 3);
      assert.equal((await nodePortBackend()).length, 2);
    });

    it('heals a dead worker: offline-node recipe, Node gone then back, Ready, LB backend', async () => {
      const inst = await instance(id);
      const worker = inst.instantiatedVnfInfo.vnfcInfo.filter((v: Json) => v.vduId === 'workerNode')[1];
      const server = serverOf(inst, worker.id);
      await simAdmin(`/_sim/servers/${server}/fail`);
      const name = Object.entries(await clusterNodes(id)).find(([, n]) => n.vnfcInfoId === worker.id)?.[0] as string;
      for (let i = 0; i < 300 && (await nodes())[name] !== false; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal((await nodes())[name], false, "the dead worker's Node is NotReady");
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id] });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.notEqual(serverOf(await instance(id), worker.id), server);
      await allReadyViaVim(id, 3);
      assert.ok((await nodePortBackend()).includes(name), 'the healed worker is an LB backend again');
      // the remove-node run used the offline recipe
      const runs = await ssh(ansibleIp, `grep -l "reset_nodes=false" ${inventory}/.healvnfm/runs/*/run.sh`);
      assert.match(runs.stdout, /remove-node/);
    });

    it('scales workers out and in: the LB backend follows, the removed Node is gone', async () => {
      const out = await lcm(`/vnflcm/v2/vnf_instances/${id}/scale`, request('scale-out.json', inventory));
      assert.equal(out.operationState, 'COMPLETED', JSON.stringify(out.error));
      await allReadyViaVim(id, 4);
      assert.equal((await nodePortBackend()).length, 3);
      const before = Object.keys(await clusterNodes(id));
      const scaleLimit = await ssh(ansibleIp, `grep -h -- "--limit=" ${inventory}/.healvnfm/runs/*scale*/run.sh`);
      assert.match(scaleLimit.stdout, /--limit=.?worker\d+/, 'scale.yml ran with --limit');
      const inn = await lcm(`/vnflcm/v2/vnf_instances/${id}/scale`, { ...request('scale-out.json', inventory), type: 'SCALE_IN' });
      assert.equal(inn.operationState, 'COMPLETED', JSON.stringify(inn.error));
      await allReadyViaVim(id, 3);
      const now = Object.keys(await clusterNodes(id));
      const removed = before.filter((n) => !now.includes(n));
      assert.equal(removed.length, 1);
      assert.equal((await nodes())[removed[0] as string], undefined, 'the removed Node is deleted');
      assert.ok(!(await nodePortBackend()).includes(removed[0] as string), 'no LB backend for the removed worker');
    });

    /** Retries a FAILED_TEMP op; it must complete. */
    const retryToCompleted = async (opId: string) => {
      const r = await call('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`);
      assert.equal(r.status, 202, JSON.stringify(r.body));
      await settle();
      const done = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).body;
      assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
    };
    /** Heals a worker with the fixture switch `<kind>/scale@<worker>` set: FAILED_TEMP (checked by `check`); then, the switch gone, retry -> COMPLETED. */
    const healThroughSwitch = async (kind: 'fail-switch' | 'unreachable-switch', check: (detail: string, node: string) => void) => {
      const inst = await instance(id);
      const worker = inst.instantiatedVnfInfo.vnfcInfo.find((v: Json) => v.vduId === 'workerNode');
      const name = Object.entries(await clusterNodes(id)).find(([, n]) => n.vnfcInfoId === worker.id)?.[0] as string;
      const sw = join(sprayRoot, kind, `scale@${name}`);
      writeFileSync(sw, '');
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id] });
      assert.equal(occ.operationState, 'FAILED_TEMP');
      check(occ.error.detail, name);
      rmSync(sw);
      await retryToCompleted(occ.id);
      await allReadyViaVim(id, 3);
    };

    it('a failing play: FAILED_TEMP naming the host and the task; retry after the cause is gone completes', async () => {
      await healThroughSwitch('fail-switch', (detail, name) => {
        assert.match(detail, new RegExp(name));
        assert.match(detail, /failure switch \(scale\)/);
      });
    });

    it('a play that leaves a host unreachable: FAILED_TEMP naming the host; retry once it answers completes', async () => {
      await healThroughSwitch('unreachable-switch', (detail, name) => {
        // 4 when a play only has unreachable hosts; 2 here, as with Kubespray's own plays (any_errors_fatal)
        assert.match(detail, /exit code [24] /);
        assert.match(detail, new RegExp(`unreachable hosts: ${name}`));
        assert.match(detail, /fixture reachability check \(scale\)/);
      });
    });

    it('the Ansible server unreachable: FAILED_TEMP naming it before anything changed; retry once it answers completes', async () => {
      const url = (vnfm.ctx as { simCloud?: { openstackUrl: string } }).simCloud?.openstackUrl;
      const st = (await (await fetch(`${url}/_sim/state`, { headers: { 'x-sim-admin-secret': 'sim-admin-secret' } })).json()) as Json;
      const ansibleServer = (st.servers as Json[]).find((x) => x.name === 'hvlab-ansible')?.id as string;
      assert.ok(ansibleServer, 'the Ansible server is a server of the simulated cloud');
      const inst = await instance(id);
      const worker = inst.instantiatedVnfInfo.vnfcInfo.find((v: Json) => v.vduId === 'workerNode');
      const server = serverOf(inst, worker.id);
      const runsBefore = (await ssh(ansibleIp, `ls ${inventory}/.healvnfm/runs | wc -l`)).stdout.trim();
      await simAdmin(`/_sim/servers/${ansibleServer}/fail`);
      let opId = '';
      try {
        const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [worker.id] });
        opId = occ.id;
        assert.equal(occ.operationState, 'FAILED_TEMP');
        assert.equal(occ.error.status, 503, JSON.stringify(occ.error));
        assert.match(occ.error.detail, new RegExp(`Ansible server ${ansibleIp.replaceAll('.', '\\.')}`));
        assert.equal(serverOf(await instance(id), worker.id), server, 'the worker was not touched');
      } finally {
        await simAdmin(`/_sim/servers/${ansibleServer}/recover`);
      }
      await retryToCompleted(opId);
      assert.notEqual(serverOf(await instance(id), worker.id), server, 'the retried heal replaced the worker');
      assert.ok(Number((await ssh(ansibleIp, `ls ${inventory}/.healvnfm/runs | wc -l`)).stdout.trim()) > Number(runsBefore), 'the retry ran the plays');
      await allReadyViaVim(id, 3);
    });

    it('heals the whole VNF: inventory rebuilt, new cluster, the old VIM replaced, one entry', async () => {
      const old = (await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.vimId;
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, { additionalParams: { all: true } });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      const inst = await instance(id);
      const entries = Object.values(inst.vimConnectionInfo as Record<string, Json>).filter((e) => /KUBERNETES/.test(e.vimType));
      assert.equal(entries.length, 1);
      assert.notEqual(entries[0].vimId, old);
      assert.equal((await vnfm.ctx.vims.list()).find((v) => v.id === old), undefined);
      await allReadyViaVim(id, 3);
    });

    it('terminates: VIM deleted, the cluster section removed from the LB, the inventory removed', async () => {
      const vimId = (await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.vimId;
      const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
      assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
      assert.equal((await vnfm.ctx.vims.list()).find((v) => v.id === vimId), undefined);
      assert.doesNotMatch(await lbConfig(), new RegExp(`cluster-${id}`));
      const ls = await ssh(ansibleIp, `test -e ${inventory} && echo present || echo gone`);
      assert.equal(ls.stdout.trim(), 'gone');
    });
  });

  it('no password in logs, in any process command line, or in the database', async () => {
    assert.ok(!vnfm.logs.join('').includes(LAB_PASSWORD), 'not logged');
    assert.deepEqual([...seenInPs], [], 'never on a command line');
    for (const table of ['op_occ', 'vnf_instance', 'mgmt_state', 'vim', 'outbox'] as const) {
      const dump = JSON.stringify(await vnfm.store.db.selectFrom(table).selectAll().execute());
      assert.ok(!dump.includes(LAB_PASSWORD), `not in ${table}`);
    }
  });
});
