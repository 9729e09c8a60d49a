/**
 * Lease fencing and cancellation of running operations (src/lcm/lease.ts, src/lcm/runner.ts):
 *
 * - A runner that lost its lease while held inside a driver call (its lease expired, another
 *   runner claimed the op and completed it) stops: its op signal aborts, its driver's next
 *   checkpoint is refused, it makes no further VIM call and writes nothing; the op ends COMPLETED
 *   once, with one RESULT notification and one replacement of the VNFC. Also when the new claim is
 *   by the same worker id (the lease epoch fences it).
 * - Lease deadlines are computed by the database clock (a host an hour ahead changes nothing).
 * - A heartbeat that cannot renew before expiry aborts the op.
 * - stop(): running ops get the grace period, then are aborted at a safe point; their leases are
 *   given back so that another runner resumes them at once (no retry request); ops that finish
 *   within the grace period are not disturbed.
 *
 * Positions are set by holds (a driver call that waits for the test) and by explicit lease expiry
 * in the database, never by sleeps. PostgreSQL: the second VNFM has its own connection pool, as a
 * second process has; PGlite: both share the one embedded handle.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { HealPlan, InfraContext, ObservedResources } from '../../src/infra/infra-driver.ts';
import type { Executor } from '../../src/lcm/executor.ts';
import { LeaseLostError, OpAbortedError, OpLease } from '../../src/lcm/lease.ts';
import { Runner } from '../../src/lcm/runner.ts';
import { createLogger } from '../../src/logger.ts';
import type { Database } from '../../src/store/schema.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { type StoreEnv, type TestStore, describeStores } from '../helpers/db.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;
const V2 = { version: '2.0.0' };
const SECRET = '22'.repeat(32);

/** A promise the code under test waits on, with `reached` (it waits now) and `release`. */
interface Gate {
  reached: Promise<void>;
  release: () => void;
  wait: () => Promise<void>;
}
/** Every gate made, released at the end whatever happened (a failed test must not leave a call hanging). */
const gates: Gate[] = [];
function gate(): Gate {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  const released = new Promise<void>((r) => (release = r));
  const g: Gate = {
    reached,
    release,
    wait: async () => {
      reach();
      await released;
    },
  };
  gates.push(g);
  return g;
}

/**
 * The fake driver of one VNFM, on a VIM shared with the other VNFM's driver. Its heal can be held
 * (then, like a real driver after a VIM call returns, it checkpoints before its next VIM action),
 * or held until the op's signal aborts (a wait loop that honours the signal).
 */
class TestVimDriver extends FakeDriver {
  readonly events: string[] = [];
  healGate: Gate | undefined;
  holdUntilAbort: { reached: () => void } | undefined;
  signals: AbortSignal[] = [];

  constructor(vims: Map<string, unknown>) {
    super();
    (this as unknown as { vims: Map<string, unknown> }).vims = vims;
  }

  override async heal(ctx: InfraContext, plan: HealPlan): Promise<void> {
    this.events.push('heal');
    this.signals.push(ctx.signal);
    const g = this.healGate;
    if (g) {
      this.healGate = undefined;
      await g.wait();
      ctx.state.afterHold = true;
      try {
        await ctx.checkpoint();
      } catch (e) {
        this.events.push(`checkpoint refused: ${(e as Error).name}`);
        throw e;
      }
    }
    const h = this.holdUntilAbort;
    if (h) {
      this.holdUntilAbort = undefined;
      await new Promise<void>((_, reject) => {
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        h.reached();
      });
    }
    this.events.push('heal: VIM changed');
    await super.heal(ctx, plan);
  }

  override async observe(ctx: InfraContext): Promise<ObservedResources> {
    this.events.push('observe');
    return super.observe(ctx);
  }
}

function executorOf(v: TestVnfm): Executor {
  return (v.ctx.engine?.runner as unknown as { executor: Executor }).executor;
}

function leaseOf(r: Runner, opId: string): OpLease {
  const l = (r as unknown as { leases: Map<string, OpLease> }).leases.get(opId);
  assert.ok(l, `runner holds a lease on ${opId}`);
  return l;
}

