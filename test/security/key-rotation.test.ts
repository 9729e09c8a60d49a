/**
 * Key rotation of the secrets at rest:
 * - the key ring: values name their key (`v2:<key id>:...`), every key of the ring opens, the first
 *   seals, values of the old format (`v1:`, no key id) still open; a process backed by a key file
 *   re-reads it when it meets an unknown key id (another process rotated);
 * - re-sealing ({@link resealAll}) reaches every sealed value (VIM secrets, instance VIM secrets,
 *   subscription credentials, management driver state, secrets inside op occ parameters): after it
 *   a VNFM with only the new key opens everything;
 * - `vnfm key rotate` / `prune` on an embedded data directory with the key file outside it: new key
 *   first, old kept until prune; refused while a VNFM holds the data directory.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { resolveConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { MgmtStore } from '../../src/lcm/mgmt-context.ts';
import { rotateKey } from '../../src/main/key-rotation.ts';
import { startVnfm } from '../../src/main/server.ts';
import { DataDirLockedError } from '../../src/store/db.ts';
import { resealAll } from '../../src/store/rekey.ts';
import { SecretBox, keyId, openSecretBox, writeKeyFile } from '../../src/store/secret-box.ts';
import { TEST_OUTBOUND, testVnfm } from '../helpers/app.ts';
import { type TestStore, describeStores } from '../helpers/db.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { until } from '../helpers/wait.ts';
import { type Receiver, startReceiver } from '../notify/fixture.ts';

const V2 = { version: '2.0.0' };

/** A value sealed the way releases before key ids did (`v1:<iv>:<tag>:<data>`). */
function sealV1(key: Buffer, value: unknown): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([c.update(JSON.stringify(value), 'utf8'), c.final()]);
  return `v1:${iv.toString('base64')}:${c.getAuthTag().toString('base64')}:${data.toString('base64')}`;
}

let work: string;
before(() => {
  work = mkdtempSync(join(tmpdir(), 'vnfm-rekey-'));
});
after(() => rmSync(work, { recursive: true, force: true }));

describe('the key ring', () => {
  it('values name their key; every key opens, the first seals; the old format still opens', () => {
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    const old = new SecretBox(k1);
    const s1 = old.seal({ password: 'pw-1' });
    assert.match(s1, new RegExp(`^v2:${keyId(k1)}:`));
    const ring = new SecretBox([k2, k1]);
    assert.deepEqual(ring.open(s1), { password: 'pw-1' });
    assert.deepEqual(ring.open(sealV1(k1, 'legacy')), 'legacy');
    const s2 = ring.seal('new');
    assert.equal(SecretBox.keyIdOf(s2), keyId(k2));
    assert.ok(ring.isCurrent(s2) && !ring.isCurrent(s1));
    assert.throws(() => new SecretBox(k2).open(s1), new RegExp(`sealed with key ${keyId(k1)}, which this process does not have`));
  });

  it('a process backed by a key file picks up a rotated key by itself', () => {
    const file = join(work, 'ring', 'secret.key');
    const k1 = randomBytes(32);
    writeKeyFile(file, [k1]);
    const a = openSecretBox({ file });
    const k2 = randomBytes(32);
    writeKeyFile(file, [k2, k1]);
    const fromOther = new SecretBox([k2, k1]).seal('sealed by the rotated process');
    assert.equal(a.open(fromOther), 'sealed by the rotated process', 'the unknown key id made it re-read the file');
    assert.equal(a.currentKeyId, keyId(k2));
    assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 2);
  });
});

