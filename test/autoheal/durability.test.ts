/**
 * Durability of auto-heal: a VNFM restarted inside the packing window still heals once; two VNFM
 * processes on one database turn each batch into exactly one heal (PGlite, and PostgreSQL with
 * two connection pools when VNFM_TEST_PG_URL is set); a claimer that dies after creating the
 * heal is taken over without a second heal.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HealBatcher } from '../../src/autoheal/batcher.ts';
import { FaultLedger, healCausePrefix } from '../../src/autoheal/ledger.ts';
import { resolveAutohealOptions } from '../../src/autoheal/storm-guard.ts';
import { openStore, type Store } from '../../src/store/db.ts';
import { testPgStore, testStore } from '../helpers/db.ts';
import { AlarmFakeDriver, type AutohealVnfm, type TestVnfc, faultBody, healsOf, instantiateVnf, notify, onboardSample, startAutohealVnfm, waitFor } from './fixture.ts';

const cleanups: (() => Promise<void>)[] = [];
let shared: Store;
let vnfdId: string | undefined;
before(async () => {
  shared = await testStore();
});
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await shared?.close();
});

/** The sample's vnfdId, onboarded once into the shared store. */
async function sample(v: AutohealVnfm): Promise<string> {
  vnfdId ??= await onboardSample(v.vnfm);
  return vnfdId;
}

async function post(v: AutohealVnfm, instanceId: string, vnfc: TestVnfc) {
  const r = await notify(v.vnfm, instanceId, vnfc.serverId, faultBody(vnfc));
  assert.equal(r.statusCode, 204, r.body);
}

describe('auto-heal durability', () => {
  it('a restart inside the window still heals, exactly once', async () => {
    const store = shared;
    const fake = new AlarmFakeDriver();
    const a = await startAutohealVnfm({ store, fake, windowMs: 1500, workerId: 'proc-a', config: { autoheal: { sweepMs: 100 } } });
    const { id, vnfcs } = await instantiateVnf(a.vnfm, await sample(a));
    await post(a, id, vnfcs[0] as TestVnfc);
    await post(a, id, vnfcs[1] as TestVnfc);
    await a.vnfm.close();
    assert.equal((await healsOf(a.vnfm, id)).length, 0, 'closed before the window ended');
    const b = await startAutohealVnfm({ store, fake, windowMs: 1500, workerId: 'proc-b', config: { autoheal: { sweepMs: 100 } } });
    cleanups.push(() => b.vnfm.close());
    await waitFor(async () => (await healsOf(b.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 15_000, 'heal after restart');
    await new Promise((r) => setTimeout(r, 500));
    const heals = await healsOf(b.vnfm, id);
    assert.equal(heals.length, 1);
    assert.deepEqual([...(heals[0]?.operationParams.vnfcInstanceId ?? [])].sort(), [vnfcs[0]?.vnfcInfoId, vnfcs[1]?.vnfcInfoId].sort());
    await b.vnfm.close();
  });

  it('takes over a batch whose claimer died after creating the heal, without a second heal', async () => {
    const store = shared;
    const fake = new AlarmFakeDriver();
    const a = await startAutohealVnfm({ store, fake, windowMs: 60_000, workerId: 'proc-a' });
    cleanups.push(() => a.vnfm.close());
    const { id, vnfcs } = await instantiateVnf(a.vnfm, await sample(a));
    await post(a, id, vnfcs[0] as TestVnfc);
    const ledger = new FaultLedger(store.db);
    await a.ctx.autoheal?.batcher.stop();
    // The dying process: claims the due batch, creates the heal, never records it.
    await store.db.updateTable('autoheal_batch' as never).set({ deadline: new Date(Date.now() - 1000) } as never).where('vnf_instance_id' as never, '=', id as never).execute();
    const [claimed] = await ledger.claimDue('dead-proc', 100, 10);
    assert.ok(claimed);
    assert.equal(claimed.vnfInstanceId, id);
    await a.ctx.engine?.lcm.heal(id, { vnfcInstanceId: [vnfcs[0]?.vnfcInfoId], cause: `${healCausePrefix(claimed.id)}: 1 fault notification(s)` }, 'v2', true);
    await new Promise((r) => setTimeout(r, 150));
    const other = new HealBatcher({ ledger, lcm: a.ctx.engine!.lcm, instances: a.ctx.instances, metrics: a.ctx.metrics, log: a.ctx.log, options: resolveAutohealOptions(a.ctx.config), workerId: 'proc-b' });
    assert.equal(await other.cycle(), 1, 'expired claim taken over');
    const b = await ledger.getBatch(claimed.id);
    assert.equal(b.status, 'healing');
    assert.equal(b.attempts, 2);
    const heals = await healsOf(a.vnfm, id);
    assert.equal(heals.length, 1, 'the existing heal is adopted');
    assert.equal(b.vnfLcmOpOccId, heals[0]?.id);
    assert.ok(b.notes.some((n) => /created by an earlier attempt/.test(n.text)));
  });

  for (const kind of ['PGlite', 'PostgreSQL'] as const) {
    it(`two VNFM processes on one ${kind} database: one heal per VNF`, async (t) => {
      let s1: Store;
      let s2: Store;
      if (kind === 'PGlite') {
        s1 = shared;
        s2 = s1;
      } else {
        const pg = await testPgStore();
        if (!pg) return t.skip('VNFM_TEST_PG_URL not set');
        s1 = pg;
        const dbName = (await (await import('kysely')).sql<{ n: string }>`select current_database() as n`.execute(pg.db)).rows[0]?.n as string;
        const u = new URL(process.env.VNFM_TEST_PG_URL as string);
        u.pathname = `/${dbName}`;
        s2 = await openStore({ databaseUrl: u.toString() });
        cleanups.push(() => pg.dropAll());
        cleanups.push(() => s2.close());
      }
      const fake = new AlarmFakeDriver();
      const opts = { fake, windowMs: 500, config: { autoheal: { sweepMs: 50 } } };
      const a = await startAutohealVnfm({ ...opts, store: s1, workerId: 'proc-a' });
      const b = await startAutohealVnfm({ ...opts, store: s2, workerId: 'proc-b' });
      cleanups.push(() => a.vnfm.close());
      cleanups.push(() => b.vnfm.close());
      const pkg = kind === 'PGlite' ? await sample(a) : await onboardSample(a.vnfm);
      const vnfs = [];
      for (let i = 0; i < 4; i++) vnfs.push(await instantiateVnf(a.vnfm, pkg));
      // Notifications of each VNF arrive at both processes, interleaved.
      await Promise.all(vnfs.flatMap(({ id, vnfcs }) => vnfcs.map((v, i) => post(i % 2 === 0 ? a : b, id, v))));
      for (const { id } of vnfs) await waitFor(async () => (await healsOf(a.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), 20_000, `heal of ${id}`);
      await new Promise((r) => setTimeout(r, 800));
      for (const { id, vnfcs } of vnfs) {
        const heals = await healsOf(a.vnfm, id);
        assert.equal(heals.length, 1, `one heal for ${id}`);
        assert.equal(heals[0]?.operationParams.vnfcInstanceId?.length, vnfcs.length);
      }
      const rows = await s1.db.selectFrom('autoheal_batch' as never).select(['vnf_instance_id' as never]).where('vnf_instance_id' as never, 'in', vnfs.map((v) => v.id) as never).execute();
      assert.equal(rows.length, vnfs.length, 'one batch per VNF');
      await a.vnfm.close();
      await b.vnfm.close();
    });
  }
});
