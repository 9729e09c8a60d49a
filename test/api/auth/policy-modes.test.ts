/**
 * The policy file, `/metrics` and `/docs` rules, the Keystone cache and its failure, OAuth 2.0
 * introspection at an external server, and the fault intake under API authentication:
 * - a policy file raises or lowers a route's role; one naming a route that does not exist stops
 *   the start with the route named;
 * - `/metrics` and `/docs` are open from loopback and need a caller from elsewhere (default);
 * - a Keystone token is validated once and then served from the cache; Keystone role names map
 *   through `roleMap`; Keystone down is a 503, not a 500;
 * - an introspected token (RFC 7662) maps scopes and the project claim, is cached, and an
 *   inactive one is a 401;
 * - the fault intake takes the Server Notifier's own bearer credential or an API token; without
 *   either it is a 401 and nothing is stored.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../../helpers/app.ts';
import { FakeKeystone } from '../../helpers/auth.ts';
import { type Receiver, startReceiver } from '../../notify/fixture.ts';

const dir = mkdtempSync(join(tmpdir(), 'vnfm-policy-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const TOKENS = [
  { token: 'pol-admin', role: 'admin' as const },
  { token: 'pol-operator', role: 'operator' as const, project: 'p1' },
  { token: 'pol-reader', role: 'reader' as const, project: 'p1' },
];

describe('policy file and open endpoints', () => {
  let vnfm: TestVnfm;
  before(async () => {
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, ['"GET /vnflcm/v2/vnf_instances": operator', '"POST /vnflcm/v2/vnf_instances/:id/heal": admin', '"GET /vnflcm/v1/api_versions": open', ''].join('\n'));
    vnfm = await testVnfm({ config: { apiAuth: 'token', apiTokens: TOKENS, auth: { policyFile: file } } });
  });
  after(async () => vnfm?.close());
  const get = (url: string, token?: string, remoteAddress = '127.0.0.1') => vnfm.app.inject({ method: 'GET', url, remoteAddress, headers: { version: '2.0.0', ...(token ? { 'x-auth-token': token } : {}) } });

  it('overrides raise and lower the role of a route; the 403 names the role', async () => {
    const r = await get('/vnflcm/v2/vnf_instances', 'pol-reader');
    assert.equal(r.statusCode, 403);
    assert.match(r.json().detail, /role operator is required for GET \/vnflcm\/v2\/vnf_instances; \S+ has role reader/);
    assert.equal((await get('/vnflcm/v2/vnf_instances', 'pol-operator')).statusCode, 200);
    assert.equal((await get('/vnflcm/v1/vnf_instances', 'pol-reader')).statusCode, 200, 'the v1 list keeps its default');
    const heal = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances/x/heal', headers: { version: '2.0.0', 'x-auth-token': 'pol-operator' }, payload: {} });
    assert.equal(heal.statusCode, 403);
    assert.match(heal.json().detail, /role admin is required/);
    assert.equal((await get('/vnflcm/v1/api_versions')).statusCode, 200, 'opened by the policy');
  });

  it('/metrics and /docs: open from loopback, a caller needed from elsewhere', async () => {
    for (const url of ['/metrics', '/docs/json']) {
      assert.equal((await get(url)).statusCode, 200, url);
      const remote = await get(url, undefined, '10.20.30.40');
      assert.equal(remote.statusCode, 401, url);
      assert.ok(remote.headers['www-authenticate']);
      assert.equal((await get(url, 'pol-reader', '10.20.30.40')).statusCode, 200, url);
    }
  });

  it('a policy file naming a route that does not exist stops the start', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ 'POST /vnflcm/v2/vnf_instancez': 'admin' }));
    await assert.rejects(testVnfm({ config: { apiAuth: 'token', apiTokens: TOKENS, auth: { policyFile: file } } }), /policyFile names routes that do not exist: POST \/vnflcm\/v2\/vnf_instancez/);
    writeFileSync(file, JSON.stringify({ 'GET /metrics': 'root' }));
    await assert.rejects(testVnfm({ config: { apiAuth: 'token', apiTokens: TOKENS, auth: { policyFile: file } } }), /must be one of reader, operator, admin, authenticated, open/);
  });
});

describe('keystone mode: cache, role map, Keystone down', () => {
  let ks: FakeKeystone;
  let vnfm: TestVnfm;
  before(async () => {
    ks = new FakeKeystone({ username: 'svc', password: 'svc-pw' });
    const url = await ks.start();
    ks.tokens.set('tok-a', { id: 'u1', name: 'alice', project: 'p1', roles: ['_member_'] });
    ks.tokens.set('tok-r', { id: 'u2', name: 'rob', project: 'p1', roles: ['observer'] });
    vnfm = await testVnfm({ config: { apiAuth: 'keystone', auth: { keystone: { authUrl: url, username: 'svc', password: 'svc-pw', projectName: 'service', roleMap: { _member_: 'operator', observer: 'reader' } } } } });
  });
  after(async () => {
    await vnfm?.close();
    await ks?.close();
  });
  const call = (method: 'GET' | 'POST', token: string) => vnfm.app.inject({ method, url: '/vnflcm/v1/vnf_instances', headers: { 'x-auth-token': token }, ...(method === 'POST' ? { payload: { vnfdId: 'none' } } : {}) });

  it('one Keystone validation per token, then the cache; mapped roles decide', async () => {
    const before = ks.validations;
    for (let i = 0; i < 5; i++) assert.equal((await call('GET', 'tok-a')).statusCode, 200);
    assert.equal(ks.validations - before, 1, 'validated once');
    assert.equal((await call('POST', 'tok-r')).statusCode, 403, 'observer -> reader cannot create');
    assert.equal((await call('POST', 'tok-a')).statusCode, 422, '_member_ -> operator may create (the vnfdId is unknown)');
  });

  it('Keystone down: 503 ProblemDetails for a new token, never 500; cached tokens keep working', async () => {
    await ks.close();
    const r = await call('GET', 'tok-new');
    assert.equal(r.statusCode, 503, r.body);
    assert.match(r.json().detail, /Keystone/);
    assert.equal((await call('GET', 'tok-a')).statusCode, 200);
  });
});

describe('oauth2 mode with an external authorization server (RFC 7662 introspection)', () => {
  let rx: Receiver;
  let vnfm: TestVnfm;
  let introspections = 0;
  before(async () => {
    rx = await startReceiver();
    rx.handlers.set('/introspect', (r) => {
      introspections++;
      if (r.headers.authorization !== `Basic ${Buffer.from('vnfm-rs:rs-secret').toString('base64')}`) return { status: 401, body: { error: 'invalid_client' } };
      const token = new URLSearchParams(r.body).get('token');
      if (token === 'ext-operator') return { status: 200, body: { active: true, scope: 'vnflcm.write other', client_id: 'nfvo-x', sub: 'nfvo-x', tenant: 'p9', exp: Math.floor(Date.now() / 1000) + 600 } };
      if (token === 'ext-reader') return { status: 200, body: { active: true, scope: 'reader', client_id: 'viewer', exp: Math.floor(Date.now() / 1000) + 600 } };
      return { status: 200, body: { active: false } };
    });
    vnfm = await testVnfm({
      config: {
        apiAuth: 'oauth2',
        auth: { oauth2: { scopeMap: { 'vnflcm.write': 'operator' }, introspection: { endpoint: `${rx.url}/introspect`, clientId: 'vnfm-rs', clientSecret: 'rs-secret', projectClaim: 'tenant' } } },
      },
    });
  });
  after(async () => {
    await vnfm?.close();
    await rx?.close();
  });

  it('active tokens map scopes to roles and the project claim to the tenant; inactive ones are 401; answers are cached', async () => {
    const call = (method: 'GET' | 'POST', token: string) => vnfm.app.inject({ method, url: '/vnflcm/v1/vnf_instances', headers: { authorization: `Bearer ${token}` }, ...(method === 'POST' ? { payload: { vnfdId: 'none' } } : {}) });
    assert.equal((await call('POST', 'ext-operator')).statusCode, 422);
    assert.equal((await call('POST', 'ext-reader')).statusCode, 403);
    assert.equal((await call('GET', 'ext-reader')).statusCode, 200);
    const n = introspections;
    for (let i = 0; i < 3; i++) assert.equal((await call('GET', 'ext-operator')).statusCode, 200);
    assert.equal(introspections, n, 'cached');
    const bad = await call('GET', 'ext-revoked');
    assert.equal(bad.statusCode, 401);
    assert.match(String(bad.headers['www-authenticate']), /Bearer realm="vnfm", error="invalid_token"/);
  });
});

describe('fault intake under API authentication', () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm({ config: { apiAuth: 'token', apiTokens: TOKENS, faultNotification: { auth: 'bearer', credential: 'notifier-bearer-3c' } } });
  });
  after(async () => vnfm?.close());

  it('the Server Notifier credential or an API token of an operator; nothing else', async () => {
    const post = (headers: Record<string, string>) =>
      vnfm.app.inject({ method: 'POST', url: '/server_notification/vnf_instances/none/servers/s1/notify', headers, payload: { notification: { alarm_id: 'a1', fault_id: '1234', fault_type: '10' } } });
    const count = async () => (await vnfm.store.db.selectFrom('vnf_instance').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n;
    const before = await count();
    assert.equal((await post({ authorization: 'Bearer notifier-bearer-3c' })).statusCode, 404, 'authenticated; the instance is unknown');
    assert.equal((await post({ 'x-auth-token': 'pol-operator' })).statusCode, 404, 'an API operator may notify');
    assert.equal((await post({ 'x-auth-token': 'pol-reader' })).statusCode, 403);
    for (const h of [{}, { authorization: 'Bearer wrong' }] as Record<string, string>[]) {
      const r = await post(h);
      assert.equal(r.statusCode, 401);
      assert.ok(r.headers['www-authenticate']);
    }
    assert.equal((await vnfm.store.db.selectFrom('fault_notification' as never).select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n, 0);
    assert.equal(await count(), before);
  });
});

describe('liveness port with health.public false and no static token', () => {
  it('accepts a Keystone or OAuth 2.0 token (checked by the main thread, then kept by the worker); refuses none or a wrong one', async () => {
    const ks = new FakeKeystone({ username: 'svc', password: 'svc-pw' });
    const url = await ks.start();
    ks.tokens.set('tok-probe', { id: 'u', name: 'prober', roles: ['reader'] });
    const { freePort } = await import('../../helpers/app.ts');
    const vnfm = await testVnfm({ listen: true, config: { apiAuth: ['keystone', 'oauth2'], auth: { keystone: { authUrl: url, username: 'svc', password: 'svc-pw', projectName: 'service' } }, health: { public: false, livenessPort: await freePort() } } });
    try {
      const probe = (h: Record<string, string> = {}) => fetch(`${vnfm.livenessUrl}/healthz`, { headers: h });
      assert.equal((await probe()).status, 401);
      assert.equal((await probe({ 'x-auth-token': 'tok-forged' })).status, 401);
      assert.equal((await probe({ authorization: 'Basic dTpw' })).status, 401);
      const ok = await probe({ 'x-auth-token': 'tok-probe' });
      assert.equal(ok.status, 200);
      assert.equal(((await ok.json()) as { status: string }).status, 'ok');
      // kept by the worker: Keystone no longer knowing the token does not matter for the probe (for 30 s)
      ks.tokens.delete('tok-probe');
      assert.equal((await probe({ 'x-auth-token': 'tok-probe' })).status, 200);
      // a token of the built-in OAuth 2.0 server
      const { OAuthService } = await import('../../../src/api/auth/oauth2.ts');
      const c = await new OAuthService(vnfm.store.db, vnfm.ctx.config.auth.oauth2).register({ name: 'kubelet', role: 'reader' });
      const t = await fetch(`${vnfm.url}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret }).toString() });
      const token = ((await t.json()) as { access_token: string }).access_token;
      assert.equal((await probe({ authorization: `Bearer ${token}` })).status, 200);
      assert.equal((await fetch(`${vnfm.url}/healthz`)).status, 401);
    } finally {
      await vnfm.close();
      await ks.close();
    }
  });
});
