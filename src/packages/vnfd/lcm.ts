/**
 * LCM interfaces and artifacts: the flavour's VNF node with its hooks and their scripts, the
 * BaseHOT templates and the Kubernetes manifests of the package.
 */
import { posix } from 'node:path';
import { PackageError } from '../package-error.ts';
import type { BaseHotModel, KubernetesResourceModel, LcmHookModel } from '../vnfd-model.ts';
import type { Plain } from '../yaml-source.ts';
import { type FlavourSource, singleVnfNode, type TopInfo } from './substitution.ts';
import { type ArtifactDecl, type HookDecl, isObj, type NodeT, own, Parser, type Scope, type Slot, sorted, YAML_FILE } from './templates.ts';

/**
 * The VNF node of a flavour's own file (checked against the entry's VNF node and the flavour's
 * substitution mapping), the node that describes the flavour, and the flavour's description.
 */
export function flavourVnfNode(p: Parser, src: FlavourSource, top: TopInfo, scope: Scope): { dfVnf: NodeT | undefined; vnfForFlavour: NodeT | undefined; description: string } {
  const file = src.file;
  const dfVnf = singleVnfNode(p, file);
  if (dfVnf && src.nodeType !== undefined && !p.types.isA('node', dfVnf.type, src.nodeType) && !p.types.isA('node', src.nodeType, dfVnf.type)) {
    p.fail(`VNF node '${dfVnf.name}' has type ${dfVnf.type}, but substitution_mappings.node_type is ${src.nodeType}`, dfVnf.def, 'type', file);
  }
  if (src.nodeType !== undefined && top.node && !p.types.isA('node', top.node.type, src.nodeType) && !p.types.isA('node', src.nodeType, top.node.type)) {
    p.fail(`flavour '${src.flavourId}' implements node type ${src.nodeType}, but the VNF node in ${top.node.file} is a ${top.node.type}`, own(p.topology(file), 'substitution_mappings'), 'node_type', file);
  }
  if (dfVnf && dfVnf !== top.node) {
    for (const prop of ['descriptor_id', 'provider', 'product_name', 'software_version', 'descriptor_version']) {
      const props = own(dfVnf.def, 'properties');
      if (!isObj(props) || !Object.hasOwn(props, prop)) continue;
      const v = p.str({ holder: props, key: prop }, scope, `${dfVnf.name}: properties.${prop}`);
      const expected = top.values[prop];
      if (v !== undefined && expected !== undefined && expected !== null && v !== String(expected)) {
        p.fail(`${dfVnf.name}: properties.${prop} is '${v}' here but '${String(expected)}' in the VNF node of the entry definitions`, props, prop, file);
      }
    }
  }
  const vnfForFlavour = dfVnf ?? top.node;
  let description = '';
  if (vnfForFlavour) {
    description = p.str(p.propSlot(vnfForFlavour, 'flavour_description'), scope, `${vnfForFlavour.name}: properties.flavour_description`) ?? '';
  }
  if (description === '') {
    const d = own(p.docs.get(file), 'description');
    if (typeof d === 'string') description = d;
  }

  return { dfVnf, vnfForFlavour, description };
}

/**
 * The LCM hooks of a flavour and their script artifacts; a script missing from the package is
 * a warning (the hook fails when run).
 */
export function lcmHooksOf(p: Parser, src: FlavourSource, top: TopInfo, vnf: { dfVnf: NodeT | undefined; vnfForFlavour: NodeT | undefined }): Record<string, LcmHookModel> {
  const { dfVnf, vnfForFlavour } = vnf;
  // hooks: type chain < entry VNF node < flavour VNF node
  const hooks = new Map<string, HookDecl>();
  const arts = new Map<string, ArtifactDecl>();
  const typeChain = vnfForFlavour?.chain ?? top.chain;
  for (const t of [...typeChain].reverse()) {
    if (t.file === undefined) continue;
    p.hooksOf(t.def, t.file, `node type ${t.name}`, hooks);
    p.artifactsOf(t.def, t.file, `node type ${t.name}`, arts);
  }
  for (const n of new Set([top.node, dfVnf])) {
    if (!n) continue;
    p.hooksOf(n.def, n.file, n.name, hooks);
    p.artifactsOf(n.def, n.file, n.name, arts);
  }
  const lcmHooks: Record<string, LcmHookModel> = {};
  const missingScripts = new Map<string, { where: string; artifactName: string; hooks: string[] }>();
  for (const h of sorted(hooks.keys())) {
    const decl = hooks.get(h);
    if (!decl) continue;
    const art = arts.get(decl.implementation);
    let artifactName = decl.implementation;
    let rawFile: string;
    let type = '';
    let properties: Readonly<Record<string, unknown>> | undefined;
    let fileSlot: Slot = decl.slot;
    let relTo = decl.declaredIn;
    if (art) {
      rawFile = art.file;
      type = art.type;
      properties = art.properties;
      fileSlot = art.slot;
      relTo = art.declaredIn;
    } else if (/[/.]/.test(decl.implementation)) {
      rawFile = decl.implementation;
      artifactName = posix.basename(decl.implementation);
    } else {
      return p.fail(
        `hook ${h} refers to artifact '${decl.implementation}', which the VNF node does not declare under artifacts`,
        decl.slot.holder,
        decl.slot.key,
        decl.declaredIn,
      );
    }
    const path = p.packagePath(rawFile, relTo, fileSlot.holder, fileSlot.key, `hook ${h}: artifact file`);
    const inPkg = p.files.has(path);
    if (!inPkg) {
      const m = missingScripts.get(path) ?? { where: p.where(fileSlot.holder, fileSlot.key, relTo), artifactName, hooks: [] };
      m.hooks.push(h);
      missingScripts.set(path, m);
    }
    lcmHooks[h] = { hook: h, artifactName, file: path, type, fileInPackage: inPkg, ...(properties ? { properties } : {}) };
  }
  for (const [path, m] of missingScripts) {
    p.warnings.push(
      `${m.where}: script ${path} (artifact '${m.artifactName}') is not in the package; flavour '${src.flavourId}' hooks ${m.hooks.join(', ')} will fail when run`,
    );
  }

  return lcmHooks;
}

