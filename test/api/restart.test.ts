/**
 * Durability across a restart: a VNFM on an embedded database in a data directory is stopped and
 * started again on the same directory; packages, instances, op occs and VIMs are all still there,
 * and sealed credentials still open (the generated secret key persisted next to the database).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type Vnfm, startVnfm } from '../../src/main/server.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

const PASSWORD = 'restart-test-secret-pw-913';
const V2 = { version: '2.0.0' };
const dataDir = mkdtempSync(join(tmpdir(), 'vnfm-restart-'));
const logs: string[] = [];
let running: Vnfm | undefined;

async function start(): Promise<Vnfm> {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const config = resolveConfig({ flags: { dataDir, sim: false, port: 0, logLevel: 'info', outbound: { vimAllow: ['127.0.0.1'] } } });
  running = await startVnfm(config, { logger: createLogger('info', sink) });
  return running;
}

async function get(v: Vnfm, url: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${v.url}${url}`, { headers: V2 });
  assert.equal(r.status, 200, `${url}: ${r.status}`);
  return (await r.json()) as Record<string, unknown>;
}

after(async () => {
  await running?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('restart on the same data directory', () => {
  it('keeps packages, instances, op occs and VIMs, and the VIM password still decrypts', async () => {
    const first = await start();
    assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const keyFile = join(dataDir, 'secret.key');
    assert.ok(existsSync(keyFile), 'a secret key was generated into the data directory');
    assert.equal(statSync(keyFile).mode & 0o077, 0, 'the key file is private to its owner');
    const key = readFileSync(keyFile, 'utf8');

    const pkg = await onboard(first.app, csarOf(join(ROOT, 'samples/vm-basic')), () => first.ctx.packages.idle());
    const vimR = await first.app.inject({
      method: 'POST',
      url: '/v1.0/vims',
      payload: { vim: { name: 'persisted', type: 'openstack', is_default: true, auth_url: 'http://127.0.0.1:5000/v3', auth_cred: { username: 'admin', password: PASSWORD }, vim_project: { name: 'admin' } } },
    });
    assert.equal(vimR.statusCode, 201, vimR.body);
    const vimId = vimR.json().vim.id as string;
    const instR = await first.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId: pkg.vnfdId, vnfInstanceName: 'survivor', vimConnectionInfo: { vim1: { vimId } } } });
    assert.equal(instR.statusCode, 201, instR.body);
    const instId = instR.json().id as string;
    const mod = await first.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${instId}`, headers: V2, payload: { vnfInstanceDescription: 'before restart' } });
    assert.equal(mod.statusCode, 202, mod.body);
    const occId = String(mod.headers.location).split('/').pop() as string;
    const before = {
      pkg: await get(first, `/vnfpkgm/v1/vnf_packages/${pkg.id as string}`),
      inst: await get(first, `/vnflcm/v2/vnf_instances/${instId}`),
      vim: await get(first, `/v1.0/vims/${vimId}`),
      occ: await get(first, `/vnflcm/v2/vnf_lcm_op_occs/${occId}`),
    };
    await first.close();
    running = undefined;

    const second = await start();
    assert.equal(readFileSync(keyFile, 'utf8'), key, 'the key is reused, not regenerated');
    const afterRestart = {
      pkg: await get(second, `/vnfpkgm/v1/vnf_packages/${pkg.id as string}`),
      inst: await get(second, `/vnflcm/v2/vnf_instances/${instId}`),
      vim: await get(second, `/v1.0/vims/${vimId}`),
      occ: await get(second, `/vnflcm/v2/vnf_lcm_op_occs/${occId}`),
    };
    const rebase = (o: unknown) => JSON.parse(JSON.stringify(o).replaceAll(first.url, '<url>').replaceAll(second.url, '<url>'));
    assert.deepEqual(rebase(afterRestart), rebase(before));
    assert.equal(afterRestart.pkg.onboardingState, 'ONBOARDED');
    assert.equal(afterRestart.pkg.usageState, 'IN_USE');
    assert.equal(afterRestart.inst.vnfInstanceDescription, 'before restart');
    assert.equal(afterRestart.occ.operationState, 'COMPLETED');

    // sealed secrets open with the persisted key
    const conn = await second.ctx.vims.complete({ vimId });
    assert.equal(conn.accessInfo.password, PASSWORD);
    const instConns = await second.ctx.instances.vimConnections(instId);
    assert.equal(instConns.vim1?.accessInfo.password, PASSWORD);
    assert.equal((await second.ctx.vims.getDefault('openstack'))?.id, vimId);

    // the package content survived byte for byte, and the restarted VNFM keeps working
    const content = await second.app.inject({ method: 'GET', url: `/vnfpkgm/v1/vnf_packages/${pkg.id as string}/package_content` });
    assert.ok(content.rawPayload.equals(csarOf(join(ROOT, 'samples/vm-basic'))));
    const del = await second.app.inject({ method: 'DELETE', url: `/vnflcm/v2/vnf_instances/${instId}`, headers: V2 });
    assert.equal(del.statusCode, 204, del.body);
    assert.ok(!logs.join('').includes(PASSWORD), 'the password never reached the logs');
  });
});
