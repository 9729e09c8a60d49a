/**
 * `vnfm start` on a non-loopback address without authentication stops with exit code 2 and says why.
 * `vnfm oauth2-client` (through tsx, as the data-dir lock test runs `vnfm start`): on a stopped
 * VNFM's embedded data directory it registers the first (admin) client, prints its secret once,
 * lists it without the secret and deletes it; `vnfm start` then accepts the client's token
 * (through the API), and `--url` without VNFM_ADMIN_TOKEN is refused without a request.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startVnfm } from '../../src/main/server.ts';

const ROOT = process.cwd();
const dataDir = mkdtempSync(join(tmpdir(), 'vnfm-oauth-cli-'));

function vnfm(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'oauth2-client', ...args], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dataDir, ...env }, timeout: 120_000 });
}

describe('vnfm oauth2-client', () => {
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('create, list, use, delete on the data directory', async () => {
    const created = vnfm(['create', '--data-dir', dataDir, '--name', 'first-admin', '--role', 'admin']);
    assert.equal(created.status, 0, created.stderr);
    const c = JSON.parse(created.stdout) as { clientId: string; clientSecret: string; role: string };
    assert.equal(c.role, 'admin');
    assert.match(c.clientSecret, /^vnfmcs_/);
    const listed = vnfm(['list', '--data-dir', dataDir]);
    assert.equal(listed.status, 0, listed.stderr);
    assert.deepEqual((JSON.parse(listed.stdout) as { clientId: string }[]).map((x) => x.clientId), [c.clientId]);
    assert.ok(!listed.stdout.includes(c.clientSecret));

    const config = resolveConfig({ flags: { sim: false, dataDir, port: 0, apiAuth: 'oauth2', sync: { intervalMs: 0 } } });
    const v = await startVnfm(config, { logger: createLogger('silent'), noListen: true });
    try {
      const t = await v.app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `grant_type=client_credentials&client_id=${c.clientId}&client_secret=${c.clientSecret}` });
      assert.equal(t.statusCode, 200, t.body);
      const r = await v.app.inject({ method: 'GET', url: '/vnfm/v1/oauth2/clients', headers: { authorization: `Bearer ${t.json().access_token}` } });
      assert.equal(r.statusCode, 200, r.body);
    } finally {
      await v.close();
    }

    const noToken = vnfm(['list', '--url', 'http://127.0.0.1:9']);
    assert.equal(noToken.status, 2);
    assert.match(noToken.stderr, /VNFM_ADMIN_TOKEN/);
    const deleted = vnfm(['delete', c.clientId, '--data-dir', dataDir]);
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.deepEqual(JSON.parse(vnfm(['list', '--data-dir', dataDir]).stdout), []);
  });
});

describe('vnfm start without authentication off loopback', () => {
  it('stops with a message naming the fix, exit code 2', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start', '--no-sim', '--host', '0.0.0.0', '--port', '0', '--data-dir', join(dataDir, 'never')], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: dataDir },
      timeout: 120_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /configuration error: apiAuth is none \(no authentication\) but the API listens on 0\.0\.0\.0, which is not a loopback address/);
    assert.match(r.stderr, /auth\.allowUnauthenticated: true/);
  });
});
