/**
 * A deleted OAuth 2.0 client's tokens stop working in every VNFM process on the database, not
 * only in the one that deleted it: two VNFM apps on one database (on PostgreSQL each with its own
 * connection pool, as two processes), a token cached by the second, the client deleted through
 * the first. With `revocationCheckMs: 0` the second refuses the token at its very next request;
 * with an interval (400 ms) it refuses it once the interval passed (well before the minute a
 * cached token used to live).
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { type StoreEnv, type TestStore, describeStores } from '../helpers/db.ts';
import { until } from '../helpers/wait.ts';

async function pair(env: StoreEnv, revocationCheckMs: number): Promise<{ one: TestVnfm; two: TestVnfm; stores: TestStore[] }> {
  const s1 = await env.open();
  const s2 = env.openSecond ? await env.openSecond(s1) : s1;
  const config = { apiAuth: 'oauth2', auth: { oauth2: { revocationCheckMs } }, notifications: { testCallback: false } } as const;
  const one = await testVnfm({ store: s1, config });
  const two = await testVnfm({ store: s2, config });
  return { one, two, stores: [s1, s2] };
}

async function bootstrap(one: TestVnfm): Promise<{ admin: string; client: string; token: string }> {
  // the first admin client is created on the database (as `vnfm oauth2-client create --database-url` does)
  const { OAuthService } = await import('../../src/api/auth/oauth2.ts');
  const svc = new OAuthService(one.store.db, one.ctx.config.auth.oauth2);
  const admin = await svc.register({ name: 'admin', role: 'admin' });
  const nfvo = await svc.register({ name: 'nfvo', role: 'reader', project: 'p1' });
  const token = async (c: { clientId: string; clientSecret: string }) => {
    const r = await one.app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret }).toString() });
    assert.equal(r.statusCode, 200, r.body);
    return (r.json() as { access_token: string }).access_token;
  };
  return { admin: await token(admin), client: nfvo.clientId, token: await token(nfvo) };
}

const get = (vnfm: TestVnfm, token: string) => vnfm.app.inject({ method: 'GET', url: '/vnflcm/v2/vnf_instances', headers: { authorization: `Bearer ${token}`, version: '2.0.0' } });

await describeStores('OAuth 2.0 client revocation across VNFM processes', (env) => {
  let apps: TestVnfm[] = [];
  before(() => {
    apps = [];
  });
  after(async () => {
    for (const a of apps) await a.close();
  });

  it('revocationCheckMs 0: the other process refuses the token at its next request', async () => {
    const { one, two } = await pair(env, 0);
    apps.push(two, one);
    const t = await bootstrap(one);
    // the second process validates the token and caches it
    assert.equal((await get(two, t.token)).statusCode, 200);
    assert.equal((await get(two, t.token)).statusCode, 200);
    const del = await one.app.inject({ method: 'DELETE', url: `/vnfm/v1/oauth2/clients/${t.client}`, headers: { authorization: `Bearer ${t.admin}` } });
    assert.equal(del.statusCode, 204, del.body);
    const after = await get(two, t.token);
    assert.equal(after.statusCode, 401, after.body);
    assert.equal((await get(one, t.token)).statusCode, 401);
    // the admin's token, cached too, is not affected by another client's deletion
    assert.equal((await get(two, t.admin)).statusCode, 200);
  });

  it('a check interval: the other process refuses the token once the interval passed', async () => {
    const { one, two } = await pair(env, 400);
    apps.push(two, one);
    const t = await bootstrap(one);
    assert.equal((await get(two, t.token)).statusCode, 200);
    const del = await one.app.inject({ method: 'DELETE', url: `/vnfm/v1/oauth2/clients/${t.client}`, headers: { authorization: `Bearer ${t.admin}` } });
    assert.equal(del.statusCode, 204);
    // refused once the interval passed (bounded by a generous deadline that only fails the test)
    await until('the other process refuses the deleted client token', async () => (await get(two, t.token)).statusCode === 401, 30_000, 50);
    const gen = await one.store.db.selectFrom('auth_revocation').select('generation').executeTakeFirstOrThrow();
    assert.equal(Number(gen.generation), 1, 'one deletion, one generation');
  });
});
