/**
 * Nested-JSON filter terms in SQL (src/api/sol/json-filter.ts) against the in-memory oracle
 * (`matchesFilter`, src/api/sol/filter.ts), on PGlite and on PostgreSQL:
 *
 * - a property test: random JSON documents (nested objects and arrays, numbers, booleans, nulls,
 *   date-time strings canonical or not, strings that look like numbers, quotes, commas, regex
 *   characters, non-ASCII) and random terms (every operator, 1-3 step paths, `@key`, 1-3 values)
 *   written as filter strings and parsed. For every term the SQL condition alone is compared with
 *   the oracle: equal when the translation says it is exact, a superset otherwise; most terms must
 *   be exact and select some but not all documents (so the comparison means something);
 * - the same terms through the list pipeline (`readPage`: SQL + re-check of inexact terms + paging)
 *   give exactly the oracle's result;
 * - fixed cases for the documented edges (absent vs. empty array under the negated operators,
 *   @key, values with U+E000+ characters, numbers beyond a double, non-canonical date-times).
 *
 * The generator is seeded: a failure names the seed and the term.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { parseSelectorQuery } from '../../../src/api/sol/attribute-selector.ts';
import { type FilterExpression, FILTER_OPERATORS, matchesFilter, parseFilter } from '../../../src/api/sol/filter.ts';
import { type JsonAttr, jsonTermCondition } from '../../../src/api/sol/json-filter.ts';
import { type SqlListSpec, readPage } from '../../../src/api/sol/sql-list.ts';
import { type TestStore, describeStores } from '../../helpers/db.ts';
import { rngOf } from '../../helpers/prng.ts';

const SEED = Number(process.env.VNFM_TEST_SEED ?? 20261126);


const KEYS = ['a', 'b', 'c', 'x y', 'k/1', 'n,m', 'é'];
const STRINGS = [
  '',
  'a',
  'b',
  'B',
  'abc',
  'x',
  '5',
  '10',
  '1e2',
  '-3.5',
  'true',
  'false',
  "it's",
  'a,b',
  '(x)',
  'a.b*',
  '[0-9]',
  '****',
  'héllo',
  'zeta',
  '\u00e9t\u00e9',
  '\u{1F600}',
  '2024-05-01T10:00:00.000Z',
  '2024-05-01T10:00:00.500Z',
  '2024-04-30T23:59:59.999Z',
  '2023-12-31T00:00:00.000Z',
];
/** Date-times that are not in canonical form: uncertain for SQL, decided by the re-check. */
const ODD_DATES = ['2024-05-01T12:00:00+02:00', '2024-05-01T10:00:00Z', '2024-02-29T00:00:00.000Z', '2024-05-01 10:00:00.000Z'];
const NUMBERS = [0, 1, 2, 5, 10, 100, -3.5, 0.1, 1e21, 2.5];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)] as T;
}

function genValue(r: () => number, depth: number, odd: boolean): unknown {
  const k = r();
  if (depth > 0 && k < 0.22) {
    const o: Record<string, unknown> = {};
    const n = Math.floor(r() * 4);
    for (let i = 0; i < n; i++) o[pick(r, KEYS)] = genValue(r, depth - 1, odd);
    return o;
  }
  if (depth > 0 && k < 0.4) return Array.from({ length: Math.floor(r() * 4) }, () => genValue(r, depth - 1, odd));
  if (k < 0.47) return null;
  if (k < 0.55) return r() < 0.5;
  if (k < 0.7) return pick(r, NUMBERS);
  if (odd && k < 0.75) return pick(r, ODD_DATES);
  return pick(r, STRINGS);
}

function genDoc(r: () => number, odd: boolean): unknown {
  if (r() < 0.08) return null;
  const o: Record<string, unknown> = {};
  const n = 1 + Math.floor(r() * 4);
  for (let i = 0; i < n; i++) o[pick(r, KEYS)] = genValue(r, 3, odd);
  return o;
}

