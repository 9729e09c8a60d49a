/**
 * The OpenStack driver with Tacker's own `basic_lcms_min` package (built as a CSAR from the
 * Tacker samples in test/fixtures) on the simulated OpenStack: the BaseHOT of a real Tacker package must run
 * unchanged (VDU1 in an AutoScalingGroup, VDU2 standalone, a server group, an internal network).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InfraDriver, ObservedResources } from '../../../src/infra/infra-driver.ts';
import { createOpenStackDriver } from '../../../src/infra/openstack/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { applyObserved, healPlan, LCMS_MIN_DIR, loadPackage, makeContext, markCalls, newOp, recordFetch, scalePlan, type TestContext } from './driver-fixtures.ts';

describe('OpenStack driver with Tacker basic_lcms_min on the simulated OpenStack', { timeout: 60_000 }, () => {
  let sim: OpenStackSim;
  let driver: InfraDriver;
  let ctx: TestContext;

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    const pkg = await loadPackage(LCMS_MIN_DIR);
    const c = sim.credentials;
    driver = createOpenStackDriver({ pollInitialMs: 10 });
    ctx = makeContext({
      instanceId: 'lcms-min-1',
      pkg,
      vim: {
        vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
        interfaceInfo: { endpoint: c.authUrl },
        accessInfo: { username: c.username, password: c.password, project: c.project, projectDomain: c.projectDomain, userDomain: c.userDomain, region: c.region },
      },
      vduCounts: { VDU1: 1, VDU2: 1 },
      scaleLevels: { VDU1_scale: 0 },
    });
  });

  after(async () => {
    await sim.close();
  });

  async function observe(): Promise<ObservedResources> {
    const obs = await driver.observe(ctx);
    applyObserved(ctx, obs);
    return obs;
  }

  it('instantiates at instantiation_level_1 and observes VDU1, VDU2 and internalVL3', async () => {
    await driver.instantiate(ctx, {});
    const obs = await observe();
    assert.deepEqual(obs.vnfcs.map((v) => v.vduId).sort(), ['VDU1', 'VDU2']);
    assert.match(obs.vnfcs.find((v) => v.vduId === 'VDU1')?.stableKey ?? '', /^VDU1_scale_group\/[^/]+\/VDU1$/);
    assert.deepEqual(obs.virtualLinks.map((l) => l.vnfVirtualLinkDescId), ['internalVL3']);
    assert.deepEqual(obs.storages, []);
  });

  it('heals VDU1 and VDU2 with one stack update', async () => {
    const before = await observe();
    const targets = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
    newOp(ctx, 'HEAL');
    const rec = recordFetch(sim.url);
    try {
      await driver.heal(ctx, healPlan(ctx, targets));
    } finally {
      rec.restore();
    }
    assert.equal(markCalls(rec.calls).length, 2);
    assert.equal(rec.calls.filter((c) => c.method === 'PATCH' && /\/stacks\/vnf-lcms-min-1\/[^/]+$/.test(c.path)).length, 1);
    const after = await observe();
    for (const v of after.vnfcs) {
      const old = before.vnfcs.find((b) => b.stableKey === v.stableKey);
      assert.ok(old, `${v.stableKey} kept its key`);
      assert.notEqual(v.computeResource.resourceId, old.computeResource.resourceId);
    }
    assert.equal(after.virtualLinks[0]?.resourceId, before.virtualLinks[0]?.resourceId, 'network kept');
  });

  it('scales VDU1 out to level 2 and back in to level 1', async () => {
    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 2 };
    ctx.targetVduCounts = { VDU1: 3, VDU2: 1 };
    await driver.scale(ctx, scalePlan('SCALE_OUT', 'VDU1_scale', 0, 2));
    assert.equal((await observe()).vnfcs.filter((v) => v.vduId === 'VDU1').length, 3);
    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 1 };
    ctx.targetVduCounts = { VDU1: 2, VDU2: 1 };
    await driver.scale(ctx, scalePlan('SCALE_IN', 'VDU1_scale', 2, 1));
    assert.equal((await observe()).vnfcs.filter((v) => v.vduId === 'VDU1').length, 2);
  });

  it('entire heal keeps 2 VDU1 and terminate removes everything', async () => {
    const before = await observe();
    newOp(ctx, 'HEAL');
    await driver.heal(ctx, { targets: [], entire: true, includeStorage: false, additionalParams: {} });
    const after = await observe();
    assert.notEqual(after.metadata?.stack_id, before.metadata?.stack_id);
    assert.equal(after.vnfcs.filter((v) => v.vduId === 'VDU1').length, 2);
    newOp(ctx, 'TERMINATE');
    await driver.terminate(ctx, {});
    assert.equal((await driver.observe(ctx)).vnfcs.length, 0);
  });
});
