/**
 * The project's validator for ETSI NFV-SOL002/SOL003 bodies, used by the tests as a conformance
 * oracle that is independent of our own TypeBox schemas.
 *
 * It reads the ETSI definitions vendored under `test/fixtures/etsi/` (see the NOTICE there):
 *
 * - spec `3.7.1`: the ETSI OpenAPI files of SOL002/SOL003 v3.7.1 (YAML, OpenAPI 3.0). Every
 *   file is registered with Ajv under its `file:` URL, so the relative `$ref`s between files
 *   (`../../General_Definitions/SOL003_def.yaml#/definitions/Link`) resolve exactly as written.
 *   Data types are looked up by name; operations (`POST /vnf_instances/{id}/heal 202`) too.
 * - spec `2.6.1`: the JSON schemas of the ETSI API conformance suite v2.6.1 (self-contained,
 *   one file per type, `<Name>.schema.json`). Data types only.
 *
 * Known defects of the published files are repaired in memory (the fixture files stay byte-for-byte
 * ETSI's); `asPublished: true` turns off every repair that is not needed to compile. See
 * {@link ETSI_REPAIRS}.
 *
 * Formats: only `date-time` is checked (RFC 3339, time zone required); `IP`, `MAC`, `URI`, `url`
 * and the other names the files use are not JSON-Schema formats and are accepted as-is.
 */
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { load as loadYaml } from 'js-yaml';

/** `test/fixtures/etsi/`: the vendored ETSI definitions and our sample bodies. */
export const ETSI_FIXTURES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'etsi');

export type EtsiSpec = '3.7.1' | '2.6.1';
export type EtsiSol = '002' | '003';

export interface EtsiValidatorOptions {
  /** `3.7.1` (ETSI OpenAPI, our v2 API; default) or `2.6.1` (conformance-suite schemas, our v1 API). */
  readonly spec?: EtsiSpec;
  /** SOL003 (VNFM <-> NFVO, default) or SOL002 (VNFM <-> EM/VNF). */
  readonly sol?: EtsiSol;
  /**
   * Interface used for unqualified names and for operations (default `VNFLifecycleManagement`).
   * For 2.6.1 this is the suite folder without its `-API` suffix.
   */
  readonly interface?: string;
  /** Do not repair the upstream defects that only make the schemas wrong (the one that stops compilation is always repaired). */
  readonly asPublished?: boolean;
  /** Reject attributes the definitions do not declare (ETSI never sets `additionalProperties: false`). */
  readonly noExtra?: boolean;
  /** `date-time` (default): check RFC 3339 date-times only; `off`: check no format at all. */
  readonly formats?: 'date-time' | 'off';
  /** Folder holding `3.7.1/` and `2.6.1/` (default {@link ETSI_FIXTURES_DIR}). */
  readonly dir?: string;
}

/** One violation. `path` is a JSON pointer into the validated body (`''` = the body itself). */
export interface EtsiError {
  readonly path: string;
  readonly message: string;
  readonly params: Record<string, unknown>;
}

export interface EtsiValidationResult {
  readonly valid: boolean;
  /** What the body was checked against: `<file relative to the spec folder>#<JSON pointer>`. */
  readonly target: string;
  readonly errors: readonly EtsiError[];
}

/** Bad arguments: unknown schema, ambiguous name, unusable upstream file, unknown operation. */
export class EtsiLookupError extends Error {
  override readonly name = 'EtsiLookupError';
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const DEFAULT_INTERFACE = 'VNFLifecycleManagement';
const GENERAL = 'General_Definitions';
const EMPTY_BODY_TEXT = /the response body shall be empty/i;
const METHODS = new Set(['get', 'put', 'post', 'patch', 'delete', 'head', 'options']);

// ------------------------------------------------------------------ JSON pointers
const escapeToken = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');
const pointer = (tokens: readonly string[]): string => tokens.map((t) => `/${escapeToken(t)}`).join('');
/** A JSON pointer as a URI fragment (Ajv URI-decodes fragments before reading them as pointers). */
const fragment = (tokens: readonly string[]): string => tokens.map((t) => `/${encodeURIComponent(escapeToken(t))}`).join('');

// ------------------------------------------------------------------ parsed files (cached once per process, read-only)
const parsed = new Map<string, unknown>();

function parseFile(abs: string): unknown {
  if (!parsed.has(abs)) {
    const text = readFileSync(abs, 'utf8');
    parsed.set(abs, abs.endsWith('.json') ? JSON.parse(text) : loadYaml(text));
  }
  return parsed.get(abs);
}

// ------------------------------------------------------------------ upstream defects
/** A required-only branch: `{ required: [name] }`. */
function requiredOnly(list: unknown): string[] | null {
  if (!Array.isArray(list)) return null;
  const names: string[] = [];
  for (const b of list) {
    if (!isObj(b) || Object.keys(b).length !== 1 || !Array.isArray(b.required) || b.required.length !== 1) return null;
    names.push(String(b.required[0]));
  }
  return names;
}

const sameNames = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x) => b.includes(x));

