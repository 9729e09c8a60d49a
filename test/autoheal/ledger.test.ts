/**
 * Ledger and batch storage: packing into one open batch per VNF (also under concurrency), claims
 * that two processes never share, lease take-over, lost claims that write nothing, release rules,
 * and batches following their heal op occ. Runs on PGlite and on PostgreSQL (describeStores; the
 * PostgreSQL half is the `pg` stage).
 *
 * The claim race uses two ledgers: on PostgreSQL over two independent connection pools (two
 * processes), so `FOR UPDATE SKIP LOCKED` is really contended; on PGlite over the one handle the
 * embedded database has, whose connections are serialised, so there the race is never contended
 * and only the bookkeeping (one owner, take-over, lost claim) is checked.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { InstanceFactsCache } from '../../src/autoheal/instance-facts.ts';
import { FaultLedger, batchOrigin, healCausePrefix } from '../../src/autoheal/ledger.ts';
import { type TestStore, describeStores } from '../helpers/db.ts';

await describeStores('fault ledger', (env) => {
  let store: TestStore;
  let ledger: FaultLedger;
  /** A second ledger: another process on PostgreSQL (own pool), the same handle on PGlite. */
  let rivalLedger: FaultLedger;

  before(async () => {
    store = await env.open();
    ledger = new FaultLedger(store.db);
    rivalLedger = new FaultLedger(env.openSecond ? (await env.openSecond(store)).db : store.db);
  });

  const input = (vnf: string, vnfc: string, server = `srv-${vnfc}`) => ({ vnfInstanceId: vnf, serverId: server, alarmId: `alarm-${server}`, faultId: '1234', faultType: '10', vnfcInfoId: vnfc, vnfcResourceInfoId: `res-${vnfc}`, receivedBy: 'test' });

  async function instanceRow(): Promise<string> {
    const db = store.db;
    const pkg = randomUUID();
    await db.insertInto('vnf_package').values({ id: pkg, onboarding_state: 'CREATED', operational_state: 'DISABLED', usage_state: 'NOT_IN_USE', vnfd_id: null, vnf_provider: null, vnf_product_name: null, vnf_software_version: null, vnfd_version: null, checksum: JSON.stringify(null), user_defined_data: '{}', vnfd: JSON.stringify(null), onboarding_error: null, content: null }).execute();
    const id = randomUUID();
    await db.insertInto('vnf_instance').values({ id, vnf_instance_name: null, vnf_instance_description: null, vnfd_id: 'x', vnf_pkg_id: pkg, vnf_provider: '', vnf_product_name: '', vnf_software_version: '', vnfd_version: '', instantiation_state: 'INSTANTIATED', vnf_configurable_properties: JSON.stringify(null), vim_connection_info: '{}', vim_secrets: null, instantiated_vnf_info: JSON.stringify(null), metadata: JSON.stringify(null), extensions: JSON.stringify(null), created_api: 'v2', rev: 0 }).execute();
    return id;
  }

  async function opRow(vnf: string, state: string, cause: string, origin: string | null = null): Promise<string> {
    const id = randomUUID();
    await store.db.insertInto('op_occ').values({ id, vnf_instance_id: vnf, operation: 'HEAL', operation_state: state, state_entered_time: new Date(), start_time: new Date(), is_automatic_invocation: true, is_cancel_pending: false, operation_params: JSON.stringify({ vnfcInstanceId: ['a'], cause }), error: JSON.stringify(null), resource_changes: JSON.stringify(null), changed_info: JSON.stringify(null), grant_request: JSON.stringify(null), grant: JSON.stringify(null), ctx: '{}', pending: null, attempts: 0, api_version: 'v2', origin }).execute();
    return id;
  }

  it('packs notifications of one VNF into one open batch, de-duplicating targets', async () => {
    const vnf = randomUUID();
    const a = await ledger.pack(input(vnf, 'a'), 60_000);
    const b = await ledger.pack(input(vnf, 'b'), 60_000);
    const c = await ledger.pack(input(vnf, 'a'), 60_000);
    assert.equal(a.opened, true);
    assert.equal(b.opened, false);
    assert.equal(c.batch.id, a.batch.id);
    assert.deepEqual(c.batch.targets.map((x) => x.vnfcInfoId), ['a', 'b']);
    assert.equal(c.batch.notificationCount, 3);
    assert.match(c.notification.reason ?? '', /duplicate/);
    const notifs = await ledger.notificationsOf(a.batch.id);
    assert.deepEqual(notifs.map((n) => n.status), ['packed', 'packed', 'packed']);
    const deadline = new Date(a.batch.deadline).getTime() - new Date(a.batch.createdAt).getTime();
    assert.ok(deadline > 59_000 && deadline <= 60_001, `deadline is created + window (${deadline})`);
  });

  it('concurrent intakes for one VNF end up in one batch', async () => {
    const vnf = randomUUID();
    const res = await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.pack(input(vnf, `v${i}`), 60_000)));
    assert.equal(new Set(res.map((r) => r.batch.id)).size, 1);
    assert.equal(res.filter((r) => r.opened).length, 1);
    const [b] = await ledger.listBatches({ vnfInstanceId: vnf });
    assert.equal(b?.targets.length, 20);
    assert.equal(b?.notificationCount, 20);
  });

  it('writes a group of notifications of several VNFs in one statement: one batch per VNF, duplicates marked, ignored ones recorded', async () => {
    const [v1, v2, v3] = [randomUUID(), randomUUID(), randomUUID()];
    // v1 already has an open batch holding target a
    const before = await ledger.pack(input(v1, 'a'), 60_000);
    await new Promise((r) => setTimeout(r, 5)); // a later millisecond: the list order is by time
    const items = [
      { kind: 'pack' as const, input: input(v1, 'a') },
      { kind: 'pack' as const, input: input(v2, 'x') },
      { kind: 'pack' as const, input: input(v1, 'b') },
      { kind: 'ignore' as const, input: input(v3, 'z'), reason: 'auto-heal is disabled' },
      { kind: 'pack' as const, input: input(v2, 'x') },
      { kind: 'pack' as const, input: input(v2, 'y') },
    ];
    const out = await ledger.packGroup(items, 60_000);
    assert.deepEqual(out.map((o) => o.kind), ['packed', 'packed', 'packed', 'ignored', 'packed', 'packed']);
    const packed = out.filter((o) => o.kind === 'packed');
    assert.deepEqual(packed.map((o) => o.batchId), [before.batch.id, packed[1]?.batchId, before.batch.id, packed[1]?.batchId, packed[1]?.batchId]);
    assert.deepEqual(packed.map((o) => o.opened), [false, true, false, true, true]);
    const [b1] = await ledger.listBatches({ vnfInstanceId: v1 });
    assert.deepEqual(b1?.targets.map((x) => x.vnfcInfoId), ['a', 'b']);
    assert.equal(b1?.notificationCount, 3);
    const [b2] = await ledger.listBatches({ vnfInstanceId: v2 });
    assert.deepEqual(b2?.targets, [
      { vnfcInfoId: 'x', vnfcResourceInfoId: 'res-x', serverId: 'srv-x' },
      { vnfcInfoId: 'y', vnfcResourceInfoId: 'res-y', serverId: 'srv-y' },
    ]);
    assert.equal(b2?.notificationCount, 3);
    assert.match(b2?.notes[0]?.text ?? '', /opened by a fault notification for server srv-x/);
    const window = new Date(b2?.deadline as string).getTime() - new Date(b2?.createdAt as string).getTime();
    assert.ok(window > 59_000 && window <= 60_001, `deadline is created + window (${window})`);
    assert.deepEqual(await ledger.listBatches({ vnfInstanceId: v3 }), [], 'no batch for an ignored notification');
    const reasons = async (vnf: string) => (await ledger.listNotifications({ vnfInstanceId: vnf })).reverse().map((n) => [n.vnfcInstanceId, n.status, n.reason]);
    assert.deepEqual(await reasons(v1), [
      ['a', 'packed', null],
      ['a', 'packed', 'duplicate: the VNFC is already in the batch'],
      ['b', 'packed', null],
    ]);
    assert.deepEqual(await reasons(v2), [
      ['x', 'packed', null],
      ['x', 'packed', 'duplicate: the VNFC is already in the batch'],
      ['y', 'packed', null],
    ]);
    assert.deepEqual(await reasons(v3), [['z', 'ignored', 'auto-heal is disabled']]);
    const ids = out.map((o) => (o.kind === 'error' ? '' : o.notificationId));
    for (const id of ids) assert.equal((await ledger.getNotification(id)).id, id, 'the returned ids are the stored rows');
  });

  it('a group with a VNF whose batch is waiting packs that VNF into it; a row the database refuses fails alone', async () => {
    const [w, v] = [randomUUID(), randomUUID()];
    const { batch } = await ledger.pack(input(w, 'a'), 0);
    const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
    await ledger.settleClaimed(c!, { status: 'waiting', nextAttemptInMs: 60_000 });
    const out = await ledger.packGroup([{ kind: 'pack', input: input(w, 'b') }, { kind: 'pack', input: input(v, 'a') }], 60_000);
    assert.equal(out[0]?.kind === 'packed' && out[0].batchId, batch.id);
    assert.equal(out[1]?.kind, 'packed');
    const wb = await ledger.getBatch(batch.id);
    assert.equal(wb.status, 'waiting');
    assert.deepEqual(wb.targets.map((x) => x.vnfcInfoId), ['a', 'b']);
    assert.match((await ledger.notificationsOf(batch.id))[1]?.reason ?? '', /waiting batch/);
    // jsonb refuses U+0000: the group statement fails, every item is retried alone
    const x = randomUUID();
    const bad = await ledger.packGroup(
      [
        { kind: 'pack', input: input(x, 'a') },
        { kind: 'pack', input: { ...input(x, 'b'), faultOption: { text: 'a\u0000b' } } },
        { kind: 'ignore', input: input(x, 'c'), reason: 'off' },
      ],
      60_000,
    );
    assert.deepEqual(bad.map((o) => o.kind), ['packed', 'error', 'ignored']);
    const [xb] = await ledger.listBatches({ vnfInstanceId: x });
    assert.deepEqual(xb?.targets.map((t) => t.vnfcInfoId), ['a']);
    assert.equal(xb?.notificationCount, 1);
    assert.equal((await ledger.listNotifications({ vnfInstanceId: x })).length, 2);
  });

  it('concurrent groups for the same VNFs end up in one batch per VNF', async () => {
    const vnfs = [randomUUID(), randomUUID(), randomUUID()];
    const group = (g: number) => vnfs.flatMap((vnf, i) => [0, 1].map((k) => ({ kind: 'pack' as const, input: input(vnf, `v${(g + i + k) % 4}`) })));
    const res = await Promise.all(Array.from({ length: 8 }, (_, g) => ledger.packGroup(g % 2 ? group(g).reverse() : group(g), 60_000)));
    assert.ok(res.flat().every((o) => o.kind === 'packed'));
    for (const vnf of vnfs) {
      const bs = await ledger.listBatches({ vnfInstanceId: vnf });
      assert.equal(bs.length, 1);
      assert.equal(bs[0]?.notificationCount, 16);
      assert.deepEqual([...(bs[0]?.targets ?? [])].map((x) => x.vnfcInfoId).sort(), ['v0', 'v1', 'v2', 'v3']);
    }
  });

  it('instance facts: read once per rev (small fields only), fault ids from metadata or the instantiate request, gone when deleted', async () => {
    const db = store.db;
    const id = await instanceRow();
    const res = (server: string, k: number) => ({ id: `res-${k}`, vduId: 'VDU1', computeResource: { resourceId: server, vimLevelResourceType: 'OS::Nova::Server' }, metadata: { server_notification: { alarmId: `alarm-${server}` } } });
    const info = (servers: string[]) => ({ flavourId: 'simple', vnfState: 'STARTED', vnfcResourceInfo: servers.map(res), vnfcInfo: servers.map((_, k) => ({ id: `vnfc-${k}`, vduId: 'VDU1', vnfcResourceInfoId: `res-${k}`, vnfcState: 'STARTED' })) });
    await db.updateTable('vnf_instance').set({ instantiated_vnf_info: JSON.stringify(info(['s0', 's1'])), vnf_configurable_properties: JSON.stringify({ isAutohealEnabled: 'true' }), rev: 1 }).where('id', '=', id).execute();
    const op = await opRow(id, 'COMPLETED', 'instantiate');
    await db.updateTable('op_occ').set({ operation: 'INSTANTIATE', operation_params: JSON.stringify({ additionalParams: { ServerNotifierFaultID: '0001' } }) }).where('id', '=', op).execute();
    const cache = new InstanceFactsCache(db);
    const f1 = (await cache.lookup([id, id, 'no-such-instance'])).get(id);
    assert.ok(f1);
    assert.equal(f1.instantiated, true);
    assert.equal(f1.autohealEnabled, true);
    assert.deepEqual(f1.faultIds, ['0001'], 'from the instantiate request');
    assert.deepEqual(f1.servers.get('s1'), { vnfcResourceInfoId: 'res-1', alarmId: 'alarm-s1', vnfcInfoId: 'vnfc-1' });
    assert.equal((await cache.lookup(['no-such-instance'])).size, 0);
    assert.equal((await cache.lookup([id])).get(id), f1, 'same rev: the cached facts');
    await db.updateTable('vnf_instance').set({ instantiated_vnf_info: JSON.stringify(info(['s9'])), metadata: JSON.stringify({ ServerNotifierFaultID: ['1111', 2] }), rev: 2 }).where('id', '=', id).execute();
    const f2 = (await cache.lookup([id])).get(id);
    assert.equal(f2?.rev, 2);
    assert.deepEqual(f2?.faultIds, ['1111'], 'metadata first');
    assert.deepEqual([...(f2?.servers.keys() ?? [])], ['s9']);
    await db.updateTable('vnf_instance').set({ instantiation_state: 'NOT_INSTANTIATED', instantiated_vnf_info: JSON.stringify(null), rev: 3 }).where('id', '=', id).execute();
    assert.equal((await cache.lookup([id])).get(id)?.instantiated, false);
    await db.deleteFrom('op_occ').where('vnf_instance_id', '=', id).execute();
    await db.deleteFrom('vnf_instance').where('id', '=', id).execute();
    assert.equal((await cache.lookup([id])).has(id), false);
  });

  const how = env.openSecond ? 'two connection pools, claims contend' : 'one PGlite handle: claims serialised, no lock contention exercised';
  it(`claims a due batch for exactly one owner (${how}); a lost claim writes nothing; an expired lease is taken over`, async () => {
    const vnf = randomUUID();
    const { batch } = await ledger.pack(input(vnf, 'a'), 0);
    // Long leases: the loser gets nothing because the batch is claimed, whatever the timing.
    const [c1, c2] = await Promise.all([ledger.claimDue('p1', 60_000, 100), rivalLedger.claimDue('p2', 60_000, 100)]);
    const mine = [...c1, ...c2].filter((b) => b.id === batch.id);
    assert.equal(mine.length, 1, 'claimed once');
    const first = mine[0]!;
    const [firstLedger, other, otherLedger] = first.leaseOwner === 'p1' ? [ledger, 'p2', rivalLedger] : [rivalLedger, 'p1', ledger];
    assert.equal((await otherLedger.claimDue(other, 60_000, 100)).filter((b) => b.id === batch.id).length, 0, 'not claimed again while the lease runs');
    // The first claimer's lease runs out (set explicitly, not waited for).
    await sql`update autoheal_batch set lease_until = now() - interval '1 second' where id = ${batch.id}`.execute(store.db);
    const again = (await otherLedger.claimDue(other, 60_000, 100)).filter((b) => b.id === batch.id);
    assert.equal(again.length, 1, 'expired lease taken over');
    assert.equal(again[0]!.attempts, 2);
    assert.equal(await firstLedger.settleClaimed(first, { status: 'healing', opOccId: 'x' }), false, 'the first claimer lost its claim');
    assert.equal(await otherLedger.settleClaimed(again[0]!, { status: 'waiting', reason: 'busy', nextAttemptInMs: 60_000, notes: [{ at: new Date().toISOString(), text: 'busy' }] }), true);
    const b = await ledger.getBatch(batch.id);
    assert.equal(b.status, 'waiting');
    assert.equal(b.vnfLcmOpOccId, null);
    assert.ok(b.notes.some((n) => n.text === 'busy'));
    assert.equal((await ledger.claimDue('p3', 60_000, 100)).filter((x) => x.id === batch.id).length, 0, 'not due before next_attempt_at');
    assert.equal(await ledger.wakeWaiting(vnf), 1);
    assert.equal((await ledger.claimDue('p3', 60_000, 100)).filter((x) => x.id === batch.id).length, 1, 'due after wake');
  });

  it('a new notification joins a waiting batch instead of opening another', async () => {
    const vnf = randomUUID();
    const { batch } = await ledger.pack(input(vnf, 'a'), 0);
    const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
    await ledger.settleClaimed(c!, { status: 'waiting', nextAttemptInMs: 60_000 });
    const r = await ledger.pack(input(vnf, 'b'), 60_000);
    assert.equal(r.batch.id, batch.id);
    assert.equal(r.opened, false);
    assert.match(r.notification.reason ?? '', /waiting batch/);
  });

  it('releases only suppressed or held batches, reopening their notifications', async () => {
    const vnf = randomUUID();
    const { batch } = await ledger.pack(input(vnf, 'a'), 0);
    await assert.rejects(ledger.release(batch.id), (e: { httpStatus?: number }) => e.httpStatus === 409);
    await assert.rejects(ledger.release('nope'), (e: { httpStatus?: number }) => e.httpStatus === 404);
    const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
    await ledger.settleClaimed(c!, { status: 'suppressed', reason: 'too many', reasonCode: 'max_unhealthy', notifications: { status: 'suppressed', reason: 'too many' } });
    assert.equal((await ledger.notificationsOf(batch.id))[0]?.status, 'suppressed');
    const r = await ledger.release(batch.id);
    assert.equal(r.status, 'waiting');
    assert.equal(r.released, true);
    assert.equal((await ledger.notificationsOf(batch.id))[0]?.status, 'packed');
  });

  it('follows the heal op occ: done on COMPLETED, failed on FAILED_TEMP, and finds the heal by its origin', async () => {
    const vnf = await instanceRow();
    const { batch } = await ledger.pack(input(vnf, 'a'), 0);
    const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
    const op = await opRow(vnf, 'PROCESSING', `${healCausePrefix(batch.id)}: test`, batchOrigin(batch.id));
    assert.equal(await ledger.findHealOf(c!), op);
    assert.equal((await ledger.recentAutoHeals(vnf, 60_000)).get('a'), 1);
    await ledger.settleClaimed(c!, { status: 'healing', opOccId: op, healedVnfcIds: ['a'], notifications: { status: 'healing' } });
    assert.deepEqual(await ledger.followHeals(vnf), []);
    await store.db.updateTable('op_occ').set({ operation_state: 'FAILED_TEMP' }).where('id', '=', op).execute();
    assert.deepEqual((await ledger.followHeals(vnf)).map((x) => x.status), ['failed']);
    assert.match((await ledger.getBatch(batch.id)).reason ?? '', /FAILED_TEMP/);
    await store.db.updateTable('op_occ').set({ operation_state: 'COMPLETED' }).where('id', '=', op).execute();
    assert.deepEqual((await ledger.followHeals(vnf)).map((x) => x.status), ['done']);
    const b = await ledger.getBatch(batch.id);
    assert.equal(b.status, 'done');
    assert.ok(b.finishedAt);
    assert.equal((await ledger.notificationsOf(batch.id))[0]?.status, 'done');
    assert.deepEqual(await ledger.followHeals(vnf), [], 'nothing left to follow');
  });

  it('resumes held batches once the VNF has no FAILED_TEMP operation', async () => {
    const vnf = await instanceRow();
    const op = await opRow(vnf, 'FAILED_TEMP', 'manual');
    const { batch } = await ledger.pack(input(vnf, 'a'), 0);
    const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
    await ledger.settleClaimed(c!, { status: 'held', reason: 'FAILED_TEMP' });
    await ledger.resumeHeld();
    assert.equal((await ledger.getBatch(batch.id)).status, 'held');
    await store.db.updateTable('op_occ').set({ operation_state: 'FAILED' }).where('id', '=', op).execute();
    await ledger.resumeHeld();
    assert.equal((await ledger.getBatch(batch.id)).status, 'waiting');
  });
});
