/**
 * Lists in SQL: SOL013 filter, attribute selectors and paging evaluated by the database, so a list
 * page costs one indexed range scan of `limit + 1` rows instead of loading the whole collection.
 *
 * Design (docs/api.md "Lists", docs/benchmarks.md):
 *
 * - **Order and cursor.** Every list has one stable order: its time column (`created_at`, or
 *   `received_at` for the fault ledger) then `id`. The `nextpage_opaque_marker` is a keyset
 *   cursor: the (time, id) of the last item of the page, with the time at the database's full
 *   microsecond precision, base64url-encoded and sealed with a checksum bound to the collection.
 *   The next page is `where (time, id) > (cursor)` (or the `desc` form), so rows inserted or
 *   deleted between two requests never make a page repeat or skip an item it would otherwise
 *   have returned; new rows (later `created_at`) appear on later pages. A marker that does not
 *   decode, fails the checksum or belongs to another collection is a 400 ProblemDetails.
 * - **Filter pushdown.** A filter term on a top-level attribute that is a plain column
 *   ({@link ColumnAttr}: text, boolean, timestamp) becomes a SQL condition with the semantics of
 *   `matchesFilter` (src/api/sol/filter.ts). A term on a nested path of a JSON attribute
 *   ({@link SqlListSpec.jsonAttrs}) becomes an SQL/JSON path predicate (src/api/sol/json-filter.ts),
 *   exact in most cases, a superset otherwise. Terms whose semantics SQL cannot reproduce exactly
 *   are either given a necessary SQL pre-condition (e.g. the attribute must be present: a JSON
 *   column not null, `instantiatedVnfInfo` only when INSTANTIATED) or left entirely to memory.
 *   Every fetched row is checked again in memory with every term except the JSON terms SQL
 *   decides exactly, so the other SQL conditions only ever need to be *supersets*; results equal
 *   the in-memory oracle.
 * - **Residual filtering still pages correctly.** When some term is evaluated in memory, rows are
 *   read in keyset order in batches and filtered until the page is full (or the collection ends);
 *   the cursor is the last *returned* item, so paging stays exact.
 * - **Selectors' needs.** Heavy JSON columns that the response will not contain (default-excluded
 *   and not selected, not needed by a residual filter term) are not read at all.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../../store/schema.ts';
import { type AttributeSelector, applyAttributeSelector, parseSelectorQuery } from './attribute-selector.ts';
import { type FilterExpression, type SimpleFilterExpr, matchesFilter, parseFilterQuery } from './filter.ts';
import { type JsonAttr, jsonTermCondition } from './json-filter.ts';
import { NEXTPAGE_MARKER_PARAMETER } from './paging.ts';
import { SolQueryError } from './sol-query-error.ts';

// ------------------------------------------------------------------ limit

/** Largest page a client may ask for with `limit`. */
export const MAX_LIST_LIMIT = 10_000;

/**
 * The one `limit` rule of every list endpoint: absent = the configured page size; otherwise an
 * integer 1..{@link MAX_LIST_LIMIT} (page size of this response; more items follow via `Link`).
 * `limit=0`, negative, non-integer, too large or repeated is a 400 ProblemDetails.
 */
export function parseLimit(query: Record<string, unknown> | undefined, defaultPageSize: number): number {
  const raw = query?.limit;
  if (raw === undefined || raw === null) return defaultPageSize;
  if (typeof raw !== 'string' || !/^[0-9]{1,9}$/.test(raw)) throw new SolQueryError('limit', `Invalid limit: must be an integer from 1 to ${MAX_LIST_LIMIT}`);
  const n = Number(raw);
  if (n < 1 || n > MAX_LIST_LIMIT) throw new SolQueryError('limit', `Invalid limit: must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${raw}`);
  return n;
}

// ------------------------------------------------------------------ cursor

/** A keyset position: the order column's value (database text, microseconds, UTC) and the id. */
export interface Cursor {
  readonly t: string;
  readonly id: string;
}