interface Repair {
  readonly id: string;
  /** Applied even with `asPublished` (needed to compile at all). */
  readonly always: boolean;
  readonly spec: EtsiSpec;
  readonly description: string;
  /** Repairs `defs` (the `definitions` map of a 3.7.1 file, or a whole 2.6.1 schema) in place; returns the JSON pointers changed. */
  readonly apply?: (defs: Obj) => string[];
}

/** Walks every object below `node`, calling `fn(object, tokens)`. */
function walk(node: unknown, fn: (o: Obj, tokens: string[]) => void, tokens: string[] = []): void {
  if (Array.isArray(node)) {
    node.forEach((v, i) => walk(v, fn, [...tokens, String(i)]));
    return;
  }
  if (!isObj(node)) return;
  fn(node, tokens);
  for (const [k, v] of Object.entries(node)) walk(v, fn, [...tokens, k]);
}

function moveOneOfIntoIpAddresses(def: unknown, rename: Record<string, string>): boolean {
  if (!isObj(def) || !isObj(def.properties)) return false;
  const ip = def.properties.ipAddresses;
  const items = isObj(ip) ? ip.items : undefined;
  const names = requiredOnly(def.oneOf)?.map((n) => rename[n] ?? n);
  if (!names || !isObj(items) || !isObj(items.properties) || 'oneOf' in items) return false;
  const itemProps = items.properties;
  // Only the exact upstream shape: the alternatives are attributes of each entry, not of the outer object.
  if (!names.every((n) => n in itemProps) || names.some((n) => n in (def.properties as Obj))) return false;
  delete def.oneOf;
  items.oneOf = names.map((n) => ({ required: [n] }));
  return true;
}

/**
 * Known defects of the published ETSI files and how they are repaired (in memory only).
 * Exported so tests and the NOTICE can refer to them.
 */