export function baseHots(p: Parser, flavourIds: readonly string[]): Record<string, BaseHotModel> {
  const dirs = new Map<string, { tops: string[]; nested: string[] }>();
  for (const f of p.files.keys()) {
    const m = /^BaseHOT\/([^/]+)\/(.+)$/.exec(f);
    if (!m || m[1] === undefined || m[2] === undefined || !YAML_FILE.test(f)) continue;
    const e = dirs.get(m[1]) ?? { tops: [], nested: [] };
    dirs.set(m[1], e);
    if (!m[2].includes('/')) e.tops.push(f);
    else if (/^nested\/[^/]+$/.test(m[2])) e.nested.push(f);
  }
  const out: Record<string, BaseHotModel> = {};
  for (const flavourId of sorted(dirs.keys())) {
    const e = dirs.get(flavourId);
    if (!e) continue;
    const dir = `BaseHOT/${flavourId}`;
    const candidates: string[] = [];
    for (const f of sorted(e.tops)) {
      const doc = p.src.parse(f, p.readText(f));
      if (isObj(doc) && Object.hasOwn(doc, 'heat_template_version')) candidates.push(f);
    }
    for (const f of e.nested) {
      const doc = p.src.parse(f, p.readText(f));
      if (!isObj(doc) || !Object.hasOwn(doc, 'heat_template_version')) {
        throw new PackageError('a nested Heat template must be a YAML map with heat_template_version', { file: f, line: 1, column: 1 });
      }
    }
    if (candidates.length === 0) {
      if (e.tops.length === 0) continue;
      throw new PackageError(`${dir}/ has no top Heat template (a YAML file with heat_template_version directly in the folder)`, { file: e.tops[0] });
    }
    if (candidates.length > 1) {
      throw new PackageError(`${dir}/ has several top Heat templates (${candidates.join(', ')}); keep one and move the others under ${dir}/nested/`);
    }
    if (!flavourIds.includes(flavourId)) p.warnings.push(`${dir}/: no deployment flavour '${flavourId}' in the VNFD, so these Heat templates are never used`);
    out[flavourId] = { flavourId, dir, topTemplate: candidates[0] as string, nestedTemplates: sorted(e.nested) };
  }
  return out;
}

export function kubernetesResources(p: Parser, files: readonly string[]): KubernetesResourceModel[] {
  const out: KubernetesResourceModel[] = [];
  for (const f of files) {
    let docs: Plain[];
    try {
      docs = p.src.parseAll(f, p.readText(f));
    } catch (e) {
      p.warnings.push(`${e instanceof Error ? e.message : String(e)} (this manifest cannot be deployed)`);
      continue;
    }
    docs.forEach((d, index) => {
      if (!isObj(d)) return;
      const kind = own(d, 'kind');
      const apiVersion = own(d, 'apiVersion');
      const name = own(own(d, 'metadata'), 'name');
      const ns = own(own(d, 'metadata'), 'namespace');
      if (typeof kind !== 'string' || typeof apiVersion !== 'string' || typeof name !== 'string') return;
      const r: { -readonly [K in keyof KubernetesResourceModel]: KubernetesResourceModel[K] } = { file: f, index, apiVersion, kind, name };
      if (typeof ns === 'string') r.namespace = ns;
      out.push(r);
    });
  }
  return out;
}
