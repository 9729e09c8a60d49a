/**
 * k8s-kubeadm scale in / scale out of workers against a scripted cluster (a node without pods is
 * still deleted, hosts blocks of the survivors, collisions refused before anything), credential
 * overrides persisted only through the result, and the driver's binding (claims / applies /
 * idempotent) and acceptance validation (400 / 422 table).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import { KubeadmMgmtDriver } from '../../../src/mgmt/drivers/k8s-kubeadm/driver.ts';
import type { K8sClusterMeta } from '../../../src/mgmt/drivers/k8s-kubeadm/hooks.ts';
import { parseHostsBlock } from '../../../src/mgmt/drivers/k8s-kubeadm/hosts-block.ts';
import type { HealCommand, LcmCommand, ScaleCommand } from '../../../src/model/lcm-command.ts';
import type { HookName, MgmtContext, MgmtValidation } from '../../../src/mgmt/mgmt-driver.ts';
import type { VnfPackageModel } from '../../../src/packages/vnfd-model.ts';
import { CtxWorld, FakeVims, makeCtx } from './fake-ctx.ts';
import { flavour, instanceOf, instantiateParams, SCRIPT } from './fixtures.ts';
import { assertNoSecrets, harness, m, w } from './harness.ts';

const scaleIn = (n = 1): ScaleCommand => ({ operation: 'SCALE', type: 'SCALE_IN', aspectId: 'worker_instance', numberOfSteps: n, additionalParams: {} });
const scaleOut = (): ScaleCommand => ({ operation: 'SCALE', type: 'SCALE_OUT', aspectId: 'worker_instance', numberOfSteps: 1, additionalParams: {} });

describe('k8s-kubeadm scale', () => {
  it('scale in: drains and deletes the removed workers (also one without pods), rewrites the survivors\' hosts blocks', async () => {
    const h = harness([m(11)], [w(21), w(22), w(23)]);
    await h.instantiate();
    h.world.steps.length = 0;
    h.cluster.commands.length = 0;
    h.cluster.kube.pod('default', 'web-1', 'worker22', { owner: { kind: 'ReplicaSet', name: 'web-rs' } });
    h.cluster.kube.replicaSet('default', 'web-rs', 1, 1);
    const targets = [w(22), w(23)].map((x) => ({ vnfcInfoId: `vi-${x.id}`, vnfcResourceInfoId: x.id, vduId: 'workerNode', change: 'remove' as const, oldResourceId: x.resourceId }));
    const r = await h.run('scale_start', scaleIn(2), { targets, opId: 'op-scale' });
    assert.deepEqual(h.world.steps, [
      'scale_start:remove-worker:worker22',
      'scale_start:remove-worker:worker23',
      'scale_start:owners-ready',
      'scale_start:hosts:master11',
      'scale_start:hosts:worker21',
    ]);
    assert.ok(!h.cluster.kube.has('Node', undefined, 'worker22'));
    assert.ok(!h.cluster.kube.has('Node', undefined, 'worker23'), 'a node without pods is deleted too');
    for (const ip of ['10.0.0.11', '10.0.0.21']) assert.deepEqual(parseHostsBlock(h.cluster.vms.get(ip)?.files.get('/etc/hosts') ?? '').map((e) => e.name), ['master11', 'worker21']);
    assert.equal(h.cluster.commands.filter((c) => c.host === '10.0.0.22' || c.host === '10.0.0.23').length, 0, 'the removed VMs are not touched');
    assert.deepEqual(Object.keys((r?.vnfInfoMetadata?.k8sCluster as K8sClusterMeta).nodes), ['master11', 'worker21']);
    assertNoSecrets(h);
  });

  it('scale out: joins the added worker (10 min to reach the new VM), hosts blocks everywhere; overrides are returned to persist', async () => {
    const h = harness([m(11)], [w(21)]);
    await h.instantiate();
    h.world.steps.length = 0;
    h.cluster.addVm('10.0.0.22');
    const after = instanceOf([m(11)], [w(21), w(22)]);
    const params = { worker_node_username: 'ubuntu', worker_node_password: 'Rotated-Worker-Pw' };
    const r = await h.run('scale_end', { ...scaleOut(), additionalParams: params }, { instance: after, targets: [{ vnfcInfoId: 'vi-w22', vnfcResourceInfoId: 'w22', vduId: 'workerNode', change: 'add', newResourceId: 'srv-w22-g1' }], params, opId: 'op-scale' });
    assert.deepEqual(h.world.steps, ['scale_end:hosts:worker22', 'scale_end:join-worker:worker22', 'scale_end:hosts:master11', 'scale_end:hosts:worker21']);
    assert.ok(h.cluster.kube.has('Node', undefined, 'worker22'));
    for (const ip of ['10.0.0.11', '10.0.0.21', '10.0.0.22']) assert.deepEqual(parseHostsBlock(h.cluster.vms.get(ip)?.files.get('/etc/hosts') ?? '').map((e) => e.name), ['master11', 'worker21', 'worker22']);
    const newConn = h.cluster.connects.find((c) => c.host === '10.0.0.22');
    assert.equal(newConn?.deadlineMs, 600_000);
    assert.equal(h.cluster.connects.find((c) => c.host === '10.0.0.21' && c.pinned)?.attempts, 3);
    assert.deepEqual(r?.instantiateParams, { k8s_cluster_installation_param: { worker_node: { username: 'ubuntu', password: 'Rotated-Worker-Pw' } } });
    assert.equal((r?.vnfInfoMetadata?.k8sCluster as K8sClusterMeta).credentialsVersion, 'op-scale');
    // the rotated password was used for the workers, and never shown
    const text = [JSON.stringify(h.world.progress), h.world.logs.join(''), h.cluster.commands.map((c) => c.cmd).join('\n')].join('\n');
    assert.ok(!text.includes('Rotated-Worker-Pw'));
  });

  it('scale out refuses a colliding node name before anything runs', async () => {
    const h = harness([m(11)], [w(21)]);
    await h.instantiate();
    const before = h.cluster.commands.length;
    h.cluster.addVm('10.0.1.21');
    const after = instanceOf([m(11)], [w(21), { id: 'wx', ip: '10.0.1.21', resourceId: 'srv-wx' }]);
    await assert.rejects(
      h.run('scale_end', scaleOut(), { instance: after, targets: [{ vnfcInfoId: 'vi-wx', vnfcResourceInfoId: 'wx', vduId: 'workerNode', change: 'add' }], opId: 'op-scale' }),
      (e: Error) => isVnfmError(e, 'VNFM_ERR_MGMT_REFUSED') && /worker21/.test(e.message),
    );
    assert.equal(h.cluster.commands.length, before);
  });
});

function validation(command: LcmCommand, o: { instance?: ReturnType<typeof instanceOf>; params?: Record<string, unknown>; hooks?: HookName[]; files?: string[] } = {}): MgmtValidation {
  return {
    command,
    instance: o.instance ?? instanceOf([m(11), m(12), m(13)], [w(21)], '10.0.0.100'),
    vnfd: { files: o.files ?? [SCRIPT] } as unknown as VnfPackageModel,
    flavour: flavour(),
    hooks: o.hooks ?? ['instantiate_end', 'terminate_end', 'scale_start', 'scale_end', 'heal_start', 'heal_end'],
    params: o.params ?? (command as { additionalParams?: Record<string, unknown> }).additionalParams ?? {},
    instantiateParams: instantiateParams({ ha: true }),
    files: async () => new Map(),
  };
}

async function rejectsWith(p: Promise<unknown>, code: string, status: number, re: RegExp): Promise<void> {
  await assert.rejects(p, (e: Error & { code?: string; httpStatus?: number }) => {
    assert.equal(e.code, code, e.message);
    assert.equal(e.httpStatus, status);
    assert.match(e.message, re);
    return true;
  });
}

describe('k8s-kubeadm binding and validation', () => {
  const d = new KubeadmMgmtDriver({ connect: async () => assert.fail('no SSH in validation') });
  const heal = (...ids: string[]): HealCommand => ({ operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: ids, includeStorage: false, additionalParams: {} });

  it('claims Tacker\'s artifact name or healvnfm_driver: k8s-kubeadm only', () => {
    assert.ok(d.claims({ artifactName: 'mgmt-drivers-kubernetes', file: 'Scripts/kubernetes_mgmt.py', type: '', properties: {} }));
    assert.ok(d.claims({ artifactName: 'my-driver', file: 'x.py', type: '', properties: { healvnfm_driver: 'k8s-kubeadm' } }));
    assert.ok(!d.claims({ artifactName: 'mgmt-drivers-kubernetes', file: 'x.py', type: '', properties: { healvnfm_driver: 'k8s-kubespray' } }));
    assert.ok(!d.claims({ artifactName: 'mgmt-drivers-kubespray', file: 'x.py', type: '', properties: {} }));
  });

  it('applies to the hooks it serves for the right operation; declares the removal hooks idempotent', () => {
    const world = new CtxWorld(new FakeVims('inst-1'));
    const ctx = (hook: HookName, command: LcmCommand): MgmtContext => makeCtx(world, { hook, command, instance: instanceOf([m(11)], []) });
    assert.ok(d.applies(ctx('scale_start', scaleIn())));
    assert.ok(!d.applies(ctx('scale_start', scaleOut())));
    assert.ok(d.applies(ctx('scale_end', scaleOut())));
    assert.ok(!d.applies(ctx('scale_end', scaleIn())));
    assert.ok(!d.applies(ctx('instantiate_start', { operation: 'INSTANTIATE', flavourId: 'simple', additionalParams: {} })));
    assert.ok(d.applies(ctx('heal_end', heal('vi-w21'))));
    assert.ok(d.idempotent(ctx('heal_start', heal('vi-w21'))));
    assert.ok(d.idempotent(ctx('terminate_end', { operation: 'TERMINATE', terminationType: 'FORCEFUL', additionalParams: {} })));
    assert.ok(!d.idempotent(ctx('heal_end', heal('vi-w21'))));
    assert.ok(!d.idempotent(ctx('instantiate_end', { operation: 'INSTANTIATE', flavourId: 'simple', additionalParams: {} })));
    const other = makeCtx(world, { hook: 'heal_start', command: heal('vi-w21'), instance: instanceOf([m(11)], []) });
    (other as { flavour: unknown }).flavour = { ...flavour(), lcmHooks: { heal_start: { hook: 'heal_start', artifactName: 'someone-else', file: 'x.sh', type: '' } } };
    assert.ok(!d.applies(other));
  });

  it('instantiate: accepts Tacker\'s parameters; 400 for malformed ones or a script not in the package', async () => {
    const inst: LcmCommand = { operation: 'INSTANTIATE', flavourId: 'simple', additionalParams: instantiateParams({ ha: true }) };
    await d.validate(validation(inst, { instance: instanceOf([], []) }));
    await rejectsWith(d.validate(validation(inst, { files: ['Scripts/other.sh'] })), 'VNFM_ERR_API_BAD_REQUEST', 400, /script_path 'Scripts\/install_k8s_cluster\.sh' is not a file of the VNF package/);
    const bad = instantiateParams({ ha: true }) as { k8s_cluster_installation_param: { master_node: Record<string, unknown> } };
    bad.k8s_cluster_installation_param.master_node.ssh_cp_name = 'nowhere_CP';
    bad.k8s_cluster_installation_param.master_node.nic_cp_name = 'nowhere_CP';
    await rejectsWith(d.validate(validation({ ...inst, additionalParams: bad })), 'VNFM_ERR_API_BAD_REQUEST', 400, /no VDU of the flavour is bound to master_node's CP 'nowhere_CP'/);
    // not bound to instantiate: nothing checked
    await d.validate(validation({ ...inst, additionalParams: {} }, { hooks: ['heal_start'] }));
  });

  it('scale: the master aspect is refused with 400; a half flat override is 400; the worker aspect passes', async () => {
    await rejectsWith(d.validate(validation({ ...scaleOut(), aspectId: 'master_instance' })), 'VNFM_ERR_API_BAD_REQUEST', 400, /aspect master_instance scales the Kubernetes masters/);
    await rejectsWith(d.validate(validation({ ...scaleOut(), additionalParams: { master_node_username: 'x' } })), 'VNFM_ERR_API_BAD_REQUEST', 400, /must be given together/);
    await d.validate(validation(scaleOut()));
  });

  it('heal: 422 for a single master, too many master targets, a VNFC that is not a node; workers and one master pass', async () => {
    await d.validate(validation(heal('vi-m12')));
    await d.validate(validation(heal('vi-w21')));
    await rejectsWith(d.validate(validation(heal('vi-m12', 'vi-m13'))), 'VNFM_ERR_MGMT_REFUSED', 422, /at most 1 master\(s\) replaced at a time; 2 master targets/);
    await rejectsWith(d.validate(validation(heal('vi-m11'), { instance: instanceOf([m(11)], [w(21)]) })), 'VNFM_ERR_MGMT_REFUSED', 422, /^The number of Master-Nodes is 1 or less\. If you want to heal, please respawn\.$/);
    const inst = instanceOf([m(11), m(12), m(13)], [w(21)], '10.0.0.100');
    inst.instantiatedVnfInfo?.vnfcResourceInfo?.push({ id: 'x1', vduId: 'storageServer', computeResource: { resourceId: 'srv-x1' } });
    inst.instantiatedVnfInfo?.vnfcInfo?.push({ id: 'vi-x1', vduId: 'storageServer', vnfcResourceInfoId: 'x1', vnfcState: 'STARTED' });
    await rejectsWith(d.validate(validation(heal('vi-x1'), { instance: inst })), 'VNFM_ERR_MGMT_REFUSED', 422, /VNFC vi-x1 is not a node of the Kubernetes cluster/);
    await rejectsWith(d.validate(validation({ ...heal('vi-w21'), additionalParams: { drain: { timeoutSeconds: 'soon' } } })), 'VNFM_ERR_API_BAD_REQUEST', 400, /timeoutSeconds/);
    // whole heal: parameters only
    await d.validate(validation({ operation: 'HEAL', scope: 'entire', vnfcInfoIds: [], includeStorage: true, additionalParams: {} }));
  });
});
