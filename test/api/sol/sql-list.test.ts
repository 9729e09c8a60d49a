/**
 * Lists in SQL (src/api/sol/sql-list.ts) against the in-memory oracle: every filter is run both
 * ways (SQL pushdown + keyset paging vs. loading everything and `matchesFilter`) over the same
 * rows, with several page sizes, on PGlite and on PostgreSQL. Also: the cursor is stable across
 * inserts and deletes, opaque, bound to its collection, and a tampered one is a 400; the `limit`
 * rule.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { parseFilter, matchesFilter } from '../../../src/api/sol/filter.ts';
import { SolQueryError } from '../../../src/api/sol/sol-query-error.ts';
import { type SqlListSpec, decodeCursor, encodeCursor, parseLimit, parseListRequest, readPage } from '../../../src/api/sol/sql-list.ts';
import { INSTANCE_DEFAULT_EXCLUDED, OPOCC_DEFAULT_EXCLUDED } from '../../../src/api/vnflcm/converters.ts';
import { instanceListSpec, opOccListSpec } from '../../../src/api/vnflcm/list-specs.ts';
import { sql } from 'kysely';
import { subscriptionListSpec } from '../../../src/api/vnflcm/subscription-routes.ts';
import { packageListSpec } from '../../../src/api/vnfpkgm/routes.ts';
import { batchSpec, notificationSpec } from '../../../src/api/autoheal/ledger-routes.ts';
import { json } from '../../../src/store/db.ts';
import { type TestStore, describeStores } from '../../helpers/db.ts';

const URL_BASE = 'http://127.0.0.1:9890';
const T0 = Date.parse('2024-05-01T00:00:00Z');

const NAMES: (string | null)[] = ['sel-0', 'sel-1', 'sel-2', 'sel-3', null, 'b', '10', '9', "it's a,b (test)", '2024-05-01T10:00:00Z', 'héllo', 'sel-10', 'zeta', 'B', ''];

async function seed(store: TestStore): Promise<{ instanceIds: string[]; opIds: string[] }> {
  const db = store.db;
  await db
    .insertInto('vnf_package')
    .values({ id: 'pkg-1', onboarding_state: 'ONBOARDED', operational_state: 'ENABLED', usage_state: 'IN_USE', checksum: json(null), user_defined_data: json({}), vnfd: json(null) })
    .execute();
  const instanceIds: string[] = [];
  for (let n = 0; n < 36; n++) {
    const id = `inst-${String(n).padStart(3, '0')}-${(n * 7919) % 97}`;
    instanceIds.push(id);
    const instantiated = n % 3 === 0;
    // every 5th pair shares created_at (ties are broken by id)
    const created = new Date(T0 + Math.floor(n / 2) * (n % 5 === 0 ? 1 : 1000) * 1000 + (n % 7) * 0.25).toISOString();
    await db
      .insertInto('vnf_instance')
      .values({
        id,
        vnf_instance_name: NAMES[n % NAMES.length] ?? null,
        vnf_instance_description: n % 4 === 0 ? null : `d${n % 3}`,
        vnfd_id: n % 2 ? 'vnfd-a' : 'vnfd-b',
        vnf_pkg_id: 'pkg-1',
        vnf_provider: 'Company',
        vnf_product_name: n % 2 ? 'Sample VNF' : 'x-product',
        vnf_software_version: '1.0',
        vnfd_version: '1.0',
        instantiation_state: instantiated ? 'INSTANTIATED' : 'NOT_INSTANTIATED',
        vnf_configurable_properties: json(n % 5 === 0 ? { isAutoscaleEnabled: n % 2 === 0 } : null),
        vim_connection_info: json(n % 4 === 1 ? { vim1: { vimId: `vim-${n % 3}`, vimType: n % 8 === 1 ? 'kubernetes' : 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } } : {}),
        instantiated_vnf_info: json(
          instantiated || n % 6 === 1
            ? { flavourId: 'simple', vnfState: n % 2 ? 'STOPPED' : 'STARTED', vnfcResourceInfo: [{ id: `c${n}`, vduId: `VDU${n % 2}`, computeResource: { resourceId: `srv-${n}` } }], extCpInfo: [] }
            : null,
        ),
        metadata: json(n % 6 === 5 ? null : { i: n % 10, tag: n % 2 ? ['a', 'b'] : [], label: n % 3 ? 'x' : 'y', when: '2024-05-01T10:00:00Z' }),
        extensions: json(n % 9 === 0 ? { e: String(n) } : null),
        created_api: n % 2 ? 'v1' : 'v2',
        created_at: created,
        rev: 0,
      })
      .execute();
  }
  const STATES = ['COMPLETED', 'FAILED_TEMP', 'PROCESSING', 'FAILED', 'ROLLED_BACK', 'STARTING'];
  const OPS = ['INSTANTIATE', 'HEAL', 'SCALE', 'TERMINATE', 'MODIFY_INFO', 'CHANGE_EXT_CONN'];
  const opIds: string[] = [];
  let active = 0;
  for (let n = 0; n < 40; n++) {
    const id = `op-${String(n).padStart(3, '0')}`;
    opIds.push(id);
    const state = STATES[n % STATES.length] as string;
    // at most one active op per instance (partial unique index): active ones get their own instance
    const instanceId = ['FAILED_TEMP', 'PROCESSING', 'STARTING'].includes(state) ? (instanceIds[active++] as string) : (instanceIds[(n * 5) % 3] as string);
    const start = new Date(T0 + 86_400_000 + (n % 8) * 3_600_000 * 11).toISOString().replace('Z', n % 5 === 0 ? '500Z' : 'Z').replace('.000500Z', '.000500Z');
    await db
      .insertInto('op_occ')
      .values({
        id,
        vnf_instance_id: instanceId,
        operation: OPS[n % OPS.length] as string,
        operation_state: state,
        state_entered_time: new Date(T0 + n * 1_000).toISOString(),
        start_time: start,
        is_automatic_invocation: n % 3 === 0,
        is_cancel_pending: false,
        cancel_mode: n % 7 === 0 ? 'GRACEFUL' : null,
        operation_params: json({ additionalParams: { x: n % 4 } }),
        error: json(state === 'FAILED_TEMP' || state === 'FAILED' ? { status: 500, detail: `boom ${n}` } : null),
        resource_changes: json(n % 2 ? { affectedVnfcs: [{ id: `c${n}`, changeType: n % 4 === 1 ? 'ADDED' : 'MODIFIED' }], affectedVirtualLinks: [{ id: 'vl', vnfVirtualLinkDescId: 'VL1', changeType: 'ADDED' }] } : null),
        changed_info: json(null),
        grant_id: n % 4 === 0 ? `g${n % 8}` : null,
        grant_request: json(null),
        grant: json(null),
        ctx: json({ big: 'x'.repeat(100) }),
        pending: null,
        attempts: 0,
        api_version: n % 2 ? 'v1' : 'v2',
        created_at: new Date(T0 + Math.floor(n / 3) * 1000).toISOString(),
      })
      .execute();
  }
  return { instanceIds, opIds };
}

/** The oracle: today's semantics (load everything in order, filter in memory). */
async function oracle(store: TestStore, spec: SqlListSpec, filter: string | undefined): Promise<string[]> {
  const rows = await store.db
    .selectFrom(spec.table as 'vnf_instance')
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const f = filter ? parseFilter(filter) : undefined;
  return rows.map((r) => spec.toApi(r as unknown as Record<string, unknown>)).filter((x) => matchesFilter(x, f)).map((x) => x.id as string);
}

