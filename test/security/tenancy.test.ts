/**
 * VNF packages and VIMs per project (auth.tenancy, docs/security.md "Tenants"), through the API:
 * - a package or VIM belongs to the project of the caller that created it; another project gets
 *   the same 404 as for an unknown id (show, vnfd, content, onboarded lookup v1/v2, PATCH, DELETE,
 *   upload) and its lists leave it out; an admin sees and changes it;
 * - rows without a project (created by a caller without one) are shared: every project sees and
 *   uses them, only admins (and callers without a project) change them (403 for the others);
 * - an instance can be created only from a package of its project or a shared one: another
 *   project's vnfdId is answered word for word as an unknown vnfdId (v1 and v2), also when a
 *   modification (PATCH vnfdId / vnfPkgId) names it;
 * - instantiate: `vimId` of another project's VIM is "not registered" (422) like an unknown id; the
 *   default VIM is the instance's project's, else the shared default; VIM names are per project;
 * - `auth.tenancy: shared` restores packages and VIMs shared by everyone (admins write).
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { ROOT, csarOf } from '../helpers/packages.ts';

const TOKENS = [
  { token: 'tn-admin-5c1d', name: 'admin', role: 'admin' },
  { token: 'tn-op-a-0e7b', name: 'op-a', project: 'proj-a', role: 'operator' },
  { token: 'tn-rd-a-93f0', name: 'rd-a', project: 'proj-a', role: 'reader' },
  { token: 'tn-op-b-6a2c', name: 'op-b', project: 'proj-b', role: 'operator' },
] as const;
type Who = 'admin' | 'opA' | 'rdA' | 'opB';
const TOKEN: Record<Who, string> = { admin: 'tn-admin-5c1d', opA: 'tn-op-a-0e7b', rdA: 'tn-rd-a-93f0', opB: 'tn-op-b-6a2c' };

/** vm-basic with another vnfdId (vnfdIds are unique across projects). */
function csarWithVnfdId(vnfdId: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'vnfm-tenancy-pkg-'));
  try {
    cpSync(join(ROOT, 'samples/vm-basic'), dir, { recursive: true });
    const top = join(dir, 'Definitions/sample_vnf_top.vnfd.yaml');
    writeFileSync(top, readFileSync(top, 'utf8').replace('5a0c8a32-3b1e-4f2a-9d63-7c1f2e4b8a01', vnfdId));
    return buildCsarFromDir(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const VNFD_A = '7b1e0c55-0a0a-4d6e-9a41-00000000000a';
const VNFD_SHARED = '5a0c8a32-3b1e-4f2a-9d63-7c1f2e4b8a01';

function api(vnfm: TestVnfm) {
  const call = async (who: Who, method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await vnfm.app.inject({
      method: method as 'GET',
      url,
      headers: { 'x-auth-token': TOKEN[who], version: '2.0.0', ...(body !== undefined && !Buffer.isBuffer(body) ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { payload: Buffer.isBuffer(body) ? body : JSON.stringify(body) } : {}),
    });
    return { status: r.statusCode, body: r.body, json: () => JSON.parse(r.body) as Record<string, unknown> & { detail?: string } };
  };
  const onboard = async (who: Who, zip: Buffer) => {
    const c = await call(who, 'POST', '/vnfpkgm/v1/vnf_packages', {});
    assert.equal(c.status, 201, c.body);
    const id = c.json().id as string;
    const u = await call(who, 'PUT', `/vnfpkgm/v1/vnf_packages/${id}/package_content`, zip, { 'content-type': 'application/zip' });
    assert.equal(u.status, 202, u.body);
    await vnfm.ctx.packages.idle();
    const g = await call(who, 'GET', `/vnfpkgm/v1/vnf_packages/${id}`);
    assert.equal(g.json().onboardingState, 'ONBOARDED', g.body);
    return { id, vnfdId: g.json().vnfdId as string };
  };
  const vim = (name: string, isDefault: boolean) => ({ vim: { name, type: 'openstack', is_default: isDefault, auth_url: 'http://keystone.invalid:5000/v3', auth_cred: { username: 'u', password: `pw-${name}` }, vim_project: { name: 'p' } } });
  return { call, onboard, vim };
}

describe('VNF packages and VIMs per project', () => {
  let vnfm: TestVnfm;
  let a: ReturnType<typeof api>;
  let pkgA: { id: string; vnfdId: string };
  let pkgShared: { id: string; vnfdId: string };
  let vimA: string;
  let vimShared: string;

  before(async () => {
    vnfm = await testVnfm({ config: { apiAuth: 'token', apiTokens: [...TOKENS], notifications: { testCallback: false }, runner: { pollMs: 20 } } });
    a = api(vnfm);
    pkgA = await a.onboard('opA', csarWithVnfdId(VNFD_A));
    pkgShared = await a.onboard('admin', csarOf(join(ROOT, 'samples/vm-basic')));
    const v = await a.call('opA', 'POST', '/v1.0/vims', a.vim('vim-a', true));
    assert.equal(v.status, 201, v.body);
    vimA = (v.json().vim as { id: string }).id;
    const s = await a.call('admin', 'POST', '/v1.0/vims', a.vim('vim-shared', true));
    assert.equal(s.status, 201, s.body);
    vimShared = (s.json().vim as { id: string }).id;
  });
  after(async () => vnfm?.close());

  it('a package and a VIM take the project of their creator; an admin without a project creates shared ones', async () => {
    const rows = await vnfm.store.db.selectFrom('vnf_package').select(['id', 'project']).execute();
    assert.deepEqual(Object.fromEntries(rows.map((r) => [r.id, r.project])), { [pkgA.id]: 'proj-a', [pkgShared.id]: null });
    const vims = await vnfm.store.db.selectFrom('vim').select(['id', 'project']).execute();
    assert.deepEqual(Object.fromEntries(vims.map((r) => [r.id, r.project])), { [vimA]: 'proj-a', [vimShared]: null });
  });

  it("another project's package is a 404 everywhere, word for word as an unknown one; its lists leave it out", async () => {
    const unknownId = '00000000-0000-4000-8000-000000000000';
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['GET', '/vnfd', undefined],
      ['GET', '/package_content', undefined],
      ['PATCH', '', { userDefinedData: { x: '1' } }],
      ['DELETE', '', undefined],
    ] as const) {
      const other = await a.call('opB', method, `/vnfpkgm/v1/vnf_packages/${pkgA.id}${suffix}`, body);
      const unknown = await a.call('opB', method, `/vnfpkgm/v1/vnf_packages/${unknownId}${suffix}`, body);
      assert.equal(other.status, 404, `${method} ${suffix}: ${other.body}`);
      assert.equal(unknown.status, 404);
      assert.equal(other.json().detail?.replace(pkgA.id, 'ID'), unknown.json().detail?.replace(unknownId, 'ID'), `${method} ${suffix}`);
    }
    for (const v of ['v1', 'v2']) {
      const other = await a.call('opB', 'GET', `/vnfpkgm/${v}/onboarded_vnf_packages/${pkgA.vnfdId}`);
      assert.equal(other.status, 404, other.body);
      assert.equal(other.json().detail, `no onboarded VNF package with vnfdId ${pkgA.vnfdId}`);
    }
    const listB = await a.call('opB', 'GET', '/vnfpkgm/v1/vnf_packages');
    assert.deepEqual((JSON.parse(listB.body) as { id: string }[]).map((p) => p.id), [pkgShared.id]);
    const listA = await a.call('rdA', 'GET', '/vnfpkgm/v1/vnf_packages');
    assert.deepEqual((JSON.parse(listA.body) as { id: string }[]).map((p) => p.id).sort(), [pkgA.id, pkgShared.id].sort());
    const listAdmin = await a.call('admin', 'GET', '/vnfpkgm/v1/vnf_packages');
    assert.equal((JSON.parse(listAdmin.body) as unknown[]).length, 2);
    // the owner and an admin change it
    assert.equal((await a.call('opA', 'PATCH', `/vnfpkgm/v1/vnf_packages/${pkgA.id}`, { userDefinedData: { owner: 'a' } })).status, 200);
    assert.equal((await a.call('admin', 'PATCH', `/vnfpkgm/v1/vnf_packages/${pkgA.id}`, { userDefinedData: { by: 'admin' } })).status, 200);
    assert.equal((await a.call('admin', 'GET', `/vnfpkgm/v1/vnf_packages/${pkgA.id}`)).status, 200);
  });

  it('a shared package is seen and used by every project, changed only by admins', async () => {
    assert.equal((await a.call('opB', 'GET', `/vnfpkgm/v1/vnf_packages/${pkgShared.id}`)).status, 200);
    const patch = await a.call('opB', 'PATCH', `/vnfpkgm/v1/vnf_packages/${pkgShared.id}`, { userDefinedData: { x: '1' } });
    assert.equal(patch.status, 403, patch.body);
    assert.match(patch.json().detail ?? '', /shared by every project: only an admin changes it/);
    assert.equal((await a.call('opB', 'DELETE', `/vnfpkgm/v1/vnf_packages/${pkgShared.id}`)).status, 403);
    const udd = (await vnfm.store.db.selectFrom('vnf_package').select('user_defined_data').where('id', '=', pkgShared.id).executeTakeFirstOrThrow()).user_defined_data;
    assert.deepEqual(udd, {}, 'the refused PATCH changed nothing');
  });

  it("an instance from another project's vnfdId is answered as an unknown vnfdId (v1 and v2); from its own or a shared one it is created", async () => {
    for (const v of ['v1', 'v2']) {
      const other = await a.call('opB', 'POST', `/vnflcm/${v}/vnf_instances`, { vnfdId: pkgA.vnfdId });
      const unknown = await a.call('opB', 'POST', `/vnflcm/${v}/vnf_instances`, { vnfdId: '11111111-2222-4333-8444-555555555555' });
      assert.equal(other.status, unknown.status, other.body);
      assert.ok(other.status === 404 || other.status === 422 || other.status === 400, other.body);
      assert.equal(other.json().detail?.replace(pkgA.vnfdId, 'ID'), unknown.json().detail?.replace('11111111-2222-4333-8444-555555555555', 'ID'));
      assert.equal((await a.call('opB', 'POST', `/vnflcm/${v}/vnf_instances`, { vnfdId: pkgShared.vnfdId })).status, 201);
    }
    assert.equal((await a.call('opA', 'POST', '/vnflcm/v2/vnf_instances', { vnfdId: pkgA.vnfdId })).status, 201);
    assert.equal((await a.call('admin', 'POST', '/vnflcm/v2/vnf_instances', { vnfdId: pkgA.vnfdId })).status, 201, 'an admin uses any project');
    // a modification naming another project's package is refused the same way
    const instB = (await a.call('opB', 'POST', '/vnflcm/v2/vnf_instances', { vnfdId: pkgShared.vnfdId })).json().id as string;
    const mod = await a.call('opB', 'PATCH', `/vnflcm/v2/vnf_instances/${instB}`, { vnfdId: pkgA.vnfdId });
    assert.equal(mod.status, 422, mod.body);
    assert.match(mod.json().detail ?? '', /is not onboarded/);
    const v1inst = (await a.call('opB', 'POST', '/vnflcm/v1/vnf_instances', { vnfdId: pkgShared.vnfdId })).json().id as string;
    const mod1 = await a.call('opB', 'PATCH', `/vnflcm/v1/vnf_instances/${v1inst}`, { vnfPkgId: pkgA.id });
    assert.equal(mod1.status, 404, mod1.body);
    assert.equal(mod1.json().detail, `VNF package ${pkgA.id} not found`);
    const still = await vnfm.store.db.selectFrom('vnf_instance').select('vnf_pkg_id').where('id', 'in', [instB, v1inst]).execute();
    assert.ok(still.every((r) => r.vnf_pkg_id === pkgShared.id));
  });

  it("VIMs: another project's is a 404 and out of its lists; names are per project; a shared one is changed only by admins", async () => {
    const other = await a.call('opB', 'GET', `/v1.0/vims/${vimA}`);
    assert.equal(other.status, 404, other.body);
    assert.equal(other.json().detail, `VIM ${vimA} not found`);
    assert.equal((await a.call('opB', 'GET', `/v1.0/vims/${vimA}.json`)).status, 404);
    assert.equal((await a.call('opB', 'PUT', `/v1.0/vims/${vimA}`, { vim: { description: 'x' } })).status, 404);
    assert.equal((await a.call('opB', 'DELETE', `/v1.0/vims/${vimA}`)).status, 404);
    const listB = (await a.call('opB', 'GET', '/v1.0/vims')).json().vims as { id: string }[];
    assert.deepEqual(listB.map((v) => v.id), [vimShared]);
    assert.equal(((await a.call('opB', 'GET', '/v1.0/vims.json?name=vim-a')).json().vims as unknown[]).length, 0);
    assert.equal(((await a.call('admin', 'GET', '/v1.0/vims')).json().vims as unknown[]).length, 2);
    // project B may use the name vim-a too (and be its own default)
    const b = await a.call('opB', 'POST', '/v1.0/vims', a.vim('vim-a', false));
    assert.equal(b.status, 201, b.body);
    assert.equal((await a.call('opA', 'POST', '/v1.0/vims', a.vim('vim-a', false))).status, 409, 'names are unique within a project');
    const put = await a.call('opB', 'PUT', `/v1.0/vims/${vimShared}`, { vim: { description: 'x' } });
    assert.equal(put.status, 403, put.body);
    assert.equal((await a.call('admin', 'PUT', `/v1.0/vims/${vimShared}`, { vim: { description: 'by admin' } })).status, 200);
    assert.equal((await a.call('opB', 'DELETE', `/v1.0/vims/${(b.json().vim as { id: string }).id}`)).status, 204);
  });

  it("instantiate: another project's vimId is not registered (422, like an unknown one); the default VIM is the project's, else the shared one", async () => {
    const instB = (await a.call('opB', 'POST', '/vnflcm/v2/vnf_instances', { vnfdId: pkgShared.vnfdId })).json().id as string;
    const named = await a.call('opB', 'POST', `/vnflcm/v2/vnf_instances/${instB}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: { vimId: vimA, vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } } });
    const unknown = await a.call('opB', 'POST', `/vnflcm/v2/vnf_instances/${instB}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: { vimId: 'no-such-vim', vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } } });
    assert.equal(named.status, 422, named.body);
    assert.equal(named.json().detail, `vimConnectionInfo names VIM ${vimA}, which is not registered`);
    assert.equal(unknown.status, 422);
    assert.equal((await vnfm.store.db.selectFrom('op_occ').select('id').where('vnf_instance_id', '=', instB).execute()).length, 0, 'nothing was started');
    // the default VIM: project B has none, so the shared default; project A its own
    const vciOf = async (id: string) => (await vnfm.store.db.selectFrom('vnf_instance').select('vim_connection_info').where('id', '=', id).executeTakeFirstOrThrow()).vim_connection_info as Record<string, { vimId?: string }>;
    assert.equal((await a.call('opB', 'POST', `/vnflcm/v2/vnf_instances/${instB}/instantiate`, { flavourId: 'simple' })).status, 202);
    assert.equal((await vciOf(instB)).vim1?.vimId, vimShared);
    const instA = (await a.call('opA', 'POST', '/vnflcm/v2/vnf_instances', { vnfdId: pkgA.vnfdId })).json().id as string;
    assert.equal((await a.call('opA', 'POST', `/vnflcm/v2/vnf_instances/${instA}/instantiate`, { flavourId: 'simple' })).status, 202);
    assert.equal((await vciOf(instA)).vim1?.vimId, vimA);
  });
});

