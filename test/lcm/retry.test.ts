/**
 * Automatic step retries (failure taxonomy, src/errors.ts): a step that fails with a retryable
 * error runs again after an exponential back-off, with the op still PROCESSING, released (no worker
 * slot held) and claimable again only at `next_attempt_at` (database clock); a terminal error, or a
 * retryable one past `runner.stepRetries.maxAttempts`, ends in FAILED_TEMP at once. Runs on PGlite
 * and PostgreSQL with the fake infra driver, whose calls fail with queued catalog errors.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { retryableError, terminalError } from '../../src/errors.ts';
import { stepRetryDelay } from '../../src/lcm/steps/failure.ts';
import { Runner } from '../../src/lcm/runner.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { type StoreEnv, describeStores } from '../helpers/db.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;
const V2 = { version: '2.0.0' };

describe('stepRetryDelay', () => {
  const cfg = { baseDelayMs: 1000, maxDelayMs: 60_000 };
  it('grows exponentially with equal jitter, capped at maxDelayMs', () => {
    assert.equal(stepRetryDelay(1, cfg, undefined, () => 0), 500);
    assert.equal(stepRetryDelay(1, cfg, undefined, () => 0.999999), 1000);
    assert.equal(stepRetryDelay(3, cfg, undefined, () => 0), 2000);
    assert.equal(stepRetryDelay(3, cfg, undefined, () => 0.999999), 4000);
    assert.equal(stepRetryDelay(20, cfg, undefined, () => 0.999999), 60_000);
    for (let i = 0; i < 50; i++) {
      const d = stepRetryDelay(2, cfg);
      assert.ok(d >= 1000 && d <= 2000, String(d));
    }
  });
  it("honours a VIM's Retry-After, within maxDelayMs", () => {
    assert.equal(stepRetryDelay(1, cfg, 5000, () => 0), 5000);
    assert.equal(stepRetryDelay(1, cfg, 10, () => 0), 500);
    assert.equal(stepRetryDelay(1, cfg, 3_600_000, () => 0), 60_000);
  });
});

await describeStores('automatic step retries', (env: StoreEnv) => {
  let vnfm: TestVnfm;
  let fake: FakeDriver;
  let vnfdId: string;
  const retries = { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 100 };

  const api = (method: 'GET' | 'POST', url: string, payload?: unknown) => vnfm.app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const accepted = async (url: string, payload: unknown): Promise<string> => {
    const r = await api('POST', url, payload);
    assert.equal(r.statusCode, 202, r.body);
    return String(r.headers.location).split('/').pop() as string;
  };
  const opOcc = async (id: string, v: 'v1' | 'v2' = 'v2'): Promise<Json> => (await vnfm.app.inject({ method: 'GET', url: `/vnflcm/${v}/vnf_lcm_op_occs/${id}`, headers: V2 })).json();
  const row = (id: string) => vnfm.store.db.selectFrom('op_occ').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const settle = () => vnfm.ctx.engine?.runner.idle() as Promise<void>;
  const notes = async (id: string) =>
    (await vnfm.store.db.selectFrom('outbox').select(['id', 'notification']).orderBy('id').execute())
      .map((r) => r.notification as Json)
      .filter((n) => n.vnfLcmOpOccId === id)
      .map((n) => `${n.operationState}/${n.notificationStatus}`);
  const healCalls = () => fake.calls.filter((c) => c === 'heal').length;
  const unreachable = (n: number) => retryableError('VNFM_ERR_VIM_UNREACHABLE', `heal: heat GET /stacks answered 503 (attempt ${n})`);

  async function instantiated(): Promise<string> {
    const r = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId });
    const id = r.json().id as string;
    await accepted(`/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } });
    await settle();
    return id;
  }

  before(async () => {
    fake = new FakeDriver();
    vnfm = await testVnfm({ store: await env.open(), plugins: [(ctx) => ctx.engine?.drivers.register(fake)], config: { runner: { pollMs: 50, leaseMs: 60_000, concurrency: 4, workerId: 'retry-w1', stepRetries: retries } } });
    vnfdId = (await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle())).vnfdId as string;
    await vnfm.store.db.insertInto('subscription').values({ id: 'sub-r', api_version: 'v2', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'r' }).execute();
  });
  after(async () => {
    await vnfm?.close();
  });

  it('a retryable VIM failure is retried with back-off and the heal COMPLETES without a retry request; attempts recorded', async () => {
    const id = await instantiated();
    const calls0 = healCalls();
    const metric0 = (await vnfm.ctx.metrics.stepRetries.get()).values.find((v) => v.labels.operation === 'HEAL' && v.labels.step === 'infra')?.value ?? 0;
    fake.errors.set('heal', [unreachable(1), unreachable(2)]);
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await settle();
    const occ = await opOcc(occId);
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.equal(occ.error, undefined);
    assert.equal(occ.vnfmRetry, undefined, 'no retry state once done');
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    assert.equal(healCalls() - calls0, 3, 'two failed attempts, then the successful one');
    const r = await row(occId);
    assert.equal(r.step_attempts, 0, 'reset when the step completed');
    assert.equal(r.next_attempt_at, null);
    assert.equal(r.lease_owner, null);
    const ctx = r.ctx as Json;
    assert.equal(ctx.retry, undefined);
    assert.deepEqual(
      ctx.retries.map((x: Json) => [x.step, x.attempt]),
      [
        ['infra', 1],
        ['infra', 2],
      ],
    );
    assert.match(ctx.retries[1].detail, /503 \(attempt 2\)/);
    assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT'], 'no FAILED_TEMP on the way');
    const metric1 = (await vnfm.ctx.metrics.stepRetries.get()).values.find((v) => v.labels.operation === 'HEAL' && v.labels.step === 'infra')?.value ?? 0;
    assert.equal(metric1 - metric0, 2, 'vnfm_lcm_step_retries_total{operation="HEAL",step="infra"}');
  });

  it('a terminal VIM failure goes FAILED_TEMP at once, after one attempt', async () => {
    const id = await instantiated();
    const calls0 = healCalls();
    fake.errors.set('heal', [terminalError('VNFM_ERR_VIM_FAILED', 'heal: heat PATCH answered 400 (StackValidationFailed: quota exceeded)')]);
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await settle();
    const occ = await opOcc(occId);
    assert.equal(occ.operationState, 'FAILED_TEMP');
    assert.equal(occ.error.type, 'urn:vnfm:error:VNFM_ERR_VIM_FAILED');
    assert.match(occ.error.detail, /quota exceeded/);
    assert.doesNotMatch(occ.error.detail, /no automatic retry left/);
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    assert.equal(healCalls() - calls0, 1);
    const r = await row(occId);
    assert.equal((r.ctx as Json).retries, undefined, 'never retried');
    assert.equal(r.step_attempts, 0);
    assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT']);
    assert.equal((await api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/retry`)).statusCode, 202);
    await settle();
    assert.equal((await opOcc(occId)).operationState, 'COMPLETED');
  });

  it('a plain programming error is terminal too', async () => {
    const id = await instantiated();
    fake.errors.set('heal', [new TypeError('cannot read properties of undefined')]);
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await settle();
    assert.equal((await opOcc(occId)).operationState, 'FAILED_TEMP');
    assert.equal(((await row(occId)).ctx as Json).retries, undefined);
    await api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/fail`);
  });

  it('a retryable failure that persists goes FAILED_TEMP after maxAttempts, saying so; an operator retry gets a fresh budget', async () => {
    const id = await instantiated();
    const calls0 = healCalls();
    fake.errors.set('heal', [unreachable(1), unreachable(2), unreachable(3)]);
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await settle();
    const occ = await opOcc(occId);
    assert.equal(occ.operationState, 'FAILED_TEMP');
    assert.equal(occ.error.type, 'urn:vnfm:error:VNFM_ERR_VIM_UNREACHABLE');
    assert.match(occ.error.detail, /503 \(attempt 3\).*step 'infra' failed 3 times; no automatic retry left/);
    assert.equal(healCalls() - calls0, 3);
    const r = await row(occId);
    assert.equal(r.step_attempts, 3);
    assert.equal(r.next_attempt_at, null);
    assert.deepEqual(await notes(occId), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT']);
    // Two more failures: with the old budget (3 used of 3) the retry would fail at once.
    fake.errors.set('heal', [unreachable(4), unreachable(5)]);
    assert.equal((await api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/retry`)).statusCode, 202);
    await settle();
    assert.equal((await opOcc(occId)).operationState, 'COMPLETED');
    assert.equal(healCalls() - calls0, 6);
    assert.equal((await row(occId)).step_attempts, 0);
  });

  it("honours the VIM's Retry-After", async () => {
    const id = await instantiated();
    fake.errors.set('heal', [retryableError('VNFM_ERR_VIM_UNREACHABLE', 'heal: heat answered 429', { retryAfterMs: 80 })]);
    const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
    await settle();
    assert.equal((await opOcc(occId)).operationState, 'COMPLETED');
    const [entry] = ((await row(occId)).ctx as Json).retries;
    assert.equal(entry.delayMs, 80, 'max(back-off <= 10 ms, Retry-After 80 ms)');
  });

  describe('while a retry waits', () => {
    let saved: typeof retries;
    before(() => {
      // A back-off far longer than the test: the due time is then set explicitly (no sleeps).
      saved = { ...vnfm.ctx.config.runner.stepRetries };
      Object.assign(vnfm.ctx.config.runner.stepRetries, { baseDelayMs: 600_000, maxDelayMs: 600_000 });
    });
    after(async () => {
      Object.assign(vnfm.ctx.config.runner.stepRetries, saved);
      // Whatever still waits (a failed assertion) is due now, so that the suite can end.
      await sql`update op_occ set next_attempt_at = null where next_attempt_at is not null`.execute(vnfm.store.db);
    });

    const waitingFor = async (occId: string): Promise<Json> => {
      for (;;) {
        const o = await opOcc(occId);
        if (o.vnfmRetry || ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(o.operationState)) return o;
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const dueNow = (occId: string) => sql`update op_occ set next_attempt_at = now() - interval '1 second' where id = ${occId}`.execute(vnfm.store.db);

    it('the op stays PROCESSING with the retry state shown (ETSI-valid), holds no worker slot and is not claimable before next_attempt_at', async () => {
      const a = await instantiated();
      const b = await instantiated();
      fake.errors.set('heal', [unreachable(1)]);
      const occA = await accepted(`/vnflcm/v2/vnf_instances/${a}/heal`, {});
      const waiting = await waitingFor(occA);
      assert.equal(waiting.operationState, 'PROCESSING');
      assert.equal(waiting.error, undefined, 'error is for FAILED_TEMP, not for a transient failure');
      assert.equal(waiting.vnfmRetry.step, 'infra');
      assert.equal(waiting.vnfmRetry.failedAttempts, 1);
      assert.equal(waiting.vnfmRetry.maxAttempts, 3);
      assert.equal(waiting.vnfmRetry.lastError.type, 'urn:vnfm:error:VNFM_ERR_VIM_UNREACHABLE');
      assert.ok(Date.parse(waiting.vnfmRetry.nextAttemptTime) > Date.parse(waiting.stateEnteredTime));
      expectEtsiValid('v2', 'VnfLcmOpOcc', waiting);
      expectEtsiValid('v1', 'VnfLcmOpOcc', await opOcc(occA, 'v1'));
      const r = await row(occA);
      assert.equal(r.pending, 'run');
      assert.equal(r.lease_owner, null, 'released while it waits');
      assert.equal(r.step_attempts, 1);
      const ahead = await sql<{ ok: boolean }>`select next_attempt_at > now() + interval '250 seconds' as ok from op_occ where id = ${occA}`.execute(vnfm.store.db);
      assert.equal(ahead.rows[0]?.ok, true, 'next_attempt_at = database now() + back-off');
      // No slot held: the runner is idle while A waits, and executes another op meanwhile.
      const runner = vnfm.ctx.engine?.runner as Runner;
      assert.equal((runner as unknown as { inflight: Map<string, unknown> }).inflight.has(occA), false);
      const occB = await accepted(`/vnflcm/v2/vnf_instances/${b}/heal`, {});
      for (;;) {
        const o = await opOcc(occB);
        if (o.operationState === 'COMPLETED') break;
        assert.ok(['STARTING', 'PROCESSING'].includes(o.operationState), o.operationState);
        await new Promise((res) => setTimeout(res, 10));
      }
      // Not claimable before its time, by any runner.
      const rival = new Runner(vnfm.store.db, {} as never, { workerId: 'rival', leaseMs: 60_000, pollMs: 50, concurrency: 1, singleProcess: false }, vnfm.ctx.log, vnfm.ctx.metrics);
      assert.deepEqual(await rival.claim(5), []);
      assert.equal((await opOcc(occA)).operationState, 'PROCESSING');
      // Due now: claimed again and completed.
      await dueNow(occA);
      runner.wake();
      await settle();
      const done = await opOcc(occA);
      assert.equal(done.operationState, 'COMPLETED');
      assert.equal(done.vnfmRetry, undefined);
    });

    it('a v1 cancel of an op waiting for a retry is acted upon at once: FAILED_TEMP', async () => {
      const id = await instantiated();
      fake.errors.set('heal', [unreachable(1)]);
      const occId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, {});
      await waitingFor(occId);
      const c = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/v1/vnf_lcm_op_occs/${occId}/cancel`, payload: { cancelMode: 'GRACEFUL' } });
      assert.equal(c.statusCode, 202, c.body);
      await settle();
      const occ = await opOcc(occId);
      assert.equal(occ.operationState, 'FAILED_TEMP');
      assert.match(occ.error.detail, /cancelled/);
      await api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occId}/fail`);
    });
  });
});
