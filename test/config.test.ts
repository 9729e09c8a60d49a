/** The options module: layering, validation with the setting named. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { ConfigError, resolveConfig } from '../src/config.ts';

it('layers defaults < env < flags and derives publicUrl', () => {
  const c = resolveConfig({ env: { VNFM_PORT: '9999', VNFM_SYNC_INTERVAL_MS: '0' }, flags: { host: '0.0.0.0' } });
  assert.equal(c.port, 9999);
  assert.equal(c.sync.intervalMs, 0);
  assert.equal(c.publicUrl, 'http://127.0.0.1:9999');
});

it('rejects bad and unknown settings with the setting named', () => {
  assert.throws(() => resolveConfig({ env: { VNFM_PORT: 'x' } }), /VNFM_PORT/);
  assert.throws(() => resolveConfig({ flags: { nope: 1 } as never }), ConfigError);
  assert.throws(() => resolveConfig({ flags: { grants: { mode: 'external' } } }), /grants.endpoint/);
});

it('requires a shared secret key with PostgreSQL', () => {
  assert.throws(() => resolveConfig({ flags: { databaseUrl: 'postgres://db/vnfm' } }), /secretKey/);
  assert.equal(resolveConfig({ flags: { databaseUrl: 'postgres://db/vnfm', secretKey: '11'.repeat(32) } }).databaseUrl, 'postgres://db/vnfm');
});