await describeStores('re-sealing over one database', (env) => {
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
  });
  after(async () => rx?.close());

  it('every sealed value carries the new key afterwards, and opens with the new key alone', async () => {
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    const fake = new FakeDriver();
    const store = await env.open();
    {
      const a = await testVnfm({ store, config: { secretKey: k1.toString('hex'), runner: { pollMs: 50 } }, plugins: [(ctx) => void ctx.engine?.drivers.register(fake)] });
      let vimId = '';
      let instanceId = '';
      try {
        const vim = await a.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: 'os', type: 'openstack', auth_url: 'https://keystone.example.net/v3', auth_cred: { username: 'u', password: 'vim-pw-rk' }, vim_project: { name: 'p' } } } });
        assert.equal(vim.statusCode, 201, vim.body);
        vimId = vim.json().vim.id;
        const sub = await a.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: { callbackUri: `${rx.url}/cb`, authentication: { authType: ['BASIC'], paramsBasic: { userName: 'u', password: 'sub-pw-rk' } } } });
        assert.equal(sub.statusCode, 201, sub.body);
        const pkg = await onboard(a.app, csarOf(join(ROOT, 'samples/vm-basic')), () => a.ctx.packages.idle());
        const c = await a.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId: pkg.vnfdId } });
        instanceId = c.json().id;
        const ins = await a.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${instanceId}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: { ...FAKE_VIM, accessInfo: { password: 'inline-pw-rk' } } }, additionalParams: { ssh_password: 'ssh-pw-rk' } } });
        assert.equal(ins.statusCode, 202, ins.body);
        const occ = String(ins.headers.location).split('/').pop() as string;
        await until('instantiate COMPLETED', async () => (await a.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_lcm_op_occs/${occ}`, headers: V2 })).json().operationState === 'COMPLETED', 30_000);
        await new MgmtStore(store.db, a.ctx.box, a.ctx.vims).instanceState(instanceId, 'test-driver').save({ adminPassword: 'driver-pw-rk' });
        // one value in the format before key ids
        await store.db.updateTable('vim').set({ secret: sealV1(k1, { password: 'vim-pw-rk' }) }).where('id', '=', vimId).execute();
      } finally {
        await a.close();
      }

      const report = await resealAll(store.db, new SecretBox([k2, k1]));
      for (const k of ['vim.secret', 'vnf_instance.vim_secrets', 'subscription.auth_secret', 'mgmt_state.sealed', 'op_occ.operation_params', 'op_occ.command']) {
        assert.ok((report.resealed[k] ?? 0) >= 1, `${k} re-sealed (${JSON.stringify(report.resealed)})`);
      }
      assert.equal(report.contended, 0);
      // nothing sealed with the old key is left anywhere in the database
      const dump = (await sql<{ t: string }>`select string_agg(x::text, ' ') as t from (select row_to_json(v)::text as x from vim v union all select row_to_json(i)::text from vnf_instance i union all select row_to_json(s)::text from subscription s union all select row_to_json(m)::text from mgmt_state m union all select row_to_json(o)::text from op_occ o) q`.execute(store.db)).rows[0]?.t ?? '';
      assert.ok(dump.includes(`v2:${keyId(k2)}:`), 'values sealed with the new key');
      assert.ok(!dump.includes(`v2:${keyId(k1)}:`) && !/"v1:|vnfm-sealed:v1:/.test(dump), 'no value sealed with the old key or in the old format');
      assert.equal((await resealAll(store.db, new SecretBox([k2, k1]))).resealed['vim.secret'], undefined, 'a second run has nothing to do');

      // a VNFM with only the new key opens everything
      const b = await testVnfm({ store, config: { secretKey: k2.toString('hex') }, plugins: [(ctx) => void ctx.engine?.drivers.register(fake)] });
      try {
        assert.equal((await b.ctx.vims.get(vimId)).secret.password, 'vim-pw-rk');
        assert.equal((await b.app.inject({ method: 'GET', url: '/v1.0/vims' })).statusCode, 200);
        const conns = await b.ctx.instances.vimConnections(instanceId);
        assert.equal(Object.values(conns)[0]?.accessInfo.password, 'inline-pw-rk');
        const ms = new MgmtStore(store.db, b.ctx.box, b.ctx.vims);
        assert.equal((await ms.instanceState(instanceId, 'test-driver').get()).adminPassword, 'driver-pw-rk');
        assert.equal((await ms.instantiateParams(instanceId)).ssh_password, 'ssh-pw-rk');
      } finally {
        await b.close();
      }
    }
  });

  if (env.kind === 'postgres') {
    it('vnfm key rotate while a VNFM runs on the same database: no downtime, it picks the new key up from the shared key file', async () => {
      const store = (await env.open()) as TestStore;
      const keyFile = join(work, 'pg-keys', 'secret.key');
      writeKeyFile(keyFile, [randomBytes(32)]);
      const a = await testVnfm({ store, config: { secretKeyFile: keyFile } });
      try {
        const reg = async (name: string) => {
          const r = await a.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name, type: 'openstack', auth_url: 'https://keystone.example.net/v3', auth_cred: { username: 'u', password: `pw-${name}` }, vim_project: { name: 'p' } } } });
          assert.equal(r.statusCode, 201, r.body);
          return r.json().vim.id as string;
        };
        const first = await reg('before-rotation');
        const cfg = resolveConfig({ flags: { sim: false, databaseUrl: store.url, secretKeyFile: keyFile } });
        const r = await rotateKey(cfg);
        assert.equal(r.report.resealed['vim.secret'], 1);
        // the running VNFM opens what the rotation re-sealed (unknown key id: it re-reads the file)
        assert.equal((await a.app.inject({ method: 'GET', url: `/v1.0/vims/${first}` })).statusCode, 200);
        assert.equal((await a.ctx.vims.get(first)).secret.password, 'pw-before-rotation');
        // and soon seals with the new key itself
        let n = 0;
        await until(
          'the running VNFM to seal with the new key',
          async () => {
            const id = await reg(`during-${n++}`);
            const row = await store.db.selectFrom('vim').select('secret').where('id', '=', id).executeTakeFirstOrThrow();
            return SecretBox.keyIdOf(row.secret) === r.currentKeyId;
          },
          30_000,
          200,
        );
        const p = await rotateKey(cfg, { prune: true });
        assert.equal(p.keyIds.length, 1);
        const list = await a.app.inject({ method: 'GET', url: '/v1.0/vims' });
        assert.equal(list.statusCode, 200, list.body);
        for (const v of await a.ctx.vims.list()) assert.match(String(v.secret.password), /^pw-/);
      } finally {
        await a.close();
      }
    });
  }
});

describe('vnfm key rotate / prune (embedded database, key file outside the data directory)', () => {
  it('new key first, old kept until prune; everything opens with the new key; refused while a VNFM runs', async () => {
    const dataDir = join(work, 'data');
    const keyFile = join(work, 'keys', 'secret.key');
    const config = () => resolveConfig({ flags: { sim: false, dataDir, secretKeyFile: keyFile, port: 0, outbound: TEST_OUTBOUND, sync: { intervalMs: 0 } } });
    const v = await startVnfm(config(), { logger: createLogger('silent') });
    let vimId = '';
    try {
      const vim = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: 'os', type: 'openstack', auth_url: 'https://keystone.example.net/v3', auth_cred: { username: 'u', password: 'vim-pw-cli' }, vim_project: { name: 'p' } } } });
      assert.equal(vim.statusCode, 201, vim.body);
      vimId = vim.json().vim.id;
      await assert.rejects(rotateKey(config()), DataDirLockedError, 'the embedded database is single-process');
    } finally {
      await v.close();
    }
    const k1 = readFileSync(keyFile, 'utf8').trim();
    const r = await rotateKey(config());
    const ring = readFileSync(keyFile, 'utf8').trim().split('\n');
    assert.equal(ring.length, 2);
    assert.equal(ring[1], k1, 'the old key is kept after the new one');
    assert.equal(r.currentKeyId, keyId(Buffer.from(ring[0] as string, 'hex')));
    assert.equal(r.report.resealed['vim.secret'], 1);
    const p = await rotateKey(config(), { prune: true });
    assert.deepEqual(readFileSync(keyFile, 'utf8').trim().split('\n'), [ring[0]], 'prune leaves the new key only');
    assert.equal(Object.keys(p.report.resealed).length, 0, 'nothing left to re-seal');
    // the command itself
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'key', 'rotate', '--data-dir', dataDir, '--secret-key-file', keyFile], { encoding: 'utf8', env: { ...process.env, VNFM_SECRET_KEY: '' } });
    assert.match(out, /^rotated: 1 sealed value\(s\) re-sealed with key [0-9a-f]{8}; key file .* holds [0-9a-f]{8}, [0-9a-f]{8}\n {2}vim\.secret: 1\n$/);
    const again = await startVnfm(config(), { logger: createLogger('silent') });
    try {
      assert.equal((await again.ctx.vims.get(vimId)).secret.password, 'vim-pw-cli');
    } finally {
      await again.close();
    }
  });
});
