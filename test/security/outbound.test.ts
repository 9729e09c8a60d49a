/**
 * Outbound safety:
 * - the rules ({@link OutboundGuard}): loopback, link-local (cloud metadata), the VNFM's own API
 *   address and configured ranges are refused, `outbound.allow` opens ranges (not the VNFM
 *   itself), host names are judged by what they resolve to, and again right before each request
 *   (a name whose DNS answer turned into a denied address after acceptance is refused: DNS
 *   rebinding);
 * - subscriptions: callback URIs and OAuth 2.0 token endpoints into loopback / link-local are
 *   refused at creation (422 with the reason; nothing stored, nothing sent);
 * - the NFVO: a grant endpoint into loopback stops the start;
 * - Server Notifiers: only registered ones, for the instance's VIM, are ever called with the VIM's
 *   token: an instantiate naming an unregistered URL (or another VIM's notifier) is 422 and no
 *   request leaves; naming one by id works; instance metadata changed afterwards to another URL
 *   is refused at the hook, before anything is sent; `sendToken: false` sends no token.
 */
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { OutboundDeniedError, OutboundGuard } from '../../src/net/outbound.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { AlarmFakeDriver, type AutohealVnfm, type NotifierStub, STUB_TOKEN, STUB_VIM_ID, V2, instantiateVnf, keystoneVim, onboardSample, opOcc, registerNotifier, startAutohealVnfm, startNotifierStub, waitFor } from '../autoheal/fixture.ts';
import { type Receiver, startReceiver } from '../notify/fixture.ts';

function guard(rules: { allow?: string[]; deny?: string[] } = {}, dns: Record<string, string[]> = {}, own?: { host: string; port: number }) {
  return new OutboundGuard({ allow: rules.allow ?? [], deny: rules.deny ?? [] }, () => own, async (h) => {
    const a = dns[h];
    if (!a) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return a;
  });
}

