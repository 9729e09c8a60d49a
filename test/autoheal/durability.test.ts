/**
 * Durability of auto-heal: a VNFM restarted inside the packing window still heals once; a claimer
 * that dies after creating the heal is taken over without a second heal; two VNFM processes on one
 * database turn each batch into exactly one heal. Runs on PGlite and on PostgreSQL (describeStores;
 * the PostgreSQL half is the `pg` stage).
 *
 * "Two processes": on PostgreSQL the two VNFMs have two independent connection pools on one
 * database, so their claims really contend. On PGlite both VNFMs share the one handle of the
 * embedded database, whose connections are serialised: that variant checks one heal per VNF, not
 * lock contention.
 *
 * Timing: packing windows and leases are far longer than the tests; a window or a lease that has
 * to end is ended in the database (its deadline or lease moved to the past), and "no second heal"
 * is checked once every batch of the VNF is settled, when nothing is left that could fire one.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { HealBatcher } from '../../src/autoheal/batcher.ts';
import { FaultLedger, batchOrigin, healCausePrefix } from '../../src/autoheal/ledger.ts';
import { resolveAutohealOptions } from '../../src/autoheal/storm-guard.ts';
import type { Store } from '../../src/store/db.ts';
import { type TestStore, describeStores } from '../helpers/db.ts';
import { AlarmFakeDriver, type AutohealVnfm, type TestVnfc, faultBody, healsOf, instantiateVnf, notify, onboardSample, startAutohealVnfm, waitFor } from './fixture.ts';

/** A packing window no test outlives. */
const LONG_WINDOW_MS = 60 * 60_000;

async function post(v: AutohealVnfm, instanceId: string, vnfc: TestVnfc) {
  const r = await notify(v.vnfm, instanceId, vnfc.serverId, faultBody(vnfc));
  assert.equal(r.statusCode, 204, r.body);
}

/** Ends the packing window of the open batches of these VNFs now (instead of waiting for it). */
async function endWindows(store: Store, vnfIds: string[]): Promise<void> {
  await sql`update autoheal_batch set deadline = now() - interval '1 second' where status = 'open' and vnf_instance_id in (${sql.join(vnfIds)})`.execute(store.db);
}

/** Ends the lease of a claimed batch now (what happens `leaseMs` after its claimer died). */
async function expireBatchLease(store: Store, batchId: string): Promise<void> {
  await sql`update autoheal_batch set lease_until = now() - interval '1 second' where id = ${batchId}`.execute(store.db);
}

/** The statuses of the batches of these VNFs. */
async function batchStatuses(store: Store, vnfIds: string[]): Promise<{ vnf: string; status: string }[]> {
  const r = await sql<{ vnf: string; status: string }>`select vnf_instance_id as vnf, status from autoheal_batch where vnf_instance_id in (${sql.join(vnfIds)})`.execute(store.db);
  return r.rows;
}

/**
 * Waits until no batch of these VNFs can fire any more (none open, firing, waiting or healing) and
 * asserts that each VNF has exactly one batch, done. From then on no heal can appear for them.
 */
async function allBatchesDone(store: Store, vnfIds: string[]): Promise<void> {
  await waitFor(async () => (await batchStatuses(store, vnfIds)).every((b) => !['open', 'firing', 'waiting', 'healing'].includes(b.status)), 30_000, 'batches settled');
  const rows = await batchStatuses(store, vnfIds);
  assert.deepEqual(rows.map((b) => b.vnf).sort(), [...vnfIds].sort(), 'one batch per VNF');
  for (const b of rows) assert.equal(b.status, 'done', `batch of ${b.vnf}`);
}

