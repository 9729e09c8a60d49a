/**
 * The real `openstack vnflcm` CLI (python3-tackerclient, API v1 and v2) with
 * `OS_AUTH_TYPE=password` against the real Keystone of the real-Heat stage, and the VNFM in
 * `keystone` mode: the CLI logs in to Keystone, finds the VNFM in Keystone's catalog (service
 * type `nfv-orchestration`, registered here in a region of its own and removed afterwards) and
 * sends its Keystone token; the VNFM validates it with Keystone (its service credentials). The
 * CLI runs create / instantiate / heal / op show; a request without a token or with a forged one
 * is a 401, and the instance belongs to the Keystone project of the caller.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../../helpers/fake-driver.ts';
import { ROOT, csarOf } from '../../helpers/packages.ts';
import { realHeatSettings, stage } from '../../helpers/stages.ts';
import { TackerCli } from '../../helpers/tacker-cli.ts';
import { until } from '../../helpers/wait.ts';

const heat = await stage('real-heat');
const cliStage = await stage('tacker-cli');
const skip = heat.skip || cliStage.skip;

type Json = Record<string, unknown>;

describe('openstack vnflcm with a real Keystone login against the VNFM in keystone mode', { skip }, () => {
  const ks = realHeatSettings();
  const base = ks.authUrl.replace(/\/+$/, '');
  const region = `VnfmAuthTest-${randomUUID().slice(0, 8)}`;
  let adminToken = '';
  let projectId = '';
  let serviceId = '';
  let vnfm: TestVnfm;
  let cli: TackerCli;
  let vnfdId = '';
  const fake = new FakeDriver();

  const keystone = async (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${base}${path}`, { method, headers: { 'x-auth-token': adminToken, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}), signal: AbortSignal.timeout(30_000) });
  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-auth-token': adminToken }) => {
    const r = await vnfm.app.inject({ method: method as 'GET', url: path, headers: { version: '2.0.0', ...headers }, ...(body !== undefined ? { payload: body as object } : {}) });
    return r;
  };
  const ok = async (args: string[], apiVersion: 1 | 2): Promise<string> => {
    const r = await cli.run(args, { api: apiVersion, timeoutMs: 120_000 });
    assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  const opsOf = async (id: string): Promise<Json[]> => (await api('GET', `/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${id})`)).json() as Json[];
  const waitDone = async (id: string, count: number): Promise<Json> => {
    const ops = await until(`${count} op occs of ${id} done`, async () => {
      const o = await opsOf(id);
      return o.length >= count && o.every((x) => x.operationState === 'COMPLETED') ? o : undefined;
    }, 120_000, 100);
    return ops.sort((a, b) => String(b.startTime).localeCompare(String(a.startTime)))[0] as Json;
  };

  before(async () => {
    const login = await fetch(`${base}/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: ks.username, domain: { name: ks.userDomain }, password: ks.password } } }, scope: { project: { name: ks.project, domain: { name: ks.projectDomain } } } } }),
    });
    assert.equal(login.status, 201);
    adminToken = login.headers.get('x-subject-token') as string;
    projectId = ((await login.json()) as { token: { project: { id: string } } }).token.project.id;

    vnfm = await testVnfm({
      listen: true,
      plugins: [(ctx) => ctx.engine?.drivers.register(fake)],
      config: {
        apiAuth: 'keystone',
        auth: { keystone: { authUrl: ks.authUrl, username: ks.username, password: ks.password, projectName: ks.project, userDomainName: ks.userDomain, projectDomainName: ks.projectDomain } },
        runner: { pollMs: 20 },
      },
    });
    // the VNFM in Keystone's catalog, in a region of its own (the stage's own `tacker` entry stays as it is)
    assert.ok([201, 409].includes((await keystone('POST', '/regions', { region: { id: region, description: 'VNFM auth test' } })).status));
    const svc = await keystone('POST', '/services', { service: { type: 'nfv-orchestration', name: `vnfm-auth-test-${region}`, enabled: true } });
    assert.equal(svc.status, 201);
    serviceId = ((await svc.json()) as { service: { id: string } }).service.id;
    for (const iface of ['public', 'internal', 'admin']) {
      const ep = await keystone('POST', '/endpoints', { endpoint: { service_id: serviceId, interface: iface, url: `${vnfm.url}/`, region_id: region, enabled: true } });
      assert.equal(ep.status, 201);
    }
    cli = new TackerCli({ ...ks, region });

    // a VNF package, onboarded with the admin's Keystone token
    const c = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
    assert.equal(c.statusCode, 201, c.body);
    const pkg = c.json().id as string;
    const up = await vnfm.app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${pkg}/package_content`, headers: { 'x-auth-token': adminToken, 'content-type': 'application/zip' }, payload: csarOf(join(ROOT, 'samples/vm-basic')) });
    assert.equal(up.statusCode, 202, up.body);
    await vnfm.ctx.packages.idle();
    vnfdId = (await api('GET', `/vnfpkgm/v1/vnf_packages/${pkg}`)).json().vnfdId as string;
  });
  after(async () => {
    cli?.close();
    if (serviceId) await keystone('DELETE', `/services/${serviceId}`).catch(() => undefined); // its endpoints go with it
    if (adminToken) await keystone('DELETE', `/regions/${region}`).catch(() => undefined);
    await vnfm?.close();
  });

  it('without a token, or with a forged one, the VNFM answers 401 with a Keystone challenge', async () => {
    for (const h of [{}, { 'x-auth-token': `${adminToken.slice(0, -4)}AAAA` }] as Record<string, string>[]) {
      const r = await api('GET', '/vnflcm/v1/vnf_instances', undefined, h);
      assert.equal(r.statusCode, 401, r.body);
      assert.match(String(r.headers['www-authenticate']), /Keystone uri=/);
    }
  });

  for (const v of [1, 2] as const) {
    it(`v${v}: create, instantiate, heal, op show through the CLI logged in to Keystone`, async () => {
      const created = await ok(['vnflcm', 'create', vnfdId, '--name', `ks-cli-v${v}`], v);
      const id = (/\| ID\s+\| ([0-9a-f-]{36})\s+\|/.exec(created) as RegExpExecArray)[1] as string;
      // the instance belongs to the caller's Keystone project
      const row = await vnfm.store.db.selectFrom('vnf_instance').select('project').where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.project, projectId);

      const vimConnectionInfo = v === 1 ? [{ id: 'vim1', ...FAKE_VIM }] : { vim1: FAKE_VIM };
      const file = cli.file(`inst-v${v}.json`, { flavourId: 'simple', vimConnectionInfo });
      assert.equal((await ok(['vnflcm', 'instantiate', id, file], v)).trim(), `Instantiate request for VNF Instance ${id} has been accepted.`);
      await waitDone(id, 1);
      assert.equal((await api('GET', `/vnflcm/v2/vnf_instances/${id}`)).json().instantiationState, 'INSTANTIATED');

      assert.equal((await ok(['vnflcm', 'heal', id], v)).trim(), `Heal request for VNF Instance ${id} has been accepted.`);
      const heal = await waitDone(id, 2);
      assert.equal(heal.operation, 'HEAL');

      const shown = await cli.json<Json>(['vnflcm', 'op', 'show', heal.id as string], { api: v, timeoutMs: 120_000 });
      assert.equal(shown.ID ?? shown.id, heal.id);
      assert.equal(shown['Operation State'] ?? shown.operationState, 'COMPLETED');
      assert.equal(shown.Operation ?? shown.operation, 'HEAL');
    });
  }
});