/** Walks every page through the SQL path. */
async function walk(store: TestStore, spec: SqlListSpec, filter: string | undefined, pageSize: number, excluded: readonly string[]): Promise<string[][]> {
  const pages: string[][] = [];
  let marker: string | undefined;
  for (let guard = 0; guard < 200; guard++) {
    const query: Record<string, unknown> = {};
    if (filter) query.filter = filter;
    if (marker) query.nextpage_opaque_marker = marker;
    const r = parseListRequest(spec, query, { defaultExcluded: excluded, pageSize, baseUrl: URL_BASE });
    const page = await readPage(store.db, spec, r, excluded);
    pages.push(page.items.map((x) => x.id as string));
    if (!page.nextMarker) return pages;
    assert.ok(page.items.length === pageSize, 'only the last page is short');
    marker = page.nextMarker;
  }
  throw new Error('paging did not terminate');
}

const INSTANCE_FILTERS = [
  undefined,
  '(eq,vnfInstanceName,sel-3)',
  '(neq,vnfInstanceName,sel-3)',
  '(in,vnfInstanceName,sel-1,b,zeta)',
  '(nin,vnfInstanceName,sel-1,b,zeta)',
  '(gt,vnfInstanceName,sel-2)',
  '(lte,vnfInstanceName,b)',
  '(lt,vnfInstanceName,9)',
  '(gte,vnfInstanceName,héllo)',
  '(cont,vnfInstanceName,el)',
  '(ncont,vnfInstanceName,el,z)',
  "(eq,vnfInstanceName,'it''s a,b (test)')",
  "(eq,vnfInstanceName,'')",
  '(eq,vnfInstanceName,2024-05-01T10:00:00.000Z)',
  '(eq,vnfInstanceName,2024-05-01T12:00:00+02:00)',
  '(gt,vnfInstanceName,2024-05-01T09:00:00Z)',
  '(neq,vnfInstanceName,2024-05-01T10:00:00.000Z)',
  '(eq,vnfInstanceDescription,d1)',
  '(neq,vnfInstanceDescription,d1)',
  '(ncont,vnfInstanceDescription,1)',
  '(eq,instantiationState,INSTANTIATED)',
  '(eq,instantiationState,INSTANTIATED);(in,vnfdId,vnfd-a)',
  '(cont,vnfProductName,Sample);(neq,vnfInstanceName,sel-0)',
  '(eq,vnfPkgId,pkg-1)',
  '(neq,vnfPkgId,x)',
  '(eq,id,inst-007-46)',
  '(gt,id,inst-030)',
  '(eq,metadata/i,2)',
  '(gt,metadata/i,5)',
  '(neq,metadata/i,2)',
  '(eq,metadata/i,2.0)',
  '(eq,metadata/tag,b)',
  '(nin,metadata/tag,a)',
  '(eq,metadata/@key,label)',
  '(eq,metadata/when,2024-05-01T10:00:00.000Z)',
  '(eq,metadata,1)',
  '(eq,metadata/label,x)',
  '(in,metadata/label,y,zz)',
  '(cont,metadata/label,x)',
  "(eq,metadata/label,'a\"b')",
  '(eq,metadata/when,2024-05-01T12:00:00+02:00)',
  '(in,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU1,VDU9)',
  '(eq,instantiatedVnfInfo/flavourId,simple)',
  '(eq,vimConnectionInfo/id,vim1)',
  '(cont,vimConnectionInfo/vimId,vim-1)',
  '(eq,extensions/e,9)',
  '(eq,instantiatedVnfInfo/vnfState,STARTED)',
  '(neq,instantiatedVnfInfo/vnfState,STARTED)',
  '(eq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId,srv-9)',
  '(eq,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU1);(gt,metadata/i,2)',
  '(eq,vimConnectionInfo/vimType,kubernetes)',
  '(neq,vimConnectionInfo/vimType,kubernetes)',
  '(eq,vimConnectionInfo/@key,vim1)',
  '(eq,vimConnectionInfo/vim1/vimType,kubernetes)',
  '(eq,vnfConfigurableProperties/isAutoscaleEnabled,true)',
  '(ncont,extensions/e,1)',
  '(eq,_links/instantiate/href,x)',
  '(neq,_links/self/href,x)',
  '(eq,missing,1)',
  '(neq,missing,1)',
];