export const ETSI_REPAIRS: readonly Repair[] = [
  {
    id: 'VipCpInfo.metadata',
    always: true,
    spec: '3.7.1',
    description:
      'VipCpInfo.metadata: "items:" is left empty and its "$ref" sits one level too far out, so the schema cannot be compiled; the $ref is moved into "items".',
    apply(defs) {
      const changed: string[] = [];
      walk(defs, (o, tokens) => {
        if (!('items' in o) || (o.items !== null && o.items !== undefined)) return;
        if (typeof o.$ref === 'string') {
          o.items = { $ref: o.$ref };
          delete o.$ref;
        } else o.items = {};
        changed.push(pointer(tokens));
      });
      return changed;
    },
  },
  {
    id: 'VnfLcmOpOcc.oneOf',
    always: false,
    spec: '3.7.1',
    description:
      'VnfLcmOpOcc: oneOf(required changedInfo, required modificationsTriggeredByVnfPkgChange) demands exactly one of them; the GS says "not more than one", so occurrences with neither (every HEAL, INSTANTIATE, ...) were rejected. Replaced by "not both".',
    apply(defs) {
      const d = defs.VnfLcmOpOcc;
      const names = isObj(d) ? requiredOnly(d.oneOf) : null;
      if (!isObj(d) || !names || !sameNames(names, ['changedInfo', 'modificationsTriggeredByVnfPkgChange']) || 'not' in d) return [];
      delete d.oneOf;
      d.not = { required: ['changedInfo', 'modificationsTriggeredByVnfPkgChange'] };
      return ['/VnfLcmOpOcc'];
    },
  },
  {
    id: 'VnfInstanceSubscriptionFilter.anyOf',
    always: false,
    spec: '3.7.1',
    description:
      'VnfInstanceSubscriptionFilter: anyOf(oneOf(vnfdId, vnfProductsFromProviders), oneOf(vnfInstanceIds, vnfInstanceNames)) makes one of these attributes mandatory and names "vnfdId" for "vnfdIds"; in the GS all four are optional and each pair "should not be used both" (a recommendation). The constraint is removed.',
    apply(defs) {
      const d = defs.VnfInstanceSubscriptionFilter;
      if (!isObj(d) || !Array.isArray(d.anyOf) || d.anyOf.length !== 2) return [];
      if (!d.anyOf.every((b) => isObj(b) && Object.keys(b).length === 1 && requiredOnly(b.oneOf)?.length === 2)) return [];
      delete d.anyOf;
      return ['/VnfInstanceSubscriptionFilter'];
    },
  },
  {
    id: 'IpOverEthernetAddress.oneOf',
    always: false,
    spec: '3.7.1',
    description:
      'IpOverEthernetAddressData / IpOverEthernetAddressInfo: the "exactly one of fixedAddresses, numDynamicAddresses, addressRange" (resp. "addresses, addressRange") rule sits on the outer object (and says "ipAddressRange") instead of on each ipAddresses entry. Moved into ipAddresses.items.',
    apply(defs) {
      const changed: string[] = [];
      if (moveOneOfIntoIpAddresses(defs.IpOverEthernetAddressData, { ipAddressRange: 'addressRange' })) changed.push('/IpOverEthernetAddressData');
      if (moveOneOfIntoIpAddresses(defs.IpOverEthernetAddressInfo, {})) changed.push('/IpOverEthernetAddressInfo');
      return changed;
    },
  },
  {
    id: 'list-GET-200',
    always: false,
    spec: '3.7.1',
    description:
      'GET /vnf_lcm_op_occs and GET /subscriptions (and any collection GET whose 200 body is the type of its individual resource) declare a single object as the 200 body instead of an array. Validated as an array (validateOperation only).',
  },
  {
    id: 'empty-body',
    always: false,
    spec: '3.7.1',
    description:
      'Responses whose own description says "The response body shall be empty" but that declare a JSON body (SOL003 PATCH /vnf_instances/{id} 202: VnfInstance; SOL002 DELETE /vnf_instances/{id} 204: a notification type). Validated as empty (validateOperation only).',
  },
  {
    id: 'Checksum',
    always: false,
    spec: '3.7.1',
    description:
      'Checksum (General_Definitions, marked "#no definition found") is a plain string; the GS type Checksum is an object {algorithm, hash}, both mandatory strings. Affects VnfPkgInfo.checksum and the software image / artifact checksums.',
    apply(defs) {
      const d = defs.Checksum;
      if (!isObj(d) || d.type !== 'string' || 'properties' in d) return [];
      defs.Checksum = {
        description: 'Checksum of a file (algorithm and hash), as defined by the GS (the published file declares a string).',
        type: 'object',
        required: ['algorithm', 'hash'],
        properties: {
          algorithm: { description: 'Name of the algorithm used to generate the checksum.', type: 'string' },
          hash: { description: 'The hexadecimal value of the checksum.', type: 'string' },
        },
      };
      return ['/Checksum'];
    },
  },
  {
    id: 'type-colon',
    always: false,
    spec: '2.6.1',
    description: 'SOL002 vnfInstances.schema.json spells its top-level "type" as "type:", so the array type is not checked. Renamed.',
    apply(schema) {
      const changed: string[] = [];
      walk(schema, (o, tokens) => {
        if (!('type:' in o) || 'type' in o) return;
        o.type = o['type:'];
        delete o['type:'];
        changed.push(pointer(tokens));
      });
      return changed;
    },
  },
];

// ------------------------------------------------------------------ noExtra
const BRANCHES = ['allOf', 'anyOf', 'oneOf'] as const;

/** Property names a composition adds to an object, or `null` when it cannot be known without resolving `$ref`s. */
function composedProperties(node: Obj): string[] | null {
  const out: string[] = [];
  for (const k of BRANCHES) {
    const list = node[k];
    if (!Array.isArray(list)) continue;
    for (const b of list) {
      if (!isObj(b)) continue;
      if ('$ref' in b || 'additionalProperties' in b || 'patternProperties' in b) return null;
      if (isObj(b.properties)) out.push(...Object.keys(b.properties));
      const inner = composedProperties(b);
      if (inner === null) return null;
      out.push(...inner);
    }
  }
  return out;
}

