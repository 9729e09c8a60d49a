/**
 * The OpenStack driver against a REAL Keystone + Heat (scripts/real-heat.sh), with
 * `samples/vm-basic` on the nova/neutron/cinder stand-ins (the VIM's Heat environment):
 * instantiate, observe, VNFC heal of one group member (timed), heal with its volume, terminate.
 * Test stage `real-heat`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InfraDriver, ObservedResources } from '../../../src/infra/infra-driver.ts';
import { createOpenStackDriver } from '../../../src/infra/openstack/index.ts';
import { stage } from '../../helpers/stages.ts';
import {
  applyObserved,
  healPlan,
  loadPackage,
  makeContext,
  markCalls,
  newOp,
  realHeatVim,
  recordFetch,
  type TestContext,
  uniqueInstanceId,
  VM_BASIC_DIR,
} from './driver-fixtures.ts';

const realHeat = await stage('real-heat');

describe('OpenStack driver on a real Heat (vm-basic)', { timeout: 180_000, skip: realHeat.skip }, () => {
  let driver: InfraDriver;
  let ctx: TestContext;

  before(async () => {
    driver = createOpenStackDriver();
    ctx = makeContext({ instanceId: uniqueInstanceId('drv-rh'), pkg: await loadPackage(VM_BASIC_DIR), vim: realHeatVim(), vduCounts: { VDU1: 2, VDU2: 1 }, scaleLevels: { VDU1_scale: 1 }, stackTimeoutMs: 120_000 });
  });

  after(async () => {
    if (ctx !== undefined) await driver.terminate(ctx, {}).catch(() => undefined);
  });

  async function observe(): Promise<ObservedResources> {
    const obs = await driver.observe(ctx);
    applyObserved(ctx, obs);
    return obs;
  }

  it('instantiates and observes 2 VDU1 members and VDU2 with their volumes', async () => {
    const t0 = performance.now();
    await driver.instantiate(ctx, {});
    console.log(`# driver instantiate on real Heat: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    const obs = await observe();
    assert.equal(obs.vnfcs.filter((v) => v.vduId === 'VDU1').length, 2);
    assert.equal(obs.vnfcs.filter((v) => v.vduId === 'VDU2').length, 1);
    assert.equal(obs.storages.length, 3);
    for (const v of obs.vnfcs) assert.equal(v.storageResourceIds?.length, 1, `${v.stableKey} has its volume`);
    assert.deepEqual(obs.virtualLinks.map((l) => l.vnfVirtualLinkDescId), ['internalVL1']);
    assert.match(obs.vnfcs.find((v) => v.vduId === 'VDU1')?.stableKey ?? '', /^VDU1_scale_group\/[^/]+\/VDU1$/);
  });

  it('VNFC heal replaces only the target server (timed)', async () => {
    const before = await observe();
    const target = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo?.find((r) => r.vduId === 'VDU1');
    assert.ok(target);
    newOp(ctx, 'HEAL');
    const rec = recordFetch('/stacks/');
    const t0 = performance.now();
    try {
      await driver.heal(ctx, healPlan(ctx, [target]));
    } finally {
      rec.restore();
    }
    console.log(`# driver VNFC heal on real Heat: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    assert.equal(markCalls(rec.calls).length, 1);
    const after = await observe();
    // What the heal's wait read on the way (changed member stack, its CP ports, the last poll) == a full observation.
    assert.deepEqual(after, await createOpenStackDriver().observe(ctx), 'observation after the heal == full observation');
    for (const v of after.vnfcs) {
      const old = before.vnfcs.find((b) => b.stableKey === v.stableKey);
      assert.ok(old, `${v.stableKey} kept`);
      if (v.stableKey === target.metadata?.heat_resource_path) assert.notEqual(v.computeResource.resourceId, old.computeResource.resourceId);
      else assert.equal(v.computeResource.resourceId, old.computeResource.resourceId);
    }
    assert.deepEqual(after.storages.map((s) => s.resourceId).sort(), before.storages.map((s) => s.resourceId).sort());
  });

  it('VNFC heal with includeStorage replaces the server and its volume', async () => {
    await observe();
    const target = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo?.find((r) => r.vduId === 'VDU2');
    assert.ok(target?.storageResourceIds?.[0]);
    newOp(ctx, 'HEAL');
    await driver.heal(ctx, healPlan(ctx, [target], { includeStorage: true }));
    const after = await observe();
    assert.deepEqual(after, await createOpenStackDriver().observe(ctx), 'observation after the heal == full observation');
    const healed = after.vnfcs.find((v) => v.vduId === 'VDU2');
    assert.notEqual(healed?.computeResource.resourceId, target.computeResource.resourceId);
    assert.notEqual(healed?.storageResourceIds?.[0], target.storageResourceIds[0]);
  });

  it('terminates', async () => {
    newOp(ctx, 'TERMINATE');
    await driver.terminate(ctx, {});
    assert.equal((await driver.observe(ctx)).vnfcs.length, 0);
  });
});
