/**
 * VIM endpoints pass the outbound rules (src/net/outbound.ts, `outbound.vimAllow`):
 * - registration (`POST /v1.0/vims`) and update of a VIM whose auth_url is loopback, link-local
 *   (169.254.169.254) or the VNFM's own API address are 422 naming the rule and the setting that
 *   opens it; nothing is stored; `outbound.vimAllow` opens loopback but never the VNFM itself;
 * - an instantiate with an inline `interfaceInfo.endpoint` (or `heatEndpoint`) into a denied range
 *   is 422 and nothing is sent to it;
 * - at connect time: a VIM row pointing at a denied address (stored before the rules, or a name
 *   whose DNS answer changed) is refused before any request: the op fails, the target got nothing;
 *   the Keystone catalog's URLs are checked too; the Kubernetes client resolves the API server's
 *   name through the rules and connects to the checked address;
 * - `PUT /v1.0/vims/{id}` that changes the endpoint or its trust settings while keeping the stored
 *   password/token is 422 ("a changed endpoint needs its credentials again");
 * - what a VIM answers is never echoed raw: a non-JSON (or foreign-shaped) error body gives only
 *   the status; a JSON error's message is cut to a bounded length.
 */
import assert from 'node:assert/strict';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { KubeClient } from '../../src/infra/kubernetes/kube-client.ts';
import { KeystoneAuth } from '../../src/infra/openstack/keystone-auth.ts';
import { MAX_VIM_MESSAGE, OpenStackError, parseOpenStackErrorBody } from '../../src/infra/openstack/openstack-error.ts';
import { vimOutboundGuard } from '../../src/net/outbound.ts';
import { startKubernetesSim } from '../../src/sim/kubernetes/index.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { V2, onboardSample, opOcc, waitFor } from '../autoheal/fixture.ts';

interface Stub {
  url: string;
  hits: string[];
  close(): Promise<void>;
}

/** An HTTP server on loopback recording every request; `answer` writes the response. */
async function stub(answer: (req: IncomingMessage, res: ServerResponse) => void = (_q, s) => s.writeHead(404).end()): Promise<Stub> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, hits, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function openstackVim(name: string, authUrl: string, extra: Record<string, unknown> = {}) {
  return { vim: { name, type: 'openstack', auth_url: authUrl, auth_cred: { username: 'nfv_user', password: 'vim-outbound-pw-1' }, vim_project: { name: 'nfv' }, ...extra } };
}

