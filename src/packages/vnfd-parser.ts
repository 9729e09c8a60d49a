/**
 * Parses a VNF package (SOL004 CSAR contents) and its TOSCA VNFD (SOL001) into the typed
 * {@link VnfPackageModel}.
 *
 * What it understands: TOSCA.meta `Entry-Definitions` (or a single YAML at the root), `imports`
 * resolved inside the package (the ETSI SOL001 type files may be shipped, imported by URL, or
 * omitted: their types are built in), `derived_from` chains with property defaults,
 * `substitution_mappings` from the top file to one file per deployment flavour, `get_input`, the
 * ETSI node types (VNF, Vdu.Compute, Vdu.Virtual*Storage, VduCp, VnfVirtualLink), the scaling and
 * instantiation-level policies, `Vnflcm` hook scripts, per-file digests, BaseHOT templates and
 * Kubernetes manifests.
 *
 * Every problem becomes a {@link PackageError} naming the file and, when known, line and column;
 * malformed input of any shape yields such an error, never a TypeError.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { type CsarFiles, DEFAULT_CSAR_LIMITS, describeSize } from './csar-reader.ts';
import { PackageError } from './package-error.ts';
import { nodeHashName, parseManifest, parseToscaMeta, TOSCA_META_PATH, type DeclaredDigest } from './tosca-meta.ts';
import { TypeRegistry, type TypeDef } from './tosca-types.ts';
import type {
  BaseHotModel,
  ExtCpModel,
  FlavourModel,
  InstantiationLevelModel,
  KubernetesResourceModel,
  LcmHookModel,
  ManifestDigestModel,
  PlacementRuleModel,
  ScalingAspectModel,
  SwImageModel,
  VduCpModel,
  VduModel,
  VirtualComputeModel,
  VirtualLinkModel,
  VirtualLinkProtocolModel,
  VirtualStorageModel,
  VnfPackageModel,
} from './vnfd-model.ts';
import { type Plain, type SourcePos, YamlSources } from './yaml-source.ts';

export { scaleLevelsAtInstantiationLevel, validateScale, vnfcCountAtLevel } from './vnfd-scaling.ts';

type Obj = Record<string, Plain>;

/** ETSI SOL001 type files whose types are built in when the package does not ship them. */
const ETSI_TYPE_FILE = /^etsi_nfv_sol001_[a-z0-9_]*types\.ya?ml$/i;
const URI = /^[a-z][a-z0-9+.-]*:\/\//i;
const YAML_FILE = /\.ya?ml$/i;

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

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function own(o: unknown, k: string): Plain | undefined {
  if (Array.isArray(o)) {
    const i = Number(k);
    return Number.isInteger(i) && i >= 0 && i < o.length ? (o[i] as Plain) : undefined;
  }
  return isObj(o) && Object.hasOwn(o, k) ? o[k] : undefined;
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  return JSON.stringify(v);
}

