/**
 * Canonical commands and the op occ state module:
 * - the API's v1/v2 conversions (heal ids of either kind, scopes, unknown ids named in a 422);
 * - op occs created before commands were stored (no `command`) still run with their version's rules;
 * - v1 and v2 heals of the same VNFC store the same command and heal the same VNFC;
 * - an origin (idempotency key) yields one op occ, whoever asks twice;
 * - a transition outside the SOL state model is refused and writes nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { healCommand, instantiateCommand } from '../../src/api/vnflcm/commands.ts';
import { isVnfmError } from '../../src/errors.ts';
import { commandOf } from '../../src/model/lcm-command.ts';
import type { OpOccRecord } from '../../src/model/op-occ.ts';
import type { VnfInstanceRecord } from '../../src/model/vnf-instance.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

/** An instance with two VNFCs: vnfcInfo `i1`/`i2` over vnfcResourceInfo `r1`/`r2`. */
const INST = {
  id: 'inst-1',
  instantiatedVnfInfo: {
    flavourId: 'simple',
    vnfState: 'STARTED',
    vnfcResourceInfo: [
      { id: 'r1', vduId: 'VDU1', computeResource: { resourceId: 'srv-1' } },
      { id: 'r2', vduId: 'VDU1', computeResource: { resourceId: 'srv-2' } },
    ],
    vnfcInfo: [
      { id: 'i1', vduId: 'VDU1', vnfcResourceInfoId: 'r1', vnfcState: 'STARTED' },
      { id: 'i2', vduId: 'VDU1', vnfcResourceInfoId: 'r2', vnfcState: 'STARTED' },
    ],
  },
} as unknown as VnfInstanceRecord;

describe('v1/v2 requests to canonical commands', () => {
  it('heal: v1 names vnfcResourceInfo, v2 vnfcInfo; either kind is accepted; duplicates collapse', () => {
    assert.deepEqual(healCommand({ vnfcInstanceId: ['r2', 'r2'] }, 'v1', INST), { operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: ['i2'], includeStorage: false, additionalParams: {} });
    assert.deepEqual(healCommand({ vnfcInstanceId: ['i2'] }, 'v2', INST).vnfcInfoIds, ['i2']);
    assert.deepEqual(healCommand({ vnfcInstanceId: ['i1'] }, 'v1', INST).vnfcInfoIds, ['i1'], 'a v1 client naming a vnfcInfo id');
    assert.deepEqual(healCommand({ vnfcInstanceId: ['r1'] }, 'v2', INST).vnfcInfoIds, ['i1'], 'a v2 client naming a vnfcResourceInfo id');
    assert.equal(healCommand({ vnfcInstanceId: ['i1'], cause: 'c' }, 'v2', INST).cause, 'c');
  });

  it('heal without VNFCs: v1 = entire VNF, v2 = every VNFC, v2 all=true = entire VNF with storage', () => {
    assert.equal(healCommand({}, 'v1', INST).scope, 'entire');
    assert.equal(healCommand({}, 'v2', INST).scope, 'allVnfcs');
    const all = healCommand({ additionalParams: { all: true } }, 'v2', INST);
    assert.equal(all.scope, 'entire');
    assert.equal(all.includeStorage, true);
  });

  it('heal: unknown ids are a 422 naming each of them; a non-boolean all is a 400', () => {
    assert.throws(
      () => healCommand({ vnfcInstanceId: ['r1', 'nope', 'gone'] }, 'v1', INST),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && e.httpStatus === 422 && /nope, gone/.test(e.message),
    );
    assert.throws(() => healCommand({ additionalParams: { all: 'yes' } }, 'v2', INST), (e: unknown) => isVnfmError(e, 'VNFM_ERR_API_BAD_REQUEST'));
  });

  it('instantiate: a v1 vimConnectionInfo array becomes the map; credentials stay out of the command', () => {
    const { command, vimConnectionInfo } = instantiateCommand({ flavourId: 'simple', vimConnectionInfo: [{ id: 'v', vimType: 'X', accessInfo: { password: 'p' } }], additionalParams: { a: 1 } }, 'v1');
    assert.deepEqual(command, { operation: 'INSTANTIATE', flavourId: 'simple', additionalParams: { a: 1 } });
    assert.deepEqual(vimConnectionInfo, { v: { vimType: 'X', accessInfo: { password: 'p' } } });
  });

  it('op occs stored without a command get one with the rules of the version that accepted them', () => {
    const legacy = (apiVersion: 'v1' | 'v2', operationParams: Record<string, unknown>) => ({ operation: 'HEAL' as const, command: null, operationParams, apiVersion });
    assert.deepEqual(commandOf(legacy('v1', { vnfcInstanceId: ['r2'] }), INST), { operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: ['i2'], includeStorage: false, additionalParams: {} });
    assert.equal((commandOf(legacy('v1', {}), INST) as { scope: string }).scope, 'entire');
    assert.equal((commandOf(legacy('v2', {}), INST) as { scope: string }).scope, 'allVnfcs');
    assert.deepEqual(commandOf({ operation: 'SCALE', command: null, operationParams: { type: 'SCALE_IN', aspectId: 'a' }, apiVersion: 'v2' }), { operation: 'SCALE', type: 'SCALE_IN', aspectId: 'a', numberOfSteps: 1, additionalParams: {} });
  });
});

