/**
 * k8s-kubespray pieces without a lab: parameter validation (Tacker's keys, camelCase, overrides
 * that replace dicts), the PLAY RECAP parser and the verdict (exit code AND recap; an unreachable
 * host is a failure even with failed=0), the rendered inventory (Kubespray's groups, no secret),
 * the detached play command (no secret on it), and the driver's acceptance checks.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failedTasks, judgePlay, parseRecap, playCommand } from '../../../src/mgmt/drivers/k8s-kubespray/ansible.ts';
import { kubesprayConfig } from '../../../src/mgmt/drivers/k8s-kubespray/config.ts';
import { lbAddress, renderHostsYaml, renderVars, sprayLbOptions } from '../../../src/mgmt/drivers/k8s-kubespray/hooks.ts';
import { apiServerFrontend, composeLbConfig, defaultBase, lbOwner, reconcileOwner, renderOwnerSection } from '../../../src/mgmt/lb/index.ts';
import { effectiveSprayParam, installationParamOf, parseKubesprayParams, refusedOverrides } from '../../../src/mgmt/drivers/k8s-kubespray/params.ts';
import type { Inventory } from '../../../src/mgmt/drivers/k8s-common/inventory.ts';

const PW = 'node-secret-93f1';

function params(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    master_node: { aspect_id: 'master_instance', ssh_cp_name: 'masterNode_CP1', nic_cp_name: 'masterNode_CP1', username: 'ubuntu', password: PW, pod_cidr: '192.168.0.0/16', cluster_cidr: '10.199.187.0/24' },
    worker_node: { aspect_id: 'worker_instance', ssh_cp_name: 'workerNode_CP2', nic_cp_name: 'workerNode_CP2', username: 'ubuntu', password: PW },
    ansible: { ip_address: '10.10.0.50', username: 'ubuntu', password: PW, kubespray_root_path: '/home/ubuntu/kubespray-2.16.0', transferring_inventory_path: '/home/ubuntu/kubespray-2.16.0/inventory/mycluster' },
    external_lb_param: { ssh_cp_name: 'externalLB_FloatingIP', ssh_username: 'ubuntu', ssh_password: PW, script_path: 'Scripts/install_external_lb.sh' },
    ...over,
  };
}

const badRequest = (fn: () => unknown, re: RegExp) =>
  assert.throws(fn, (e: Error & { code?: string }) => {
    assert.equal(e.code, 'VNFM_ERR_API_BAD_REQUEST');
    assert.match(e.message, re);
    assert.ok(!e.message.includes(PW), 'no secret in the message');
    return true;
  });

describe('k8s-kubespray parameters', () => {
  it("accepts Tacker's sample (snake_case and camelCase) with defaults", () => {
    const p = parseKubesprayParams(params(), { instanceId: 'i1', packageFiles: ['Scripts/install_external_lb.sh'] });
    assert.equal(p.vimName, 'kubernetes_vim_i1');
    assert.equal(p.ansible.transferringInventoryPath, '/home/ubuntu/kubespray-2.16.0/inventory/mycluster');
    assert.equal(p.externalLb.sshCpName, 'externalLB_FloatingIP');
    const camel = installationParamOf({ k8sClusterInstallationParam: { masterNode: { sshCpName: 'm', username: 'u', password: PW }, workerNode: { sshCpName: 'w', username: 'u', password: PW }, ansible: { ipAddress: '10.0.0.5/32', username: 'u', password: PW, kubesprayRootPath: '/opt/ks', transferringInventoryPath: '/opt/inv/c1' }, externalLbParam: { sshIp: '10.0.0.9', sshUsername: 'u', sshPassword: PW } } });
    const q = parseKubesprayParams(camel, { instanceId: 'i2' });
    assert.equal(q.ansible.ipAddress, '10.0.0.5', 'a /32 network passes as its address (Tacker parses it as a network)');
    assert.equal(q.externalLb.sshIp, '10.0.0.9');
  });

  it('400 listing every problem: missing dicts and keys, bad CIDR, bad IP, root-level inventory, a script not in the package', () => {
    badRequest(() => parseKubesprayParams({}, { instanceId: 'i' }), /k8s_cluster_installation_param is required/);
    badRequest(() => parseKubesprayParams(params({ ansible: undefined, external_lb_param: undefined }), { instanceId: 'i' }), /ansible is required.*external_lb_param is required/);
    badRequest(() => parseKubesprayParams(params({ master_node: { ssh_cp_name: 'm', username: 'u', password: PW, pod_cidr: '10.0.0.0/99' } }), { instanceId: 'i' }), /master_node\.pod_cidr '10\.0\.0\.0\/99' is not a CIDR/);
    const a = params().ansible as Record<string, unknown>;
    badRequest(() => parseKubesprayParams(params({ ansible: { ...a, ip_address: 'ansible-host' } }), { instanceId: 'i' }), /ansible\.ip_address 'ansible-host' is not an IP address/);
    badRequest(() => parseKubesprayParams(params({ ansible: { ...a, transferring_inventory_path: '/tmp' } }), { instanceId: 'i' }), /too close to the root/);
    badRequest(() => parseKubesprayParams(params({ ansible: { ...a, transferring_inventory_path: 'relative/inv' } }), { instanceId: 'i' }), /must be an absolute path/);
    badRequest(() => parseKubesprayParams(params({ ansible: { ...a, password: undefined } }), { instanceId: 'i' }), /ansible\.password \(or private_key\) is required/);
    badRequest(() => parseKubesprayParams(params(), { instanceId: 'i', packageFiles: [] }), /script_path 'Scripts\/install_external_lb\.sh' is not a file of the VNF package/);
    badRequest(() => parseKubesprayParams(params({ external_lb_param: { ssh_username: 'u', ssh_password: PW } }), { instanceId: 'i' }), /external_lb_param\.ssh_cp_name \(or ssh_ip\) is required/);
  });

  it('scale / heal dicts replace the stored ones; a VNFC operation may not give master_node or proxy; a whole heal may', () => {
    const stored = { k8s_cluster_installation_param: params() };
    const e = effectiveSprayParam(stored, { k8s_cluster_installation_param: { worker_node: { ssh_cp_name: 'workerNode_CP2', username: 'admin', password: 'new-secret-1' } } });
    assert.deepEqual(e.overridden, ['worker_node']);
    assert.equal((e.param.worker_node as Record<string, unknown>).aspect_id, undefined, 'the dict is replaced, not merged');
    assert.ok(e.persist);
    assert.deepEqual(refusedOverrides({ k8s_cluster_installation_param: { master_node: {}, proxy: {} } }, false), ['master_node', 'proxy']);
    assert.deepEqual(refusedOverrides({ k8s_cluster_installation_param: { master_node: {} } }, true), []);
  });
});

const RECAP_OK = `PLAY [Bootstrap] ***

TASK [bootstrap-os | check the host answers] ***
ok: [master10]
ok: [worker11]

PLAY RECAP *********************************************************************
master10                   : ok=3    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
worker11                   : ok=2    changed=1    unreachable=0    failed=0    skipped=1    rescued=0    ignored=0
`;

const RECAP_DEAD = `TASK [reset | kubeadm reset] ***
fatal: [worker12]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: ssh: connect to host 10.87.0.12 port 22: Connection refused", "unreachable": true}

PLAY RECAP *********************************************************************
localhost                  : ok=1    changed=0    unreachable=0    failed=0    skipped=1    rescued=0    ignored=0
worker12                   : ok=1    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0
`;

const RECAP_FAILED = `TASK [fixture failure switch (scale)] ***
fatal: [worker11]: FAILED! => {"changed": false, "msg": "failure switch scale@worker11"}

NO MORE HOSTS LEFT ***

PLAY RECAP *********************************************************************
worker11                   : ok=0    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0
`;

describe('PLAY RECAP and the verdict', () => {
  it('parses every host of the last recap', () => {
    const r = parseRecap(RECAP_OK);
    assert.deepEqual(Object.keys(r ?? {}), ['master10', 'worker11']);
    assert.equal(r?.worker11?.skipped, 1);
    assert.equal(parseRecap('no recap here'), undefined);
  });

  it('success needs exit code 0 AND a clean recap', () => {
    assert.equal(judgePlay(0, RECAP_OK).ok, true);
    assert.equal(judgePlay(2, RECAP_OK).ok, false, 'a non-zero exit code fails even with a clean recap');
    assert.equal(judgePlay(0, 'killed before the recap').ok, false, 'no recap is a failure');
  });

  it("an unreachable host with failed=0 is a failure naming the host (Tacker's grep would pass it)", () => {
    const v = judgePlay(4, RECAP_DEAD);
    assert.equal(v.ok, false);
    assert.deepEqual(v.unreachableHosts, ['worker12']);
    assert.match(v.summary, /exit code 4 \(unreachable hosts\)/);
    assert.match(v.summary, /'reset \| kubeadm reset' on worker12/);
  });

  it('a failed task names the host and the task', () => {
    const v = judgePlay(2, RECAP_FAILED);
    assert.deepEqual(v.failedHosts, ['worker11']);
    assert.deepEqual(failedTasks(RECAP_FAILED).map((t) => [t.host, t.task]), [['worker11', 'fixture failure switch (scale)']]);
    assert.match(v.summary, /failed hosts: worker11/);
  });
});

describe('inventory and play command', () => {
  const p = parseKubesprayParams(params(), { instanceId: 'i1' });
  const node = (name: string, role: 'master' | 'worker', ip: string) => ({ name, role, vnfcResourceInfoId: `r-${name}`, vduId: role === 'master' ? 'masterNode' : 'workerNode', resourceId: `s-${name}`, nicIp: ip, sshIp: ip });
  const inv: Inventory = { masters: [node('master10', 'master', '10.0.0.10')], workers: [node('worker11', 'worker', '10.0.0.11'), node('worker12', 'worker', '10.0.0.12')], masterVduId: 'masterNode', workerVduId: 'workerNode' };

  it("hosts.yaml has Kubespray's groups and no password", () => {
    const y = renderHostsYaml(inv, p);
    for (const g of ['kube_control_plane:', 'etcd:', 'kube_node:', 'k8s_cluster:', 'calico_rr:']) assert.ok(y.includes(g), g);
    assert.match(y, /worker12:\n\s+ansible_host: 10\.0\.0\.12\n\s+ip: 10\.0\.0\.12/);
    assert.ok(!y.includes(PW));
    const v = renderVars(p, '10.0.0.250', 8383);
    assert.match(v, /kube_pods_subnet: 192\.168\.0\.0\/16/);
    assert.match(v, /address: 10\.0\.0\.250/);
  });

  it('the play command carries the confirmation variables and --limit, never a secret', () => {
    const cmd = playCommand({ runId: 'r1', playbook: '/ks/remove-node.yml', inventory: '/inv/hosts.yaml', secretInventory: { all: { hosts: { worker11: { ansible_password: PW } } } }, extraVars: { node: 'worker11', delete_nodes_confirmation: 'yes', skip_confirmation: 'true' }, limit: 'worker11', runDir: '/inv/.healvnfm/runs/r1', knownHosts: '/inv/.healvnfm/known_hosts' });
    assert.match(cmd, /'-e' 'node=worker11'/);
    assert.match(cmd, /'-e' 'delete_nodes_confirmation=yes'/);
    assert.match(cmd, /'--limit=worker11'/);
    assert.ok(!cmd.includes(PW));
  });
});

describe('the load balancer', () => {
  /** An LB whose haproxy.cfg (no apply record) is `cfg`: every other command fails. */
  const fakeLb = (host: string, cfg: string) =>
    ({
      host,
      hostKeyFingerprint: 'SHA256:x',
      closed: false,
      exec: async (cmd: string) => {
        if (cmd.includes('haproxy.cfg.healvnfm.json')) return { code: 3, stdout: '', stderr: '__healvnfm_absent__' };
        if (cmd.includes('/etc/haproxy/haproxy.cfg')) return { code: 0, stdout: cfg, stderr: '' };
        return { code: 1, stdout: '', stderr: `unexpected: ${cmd}` };
      },
      run: async () => {
        throw new Error('nothing may be changed');
      },
      upload: async () => {
        throw new Error('nothing may be uploaded');
      },
      download: async () => Buffer.from(''),
      close: () => undefined,
    }) as never;

  it('a port another owner publishes is refused with a message naming the LB once (by its address)', async () => {
    const other = lbOwner('cnf', 'c0ffee00-0000-4000-8000-000000000001');
    const section = renderOwnerSection({ owner: other, frontends: [apiServerFrontend({ masters: [{ name: 'master9', address: '10.0.0.9' }], bind: 8383, port: 6443, name: 'other-api' })] });
    const cfg = composeLbConfig(defaultBase({ runtimeSocket: '/etc/haproxy/admin.sock' }), new Map([[other, section]]));
    const owner = lbOwner('cluster', 'i1');
    const frontends = [apiServerFrontend({ masters: [{ name: 'master10', address: '10.0.0.10' }], bind: 8383, port: 6443 })];
    await assert.rejects(reconcileOwner(fakeLb('10.0.0.250', cfg), { owner, frontends }, sprayLbOptions(kubesprayConfig(undefined))), (e: Error) => {
      assert.match(e.message, /^the load balancer 10\.0\.0\.250 cannot publish cluster-i1: /);
      assert.doesNotMatch(e.message, /load balancer load balancer/);
      return true;
    });
  });
});