/**
 * Adds `additionalProperties: false` to every object schema that declares `properties` and says
 * nothing about other attributes. Attributes declared by `allOf`/`anyOf`/`oneOf` branches are added
 * to the outer `properties` (as `{}`) so closing the outer object does not reject them; branches
 * themselves are never closed, nor is anything under `not`; objects composed with `$ref`s are left open.
 */
export function closeObjectSchemas(node: unknown, closeSelf = true): void {
  if (Array.isArray(node)) {
    for (const v of node) closeObjectSchemas(v);
    return;
  }
  if (!isObj(node)) return;
  if (closeSelf && isObj(node.properties) && !('additionalProperties' in node) && !('$ref' in node) && (node.type === undefined || node.type === 'object')) {
    const extra = composedProperties(node);
    if (extra !== null) {
      for (const n of extra) if (!(n in node.properties)) node.properties[n] = {};
      node.additionalProperties = false;
    }
  }
  for (const key of ['properties', 'patternProperties', 'definitions', '$defs'] as const) {
    const map = node[key];
    if (isObj(map)) for (const v of Object.values(map)) closeObjectSchemas(v);
  }
  if (isObj(node.additionalProperties)) closeObjectSchemas(node.additionalProperties);
  if (node.items !== undefined) closeObjectSchemas(node.items);
  for (const k of BRANCHES) {
    const list = node[k];
    if (Array.isArray(list)) for (const b of list) closeObjectSchemas(b, false);
  }
}

// ------------------------------------------------------------------ the validator
interface Location {
  readonly file: string; // absolute path
  readonly tokens: readonly string[];
  readonly node: unknown;
}

interface DefinitionEntry {
  readonly name: string;
  readonly iface: string;
  readonly file: string;
}

const rel = (root: string, abs: string): string => path.relative(root, abs).split(path.sep).join('/');

export class EtsiValidator {
  readonly spec: EtsiSpec;
  readonly sol: EtsiSol;
  readonly asPublished: boolean;
  readonly noExtra: boolean;
  /** Repairs applied to the files loaded so far: `<file>#<pointer>: <repair id>`. */
  readonly repairs: string[] = [];

  private readonly root: string;
  private readonly iface: string;
  private readonly ajv: Ajv;
  private readonly formatsOff: boolean;
  private readonly knownFormats = new Set<string>();
  private readonly docs = new Map<string, unknown>();
  private readonly compiled = new Map<string, { readonly fn: ValidateFunction; readonly target: string }>();
  private index: Map<string, DefinitionEntry[]> | null = null;
  private readonly lookups = new Map<string, { readonly ref: string; readonly target: string }>();

  constructor(options: EtsiValidatorOptions = {}) {
    this.spec = options.spec ?? '3.7.1';
    this.sol = options.sol ?? '003';
    if (this.spec !== '3.7.1' && this.spec !== '2.6.1') throw new EtsiLookupError(`unknown spec "${String(this.spec)}" (3.7.1 or 2.6.1)`);
    if (this.sol !== '002' && this.sol !== '003') throw new EtsiLookupError(`unknown SOL "${String(this.sol)}" (002 or 003)`);
    this.asPublished = options.asPublished ?? false;
    this.noExtra = options.noExtra ?? false;
    this.iface = (options.interface ?? DEFAULT_INTERFACE).replace(/-API$/i, '');
    this.root = path.join(options.dir ?? ETSI_FIXTURES_DIR, this.spec, this.spec === '3.7.1' ? 'SOL002-SOL003' : 'api-tests');
    if (!existsSync(this.root)) throw new EtsiLookupError(`ETSI definitions not found in ${this.root}`);
    this.formatsOff = options.formats === 'off';
    // strict: false: the files use keywords Ajv does not know (OpenAPI's example, "descriptions"),
    // required-only oneOf/anyOf branches and $ref siblings, all of which strict mode rejects.
    this.ajv = new Ajv({ allErrors: true, strict: false, logger: false });
    this.ajv.addFormat('date-time', this.formatsOff ? true : fullFormats['date-time']);
    this.knownFormats.add('date-time');
  }

