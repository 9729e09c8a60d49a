/** The options module: layering, validation with the setting named. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { ConfigError, resolveConfig } from '../src/config.ts';

it('layers defaults < env < flags and derives publicUrl', () => {
  const c = resolveConfig({ env: { VNFM_PORT: '9999', VNFM_SYNC_INTERVAL_MS: '0' }, flags: { host: '0.0.0.0', auth: { allowUnauthenticated: true } } });
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

it('notifications are retried for a duration: retryForMs (24 h) and maxBackoffMs (20 s) by default; the former maxAttempts is refused with its replacement named', () => {
  const c = resolveConfig({});
  assert.equal(c.notifications.retryForMs, 24 * 3_600_000);
  assert.equal(c.notifications.maxBackoffMs, 20_000);
  assert.equal(resolveConfig({ env: { VNFM_NOTIFICATION_RETRY_FOR_MS: '600000' } }).notifications.retryForMs, 600_000);
  assert.throws(() => resolveConfig({ flags: { notifications: { maxAttempts: 10 } } as never }), /maxAttempts was replaced by notifications.retryForMs/);
  assert.throws(() => resolveConfig({ flags: { notifications: { retryForMs: -1 } } }), /notifications.retryForMs/);
  assert.throws(() => resolveConfig({ flags: { notifications: { backoffMs: 1000, maxBackoffMs: 10 } } }), /maxBackoffMs/);
});

it('runner: step retries and the shutdown grace period have defaults, env variables and validation', () => {
  const d = resolveConfig({});
  assert.deepEqual(d.runner.stepRetries, { maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 60_000 });
  assert.equal(d.runner.shutdownGraceMs, 30_000);
  const e = resolveConfig({ env: { VNFM_SHUTDOWN_GRACE_MS: '1500', VNFM_LEASE_MS: '9000', VNFM_STEP_MAX_ATTEMPTS: '2' } });
  assert.equal(e.runner.shutdownGraceMs, 1500);
  assert.equal(e.runner.leaseMs, 9000);
  assert.equal(e.runner.stepRetries.maxAttempts, 2);
  assert.throws(() => resolveConfig({ flags: { runner: { stepRetries: { maxAttempts: 0 } } } }), /runner.stepRetries.maxAttempts/);
  assert.throws(() => resolveConfig({ flags: { runner: { stepRetries: { baseDelayMs: 5000, maxDelayMs: 100 } } } }), /runner.stepRetries.maxDelayMs/);
  assert.throws(() => resolveConfig({ flags: { runner: { shutdownGraceMs: -1 } } }), /runner.shutdownGraceMs/);
  assert.throws(() => resolveConfig({ flags: { runner: { leaseMs: 10 } } }), /runner.leaseMs/);
  assert.throws(() => resolveConfig({ flags: { runner: { stepRetries: { nope: 1 } } } as never }), /unknown setting: nope/);
});

it('vim.kubernetesCreateNamespace: on by default, VNFM_KUBERNETES_CREATE_NAMESPACE, must be a boolean', () => {
  assert.equal(resolveConfig({}).vim.kubernetesCreateNamespace, true);
  assert.equal(resolveConfig({ env: { VNFM_KUBERNETES_CREATE_NAMESPACE: 'false' } }).vim.kubernetesCreateNamespace, false);
  assert.equal(resolveConfig({ flags: { vim: { kubernetesCreateNamespace: false } } }).vim.kubernetesCreateNamespace, false);
  assert.throws(() => resolveConfig({ flags: { vim: { kubernetesCreateNamespace: 'no' } } as never }), /vim.kubernetesCreateNamespace: must be true or false/);
});

it('apiAuth: one mode or several; none refused off loopback unless allowed; tokens with roles validated', () => {
  assert.deepEqual(resolveConfig({ env: { VNFM_API_AUTH: 'token,oauth2', VNFM_API_TOKENS: 'a' } }).apiAuth, ['token', 'oauth2']);
  assert.equal(resolveConfig({ flags: { apiAuth: 'token', apiTokens: ['a'] } }).apiAuth, 'token');
  assert.throws(() => resolveConfig({ flags: { host: '10.1.2.3' } }), /not a loopback address.*auth\.allowUnauthenticated/s);
  assert.throws(() => resolveConfig({ flags: { host: '0.0.0.0', apiAuth: 'none' } }), /allowUnauthenticated/);
  assert.equal(resolveConfig({ flags: { host: '::1' } }).host, '::1');
  assert.equal(resolveConfig({ flags: { host: '10.1.2.3', auth: { allowUnauthenticated: true } } }).host, '10.1.2.3');
  assert.throws(() => resolveConfig({ flags: { apiAuth: ['none', 'token'], apiTokens: ['a'] } }), /none cannot be combined/);
  assert.throws(() => resolveConfig({ flags: { apiAuth: ['token', 'ldap' as never], apiTokens: ['a'] } }), /apiAuth: must be one or more of/);
  assert.throws(() => resolveConfig({ flags: { apiAuth: 'token', apiTokens: [{ token: 'a', role: 'root' as never }] } }), /apiTokens\[0\]\.role/);
  assert.throws(() => resolveConfig({ flags: { apiAuth: 'keystone' } }), /auth\.keystone\.authUrl is required/);
  assert.throws(() => resolveConfig({ flags: { apiAuth: 'mtls' } }), /auth\.mtls\.certFile is required/);
  const k = resolveConfig({ flags: { apiAuth: 'keystone', auth: { keystone: { authUrl: 'http://ks:5000/v3', username: 'vnfm', password: 'x', projectName: 'service', roleMap: { _member_: 'operator' } } } } });
  assert.deepEqual(k.auth.keystone.roleMap, { _member_: 'operator' }, 'a role map replaces the default one as a whole');
  assert.throws(() => resolveConfig({ flags: { auth: { keystone: { roleMap: { x: 'god' as never } } } } }), /roleMap\.x/);
});
