/**
 * SOL013 filter terms on nested JSON attributes (`metadata/tenant`, `instantiatedVnfInfo/vnfcResourceInfo/vduId`,
 * `filter/notificationTypes`, `vimConnectionInfo/@key`, ...) translated into SQL/JSON path
 * predicates (`jsonb_path_exists`), with the semantics of `matchesFilter` (src/api/sol/filter.ts),
 * which stays the oracle (test/api/sol/json-filter-sql.test.ts runs both on PGlite and PostgreSQL).
 *
 * How the semantics are reproduced:
 *
 * - **Fan-out.** After the attribute and after every step, `[*][*][*][*]` flattens arrays (in lax
 *   mode `[*]` on a non-array yields the item itself), so arrays nested up to 4 deep within one
 *   step fan out like the oracle's recursive flatten ("any element matches").
 * - **Absent.** A term on a path that reaches nothing (no object on the way has the key, or its
 *   value is JSON null) never matches, whatever the operator; the negated operators (`neq`, `nin`,
 *   `ncont`) match when the path is reached and **no** leaf matches the positive form. A path that
 *   reaches only empty arrays is reached (so `neq` matches), as in the oracle.
 * - **@key** is `? (@.type() == "object").keyvalue().key`.
 * - **Types.** Numbers compare numerically (the filter value is read as a JavaScript number, so
 *   `1e2` equals 100 and `1e400` is larger than any stored number), booleans as `true` / `false`,
 *   strings by code point (`==`, `<`, `like_regex ... flag "q"` for `cont`). A value of another
 *   type never equals and never orders.
 * - **Date-times.** When the filter value is an ISO 8601 date-time, the oracle compares date-time
 *   strings as instants. A stored string in the canonical form `YYYY-MM-DDTHH:MM:SS.mmmZ` (what
 *   the VNFM writes) with a day that exists in every year of that month is compared as a string
 *   with the value's canonical form, which orders exactly like the instants; other date-like
 *   strings (other offsets or precision, 29 February, 24:00) are **uncertain**: the row is read
 *   and the in-memory check decides. Such a term is reported as not exact (below).
 *
 * A translation is `exact` when the SQL decides the term by itself; otherwise its condition is a
 * superset (never loses a matching row) and the caller re-checks the rows in memory. Whatever the
 * SQL says, sql-list.ts re-checks every returned row with the oracle, so a translation can only
 * ever cost speed, never a wrong answer, provided it is a superset. Known limits of exactness
 * (documented in docs/api.md): arrays nested more than 4 deep inside one step; stored numbers not
 * written by JavaScript (more digits than a double carries); for `gt`/`gte`/`lt`/`lte` a value with
 * characters at or above U+E000 is left to memory (UTF-16 and code point order differ there).
 */
import { type RawBuilder, sql } from 'kysely';
import type { FilterPathSegment, SimpleFilterExpr } from './filter.ts';

/** A translated term. */
export interface JsonTermSql {
  readonly condition: RawBuilder<boolean>;
  /** True when `condition` equals the oracle; false when it is only a superset. */
  readonly exact: boolean;
}

/** How an API attribute's nested paths map to its stored jsonb value. */
export interface JsonAttr {
  /** SQL jsonb expression holding the attribute's API value (e.g. a column) whenever the attribute is present. */
  readonly expr: RawBuilder<unknown>;
  /**
   * Rewrites the path below the attribute for the stored shape: the steps to use, `'never'` when
   * the API representation cannot have that path (the term matches nothing), `'memory'` when SQL
   * cannot decide it. Default: the path as it is.
   */
  readonly map?: (steps: readonly FilterPathSegment[], term: SimpleFilterExpr) => readonly FilterPathSegment[] | 'never' | 'memory';
}

/** Flattens arrays nested up to 4 deep (lax mode: a non-array passes as itself). */
const FLAT = '[*][*][*][*]';

const NUMBER_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const DATE_TIME_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
/** What JavaScript writes (`toISOString`), years 0000-9999. */
const CANONICAL_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Code points whose UTF-16 order differs from their code point order against the rest. */
const HIGH_CHARS = /[\ue000-\uffff\ud800-\udfff]/;
/** Values that cannot be passed to the database as text (U+0000, unpaired surrogates). */
const UNSENDABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The date-like test of the oracle, as a jsonpath regex (ASCII digits only). */
const DATE_LIKE_PATH = jsonpathString('^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$');
/**
 * Canonical date-times whose instant is certain: months 01-12, days that exist in every year of
 * their month (29 February excluded), hours 00-23; such a string orders like its instant.
 */
const CANONICAL_VALID_PATH = jsonpathString(
  '^[0-9]{4}-(((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8]))|((0[13-9]|1[0-2])-(29|30))|((0[13578]|1[02])-31))T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\\.[0-9]{3}Z$',
);

/** A jsonpath string literal (its escapes are JSON's). */
function jsonpathString(s: string): string {
  return JSON.stringify(s);
}