function osConnection(endpoint: string, ii: Record<string, unknown> = {}) {
  return { vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3', interfaceInfo: { endpoint, ...ii }, accessInfo: { username: 'u', password: 'inline-pw-1', project: 'p', userDomain: 'Default', projectDomain: 'Default' } };
}

const SETTING = /outbound\.vimAllow/;

describe('VIM endpoints at registration (default rules: no outbound.vimAllow)', () => {
  let v: TestVnfm;
  let target: Stub;
  before(async () => {
    target = await stub();
    v = await testVnfm({ listen: true, config: { outbound: { allow: ['127.0.0.0/8'], deny: [], vimAllow: [] } } });
  });
  after(async () => {
    await v?.close();
    await target?.close();
  });

  it('loopback, link-local / metadata and the VNFM own address are 422 naming the rule and outbound.vimAllow; nothing stored', async () => {
    const port = new URL(v.url).port;
    for (const [url, why] of [
      [`${target.url}/v3`, /127\.0\.0\.1 is a loopback address/],
      ['http://169.254.169.254/latest/meta-data/', /link-local/],
      ['http://[::ffff:169.254.169.254]/v3', /link-local/],
      [`http://127.0.0.1:${port}/v3`, /VNFM's own API address/],
      [`http://[::ffff:7f00:1]:${port}/v3`, /VNFM's own API address/],
      ['http://localhost:35357/v3', /loopback/],
      ['http://0177.0.0.1:5000/v3', /loopback/],
    ] as const) {
      for (const body of [openstackVim(`os-${url.length}`, url), { vim: { name: `k-${url.length}`, type: 'kubernetes', auth_url: url, auth_cred: { bearer_token: 'tok-123456' } } }]) {
        const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: body });
        assert.equal(r.statusCode, 422, `${url}: ${r.body}`);
        assert.match(String(r.headers['content-type']), /problem\+json/);
        const detail = r.json().detail as string;
        assert.match(detail, /auth_url is refused by the outbound rules of VIM endpoints/, url);
        assert.match(detail, why, url);
        if (!/own API/.test(detail)) assert.match(detail, SETTING, url);
      }
    }
    assert.deepEqual((await v.app.inject({ method: 'GET', url: '/v1.0/vims' })).json().vims, [], 'nothing stored');
    assert.deepEqual(target.hits, [], 'nothing sent');
  });

  it('outbound.allow (callbacks) does not open VIM endpoints; a private-range VIM is accepted', async () => {
    const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: openstackVim('private', 'http://10.20.30.40:5000/v3') });
    assert.equal(r.statusCode, 201, r.body);
    // an update moving it to loopback (with the credentials) is refused as well
    const u = await v.app.inject({ method: 'PUT', url: `/v1.0/vims/${r.json().vim.id}`, payload: { vim: { auth_url: `${target.url}/v3`, auth_cred: { password: 'vim-outbound-pw-2' } } } });
    assert.equal(u.statusCode, 422, u.body);
    assert.match(u.json().detail, /loopback address \(open it with outbound\.vimAllow\)/);
  });

  it('an instantiate with an inline interfaceInfo endpoint into loopback or link-local is 422; nothing is sent there', async () => {
    const vnfdId = await onboardSample(v);
    const c = await v.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId } });
    assert.equal(c.statusCode, 201, c.body);
    const id = c.json().id as string;
    for (const conn of [osConnection(`${target.url}/v3`), osConnection('http://169.254.169.254/v3'), osConnection('http://10.1.2.3:5000/v3', { heatEndpoint: `${target.url}/v1/p` })]) {
      const r = await v.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: conn } } });
      assert.equal(r.statusCode, 422, r.body);
      assert.match(r.json().detail, /vimConnectionInfo interfaceInfo\.(endpoint|heatEndpoint) is refused by the outbound rules of VIM endpoints/);
      assert.match(r.json().detail, SETTING);
      // v1: the same rule
      const r1 = await v.app.inject({ method: 'POST', url: `/vnflcm/v1/vnf_instances/${id}/instantiate`, payload: { flavourId: 'simple', vimConnectionInfo: [{ id: 'vim1', ...conn }] } });
      assert.equal(r1.statusCode, 422, r1.body);
    }
    // a modification of the instance's VIM connection too
    const m = await v.app.inject({ method: 'PATCH', url: `/vnflcm/v2/vnf_instances/${id}`, headers: { ...V2, 'content-type': 'application/merge-patch+json' }, payload: { vimConnectionInfo: { vim1: osConnection(`${target.url}/v3`) } } });
    assert.equal(m.statusCode, 422, m.body);
    assert.deepEqual(target.hits, [], 'nothing sent');
  });
});

