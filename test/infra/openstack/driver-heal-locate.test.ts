/**
 * The OpenStack driver's VNFC heal without listing the whole stack, on the simulated OpenStack
 * (vm-basic: VDU1 in an AutoScalingGroup of 2, VDU2 in the top stack):
 * - a target whose stored location (owning stack + resource name) still holds its server is
 *   found by listing that stack alone (no `nested_depth` listing);
 * - a stale location falls back to the full listing and never heals another server;
 * - the observation after such a heal re-lists only the stacks the heal changed, and is equal to
 *   a full observation (by a driver that kept nothing);
 * - an observation kept from before another VNFM process changed the VNF is not used.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InfraDriver, ObservedResources } from '../../../src/infra/infra-driver.ts';
import { createOpenStackDriver } from '../../../src/infra/openstack/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import type { VimConnection } from '../../../src/vims/vim-registry.ts';
import { applyObserved, type HeatCall, healPlan, type LoadedPackage, loadPackage, makeContext, markCalls, newOp, recordFetch, type TestContext, VM_BASIC_DIR } from './driver-fixtures.ts';

function vimOf(sim: OpenStackSim): VimConnection {
  const c = sim.credentials;
  return {
    vimId: 'sim-vim',
    vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
    interfaceInfo: { endpoint: c.authUrl },
    accessInfo: { username: c.username, password: c.password, project: c.project, projectDomain: c.projectDomain, userDomain: c.userDomain, region: c.region },
  };
}

/** Resource listings of the whole stack (`nested_depth` > 0). */
function deepListings(calls: readonly HeatCall[]): HeatCall[] {
  return calls.filter((c) => c.method === 'GET' && c.path.endsWith('/resources') && /nested_depth=[1-9]/.test(c.query));
}

/** Reads of a stack itself (`GET /stacks/<name>/<id>`). */
function stackReads(calls: readonly HeatCall[]): HeatCall[] {
  return calls.filter((c) => c.method === 'GET' && /\/stacks\/[^/]+\/[^/]+$/.test(c.path));
}

function resourceListings(calls: readonly HeatCall[]): HeatCall[] {
  return calls.filter((c) => c.method === 'GET' && c.path.endsWith('/resources'));
}

