/**
 * VNF instance resources of both facades (`/vnflcm/v1`, `/vnflcm/v2`): create / list / show /
 * modify / delete with ETSI-valid bodies, the v2 Version header rules, SOL013 attribute selectors,
 * filter and paging, MODIFY_INFO op occs, vimConnectionInfo completion from the VIM registry (and
 * secrets never returned), the delete rules, and identifier notifications in the outbox. Runs on
 * PGlite and on PostgreSQL (describeStores; the PostgreSQL half is the `pg` stage).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { describeStores } from '../helpers/db.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

type Api = 'v1' | 'v2';
const V2 = { version: '2.0.0' };
const OS_PASSWORD = 'instances-test-os-password-5b1';

let vnfm: TestVnfm;
let fake: FakeDriver;
let vnfdId: string;
let pkgId: string;
let vimId: string;

async function req(method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT', url: string, payload?: unknown, headers: Record<string, string> = V2) {
  return vnfm.app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
}

function assertProblem(r: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, status: number): Record<string, unknown> {
  assert.equal(r.statusCode, status);
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
  const p = r.json();
  assert.equal(p.status, status);
  assert.ok(typeof p.detail === 'string' && p.detail.length > 0);
  return p;
}

async function create(v: Api, body: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const r = await req('POST', `/vnflcm/${v}/vnf_instances`, { vnfdId, ...body });
  assert.equal(r.statusCode, 201, r.body);
  const inst = r.json();
  assert.equal(r.headers.location, `${vnfm.ctx.config.publicUrl}/vnflcm/${v}/vnf_instances/${inst.id as string}`);
  return inst;
}

async function show(v: Api, id: string): Promise<Record<string, unknown>> {
  const r = await req('GET', `/vnflcm/${v}/vnf_instances/${id}`);
  assert.equal(r.statusCode, 200, r.body);
  return r.json();
}

/** Follows Link headers and returns every item and the number of pages. */
async function listAll(url: string): Promise<{ items: Record<string, unknown>[]; pages: number }> {
  const items: Record<string, unknown>[] = [];
  let pages = 0;
  let next: string | undefined = url;
  while (next) {
    const r = await req('GET', next);
    assert.equal(r.statusCode, 200, r.body);
    items.push(...(r.json() as Record<string, unknown>[]));
    pages++;
    const link = r.headers.link as string | undefined;
    if (!link) break;
    const m = /^<([^>]+)>; rel="next"$/.exec(link);
    assert.ok(m, `Link header: ${link}`);
    const u = new URL(m[1] as string);
    assert.equal(u.origin, vnfm.ctx.config.publicUrl);
    next = `${u.pathname}${u.search}`;
    assert.ok(pages < 50, 'paging terminates');
  }
  return { items, pages };
}

async function outboxTypes(instanceId: string): Promise<string[]> {
  const rows = await vnfm.store.db.selectFrom('outbox').select(['notification', 'id']).orderBy('id').execute();
  return rows.map((r) => r.notification as Record<string, unknown>).filter((n) => n.vnfInstanceId === instanceId).map((n) => n.notificationType as string);
}

