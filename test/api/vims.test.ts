/**
 * The VIM registry API (`/v1.0/vims`, Tacker's legacy shape): register OpenStack and Kubernetes
 * VIMs, list / show / update / delete, one default per type, clear 409/422/404 errors, and
 * credentials that never leave the VNFM (masked in every response, absent from the logs, sealed
 * in the database).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';

const OS_PASSWORD = 'vims-test-Pa55w0rd-os';
const OS_PASSWORD_2 = 'vims-test-rotated-Pa55-2';
const K8S_TOKEN = 'vims-test-bearer-eyJhbGciOiJSUzI1NiJ9.k8s';
const K8S_CA = '-----BEGIN CERTIFICATE-----\nMIIvimstestca\n-----END CERTIFICATE-----';
/** Credentials: never returned, never logged, never stored in clear. */
const SECRETS = [OS_PASSWORD, OS_PASSWORD_2, K8S_TOKEN];

let vnfm: TestVnfm;
/** Every response body seen, checked for secrets at the end. */
const bodies: string[] = [];

async function req(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) {
  const r = await vnfm.app.inject({ method, url, ...(payload !== undefined ? { payload: payload as object } : {}) });
  bodies.push(r.body);
  return r;
}

function assertProblem(r: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, status: number): Record<string, unknown> {
  assert.equal(r.statusCode, status);
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
  const p = r.json();
  assert.equal(p.status, status);
  assert.ok(typeof p.detail === 'string' && p.detail.length > 0);
  return p;
}

function openstackVim(name: string, extra: Record<string, unknown> = {}) {
  return {
    vim: {
      name,
      type: 'openstack',
      description: 'lab cloud',
      auth_url: 'http://127.0.0.1:5000/v3',
      auth_cred: { username: 'nfv_user', password: OS_PASSWORD, user_domain_name: 'Default', cert_verify: 'False' },
      vim_project: { name: 'nfv', project_domain_name: 'Default' },
      ...extra,
    },
  };
}

function k8sVim(name: string, extra: Record<string, unknown> = {}) {
  return { vim: { name, type: 'kubernetes', auth_url: 'https://127.0.0.1:6443', auth_cred: { bearer_token: K8S_TOKEN, ssl_ca_cert: K8S_CA }, vim_project: { name: 'default' }, ...extra } };
}

async function register(body: unknown): Promise<Record<string, unknown>> {
  const r = await req('POST', '/v1.0/vims', body);
  assert.equal(r.statusCode, 201, r.body);
  return r.json().vim;
}

async function isDefault(id: string): Promise<boolean> {
  const r = await req('GET', `/v1.0/vims/${id}`);
  assert.equal(r.statusCode, 200);
  return r.json().vim.is_default as boolean;
}

before(async () => {
  vnfm = await testVnfm();
});
after(async () => {
  await vnfm?.close();
});

