/**
 * An NFVO using the VNFM with OAuth 2.0 client credentials both ways (SOL013):
 * - an admin registers the NFVO's client through the API (the secret is answered once, stored
 *   only hashed); the NFVO gets a token from `POST /token` (client_secret_basic and
 *   client_secret_post) and subscribes with OAuth 2.0 toward its own callback (the VNFM fetches a
 *   token from the NFVO's token endpoint and sends it with every notification); its LCM calls
 *   produce notifications it receives, with that token;
 * - a second NFVO of another project neither sees the first one's resources nor receives their
 *   notifications; a deleted client's tokens stop working;
 * - certificate-bound tokens (RFC 8705): a token issued over mTLS works only with the same
 *   client certificate.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { OAuthService } from '../../../src/api/auth/oauth2.ts';
import { type TestVnfm, testVnfm } from '../../helpers/app.ts';
import { type KeyCert, TestPki, httpsCall } from '../../helpers/auth.ts';
import { FAKE_VIM, FakeDriver } from '../../helpers/fake-driver.ts';
import { ROOT, csarOf } from '../../helpers/packages.ts';
import { until } from '../../helpers/wait.ts';
import { type Receiver, startReceiver } from '../../notify/fixture.ts';

describe('OAuth 2.0 client credentials: an NFVO flow', () => {
  let vnfm: TestVnfm;
  let rx: Receiver;
  let adminToken = '';
  const fake = new FakeDriver();
  const nfvoTokens = new Set<string>();

  const call = (method: string, url: string, token: string, payload?: unknown) =>
    vnfm.app.inject({ method: method as 'GET', url, headers: { version: '2.0.0', authorization: `Bearer ${token}` }, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const tokenOf = async (c: { clientId: string; clientSecret: string }, how: 'basic' | 'post'): Promise<string> => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', ...(how === 'post' ? { client_id: c.clientId, client_secret: c.clientSecret } : {}) });
    const r = await vnfm.app.inject({
      method: 'POST',
      url: '/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(how === 'basic' ? { authorization: `Basic ${Buffer.from(`${encodeURIComponent(c.clientId)}:${encodeURIComponent(c.clientSecret)}`).toString('base64')}` } : {}) },
      payload: form.toString(),
    });
    assert.equal(r.statusCode, 200, r.body);
    return r.json().access_token as string;
  };

  before(async () => {
    rx = await startReceiver();
    // the NFVO's own authorization server: it gives the VNFM tokens for the callbacks
    rx.handlers.set('/nfvo/token', (r) => {
      if (r.headers.authorization !== `Basic ${Buffer.from('vnfm-at-nfvo:nfvo-side-secret-31').toString('base64')}`) return { status: 401, body: { error: 'invalid_client' } };
      const t = `nfvo-tok-${randomUUID()}`;
      nfvoTokens.add(t);
      return { status: 200, body: { access_token: t, token_type: 'Bearer', expires_in: 3600 } };
    });
    const callback = (r: { headers: Record<string, string | string[] | undefined> }) => (nfvoTokens.has(String(r.headers.authorization ?? '').replace(/^Bearer /, '')) ? 204 : 401);
    rx.handlers.set('/nfvo/a/callback', callback);
    rx.handlers.set('/nfvo/b/callback', callback);
    vnfm = await testVnfm({ plugins: [(ctx) => ctx.engine?.drivers.register(fake)], config: { apiAuth: 'oauth2', runner: { pollMs: 20 }, notifications: { testCallback: true, backoffMs: 20, maxBackoffMs: 50 } } });
    // bootstrap: the first admin client (the `vnfm oauth2-client` command or the database); the rest through the API
    const admin = await new OAuthService(vnfm.store.db, vnfm.ctx.config.auth.oauth2).register({ name: 'bootstrap-admin', role: 'admin' });
    adminToken = await tokenOf(admin, 'basic');
    const c = await call('POST', '/vnfpkgm/v1/vnf_packages', adminToken, {});
    const pkg = c.json().id as string;
    const up = await vnfm.app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${pkg}/package_content`, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/zip' }, payload: csarOf(join(ROOT, 'samples/vm-basic')) });
    assert.equal(up.statusCode, 202, up.body);
    await vnfm.ctx.packages.idle();
  });
  after(async () => {
    await vnfm?.close();
    await rx?.close();
  });

  it('token, subscription with OAuth to the callback, LCM calls, notifications received with the NFVO token; tenants kept apart', async () => {
    // an admin registers the two NFVOs' clients; the secret is answered once and stored only hashed
    const reg = async (name: string, project: string) => {
      const r = await call('POST', '/vnfm/v1/oauth2/clients', adminToken, { name, role: 'operator', project });
      assert.equal(r.statusCode, 201, r.body);
      const b = r.json() as { clientId: string; clientSecret: string; tokenEndpoint: string };
      assert.match(b.tokenEndpoint, /\/token$/);
      const stored = await vnfm.store.db.selectFrom('oauth_client').select('secret_hash').where('id', '=', b.clientId).executeTakeFirstOrThrow();
      assert.ok(!stored.secret_hash.includes(b.clientSecret) && stored.secret_hash.startsWith('scrypt$'));
      const shown = await call('GET', `/vnfm/v1/oauth2/clients/${b.clientId}`, adminToken);
      assert.ok(!shown.body.includes(b.clientSecret) && !shown.body.includes('secret'), shown.body);
      return b;
    };
    const a = await reg('nfvo-a', 'tenant-a');
    const b = await reg('nfvo-b', 'tenant-b');
    const tokA = await tokenOf(a, 'basic');
    const tokB = await tokenOf(b, 'post');
    const issued = await vnfm.store.db.selectFrom('oauth_token').select('token_hash').execute();
    assert.ok(issued.every((t) => t.token_hash !== tokA && t.token_hash !== tokB), 'tokens are stored as hashes');

    const subscribe = async (tok: string, who: string) => {
      const r = await call('POST', '/vnflcm/v2/subscriptions', tok, {
        callbackUri: `${rx.url}/nfvo/${who}/callback`,
        authentication: { authType: ['OAUTH2_CLIENT_CREDENTIALS'], paramsOauth2ClientCredentials: { clientId: 'vnfm-at-nfvo', clientPassword: 'nfvo-side-secret-31', tokenEndpoint: `${rx.url}/nfvo/token` } },
      });
      assert.equal(r.statusCode, 201, r.body);
      return r.json().id as string;
    };
    const subA = await subscribe(tokA, 'a');
    const subB = await subscribe(tokB, 'b');
    // B does not see A's subscription
    assert.equal((await call('GET', `/vnflcm/v2/subscriptions/${subA}`, tokB)).statusCode, 404);
    assert.ok(!(await call('GET', '/vnflcm/v2/subscriptions', tokB)).body.includes(subA));

    const vnfdId = (await call('GET', '/vnfpkgm/v1/vnf_packages', tokA)).json()[0].vnfdId as string;
    const created = await call('POST', '/vnflcm/v2/vnf_instances', tokA, { vnfdId, vimConnectionInfo: { vim1: FAKE_VIM } });
    assert.equal(created.statusCode, 201, created.body);
    const inst = created.json().id as string;
    const started = await call('POST', `/vnflcm/v2/vnf_instances/${inst}/instantiate`, tokA, { flavourId: 'simple' });
    assert.equal(started.statusCode, 202, started.body);
    const opId = String(started.headers.location).split('/').pop() as string;
    await until('A received the creation and the instantiate START and RESULT', () => {
      const got = rx.requests.filter((r) => r.path === '/nfvo/a/callback' && r.method === 'POST' && r.json?.vnfInstanceId === inst);
      const kinds = got.map((r) => `${r.json?.notificationType}:${r.json?.notificationStatus ?? ''}`);
      return kinds.includes('VnfIdentifierCreationNotification:') && kinds.includes('VnfLcmOperationOccurrenceNotification:START') && kinds.includes('VnfLcmOperationOccurrenceNotification:RESULT') ? got : undefined;
    }, 60_000, 50);
    const toA = rx.requests.filter((r) => r.path === '/nfvo/a/callback' && r.method === 'POST');
    for (const r of toA) assert.ok(nfvoTokens.has(String(r.headers.authorization).replace(/^Bearer /, '')), 'each notification carries a token of the NFVO');
    assert.equal((await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`, tokA)).json().operationState, 'COMPLETED');
    // B: not its project -> 404, no notification about A's instance, its list is empty
    assert.equal((await call('GET', `/vnflcm/v2/vnf_instances/${inst}`, tokB)).statusCode, 404);
    assert.equal((await call('POST', `/vnflcm/v2/vnf_instances/${inst}/heal`, tokB, {})).statusCode, 404);
    assert.deepEqual((await call('GET', '/vnflcm/v2/vnf_instances', tokB)).json(), []);
    const outboxB = await vnfm.store.db.selectFrom('outbox').select('id').where('subscription_id', '=', subB).execute();
    assert.equal(outboxB.length, 0, "B's subscription heard nothing of A's instance");

    // a deleted client's token stops working at once in this process
    assert.equal((await call('DELETE', `/vnfm/v1/oauth2/clients/${b.clientId}`, adminToken)).statusCode, 204);
    const gone = await call('GET', '/vnflcm/v2/vnf_instances', tokB);
    assert.equal(gone.statusCode, 401);
    assert.match(String(gone.headers['www-authenticate']), /error="invalid_token"/);
    // an operator cannot manage clients
    assert.equal((await call('GET', '/vnfm/v1/oauth2/clients', tokA)).statusCode, 403);
    // no secret of either side, nor any token, in the log
    const logs = vnfm.logs.join('');
    assert.ok(logs.includes('OAuth 2.0 token issued'), 'the log was captured');
    for (const s of [a.clientSecret, b.clientSecret, tokA, tokB, adminToken, 'nfvo-side-secret-31', ...nfvoTokens]) assert.ok(!logs.includes(s), 'a secret reached the log');
  });
});

describe('certificate-bound OAuth 2.0 tokens (RFC 8705) over mTLS', () => {
  let vnfm: TestVnfm;
  let pki: TestPki;
  let mine: KeyCert;
  let other: KeyCert;
  let secret: { clientId: string; clientSecret: string };

  before(async () => {
    pki = new TestPki();
    mine = pki.issue('nfvo-a', 'nfvo-a');
    other = pki.issue('nfvo-x', 'nfvo-x');
    vnfm = await testVnfm({ listen: true, config: { apiAuth: ['oauth2', 'mtls'], auth: { mtls: { certFile: pki.server.certFile, keyFile: pki.server.keyFile, caFile: pki.ca.certFile, clients: [] } } } });
    secret = await new OAuthService(vnfm.store.db, vnfm.ctx.config.auth.oauth2).register({ name: 'bound', role: 'reader', certificateBound: true });
  });
  after(async () => {
    await vnfm?.close();
    pki?.close();
  });

  const token = (client?: KeyCert) =>
    httpsCall(vnfm.url, {
      method: 'POST',
      path: '/token',
      ca: pki.ca.cert,
      ...(client ? { client } : {}),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: secret.clientId, client_secret: secret.clientSecret }).toString(),
    });

  it('the token works with the certificate it was issued over, not with another one nor without one', async () => {
    assert.ok(vnfm.url.startsWith('https://'));
    const refused = await token();
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(refused.json().error, 'unauthorized_client', 'a certificate-bound client must present its certificate');
    const t = await token(mine);
    assert.equal(t.statusCode, 200, t.body);
    const access = t.json().access_token as string;
    const row = await vnfm.store.db.selectFrom('oauth_token').select('cnf_x5t').executeTakeFirstOrThrow();
    assert.match(String(row.cnf_x5t), /^[A-Za-z0-9_-]{43}$/, 'x5t#S256 thumbprint stored');
    const get = (client?: KeyCert) => httpsCall(vnfm.url, { method: 'GET', path: '/vnflcm/v1/vnf_instances', ca: pki.ca.cert, ...(client ? { client } : {}), headers: { authorization: `Bearer ${access}` } });
    assert.equal((await get(mine)).statusCode, 200);
    for (const c of [other, undefined]) {
      const r = await get(c);
      assert.equal(r.statusCode, 401, r.body);
      assert.match(r.json().detail as string, /bound to a client certificate/);
    }
  });
});