  /** Every data type name (3.7.1: of this SOL, qualified as `Interface:Name`; 2.6.1: of the interface folder). */
  names(): string[] {
    if (this.spec === '2.6.1') return this.suiteFiles(this.iface).map((f) => f.replace(/\.schema\.json$/, ''));
    return [...this.definitionIndex().values()].flat().map((e) => `${e.iface}:${e.name}`).sort();
  }

  /**
   * Validates `body` against the data type `name` (case-insensitive; `Interface:Name` to pick the
   * interface). With `array`, `body` must be an array of that type (a list GET).
   *
   * @throws EtsiLookupError when the name is unknown, ambiguous or unusable upstream
   */
  validate(name: string, body: unknown, opts: { readonly array?: boolean } = {}): EtsiValidationResult {
    let found = this.lookups.get(name);
    if (!found) {
      found = this.spec === '3.7.1' ? this.lookup371(name) : this.lookup261(name);
      this.lookups.set(name, found);
    }
    const { ref, target } = found;
    const array = opts.array ?? false;
    const key = `${array ? '[]' : ''}${ref}`;
    let c = this.compiled.get(key);
    if (!c) {
      c = { fn: this.compile(array ? { type: 'array', items: { $ref: ref } } : { $ref: ref }, target), target };
      this.compiled.set(key, c);
    }
    return this.run(c.fn, c.target, body);
  }

  /**
   * 3.7.1 only: validates the request or response body of one operation of the interface,
   * `"<METHOD> <path> <status|request>"`; the path may be the template or a concrete path.
   * `body` undefined (or `''`) means an empty body, which is valid only where no body is declared.
   */
  validateOperation(operation: string, body: unknown, opts: { readonly interface?: string } = {}): EtsiValidationResult {
    if (this.spec !== '3.7.1') throw new EtsiLookupError('operations need spec 3.7.1 (the 2.6.1 suite has data types only)');
    const m = /^\s*([A-Za-z]+)\s+(\/\S*)\s+(\S+)\s*$/.exec(operation);
    if (!m) throw new EtsiLookupError(`operation must be "<METHOD> <path> <status|request>", got "${operation}"`);
    const method = m[1]!.toLowerCase();
    const wantPath = m[2]!.replace(/\/+$/, '') || '/';
    const part = m[3]!.toLowerCase();
    const wanted = (opts.interface ?? this.iface).replace(/-API$/i, '');
    const iface = readdirSync(path.join(this.root, `SOL${this.sol}`)).find((d) => d.toLowerCase() === wanted.toLowerCase()) ?? wanted;
    const file = path.join(this.root, `SOL${this.sol}`, iface, `${iface}.yaml`);
    if (!existsSync(file)) throw new EtsiLookupError(`no interface ${wanted} in SOL${this.sol} ${this.spec}`);
    this.load(file);

    const paths = this.at({ file, tokens: [], node: this.docs.get(file) }, 'paths');
    const templates = isObj(paths.node) ? Object.keys(paths.node) : [];
    const template = templates.find((t) => t === wantPath) ?? templates.find((t) => templateRegex(t).test(wantPath));
    if (!template) throw new EtsiLookupError(`no path ${wantPath} in ${iface}`);
    const item = this.follow(this.at(paths, template));
    const op = this.at(item, method);
    if (!isObj(op.node) || !METHODS.has(method)) {
      const declared = isObj(item.node) ? Object.keys(item.node).filter((k) => METHODS.has(k)) : [];
      throw new EtsiLookupError(`${template} has no ${method.toUpperCase()}; declared: ${declared.join(', ').toUpperCase()}`);
    }
    const label = `${method.toUpperCase()} ${template} ${part}`;

    let holder: Location;
    if (part === 'request') holder = this.follow(this.at(op, 'requestBody'));
    else {
      const responses = this.at(op, 'responses');
      const statuses = isObj(responses.node) ? Object.keys(responses.node) : [];
      const status = statuses.find((s) => s === part) ?? statuses.find((s) => s.toLowerCase() === `${part[0]}xx`) ?? statuses.find((s) => s === 'default');
      if (!status) throw new EtsiLookupError(`${method.toUpperCase()} ${template} declares no response ${part}; declared: ${statuses.join(', ')}`);
      holder = this.follow(this.at(responses, status));
    }

    const content = isObj(holder.node) ? holder.node.content : undefined;
    let mediaType = isObj(content) ? ('application/json' in content ? 'application/json' : Object.keys(content)[0]) : undefined;
    const empty = body === undefined || body === '';
    let noBody = 'no body declared';
    if (mediaType !== undefined && !this.asPublished && part !== 'request' && isObj(holder.node) && typeof holder.node.description === 'string' && EMPTY_BODY_TEXT.test(holder.node.description)) {
      const note = `${rel(this.root, holder.file)}#${pointer(holder.tokens)}: empty-body`;
      if (!this.repairs.includes(note)) this.repairs.push(note);
      mediaType = undefined;
      noBody = 'the response body shall be empty: empty-body';
    }
    if (mediaType === undefined) {
      const target = `${rel(this.root, holder.file)}#${pointer(holder.tokens)} (${label}: ${noBody})`;
      return empty ? { valid: true, target, errors: [] } : { valid: false, target, errors: [{ path: '', message: 'must be empty: no body is declared', params: {} }] };
    }
    const schema = this.at(this.at(this.at(holder, 'content'), mediaType), 'schema');
    const declared = `${rel(this.root, schema.file)}#${pointer(schema.tokens)}`;
    if (empty) return { valid: false, target: declared, errors: [{ path: '', message: `must not be empty: a ${mediaType} body is declared`, params: {} }] };

    const key = `op:${iface}:${label}`;
    let c = this.compiled.get(key);
    if (!c) {
      let wrapper: Obj = { $ref: `${pathToFileURL(schema.file).href}#${fragment(schema.tokens)}` };
      let target = declared;
      const single = this.singleObjectListBody(method, part, template, paths, schema);
      if (single) {
        wrapper = { type: 'array', items: { $ref: single } };
        target = `${declared} (as an array: list-GET-200)`;
        this.repairs.push(`${declared}: list-GET-200`);
      }
      if (this.noExtra) closeObjectSchemas(schema.node);
      c = { fn: this.compile(wrapper, target), target };
      this.compiled.set(key, c);
    }
    return this.run(c.fn, c.target, body);
  }

