/**
 * Fault intake through HTTP: 204 for a valid notification (stored and packed), 400 for every kind
 * of bad input and 404 for unknown instances or a disabled receiver, with nothing stored; 204
 * "ignored" when auto-heal is off; receiver auth; the read-only ledger API and metrics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Services as AutohealContext } from '../../src/core/services.ts';
import { type AutohealVnfm, type TestVnfc, V2, faultBody, instantiateVnf, notify, onboardSample, startAutohealVnfm } from './fixture.ts';

let h: AutohealVnfm;
let inst: { id: string; vnfcs: TestVnfc[] };
let vnfdId: string;

async function counts() {
  const db = h.vnfm.store.db as unknown as import('kysely').Kysely<Record<string, Record<string, unknown>>>;
  const n = await db.selectFrom('fault_notification').select((eb) => eb.fn.countAll().as('c')).executeTakeFirstOrThrow();
  const b = await db.selectFrom('autoheal_batch').select((eb) => eb.fn.countAll().as('c')).executeTakeFirstOrThrow();
  return { notifications: Number(n.c), batches: Number(b.c) };
}

before(async () => {
  h = await startAutohealVnfm({ windowMs: 60_000 });
  vnfdId = await onboardSample(h.vnfm);
  inst = await instantiateVnf(h.vnfm, vnfdId);
  assert.equal(inst.vnfcs.length, 3);
  assert.ok(inst.vnfcs.every((v) => v.alarmId), 'alarm ids in vnfcResourceInfo.metadata');
});
after(async () => {
  await h?.vnfm.close();
});

describe('fault intake', () => {
  it('accepts a valid notification with 204 and packs it', async () => {
    const v = inst.vnfcs[0] as TestVnfc;
    const r = await notify(h.vnfm, inst.id, v.serverId, faultBody(v));
    assert.equal(r.statusCode, 204, r.body);
    assert.equal(r.body, '');
    const list = await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/fault_notifications?vnfInstanceId=${inst.id}` });
    assert.equal(list.statusCode, 200);
    const [n] = list.json();
    assert.equal(n.status, 'packed');
    assert.equal(n.vnfcInstanceId, v.vnfcInfoId);
    assert.equal(n.serverId, v.serverId);
    assert.equal(n.faultType, '10');
    assert.equal(n.hostId, 'host-1');
    assert.deepEqual(n.faultOption, { detail: 'test' });
    const batches = (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches?vnfInstanceId=${inst.id}` })).json();
    assert.equal(batches.length, 1);
    assert.equal(batches[0].status, 'open');
    assert.equal(batches[0].id, n.batchId);
    const one = (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches/${n.batchId}` })).json();
    assert.equal(one.notifications.length, 1);
    assert.deepEqual(one.targets, [{ vnfcInfoId: v.vnfcInfoId, vnfcResourceInfoId: v.vnfcResourceInfoId, serverId: v.serverId }]);
    assert.match(one._links.vnfInstance.href, new RegExp(inst.id));
  });

  it('rejects bad bodies with 400 and stores nothing', async () => {
    const v = inst.vnfcs[1] as TestVnfc;
    const before = await counts();
    const bad: unknown[] = [
      {},
      { notification: 'x' },
      { notification: { alarm_id: v.alarmId, fault_id: '1234' } },
      { notification: { fault_id: '1234', fault_type: '10' } },
      faultBody(v, { fault_id: '123' }),
      faultBody(v, { fault_id: '12345' }),
      faultBody(v, { fault_type: '12' }),
      faultBody(v, { fault_type: 10 }),
      faultBody(v, { alarm_id: '' }),
      faultBody(v, { fault_option: 'x' }),
      { ...faultBody(v), extra: 1 },
      faultBody(v, { alarm_id: 'a\u0000b' }),
    ];
    for (const b of bad) {
      const r = await notify(h.vnfm, inst.id, v.serverId, b);
      assert.equal(r.statusCode, 400, `${JSON.stringify(b)} -> ${r.statusCode} ${r.body}`);
      assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
    }
    const raw = await h.vnfm.app.inject({ method: 'POST', url: `/server_notification/vnf_instances/${inst.id}/servers/${v.serverId}/notify`, payload: '{"notification": ', headers: { 'content-type': 'application/json' } });
    assert.equal(raw.statusCode, 400);
    assert.deepEqual(await counts(), before);
  });

  it('answers 404 for an unknown instance and 400 for mismatching fault, server or alarm ids, storing nothing', async () => {
    const [a, b] = inst.vnfcs as [TestVnfc, TestVnfc];
    const before = await counts();
    const unknown = await notify(h.vnfm, 'no-such-instance', a.serverId, faultBody(a));
    assert.equal(unknown.statusCode, 404);
    const cases: [string, unknown, RegExp][] = [
      [a.serverId, faultBody(a, { fault_id: '9999' }), /fault_id does not match/],
      ['unknown-server', faultBody(a), /no VNFC .* runs on server unknown-server/],
      [a.serverId, faultBody(a, { alarm_id: 'other-alarm' }), /alarm_id other-alarm is not the alarm registered/],
      [a.serverId, faultBody(b), /is not the alarm registered for server/],
    ];
    for (const [server, body, msg] of cases) {
      const r = await notify(h.vnfm, inst.id, server, body);
      assert.equal(r.statusCode, 400, r.body);
      assert.match(r.json().detail, msg);
    }
    const c = await h.vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId } });
    const notInst = await notify(h.vnfm, c.json().id, a.serverId, faultBody(a));
    assert.equal(notInst.statusCode, 400);
    assert.match(notInst.json().detail, /not instantiated/);
    assert.deepEqual(await counts(), before);
  });

  it('takes the accepted fault ids from the instance metadata when set (PATCH)', async () => {
    const other = await instantiateVnf(h.vnfm, vnfdId);
    const v = other.vnfcs[0] as TestVnfc;
    const p = await h.vnfm.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${other.id}`, headers: { ...V2, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ metadata: { ServerNotifierFaultID: ['9999'] } }) });
    assert.equal(p.statusCode, 202, p.body);
    await h.ctx.engine?.runner.idle();
    assert.equal((await notify(h.vnfm, other.id, v.serverId, faultBody(v))).statusCode, 400);
    assert.equal((await notify(h.vnfm, other.id, v.serverId, faultBody(v, { fault_id: '9999' }))).statusCode, 204);
  });

  it('records a notification as ignored (204, no batch) when auto-heal is disabled for the VNF', async () => {
    const off = await instantiateVnf(h.vnfm, vnfdId, { autoheal: false });
    const v = off.vnfcs[2] as TestVnfc;
    const r = await notify(h.vnfm, off.id, v.serverId, faultBody(v, { fault_type: '21' }));
    assert.equal(r.statusCode, 204);
    const list = (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/fault_notifications?vnfInstanceId=${off.id}` })).json();
    assert.equal(list.length, 1);
    assert.equal(list[0].status, 'ignored');
    assert.match(list[0].reason, /isAutohealEnabled/);
    assert.equal(list[0].batchId, null);
    const batches = (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches?vnfInstanceId=${off.id}` })).json();
    assert.deepEqual(batches, []);
    const byFilter = (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/fault_notifications?filter=(eq,status,ignored)` })).json();
    assert.ok(byFilter.length >= 1 && byFilter.every((n: { status: string }) => n.status === 'ignored'));
  });

  it('enforces receiver auth (bearer, basic) and answers 404 when the receiver is disabled', async () => {
    const cfg = h.ctx.config.faultNotification;
    const v = inst.vnfcs[1] as TestVnfc;
    const before = await counts();
    try {
      cfg.auth = 'bearer';
      cfg.credential = 's3cret-token';
      let r = await notify(h.vnfm, inst.id, v.serverId, faultBody(v));
      assert.equal(r.statusCode, 401);
      assert.match(String(r.headers['www-authenticate']), /Bearer/);
      assert.ok(!r.body.includes('s3cret'));
      r = await notify(h.vnfm, inst.id, v.serverId, faultBody(v), { authorization: 'Bearer wrong' });
      assert.equal(r.statusCode, 401);
      r = await notify(h.vnfm, inst.id, v.serverId, { bad: 'body' }, { authorization: 'Bearer wrong' });
      assert.equal(r.statusCode, 401, 'auth is checked before the body');
      assert.deepEqual(await counts(), before);
      r = await notify(h.vnfm, inst.id, v.serverId, faultBody(v), { authorization: 'Bearer s3cret-token' });
      assert.equal(r.statusCode, 204);
      cfg.auth = 'basic';
      cfg.credential = 'notifier:pw';
      r = await notify(h.vnfm, inst.id, v.serverId, faultBody(v), { authorization: `Basic ${Buffer.from('notifier:bad').toString('base64')}` });
      assert.equal(r.statusCode, 401);
      r = await notify(h.vnfm, inst.id, v.serverId, faultBody(v), { authorization: `Basic ${Buffer.from('notifier:pw').toString('base64')}` });
      assert.equal(r.statusCode, 204);
      cfg.auth = 'none';
      cfg.enabled = false;
      r = await notify(h.vnfm, inst.id, v.serverId, faultBody(v));
      assert.equal(r.statusCode, 404);
      assert.match(r.json().detail, /not enabled/);
    } finally {
      cfg.auth = 'none';
      cfg.credential = undefined;
      cfg.enabled = true;
    }
    assert.ok(!h.vnfm.logs.join('').includes('s3cret-token'), 'credential never logged');
  });

  it('writes a burst of concurrent notifications in groups, answering each exactly as alone', async () => {
    const [a, b] = [await instantiateVnf(h.vnfm, vnfdId), await instantiateVnf(h.vnfm, vnfdId)];
    const off = await instantiateVnf(h.vnfm, vnfdId, { autoheal: false });
    const before = h.ctx.autoheal?.intake.stats ?? { groups: 0, written: 0 };
    const [a0, a1] = a.vnfcs as [TestVnfc, TestVnfc];
    const cases: { id: string; server: string; body: unknown; status: number; detail?: RegExp }[] = [];
    for (let i = 0; i < 30; i++) {
      const x = a.vnfcs[i % 3] as TestVnfc;
      const y = b.vnfcs[i % 2] as TestVnfc;
      cases.push({ id: a.id, server: x.serverId, body: faultBody(x, { fault_option: { seq: i } }), status: 204 });
      cases.push({ id: b.id, server: y.serverId, body: faultBody(y), status: 204 });
      if (i % 10 === 0) {
        const z = off.vnfcs[0] as TestVnfc;
        cases.push({ id: off.id, server: z.serverId, body: faultBody(z), status: 204 });
        cases.push({ id: 'no-such-vnf', server: a0.serverId, body: faultBody(a0), status: 404, detail: /VnfInstance no-such-vnf not found/ });
        cases.push({ id: a.id, server: a0.serverId, body: faultBody(a0, { fault_id: '4321' }), status: 400, detail: /fault_id does not match/ });
        cases.push({ id: a.id, server: a0.serverId, body: faultBody(a1), status: 400, detail: /alarm_id .* is not the alarm registered for server/ });
        cases.push({ id: a.id, server: 'no-such-server', body: faultBody(a0), status: 400, detail: /no VNFC of VnfInstance .* runs on server no-such-server/ });
      }
    }
    const res = await Promise.all(cases.map((c) => notify(h.vnfm, c.id, c.server, c.body)));
    res.forEach((r, i) => {
      const c = cases[i] as (typeof cases)[number];
      assert.equal(r.statusCode, c.status, `${i}: ${r.body}`);
      if (c.detail) assert.match(r.json().detail, c.detail);
    });
    const after = h.ctx.autoheal?.intake.stats ?? { groups: 0, written: 0 };
    assert.equal(after.written - before.written, 63, 'every accepted or ignored notification written');
    // A behaviour bound, not a timing one: the requests are injected in process (no network), the
    // embedded database runs on this thread and the queue has no timer (a group is whatever arrived
    // while the previous one was being written), so the count depends on the order of the event
    // loop only, not on the machine's speed. One write per notification would be 63 groups.
    assert.ok(after.groups - before.groups < 10, `written in few groups (${after.groups - before.groups})`);
    const list = async (id: string) => (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/fault_notifications?vnfInstanceId=${id}` })).json() as { status: string; reason: string | null; faultOption: { seq?: number } }[];
    const la = await list(a.id);
    assert.equal(la.length, 30);
    assert.equal(la.filter((n) => n.reason === null).length, 3, 'first notification of each VNFC');
    assert.deepEqual(la.map((n) => n.faultOption.seq).sort((x, y) => (x as number) - (y as number)), Array.from({ length: 30 }, (_, i) => i));
    assert.equal((await list(b.id)).length, 30);
    assert.deepEqual((await list(off.id)).map((n) => n.status), ['ignored', 'ignored', 'ignored']);
    for (const [v, n] of [[a, 3], [b, 2]] as const) {
      const bs = (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches?vnfInstanceId=${v.id}` })).json();
      assert.equal(bs.length, 1, 'one batch per VNF');
      assert.equal(bs[0].notificationCount, 30);
      assert.equal(bs[0].targets.length, n);
    }
  });

  it('counts notifications by result in /metrics', async () => {
    const m = (await h.vnfm.app.inject({ method: 'GET', url: '/metrics' })).body;
    const val = (result: string) => Number(new RegExp(`vnfm_fault_notifications_total\\{result="${result}"\\} (\\d+)`).exec(m)?.[1]);
    assert.ok(val('accepted') >= 4, `accepted ${val('accepted')} ignored ${val('ignored')} rejected ${val('rejected')}`);
    assert.ok(val('ignored') >= 1);
    assert.ok(val('rejected') >= 20, `rejected ${val('rejected')}`);
    assert.match(m, /vnfm_autoheal_batches_total\{result="held"\} 0/);
  });

  it('serves 404 for unknown ledger entries and 409 for releasing an open batch', async () => {
    assert.equal((await h.vnfm.app.inject({ method: 'GET', url: '/vnfm/v1/heal_batches/nope' })).statusCode, 404);
    assert.equal((await h.vnfm.app.inject({ method: 'GET', url: '/vnfm/v1/fault_notifications/nope' })).statusCode, 404);
    const [b] = (await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches?vnfInstanceId=${inst.id}&status=open` })).json();
    const r = await h.vnfm.app.inject({ method: 'POST', url: `/vnfm/v1/heal_batches/${b.id}/release` });
    assert.equal(r.statusCode, 409);
  });
});

export type { AutohealContext };