await describeStores('VNF instances', (env) => {
  before(async () => {
    fake = new FakeDriver();
    vnfm = await testVnfm({ store: await env.open(), plugins: [(ctx) => ctx.engine?.drivers.register(fake)], config: { pageSize: 2, runner: { pollMs: 50, leaseMs: 60_000, concurrency: 4, workerId: 'inst-test' } } });
    const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
    pkgId = pkg.id as string;
    const vim = await vnfm.app.inject({
      method: 'POST',
      url: '/v1.0/vims',
      payload: { vim: { name: 'os-inst', type: 'openstack', auth_url: 'http://127.0.0.1:5000/v3', auth_cred: { username: 'admin', password: OS_PASSWORD }, vim_project: { name: 'admin' } } },
    });
    assert.equal(vim.statusCode, 201, vim.body);
    vimId = vim.json().vim.id;
    await vnfm.store.db.insertInto('subscription').values({ id: 'sub-inst', api_version: 'v2', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'inst' }).execute();
  });
  after(async () => {
    await vnfm?.close();
  });

  it('v2: Version header missing is 400, unsupported is 406, malformed is 400; api_versions needs none', async () => {
    const missing = await req('GET', '/vnflcm/v2/vnf_instances', undefined, {});
    assertProblem(missing, 400);
    assert.match(missing.json().detail as string, /Version/);
    assertProblem(await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId }, {}), 400);
    const unsupported = await req('GET', '/vnflcm/v2/vnf_instances', undefined, { version: '3.0.0' });
    assertProblem(unsupported, 406);
    assertProblem(await req('GET', '/vnflcm/v2/vnf_instances', undefined, { version: 'two' }), 400);
    const impl = await req('GET', '/vnflcm/v2/vnf_instances', undefined, { version: '2.0.0-impl:example' });
    assert.equal(impl.statusCode, 200);
    assert.equal(impl.headers.version, '2.0.0');
    const av = await req('GET', '/vnflcm/v2/api_versions', undefined, {});
    assert.equal(av.statusCode, 200);
    expectEtsiValid('v2', 'ApiVersionInformation', av.json());
    // v1 does not require it
    const v1 = await req('GET', '/vnflcm/v1/vnf_instances', undefined, {});
    assert.equal(v1.statusCode, 200);
    assert.equal(v1.headers.version, '1.3.0');
  });

  for (const v of ['v2', 'v1'] as const) {
    it(`${v}: create, show, list, modify, delete with ETSI-valid bodies`, async () => {
      const inst = await create(v, { vnfInstanceName: `inst-${v}`, vnfInstanceDescription: 'desc', metadata: { tier: 'gold' } });
      const id = inst.id as string;
      assert.equal(inst.instantiationState, 'NOT_INSTANTIATED');
      assert.equal(inst.vnfdId, vnfdId);
      assert.equal(inst.vnfInstanceName, `inst-${v}`);
      assert.equal(inst.vnfProvider, 'Example Co');
      assert.deepEqual(inst.metadata, { tier: 'gold' });
      const links = inst._links as Record<string, { href: string }>;
      assert.equal(links.self?.href, `${vnfm.ctx.config.publicUrl}/vnflcm/${v}/vnf_instances/${id}`);
      assert.ok(links.instantiate, 'instantiate link while NOT_INSTANTIATED');
      if (v === 'v1') assert.equal(inst.vnfPkgId, pkgId);
      expectEtsiValid(v, 'VnfInstance', inst);
      expectEtsiValid(v, 'VnfInstance', await show(v, id));
      // the other facade shows the same instance in its own shape
      const other = await show(v === 'v2' ? 'v1' : 'v2', id);
      expectEtsiValid(v === 'v2' ? 'v1' : 'v2', 'VnfInstance', other);
      assert.equal(other.id, id);

      const list = await req('GET', `/vnflcm/${v}/vnf_instances?all_fields`);
      assert.equal(list.statusCode, 200);
      expectEtsiValid(v, 'VnfInstance', list.json(), { array: true });

      const p = await req('PATCH', `/vnflcm/${v}/vnf_instances/${id}`, { vnfInstanceName: `renamed-${v}`, metadata: { tier: null, zone: 'a' }, vnfConfigurableProperties: { isAutoscaleEnabled: false } });
      assert.equal(p.statusCode, 202, p.body);
      assert.equal(p.body, '');
      const loc = String(p.headers.location);
      assert.match(loc, new RegExp(`^${vnfm.ctx.config.publicUrl}/vnflcm/${v}/vnf_lcm_op_occs/[0-9a-f-]{36}$`));
      const occR = await req('GET', loc.replace(vnfm.ctx.config.publicUrl, ''));
      assert.equal(occR.statusCode, 200, occR.body);
      const occ = occR.json();
      assert.equal(occ.operation, 'MODIFY_INFO');
      assert.equal(occ.operationState, 'COMPLETED');
      assert.equal(occ.vnfInstanceId, id);
      assert.deepEqual(occ.changedInfo, { vnfInstanceName: `renamed-${v}`, metadata: { zone: 'a' }, vnfConfigurableProperties: { isAutoscaleEnabled: false } });
      expectEtsiValid(v, 'VnfLcmOpOcc', occ);
      const after = await show(v, id);
      assert.equal(after.vnfInstanceName, `renamed-${v}`);
      assert.deepEqual(after.metadata, { zone: 'a' }, 'metadata is merge-patched');
      assert.deepEqual(after.vnfConfigurableProperties, { isAutoscaleEnabled: false });
      expectEtsiValid(v, 'VnfInstance', after);

      const d = await req('DELETE', `/vnflcm/${v}/vnf_instances/${id}`);
      assert.equal(d.statusCode, 204, d.body);
      assertProblem(await req('GET', `/vnflcm/${v}/vnf_instances/${id}`), 404);
      assertProblem(await req('DELETE', `/vnflcm/${v}/vnf_instances/${id}`), 404);
      assertProblem(await req('PATCH', `/vnflcm/${v}/vnf_instances/${id}`, { vnfInstanceName: 'x' }), 404);
    });
  }

  it('create refuses an unknown vnfdId (422) and bad bodies (400) without storing anything', async () => {
    const count = async () => Number((await vnfm.store.db.selectFrom('vnf_instance').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const n0 = await count();
    const unknown = await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId: '00000000-0000-0000-0000-000000000000' });
    assertProblem(unknown, 422);
    assert.match(unknown.json().detail as string, /00000000-0000-0000-0000-000000000000/);
    assertProblem(await req('POST', '/vnflcm/v2/vnf_instances', {}), 400);
    assertProblem(await req('POST', '/vnflcm/v1/vnf_instances', { vnfdId: 42 }), 400);
    assertProblem(await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: { a: 1 } }), 400);
    assertProblem(await req('PATCH', `/vnflcm/v2/vnf_instances/nope`, {}), 400);
    assert.equal(await count(), n0);
  });

  it('list: attribute selectors, filter and paging with a Link header', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await create('v2', { vnfInstanceName: `sel-${i}`, metadata: { i }, vnfInstanceDescription: `d${i}` })).id as string);

    const { items, pages } = await listAll('/vnflcm/v2/vnf_instances');
    assert.ok(pages >= 3, `pageSize 2 => several pages (${pages})`);
    for (const id of made) assert.equal(items.filter((x) => x.id === id).length, 1, 'each instance exactly once across pages');
    for (const x of items) assert.equal(x.metadata, undefined, 'metadata is excluded by default in lists');
    expectEtsiValid('v2', 'VnfInstance', items, { array: true });

    const filtered = await listAll('/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,sel-3)');
    assert.deepEqual(filtered.items.map((x) => x.id), [made[3]]);
    const inList = await listAll('/vnflcm/v2/vnf_instances?filter=(in,vnfInstanceName,sel-1,sel-4);(eq,instantiationState,NOT_INSTANTIATED)');
    assert.deepEqual(inList.items.map((x) => x.id).sort(), [made[1], made[4]].sort());
    const byMeta = await listAll('/vnflcm/v1/vnf_instances?filter=(eq,metadata/i,2)&all_fields');
    assert.deepEqual(byMeta.items.map((x) => x.id), [made[2]]);
    assert.deepEqual(byMeta.items[0]?.metadata, { i: 2 }, 'all_fields keeps metadata');
    expectEtsiValid('v1', 'VnfInstance', byMeta.items, { array: true });

    const fields = await listAll('/vnflcm/v2/vnf_instances?fields=metadata&filter=(eq,vnfInstanceName,sel-0)');
    assert.deepEqual(fields.items[0]?.metadata, { i: 0 }, 'fields brings metadata back');
    assert.equal(fields.items[0]?.vnfInstanceName, 'sel-0', 'simple attributes stay with fields');
    const excl = await listAll('/vnflcm/v2/vnf_instances?exclude_fields=vnfInstanceDescription,vnfProvider&filter=(eq,vnfInstanceName,sel-0)');
    assert.equal(excl.items[0]?.vnfInstanceDescription, undefined);
    assert.equal(excl.items[0]?.vnfProvider, undefined);
    assert.deepEqual(excl.items[0]?.metadata, { i: 0 }, 'exclude_fields only removes what it names');
    assert.ok(excl.items[0]?.id && excl.items[0]?._links, 'id and _links are never removed');
    const exd = await listAll('/vnflcm/v2/vnf_instances?exclude_default&filter=(eq,vnfInstanceName,sel-0)');
    assert.equal(exd.items[0]?.metadata, undefined);
    assert.equal(exd.items[0]?.vnfInstanceDescription, 'd0');

    assertProblem(await req('GET', '/vnflcm/v2/vnf_instances?all_fields&fields=metadata'), 400);
    assertProblem(await req('GET', '/vnflcm/v2/vnf_instances?fields=metadata&exclude_fields=vnfProvider'), 400);
    assertProblem(await req('GET', '/vnflcm/v2/vnf_instances?fields=noSuchAttribute'), 400);
    assertProblem(await req('GET', '/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName'), 400);
    assertProblem(await req('GET', '/vnflcm/v2/vnf_instances?filter=(bogus,vnfInstanceName,x)'), 400);
    assertProblem(await req('GET', '/vnflcm/v2/vnf_instances?nextpage_opaque_marker=@@@'), 400);
    // keyset cursor: tampered or foreign markers are 400 ProblemDetails; limit is uniform (1..10000)
    const first = await req('GET', '/vnflcm/v2/vnf_instances');
    const marker = new URL(/^<([^>]+)>/.exec(String(first.headers.link))?.[1] as string).searchParams.get('nextpage_opaque_marker') as string;
    assert.equal((await req('GET', `/vnflcm/v2/vnf_instances?nextpage_opaque_marker=${marker}`)).statusCode, 200);
    assertProblem(await req('GET', `/vnflcm/v2/vnf_instances?nextpage_opaque_marker=${marker.slice(0, -1)}${marker.endsWith('A') ? 'B' : 'A'}`), 400);
    assertProblem(await req('GET', `/vnflcm/v2/vnf_lcm_op_occs?nextpage_opaque_marker=${marker}`), 400);
    assertProblem(await req('GET', `/vnflcm/v1/vnf_instances?nextpage_opaque_marker=${marker}`), 400);
    for (const bad of ['0', '-1', 'x', '10001']) assertProblem(await req('GET', `/vnflcm/v2/vnf_instances?limit=${bad}`), 400);
    const one = await listAll('/vnflcm/v2/vnf_instances?limit=1&filter=(cont,vnfInstanceName,sel-)');
    assert.deepEqual(one.items.map((x) => x.id), made, 'limit=1 pages one by one, in creation order');
    assert.equal(one.pages, made.length);

    for (const id of made) assert.equal((await req('DELETE', `/vnflcm/v2/vnf_instances/${id}`)).statusCode, 204);
  });

  it('vimConnectionInfo naming only a registered vimId is completed from the registry; accessInfo never appears', async () => {
    const inst = await create('v2', { vimConnectionInfo: { vim1: { vimId } } });
    const id = inst.id as string;
    const vci = (inst.vimConnectionInfo as Record<string, Record<string, unknown>>).vim1;
    assert.ok(vci, 'vim1 present');
    assert.equal(vci.vimId, vimId);
    assert.equal(vci.vimType, 'ETSINFV.OPENSTACK_KEYSTONE.V_3');
    assert.deepEqual(vci.interfaceInfo, { endpoint: 'http://127.0.0.1:5000/v3' });
    assert.equal(vci.accessInfo, undefined);
    expectEtsiValid('v2', 'VnfInstance', inst);
    // the drivers get the full connection, with the sealed password
    const full = await vnfm.ctx.instances.vimConnections(id);
    assert.equal(full.vim1?.accessInfo.password, OS_PASSWORD);
    assert.equal(full.vim1?.accessInfo.username, 'admin');

    // v1 PATCH with an array entry naming the vimId, and the v1 view
    const p = await req('PATCH', `/vnflcm/v1/vnf_instances/${id}`, { vimConnectionInfo: [{ id: 'vim2', vimId, vimType: 'openstack' }] });
    assert.equal(p.statusCode, 202, p.body);
    const occ = await req('GET', String(p.headers.location).replace(vnfm.ctx.config.publicUrl, ''));
    assert.equal(occ.json().operationState, 'COMPLETED');
    const v1 = await show('v1', id);
    const arr = v1.vimConnectionInfo as Record<string, unknown>[];
    assert.deepEqual(arr.map((c) => c.id).sort(), ['vim1', 'vim2']);
    expectEtsiValid('v1', 'VnfInstance', v1);

    // an unregistered vimId is refused; nothing changes
    const bad = await req('PATCH', `/vnflcm/v2/vnf_instances/${id}`, { vimConnectionInfo: { vim3: { vimId: 'not-registered' } } });
    assertProblem(bad, 422);
    assertProblem(await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vimConnectionInfo: { v: { vimId: 'not-registered' } } }), 422);
    assert.deepEqual(Object.keys((await show('v2', id)).vimConnectionInfo as object).sort(), ['vim1', 'vim2']);

    // accessInfo given inline is stored sealed, never returned, never in op occ params
    const inline = await req('PATCH', `/vnflcm/v2/vnf_instances/${id}`, {
      vimConnectionInfo: { vim4: { vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3', interfaceInfo: { endpoint: 'http://10.0.0.1:5000/v3' }, accessInfo: { username: 'u', password: 'inline-secret-77', project: 'p' } }, vim2: null },
    });
    assert.equal(inline.statusCode, 202, inline.body);
    const responses = [
      await req('GET', `/vnflcm/v2/vnf_instances/${id}`),
      await req('GET', `/vnflcm/v1/vnf_instances/${id}`),
      await req('GET', '/vnflcm/v2/vnf_instances?all_fields'),
      await req('GET', '/vnflcm/v1/vnf_instances?fields=vimConnectionInfo'),
      await req('GET', '/vnflcm/v2/vnf_lcm_op_occs?all_fields'),
      await req('GET', String(inline.headers.location).replace(vnfm.ctx.config.publicUrl, '')),
    ];
    for (const r of responses) {
      assert.equal(r.statusCode, 200, r.body);
      assert.ok(!r.body.includes('inline-secret-77'), `inline password leaked: ${r.body.slice(0, 200)}`);
      assert.ok(!r.body.includes(OS_PASSWORD), 'registry password leaked');
      assert.ok(!r.body.includes('accessInfo'), `accessInfo returned: ${r.body.slice(0, 300)}`);
    }
    assert.deepEqual(Object.keys((await show('v2', id)).vimConnectionInfo as object).sort(), ['vim1', 'vim4']);
    const row = await vnfm.store.db.selectFrom('vnf_instance').select(['vim_connection_info', 'vim_secrets']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes('inline-secret-77'), 'secrets are sealed at rest');
    assert.ok(!vnfm.logs.join('').includes('inline-secret-77'), 'password in the logs');
    assert.ok(!vnfm.logs.join('').includes(OS_PASSWORD), 'registry password in the logs');
    assert.equal((await req('DELETE', `/vnflcm/v2/vnf_instances/${id}`)).statusCode, 204);
  });

  it('delete of an instantiated instance is 409; after terminate it is 204', async () => {
    const inst = await create('v2', { vnfInstanceName: 'to-instantiate' });
    const id = inst.id as string;
    // an external virtual link, so the instance exposes the external CP SOL003 3.x requires (extCpInfo 1..N)
    const extVirtualLinks = [{ id: 'ext-net-1', resourceId: 'net-123', extCps: [{ cpdId: 'VDU1_CP1', cpConfig: { c1: { cpProtocolData: [{ layerProtocol: 'IP_OVER_ETHERNET' }] } } }] }];
    const i = await req('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', extVirtualLinks, vimConnectionInfo: { vim1: FAKE_VIM } });
    assert.equal(i.statusCode, 202, i.body);
    await vnfm.ctx.engine?.runner.idle();
    const shown = await show('v2', id);
    assert.equal(shown.instantiationState, 'INSTANTIATED');
    expectEtsiValid('v2', 'VnfInstance', shown);
    expectEtsiValid('v1', 'VnfInstance', await show('v1', id));
    assert.ok(!JSON.stringify(shown).includes(FAKE_VIM.accessInfo.password));

    const del = await req('DELETE', `/vnflcm/v2/vnf_instances/${id}`);
    const p = assertProblem(del, 409);
    assert.match(p.detail as string, /instantiated/i);
    assertProblem(await req('DELETE', `/vnflcm/v1/vnf_instances/${id}`), 409);
    assert.equal((await show('v2', id)).instantiationState, 'INSTANTIATED');

    // vnfdId cannot change while instantiated
    assertProblem(await req('PATCH', `/vnflcm/v2/vnf_instances/${id}`, { vnfdId: '00000000-0000-0000-0000-000000000001' }), 409);

    const t = await req('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
    assert.equal(t.statusCode, 202, t.body);
    await vnfm.ctx.engine?.runner.idle();
    assert.equal((await show('v2', id)).instantiationState, 'NOT_INSTANTIATED');
    assert.equal((await req('DELETE', `/vnflcm/v2/vnf_instances/${id}`)).statusCode, 204);
  });

  it('VnfIdentifierCreation/Deletion notifications land in the outbox, ETSI-valid', async () => {
    const inst = await create('v2', { vnfInstanceName: 'notified' });
    const id = inst.id as string;
    assert.deepEqual(await outboxTypes(id), ['VnfIdentifierCreationNotification']);
    assert.equal((await req('PATCH', `/vnflcm/v2/vnf_instances/${id}`, { vnfInstanceDescription: 'x' })).statusCode, 202);
    assert.equal((await req('DELETE', `/vnflcm/v2/vnf_instances/${id}`)).statusCode, 204);
    assert.deepEqual(await outboxTypes(id), ['VnfIdentifierCreationNotification', 'VnfLcmOperationOccurrenceNotification', 'VnfLcmOperationOccurrenceNotification', 'VnfIdentifierDeletionNotification']);
    const rows = await vnfm.store.db.selectFrom('outbox').select(['notification', 'subscription_id', 'status']).execute();
    const mine = rows.filter((r) => (r.notification as Record<string, unknown>).vnfInstanceId === id);
    for (const r of mine) {
      assert.equal(r.subscription_id, 'sub-inst');
      assert.equal(r.status, 'PENDING');
      const n = r.notification as Record<string, unknown>;
      assert.equal(n.subscriptionId, 'sub-inst');
      expectEtsiValid('v2', n.notificationType as string, n);
    }
    // rejected requests notify nothing
    const n0 = rows.length;
    assert.equal((await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId: 'unknown' })).statusCode, 422);
    assert.equal((await req('DELETE', `/vnflcm/v2/vnf_instances/${id}`)).statusCode, 404);
    assert.equal((await vnfm.store.db.selectFrom('outbox').select('id').execute()).length, n0);
  });
});
