/**
 * Instance-count arithmetic over a parsed flavour: how many VNFCs each VDU has at an
 * instantiation level or at given scale levels, and whether a scale request is allowed.
 *
 * The engine needs these numbers at instantiate (how many servers/pods to ask for), at scale
 * (the new level and the VNFC delta), and at heal (the count the VNF should have now). Keeping the
 * arithmetic here, next to the model, gives one definition of "level" for every driver.
 */
import { VnfmError } from '../errors.ts';
import type { FlavourModel, ScalingAspectModel } from './vnfd-model.ts';

/** Scale levels per aspect: a map, or the SOL `scaleStatus` array. */
export type ScaleLevels = Readonly<Record<string, number>> | readonly { readonly aspectId: string; readonly scaleLevel: number }[];

/** Scale direction, as in the SOL ScaleVnfRequest `type`. */
export const ScaleType = {
  SCALE_OUT: 'SCALE_OUT',
  SCALE_IN: 'SCALE_IN',
} as const;
/** See {@link ScaleType}. */
export type ScaleType = (typeof ScaleType)[keyof typeof ScaleType];

/** Outcome of {@link validateScale}. */
export type ScaleValidation =
  | {
      readonly ok: true;
      /** The aspect's scale level after the operation. */
      readonly newLevel: number;
      /** VDU id -> instances added (positive, SCALE_OUT) or removed (negative, SCALE_IN). */
      readonly vnfcDelta: Readonly<Record<string, number>>;
    }
  | { readonly ok: false; readonly message: string };

function toLevelMap(levels: ScaleLevels): Record<string, number> {
  if (Array.isArray(levels)) {
    const out: Record<string, number> = {};
    for (const s of levels as readonly { aspectId: string; scaleLevel: number }[]) out[s.aspectId] = s.scaleLevel;
    return out;
  }
  return { ...(levels as Record<string, number>) };
}

function stepDelta(aspect: ScalingAspectModel, step: number): string | undefined {
  const n = aspect.stepDeltas.length;
  if (n === 0) return undefined;
  return aspect.stepDeltas[Math.min(step, n) - 1];
}

/** Instances a VDU gains when `aspect` goes from level `from` to level `to` (from <= to). */
function instancesBetween(aspect: ScalingAspectModel, vduId: string, from: number, to: number): number {
  const deltas = aspect.vduDeltas[vduId];
  if (!deltas) return 0;
  let sum = 0;
  for (let step = from + 1; step <= to; step += 1) {
    const id = stepDelta(aspect, step);
    if (id !== undefined) sum += deltas[id] ?? 0;
  }
  return sum;
}

/**
 * The scale level of every aspect at an instantiation level (`scale_info`; aspects not listed,
 * or no level at all, are at 0). This is the initial `scaleStatus` of an instantiated VNF.
 * Throws `VNFM_ERR_INST_INVALID` when `levelId` is not defined in the flavour.
 */
export function scaleLevelsAtInstantiationLevel(flavour: FlavourModel, levelId: string | undefined): Record<string, number> {
  const id = levelId ?? flavour.defaultInstantiationLevelId;
  const out: Record<string, number> = {};
  for (const aspectId of Object.keys(flavour.scalingAspects)) out[aspectId] = 0;
  if (id === undefined) return out;
  const level = Object.hasOwn(flavour.instantiationLevels, id) ? flavour.instantiationLevels[id] : undefined;
  if (!level) throw unknownLevel(flavour, id);
  for (const [aspectId, l] of Object.entries(level.scaleInfo)) out[aspectId] = l;
  return out;
}

function unknownLevel(flavour: FlavourModel, id: string): VnfmError {
  const known = Object.keys(flavour.instantiationLevels);
  return new VnfmError(
    'VNFM_ERR_INST_INVALID',
    `instantiation level '${id}' is not defined in flavour '${flavour.flavourId}'${known.length > 0 ? ` (defined: ${known.join(', ')})` : ' (it defines none)'}`,
  );
}

/**
 * Number of VNFC instances per VDU (every VDU of the flavour is a key).
 *
 * - With `scaleStatus`: `initialDelta` plus, for every aspect scaling the VDU, the deltas of the
 *   steps up to that aspect's level (what the VNF has after scale operations).
 * - Otherwise, at the instantiation level `levelId` (or the flavour's default level): the level's
 *   explicit `VduInstantiationLevels` count when the VNFD gives one, else the count derived from
 *   the level's `scale_info`. With no level at all: `initialDelta`.
 *
 * Throws `VNFM_ERR_INST_INVALID` when `levelId` or an aspect of `scaleStatus` is unknown.
 */
