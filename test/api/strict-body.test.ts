/**
 * Strict request bodies, with `app.inject` and over a listening server with raw bytes:
 *
 * - a JSON (or merge-patch+json) body that is not valid UTF-8 is 400 ProblemDetails, never stored
 *   with U+FFFD; valid multi-byte UTF-8 round-trips;
 * - a `charset` other than UTF-8 is 415 (utf-8 / UTF8 / quoted are accepted);
 * - the body-less task resources (retry, rollback, fail on v1 and v2; cancel on v1) accept an empty
 *   body with or without `Content-Type: application/json`; an empty JSON body elsewhere stays 400;
 *   cancel's body rules (cancelMode enum) are unchanged.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

const V2 = { version: '2.0.0' };
const JSON_CT = { 'content-type': 'application/json' };
/** "caf" + a lone 0xE9 (Latin-1 é): not UTF-8. */
const BAD_UTF8 = Buffer.concat([Buffer.from('{"vnfdId":"x","vnfInstanceName":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);

let vnfm: TestVnfm;
let fake: FakeDriver;
let vnfdId: string;

function assertProblem(r: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, detail?: RegExp): Json {
  assert.equal(r.statusCode, status, r.body);
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
  const p = JSON.parse(r.body);
  assert.equal(p.status, status);
  if (detail) assert.match(p.detail, detail);
  return p;
}

/** A raw HTTP/1.1 exchange over a socket (Connection: close): status, headers, body. */
async function raw(url: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<{ statusCode: number; headers: Record<string, string>; body: string }> {
  const u = new URL(url);
  const head = [`${method} ${path} HTTP/1.1`, `host: ${u.host}`, 'connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), ...(body !== undefined ? [`content-length: ${body.length}`] : []), '', ''].join('\r\n');
  return new Promise((resolve, reject) => {
    const s = connect({ host: u.hostname, port: Number(u.port) });
    const chunks: Buffer[] = [];
    // the socket stays open until the server answers and closes it (`connection: close`): a FIN
    // right after the request would count as a client that went away
    s.on('connect', () => s.write(body ? Buffer.concat([Buffer.from(head, 'latin1'), body]) : Buffer.from(head, 'latin1')));
    s.on('data', (c) => chunks.push(c));
    s.on('error', reject);
    s.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [top = '', rest = ''] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
      const [status, ...lines] = top.split('\r\n');
      const hs: Record<string, string> = {};
      for (const l of lines) hs[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
      // chunked answers: keep the payload only
      const payload = hs['transfer-encoding'] === 'chunked' ? rest.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n$/, '') : rest;
      resolve({ statusCode: Number((status ?? '').split(' ')[1]), headers: hs, body: payload });
    });
  });
}

async function createInstance(v: 'v1' | 'v2' = 'v2'): Promise<string> {
  const r = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_instances`, headers: V2, payload: { vnfdId, vnfInstanceName: 'strict-body' } });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().id;
}

async function accepted(url: string, payload: unknown): Promise<string> {
  const r = await vnfm.app.inject({ method: 'POST', url, headers: V2, payload: payload as object });
  assert.equal(r.statusCode, 202, r.body);
  return String(r.headers.location).split('/').pop() as string;
}

async function opState(id: string): Promise<string> {
  const r = await vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_lcm_op_occs/${id}`, headers: V2 });
  return r.json().operationState;
}

/** An instantiated instance (v) and a heal op occ of it left FAILED_TEMP. */
async function failedHeal(v: 'v1' | 'v2'): Promise<{ id: string; occ: string }> {
  const id = await createInstance(v);
  await accepted(`/vnflcm/${v}/vnf_instances/${id}/instantiate`, { flavourId: 'simple', vimConnectionInfo: v === 'v2' ? { vim1: FAKE_VIM } : [{ id: 'vim1', ...FAKE_VIM }] });
  await vnfm.ctx.engine?.runner.idle();
  fake.failNext.add('heal');
  const occ = await accepted(`/vnflcm/${v}/vnf_instances/${id}/heal`, {});
  await vnfm.ctx.engine?.runner.idle();
  assert.equal(await opState(occ), 'FAILED_TEMP');
  return { id, occ };
}

before(async () => {
  fake = new FakeDriver();
  vnfm = await testVnfm({ listen: true, plugins: [(ctx) => ctx.engine?.drivers.register(fake)], config: { runner: { pollMs: 50, leaseMs: 60_000, concurrency: 4, workerId: 'strict-body' } } });
  const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
  vnfdId = pkg.vnfdId as string;
});
after(async () => {
  await vnfm?.close();
});

describe('UTF-8 bodies', () => {
  it('invalid UTF-8 in a JSON body is 400 ProblemDetails and nothing is stored', async () => {
    const before = await vnfm.store.db.selectFrom('vnf_instance').select('id').execute();
    for (const v of ['v1', 'v2']) {
      const r = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_instances`, headers: { ...V2, ...JSON_CT }, payload: BAD_UTF8 });
      assertProblem(r, 400, /not valid UTF-8/);
    }
    // also a truncated multi-byte sequence and an overlong encoding
    for (const bad of [Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d]), Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d])]) {
      assertProblem(await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, ...JSON_CT }, payload: bad }), 400, /UTF-8/);
    }
    assert.equal((await vnfm.store.db.selectFrom('vnf_instance').select('id').execute()).length, before.length);
  });

  it('invalid UTF-8 in a merge-patch body is 400', async () => {
    const id = await createInstance();
    const bad = Buffer.concat([Buffer.from('{"vnfInstanceName":"x'), Buffer.from([0xff]), Buffer.from('"}')]);
    const r = await vnfm.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${id}`, headers: { ...V2, 'content-type': 'application/merge-patch+json' }, payload: bad });
    assertProblem(r, 400, /not valid UTF-8/);
  });

  it('valid multi-byte UTF-8 round-trips', async () => {
    const name = 'café ✓ 𝄞';
    const r = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, ...JSON_CT }, payload: Buffer.from(JSON.stringify({ vnfdId, vnfInstanceName: name }), 'utf8') });
    assert.equal(r.statusCode, 201, r.body);
    assert.equal(r.json().vnfInstanceName, name);
  });

  it('a charset other than UTF-8 is 415; utf-8 spellings are accepted', async () => {
    for (const ct of ['application/json; charset=iso-8859-1', 'application/json;charset=latin1', 'application/json; charset="UTF-16"']) {
      const r = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, 'content-type': ct }, payload: JSON.stringify({ vnfdId }) });
      assertProblem(r, 415, /charset/);
    }
    const mp = await vnfm.app.inject({ method: 'PATCH', url: '/vnflcm/v2/vnf_instances/x', headers: { ...V2, 'content-type': 'application/merge-patch+json; charset=windows-1252' }, payload: '{}' });
    assertProblem(mp, 415, /charset/);
    for (const ct of ['application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'application/json; charset=utf8']) {
      const r = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, 'content-type': ct }, payload: JSON.stringify({ vnfdId }) });
      assert.equal(r.statusCode, 201, `${ct}: ${r.body}`);
    }
  });

  it('the other JSON rules are unchanged (empty body, malformed JSON, prototype poisoning)', async () => {
    assertProblem(await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, ...JSON_CT }, payload: '' }), 400, /missing or empty/);
    assertProblem(await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, ...JSON_CT }, payload: '{"vnfdId":' }), 400);
    assertProblem(await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, ...JSON_CT }, payload: `{"vnfdId":"${vnfdId}","__proto__":{"x":1}}` }), 400);
    // an empty body is still refused on an operation that needs one
    const id = await createInstance();
    assertProblem(await vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: { ...V2, ...JSON_CT }, payload: '' }), 400, /missing or empty/);
  });
});