describe('VIM registry', () => {
  it('registers an OpenStack VIM and shows it with the password masked', async () => {
    const v = await register(openstackVim('os-1', { is_default: true }));
    assert.match(v.id as string, /^[0-9a-f-]{36}$/);
    assert.equal(v.name, 'os-1');
    assert.equal(v.type, 'openstack');
    assert.equal(v.auth_url, 'http://127.0.0.1:5000/v3');
    assert.equal(v.is_default, true);
    assert.equal(v.status, 'REACHABLE');
    assert.equal(v.tenant_id, 'nfv');
    const cred = v.auth_cred as Record<string, unknown>;
    assert.equal(cred.password, '***');
    assert.equal(cred.username, 'nfv_user');
    assert.equal(cred.cert_verify, false);
    assert.deepEqual(v.vim_project, { name: 'nfv', project_domain_name: 'Default' });

    const shown = await req('GET', `/v1.0/vims/${v.id as string}`);
    assert.equal(shown.statusCode, 200);
    assert.deepEqual(shown.json().vim, v);

    // the registry hands drivers the real credentials
    const conn = await vnfm.ctx.vims.complete({ vimId: v.id as string });
    assert.equal(conn.accessInfo.password, OS_PASSWORD);
    assert.equal(conn.accessInfo.project, 'nfv');
    assert.equal(conn.vimType, 'ETSINFV.OPENSTACK_KEYSTONE.V_3');
  });

  it('registers a Kubernetes VIM with the bearer token and CA masked; lists both', async () => {
    const k = await register(k8sVim('k8s-1', { is_default: true }));
    assert.equal(k.type, 'kubernetes');
    assert.deepEqual(k.auth_cred, { bearer_token: '***', ssl_ca_cert: '***' });
    assert.equal(k.is_default, true);
    const conn = await vnfm.ctx.vims.complete({ vimId: k.id as string });
    assert.equal(conn.accessInfo.bearer_token, K8S_TOKEN);
    assert.equal(conn.vimType, 'ETSINFV.KUBERNETES.V_1');

    const list = await req('GET', '/v1.0/vims');
    assert.equal(list.statusCode, 200);
    const vims = list.json().vims as Record<string, unknown>[];
    assert.deepEqual(vims.map((v) => v.name).sort(), ['k8s-1', 'os-1']);
    for (const v of vims) {
      const cred = v.auth_cred as Record<string, unknown>;
      if (v.type === 'openstack') assert.equal(cred.password, '***');
      else assert.equal(cred.bearer_token, '***');
    }
    // the OpenStack default is untouched by a Kubernetes default
    const os = vims.find((v) => v.name === 'os-1') as Record<string, unknown>;
    assert.equal(os.is_default, true);
  });

  it('updates description, credentials and the default flag; is_default moves within a type', async () => {
    const first = (await req('GET', '/v1.0/vims')).json().vims.find((v: { name: string }) => v.name === 'os-1');
    const second = await register(openstackVim('os-2', { is_default: true }));
    assert.equal(second.is_default, true);
    assert.equal(await isDefault(first.id), false, 'registering a new default moves the flag');
    assert.equal((await vnfm.ctx.vims.getDefault('openstack'))?.id, second.id);

    const u = await req('PUT', `/v1.0/vims/${first.id as string}`, { vim: { description: 'renamed cloud', is_default: true, auth_cred: { password: OS_PASSWORD_2 } } });
    assert.equal(u.statusCode, 200, u.body);
    const updated = u.json().vim;
    assert.equal(updated.description, 'renamed cloud');
    assert.equal(updated.is_default, true);
    assert.equal(updated.auth_cred.password, '***');
    assert.equal(updated.auth_cred.username, 'nfv_user', 'untouched settings are kept');
    assert.equal(await isDefault(second.id as string), false);
    assert.equal((await vnfm.ctx.vims.complete({ vimId: first.id })).accessInfo.password, OS_PASSWORD_2);

    const rename = await req('PUT', `/v1.0/vims/${second.id as string}`, { vim: { name: 'os-2b' } });
    assert.equal(rename.statusCode, 200, rename.body);
    assert.equal(rename.json().vim.name, 'os-2b');
    assertProblem(await req('PUT', `/v1.0/vims/${second.id as string}`, { vim: { name: 'os-1' } }), 409);
    assertProblem(await req('PUT', `/v1.0/vims/${second.id as string}`, { vim: { type: 'kubernetes' } }), 422);
    assertProblem(await req('PUT', '/v1.0/vims/00000000-0000-0000-0000-000000000000', { vim: { description: 'x' } }), 404);
  });

  it("answers python-tackerclient's spelling: `.json` paths and `?name=` / `?id=` / `fields` list queries", async () => {
    const all = (await req('GET', '/v1.0/vims.json')).json().vims as Record<string, unknown>[];
    assert.ok(all.length >= 3);
    const os1 = all.find((v) => v.name === 'os-1') as Record<string, unknown>;
    const byName = await req('GET', '/v1.0/vims.json?name=os-1&fields=id');
    assert.equal(byName.statusCode, 200);
    assert.deepEqual(byName.json(), { vims: [{ id: os1.id }] });
    assert.deepEqual((await req('GET', `/v1.0/vims.json?id=${os1.id as string}&fields=id`)).json(), { vims: [{ id: os1.id }] });
    assert.deepEqual((await req('GET', '/v1.0/vims?name=no-such-vim')).json(), { vims: [] });
    const k8s = (await req('GET', '/v1.0/vims?type=kubernetes&fields=name&fields=type')).json().vims;
    assert.deepEqual(k8s, [{ id: (all.find((v) => v.name === 'k8s-1') as Record<string, unknown>).id, name: 'k8s-1', type: 'kubernetes' }]);
    const shown = await req('GET', `/v1.0/vims/${os1.id as string}.json`);
    assert.equal(shown.statusCode, 200);
    assert.equal(shown.json().vim.name, 'os-1');
    const created = await req('POST', '/v1.0/vims.json', openstackVim('os-json'));
    assert.equal(created.statusCode, 201, created.body);
    const put = await req('PUT', `/v1.0/vims/${created.json().vim.id as string}.json`, { vim: { description: 'via .json' } });
    assert.equal(put.json().vim.description, 'via .json');
    assert.equal((await req('DELETE', `/v1.0/vims/${created.json().vim.id as string}.json`)).statusCode, 204);
  });

  it('refuses duplicates (409), bad types and incomplete credentials (422), malformed bodies (400), without storing anything', async () => {
    const count = async () => (await vnfm.store.db.selectFrom('vim').select('id').execute()).length;
    const n0 = await count();
    const dup = await req('POST', '/v1.0/vims', openstackVim('os-1'));
    assertProblem(dup, 409);
    assert.match(dup.json().detail as string, /os-1/);
    const badType = await req('POST', '/v1.0/vims', { vim: { ...openstackVim('x').vim, type: 'vmware' } });
    assertProblem(badType, 422);
    assert.match(badType.json().detail as string, /vmware/);
    assertProblem(await req('POST', '/v1.0/vims', { vim: { ...openstackVim('x').vim, auth_cred: { username: 'u' } } }), 422);
    assertProblem(await req('POST', '/v1.0/vims', { vim: { ...openstackVim('x').vim, vim_project: {} } }), 422);
    assertProblem(await req('POST', '/v1.0/vims', { vim: { ...k8sVim('y').vim, auth_cred: {} } }), 422);
    assertProblem(await req('POST', '/v1.0/vims', { vim: { ...openstackVim('x').vim, auth_url: 'ftp://example' } }), 422);
    assertProblem(await req('POST', '/v1.0/vims', { vim: { ...openstackVim('x').vim, is_default: 'yes' } }), 400);
    assertProblem(await req('POST', '/v1.0/vims', { name: 'no-wrapper' }), 400);
    assertProblem(await req('POST', '/v1.0/vims', { vim: { type: 'openstack' } }), 400);
    assert.equal(await count(), n0);
  });

  it('deletes VIMs (204, then 404); a VIM used by an instantiated VNF is kept (409)', async () => {
    const tmp = await register(openstackVim('os-tmp'));
    const d = await req('DELETE', `/v1.0/vims/${tmp.id as string}`);
    assert.equal(d.statusCode, 204);
    assertProblem(await req('GET', `/v1.0/vims/${tmp.id as string}`), 404);
    assertProblem(await req('DELETE', `/v1.0/vims/${tmp.id as string}`), 404);

    // simulate an instantiated VNF on a VIM: the registry refuses to delete it
    const used = await register(openstackVim('os-used'));
    const pkgId = '11111111-0000-4000-8000-000000000001';
    await vnfm.store.db
      .insertInto('vnf_package')
      .values({ id: pkgId, onboarding_state: 'ONBOARDED', operational_state: 'ENABLED', usage_state: 'IN_USE', vnfd_id: 'vnfd-x', checksum: 'null', user_defined_data: '{}', vnfd: 'null' })
      .execute();
    await vnfm.store.db
      .insertInto('vnf_instance')
      .values({
        id: '22222222-0000-4000-8000-000000000002',
        vnf_instance_name: null,
        vnf_instance_description: null,
        vnfd_id: 'vnfd-x',
        vnf_pkg_id: pkgId,
        vnf_provider: 'p',
        vnf_product_name: 'n',
        vnf_software_version: '1',
        vnfd_version: '1',
        instantiation_state: 'INSTANTIATED',
        vnf_configurable_properties: 'null',
        vim_connection_info: JSON.stringify({ vim1: { vimId: used.id, vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } }),
        vim_secrets: null,
        instantiated_vnf_info: 'null',
        metadata: 'null',
        extensions: 'null',
        created_api: 'v2',
        rev: 0,
      })
      .execute();
    const busy = await req('DELETE', `/v1.0/vims/${used.id as string}`);
    assertProblem(busy, 409);
    assert.match(busy.json().detail as string, /22222222-0000-4000-8000-000000000002/);
    await vnfm.store.db.deleteFrom('vnf_instance').where('id', '=', '22222222-0000-4000-8000-000000000002').execute();
    await vnfm.store.db.deleteFrom('vnf_package').where('id', '=', pkgId).execute();
    assert.equal((await req('DELETE', `/v1.0/vims/${used.id as string}`)).statusCode, 204);
  });

  it('secrets never appear in any response, in the logs, or in clear in the database', async () => {
    // a few more reads for good measure
    bodies.push((await vnfm.app.inject({ method: 'GET', url: '/v1.0/vims' })).body);
    // the CA certificate is public data (kept in the config column) but, like Tacker, never echoed
    for (const b of bodies) for (const s of [...SECRETS, 'MIIvimstestca']) assert.ok(!b.includes(s), `secret in a response: ${b.slice(0, 200)}`);
    const logs = vnfm.logs.join('');
    assert.ok(logs.length > 0, 'the VNFM logged something');
    for (const s of SECRETS) assert.ok(!logs.includes(s), `secret ${s.slice(0, 8)}... in the logs`);
    const rows = await vnfm.store.db.selectFrom('vim').selectAll().execute();
    assert.ok(rows.length >= 3);
    for (const r of rows) {
      assert.match(r.secret, /^v2:[0-9a-f]{8}:/, 'sealed (with the id of its key)');
      for (const s of SECRETS) assert.ok(!r.secret.includes(s), 'secret column holds no clear text');
      for (const s of SECRETS) assert.ok(!JSON.stringify(r.config).includes(s), 'config column holds no secret');
    }
  });
});