const OPOCC_FILTERS = [
  undefined,
  '(eq,operationState,FAILED_TEMP)',
  '(neq,operationState,FAILED_TEMP)',
  '(in,operation,HEAL,SCALE)',
  '(nin,operation,HEAL,SCALE)',
  '(eq,operationState,FAILED_TEMP);(in,operation,HEAL,SCALE)',
  '(cont,operation,EA)',
  '(gt,operation,INSTANTIATE)',
  '(eq,isAutomaticInvocation,true)',
  '(eq,isAutomaticInvocation,false)',
  '(eq,isAutomaticInvocation,yes)',
  '(neq,isAutomaticInvocation,true)',
  '(in,isAutomaticInvocation,true,false)',
  '(nin,isAutomaticInvocation,x)',
  '(gt,isAutomaticInvocation,false)',
  '(cont,isAutomaticInvocation,t)',
  '(ncont,isAutomaticInvocation,t)',
  '(eq,isCancelPending,false)',
  '(gt,startTime,2024-05-02T10:00:00Z)',
  '(gte,startTime,2024-05-02T11:00:00Z)',
  '(lt,startTime,2024-05-02T22:00:00Z)',
  '(lte,startTime,2024-05-02T22:00:00.000Z)',
  '(eq,startTime,2024-05-02T00:00:00.000Z)',
  '(eq,startTime,2024-05-02T02:00:00+02:00)',
  '(in,startTime,2024-05-02T11:00:00Z,2024-05-03T20:00:00Z)',
  '(lt,startTime,2024-05-03T09:00:00Z);(gt,startTime,2024-05-02T07:00:00Z)',
  '(gt,startTime,2024)',
  '(lt,startTime,2024-05-02)',
  '(neq,startTime,2024-05-02T00:00:00Z)',
  '(cont,startTime,T11)',
  '(gte,stateEnteredTime,2024-05-01T00:00:20Z)',
  '(eq,vnfInstanceId,inst-001-62)',
  '(eq,grantId,g0)',
  '(neq,grantId,g0)',
  '(eq,cancelMode,GRACEFUL)',
  '(ncont,cancelMode,X)',
  '(eq,error/status,500)',
  '(neq,error/status,500)',
  '(eq,resourceChanges/affectedVnfcs/changeType,ADDED)',
  '(eq,resourceChanges/affectedVirtualLinks/virtualLinkDescId,VL1)',
  '(eq,operationParams/additionalParams/x,1)',
  "(cont,error/detail,'boom 1')",
  '(eq,error/detail,boom 7)',
  '(in,resourceChanges/affectedVnfcs/changeType,ADDED,REMOVED)',
  '(cont,resourceChanges/affectedVnfcs/id,c1)',
  '(eq,changedInfo/x,1)',
  '(eq,_links/retry/href,x)',
  '(neq,_links/retry/href,x)',
];

