/**
 * Durable notification delivery through the outbox: order per subscription, isolation of a failing
 * consumer, retries then DEAD, restart, and several workers delivering each row exactly once. Runs
 * on PGlite and on PostgreSQL (describeStores; the PostgreSQL half is the `pg` stage).
 *
 * "Two workers": on PostgreSQL the second worker has its own connection pool on the database (a
 * second process), so their claims really contend. On PGlite both workers share the one handle of
 * the embedded database, whose connections are serialised: that variant checks order and
 * exactly-once bookkeeping, not lock contention.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { DeliveryWorker } from '../../src/notify/delivery.ts';
import type { Database } from '../../src/store/schema.ts';
import { describeStores } from '../helpers/db.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { type NotifyVnfm, type Receiver, V2, drainAll, facts, notifyVnfm, opEvent, startReceiver, waitFor } from './fixture.ts';

const CONFIG = { notifications: { testCallback: true, timeoutMs: 5000, retryForMs: 10 * 60_000, backoffMs: 5, maxBackoffMs: 20 } };

await describeStores('notification delivery', (env) => {
  let rx: Receiver;
  let vnfm: NotifyVnfm;
  /** The database seen by the second worker: its own pool on PostgreSQL, the same handle on PGlite. */
  let secondDb: Kysely<Database>;

  before(async () => {
    rx = await startReceiver();
    const store = await env.open();
    secondDb = env.openSecond ? (await env.openSecond(store)).db : store.db;
    vnfm = await notifyVnfm({ store, config: CONFIG, pollMs: 50, concurrency: 4 });
  });
  after(async () => {
    await vnfm?.close();
    await rx?.close();
  });

  async function subscribe(v: 'v1' | 'v2', path: string, extra: Record<string, unknown> = {}, on: NotifyVnfm = vnfm): Promise<string> {
    const res = await on.app.inject({ method: 'POST', url: `/vnflcm/${v}/subscriptions`, headers: v === 'v2' ? V2 : { 'content-type': 'application/json' }, payload: JSON.stringify({ callbackUri: `${rx.url}${path}`, ...extra }) });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().id as string;
  }
  /** A filter that only matches events of `vnfdId`, so tests do not see each other's notifications. */
  const only = (vnfdId: string) => ({ filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] } } });
  const rows = (subId: string) => vnfm.store.db.selectFrom('outbox').selectAll().where('subscription_id', '=', subId).orderBy('id').execute();
  const counter = () => vnfm.ctx.metrics.registry.getSingleMetric('vnfm_notifications_delivery_total') as unknown as { get(): Promise<{ values: { labels: { result: string }; value: number }[] }> };
  const count = async (result: string) => (await counter().get()).values.find((x) => x.labels.result === result)?.value ?? 0;

  it('delivers in order per subscription, with Content-Type and Version headers, bodies ETSI-valid', async () => {
    const vnfdId = `vnfd-${randomUUID()}`;
    // random latency at the consumer shakes out any reordering
    rx.handlers.set('/order-v2', async () => {
      await new Promise((r) => setTimeout(r, Math.random() * 15));
      return 204;
    });
    const s2 = await subscribe('v2', '/order-v2', only(vnfdId));
    const s1 = await subscribe('v1', '/order-v1', only(vnfdId));
    const inst = facts({ vnfdId });
    const states = ['STARTING', 'PROCESSING', 'COMPLETED', 'STARTING', 'PROCESSING', 'FAILED_TEMP', 'PROCESSING', 'COMPLETED'];
    for (const st of states) await vnfm.ctx.notifier.enqueue(vnfm.store.db, { ...opEvent(inst, st), ...(st === 'FAILED_TEMP' ? { error: { status: 500, detail: 'boom' } } : {}) });
    const expected2 = (await rows(s2)).map((r) => r.notification.id);
    const expected1 = (await rows(s1)).map((r) => r.notification.id);
    assert.equal(expected2.length, states.length);
    const delivered0 = await count('delivered');
    vnfm.notify.worker.start();
    await waitFor(() => rx.posts('/order-v2').length === states.length && rx.posts('/order-v1').length === states.length, 30_000, 'all notifications');
    assert.deepEqual(rx.posts('/order-v2').map((n) => n.id), expected2);
    assert.deepEqual(rx.posts('/order-v1').map((n) => n.id), expected1);
    assert.deepEqual(rx.posts('/order-v2').map((n) => n.operationState), states);

    const post2 = rx.requests.filter((r) => r.method === 'POST' && r.path === '/order-v2');
    const post1 = rx.requests.filter((r) => r.method === 'POST' && r.path === '/order-v1');
    for (const r of post2) {
      assert.match(String(r.headers['content-type']), /^application\/json/);
      assert.equal(r.headers.version, '2.0.0');
      assert.equal(r.headers.authorization, undefined);
      expectEtsiValid('v2', 'VnfLcmOperationOccurrenceNotification', r.json);
      assert.equal(r.json?.subscriptionId, s2);
    }
    for (const r of post1) {
      assert.equal(r.headers.version, '1.3.0');
      expectEtsiValid('v1', 'VnfLcmOperationOccurrenceNotification', r.json);
    }
    await waitFor(async () => (await rows(s2)).every((r) => r.status === 'DELIVERED') && (await rows(s1)).every((r) => r.status === 'DELIVERED'), 30_000, 'rows DELIVERED');
    for (const r of await rows(s2)) {
      assert.equal(r.attempts, 1, `row ${r.id}: ${r.last_error}`);
      assert.ok(r.delivered_at);
      assert.equal(r.last_error, null);
    }
    assert.equal((await count('delivered')) - delivered0, 2 * states.length);
    // one log line per attempt, with the subscription and the notification type
    const lines = vnfm.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.subscriptionId === s2 && l.result === 'delivered');
    assert.equal(lines.length, states.length);
    assert.equal(lines[0]?.notificationType, 'VnfLcmOperationOccurrenceNotification');
    await vnfm.notify.worker.stop();
  });

  it('a failing consumer blocks only its own subscription; DEAD only once it failed for retryForMs, then the next one is delivered', async () => {
    const vnfdId = `vnfd-${randomUUID()}`;
    const inst = facts({ vnfdId });
    const first = opEvent(inst, 'STARTING');
    const firstOpOcc = first.kind === 'VnfLcmOperationOccurrenceNotification' ? first.opOccId : '';
    rx.handlers.set('/flaky', (r) => (r.method === 'POST' && r.json?.vnfLcmOpOccId === firstOpOcc ? 500 : 204));
    const bad = await subscribe('v2', '/flaky', only(vnfdId));
    const good = await subscribe('v2', '/healthy', only(vnfdId));
    const [dead0, failed0] = [await count('dead'), await count('failed')];
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, first);
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, 'PROCESSING'));
    await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, 'COMPLETED'));

    // first round: the healthy subscription gets its head, the flaky one fails and waits
    assert.equal(await vnfm.notify.worker.drainOnce(), 2);
    assert.equal(rx.posts('/healthy').length, 1);
    let r = await rows(bad);
    assert.equal(r[0]?.status, 'PENDING');
    assert.equal(r[0]?.attempts, 1);
    assert.equal(r[0]?.last_error, 'callback answered HTTP 500');
    assert.ok(r[0]?.failing_since, 'the failure streak started');
    assert.ok(new Date(r[0]?.next_attempt_at as Date).getTime() > new Date(r[0]?.created_at as Date).getTime(), 'the head was rescheduled');
    // the flaky subscription's next rows are not sent before its head is settled
    await vnfm.notify.worker.drainOnce();
    await vnfm.notify.worker.drainOnce();
    assert.equal(rx.posts('/healthy').length, 3, 'the healthy subscription is not held up');
    assert.equal(rx.posts('/flaky').filter((n) => n.vnfLcmOpOccId !== firstOpOcc).length, 0);

    // Many more failed attempts than the old 10-attempt limit: still PENDING (retryForMs is 10 min).
    vnfm.notify.worker.start();
    await waitFor(async () => ((await rows(bad))[0]?.attempts ?? 0) >= 12, 30_000, '12 failed attempts');
    await vnfm.notify.worker.stop();
    r = await rows(bad);
    assert.deepEqual(r.map((x) => x.status), ['PENDING', 'PENDING', 'PENDING']);
    assert.deepEqual(r.slice(1).map((x) => x.attempts), [0, 0], 'the rows behind the failing head wait');

    // 11 minutes of failures pass (the streak start is moved into the past): the next failed attempt gives the head up.
    await sql`update outbox set failing_since = now() - interval '11 minutes' where id = ${r[0]?.id}`.execute(vnfm.store.db);
    vnfm.notify.worker.start();
    await waitFor(async () => (await rows(bad)).every((x) => x.status !== 'PENDING'), 30_000, 'flaky subscription settled');
    await vnfm.notify.worker.stop();
    r = await rows(bad);
    assert.deepEqual(r.map((x) => x.status), ['DEAD', 'DELIVERED', 'DELIVERED']);
    assert.ok((r[0]?.attempts ?? 0) >= 13);
    assert.equal(r[0]?.last_error, 'callback answered HTTP 500');
    assert.ok(r[0]?.dead_at);
    const flaky = rx.posts('/flaky');
    assert.deepEqual(flaky.slice(-2).map((n) => n.operationState), ['PROCESSING', 'COMPLETED']);
    assert.ok(flaky.slice(0, -2).every((n) => n.operationState === 'STARTING'));
    assert.equal((await count('dead')) - dead0, 1);
    assert.equal((await count('failed')) - failed0, (r[0]?.attempts ?? 0) - 1);
    // given up loudly: one error line naming the row and how to redeliver it
    const gaveUp = vnfm.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.outboxId === Number(r[0]?.id) && l.result === 'dead');
    assert.equal(gaveUp.length, 1);
    assert.equal(gaveUp[0]?.level, 50, 'logged at error level');
    assert.match(String(gaveUp[0]?.msg), /redeliver/);

    // the outbox view shows it
    const view = await vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/notifications?status=DEAD&subscriptionId=${bad}` });
    assert.equal(view.statusCode, 200, view.body);
    const items = view.json();
    assert.equal(items.length, 1);
    assert.equal(items[0].subscriptionId, bad);
    assert.equal(items[0].notificationType, 'VnfLcmOperationOccurrenceNotification');
    assert.equal(items[0].lastError, 'callback answered HTTP 500');
    const all = await vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/notifications?subscriptionId=${good}` });
    assert.deepEqual(all.json().map((x: { status: string }) => x.status), ['DELIVERED', 'DELIVERED', 'DELIVERED']);
    assert.equal((await vnfm.app.inject({ method: 'GET', url: '/vnfm/v1/notifications?status=LOST' })).statusCode, 400);
    const metrics = await vnfm.app.inject({ method: 'GET', url: '/metrics' });
    assert.ok(/vnfm_notifications_delivery_total\{result="dead"\} [1-9]/.test(metrics.body), 'dead counter exposed');
    assert.ok(/\nvnfm_notifications_pending 0\n/.test(metrics.body), 'pending gauge is 0');
    assert.ok(/\nvnfm_notifications_dead [1-9]/.test(metrics.body), 'dead gauge exposed');
  });

  it('consumer down, then up: delivered after retries', async () => {
    const other = await startReceiver();
    const vnfdId = `vnfd-${randomUUID()}`;
    const res = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: JSON.stringify({ callbackUri: `${other.url}/cb`, ...only(vnfdId) }) });
    assert.equal(res.statusCode, 201);
    const sub = res.json().id as string;
    await other.down();
    const quick = await notifyVnfm({ store: vnfm.store, config: { notifications: { ...CONFIG.notifications } }, pollMs: 20 });
    try {
      const inst = facts({ vnfdId });
      await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, 'STARTING'));
      await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, 'PROCESSING'));
      quick.notify.worker.start();
      await waitFor(async () => ((await rows(sub))[0]?.attempts ?? 0) >= 2, 30_000, 'two failed attempts');
      const head = (await rows(sub))[0];
      assert.equal(head?.status, 'PENDING');
      assert.equal(head?.last_error, 'connection refused (ECONNREFUSED)');
      await other.up();
      await waitFor(() => other.posts('/cb').length === 2, 30_000, 'delivery after the consumer came back');
      assert.deepEqual(other.posts('/cb').map((n) => n.operationState), ['STARTING', 'PROCESSING']);
      await waitFor(async () => (await rows(sub)).every((x) => x.status === 'DELIVERED'), 30_000, 'rows DELIVERED');
    } finally {
      await quick.close();
      await other.close();
    }
  });

  it('a subscriber down "10 minutes" (many retries, timestamps moved into the past) receives every notification, in order, once it is back', async () => {
    const other = await startReceiver();
    const vnfdId = `vnfd-${randomUUID()}`;
    const res = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: JSON.stringify({ callbackUri: `${other.url}/cb`, ...only(vnfdId) }) });
    assert.equal(res.statusCode, 201, res.body);
    const sub = res.json().id as string;
    await other.down();
    // The defaults (retryForMs 24 h), with a back-off small enough to make many attempts quickly.
    const quick = await notifyVnfm({ store: vnfm.store, config: { notifications: { backoffMs: 2, maxBackoffMs: 10 } }, pollMs: 10 });
    assert.equal(quick.ctx.config.notifications.retryForMs, 24 * 3_600_000);
    try {
      const inst = facts({ vnfdId });
      const states = ['STARTING', 'PROCESSING', 'COMPLETED', 'STARTING', 'PROCESSING', 'FAILED_TEMP'];
      for (const st of states) await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, st));
      const expected = (await rows(sub)).map((r) => r.notification.id);
      quick.notify.worker.start();
      await waitFor(async () => ((await rows(sub))[0]?.attempts ?? 0) >= 12, 30_000, '12 failed attempts of the head');
      // Ten minutes of the outage pass: every timestamp of the subscription's rows moves 10 min back.
      await quick.notify.worker.stop();
      await sql`update outbox set created_at = created_at - interval '10 minutes', failing_since = failing_since - interval '10 minutes', next_attempt_at = now() where subscription_id = ${sub}`.execute(vnfm.store.db);
      const before = (await rows(sub))[0]?.attempts ?? 0;
      quick.notify.worker.start();
      await waitFor(async () => ((await rows(sub))[0]?.attempts ?? 0) >= before + 3, 30_000, 'more failed attempts after the 10 minutes');
      let r = await rows(sub);
      assert.ok(r.every((x) => x.status === 'PENDING'), `nothing given up: ${r.map((x) => x.status).join(',')}`);
      assert.deepEqual(r.slice(1).map((x) => x.attempts), [0, 0, 0, 0, 0], 'only the head was tried');
      assert.equal(r[0]?.last_error, 'connection refused (ECONNREFUSED)');

      await other.up();
      await waitFor(async () => (await rows(sub)).every((x) => x.status === 'DELIVERED'), 30_000, 'every row DELIVERED');
      await quick.notify.worker.stop();
      assert.deepEqual(other.posts('/cb').map((n) => n.id), expected, 'every notification, once, in order');
      assert.deepEqual(other.posts('/cb').map((n) => n.operationState), states);
      r = await rows(sub);
      assert.ok(r.every((x) => x.failing_since === null || x.id === r[0]?.id), 'only the head had a failure streak');
    } finally {
      await quick.close();
      await other.close();
    }
  });

  it('default back-off: after a long outage the next attempt is due within 25 s (the subscriber that answers again is served within 30 s); a dead one costs one request per 15-25 s, for its oldest notification only', async () => {
    const other = await startReceiver();
    const vnfdId = `vnfd-${randomUUID()}`;
    const res = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: JSON.stringify({ callbackUri: `${other.url}/cb`, ...only(vnfdId) }) });
    assert.equal(res.statusCode, 201, res.body);
    const sub = res.json().id as string;
    await other.down();
    // The default back-off (no override); one worker driven round by round (drainOnce), no loop.
    const dflt = await notifyVnfm({ store: vnfm.store, config: { notifications: { testCallback: true } } });
    const db = vnfm.store.db;
    /** Milliseconds from now until the head row of `sub` is due again (the database clock). */
    const headDueInMs = async (): Promise<number> => {
      const r = await sql<{ ms: string | number }>`select extract(epoch from (next_attempt_at - now())) * 1000 as ms from outbox where subscription_id = ${sub} and status = 'PENDING' order by seq nulls last, id limit 1`.execute(db);
      return Number(r.rows[0]?.ms);
    };
    try {
      const inst = facts({ vnfdId });
      for (const st of ['STARTING', 'PROCESSING', 'COMPLETED', 'STARTING', 'PROCESSING']) await vnfm.ctx.notifier.enqueue(db, opEvent(inst, st));
      // Ten minutes of outage behind it: the head failed 30 times (the back-off at its longest).
      await sql`update outbox set attempts = 30, failing_since = now() - interval '10 minutes', next_attempt_at = now() where subscription_id = ${sub} and id = (select min(id) from outbox where subscription_id = ${sub})`.execute(db);
      await sql`update outbox set next_attempt_at = now() where subscription_id = ${sub}`.execute(db);
      const gaps: number[] = [];
      for (let i = 0; i < 8; i++) {
        await dflt.notify.worker.drainOnce();
        gaps.push(await headDueInMs());
        // the pause passes (the head is due again), the subscriber still down
        await sql`update outbox set next_attempt_at = now() where subscription_id = ${sub} and attempts > 0 and status = 'PENDING'`.execute(db);
      }
      const r = await rows(sub);
      assert.equal(r[0]?.attempts, 38, 'one attempt per round, for the head');
      assert.deepEqual(r.slice(1).map((x) => x.attempts), [0, 0, 0, 0], 'the waiting notifications cost nothing');
      // 15-25 s apart (jitter +-25 % around 20 s): at most 4 requests a minute for this subscriber
      for (const g of gaps) assert.ok(g >= 15_000 - 1_000 && g <= 25_000, `pause ${Math.round(g)} ms not within 15-25 s: ${gaps.map(Math.round).join(', ')}`);
      assert.ok(Math.floor(60_000 / Math.min(...gaps)) <= 4, 'at most 4 attempts a minute');

      // It answers again now: its next attempt is due within 25 s from now (the last pause),
      // so within 30 s it is served; the time passes and every row is delivered, in order.
      await other.up();
      const wait = await headDueInMs();
      assert.ok(wait <= 25_000, `next attempt due in ${Math.round(wait)} ms`);
      await sql`update outbox set next_attempt_at = now() where subscription_id = ${sub} and status = 'PENDING'`.execute(db);
      for (let i = 0; i < 10 && (await rows(sub)).some((x) => x.status !== 'DELIVERED'); i++) await dflt.notify.worker.drainOnce();
      assert.deepEqual(other.posts('/cb').map((n) => n.operationState), ['STARTING', 'PROCESSING', 'COMPLETED', 'STARTING', 'PROCESSING']);
    } finally {
      await dflt.close();
      await other.close();
    }
  });

  it('dead notifications are listed and redelivered (one, or a whole subscription), with ProblemDetails for 404/409 and no credentials', async () => {
    const vnfdId = `vnfd-${randomUUID()}`;
    const secret = 'r3deliver-Secret-pw';
    let up = false;
    rx.handlers.set('/dead-basic', (r) => (r.method === 'GET' || up ? 204 : 503));
    const sub = await subscribe('v2', '/dead-basic', { ...only(vnfdId), authentication: { authType: ['BASIC'], paramsBasic: { userName: 'nfvo', password: secret } } });
    const inst = facts({ vnfdId });
    for (const st of ['STARTING', 'PROCESSING', 'COMPLETED']) await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, st));
    assert.equal(await vnfm.notify.worker.drainOnce() >= 1, true);
    let r = await rows(sub);
    assert.equal(r[0]?.attempts, 1);
    // The subscriber has been failing for 11 minutes (retryForMs is 10): the head is given up at its
    // next failure, and the rows behind it continue the same streak: one attempt each.
    await sql`update outbox set failing_since = now() - interval '11 minutes', next_attempt_at = now() where id = ${r[0]?.id}`.execute(vnfm.store.db);
    const redelivered0 = await count('redelivered');
    vnfm.notify.worker.start();
    await waitFor(async () => (await rows(sub)).every((x) => x.status === 'DEAD'), 30_000, 'all three DEAD');
    await vnfm.notify.worker.stop();
    r = await rows(sub);
    assert.deepEqual(r.map((x) => x.attempts), [2, 1, 1]);
    assert.deepEqual(r.map((x) => new Date(x.failing_since as Date).toISOString()), Array(3).fill(new Date(r[0]?.failing_since as Date).toISOString()), 'one streak');
    const ids = r.map((x) => String(x.id));

    const list = await vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/notifications?subscriptionId=${sub}&state=dead` });
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(list.json().map((x: { id: string }) => x.id), [...ids].reverse(), 'newest first');
    for (const x of list.json()) {
      assert.equal(x.status, 'DEAD');
      assert.ok(x.deadAt && x.failingSince);
      assert.equal(x._links.redeliver.href, `${vnfm.ctx.config.publicUrl}/vnfm/v1/notifications/${x.id}/redeliver`);
    }
    assert.deepEqual((await vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/notifications?subscriptionId=${sub}&state=DEAD` })).json(), list.json(), 'any case');
    const one = await vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/notifications/${ids[0]}` });
    assert.equal(one.statusCode, 200);
    assert.equal(one.json().notification.operationState, 'STARTING', 'the body as it is sent');

    up = true;
    const single = await vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/notifications/${ids[1]}/redeliver` });
    assert.equal(single.statusCode, 202, single.body);
    assert.equal(single.json().status, 'PENDING');
    const again = await vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/notifications/${ids[1]}/redeliver` });
    assert.equal(again.statusCode, 409, again.body);
    assert.match(String(again.headers['content-type']), /^application\/problem\+json/);
    assert.equal(again.json().type, 'urn:vnfm:error:VNFM_ERR_API_CONFLICT');
    assert.match(again.json().detail, /is PENDING; only DEAD notifications can be redelivered/);
    await drainAll(vnfm.notify);
    assert.deepEqual(rx.posts('/dead-basic').filter((n) => n.subscriptionId === sub).slice(-1).map((n) => n.operationState), ['PROCESSING']);
    assert.deepEqual((await rows(sub)).map((x) => x.status), ['DEAD', 'DELIVERED', 'DEAD']);

    for (const bad of ['999999999', 'not-a-row']) {
      const nf = await vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/notifications/${bad}/redeliver` });
      assert.equal(nf.statusCode, 404, nf.body);
      assert.equal(nf.json().status, 404);
      assert.equal((await vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/notifications/${bad}` })).statusCode, 404);
    }
    const whole = await vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/subscriptions/${sub}/redeliver` });
    assert.equal(whole.statusCode, 202, whole.body);
    assert.equal(whole.json().redelivered, 2);
    assert.deepEqual(whole.json().notifications.map((n: { id: string }) => n.id), [ids[0], ids[2]]);
    await drainAll(vnfm.notify);
    assert.deepEqual(rx.posts('/dead-basic').filter((n) => n.subscriptionId === sub).slice(-2).map((n) => n.operationState), ['STARTING', 'COMPLETED'], 'in their original order');
    assert.deepEqual((await rows(sub)).map((x) => x.status), ['DELIVERED', 'DELIVERED', 'DELIVERED']);
    assert.equal((await count('redelivered')) - redelivered0, 3);
    const none = await vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/subscriptions/${sub}/redeliver` });
    assert.equal(none.statusCode, 409, none.body);
    const unknown = await vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/subscriptions/${randomUUID()}/redeliver` });
    assert.equal(unknown.statusCode, 404, unknown.body);
    assert.equal(unknown.json().type, 'urn:vnfm:error:VNFM_ERR_SUB_NOT_FOUND');

    // A dead row whose subscription was deleted cannot be redelivered (nobody to deliver to).
    const orphan = await vnfm.store.db.insertInto('outbox').values({ subscription_id: `deleted-${randomUUID()}`, notification: '{}', status: 'DEAD', attempts: 1, next_attempt_at: new Date() }).returning('id').executeTakeFirstOrThrow();
    const gone = await vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/notifications/${orphan.id}/redeliver` });
    assert.equal(gone.statusCode, 409, gone.body);
    assert.match(gone.json().detail, /subscription .* was deleted/);

    for (const body of [list.body, one.body, single.body, whole.body, again.body]) {
      assert.ok(!body.includes(secret), 'no password');
      assert.ok(!body.includes(Buffer.from(`nfvo:${secret}`).toString('base64')), 'no Authorization value');
      assert.ok(!/paramsBasic|auth_secret|authSecret/.test(body), 'no credential fields');
    }
  });

  it('survives a restart: rows pending in one VNFM are delivered by the next one, exactly once', async () => {
    const other = await startReceiver();
    const vnfdId = `vnfd-${randomUUID()}`;
    const first = await notifyVnfm({ store: vnfm.store, config: CONFIG, pollMs: 20 });
    const res = await first.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: JSON.stringify({ callbackUri: `${other.url}/cb`, ...only(vnfdId) }) });
    const sub = res.json().id as string;
    await other.down();
    const inst = facts({ vnfdId });
    for (const st of ['STARTING', 'PROCESSING', 'COMPLETED']) await first.ctx.notifier.enqueue(first.store.db, opEvent(inst, st));
    first.notify.worker.start();
    await waitFor(async () => ((await rows(sub))[0]?.attempts ?? 0) >= 1, 30_000, 'a failed attempt');
    await first.close();
    await other.up();
    const second = await notifyVnfm({ store: vnfm.store, config: CONFIG, pollMs: 20 });
    try {
      second.notify.worker.start();
      await waitFor(() => other.posts('/cb').length >= 3, 30_000, 'delivery by the new process');
      await waitFor(async () => (await rows(sub)).every((x) => x.status === 'DELIVERED'), 30_000, 'rows DELIVERED');
      // Both workers that could deliver are stopped now (stop waits for deliveries in flight), so
      // what the consumer got is final: no pause hoping a duplicate would have shown up by then.
      await second.notify.worker.stop();
      assert.deepEqual(other.posts('/cb').map((n) => n.operationState), ['STARTING', 'PROCESSING', 'COMPLETED']);
    } finally {
      await second.close();
      await other.close();
    }
  });

  it('delivers in commit order: a row committed while a transaction holding a lower id is open goes first; the order is kept', { skip: env.openSecond ? false : 'one PGlite handle runs one transaction at a time (the race needs two connections)' }, async () => {
    await vnfm.notify.worker.stop();
    try {
      const vnfdId = `vnfd-${randomUUID()}`;
      const path = `/commit-order-${vnfdId.slice(5, 13)}`;
      const sub = await subscribe('v2', path, only(vnfdId));
      const inst = facts({ vnfdId });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let enqueued!: () => void;
      const inOpenTx = new Promise<void>((r) => (enqueued = r));
      // T1 (second pool) draws the lower outbox id and stays open; T2 draws the next one and commits.
      const t1 = secondDb.transaction().execute(async (tx) => {
        await vnfm.ctx.notifier.enqueue(tx, opEvent(inst, 'STARTING', 'INSTANTIATE'));
        enqueued();
        await gate;
      });
      const w = new DeliveryWorker({ db: vnfm.store.db, box: vnfm.ctx.box, config: vnfm.ctx.config, log: vnfm.ctx.log, metrics: vnfm.ctx.metrics, concurrency: 1000, pollMs: 10 });
      try {
        await inOpenTx;
        await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, 'STARTING', 'HEAL'));
        await w.drainOnce();
        assert.deepEqual(rx.posts(path).map((n) => n.operation), ['HEAL'], 'the committed row is delivered; the open one is not visible yet');
      } finally {
        release();
        await t1;
      }
      await waitFor(async () => {
        await w.drainOnce();
        return rx.posts(path).length >= 2;
      }, 30_000, 'both delivered');
      assert.deepEqual(rx.posts(path).map((n) => n.operation), ['HEAL', 'INSTANTIATE']);
      // The outbox says the same order: by sequence, not by id.
      const r = await vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/notifications?subscriptionId=${sub}` });
      const listed = (r.json() as { id: string; sequence: string; notificationId: string }[]).sort((a, b) => Number(a.sequence) - Number(b.sequence));
      assert.deepEqual(listed.map((x) => x.notificationId), rx.posts(path).map((n) => n.id));
      assert.ok(Number(listed[0]?.id) > Number(listed[1]?.id), 'the first delivered has the higher id');
    } finally {
      vnfm.notify.worker.start();
    }
  });

  const how = env.openSecond ? 'two connection pools, claims contend' : 'one PGlite handle: claims serialised, no lock contention exercised';
  it(`two workers on one database deliver every row exactly once, in order per subscription (${how})`, async () => {
    await twoWorkers(vnfm, rx, secondDb);
  });
}, { timeout: 120_000 });