  // ---------------------------------------------------------------- internals

  private run(fn: ValidateFunction, target: string, body: unknown): EtsiValidationResult {
    const valid = fn(body) as boolean;
    return { valid, target, errors: valid ? [] : toErrors(fn.errors) };
  }

  private compile(schema: Obj, label: string): ValidateFunction {
    try {
      return this.ajv.compile(schema);
    } catch (e) {
      throw new EtsiLookupError(`cannot compile ${label}: ${(e as Error).message}`);
    }
  }

  /** Loads a file (and, transitively, every file its `$ref`s name), repairs it and registers it with Ajv. */
  private load(file: string): void {
    if (this.docs.has(file)) return;
    const doc = structuredClone(parseFile(file));
    this.docs.set(file, doc);
    const fileRel = rel(this.root, file);
    const isDefinitions = isObj(doc) && isObj(doc.definitions) && Object.keys(doc).length === 1;
    const isSuiteSchema = this.spec === '2.6.1';
    if (isDefinitions || isSuiteSchema) {
      const target = isDefinitions ? ((doc as Obj).definitions as Obj) : (doc as Obj);
      const base = isDefinitions ? '/definitions' : '';
      for (const r of ETSI_REPAIRS) {
        if (r.spec !== this.spec || !r.apply || (this.asPublished && !r.always)) continue;
        for (const p of r.apply(target)) this.repairs.push(`${fileRel}#${base}${p}: ${r.id}`);
      }
      if (this.noExtra) {
        if (isDefinitions) for (const def of Object.values(target)) closeObjectSchemas(def);
        else closeObjectSchemas(target);
      }
    }
    walk(doc, (o) => {
      if (typeof o.format === 'string' && !this.knownFormats.has(o.format)) {
        this.knownFormats.add(o.format);
        this.ajv.addFormat(o.format, true);
      }
    });
    // Definition files and suite schemas are JSON Schema documents; interface files are OpenAPI
    // documents that are only entered through JSON pointers, so Ajv must not meta-validate them.
    this.ajv.addSchema(doc as Obj, pathToFileURL(file).href, undefined, isDefinitions || isSuiteSchema);
    walk(doc, (o) => {
      if (typeof o.$ref !== 'string') return;
      const [filePart] = o.$ref.split('#');
      if (filePart) this.load(path.resolve(path.dirname(file), decodeURIComponent(filePart)));
    });
  }

