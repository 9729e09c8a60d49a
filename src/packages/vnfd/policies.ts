/**
 * The policies of a flavour: scaling aspects and their deltas, initial deltas, instantiation
 * levels, VDU levels and placement (affinity) rules, then the cross-checks of the scaling model.
 */
import type { InstantiationLevelModel, PlacementRuleModel, ScalingAspectModel } from '../vnfd-model.ts';
import type { Plain } from '../yaml-source.ts';
import { describe, isObj, type Obj, own, Parser, type Scope, type Slot, sorted } from './templates.ts';
import type { VduDraft } from './vdus.ts';

/**
 * Calls `add` for each named entry of a topology section written as a map or as a list of
 * one-entry maps (null items skipped); anything else fails with the given messages.
 */
function eachNamed(p: Parser, file: string, key: string, messages: { item: (i: number) => string; section: string }, add: (name: string, def: Plain, holder: unknown) => void): void {
  const tt = p.topology(file);
  const section = own(tt, key);
  if (section === undefined || section === null) return;
  if (Array.isArray(section)) {
    section.forEach((item, i) => {
      if (item === null) return;
      if (!isObj(item)) p.fail(messages.item(i), section, i, file);
      for (const [k, v] of Object.entries(item)) add(k, v, item);
    });
  } else if (isObj(section)) {
    for (const [k, v] of Object.entries(section)) add(k, v, section);
  } else {
    p.fail(`${messages.section}, got ${describe(section)}`, tt, key, file);
  }
}

function policiesOf(p: Parser, file: string): { name: string; def: Obj; holder: unknown }[] {
  const out: { name: string; def: Obj; holder: unknown }[] = [];
  eachNamed(p, file, 'policies', { item: (i) => `policies[${i}] must be a map like '- name: {type: ...}'`, section: 'policies must be a list' }, (name, def, holder) => {
    if (!isObj(def)) p.fail(`policy '${name}' must be a map with a type`, holder, name, file);
    out.push({ name, def, holder });
  });
  return out;
}

function groupsOf(p: Parser, file: string, scope: Scope): Map<string, string[]> {
  const out = new Map<string, string[]>();
  eachNamed(p, file, 'groups', { item: (i) => `groups[${i}] must be a map`, section: 'groups must be a map' }, (name, def, holder) => {
    if (!isObj(def)) p.fail(`group '${name}' must be a map with a type and members`, holder, name, file);
    out.set(name, p.strList({ holder: def, key: 'members' }, scope, `group ${name}: members`));
  });
  return out;
}

/** A scaling aspect as read, before its deltas are checked. */
type AspectDraft = { -readonly [K in keyof ScalingAspectModel]: ScalingAspectModel[K] } & { vduDeltas: Record<string, Record<string, number>>; explicitSteps: boolean; slot: Slot };

/** An instantiation level as read. */
type LevelDraft = { -readonly [K in keyof InstantiationLevelModel]: InstantiationLevelModel[K] } & { scaleInfo: Record<string, number>; vduInstances: Record<string, number> };

/** A VduScalingAspectDeltas policy as read. */
interface AspectDeltasDraft {
  name: string;
  aspect: string;
  aspectSlot: Slot;
  deltas: Record<string, number>;
  targets: string[];
  def: Obj;
}

/** A VduInstantiationLevels policy as read. */
interface VduLevelsDraft {
  name: string;
  levels: Record<string, number>;
  targets: string[];
  def: Obj;
  levelsObj: Obj;
}

/** What the policies of a flavour say, read but not yet cross-checked ({@link checkScaling}). */
interface PolicyDrafts {
  aspects: Record<string, AspectDraft>;
  aspectDeltas: AspectDeltasDraft[];
  levels: Record<string, LevelDraft>;
  levelScaleInfo: Map<string, Obj | undefined>;
  defaultLevel: { id: string; slot: Slot } | undefined;
  vduLevels: VduLevelsDraft[];
  placementRules: PlacementRuleModel[];
}

