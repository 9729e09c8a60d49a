/**
 * Attribute selectors (ETSI GS NFV-SOL 013, clause 5.3): `all_fields`, `fields`, `exclude_fields`,
 * `exclude_default` on GET requests, which let a client trade completeness for response size.
 */
import { SolQueryError, type SolQueryParameter } from './sol-query-error.ts';

/** The selector parameters as they arrive in a parsed query string (flags usually as `''`). */
export interface AttributeSelectorQuery {
  all_fields?: unknown;
  fields?: unknown;
  exclude_fields?: unknown;
  exclude_default?: unknown;
}

/**
 * A validated selector. Parse once per request with {@link parseSelectorQuery} and apply it to
 * every item of a list, so errors surface before any data is read and parsing is not repeated.
 */
export interface AttributeSelector {
  readonly kind: 'AttributeSelector';
  /** `all_fields` was given: nothing is removed. */
  readonly allFields: boolean;
  /** `exclude_default` was given explicitly (absence of every selector implies it too). */
  readonly excludeDefault: boolean;
  /** Paths from `fields`, each split at `/`. */
  readonly fields: readonly (readonly string[])[] | undefined;
  /** Paths from `exclude_fields`, each split at `/`. */
  readonly excludeFields: readonly (readonly string[])[] | undefined;
}

/** Options for {@link parseSelectorQuery}. */
export interface ParseSelectorOptions {
  /**
   * Top-level attribute names the resource can have. When given, a `fields` / `exclude_fields`
   * path whose first name is not in this list is a 400 (the ETSI conformance suite sends
   * `fields=wrong_field` and expects 400). When omitted, unknown names are ignored.
   */
  readonly knownAttributes?: readonly string[];
}

/**
 * Query parameter names this module reads, for routes that reject unknown parameters.
 * `exclude-fields` is an alias of `exclude_fields` because python-tackerclient
 * (`vnflcm op list --exclude-fields`) sends the hyphenated name.
 */
export const SELECTOR_PARAMETERS: readonly string[] = ['all_fields', 'fields', 'exclude_fields', 'exclude_default', 'exclude-fields'];

/** Attributes no selector may remove: every SOL resource needs them to be addressable. */
export const MANDATORY_ATTRIBUTES: readonly string[] = ['id', '_links'];

/** Selectors made by parseSelectorQuery, so a raw query (whose keys a client controls) is never mistaken for one. */
const parsed = new WeakSet<AttributeSelector>();

function selectorError(parameter: SolQueryParameter, detail: string): SolQueryError {
  return new SolQueryError(parameter, `Invalid attribute selector: ${detail}`);
}

function readList(parameter: 'fields' | 'exclude_fields', raw: unknown, opts: ParseSelectorOptions): string[][] {
  let text: string;
  if (typeof raw === 'string') text = raw;
  else if (Array.isArray(raw) && raw.every((x) => typeof x === 'string')) text = raw.join(',');
  else throw selectorError(parameter, `${parameter} must be a comma-separated list of attribute names`);
  if (text.trim() === '') throw selectorError(parameter, `${parameter} must name at least one attribute`);
  return text.split(',').map((entry) => {
    if (entry === '') throw selectorError(parameter, `empty attribute name in ${parameter}=${text}`);
    const path = entry.split('/');
    if (path.some((p) => p === '' || p.trim() !== p)) {
      throw selectorError(parameter, `malformed attribute path '${entry}' in ${parameter} (names separated by '/', no spaces)`);
    }
    const first = path[0] as string;
    if (opts.knownAttributes && !opts.knownAttributes.includes(first)) {
      throw selectorError(parameter, `unknown attribute '${first}' in ${parameter}`);
    }
    return path;
  });
}

/**
 * Extracts and validates the attribute selector from a whole parsed query string (other
 * parameters such as `filter` are ignored).
 *
 * Valid combinations (SOL013 Table 5.3.2-1): none, `all_fields`, `fields`, `exclude_fields`,
 * `exclude_default`, `exclude_default` + `fields`. Everything else is rejected so a client never
 * gets a silently different response from what it asked for.
 *
 * @throws SolQueryError for invalid combinations, empty or malformed lists, unknown names.
 */
export function parseSelectorQuery(query: Record<string, unknown> | AttributeSelectorQuery | undefined, opts: ParseSelectorOptions = {}): AttributeSelector {
  const q = { ...(query ?? {}) } as Record<string, unknown>;
  const alias = q['exclude-fields'];
  if (alias !== undefined && alias !== null) {
    const own = q.exclude_fields;
    q.exclude_fields = own === undefined || own === null ? alias : [own, alias].flat();
  }
  const has = (k: string): boolean => q[k] !== undefined && q[k] !== null;
  const allFields = has('all_fields');
  const excludeDefault = has('exclude_default');
  const hasFields = has('fields');
  const hasExclude = has('exclude_fields');

  if (allFields) {
    const others = ['fields', 'exclude_fields', 'exclude_default'].filter(has);
    if (others.length > 0) throw selectorError('all_fields', `all_fields cannot be combined with ${others.join(', ')}`);
  }
  if (hasFields && hasExclude) throw selectorError('fields', 'fields and exclude_fields cannot be combined');
  if (hasExclude && excludeDefault) throw selectorError('exclude_fields', 'exclude_fields and exclude_default cannot be combined');

  const selector: AttributeSelector = {
    kind: 'AttributeSelector',
    allFields,
    excludeDefault,
    fields: hasFields ? readList('fields', q.fields, opts) : undefined,
    excludeFields: hasExclude ? readList('exclude_fields', q.exclude_fields, opts) : undefined,
  };
  parsed.add(selector);
  return selector;
}