function sorted(a: Iterable<string>): string[] {
  return [...a].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/** get_input scope: the inputs declared by a topology template and the values given to them. */
interface Scope {
  readonly file: string;
  readonly inputs: Obj;
  readonly values: Readonly<Record<string, Plain | undefined>>;
}

/** A value together with the object/key it was read from (for positions and number spelling). */
interface Slot {
  readonly holder: unknown;
  readonly key: string;
}

interface NodeT {
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

interface ArtifactDecl {
  readonly name: string;
  readonly file: string;
  readonly type: string;
  readonly properties?: Readonly<Record<string, unknown>>;
  readonly declaredIn: string;
  readonly slot: Slot;
}

interface HookDecl {
  readonly hook: string;
  readonly implementation: string;
  readonly declaredIn: string;
  readonly slot: Slot;
}

/** The state of one package parse. */
class Parser {
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

// ---------- flavours ----------

interface TopInfo {
  /** VNF node of the entry file (when it has one). */
  readonly node: NodeT | undefined;
  readonly chain: TypeDef[];
  readonly values: Record<string, Plain | undefined>;
}

function vnfNodesIn(p: Parser, file: string): NodeT[] {
  return p.nodeTemplates(file).filter((n) => n.kind === 'vnf');
}

/** The single VNF node of a file, or undefined; several are an error. */
function singleVnfNode(p: Parser, file: string): NodeT | undefined {
  const vnfs = vnfNodesIn(p, file);
  if (vnfs.length > 1) {
    const second = vnfs[1];
    p.fail(`several VNF nodes (${vnfs.map((n) => n.name).join(', ')}) in one topology template; a VNFD describes one VNF`, own(own(p.topology(file), 'node_templates'), second?.name ?? ''), undefined, file);
  }
  return vnfs[0];
}

/** Effective property values of the VNF node (plain, get_input resolved against the file's inputs). */
function vnfValues(p: Parser, node: { def?: Obj | undefined; chain: TypeDef[] }, scope: Scope): Record<string, Plain | undefined> {
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

interface FlavourSource {
  readonly flavourId: string;
  readonly file: string;
  readonly nodeType: string | undefined;
}

function findFlavourFiles(p: Parser): FlavourSource[] {
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

function policiesOf(p: Parser, file: string): { name: string; def: Obj; holder: unknown }[] {
  const tt = p.topology(file);
  const pol = own(tt, 'policies');
  if (pol === undefined || pol === null) return [];
  const out: { name: string; def: Obj; holder: unknown }[] = [];
  const add = (name: string, def: Plain, holder: unknown): void => {
    if (!isObj(def)) p.fail(`policy '${name}' must be a map with a type`, holder, name, file);
    out.push({ name, def, holder });
  };
  if (Array.isArray(pol)) {
    pol.forEach((item, i) => {
      if (item === null) return;
      if (!isObj(item)) p.fail(`policies[${i}] must be a map like '- name: {type: ...}'`, pol, i, file);
      for (const [k, v] of Object.entries(item)) add(k, v, item);
    });
  } else if (isObj(pol)) {
    for (const [k, v] of Object.entries(pol)) add(k, v, pol);
  } else {
    p.fail(`policies must be a list, got ${describe(pol)}`, tt, 'policies', file);
  }
  return out;
}

function groupsOf(p: Parser, file: string, scope: Scope): Map<string, string[]> {
  const tt = p.topology(file);
  const g = own(tt, 'groups');
  const out = new Map<string, string[]>();
  if (g === undefined || g === null) return out;
  const add = (name: string, def: Plain, holder: unknown): void => {
    if (!isObj(def)) p.fail(`group '${name}' must be a map with a type and members`, holder, name, file);
    out.set(name, p.strList({ holder: def, key: 'members' }, scope, `group ${name}: members`));
  };
  if (Array.isArray(g)) {
    g.forEach((item, i) => {
      if (item === null) return;
      if (!isObj(item)) p.fail(`groups[${i}] must be a map`, g, i, file);
      for (const [k, v] of Object.entries(item)) add(k, v, item);
    });
  } else if (isObj(g)) {
    for (const [k, v] of Object.entries(g)) add(k, v, g);
  } else {
    p.fail(`groups must be a map, got ${describe(g)}`, tt, 'groups', file);
  }
  return out;
}

function swImageOf(p: Parser, node: NodeT, scope: Scope): SwImageModel | undefined {
  const slot = p.propSlot(node, 'sw_image_data');
  const d = p.map(slot, scope, `${node.name}: properties.sw_image_data`);
  if (!d) return undefined;
  const l = `${node.name}: properties.sw_image_data`;
  const img: { -readonly [K in keyof SwImageModel]: SwImageModel[K] } = { name: p.str({ holder: d, key: 'name' }, scope, `${l}.name`, true) };
  const version = p.str({ holder: d, key: 'version' }, scope, `${l}.version`);
  if (version !== undefined) img.version = version;
  const provider = p.str({ holder: d, key: 'provider' }, scope, `${l}.provider`);
  if (provider !== undefined) img.provider = provider;
  const meta: Record<string, unknown> = {};
  const os = p.str({ holder: d, key: 'operating_system' }, scope, `${l}.operating_system`);
  if (os !== undefined) meta.operatingSystem = os;
  const envs = own(d, 'supported_virtualisation_environments');
  if (Array.isArray(envs) && envs.every((e) => typeof e === 'string')) meta.supportedVirtualisationEnvironments = [...envs];
  if (Object.keys(meta).length > 0) img.userMetadata = meta;
  const ck = p.map({ holder: d, key: 'checksum' }, scope, `${l}.checksum`);
  if (ck) {
    img.checksum = {
      algorithm: p.str({ holder: ck, key: 'algorithm' }, scope, `${l}.checksum.algorithm`, true),
      hash: p.str({ holder: ck, key: 'hash' }, scope, `${l}.checksum.hash`, true),
    };
  }
  const fields: [keyof SwImageModel, string][] = [
    ['containerFormat', 'container_format'],
    ['diskFormat', 'disk_format'],
    ['minDisk', 'min_disk'],
    ['minRam', 'min_ram'],
    ['size', 'size'],
  ];
  for (const [k, yk] of fields) {
    const v = p.str({ holder: d, key: yk }, scope, `${l}.${yk}`);
    if (v !== undefined) (img as Record<string, unknown>)[k] = v;
  }
  const arts = new Map<string, ArtifactDecl>();
  p.artifactsOf(node.def, node.file, node.name, arts);
  const art = arts.get('sw_image') ?? [...arts.values()].find((a) => a.type === 'tosca.artifacts.nfv.SwImage');
  if (art) img.file = p.packagePath(art.file, art.declaredIn, art.slot.holder, art.slot.key, `${node.name}: image artifact file`);
  return img;
}

function virtualComputeOf(p: Parser, node: NodeT, scope: Scope): VirtualComputeModel | undefined {
  const caps = own(node.def, 'capabilities');
  if (caps === undefined || caps === null) return undefined;
  if (!isObj(caps)) p.fail(`${node.name}: capabilities must be a map`, node.def, 'capabilities', node.file);
  const vc = p.map({ holder: caps, key: 'virtual_compute' }, scope, `${node.name}: capabilities.virtual_compute`);
  if (!vc) return undefined;
  const l = `${node.name}: capabilities.virtual_compute.properties`;
  const props = p.map({ holder: vc, key: 'properties' }, scope, l) ?? {};
  const out: { -readonly [K in keyof VirtualComputeModel]: VirtualComputeModel[K] } = { localStorageSizes: [], requestedAdditionalCapabilityNames: [] };
  const mem = p.map({ holder: props, key: 'virtual_memory' }, scope, `${l}.virtual_memory`);
  const memSize = mem ? p.str({ holder: mem, key: 'virtual_mem_size' }, scope, `${l}.virtual_memory.virtual_mem_size`) : undefined;
  if (memSize !== undefined) out.virtualMemSize = memSize;
  const cpu = p.map({ holder: props, key: 'virtual_cpu' }, scope, `${l}.virtual_cpu`);
  const nCpu = cpu ? p.int({ holder: cpu, key: 'num_virtual_cpu' }, scope, `${l}.virtual_cpu.num_virtual_cpu`, { min: 1 }) : undefined;
  if (nCpu !== undefined) out.numVirtualCpu = nCpu;
  const storages = p.list({ holder: props, key: 'virtual_local_storage' }, scope, `${l}.virtual_local_storage`) ?? [];
  const sizes: string[] = [];
  storages.forEach((s, i) => {
    if (!isObj(s)) p.fail(`${l}.virtual_local_storage[${i}] must be a map`, storages, i, node.file);
    const size = p.str({ holder: s, key: 'size_of_storage' }, scope, `${l}.virtual_local_storage[${i}].size_of_storage`);
    if (size !== undefined) sizes.push(size);
  });
  out.localStorageSizes = sizes;
  const rac = p.map({ holder: props, key: 'requested_additional_capabilities' }, scope, `${l}.requested_additional_capabilities`);
  const names: string[] = [];
  if (rac) {
    for (const [k, v] of Object.entries(rac)) {
      if (!isObj(v)) continue;
      const n = p.str({ holder: v, key: 'requested_additional_capability_name' }, scope, `${l}.requested_additional_capabilities.${k}.requested_additional_capability_name`);
      if (n !== undefined) names.push(n);
    }
  }
  out.requestedAdditionalCapabilityNames = names;
  return out;
}

/** The VDUs of a flavour as they are built: the model, mutable, plus the ids of their CPs. */
type VduDraft = { -readonly [K in keyof VduModel]: VduModel[K] } & { cpIds: string[] };
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

/**
 * The VNF node of a flavour's own file (checked against the entry's VNF node and the flavour's
 * substitution mapping), the node that describes the flavour, and the flavour's description.
 */
function flavourVnfNode(p: Parser, src: FlavourSource, top: TopInfo, scope: Scope): { dfVnf: NodeT | undefined; vnfForFlavour: NodeT | undefined; description: string } {
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
function lcmHooksOf(p: Parser, src: FlavourSource, top: TopInfo, vnf: { dfVnf: NodeT | undefined; vnfForFlavour: NodeT | undefined }): Record<string, LcmHookModel> {
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

/** The virtual storages and the internal virtual links of a flavour. */
function storagesAndLinksOf(p: Parser, nodes: readonly NodeT[], scope: Scope): { virtualStorages: Record<string, VirtualStorageModel>; virtualLinks: Record<string, VirtualLinkModel> } {
  const file = scope.file;
  const virtualStorages: Record<string, VirtualStorageModel> = {};
  const virtualLinks: Record<string, VirtualLinkModel> = {};
  for (const n of nodes) {
    if (n.kind === 'BlockStorage' || n.kind === 'ObjectStorage' || n.kind === 'FileStorage') {
      const dataProp = n.kind === 'BlockStorage' ? 'virtual_block_storage_data' : n.kind === 'ObjectStorage' ? 'virtual_object_storage_data' : 'virtual_file_storage_data';
      const sizeKey = n.kind === 'ObjectStorage' ? 'max_size_of_storage' : 'size_of_storage';
      const data = p.map(p.propSlot(n, dataProp), scope, `${n.name}: properties.${dataProp}`);
      const size = data ? p.str({ holder: data, key: sizeKey }, scope, `${n.name}: properties.${dataProp}.${sizeKey}`) : undefined;
      const st: { -readonly [K in keyof VirtualStorageModel]: VirtualStorageModel[K] } = { id: n.name, type: n.kind };
      if (size !== undefined) st.sizeOfStorage = size;
      const img = swImageOf(p, n, scope);
      if (img) st.swImage = img;
      virtualStorages[n.name] = st;
    } else if (n.kind === 'vl') {
      const l = `${n.name}: properties`;
      const conn = p.map(p.propSlot(n, 'connectivity_type'), scope, `${l}.connectivity_type`);
      const layerProtocols = conn ? p.strList({ holder: conn, key: 'layer_protocols' }, scope, `${l}.connectivity_type.layer_protocols`) : [];
      const profile = p.map(p.propSlot(n, 'vl_profile'), scope, `${l}.vl_profile`);
      const pdl = profile ? (p.list({ holder: profile, key: 'virtual_link_protocol_data' }, scope, `${l}.vl_profile.virtual_link_protocol_data`) ?? []) : [];
      const protocolData: VirtualLinkProtocolModel[] = pdl.map((d, i) => {
        const dl = `${l}.vl_profile.virtual_link_protocol_data[${i}]`;
        if (!isObj(d)) p.fail(`${dl} must be a map`, pdl, i, file);
        const out: { -readonly [K in keyof VirtualLinkProtocolModel]: VirtualLinkProtocolModel[K] } = {};
        const alp = p.str({ holder: d, key: 'associated_layer_protocol' }, scope, `${dl}.associated_layer_protocol`);
        if (alp !== undefined) out.associatedLayerProtocol = alp;
        const l3 = p.map({ holder: d, key: 'l3_protocol_data' }, scope, `${dl}.l3_protocol_data`);
        if (l3) {
          const ipv = p.str({ holder: l3, key: 'ip_version' }, scope, `${dl}.l3_protocol_data.ip_version`);
          if (ipv !== undefined) out.ipVersion = ipv;
          const cidr = p.str({ holder: l3, key: 'cidr' }, scope, `${dl}.l3_protocol_data.cidr`);
          if (cidr !== undefined) out.cidr = cidr;
          const gw = p.str({ holder: l3, key: 'gateway_ip' }, scope, `${dl}.l3_protocol_data.gateway_ip`);
          if (gw !== undefined) out.gatewayIp = gw;
          const dhcp = p.bool({ holder: l3, key: 'dhcp_enabled' }, scope, `${dl}.l3_protocol_data.dhcp_enabled`);
          if (dhcp !== undefined) out.dhcpEnabled = dhcp;
        }
        return out;
      });
      virtualLinks[n.name] = {
        virtualLinkId: n.name,
        description: p.str(p.propSlot(n, 'description'), scope, `${l}.description`) ?? '',
        layerProtocols,
        protocolData,
      };
    }
  }

  return { virtualStorages, virtualLinks };
}

/** The VDUs of a flavour: profile, storages, software image and compute. */
function vdusOf(p: Parser, nodes: readonly NodeT[], byName: ReadonlyMap<string, NodeT>, scope: Scope): Record<string, VduDraft> {
  const file = scope.file;
  const vdus: Record<string, VduDraft> = {};
  for (const n of nodes) {
    if (n.kind !== 'vdu') continue;
    const l = `${n.name}: properties`;
    const profile = p.map(p.propSlot(n, 'vdu_profile'), scope, `${l}.vdu_profile`, true);
    const minInstances = p.int({ holder: profile, key: 'min_number_of_instances' }, scope, `${l}.vdu_profile.min_number_of_instances`, { required: true }) as number;
    const maxInstances = p.int({ holder: profile, key: 'max_number_of_instances' }, scope, `${l}.vdu_profile.max_number_of_instances`, { required: true }) as number;
    if (maxInstances < minInstances) {
      p.fail(`${l}.vdu_profile: max_number_of_instances (${maxInstances}) is less than min_number_of_instances (${minInstances})`, profile, 'max_number_of_instances', file);
    }
    const virtualStorageIds: string[] = [];
    for (const r of p.requirements(n)) {
      if (r.name !== 'virtual_storage') continue;
      const t = byName.get(r.target);
      if (!t || (t.kind !== 'BlockStorage' && t.kind !== 'ObjectStorage' && t.kind !== 'FileStorage')) {
        p.fail(`${n.name}: requirement virtual_storage names '${r.target}', which is not a virtual storage node of this flavour`, r.slot.holder, r.slot.key, file);
      }
      if (!virtualStorageIds.includes(r.target)) virtualStorageIds.push(r.target);
    }
    const vdu: (typeof vdus)[string] = {
      vduId: n.name,
      name: p.str(p.propSlot(n, 'name'), scope, `${l}.name`, true),
      description: p.str(p.propSlot(n, 'description'), scope, `${l}.description`) ?? '',
      minInstances,
      maxInstances,
      initialDelta: 1,
      virtualStorageIds,
      cpIds: [],
      nodeType: n.type,
    };
    const img = swImageOf(p, n, scope);
    if (img) vdu.swImage = img;
    const vc = virtualComputeOf(p, n, scope);
    if (vc) vdu.flavour = vc;
    vdus[n.name] = vdu;
  }

  return vdus;
}

/** The VDU CPs of a flavour, each bound to its VDU (whose `cpIds` it joins) and its virtual link. */
function vduCpsOf(p: Parser, nodes: readonly NodeT[], byName: ReadonlyMap<string, NodeT>, vdus: Record<string, VduDraft>, scope: Scope): Record<string, VduCpModel> {
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

/** Reads the policies of a flavour (scaling, instantiation levels, placement); sets the VDUs' initial deltas. */
function readPolicies(p: Parser, scope: Scope, vdus: Record<string, VduDraft>): PolicyDrafts {
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
function checkScaling(p: Parser, file: string, d: PolicyDrafts, vdus: Record<string, VduDraft>): void {
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

function buildFlavour(p: Parser, src: FlavourSource, top: TopInfo): FlavourModel {
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

// ---------- package-level files ----------

/**
 * The external CPs of a flavour: the CPs `substitution_mappings.requirements` maps a VNF
 * requirement onto (`<requirement>: [<node>, <its requirement>]`, a VduCp or a VnfExtCp), every
 * `tosca.nodes.nfv.VnfExtCp` node (with the internal virtual link it exposes), and every VduCp
 * bound to no internal virtual link. A mapping that names no CP is ignored (it may map a
 * requirement of another kind).
 */
function externalCpsOf(p: Parser, file: string, nodes: readonly NodeT[], byName: ReadonlyMap<string, NodeT>, cps: Readonly<Record<string, VduCpModel>>): Record<string, ExtCpModel> {
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

function baseHots(p: Parser, flavourIds: readonly string[]): Record<string, BaseHotModel> {
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

function kubernetesResources(p: Parser, files: readonly string[]): KubernetesResourceModel[] {
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

/**
 * Parses the files of a VNF package into the VNFM's package model. Throws a {@link PackageError}
 * (message `file:line:col: problem`) for anything that would make the package unusable.
 */
export function parseVnfPackage(files: CsarFiles, opts: { maxVnfdBytes?: number } = {}): VnfPackageModel {
  if (!(files instanceof Map) || files.size === 0) throw new PackageError('the package contains no files');
  const p: Parser = new Parser(files, opts.maxVnfdBytes ?? DEFAULT_CSAR_LIMITS.maxVnfdBytes);
  const { entry, manifest } = p.entryDefinitions();
  if (manifest) p.metaDigests.push(...parseManifest(p.readText(manifest), manifest));
  const manifestDigests = p.verifyDigests();

  p.loadDefinitions(entry);
  // Flavour files in the entry's folder that nothing imports (Tacker reads every file there).
  const entryDir = posix.dirname(entry);
  for (const f of sorted(files.keys())) {
    if (p.docs.has(f) || !YAML_FILE.test(f) || posix.dirname(f) !== entryDir) continue;
    if (ETSI_TYPE_FILE.test(posix.basename(f))) continue;
    const doc = p.src.parse(f, p.readText(f));
    if (isObj(doc) && isObj(own(doc, 'topology_template')) && own(own(doc, 'topology_template'), 'substitution_mappings') !== undefined) p.loadDefinitions(f);
  }

  const entryDoc = p.docs.get(entry) as Obj;
  const flavourSources = findFlavourFiles(p);
  const entryIsFlavour = flavourSources.some((f) => f.file === entry);
  const topNode = singleVnfNode(p, entry);
  const entryScope: Scope = { file: entry, inputs: p.inputsOf(entry), values: {} };

  let topChain: TypeDef[];
  if (topNode) {
    topChain = topNode.chain;
  } else if (flavourSources.length > 0) {
    const first = flavourSources.find((f) => f.file === entry) ?? flavourSources[0];
    const nt = first?.nodeType ?? '';
    topChain = p.types.chain('node', nt, undefined);
  } else {
    const hasTopology = own(entryDoc, 'topology_template') !== undefined && own(entryDoc, 'topology_template') !== null;
    throw new PackageError(
      hasTopology
        ? 'no VNF node: topology_template.node_templates has no node whose type is derived from tosca.nodes.nfv.VNF, and no file has substitution_mappings for one'
        : 'no VNF node: the file has no topology_template, and no file has substitution_mappings for a VNF node type',
      p.at(entryDoc, hasTopology ? 'topology_template' : undefined, entry),
    );
  }
  const topValues = topNode ? vnfValues(p, topNode, entryScope) : vnfValues(p, { chain: topChain }, entryScope);
  const top: TopInfo = { node: topNode, chain: topChain, values: topValues };

  if (flavourSources.length === 0 && topNode) {
    // single-file VNFD: the entry describes the only flavour
    const fid = topValues.flavour_id;
    if (typeof fid !== 'string' || fid === '') {
      p.fail(
        `no deployment flavour found: no file has topology_template.substitution_mappings for ${topNode.type}, and VNF node '${topNode.name}' has no flavour_id value`,
        own(own(p.topology(entry), 'node_templates'), topNode.name),
        undefined,
        entry,
      );
    }
    flavourSources.push({ flavourId: fid, file: entry, nodeType: topNode.type });
  } else if (!entryIsFlavour && topNode && p.nodeTemplates(entry).some((n) => n.kind === 'vdu')) {
    p.warnings.push(`${entry}: VDUs in the entry definitions are ignored because the flavours are described in other files`);
  }

  const flavours: Record<string, FlavourModel> = {};
  for (const fs of flavourSources) flavours[fs.flavourId] = buildFlavour(p, fs, top);

  const identity = (prop: string, label: string): string => {
    const v = topValues[prop];
    if (v === undefined || v === null || v === '') {
      const where = topNode ? p.at(own(own(p.topology(entry), 'node_templates'), topNode.name), undefined, entry) : { file: entry };
      throw new PackageError(`the VNF node has no ${prop} (${label}); set it in the node's properties or as a default in its type ${topChain[0]?.name ?? ''}`, where);
    }
    if (typeof v === 'object') {
      throw new PackageError(`the VNF node's ${prop} must be a string, got ${describe(v)}`, topNode ? p.at(own(topNode.def, 'properties'), prop, entry) : { file: entry });
    }
    return String(v);
  };
  const vnfmInfoRaw = topValues.vnfm_info;
  const vnfmInfo = Array.isArray(vnfmInfoRaw) ? vnfmInfoRaw.filter((x): x is string => typeof x === 'string') : typeof vnfmInfoRaw === 'string' ? [vnfmInfoRaw] : [];

  const fileList = sorted(files.keys());
  const kubernetesFiles = fileList.filter((f) => f.startsWith('Files/kubernetes/') && YAML_FILE.test(f));
  const description = own(entryDoc, 'description');
  const model: { -readonly [K in keyof VnfPackageModel]: VnfPackageModel[K] } = {
    vnfdId: identity('descriptor_id', 'vnfdId'),
    vnfProvider: identity('provider', 'vnfProvider'),
    vnfProductName: identity('product_name', 'vnfProductName'),
    vnfSoftwareVersion: identity('software_version', 'vnfSoftwareVersion'),
    vnfdVersion: identity('descriptor_version', 'vnfdVersion'),
    vnfmInfo,
    description: typeof description === 'string' ? description : '',
    vnfNodeType: topNode?.type ?? topChain[0]?.name ?? '',
    flavours,
    entryDefinitions: entry,
    definitionFiles: [...p.docs.keys()],
    files: fileList,
    baseHotDirs: baseHots(p, Object.keys(flavours)),
    kubernetesFiles,
    kubernetesResources: kubernetesResources(p, kubernetesFiles),
    warnings: p.warnings,
  };
  if (manifestDigests) model.manifestDigests = manifestDigests;
  return model;
}
