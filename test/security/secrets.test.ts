/**
 * No secret leaves the VNFM, end to end, over a VNFM with an on-disk embedded database:
 *
 * - planted secrets (VIM password and bearer token, subscription Basic and OAuth 2.0 client
 *   passwords, an inline VIM password, SSH password / admin password / private key in an
 *   instantiate request's additionalParams, the master key) after registering VIMs and
 *   subscriptions, instantiating and healing: none appears in any API response, notification,
 *   log line, `/metrics`, or any file of the data directory;
 * - the data directory is private: `find <dataDir> -perm /o+rwx` finds nothing, the key file
 *   (kept outside the data directory) is 0600;
 * - a spy hook script in the VNF package (run at instantiate_end and heal_end) finds no VNFM secret
 *   in its environment, in `/proc/<VNFM pid>/environ` or in files it can read (data directory, key
 *   file): as root, the VNFM runs hook scripts as `nobody`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type Vnfm, startVnfm } from '../../src/main/server.ts';
import { writeKeyFile } from '../../src/store/secret-box.ts';
import { TEST_OUTBOUND } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { until } from '../helpers/wait.ts';
import { type Receiver, startReceiver } from '../notify/fixture.ts';

const V2 = { version: '2.0.0' };
const GUARD_MS = 60_000;
const KEY = randomBytes(32);
const S = {
  vimOs: 'S3cret-vim-os-PW-7f1',
  vimK8s: 'S3cret-k8s-bearer-TOKEN-7f2',
  subBasic: 'S3cret-sub-basic-PW-7f3',
  subOauth: 'S3cret-sub-oauth-PW-7f4',
  inlineVim: 'S3cret-inline-vim-PW-7f5',
  ssh: 'S3cret-ssh-PW-7f6',
  admin: 'S3cret-admin-PW-7f7',
  privateKey: 'S3cret-private-KEY-7f8',
  masterKey: KEY.toString('hex'),
};
const SECRETS = Object.values(S);

let base: string;
let dataDir: string;
let keyFile: string;
let vnfm: Vnfm;
let rx: Receiver;
const logs: string[] = [];
/** Every API response body, with what it answered. */
const responses: string[] = [];
const fake = new FakeDriver();

async function api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = V2) {
  const r = await vnfm.app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  responses.push(`${method} ${url} ${r.statusCode} ${JSON.stringify(r.headers)} ${r.body}`);
  return r;
}