// ------------------------------------------------------------------ applying

type Path = readonly string[];

/** An object whose own attributes form the JSON representation (not an array, date or byte buffer). */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !ArrayBuffer.isView(v);
}

/** SOL013 "complex attribute": one whose JSON value is an object or an array. */
function isComplex(v: unknown): boolean {
  return Array.isArray(v) || isPlainObject(v);
}

function clone(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clone);
  if (isPlainObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      // an own "__proto__" key (possible after JSON.parse) must stay data, not become the prototype
      if (k === '__proto__') Object.defineProperty(out, k, { value: clone(x), enumerable: true, writable: true, configurable: true });
      else out[k] = clone(x);
    }
    return out;
  }
  return v;
}

/** `a` equals `b` or is an ancestor of it. */
function isPrefix(a: Path, b: Path): boolean {
  return a.length <= b.length && a.every((s, i) => s === b[i]);
}

/**
 * Removes `path` from `node` (arrays on the way fan out, so `a/b` removes `b` from every element
 * of an array `a`), unless it is protected:
 * - `protect`: the path equals, or lies inside, a protected path (mandatory or named in `fields`);
 * - `keepWhole`: a path named in `fields` lies inside it. The attribute then stays whole: a part
 *   of it cannot be cut out safely because this module does not know which of its children are
 *   mandatory, and returning more than asked is harmless while a body missing a mandatory
 *   attribute is not SOL-conformant.
 */
function prune(node: unknown, path: Path, depth: number, protect: readonly Path[], keepWhole: readonly Path[]): void {
  if (Array.isArray(node)) {
    for (const x of node) prune(x, path, depth, protect, keepWhole);
    return;
  }
  if (!isPlainObject(node)) return;
  const name = path[depth] as string;
  if (!Object.hasOwn(node, name)) return;
  if (depth < path.length - 1) {
    prune(node[name], path, depth + 1, protect, keepWhole);
    return;
  }
  if (protect.some((k) => isPrefix(k, path))) return;
  if (keepWhole.some((k) => isPrefix(path, k))) return;
  delete node[name];
}

/**
 * Applies an attribute selector to one resource representation and returns a new object (the
 * input is not modified).
 *
 * - no selector, or `exclude_default`: the `defaultExcluded` attributes are removed. List
 *   endpoints pass their SOL default set (VnfInstance: `vnfConfigurableProperties,
 *   vimConnectionInfo, instantiatedVnfInfo, metadata, extensions`; VnfLcmOpOcc: `operationParams,
 *   error, resourceChanges, changedInfo, changedExtConnectivity`); single-resource GETs pass `[]`.
 * - `exclude_default` + `fields`: as above, but the attributes named in `fields` stay.
 * - `fields` alone: every complex (object / array) top-level attribute not named, and every
 *   `defaultExcluded` attribute not named, is removed; simple attributes always stay.
 * - `exclude_fields`: only the named attributes are removed.
 * - `all_fields`: nothing is removed.
 *
 * A path `a/b` names `b` inside `a` (inside every element when `a` is an array). When a path in
 * `fields` lies inside an excluded attribute, that attribute stays whole (see `prune`).
 * `mandatory` paths (default `id`, `_links`) and everything inside them are never removed; a
 * nested mandatory path such as `instantiatedVnfInfo/extCpInfo` protects only itself, its parent
 * may still be excluded as a whole.
 *
 * @param selector the raw query parameters, or a selector from {@link parseSelectorQuery}
 * @throws SolQueryError when `selector` is a raw query with an invalid combination
 */
export function applyAttributeSelector(
  body: object,
  selector: AttributeSelectorQuery | AttributeSelector,
  defaultExcluded: readonly string[],
  mandatory: readonly string[] = MANDATORY_ATTRIBUTES,
): Record<string, unknown> {
  const sel = parsed.has(selector as AttributeSelector) ? (selector as AttributeSelector) : parseSelectorQuery(selector as AttributeSelectorQuery);
  const result = clone(body) as Record<string, unknown>;
  if (!isPlainObject(result) || sel.allFields) return result;

  const mandatoryPaths: Path[] = mandatory.map((m) => m.split('/'));
  if (sel.excludeFields) {
    for (const p of sel.excludeFields) prune(result, p, 0, mandatoryPaths, []);
    return result;
  }

  const fields = sel.fields ?? [];
  const excluded: Path[] = defaultExcluded.map((d) => d.split('/'));
  if (sel.fields && !sel.excludeDefault) {
    for (const [k, v] of Object.entries(result)) if (isComplex(v)) excluded.push([k]);
  }
  for (const p of excluded) prune(result, p, 0, [...mandatoryPaths, ...fields], fields);
  return result;
}
