/**
 * The VIM list in SQL (`/v1.0/vims`, src/api/vims/routes.ts `vimListSpec`):
 *
 * - on PGlite and PostgreSQL, SOL013 `filter` terms (plain attributes, `tenant_id` / `auth_url`
 *   from the config, `extra/...` nested), the legacy equality parameters (case-insensitive,
 *   repeatable = any of, non-ASCII values) and their combinations give the in-memory oracle's
 *   result (every row as `VimRegistry.toApi` shows it, `matchesFilter`, the legacy rule), in order, with
 *   several page sizes (keyset paging);
 * - over HTTP: without `limit` every VIM (what the Tacker clients expect); with `limit` one page and
 *   a `Link` to the next carrying the other parameters; a tampered marker is 400; `fields` still
 *   projects; the secrets are never read for a list.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { parseSelectorQuery } from '../../src/api/sol/attribute-selector.ts';
import { matchesFilter, parseFilter } from '../../src/api/sol/filter.ts';
import { decodeCursor, readPage } from '../../src/api/sol/sql-list.ts';
import { vimListSpec } from '../../src/api/vims/routes.ts';
import { builtinVimPlugins } from '../../src/main/compose.ts';
import { VimRegistry } from '../../src/vims/vim-registry.ts';
import { type TestStore, describeStores } from '../helpers/db.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';

/** The list's representation of a row (it reads no secret and no database). */
const VIMS = new VimRegistry(undefined as never, undefined as never, 'project', undefined, builtinVimPlugins());

const T0 = Date.parse('2024-05-01T00:00:00Z');
const NAMES = ['os-1', 'OS-2', 'k8s-a', 'K8S-B', 'édge', 'Édge-2', 'lab', 'Lab', 'x,y', 'zeta', 'ｋ-wide', 'kelvin-\u212a'];

async function seed(store: TestStore): Promise<void> {
  for (let n = 0; n < NAMES.length; n++) {
    const type = n % 3 === 0 ? 'kubernetes' : 'openstack';
    const config = {
      authUrl: n % 2 ? `http://10.0.0.${n}:5000/v3` : `https://k8s-${n}:6443`,
      ...(n % 4 === 3 ? {} : { projectName: n % 2 ? 'nfv' : 'Default' }),
      ...(n % 5 === 0 ? { extra: { zone: n % 2 ? 'a' : 'b', tags: ['x', `t${n % 3}`], n } } : {}),
    };
    await store.db
      .insertInto('vim')
      .values({
        id: `vim-${String(n).padStart(2, '0')}`,
        name: NAMES[n] as string,
        type,
        description: n % 2 ? 'lab cloud' : '',
        is_default: n < 2,
        config: JSON.stringify(config),
        // never opened by a list: not a valid sealed value on purpose
        secret: 'not-a-sealed-secret',
        status: n % 4 ? 'REACHABLE' : 'UNREACHABLE',
        created_at: new Date(T0 + Math.floor(n / 2) * 1000).toISOString(),
        updated_at: new Date(T0 + n * 60_000).toISOString(),
      } as never)
      .execute();
  }
}

type Query = Record<string, string | string[]>;

/** The oracle: every row as shown, then the SOL filter and the legacy parameters in memory. */
async function oracle(store: TestStore, query: Query): Promise<string[]> {
  const rows = await sql<Record<string, unknown>>`select id, name, type, description, is_default, config, status, created_at, updated_at from vim order by created_at, id`.execute(store.db);
  const spec = vimListSpec(VIMS, {});
  const f = typeof query.filter === 'string' ? parseFilter(query.filter) : undefined;
  const legacy = ['id', 'name', 'type', 'status', 'tenant_id', 'is_default', 'description', 'auth_url'];
  return rows.rows
    .map((r) => spec.toApi(r))
    .filter((v) => matchesFilter(v, f))
    .filter((v) =>
      legacy.every((attr) => {
        const want = query[attr] === undefined ? [] : ([] as string[]).concat(query[attr] as string | string[]);
        return want.length === 0 || want.some((w) => String(v[attr]).toLowerCase() === w.toLowerCase() || (attr !== 'is_default' && String(v[attr]) === w));
      }),
    )
    .map((v) => v.id as string);
}

async function walk(store: TestStore, query: Query, pageSize: number): Promise<string[]> {
  const spec = vimListSpec(VIMS, query);
  const filter = typeof query.filter === 'string' ? parseFilter(query.filter) : undefined;
  const out: string[] = [];
  let marker: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const page = await readPage(store.db, spec, { filter, selector: parseSelectorQuery({}), pageSize, after: marker ? decodeCursor(spec.collection, marker) : undefined }, []);
    out.push(...page.items.map((v) => v.id as string));
    if (!page.nextMarker) return out;
    assert.equal(page.items.length, pageSize, 'only the last page is short');
    marker = page.nextMarker;
  }
  throw new Error('paging did not end');
}

