/**
 * Attribute-based filtering (ETSI GS NFV-SOL 013, clause 5.2): `filter=<expr>` on list GETs.
 *
 * Grammar (as implemented; the query string is already URL-decoded):
 *
 * ```
 * filterExpr  = simpleExpr *( ";" simpleExpr )          ; ";" = AND
 * simpleExpr  = "(" op "," attrPath 1*( "," value ) ")"
 * op          = eq | neq | gt | gte | lt | lte | cont | ncont | in | nin
 * attrPath    = attrName *( "/" attrName )              ; "@key" = the keys of a map
 * attrName    = 1*( any char except , / ( ) ; ' )       ; escapes ~0 "~", ~1 "/", ~a ",", ~b "@"
 * value       = 1*( any char except , ' ) )  |  "'" *( any char except ' | "''" ) "'"
 * ```
 *
 * eq, neq, gt, gte, lt, lte take exactly one value; in, nin, cont, ncont take one or more.
 * Parsing is strict (a broken expression is a 400 with the character position); matching is
 * lenient (an object that lacks the attribute, or holds a value of another type, simply does not
 * match), so one odd record never turns a whole list request into an error.
 */
import { SolQueryError } from './sol-query-error.ts';

/** Every comparison operator SOL013 defines, in the order the GS lists them. */
export const FILTER_OPERATORS = ['eq', 'neq', 'in', 'nin', 'gt', 'gte', 'lt', 'lte', 'cont', 'ncont'] as const;

/** One SOL013 filter operator. */
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** Operators that accept exactly one value (SOL013 Table 5.2.2-1). */
const SINGLE_VALUE_OPERATORS: ReadonlySet<FilterOperator> = new Set(['eq', 'neq', 'gt', 'gte', 'lt', 'lte']);

/**
 * One step of an attribute path. `key` stands for the `@key` keyword, which turns a map
 * (e.g. `extensions`, `metadata`, v2 `vimConnectionInfo`) into the list of its keys, so clients
 * can filter on map keys they cannot otherwise name.
 */
export type FilterPathSegment = { readonly kind: 'attr'; readonly name: string } | { readonly kind: 'key' };

/** One parenthesised term, e.g. `(eq,operationState,FAILED_TEMP)`. */
export interface SimpleFilterExpr {
  readonly op: FilterOperator;
  /** The attribute path, unescaped and split at `/`. */
  readonly path: readonly FilterPathSegment[];
  /** The attribute path as written in the query (kept for error messages and logs). */
  readonly attribute: string;
  /** The values, unquoted; always strings, converted to the attribute's type when matching. */
  readonly values: readonly string[];
  /** 0-based offset of the term's `(` in the filter string. */
  readonly position: number;
}

/** A parsed `filter` value: all terms must match (SOL013 `;` is a logical AND). */
export interface FilterExpression {
  readonly terms: readonly SimpleFilterExpr[];
}

/** Characters that end an attribute name or may not appear in one unescaped. */
const ATTR_STOP = new Set([',', ')', '(', ';', "'"]);

function describeChar(s: string, pos: number): string {
  return pos >= s.length ? 'end of input' : `'${s[pos]}'`;
}

function fail(msg: string, pos: number): never {
  throw new SolQueryError('filter', `Invalid filter: ${msg} at position ${pos}`, pos);
}

function unescapeAttrName(raw: string, start: number): FilterPathSegment {
  if (raw === '@key') return { kind: 'key' };
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c !== '~') {
      out += c;
      continue;
    }
    const e = raw[i + 1];
    if (e === '0') out += '~';
    else if (e === '1') out += '/';
    else if (e === 'a') out += ',';
    else if (e === 'b') out += '@';
    else fail(`invalid escape '~${e ?? ''}' in attribute name (use ~0, ~1, ~a or ~b)`, start + i);
    i++;
  }
  return { kind: 'attr', name: out };
}

function parseAttrPath(raw: string, start: number): FilterPathSegment[] {
  const segments: FilterPathSegment[] = [];
  let offset = 0;
  for (const part of raw.split('/')) {
    if (part === '') fail(`empty attribute name in '${raw}'`, start + offset);
    if (part.trim() !== part) fail(`attribute name '${part}' has leading or trailing whitespace`, start + offset);
    segments.push(unescapeAttrName(part, start + offset));
    offset += part.length + 1;
  }
  return segments;
}

/**
 * Parses a SOL013 `filter` value into an expression tree.
 *
 * Done once per request (not per object) so a syntax error is reported as 400 before any data
 * is read, with the exact character position the client got wrong.
 *
 * @throws SolQueryError on any syntax error, unknown operator or wrong number of values.
 */
