/**
 * Storm guard decisions (pure): maxUnhealthy as count and percentage, the per-VNFC frequency
 * limit, per-instance overrides, option validation, and defaults that never block normal heals.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { AutohealOptionsError, DEFAULT_AUTOHEAL_OPTIONS, evaluateStormGuard, maxUnhealthyCount, policyFor, resolveAutohealOptions } from '../../src/autoheal/storm-guard.ts';

const policy = (o: Partial<{ maxUnhealthy: number | string; maxHealsPerVnfc: number; frequencyPeriodMs: number }> = {}) => ({ maxUnhealthy: '100%', maxHealsPerVnfc: 10, frequencyPeriodMs: 600_000, ...o });

describe('storm guard', () => {
  it('computes maxUnhealthy from counts and percentages (rounded down)', () => {
    assert.equal(maxUnhealthyCount('100%', 3), 3);
    assert.equal(maxUnhealthyCount('40%', 3), 1);
    assert.equal(maxUnhealthyCount('40%', 10), 4);
    assert.equal(maxUnhealthyCount('0%', 10), 0);
    assert.equal(maxUnhealthyCount(2, 10), 2);
    assert.equal(maxUnhealthyCount('2', 10), 2);
  });

  it('allows a heal within the limits and with the defaults, whatever the batch size', () => {
    const d = resolveAutohealOptions(resolveConfig({}));
    assert.deepEqual(d, { ...DEFAULT_AUTOHEAL_OPTIONS });
    for (const n of [1, 3, 10]) {
      const targets = Array.from({ length: n }, (_, i) => `v${i}`);
      assert.deepEqual(evaluateStormGuard({ policy: policyFor(d, { vnfConfigurableProperties: null }), totalVnfcs: n, targets, alsoUnhealthy: new Set(), recentHeals: new Map(targets.map((t) => [t, 9])) }), { allowed: true });
    }
  });

  it('suppresses more unhealthy VNFCs than maxUnhealthy, counting recently suppressed ones', () => {
    const v = evaluateStormGuard({ policy: policy({ maxUnhealthy: '40%' }), totalVnfcs: 3, targets: ['a', 'b'], alsoUnhealthy: new Set(), recentHeals: new Map() });
    assert.equal(v.allowed, false);
    assert.ok(!v.allowed && v.reason === 'max_unhealthy' && /2 of 3 VNFCs/.test(v.detail) && /40%/.test(v.detail), JSON.stringify(v));
    assert.equal(evaluateStormGuard({ policy: policy({ maxUnhealthy: '40%' }), totalVnfcs: 3, targets: ['a'], alsoUnhealthy: new Set(), recentHeals: new Map() }).allowed, true);
    const w = evaluateStormGuard({ policy: policy({ maxUnhealthy: 1 }), totalVnfcs: 3, targets: ['a'], alsoUnhealthy: new Set(['b']), recentHeals: new Map() });
    assert.equal(w.allowed, false);
  });

  it('suppresses a VNFC healed too often within the period', () => {
    const p = policy({ maxHealsPerVnfc: 3 });
    assert.equal(evaluateStormGuard({ policy: p, totalVnfcs: 3, targets: ['a'], alsoUnhealthy: new Set(), recentHeals: new Map([['a', 2]]) }).allowed, true);
    const v = evaluateStormGuard({ policy: p, totalVnfcs: 3, targets: ['a', 'b'], alsoUnhealthy: new Set(), recentHeals: new Map([['a', 3]]) });
    assert.ok(!v.allowed && v.reason === 'frequency' && v.detail.includes('a (3 heals)') && !v.detail.includes('b ('), JSON.stringify(v));
  });

  it('takes per-instance overrides from vnfConfigurableProperties and ignores invalid ones', () => {
    const p = policyFor(DEFAULT_AUTOHEAL_OPTIONS, { vnfConfigurableProperties: { autohealMaxUnhealthy: '50%', autohealMaxHealsPerVnfc: 2, autohealFrequencyPeriodSeconds: 60 } });
    assert.deepEqual(p, { maxUnhealthy: '50%', maxHealsPerVnfc: 2, frequencyPeriodMs: 60_000 });
    const q = policyFor(DEFAULT_AUTOHEAL_OPTIONS, { vnfConfigurableProperties: { autohealMaxUnhealthy: 'lots', autohealMaxHealsPerVnfc: -1, autohealFrequencyPeriodSeconds: 'x' } });
    assert.deepEqual(q, { maxUnhealthy: '100%', maxHealsPerVnfc: 10, frequencyPeriodMs: 600_000 });
  });

  it('validates module options', () => {
    const cfg = resolveConfig({});
    assert.equal(resolveAutohealOptions(cfg, { maxUnhealthy: '40%', sweepMs: 200 }).maxUnhealthy, '40%');
    assert.throws(() => resolveAutohealOptions(cfg, { maxUnhealthy: '40 percent' }), AutohealOptionsError);
    assert.throws(() => resolveAutohealOptions(cfg, { maxHealsPerVnfc: -2 }), /maxHealsPerVnfc/);
    // The config's own section is checked once, when the config is resolved.
    assert.throws(() => resolveConfig({ flags: { autoheal: { maxUnhealthy: 'lots' } } as never }), /autoheal\.maxUnhealthy/);
    assert.throws(() => resolveConfig({ flags: { autoheal: { sweepMs: -1 } } as never }), /autoheal\.sweepMs/);
    assert.equal(resolveConfig({ flags: { autoheal: { sweepMs: 1 } } as never }).autoheal.sweepMs, 10);
  });
});