await describeStores('lists in SQL', (env) => {
  let store: TestStore;
  before(async () => {
    store = await env.open();
    await seed(store);
  });
  after(async () => {
    await store?.close();
  });

  for (const v of ['v1', 'v2'] as const) {
    it(`${v} instances: every filter and page size gives the in-memory result, in order`, async () => {
      const spec = instanceListSpec(v, URL_BASE);
      let selective = 0;
      for (const f of INSTANCE_FILTERS) {
        const want = await oracle(store, spec, f);
        const total = (await oracle(store, spec, undefined)).length;
        if (want.length > 0 && want.length < total) selective++;
        for (const size of [1, 4, 0]) {
          const pages = await walk(store, spec, f, size, INSTANCE_DEFAULT_EXCLUDED);
          assert.deepEqual(pages.flat(), want, `${v} filter=${f} pageSize=${size}`);
        }
      }
      assert.ok(selective >= INSTANCE_FILTERS.length / 2, `most filters select some but not all rows (${selective}/${INSTANCE_FILTERS.length})`);
    });

    it(`${v} op occs: every filter and page size gives the in-memory result, in order`, async () => {
      const spec = opOccListSpec(v, URL_BASE);
      let selective = 0;
      for (const f of OPOCC_FILTERS) {
        const want = await oracle(store, spec, f);
        const total = (await oracle(store, spec, undefined)).length;
        if (want.length > 0 && want.length < total) selective++;
        for (const size of [1, 5, 0]) {
          const pages = await walk(store, spec, f, size, OPOCC_DEFAULT_EXCLUDED);
          assert.deepEqual(pages.flat(), want, `${v} filter=${f} pageSize=${size}`);
        }
      }
      assert.ok(selective >= OPOCC_FILTERS.length / 2, `most filters select some but not all rows (${selective}/${OPOCC_FILTERS.length})`);
    });
  }

  it('some filters are selective in SQL (a page reads only what it returns, plus one)', async () => {
    const spec = opOccListSpec('v2', URL_BASE);
    const r = parseListRequest(spec, { filter: '(eq,operationState,FAILED_TEMP)' }, { defaultExcluded: OPOCC_DEFAULT_EXCLUDED, pageSize: 2, baseUrl: URL_BASE });
    const page = await readPage(store.db, spec, r, OPOCC_DEFAULT_EXCLUDED);
    assert.equal(page.items.length, 2);
    assert.equal(page.scanned, 3);
  });

  it('heavy JSON columns are read only when the response or the filter needs them', async () => {
    const spec = instanceListSpec('v2', URL_BASE);
    const opts = { defaultExcluded: INSTANCE_DEFAULT_EXCLUDED, pageSize: 100, baseUrl: URL_BASE };
    const plain = await readPage(store.db, spec, parseListRequest(spec, {}, opts), INSTANCE_DEFAULT_EXCLUDED);
    assert.ok(plain.items.every((x) => x.metadata === undefined && x.instantiatedVnfInfo === undefined));
    const all = await readPage(store.db, spec, parseListRequest(spec, { all_fields: '' }, opts), INSTANCE_DEFAULT_EXCLUDED);
    assert.ok(all.items.some((x) => x.metadata !== undefined) && all.items.some((x) => x.instantiatedVnfInfo !== undefined));
    const fields = await readPage(store.db, spec, parseListRequest(spec, { fields: 'metadata' }, opts), INSTANCE_DEFAULT_EXCLUDED);
    assert.ok(fields.items.some((x) => x.metadata !== undefined));
    assert.ok(fields.items.every((x) => x.instantiatedVnfInfo === undefined));
  });

  it('the cursor is stable across inserts and deletes: nothing repeats, nothing before it is skipped', async () => {
    const spec = opOccListSpec('v2', URL_BASE);
    const opts = { defaultExcluded: OPOCC_DEFAULT_EXCLUDED, pageSize: 7, baseUrl: URL_BASE };
    const seen: string[] = [];
    let marker: string | undefined;
    let inserted = 0;
    const before = await oracle(store, spec, undefined);
    for (let guard = 0; guard < 50; guard++) {
      const r = parseListRequest(spec, marker ? { nextpage_opaque_marker: marker } : {}, opts);
      const page = await readPage(store.db, spec, r, OPOCC_DEFAULT_EXCLUDED);
      seen.push(...page.items.map((x) => x.id as string));
      if (!page.nextMarker) break;
      marker = page.nextMarker;
      if (guard === 0) {
        // between pages: delete the last returned item and one not yet returned, insert two
        const lastReturned = page.items[page.items.length - 1]?.id as string;
        await store.db.deleteFrom('op_occ').where('id', 'in', [lastReturned, 'op-030']).execute();
        for (const id of ['op-new-1', 'op-new-2']) {
          inserted++;
          await store.db
            .insertInto('op_occ')
            .values({ id, vnf_instance_id: 'inst-000-0', operation: 'HEAL', operation_state: 'COMPLETED', state_entered_time: new Date(), start_time: new Date(), is_automatic_invocation: false, is_cancel_pending: false, operation_params: json({}), error: json(null), resource_changes: json(null), changed_info: json(null), grant_request: json(null), grant: json(null), ctx: json({}), attempts: 0, api_version: 'v2' })
            .execute();
        }
      }
    }
    assert.equal(new Set(seen).size, seen.length, 'no item repeats');
    const expected = [...before.filter((id) => id !== 'op-030'), 'op-new-1', 'op-new-2'].sort();
    assert.deepEqual([...seen].sort(), expected, 'every item that existed throughout, plus the new ones (they sort last)');
    assert.equal(inserted, 2);
  });

  it('markers are opaque, bound to their collection, and anything tampered is a 400', () => {
    const c = { t: '2024-05-01T00:00:00.123456Z', id: 'op-001' };
    const m = encodeCursor('vnflcm/v2/vnf_lcm_op_occs', c);
    assert.deepEqual(decodeCursor('vnflcm/v2/vnf_lcm_op_occs', m), c);
    assert.ok(!m.includes('op-001') && !m.includes('2024'), 'not readable as is');
    const bad = (x: unknown) =>
      assert.throws(
        () => decodeCursor('vnflcm/v2/vnf_lcm_op_occs', x),
        (e: unknown) => e instanceof SolQueryError && e.parameter === 'nextpage_opaque_marker' && e.httpStatus === 400,
      );
    bad(encodeCursor('vnflcm/v2/vnf_instances', c)); // another collection
    bad(encodeCursor('vnflcm/v1/vnf_lcm_op_occs', c)); // another version
    const [payload, mac] = m.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify(['2024-05-01T00:00:00.123456Z', 'op-002']), 'utf8').toString('base64url');
    bad(`${forged}.${mac}`);
    bad(`${payload}.${mac.replace(/^./, mac[0] === 'A' ? 'B' : 'A')}`);
    bad(payload);
    bad('@@@');
    bad('');
    bad(['a', 'b']);
    // well-sealed but malformed content is still a 400, never a database error
    bad(encodeCursor('vnflcm/v2/vnf_lcm_op_occs', { t: 'yesterday', id: 'x' }));
  });

  it('limit: absent = configured page size; 1..10000; 0, negative, non-integer, too large or repeated = 400', () => {
    assert.equal(parseLimit({}, 100), 100);
    assert.equal(parseLimit({ limit: '1' }, 100), 1);
    assert.equal(parseLimit({ limit: '10000' }, 100), 10000);
    for (const l of ['0', '-1', '1.5', 'abc', '', '10001', '99999999', ['1', '2']]) {
      assert.throws(() => parseLimit({ limit: l }, 100), (e: unknown) => e instanceof SolQueryError && e.parameter === 'limit' && e.httpStatus === 400, String(l));
    }
  });
});