describe('VIM endpoints at connect time, credentials on endpoint change, VIM errors', () => {
  let v: TestVnfm;
  let vnfdId: string;
  before(async () => {
    v = await testVnfm({ listen: true, config: { outbound: { allow: [], deny: [], vimAllow: ['127.0.0.0/8'] } } });
    vnfdId = await onboardSample(v);
  });
  after(async () => {
    await v?.close();
  });

  async function instantiateWith(vimId: string): Promise<Record<string, unknown>> {
    const c = await v.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId } });
    assert.equal(c.statusCode, 201, c.body);
    const r = await v.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${c.json().id}/instantiate`, headers: V2, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: { vimId, vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } } } });
    assert.equal(r.statusCode, 202, r.body);
    const occ = String(r.headers.location).split('/').pop() as string;
    await waitFor(async () => (await opOcc(v, occ)).operationState === 'FAILED_TEMP', 20_000, `instantiate ${occ} FAILED_TEMP`);
    return opOcc(v, occ);
  }

  it('vimAllow opens loopback VIMs, never the VNFM own API address', async () => {
    const own = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: openstackVim('own', `${v.url}/v3`) });
    assert.equal(own.statusCode, 422, own.body);
    assert.match(own.json().detail, /own API address \(never allowed\)/);
  });

  it('a stored VIM whose endpoint is refused now: the op fails before any request, the target gets nothing', async () => {
    const target = await stub();
    try {
      const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: openstackVim('moved', 'http://192.0.2.10:5000/v3') });
      assert.equal(r.statusCode, 201, r.body);
      const id = r.json().vim.id as string;
      // as a row stored before the rules (or by a name whose DNS answer changed): the metadata address
      const row = await v.store.db.selectFrom('vim').select('config').where('id', '=', id).executeTakeFirstOrThrow();
      await v.store.db
        .updateTable('vim')
        .set({ config: JSON.stringify({ ...(row.config as object), authUrl: 'http://169.254.169.254/v3' }) as never })
        .where('id', '=', id)
        .execute();
      const occ = await instantiateWith(id);
      const detail = String((occ.error as { detail?: string }).detail);
      assert.match(detail, /refused by the outbound rules of VIM endpoints, nothing was sent: 169\.254\.169\.254 is a link-local address/);
      assert.match(detail, SETTING);
    } finally {
      await target.close();
    }
  });

  it('PUT that changes auth_url, ssl_ca_cert or cert_verify without the credentials is 422; with them it is 200', async () => {
    const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: openstackVim('rotating', 'http://192.0.2.20:5000/v3') });
    assert.equal(r.statusCode, 201, r.body);
    const id = r.json().vim.id as string;
    for (const change of [{ auth_url: 'http://192.0.2.21:5000/v3' }, { auth_cred: { ssl_ca_cert: '-----BEGIN CERTIFICATE-----\nMIIx\n-----END CERTIFICATE-----' } }, { auth_cred: { cert_verify: false } }, { auth_url: 'http://192.0.2.21:5000/v3', auth_cred: { username: 'other' } }]) {
      const u = await v.app.inject({ method: 'PUT', url: `/v1.0/vims/${id}`, payload: { vim: change } });
      assert.equal(u.statusCode, 422, `${JSON.stringify(change)}: ${u.body}`);
      assert.match(u.json().detail, /a changed endpoint needs its credentials again/);
    }
    assert.equal((await v.app.inject({ method: 'GET', url: `/v1.0/vims/${id}` })).json().vim.auth_url, 'http://192.0.2.20:5000/v3', 'unchanged');
    assert.equal((await v.app.inject({ method: 'PUT', url: `/v1.0/vims/${id}`, payload: { vim: { description: 'renamed', auth_url: 'http://192.0.2.20:5000/v3' } } })).statusCode, 200, 'same endpoint: no credentials needed');
    const ok = await v.app.inject({ method: 'PUT', url: `/v1.0/vims/${id}`, payload: { vim: { auth_url: 'http://192.0.2.21:5000/v3', auth_cred: { password: 'vim-outbound-pw-3' } } } });
    assert.equal(ok.statusCode, 200, ok.body);
    // Kubernetes: the bearer token
    const k = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: 'k8s-moving', type: 'kubernetes', auth_url: 'https://192.0.2.30:6443', auth_cred: { bearer_token: 'tok-1234567' } } } });
    assert.equal(k.statusCode, 201, k.body);
    const ku = await v.app.inject({ method: 'PUT', url: `/v1.0/vims/${k.json().vim.id}`, payload: { vim: { auth_url: 'https://192.0.2.31:6443' } } });
    assert.equal(ku.statusCode, 422, ku.body);
    assert.match(ku.json().detail, /credentials again.*bearer_token/);
    const kok = await v.app.inject({ method: 'PUT', url: `/v1.0/vims/${k.json().vim.id}`, payload: { vim: { auth_url: 'https://192.0.2.31:6443', auth_cred: { bearer_token: 'tok-7654321' } } } });
    assert.equal(kok.statusCode, 200, kok.body);
  });

  it("a VIM's error answer is not echoed: a foreign body gives the status only, a JSON error's message is bounded", async () => {
    const MARKER = 'INTERNAL-ONLY-root:x:0:0';
    const long = `denied ${'x'.repeat(5000)} ${MARKER}`;
    const bodies: [string, string][] = [
      ['text/html', `<html><body>${MARKER}</body></html>`],
      ['application/json', JSON.stringify({ status: 'ok', data: MARKER })],
      ['application/json', JSON.stringify({ error: { code: 401, title: 'Unauthorized', message: long } })],
    ];
    for (const [type, body] of bodies) {
      const target = await stub((_q, s) => s.writeHead(401, { 'content-type': type }).end(body));
      try {
        const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: openstackVim(`echo-${target.url.split(':')[2]}`, `${target.url}/v3`) });
        assert.equal(r.statusCode, 201, r.body);
        const occ = await instantiateWith(r.json().vim.id as string);
        const detail = String((occ.error as { detail?: string }).detail);
        assert.match(detail, /answered 401/, detail);
        assert.ok(!detail.includes(MARKER), `no foreign body in the op's error: ${detail}`);
        assert.ok(detail.length < 600, `bounded: ${detail.length}`);
        assert.ok(target.hits.length > 0, 'the VIM was called');
      } finally {
        await target.close();
      }
    }
  });
});

