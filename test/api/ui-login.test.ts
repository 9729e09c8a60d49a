/**
 * The dashboard's Keystone login forwarder `POST /vnfm/v1/ui/keystone-tokens` (src/api/ui.ts),
 * against a fake Keystone: right credentials answer the token Keystone issued, wrong ones a 401
 * ProblemDetails, the password never reaches the logs; with Keystone auth off the route answers 404;
 * `GET /vnfm/v1/ui/config` names the enabled modes. Both are open (no token needed).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FakeKeystone } from '../helpers/auth.ts';

const PASSWORD = 'ui-login-svc-pw-93c1';
let ks: FakeKeystone;
let vnfm: TestVnfm;

describe('dashboard login helpers', () => {
  before(async () => {
    ks = new FakeKeystone({ username: 'svc', password: PASSWORD });
    const url = await ks.start();
    vnfm = await testVnfm({ config: { apiAuth: ['keystone', 'token'], apiTokens: ['ui-login-static-1'], auth: { keystone: { authUrl: url, username: 'svc', password: PASSWORD, projectName: 'service' } } } });
  });
  after(async () => {
    await vnfm?.close();
    await ks?.close();
  });

  it('GET /vnfm/v1/ui/config names the modes, without a token', async () => {
    const r = await vnfm.app.inject({ method: 'GET', url: '/vnfm/v1/ui/config' });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(r.json(), { authModes: ['keystone', 'token'], keystone: true });
  });

  it('forwards user name and password to Keystone and answers its token; refusals are 401; the password is not logged', async () => {
    const ok = await vnfm.app.inject({ method: 'POST', url: '/vnfm/v1/ui/keystone-tokens', payload: { username: 'svc', password: PASSWORD, project: 'service' } });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.match(ok.json().token, /^svc-/);
    assert.equal(ok.headers['cache-control'], 'no-store');
    const bad = await vnfm.app.inject({ method: 'POST', url: '/vnfm/v1/ui/keystone-tokens', payload: { username: 'svc', password: 'wrong' } });
    assert.equal(bad.statusCode, 401);
    assert.match(bad.headers['content-type'] as string, /^application\/problem\+json/);
    const invalid = await vnfm.app.inject({ method: 'POST', url: '/vnfm/v1/ui/keystone-tokens', payload: { username: 'svc' } });
    assert.equal(invalid.statusCode, 400);
    assert.ok(!vnfm.logs.join('').includes(PASSWORD), 'the password is not in the logs');
  });

  it('answers 404 when Keystone authentication is off', async () => {
    const other = await testVnfm({ config: { apiAuth: 'token', apiTokens: ['ui-login-static-2'] } });
    try {
      const r = await other.app.inject({ method: 'POST', url: '/vnfm/v1/ui/keystone-tokens', payload: { username: 'a', password: 'b' } });
      assert.equal(r.statusCode, 404);
    } finally {
      await other.close();
    }
  });
});