async function opState(id: string): Promise<string> {
  return (await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${id}`)).json().operationState as string;
}

/**
 * The spy: looks for every planted secret in its environment, in the VNFM's environment and
 * command line, and in the data directory and key file (whatever it can read); prints a report
 * as the hook's instance metadata.
 */
function spyScript(): string {
  const list = SECRETS.map((s) => `'${s}'`).join(' ');
  return [
    '#!/bin/sh',
    'cat >/dev/null',
    'hits=""',
    `for s in ${list}; do`,
    '  if env | grep -qF "$s"; then hits="$hits env"; fi',
    '  if tr "\\0" "\\n" < /proc/$PPID/environ 2>/dev/null | grep -qF "$s"; then hits="$hits ppid-environ"; fi',
    '  if tr "\\0" "\\n" < /proc/$PPID/cmdline 2>/dev/null | grep -qF "$s"; then hits="$hits ppid-cmdline"; fi',
    `  if grep -rqsF "$s" '${dataDir}' '${keyFile}' 2>/dev/null; then hits="$hits files"; fi`,
    'done',
    `if ls '${dataDir}' >/dev/null 2>&1; then dd=true; else dd=false; fi`,
    `if cat '${keyFile}' >/dev/null 2>&1; then kr=true; else kr=false; fi`,
    'if cat /proc/$PPID/environ >/dev/null 2>&1; then pe=true; else pe=false; fi',
    'printf \'{"metadata":{"spy":{"hits":"%s","dataDirListable":%s,"keyReadable":%s,"ppidEnvironReadable":%s,"uid":%s}}}\' "$hits" "$dd" "$kr" "$pe" "$(id -u)"',
    '',
  ].join('\n');
}

function spyPackage(): string {
  const dir = join(base, 'pkg-spy');
  cpSync(join(ROOT, 'samples/vm-basic'), dir, { recursive: true });
  writeFileSync(join(dir, 'Scripts/noop_hook.sh'), spyScript(), { mode: 0o755 });
  return dir;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

function leaks(where: string, text: string): string[] {
  return SECRETS.filter((s) => text.includes(s)).map((s) => `${where}: ${Object.entries(S).find(([, v]) => v === s)?.[0]}`);
}

let instanceId = '';

before(async () => {
  base = mkdtempSync(join(tmpdir(), 'vnfm-secrets-'));
  // The parent is traversable by anyone, so the data directory's own mode is what protects it.
  chmodSync(base, 0o755);
  dataDir = join(base, 'data');
  keyFile = join(base, 'keys', 'secret.key');
  writeKeyFile(keyFile, [KEY]);
  rx = await startReceiver();
  rx.handlers.set('/token', (r) => (r.headers.authorization === `Basic ${Buffer.from(`oauth-client:${S.subOauth}`).toString('base64')}` ? { status: 200, body: { access_token: 'consumer-token-1', token_type: 'Bearer', expires_in: 3600 } } : 401));
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const config = resolveConfig({ flags: { sim: false, logLevel: 'debug', dataDir, secretKeyFile: keyFile, port: 0, outbound: TEST_OUTBOUND, sync: { intervalMs: 0 }, runner: { pollMs: 50 } } });
  vnfm = await startVnfm(config, { logger: createLogger('debug', sink), plugins: [(ctx) => void ctx.engine?.drivers.register(fake)] });
});

after(async () => {
  await vnfm?.close().catch(() => undefined);
  await rx?.close();
  if (base) rmSync(base, { recursive: true, force: true });
});

describe('no secret leaves the VNFM', { timeout: 180_000 }, () => {
  it('VIMs, subscriptions with credentials, an instantiate with passwords and a heal', async () => {
    const os = await api('POST', '/v1.0/vims', { vim: { name: 'os-1', type: 'openstack', auth_url: 'https://keystone.example.net/v3', auth_cred: { username: 'admin', password: S.vimOs, user_domain_name: 'Default' }, vim_project: { name: 'admin', project_domain_name: 'Default' } } }, {});
    assert.equal(os.statusCode, 201, os.body);
    const k8s = await api('POST', '/v1.0/vims', { vim: { name: 'k8s-1', type: 'kubernetes', auth_url: 'https://k8s.example.net:6443', auth_cred: { bearer_token: S.vimK8s }, vim_project: { name: 'default' } } }, {});
    assert.equal(k8s.statusCode, 201, k8s.body);
    await api('GET', '/v1.0/vims', undefined, {});
    await api('GET', `/v1.0/vims/${os.json().vim.id}`, undefined, {});

    const basic = await api('POST', '/vnflcm/v2/subscriptions', { callbackUri: `${rx.url}/basic`, authentication: { authType: ['BASIC'], paramsBasic: { userName: 'consumer', password: S.subBasic } } });
    assert.equal(basic.statusCode, 201, basic.body);
    const oauth = await api('POST', '/vnflcm/v2/subscriptions', { callbackUri: `${rx.url}/oauth`, authentication: { authType: ['OAUTH2_CLIENT_CREDENTIALS'], paramsOauth2ClientCredentials: { clientId: 'oauth-client', clientPassword: S.subOauth, tokenEndpoint: `${rx.url}/token` } } });
    assert.equal(oauth.statusCode, 201, oauth.body);
    await api('GET', '/vnflcm/v2/subscriptions');
    await api('GET', `/vnflcm/v2/subscriptions/${basic.json().id}`);

    const pkg = await onboard(vnfm.app, csarOf(spyPackage()), () => vnfm.ctx.packages.idle());
    const c = await api('POST', '/vnflcm/v2/vnf_instances', { vnfdId: pkg.vnfdId, vnfInstanceName: 'secrets' });
    assert.equal(c.statusCode, 201, c.body);
    instanceId = c.json().id;
    const ins = await api('POST', `/vnflcm/v2/vnf_instances/${instanceId}/instantiate`, {
      flavourId: 'simple',
      vimConnectionInfo: { vim1: { ...FAKE_VIM, accessInfo: { username: 'u', password: S.inlineVim } } },
      additionalParams: { ssh_password: S.ssh, adminPassword: S.admin, config: { private_key: S.privateKey } },
    });
    assert.equal(ins.statusCode, 202, ins.body);
    const insOcc = String(ins.headers.location).split('/').pop() as string;
    await until('instantiate COMPLETED', async () => (await opState(insOcc)) === 'COMPLETED' || ((await opState(insOcc)) === 'FAILED_TEMP' && assert.fail((await api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${insOcc}`)).body)), GUARD_MS);
    const inst = (await api('GET', `/vnflcm/v2/vnf_instances/${instanceId}`)).json();
    const vnfc = inst.instantiatedVnfInfo.vnfcInfo[0].id as string;
    const heal = await api('POST', `/vnflcm/v2/vnf_instances/${instanceId}/heal`, { vnfcInstanceId: [vnfc], additionalParams: { ssh_password: S.ssh } });
    assert.equal(heal.statusCode, 202, heal.body);
    const healOcc = String(heal.headers.location).split('/').pop() as string;
    await until('heal COMPLETED', async () => (await opState(healOcc)) === 'COMPLETED', GUARD_MS);
    // v1 views of the same resources, the op occ lists, the outbox
    await api('GET', `/vnflcm/v1/vnf_instances/${instanceId}`, undefined, { version: '1.3.0' });
    await api('GET', '/vnflcm/v2/vnf_lcm_op_occs');
    await api('GET', '/vnflcm/v1/vnf_lcm_op_occs', undefined, { version: '1.3.0' });
    await api('GET', '/vnfm/v1/notifications', undefined, {});
    // the heal's result reached both subscribers
    const delivered = (path: string) => rx.posts(path).some((n) => n.vnfLcmOpOccId === healOcc && n.operationState === 'COMPLETED');
    await until('the heal result delivered to both subscribers', () => delivered('/basic') && delivered('/oauth'), GUARD_MS);
  });

  it('the spy hook found no VNFM secret in its environment or in files it can read', async () => {
    const inst = (await api('GET', `/vnflcm/v2/vnf_instances/${instanceId}`)).json();
    const spy = inst.metadata?.spy as { hits: string; dataDirListable: boolean; keyReadable: boolean; ppidEnvironReadable: boolean; uid: number } | undefined;
    assert.ok(spy, `the spy hook reported (${JSON.stringify(inst.metadata)})`);
    assert.equal(spy.hits.trim(), '', `secrets found by the hook: ${spy.hits}`);
    assert.equal(spy.keyReadable, false, 'the key file is not readable to the hook');
    assert.equal(spy.dataDirListable, false, 'the data directory is not readable to the hook');
    if (process.getuid?.() === 0) {
      assert.notEqual(spy.uid, 0, 'a root VNFM runs hooks as an unprivileged user');
      assert.equal(spy.ppidEnvironReadable, false, "the VNFM's environment is not readable to the hook");
    }
  });

  it('no planted secret in any response, notification, log line or /metrics', async () => {
    const metrics = await vnfm.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(metrics.statusCode, 200);
    const found = [
      ...leaks('responses', responses.join('\n')),
      // notification bodies and the callback test requests (the Authorization header carries the consumer's own credentials, by design)
      ...leaks('notifications', rx.requests.map((r) => `${r.method} ${r.path} ${r.body}`).join('\n')),
      ...leaks('logs', logs.join('')),
      ...leaks('metrics', metrics.body),
    ];
    assert.deepEqual(found, []);
    assert.ok(responses.length > 15 && logs.length > 20 && rx.requests.length > 4, 'the checks saw traffic');
    assert.ok(logs.some((l) => l.includes('"logger":"vnfm.audit"') && /"action":"POST \/vnflcm\/v2\/vnf_instances\/:id\/heal","target":"[^"]+","result":202,"opOccId"/.test(l)), 'the heal is in the audit log');
  });

  it('no planted secret in the files of the data directory; nothing in it accessible to others', async () => {
    await vnfm.close();
    const files = filesUnder(dataDir);
    assert.ok(files.length > 100, `the database files are there (${files.length})`);
    const found: string[] = [];
    for (const f of files) {
      const buf = readFileSync(f);
      for (const s of SECRETS) if (buf.includes(s)) found.push(`${f.slice(dataDir.length)}: ${Object.entries(S).find(([, v]) => v === s)?.[0]}`);
    }
    assert.deepEqual(found, []);
    const open = execFileSync('find', [dataDir, '-perm', '/o+rwx'], { encoding: 'utf8' }).trim();
    assert.equal(open, '', `entries accessible to others:\n${open}`);
    assert.equal(statSync(dataDir).mode & 0o777, 0o700);
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
  });
});