function instantOf(v: string): number | undefined {
  if (!DATE_TIME_RE.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

/** A JSON number for a filter value read as a JavaScript number (±Infinity beyond every double). */
function numberLiteral(v: string): string {
  const n = Number(v);
  if (Number.isFinite(n)) return JSON.stringify(n);
  return n > 0 ? '1.8e308' : '-1.8e308';
}

const JSONPATH_OP = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** The per-leaf predicates of one term's positive form: `sure` decides; `maybe` adds uncertain leaves. */
interface LeafPredicate {
  readonly sure: string;
  readonly maybe?: string;
}

/** Builds the leaf predicate of the positive operator; undefined when SQL cannot express it. */
function leafPredicate(op: 'eq' | 'in' | 'cont' | 'gt' | 'gte' | 'lt' | 'lte', values: readonly string[], vars: Record<string, string>): LeafPredicate | undefined {
  const sure: string[] = [];
  let uncertain = false;
  const addVar = (name: string, json: string) => {
    vars[name] = json;
    return `$${name}`;
  };
  if (op === 'cont') {
    for (const v of values) sure.push(`(@.type() == "string" && @ like_regex ${jsonpathString(v)} flag "q")`);
    return { sure: sure.join(' || ') };
  }
  if (op === 'eq' || op === 'in') {
    values.forEach((v, i) => {
      if (NUMBER_RE.test(v)) sure.push(`(@.type() == "number" && @ == ${addVar(`n${i}`, numberLiteral(v))})`);
      if (v === 'true' || v === 'false') sure.push(`@ == ${v}`);
      sure.push(`@ == ${addVar(`s${i}`, JSON.stringify(v))}`);
      const t = instantOf(v);
      if (t !== undefined) {
        const canonical = new Date(t).toISOString();
        if (CANONICAL_RE.test(canonical)) sure.push(`(@ like_regex ${CANONICAL_VALID_PATH} && @ == ${addVar(`c${i}`, JSON.stringify(canonical))})`);
        uncertain = true;
      }
    });
  } else {
    const v = values[0] as string;
    const cmp = JSONPATH_OP[op];
    if (NUMBER_RE.test(v)) sure.push(`(@.type() == "number" && @ ${cmp} ${addVar('n0', numberLiteral(v))})`);
    if (HIGH_CHARS.test(v)) return undefined;
    const t = instantOf(v);
    if (t === undefined) {
      sure.push(`(@.type() == "string" && @ ${cmp} ${addVar('s0', JSON.stringify(v))})`);
    } else {
      const canonical = new Date(t).toISOString();
      if (!CANONICAL_RE.test(canonical)) return undefined;
      sure.push(`(@.type() == "string" && !(@ like_regex ${DATE_LIKE_PATH}) && @ ${cmp} ${addVar('s0', JSON.stringify(v))})`);
      sure.push(`(@ like_regex ${CANONICAL_VALID_PATH} && @ ${cmp} ${addVar('c0', JSON.stringify(canonical))})`);
      uncertain = true;
    }
  }
  const s = sure.join(' || ');
  if (!uncertain) return { sure: s };
  return { sure: s, maybe: `(@ like_regex ${DATE_LIKE_PATH} && !(@ like_regex ${CANONICAL_VALID_PATH}))` };
}

function stepText(seg: FilterPathSegment): string {
  return seg.kind === 'key' ? ' ? (@.type() == "object").keyvalue().key' : `.${jsonpathString(seg.name)}${FLAT}`;
}

function exists(expr: RawBuilder<unknown>, path: string, vars: Record<string, string>): RawBuilder<boolean> {
  const varsJson = `{${Object.entries(vars)
    .map(([k, v]) => `${JSON.stringify(k)}:${v}`)
    .join(',')}}`;
  return sql<boolean>`jsonb_path_exists(${expr}, ${`lax ${path}`}::jsonpath, ${varsJson}::jsonb, true)`;
}

/**
 * The SQL condition of `term` on a JSON attribute whose path below the attribute is `steps`;
 * undefined when it must be decided in memory only.
 */
export function jsonTermCondition(attr: JsonAttr, term: SimpleFilterExpr): JsonTermSql | undefined {
  if (term.values.some((v) => UNSENDABLE.test(v))) return undefined;
  const below = term.path.slice(1);
  const mapped = attr.map ? attr.map(below, term) : below;
  if (mapped === 'memory') return undefined;
  if (mapped === 'never') return { condition: sql<boolean>`false`, exact: true };
  if (mapped.some((s) => s.kind === 'attr' && UNSENDABLE.test(s.name))) return undefined;

  const negated = term.op === 'neq' || term.op === 'nin' || term.op === 'ncont';
  const positive = term.op === 'neq' ? 'eq' : term.op === 'nin' ? 'in' : term.op === 'ncont' ? 'cont' : term.op;
  const vars: Record<string, string> = {};
  const pred = leafPredicate(positive, term.values, vars);
  if (!pred) return undefined;

  // X: the items of the step before the last one; the last step decides "reached" and the leaves
  let prefix = `$${FLAT}`;
  for (const seg of mapped.slice(0, -1)) prefix += stepText(seg);
  const last = mapped[mapped.length - 1];
  let reached: string;
  let leaves: string;
  if (last === undefined) {
    // the attribute itself: reached when present (not JSON null)
    reached = '$ ? (@.type() != "null")';
    leaves = `$${FLAT}`;
  } else if (last.kind === 'key') {
    reached = `${prefix} ? (@.type() == "object")`;
    leaves = `${prefix}${stepText(last)}`;
  } else {
    const name = jsonpathString(last.name);
    reached = `${prefix} ? (@.${name}.type() != "null")`;
    leaves = `${prefix}.${name}${FLAT}`;
  }
  if (!negated) {
    const p = pred.maybe ? `(${pred.sure}) || ${pred.maybe}` : pred.sure;
    return { condition: exists(attr.expr, `${leaves} ? (${p})`, vars), exact: pred.maybe === undefined };
  }
  // reached, and no leaf surely matches the positive form (uncertain leaves keep the row: superset)
  return {
    condition: sql<boolean>`(${exists(attr.expr, reached, {})} and not ${exists(attr.expr, `${leaves} ? (${pred.sure})`, vars)})`,
    exact: pred.maybe === undefined,
  };
}