  /** name -> definitions (3.7.1, this SOL), keyed by lower-case name. */
  private definitionIndex(): Map<string, DefinitionEntry[]> {
    if (this.index) return this.index;
    const index = new Map<string, DefinitionEntry[]>();
    const solDir = path.join(this.root, `SOL${this.sol}`);
    for (const iface of readdirSync(solDir).sort()) {
      const dir = path.join(solDir, iface);
      if (!statSync(dir).isDirectory()) continue;
      const files = iface === GENERAL ? readdirSync(dir).map((f) => path.join(dir, f)) : existsSync(path.join(dir, 'definitions')) ? readdirSync(path.join(dir, 'definitions')).map((f) => path.join(dir, 'definitions', f)) : [];
      for (const file of files.filter((f) => f.endsWith('.yaml')).sort()) {
        const doc = parseFile(file);
        if (!isObj(doc) || !isObj(doc.definitions)) continue;
        for (const name of Object.keys(doc.definitions)) {
          const k = name.toLowerCase();
          index.set(k, [...(index.get(k) ?? []), { name, iface, file }]);
        }
      }
    }
    this.index = index;
    return index;
  }

  private lookup371(wanted: string): { ref: string; target: string } {
    const colon = wanted.indexOf(':');
    const qualifier = colon > 0 ? wanted.slice(0, colon).toLowerCase() : null;
    const name = colon > 0 ? wanted.slice(colon + 1) : wanted;
    const all = this.definitionIndex().get(name.toLowerCase()) ?? [];
    if (all.length === 0) throw new EtsiLookupError(`unknown ETSI ${this.spec} SOL${this.sol} schema "${wanted}"`);
    // Exact spelling wins over a case-insensitive match.
    const exact = all.filter((e) => e.name === name);
    const hits = exact.length > 0 ? exact : all;
    const inIface = (i: string) => hits.filter((e) => e.iface.toLowerCase() === i.toLowerCase());
    let chosen: DefinitionEntry[];
    if (qualifier) {
      chosen = inIface(qualifier);
      if (chosen.length === 0) chosen = inIface(GENERAL);
      if (chosen.length === 0) {
        throw new EtsiLookupError(`"${name}" is not defined in SOL${this.sol} ${wanted.slice(0, colon)}; it is defined in ${hits.map((e) => e.iface).join(', ')}`);
      }
    } else {
      chosen = inIface(this.iface);
      if (chosen.length === 0) chosen = inIface(GENERAL);
      if (chosen.length === 0) chosen = hits;
      if (chosen.length > 1) {
        throw new EtsiLookupError(`"${name}" is ambiguous in SOL${this.sol} ${this.spec}; qualify it as one of ${chosen.map((e) => `${e.iface}:${e.name}`).join(', ')}`);
      }
    }
    const hit = chosen[0]!;
    this.load(hit.file);
    return {
      ref: `${pathToFileURL(hit.file).href}#${fragment(['definitions', hit.name])}`,
      target: `${rel(this.root, hit.file)}#${pointer(['definitions', hit.name])}`,
    };
  }

  private suiteDir(iface: string): string {
    return path.join(this.root, `SOL${this.sol}`, `${iface}-API`, 'schemas');
  }

  private suiteFiles(iface: string): string[] {
    const dir = this.suiteDir(iface);
    if (!existsSync(dir)) throw new EtsiLookupError(`no SOL${this.sol} ${iface}-API schemas in the ${this.spec} suite`);
    return readdirSync(dir).filter((f) => f.endsWith('.schema.json')).sort();
  }

