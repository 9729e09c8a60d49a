/**
 * The TOSCA side of the VNFD parser: the package's YAML documents, their imports and types, the
 * topology templates with their inputs and node templates, and the typed reading of values
 * (`get_input`, numbers, lists, maps) with positions for the errors.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { type CsarFiles, DEFAULT_CSAR_LIMITS, describeSize } from '../csar-reader.ts';
import { PackageError } from '../package-error.ts';
import { type DeclaredDigest, nodeHashName, parseToscaMeta, TOSCA_META_PATH } from '../tosca-meta.ts';
import { type TypeDef, TypeRegistry } from '../tosca-types.ts';
import type { ManifestDigestModel } from '../vnfd-model.ts';
import { type Plain, type SourcePos, YamlSources } from '../yaml-source.ts';

export type Obj = Record<string, Plain>;

/** ETSI SOL001 type files whose types are built in when the package does not ship them. */
export const ETSI_TYPE_FILE = /^etsi_nfv_sol001_[a-z0-9_]*types\.ya?ml$/i;

const URI = /^[a-z][a-z0-9+.-]*:\/\//i;

export const YAML_FILE = /\.ya?ml$/i;

/** LCM hooks the VNFM runs (SOL001 Vnflcm interface `<op>_start/_end` and Tacker's v2 rollback hooks). */
const HOOK_NAME =
  /^(instantiate|terminate|scale|scale_to_level|heal|operate|change_flavour|change_external_connectivity|modify_information|change_current_package|change_vnfpkg)(_rollback)?_(start|end)$/;

const NODE_BASES = {
  'tosca.nodes.nfv.VNF': 'vnf',
  'tosca.nodes.nfv.Vdu.Compute': 'vdu',
  'tosca.nodes.nfv.Vdu.VirtualBlockStorage': 'BlockStorage',
  'tosca.nodes.nfv.Vdu.VirtualObjectStorage': 'ObjectStorage',
  'tosca.nodes.nfv.Vdu.VirtualFileStorage': 'FileStorage',
  'tosca.nodes.nfv.VduCp': 'vduCp',
  'tosca.nodes.nfv.VnfExtCp': 'extCp',
  'tosca.nodes.nfv.VnfVirtualLink': 'vl',
} as const;

type NodeKind = (typeof NODE_BASES)[keyof typeof NODE_BASES] | 'other';

const POLICY_BASES = {
  'tosca.policies.nfv.ScalingAspects': 'aspects',
  'tosca.policies.nfv.VduScalingAspectDeltas': 'aspectDeltas',
  'tosca.policies.nfv.VduInitialDelta': 'initialDelta',
  'tosca.policies.nfv.InstantiationLevels': 'levels',
  'tosca.policies.nfv.VduInstantiationLevels': 'vduLevels',
  'tosca.policies.nfv.AffinityRule': 'affinity',
  'tosca.policies.nfv.AntiAffinityRule': 'antiAffinity',
} as const;

type PolicyKind = (typeof POLICY_BASES)[keyof typeof POLICY_BASES] | 'other';

export function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function own(o: unknown, k: string): Plain | undefined {
  if (Array.isArray(o)) {
    const i = Number(k);
    return Number.isInteger(i) && i >= 0 && i < o.length ? (o[i] as Plain) : undefined;
  }
  return isObj(o) && Object.hasOwn(o, k) ? o[k] : undefined;
}

export function describe(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  return JSON.stringify(v);
}

