/** Connection points of a flavour: the VDU CPs and the external CPs. */
import type { ExtCpModel, VduCpModel } from '../vnfd-model.ts';
import type { Plain } from '../yaml-source.ts';
import { isObj, type NodeT, own, Parser, type Scope } from './templates.ts';
import type { VduDraft } from './vdus.ts';

/** The VDU CPs of a flavour, each bound to its VDU (whose `cpIds` it joins) and its virtual link. */
export function vduCpsOf(p: Parser, nodes: readonly NodeT[], byName: ReadonlyMap<string, NodeT>, vdus: Record<string, VduDraft>, scope: Scope): Record<string, VduCpModel> {
  const file = scope.file;
  const nts = own(p.topology(file), 'node_templates');
  const cps: Record<string, VduCpModel> = {};
  for (const n of nodes) {
    if (n.kind !== 'vduCp') continue;
    let vduId: string | undefined;
    let vlId: string | undefined;
    for (const r of p.requirements(n)) {
      if (r.name === 'virtual_binding') {
        if (!Object.hasOwn(vdus, r.target)) {
          p.fail(`${n.name}: requirement virtual_binding names '${r.target}', which is not a VDU of this flavour`, r.slot.holder, r.slot.key, file);
        }
        vduId = r.target;
      } else if (r.name === 'virtual_link') {
        const t = byName.get(r.target);
        if (t?.kind !== 'vl') {
          p.fail(`${n.name}: requirement virtual_link names '${r.target}', which is not a virtual link (VnfVirtualLink) of this flavour`, r.slot.holder, r.slot.key, file);
        }
        vlId = r.target;
      }
    }
    if (vduId === undefined) p.fail(`${n.name}: a VduCp needs a virtual_binding requirement naming its VDU`, nts, n.name, file);
    const cp: { -readonly [K in keyof VduCpModel]: VduCpModel[K] } = {
      cpId: n.name,
      vduId,
      layerProtocols: p.strList(p.propSlot(n, 'layer_protocols'), scope, `${n.name}: properties.layer_protocols`),
    };
    if (vlId !== undefined) cp.virtualLinkId = vlId;
    const order = p.int(p.propSlot(n, 'order'), scope, `${n.name}: properties.order`);
    if (order !== undefined) cp.order = order;
    cps[n.name] = cp;
    vdus[vduId]?.cpIds.push(n.name);
  }

  return cps;
}

/**
 * The external CPs of a flavour: the CPs `substitution_mappings.requirements` maps a VNF
 * requirement onto (`<requirement>: [<node>, <its requirement>]`, a VduCp or a VnfExtCp), every
 * `tosca.nodes.nfv.VnfExtCp` node (with the internal virtual link it exposes), and every VduCp
 * bound to no internal virtual link. A mapping that names no CP is ignored (it may map a
 * requirement of another kind).
 */
export function externalCpsOf(p: Parser, file: string, nodes: readonly NodeT[], byName: ReadonlyMap<string, NodeT>, cps: Readonly<Record<string, VduCpModel>>): Record<string, ExtCpModel> {
  const mapped = new Map<string, string>();
  const sm = own(p.topology(file), 'substitution_mappings');
  const reqs = isObj(sm) ? own(sm, 'requirements') : undefined;
  const entries: [string, Plain | undefined][] = isObj(reqs) ? Object.entries(reqs) : Array.isArray(reqs) ? reqs.flatMap((e) => (isObj(e) ? Object.entries(e) : [])) : [];
  for (const [name, v] of entries) {
    const target = Array.isArray(v) ? v[0] : isObj(v) ? own(v, 'node') : undefined;
    if (typeof target === 'string' && !mapped.has(target)) mapped.set(target, name);
  }
  const out: Record<string, ExtCpModel> = {};
  const add = (cp: ExtCpModel): void => {
    const requirement = mapped.get(cp.cpdId);
    out[cp.cpdId] = requirement === undefined ? cp : { ...cp, requirement };
  };
  for (const n of nodes) {
    if (n.kind !== 'extCp') continue;
    const internal = p.requirements(n).find((r) => r.name === 'internal_virtual_link' && byName.get(r.target)?.kind === 'vl');
    add({ cpdId: n.name, ...(internal === undefined ? {} : { internalVirtualLinkId: internal.target }) });
  }
  for (const cp of Object.values(cps)) {
    if (cp.virtualLinkId === undefined || mapped.has(cp.cpId)) add({ cpdId: cp.cpId, vduCpId: cp.cpId });
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}
