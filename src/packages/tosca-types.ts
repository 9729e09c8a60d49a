/**
 * TOSCA type definitions (node, policy and group types) and their `derived_from` chains.
 *
 * Packages may ship the ETSI SOL001 type files, import them by URL, or omit them. To parse all
 * three the same way, the registry starts from a small built-in table of the standard types the
 * VNFM relies on (names and derivation only; none of the ETSI text), and the package's own type
 * definitions are layered on top. The parser then classifies a node template by walking its
 * type's chain down to one of the well-known ETSI bases.
 */
import { PackageError } from './package-error.ts';
import type { Plain, SourcePos, YamlSources } from './yaml-source.ts';

/** The type families the parser needs. */
export type TypeKind = 'node' | 'policy' | 'group';

/** One type definition, from the package or built in. */
export interface TypeDef {
  readonly name: string;
  readonly kind: TypeKind;
  readonly derivedFrom: string | undefined;
  /** The definition map as written (`{}` for built-ins). */
  readonly def: Readonly<Record<string, Plain>>;
  /** Package-relative file that defined it; undefined for built-ins. */
  readonly file: string | undefined;
}

const SECTION: Record<TypeKind, string> = { node: 'node_types', policy: 'policy_types', group: 'group_types' };

/** Node types the VNFM knows without the ETSI files: name -> parent. */
const BUILTIN_NODE_TYPES: Record<string, string | null> = {
  'tosca.nodes.Root': null,
  'tosca.nodes.Compute': 'tosca.nodes.Root',
  'tosca.nodes.SoftwareComponent': 'tosca.nodes.Root',
  'tosca.nodes.WebServer': 'tosca.nodes.SoftwareComponent',
  'tosca.nodes.WebApplication': 'tosca.nodes.Root',
  'tosca.nodes.DBMS': 'tosca.nodes.SoftwareComponent',
  'tosca.nodes.Database': 'tosca.nodes.Root',
  'tosca.nodes.Storage.ObjectStorage': 'tosca.nodes.Root',
  'tosca.nodes.Storage.BlockStorage': 'tosca.nodes.Root',
  'tosca.nodes.Container.Runtime': 'tosca.nodes.SoftwareComponent',
  'tosca.nodes.Container.Application': 'tosca.nodes.Root',
  'tosca.nodes.LoadBalancer': 'tosca.nodes.Root',
  'tosca.nodes.network.Network': 'tosca.nodes.Root',
  'tosca.nodes.network.Port': 'tosca.nodes.Root',
  'tosca.nodes.nfv.VNF': 'tosca.nodes.Root',
  'tosca.nodes.nfv.Cp': 'tosca.nodes.Root',
  'tosca.nodes.nfv.VduCp': 'tosca.nodes.nfv.Cp',
  'tosca.nodes.nfv.VnfExtCp': 'tosca.nodes.nfv.Cp',
  'tosca.nodes.nfv.Vdu.Compute': 'tosca.nodes.Root',
  'tosca.nodes.nfv.Vdu.VirtualBlockStorage': 'tosca.nodes.Root',
  'tosca.nodes.nfv.Vdu.VirtualObjectStorage': 'tosca.nodes.Root',
  'tosca.nodes.nfv.Vdu.VirtualFileStorage': 'tosca.nodes.Root',
  'tosca.nodes.nfv.VnfVirtualLink': 'tosca.nodes.Root',
};

/** Policy types the VNFM knows without the ETSI files. */
const BUILTIN_POLICY_TYPES: Record<string, string | null> = {
  'tosca.policies.Root': null,
  'tosca.policies.Placement': 'tosca.policies.Root',
  'tosca.policies.Scaling': 'tosca.policies.Root',
  'tosca.policies.Update': 'tosca.policies.Root',
  'tosca.policies.Performance': 'tosca.policies.Root',
  'tosca.policies.nfv.InstantiationLevels': 'tosca.policies.Root',
  'tosca.policies.nfv.VduInstantiationLevels': 'tosca.policies.Root',
  'tosca.policies.nfv.VirtualLinkInstantiationLevels': 'tosca.policies.Root',
  'tosca.policies.nfv.ScalingAspects': 'tosca.policies.Root',
  'tosca.policies.nfv.VduScalingAspectDeltas': 'tosca.policies.Root',
  'tosca.policies.nfv.VirtualLinkBitrateScalingAspectDeltas': 'tosca.policies.Root',
  'tosca.policies.nfv.VduInitialDelta': 'tosca.policies.Root',
  'tosca.policies.nfv.VirtualLinkBitrateInitialDelta': 'tosca.policies.Root',
  'tosca.policies.nfv.AffinityRule': 'tosca.policies.Placement',
  'tosca.policies.nfv.AntiAffinityRule': 'tosca.policies.Placement',
  'tosca.policies.nfv.SecurityGroupRule': 'tosca.policies.Root',
  'tosca.policies.nfv.SupportedVnfInterface': 'tosca.policies.Root',
};

