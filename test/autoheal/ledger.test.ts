/**
 * Ledger and batch storage: packing into one open batch per VNF (also under concurrency), claims
 * that two processes never share, lease take-over, lost claims that write nothing, release rules,
 * and batches following their heal op occ. Runs on PGlite, and on PostgreSQL when
 * VNFM_TEST_PG_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { FaultLedger, healCausePrefix } from '../../src/autoheal/ledger.ts';
import type { Store } from '../../src/store/db.ts';
import { testPgStore, testStore } from '../helpers/db.ts';

const stores: { name: string; open: () => Promise<(Store & { dropAll?: () => Promise<void> }) | undefined> }[] = [
  { name: 'PGlite', open: () => testStore() },
  { name: 'PostgreSQL', open: () => testPgStore() },
];

for (const s of stores) {
  describe(`fault ledger (${s.name})`, () => {
    let store: (Store & { dropAll?: () => Promise<void> }) | undefined;
    let ledger: FaultLedger;

    before(async () => {
      store = await s.open();
      if (store) ledger = new FaultLedger(store.db);
    });
    after(async () => {
      if (store?.dropAll) await store.dropAll();
      else await store?.close();
    });

    const skip = () => !store;
    const input = (vnf: string, vnfc: string, server = `srv-${vnfc}`) => ({ vnfInstanceId: vnf, serverId: server, alarmId: `alarm-${server}`, faultId: '1234', faultType: '10', vnfcInfoId: vnfc, vnfcResourceInfoId: `res-${vnfc}`, receivedBy: 'test' });

    async function instanceRow(): Promise<string> {
      const db = store!.db;
      const pkg = randomUUID();
      await db.insertInto('vnf_package').values({ id: pkg, onboarding_state: 'CREATED', operational_state: 'DISABLED', usage_state: 'NOT_IN_USE', vnfd_id: null, vnf_provider: null, vnf_product_name: null, vnf_software_version: null, vnfd_version: null, checksum: JSON.stringify(null), user_defined_data: '{}', vnfd: JSON.stringify(null), onboarding_error: null, content: null }).execute();
      const id = randomUUID();
      await db.insertInto('vnf_instance').values({ id, vnf_instance_name: null, vnf_instance_description: null, vnfd_id: 'x', vnf_pkg_id: pkg, vnf_provider: '', vnf_product_name: '', vnf_software_version: '', vnfd_version: '', instantiation_state: 'INSTANTIATED', vnf_configurable_properties: JSON.stringify(null), vim_connection_info: '{}', vim_secrets: null, instantiated_vnf_info: JSON.stringify(null), metadata: JSON.stringify(null), extensions: JSON.stringify(null), created_api: 'v2', rev: 0 }).execute();
      return id;
    }

    async function opRow(vnf: string, state: string, cause: string): Promise<string> {
      const id = randomUUID();
      await store!.db.insertInto('op_occ').values({ id, vnf_instance_id: vnf, operation: 'HEAL', operation_state: state, state_entered_time: new Date(), start_time: new Date(), is_automatic_invocation: true, is_cancel_pending: false, operation_params: JSON.stringify({ vnfcInstanceId: ['a'], cause }), error: JSON.stringify(null), resource_changes: JSON.stringify(null), changed_info: JSON.stringify(null), grant_request: JSON.stringify(null), grant: JSON.stringify(null), ctx: '{}', pending: null, attempts: 0, api_version: 'v2' }).execute();
      return id;
    }

    it('packs notifications of one VNF into one open batch, de-duplicating targets', async (t) => {
      if (skip()) return t.skip('VNFM_TEST_PG_URL not set');
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

    it('concurrent intakes for one VNF end up in one batch', async (t) => {
      if (skip()) return t.skip('VNFM_TEST_PG_URL not set');
      const vnf = randomUUID();
      const res = await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.pack(input(vnf, `v${i}`), 60_000)));
      assert.equal(new Set(res.map((r) => r.batch.id)).size, 1);
      assert.equal(res.filter((r) => r.opened).length, 1);
      const [b] = await ledger.listBatches({ vnfInstanceId: vnf });
      assert.equal(b?.targets.length, 20);
      assert.equal(b?.notificationCount, 20);
    });

    it('claims a due batch for exactly one owner; a lost claim writes nothing; an expired lease is taken over', async (t) => {
      if (skip()) return t.skip('VNFM_TEST_PG_URL not set');
      const vnf = randomUUID();
      const { batch } = await ledger.pack(input(vnf, 'a'), 0);
      const [c1, c2] = await Promise.all([ledger.claimDue('p1', 50, 100), ledger.claimDue('p2', 50, 100)]);
      const mine = [...c1, ...c2].filter((b) => b.id === batch.id);
      assert.equal(mine.length, 1, 'claimed once');
      const first = mine[0]!;
      await new Promise((r) => setTimeout(r, 80));
      const other = first.leaseOwner === 'p1' ? 'p2' : 'p1';
      const again = (await ledger.claimDue(other, 10_000, 100)).filter((b) => b.id === batch.id);
      assert.equal(again.length, 1, 'expired lease taken over');
      assert.equal(again[0]!.attempts, 2);
      assert.equal(await ledger.settleClaimed(first, { status: 'healing', opOccId: 'x' }), false, 'the first claimer lost its claim');
      assert.equal(await ledger.settleClaimed(again[0]!, { status: 'waiting', reason: 'busy', nextAttemptInMs: 60_000, notes: [{ at: new Date().toISOString(), text: 'busy' }] }), true);
      const b = await ledger.getBatch(batch.id);
      assert.equal(b.status, 'waiting');
      assert.equal(b.vnfLcmOpOccId, null);
      assert.ok(b.notes.some((n) => n.text === 'busy'));
      assert.equal((await ledger.claimDue('p3', 1000, 100)).filter((x) => x.id === batch.id).length, 0, 'not due before next_attempt_at');
      assert.equal(await ledger.wakeWaiting(vnf), 1);
      assert.equal((await ledger.claimDue('p3', 1000, 100)).filter((x) => x.id === batch.id).length, 1, 'due after wake');
    });

    it('a new notification joins a waiting batch instead of opening another', async (t) => {
      if (skip()) return t.skip('VNFM_TEST_PG_URL not set');
      const vnf = randomUUID();
      const { batch } = await ledger.pack(input(vnf, 'a'), 0);
      const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
      await ledger.settleClaimed(c!, { status: 'waiting', nextAttemptInMs: 60_000 });
      const r = await ledger.pack(input(vnf, 'b'), 60_000);
      assert.equal(r.batch.id, batch.id);
      assert.equal(r.opened, false);
      assert.match(r.notification.reason ?? '', /waiting batch/);
    });

    it('releases only suppressed or held batches, reopening their notifications', async (t) => {
      if (skip()) return t.skip('VNFM_TEST_PG_URL not set');
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

    it('follows the heal op occ: done on COMPLETED, failed on FAILED_TEMP, and finds the heal by its cause', async (t) => {
      if (skip()) return t.skip('VNFM_TEST_PG_URL not set');
      const vnf = await instanceRow();
      const { batch } = await ledger.pack(input(vnf, 'a'), 0);
      const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
      const op = await opRow(vnf, 'PROCESSING', `${healCausePrefix(batch.id)}: test`);
      assert.equal(await ledger.findHealOf(c!), op);
      assert.equal((await ledger.recentAutoHeals(vnf, 60_000)).get('a'), 1);
      await ledger.settleClaimed(c!, { status: 'healing', opOccId: op, healedVnfcIds: ['a'], notifications: { status: 'healing' } });
      assert.deepEqual(await ledger.followHeals(vnf), []);
      await store!.db.updateTable('op_occ').set({ operation_state: 'FAILED_TEMP' }).where('id', '=', op).execute();
      assert.deepEqual((await ledger.followHeals(vnf)).map((x) => x.status), ['failed']);
      assert.match((await ledger.getBatch(batch.id)).reason ?? '', /FAILED_TEMP/);
      await store!.db.updateTable('op_occ').set({ operation_state: 'COMPLETED' }).where('id', '=', op).execute();
      assert.deepEqual((await ledger.followHeals(vnf)).map((x) => x.status), ['done']);
      const b = await ledger.getBatch(batch.id);
      assert.equal(b.status, 'done');
      assert.ok(b.finishedAt);
      assert.equal((await ledger.notificationsOf(batch.id))[0]?.status, 'done');
      assert.deepEqual(await ledger.followHeals(vnf), [], 'nothing left to follow');
    });

    it('resumes held batches once the VNF has no FAILED_TEMP operation', async (t) => {
      if (skip()) return t.skip('VNFM_TEST_PG_URL not set');
      const vnf = await instanceRow();
      const op = await opRow(vnf, 'FAILED_TEMP', 'manual');
      const { batch } = await ledger.pack(input(vnf, 'a'), 0);
      const [c] = (await ledger.claimDue('p1', 10_000, 100)).filter((b) => b.id === batch.id);
      await ledger.settleClaimed(c!, { status: 'held', reason: 'FAILED_TEMP' });
      await ledger.resumeHeld();
      assert.equal((await ledger.getBatch(batch.id)).status, 'held');
      await store!.db.updateTable('op_occ').set({ operation_state: 'FAILED' }).where('id', '=', op).execute();
      await ledger.resumeHeld();
      assert.equal((await ledger.getBatch(batch.id)).status, 'waiting');
    });
  });
}