const TS_TEXT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function seal(collection: string, payload: string): string {
  return createHash('sha256').update('vnfm-list-cursor\0').update(collection).update('\0').update(payload).digest('base64url').slice(0, 16);
}

/** Encodes an opaque marker for `collection`. */
export function encodeCursor(collection: string, c: Cursor): string {
  const payload = Buffer.from(JSON.stringify([c.t, c.id]), 'utf8').toString('base64url');
  return `${payload}.${seal(collection, payload)}`;
}

/** Decodes a marker made by {@link encodeCursor} for the same collection; anything else is a 400. */
export function decodeCursor(collection: string, marker: unknown): Cursor {
  const invalid = (): SolQueryError =>
    new SolQueryError(NEXTPAGE_MARKER_PARAMETER, 'Invalid nextpage_opaque_marker: use the URL from the Link header of the previous page unchanged');
  if (typeof marker !== 'string' || !/^[A-Za-z0-9_-]{1,2048}\.[A-Za-z0-9_-]{16}$/.test(marker)) throw invalid();
  const [payload, mac] = marker.split('.') as [string, string];
  if (seal(collection, payload) !== mac) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) throw invalid();
  const [t, id] = parsed as unknown[];
  if (typeof t !== 'string' || !TS_TEXT_RE.test(t) || typeof id !== 'string' || id.length === 0) throw invalid();
  return { t, id };
}

// ------------------------------------------------------------------ spec

/** A top-level API attribute stored as a plain column, filterable in SQL. */
export interface ColumnAttr {
  readonly column: string;
  /** SQL expression of the value when it is not the column itself (e.g. a field of a jsonb column). */
  readonly expr?: RawBuilder<unknown>;
  /** text (nullable or not), boolean, or timestamptz rendered as ISO 8601 with milliseconds. */
  readonly type: 'text' | 'bool' | 'time';
}

/** How one collection is stored and shown. */
export interface SqlListSpec {
  /** Collection name: the cursor is bound to it (a marker of another list is a 400). */
  readonly collection: string;
  readonly table: string;
  /** Order column (timestamptz, not null) and direction; `id` (asc) breaks ties. */
  readonly orderColumn: string;
  readonly orderDir: 'asc' | 'desc';
  /** Every column the representation is built from. */
  readonly columns: readonly string[];
  /** API attribute -> plain column, for filter pushdown. */
  readonly attrs: Readonly<Record<string, ColumnAttr>>;
  /**
   * API attribute -> jsonb column its value is built from (values kept as they are; keys may be
   * renamed between API versions). Enables the text pre-filter of {@link jsonTextCondition}.
   */
  readonly json?: Readonly<Record<string, string>>;
  /**
   * API attribute -> its stored jsonb value, for terms on nested paths decided in SQL
   * (src/api/sol/json-filter.ts). The attribute's `presence` condition is added to them.
   */
  readonly jsonAttrs?: Readonly<Record<string, JsonAttr>>;
  /** API attribute -> SQL condition that holds whenever the attribute is present (pre-filter). */
  readonly presence?: Readonly<Record<string, RawBuilder<boolean>>>;
  /** API attribute -> column that may be skipped (read as null) when the attribute is not needed. */
  readonly lazy?: Readonly<Record<string, string>>;
  /** Fixed conditions (e.g. legacy `?status=` query parameters). */
  readonly where?: readonly RawBuilder<boolean>[];
  /**
   * A further check of each item in memory (e.g. legacy query parameters whose exact semantics
   * SQL does not have; `where` then holds a superset). Rows are then read in batches.
   */
  readonly accept?: (item: Record<string, unknown>) => boolean;
  /** Builds the API representation of a row. */
  toApi(row: Record<string, unknown>): Record<string, unknown>;
}