await describeStores('auto-heal durability', (env) => {
  let store: TestStore;
  let vnfdId: string | undefined;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    store = await env.open();
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  /** A VNFM process on `s`; runner leases far longer than the tests (no lease runs out under load). */
  function start(s: Store, workerId: string, fake: AlarmFakeDriver, sweepMs = 100): Promise<AutohealVnfm> {
    return startAutohealVnfm({ store: s, fake, windowMs: LONG_WINDOW_MS, workerId, config: { runner: { pollMs: 50, leaseMs: 60_000, concurrency: 8, workerId }, autoheal: { sweepMs } } });
  }

  /** The sample's vnfdId, onboarded once into this database. */
  async function sample(v: AutohealVnfm): Promise<string> {
    vnfdId ??= await onboardSample(v.vnfm);
    return vnfdId;
  }

  it('a restart inside the window still heals, exactly once', async () => {
    const fake = new AlarmFakeDriver();
    const a = await start(store, 'proc-a', fake);
    const { id, vnfcs } = await instantiateVnf(a.vnfm, await sample(a));
    await post(a, id, vnfcs[0] as TestVnfc);
    await post(a, id, vnfcs[1] as TestVnfc);
    await a.vnfm.close();
    assert.equal((await healsOf(a.vnfm, id)).length, 0, 'closed before the window ended');
    // The window ends while no VNFM runs; the next one finds the batch due in the database.
    await endWindows(store, [id]);
    const b = await start(store, 'proc-b', fake);
    cleanups.push(() => b.vnfm.close());
    await waitFor(async () => (await healsOf(b.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 30_000, 'heal after restart');
    await allBatchesDone(store, [id]);
    const heals = await healsOf(b.vnfm, id);
    assert.equal(heals.length, 1);
    assert.deepEqual([...(heals[0]?.operationParams.vnfcInstanceId ?? [])].sort(), [vnfcs[0]?.vnfcInfoId, vnfcs[1]?.vnfcInfoId].sort());
    await b.vnfm.close();
  });

  it('takes over a batch whose claimer died after creating the heal, without a second heal', async () => {
    const fake = new AlarmFakeDriver();
    const a = await start(store, 'proc-a', fake);
    cleanups.push(() => a.vnfm.close());
    const { id, vnfcs } = await instantiateVnf(a.vnfm, await sample(a));
    await post(a, id, vnfcs[0] as TestVnfc);
    const ledger = new FaultLedger(store.db);
    await a.ctx.autoheal?.batcher.stop();
    // The dying process: claims the due batch (a long lease), creates the heal, never records it.
    await endWindows(store, [id]);
    const [claimed] = await ledger.claimDue('dead-proc', 60_000, 10);
    assert.ok(claimed);
    assert.equal(claimed.vnfInstanceId, id);
    const cause = `${healCausePrefix(claimed.id)}: 1 fault notification(s)`;
    const target = [vnfcs[0]?.vnfcInfoId as string];
    await a.ctx.engine?.lcm.heal(id, { operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: target, includeStorage: false, cause, additionalParams: {} }, { apiVersion: 'v2', params: { vnfcInstanceId: target, cause }, automatic: true, origin: batchOrigin(claimed.id) });
    const other = new HealBatcher({ ledger, lcm: a.ctx.engine!.lcm, instances: a.ctx.instances, metrics: a.ctx.metrics, log: a.ctx.log, options: resolveAutohealOptions(a.ctx.config), workerId: 'proc-b' });
    assert.equal(await other.cycle(), 0, 'nothing to claim while the claimer holds its lease');
    await expireBatchLease(store, claimed.id);
    assert.equal(await other.cycle(), 1, 'expired claim taken over');
    const b = await ledger.getBatch(claimed.id);
    assert.equal(b.status, 'healing');
    assert.equal(b.attempts, 2);
    const heals = await healsOf(a.vnfm, id);
    assert.equal(heals.length, 1, 'the existing heal is adopted');
    assert.equal(b.vnfLcmOpOccId, heals[0]?.id);
    assert.ok(b.notes.some((n) => /created by an earlier attempt/.test(n.text)));
    // Let the adopted heal finish before this VNFM goes: the next test starts other processes.
    await waitFor(async () => (await healsOf(a.vnfm, id))[0]?.operationState === 'COMPLETED', 30_000, 'the adopted heal completed');
    await a.vnfm.close();
  });

  const voidHow = env.kind === 'pglite' ? 'embedded database: voided at start, healed at once' : 'PostgreSQL: another live process may hold it, so it runs out';
  it(`a batch claimed by a process killed right after the packing deadline (${voidHow})`, async () => {
    const fake = new AlarmFakeDriver();
    const a = await start(store, 'proc-a', fake);
    const { id, vnfcs } = await instantiateVnf(a.vnfm, await sample(a));
    await post(a, id, vnfcs[0] as TestVnfc);
    await a.ctx.autoheal?.batcher.stop();
    // The dying process: its window ended, it claimed the batch (a lease far longer than the test)
    // and was killed before creating the heal. Nothing else of it is left.
    await endWindows(store, [id]);
    const [claimed] = await new FaultLedger(store.db).claimDue('killed-proc', 60 * 60_000, 10);
    assert.equal(claimed?.vnfInstanceId, id);
    await a.vnfm.close();

    const b = await start(store, 'proc-b', fake);
    cleanups.push(() => b.vnfm.close());
    const ledger = new FaultLedger(store.db);
    if (env.kind === 'pglite') {
      // Started, with nothing expired by the test: the claim was voided by the start itself.
      await waitFor(async () => (await healsOf(b.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 30_000, 'heal after the restart');
      await allBatchesDone(store, [id]);
      assert.equal((await healsOf(b.vnfm, id)).length, 1);
      const voided = b.vnfm.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => Array.isArray(l.batches) && (l.batches as string[]).includes(claimed?.id as string));
      assert.equal(voided?.level, 40, 'the voided claim is logged as a warning');
    } else {
      // Several processes share PostgreSQL: the claim may be a live one, so it is left to run out.
      assert.equal(await b.ctx.autoheal?.batcher.cycle(), 0, 'not claimable while its lease runs');
      const batch = await ledger.getBatch(claimed?.id as string);
      assert.equal(batch.status, 'firing');
      assert.equal((await healsOf(b.vnfm, id)).length, 0);
      await expireBatchLease(store, claimed?.id as string);
      await waitFor(async () => (await healsOf(b.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 30_000, 'heal once the lease ran out');
      await allBatchesDone(store, [id]);
    }
    await b.vnfm.close();
  });

  const how = env.openSecond ? 'two connection pools, claims contend' : 'one PGlite handle: claims serialised, no lock contention exercised';
  it(`two VNFM processes on one database: one heal per VNF (${how})`, async () => {
    const second = env.openSecond ? await env.openSecond(store) : store;
    const fake = new AlarmFakeDriver();
    // Short sweeps: both processes keep looking for due batches, so they race for each claim.
    const a = await start(store, 'proc-a', fake, 50);
    const b = await start(second, 'proc-b', fake, 50);
    cleanups.push(() => a.vnfm.close());
    cleanups.push(() => b.vnfm.close());
    const pkg = await sample(a);
    const vnfs = [];
    for (let i = 0; i < 4; i++) vnfs.push(await instantiateVnf(a.vnfm, pkg));
    const ids = vnfs.map((v) => v.id);
    // Notifications of each VNF arrive at both processes, interleaved.
    await Promise.all(vnfs.flatMap(({ id, vnfcs }) => vnfcs.map((v, i) => post(i % 2 === 0 ? a : b, id, v))));
    // Every notification is packed: the windows end now, and both processes race for the batches.
    await endWindows(store, ids);
    for (const id of ids) await waitFor(async () => (await healsOf(a.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 30_000, `heal of ${id}`);
    await allBatchesDone(store, ids);
    for (const { id, vnfcs } of vnfs) {
      const heals = await healsOf(a.vnfm, id);
      assert.equal(heals.length, 1, `one heal for ${id}`);
      assert.equal(heals[0]?.operationParams.vnfcInstanceId?.length, vnfcs.length);
    }
    await a.vnfm.close();
    await b.vnfm.close();
  });
});
