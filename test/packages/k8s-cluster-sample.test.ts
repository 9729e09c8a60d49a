/**
 * The sample Kubernetes-cluster VNF package (`samples/k8s-cluster-kubeadm`): it onboards through
 * the VNFM API with both flavours (`simple`: 1 master, `complex`: 3 masters behind `vip_CP`), every
 * Vnflcm hook bound to the artifact `mgmt-drivers-kubernetes`; its BaseHOT builds in the simulated
 * Heat with the `nfv` parameter the OpenStack driver makes from the sample request files (one group
 * per aspect named like the aspect, servers and CP ports on the request's network, the VIP allowed
 * on the master ports); the request files name what the package has; the install script checks its
 * options before touching the host.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { buildNfvParameter } from '../../src/infra/openstack/hot-params.ts';
import type { FlavourModel, VnfPackageModel } from '../../src/packages/vnfd-model.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { csarOf, onboard, ROOT } from '../helpers/packages.ts';
import { call, login, type Session, settled, waitStack } from '../sim/openstack/helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: request files and Heat rows are free-form JSON
type Json = any;

const PKG = join(ROOT, 'samples/k8s-cluster-kubeadm');
const VNFD_ID = '12e46297-3008-4aac-a840-7d04c10e232b';
const HOOKS = ['heal_end', 'heal_start', 'instantiate_end', 'scale_end', 'scale_start', 'terminate_end'];

function request(name: string): Json {
  return JSON.parse(readFileSync(join(PKG, 'requests', name), 'utf8'));
}

describe('sample package k8s-cluster-kubeadm', () => {
  let vnfm: TestVnfm;
  let model: VnfPackageModel;
  let contents: Map<string, Buffer>;

  before(async () => {
    vnfm = await testVnfm();
    const pkg = await onboard(vnfm.app, csarOf(PKG), () => vnfm.ctx.packages.idle());
    assert.equal(pkg.vnfdId, VNFD_ID);
    assert.equal(pkg.vnfProductName, 'Sample Kubernetes Cluster');
    model = await vnfm.ctx.packages.vnfd(pkg.id as string);
    contents = await vnfm.ctx.packages.files(pkg.id as string);
  });
  after(async () => {
    await vnfm?.close();
  });

  it('onboards with both flavours, their VDUs, CPs, aspects and levels, without warnings', () => {
    assert.deepEqual(model.warnings, []);
    assert.deepEqual(Object.keys(model.flavours).sort(), ['complex', 'simple']);
    const sizes: Record<string, [number, number, number]> = { simple: [1, 3, 1], complex: [3, 5, 3] };
    for (const [id, [min, max, initial]] of Object.entries(sizes)) {
      const f = model.flavours[id] as FlavourModel;
      const master = f.vdus.masterNode;
      const worker = f.vdus.workerNode;
      assert.ok(master && worker, `${id}: VDUs`);
      assert.deepEqual([master.minInstances, master.maxInstances], [min, max], `${id}: masters`);
      assert.deepEqual([worker.minInstances, worker.maxInstances], [2, 4], `${id}: workers`);
      assert.deepEqual(Object.keys(f.extCps ?? {}).sort(), ['masterNode_CP1', 'workerNode_CP2'], `${id}: external CPs`);
      assert.equal(f.cps.masterNode_CP1?.vduId, 'masterNode');
      assert.equal(f.cps.workerNode_CP2?.vduId, 'workerNode');
      assert.deepEqual(Object.keys(f.scalingAspects).sort(), ['master_instance', 'worker_instance']);
      assert.deepEqual(f.scalingAspects.master_instance?.vduDeltas, { masterNode: { delta_1: 1 } });
      assert.deepEqual(f.scalingAspects.worker_instance?.vduDeltas, { workerNode: { delta_1: 1 } });
      assert.equal(f.defaultInstantiationLevelId, 'instantiation_level_1');
      assert.deepEqual(f.instantiationLevels.instantiation_level_1?.vduInstances, { masterNode: initial, workerNode: 2 });
      assert.deepEqual(f.instantiationLevels.instantiation_level_2?.vduInstances, { masterNode: max, workerNode: 4 });
      assert.equal(model.baseHotDirs[id]?.topTemplate, `BaseHOT/${id}/${id}_hot_top.yaml`);
    }
  });

  it('binds every hook of both flavours to the artifact mgmt-drivers-kubernetes (Scripts/kubernetes_mgmt.py, in the package)', () => {
    for (const id of ['simple', 'complex']) {
      const hooks = (model.flavours[id] as FlavourModel).lcmHooks;
      assert.deepEqual(Object.keys(hooks).sort(), HOOKS, id);
      for (const h of Object.values(hooks)) {
        assert.equal(h.artifactName, 'mgmt-drivers-kubernetes', `${id} ${h.hook}`);
        assert.equal(h.type, 'tosca.artifacts.Implementation.Python');
        assert.equal(h.file, 'Scripts/kubernetes_mgmt.py');
        assert.equal(h.fileInPackage, true);
      }
    }
  });

  it('request files: instantiate names the package install script and CPs of the flavour; scale names a worker aspect; heal names VNFCs', () => {
    for (const [file, flavourId, clusterCp] of [
      ['instantiate-simple.json', 'simple', 'masterNode_CP1'],
      ['instantiate-complex.json', 'complex', 'vip_CP'],
    ] as const) {
      const r = request(file);
      assert.equal(r.flavourId, flavourId);
      const f = model.flavours[flavourId] as FlavourModel;
      assert.ok(f.instantiationLevels[r.instantiationLevelId], file);
      assert.deepEqual(r.extVirtualLinks.flatMap((vl: Json) => vl.extCps.map((c: Json) => c.cpdId)).sort(), Object.keys(f.extCps ?? {}).sort());
      for (const vl of r.extVirtualLinks) assert.equal(vl.resourceId, 'lab-net');
      const p = r.additionalParams.k8s_cluster_installation_param;
      assert.equal(p.script_path, 'Scripts/install_k8s_cluster.sh');
      assert.match(String(contents.get(p.script_path)), /^#!\/bin\/bash\n/, 'the install script is in the onboarded package');
      assert.deepEqual(
        [p.master_node.aspect_id, p.master_node.ssh_cp_name, p.master_node.nic_cp_name, p.master_node.cluster_cp_name, p.master_node.username, p.master_node.password],
        ['master_instance', 'masterNode_CP1', 'masterNode_CP1', clusterCp, 'hvlab', '<lab password>'],
      );
      assert.deepEqual(
        [p.worker_node.aspect_id, p.worker_node.ssh_cp_name, p.worker_node.nic_cp_name, p.worker_node.username, p.worker_node.password],
        ['worker_instance', 'workerNode_CP2', 'workerNode_CP2', 'hvlab', '<lab password>'],
      );
    }
    const scale = request('scale-out.json');
    assert.deepEqual([scale.type, scale.aspectId, scale.numberOfSteps], ['SCALE_OUT', 'worker_instance', 1]);
    const heal = request('heal-worker.json');
    assert.ok(Array.isArray(heal.vnfcInstanceId) && heal.vnfcInstanceId.length === 1);
  });

  describe('BaseHOT in the simulated Heat', () => {
    let os: OpenStackSim;
    let s: Session;

    before(async () => {
      os = await startOpenStackSim({ heatDelayMs: 5 });
      s = await login(os);
    });
    after(async () => {
      await os?.close();
    });

    for (const [flavourId, masters] of [
      ['simple', 1],
      ['complex', 3],
    ] as const) {
      it(`flavour ${flavourId}: ${masters} master(s) and 2 workers in groups named like the aspects, CP ports on lab-net${flavourId === 'complex' ? ', the VIP allowed on every master port' : ''}`, async () => {
        const f = model.flavours[flavourId] as FlavourModel;
        const r = request(`instantiate-${flavourId}.json`);
        const level = f.instantiationLevels[r.instantiationLevelId];
        assert.ok(level);
        const nfv = buildNfvParameter({ flavour: f, vduCounts: level.vduInstances, extVirtualLinks: r.extVirtualLinks });
        const dir = join(PKG, 'BaseHOT', flavourId);
        const files: Record<string, string> = {};
        for (const n of readdirSync(join(dir, 'nested'))) files[n] = readFileSync(join(dir, 'nested', n), 'utf8');
        const template = readFileSync(join(dir, `${flavourId}_hot_top.yaml`), 'utf8');
        const top = parseYaml(template) as Json;
        assert.equal(top.resources.master_instance.type, 'OS::Heat::AutoScalingGroup');
        assert.equal(top.resources.worker_instance.type, 'OS::Heat::AutoScalingGroup');
        for (const a of ['master_instance', 'worker_instance']) {
          assert.equal(top.resources[`${a}_scale_out`].properties.scaling_adjustment, 1);
          assert.equal(top.resources[`${a}_scale_in`].properties.scaling_adjustment, -1);
        }
        const name = `k8s-${flavourId}`;
        const c = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: name, template, files, parameters: { nfv: JSON.stringify(nfv) } });
        assert.equal(c.status, 201, JSON.stringify(c.body));
        const url = `${s.heat}/stacks/${name}/${c.body.stack.id}`;
        const stack = await waitStack(s, url, settled);
        assert.equal(stack.stack_status, 'CREATE_COMPLETE', stack.stack_status_reason);
        const rows: Json[] = (await call('GET', `${url}/resources?nested_depth=2&with_detail=true`, s.token)).body.resources;
        const named = (n: string) => rows.filter((x) => x.resource_name === n);
        assert.equal(named('masterNode').length, masters);
        assert.equal(named('workerNode').length, 2);
        assert.ok(named('masterNode').every((x) => x.resource_type === 'OS::Nova::Server'));
        const ports = [...named('masterNode_CP1'), ...named('workerNode_CP2')];
        assert.equal(ports.length, masters + 2);
        for (const p of ports) assert.equal(p.attributes.network?.name, 'lab-net', `${p.resource_name} network`);
        if (flavourId === 'complex') {
          const vip = named('vip_CP')[0];
          assert.ok(vip, 'vip_CP in the top template');
          const vipIp = vip.attributes.fixed_ips[0].ip_address;
          assert.equal(vip.attributes.network?.name, 'lab-net');
          for (const p of named('masterNode_CP1')) assert.deepEqual(p.attributes.allowed_address_pairs.map((a: Json) => a.ip_address), [vipIp]);
          for (const p of named('workerNode_CP2')) assert.deepEqual(p.attributes.allowed_address_pairs ?? [], []);
        } else {
          assert.equal(named('vip_CP').length, 0);
        }
        assert.equal((await call('DELETE', url, s.token)).status, 204);
        await waitStack(s, url, (x) => x === 'DELETE_COMPLETE');
      });
    }
  });
});

describe('sample package k8s-cluster-kubeadm: install script argument checks', () => {
  const script = join(PKG, 'Scripts/install_k8s_cluster.sh');

  function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
    return new Promise((resolve) => {
      execFile('bash', [script, ...args], { env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : -1) : 0;
        resolve({ code, out: `${stdout}${stderr}` });
      });
    });
  }

  function result(out: string): Json {
    const line = out.split('\n').find((l) => l.startsWith('HEALVNFM-RESULT '));
    assert.ok(line, out);
    return JSON.parse(line.slice('HEALVNFM-RESULT '.length));
  }

  it('exits 255 with a HEALVNFM-RESULT error line when options are missing or malformed, before touching the host', async () => {
    const cases: [string[], RegExp][] = [
      [['-i', '10.0.0.5'], /one of -m <masters> or -w <worker IP> is required/],
      [['-m', '10.0.0.11'], /-i <cluster IP> is required/],
      [['-w', '10.0.0.21', '-i', '10.0.0.11'], /a worker needs -t <token> and -s <CA hash>/],
      [['-m', '10.0.0.11', '-i', '10.0.0.11', '-p', 'nonsense'], /-p: not a CIDR/],
      [['-m', '10.0.0.11,10.0.0.12', '-i', '10.0.0.80', '-t', 'x'], /none of the master addresses .* is on this host|a joining master needs/],
    ];
    for (const [args, why] of cases) {
      const r = await run(args);
      assert.equal(r.code, 255, `${args.join(' ')}: ${r.out}`);
      const res = result(r.out);
      assert.equal(res.joined, false);
      assert.match(res.error, why);
    }
  });

  it('a joining master must get token, CA hash and certificate key; the worker/master role and node name follow the address', async () => {
    const r = await run(['-m', '10.0.0.11,10.0.0.12', '-i', '10.0.0.80'], { K8S_NODE_IP: '10.0.0.12' });
    assert.equal(r.code, 255);
    const res = result(r.out);
    assert.deepEqual([res.role, res.node, res.ip], ['master', 'master12', '10.0.0.12']);
    assert.match(res.error, /a joining master needs -t <token>, -s <CA hash> and -k <certificate key>/);
  });
});