describe('VIM error bodies and the Keystone catalog', () => {
  it('parseOpenStackErrorBody reads only OpenStack-shaped JSON errors, bounded', () => {
    assert.deepEqual(parseOpenStackErrorBody('<html>secret</html>'), { message: undefined, type: undefined, title: undefined });
    assert.deepEqual(parseOpenStackErrorBody('plain secret text'), { message: undefined, type: undefined, title: undefined });
    assert.equal(parseOpenStackErrorBody(JSON.stringify({ message: 'secret', anything: 1 })).message, undefined);
    assert.equal(parseOpenStackErrorBody(JSON.stringify({ error: { code: 404, title: 'Not Found', message: 'Could not find project.' } })).message, 'Could not find project.');
    assert.equal(parseOpenStackErrorBody(JSON.stringify({ itemNotFound: { code: 404, message: 'Instance x could not be found.' } })).message, 'Instance x could not be found.');
    const long = parseOpenStackErrorBody(JSON.stringify({ error: { type: 'StackValidationFailed', message: `a\nb\u0000${'y'.repeat(1000)}` } }));
    assert.equal(long.type, 'StackValidationFailed');
    assert.ok((long.message ?? '').length <= MAX_VIM_MESSAGE + 3 && !/[\n\u0000]/.test(long.message ?? ''), long.message);
  });

  it('URLs from the Keystone catalog are checked too: a catalog pointing Heat at the metadata address is refused, nothing sent there', async () => {
    const sent: string[] = [];
    const guard = vimOutboundGuard({ allow: [], deny: [], vimAllow: [] }, () => undefined, async (h) => {
      if (h === 'keystone.test') return ['192.0.2.10'];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    });
    const fake = (async (input: string | URL | Request) => {
      const url = String(input instanceof Request ? input.url : input);
      sent.push(url);
      if (url.endsWith('/auth/tokens')) {
        return new Response(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3600_000).toISOString(), user: { id: 'u1', name: 'u' }, project: { id: 'p1' }, catalog: [{ type: 'orchestration', endpoints: [{ interface: 'public', region: 'RegionOne', url: 'http://169.254.169.254/v1/p1' }] }] } }), { status: 201, headers: { 'x-subject-token': 'tok-abcdef', 'content-type': 'application/json' } });
      }
      return new Response('{}', { status: 200 });
    }) as typeof fetch;
    const auth = new KeystoneAuth({ authUrl: 'http://keystone.test:5000/v3', username: 'u', password: 'catalog-pw-1', projectName: 'p', userDomainName: 'Default', projectDomainName: 'Default', http: { fetch: guard.fetch(fake), attempts: 1 } });
    await assert.rejects(auth.authedFetch({ service: 'orchestration', path: '/stacks' }), (e: unknown) => e instanceof OpenStackError && /169\.254\.169\.254 is a link-local address/.test(e.message) && /outbound\.vimAllow/.test(e.message));
    assert.ok(sent.some((u) => u.startsWith('http://keystone.test:5000/')), 'Keystone was called');
    assert.ok(!sent.some((u) => u.includes('169.254.169.254')), 'nothing sent to the catalog URL');
  });

  it('Kubernetes: the API server name is resolved through the rules and the connection goes to the checked address; a denied answer is refused', async () => {
    const sim = await startKubernetesSim({ port: 0, token: 'k8s-outbound-token' });
    try {
      const port = new URL(sim.url).port;
      const scheme = new URL(sim.url).protocol;
      let answer = ['127.0.0.1'];
      const queries: string[] = [];
      const guard = vimOutboundGuard({ allow: [], deny: [], vimAllow: ['127.0.0.0/8'] }, () => undefined, async (h) => {
        queries.push(h);
        if (h === 'k8s-api.test') return answer;
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      });
      // `k8s-api.test` is not in any DNS: only the rules' resolution can reach the simulator
      const conn = { vimType: 'ETSINFV.KUBERNETES.V_1', interfaceInfo: { endpoint: `${scheme}//k8s-api.test:${port}`, skipCertificateVerification: true }, accessInfo: { bearer_token: 'k8s-outbound-token' } };
      const client = KubeClient.fromVim(conn, { outbound: guard, attempts: 1 });
      assert.equal(await client.get({ apiVersion: 'v1', kind: 'ConfigMap', name: 'none', namespace: 'default' }), undefined);
      assert.ok(queries.length > 0, 'resolved through the rules');
      answer = ['169.254.169.254'];
      await assert.rejects(client.get({ apiVersion: 'v1', kind: 'ConfigMap', name: 'none', namespace: 'default' }), /refused by the outbound rules of VIM endpoints.*169\.254\.169\.254 is a link-local address/);
      // a literal address is judged before the call
      const lit = KubeClient.fromVim({ ...conn, interfaceInfo: { ...conn.interfaceInfo, endpoint: `${scheme}//[::ffff:169.254.169.254]:${port}` } }, { outbound: guard, attempts: 1 });
      await assert.rejects(lit.get({ apiVersion: 'v1', kind: 'ConfigMap', name: 'none', namespace: 'default' }), /refused by the outbound rules of VIM endpoints/);
    } finally {
      await sim.close();
    }
  });
});

describe('VIM allow-list setting', () => {
  it('outbound.vimAllow is read from VNFM_OUTBOUND_VIM_ALLOW and checked', () => {
    assert.deepEqual(resolveConfig({ env: { VNFM_OUTBOUND_VIM_ALLOW: '127.0.0.1, 10.0.0.0/8,keystone.lab' } }).outbound.vimAllow, ['127.0.0.1', '10.0.0.0/8', 'keystone.lab']);
    assert.deepEqual(resolveConfig({}).outbound.vimAllow, []);
    assert.throws(() => resolveConfig({ flags: { outbound: { vimAllow: ['10.0.0.0/40'] } } }), /outbound\.vimAllow/);
  });
});