/** Options of {@link sendSqlList}. */
export interface SqlListOptions {
  defaultExcluded: readonly string[];
  pageSize: number;
  baseUrl: string;
  knownAttributes?: readonly string[];
}

// ------------------------------------------------------------------ filter -> SQL

const DATE_TIME_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function instantOf(v: string): number | undefined {
  if (!DATE_TIME_RE.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

const TRUE = sql<boolean>`true`;
const FALSE = sql<boolean>`false`;

function or(parts: RawBuilder<boolean>[]): RawBuilder<boolean> {
  if (parts.length === 0) return FALSE;
  return sql<boolean>`(${sql.join(parts, sql` or `)})`;
}

/**
 * The SQL condition of one term on a plain column, or undefined when it must be left to memory.
 * Exact where it is returned, except that timestamps are widened by 1 ms (the in-memory re-check
 * decides the edge).
 */
function columnCondition(term: SimpleFilterExpr, a: ColumnAttr): RawBuilder<boolean> | undefined {
  const col = a.expr ?? sql.ref(a.column);
  const { op, values } = term;
  if (a.type === 'bool') {
    const hits = values.filter((v) => v === 'true' || v === 'false').map((v) => v === 'true');
    const eq = hits.length === 0 ? FALSE : or([...new Set(hits)].map((b) => sql<boolean>`${col} = ${b}`));
    switch (op) {
      case 'eq':
      case 'in':
        return eq;
      case 'neq':
      case 'nin':
        return sql<boolean>`(${col} is not null and not ${eq})`;
      case 'ncont':
        return sql<boolean>`${col} is not null`;
      default:
        return FALSE; // booleans never order and never contain
    }
  }
  if (a.type === 'time') {
    if (op === 'neq' || op === 'nin' || op === 'cont' || op === 'ncont') return undefined;
    const instants = values.map(instantOf);
    if (instants.some((t) => t === undefined)) return undefined; // string comparison with the ISO text: memory
    const lo = (t: number) => new Date(t - 1).toISOString();
    const hi = (t: number) => new Date(t + 1).toISOString();
    const ts = instants as number[];
    const t0 = ts[0] as number;
    switch (op) {
      case 'eq':
      case 'in':
        return or(ts.map((t) => sql<boolean>`(${col} > ${lo(t)}::timestamptz and ${col} < ${hi(t)}::timestamptz)`));
      case 'gt':
      case 'gte':
        return sql<boolean>`${col} > ${lo(t0)}::timestamptz`;
      default:
        return sql<boolean>`${col} < ${hi(t0)}::timestamptz`;
    }
  }
  // text: identical strings are equal; different strings are equal only as date-time instants
  const dateLike = values.some((v) => DATE_TIME_RE.test(v));
  switch (op) {
    case 'eq':
    case 'in':
      return dateLike ? sql<boolean>`${col} is not null` : sql<boolean>`${col} in (${sql.join(values)})`;
    case 'neq':
    case 'nin':
      // a superset: rows equal only as instants are removed by the in-memory re-check
      return sql<boolean>`${col} not in (${sql.join(values)})`;
    case 'cont':
      return or(values.map((v) => sql<boolean>`strpos(${col}, ${v}) > 0`));
    case 'ncont':
      return sql<boolean>`(${col} is not null and not ${or(values.map((v) => sql<boolean>`strpos(${col}, ${v}) > 0`))})`;
    default: {
      if (dateLike) return sql<boolean>`${col} is not null`;
      const v = values[0] as string;
      const c = sql<string>`${col} collate "C"`;
      if (op === 'gt') return sql<boolean>`${c} > ${v}`;
      if (op === 'gte') return sql<boolean>`${c} >= ${v}`;
      if (op === 'lt') return sql<boolean>`${c} < ${v}`;
      return sql<boolean>`${c} <= ${v}`;
    }
  }
}

const NUMBER_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A necessary condition for `eq` / `in` / `cont` on a nested attribute of a jsonb column: a string
 * leaf equal to (or containing) the value appears, JSON-encoded, in the column's text. Used only
 * where that is provably necessary: no `@key` step (keys may be renamed by the v1 converters), and
 * values that cannot match a number, a boolean or a date-time written differently. The exact
 * decision is the in-memory re-check.
 */
function jsonTextCondition(term: SimpleFilterExpr, column: string): RawBuilder<boolean> | undefined {
  if (term.path.some((seg) => seg.kind === 'key')) return undefined;
  // a masked value (`****`, operationParams' sealed and secret-named values) is not in the stored text
  if (term.values.some((v) => v.includes('*'))) return undefined;
  const text = sql<string>`${sql.ref(column)}::text`;
  if (term.op === 'eq' || term.op === 'in') {
    if (term.values.some((v) => NUMBER_RE.test(v) || v === 'true' || v === 'false' || DATE_TIME_RE.test(v))) return undefined;
    return or(term.values.map((v) => sql<boolean>`strpos(${text}, to_jsonb(${v}::text)::text) > 0`));
  }
  if (term.op === 'cont') {
    // the substring must appear unescaped in the JSON text
    if (term.values.some((v) => JSON.stringify(v) !== `"${v}"`)) return undefined;
    return or(term.values.map((v) => sql<boolean>`strpos(${text}, ${v}) > 0`));
  }
  return undefined;
}

/** What a filter becomes: SQL conditions, and whether rows must still be filtered in memory. */
export interface FilterPlan {
  readonly conditions: RawBuilder<boolean>[];
  /** Terms not (exactly) expressed in SQL: their attributes must be read, rows are read in batches. */
  readonly residual: readonly SimpleFilterExpr[];
  /**
   * Terms checked again in memory on every row read: all but the JSON terms SQL decides exactly
   * (whose columns may not even be read when the response does not show them).
   */
  readonly recheck: readonly SimpleFilterExpr[];
}

/** Splits a filter into SQL conditions and terms left to memory. */
export function planFilter(spec: SqlListSpec, filter: FilterExpression | undefined): FilterPlan {
  const conditions: RawBuilder<boolean>[] = [];
  const residual: SimpleFilterExpr[] = [];
  const recheck: SimpleFilterExpr[] = [];
  for (const term of filter?.terms ?? []) {
    const first = term.path[0];
    const name = first?.kind === 'attr' ? first.name : undefined;
    const a = name !== undefined && term.path.length === 1 ? spec.attrs[name] : undefined;
    const cond = a ? columnCondition(term, a) : undefined;
    if (cond) {
      conditions.push(cond);
      recheck.push(term);
      continue;
    }
    const jsonAttr = name !== undefined ? spec.jsonAttrs?.[name] : undefined;
    const json = jsonAttr ? jsonTermCondition(jsonAttr, term) : undefined;
    if (json) {
      conditions.push(json.condition);
      const present = name !== undefined ? spec.presence?.[name] : undefined;
      if (present) conditions.push(present);
      if (!json.exact) {
        residual.push(term);
        recheck.push(term);
      }
      continue;
    }
    residual.push(term);
    recheck.push(term);
    const jsonColumn = name !== undefined ? spec.json?.[name] : undefined;
    const text = jsonColumn ? jsonTextCondition(term, jsonColumn) : undefined;
    if (text) conditions.push(text);
    const presence = name !== undefined ? spec.presence?.[name] : undefined;
    if (presence) conditions.push(presence);
    else if (name !== undefined && spec.attrs[name] && spec.attrs[name].type !== 'bool') {
      // any term on an absent (null) attribute never matches
      conditions.push(sql<boolean>`${spec.attrs[name].expr ?? sql.ref(spec.attrs[name].column)} is not null`);
    }
  }
  return { conditions, residual, recheck };
}

// ------------------------------------------------------------------ selectors -> columns

/** False when `attr` cannot appear in a response shaped by `sel` (so its column need not be read). */
export function attributeMayAppear(sel: AttributeSelector, attr: string, defaultExcluded: readonly string[]): boolean {
  if (sel.allFields) return true;
  if (sel.excludeFields) return !sel.excludeFields.some((p) => p.length === 1 && p[0] === attr);
  if (!defaultExcluded.includes(attr)) return true;
  return (sel.fields ?? []).some((p) => p[0] === attr);
}

// ------------------------------------------------------------------ query

const CURSOR_COLUMN = '_list_cursor_t';

function keysetCondition(spec: SqlListSpec, c: Cursor): RawBuilder<boolean> {
  const t = sql.ref(spec.orderColumn);
  const id = sql.ref('id');
  if (spec.orderDir === 'asc') return sql<boolean>`(${t}, ${id}) > (${c.t}::timestamptz, ${c.id})`;
  return sql<boolean>`(${t} < ${c.t}::timestamptz or (${t} = ${c.t}::timestamptz and ${id} > ${c.id}))`;
}

async function fetchRows(db: Kysely<Database>, spec: SqlListSpec, columns: readonly string[], conditions: readonly RawBuilder<boolean>[], after: Cursor | undefined, limit: number | undefined): Promise<Record<string, unknown>[]> {
  const all = [...conditions, ...(spec.where ?? [])];
  if (after) all.push(keysetCondition(spec, after));
  const t = sql.ref(spec.orderColumn);
  const where = all.length ? sql`where ${sql.join(all, sql` and `)}` : sql``;
  const dir = spec.orderDir === 'asc' ? sql`asc` : sql`desc`;
  const lim = limit === undefined ? sql`` : sql`limit ${limit}`;
  const cols = [...new Set([...columns, spec.orderColumn, 'id'])];
  // One JSON value per page instead of rows x columns values: decoding a result is the dominant
  // cost on PGlite (WASM), and JSON.parse of one string is the cheapest way into JS objects.
  // Timestamps arrive as ISO 8601 strings, which the row converters read like Dates.
  const q = sql<{ rows: string }>`select coalesce(json_agg(t order by t.${sql.ref(spec.orderColumn)} ${dir}, t.id asc), '[]')::text as rows from (
    select ${sql.join(cols.map((c) => sql.ref(c)))},
      to_char(${t} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ${sql.ref(CURSOR_COLUMN)}
    from ${sql.table(spec.table)} ${where}
    order by ${t} ${dir}, ${sql.ref('id')} asc ${lim}) t`;
  const row = (await q.execute(db)).rows[0];
  return row ? (JSON.parse(row.rows) as Record<string, unknown>[]) : [];
}

/** One page, as read by {@link readPage}. */
export interface SqlPage {
  readonly items: Record<string, unknown>[];
  /** Marker of the next page, when more items may follow. */
  readonly nextMarker?: string;
  /** Rows read from the database (for tests and benchmarks). */
  readonly scanned: number;
}

/** Parsed list request (all parameters validated before any data is read). */
export interface ListRequest {
  readonly filter: FilterExpression | undefined;
  readonly selector: AttributeSelector;
  readonly pageSize: number;
  readonly after: Cursor | undefined;
}

/** Validates every list query parameter (400 on any error) before data is touched. */
export function parseListRequest(spec: SqlListSpec, query: Record<string, unknown>, opts: SqlListOptions): ListRequest {
  const filter = parseFilterQuery(query);
  const selector = parseSelectorQuery(query, opts.knownAttributes ? { knownAttributes: opts.knownAttributes } : {});
  const pageSize = parseLimit(query, opts.pageSize);
  const rawMarker = query[NEXTPAGE_MARKER_PARAMETER];
  const after = rawMarker === undefined || rawMarker === null ? undefined : decodeCursor(spec.collection, rawMarker);
  return { filter, selector, pageSize, after };
}

/** Reads one page in keyset order (the representation of each item, not yet shaped by selectors). */
export async function readPage(db: Kysely<Database>, spec: SqlListSpec, r: ListRequest, defaultExcluded: readonly string[]): Promise<SqlPage> {
  const plan = planFilter(spec, r.filter);
  const needed = new Set(plan.residual.map((t) => (t.path[0]?.kind === 'attr' ? t.path[0].name : '')));
  const skip = new Set<string>();
  for (const [attr, column] of Object.entries(spec.lazy ?? {})) {
    if (!needed.has(attr) && !attributeMayAppear(r.selector, attr, defaultExcluded)) skip.add(column);
  }
  const columns = spec.columns.filter((c) => !skip.has(c));
  const fill = (row: Record<string, unknown>) => {
    for (const c of skip) row[c] = null;
    return row;
  };
  const recheck: FilterExpression | undefined = plan.recheck.length ? { terms: plan.recheck } : undefined;
  const paged = r.pageSize > 0 && Number.isFinite(r.pageSize);
  const items: Record<string, unknown>[] = [];
  const keys: Cursor[] = [];
  let after = r.after;
  let scanned = 0;
  const batch = paged ? (plan.residual.length || spec.accept ? Math.max(r.pageSize + 1, 500) : r.pageSize + 1) : undefined;
  for (;;) {
    const rows = await fetchRows(db, spec, columns, plan.conditions, after, batch);
    scanned += rows.length;
    for (const row of rows) {
      const key = { t: row[CURSOR_COLUMN] as string, id: row.id as string };
      const item = spec.toApi(fill(row));
      if (recheck && !matchesFilter(item, recheck)) continue;
      if (spec.accept && !spec.accept(item)) continue;
      items.push(item);
      keys.push(key);
      if (paged && items.length > r.pageSize) break;
    }
    if (!paged || items.length > r.pageSize || rows.length < (batch as number)) break;
    const last = rows[rows.length - 1] as Record<string, unknown>;
    after = { t: last[CURSOR_COLUMN] as string, id: last.id as string };
  }
  if (!paged || items.length <= r.pageSize) return { items, scanned };
  items.length = r.pageSize;
  return { items, nextMarker: encodeCursor(spec.collection, keys[r.pageSize - 1] as Cursor), scanned };
}

/** The `Link: <...>; rel="next"` header value: every query parameter of the request, the marker replaced. */
export function linkFor(baseUrl: string, query: Record<string, unknown>, marker: string): string {
  const parts: string[] = [];
  for (const [key, raw] of Object.entries(query)) {
    if (key === NEXTPAGE_MARKER_PARAMETER || raw === undefined || raw === null) continue;
    const values = Array.isArray(raw) ? raw.map(String) : [String(raw)];
    for (const v of values) parts.push(v === '' ? encodeURIComponent(key) : `${encodeURIComponent(key)}=${encodeURIComponent(v)}`);
  }
  parts.push(`${NEXTPAGE_MARKER_PARAMETER}=${marker}`);
  const sep = baseUrl.includes('?') ? '&' : '?';
  return `<${baseUrl}${sep}${parts.join('&')}>; rel="next"`;
}

/**
 * The SQL counterpart of `sendList`: validates the query, reads one page from the database, sets
 * the `Link` header and returns the items shaped by the attribute selector.
 */
export async function sendSqlList(req: FastifyRequest, reply: FastifyReply, db: Kysely<Database>, spec: SqlListSpec, opts: SqlListOptions): Promise<Record<string, unknown>[]> {
  const query = (req.query ?? {}) as Record<string, unknown>;
  const r = parseListRequest(spec, query, opts);
  const page = await readPage(db, spec, r, opts.defaultExcluded);
  if (page.nextMarker) reply.header('link', linkFor(opts.baseUrl, query, page.nextMarker));
  return page.items.map((i) => applyAttributeSelector(i, r.selector, opts.defaultExcluded));
}

export { TRUE as SQL_TRUE };
