/**
 * VIM credentials an NFVO grants (`Grant.vimConnectionInfo[].accessInfo`): stored sealed in the op
 * occ (never in clear in the database), opened for the VNFM's own drivers, and never handed to a
 * package hook script (its `grant` input has no `accessInfo`).
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { until } from '../helpers/wait.ts';

const V2 = { version: '2.0.0' };
const GRANTED_PW = 'S3cret-granted-vim-PW-9c1';
let nfvo: Server;
let v: TestVnfm;
let work: string;
let grants = 0;
const fake = new FakeDriver();

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'vnfm-grant-'));
  nfvo = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const gr = JSON.parse(body || '{}') as { vnfInstanceId?: string; vnfLcmOpOccId?: string };
      grants++;
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: `grant-${grants}`, vnfInstanceId: gr.vnfInstanceId, vnfLcmOpOccId: gr.vnfLcmOpOccId, vimConnectionInfo: [{ id: 'granted-vim', vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3', interfaceInfo: { endpoint: 'https://keystone.example.net/v3' }, accessInfo: { username: 'granted', password: GRANTED_PW, project: 'p' } }], _links: { self: { href: 'x' }, vnfLcmOpOcc: { href: 'x' }, vnfInstance: { href: 'x' } } }));
    });
  });
  await new Promise<void>((r) => nfvo.listen(0, '127.0.0.1', () => r()));
  v = await testVnfm({ config: { grants: { mode: 'external', endpoint: `http://127.0.0.1:${(nfvo.address() as { port: number }).port}` }, runner: { pollMs: 50 } }, plugins: [(ctx) => void ctx.engine?.drivers.register(fake)] });
});
after(async () => {
  await v?.close();
  await new Promise<void>((r) => (nfvo ? nfvo.close(() => r()) : r()));
  rmSync(work, { recursive: true, force: true });
});

describe('VIM credentials in an NFVO grant', () => {
  it('are sealed at rest and kept from package hook scripts', async () => {
    // The hook reports whether its input carried the granted password or any accessInfo.
    const pkg = join(work, 'pkg');
    cpSync(join(ROOT, 'samples/vm-basic'), pkg, { recursive: true });
    writeFileSync(
      join(pkg, 'Scripts/noop_hook.sh'),
      ['#!/bin/sh', 'input=$(cat)', `if printf '%s' "$input" | grep -qF '${GRANTED_PW}'; then pw=true; else pw=false; fi`, `if printf '%s' "$input" | grep -qF 'accessInfo'; then ai=true; else ai=false; fi`, `if printf '%s' "$input" | grep -qF 'granted-vim'; then g=true; else g=false; fi`, 'printf \'{"metadata":{"hookSaw":{"password":%s,"accessInfo":%s,"grant":%s}}}\' "$pw" "$ai" "$g"', ''].join('\n'),
      { mode: 0o755 },
    );
    const p = await onboard(v.app, csarOf(pkg), () => v.ctx.packages.idle());
    const c = await v.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId: p.vnfdId } });
    const id = c.json().id as string;
    // the infra step waits (after the grant was stored) until the stored grant was read
    let release: () => void = () => undefined;
    fake.hold.set('instantiate', new Promise<void>((r) => (release = r)));
    const ins = await v.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } } });
    assert.equal(ins.statusCode, 202, ins.body);
    const occ = String(ins.headers.location).split('/').pop() as string;
    const row = await until('the grant stored', async () => (await v.store.db.selectFrom('op_occ').select(['grant', 'grant_id']).where('id', '=', occ).executeTakeFirstOrThrow()).grant_id ? await v.store.db.selectFrom('op_occ').select(['grant', 'grant_id']).where('id', '=', occ).executeTakeFirstOrThrow() : undefined, 30_000);
    release();
    await until('instantiate COMPLETED', async () => (await v.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_lcm_op_occs/${occ}`, headers: V2 })).json().operationState === 'COMPLETED', 30_000);
    assert.equal(grants, 1, 'the NFVO granted');
    const text = JSON.stringify(row.grant);
    assert.equal(row.grant_id, 'grant-1');
    assert.ok(!text.includes(GRANTED_PW), 'the granted password is not stored in clear');
    assert.match(text, /"accessInfo":"vnfm-sealed:v2:/, 'accessInfo is sealed');
    const inst = (await v.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${id}`, headers: V2 })).json();
    assert.deepEqual(inst.metadata?.hookSaw, { password: false, accessInfo: false, grant: true }, 'the hook got the grant without its VIM credentials');
    assert.ok(!v.logs.join('').includes(GRANTED_PW), 'not logged');
  });
});
