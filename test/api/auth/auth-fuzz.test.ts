/**
 * Fuzzing of the credential headers (X-Auth-Token, Authorization) and of the token endpoint,
 * with static tokens, the built-in OAuth 2.0 server and Keystone enabled together: a seeded
 * generator builds malformed, oversized, repeated, near-miss and binary credentials. Every answer
 * must be a 400/401 (431 for what the HTTP parser itself refuses) ProblemDetails (RFC 6749 error
 * objects on `/token`), a 401 always with `WWW-Authenticate`, never a 5xx, and nothing may be
 * stored. Part of it goes over a raw TCP socket, so the bytes reach the server as sent.
 *
 * Reproduce a run with `VNFM_AUTH_FUZZ_SEED=<seed>`.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { OAuthService } from '../../../src/api/auth/oauth2.ts';
import { type TestVnfm, testVnfm } from '../../helpers/app.ts';
import { FakeKeystone } from '../../helpers/auth.ts';
import { rngOf } from '../../helpers/prng.ts';

const SEED = Number(process.env.VNFM_AUTH_FUZZ_SEED ?? 20261126);
const ROUNDS = 400;

const rng = rngOf(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)] as T;
const int = (n: number) => Math.floor(rng() * n);

const STATIC = 'fuzz-static-token-a91c';
const ROUTES = ['/vnflcm/v2/vnf_instances', '/vnflcm/v1/vnf_lcm_op_occs', '/v1.0/vims', '/vnfm/v1/heal_batches', '/vnfpkgm/v1/vnf_packages', '/nope/unknown', '/vnfm/v1/oauth2/clients'];

function randomChars(n: number, alphabet: string): string {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[int(alphabet.length)];
  return s;
}
const VISIBLE = Array.from({ length: 94 }, (_, i) => String.fromCharCode(33 + i)).join('');
const LATIN1 = Array.from({ length: 96 }, (_, i) => String.fromCharCode(160 + i)).join('');

/** A malformed or wrong credential header set. */
function badHeaders(): Record<string, string> {
  const flip = (s: string) => {
    const i = int(s.length);
    return `${s.slice(0, i)}${s[i] === 'x' ? 'y' : 'x'}${s.slice(i + 1)}`;
  };
  const token = pick([
    () => '',
    () => ' ',
    () => flip(STATIC),
    () => `${STATIC}x`,
    () => STATIC.slice(0, -1),
    () => `${STATIC},${STATIC}`,
    () => `vnfmat_${randomChars(43, VISIBLE)}`,
    () => `vnfmat_`,
    () => randomChars(1 + int(200), VISIBLE),
    () => randomChars(1 + int(50), LATIN1),
    () => 'A'.repeat(8193 + int(4000)),
    () => `${STATIC} ${STATIC}`,
    () => '"quoted"',
    () => 'null',
    () => '%00',
  ])();
  return pick([
    () => ({ 'x-auth-token': token }),
    () => ({ authorization: `Bearer ${token}` }),
    () => ({ authorization: `bearer    ${token}` }),
    () => ({ authorization: 'Bearer' }),
    () => ({ authorization: `Basic ${randomChars(int(40), VISIBLE)}` }),
    () => ({ authorization: `Basic ${Buffer.from(randomChars(int(30), VISIBLE)).toString('base64')}` }),
    () => ({ authorization: `Basic ${Buffer.from(`${STATIC}:${STATIC}`).toString('base64')}` }),
    () => ({ authorization: `${randomChars(1 + int(10), 'abcdefXYZ-')} ${token}` }),
    () => ({ authorization: `${token}` }),
    () => ({ authorization: `Negotiate ${token}` }),
    () => ({ 'x-auth-token': token, authorization: `Bearer ${STATIC}` }),
    () => ({ authorization: `Bearer ${token}`, 'x-auth-token': flip(STATIC) }),
  ])();
}