const QUERIES: Query[] = [
  {},
  { filter: '(eq,type,kubernetes)' },
  { filter: '(neq,type,kubernetes)' },
  { filter: '(eq,is_default,true)' },
  { filter: '(cont,name,dge)' },
  { filter: '(gt,name,k)' },
  { filter: '(eq,tenant_id,nfv)' },
  { filter: "(eq,tenant_id,'')" },
  { filter: '(cont,auth_url,:5000)' },
  { filter: '(eq,status,UNREACHABLE);(eq,type,kubernetes)' },
  { filter: '(gt,created_at,2024-05-01T00:00:02Z)' },
  { filter: '(lte,updated_at,2024-05-01T00:05:00.000Z)' },
  { filter: '(eq,extra/zone,a)' },
  { filter: '(neq,extra/zone,a)' },
  { filter: '(eq,extra/tags,t1)' },
  { filter: '(gte,extra/n,5)' },
  { filter: '(eq,extra/@key,zone)' },
  { filter: '(eq,vim_project/name,nfv)' },
  { filter: '(eq,auth_cred/password,***)' },
  { name: 'os-1' },
  { name: 'OS-1' },
  { name: ['lab', 'zeta'] },
  { name: 'ÉDGE' },
  { name: 'édge-2' },
  { name: 'Ｋ-WIDE' },
  { name: 'KELVIN-K' },
  { type: 'KUBERNETES', is_default: 'TRUE' },
  { is_default: 'false', tenant_id: 'NFV' },
  { is_default: 'yes' },
  { id: ['vim-03', 'vim-07'], filter: '(eq,type,openstack)' },
  { description: 'LAB CLOUD', status: 'reachable' },
  { auth_url: 'HTTPS://K8S-0:6443' },
];

await describeStores('VIM list in SQL', (env) => {
  let store: TestStore;
  before(async () => {
    store = await env.open();
    await seed(store);
  });
  after(async () => {
    await store?.close();
  });

  it('SOL filters and legacy parameters give the in-memory result, in order, with every page size', async () => {
    let selective = 0;
    for (const q of QUERIES) {
      const want = await oracle(store, q);
      if (want.length > 0 && want.length < NAMES.length) selective++;
      for (const size of [1, 3, 0]) assert.deepEqual(await walk(store, q, size), want, `${JSON.stringify(q)} pageSize ${size}`);
    }
    assert.ok(selective >= QUERIES.length * 0.6, `most queries select some but not all VIMs (${selective}/${QUERIES.length})`);
  });
});

describe('VIM list over HTTP', () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm();
    for (let i = 0; i < 7; i++) {
      const r = await vnfm.app.inject({
        method: 'POST',
        url: '/v1.0/vims',
        payload: { vim: { name: `vim-${i}`, type: i % 2 ? 'kubernetes' : 'openstack', auth_url: `http://127.0.0.1:${5000 + i}/v3`, auth_cred: i % 2 ? { bearer_token: 'tok-secret' } : { username: 'u', password: 'pw-secret' }, vim_project: { name: 'nfv' } } },
      });
      assert.equal(r.statusCode, 201, r.body);
    }
  });
  after(async () => {
    await vnfm?.close();
  });

  it('without limit: every VIM; with limit: pages linked by a keyset marker carrying the other parameters', async () => {
    const all = (await vnfm.app.inject({ method: 'GET', url: '/v1.0/vims' })).json().vims as Record<string, unknown>[];
    assert.equal(all.length, 7);
    const seen: string[] = [];
    let url: string | undefined = '/v1.0/vims.json?limit=2&type=openstack&fields=name';
    let pages = 0;
    while (url) {
      const r: Awaited<ReturnType<TestVnfm['app']['inject']>> = await vnfm.app.inject({ method: 'GET', url });
      assert.equal(r.statusCode, 200, r.body);
      const vims = r.json().vims as Record<string, unknown>[];
      for (const v of vims) assert.deepEqual(Object.keys(v).sort(), ['id', 'name']);
      seen.push(...vims.map((v) => v.name as string));
      pages++;
      const link = r.headers.link as string | undefined;
      if (link) {
        assert.match(link, /type=openstack/);
        assert.match(link, /fields=name/);
        assert.match(link, /rel="next"/);
        const next = new URL((/^<([^>]+)>/.exec(link) as RegExpExecArray)[1] as string);
        url = next.pathname + next.search;
      } else url = undefined;
    }
    assert.deepEqual(seen, ['vim-0', 'vim-2', 'vim-4', 'vim-6']);
    assert.equal(pages, 2);
    const filtered = (await vnfm.app.inject({ method: 'GET', url: `/v1.0/vims?filter=${encodeURIComponent('(eq,type,kubernetes);(cont,auth_url,500)')}` })).json().vims as Record<string, unknown>[];
    assert.deepEqual(
      filtered.map((v) => v.name),
      ['vim-1', 'vim-3', 'vim-5'],
    );
    const bad = await vnfm.app.inject({ method: 'GET', url: '/v1.0/vims?limit=2&nextpage_opaque_marker=abc.0123456789abcdef' });
    assert.equal(bad.statusCode, 400);
    assert.equal((await vnfm.app.inject({ method: 'GET', url: '/v1.0/vims?limit=0' })).statusCode, 400);
    assert.equal((await vnfm.app.inject({ method: 'GET', url: '/v1.0/vims?filter=(eq,type' })).statusCode, 400);
    const body = JSON.stringify(all);
    assert.ok(!body.includes('pw-secret') && !body.includes('tok-secret'));
  });
});