describe('requests without a body, sent with Content-Type: application/json (python-tackerclient)', () => {
  it('DELETE of an instance, a subscription, a package and a VIM, v1 and v2: the empty body is no body', async () => {
    for (const v of ['v1', 'v2'] as const) {
      for (const headers of [{ ...V2, ...JSON_CT }, { ...V2, 'content-type': 'application/json; charset=utf-8' }]) {
        const id = await createInstance();
        const del = await vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/${v}/vnf_instances/${id}`, headers, payload: '' });
        assert.equal(del.statusCode, 204, del.body);
        assertProblem(await vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/${v}/subscriptions/no-such-subscription`, headers, payload: '' }), 404);
      }
    }
    assertProblem(await vnfm.app.inject({ method: 'DELETE', url: '/vnfpkgm/v1/vnf_packages/no-such-package', headers: JSON_CT, payload: '' }), 404);
    assertProblem(await vnfm.app.inject({ method: 'DELETE', url: '/v1.0/vims/no-such-vim', headers: JSON_CT, payload: '' }), 404);
  });

  it('GET and body-less POSTs (sync) accept it; a DELETE with a malformed body is still 400', async () => {
    const get = await vnfm.app.inject({ method: 'GET', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, ...JSON_CT }, payload: '' });
    assert.equal(get.statusCode, 200, get.body);
    const id = await createInstance();
    const sync = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/sync`, headers: { ...V2, ...JSON_CT }, payload: '' });
    assert.notEqual(sync.statusCode, 400, sync.body);
    assertProblem(await vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/v2/vnf_instances/${id}`, headers: { ...V2, ...JSON_CT }, payload: '{"x":' }), 400);
  });
});