describe('auth header fuzz (token + oauth2 + keystone)', () => {
  let vnfm: TestVnfm;
  let keystone: FakeKeystone;
  let client: { clientId: string; clientSecret: string };

  const tables = ['vnf_instance', 'op_occ', 'subscription', 'vim', 'vnf_package', 'oauth_client', 'oauth_token'];
  const counts = async () => {
    const out: Record<string, number> = {};
    for (const t of tables) out[t] = Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(t)}`.execute(vnfm.store.db)).rows[0]?.n);
    return out;
  };

  before(async () => {
    keystone = new FakeKeystone({ username: 'svc', password: 'svc-pw-77' });
    const url = await keystone.start();
    keystone.tokens.set('ks-valid', { id: 'u1', name: 'u1', project: 'p1', roles: ['reader'] });
    vnfm = await testVnfm({
      listen: true,
      // every fuzzed request fails from one address: the per-address failure limit (429, its own
      // test in test/security/auth-failures.test.ts) is off so each one reaches the parsers
      config: { apiAuth: ['token', 'oauth2', 'keystone'], apiTokens: [{ token: STATIC, role: 'reader' }], auth: { failureLimit: { burst: 0, perMinute: 60, maxClients: 10_000 }, keystone: { authUrl: url, username: 'svc', password: 'svc-pw-77', projectName: 'service' } } },
    });
    client = await new OAuthService(vnfm.store.db, vnfm.ctx.config.auth.oauth2).register({ name: 'fuzz', role: 'operator' });
  });
  after(async () => {
    await vnfm?.close();
    await keystone?.close();
  });

  it('the valid credentials of each mode pass (the fuzz below is refused for its credentials, not by accident)', async () => {
    for (const h of [{ 'x-auth-token': STATIC }, { authorization: `Bearer ${STATIC}` }, { 'x-auth-token': 'ks-valid' }]) {
      const r = await vnfm.app.inject({ method: 'GET', url: '/vnflcm/v1/vnf_instances', headers: h });
      assert.equal(r.statusCode, 200, `${JSON.stringify(h)}: ${r.body}`);
    }
  });

  it(`${ROUNDS} malformed, oversized, repeated and near-miss credentials: 400/401 ProblemDetails, never 5xx, nothing stored (seed ${SEED})`, async () => {
    const before = await counts();
    const seen = new Map<number, number>();
    for (let i = 0; i < ROUNDS; i++) {
      const headers = { version: '2.0.0', ...badHeaders() };
      const route = pick(ROUTES);
      const method = pick(['GET', 'POST', 'DELETE', 'PATCH'] as const);
      let r: Awaited<ReturnType<TestVnfm['app']['inject']>>;
      try {
        r = await vnfm.app.inject({ method, url: route, headers: { ...headers, 'content-type': 'application/json' }, payload: method === 'GET' || method === 'DELETE' ? undefined : '{"vnfdId":"x"}' });
      } catch (e) {
        // light-my-request refuses what Node's HTTP stack would never deliver (control characters)
        assert.match(String(e), /Invalid character|invalid/i, `seed ${SEED} round ${i}: ${String(e)}`);
        continue;
      }
      const what = `seed ${SEED} round ${i}: ${method} ${route} ${JSON.stringify(headers).slice(0, 300)} -> ${r.statusCode} ${r.body.slice(0, 300)}`;
      seen.set(r.statusCode, (seen.get(r.statusCode) ?? 0) + 1);
      assert.ok([400, 401].includes(r.statusCode), what);
      assert.match(String(r.headers['content-type']), /^application\/problem\+json/, what);
      assert.equal(r.json().status, r.statusCode, what);
      if (r.statusCode === 401) assert.ok(r.headers['www-authenticate'], what);
    }
    assert.ok((seen.get(401) ?? 0) > ROUNDS / 4 && (seen.get(400) ?? 0) > 0, `both refusals seen: ${JSON.stringify([...seen])}`);
    assert.deepEqual(await counts(), before);
  });

  it('raw bytes over TCP (repeated headers, obs-text, NUL, huge headers): 4xx, never 5xx', async () => {
    const port = new URL(vnfm.url).port;
    const raw = (head: string) =>
      new Promise<string>((resolve, reject) => {
        // written without a FIN: the server answers, then closes (`Connection: close`)
        const s = connect(Number(port), '127.0.0.1', () => s.write(Buffer.from(`GET /vnflcm/v1/vnf_instances HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${head}\r\n`, 'latin1')));
        let out = '';
        s.on('data', (c: Buffer) => (out += c.toString('latin1')));
        s.on('end', () => resolve(out));
        s.on('error', reject);
      });
    const cases = [
      `X-Auth-Token: ${STATIC}\r\nX-Auth-Token: ${STATIC}\r\n`,
      `Authorization: Bearer ${STATIC}\r\nAuthorization: Bearer ${STATIC}\r\n`,
      'X-Auth-Token: \xff\xfe\xfd\r\n',
      'Authorization: Bearer \xe9\xe8\r\n',
      'X-Auth-Token: a\x00b\r\n',
      `X-Auth-Token: ${'B'.repeat(20_000)}\r\n`,
      `Authorization: Basic ${'='.repeat(5000)}\r\n`,
      'Authorization: \r\n',
      'X-Auth-Token:\r\n',
    ];
    for (const c of cases) {
      const out = await raw(c);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1]);
      assert.ok(status >= 400 && status < 500, `${JSON.stringify(c.slice(0, 80))} -> ${out.slice(0, 200)}`);
    }
    // the same connection-level checks did not disturb normal service
    const ok = await fetch(`${vnfm.url}/vnflcm/v1/vnf_instances`, { headers: { 'x-auth-token': STATIC } });
    assert.equal(ok.status, 200);
  });

  it(`the token endpoint: ${ROUNDS / 2} malformed requests get RFC 6749 errors (400/401), never a token or a 5xx`, async () => {
    const before = await counts();
    const secretFlip = `${client.clientSecret.slice(0, -1)}${client.clientSecret.endsWith('A') ? 'B' : 'A'}`;
    for (let i = 0; i < ROUNDS / 2; i++) {
      const form = pick([
        () => '',
        () => 'grant_type=password&username=a&password=b',
        () => `grant_type=client_credentials&client_id=${client.clientId}&client_secret=${encodeURIComponent(secretFlip)}`,
        () => `grant_type=client_credentials&client_id=${encodeURIComponent(randomChars(int(300), VISIBLE))}&client_secret=x`,
        () => `grant_type=client_credentials&client_id=${client.clientId}&client_secret=${encodeURIComponent(client.clientSecret)}&scope=admin`,
        () => `grant_type=client_credentials&client_id=${client.clientId}&client_secret=${encodeURIComponent(client.clientSecret)}&scope=${encodeURIComponent(randomChars(1 + int(40), VISIBLE))}`,
        () => `grant_type=client_credentials`,
        () => randomChars(int(500), VISIBLE),
        () => `grant_type=client_credentials&client_id=${client.clientId}&client_secret=${'x'.repeat(2000)}`,
      ])();
      const headers: Record<string, string> = {
        'content-type': pick(['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded', 'application/json', 'text/plain']),
        ...pick<Record<string, string>>([{}, {}, { authorization: `Basic ${randomChars(int(60), VISIBLE)}` }, { authorization: `Basic ${Buffer.from(`${client.clientId}:${secretFlip}`).toString('base64')}` }, { authorization: `Basic ${Buffer.from(`${client.clientId}`).toString('base64')}` }]),
      };
      const r = await vnfm.app.inject({ method: 'POST', url: '/token', headers, payload: headers['content-type'] === 'application/json' ? JSON.stringify({ grant_type: 'client_credentials' }) : form });
      const what = `seed ${SEED} token round ${i}: ${JSON.stringify(headers)} ${form.slice(0, 200)} -> ${r.statusCode} ${r.body.slice(0, 200)}`;
      assert.ok([400, 401, 415].includes(r.statusCode), what);
      assert.ok(!r.body.includes('access_token'), what);
      if (r.statusCode !== 415) assert.ok(typeof r.json().error === 'string' || typeof r.json().detail === 'string', what);
    }
    assert.deepEqual(await counts(), before, 'no token stored');
  });
});
