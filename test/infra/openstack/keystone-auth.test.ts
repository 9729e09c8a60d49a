import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { KeystoneAuth, type KeystoneAuthOptions } from '../../../src/infra/openstack/keystone-auth.ts';
import { OpenStackError } from '../../../src/infra/openstack/openstack-error.ts';
import { type FakeOpenStack, PASSWORD, PROJECT_ID, startFakeOpenStack } from './fake-openstack-server.ts';

describe('KeystoneAuth', () => {
  let fake: FakeOpenStack;
  before(async () => {
    fake = await startFakeOpenStack();
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.issued.length = 0;
    fake.revoked.clear();
    fake.tokenLifetimeMs = 3_600_000;
    fake.authStatus = 201;
    fake.authQueue = [];
    fake.handler = (req, res) => {
      if (!fake.tokenOk(req)) return fake.json(res, 401, { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } });
      fake.json(res, 200, { path: req.path });
    };
  });

  const make = (extra: Partial<KeystoneAuthOptions> = {}): KeystoneAuth =>
    new KeystoneAuth({ authUrl: fake.authUrl, username: 'admin', password: PASSWORD, projectName: 'admin', http: { baseDelayMs: 1, maxDelayMs: 5 }, ...extra });

  it('authenticates with password + project scope and caches the token', async () => {
    const auth = make({ userDomainName: 'UD', projectDomainName: 'PD' });
    const t1 = await auth.getToken();
    const t2 = await auth.getToken();
    assert.equal(t1, t2);
    assert.equal(fake.authRequests().length, 1);
    assert.equal(auth.authentications, 1);
    const body = JSON.parse(fake.authRequests()[0]?.body ?? '{}');
    assert.deepEqual(body.auth.identity, { methods: ['password'], password: { user: { name: 'admin', domain: { name: 'UD' }, password: PASSWORD } } });
    assert.deepEqual(body.auth.scope, { project: { name: 'admin', domain: { name: 'PD' } } });
    assert.equal(await auth.projectId(), PROJECT_ID);
  });

  it('scopes by project id and domain ids when given', async () => {
    const auth = make({ projectId: 'pid-1', projectName: undefined, userDomainId: 'd1' });
    await auth.getToken();
    const body = JSON.parse(fake.authRequests()[0]?.body ?? '{}');
    assert.deepEqual(body.auth.scope, { project: { id: 'pid-1' } });
    assert.deepEqual(body.auth.identity.password.user.domain, { id: 'd1' });
  });

  it('appends /v3 to an auth URL without it', async () => {
    const auth = make({ authUrl: `${fake.base}/` });
    assert.equal(auth.authUrl, fake.authUrl);
    await auth.getToken();
    assert.equal(fake.authRequests().length, 1);
  });

  it('shares one authentication between concurrent callers', async () => {
    const auth = make();
    const tokens = await Promise.all([auth.getToken(), auth.getToken(), auth.getToken(), auth.endpoint('orchestration')]);
    assert.equal(fake.authRequests().length, 1);
    assert.equal(tokens[0], tokens[1]);
    assert.equal(tokens[1], tokens[2]);
  });

  it('re-authenticates a little before the token expires (local clock, lifetime from Keystone)', async () => {
    let now = 1_000_000;
    fake.tokenLifetimeMs = 10_000; // margin = min(60 s, lifetime / 10) = 1 s
    const auth = make({ now: () => now });
    const t1 = await auth.getToken();
    const s1 = await auth.getSession();
    assert.equal(s1.expiresAt, 1_000_000 + 10_000);
    assert.equal(s1.renewAt, 1_000_000 + 9_000);
    now += 8_500;
    assert.equal(await auth.getToken(), t1, 'still cached before the renewal point');
    now += 1_000;
    const t2 = await auth.getToken();
    assert.notEqual(t2, t1, 'renewed after the renewal point, before expiry');
    assert.equal(fake.authRequests().length, 2);
    assert.equal(await auth.getToken({ forceRefresh: true }) !== t2, true);
    assert.equal(fake.authRequests().length, 3);
  });

  it('authedFetch sends X-Auth-Token and JSON, re-authenticates once on 401', async () => {
    const auth = make();
    const first = await auth.getToken();
    fake.revoked.add(first);
    const res = await auth.authedFetch({ service: 'orchestration', method: 'POST', path: '/stacks', body: { a: 1 }, query: { x: 'y', skip: undefined } });
    assert.equal(res.status, 200);
    const svc = fake.serviceRequests();
    assert.equal(svc.length, 2);
    assert.equal(svc[0]?.headers['x-auth-token'], first);
    assert.notEqual(svc[1]?.headers['x-auth-token'], first);
    assert.equal(svc[1]?.headers['content-type'], 'application/json');
    assert.equal(svc[1]?.body, '{"a":1}');
    assert.equal(svc[1]?.path, `/heat-r1-public/v1/${PROJECT_ID}/stacks?x=y`);
    assert.equal(fake.authRequests().length, 2);
    assert.equal(await auth.getToken(), fake.issued[1], 'the new token is cached');
  });

  it('authedFetch gives up after one re-authentication when 401 persists', async () => {
    const auth = make();
    fake.handler = (_req, res) => fake.json(res, 401, { error: { code: 401, title: 'Unauthorized', message: 'nope' } });
    const res = await auth.authedFetch({ service: 'orchestration', path: '/stacks' });
    assert.equal(res.status, 401);
    assert.equal(fake.serviceRequests().length, 2);
    assert.equal(fake.authRequests().length, 2);
  });

  it('picks endpoints by interface and region from the catalog', async () => {
    assert.equal(await make().endpoint('orchestration'), `${fake.base}/heat-r1-public/v1/${PROJECT_ID}`, 'first public, trailing slash dropped');
    assert.equal(await make({ region: 'RegionTwo' }).endpoint('orchestration'), `${fake.base}/heat-r2-public/v1/${PROJECT_ID}`);
    assert.equal(await make({ interface: 'internal' }).endpoint('orchestration'), `${fake.base}/heat-r1-internal/v1/${PROJECT_ID}`);
    const auth = make({ region: 'RegionOne' });
    assert.equal(await auth.endpoint('orchestration', { interface: 'admin', region: 'RegionTwo' }), `${fake.base}/heat-r2-admin/v1/${PROJECT_ID}`);
    await assert.rejects(auth.endpoint('orchestration', { interface: 'admin' }), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.kind, 'catalog');
      assert.equal(e.retryable, false);
      assert.match(e.message, /no 'orchestration' endpoint with interface 'admin' in region 'RegionOne'/);
      return true;
    });
    await assert.rejects(auth.endpoint('network'), /no service of type 'network'/);
    const over = make({ endpointOverrides: { orchestration: 'http://heat.example:8004/v1/x/' } });
    assert.equal(await over.endpoint('orchestration'), 'http://heat.example:8004/v1/x');
  });

  it('turns a refused authentication into an OpenStackError without the password, not retried', async () => {
    fake.authStatus = 401;
    const auth = make();
    await assert.rejects(auth.getToken(), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.status, 401);
      assert.equal(e.service, 'keystone');
      assert.equal(e.retryable, false);
      assert.equal(e.errorType, 'Unauthorized');
      assert.match(e.message, /requires authentication/);
      assert.ok(!e.message.includes(PASSWORD), 'password redacted');
      assert.ok(!JSON.stringify(e.extra).includes(PASSWORD));
      return true;
    });
    assert.equal(fake.authRequests().length, 1);
  });

  it('retries authentication on 503', async () => {
    fake.authQueue = [503, 503];
    const auth = make({ http: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } });
    const token = await auth.getToken();
    assert.ok(token.startsWith('gAAAA'));
    assert.equal(fake.authRequests().length, 3);
  });

  it('validates other tokens: info when valid, null when unknown or revoked', async () => {
    const other = make();
    const subject = await other.getToken();
    const auth = make();
    const info = await auth.validateToken(subject);
    assert.ok(info);
    assert.equal(info.userName, 'admin');
    assert.equal(info.projectId, PROJECT_ID);
    assert.deepEqual(info.roles, ['admin', 'member']);
    const last = fake.authRequests().at(-1);
    assert.equal(last?.method, 'GET');
    assert.equal(last?.headers['x-subject-token'], subject);
    assert.notEqual(last?.headers['x-auth-token'], subject);
    assert.equal(await auth.validateToken('gAAAAAnot-a-real-token-at-all-xxxxxxxxxxxx'), null);
    fake.revoked.add(subject);
    assert.equal(await auth.validateToken(subject), null);
    assert.equal(await auth.validateToken(''), null);
  });

  it('rejects incomplete options', () => {
    assert.throws(() => new KeystoneAuth({ authUrl: fake.authUrl, username: 'a', password: 'b' }), /projectName or projectId/);
    assert.throws(() => new KeystoneAuth({ authUrl: '', username: 'a', password: 'b', projectName: 'p' }), /authUrl/);
  });
});