describe('body-less task resources', () => {
  const TASKS = [
    ['v1', 'retry'],
    ['v1', 'rollback'],
    ['v1', 'fail'],
    ['v1', 'cancel'],
    ['v2', 'retry'],
    ['v2', 'rollback'],
    ['v2', 'fail'],
  ] as const;

  it('accept an empty body with and without Content-Type: application/json (parsing passes: 404 for an unknown op occ)', async () => {
    for (const [v, task] of TASKS) {
      for (const headers of [V2, { ...V2, ...JSON_CT }, { ...V2, 'content-type': 'application/json; charset=utf-8' }]) {
        const r = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_lcm_op_occs/no-such-op/${task}`, headers, payload: '' });
        assertProblem(r, 404);
      }
      // a JSON object is still fine, bad bytes and bad charsets are not
      assertProblem(await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_lcm_op_occs/no-such-op/${task}`, headers: { ...V2, ...JSON_CT }, payload: '{}' }), 404);
      assertProblem(await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_lcm_op_occs/no-such-op/${task}`, headers: { ...V2, ...JSON_CT }, payload: Buffer.from([0x7b, 0xff, 0x7d]) }), 400, /UTF-8/);
      assertProblem(await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_lcm_op_occs/no-such-op/${task}`, headers: { ...V2, 'content-type': 'application/json; charset=latin1' }, payload: '' }), 415);
    }
    // cancel's body rules stay: the enum is checked, v2 has no cancel
    assertProblem(await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v1/vnf_lcm_op_occs/no-such-op/cancel', headers: JSON_CT, payload: '{"cancelMode":"SOMEHOW"}' }), 400);
    assertProblem(await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_lcm_op_occs/no-such-op/cancel', headers: { ...V2, ...JSON_CT }, payload: '' }), 404);
  });

  it('retry and fail of a FAILED_TEMP op with Content-Type: application/json and an empty body (v1 and v2)', async () => {
    for (const v of ['v1', 'v2'] as const) {
      const { occ } = await failedHeal(v);
      const retry = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_lcm_op_occs/${occ}/retry`, headers: { ...V2, ...JSON_CT }, payload: '' });
      assert.equal(retry.statusCode, 202, retry.body);
      await vnfm.ctx.engine?.runner.idle();
      assert.equal(await opState(occ), 'COMPLETED');

      const second = await failedHeal(v);
      // rollback of a heal is refused after parsing (422), not for the empty body
      const rb = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_lcm_op_occs/${second.occ}/rollback`, headers: { ...V2, ...JSON_CT }, payload: '' });
      assert.equal(rb.statusCode, 422, rb.body);
      const fail = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/${v}/vnf_lcm_op_occs/${second.occ}/fail`, headers: { ...V2, ...JSON_CT }, payload: '' });
      assert.equal(fail.statusCode, 200, fail.body);
      assert.equal(fail.json().operationState, 'FAILED');
    }
  });
});

describe('over a listening server, raw bytes', () => {
  it('invalid UTF-8 is 400, a foreign charset 415, an empty JSON task body accepted, liveness answered', async () => {
    const bad = await raw(vnfm.url, 'POST', '/vnflcm/v2/vnf_instances', { ...V2, ...JSON_CT }, BAD_UTF8);
    assertProblem(bad, 400, /not valid UTF-8/);
    const latin = await raw(vnfm.url, 'POST', '/vnflcm/v2/vnf_instances', { ...V2, 'content-type': 'application/json; charset=ISO-8859-1' }, Buffer.from(`{"vnfdId":"${vnfdId}","vnfInstanceName":"caf\xe9"}`, 'latin1'));
    assertProblem(latin, 415, /charset/);
    const ok = await raw(vnfm.url, 'POST', '/vnflcm/v2/vnf_instances', { ...V2, ...JSON_CT }, Buffer.from(JSON.stringify({ vnfdId, vnfInstanceName: 'café' }), 'utf8'));
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(JSON.parse(ok.body).vnfInstanceName, 'café');
    for (const [v, task] of [
      ['v1', 'retry'],
      ['v1', 'cancel'],
      ['v2', 'rollback'],
      ['v2', 'fail'],
    ]) {
      // Content-Type with Content-Length: 0, and Content-Type with no Content-Length at all
      assertProblem(await raw(vnfm.url, 'POST', `/vnflcm/${v}/vnf_lcm_op_occs/no-such-op/${task}`, { ...V2, ...JSON_CT }, Buffer.alloc(0)), 404);
      assertProblem(await raw(vnfm.url, 'POST', `/vnflcm/${v}/vnf_lcm_op_occs/no-such-op/${task}`, { ...V2, ...JSON_CT }), 404);
    }
    const { occ } = await failedHeal('v1');
    const retry = await raw(vnfm.url, 'POST', `/vnflcm/v1/vnf_lcm_op_occs/${occ}/retry`, JSON_CT, Buffer.alloc(0));
    assert.equal(retry.statusCode, 202, retry.body);
    await vnfm.ctx.engine?.runner.idle();
    assert.equal(await opState(occ), 'COMPLETED');
    const live = await raw(vnfm.url, 'GET', '/healthz', {});
    assert.equal(live.statusCode, 200);
    assert.deepEqual(JSON.parse(live.body), { status: 'ok' });
  });
});