describe('outbound rules', () => {
  it('refuses loopback, link-local, metadata and "this host" addresses by default; allows the rest', async () => {
    const g = guard({}, { 'metadata.example': ['169.254.169.254'], 'api.example': ['192.0.2.10', '2001:db8::1'] });
    for (const [url, why] of [
      ['http://127.0.0.1:8080/cb', /loopback/],
      ['http://127.8.9.10/cb', /loopback/],
      ['http://[::1]:9/cb', /loopback/],
      ['http://[::ffff:127.0.0.1]/cb', /loopback/],
      ['http://169.254.169.254/latest/meta-data/', /link-local/],
      ['http://[fe80::1]/', /link-local/],
      ['http://0.0.0.0:5432/', /this host/],
      ['http://100.100.100.200/', /metadata/],
      ['http://metadata.google.internal/computeMetadata/v1/', /denied/],
      ['http://metadata.example/', /metadata\.example resolves to 169\.254\.169\.254/],
      ['http://nowhere.example/', /does not resolve/],
      ['ftp://api.example/x', /scheme/],
      ['http://user:pw@api.example/x', /credentials/],
    ] as const) {
      assert.match((await g.check(url)) ?? 'allowed', why, url);
    }
    assert.equal(await g.check('https://api.example/cb'), undefined);
    assert.equal(await g.check('http://10.20.30.40:8080/cb'), undefined);
  });

  it('outbound.deny adds ranges and names; outbound.allow opens ranges but never the VNFM itself', async () => {
    const d = guard({ deny: ['10.0.0.0/8', '*.corp.example'] }, { 'db.corp.example': ['192.0.2.7'] });
    assert.match((await d.check('http://10.1.2.3/')) ?? '', /outbound\.deny/);
    assert.match((await d.check('http://db.corp.example/')) ?? '', /denied/);
    const own = { host: '127.0.0.1', port: 9890 };
    const a = guard({ allow: ['127.0.0.0/8', 'lab.example'] }, { 'lab.example': ['127.0.0.1'] }, own);
    assert.equal(await a.check('http://127.0.0.1:8080/cb'), undefined);
    assert.match((await a.check('http://127.0.0.1:9890/vnflcm/v2/vnf_instances')) ?? '', /VNFM's own API address/);
    assert.match((await a.check('http://lab.example:9890/')) ?? '', /VNFM's own API address/);
    assert.equal(await a.check('http://lab.example:8080/'), undefined);
    // listening on every interface: each local address at the API port is the VNFM itself
    const local = Object.values(networkInterfaces()).flatMap((l) => l ?? []).find((i) => i.family === 'IPv4' && !i.internal)?.address;
    if (local) {
      const any = guard({ allow: ['0.0.0.0/0'] }, {}, { host: '0.0.0.0', port: 9890 });
      assert.match((await any.check(`http://${local}:9890/`)) ?? '', /own API address/);
      assert.equal(await any.check(`http://${local}:9891/`), undefined);
    }
  });

  it('checks again right before each request: a DNS answer that turned into loopback is refused (rebinding)', async () => {
    const dns: Record<string, string[]> = { 'cb.example': ['192.0.2.10'] };
    const g = guard({}, dns);
    assert.equal(await g.check('http://cb.example/cb'), undefined, 'accepted at creation');
    dns['cb.example'] = ['127.0.0.1'];
    let sent = 0;
    const f = g.fetch((async () => {
      sent++;
      return new Response(null, { status: 204 });
    }) as typeof fetch);
    await assert.rejects(f('http://cb.example/cb', { method: 'POST' }), (e: unknown) => e instanceof OutboundDeniedError && /loopback/.test(e.reason) && (e.cause as { code?: string }).code === 'VNFM_OUTBOUND_DENIED');
    assert.equal(sent, 0, 'nothing was sent');
  });
});

describe('security settings', () => {
  it('outbound rules, the key file and the script user are read and checked', () => {
    const c = resolveConfig({ env: { VNFM_OUTBOUND_ALLOW: '127.0.0.0/8, lab.example', VNFM_OUTBOUND_DENY: '10.0.0.0/8,*.corp.example,fd00::/8', VNFM_SECRET_KEY_FILE: '/etc/vnfm/secret.key', VNFM_MGMT_SCRIPT_USER: 'self' } });
    assert.deepEqual(c.outbound, { allow: ['127.0.0.0/8', 'lab.example'], deny: ['10.0.0.0/8', '*.corp.example', 'fd00::/8'], vimAllow: [] });
    assert.equal(c.secretKeyFile, '/etc/vnfm/secret.key');
    assert.equal(c.mgmt.scriptUser, null);
    assert.equal(resolveConfig({}).mgmt.scriptUser, 'nobody');
    assert.throws(() => resolveConfig({ flags: { outbound: { allow: ['10.0.0.0/33'], deny: [] } } }), /outbound\.allow: '10\.0\.0\.0\/33' is not a CIDR/);
    assert.throws(() => resolveConfig({ flags: { outbound: { allow: [], deny: ['http://x'] } } }), /outbound\.deny/);
    assert.throws(() => resolveConfig({ flags: { mgmt: { scriptUser: 'x y' } } }), /mgmt\.scriptUser/);
    // PostgreSQL: a key file is enough (every process reads the same file)
    assert.equal(resolveConfig({ flags: { databaseUrl: 'postgres://db/vnfm', secretKeyFile: '/etc/vnfm/secret.key' } }).secretKey, undefined);
    assert.throws(() => resolveConfig({ flags: { databaseUrl: 'postgres://db/vnfm' } }), /secretKeyFile/);
  });
});

describe('outbound rules at the API (default rules: loopback and link-local denied)', () => {
  let v: TestVnfm;
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
    v = await testVnfm({ config: { outbound: { allow: [], deny: [] } } });
  });
  after(async () => {
    await v?.close();
    await rx?.close();
  });

  it('subscription callback URIs and token endpoints into loopback / link-local are refused with 422, nothing stored or sent', async () => {
    const count = async () => Number((await v.store.db.selectFrom('subscription').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
    const n0 = await count();
    for (const [body, why] of [
      [{ callbackUri: `${rx.url}/cb` }, /callbackUri is refused by the outbound rules: 127\.0\.0\.1 is a loopback address/],
      [{ callbackUri: 'http://169.254.169.254/latest/meta-data/' }, /link-local/],
      [{ callbackUri: 'http://[::1]:8080/cb' }, /loopback/],
      [
        { callbackUri: 'http://192.0.2.10/cb', authentication: { authType: ['OAUTH2_CLIENT_CREDENTIALS'], paramsOauth2ClientCredentials: { clientId: 'c', clientPassword: 'p', tokenEndpoint: `${rx.url}/token` } } },
        /tokenEndpoint is refused by the outbound rules: 127\.0\.0\.1 is a loopback address/,
      ],
    ] as const) {
      for (const [ver, headers] of [['v2', V2], ['v1', { version: '1.3.0' }]] as const) {
        const r = await v.app.inject({ method: 'POST', url: `/vnflcm/${ver}/subscriptions`, headers, payload: body });
        assert.equal(r.statusCode, 422, `${ver} ${JSON.stringify(body)}: ${r.body}`);
        assert.match(r.json().detail, why);
      }
    }
    assert.equal(await count(), n0, 'nothing stored');
    assert.equal(rx.requests.length, 0, 'no request left the VNFM');
  });

  it('a Server Notifier URL into link-local or loopback cannot be registered', async () => {
    for (const uri of ['http://169.254.169.254/', `${rx.url}/notifier`]) {
      const r = await v.app.inject({ method: 'POST', url: '/vnfm/v1/server-notifiers', payload: { name: `n-${uri.length}`, uri, vimId: 'vim-1' } });
      assert.equal(r.statusCode, 422, r.body);
      assert.match(r.json().detail, /refused by the outbound rules/);
    }
    assert.equal((await v.app.inject({ method: 'GET', url: '/vnfm/v1/server-notifiers' })).json().length, 0);
  });

  it('an NFVO grant endpoint into loopback stops the start', async () => {
    await assert.rejects(testVnfm({ config: { outbound: { allow: [], deny: [] }, grants: { mode: 'external', endpoint: 'http://127.0.0.1:9/nfvo' } } }), /grants\.endpoint is refused by the outbound rules: 127\.0\.0\.1 is a loopback address/);
  });
});

describe('Server Notifiers by registration: a VIM token only goes to a notifier an admin registered for that VIM', () => {
  let stub: NotifierStub;
  let rogue: NotifierStub;
  let h: AutohealVnfm;
  let vnfdId: string;
  let notifierId: string;

  before(async () => {
    stub = await startNotifierStub();
    rogue = await startNotifierStub();
    // servers carry no alarm of their own: the driver registers them
    const fake = new AlarmFakeDriver();
    fake.withAlarms = false;
    h = await startAutohealVnfm({ fake, plugin: { noMgmtDriver: false, serverNotifier: { backoffMs: 10 } }, config: { autoheal: { sweepMs: 100 } } });
    vnfdId = await onboardSample(h.vnfm);
    notifierId = await registerNotifier(h.vnfm, stub.url, STUB_VIM_ID, 'stub-notifier');
  });
  after(async () => {
    await h?.vnfm.close();
    await stub?.close();
    await rogue?.close();
  });

  async function instantiateRequest(additionalParams: Record<string, unknown>, vim: Record<string, unknown> = keystoneVim(stub.url)) {
    const c = await h.vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId } });
    assert.equal(c.statusCode, 201, c.body);
    const id = c.json().id as string;
    const r = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: vim }, vnfConfigurableProperties: { isAutohealEnabled: true }, additionalParams: { ServerNotifierFaultID: ['1234'], ...additionalParams } } });
    return { id, r };
  }

  it('the registration API: create (201, Location), list, show, duplicate 409, unknown 404', async () => {
    const list = (await h.vnfm.app.inject({ method: 'GET', url: '/vnfm/v1/server-notifiers' })).json();
    assert.deepEqual(
      list.map((n: { id: string; uri: string; vimId: string; sendToken: boolean }) => [n.id, n.uri, n.vimId, n.sendToken]),
      [[notifierId, stub.url, STUB_VIM_ID, true]],
    );
    assert.equal((await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/server-notifiers/${notifierId}` })).json().name, 'stub-notifier');
    const dup = await h.vnfm.app.inject({ method: 'POST', url: '/vnfm/v1/server-notifiers', payload: { name: 'other-name', uri: `${stub.url}/`, vimId: STUB_VIM_ID } });
    assert.equal(dup.statusCode, 409, dup.body);
    assert.equal((await h.vnfm.app.inject({ method: 'GET', url: '/vnfm/v1/server-notifiers/nope' })).statusCode, 404);
    assert.equal((await h.vnfm.app.inject({ method: 'DELETE', url: '/vnfm/v1/server-notifiers/nope' })).statusCode, 404);
    const bad = await h.vnfm.app.inject({ method: 'POST', url: '/vnfm/v1/server-notifiers', payload: { name: 'x', uri: stub.url, vimId: STUB_VIM_ID, extra: 1 } });
    assert.equal(bad.statusCode, 400, bad.body);
  });

  it('an instantiate naming an unregistered Server Notifier URL is refused with 422; no request, no token leaves', async () => {
    const before = stub.calls.length;
    const { r } = await instantiateRequest({ ServerNotifierUri: `${rogue.url}/?x=` });
    assert.equal(r.statusCode, 422, r.body);
    assert.match(r.json().detail, /not a registered Server Notifier/);
    const { r: r2 } = await instantiateRequest({ ServerNotifierId: 'no-such-notifier' });
    assert.equal(r2.statusCode, 422, r2.body);
    assert.equal(rogue.calls.length, 0, 'nothing reached the unregistered URL');
    assert.equal(stub.calls.length, before, 'not even a Keystone login');
  });

  it('a notifier registered for another VIM is refused with 422', async () => {
    const { r } = await instantiateRequest({ ServerNotifierUri: stub.url }, { ...keystoneVim(stub.url), vimId: 'another-vim' });
    assert.equal(r.statusCode, 422, r.body);
    assert.match(r.json().detail, /not registered for the VIM of this instance/);
  });

  it('Tacker-style requests keep working with a registered URL; a request may name the notifier by id', async () => {
    const byUri = await instantiateVnf(h.vnfm, vnfdId, { vim: keystoneVim(stub.url), additionalParams: { ServerNotifierUri: stub.url, ServerNotifierFaultID: ['1234'] } });
    assert.ok(byUri.vnfcs.every((v) => v.alarmId && stub.alarms.has(v.alarmId)), 'every server registered with the registered notifier');
    const byId = await instantiateVnf(h.vnfm, vnfdId, { vim: keystoneVim(stub.url), additionalParams: { ServerNotifierId: notifierId, ServerNotifierFaultID: ['1234'] } });
    assert.ok(byId.vnfcs.every((v) => v.alarmId && stub.alarms.has(v.alarmId)));
    const inst = (await h.vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${byId.id}`, headers: V2 })).json();
    assert.equal(inst.metadata.ServerNotifierId, notifierId);
    assert.ok(stub.calls.some((c) => c.method === 'POST' && c.path.includes('/alarms') && c.token === STUB_TOKEN), 'the VIM token went to the registered notifier');
  });

  it('instance metadata pointed at another URL afterwards: the hook refuses before anything is sent', async () => {
    const { id } = await instantiateVnf(h.vnfm, vnfdId, { vim: keystoneVim(stub.url), additionalParams: { ServerNotifierUri: stub.url, ServerNotifierFaultID: ['1234'] } });
    const patch = await h.vnfm.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${id}`, headers: { ...V2, 'content-type': 'application/merge-patch+json' }, payload: { metadata: { ServerNotifierUri: `${rogue.url}/steal` } } });
    assert.equal(patch.statusCode, 202, patch.body);
    const modOcc = String(patch.headers.location).split('/').pop() as string;
    await waitFor(async () => (await opOcc(h.vnfm, modOcc)).operationState === 'COMPLETED', 15_000, 'modify COMPLETED');
    const heal = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/heal`, headers: V2, payload: {} });
    assert.equal(heal.statusCode, 202, heal.body);
    const occ = String(heal.headers.location).split('/').pop() as string;
    await waitFor(async () => (await opOcc(h.vnfm, occ)).operationState === 'FAILED_TEMP', 15_000, 'heal FAILED_TEMP');
    const o = await opOcc(h.vnfm, occ);
    assert.match(JSON.stringify(o.error), /not a registered Server Notifier.*nothing was sent/);
    assert.equal(rogue.calls.length, 0, 'no request reached the URL the metadata names');
    const fail = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_lcm_op_occs/${occ}/fail`, headers: V2 });
    assert.equal(fail.statusCode, 200, fail.body);
  });

  it('sendToken false: the notifier gets no token', async () => {
    const plain = await startNotifierStub();
    try {
      const r = await h.vnfm.app.inject({ method: 'POST', url: '/vnfm/v1/server-notifiers', payload: { name: 'no-token', uri: plain.url, vimId: 'vim-plain', sendToken: false } });
      assert.equal(r.statusCode, 201, r.body);
      await instantiateVnf(h.vnfm, vnfdId, { vim: { ...keystoneVim(stub.url), vimId: 'vim-plain' }, additionalParams: { ServerNotifierUri: plain.url, ServerNotifierFaultID: ['1234'] } });
      const alarmCalls = plain.calls.filter((c) => c.path.includes('/alarms'));
      assert.ok(alarmCalls.length > 0, 'alarms registered');
      assert.ok(alarmCalls.every((c) => c.token === undefined), 'no X-Auth-Token sent');
    } finally {
      await plain.close();
    }
  });
});

describe('the simulated cloud registers its own Server Notifier', () => {
  it('for the simulated OpenStack VIM, replaced when its URL changes at the next start', async () => {
    const { testStore } = await import('../helpers/db.ts');
    const store = await testStore();
    const simPorts = { openstack: 0, kubernetes: 0, serverNotifier: 0 };
    // one key for both starts (a memory:// data directory keeps none)
    const secretKey = 'ab'.repeat(32);
    try {
      const urls: string[] = [];
      for (let run = 0; run < 2; run++) {
        const v = await testVnfm({ store, config: { sim: true, simPorts, secretKey, outbound: { allow: [], deny: [] } } });
        try {
          const sim = (v.ctx as { simCloud?: { serverNotifierUrl?: string } }).simCloud;
          assert.ok(sim?.serverNotifierUrl);
          urls.push(sim.serverNotifierUrl);
          const simVim = (await v.ctx.vims.list()).find((x) => x.name === 'sim-openstack');
          const regs = (await v.app.inject({ method: 'GET', url: '/vnfm/v1/server-notifiers' })).json() as { name: string; uri: string; vimId: string }[];
          assert.deepEqual(
            regs.map((n) => [n.name, n.uri, n.vimId]),
            [['sim-server-notifier', sim.serverNotifierUrl, simVim?.id]],
          );
          // trusted although it listens on loopback, which these rules deny
          assert.equal(await v.ctx.outbound.check(`${sim.serverNotifierUrl}/v2/x/servers/y/alarms`), undefined);
          assert.match((await v.ctx.outbound.check('http://127.0.0.1:1/')) ?? '', /loopback/);
        } finally {
          await v.close();
        }
      }
      assert.notEqual(urls[0], urls[1], 'another port at the second start');
    } finally {
      await store.close();
    }
  });
});