// ------------------------------------------------------------------ the other lists

async function oracleOf(store: TestStore, spec: SqlListSpec, filter: string | undefined): Promise<string[]> {
  const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(spec.table)} ${spec.where?.length ? sql`where ${sql.join(spec.where, sql` and `)}` : sql``}
    order by ${sql.ref(spec.orderColumn)} ${spec.orderDir === 'asc' ? sql`asc` : sql`desc`}, id asc`.execute(store.db);
  const f = filter ? parseFilter(filter) : undefined;
  return rows.map((r) => spec.toApi(r)).filter((x) => matchesFilter(x, f)).map((x) => x.id as string);
}

async function checkAll(store: TestStore, spec: SqlListSpec, filters: (string | undefined)[], excluded: readonly string[]): Promise<void> {
  let selective = 0;
  const total = (await oracleOf(store, spec, undefined)).length;
  assert.ok(total > 3, `${spec.collection} has rows`);
  for (const f of filters) {
    const want = await oracleOf(store, spec, f);
    if (want.length > 0 && want.length < total) selective++;
    for (const size of [2, 0]) assert.deepEqual((await walk(store, spec, f, size, excluded)).flat(), want, `${spec.collection} filter=${f} pageSize=${size}`);
  }
  assert.ok(selective >= filters.length / 2, `${spec.collection}: most filters are selective (${selective}/${filters.length})`);
}

await describeStores('lists in SQL: packages, subscriptions, auto-heal ledger', (env) => {
  let store: TestStore;
  before(async () => {
    store = await env.open();
    const T = (k: number) => new Date(T0 + k * 1000).toISOString();
    for (let n = 0; n < 12; n++) {
      const onboarded = n % 3 !== 0;
      await store.db
        .insertInto('vnf_package')
        .values({
          id: `pkg-${String(n).padStart(2, '0')}`,
          onboarding_state: onboarded ? 'ONBOARDED' : n % 2 ? 'ERROR' : 'CREATED',
          operational_state: n % 4 === 1 ? 'DISABLED' : 'ENABLED',
          usage_state: n % 5 === 2 ? 'IN_USE' : 'NOT_IN_USE',
          vnfd_id: onboarded ? `vnfd-${n}` : null,
          vnf_provider: onboarded ? (n % 2 ? 'Company' : 'Other') : 'Ghost',
          vnf_product_name: onboarded ? 'Sample VNF' : null,
          vnf_software_version: onboarded ? '1.0' : null,
          vnfd_version: onboarded ? `1.${n % 3}` : null,
          checksum: json(onboarded ? { algorithm: 'SHA-256', hash: `h${n}` } : null),
          user_defined_data: json({ owner: n % 2 ? 'ops' : 'dev', n }),
          vnfd: json(null),
          onboarding_error: onboarded ? null : 'broken',
          created_at: T(Math.floor(n / 2)),
        })
        .execute();
    }
    for (let n = 0; n < 12; n++) {
      await store.db
        .insertInto('subscription')
        .values({ id: `sub-${String(n).padStart(2, '0')}`, api_version: n % 3 ? 'v2' : 'v1', callback_uri: `http://127.0.0.1:${9000 + (n % 4)}/cb`, filter: json(n % 2 ? { operationTypes: ['HEAL', n % 4 === 1 ? 'SCALE' : 'TERMINATE'], notificationTypes: ['VnfLcmOperationOccurrenceNotification'] } : null), verbosity: n % 5 ? 'FULL' : 'SHORT', auth_types: json([]), auth_secret: null, dedupe_key: `k${n}`, created_at: T(Math.floor(n / 3)) })
        .execute();
    }
    for (let n = 0; n < 8; n++) {
      await sql`insert into autoheal_batch (id, vnf_instance_id, status, reason, targets, deadline, released, op_occ_id, created_at, fired_at)
        values (${`b-${n}`}, ${`vnf-${n % 3}`}, ${['open', 'waiting', 'done', 'suppressed'][n % 4]}, ${n % 2 ? 'storm' : null}, ${json([{ vnfcInstanceId: `c${n}` }])}::jsonb, ${T(100 + n)}::timestamptz, ${n % 3 === 0}, ${n % 2 ? `op-${n}` : null}, ${T(Math.floor(n / 2))}::timestamptz, ${n % 2 ? T(50 + n) : null}::timestamptz)`.execute(store.db);
    }
    for (let n = 0; n < 16; n++) {
      await sql`insert into fault_notification (id, vnf_instance_id, server_id, alarm_id, fault_id, fault_type, host_id, fault_option, status, reason, batch_id, received_at)
        values (${`fn-${String(n).padStart(2, '0')}`}, ${`vnf-${n % 3}`}, ${`srv-${n % 5}`}, ${`alarm-${n}`}, ${n % 2 ? '0' : '1'}, ${n % 3 ? 'host-down' : 'server-down'}, ${n % 4 ? `host-${n % 2}` : null}, ${json(n % 2 ? { seq: n, tag: 'x' } : null)}::jsonb, ${['queued', 'batched', 'ignored'][n % 3]}, ${n % 3 === 2 ? 'no such VNFC' : null}, ${n % 3 === 1 ? `b-${n % 8}` : null}, ${T(Math.floor(n / 3))}::timestamptz)`.execute(store.db);
    }
  });
  after(async () => {
    await store?.close();
  });

  it('packages', async () => {
    await checkAll(store, packageListSpec(URL_BASE), [undefined, '(eq,onboardingState,ONBOARDED)', '(neq,operationalState,ENABLED)', '(eq,vnfProvider,Company)', '(neq,vnfProvider,Company)', '(eq,vnfProvider,Ghost)', '(in,vnfdVersion,1.1,1.2)', '(cont,vnfdId,vnfd-1)', '(eq,userDefinedData/owner,ops)', '(gt,userDefinedData/n,5)', '(eq,checksum/hash,h4)', '(eq,onboardingFailureDetails/detail,broken)', '(eq,usageState,IN_USE);(eq,onboardingState,ONBOARDED)'], ['softwareImages', 'additionalArtifacts', 'userDefinedData', 'checksum', 'onboardingFailureDetails']);
  });

  for (const v of ['v1', 'v2'] as const) {
    it(`${v} subscriptions`, async () => {
      await checkAll(store, subscriptionListSpec(v, URL_BASE), [undefined, '(eq,callbackUri,http://127.0.0.1:9001/cb)', '(cont,callbackUri,9002)', '(eq,verbosity,SHORT)', '(neq,verbosity,SHORT)', '(eq,filter/operationTypes,SCALE)', '(nin,filter/operationTypes,SCALE)', '(gt,id,sub-05)'], []);
    });
  }

  it('fault notifications (newest first) and heal batches', async () => {
    await checkAll(store, notificationSpec([]), [undefined, '(eq,status,ignored)', '(neq,status,ignored)', '(eq,hostId,host-1)', '(neq,hostId,host-1)', '(in,faultType,host-down)', '(eq,faultOption/tag,x)', '(gt,faultOption/seq,6)', '(gte,receivedAt,2024-05-01T00:00:02Z)', '(eq,batchId,b-1)', '(cont,alarmId,1)'], []);
    await checkAll(store, notificationSpec([sql<boolean>`vnf_instance_id = ${'vnf-1'}`]), [undefined, '(eq,hostId,host-1)', '(eq,faultOption/tag,x)'], []);
    const links = (b: { id: string }) => ({ self: { href: `${URL_BASE}/vnfm/v1/heal_batches/${b.id}` } });
    await checkAll(store, batchSpec([], links), [undefined, '(eq,status,open)', '(eq,released,true)', '(neq,released,true)', '(eq,reason,storm)', '(neq,reason,storm)', '(lt,deadline,2024-05-01T00:01:44Z)', '(eq,firedAt,2024-05-01T00:00:51.000Z)', '(neq,firedAt,2024-05-01T00:00:51Z)', '(eq,targets/vnfcInstanceId,c3)', '(eq,vnfLcmOpOccId,op-3)', '(gt,notificationCount,0)'], []);
  });
});