describe('commands through the engine', () => {
  let vnfm: TestVnfm;
  let fake: FakeDriver;
  let vnfdId: string;

  async function req(method: 'GET' | 'POST', url: string, payload?: unknown) {
    return vnfm.app.inject({ method, url, ...(url.includes('/v2/') ? { headers: { version: '2.0.0' } } : {}), ...(payload !== undefined ? { payload: payload as object } : {}) });
  }
  async function accepted(url: string, payload?: unknown): Promise<string> {
    const r = await req('POST', url, payload);
    assert.equal(r.statusCode, 202, r.body);
    return String(r.headers.location).split('/').pop() as string;
  }
  async function completed(opId: string): Promise<Json> {
    await vnfm.ctx.engine?.runner.idle();
    const o = (await req('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).json();
    assert.equal(o.operationState, 'COMPLETED', JSON.stringify(o.error));
    return o;
  }
  async function instantiated(): Promise<{ id: string; vnfcs: Json[] }> {
    const c = await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId });
    const id = c.json().id as string;
    await completed(await accepted(`/vnflcm/v2/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } }));
    const inst = (await req('GET', `/vnflcm/v2/vnf_instances/${id}`)).json();
    return { id, vnfcs: inst.instantiatedVnfInfo.vnfcInfo.map((v: Json) => ({ ...v, resource: inst.instantiatedVnfInfo.vnfcResourceInfo.find((r: Json) => r.id === v.vnfcResourceInfoId) })) };
  }
  async function stored(opId: string): Promise<OpOccRecord['command']> {
    const r = await vnfm.store.db.selectFrom('op_occ').select(['command']).where('id', '=', opId).executeTakeFirstOrThrow();
    return r.command as OpOccRecord['command'];
  }

  before(async () => {
    fake = new FakeDriver();
    vnfm = await testVnfm({ plugins: [(ctx) => void ctx.engine?.drivers.register(fake)], config: { runner: { pollMs: 50, leaseMs: 5000, concurrency: 2, workerId: 'cmd-w1' } } });
    vnfdId = (await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle())).vnfdId as string;
  });
  after(async () => {
    await vnfm?.close();
  });

  it('a v1 heal by vnfcResourceInfo id and a v2 heal by vnfcInfo id store the same command and replace the same VNFC', async () => {
    const { id, vnfcs } = await instantiated();
    const t = vnfcs[0];
    const v1 = await accepted(`/vnflcm/v1/vnf_instances/${id}/heal`, { vnfcInstanceId: [t.vnfcResourceInfoId] });
    const o1 = await completed(v1);
    assert.deepEqual(o1.operationParams, { vnfcInstanceId: [t.vnfcResourceInfoId] }, 'the request is echoed as sent');
    const v2 = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [t.id] });
    const o2 = await completed(v2);
    assert.deepEqual(await stored(v1), await stored(v2));
    assert.deepEqual(await stored(v2), { operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: [t.id], includeStorage: false, additionalParams: {} });
    for (const o of [o1, o2]) assert.deepEqual(o.resourceChanges.affectedVnfcs.map((a: Json) => `${a.id}/${a.changeType}`), [`${t.vnfcResourceInfoId}/MODIFIED`]);
  });

  it('an op occ stored without a command (accepted by an earlier version) still runs: a v1 heal by vnfcResourceInfo id', async () => {
    const { id, vnfcs } = await instantiated();
    const t = vnfcs[1] ?? vnfcs[0];
    const heals = fake.calls.filter((c) => c === 'heal').length;
    // A row as an earlier version wrote it (no command), taken by the runner.
    const legacyId = randomUUID();
    await vnfm.store.db
      .insertInto('op_occ')
      .values({ id: legacyId, vnf_instance_id: id, operation: 'HEAL', operation_state: 'STARTING', state_entered_time: new Date(), start_time: new Date(), is_automatic_invocation: false, is_cancel_pending: false, operation_params: JSON.stringify({ vnfcInstanceId: [t.vnfcResourceInfoId] }), error: JSON.stringify(null), resource_changes: JSON.stringify(null), changed_info: JSON.stringify(null), grant_request: JSON.stringify(null), grant: JSON.stringify(null), ctx: '{}', pending: 'run', attempts: 0, api_version: 'v1' })
      .execute();
    vnfm.ctx.engine?.runner.wake();
    const done = await completed(legacyId);
    assert.equal(fake.calls.filter((c) => c === 'heal').length, heals + 1);
    assert.deepEqual(done.resourceChanges.affectedVnfcs.map((a: Json) => `${a.id}/${a.changeType}`), [`${t.vnfcResourceInfoId}/MODIFIED`]);
  });

  it('an origin yields one op occ: asking again returns the same op, even after it completed', async () => {
    const { id, vnfcs } = await instantiated();
    const lcm = vnfm.ctx.engine?.lcm;
    assert.ok(lcm);
    const cmd = { operation: 'HEAL' as const, scope: 'vnfcs' as const, vnfcInfoIds: [vnfcs[0].id as string], includeStorage: false, additionalParams: {} };
    const opts = { apiVersion: 'v2' as const, params: { vnfcInstanceId: [vnfcs[0].id] }, automatic: true, origin: `test-origin:${id}` };
    const a = await lcm.heal(id, cmd, opts);
    const b = await lcm.heal(id, cmd, opts);
    assert.equal(b.id, a.id);
    await completed(a.id);
    const c = await lcm.heal(id, cmd, opts);
    assert.equal(c.id, a.id, 'a completed op of that origin is the answer too');
    const rows = await vnfm.store.db.selectFrom('op_occ').select('id').where('origin', '=', opts.origin).execute();
    assert.equal(rows.length, 1);
  });

  it('the state module refuses a transition outside the SOL state model and writes nothing', async () => {
    const { id, vnfcs } = await instantiated();
    const opId = await accepted(`/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [vnfcs[0].id] });
    await completed(opId);
    const states = vnfm.ctx.engine?.states;
    assert.ok(states);
    const op = (await vnfm.store.db.selectFrom('op_occ').selectAll().where('id', '=', opId).executeTakeFirstOrThrow()) as Json;
    const before = await vnfm.store.db.selectFrom('outbox').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    await assert.rejects(
      vnfm.store.db.transaction().execute(async (tx) => {
        const write = async (s: Record<string, unknown>) => {
          await tx.updateTable('op_occ').set(s as never).where('id', '=', opId).execute();
        };
        await states.finished(tx, write, { id: opId, operation: 'HEAL', operationState: 'COMPLETED', isAutomaticInvocation: false, startTime: new Date(op.start_time) }, 'FAILED_TEMP', {}, { instanceId: id });
      }),
      /COMPLETED -> FAILED_TEMP is not allowed/,
    );
    assert.equal((await req('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).json().operationState, 'COMPLETED');
    const afterCount = await vnfm.store.db.selectFrom('outbox').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(afterCount.n), Number(before.n));
  });
});
