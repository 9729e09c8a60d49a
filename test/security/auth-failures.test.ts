/**
 * Bad credentials are not free to send (docs/security.md, Failed authentications):
 * - 1,000 requests with one bad token, all at once, cost Keystone (or the introspection endpoint)
 *   one request: concurrent checks of a token share one request, and the refusal is remembered
 *   (`auth.failureCacheMs`);
 * - a flood of distinct bad tokens does not push a valid cached token out of the cache;
 * - many distinct bad tokens from one client address get 429 ProblemDetails with Retry-After once
 *   `auth.failureLimit.burst` failures are spent, without reaching the upstream server; another
 *   client still authenticates, and so does a token already validated, from that same address;
 * - the token bucket refills at `perMinute`; IPv6 clients are keyed by /64.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FailureLimiter, clientKey } from '../../src/api/auth/failure-limit.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FakeKeystone } from '../helpers/auth.ts';
import { type Receiver, startReceiver } from '../notify/fixture.ts';

const BURST = 30;

type Send = (token: string, from: string) => Promise<{ statusCode: number; headers: Record<string, unknown>; body: string }>;

/** The checks shared by both upstream kinds. `upstream()` counts requests to the identity server. */
function suite(name: string, setup: () => Promise<{ send: Send; upstream: () => number; good: string; close(): Promise<void> }>): void {
  describe(name, { timeout: 300_000 }, () => {
    let env: Awaited<ReturnType<typeof setup>>;
    before(async () => {
      env = await setup();
    });
    after(async () => {
      await env?.close();
    });

    it('1,000 requests with the same bad token, all at once, cost one upstream request', async () => {
      const n0 = env.upstream();
      const all = await Promise.all(Array.from({ length: 1000 }, () => env.send('bad-token-always-the-same', '10.9.0.1')));
      assert.deepEqual([...new Set(all.map((r) => r.statusCode))], [401]);
      assert.equal(env.upstream() - n0, 1);
    });

    it('distinct bad tokens from one address: 429 with Retry-After after the burst, nothing sent upstream; others unaffected', async () => {
      // the valid token is validated once (from another address) and cached
      assert.equal((await env.send(env.good, '10.9.0.3')).statusCode, 200);
      const n0 = env.upstream();
      for (let i = 0; i < BURST; i++) assert.equal((await env.send(`bad-distinct-${i}`, '10.9.0.2')).statusCode, 401, `failure ${i + 1}`);
      assert.equal(env.upstream() - n0, BURST, 'each distinct bad token was checked once');
      for (let i = 0; i < 50; i++) {
        const r = await env.send(`bad-distinct-more-${i}`, '10.9.0.2');
        assert.equal(r.statusCode, 429, r.body);
        assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/);
        const p = JSON.parse(r.body) as { status: number; type: string; detail: string };
        assert.equal(p.status, 429);
        assert.equal(p.type, 'urn:vnfm:error:VNFM_ERR_API_TOO_MANY_FAILURES');
        assert.match(p.detail, /too many failed authentications from this client address/);
      }
      assert.equal(env.upstream() - n0, BURST, 'the refused requests reached no upstream server');
      // the flood did not push the valid token out of the cache; from the limited address too
      assert.equal((await env.send(env.good, '10.9.0.2')).statusCode, 200);
      // another client: authenticates, and its own bad token is a plain 401
      assert.equal((await env.send(env.good, '10.9.0.4')).statusCode, 200);
      assert.equal((await env.send('bad-other-client', '10.9.0.4')).statusCode, 401);
      assert.equal(env.upstream() - n0, BURST + 1);
    });
  });
}

