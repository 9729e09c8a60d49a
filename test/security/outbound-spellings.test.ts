/**
 * One address, many spellings: the outbound rules judge every address in one canonical form
 * (src/net/outbound.ts `normalizeAddress`), so IPv4-mapped IPv6 (`[::ffff:127.0.0.1]`,
 * `[::ffff:7f00:1]`), IPv4 in decimal, octal, hex or short form, brackets and IPv6 zone ids do
 * not slip past "never the VNFM's own address" nor the loopback / link-local denials, whichever
 * guard applies them (callbacks and OAuth token URLs, the NFVO, Server Notifiers, VIM endpoints).
 * A refusal names the setting that opens it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OutboundGuard, normalizeAddress, vimOutboundGuard } from '../../src/net/outbound.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { V2 } from '../autoheal/fixture.ts';

const OWN = { host: '127.0.0.1', port: 9890 };

/** Spellings of 127.0.0.1. */
const LOOPBACK_SPELLINGS = [
  '127.0.0.1',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:ffff:7f00:1]',
  '[::FFFF:7F00:0001]',
  '2130706433',
  '0177.0.0.1',
  '0x7f.0.0.1',
  '0x7f000001',
  '017700000001',
  '127.1',
  '127.0.1',
  '0x7f.1',
];

/** Spellings of the metadata address 169.254.169.254. */
const METADATA_SPELLINGS = ['169.254.169.254', '[::ffff:169.254.169.254]', '[::ffff:a9fe:a9fe]', '2852039166', '0xa9fea9fe', '0251.0376.0251.0376', '169.254.43518'];

describe('normalizeAddress', () => {
  it('gives one spelling per address', () => {
    for (const [raw, want] of [
      ['::ffff:127.0.0.1', '127.0.0.1'],
      ['[::ffff:7f00:1]', '127.0.0.1'],
      ['0:0:0:0:0:ffff:7f00:1', '127.0.0.1'],
      ['::ffff:a9fe:a9fe', '169.254.169.254'],
      ['2130706433', '127.0.0.1'],
      ['0177.0.0.1', '127.0.0.1'],
      ['0x7f.0.0.1', '127.0.0.1'],
      ['127.1', '127.0.0.1'],
      ['fe80::1%eth0', 'fe80::1'],
      ['[fe80::1%25eth0]', 'fe80::1'],
      ['[::1]', '::1'],
      ['0:0:0:0:0:0:0:1', '::1'],
      ['FD00:EC2::254', 'fd00:ec2::254'],
      ['Keystone.Example', 'keystone.example'],
      ['10.20.30.40', '10.20.30.40'],
    ] as const) {
      assert.equal(normalizeAddress(raw), want, raw);
    }
  });
});