/** Two workers (the second one over `secondDb`) race for the same rows; every row must be delivered once, in order. */
async function twoWorkers(vnfm: NotifyVnfm, rx: Receiver, secondDb: Kysely<Database>): Promise<void> {
  const vnfdId = `vnfd-${randomUUID()}`;
  const tag = randomUUID().slice(0, 8);
  const paths = [`/w-a-${tag}`, `/w-b-${tag}`, `/w-c-${tag}`];
  for (const p of paths)
    rx.handlers.set(p, async () => {
      await new Promise((r) => setTimeout(r, Math.random() * 5));
      return 204;
    });
  const rows = (subId: string) => vnfm.store.db.selectFrom('outbox').selectAll().where('subscription_id', '=', subId).orderBy('id').execute();
  const subs: string[] = [];
  for (const p of paths) {
    const res = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: JSON.stringify({ callbackUri: `${rx.url}${p}`, filter: { vnfInstanceSubscriptionFilter: { vnfdIds: [vnfdId] } } }) });
    assert.equal(res.statusCode, 201, res.body);
    subs.push(res.json().id);
  }
  const inst = facts({ vnfdId });
  for (let i = 0; i < 10; i++) await vnfm.ctx.notifier.enqueue(vnfm.store.db, opEvent(inst, i % 2 ? 'PROCESSING' : 'STARTING'));
  const deps = { db: vnfm.store.db, box: vnfm.ctx.box, config: vnfm.ctx.config, log: vnfm.ctx.log, metrics: vnfm.ctx.metrics, concurrency: 2, pollMs: 10 };
  const w1 = new DeliveryWorker(deps);
  const w2 = new DeliveryWorker({ ...deps, db: secondDb });
  w1.start();
  w2.start();
  try {
    await waitFor(async () => {
      for (const s of subs) if (!(await rows(s)).every((x) => x.status === 'DELIVERED')) return false;
      return true;
    }, 30_000, 'all rows DELIVERED');
  } finally {
    await Promise.all([w1.stop(), w2.stop()]);
  }
  for (const [i, p] of paths.entries()) {
    const got = rx.posts(p).map((n) => n.id);
    assert.deepEqual(got, (await rows(subs[i] as string)).map((r) => r.notification.id), `order and exactly-once for ${p}`);
  }
  for (const s of subs) for (const r of await rows(s)) assert.equal(r.attempts, 1);
}