export function sorted(a: Iterable<string>): string[] {
  return [...a].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/** get_input scope: the inputs declared by a topology template and the values given to them. */
export interface Scope {
  readonly file: string;
  readonly inputs: Obj;
  readonly values: Readonly<Record<string, Plain | undefined>>;
}

/** A value together with the object/key it was read from (for positions and number spelling). */
export interface Slot {
  readonly holder: unknown;
  readonly key: string;
}

export interface NodeT {
  readonly name: string;
  readonly def: Obj;
  readonly type: string;
  readonly chain: TypeDef[];
  readonly kind: NodeKind;
  readonly file: string;
}

interface Requirement {
  readonly name: string;
  readonly target: string;
  readonly slot: Slot;
}

export interface ArtifactDecl {
  readonly name: string;
  readonly file: string;
  readonly type: string;
  readonly properties?: Readonly<Record<string, unknown>>;
  readonly declaredIn: string;
  readonly slot: Slot;
}

export interface HookDecl {
  readonly hook: string;
  readonly implementation: string;
  readonly declaredIn: string;
  readonly slot: Slot;
}

/** The state of one package parse. */
export class Parser {
  readonly src = new YamlSources();
  readonly types = new TypeRegistry(this.src);
  readonly docs = new Map<string, Obj>();
  readonly warnings: string[] = [];
  /** ETSI type files present in the package but unreadable, replaced by the built-in types. */
  readonly builtinStandIns = new Set<string>();

  constructor(
    readonly files: CsarFiles,
    readonly maxTextBytes: number = DEFAULT_CSAR_LIMITS.maxVnfdBytes,
  ) {}

  // ---------- errors and positions ----------

  at(holder: unknown, key?: string | number, fallbackFile?: string): { file?: string; line?: number; column?: number } {
    const p: SourcePos | undefined = this.src.posOf(holder, key);
    if (p) return { file: p.file, line: p.line, column: p.column };
    return fallbackFile === undefined ? {} : { file: fallbackFile };
  }

  fail(message: string, holder: unknown, key?: string | number, file?: string): never {
    throw new PackageError(message, this.at(holder, key, file));
  }

  where(holder: unknown, key: string | number | undefined, file: string): string {
    const p = this.src.posOf(holder, key);
    return p ? `${p.file}:${p.line}:${p.column}` : file;
  }

  // ---------- value access with get_input ----------

  resolve(slot: Slot, scope: Scope, label: string): { value: Plain | undefined; slot: Slot } {
    let value = own(slot.holder, slot.key);
    let cur = slot;
    for (let hops = 0; isObj(value) && Object.keys(value).length === 1 && Object.hasOwn(value, 'get_input'); hops += 1) {
      if (hops > 20) this.fail(`${label}: get_input chain is too long`, cur.holder, cur.key, scope.file);
      const arg = value.get_input;
      const path = Array.isArray(arg) ? arg : [arg];
      const name = path[0];
      if (typeof name !== 'string') this.fail(`${label}: get_input needs an input name, got ${describe(name)}`, value, 'get_input', scope.file);
      const decl = own(scope.inputs, name);
      if (decl === undefined) {
        this.fail(`${label}: get_input refers to input '${name}', which topology_template.inputs does not declare`, value, 'get_input', scope.file);
      }
      let v: Plain | undefined;
      let from: Slot;
      if (Object.hasOwn(scope.values, name) && scope.values[name] !== undefined) {
        v = scope.values[name];
        from = { holder: scope.values, key: name };
      } else {
        v = own(decl, 'default');
        from = { holder: decl, key: 'default' };
      }
      for (const seg of path.slice(1)) {
        const k = String(seg);
        if (Array.isArray(v) && typeof seg === 'number') {
          from = { holder: v, key: k };
          v = v[seg];
        } else {
          from = { holder: v, key: k };
          v = own(v, k);
        }
      }
      value = v;
      cur = from;
    }
    return { value, slot: cur };
  }

  str(slot: Slot, scope: Scope, label: string, required: true): string;
  str(slot: Slot, scope: Scope, label: string, required?: boolean): string | undefined;
  str(slot: Slot, scope: Scope, label: string, required = false): string | undefined {
    const { value, slot: from } = this.resolve(slot, scope, label);
    if (value === undefined || value === null) {
      if (required) this.fail(`${label} is required`, slot.holder, own(slot.holder, slot.key) === undefined ? undefined : slot.key, scope.file);
      return undefined;
    }
    if (typeof value === 'string') return value;
    if (typeof value === 'number') return this.src.numberText(from.holder, from.key) ?? String(value);
    if (typeof value === 'boolean') return String(value);
    return this.fail(`${label} must be a string, got ${describe(value)}`, slot.holder, slot.key, scope.file);
  }

  int(slot: Slot, scope: Scope, label: string, opts: { required?: boolean; min?: number } = {}): number | undefined {
    const { value } = this.resolve(slot, scope, label);
    if (value === undefined || value === null) {
      if (opts.required) this.fail(`${label} is required`, slot.holder, own(slot.holder, slot.key) === undefined ? undefined : slot.key, scope.file);
      return undefined;
    }
    const min = opts.min ?? 0;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
      this.fail(`${label} must be an integer >= ${min}, got ${describe(value)}`, slot.holder, slot.key, scope.file);
    }
    return value;
  }

  bool(slot: Slot, scope: Scope, label: string): boolean | undefined {
    const { value } = this.resolve(slot, scope, label);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') this.fail(`${label} must be true or false, got ${describe(value)}`, slot.holder, slot.key, scope.file);
    return value;
  }

  map(slot: Slot, scope: Scope, label: string, required = false): Obj | undefined {
    const { value } = this.resolve(slot, scope, label);
    if (value === undefined || value === null) {
      if (required) this.fail(`${label} is required`, slot.holder, own(slot.holder, slot.key) === undefined ? undefined : slot.key, scope.file);
      return undefined;
    }
    if (!isObj(value)) this.fail(`${label} must be a map, got ${describe(value)}`, slot.holder, slot.key, scope.file);
    return value;
  }

  list(slot: Slot, scope: Scope, label: string): Plain[] | undefined {
    const { value } = this.resolve(slot, scope, label);
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) this.fail(`${label} must be a list, got ${describe(value)}`, slot.holder, slot.key, scope.file);
    return value;
  }

  strList(slot: Slot, scope: Scope, label: string): string[] {
    const l = this.list(slot, scope, label);
    if (!l) return [];
    return l.map((_, i) => this.str({ holder: l, key: String(i) }, scope, `${label}[${i}]`, true));
  }

  // ---------- files and imports ----------

  readText(path: string): string {
    const b = this.files.get(path);
    if (!b) throw new PackageError(`file ${path} is not in the package`);
    if (b.length > this.maxTextBytes) {
      throw new PackageError(`the VNFD/metadata file is larger than the limit of ${describeSize(this.maxTextBytes)} (packages.maxVnfdBytes): ${describeSize(b.length)}`, { file: path });
    }
    return b.toString('utf8');
  }

  loadDefinitions(path: string): void {
    if (this.docs.has(path) || this.builtinStandIns.has(path)) return;
    let doc: Plain;
    try {
      doc = this.src.parse(path, this.readText(path));
    } catch (e) {
      // Copies of the ETSI type files in circulation (Tacker's among them) contain YAML that only
      // lenient parsers accept. Their types are built in, so use those instead of failing.
      if (!(e instanceof PackageError) || !ETSI_TYPE_FILE.test(posix.basename(path))) throw e;
      this.builtinStandIns.add(path);
      this.warnings.push(`${e.message}; this is an ETSI SOL001 type file, so the built-in definitions of its types are used instead`);
      return;
    }
    if (!isObj(doc)) {
      throw new PackageError(`a TOSCA definitions file must be a YAML map, but this one is ${describe(doc)}`, { file: path, line: 1, column: 1 });
    }
    const version = own(doc, 'tosca_definitions_version');
    if (version === undefined || version === null) {
      throw new PackageError('tosca_definitions_version is missing: this does not look like a TOSCA definitions file', { file: path, line: 1, column: 1 });
    }
    if (typeof version !== 'string' || !version.startsWith('tosca_')) {
      this.fail(`tosca_definitions_version ${describe(version)} is not a TOSCA version (e.g. tosca_simple_yaml_1_2)`, doc, 'tosca_definitions_version', path);
    }
    this.docs.set(path, doc);
    this.types.addFile(path, doc);
    const imports = own(doc, 'imports');
    if (imports === undefined || imports === null) return;
    const items: { spec: Plain; holder: unknown; key: string }[] = [];
    if (Array.isArray(imports)) {
      imports.forEach((item, i) => {
        if (isObj(item) && !Object.hasOwn(item, 'file') && Object.keys(item).length >= 1) {
          // TOSCA 1.0 named imports: `- name: file` or `- name: {file: ...}`
          for (const [k, v] of Object.entries(item)) items.push({ spec: v, holder: item, key: k });
        } else {
          items.push({ spec: item, holder: imports, key: String(i) });
        }
      });
    } else if (isObj(imports)) {
      for (const [k, v] of Object.entries(imports)) items.push({ spec: v, holder: imports, key: k });
    } else {
      this.fail(`imports must be a list, got ${describe(imports)}`, doc, 'imports', path);
    }
    for (const it of items) {
      const target = this.resolveImport(path, it.spec, it.holder, it.key);
      if (target !== undefined) this.loadDefinitions(target);
    }
  }

  /** Package path of an import, or undefined when it is a built-in ETSI type file. */
  resolveImport(importer: string, spec: Plain, holder: unknown, key: string): string | undefined {
    let name: Plain | undefined = spec;
    let repository: Plain | undefined;
    if (isObj(spec)) {
      name = own(spec, 'file');
      repository = own(spec, 'repository');
    }
    if (typeof name !== 'string' || name.trim() === '') {
      this.fail(`an import must be a file name (or a map with 'file'), got ${describe(name)}`, holder, key, importer);
    }
    const spelled = name.trim();
    const dir = posix.dirname(importer);
    const base = posix.basename(spelled.split(/[?#]/)[0] ?? spelled);
    if (URI.test(spelled) || (repository !== undefined && repository !== null)) {
      const local = dir === '.' ? base : `${dir}/${base}`;
      if (this.files.has(local)) return local;
      if (ETSI_TYPE_FILE.test(base)) return undefined;
      this.fail(
        `import '${spelled}' is remote; imports are not downloaded, so put ${base} in the package next to ${importer}`,
        holder,
        key,
        importer,
      );
    }
    const joined = spelled.startsWith('/') ? posix.normalize(spelled.slice(1)) : posix.normalize(posix.join(dir, spelled));
    if (joined === '..' || joined.startsWith('../')) this.fail(`import '${spelled}' points outside the package`, holder, key, importer);
    if (this.files.has(joined)) return joined;
    if (ETSI_TYPE_FILE.test(base)) return undefined;
    return this.fail(`import '${spelled}' not found: the package has no file ${joined}`, holder, key, importer);
  }

  // ---------- node templates ----------

  nodeKind(chain: TypeDef[]): NodeKind {
    for (const t of chain) {
      if (Object.hasOwn(NODE_BASES, t.name)) return NODE_BASES[t.name as keyof typeof NODE_BASES];
    }
    return 'other';
  }

  policyKind(chain: TypeDef[]): PolicyKind {
    for (const t of chain) {
      if (Object.hasOwn(POLICY_BASES, t.name)) return POLICY_BASES[t.name as keyof typeof POLICY_BASES];
    }
    return 'other';
  }

  topology(file: string): Obj | undefined {
    const doc = this.docs.get(file);
    const tt = own(doc, 'topology_template');
    if (tt === undefined || tt === null) return undefined;
    if (!isObj(tt)) this.fail(`topology_template must be a map, got ${describe(tt)}`, doc, 'topology_template', file);
    return tt;
  }

  inputsOf(file: string): Obj {
    const tt = this.topology(file);
    const inputs = own(tt, 'inputs');
    if (inputs === undefined || inputs === null) return {};
    if (!isObj(inputs)) this.fail(`topology_template.inputs must be a map, got ${describe(inputs)}`, tt, 'inputs', file);
    return inputs;
  }

  nodeTemplates(file: string): NodeT[] {
    const tt = this.topology(file);
    const nts = own(tt, 'node_templates');
    if (nts === undefined || nts === null) return [];
    if (!isObj(nts)) this.fail(`topology_template.node_templates must be a map, got ${describe(nts)}`, tt, 'node_templates', file);
    const out: NodeT[] = [];
    for (const [name, def] of Object.entries(nts)) {
      if (!isObj(def)) this.fail(`node template '${name}' must be a map, got ${describe(def)}`, nts, name, file);
      const type = own(def, 'type');
      if (typeof type !== 'string' || type === '') {
        this.fail(`node template '${name}' has no type`, nts, name, file);
      }
      const chain = this.types.chain('node', type, this.src.posOf(def, 'type'));
      out.push({ name, def, type, chain, kind: this.nodeKind(chain), file });
    }
    return out;
  }

  /** Where a property's value comes from: the template, else the nearest type default. */
  propSlot(node: { def?: Obj | undefined; chain: TypeDef[] }, name: string): Slot {
    const props = own(node.def, 'properties');
    if (props !== undefined && props !== null && !isObj(props)) {
      this.fail(`properties must be a map, got ${describe(props)}`, node.def, 'properties');
    }
    if (isObj(props) && Object.hasOwn(props, name)) return { holder: props, key: name };
    for (const t of node.chain) {
      const pdef = own(own(t.def, 'properties'), name);
      if (isObj(pdef) && Object.hasOwn(pdef, 'default')) return { holder: pdef, key: 'default' };
    }
    return { holder: isObj(props) ? props : {}, key: name };
  }

  requirements(node: NodeT): Requirement[] {
    const reqs = own(node.def, 'requirements');
    if (reqs === undefined || reqs === null) return [];
    if (!Array.isArray(reqs)) this.fail(`${node.name}: requirements must be a list, got ${describe(reqs)}`, node.def, 'requirements', node.file);
    const out: Requirement[] = [];
    reqs.forEach((r, i) => {
      if (r === null) return;
      if (!isObj(r)) this.fail(`${node.name}: requirement #${i + 1} must be a map like '- virtual_binding: VDU1'`, reqs, i, node.file);
      for (const [name, v] of Object.entries(r)) {
        if (v === null) continue;
        let target: Plain | undefined = v;
        let slot: Slot = { holder: r, key: name };
        if (isObj(v)) {
          target = own(v, 'node');
          slot = { holder: v, key: 'node' };
        }
        if (target === undefined || target === null) continue;
        if (typeof target !== 'string') this.fail(`${node.name}: requirement ${name} must name a node template, got ${describe(target)}`, slot.holder, slot.key, node.file);
        out.push({ name, target, slot });
      }
    });
    return out;
  }

  // ---------- artifacts and hooks ----------

  packagePath(file: string, relativeTo: string, holder: unknown, key: string, what: string): string {
    if (URI.test(file)) return file;
    const p = file.startsWith('/') ? posix.normalize(file.slice(1)) : posix.normalize(posix.join(posix.dirname(relativeTo), file));
    if (p === '..' || p.startsWith('../')) this.fail(`${what} '${file}' points outside the package`, holder, key, relativeTo);
    return p;
  }

  artifactsOf(def: Obj | undefined, file: string, label: string, into: Map<string, ArtifactDecl>): void {
    const arts = own(def, 'artifacts');
    if (arts === undefined || arts === null) return;
    if (!isObj(arts)) this.fail(`${label}: artifacts must be a map, got ${describe(arts)}`, def, 'artifacts', file);
    for (const [name, a] of Object.entries(arts)) {
      if (typeof a === 'string') {
        into.set(name, { name, file: a, type: '', declaredIn: file, slot: { holder: arts, key: name } });
        continue;
      }
      if (!isObj(a)) this.fail(`${label}: artifact '${name}' must be a map with 'file' and 'type'`, arts, name, file);
      const f = own(a, 'file');
      if (typeof f !== 'string' || f === '') this.fail(`${label}: artifact '${name}' has no 'file'`, arts, name, file);
      const t = own(a, 'type');
      if (t !== undefined && t !== null && typeof t !== 'string') this.fail(`${label}: artifact '${name}' type must be a string`, a, 'type', file);
      const props = own(a, 'properties');
      if (props !== undefined && props !== null && !isObj(props)) this.fail(`${label}: artifact '${name}' properties must be a map`, a, 'properties', file);
      into.set(name, { name, file: f, type: typeof t === 'string' ? t : '', ...(isObj(props) ? { properties: props as Record<string, unknown> } : {}), declaredIn: file, slot: { holder: a, key: 'file' } });
    }
  }

  hooksOf(def: Obj | undefined, file: string, label: string, into: Map<string, HookDecl>): void {
    const ifaces = own(def, 'interfaces');
    if (ifaces === undefined || ifaces === null) return;
    if (!isObj(ifaces)) this.fail(`${label}: interfaces must be a map, got ${describe(ifaces)}`, def, 'interfaces', file);
    const lcm = own(ifaces, 'Vnflcm');
    if (lcm === undefined || lcm === null) return;
    if (!isObj(lcm)) this.fail(`${label}: interfaces.Vnflcm must be a map, got ${describe(lcm)}`, ifaces, 'Vnflcm', file);
    const ops: [string, Plain, Obj][] = [];
    for (const [k, v] of Object.entries(lcm)) {
      if (k === 'type' || k === 'description' || k === 'inputs' || k === 'derived_from' || k === 'notifications') continue;
      if (k === 'operations') {
        if (v === null) continue;
        if (!isObj(v)) this.fail(`${label}: interfaces.Vnflcm.operations must be a map`, lcm, k, file);
        for (const [ok, ov] of Object.entries(v)) ops.push([ok, ov, v]);
        continue;
      }
      ops.push([k, v, lcm]);
    }
    for (const [op, v, holder] of ops) {
      let impl: Plain | undefined = v;
      let slot: Slot = { holder, key: op };
      if (isObj(v)) {
        impl = own(v, 'implementation');
        slot = { holder: v, key: 'implementation' };
        if (isObj(impl)) {
          slot = { holder: impl, key: 'primary' };
          impl = own(impl, 'primary');
        }
      }
      if (impl === undefined || impl === null || (Array.isArray(impl) && impl.length === 0)) continue;
      if (typeof impl !== 'string') this.fail(`${label}: Vnflcm.${op}.implementation must name an artifact, got ${describe(impl)}`, slot.holder, slot.key, file);
      if (!HOOK_NAME.test(op)) {
        this.warnings.push(`${this.where(holder, op, file)}: Vnflcm operation '${op}' is not a hook the VNFM runs (expected <operation>_start/_end or <operation>_rollback_start/_end); it is ignored`);
        continue;
      }
      into.set(op, { hook: op, implementation: impl, declaredIn: file, slot });
    }
  }

  // ---------- metadata and digests ----------

  entryDefinitions(): { entry: string; manifest?: string } {
    const metaBuf = this.files.get(TOSCA_META_PATH);
    if (metaBuf) {
      const meta = parseToscaMeta(metaBuf.toString('utf8'));
      this.metaDigests.push(...meta.digests);
      const ed = meta.block0.get('Entry-Definitions');
      const entry = normalizeRel(ed?.value ?? '');
      if (!ed || entry === '') throw new PackageError('Entry-Definitions is empty', { file: TOSCA_META_PATH, line: ed?.line });
      if (!this.files.has(entry)) {
        throw new PackageError(`Entry-Definitions names ${entry}, which is not in the package`, { file: TOSCA_META_PATH, line: ed.line });
      }
      const mf = meta.block0.get('ETSI-Entry-Manifest');
      if (mf) {
        const m = normalizeRel(mf.value);
        if (!this.files.has(m)) throw new PackageError(`ETSI-Entry-Manifest names ${m}, which is not in the package`, { file: TOSCA_META_PATH, line: mf.line });
        return { entry, manifest: m };
      }
      return { entry };
    }
    const rootYaml = sorted([...this.files.keys()].filter((p) => !p.includes('/') && YAML_FILE.test(p)));
    if (rootYaml.length === 1 && rootYaml[0] !== undefined) {
      const entry = rootYaml[0];
      const mfName = entry.replace(YAML_FILE, '.mf');
      const rootMf = [...this.files.keys()].filter((p) => !p.includes('/') && p.toLowerCase().endsWith('.mf'));
      const manifest = this.files.has(mfName) ? mfName : rootMf.length === 1 ? rootMf[0] : undefined;
      return manifest === undefined ? { entry } : { entry, manifest };
    }
    if (rootYaml.length > 1) {
      throw new PackageError(
        `the package has no ${TOSCA_META_PATH} and several YAML files at its root (${rootYaml.join(', ')}): add TOSCA.meta with Entry-Definitions to say which is the VNFD`,
      );
    }
    const nested = [...this.files.keys()].find((p) => p.endsWith(`/${TOSCA_META_PATH}`));
    if (nested) {
      const folder = nested.slice(0, -TOSCA_META_PATH.length);
      throw new PackageError(
        `${TOSCA_META_PATH} is not at the package root but under '${folder}': zip the contents of that folder, not the folder itself`,
      );
    }
    throw new PackageError(`the package has neither ${TOSCA_META_PATH} nor a YAML file at its root, so there is no VNFD to read`);
  }

  readonly metaDigests: DeclaredDigest[] = [];

  verifyDigests(): Record<string, ManifestDigestModel> | undefined {
    if (this.metaDigests.length === 0) return undefined;
    const out: Record<string, ManifestDigestModel> = {};
    for (const d of this.metaDigests) {
      const where = { file: d.file, line: d.line };
      const algo = nodeHashName(d.algorithm);
      if (!algo) throw new PackageError(`unsupported digest algorithm '${d.algorithm}' for ${d.source} (use SHA-256, SHA-384 or SHA-512)`, where);
      if (URI.test(d.source)) {
        out[d.source] = { algorithm: d.algorithm, hash: d.hash, declaredIn: d.declaredIn };
        continue;
      }
      const path = normalizeRel(d.source);
      const content = this.files.get(path);
      if (!content) throw new PackageError(`a digest is declared for ${d.source}, which is not in the package`, where);
      const actual = createHash(algo).update(content).digest('hex');
      if (actual.toLowerCase() !== d.hash.trim().toLowerCase()) {
        throw new PackageError(`${path}: ${d.algorithm} digest does not match the declared one (declared ${d.hash.trim()}, actual ${actual}); the file was changed after the digest was computed`, where);
      }
      out[path] = { algorithm: d.algorithm, hash: d.hash.trim(), declaredIn: d.declaredIn };
    }
    return out;
  }
}

function normalizeRel(p: string): string {
  const n = posix.normalize(p.trim().replace(/\\/g, '/').replace(/^\/+/, ''));
  return n === '.' ? '' : n.replace(/^\.\//, '');
}
