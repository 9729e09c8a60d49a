/**
 * The external connection points of a deployment flavour, for the engine and the drivers.
 *
 * Why a function and not only the model field: package models are stored at onboarding, and those
 * stored before `FlavourModel.extCps` existed lack it; for them the rule the parser applies is
 * applied here again on what they do have (every VduCp without an internal virtual link).
 */
import type { ExtCpModel, FlavourModel } from './vnfd-model.ts';

/** The flavour's external CPs, in CPD id order. */
export function externalCps(flavour: Pick<FlavourModel, 'cps' | 'extCps'>): ExtCpModel[] {
  const list = flavour.extCps !== undefined
    ? Object.values(flavour.extCps)
    : Object.values(flavour.cps)
        .filter((c) => c.virtualLinkId === undefined)
        .map((c): ExtCpModel => ({ cpdId: c.cpId, vduCpId: c.cpId }));
  return [...list].sort((a, b) => a.cpdId.localeCompare(b.cpdId));
}