export function parseFilter(expr: string): FilterExpression {
  if (typeof expr !== 'string' || expr.length === 0) fail('the expression is empty', 0);
  const s = expr;
  const terms: SimpleFilterExpr[] = [];
  let pos = 0;
  for (;;) {
    const termStart = pos;
    if (s[pos] !== '(') fail(`expected '(' but found ${describeChar(s, pos)}`, pos);
    pos++;

    // operator
    const opStart = pos;
    while (pos < s.length && s[pos] !== ',' && s[pos] !== ')') pos++;
    const opText = s.slice(opStart, pos);
    if (!(FILTER_OPERATORS as readonly string[]).includes(opText)) {
      fail(`unknown operator '${opText}' (expected one of ${FILTER_OPERATORS.join(', ')})`, opStart);
    }
    const op = opText as FilterOperator;
    if (s[pos] !== ',') fail(`expected ',' and an attribute name after operator '${op}' but found ${describeChar(s, pos)}`, pos);
    pos++;

    // attribute path
    const attrStart = pos;
    while (pos < s.length && !ATTR_STOP.has(s[pos] as string)) pos++;
    const attribute = s.slice(attrStart, pos);
    if (attribute === '') fail(`expected an attribute name but found ${describeChar(s, pos)}`, pos);
    if (s[pos] !== ',') {
      if (s[pos] === ')' || pos >= s.length) fail(`expected ',' and at least one value after attribute '${attribute}'`, pos);
      fail(`character ${describeChar(s, pos)} is not allowed in attribute name '${attribute}${s[pos]}...'`, pos);
    }
    const path = parseAttrPath(attribute, attrStart);

    // values
    const values: string[] = [];
    while (s[pos] === ',') {
      pos++;
      const valueStart = pos;
      if (s[pos] === "'") {
        pos++;
        let v = '';
        for (;;) {
          if (pos >= s.length) fail('unterminated quoted value', valueStart);
          const c = s[pos] as string;
          if (c === "'") {
            if (s[pos + 1] === "'") {
              v += "'";
              pos += 2;
              continue;
            }
            pos++;
            break;
          }
          v += c;
          pos++;
        }
        if (s[pos] !== ',' && s[pos] !== ')') {
          fail(`expected ',' or ')' after quoted value but found ${describeChar(s, pos)}`, pos);
        }
        values.push(v);
      } else {
        while (pos < s.length && s[pos] !== ',' && s[pos] !== ')' && s[pos] !== "'") pos++;
        if (s[pos] === "'") fail("a value containing a quote must be enclosed in quotes ('' for one quote)", pos);
        if (pos === valueStart) fail(`expected a value but found ${describeChar(s, pos)}`, pos);
        values.push(s.slice(valueStart, pos));
      }
    }
    if (s[pos] !== ')') fail(`expected ')' but found ${describeChar(s, pos)}`, pos);
    if (SINGLE_VALUE_OPERATORS.has(op) && values.length !== 1) {
      fail(`operator '${op}' takes exactly one value, got ${values.length}`, termStart);
    }
    pos++;
    terms.push({ op, path, attribute, values, position: termStart });

    if (pos === s.length) return { terms };
    if (s[pos] !== ';') fail(`expected ';' or end of filter but found ${describeChar(s, pos)}`, pos);
    pos++;
    if (pos === s.length) fail("expected '(' after ';'", pos);
  }
}

/**
 * Reads the `filter` parameter from a parsed query string and parses it.
 *
 * Returns `undefined` when the parameter is absent or empty: the ETSI conformance suite sends a
 * bare `?filter` and expects 200, and an empty filter restricts nothing.
 *
 * @throws SolQueryError when the parameter is repeated, not a string, or malformed.
 */
export function parseFilterQuery(query: Record<string, unknown> | undefined): FilterExpression | undefined {
  const raw = query?.filter;
  if (raw === undefined || raw === null) return undefined;
  if (Array.isArray(raw)) throw new SolQueryError('filter', 'Invalid filter: the filter parameter may be given only once; join terms with ";"');
  if (typeof raw !== 'string') throw new SolQueryError('filter', 'Invalid filter: the filter parameter must be a string');
  if (raw.trim() === '') return undefined;
  return parseFilter(raw);
}

// ------------------------------------------------------------------ matching

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function flatten(v: unknown, out: unknown[]): void {
  if (Array.isArray(v)) for (const x of v) flatten(x, out);
  else if (v !== undefined && v !== null) out.push(v);
}