export function vnfcCountAtLevel(flavour: FlavourModel, levelId: string | undefined, scaleStatus?: ScaleLevels): Record<string, number> {
  const out: Record<string, number> = {};
  if (scaleStatus !== undefined) {
    const levels = toLevelMap(scaleStatus);
    for (const aspectId of Object.keys(levels)) {
      if (!Object.hasOwn(flavour.scalingAspects, aspectId)) {
        throw new VnfmError('VNFM_ERR_INST_INVALID', `scaling aspect '${aspectId}' is not defined in flavour '${flavour.flavourId}'`);
      }
    }
    for (const vdu of Object.values(flavour.vdus)) out[vdu.vduId] = countFromLevels(flavour, vdu.vduId, vdu.initialDelta, levels);
    return out;
  }
  const id = levelId ?? flavour.defaultInstantiationLevelId;
  const level = id === undefined ? undefined : Object.hasOwn(flavour.instantiationLevels, id) ? flavour.instantiationLevels[id] : undefined;
  if (id !== undefined && !level) throw unknownLevel(flavour, id);
  for (const vdu of Object.values(flavour.vdus)) {
    const explicit = level && Object.hasOwn(level.vduInstances, vdu.vduId) ? level.vduInstances[vdu.vduId] : undefined;
    out[vdu.vduId] = explicit ?? countFromLevels(flavour, vdu.vduId, vdu.initialDelta, level?.scaleInfo ?? {});
  }
  return out;
}

function countFromLevels(flavour: FlavourModel, vduId: string, initialDelta: number, levels: Readonly<Record<string, number>>): number {
  let n = initialDelta;
  for (const [aspectId, level] of Object.entries(levels)) {
    const aspect = flavour.scalingAspects[aspectId];
    if (aspect) n += instancesBetween(aspect, vduId, 0, level);
  }
  return n;
}

/**
 * Checks a scale request against the flavour: the aspect must exist, `steps` must be a positive
 * integer, and the new level must stay within `0..maxScaleLevel`. Returns the new level and the
 * per-VDU instance change, or a message suitable for a 422 ProblemDetails.
 */
export function validateScale(flavour: FlavourModel, aspectId: string, currentLevel: number, steps: number, type: ScaleType): ScaleValidation {
  const aspect = Object.hasOwn(flavour.scalingAspects, aspectId) ? flavour.scalingAspects[aspectId] : undefined;
  if (!aspect) {
    const known = Object.keys(flavour.scalingAspects);
    return {
      ok: false,
      message: `aspectId '${aspectId}' is not a scaling aspect of flavour '${flavour.flavourId}'${known.length > 0 ? ` (aspects: ${known.join(', ')})` : ' (it has none)'}`,
    };
  }
  if (!Number.isInteger(steps) || steps < 1) return { ok: false, message: `numberOfSteps must be a positive integer, got ${String(steps)}` };
  if (!Number.isInteger(currentLevel) || currentLevel < 0) return { ok: false, message: `current scale level of aspect '${aspectId}' is invalid: ${String(currentLevel)}` };
  if (type !== ScaleType.SCALE_OUT && type !== ScaleType.SCALE_IN) return { ok: false, message: `scale type must be SCALE_OUT or SCALE_IN, got ${String(type)}` };
  const newLevel = type === ScaleType.SCALE_OUT ? currentLevel + steps : currentLevel - steps;
  if (newLevel > aspect.maxScaleLevel) {
    return {
      ok: false,
      message: `SCALE_OUT by ${steps} step(s) would take aspect '${aspectId}' from level ${currentLevel} to ${newLevel}, above its maxScaleLevel ${aspect.maxScaleLevel}`,
    };
  }
  if (newLevel < 0) {
    return { ok: false, message: `SCALE_IN by ${steps} step(s) would take aspect '${aspectId}' from level ${currentLevel} to ${newLevel}, below level 0` };
  }
  const vnfcDelta: Record<string, number> = {};
  for (const vduId of Object.keys(aspect.vduDeltas)) {
    vnfcDelta[vduId] =
      type === ScaleType.SCALE_OUT ? instancesBetween(aspect, vduId, currentLevel, newLevel) : -instancesBetween(aspect, vduId, newLevel, currentLevel);
  }
  return { ok: true, newLevel, vnfcDelta };
}
