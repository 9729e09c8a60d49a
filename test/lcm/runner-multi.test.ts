/**
 * Several VNFM processes on one database execute each operation exactly once: two VNFMs (two
 * runners with different worker ids) share one database; every op is executed by one of them only.
 *
 * PostgreSQL: the two VNFMs have two independent connection pools on one database, as two
 * processes do, so their claims really contend (`FOR UPDATE SKIP LOCKED` plus leases).
 * PGlite: the embedded database has one handle, and its dialect serialises every connection
 * through one mutex, so both VNFMs share that handle and their claims never overlap: this variant
 * checks the bookkeeping (each op once, both runners used), not lock contention.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { type TestStore, describeStores } from '../helpers/db.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

const V2 = { version: '2.0.0' };
const SECRET = '11'.repeat(32);

await describeStores('two runners on one database', (env) => {
  const twoPools = env.openSecond !== undefined;
  let store: TestStore;
  let a: TestVnfm;
  let b: TestVnfm;
  const fake = new FakeDriver();
  const executed = new Map<string, number>();

  before(async () => {
    store = await env.open();
    const second = env.openSecond ? await env.openSecond(store) : store;
    // Leases far longer than the test: "exactly once" rests on the claim, never on timing.
    const runner = (id: string) => ({ runner: { workerId: id, pollMs: 20, leaseMs: 60_000, concurrency: 4 }, secretKey: SECRET });
    a = await testVnfm({ store, config: runner('node-a'), plugins: [(ctx) => ctx.engine?.drivers.register(fake)] });
    b = await testVnfm({ store: second, config: runner('node-b'), plugins: [(ctx) => ctx.engine?.drivers.register(fake)] });
    const heal = fake.heal.bind(fake);
    fake.heal = async (ctx, plan) => {
      executed.set(ctx.op.id, (executed.get(ctx.op.id) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 5));
      return heal(ctx, plan);
    };
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  const how = twoPools ? 'two connection pools, claims contend' : 'one PGlite handle: claims serialised, no lock contention exercised';
  it(`executes each of 40 heals exactly once, spread over both runners (${how})`, async () => {
    const pkg = await onboard(a.app, csarOf(join(ROOT, 'samples/vm-basic')), () => a.ctx.packages.idle());
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await a.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId: pkg.vnfdId } });
      const id = r.json().id as string;
      const inst = await a.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } } });
      assert.equal(inst.statusCode, 202, inst.body);
      ids.push(id);
    }
    await a.ctx.engine?.runner.idle();
    await b.ctx.engine?.runner.idle();
    const occs: string[] = [];
    for (let round = 0; round < 5; round++) {
      for (const [i, id] of ids.entries()) {
        // alternate the node that accepts the request
        const node = i % 2 === 0 ? a : b;
        const r = await node.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/heal`, headers: V2, payload: {} });
        assert.equal(r.statusCode, 202, r.body);
        occs.push(String(r.headers.location).split('/').pop() as string);
      }
      await Promise.all([a.ctx.engine?.runner.idle(), b.ctx.engine?.runner.idle()]);
    }
    const rows = await store.db.selectFrom('op_occ').select(['id', 'operation_state', 'lease_owner']).where('id', 'in', occs).execute();
    assert.equal(rows.length, 40);
    for (const r of rows) assert.equal(r.operation_state, 'COMPLETED');
    for (const id of occs) assert.equal(executed.get(id), 1, `op ${id} executed once`);
    const logsA = a.logs.filter((l) => l.includes('"lcm operation finished"')).length;
    const logsB = b.logs.filter((l) => l.includes('"lcm operation finished"')).length;
    assert.ok(logsA > 0 && logsB > 0, `both runners worked (a=${logsA}, b=${logsB})`);
  });
});
