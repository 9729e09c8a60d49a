/**
 * The VNF node of the entry definitions and the deployment flavours it is substituted by
 * (`substitution_mappings`, one file per flavour), with the VNF's property values.
 */
import type { TypeDef } from '../tosca-types.ts';
import type { Plain } from '../yaml-source.ts';
import { describe, isObj, type NodeT, type Obj, own, Parser, type Scope } from './templates.ts';

export interface TopInfo {
  /** VNF node of the entry file (when it has one). */
  readonly node: NodeT | undefined;
  readonly chain: TypeDef[];
  readonly values: Record<string, Plain | undefined>;
}

function vnfNodesIn(p: Parser, file: string): NodeT[] {
  return p.nodeTemplates(file).filter((n) => n.kind === 'vnf');
}

/** The single VNF node of a file, or undefined; several are an error. */
export function singleVnfNode(p: Parser, file: string): NodeT | undefined {
  const vnfs = vnfNodesIn(p, file);
  if (vnfs.length > 1) {
    const second = vnfs[1];
    p.fail(`several VNF nodes (${vnfs.map((n) => n.name).join(', ')}) in one topology template; a VNFD describes one VNF`, own(own(p.topology(file), 'node_templates'), second?.name ?? ''), undefined, file);
  }
  return vnfs[0];
}

/** Effective property values of the VNF node (plain, get_input resolved against the file's inputs). */
export function vnfValues(p: Parser, node: { def?: Obj | undefined; chain: TypeDef[] }, scope: Scope): Record<string, Plain | undefined> {
  const names = new Set<string>();
  for (const t of node.chain) for (const k of Object.keys(isObj(own(t.def, 'properties')) ? (own(t.def, 'properties') as Obj) : {})) names.add(k);
  const props = own(node.def, 'properties');
  if (isObj(props)) for (const k of Object.keys(props)) names.add(k);
  const out: Record<string, Plain | undefined> = {};
  for (const n of names) {
    const slot = p.propSlot(node, n);
    const v = p.resolve(slot, scope, n);
    const text = typeof v.value === 'number' ? p.src.numberText(v.slot.holder, v.slot.key) : undefined;
    out[n] = text ?? v.value;
  }
  return out;
}

export interface FlavourSource {
  readonly flavourId: string;
  readonly file: string;
  readonly nodeType: string | undefined;
}

export function findFlavourFiles(p: Parser): FlavourSource[] {
  const out: FlavourSource[] = [];
  for (const file of p.docs.keys()) {
    const tt = p.topology(file);
    const sm = own(tt, 'substitution_mappings');
    if (sm === undefined || sm === null) continue;
    if (!isObj(sm)) p.fail(`substitution_mappings must be a map, got ${describe(sm)}`, tt, 'substitution_mappings', file);
    const nodeType = own(sm, 'node_type');
    if (typeof nodeType !== 'string') p.fail('substitution_mappings.node_type is required (the VNF node type this flavour implements)', sm, undefined, file);
    const chain = p.types.chain('node', nodeType, p.src.posOf(sm, 'node_type'));
    if (p.nodeKind(chain) !== 'vnf') {
      p.fail(`substitution_mappings.node_type '${nodeType}' is not derived from tosca.nodes.nfv.VNF`, sm, 'node_type', file);
    }
    const props = own(sm, 'properties');
    let fid: Plain | undefined = own(props, 'flavour_id');
    if (Array.isArray(fid) && fid.length === 1) fid = fid[0];
    if (fid === undefined || fid === null) {
      const vnf = singleVnfNode(p, file);
      fid = vnf ? own(own(vnf.def, 'properties'), 'flavour_id') : undefined;
    }
    if (typeof fid === 'number') fid = String(fid);
    if (typeof fid !== 'string' || fid === '') {
      p.fail('substitution_mappings.properties.flavour_id is required: it names the deployment flavour this file describes', sm, undefined, file);
    }
    const dup = out.find((f) => f.flavourId === fid);
    if (dup) p.fail(`flavour '${fid}' is described twice (also in ${dup.file})`, sm, undefined, file);
    out.push({ flavourId: fid, file, nodeType });
  }
  return out;
}
