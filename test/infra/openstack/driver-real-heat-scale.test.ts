/**
 * The OpenStack driver against a REAL Keystone + Heat with Tacker's `basic_lcms_min` on the
 * nova/neutron stand-ins: scale out, scale in (the member the driver marks is the one Heat
 * removes), terminate. Test stage `real-heat`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InfraDriver } from '../../../src/infra/infra-driver.ts';
import { createOpenStackDriver } from '../../../src/infra/openstack/index.ts';
import { stage } from '../../helpers/stages.ts';
import {
  applyObserved,
  LCMS_MIN_DIR,
  loadPackage,
  makeContext,
  markCalls,
  newOp,
  realHeatVim,
  recordFetch,
  scalePlan,
  type TestContext,
  uniqueInstanceId,
} from './driver-fixtures.ts';

const realHeat = await stage('real-heat');

describe('OpenStack driver scale on a real Heat (basic_lcms_min)', { timeout: 180_000, skip: realHeat.skip }, () => {
  let driver: InfraDriver;
  let ctx: TestContext;

  before(async () => {
    driver = createOpenStackDriver();
    ctx = makeContext({ instanceId: uniqueInstanceId('drv-rhs'), pkg: await loadPackage(LCMS_MIN_DIR), vim: realHeatVim(), vduCounts: { VDU1: 1, VDU2: 1 }, scaleLevels: { VDU1_scale: 0 }, stackTimeoutMs: 120_000 });
    await driver.instantiate(ctx, {});
    applyObserved(ctx, await driver.observe(ctx));
  });

  after(async () => {
    if (ctx !== undefined) await driver.terminate(ctx, {}).catch(() => undefined);
  });

  it('scales out by one step and back in, removing the member it marked', async () => {
    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 1 };
    ctx.targetVduCounts = { VDU1: 2, VDU2: 1 };
    let t0 = performance.now();
    await driver.scale(ctx, scalePlan('SCALE_OUT', 'VDU1_scale', 0, 1));
    console.log(`# driver scale out on real Heat: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    const out = await driver.observe(ctx);
    applyObserved(ctx, out);
    const vdu1 = out.vnfcs.filter((v) => v.vduId === 'VDU1');
    assert.equal(vdu1.length, 2);

    newOp(ctx, 'SCALE');
    ctx.targetScaleLevels = { VDU1_scale: 0 };
    ctx.targetVduCounts = { VDU1: 1, VDU2: 1 };
    const rec = recordFetch('/stacks/');
    t0 = performance.now();
    try {
      await driver.scale(ctx, scalePlan('SCALE_IN', 'VDU1_scale', 1, 0));
    } finally {
      rec.restore();
    }
    console.log(`# driver scale in on real Heat: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    const marks = markCalls(rec.calls);
    assert.equal(marks.length, 1);
    const removed = marks[0]?.split('/')[1];
    const left = (await driver.observe(ctx)).vnfcs.filter((v) => v.vduId === 'VDU1');
    assert.equal(left.length, 1);
    assert.notEqual(left[0]?.metadata?.parent_resource, removed, 'Heat removed the marked member');
    assert.ok(vdu1.some((v) => v.metadata?.parent_resource === removed));
  });
});