/** Reads the policies of a flavour (scaling, instantiation levels, placement); sets the VDUs' initial deltas. */
export function readPolicies(p: Parser, scope: Scope, vdus: Record<string, VduDraft>): PolicyDrafts {
  const file = scope.file;
  const groups = groupsOf(p, file, scope);
  const aspects: Record<string, AspectDraft> = {};
  const aspectDeltas: AspectDeltasDraft[] = [];
  const initialDeltaSet = new Map<string, string>();
  const levels: Record<string, LevelDraft> = {};
  const levelScaleInfo = new Map<string, Obj | undefined>();
  let defaultLevel: { id: string; slot: Slot } | undefined;
  const vduLevels: VduLevelsDraft[] = [];
  const placementRules: PlacementRuleModel[] = [];

  const targetsOf = (name: string, def: Obj, kind: 'vdu' | 'any'): string[] => {
    const raw = p.strList({ holder: def, key: 'targets' }, scope, `policy ${name}: targets`);
    const out: string[] = [];
    const tl = own(def, 'targets');
    if (kind === 'vdu' && raw.length === 0) p.fail(`policy ${name}: targets must list the VDUs it applies to`, def, undefined, file);
    raw.forEach((t, i) => {
      const expanded = groups.get(t) ?? [t];
      for (const x of expanded) {
        if (kind === 'vdu' && !Object.hasOwn(vdus, x)) {
          p.fail(`policy ${name}: target '${x}' is not a VDU of this flavour`, tl, i, file);
        }
        if (!out.includes(x)) out.push(x);
      }
    });
    return out;
  };

  for (const pol of policiesOf(p, file)) {
    const type = own(pol.def, 'type');
    if (typeof type !== 'string' || type === '') p.fail(`policy '${pol.name}' has no type`, pol.holder, pol.name, file);
    const chain = p.types.chain('policy', type, p.src.posOf(pol.def, 'type'));
    const kind = p.policyKind(chain);
    const props = p.map({ holder: pol.def, key: 'properties' }, scope, `policy ${pol.name}: properties`) ?? {};
    const l = `policy ${pol.name}: properties`;
    switch (kind) {
      case 'aspects': {
        const am = p.map({ holder: props, key: 'aspects' }, scope, `${l}.aspects`, true) as Obj;
        for (const [aspectId, a] of Object.entries(am)) {
          if (!isObj(a)) p.fail(`${l}.aspects.${aspectId} must be a map`, am, aspectId, file);
          if (Object.hasOwn(aspects, aspectId)) p.fail(`scaling aspect '${aspectId}' is defined twice`, am, aspectId, file);
          const al = `${l}.aspects.${aspectId}`;
          const steps = own(a, 'step_deltas');
          aspects[aspectId] = {
            aspectId,
            name: p.str({ holder: a, key: 'name' }, scope, `${al}.name`) ?? aspectId,
            description: p.str({ holder: a, key: 'description' }, scope, `${al}.description`) ?? '',
            maxScaleLevel: p.int({ holder: a, key: 'max_scale_level' }, scope, `${al}.max_scale_level`, { required: true, min: 0 }) as number,
            stepDeltas: p.strList({ holder: a, key: 'step_deltas' }, scope, `${al}.step_deltas`),
            vduDeltas: {},
            explicitSteps: steps !== undefined && steps !== null,
            slot: { holder: am, key: aspectId },
          };
        }
        break;
      }
      case 'aspectDeltas': {
        const aspect = p.str({ holder: props, key: 'aspect' }, scope, `${l}.aspect`, true);
        const dm = p.map({ holder: props, key: 'deltas' }, scope, `${l}.deltas`, true) as Obj;
        const deltas: Record<string, number> = {};
        for (const [deltaId, d] of Object.entries(dm)) {
          if (!isObj(d)) p.fail(`${l}.deltas.${deltaId} must be a map with number_of_instances`, dm, deltaId, file);
          deltas[deltaId] = p.int({ holder: d, key: 'number_of_instances' }, scope, `${l}.deltas.${deltaId}.number_of_instances`, { required: true, min: 0 }) as number;
        }
        aspectDeltas.push({ name: pol.name, aspect, aspectSlot: { holder: props, key: 'aspect' }, deltas, targets: targetsOf(pol.name, pol.def, 'vdu'), def: pol.def });
        break;
      }
      case 'initialDelta': {
        const idm = p.map({ holder: props, key: 'initial_delta' }, scope, `${l}.initial_delta`, true) as Obj;
        const n = p.int({ holder: idm, key: 'number_of_instances' }, scope, `${l}.initial_delta.number_of_instances`, { required: true, min: 0 }) as number;
        for (const t of targetsOf(pol.name, pol.def, 'vdu')) {
          const prev = initialDeltaSet.get(t);
          if (prev !== undefined) p.fail(`VDU ${t} has two initial deltas (policies ${prev} and ${pol.name})`, pol.holder, pol.name, file);
          initialDeltaSet.set(t, pol.name);
          const v = vdus[t];
          if (v) v.initialDelta = n;
        }
        break;
      }
      case 'levels': {
        const lm = p.map({ holder: props, key: 'levels' }, scope, `${l}.levels`, true) as Obj;
        for (const [levelId, lv] of Object.entries(lm)) {
          const ll = `${l}.levels.${levelId}`;
          if (lv !== null && !isObj(lv)) p.fail(`${ll} must be a map`, lm, levelId, file);
          if (Object.hasOwn(levels, levelId)) p.fail(`instantiation level '${levelId}' is defined twice`, lm, levelId, file);
          const body = lv ?? {};
          const scaleInfo: Record<string, number> = {};
          const si = p.map({ holder: body, key: 'scale_info' }, scope, `${ll}.scale_info`);
          levelScaleInfo.set(levelId, si);
          for (const [aspectId, s] of Object.entries(si ?? {})) {
            if (!isObj(s)) p.fail(`${ll}.scale_info.${aspectId} must be a map with scale_level`, si, aspectId, file);
            scaleInfo[aspectId] = p.int({ holder: s, key: 'scale_level' }, scope, `${ll}.scale_info.${aspectId}.scale_level`, { required: true, min: 0 }) as number;
          }
          levels[levelId] = { levelId, description: p.str({ holder: body, key: 'description' }, scope, `${ll}.description`) ?? '', scaleInfo, vduInstances: {} };
        }
        const dl = p.str({ holder: props, key: 'default_level' }, scope, `${l}.default_level`);
        if (dl !== undefined) {
          if (defaultLevel) p.fail('default_level is given twice', props, 'default_level', file);
          defaultLevel = { id: dl, slot: { holder: props, key: 'default_level' } };
        }
        break;
      }
      case 'vduLevels': {
        const lm = p.map({ holder: props, key: 'levels' }, scope, `${l}.levels`, true) as Obj;
        const out: Record<string, number> = {};
        for (const [levelId, lv] of Object.entries(lm)) {
          if (!isObj(lv)) p.fail(`${l}.levels.${levelId} must be a map with number_of_instances`, lm, levelId, file);
          out[levelId] = p.int({ holder: lv, key: 'number_of_instances' }, scope, `${l}.levels.${levelId}.number_of_instances`, { required: true, min: 0 }) as number;
        }
        vduLevels.push({ name: pol.name, levels: out, targets: targetsOf(pol.name, pol.def, 'vdu'), def: pol.def, levelsObj: lm });
        break;
      }
      case 'affinity':
      case 'antiAffinity': {
        const scopeName = p.str({ holder: props, key: 'scope' }, scope, `${l}.scope`) ?? '';
        const vduIds = targetsOf(pol.name, pol.def, 'any').filter((t) => Object.hasOwn(vdus, t));
        placementRules.push({ ruleId: pol.name, type: kind === 'affinity' ? 'AFFINITY' : 'ANTI_AFFINITY', scope: scopeName, vduIds });
        break;
      }
      default:
        break;
    }
  }

  return { aspects, aspectDeltas, levels, levelScaleInfo, defaultLevel, vduLevels, placementRules };
}