/** Group types the VNFM knows without the ETSI files. */
const BUILTIN_GROUP_TYPES: Record<string, string | null> = {
  'tosca.groups.Root': null,
  'tosca.groups.nfv.PlacementGroup': 'tosca.groups.Root',
};

const BUILTINS: Record<TypeKind, Record<string, string | null>> = {
  node: BUILTIN_NODE_TYPES,
  policy: BUILTIN_POLICY_TYPES,
  group: BUILTIN_GROUP_TYPES,
};

const KIND_WORD: Record<TypeKind, string> = { node: 'node', policy: 'policy', group: 'group' };

function isRecord(v: unknown): v is Record<string, Plain> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function locOf(p: SourcePos | undefined): { file?: string; line?: number; column?: number } {
  return p ? { file: p.file, line: p.line, column: p.column } : {};
}

/** All type definitions visible in one package (TOSCA imports make types global to the package). */
export class TypeRegistry {
  private readonly types: Record<TypeKind, Map<string, TypeDef>> = { node: new Map(), policy: new Map(), group: new Map() };

  constructor(private readonly src: YamlSources) {
    for (const kind of Object.keys(BUILTINS) as TypeKind[]) {
      for (const [name, parent] of Object.entries(BUILTINS[kind])) {
        this.types[kind].set(name, { name, kind, derivedFrom: parent ?? undefined, def: {}, file: undefined });
      }
    }
  }

  /**
   * Registers the node/policy/group types of one file. A package definition replaces a built-in
   * one; two different package definitions of the same type are an error.
   */
  addFile(file: string, doc: Readonly<Record<string, Plain>>): void {
    for (const kind of Object.keys(SECTION) as TypeKind[]) {
      const section = Object.hasOwn(doc, SECTION[kind]) ? doc[SECTION[kind]] : undefined;
      if (section === undefined || section === null) continue;
      if (!isRecord(section)) {
        throw new PackageError(`${SECTION[kind]} must be a map of type name to definition`, locOf(this.src.posOf(doc, SECTION[kind])));
      }
      for (const [name, def] of Object.entries(section)) {
        const where = locOf(this.src.posOf(section, name));
        const body = def === null ? {} : def;
        if (!isRecord(body)) throw new PackageError(`${KIND_WORD[kind]} type '${name}' must be a map`, where);
        const parent = Object.hasOwn(body, 'derived_from') ? body.derived_from : undefined;
        if (parent !== undefined && parent !== null && typeof parent !== 'string') {
          throw new PackageError(`${KIND_WORD[kind]} type '${name}': derived_from must be a type name`, locOf(this.src.posOf(body, 'derived_from')));
        }
        const existing = this.types[kind].get(name);
        if (existing?.file !== undefined && JSON.stringify(existing.def) !== JSON.stringify(body)) {
          throw new PackageError(`${KIND_WORD[kind]} type '${name}' is defined twice with different content (also in ${existing.file})`, where);
        }
        if (existing?.file !== undefined) continue;
        this.types[kind].set(name, { name, kind, derivedFrom: typeof parent === 'string' ? parent : undefined, def: body, file });
      }
    }
  }

  /** The definition of a type, or undefined. */
  get(kind: TypeKind, name: string): TypeDef | undefined {
    return this.types[kind].get(name);
  }

  /**
   * The derivation chain of `name`, most derived first. Throws a {@link PackageError} located at
   * `usedAt` when the type is unknown, and at the faulty definition for a broken or cyclic chain.
   */
  chain(kind: TypeKind, name: string, usedAt: SourcePos | undefined): TypeDef[] {
    const first = this.types[kind].get(name);
    if (!first) {
      throw new PackageError(
        `unknown ${KIND_WORD[kind]} type '${name}': it is neither defined in the package's type files nor a standard TOSCA/ETSI SOL001 type`,
        locOf(usedAt),
      );
    }
    const out: TypeDef[] = [first];
    const seen = new Set<string>([name]);
    let cur = first;
    while (cur.derivedFrom !== undefined) {
      const parentName = cur.derivedFrom;
      const parent = this.types[kind].get(parentName);
      const at = cur.file !== undefined ? this.src.posOf(cur.def, 'derived_from') : undefined;
      if (!parent) {
        throw new PackageError(`${KIND_WORD[kind]} type '${cur.name}' is derived from unknown type '${parentName}'`, locOf(at));
      }
      if (seen.has(parentName)) {
        throw new PackageError(`${KIND_WORD[kind]} type '${cur.name}' has a derived_from cycle through '${parentName}'`, locOf(at));
      }
      seen.add(parentName);
      out.push(parent);
      cur = parent;
    }
    return out;
  }

  /** True when `name` is `base` or derived from it (unknown names are not). */
  isA(kind: TypeKind, name: string, base: string): boolean {
    let cur = this.types[kind].get(name);
    const seen = new Set<string>();
    while (cur && !seen.has(cur.name)) {
      if (cur.name === base) return true;
      seen.add(cur.name);
      cur = cur.derivedFrom === undefined ? undefined : this.types[kind].get(cur.derivedFrom);
    }
    return false;
  }
}