describe('VNF packages and VIMs shared by every project (auth.tenancy shared)', () => {
  let vnfm: TestVnfm;
  let a: ReturnType<typeof api>;
  before(async () => {
    vnfm = await testVnfm({ config: { apiAuth: 'token', apiTokens: [...TOKENS], auth: { tenancy: { packages: 'shared', vims: 'shared' } }, notifications: { testCallback: false } } });
    a = api(vnfm);
  });
  after(async () => vnfm?.close());

  it('only admins register packages and VIMs; every project sees and uses them', async () => {
    const refused = await a.call('opA', 'POST', '/vnfpkgm/v1/vnf_packages', {});
    assert.equal(refused.status, 403, refused.body);
    assert.equal((await a.call('opA', 'POST', '/v1.0/vims', a.vim('v', true))).status, 403);
    const pkg = await a.onboard('admin', csarOf(join(ROOT, 'samples/vm-basic')));
    const vim = await a.call('admin', 'POST', '/v1.0/vims', a.vim('v', true));
    assert.equal(vim.status, 201);
    for (const who of ['opA', 'opB', 'rdA'] as const) {
      assert.equal((await a.call(who, 'GET', `/vnfpkgm/v1/vnf_packages/${pkg.id}`)).status, 200);
      assert.equal((await a.call(who, 'GET', `/v1.0/vims/${(vim.json().vim as { id: string }).id}`)).status, 200);
    }
    assert.equal((await a.call('opB', 'POST', '/vnflcm/v2/vnf_instances', { vnfdId: pkg.vnfdId })).status, 201);
    const rows = await vnfm.store.db.selectFrom('vnf_package').select('project').execute();
    assert.ok(rows.every((r) => r.project === null));
  });
});
