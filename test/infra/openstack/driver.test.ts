/**
 * The OpenStack driver against the simulated OpenStack (real HTTP, port 0), with the sample VM
 * package `samples/vm-basic` (VDU1 in an AutoScalingGroup with a volume per member, VDU2
 * standalone with a volume): instantiate, observe, VNFC heal (with and without storage), a heal
 * whose Heat update fails and is retried, scale out/in and its rollback, entire heal at a scaled
 * level, terminate, and the error mapping.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import type { InfraDriver, ObservedResources, ObservedVnfc } from '../../../src/infra/infra-driver.ts';
import { createOpenStackDriver } from '../../../src/infra/openstack/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import type { VimConnection } from '../../../src/vims/vim-registry.ts';
import {
  applyObserved,
  healPlan,
  type LoadedPackage,
  loadPackage,
  makeContext,
  markCalls,
  newOp,
  recordFetch,
  scalePlan,
  type TestContext,
  VM_BASIC_DIR,
} from './driver-fixtures.ts';

function vdu(obs: ObservedResources, vduId: string): ObservedVnfc[] {
  return obs.vnfcs.filter((v) => v.vduId === vduId);
}

function ids(vnfcs: readonly ObservedVnfc[]): Map<string, string> {
  return new Map(vnfcs.map((v) => [v.stableKey ?? '', v.computeResource.resourceId]));
}

function vimOf(sim: OpenStackSim): VimConnection {
  const c = sim.credentials;
  return {
    vimId: 'sim-vim',
    vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
    interfaceInfo: { endpoint: c.authUrl },
    accessInfo: { username: c.username, password: c.password, project: c.project, projectDomain: c.projectDomain, userDomain: c.userDomain, region: c.region },
  };
}

async function simAdmin(sim: OpenStackSim, method: string, path: string, body?: unknown): Promise<void> {
  const res = await fetch(`${sim.url}/_sim/${path}`, {
    method,
    headers: { 'X-Sim-Admin-Secret': sim.adminSecret, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  assert.ok(res.status < 300, `/_sim/${path} answered ${res.status}`);
}

describe('OpenStack driver on the simulated OpenStack (vm-basic)', { timeout: 60_000 }, () => {
  let sim: OpenStackSim;
  let pkg: LoadedPackage;
  let driver: InfraDriver;
  let ctx: TestContext;

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    pkg = await loadPackage(VM_BASIC_DIR);
    driver = createOpenStackDriver({ pollInitialMs: 10, http: { baseDelayMs: 1, maxDelayMs: 5 } });
    ctx = makeContext({ instanceId: 'vm-basic-1', pkg, vim: vimOf(sim), vduCounts: { VDU1: 2, VDU2: 1 }, scaleLevels: { VDU1_scale: 1 } });
  });

  after(async () => {
    await sim.close();
  });

  async function observe(): Promise<ObservedResources> {
    const obs = await driver.observe(ctx);
    applyObserved(ctx, obs);
    return obs;
  }

  it('instantiates the stack and observes 2 VDU1 members, VDU2, their volumes and the internal network', async () => {
    newOp(ctx, 'INSTANTIATE');
    await driver.instantiate(ctx, { flavourId: 'simple', additionalParams: { nfv: { VDU: { VDU2: { locationConstraints: 'nova' } } } } });
    assert.match(String(ctx.state.stack), /^vnf-vm-basic-1\/[0-9a-f-]{36}$/);
    const obs = await observe();
    assert.equal(vdu(obs, 'VDU1').length, 2);
    assert.equal(vdu(obs, 'VDU2').length, 1);
    assert.equal(obs.metadata?.stack_name, 'vnf-vm-basic-1');
    assert.equal(`vnf-vm-basic-1/${String(obs.metadata?.stack_id)}`, ctx.state.stack);
    for (const v of vdu(obs, 'VDU1')) {
      assert.match(v.stableKey ?? '', /^VDU1_scale_group\/[^/]+\/VDU1$/);
      assert.equal(v.metadata?.resource_name, 'VDU1');
      assert.match(String(v.metadata?.stack_id), /^vnf-vm-basic-1-VDU1_scale_group-.*\/[0-9a-f-]{36}$/, 'VDU1 is owned by its member stack');
      assert.equal(v.storageResourceIds?.length, 1);
      assert.equal(v.cps?.[0]?.cpdId, 'VDU1_CP1');
      assert.equal(v.zoneId, 'nova');
      assert.equal(v.computeResource.vimLevelResourceType, 'OS::Nova::Server');
    }
    const vdu2 = vdu(obs, 'VDU2')[0];
    assert.equal(vdu2?.stableKey, 'VDU2');
    assert.equal(vdu2?.metadata?.stack_id, ctx.state.stack);
    assert.equal(obs.storages.length, 3);
    assert.deepEqual(obs.virtualLinks.map((l) => l.vnfVirtualLinkDescId), ['internalVL1']);
    const nfv = obs.metadata?.nfv as { VDU: Record<string, Record<string, unknown>> };
    assert.equal(nfv.VDU.VDU1?.desired_capacity, 2);
    assert.equal(nfv.VDU.VDU2?.locationConstraints, 'nova', 'additionalParams.nfv reached Heat');
    assert.equal(nfv.VDU.VDU1?.vcImageId, pkg.model.flavours.simple?.vdus.VDU1?.swImage?.name);
  });

  it('adopts the stack when instantiate is retried after a crash', async () => {
    const before = ctx.state.stack;
    const rec = recordFetch(sim.url);
    try {
      await driver.instantiate(ctx, { flavourId: 'simple' });
    } finally {
      rec.restore();
    }
    assert.equal(ctx.state.stack, before);
    assert.ok(!rec.calls.some((c) => c.method === 'POST' && c.path.endsWith('/stacks')), 'no second stack create');
  });

  it('VNFC heal replaces only the target server, in its member stack, keeping its stable key', async () => {
    const beforeObs = await observe();
    const target = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo?.find((r) => r.vduId === 'VDU1');
    assert.ok(target);
    newOp(ctx, 'HEAL');
    const rec = recordFetch(sim.url);
    const t0 = performance.now();
    try {
      await driver.heal(ctx, healPlan(ctx, [target]));
    } finally {
      rec.restore();
    }
    const ms = performance.now() - t0;
    console.log(`# driver VNFC heal on the sim (heat delay 0): ${ms.toFixed(1)} ms`);
    const marks = markCalls(rec.calls);
    assert.equal(marks.length, 1);
    assert.equal(marks[0], `${String(target.metadata?.stack_id).split('/')[1]}/VDU1`, 'marked in the member stack that owns the server');
    assert.equal(rec.calls.filter((c) => c.method === 'PATCH' && /\/stacks\/vnf-vm-basic-1\/[^/]+$/.test(c.path)).length, 1, 'one top-stack update');
    const afterObs = await observe();
    const was = ids(beforeObs.vnfcs);
    const now = ids(afterObs.vnfcs);
    assert.deepEqual([...now.keys()].sort(), [...was.keys()].sort(), 'same stable keys');
    for (const [key, id] of now) {
      if (key === target.metadata?.heat_resource_path) assert.notEqual(id, was.get(key), 'target replaced');
      else assert.equal(id, was.get(key), `${key} untouched`);
    }
    assert.deepEqual(
      afterObs.storages.map((s) => s.resourceId).sort(),
      beforeObs.storages.map((s) => s.resourceId).sort(),
      'volumes kept without includeStorage',
    );
  });

  it('VNFC heal with includeStorage also replaces the target volume', async () => {
    const beforeObs = await observe();
    const target = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo?.find((r) => r.vduId === 'VDU1');
    assert.ok(target?.storageResourceIds?.[0]);
    newOp(ctx, 'HEAL');
    await driver.heal(ctx, healPlan(ctx, [target], { includeStorage: true }));
    const afterObs = await observe();
    const healed = afterObs.vnfcs.find((v) => v.stableKey === target.metadata?.heat_resource_path);
    assert.ok(healed);
    assert.notEqual(healed.computeResource.resourceId, target.computeResource.resourceId);
    assert.notEqual(healed.storageResourceIds?.[0], target.storageResourceIds[0], 'volume replaced');
    const oldVolumes = new Set(beforeObs.storages.map((s) => s.resourceId));
    assert.equal(afterObs.storages.filter((s) => !oldVolumes.has(s.resourceId)).length, 1, 'only that volume is new');
  });

  it('VNFC heal finds the server again when the stored location is stale', async () => {
    await observe();
    const target = structuredClone(ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo?.find((r) => r.vduId === 'VDU2'));
    assert.ok(target);
    target.metadata = { stack_id: 'vnf-gone/00000000-0000-0000-0000-000000000000', resource_name: 'VDU2' };
    const info = ctx.instance.instantiatedVnfInfo;
    assert.ok(info?.vnfcResourceInfo);
    info.vnfcResourceInfo = info.vnfcResourceInfo.map((r) => (r.id === target.id ? target : r));
    newOp(ctx, 'HEAL');
    await driver.heal(ctx, healPlan(ctx, [target]));
    const obs = await observe();
    assert.notEqual(vdu(obs, 'VDU2')[0]?.computeResource.resourceId, target.computeResource.resourceId);
  });

  it('a heal whose Heat update fails is retried without marking twice', async () => {
    const beforeObs = await observe();
    const target = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo?.find((r) => r.vduId === 'VDU1');
    assert.ok(target);
    newOp(ctx, 'HEAL');
    const plan = healPlan(ctx, [target]);
    await simAdmin(sim, 'POST', 'heat/failures', { operation: 'update', count: 1, reason: 'injected: no valid host' });
    const rec = recordFetch(sim.url);
    try {
      await assert.rejects(driver.heal(ctx, plan), (e: unknown) => {
        assert.ok(isVnfmError(e, 'VNFM_ERR_VIM_FAILED'), String(e));
        assert.match(e.message, /UPDATE_FAILED/);
        assert.match(e.message, /injected: no valid host/);
        return true;
      });
      assert.equal(markCalls(rec.calls).length, 1);
      await simAdmin(sim, 'DELETE', 'heat/failures');
      // retry of the same op: same ctx.state
      await driver.heal(ctx, plan);
    } finally {
      rec.restore();
    }
    assert.equal(markCalls(rec.calls).length, 1, 'marked once over both attempts');
    const updates = rec.calls.filter((c) => c.method === 'PATCH' && /\/stacks\/vnf-vm-basic-1\/[^/]+$/.test(c.path));
    assert.equal(updates.length, 2, 'the update was issued again');
    const afterObs = await observe();
    const was = ids(beforeObs.vnfcs);
    for (const [key, id] of ids(afterObs.vnfcs)) {
      if (key === target.metadata?.heat_resource_path) assert.notEqual(id, was.get(key));
      else assert.equal(id, was.get(key));
    }
    assert.ok(!afterObs.vnfcs.some((v) => v.unhealthy), 'nothing left unhealthy');
  });

  it('scales out and in; scale-in removes the member the driver picked', async () => {
    const base = await observe();
    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 2 };
    ctx.targetVduCounts = { VDU1: 3, VDU2: 1 };
    await driver.scale(ctx, scalePlan('SCALE_OUT', 'VDU1_scale', 1, 2));
    const out = await observe();
    assert.equal(vdu(out, 'VDU1').length, 3);
    for (const [key, id] of ids(base.vnfcs)) assert.equal(ids(out.vnfcs).get(key), id, 'existing VNFCs untouched by scale out');

    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 1 };
    ctx.targetVduCounts = { VDU1: 2, VDU2: 1 };
    const rec = recordFetch(sim.url);
    try {
      await driver.scale(ctx, scalePlan('SCALE_IN', 'VDU1_scale', 2, 1));
    } finally {
      rec.restore();
    }
    const marks = markCalls(rec.calls);
    assert.equal(marks.length, 1, 'one member marked for removal');
    const inObs = await observe();
    assert.equal(vdu(inObs, 'VDU1').length, 2);
    const removedMember = marks[0]?.split('/')[1] ?? '';
    assert.ok(!vdu(inObs, 'VDU1').some((v) => v.metadata?.parent_resource === removedMember), 'the marked member is the one removed');
    assert.ok(vdu(out, 'VDU1').some((v) => v.metadata?.parent_resource === removedMember));
  });

  it('rollbackScaleOut brings the group back to the level before the scale out', async () => {
    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 2 };
    ctx.targetVduCounts = { VDU1: 3, VDU2: 1 };
    const plan = scalePlan('SCALE_OUT', 'VDU1_scale', 1, 2);
    await driver.scale(ctx, plan);
    const out = await driver.observe(ctx);
    assert.equal(vdu(out, 'VDU1').length, 3);
    await driver.rollbackScaleOut(ctx, plan);
    const back = await driver.observe(ctx);
    assert.equal(vdu(back, 'VDU1').length, 2);
    const newest = vdu(out, 'VDU1').filter((v) => !vdu(back, 'VDU1').some((b) => b.stableKey === v.stableKey));
    assert.equal(newest.length, 1);
    assert.equal(newest[0]?.metadata?.creation_time, vdu(out, 'VDU1').map((v) => String(v.metadata?.creation_time)).sort().at(-1), 'the newest member went');
    ctx.targetScaleLevels = { VDU1_scale: 1 };
    ctx.targetVduCounts = { VDU1: 2, VDU2: 1 };
    applyObserved(ctx, back);
  });

  it('entire heal re-creates the stack at the current (scaled) level', async () => {
    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 2 };
    ctx.targetVduCounts = { VDU1: 3, VDU2: 1 };
    await driver.scale(ctx, scalePlan('SCALE_OUT', 'VDU1_scale', 1, 2));
    const before = await observe();
    assert.equal(vdu(before, 'VDU1').length, 3);
    newOp(ctx, 'HEAL');
    await driver.heal(ctx, { targets: [], entire: true, includeStorage: true, additionalParams: {} });
    assert.deepEqual((ctx.state.entireHeal as { phase: string }).phase, 'created');
    const after = await observe();
    assert.notEqual(after.metadata?.stack_id, before.metadata?.stack_id, 'new stack id');
    assert.equal(ctx.state.stack, `vnf-vm-basic-1/${String(after.metadata?.stack_id)}`);
    assert.equal(vdu(after, 'VDU1').length, 3, 'scale level kept');
    assert.equal(vdu(after, 'VDU2').length, 1);
    const oldIds = new Set(before.vnfcs.map((v) => v.computeResource.resourceId));
    assert.ok(after.vnfcs.every((v) => !oldIds.has(v.computeResource.resourceId)), 'every server is new');
    const nfv = after.metadata?.nfv as { VDU: Record<string, Record<string, unknown>> } | undefined;
    assert.equal(nfv?.VDU.VDU2?.locationConstraints, 'nova', 'instantiate-time user nfv kept');

    // a retry of the finished entire heal changes nothing
    await driver.heal(ctx, { targets: [], entire: true, includeStorage: true, additionalParams: {} });
    const again = await driver.observe(ctx);
    assert.equal(again.metadata?.stack_id, after.metadata?.stack_id);
  });

  it('an entire heal whose re-create fails resumes after the delete on retry', async () => {
    const before = await observe();
    newOp(ctx, 'HEAL');
    const plan = { targets: [], entire: true, includeStorage: true, additionalParams: {} };
    await simAdmin(sim, 'POST', 'heat/failures', { operation: 'create', count: 1, reason: 'injected: quota exceeded' });
    const rec = recordFetch(sim.url);
    try {
      await assert.rejects(driver.heal(ctx, plan), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_FAILED') && /injected: quota exceeded/.test(e.message));
      assert.equal((ctx.state.entireHeal as { phase: string }).phase, 'deleted');
      await driver.heal(ctx, plan);
    } finally {
      rec.restore();
      await simAdmin(sim, 'DELETE', 'heat/failures');
    }
    assert.equal(rec.calls.filter((c) => c.method === 'DELETE').length, 1, 'the old stack was deleted once');
    assert.equal(rec.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/stacks')).length, 1, 'one create; the retry updates the failed stack');
    const after = await observe();
    assert.notEqual(after.metadata?.stack_id, before.metadata?.stack_id);
    assert.equal(vdu(after, 'VDU1').length, 3);
    assert.ok(!after.vnfcs.some((v) => v.unhealthy));
  });

  it('terminates: the stack is gone and a second terminate is a no-op', async () => {
    newOp(ctx, 'TERMINATE');
    await driver.terminate(ctx, {});
    const obs = await driver.observe(ctx);
    assert.deepEqual(obs, { vnfcs: [], storages: [], virtualLinks: [], metadata: {} });
    await driver.terminate(ctx, {});
    await driver.rollbackInstantiate(ctx);
  });

  it('maps Keystone refusals to VIM_FAILED and outages to VIM_UNREACHABLE, without secrets', async () => {
    const bad = makeContext({ instanceId: 'vm-basic-2', pkg, vim: { ...vimOf(sim), accessInfo: { ...vimOf(sim).accessInfo, password: 'wrong-password-123' } }, vduCounts: { VDU1: 1, VDU2: 1 } });
    await assert.rejects(driver.instantiate(bad, {}), (e: unknown) => {
      assert.ok(isVnfmError(e, 'VNFM_ERR_VIM_FAILED'), String(e));
      assert.doesNotMatch(e.message, /wrong-password-123/);
      assert.match(e.message, /^instantiate: /);
      return true;
    });
    const ok = makeContext({ instanceId: 'vm-basic-3', pkg, vim: vimOf(sim), vduCounts: { VDU1: 1, VDU2: 1 } });
    await simAdmin(sim, 'POST', 'api/break', { count: 50, status: 503 });
    try {
      await assert.rejects(driver.observe(ok), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_UNREACHABLE'));
    } finally {
      await simAdmin(sim, 'POST', 'api/break', { count: 0 });
    }
    const missing = makeContext({ instanceId: 'vm-basic-4', pkg, vim: vimOf(sim), vduCounts: { VDU1: 1, VDU2: 1 } });
    await assert.rejects(driver.heal(missing, { targets: [], entire: false, includeStorage: false, additionalParams: {} }).then(() => driver.scale(missing, scalePlan('SCALE_OUT', 'VDU1_scale', 0, 1))), (e: unknown) =>
      isVnfmError(e, 'VNFM_ERR_INFRA_STACK_MISSING'),
    );
  });

  it('observe: a missing stack is VNFM_ERR_INFRA_STACK_MISSING (terminal), except for an instantiate before its create and a terminate', async () => {
    const none = makeContext({ instanceId: 'vm-basic-never', pkg, vim: vimOf(sim), vduCounts: { VDU1: 1, VDU2: 1 } });
    assert.deepEqual((await driver.observe(none)).vnfcs, [], 'INSTANTIATE that created nothing yet: nothing expected');
    newOp(none, 'TERMINATE');
    assert.deepEqual((await driver.observe(none)).vnfcs, [], 'TERMINATE: nothing expected');
    for (const op of ['HEAL', 'SCALE', 'MODIFY_INFO'] as const) {
      newOp(none, op);
      await assert.rejects(driver.observe(none), (e: unknown) => {
        assert.ok(isVnfmError(e, 'VNFM_ERR_INFRA_STACK_MISSING'), String(e));
        assert.equal(e.retryable, false, 'terminal: retrying cannot bring the stack back');
        assert.match(e.message, /Heat stack vnf-vm-basic-never of VNF instance vm-basic-never does not exist any more/);
        return true;
      });
    }
    // An instantiate whose stack was created and then deleted behind its back: missing too.
    const made = makeContext({ instanceId: 'vm-basic-gone', pkg, vim: vimOf(sim), vduCounts: { VDU1: 1, VDU2: 1 } });
    await driver.instantiate(made, {});
    const created = await driver.observe(made);
    assert.ok(created.vnfcs.length > 0);
    newOp(made, 'TERMINATE');
    await driver.terminate(made, {});
    newOp(made, 'INSTANTIATE');
    made.state.stack = `vnf-vm-basic-gone/${String(created.metadata?.stack_id)}`;
    await assert.rejects(driver.observe(made), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INFRA_STACK_MISSING'));
  });

  it('times out with LCM_TIMEOUT when the stack does not settle in time', async () => {
    const slow = makeContext({ instanceId: 'vm-basic-5', pkg, vim: vimOf(sim), vduCounts: { VDU1: 1, VDU2: 1 }, stackTimeoutMs: 150 });
    sim.setHeatDelayMs(2_000);
    try {
      await assert.rejects(driver.instantiate(slow, {}), (e: unknown) => isVnfmError(e, 'VNFM_ERR_LCM_TIMEOUT'));
    } finally {
      sim.setHeatDelayMs(0);
    }
    slow.vimSettings.stackTimeoutMs = 10_000;
    await driver.terminate(slow, {});
  });
});
