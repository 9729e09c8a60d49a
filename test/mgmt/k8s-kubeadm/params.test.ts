/**
 * k8s-kubeadm parameters: camelCase -> snake_case normalisation, validation table (400 listing
 * every problem, never echoing a password), defaults, override merging (flat pairs and nested
 * dicts) and the drain parameters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import {
  checkFlatOverrides,
  DEFAULT_POD_CIDR,
  DEFAULT_SERVICE_CIDR,
  drainParamsOf,
  effectiveInstallationParam,
  installationParamOf,
  isCidr,
  normalizeKeys,
  parseKubeadmParams,
  snakeCase,
} from '../../../src/mgmt/drivers/k8s-kubeadm/params.ts';

const base = () => ({
  k8s_cluster_installation_param: {
    script_path: 'Scripts/install_k8s_cluster.sh',
    master_node: { aspect_id: 'master_instance', ssh_cp_name: 'masterNode_CP1', nic_cp_name: 'masterNode_CP1', username: 'ubuntu', password: 'm-secret-pw', cluster_cp_name: 'vip_CP' },
    worker_node: { aspect_id: 'worker_instance', ssh_cp_name: 'workerNode_CP2', nic_cp_name: 'workerNode_CP2', username: 'ubuntu', password: 'w-secret-pw' },
  },
});
const files = ['Definitions/x.yaml', 'Scripts/install_k8s_cluster.sh'];
const ctx = { instanceId: 'inst-1', packageFiles: files };

function badRequest(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(isVnfmError(e, 'VNFM_ERR_API_BAD_REQUEST'), `expected 400, got ${String(e)}`);
    assert.equal((e as { httpStatus: number }).httpStatus, 400);
    return (e as Error).message;
  }
  assert.fail('expected a 400');
}

describe('k8s-kubeadm parameters', () => {
  it('converts camelCase keys to snake_case, the snake_case twin winning', () => {
    assert.equal(snakeCase('k8sClusterInstallationParam'), 'k8s_cluster_installation_param');
    assert.equal(snakeCase('sshCpName'), 'ssh_cp_name');
    assert.equal(snakeCase('k8sNodeCidr'), 'k8s_node_cidr');
    assert.equal(snakeCase('lcm-operation-user-data'), 'lcm-operation-user-data');
    const n = normalizeKeys({ masterNode: { sshCpName: 'a', podCidr: '10.0.0.0/8' }, master_node: { ssh_cp_name: 'b' } }) as Record<string, Record<string, string>>;
    assert.deepEqual(n.master_node, { ssh_cp_name: 'b', pod_cidr: '10.0.0.0/8' });
  });

  it('accepts the Tacker v1 API spelling (camelCase) and applies the defaults', () => {
    const camel = {
      k8sClusterInstallationParam: {
        scriptPath: 'Scripts/install_k8s_cluster.sh',
        masterNode: { sshCpName: 'masterNode_CP1', nicCpName: 'masterNode_CP1', username: 'ubuntu', password: 'pw1', clusterCpName: 'masterNode_CP1' },
        workerNode: { sshCpName: 'workerNode_CP2', nicCpName: 'workerNode_CP2', username: 'ubuntu', password: 'pw2' },
      },
    };
    const p = parseKubeadmParams(installationParamOf(camel), ctx);
    assert.equal(p.vimName, 'kubernetes_vim_inst-1');
    assert.equal(p.masterNode.podCidr, DEFAULT_POD_CIDR);
    assert.equal(p.masterNode.clusterCidr, DEFAULT_SERVICE_CIDR);
    assert.equal(p.masterNode.sshCpName, 'masterNode_CP1');
    assert.equal(p.workerNode.password, 'pw2');
    assert.equal(p.scriptPath, 'Scripts/install_k8s_cluster.sh');
  });

  it('validation table', () => {
    const cases: [string, (b: ReturnType<typeof base>) => void, RegExp][] = [
      ['no script_path', (b) => delete (b.k8s_cluster_installation_param as Record<string, unknown>).script_path, /script_path is required/],
      ['script not in the package', (b) => (b.k8s_cluster_installation_param.script_path = 'Scripts/missing.sh'), /not a file of the VNF package/],
      ['no master username', (b) => delete (b.k8s_cluster_installation_param.master_node as Record<string, unknown>).username, /master_node\.username is required/],
      ['no worker password nor key', (b) => delete (b.k8s_cluster_installation_param.worker_node as Record<string, unknown>).password, /worker_node\.password \(or private_key\) is required/],
      ['no worker ssh_cp_name', (b) => delete (b.k8s_cluster_installation_param.worker_node as Record<string, unknown>).ssh_cp_name, /worker_node\.ssh_cp_name is required/],
      ['no cluster_cp_name', (b) => delete (b.k8s_cluster_installation_param.master_node as Record<string, unknown>).cluster_cp_name, /cluster_cp_name is required/],
      ['bad pod CIDR', (b) => ((b.k8s_cluster_installation_param.master_node as Record<string, unknown>).pod_cidr = '192.168.0.0/33'), /pod_cidr '192\.168\.0\.0\/33' is not a CIDR/],
      ['bad service CIDR', (b) => ((b.k8s_cluster_installation_param.master_node as Record<string, unknown>).cluster_cidr = 'ten/8'), /cluster_cidr 'ten\/8' is not a CIDR/],
      ['no master_node', (b) => delete (b.k8s_cluster_installation_param as Record<string, unknown>).master_node, /master_node is required/],
    ];
    for (const [what, mutate, re] of cases) {
      const b = base();
      mutate(b);
      const msg = badRequest(() => parseKubeadmParams(installationParamOf(b), ctx));
      assert.match(msg, re, what);
      assert.doesNotMatch(msg, /secret-pw/, `${what}: a password leaked into the message`);
    }
    // several problems at once are all listed
    const b = base();
    delete (b.k8s_cluster_installation_param as Record<string, unknown>).script_path;
    delete (b.k8s_cluster_installation_param.worker_node as Record<string, unknown>).username;
    const msg = badRequest(() => parseKubeadmParams(installationParamOf(b), ctx));
    assert.match(msg, /script_path is required.*worker_node\.username is required/);
    // nothing at all
    assert.match(badRequest(() => parseKubeadmParams({}, ctx)), /k8s_cluster_installation_param is required/);
  });

  it('accepts private_key beside password, Tacker CIDRs with host bits, and keeps ignored keys', () => {
    const b = base() as unknown as { k8s_cluster_installation_param: Record<string, Record<string, unknown>> };
    delete b.k8s_cluster_installation_param.worker_node?.password;
    (b.k8s_cluster_installation_param.worker_node as Record<string, unknown>).private_key = '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----';
    (b.k8s_cluster_installation_param.master_node as Record<string, unknown>).pod_cidr = '192.168.3.0/16';
    b.k8s_cluster_installation_param.helm_installation_script_path = 'Scripts/helm.sh' as never;
    b.k8s_cluster_installation_param.storage_server = {} as never;
    const p = parseKubeadmParams(installationParamOf(b), ctx);
    assert.ok(p.workerNode.privateKey?.startsWith('-----BEGIN'));
    assert.equal(p.workerNode.password, undefined);
    assert.equal(p.masterNode.podCidr, '192.168.3.0/16');
    assert.deepEqual(p.ignored, ['helm_installation_script_path', 'storage_server']);
    assert.ok(isCidr('fd00::/64'));
    assert.ok(!isCidr('10.0.0.1'));
  });

  it('merges flat credential overrides (both halves required) and returns them to persist', () => {
    const stored = base();
    const eff = effectiveInstallationParam(stored, { worker_node_username: 'admin', worker_node_password: 'new-pw', master_node_username: 'only-user' });
    const p = parseKubeadmParams(eff.param, ctx);
    assert.equal(p.workerNode.username, 'admin');
    assert.equal(p.workerNode.password, 'new-pw');
    assert.equal(p.masterNode.username, 'ubuntu', 'a half-given pair is not used');
    assert.deepEqual(eff.persist, { k8s_cluster_installation_param: { worker_node: { username: 'admin', password: 'new-pw' } } });
    assert.deepEqual(checkFlatOverrides({ master_node_username: 'only-user' }), ['master_node_username and master_node_password (or master_node_private_key) must be given together']);
    assert.deepEqual(checkFlatOverrides({ masterNodeUsername: 'u', masterNodePassword: 'p' }), []);
  });

  it('merges nested dict overrides per dict (other keys of the dict kept)', () => {
    const eff = effectiveInstallationParam(base(), { k8sClusterInstallationParam: { masterNode: { password: 'rotated' } } });
    const p = parseKubeadmParams(eff.param, ctx);
    assert.equal(p.masterNode.password, 'rotated');
    assert.equal(p.masterNode.sshCpName, 'masterNode_CP1');
    assert.equal(p.masterNode.clusterCpName, 'vip_CP');
    assert.deepEqual(eff.persist, { k8s_cluster_installation_param: { master_node: { password: 'rotated' } } });
    // no override: nothing to persist
    assert.equal(effectiveInstallationParam(base(), {}).persist, undefined);
  });

  it('reads additionalParams.drain', () => {
    assert.deepEqual(drainParamsOf({}), { force: false });
    assert.deepEqual(drainParamsOf({ drain: { timeoutSeconds: 30, force: true } }), { timeoutSeconds: 30, force: true });
    badRequest(() => drainParamsOf({ drain: { timeoutSeconds: -1 } }));
    badRequest(() => drainParamsOf({ drain: { force: 'yes' } }));
  });
});