/**
 * Every value at the end of `path`; arrays met on the way (or at the end) fan out, so
 * `vimConnectionInfo/vimType` reaches the vimType of every entry. `undefined` when the path
 * reaches nothing at all (attribute absent), an empty array when it reaches only empty arrays.
 */
function resolve(obj: unknown, path: readonly FilterPathSegment[]): unknown[] | undefined {
  let current: unknown[] = [obj];
  for (const seg of path) {
    const next: unknown[] = [];
    let reached = false;
    const items: unknown[] = [];
    for (const v of current) flatten(v, items);
    for (const x of items) {
      if (!isPlainObject(x)) continue;
      if (seg.kind === 'key') {
        reached = true;
        next.push(...Object.keys(x));
      } else if (Object.hasOwn(x, seg.name)) {
        const child = x[seg.name];
        if (child === undefined || child === null) continue;
        reached = true;
        next.push(child);
      }
    }
    if (!reached) return undefined;
    current = next;
  }
  const leaves: unknown[] = [];
  for (const v of current) flatten(v, leaves);
  return leaves;
}

const NUMBER_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const DATE_TIME_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Date-time strings compare as instants, so `2024-05-01T10:00:00Z` equals `...00.000Z` and `+02:00` forms order correctly. */
function asInstant(s: string): number | undefined {
  if (!DATE_TIME_RE.test(s)) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

/** Three-way comparison of an attribute value with a filter value in the attribute's type; undefined = not comparable. */
function compare(actual: unknown, value: string): number | undefined {
  if (typeof actual === 'number') {
    if (!NUMBER_RE.test(value)) return undefined;
    const n = Number(value);
    return actual === n ? 0 : actual < n ? -1 : 1;
  }
  if (typeof actual === 'string') {
    const a = asInstant(actual);
    const b = a === undefined ? undefined : asInstant(value);
    if (a !== undefined && b !== undefined) return a === b ? 0 : a < b ? -1 : 1;
    return actual === value ? 0 : actual < value ? -1 : 1;
  }
  return undefined;
}

function equals(actual: unknown, value: string): boolean {
  if (typeof actual === 'boolean') return value === (actual ? 'true' : 'false');
  return compare(actual, value) === 0;
}

/** The positive form of an operator; the negative ones (neq, nin, ncont) are its logical NOT. */
function testOne(op: 'eq' | 'in' | 'gt' | 'gte' | 'lt' | 'lte' | 'cont', actual: unknown, values: readonly string[]): boolean {
  switch (op) {
    case 'eq':
    case 'in':
      return values.some((v) => equals(actual, v));
    case 'cont':
      return typeof actual === 'string' && values.some((v) => actual.includes(v));
    default: {
      const c = compare(actual, values[0] as string);
      if (c === undefined) return false;
      if (op === 'gt') return c > 0;
      if (op === 'gte') return c >= 0;
      if (op === 'lt') return c < 0;
      return c <= 0;
    }
  }
}

const NEGATION = { neq: 'eq', nin: 'in', ncont: 'cont' } as const;

function matchesTerm(obj: unknown, term: SimpleFilterExpr): boolean {
  const leaves = resolve(obj, term.path);
  if (leaves === undefined) return false;
  if (term.op === 'neq' || term.op === 'nin' || term.op === 'ncont') {
    const positive = NEGATION[term.op];
    return !leaves.some((v) => testOne(positive, v, term.values));
  }
  const op = term.op;
  return leaves.some((v) => testOne(op, v, term.values));
}

/**
 * True when `obj` satisfies every term of `filter` (no filter = everything matches).
 *
 * Semantics chosen where SOL013 leaves room, so results are predictable:
 * - values are compared in the attribute's JSON type: numbers numerically, booleans as
 *   `true`/`false`, ISO 8601 date-times as instants, other strings exactly (case-sensitive);
 *   a value that cannot be read in that type never equals and never orders;
 * - arrays on the path fan out and a term matches when **any** element matches; the negated
 *   operators `neq`, `nin`, `ncont` match when **no** element matches the positive form;
 * - a term on an attribute the object does not have (absent or null) never matches, whatever
 *   the operator, mirroring how Tacker answers;
 * - `cont` / `ncont` apply to string values (substring, case-sensitive) only.
 *
 * Never throws: all checks that can fail were made by {@link parseFilter}.
 */
export function matchesFilter(obj: unknown, filter: FilterExpression | undefined): boolean {
  if (filter === undefined) return true;
  return filter.terms.every((t) => matchesTerm(obj, t));
}