suite('Keystone', async () => {
  const ks = new FakeKeystone({ username: 'svc', password: 'svc-pw' });
  const url = await ks.start();
  ks.tokens.set('good-ks-token', { id: 'u1', name: 'alice', project: 'p1', roles: ['reader'] });
  // a small positive cache: a flood of refused tokens sharing it would push the valid one out
  const vnfm: TestVnfm = await testVnfm({ config: { apiAuth: 'keystone', auth: { failureLimit: { burst: BURST, perMinute: 1, maxClients: 100 }, keystone: { authUrl: url, username: 'svc', password: 'svc-pw', projectName: 'service', cacheMaxEntries: 8 } } } });
  return {
    good: 'good-ks-token',
    upstream: () => ks.validations,
    send: (token, from) => vnfm.app.inject({ method: 'GET', url: '/vnflcm/v1/vnf_instances', remoteAddress: from, headers: { 'x-auth-token': token } }),
    close: async () => {
      await vnfm.close();
      await ks.close();
    },
  };
});

suite('OAuth 2.0 introspection', async () => {
  const rx: Receiver = await startReceiver();
  let introspections = 0;
  rx.handlers.set('/introspect', (r) => {
    introspections++;
    const token = new URLSearchParams(r.body).get('token');
    if (token === 'good-ext-token') return { status: 200, body: { active: true, scope: 'reader', client_id: 'viewer', exp: Math.floor(Date.now() / 1000) + 600 } };
    return { status: 200, body: { active: false } };
  });
  const vnfm: TestVnfm = await testVnfm({
    config: { apiAuth: 'oauth2', auth: { failureLimit: { burst: BURST, perMinute: 1, maxClients: 100 }, oauth2: { introspection: { endpoint: `${rx.url}/introspect`, clientId: 'vnfm-rs', clientSecret: 'rs-secret' } } } },
  });
  return {
    good: 'good-ext-token',
    upstream: () => introspections,
    send: (token, from) => vnfm.app.inject({ method: 'GET', url: '/vnflcm/v1/vnf_instances', remoteAddress: from, headers: { authorization: `Bearer ${token}` } }),
    close: async () => {
      await vnfm.close();
      await rx.close();
    },
  };
});

describe('the failure limiter', () => {
  it('a token bucket per client: burst, refill per minute, Retry-After', () => {
    const l = new FailureLimiter({ burst: 3, perMinute: 60, maxClients: 10 });
    const t = 1_000_000;
    for (let i = 0; i < 3; i++) {
      assert.equal(l.retryAfterSeconds('a', t), 0);
      l.fail('a', t);
    }
    assert.equal(l.retryAfterSeconds('a', t), 1);
    assert.equal(l.retryAfterSeconds('b', t), 0, 'another client is not limited');
    assert.equal(l.retryAfterSeconds('a', t + 999), 1);
    assert.equal(l.retryAfterSeconds('a', t + 1000), 0, 'one failure regained per second');
    l.fail('a', t + 1000);
    assert.equal(l.retryAfterSeconds('a', t + 1000), 1);
    const slow = new FailureLimiter({ burst: 1, perMinute: 2, maxClients: 10 });
    slow.fail('x', t);
    assert.equal(slow.retryAfterSeconds('x', t), 30);
    assert.equal(new FailureLimiter({ burst: 0, perMinute: 1, maxClients: 1 }).retryAfterSeconds('x'), 0, 'burst 0: no limit');
  });

  it('tracks at most maxClients addresses', () => {
    const l = new FailureLimiter({ burst: 1, perMinute: 1, maxClients: 100 });
    for (let i = 0; i < 1000; i++) l.fail(`c${i}`);
    assert.equal(l.size, 100);
    assert.ok(l.retryAfterSeconds('c999') > 0);
    assert.equal(l.retryAfterSeconds('c0'), 0, 'the oldest was dropped');
  });

  it('client keys: IPv4, IPv4-mapped, IPv6 /64', () => {
    assert.equal(clientKey('10.0.0.7'), '10.0.0.7');
    assert.equal(clientKey('::ffff:10.0.0.7'), '10.0.0.7');
    assert.equal(clientKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:db8:1:2::99'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientKey('::1'), '0:0:0:0::/64');
  });
});
