/**
 * Which parameter names hold secrets (src/model/sealed-params.ts `isSecretKey`): a table of names
 * sealed or not, the configurable extra and never lists, and end to end over an on-disk embedded
 * database: an instantiate whose additionalParams carry `secret_key`, `api_key` and `access_key`
 * shows `****` for them in the op occ, leaves none of them in clear in the data directory's files,
 * and still hands them opened to the management drivers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type Vnfm, startVnfm } from '../../src/main/server.ts';
import type { MgmtContext, MgmtDriver } from '../../src/mgmt/mgmt-driver.ts';
import { MASK, configureSecretNames, isSecretKey, maskSealed } from '../../src/model/sealed-params.ts';
import { TEST_OUTBOUND } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { until } from '../helpers/wait.ts';

const SEALED = [
  'password', 'ssh_password', 'adminPassword', 'root_passwd', 'passphrase', 'password2', 'PASSWORD',
  'secret', 'client_secret', 'clientSecret', 'secrets', 'app_secret_value',
  'token', 'auth_token', 'authToken', 'bearer_token', 'bearerToken', 'access_token', 'refresh_token', 'X-Auth-Token', 'x_auth_token', 'id_token',
  'api_key', 'apiKey', 'APIKey', 'apikey', 'api-key', 'access_key', 'accessKey', 'secret_key', 'secretKey', 'secret_access_key', 'AWSSecretAccessKey',
  'private_key', 'privateKey', 'sshPrivateKey', 'ssh_private_key', 'ssh_key', 'sshKey', 'sshkey', 'privatekey', 'encryption_key', 'signing_key', 'license_key', 'private_key_pem', 'ssh_keys',
  'credential', 'credentials', 'auth_cred', 'vimCredentials', 'db_creds',
  'auth', 'authorization', 'Authorization', 'auth_info', 'authentication',
  'bearer', 'cookie', 'session_cookie', 'kubeconfig', 'kube_config', 'kubeConfig', 'psk', 'wifi_psk',
];
const NOT_SEALED = [
  'key', 'keys', 'keyName', 'key_name', 'ssh_key_name', 'label_key', 'sort_key', 'labelKey', 'primary_key', 'idempotencyKey', 'public_key', 'publicKey', 'ssh_public_key', 'host_key', 'authorized_keys',
  'vnfdId', 'vnfInstanceId', 'flavourId', 'monkey', 'keystone', 'keystone_project', 'key_pair',
  'auth_url', 'authUrl', 'auth_uri', 'authType', 'auth_type', 'auth_mode', 'author', 'authority',
  'token_type', 'tokenEndpoint', 'token_endpoint', 'token_url', 'token_ttl', 'secret_name', 'secretName', 'secretRef', 'password_file', 'ssh_key_file', 'private_key_path', 'kubeconfig_path', 'access_key_id', 'credential_type', 'passwordLength',
  'username', 'user', 'host', 'namespace', 'vdu_image', 'lcm-kubernetes-def-files', 'helm_chart_path', '',
];

describe('secret parameter names', () => {
  after(() => configureSecretNames({}));

  for (const n of SEALED) it(`${n}: sealed`, () => assert.equal(isSecretKey(n), true));
  for (const n of NOT_SEALED) it(`${JSON.stringify(n)}: not sealed`, () => assert.equal(isSecretKey(n), false));

  it('secrets.extraNames and secrets.neverNames change the rule (exact names, any case)', () => {
    configureSecretNames({ extraNames: ['vendor_blob', 'Serial'], neverNames: ['token_count_hint', 'AUTH'] });
    assert.equal(isSecretKey('vendor_blob'), true);
    assert.equal(isSecretKey('VENDOR_BLOB'), true);
    assert.equal(isSecretKey('serial'), true);
    assert.equal(isSecretKey('vendor_blob_x'), false);
    assert.equal(isSecretKey('token_count_hint'), false);
    assert.equal(isSecretKey('auth'), false);
    assert.equal(isSecretKey('auth_token'), true);
    assert.deepEqual(maskSealed({ vendor_blob: 'x', secret_key: 'y', label_key: 'app' }), { vendor_blob: MASK, secret_key: MASK, label_key: 'app' });
    configureSecretNames({});
    assert.equal(isSecretKey('vendor_blob'), false);
    assert.equal(isSecretKey('auth'), true);
  });

  it('the settings are validated and read from the environment', () => {
    const c = resolveConfig({ env: { VNFM_SECRETS_EXTRA_NAMES: 'vendor_blob, serial', VNFM_SECRETS_NEVER_NAMES: 'token_hint' } });
    assert.deepEqual(c.secrets, { extraNames: ['vendor_blob', 'serial'], neverNames: ['token_hint'] });
    assert.throws(() => resolveConfig({ flags: { secrets: { extraNames: [''] } } as never }), /secrets\.extraNames: must be a list of parameter names/);
  });
});

const S = { secretKey: 'S3cret-secret-KEY-4a1', apiKey: 'S3cret-api-KEY-4a2', accessKey: 'S3cret-access-KEY-4a3' };

/** Records the additionalParams the management drivers get at instantiate_end. */
class Recorder implements MgmtDriver {
  readonly name = 'params-recorder';
  seen: Record<string, unknown> | undefined;
  applies(ctx: MgmtContext): boolean {
    return ctx.hook === 'instantiate_end';
  }
  async run(ctx: MgmtContext): Promise<void> {
    this.seen = JSON.parse(JSON.stringify(ctx.params)) as Record<string, unknown>;
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

describe('credential-named additionalParams end to end (on-disk database)', { timeout: 240_000 }, () => {
  let base = '';
  let vnfm: Vnfm | undefined;
  after(async () => {
    await vnfm?.close().catch(() => undefined);
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('shown as ****, sealed in the database files, opened for the management drivers', async () => {
    base = mkdtempSync(join(tmpdir(), 'vnfm-secret-names-'));
    const dataDir = join(base, 'data');
    const recorder = new Recorder();
    const fake = new FakeDriver();
    const config = resolveConfig({ flags: { sim: false, logLevel: 'warn', dataDir, secretKeyFile: join(base, 'secret.key'), port: 0, outbound: TEST_OUTBOUND, sync: { intervalMs: 0 }, runner: { pollMs: 50 } } });
    const running = await startVnfm(config, {
      logger: createLogger('silent'),
      noListen: true,
      plugins: [
        (ctx) => {
          ctx.engine?.drivers.register(fake);
          ctx.engine?.mgmt.register(recorder);
        },
      ],
    });
    vnfm = running;
    const V2 = { version: '2.0.0' };
    const pkg = await onboard(running.app, csarOf(join(ROOT, 'samples/vm-basic')), () => running.ctx.packages.idle());
    const c = await running.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId: pkg.vnfdId } });
    assert.equal(c.statusCode, 201, c.body);
    const additionalParams = { secret_key: S.secretKey, api_key: S.apiKey, cloud: { access_key: S.accessKey, label_key: 'app' } };
    const ins = await running.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${c.json().id}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM }, additionalParams } });
    assert.equal(ins.statusCode, 202, ins.body);
    const occ = String(ins.headers.location).split('/').pop() as string;
    const body = await until(
      'instantiate COMPLETED',
      async () => {
        const r = await running.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_lcm_op_occs/${occ}`, headers: V2 });
        return r.json().operationState === 'COMPLETED' ? r.body : undefined;
      },
      120_000,
    );
    assert.deepEqual(JSON.parse(body).operationParams.additionalParams, { secret_key: MASK, api_key: MASK, cloud: { access_key: MASK, label_key: 'app' } });
    for (const s of Object.values(S)) assert.ok(!body.includes(s), 'not in the op occ');
    assert.deepEqual(recorder.seen, additionalParams, 'the management drivers get them opened');
    await running.close();
    vnfm = undefined;
    const files = filesUnder(dataDir);
    assert.ok(files.length > 100, `the database files are there (${files.length})`);
    const found = files.flatMap((f) => {
      const buf = readFileSync(f);
      return Object.entries(S)
        .filter(([, s]) => buf.includes(s))
        .map(([k]) => `${f.slice(dataDir.length)}: ${k}`);
    });
    assert.deepEqual(found, []);
  });
});