/** An attribute name as written in a filter (SOL013 escapes). */
function escapeName(n: string): string {
  return n.replace(/~/g, '~0').replace(/\//g, '~1').replace(/,/g, '~a').replace(/@/g, '~b');
}

function quote(v: string): string {
  return /^[^,()';]+$/.test(v) && v.trim() === v ? v : `'${v.replace(/'/g, "''")}'`;
}

function genTerm(r: () => number, odd: boolean): string {
  const op = pick(r, FILTER_OPERATORS);
  const steps = 1 + Math.floor(r() * 3);
  const path = ['doc'];
  for (let i = 0; i < steps; i++) path.push(r() < 0.12 ? '@key' : escapeName(pick(r, KEYS)));
  const single = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'].includes(op);
  const n = single ? 1 : 1 + Math.floor(r() * 3);
  const pool = [...STRINGS.filter((s) => s !== ''), ...NUMBERS.map(String), ...KEYS, ...(odd ? ODD_DATES : [])];
  const values = Array.from({ length: n }, () => quote(pick(r, pool)));
  return `(${op},${path.join('/')},${values.join(',')})`;
}

const TABLE = 'json_filter_probe';
const ATTR: JsonAttr = { expr: sql.ref('doc') };
const SPEC: SqlListSpec = {
  collection: 'test/json_filter_probe',
  table: TABLE,
  orderColumn: 'created_at',
  orderDir: 'asc',
  columns: ['id', 'doc', 'created_at'],
  attrs: { id: { column: 'id', type: 'text' } },
  jsonAttrs: { doc: ATTR },
  toApi: (row) => (row.doc === null || row.doc === undefined ? { id: row.id } : { id: row.id, doc: row.doc }),
};

interface Doc {
  id: string;
  doc: unknown;
}

async function load(store: TestStore, docs: readonly Doc[]): Promise<void> {
  await sql`create table ${sql.table(TABLE)} (id text primary key, doc jsonb, created_at timestamptz not null default now())`.execute(store.db);
  for (let i = 0; i < docs.length; i += 100) {
    const chunk = docs.slice(i, i + 100);
    await sql`insert into ${sql.table(TABLE)} (id, doc, created_at) values ${sql.join(
      chunk.map((d, j) => sql`(${d.id}, ${d.doc === null ? null : JSON.stringify(d.doc)}::jsonb, ${new Date(Date.UTC(2024, 0, 1) + (i + j) * 1000).toISOString()}::timestamptz)`),
    )}`.execute(store.db);
  }
}

function oracleIds(docs: readonly Doc[], f: FilterExpression): string[] {
  return docs.filter((d) => matchesFilter(SPEC.toApi({ id: d.id, doc: d.doc }), f)).map((d) => d.id);
}

async function sqlIds(store: TestStore, f: FilterExpression): Promise<{ ids: string[]; exact: boolean } | undefined> {
  const term = f.terms[0];
  if (!term) throw new Error('no term');
  const t = jsonTermCondition(ATTR, term);
  if (!t) return undefined;
  const rows = await sql<{ id: string }>`select id from ${sql.table(TABLE)} where ${t.condition} order by created_at, id`.execute(store.db);
  return { ids: rows.rows.map((x) => x.id), exact: t.exact };
}

async function pipelineIds(store: TestStore, f: FilterExpression, pageSize: number): Promise<string[]> {
  const out: string[] = [];
  let after: { t: string; id: string } | undefined;
  const selector = parseSelectorQuery({});
  for (let guard = 0; guard < 1000; guard++) {
    const page = await readPage(store.db, SPEC, { filter: f, selector, pageSize, after }, []);
    out.push(...page.items.map((x) => x.id as string));
    if (!page.nextMarker) return out;
    const [payload] = page.nextMarker.split('.');
    const [t, id] = JSON.parse(Buffer.from(payload as string, 'base64url').toString('utf8')) as [string, string];
    after = { t, id };
  }
  throw new Error('paging did not end');
}

function docsFor(seed: number, n: number, odd: boolean): Doc[] {
  const r = rngOf(seed);
  return Array.from({ length: n }, (_, i) => ({ id: `d${String(i).padStart(4, '0')}`, doc: genDoc(r, odd) }));
}

await describeStores('nested-JSON filters in SQL vs. the in-memory oracle', (env) => {
  let store: TestStore;
  const docs = docsFor(SEED, 240, false);
  before(async () => {
    store = await env.open();
    await load(store, docs);
  });
  after(async () => {
    await store?.close();
  });

  it(`random documents and terms (seed ${SEED}): exact translations equal the oracle, the others are supersets`, async (t) => {
    const r = rngOf(SEED + 1);
    let exact = 0;
    let selective = 0;
    let translated = 0;
    const N = 500;
    for (let i = 0; i < N; i++) {
      const text = genTerm(r, false);
      const f = parseFilter(text);
      const want = oracleIds(docs, f);
      if (want.length > 0 && want.length < docs.length) selective++;
      const got = await sqlIds(store, f);
      if (!got) continue;
      translated++;
      if (got.exact) {
        exact++;
        assert.deepEqual(got.ids, want, `seed ${SEED} term ${text}: SQL differs from the oracle`);
      } else {
        const g = new Set(got.ids);
        for (const id of want) assert.ok(g.has(id), `seed ${SEED} term ${text}: SQL lost ${id}`);
      }
    }
    t.diagnostic(`${N} terms: ${translated} translated, ${exact} exact, ${selective} selective`);
    assert.ok(translated >= N * 0.9, `most terms are translated (${translated}/${N})`);
    assert.ok(exact >= N * 0.8, `most terms are exact in SQL (${exact}/${N})`);
    assert.ok(selective >= N * 0.3, `enough terms select some but not all documents (${selective}/${N})`);
  });

  it('through the list pipeline (SQL, re-check, paging) every term and conjunction gives the oracle, in order', async () => {
    const r = rngOf(SEED + 2);
    for (let i = 0; i < 120; i++) {
      const text = i % 3 === 0 ? `${genTerm(r, false)};${genTerm(r, false)}` : genTerm(r, false);
      const f = parseFilter(text);
      const want = oracleIds(docs, f);
      for (const size of [7, 1000]) assert.deepEqual(await pipelineIds(store, f, size), want, `seed ${SEED} filter ${text} pageSize ${size}`);
    }
  });
});

await describeStores('nested-JSON filters in SQL: non-canonical date-times and edge cases', (env) => {
  let store: TestStore;
  const docs: Doc[] = [
    ...docsFor(SEED + 10, 120, true),
    { id: 'e-absent', doc: { other: 1 } },
    { id: 'e-null', doc: { a: null } },
    { id: 'e-empty', doc: { a: [] } },
    { id: 'e-nulls', doc: { a: [null, [null]] } },
    { id: 'e-deep', doc: { a: [[[['x']]]] } },
    { id: 'e-objs', doc: { a: [{ b: 'x' }, { b: ['y', { c: 'z' }] }, 'b'] } },
    { id: 'e-keys', doc: { a: { '': 1, 'k/1': 2, '@x': 3 } } },
    { id: 'e-emptyobj', doc: { a: {} } },
    { id: 'e-high', doc: { a: ['\ue000', '\u{1F600}', 'z'] } },
    { id: 'e-num', doc: { a: [1.7976931348623157e308, -5, 0.30000000000000004] } },
    { id: 'e-dates', doc: { a: ['2024-05-01T10:00:00.000Z', '2024-05-01T12:00:00+02:00', '2024-02-30T00:00:00.000Z', '2024-05-01T10:00:60Z'] } },
  ];
  before(async () => {
    store = await env.open();
    await load(store, docs);
  });
  after(async () => {
    await store?.close();
  });

  const FIXED = [
    '(neq,doc/a,x)',
    '(nin,doc/a,x,y)',
    '(ncont,doc/a,q)',
    '(eq,doc/a,x)',
    '(eq,doc/a/b,y)',
    '(neq,doc/a/b,y)',
    '(eq,doc/a/b/c,z)',
    '(eq,doc/a/@key,k/1)',
    "(eq,doc/a/@key,'')",
    '(neq,doc/a/@key,zz)',
    '(eq,doc/a/@key,~bx)',
    '(eq,doc/@key,other)',
    '(gt,doc/a,\ue000)',
    '(lt,doc/a,\u{1F600})',
    '(gt,doc/a,y)',
    '(eq,doc/a,1e400)',
    '(lt,doc/a,1e400)',
    '(gt,doc/a,-1e400)',
    '(eq,doc/a,0.30000000000000004)',
    '(eq,doc/a,0.3)',
    '(gte,doc/a,1.7976931348623157e308)',
    '(eq,doc/a,2024-05-01T10:00:00Z)',
    '(eq,doc/a,2024-05-01T11:00:00+01:00)',
    '(gt,doc/a,2024-05-01T09:00:00Z)',
    '(lt,doc/a,2024-03-01T00:00:00.000Z)',
    '(lte,doc/a,2024-03-01T00:00:00.000Z)',
    '(neq,doc/a,2024-05-01T10:00:00Z)',
    '(eq,doc,1)',
    '(neq,doc,1)',
    '(neq,doc/other,1)',
  ];

  it('fixed edge cases: the list pipeline gives the oracle; exact translations equal it on their own', async () => {
    for (const text of FIXED) {
      const f = parseFilter(text);
      const want = oracleIds(docs, f);
      assert.deepEqual(await pipelineIds(store, f, 1000), want, `filter ${text}`);
      const got = await sqlIds(store, f);
      if (got?.exact) assert.deepEqual(got.ids, want, `filter ${text}: exact SQL differs from the oracle`);
      else if (got) for (const id of want) assert.ok(got.ids.includes(id), `filter ${text}: SQL lost ${id}`);
    }
  });

  it('values with U+E000+ characters are left to memory for ordering; non-canonical date-times make a term inexact', () => {
    assert.equal(jsonTermCondition(ATTR, parseFilter('(gt,doc/a,\ue000)').terms[0] as never), undefined);
    assert.equal(jsonTermCondition(ATTR, parseFilter('(eq,doc/a,x)').terms[0] as never)?.exact, true);
    assert.equal(jsonTermCondition(ATTR, parseFilter('(eq,doc/a,2024-05-01T10:00:00Z)').terms[0] as never)?.exact, false);
  });

  it(`random documents with non-canonical date-times (seed ${SEED}): the list pipeline gives the oracle`, async () => {
    const r = rngOf(SEED + 3);
    for (let i = 0; i < 150; i++) {
      const text = genTerm(r, true);
      const f = parseFilter(text);
      const want = oracleIds(docs, f);
      assert.deepEqual(await pipelineIds(store, f, 1000), want, `seed ${SEED} filter ${text}`);
      const got = await sqlIds(store, f);
      if (got?.exact) assert.deepEqual(got.ids, want, `seed ${SEED} filter ${text}: exact SQL differs`);
    }
  });
});
