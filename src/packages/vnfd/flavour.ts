/** One deployment flavour of the VNFD, built from its parts (src/packages/vnfd/). */
import type { FlavourModel, ScalingAspectModel } from '../vnfd-model.ts';
import type { Plain } from '../yaml-source.ts';
import { externalCpsOf, vduCpsOf } from './cps.ts';
import { flavourVnfNode, lcmHooksOf } from './lcm.ts';
import { checkScaling, readPolicies } from './policies.ts';
import type { FlavourSource, TopInfo } from './substitution.ts';
import { Parser, type Scope } from './templates.ts';
import { storagesAndLinksOf, vdusOf } from './vdus.ts';

/**
 * A deployment flavour from its file: the VNF node and hooks, storages and virtual links, VDUs,
 * CPs, then the policies (read, then cross-checked), in that order (the first problem found is
 * the one reported).
 */
export function buildFlavour(p: Parser, src: FlavourSource, top: TopInfo): FlavourModel {
  const file = src.file;
  const values: Record<string, Plain | undefined> = { ...top.values, flavour_id: src.flavourId };
  const scope: Scope = { file, inputs: p.inputsOf(file), values };
  const nodes = p.nodeTemplates(file);
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const vnf = flavourVnfNode(p, src, top, scope);
  const description = vnf.description;
  const lcmHooks = lcmHooksOf(p, src, top, vnf);
  const { virtualStorages, virtualLinks } = storagesAndLinksOf(p, nodes, scope);
  const vdus = vdusOf(p, nodes, byName, scope);
  const cps = vduCpsOf(p, nodes, byName, vdus, scope);
  const extCps = externalCpsOf(p, file, nodes, byName, cps);
  const policies = readPolicies(p, scope, vdus);
  checkScaling(p, file, policies, vdus);
  const { aspects, levels, defaultLevel, placementRules } = policies;

  const scalingAspects: Record<string, ScalingAspectModel> = {};
  for (const a of Object.values(aspects)) {
    scalingAspects[a.aspectId] = {
      aspectId: a.aspectId,
      name: a.name,
      description: a.description,
      maxScaleLevel: a.maxScaleLevel,
      stepDeltas: a.stepDeltas,
      vduDeltas: a.vduDeltas,
    };
  }
  const flavour: { -readonly [K in keyof FlavourModel]: FlavourModel[K] } = {
    flavourId: src.flavourId,
    description,
    definitionFile: file,
    vdus,
    cps,
    extCps,
    virtualLinks,
    virtualStorages,
    scalingAspects,
    instantiationLevels: levels,
    lcmHooks,
    placementRules,
  };
  if (defaultLevel) flavour.defaultInstantiationLevelId = defaultLevel.id;
  return flavour;
}
