/**
 * k8s-kubeadm VNFC heals against a scripted 3-master cluster: worker heal (drain, dead path, a
 * blocking PodDisruptionBudget), master heal in the ordered steps of the spec (quorum gate, leader
 * transfer, HAProxy on every survivor, drain + delete Node, member remove by exact id, old VM
 * stopped; then join material right before the join, join, wait, HAProxy back everywhere), gate
 * refusals, crash and retry between "member removed" and the end of heal_start, and host keys.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import type { K8sClusterMeta } from '../../../src/mgmt/drivers/k8s-kubeadm/hooks.ts';
import { listServers } from '../../../src/mgmt/drivers/k8s-kubeadm/haproxy.ts';
import { parseHostsBlock } from '../../../src/mgmt/drivers/k8s-kubeadm/hosts-block.ts';
import type { KubeadmInstanceState } from '../../../src/mgmt/drivers/k8s-kubeadm/run-context.ts';
import { assertNoSecrets, type Harness, harness, healCommand, healedInstance, healTarget, m, w } from './harness.ts';

async function ha(): Promise<Harness> {
  const h = harness([m(11), m(12), m(13)], [w(21), w(22)]);
  const r = await h.instantiate();
  // the engine applies the result: metadata on the instance
  h.inst.instantiatedVnfInfo = { ...(h.inst.instantiatedVnfInfo as NonNullable<typeof h.inst.instantiatedVnfInfo>), metadata: { k8sCluster: r?.vnfInfoMetadata?.k8sCluster } };
  h.world.steps.length = 0;
  h.cluster.commands.length = 0;
  h.cluster.kube.calls.length = 0;
  return h;
}

const backend = (h: Harness, ip: string) => (listServers(h.cluster.vms.get(ip)?.files.get('/etc/haproxy/haproxy.cfg') ?? '', 'kubernetes-apiserver') ?? []).map((s) => s.name);

describe('k8s-kubeadm worker heal', () => {
  it('heal_start cordons, evicts, deletes the Node; heal_end joins the new VM with a new host key and writes hosts everywhere', async () => {
    const h = await ha();
    const k = h.cluster.kube;
    k.pod('default', 'web-1', 'worker21', { owner: { kind: 'ReplicaSet', name: 'web-rs' }, labels: { app: 'web' } });
    k.replicaSet('default', 'web-rs', 2, 2);
    const target = healTarget(w(21), 'workerNode');
    await h.run('heal_start', healCommand('vi-w21'), { targets: [target], opId: 'op-heal' });
    assert.deepEqual(h.world.steps, ['heal_start:remove-worker:worker21', 'heal_start:owners-ready']);
    const calls = k.calls.filter((c) => /worker21|web-1/.test(c) && !c.startsWith('get') && !c.startsWith('list'));
    assert.deepEqual(calls, ['patch Node worker21 {"spec":{"unschedulable":true}}', 'evict default/web-1', 'delete Node worker21']);
    // the infra step replaces the server; port and address are kept
    h.cluster.replaceVm('10.0.0.21');
    const { instance } = healedInstance(h, [w(21)]);
    h.world.steps.length = 0;
    const r = await h.run('heal_end', healCommand('vi-w21'), { targets: [{ ...target, newResourceId: 'srv-w21-g2' }], instance, previousInstance: h.inst, opId: 'op-heal' });
    assert.deepEqual(h.world.steps, [
      'heal_end:hosts:worker21',
      'heal_end:join-worker:worker21',
      'heal_end:hosts:master11',
      'heal_end:hosts:master12',
      'heal_end:hosts:master13',
      'heal_end:hosts:worker22',
    ]);
    assert.ok(k.has('Node', undefined, 'worker21'));
    const last = h.cluster.installs[h.cluster.installs.length - 1];
    assert.deepEqual(last?.args.slice(0, 4), ['-w', '10.0.0.21', '-i', '10.0.0.100']);
    assert.deepEqual(parseHostsBlock(h.cluster.vms.get('10.0.0.21')?.files.get('/etc/hosts') ?? '').map((e) => e.name), ['master11', 'master12', 'master13', 'worker21', 'worker22']);
    const pins = (h.world.instanceState.value as KubeadmInstanceState).hostKeys ?? {};
    assert.equal(pins['srv-w21-g2'], 'SHA256:host-10.0.0.21-gen2', 'the replaced VM got a new pin');
    assert.equal(pins['srv-w21-g1'], undefined, 'the old pin is gone');
    assert.equal((r?.vnfInfoMetadata?.k8sCluster as K8sClusterMeta).nodes.worker21?.joined, true);
    assertNoSecrets(h);
  });

  it('a dead worker (NotReady beyond the grace period, unreachable) is deleted without a drain', async () => {
    const h = await ha();
    const k = h.cluster.kube;
    k.pod('default', 'web-2', 'worker22', { owner: { kind: 'ReplicaSet', name: 'web-rs' } });
    (h.cluster.vms.get('10.0.0.22') as { alive: boolean }).alive = false;
    k.node('worker22', 'Unknown', h.cluster.clock.now() - 120_000);
    await h.run('heal_start', healCommand('vi-w22'), { targets: [healTarget(w(22), 'workerNode')], opId: 'op-heal' });
    assert.ok(!k.has('Node', undefined, 'worker22'));
    assert.equal(k.calls.filter((c) => c.startsWith('evict') || c.startsWith('patch')).length, 0);
  });

  it('a PodDisruptionBudget that never allows the eviction fails the heal naming it; the Node is kept', async () => {
    const h = await ha();
    const k = h.cluster.kube;
    k.pod('db', 'db-0', 'worker21', { owner: { kind: 'StatefulSet', name: 'db' }, labels: { app: 'db' } });
    k.pdb('db', 'db-pdb', { app: 'db' }, 0);
    await assert.rejects(
      h.run('heal_start', { ...healCommand('vi-w21'), additionalParams: { drain: { timeoutSeconds: 30 } } }, { targets: [healTarget(w(21), 'workerNode')], opId: 'op-heal', params: { drain: { timeoutSeconds: 30 } } }),
      (e: Error) => isVnfmError(e, 'VNFM_ERR_MGMT_FAILED') && /PodDisruptionBudget\(s\) db\/db-pdb \(pods db\/db-0\)/.test(e.message),
    );
    assert.ok(k.has('Node', undefined, 'worker21'));
    assert.equal(k.obj('Node', undefined, 'worker21')?.spec?.unschedulable, true);
    // the operator accepts the forced removal
    await h.run('heal_start', healCommand('vi-w21'), { targets: [healTarget(w(21), 'workerNode')], opId: 'op-heal-2', params: { drain: { force: true } } });
    assert.ok(!k.has('Node', undefined, 'worker21'));
    assert.ok(!k.has('Pod', 'db', 'db-0'));
  });
});

describe('k8s-kubeadm worker heal, edge cases', () => {
  it('a NotReady node that still answers SSH is given the grace period, then deleted without a drain', async () => {
    const h = await ha();
    const k = h.cluster.kube;
    k.pod('default', 'web-3', 'worker22', { owner: { kind: 'ReplicaSet', name: 'web-rs' } });
    k.node('worker22', false, h.cluster.clock.now() - 10_000);
    const t0 = h.cluster.clock.now();
    await h.run('heal_start', healCommand('vi-w22'), { targets: [healTarget(w(22), 'workerNode')], opId: 'op-heal' });
    assert.ok(!k.has('Node', undefined, 'worker22'));
    assert.equal(k.calls.filter((c) => c.startsWith('evict')).length, 0);
    const waited = h.cluster.clock.now() - t0;
    assert.ok(waited >= 50_000 && waited <= 54_000, `waited ${waited} ms for the rest of the 60 s grace period`);
  });

  it('heal_end deletes a Ready Node the new VM does not back (heal_start left it) and joins', async () => {
    const h = await ha();
    h.cluster.replaceVm('10.0.0.21');
    const { instance } = healedInstance(h, [w(21)]);
    assert.ok(h.cluster.kube.has('Node', undefined, 'worker21'));
    await h.run('heal_end', healCommand('vi-w21'), { targets: [{ ...healTarget(w(21), 'workerNode'), newResourceId: 'srv-w21-g2' }], instance, previousInstance: h.inst, opId: 'op-heal' });
    assert.ok(h.cluster.kube.calls.includes('delete Node worker21'));
    assert.equal(h.cluster.installs[h.cluster.installs.length - 1]?.host, '10.0.0.21');
    assert.ok(h.cluster.kube.has('Node', undefined, 'worker21'));
    // again (a retry over a joined VM): nothing installed twice
    const n = h.cluster.installs.length;
    await h.run('heal_end', healCommand('vi-w21'), { targets: [{ ...healTarget(w(21), 'workerNode'), newResourceId: 'srv-w21-g2' }], instance, previousInstance: h.inst, opId: 'op-heal-again' });
    assert.equal(h.cluster.installs.length, n);
  });
});

describe('k8s-kubeadm master heal (3 masters)', () => {
  async function healMaster(h: Harness, leaderName?: string) {
    if (leaderName) h.cluster.leader = h.cluster.memberNamed(leaderName)?.id;
    const oldId = h.cluster.memberNamed('master12')?.id as bigint;
    const target = healTarget(m(12), 'masterNode');
    const start = await h.run('heal_start', healCommand('vi-m12'), { targets: [target], opId: 'op-heal' });
    return { oldId, target, start };
  }

  it('heal_start runs the ordered steps; heal_end joins with fresh material and puts the master back in every HAProxy', async () => {
    const h = await ha();
    const { oldId, target, start } = await healMaster(h);
    assert.deepEqual(h.world.steps, [
      'heal_start:leader-transfer:master12',
      'heal_start:haproxy-remove:master12@master11',
      'heal_start:haproxy-remove:master12@master13',
      'heal_start:remove-node:master12',
      'heal_start:etcd-remove:master12',
      'heal_start:stop-old:master12',
    ]);
    // the leader was master11: no transfer
    assert.equal(h.cluster.lines(/move-leader/).length, 0);
    // HAProxy: runtime maint, then the validated file, then a reload, on each survivor; master1x untouched
    for (const ip of ['10.0.0.11', '10.0.0.13']) {
      const vm = h.cluster.vms.get(ip);
      assert.deepEqual(vm?.runtime, ['set server kubernetes-apiserver/master12 state maint']);
      assert.deepEqual(backend(h, ip), ['master11', 'master13']);
      const seq = h.cluster.commands.filter((c) => c.host === ip && /haproxy|socat/.test(c.cmd)).map((c) => c.cmd.split(' ')[0]);
      // one script: runtime maint, checked temp file, copy in place, reload
      assert.deepEqual(seq, ['umask']);
    }
    // the member removed by its exact id, on a survivor; the old VM reset
    assert.deepEqual(h.cluster.lines(/member remove/).map((l) => l.replace(/ --endpoints.*member remove/, ' member remove')), [`10.0.0.11: ETCDCTL_API=3 etcdctl member remove ${oldId.toString(16)}`]);
    assert.deepEqual(h.cluster.members.map((x) => x.name), ['master11', 'master13']);
    assert.equal(h.cluster.vms.get('10.0.0.12')?.resets, 1);
    assert.ok(!h.cluster.kube.has('Node', undefined, 'master12'));
    const meta = start?.vnfInfoMetadata?.k8sCluster as K8sClusterMeta;
    assert.equal(meta.nodes.master12?.joined, false);
    assert.equal(meta.nodes.master12?.etcdMemberId, undefined);

    // infra step: a new server at the same address
    h.cluster.replaceVm('10.0.0.12');
    const { instance } = healedInstance(h, [m(12)]);
    h.world.steps.length = 0;
    const from = h.cluster.commands.length;
    const end = await h.run('heal_end', healCommand('vi-m12'), { targets: [{ ...target, newResourceId: 'srv-m12-g2' }], instance, previousInstance: h.inst, opId: 'op-heal' });
    assert.deepEqual(h.world.steps, [
      'heal_end:hosts:master12',
      'heal_end:join-master:master12',
      'heal_end:haproxy-add:master12@master11',
      'heal_end:haproxy-add:master12@master13',
      'heal_end:hosts:master11',
      'heal_end:hosts:master13',
      'heal_end:hosts:worker21',
      'heal_end:hosts:worker22',
    ]);
    // token, CA, certificate key fetched once on a survivor during heal_end (while the new VM comes up), before the install
    const after = h.cluster.commands.slice(from);
    const i = after.findIndex((c) => c.cmd.includes('install_k8s_cluster'));
    assert.equal(after[i]?.host, '10.0.0.12');
    const material = after.filter((c) => /kubeadm (token create|init phase upload-certs)/.test(c.cmd));
    assert.deepEqual(material.map((c) => `${c.host} ${c.cmd}`).sort(), ['10.0.0.11 kubeadm init phase upload-certs --upload-certs', '10.0.0.11 kubeadm token create --ttl 1h']);
    assert.ok(material.every((c) => after.indexOf(c) < i));
    const join = h.cluster.installs[h.cluster.installs.length - 1];
    assert.equal(join?.host, '10.0.0.12');
    assert.deepEqual(join?.args.slice(0, 8), ['-m', '10.0.0.11,10.0.0.13,10.0.0.12', '-i', '10.0.0.100', '-p', '192.168.0.0/16', '-a', '10.199.187.0/24']);
    assert.equal(join?.args[join.args.indexOf('-k') + 1], h.cluster.certKeys[h.cluster.certKeys.length - 1]);
    assert.equal(join?.env.ha_flag, 'True');
    // etcd back to 3 voting members; the master back in both survivors' HAProxy, reloaded and verified
    const newId = h.cluster.memberNamed('master12')?.id as bigint;
    assert.notEqual(newId, oldId);
    assert.equal(h.cluster.members.filter((x) => !x.learner).length, 3);
    for (const ip of ['10.0.0.11', '10.0.0.13']) {
      assert.deepEqual(backend(h, ip), ['master11', 'master13', 'master12']);
      assert.ok(h.cluster.vms.get(ip)?.loadedHaproxy?.includes('server  master12  10.0.0.12:6443 check'));
      assert.ok(h.cluster.vms.get(ip)?.runtime.includes('show servers state kubernetes-apiserver'));
    }
    const meta2 = end?.vnfInfoMetadata?.k8sCluster as K8sClusterMeta;
    assert.equal(meta2.nodes.master12?.etcdMemberId, newId.toString(16));
    assert.equal(meta2.nodes.master12?.joined, true);
    assert.equal(meta2.nodes.master11?.etcdMemberId, h.cluster.memberNamed('master11')?.id.toString(16));
    assertNoSecrets(h);
  });

  it('the leader hands leadership to a healthy survivor (sent to the leader endpoint) before anything else', async () => {
    const h = await ha();
    await healMaster(h, 'master12');
    const moves = h.cluster.lines(/move-leader/);
    assert.equal(moves.length, 1);
    assert.match(moves[0] as string, /--endpoints https:\/\/10\.0\.0\.12:2379 .*move-leader ([0-9a-f]+)$/);
    assert.equal(h.cluster.leader, h.cluster.memberNamed('master11')?.id);
    const firstMove = h.cluster.commands.findIndex((c) => /move-leader/.test(c.cmd));
    const firstHaproxy = h.cluster.commands.findIndex((c) => /haproxy|socat/.test(c.cmd));
    const firstRemove = h.cluster.commands.findIndex((c) => /member remove/.test(c.cmd));
    assert.ok(firstMove < firstHaproxy && firstHaproxy < firstRemove);
  });

  it('the quorum gate refuses while another member is unhealthy, naming it, and changes nothing', async () => {
    const h = await ha();
    const sick = h.cluster.memberNamed('master13');
    if (sick) sick.sick = true;
    await assert.rejects(
      h.run('heal_start', healCommand('vi-m12'), { targets: [healTarget(m(12), 'masterNode')], opId: 'op-heal' }),
      (e: Error) => isVnfmError(e, 'VNFM_ERR_MGMT_REFUSED') && /removing master12 would leave 2 voting member\(s\) of which 1 unhealthy \(master13/.test(e.message),
    );
    assert.equal(h.cluster.members.length, 3);
    assert.deepEqual(backend(h, '10.0.0.11'), ['master11', 'master12', 'master13']);
    assert.equal(h.cluster.lines(/haproxy\.cfg|socat|member remove|move-leader/).length, 0);
    assert.ok(h.cluster.kube.has('Node', undefined, 'master12'));
  });

  it('healing the dead member itself passes the gate; the dead VM is not drained nor reset', async () => {
    const h = await ha();
    (h.cluster.vms.get('10.0.0.13') as { alive: boolean }).alive = false;
    h.cluster.kube.node('master13', 'Unknown', h.cluster.clock.now() - 300_000);
    await h.run('heal_start', healCommand('vi-m13'), { targets: [healTarget(m(13), 'masterNode')], opId: 'op-heal' });
    assert.deepEqual(h.cluster.members.map((x) => x.name), ['master11', 'master12']);
    assert.ok(!h.cluster.kube.has('Node', undefined, 'master13'));
    assert.equal(h.cluster.kube.calls.filter((c) => c.startsWith('evict')).length, 0);
    assert.deepEqual(h.world.journal('op-heal').get('heal_start:stop-old:master13'), { stopped: false, reason: 'unreachable' });
  });

  it('refuses two master targets of a 3-master cluster and a master of a single-master cluster', async () => {
    const h = await ha();
    await assert.rejects(
      h.run('heal_start', healCommand('vi-m12', 'vi-m13'), { targets: [healTarget(m(12), 'masterNode'), healTarget(m(13), 'masterNode')], opId: 'op-x' }),
      (e: Error) => isVnfmError(e, 'VNFM_ERR_MGMT_REFUSED') && /at most 1 master\(s\)/.test(e.message),
    );
    const s = harness([m(11)], [w(21)]);
    await s.instantiate();
    await assert.rejects(
      s.run('heal_start', healCommand('vi-m11'), { targets: [healTarget(m(11), 'masterNode')], opId: 'op-y' }),
      (e: Error) => isVnfmError(e, 'VNFM_ERR_MGMT_REFUSED') && e.message === 'The number of Master-Nodes is 1 or less. If you want to heal, please respawn.',
    );
  });

  it('a crash between "member removed" and the end of heal_start: the retry resumes and removes nothing twice', async () => {
    const h = await ha();
    h.world.crashAfterStep = 'heal_start:etcd-remove:master12';
    await assert.rejects(h.run('heal_start', healCommand('vi-m12'), { targets: [healTarget(m(12), 'masterNode')], opId: 'op-heal' }), /simulated crash after step/);
    assert.equal(h.cluster.lines(/member remove/).length, 1);
    assert.equal(h.cluster.vms.get('10.0.0.12')?.resets, 0);
    const reloads = h.cluster.vms.get('10.0.0.11')?.reloads;
    h.world.steps.length = 0;
    await h.run('heal_start', healCommand('vi-m12'), { targets: [healTarget(m(12), 'masterNode')], opId: 'op-heal' });
    assert.deepEqual(h.world.steps, ['heal_start:stop-old:master12'], 'only the unfinished step ran');
    assert.equal(h.cluster.lines(/member remove/).length, 1);
    assert.equal(h.cluster.vms.get('10.0.0.11')?.reloads, reloads, 'HAProxy not touched again');
    assert.equal(h.cluster.vms.get('10.0.0.12')?.resets, 1);
  });

  it('a crash inside the member removal step (removed, not journaled): the retry finds it gone and does not remove again', async () => {
    const h = await ha();
    h.world.crashBeforeRecord = 'heal_start:etcd-remove:master12';
    await assert.rejects(h.run('heal_start', healCommand('vi-m12'), { targets: [healTarget(m(12), 'masterNode')], opId: 'op-heal' }), /simulated crash inside step/);
    assert.equal(h.cluster.members.length, 2);
    await h.run('heal_start', healCommand('vi-m12'), { targets: [healTarget(m(12), 'masterNode')], opId: 'op-heal' });
    assert.equal(h.cluster.lines(/member remove/).length, 1);
    assert.deepEqual(h.world.journal('op-heal').get('heal_start:etcd-remove:master12'), { removed: false });
    assert.equal(h.cluster.members.length, 2);
  });

  it('heal_end removes a stale member holding the target peer URL before the join', async () => {
    const h = await ha();
    await healMaster(h);
    // a stale member with the target's peer URL (e.g. a join that died half-way)
    h.cluster.members.push({ id: 0x1234n, name: '', ip: '10.0.0.12', learner: false, sick: true });
    h.cluster.replaceVm('10.0.0.12');
    const { instance } = healedInstance(h, [m(12)]);
    // the stale member makes the cluster look degraded: a 2-healthy-of-3 cluster still passes the removal gate
    await h.run('heal_end', healCommand('vi-m12'), { targets: [{ ...healTarget(m(12), 'masterNode'), newResourceId: 'srv-m12-g2' }], instance, previousInstance: h.inst, opId: 'op-heal' });
    assert.ok(h.cluster.lines(/member remove 1234$/).length === 1);
    assert.equal(h.cluster.members.length, 3);
    assert.ok(h.cluster.memberNamed('master12'));
  });
});

describe('k8s-kubeadm host keys', () => {
  it('a changed host key on a server this op did not replace is refused', async () => {
    const h = await ha();
    h.cluster.replaceVm('10.0.0.22'); // same server id in the instance, different key
    await assert.rejects(
      h.run('heal_start', healCommand('vi-m12'), { targets: [healTarget(m(12), 'masterNode')], opId: 'op-heal' }).then(() =>
        h.run('scale_start', { operation: 'SCALE', type: 'SCALE_IN', aspectId: 'worker_instance', numberOfSteps: 1, additionalParams: {} }, { targets: [{ vnfcInfoId: 'vi-w21', vnfcResourceInfoId: 'w21', vduId: 'workerNode', change: 'remove', oldResourceId: 'srv-w21-g1' }], opId: 'op-scale' }),
      ),
      (e: Error) => isVnfmError(e, 'VNFM_ERR_SSH_HOST_KEY'),
    );
  });
});
