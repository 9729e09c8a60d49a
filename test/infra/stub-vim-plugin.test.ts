/**
 * A third VIM type added through the VIM plugin seam alone (src/infra/vim-plugin.ts): a stub
 * plugin given to the composition root (`startVnfm(config, { vimPlugins })`) is served by the VIM
 * registry (registration with its own credential rules, masked representation, default per type),
 * by the engine (its driver runs the operations) and by the drift sync (it syncs by default), and
 * an instance is instantiated and terminated on a VIM of that type registered through the API.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { vnfmError } from '../../src/errors.ts';
import type { VimPlugin } from '../../src/infra/vim-plugin.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

const STUB_VIM_TYPE = 'TEST.STUB.V_1';
const STUB_KEY = 'stub-vim-api-key-not-to-be-shown';
const V2 = { version: '2.0.0' };

/** The fake in-memory driver, serving the stub type. */
class StubDriver extends FakeDriver {
  override readonly vimTypes = [STUB_VIM_TYPE];
  /** The connections the operations were given. */
  readonly seen: Record<string, unknown>[] = [];
  override async instantiate(ctx: Parameters<FakeDriver['instantiate']>[0]): Promise<void> {
    this.seen.push({ vimType: ctx.vim.vimType, ...ctx.vim.accessInfo, ...ctx.vim.interfaceInfo });
    await super.instantiate(ctx);
  }
}

const drivers: StubDriver[] = [];
const stubVimPlugin: VimPlugin = {
  kind: 'stub',
  vimType: STUB_VIM_TYPE,
  aliases: ['TEST.STUB.V_0'],
  credentialKey: 'api_key',
  applyRegistration(input, _prev, config, secret) {
    const cred = input.auth_cred ?? {};
    if (typeof cred.api_key === 'string') secret.password = cred.api_key;
    if (!secret.password) throw vnfmError('VNFM_ERR_VIM_INVALID', 'a stub VIM needs auth_cred.api_key');
    config.projectName = typeof input.vim_project?.name === 'string' ? input.vim_project.name : 'stub-tenant';
  },
  toConnection: (v) => ({ vimId: v.id, vimType: STUB_VIM_TYPE, interfaceInfo: { endpoint: v.config.authUrl }, accessInfo: { apiKey: v.secret.password, tenant: v.config.projectName }, extra: {} }),
  toApi: (v) => ({ authCred: { api_key: '***' }, vimProject: { name: v.config.projectName } }),
  createDriver: () => {
    const d = new StubDriver();
    drivers.push(d);
    return d;
  },
  syncByDefault: true,
  deploysPackage: () => false,
};

let vnfm: TestVnfm;
let vnfdId: string;

async function api(method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) {
  return vnfm.app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
}

describe('a stub VIM type registered through the composition root', () => {
  before(async () => {
    vnfm = await testVnfm({ vimPlugins: [stubVimPlugin], config: { runner: { pollMs: 50, leaseMs: 60_000 } } });
    const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
  });
  after(async () => {
    await vnfm?.close();
  });

  it('is one of the VIM plugins, after the built-in ones, and synced by default', () => {
    assert.equal(drivers.length, 1, 'the engine built one driver from the plugin');
    assert.deepEqual(vnfm.ctx.vimPlugins.vimTypes().slice(-1), [STUB_VIM_TYPE]);
    assert.ok(vnfm.ctx.vimPlugins.syncVimTypes().includes(STUB_VIM_TYPE));
    assert.equal(vnfm.ctx.engine.drivers.find(STUB_VIM_TYPE), drivers[0]);
  });

  it('validates a registration with its own rules and names it among the supported types', async () => {
    const missing = await api('POST', '/v1.0/vims', { vim: { name: 'stub-bad', type: 'stub', auth_url: 'http://127.0.0.1:1/stub', auth_cred: {} } });
    assert.equal(missing.statusCode, 422, missing.body);
    assert.match(missing.json().detail, /a stub VIM needs auth_cred\.api_key/);
    const unknown = await api('POST', '/v1.0/vims', { vim: { name: 'x', type: 'nope', auth_url: 'http://127.0.0.1:1/x', auth_cred: {} } });
    assert.equal(unknown.statusCode, 422, unknown.body);
    assert.match(unknown.json().detail, /VIM type 'nope' is not supported; use openstack, kubernetes or stub/);
  });

  it('instantiates and terminates an instance on a registered stub VIM through the stub driver', async () => {
    const reg = await api('POST', '/v1.0/vims', { vim: { name: 'stub-1', type: 'stub', auth_url: 'http://127.0.0.1:1/stub', auth_cred: { api_key: STUB_KEY }, vim_project: { name: 't1' }, is_default: true } });
    assert.equal(reg.statusCode, 201, reg.body);
    const vim = reg.json().vim;
    assert.equal(vim.type, 'stub');
    assert.deepEqual(vim.auth_cred, { api_key: '***' });
    assert.ok(!reg.body.includes(STUB_KEY));
    assert.equal((await vnfm.ctx.vims.getDefault('stub'))?.id, vim.id);

    const created = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: 'on-stub' });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().id as string;
    // named by vimId with a legacy alias of the type: completed from the registry
    const inst = await api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: { vimId: vim.id, vimType: 'test.stub.v_0' } } });
    assert.equal(inst.statusCode, 202, inst.body);
    await vnfm.ctx.engine.runner.idle();
    const occ = (await api('GET', String(inst.headers.location).replace(/^https?:\/\/[^/]+/, ''))).json();
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const driver = drivers[0] as StubDriver;
    assert.ok(driver.calls.includes('instantiate'));
    assert.deepEqual(driver.seen, [{ vimType: STUB_VIM_TYPE, apiKey: STUB_KEY, tenant: 't1', endpoint: 'http://127.0.0.1:1/stub' }]);
    const shown = (await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).json();
    assert.equal(shown.instantiationState, 'INSTANTIATED');
    assert.equal(shown.vimConnectionInfo.vim1.vimType, STUB_VIM_TYPE);
    assert.equal(shown.instantiatedVnfInfo.vnfcResourceInfo.length, 3);

    const term = await api('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
    assert.equal(term.statusCode, 202, term.body);
    await vnfm.ctx.engine.runner.idle();
    assert.equal((await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).json().instantiationState, 'NOT_INSTANTIATED');
    assert.ok(driver.calls.includes('terminate'));
  });
});