/**
 * Cross-checks the scaling model of a flavour: deltas against aspects, step deltas, levels
 * against aspects and the default level; VDU levels join their instantiation levels (warnings
 * for levels no policy defines and counts outside the VDU profile).
 */
export function checkScaling(p: Parser, file: string, d: PolicyDrafts, vdus: Record<string, VduDraft>): void {
  const { aspects, aspectDeltas, levels, levelScaleInfo, defaultLevel, vduLevels } = d;
  for (const ad of aspectDeltas) {
    const a = Object.hasOwn(aspects, ad.aspect) ? aspects[ad.aspect] : undefined;
    if (!a) p.fail(`policy ${ad.name}: aspect '${ad.aspect}' is not defined by a ScalingAspects policy`, ad.aspectSlot.holder, ad.aspectSlot.key, file);
    for (const t of ad.targets) {
      if (Object.hasOwn(a.vduDeltas, t)) p.fail(`policy ${ad.name}: VDU ${t} already has deltas for aspect '${ad.aspect}'`, ad.def, 'targets', file);
      a.vduDeltas[t] = { ...ad.deltas };
    }
  }
  for (const a of Object.values(aspects)) {
    if (!a.explicitSteps) {
      const ids = new Set<string>();
      for (const d of Object.values(a.vduDeltas)) for (const k of Object.keys(d)) ids.add(k);
      if (ids.size === 1) a.stepDeltas = [...ids];
      else if (ids.size > 1) p.fail(`scaling aspect '${a.aspectId}' has several deltas (${sorted(ids).join(', ')}) but no step_deltas saying which step uses which`, a.slot.holder, a.slot.key, file);
    }
    for (const [vduId, d] of Object.entries(a.vduDeltas)) {
      for (const step of a.stepDeltas) {
        if (!Object.hasOwn(d, step)) {
          const ad = aspectDeltas.find((x) => x.aspect === a.aspectId && x.targets.includes(vduId));
          p.fail(`delta '${step}' of aspect '${a.aspectId}' (in its step_deltas) is not defined for VDU ${vduId}`, own(ad?.def, 'properties'), 'deltas', file);
        }
      }
    }
  }
  for (const lv of Object.values(levels)) {
    const at = levelScaleInfo.get(lv.levelId);
    for (const [aspectId, level] of Object.entries(lv.scaleInfo)) {
      const a = Object.hasOwn(aspects, aspectId) ? aspects[aspectId] : undefined;
      if (!a) p.fail(`instantiation level '${lv.levelId}': scale_info names aspect '${aspectId}', which is not defined`, at, aspectId, file);
      if (level > a.maxScaleLevel) {
        p.fail(`instantiation level '${lv.levelId}': scale level ${level} of aspect '${aspectId}' is above its max_scale_level ${a.maxScaleLevel}`, at, aspectId, file);
      }
    }
  }
  if (defaultLevel && !Object.hasOwn(levels, defaultLevel.id)) {
    p.fail(`default_level '${defaultLevel.id}' is not one of the instantiation levels (${sorted(Object.keys(levels)).join(', ') || 'none'})`, defaultLevel.slot.holder, defaultLevel.slot.key, file);
  }
  for (const vl of vduLevels) {
    for (const [levelId, n] of Object.entries(vl.levels)) {
      let level = Object.hasOwn(levels, levelId) ? levels[levelId] : undefined;
      if (!level) {
        p.warnings.push(`${p.where(vl.levelsObj, levelId, file)}: policy ${vl.name} uses instantiation level '${levelId}', which no InstantiationLevels policy defines`);
        level = { levelId, description: '', scaleInfo: {}, vduInstances: {} };
        levels[levelId] = level;
      }
      for (const t of vl.targets) {
        level.vduInstances[t] = n;
        const v = vdus[t];
        if (v && (n < v.minInstances || n > v.maxInstances)) {
          p.warnings.push(`${p.where(vl.levelsObj, levelId, file)}: ${n} instance(s) of ${t} at level '${levelId}' is outside its vdu_profile range ${v.minInstances}..${v.maxInstances}`);
        }
      }
    }
  }
  for (const v of Object.values(vdus)) {
    if (v.initialDelta < v.minInstances || v.initialDelta > v.maxInstances) {
      p.warnings.push(`${file}: initial delta ${v.initialDelta} of ${v.vduId} is outside its vdu_profile range ${v.minInstances}..${v.maxInstances}`);
    }
  }
}
