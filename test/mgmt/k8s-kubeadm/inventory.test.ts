/**
 * Node inventory from the instance: VDUs by vdu_id or by the VDU bound to nic_cp_name, NIC / SSH
 * addresses (SSH to the fixed address of `ssh_cp_name` as Tacker; a floating IP only when it names the
 * floating IP resource or with `ssh_address: floating`), Tacker node names, exact matching, name collisions
 * refused with 422, the cluster address (VIP external CP, own CP for a single master, explicit).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import { assertNoCollision, buildInventory, clusterAddress, findNode, floatingApiHost, nodeName, roleVdus } from '../../../src/mgmt/drivers/k8s-common/inventory.ts';
import { installationParamOf, parseKubeadmParams } from '../../../src/mgmt/drivers/k8s-kubeadm/params.ts';
import { flavour, instanceOf, instantiateParams, SCRIPT } from './fixtures.ts';

const params = (ha = false) => parseKubeadmParams(installationParamOf(instantiateParams({ ha })), { instanceId: 'inst-1', packageFiles: [SCRIPT] });

describe('k8s-kubeadm node inventory', () => {
  it('names nodes after the last octet of the NIC address', () => {
    assert.equal(nodeName('master', '10.0.0.12'), 'master12');
    assert.equal(nodeName('worker', '192.168.5.1'), 'worker1');
    assert.equal(nodeName('worker', 'fd00::1a'), 'worker1a');
  });

  it('finds the VDUs by the CP of nic_cp_name, or by vdu_id', () => {
    const p = params();
    assert.deepEqual(roleVdus(flavour(), p), { master: 'masterNode', worker: 'workerNode' });
    const q = { ...p, masterNode: { ...p.masterNode, vduId: 'masterNode', nicCpName: 'nope', sshCpName: 'nope' } };
    assert.equal(roleVdus(flavour(), q).master, 'masterNode');
    const bad = { ...p, workerNode: { ...p.workerNode, nicCpName: 'unknown_CP', sshCpName: 'unknown_CP' } };
    assert.throws(() => roleVdus(flavour(), bad), /no VDU of the flavour is bound to worker_node's CP 'unknown_CP'/);
  });

  it('builds masters and workers with their ids, addresses and names', () => {
    const inst = instanceOf(
      [
        { id: 'm1', ip: '10.0.0.11', resourceId: 'srv-m1', floating: '172.24.4.11' },
        { id: 'm2', ip: '10.0.0.12', resourceId: 'srv-m2' },
      ],
      [{ id: 'w1', ip: '10.0.0.21', resourceId: 'srv-w1' }],
      '10.0.0.100',
    );
    const inv = buildInventory(inst, flavour(), params(true), { checkCollisions: true });
    assert.deepEqual(
      inv.masters.map((n) => [n.name, n.nicIp, n.sshIp, n.resourceId, n.vnfcInfoId]),
      [
        ['master11', '10.0.0.11', '10.0.0.11', 'srv-m1', 'vi-m1'],
        ['master12', '10.0.0.12', '10.0.0.12', 'srv-m2', 'vi-m2'],
      ],
    );
    assert.deepEqual(
      inv.workers.map((n) => n.name),
      ['worker21'],
    );
    assert.equal(findNode(inv, { vnfcInfoId: 'vi-w1' })?.name, 'worker21');
    assert.equal(findNode(inv, { vnfcResourceInfoId: 'm2' })?.name, 'master12');
    assert.equal(findNode(inv, { vnfcInfoId: 'vi-m' }), undefined, 'ids match exactly');
    assert.equal(clusterAddress(inst, inv, params(true)), '10.0.0.100', 'HA: the VIP external CP');
    assert.equal(floatingApiHost(inst, inv, params(true)), undefined, 'ssh_cp_name names the port: SSH to its fixed address, though it has a floating IP');
  });

  it('SSH goes through a floating IP only when ssh_cp_name names the floating IP resource or with ssh_address: floating', () => {
    const inst = instanceOf(
      [
        { id: 'm1', ip: '10.0.0.11', resourceId: 'srv-m1', floating: '172.24.4.11' },
        { id: 'm2', ip: '10.0.0.12', resourceId: 'srv-m2', floating: '172.24.4.12' },
      ],
      [{ id: 'w1', ip: '10.0.0.21', resourceId: 'srv-w1', floating: '172.24.4.21' }],
      '10.0.0.100',
    );
    const withMaster = (over: Record<string, unknown>) => {
      const raw = instantiateParams({ ha: true });
      const k = raw.k8s_cluster_installation_param as { master_node: Record<string, unknown> };
      Object.assign(k.master_node, over);
      return parseKubeadmParams(installationParamOf(raw), { instanceId: 'inst-1', packageFiles: [SCRIPT] });
    };
    const ssh = (p: ReturnType<typeof params>) => buildInventory(inst, flavour(), p).masters.map((n) => [n.nicIp, n.sshIp]);
    assert.deepEqual(ssh(params(true)), [['10.0.0.11', '10.0.0.11'], ['10.0.0.12', '10.0.0.12']], 'default: the fixed address of the named CP');
    assert.deepEqual(buildInventory(inst, flavour(), params(true)).workers.map((n) => n.sshIp), ['10.0.0.21']);
    const fipResource = withMaster({ ssh_cp_name: 'masterNode_FloatingIP', nic_cp_name: 'masterNode_CP1' });
    assert.deepEqual(ssh(fipResource), [['10.0.0.11', '172.24.4.11'], ['10.0.0.12', '172.24.4.12']], 'the floating IP resource named');
    assert.equal(floatingApiHost(inst, buildInventory(inst, flavour(), fipResource), fipResource), '172.24.4.11');
    const explicit = withMaster({ ssh_address: 'floating' });
    assert.deepEqual(ssh(explicit), [['10.0.0.11', '172.24.4.11'], ['10.0.0.12', '172.24.4.12']], 'ssh_address: floating');
    // no floating IP on the CP: refused, no silent fallback
    const noFip = instanceOf([{ id: 'm1', ip: '10.0.0.11', resourceId: 'srv-m1' }], [{ id: 'w1', ip: '10.0.0.21', resourceId: 'srv-w1' }], '10.0.0.100');
    assert.throws(() => buildInventory(noFip, flavour(), explicit), /ssh_cp_name 'masterNode_CP1' \(ssh_address: floating: the CP has no floating IP\)/);
    assert.throws(() => withMaster({ ssh_address: 'nat' }), (e: Error & { code?: string }) => e.code === 'VNFM_ERR_API_BAD_REQUEST' && /master_node\.ssh_address must be 'fixed' or 'floating'/.test(e.message));
  });

  it('single master: the cluster address is the master CP; an explicit cluster_ip wins', () => {
    const inst = instanceOf([{ id: 'm1', ip: '10.0.0.11', resourceId: 'srv-m1' }], [{ id: 'w1', ip: '10.0.0.21', resourceId: 'srv-w1' }]);
    const p = params(false);
    const inv = buildInventory(inst, flavour(), p);
    assert.equal(clusterAddress(inst, inv, p), '10.0.0.11');
    assert.equal(clusterAddress(inst, inv, { masterNode: { ...p.masterNode, clusterIp: '10.0.0.99' } }), '10.0.0.99');
    assert.equal(floatingApiHost(inst, inv, p), undefined);
    const noVip = buildInventory(instanceOf([{ id: 'm1', ip: '10.0.0.11', resourceId: 'a' }], []), flavour(), params(true));
    assert.equal(clusterAddress(instanceOf([{ id: 'm1', ip: '10.0.0.11', resourceId: 'a' }], []), noVip, params(true)), undefined);
  });

  it('refuses colliding names (two subnets sharing a last octet) with 422 before anything', () => {
    const inst = instanceOf([{ id: 'm1', ip: '10.0.0.11', resourceId: 'a' }], [
      { id: 'w1', ip: '10.0.0.21', resourceId: 'b' },
      { id: 'w2', ip: '10.0.1.21', resourceId: 'c' },
    ]);
    try {
      buildInventory(inst, flavour(), params(), { checkCollisions: true });
      assert.fail('expected a refusal');
    } catch (e) {
      assert.ok(isVnfmError(e, 'VNFM_ERR_MGMT_REFUSED'));
      assert.equal((e as { httpStatus: number }).httpStatus, 422);
      assert.match((e as Error).message, /worker21 \(VNFCs w1, w2\)/);
    }
    // master1 and master12 do not collide
    const ok = buildInventory(instanceOf([
      { id: 'm1', ip: '10.0.0.1', resourceId: 'a' },
      { id: 'm2', ip: '10.0.0.12', resourceId: 'b' },
    ], []), flavour(), params(true));
    assertNoCollision([...ok.masters, ...ok.workers]);
    assert.deepEqual(ok.masters.map((m) => m.name), ['master1', 'master12']);
  });

  it('a VNFC without the NIC address is an error naming it', () => {
    const inst = instanceOf([{ id: 'm1', ip: '10.0.0.11', resourceId: 'a' }], []);
    const r = inst.instantiatedVnfInfo?.vnfcResourceInfo?.[0];
    if (r) r.metadata = { cpAddresses: {} };
    if (r) r.vnfcCpInfo = [];
    assert.throws(() => buildInventory(inst, flavour(), params()), /VNFC m1 \(masterNode\) has no address for nic_cp_name 'masterNode_CP1'/);
  });
});