  private lookup261(wanted: string): { ref: string; target: string } {
    const colon = wanted.indexOf(':');
    const iface = colon > 0 ? wanted.slice(0, colon).replace(/-API$/i, '') : this.iface;
    const name = colon > 0 ? wanted.slice(colon + 1) : wanted;
    const files = this.suiteFiles(iface);
    const f = files.find((x) => x === `${name}.schema.json`) ?? files.find((x) => x.toLowerCase() === `${name}.schema.json`.toLowerCase());
    if (!f) {
      throw new EtsiLookupError(`unknown ETSI ${this.spec} SOL${this.sol} ${iface}-API schema "${name}"; known: ${files.map((x) => x.replace(/\.schema\.json$/, '')).join(', ')}`);
    }
    const file = path.join(this.suiteDir(iface), f);
    const fileRel = rel(this.root, file);
    const text = readFileSync(file, 'utf8');
    if (text.trim() === '') throw new EtsiLookupError(`the ETSI ${this.spec} schema ${fileRel} is empty upstream; it cannot be used`);
    try {
      this.load(file);
    } catch (e) {
      if (e instanceof SyntaxError) throw new EtsiLookupError(`the ETSI ${this.spec} schema ${fileRel} is not valid JSON upstream: ${e.message}`);
      throw e;
    }
    return { ref: pathToFileURL(file).href, target: `${fileRel}#` };
  }

  /** Descends one key. */
  private at(loc: Location, key: string): Location {
    return { file: loc.file, tokens: [...loc.tokens, key], node: isObj(loc.node) ? loc.node[key] : undefined };
  }

  /** Follows `$ref` chains of non-schema objects (path items, responses, request bodies). */
  private follow(loc: Location): Location {
    let cur = loc;
    for (let i = 0; i < 20 && isObj(cur.node) && typeof cur.node.$ref === 'string'; i++) {
      const [filePart, frag = ''] = cur.node.$ref.split('#');
      const file = filePart ? path.resolve(path.dirname(cur.file), decodeURIComponent(filePart)) : cur.file;
      this.load(file);
      const tokens = frag.split('/').slice(1).map((t) => decodeURIComponent(t).replace(/~1/g, '/').replace(/~0/g, '~'));
      let node: unknown = this.docs.get(file);
      for (const t of tokens) node = isObj(node) ? node[t] : undefined;
      cur = { file, tokens, node };
    }
    return cur;
  }

  /**
   * Upstream defect: a collection GET whose 200 body is a single `$ref` to the same type as the
   * GET 200 of its individual resource (`/x` vs `/x/{id}`) is a list. Returns the item `$ref` (absolute).
   */
  private singleObjectListBody(method: string, part: string, template: string, paths: Location, schema: Location): string | null {
    if (this.asPublished || method !== 'get' || part !== '200') return null;
    const own = this.bareRef(schema);
    if (!own || !isObj(paths.node)) return null;
    for (const t of Object.keys(paths.node)) {
      if (!new RegExp(`^${escapeRegex(template)}/\\{[^/}]+\\}$`).test(t)) continue;
      const child = this.follow(this.at(paths, t));
      const resp = this.follow(this.at(this.at(this.at(child, 'get'), 'responses'), '200'));
      const content = isObj(resp.node) ? resp.node.content : undefined;
      if (!isObj(content) || !('application/json' in content)) continue;
      if (this.bareRef(this.at(this.at(this.at(resp, 'content'), 'application/json'), 'schema')) === own) return own;
    }
    return null;
  }

  /** The absolute target of a schema that is only a `$ref` (plus a description), else null. */
  private bareRef(loc: Location): string | null {
    const n = loc.node;
    if (!isObj(n) || typeof n.$ref !== 'string' || Object.keys(n).some((k) => k !== '$ref' && k !== 'description')) return null;
    return new URL(n.$ref, pathToFileURL(loc.file)).href;
  }
}

const escapeRegex = (s: string): string => s.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&');

function templateRegex(template: string): RegExp {
  const parts = template.split(/\{[^}]+\}/).map(escapeRegex);
  return new RegExp(`^${parts.join('[^/]+')}$`);
}

function toErrors(errors: ErrorObject[] | null | undefined): EtsiError[] {
  return (errors ?? []).map((e) => {
    let p = e.instancePath;
    // Point at the undeclared attribute itself, not at the object holding it.
    if (e.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string') p += `/${escapeToken(e.params.additionalProperty)}`;
    return { path: p, message: e.message ?? `fails "${e.keyword}"`, params: { ...e.params } };
  });
}

/** Same as `new EtsiValidator(options)`. */
export function createEtsiValidator(options: EtsiValidatorOptions = {}): EtsiValidator {
  return new EtsiValidator(options);
}