describe('OpenStack driver: heal at the stored location, partial re-observation (simulator)', { timeout: 60_000 }, () => {
  let sim: OpenStackSim;
  let pkg: LoadedPackage;
  let driver: InfraDriver;
  let ctx: TestContext;

  /** A full observation by a driver that has kept nothing. */
  async function fullObserve(): Promise<ObservedResources> {
    return createOpenStackDriver({ pollInitialMs: 10 }).observe(ctx);
  }

  /** Observes like the engine after an op (with `driver`), returns the observation and the Heat calls. */
  async function observeRecorded(d: InfraDriver = driver): Promise<{ obs: ObservedResources; calls: HeatCall[] }> {
    const rec = recordFetch(sim.url);
    try {
      return { obs: await d.observe(ctx), calls: rec.calls };
    } finally {
      rec.restore();
    }
  }

  async function healRecorded(plan: ReturnType<typeof healPlan>, d: InfraDriver = driver): Promise<HeatCall[]> {
    const rec = recordFetch(sim.url);
    try {
      await d.heal(ctx, plan);
      return rec.calls;
    } finally {
      rec.restore();
    }
  }

  function vnfcs(vduId: string) {
    return (ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).filter((r) => r.vduId === vduId);
  }

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    pkg = await loadPackage(VM_BASIC_DIR);
    driver = createOpenStackDriver({ pollInitialMs: 10, http: { baseDelayMs: 1, maxDelayMs: 5 } });
    ctx = makeContext({ instanceId: 'heal-locate-1', pkg, vim: vimOf(sim), vduCounts: { VDU1: 2, VDU2: 1 }, scaleLevels: { VDU1_scale: 1 } });
    newOp(ctx, 'INSTANTIATE');
    await driver.instantiate(ctx, { flavourId: 'simple' });
    applyObserved(ctx, await driver.observe(ctx));
  });

  after(async () => {
    await sim.close();
  });

  it('a target at its stored location is healed after listing its own stack only; the observation after re-lists that stack only and equals a full one', async () => {
    const [target, other] = vnfcs('VDU1');
    assert.ok(target && other);
    newOp(ctx, 'HEAL');
    const calls = await healRecorded(healPlan(ctx, [target]));
    assert.deepEqual(deepListings(calls), [], 'no listing of the whole stack');
    assert.equal(resourceListings(calls).length, 1, 'one listing: the member stack of the target');
    assert.ok(resourceListings(calls)[0]?.path.includes(String(target.metadata?.stack_id).split('/')[1] as string));
    assert.deepEqual(markCalls(calls), [`${String(target.metadata?.stack_id).split('/')[1]}/VDU1`]);

    const { obs, calls: obsCalls } = await observeRecorded();
    assert.deepEqual(deepListings(obsCalls), [], 'the observation re-lists only the changed stack');
    assert.deepEqual(stackReads(obsCalls), [], "the top stack is not read again: the heal wait's last poll is used");
    assert.deepEqual(obs, await fullObserve(), 'partial observation == full observation');
    const healed = obs.vnfcs.find((v) => v.stableKey === target.metadata?.heat_resource_path);
    assert.notEqual(healed?.computeResource.resourceId, target.computeResource.resourceId, 'target replaced');
    assert.equal(obs.vnfcs.find((v) => v.stableKey === other.metadata?.heat_resource_path)?.computeResource.resourceId, other.computeResource.resourceId, 'other member untouched');
    applyObserved(ctx, obs);
  });

  it('several targets (a group member with its volume, and VDU2 in the top stack): partial observation == full observation', async () => {
    const [m] = vnfcs('VDU1');
    const [v2] = vnfcs('VDU2');
    assert.ok(m && v2);
    newOp(ctx, 'HEAL');
    const calls = await healRecorded(healPlan(ctx, [m, v2], { includeStorage: true }));
    assert.deepEqual(deepListings(calls), []);
    assert.equal(markCalls(calls).length, 4, 'two servers and their two volumes');
    const { obs, calls: obsCalls } = await observeRecorded();
    assert.deepEqual(deepListings(obsCalls), []);
    assert.deepEqual(obs, await fullObserve());
    const oldVolumes = new Set((ctx.instance.instantiatedVnfInfo?.virtualStorageResourceInfo ?? []).map((s) => s.storageResource.resourceId));
    assert.equal(obs.storages.filter((s) => !oldVolumes.has(s.resourceId)).length, 2, 'both volumes replaced');
    applyObserved(ctx, obs);
  });

  it('a stale stored location (it names the other member) falls back to the full listing and heals the right server', async () => {
    const [a, b] = vnfcs('VDU1');
    assert.ok(a && b);
    const stale = structuredClone(a);
    stale.metadata = { ...b.metadata }; // b's stack and path, a's server id
    const info = ctx.instance.instantiatedVnfInfo;
    assert.ok(info?.vnfcResourceInfo);
    info.vnfcResourceInfo = info.vnfcResourceInfo.map((r) => (r.id === a.id ? stale : r));
    newOp(ctx, 'HEAL');
    const calls = await healRecorded(healPlan(ctx, [stale]));
    assert.equal(deepListings(calls).length, 1, 'the whole stack was listed');
    assert.deepEqual(markCalls(calls), [`${String(a.metadata?.stack_id).split('/')[1]}/VDU1`], "a's server marked, not b's");
    const obs = await fullObserve();
    assert.notEqual(obs.vnfcs.find((v) => v.stableKey === a.metadata?.heat_resource_path)?.computeResource.resourceId, a.computeResource.resourceId, 'a replaced');
    assert.equal(obs.vnfcs.find((v) => v.stableKey === b.metadata?.heat_resource_path)?.computeResource.resourceId, b.computeResource.resourceId, 'b untouched');
    // The marks name the stack that really owns the server: re-listing it is enough.
    const { obs: after, calls: obsCalls } = await observeRecorded();
    assert.deepEqual(deepListings(obsCalls), []);
    assert.deepEqual(after, obs);
    applyObserved(ctx, after);
  });

  it('an observation kept from before another VNFM process healed the VNF is not used', async () => {
    applyObserved(ctx, (await observeRecorded()).obs); // this driver keeps the current observation
    const [x, y] = vnfcs('VDU1');
    assert.ok(x && y);
    // Another process (its own driver) heals x and records the result.
    const other = createOpenStackDriver({ pollInitialMs: 10 });
    newOp(ctx, 'HEAL');
    await other.heal(ctx, healPlan(ctx, [x]));
    applyObserved(ctx, await other.observe(ctx));
    // This process heals y: its kept observation still has x's old server.
    const [, y2] = vnfcs('VDU1');
    assert.equal(y2?.id, y.id);
    newOp(ctx, 'HEAL');
    await healRecorded(healPlan(ctx, [y2 as NonNullable<typeof y2>]));
    const { obs, calls } = await observeRecorded();
    assert.equal(deepListings(calls).length, 1, 'full listing: the kept observation is outdated');
    assert.deepEqual(obs, await fullObserve());
    assert.ok(!obs.vnfcs.some((v) => v.computeResource.resourceId === x.computeResource.resourceId), "x's old server is not reported");
  });

  it('a heal that changes the stack parameters is followed by a full observation', async () => {
    applyObserved(ctx, (await observeRecorded()).obs);
    const [t] = vnfcs('VDU1');
    assert.ok(t);
    newOp(ctx, 'HEAL');
    const plan = healPlan(ctx, [t]);
    plan.additionalParams = { nfv: { VDU: { VDU2: { locationConstraints: 'nova' } } } };
    await healRecorded(plan);
    const { obs, calls } = await observeRecorded();
    assert.equal(deepListings(calls).length, 1);
    assert.deepEqual(obs, await fullObserve());
  });

  it('after an entire heal the observation uses the listing read while the new stack was created (no request) and equals a full one', async () => {
    applyObserved(ctx, (await observeRecorded()).obs);
    const oldStack = ctx.instance.instantiatedVnfInfo?.metadata?.stack_id;
    newOp(ctx, 'HEAL');
    const calls = await healRecorded({ targets: [], entire: true, includeStorage: false, additionalParams: {} });
    assert.deepEqual(deepListings(calls), [], 'the new stack is listed stack by stack, not with nested_depth');
    const { obs, calls: obsCalls } = await observeRecorded();
    assert.deepEqual(obsCalls.filter((c) => c.path.includes('/stacks')), [], 'no Heat request (only Nova is asked): the wait read the stack and its listing');
    assert.notEqual(obs.metadata?.stack_id, oldStack, 'a new stack');
    assert.deepEqual(obs, await fullObserve(), 'the listing read during the create == a nested_depth listing');
    assert.equal(obs.vnfcs.length, 3);
    // Used once: the next observation reads Heat again.
    const again = await observeRecorded();
    assert.equal(deepListings(again.calls).length, 1);
    assert.deepEqual(again.obs, obs);
  });
});