describe('every spelling is judged as the address it names', () => {
  const dnsOf: Record<string, string[]> = { 'mapped.test': ['::ffff:7f00:1'], 'mapped-meta.test': ['::ffff:a9fe:a9fe'] };
  const resolve = async (h: string): Promise<string[]> => {
    const a = dnsOf[h];
    if (!a) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return a;
  };
  const guards = {
    callbacks: new OutboundGuard({ allow: ['127.0.0.0/8'], deny: [] }, () => OWN, resolve),
    vims: vimOutboundGuard({ allow: [], deny: [], vimAllow: ['127.0.0.0/8'] }, () => OWN, resolve),
  };
  const strict = {
    callbacks: [new OutboundGuard({ allow: [], deny: [] }, () => OWN, resolve), 'outbound.allow'] as const,
    vims: [vimOutboundGuard({ allow: [], deny: [] }, () => OWN, resolve), 'outbound.vimAllow'] as const,
  };

  for (const [name, g] of Object.entries(guards)) {
    it(`${name}: loopback opened by the allow-list, but never the VNFM own API address, in any spelling`, async () => {
      for (const host of LOOPBACK_SPELLINGS) {
        assert.equal(await g.check(`http://${host}:8080/x`), undefined, `${host}:8080 is allowed loopback`);
        assert.match((await g.check(`http://${host}:${OWN.port}/x`)) ?? 'allowed', /127\.0\.0\.1:9890 is the VNFM's own API address/, `${host}:${OWN.port}`);
      }
      assert.match((await g.check(`http://mapped.test:${OWN.port}/`)) ?? 'allowed', /own API address/, 'a name answering ::ffff:7f00:1');
    });
  }

  for (const [name, [g, setting]] of Object.entries(strict)) {
    it(`${name}: loopback and metadata denied in any spelling, the reason naming ${setting}`, async () => {
      for (const host of LOOPBACK_SPELLINGS) {
        const why = (await g.check(`http://${host}:8080/x`)) ?? 'allowed';
        assert.match(why, /127\.0\.0\.1 is a loopback address/, host);
        assert.ok(why.includes(`open it with ${setting}`), `${host}: ${why}`);
      }
      for (const host of METADATA_SPELLINGS) assert.match((await g.check(`http://${host}/latest/meta-data/`)) ?? 'allowed', /169\.254\.169\.254 is a link-local address/, host);
      assert.match((await g.check('http://mapped-meta.test/')) ?? 'allowed', /resolves to 169\.254\.169\.254 is a link-local/);
      // zone ids are not part of an http URL: refused as invalid, never reached
      assert.match((await g.check('http://[fe80::1%25eth0]/')) ?? 'allowed', /not a valid URL|link-local/);
    });
  }

  it('a VNFM listening on an IPv4-mapped or host-name address still knows itself', async () => {
    for (const host of ['::ffff:127.0.0.1', 'localhost']) {
      const g = new OutboundGuard({ allow: ['0.0.0.0/0', '::/0'], deny: [] }, () => ({ host, port: 9890 }), resolve);
      assert.match((await g.check('http://127.0.0.1:9890/')) ?? 'allowed', /own API address/, host);
      assert.match((await g.check('http://[::ffff:7f00:1]:9890/')) ?? 'allowed', /own API address/, host);
    }
  });

  it('allow and deny entries in odd spellings mean the address they name', async () => {
    const g = new OutboundGuard({ allow: ['2130706433'], deny: ['::ffff:10.0.0.0/104'] }, () => undefined, resolve);
    assert.equal(await g.check('http://127.0.0.1/'), undefined);
    assert.match((await g.check('http://10.1.2.3/')) ?? 'allowed', /outbound\.deny/);
    assert.match((await g.check('http://127.0.0.2/')) ?? 'allowed', /loopback/);
  });
});

describe('at the API: the own address behind an IPv4-mapped spelling, and refusals naming their setting', () => {
  let v: TestVnfm;
  before(async () => {
    // loopback allowed for callbacks and VIMs (as in a lab): only the VNFM itself stays refused
    v = await testVnfm({ listen: true });
  });
  after(async () => {
    await v?.close();
  });

  it('subscriptions, token endpoints, Server Notifiers and VIMs at [::ffff:7f00:1]:<api port> are 422', async () => {
    const port = new URL(v.url).port;
    for (const host of ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '2130706433', '127.1']) {
      const own = `http://${host}:${port}`;
      const sub = await v.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: { callbackUri: `${own}/cb` } });
      assert.equal(sub.statusCode, 422, sub.body);
      assert.match(sub.json().detail, /callbackUri is refused by the outbound rules: 127\.0\.0\.1:\d+ is the VNFM's own API address/);
      const tok = await v.app.inject({
        method: 'POST',
        url: '/vnflcm/v2/subscriptions',
        headers: V2,
        payload: { callbackUri: 'http://192.0.2.10/cb', authentication: { authType: ['OAUTH2_CLIENT_CREDENTIALS'], paramsOauth2ClientCredentials: { clientId: 'c', clientPassword: 'p', tokenEndpoint: `${own}/token` } } },
      });
      assert.equal(tok.statusCode, 422, tok.body);
      assert.match(tok.json().detail, /tokenEndpoint is refused.*own API address/);
      const sn = await v.app.inject({ method: 'POST', url: '/vnfm/v1/server-notifiers', payload: { name: `n-${host}`, uri: `${own}/`, vimId: 'vim-1' } });
      assert.equal(sn.statusCode, 422, sn.body);
      const vim = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: `os-${host}`, type: 'openstack', auth_url: `${own}/v3`, auth_cred: { username: 'u', password: 'spelling-pw-1' }, vim_project: { name: 'p' } } } });
      assert.equal(vim.statusCode, 422, vim.body);
      assert.match(vim.json().detail, /own API address/);
    }
  });

  it('a refused callback names outbound.allow; a refused VIM names outbound.vimAllow', async () => {
    const strict = await testVnfm({ config: { outbound: { allow: [], deny: [], vimAllow: [] } } });
    try {
      const sub = await strict.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: V2, payload: { callbackUri: 'http://127.0.0.1:8080/cb' } });
      assert.equal(sub.statusCode, 422, sub.body);
      assert.equal(sub.json().detail, 'callbackUri is refused by the outbound rules: 127.0.0.1 is a loopback address (open it with outbound.allow)');
      const v1 = await strict.app.inject({ method: 'POST', url: '/vnflcm/v1/subscriptions', headers: { version: '1.3.0' }, payload: { callbackUri: 'http://169.254.169.254/cb' } });
      assert.equal(v1.statusCode, 422, v1.body);
      assert.match(v1.json().detail, /link-local address \(cloud metadata service\) \(open it with outbound\.allow\)/);
      const vim = await strict.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: 'lo', type: 'openstack', auth_url: 'http://127.0.0.1:5000/v3', auth_cred: { username: 'u', password: 'spelling-pw-2' }, vim_project: { name: 'p' } } } });
      assert.equal(vim.statusCode, 422, vim.body);
      assert.equal(vim.json().detail, 'auth_url is refused by the outbound rules of VIM endpoints: 127.0.0.1 is a loopback address (open it with outbound.vimAllow)');
    } finally {
      await strict.close();
    }
  });
});
