import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { json } from '../../src/store/db.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { type NotifyVnfm, type Receiver, V2, drainAll, facts, notifyVnfm, opEvent, startReceiver } from './fixture.ts';

describe('notification delivery: authentication and API-produced notifications', { timeout: 120_000 }, () => {
  let rx: Receiver;
  let vnfm: NotifyVnfm;

  before(async () => {
    rx = await startReceiver();
    vnfm = await notifyVnfm({ config: { notifications: { testCallback: true, timeoutMs: 5000, retryForMs: 3_600_000, backoffMs: 20, maxBackoffMs: 50 } } });
  });
  after(async () => {
    await vnfm?.close();
    await rx?.close();
  });

  const subscribe = async (v: 'v1' | 'v2', body: Record<string, unknown>) => {
    const res = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/subscriptions`, headers: v === 'v2' ? V2 : { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    return res;
  };
  const rows = (subId: string) => vnfm.store.db.selectFrom('outbox').selectAll().where('subscription_id', '=', subId).orderBy('id').execute();

  it('BASIC: the consumer sees the Authorization header; the password is never logged', async () => {
    const expected = `Basic ${Buffer.from('nfvo:b4sic-Secret').toString('base64')}`;
    rx.handlers.set('/basic', (r) => (r.headers.authorization === expected ? 204 : 401));
    const vnfdId = `vnfd-${randomUUID()}`;
    const res = await subscribe('v2', { callbackUri: `${rx.url}/basic`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] } }, authentication: { authType: ['BASIC'], paramsBasic: { userName: 'nfvo', password: 'b4sic-Secret' } } });
    assert.equal(res.statusCode, 201, res.body);
    const sub = res.json().id as string;
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(facts({ vnfdId }), 'STARTING'));
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(facts({ vnfdId }), 'COMPLETED'));
    await drainAll(vnfm.notify);
    const posts = rx.requests.filter((r) => r.path === '/basic' && r.method === 'POST');
    assert.equal(posts.length, 2);
    for (const p of posts) assert.equal(p.headers.authorization, expected);
    assert.deepEqual((await rows(sub)).map((r) => r.status), ['DELIVERED', 'DELIVERED']);
    const logs = vnfm.logs.join('');
    assert.ok(!logs.includes('b4sic-Secret'));
    assert.ok(!logs.includes(expected.slice(6)));
  });

  it('OAuth2 client credentials: token fetched with client auth, cached, refreshed once on 401', async () => {
    const clientAuth = `Basic ${Buffer.from('vnfm-client:0auth-Secret').toString('base64')}`;
    let issued = 0;
    const valid = new Set<string>();
    const tokenCalls: { auth: string | undefined; body: string; type: string | undefined }[] = [];
    rx.handlers.set('/token', (r) => {
      tokenCalls.push({ auth: r.headers.authorization, body: r.body, type: r.headers['content-type'] });
      if (r.headers.authorization !== clientAuth || r.body !== 'grant_type=client_credentials') return { status: 401, body: { error: 'invalid_client' } };
      const t = `tok-${++issued}-${randomUUID()}`;
      valid.add(t);
      return { status: 200, body: { access_token: t, token_type: 'Bearer', expires_in: 3600 } };
    });
    rx.handlers.set('/oauth', (r) => (valid.has(String(r.headers.authorization ?? '').replace(/^Bearer /, '')) ? 204 : 401));
    const vnfdId = `vnfd-${randomUUID()}`;
    const body = (pw: string) => ({
      callbackUri: `${rx.url}/oauth`,
      filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] } },
      authentication: { authType: ['OAUTH2_CLIENT_CREDENTIALS'], paramsOauth2ClientCredentials: { clientId: 'vnfm-client', clientPassword: pw, tokenEndpoint: `${rx.url}/token` } },
    });

    // wrong client password: the token endpoint refuses, so does the callback test
    const refused = await subscribe('v2', body('wrong-Secret'));
    assert.equal(refused.statusCode, 422, refused.body);
    assert.match(refused.json().detail, /Can't get from notification callback Uri\./);
    assert.doesNotMatch(refused.json().detail, /401/, 'what the token endpoint answered is not echoed');
    assert.ok(!refused.body.includes('wrong-Secret'));

    const res = await subscribe('v2', body('0auth-Secret'));
    assert.equal(res.statusCode, 201, res.body);
    const sub = res.json().id as string;
    const callsAfterCreate = tokenCalls.length;
    assert.match(String(tokenCalls.at(-1)?.type), /application\/x-www-form-urlencoded/);

    for (const st of ['STARTING', 'PROCESSING', 'COMPLETED']) await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(facts({ vnfdId }), st));
    await drainAll(vnfm.notify);
    assert.deepEqual((await rows(sub)).map((r) => r.status), ['DELIVERED', 'DELIVERED', 'DELIVERED']);
    assert.equal(tokenCalls.length, callsAfterCreate + 1, 'one token for three notifications');
    const posts = () => rx.requests.filter((r) => r.path === '/oauth' && r.method === 'POST');
    assert.equal(new Set(posts().map((p) => p.headers.authorization)).size, 1);

    // the consumer revokes every token: the next delivery gets a 401, fetches a new token, succeeds
    valid.clear();
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(facts({ vnfdId }), 'STARTING'));
    await drainAll(vnfm.notify);
    const last = (await rows(sub)).at(-1);
    assert.equal(last?.status, 'DELIVERED');
    assert.equal(last?.attempts, 1);
    assert.equal(tokenCalls.length, callsAfterCreate + 2);
    assert.equal(posts().length, 5);
    assert.deepEqual(posts().slice(-2).map((p) => valid.has(String(p.headers.authorization).replace(/^Bearer /, ''))), [false, true]);

    const logs = vnfm.logs.join('');
    assert.ok(!logs.includes('0auth-Secret') && !logs.includes('wrong-Secret'));
    for (const t of valid) assert.ok(!logs.includes(t), 'tokens are not logged');
  });

  it('a consumer that does not answer within timeoutMs counts as a failed attempt', async () => {
    // The consumer never answers until the test lets it: the attempt can only end because the
    // worker cut it at its timeout (no wall-clock bound needed to tell).
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    rx.handlers.set('/slow', async (r) => {
      if (r.method === 'POST') await answered; // the callback test (GET) at subscription time is answered
      return 204;
    });
    const vnfdId = `vnfd-${randomUUID()}`;
    const res = await subscribe('v2', { callbackUri: `${rx.url}/slow`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] } } });
    assert.equal(res.statusCode, 201, res.body);
    const impatient = await notifyVnfm({ store: vnfm.store, config: { notifications: { timeoutMs: 300, retryForMs: 3_600_000, backoffMs: 20, maxBackoffMs: 50 } } });
    try {
      await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(facts({ vnfdId })));
      assert.equal(await impatient.notify.worker.drainOnce(), 1);
      assert.equal(rx.posts('/slow').length, 1, 'the consumer got the notification');
      const [row] = await rows(res.json().id);
      assert.equal(row?.status, 'PENDING');
      assert.equal(row?.attempts, 1);
      assert.equal(row?.last_error, 'no response within 300 ms');
    } finally {
      answer();
      await impatient.close();
    }
  });

  it('VnfIdentifierCreation/Deletion notifications from the LCM API reach v1 and v2 subscribers in their shape', async () => {
    const vnfdId = `vnfd-${randomUUID()}`;
    const pkgId = randomUUID();
    await vnfm.store.db
      .insertInto('vnf_package')
      .values({
        id: pkgId,
        onboarding_state: 'ONBOARDED',
        operational_state: 'ENABLED',
        usage_state: 'NOT_IN_USE',
        vnfd_id: vnfdId,
        vnf_provider: 'Acme',
        vnf_product_name: 'Router',
        vnf_software_version: '1.0',
        vnfd_version: '1.0',
        checksum: json(null),
        user_defined_data: json({}),
        vnfd: json(null),
      })
      .execute();
    const types = { notificationTypes: ['VnfIdentifierCreationNotification', 'VnfIdentifierDeletionNotification'] };
    const s2 = await subscribe('v2', { callbackUri: `${rx.url}/ids-v2`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] }, ...types } });
    const s1 = await subscribe('v1', { callbackUri: `${rx.url}/ids-v1`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] }, ...types } });
    const other = await subscribe('v2', { callbackUri: `${rx.url}/ids-other`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: ['some-other-vnfd'] } } });
    const opOnly = await subscribe('v2', { callbackUri: `${rx.url}/ids-ops`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] }, notificationTypes: ['VnfLcmOperationOccurrenceNotification'] } });
    for (const r of [s2, s1, other, opOnly]) assert.equal(r.statusCode, 201, r.body);

    const created = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: JSON.stringify({ vnfdId, vnfInstanceName: 'n1' }) });
    assert.equal(created.statusCode, 201, created.body);
    const instId = created.json().id as string;
    const deleted = await vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/v2/vnf_instances/${instId}`, headers: { version: '2.0.0' } });
    assert.equal(deleted.statusCode, 204, deleted.body);
    await drainAll(vnfm.notify);

    const v2 = rx.posts('/ids-v2');
    assert.deepEqual(v2.map((n) => n.notificationType), ['VnfIdentifierCreationNotification', 'VnfIdentifierDeletionNotification']);
    expectEtsiValid('v2', 'VnfIdentifierCreationNotification', v2[0], { noExtra: true });
    expectEtsiValid('v2', 'VnfIdentifierDeletionNotification', v2[1], { noExtra: true });
    assert.equal(v2[0]?.vnfInstanceId, instId);
    assert.equal(v2[0]?.subscriptionId, s2.json().id);
    assert.equal((v2[0]?._links as { subscription?: { href: string } } | undefined)?.subscription?.href, s2.json()._links.self.href);

    const v1 = rx.posts('/ids-v1');
    assert.deepEqual(v1.map((n) => n.notificationType), ['VnfIdentifierCreationNotification', 'VnfIdentifierDeletionNotification']);
    expectEtsiValid('v1', 'VnfIdentifierCreationNotification', v1[0]);
    expectEtsiValid('v1', 'VnfIdentifierDeletionNotification', v1[1]);
    assert.ok(String((v1[0]?._links as { vnfInstance?: { href: string } } | undefined)?.vnfInstance?.href).includes('/vnflcm/v1/'));
    assert.equal(rx.requests.find((r) => r.path === '/ids-v1' && r.method === 'POST')?.headers.version, '1.3.0');

    assert.equal(rx.posts('/ids-other').length, 0, 'filter on another vnfdId');
    assert.equal(rx.posts('/ids-ops').length, 0, 'filter on op occ notifications only');
  });
});
