import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { type NotifyVnfm, type Receiver, V2, facts, notifyVnfm, opEvent, startReceiver } from './fixture.ts';

describe('LCCN subscriptions API', { timeout: 120_000 }, () => {
  let rx: Receiver;
  let vnfm: NotifyVnfm;

  before(async () => {
    rx = await startReceiver();
    vnfm = await notifyVnfm({ config: { notifications: { testCallback: true, timeoutMs: 2000, retryForMs: 3_600_000, backoffMs: 20, maxBackoffMs: 100 } } });
  });
  after(async () => {
    await vnfm?.close();
    await rx?.close();
  });

  const post = (v: 'v1' | 'v2', body: unknown) =>
    vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/subscriptions`, headers: v === 'v2' ? V2 : { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const get = (v: 'v1' | 'v2', path: string) => vnfm.app.inject({ method: 'GET', url: `/vnflcm/${v}${path}`, headers: v === 'v2' ? { version: '2.0.0' } : {} });
  const del = (v: 'v1' | 'v2', path: string) => vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/${v}${path}`, headers: v === 'v2' ? { version: '2.0.0' } : {} });

  it('v2: create tests the callback with GET, answers 201 + Location + LccnSubscription; show, list, delete', async () => {
    const before = rx.requests.length;
    const body = {
      callbackUri: `${rx.url}/v2/a`,
      filter: { vnfInstanceSubscriptionFilter: { vnfdIds: ['vnfd-1'] }, notificationTypes: ['VnfLcmOperationOccurrenceNotification'], operationTypes: ['HEAL'], operationStates: ['COMPLETED', 'FAILED_TEMP'] },
      verbosity: 'SHORT',
    };
    const res = await post('v2', body);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.headers.version, '2.0.0');
    const sub = res.json();
    expectEtsiValid('v2', 'LccnSubscription', sub, { noExtra: true });
    assert.equal(res.headers.location, `${vnfm.ctx.config.publicUrl}/vnflcm/v2/subscriptions/${sub.id}`);
    assert.equal(sub.callbackUri, body.callbackUri);
    assert.equal(sub.verbosity, 'SHORT');
    assert.deepEqual(sub.filter, body.filter);
    assert.equal(sub._links.self.href, res.headers.location);

    const test = rx.requests.slice(before).find((r) => r.path === '/v2/a');
    assert.ok(test, 'the callback was tested');
    assert.equal(test.method, 'GET');

    const shown = await get('v2', `/subscriptions/${sub.id}`);
    assert.equal(shown.statusCode, 200);
    assert.deepEqual(shown.json(), sub);
    expectEtsiValid('v2', 'LccnSubscription', shown.json(), { noExtra: true });

    const list = await get('v2', '/subscriptions');
    assert.equal(list.statusCode, 200);
    expectEtsiValid('v2', 'LccnSubscription', list.json(), { array: true });
    assert.ok(list.json().some((s: { id: string }) => s.id === sub.id));
    // v2 subscriptions are not visible through the v1 facade
    assert.equal((await get('v1', `/subscriptions/${sub.id}`)).statusCode, 404);

    const filtered = await get('v2', `/subscriptions?filter=(eq,callbackUri,${encodeURIComponent(body.callbackUri)})`);
    assert.equal(filtered.statusCode, 200);
    assert.deepEqual(filtered.json().map((s: { id: string }) => s.id), [sub.id]);

    const d = await del('v2', `/subscriptions/${sub.id}`);
    assert.equal(d.statusCode, 204);
    assert.equal(d.body, '');
    const gone = await get('v2', `/subscriptions/${sub.id}`);
    assert.equal(gone.statusCode, 404);
    expectEtsiValid('v2', 'ProblemDetails', gone.json());
    assert.equal((await del('v2', `/subscriptions/${sub.id}`)).statusCode, 404);
  });

  it('v2: verbosity defaults to FULL and the Version header is required', async () => {
    const res = await post('v2', { callbackUri: `${rx.url}/v2/b` });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().verbosity, 'FULL');
    assert.equal(res.json().filter, undefined);
    const noVersion = await vnfm.app.inject({ method: 'GET', url: '/vnflcm/v2/subscriptions' });
    assert.equal(noVersion.statusCode, 400);
  });

  it('v1: create, show, list validate against the 2.6.1 schemas; an identical request is 303 See Other', async () => {
    const body = { callbackUri: `${rx.url}/v1/a`, filter: { vnfInstanceSubscriptionFilter: { vnfInstanceIds: ['x'] }, notificationTypes: ['VnfIdentifierCreationNotification'] } };
    const res = await post('v1', body);
    assert.equal(res.statusCode, 201, res.body);
    const sub = res.json();
    expectEtsiValid('v1', 'LccnSubscription', sub, { noExtra: true });
    assert.equal(sub.verbosity, undefined);
    assert.equal(res.headers.location, `${vnfm.ctx.config.publicUrl}/vnflcm/v1/subscriptions/${sub.id}`);

    // same callbackUri + filter, attributes in another order -> the existing one
    const again = await post('v1', { filter: { notificationTypes: ['VnfIdentifierCreationNotification'], vnfInstanceSubscriptionFilter: { vnfInstanceIds: ['x'] } }, callbackUri: body.callbackUri });
    assert.equal(again.statusCode, 303, again.body);
    assert.equal(again.headers.location, res.headers.location);
    assert.equal(again.body, '');

    // a different filter is a different subscription
    const other = await post('v1', { callbackUri: body.callbackUri });
    assert.equal(other.statusCode, 201);

    const shown = await get('v1', `/subscriptions/${sub.id}`);
    assert.equal(shown.statusCode, 200);
    expectEtsiValid('v1', 'LccnSubscription', shown.json(), { noExtra: true });
    const list = await get('v1', '/subscriptions');
    assert.equal(list.statusCode, 200);
    expectEtsiValid('v1', 'subscriptions', list.json());
    expectEtsiValid('v1', 'LccnSubscription', list.json(), { array: true, noExtra: true });
    const ids = list.json().map((s: { id: string }) => s.id);
    assert.ok(ids.includes(sub.id) && ids.includes(other.json().id));

    // v2 has no duplicate detection
    const v2a = await post('v2', body);
    const v2b = await post('v2', body);
    assert.equal(v2a.statusCode, 201);
    assert.equal(v2b.statusCode, 201);
    assert.notEqual(v2a.json().id, v2b.json().id);
  });

  it('callback test: 204 accepted, anything else is 422 (v2) / 400 (v1) and nothing is stored', async () => {
    rx.handlers.set('/bad', () => 500);
    rx.handlers.set('/ok200', () => 200);
    const count = async () => Number((await vnfm.store.db.selectFrom('subscription').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
    const n0 = await count();
    const r2 = await post('v2', { callbackUri: `${rx.url}/bad` });
    assert.equal(r2.statusCode, 422, r2.body);
    assert.match(r2.json().detail, /Can't get from notification callback Uri\./);
    expectEtsiValid('v2', 'ProblemDetails', r2.json());
    const r200 = await post('v2', { callbackUri: `${rx.url}/ok200` });
    assert.equal(r200.statusCode, 422, 'the callback test requires 204 exactly');
    const r1 = await post('v1', { callbackUri: `${rx.url}/bad` });
    assert.equal(r1.statusCode, 400, r1.body);
    assert.match(r1.json().detail, /Can't get from notification callback Uri\./);
    // unreachable consumer
    const down = await startReceiver();
    const deadUrl = `${down.url}/x`;
    await down.close();
    const r3 = await post('v2', { callbackUri: deadUrl });
    assert.equal(r3.statusCode, 422);
    // One generic reason whatever happened (no status or connection error echoed: not an oracle
    // to map internal services); the operator finds the real reason in the log.
    assert.equal(r3.json().detail, r2.json().detail);
    assert.doesNotMatch(`${r2.json().detail} ${r3.json().detail}`, /500|ECONNREFUSED|connection|refused/);
    assert.ok(vnfm.logs.some((l) => l.includes('callback test failed') && l.includes('ECONNREFUSED')), 'the reason is logged');
    assert.equal(await count(), n0);
  });

  it('bad bodies are 400 with a ProblemDetails', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /callbackUri/],
      [{ callbackUri: 'not a url' }, /callbackUri/],
      [{ callbackUri: 'ftp://example.com/x' }, /http/],
      [{ callbackUri: `${rx.url}/c`, authentication: { authType: ['TLS_CERT'] } }, /TLS_CERT/],
      [{ callbackUri: `${rx.url}/c`, authentication: { authType: ['DIGEST'] } }, /DIGEST/],
      [{ callbackUri: `${rx.url}/c`, authentication: { authType: ['BASIC'] } }, /paramsBasic/],
      [{ callbackUri: `${rx.url}/c`, authentication: { authType: ['OAUTH2_CLIENT_CREDENTIALS'], paramsBasic: { userName: 'u', password: 'p' } } }, /paramsOauth2ClientCredentials/],
      [{ callbackUri: `${rx.url}/c`, authentication: { authType: ['BASIC'], paramsBasic: { userName: 'u' } } }, /password/],
      [{ callbackUri: `${rx.url}/c`, authentication: { authType: [] } }, /authType/],
      [{ callbackUri: `${rx.url}/c`, authentication: { authType: ['OAUTH2_CLIENT_CREDENTIALS'], paramsOauth2ClientCredentials: { clientId: 'c', clientPassword: 'p' } } }, /tokenEndpoint/],
      [{ callbackUri: `${rx.url}/c`, filter: { notificationTypes: ['SomethingElse'] } }, /notificationTypes/],
      [{ callbackUri: `${rx.url}/c`, filter: { operationTypes: ['REBOOT'] } }, /operationTypes/],
      [{ callbackUri: `${rx.url}/c`, filter: { operationStates: ['DONE'] } }, /operationStates/],
      [{ callbackUri: `${rx.url}/c`, filter: { notificationType: ['VnfIdentifierCreationNotification'] } }, /notificationType/],
      [{ callbackUri: `${rx.url}/c`, verbosity: 'LOUD' }, /verbosity/],
    ];
    for (const [body, detail] of cases) {
      const res = await post('v2', body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)} -> ${res.statusCode} ${res.body}`);
      assert.match(res.json().detail, detail, JSON.stringify(body));
      expectEtsiValid('v2', 'ProblemDetails', res.json());
    }
    const v1 = await post('v1', { callbackUri: `${rx.url}/c`, authentication: { authType: ['BASIC'] } });
    assert.equal(v1.statusCode, 400);
    // the service itself rejects bad bodies too (not only the route schema)
    await assert.rejects(vnfm.notify.subscriptions.create({ callbackUri: `${rx.url}/c`, filter: { operationStates: ['DONE'] } }, 'v2'), /operationStates/);
  });

  it('credentials are sealed, used for the callback test, and never returned nor logged', async () => {
    const seen: string[] = [];
    rx.handlers.set('/secure', (r) => {
      seen.push(String(r.headers.authorization ?? ''));
      return r.headers.authorization === `Basic ${Buffer.from('alice:s3cr3t-pw').toString('base64')}` ? 204 : 401;
    });
    const res = await post('v2', { callbackUri: `${rx.url}/secure`, authentication: { authType: ['BASIC'], paramsBasic: { userName: 'alice', password: 's3cr3t-pw' } } });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(seen.length, 1);
    assert.equal(res.json().authentication, undefined);
    assert.ok(!res.body.includes('s3cr3t-pw'));
    const shown = await get('v2', `/subscriptions/${res.json().id}`);
    assert.ok(!shown.body.includes('s3cr3t-pw') && !shown.body.includes('alice'));
    const row = await vnfm.store.db.selectFrom('subscription').selectAll().where('id', '=', res.json().id).executeTakeFirstOrThrow();
    assert.ok(row.auth_secret && !row.auth_secret.includes('s3cr3t-pw'));
    assert.deepEqual(row.auth_types, ['BASIC']);
    assert.deepEqual(vnfm.ctx.box.open(row.auth_secret), { basic: { userName: 'alice', password: 's3cr3t-pw' } });
    // wrong password -> the consumer answers 401 -> refused
    const wrong = await post('v2', { callbackUri: `${rx.url}/secure`, authentication: { authType: ['BASIC'], paramsBasic: { userName: 'alice', password: 'nope-pw' } } });
    assert.equal(wrong.statusCode, 422);
    assert.ok(!wrong.body.includes('nope-pw'));
    assert.ok(!vnfm.logs.join('').includes('s3cr3t-pw'));
    assert.ok(!vnfm.logs.join('').includes('nope-pw'));
  });

  it('testCallback false skips the GET', async () => {
    const quiet = await notifyVnfm({ store: vnfm.store, config: { notifications: { testCallback: false } } });
    try {
      const n = rx.requests.length;
      const res = await quiet.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: JSON.stringify({ callbackUri: `${rx.url}/bad` }) });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(rx.requests.length, n);
      await quiet.app.inject({ method: 'DELETE', url: `/vnflcm/v2/subscriptions/${res.json().id}`, headers: { version: '2.0.0' } });
    } finally {
      await quiet.close();
    }
  });

  it('delete drops the notifications still pending for the subscription, keeps those of others', async () => {
    const a = (await post('v2', { callbackUri: `${rx.url}/del-a`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: ['vnfd-del'] } } })).json();
    const b = (await post('v2', { callbackUri: `${rx.url}/del-b`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: ['vnfd-del'] } } })).json();
    const inst = facts({ vnfdId: 'vnfd-del' });
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst));
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, 'COMPLETED'));
    const pending = async (id: string) => (await vnfm.store.db.selectFrom('outbox').select('id').where('subscription_id', '=', id).where('status', '=', 'PENDING').execute()).length;
    assert.equal(await pending(a.id), 2);
    assert.equal(await pending(b.id), 2);
    assert.equal((await del('v2', `/subscriptions/${a.id}`)).statusCode, 204);
    assert.equal(await pending(a.id), 0);
    assert.equal(await pending(b.id), 2);
    await del('v2', `/subscriptions/${b.id}`);
  });

  it('unknown methods on the resources are 405', async () => {
    const put = await vnfm.app.inject({ method: 'PUT', url: '/vnflcm/v2/subscriptions', headers: V2, payload: '{}' });
    assert.equal(put.statusCode, 405);
    const patch = await vnfm.app.inject({ method: 'PATCH', url: '/vnflcm/v1/subscriptions/abc', headers: { 'content-type': 'application/json' }, payload: '{}' });
    assert.equal(patch.statusCode, 405);
  });
});
