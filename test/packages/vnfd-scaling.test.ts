import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { VnfmError } from '../../src/errors.ts';
import type { FlavourModel, VduModel } from '../../src/packages/vnfd-model.ts';
import { scaleLevelsAtInstantiationLevel, validateScale, vnfcCountAtLevel } from '../../src/packages/vnfd-scaling.ts';

function vdu(vduId: string, min: number, max: number, initialDelta: number): VduModel {
  return { vduId, name: vduId.toLowerCase(), description: '', minInstances: min, maxInstances: max, initialDelta, virtualStorageIds: [], cpIds: [], nodeType: 'tosca.nodes.nfv.Vdu.Compute' };
}

/** VDU1 scales non-uniformly (+1, then +2 per step), VDU2 with it (+1 each step), VDU3 never. */
const flavour: FlavourModel = {
  flavourId: 'big',
  description: '',
  definitionFile: 'Definitions/df.yaml',
  vdus: { VDU1: vdu('VDU1', 1, 8, 1), VDU2: vdu('VDU2', 2, 5, 2), VDU3: vdu('VDU3', 1, 1, 1) },
  cps: {},
  virtualLinks: {},
  virtualStorages: {},
  scalingAspects: {
    main: {
      aspectId: 'main',
      name: 'main',
      description: '',
      maxScaleLevel: 3,
      stepDeltas: ['small', 'large'],
      vduDeltas: { VDU1: { small: 1, large: 2 }, VDU2: { small: 1, large: 1 } },
    },
    other: { aspectId: 'other', name: 'other', description: '', maxScaleLevel: 1, stepDeltas: ['d'], vduDeltas: { VDU2: { d: 0 } } },
  },
  instantiationLevels: {
    low: { levelId: 'low', description: '', scaleInfo: {}, vduInstances: {} },
    high: { levelId: 'high', description: '', scaleInfo: { main: 2 }, vduInstances: { VDU3: 1, VDU1: 5 } },
  },
  defaultInstantiationLevelId: 'low',
  lcmHooks: {},
  placementRules: [],
};

describe('vnfcCountAtLevel', () => {
  test('from scale levels: initial delta plus the deltas of each step (last step delta repeats)', () => {
    assert.deepEqual(vnfcCountAtLevel(flavour, undefined, { main: 0 }), { VDU1: 1, VDU2: 2, VDU3: 1 });
    assert.deepEqual(vnfcCountAtLevel(flavour, undefined, { main: 1 }), { VDU1: 2, VDU2: 3, VDU3: 1 });
    assert.deepEqual(vnfcCountAtLevel(flavour, undefined, { main: 2 }), { VDU1: 4, VDU2: 4, VDU3: 1 });
    assert.deepEqual(vnfcCountAtLevel(flavour, undefined, [{ aspectId: 'main', scaleLevel: 3 }, { aspectId: 'other', scaleLevel: 1 }]), { VDU1: 6, VDU2: 5, VDU3: 1 });
  });

  test('from an instantiation level: explicit VDU counts win, others follow scale_info; default level when none given', () => {
    assert.deepEqual(vnfcCountAtLevel(flavour, 'high'), { VDU1: 5, VDU2: 4, VDU3: 1 });
    assert.deepEqual(vnfcCountAtLevel(flavour, undefined), { VDU1: 1, VDU2: 2, VDU3: 1 });
    const noLevels: FlavourModel = { ...flavour, instantiationLevels: {} };
    delete (noLevels as { defaultInstantiationLevelId?: string }).defaultInstantiationLevelId;
    assert.deepEqual(vnfcCountAtLevel(noLevels, undefined), { VDU1: 1, VDU2: 2, VDU3: 1 });
  });

  test('unknown level or aspect is a VNFM_ERR_INST_INVALID error', () => {
    assert.throws(
      () => vnfcCountAtLevel(flavour, 'huge'),
      (e: unknown) => e instanceof VnfmError && e.code === 'VNFM_ERR_INST_INVALID' && /'huge' is not defined in flavour 'big' \(defined: low, high\)/.test(e.message),
    );
    assert.throws(() => vnfcCountAtLevel(flavour, undefined, { nope: 1 }), /scaling aspect 'nope' is not defined/);
  });

  test('scaleLevelsAtInstantiationLevel lists every aspect', () => {
    assert.deepEqual(scaleLevelsAtInstantiationLevel(flavour, 'high'), { main: 2, other: 0 });
    assert.deepEqual(scaleLevelsAtInstantiationLevel(flavour, undefined), { main: 0, other: 0 });
    assert.throws(() => scaleLevelsAtInstantiationLevel(flavour, 'x'), VnfmError);
  });
});

describe('validateScale', () => {
  test('scale out and in within range give the new level and VNFC deltas', () => {
    assert.deepEqual(validateScale(flavour, 'main', 0, 2, 'SCALE_OUT'), { ok: true, newLevel: 2, vnfcDelta: { VDU1: 3, VDU2: 2 } });
    assert.deepEqual(validateScale(flavour, 'main', 3, 1, 'SCALE_IN'), { ok: true, newLevel: 2, vnfcDelta: { VDU1: -2, VDU2: -1 } });
    assert.deepEqual(validateScale(flavour, 'main', 1, 1, 'SCALE_IN'), { ok: true, newLevel: 0, vnfcDelta: { VDU1: -1, VDU2: -1 } });
  });

  test('refuses out-of-range levels, unknown aspects and bad step counts with a clear message', () => {
    const over = validateScale(flavour, 'main', 2, 2, 'SCALE_OUT');
    assert.equal(over.ok, false);
    assert.match(over.ok ? '' : over.message, /from level 2 to 4, above its maxScaleLevel 3/);
    const under = validateScale(flavour, 'main', 1, 2, 'SCALE_IN');
    assert.match(under.ok ? '' : under.message, /below level 0/);
    const unknown = validateScale(flavour, 'x', 0, 1, 'SCALE_OUT');
    assert.match(unknown.ok ? '' : unknown.message, /aspectId 'x' is not a scaling aspect of flavour 'big' \(aspects: main, other\)/);
    const zero = validateScale(flavour, 'main', 0, 0, 'SCALE_OUT');
    assert.match(zero.ok ? '' : zero.message, /numberOfSteps must be a positive integer/);
    const frac = validateScale(flavour, 'main', 0, 1.5, 'SCALE_OUT');
    assert.equal(frac.ok, false);
  });
});