await describeStores('lease fencing and cancellation', (env: StoreEnv) => {
  let store: TestStore;
  let second: TestStore;
  let a: TestVnfm;
  let b: TestVnfm;
  let da: TestVimDriver;
  let db: TestVimDriver;
  let vnfdId: string;
  const extraRunners: Runner[] = [];

  const api = (v: TestVnfm, method: 'GET' | 'POST', url: string, payload?: unknown) => v.app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const accepted = async (url: string, payload: unknown): Promise<string> => {
    const r = await api(a, 'POST', url, payload);
    assert.equal(r.statusCode, 202, r.body);
    return String(r.headers.location).split('/').pop() as string;
  };
  const row = (id: string) => store.db.selectFrom('op_occ').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const notes = async (id: string) =>
    (await store.db.selectFrom('outbox').select(['id', 'notification']).orderBy('id').execute())
      .map((r) => r.notification as Json)
      .filter((n) => n.vnfLcmOpOccId === id)
      .map((n) => `${n.operationState}/${n.notificationStatus}`);
  const runnerA = () => a.ctx.engine?.runner as Runner;
  const expireLease = (id: string) => sql`update op_occ set lease_until = now() - interval '1 hour' where id = ${id}`.execute(store.db);
  const newRunner = (v: TestVnfm, workerId: string, extra: { shutdownGraceMs?: number; leaseMs?: number } = {}) => {
    const r = new Runner(v.store.db as Kysely<Database>, executorOf(v), { workerId, leaseMs: extra.leaseMs ?? 60_000, pollMs: 20, concurrency: 4, singleProcess: false, ...extra }, v.ctx.log, v.ctx.metrics);
    extraRunners.push(r);
    return r;
  };
  const finished = (r: Runner, opId: string) =>
    new Promise<void>((resolve) => {
      const on = (_inst: string, id: string) => {
        if (id !== opId) return;
        r.off('finished', on);
        resolve();
      };
      r.on('finished', on);
    });
  const untilState = async (id: string, state: string): Promise<void> => {
    for (;;) {
      const r = await row(id);
      if (r.operation_state === state) return;
      assert.ok(!['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(r.operation_state) || r.operation_state === state, `op ${id} ended ${r.operation_state}`);
      await new Promise((res) => setTimeout(res, 10));
    }
  };

  async function instantiated(): Promise<string> {
    const r = await api(a, 'POST', '/vnflcm/v2/vnf_instances', { vnfdId });
    const id = r.json().id as string;
    const occ = await accepted(`/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } });
    await untilState(occ, 'COMPLETED');
    return id;
  }

  before(async () => {
    store = await env.open();
    second = env.openSecond ? await env.openSecond(store) : store;
    const vims = new Map<string, unknown>();
    da = new TestVimDriver(vims);
    db = new TestVimDriver(vims);
    // Leases far longer than the test: they run out only when a test expires them. One op at a time:
    // while A is held inside a driver call its runner claims nothing, so the op whose lease a test
    // expires goes to the runner the test starts, not back to A.
    const config = (workerId: string) => ({ runner: { workerId, pollMs: 20, leaseMs: 60_000, concurrency: 1 }, secretKey: SECRET });
    a = await testVnfm({ store, config: config('node-a'), plugins: [(ctx) => ctx.engine?.drivers.register(da)] });
    b = await testVnfm({ store: second, config: config('node-b'), plugins: [(ctx) => ctx.engine?.drivers.register(db)] });
    // B's own runner stays off: each test hands ops over to a runner it starts itself.
    await b.ctx.engine?.runner.stop();
    vnfdId = (await onboard(a.app, csarOf(join(ROOT, 'samples/vm-basic')), () => a.ctx.packages.idle())).vnfdId as string;
    await store.db.insertInto('subscription').values({ id: 'sub-f', api_version: 'v2', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'f' }).execute();
  });
  after(async () => {
    for (const g of gates) g.release();
    for (const r of extraRunners) await r.stop();
    await a?.close();
    await b?.close();
  });

  for (const { takeover, detect } of [
    { takeover: 'node-b', detect: 'heartbeat' },
    { takeover: 'node-a', detect: 'write' },
  ] as const) {
    const who = takeover === 'node-a' ? 'the same worker id (new lease epoch)' : 'another runner';
    const how = detect === 'heartbeat' ? 'its heartbeat finds the lease gone' : 'its next fenced write (the driver checkpoint) is refused';
    it(`a runner whose op was taken over by ${who} stops when ${how}: no further VIM call, no write; COMPLETED once`, async () => {
      const id = await instantiated();
      const vnfcsBefore = (await api(a, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).json().instantiatedVnfInfo.vnfcResourceInfo as Json[];
      const g = gate();
      da.healGate = g;
      const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [(await api(a, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).json().instantiatedVnfInfo.vnfcInfo[0].id] });
      await g.reached;
      const lease = leaseOf(runnerA(), occId);
      const aDone = finished(runnerA(), occId);
      const epoch0 = (await row(occId)).lease_epoch;
      const daEvents0 = da.events.length;
      const lostBefore = (await a.ctx.metrics.leaseLosses.get()).values[0]?.value ?? 0;

      // A's lease runs out while A is inside the driver call; the other runner claims and completes the op.
      await expireLease(occId);
      const r2 = newRunner(b, takeover);
      await r2.start();
      await untilState(occId, 'COMPLETED');
      await r2.stop();
      const done = await row(occId);
      assert.equal(done.lease_epoch, epoch0 + 1, 'the takeover claim started a new lease epoch');
      const instAfterB = await store.db.selectFrom('vnf_instance').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.ok(db.events.includes('heal: VIM changed'), 'the new owner healed the VNFC');

      if (detect === 'heartbeat') {
        await lease.heartbeat();
        assert.equal(lease.lost, true);
        assert.equal(da.signals.at(-1)?.aborted, true, "A's op signal aborted before A did anything more");
        assert.ok(da.signals.at(-1)?.reason instanceof LeaseLostError);
      }
      g.release();
      await aDone;

      // A: the checkpoint after the held call was refused, and nothing followed (no VIM change, no observe).
      assert.deepEqual(da.events.slice(daEvents0), ['checkpoint refused: LeaseLostError']);
      assert.equal(da.signals.at(-1)?.aborted, true);
      // A wrote nothing: the op and the instance are exactly as the new owner left them.
      assert.deepEqual(await row(occId), done);
      assert.deepEqual(await store.db.selectFrom('vnf_instance').selectAll().where('id', '=', id).executeTakeFirstOrThrow(), instAfterB);
      assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT'], 'one RESULT notification');
      const vnfcsAfter = (await api(a, 'GET', `/vnflcm/v2/vnf_instances/${id}`)).json().instantiatedVnfInfo.vnfcResourceInfo as Json[];
      const changed = vnfcsAfter.filter((r) => vnfcsBefore.find((x) => x.id === r.id)?.computeResource.resourceId !== r.computeResource.resourceId);
      assert.equal(changed.length, 1, 'exactly one VNFC replaced, once');
      assert.equal((await a.ctx.metrics.leaseLosses.get()).values[0]?.value, lostBefore + 1);
    });
  }

  it('lease deadlines are set by the database clock: a host clock an hour ahead changes nothing', { skip: env.kind === 'pglite' ? 'PGlite runs in this process: its clock is the host clock' : false }, async () => {
    await runnerA().stop();
    try {
      const id = await (async () => {
        await runnerA().start();
        const x = await instantiated();
        await runnerA().stop();
        return x;
      })();
      const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
      const before = (await row(occId)).lease_epoch;
      const claimer = new Runner(store.db, {} as never, { workerId: 'skewed', leaseMs: 60_000, pollMs: 20, concurrency: 1, singleProcess: false }, a.ctx.log, a.ctx.metrics);
      const realNow = Date.now;
      Date.now = () => realNow() + 3_600_000;
      let claimed: Awaited<ReturnType<Runner['claim']>>;
      try {
        claimed = await claimer.claim(1);
      } finally {
        Date.now = realNow;
      }
      assert.equal(claimed.length, 1);
      assert.equal(claimed[0]?.op.leaseEpoch, before + 1);
      const q = await sql<{ ok: boolean }>`select lease_until > now() + interval '50 seconds' and lease_until <= now() + interval '60 seconds' as ok from op_occ where id = ${occId}`.execute(store.db);
      assert.equal(q.rows[0]?.ok, true, 'lease_until = database now() + leaseMs');
      // Give it back for the next tests' runner.
      await expireLease(occId);
    } finally {
      await runnerA().start();
    }
  });

  it('stop(): an op still running after the grace period is aborted at a safe point and its lease released; another runner resumes it at once, without retry', async () => {
    await runnerA().stop();
    const r1 = newRunner(a, 'node-d', { shutdownGraceMs: 50 });
    await r1.start();
    let reached!: () => void;
    const inDriver = new Promise<void>((res) => (reached = res));
    let occId = '';
    try {
      const id = await instantiated();
      da.holdUntilAbort = { reached };
      occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
      await inDriver;
      const epoch = (await row(occId)).lease_epoch;
      await r1.stop();
      assert.ok(da.signals.at(-1)?.reason instanceof OpAbortedError, 'aborted because of the shutdown');
      const r = await row(occId);
      assert.equal(r.operation_state, 'PROCESSING', 'not failed: resumable');
      assert.equal(r.pending, 'run');
      assert.equal(r.lease_owner, 'node-d', 'kept: the next claim sees an interrupted op');
      assert.equal(r.lease_epoch, epoch + 1, 'fenced off');
      const expired = await sql<{ ok: boolean }>`select lease_until < now() as ok from op_occ where id = ${occId}`.execute(store.db);
      assert.equal(expired.rows[0]?.ok, true, 'the lease is over at once');
      assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START'], 'no RESULT');
    } finally {
      await runnerA().start();
    }
    // The next runner (here A's) claims it at once and completes it from its checkpoint.
    await untilState(occId, 'COMPLETED');
    assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT']);
  });

  it('stop(): an op that finishes within the grace period is not disturbed', async () => {
    await runnerA().stop();
    const r1 = newRunner(a, 'node-e', { shutdownGraceMs: 600_000 });
    const lostBefore = (await a.ctx.metrics.leaseLosses.get()).values[0]?.value ?? 0;
    await r1.start();
    const id = await instantiated();
    const g = gate();
    da.healGate = g;
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await g.reached;
    const stopping = r1.stop();
    g.release();
    await stopping;
    assert.equal(da.signals.at(-1)?.aborted, false, 'not aborted');
    assert.equal((await a.ctx.metrics.leaseLosses.get()).values[0]?.value, lostBefore, 'no lease lost on the way');
    assert.equal((await row(occId)).operation_state, 'COMPLETED');
    await runnerA().start();
  });
});

describe('OpLease heartbeat', () => {
  const log = createLogger('silent');
  /** A database whose every statement fails (it is down). */
  const failing = (): Kysely<Database> => {
    const chain: Record<string, unknown> = {};
    for (const m of ['updateTable', 'set', 'where', 'returning']) chain[m] = () => chain;
    chain.executeTakeFirst = () => Promise.reject(new Error('connection refused'));
    return chain as unknown as Kysely<Database>;
  };

  it('a failing renewal before the lease expires is retried later; once it has expired, the op is aborted', async () => {
    const lease = new OpLease({ db: failing(), opId: 'op-1', owner: 'w', epoch: 1, leaseMs: 60_000, log });
    await lease.heartbeat();
    assert.equal(lease.signal.aborted, false, 'within the lease: try again at the next beat');
    // The last successful renewal is now older than the lease (a long pause, a dead database).
    (lease as unknown as { confirmedAt: number }).confirmedAt = performance.now() - 61_000;
    await lease.heartbeat();
    assert.equal(lease.signal.aborted, true);
    assert.ok(lease.signal.reason instanceof LeaseLostError);
    assert.match(lease.signal.reason.message, /could not be renewed before it expired/);
    await assert.rejects(lease.confirm(), LeaseLostError);
  });

  it('a renewal that finds the lease taken aborts at once', async () => {
    const chain: Record<string, unknown> = {};
    for (const m of ['updateTable', 'set', 'where']) chain[m] = () => chain;
    chain.executeTakeFirst = () => Promise.resolve({ numUpdatedRows: 0n });
    const lease = new OpLease({ db: chain as unknown as Kysely<Database>, opId: 'op-2', owner: 'w', epoch: 1, leaseMs: 60_000, log });
    await lease.heartbeat();
    assert.equal(lease.lost, true);
    assert.ok(lease.signal.reason instanceof LeaseLostError);
    await assert.rejects(lease.write({ ctx: '{}' }), LeaseLostError);
  });
});