describe("the LB's SSH address", () => {
  const inst = {
    id: 'i1',
    instantiatedVnfInfo: {
      vnfcResourceInfo: [
        { id: 'lb-1', vduId: 'externalLB', computeResource: { resourceId: 'srv-lb' }, metadata: { cpAddresses: { externalLB_CP3: { fixed: ['10.0.0.30'], floating: ['172.24.4.30'] } } } },
        { id: 'm-1', vduId: 'masterNode', computeResource: { resourceId: 'srv-m' }, metadata: { cpAddresses: { masterNode_CP1: { fixed: ['10.0.0.10'], floating: [] } } } },
      ],
    },
  } as never;
  const withLb = (lb: Record<string, unknown>) => parseKubesprayParams(params({ external_lb_param: { ssh_username: 'ubuntu', ssh_password: PW, ...lb } }), { instanceId: 'i1' });

  it("ssh_cp_name naming the LB's port: its fixed address though it has a floating IP (as Tacker); ssh_address: floating for the floating one", () => {
    assert.equal(lbAddress(inst, withLb({ ssh_cp_name: 'externalLB_CP3' })), '10.0.0.30');
    assert.equal(lbAddress(inst, withLb({ ssh_cp_name: 'externalLB_CP3', ssh_address: 'floating' })), '172.24.4.30');
    assert.throws(() => lbAddress(inst, withLb({ ssh_cp_name: 'masterNode_CP1', ssh_address: 'floating' })), /'masterNode_CP1' has no floating IP/);
    assert.equal(lbAddress(inst, withLb({ ssh_ip: '10.9.9.9', ssh_cp_name: 'externalLB_CP3' })), '10.9.9.9', 'ssh_ip wins');
    badRequest(() => withLb({ ssh_cp_name: 'externalLB_CP3', ssh_address: 'public' }), /external_lb_param\.ssh_address must be 'fixed' or 'floating'/);
  });
});
