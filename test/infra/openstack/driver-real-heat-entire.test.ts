/**
 * The OpenStack driver against a REAL Keystone + Heat with Tacker's `basic_lcms_min` on the
 * nova/neutron stand-ins: entire heal of a VNF at scale level 1 re-creates the stack (new id)
 * with 2 VDU1, then terminate. Test stage `real-heat`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InfraDriver } from '../../../src/infra/infra-driver.ts';
import { createOpenStackDriver } from '../../../src/infra/openstack/index.ts';
import { stage } from '../../helpers/stages.ts';
import { applyObserved, LCMS_MIN_DIR, loadPackage, makeContext, newOp, realHeatVim, type TestContext, uniqueInstanceId } from './driver-fixtures.ts';

const realHeat = await stage('real-heat');

describe('OpenStack driver entire heal on a real Heat (basic_lcms_min)', { timeout: 180_000, skip: realHeat.skip }, () => {
  let driver: InfraDriver;
  let ctx: TestContext;

  before(async () => {
    driver = createOpenStackDriver();
    ctx = makeContext({ instanceId: uniqueInstanceId('drv-rhe'), pkg: await loadPackage(LCMS_MIN_DIR), vim: realHeatVim(), vduCounts: { VDU1: 2, VDU2: 1 }, scaleLevels: { VDU1_scale: 1 }, stackTimeoutMs: 120_000 });
    await driver.instantiate(ctx, {});
    applyObserved(ctx, await driver.observe(ctx));
  });

  after(async () => {
    if (ctx !== undefined) await driver.terminate(ctx, {}).catch(() => undefined);
  });

  it('re-creates the stack with a new id and the current number of VDU1', async () => {
    const before = await driver.observe(ctx);
    newOp(ctx, 'HEAL');
    const t0 = performance.now();
    await driver.heal(ctx, { targets: [], entire: true, includeStorage: false, additionalParams: {} });
    console.log(`# driver entire heal on real Heat: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    const after = await driver.observe(ctx);
    // The listing read while the new stack was created == a full (nested_depth) observation.
    assert.deepEqual(after, await createOpenStackDriver().observe(ctx), 'observation after the heal == full observation');
    applyObserved(ctx, after);
    assert.notEqual(after.metadata?.stack_id, before.metadata?.stack_id);
    assert.equal(after.vnfcs.filter((v) => v.vduId === 'VDU1').length, 2);
    assert.equal(after.vnfcs.filter((v) => v.vduId === 'VDU2').length, 1);
    const old = new Set(before.vnfcs.map((v) => v.computeResource.resourceId));
    assert.ok(after.vnfcs.every((v) => !old.has(v.computeResource.resourceId)));
  });

  it('terminates', async () => {
    newOp(ctx, 'TERMINATE');
    await driver.terminate(ctx, {});
    assert.equal((await driver.observe(ctx)).vnfcs.length, 0);
  });
});
