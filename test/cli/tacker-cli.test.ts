/**
 * The real OpenStack Tacker CLI (python3-tackerclient) against our VNFM over HTTP: `openstack
 * vnflcm create / list / show / update / delete` with API v1 and v2, the ProblemDetails error path,
 * and `openstack vim register / list / show / set / delete` on the legacy `/v1.0/vims` API. Exit
 * codes and printed fields are checked, and the server state is checked behind the CLI's back.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { TackerCli } from '../helpers/tacker-cli.ts';

const { skip } = await stage('tacker-cli');

const OS_PASSWORD = 'cli-test-os-password-31';
const K8S_TOKEN = 'cli-test-k8s-bearer-token-77';
const V2 = { version: '2.0.0' };

let vnfm: TestVnfm;
let cli: TackerCli;
let vnfdId: string;

type Row = Record<string, unknown>;

async function serverInstance(id: string) {
  return vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${id}`, headers: V2 });
}

before(async () => {
  if (skip) return;
  vnfm = await testVnfm({ listen: true, config: { pageSize: 2 } });
  cli = new TackerCli(vnfm.url);
  vnfdId = (await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle())).vnfdId as string;
});
after(async () => {
  cli?.close();
  await vnfm?.close();
});

describe('openstack vnflcm (real python-tackerclient)', { skip }, () => {
  for (const api of [1, 2] as const) {
    it(`v${api}: create, list (paged), show, update, delete`, async () => {
      // create, table output
      const created = await cli.run(['vnflcm', 'create', vnfdId, '--name', `cli-v${api}`, '--description', 'made by the CLI'], { api });
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, new RegExp(`\\| VNF Instance Name\\s+\\| cli-v${api}\\s+\\|`));
      assert.match(created.stdout, /\| Instantiation State\s+\| NOT_INSTANTIATED\s+\|/);
      assert.match(created.stdout, new RegExp(`\\| VNFD ID\\s+\\| ${vnfdId}\\s+\\|`));
      const id = (/\| ID\s+\| ([0-9a-f-]{36})\s+\|/.exec(created.stdout) as RegExpExecArray)[1] as string;
      const onServer = await serverInstance(id);
      assert.equal(onServer.statusCode, 200);
      assert.equal(onServer.json().vnfInstanceDescription, 'made by the CLI');

      // two more through the API so that the list spans two pages (pageSize 2)
      const others: string[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId, vnfInstanceName: `api-${api}-${i}` } });
        others.push(r.json().id);
      }
      const [list, shown] = await Promise.all([cli.json<Row[]>(['vnflcm', 'list'], { api }), cli.json<Row>(['vnflcm', 'show', id], { api })]);
      const all = (await vnfm.app.inject({ method: 'GET', url: '/vnflcm/v2/vnf_instances?all_fields', headers: { version: '2.0.0' } })).json() as Row[];
      assert.ok(all.length <= 2, 'the server pages (pageSize 2)');
      const total = Number((await vnfm.store.db.selectFrom('vnf_instance').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      assert.equal(list.length, total, 'the CLI followed the Link header through every page');
      const mine = list.find((r) => r.ID === id) as Row;
      assert.deepEqual(mine, {
        ID: id,
        'VNF Instance Name': `cli-v${api}`,
        'Instantiation State': 'NOT_INSTANTIATED',
        'VNF Provider': 'Example Co',
        'VNF Software Version': '1.0',
        'VNF Product Name': 'Sample VNF',
        'VNFD ID': vnfdId,
      });
      for (const o of others) assert.ok(list.some((r) => r.ID === o));
      assert.equal(shown.ID, id);
      assert.equal(shown['VNF Instance Name'], `cli-v${api}`);
      assert.equal(shown['VNF Instance Description'], 'made by the CLI');
      assert.equal(shown['Instantiation State'], 'NOT_INSTANTIATED');
      assert.equal(shown['VNFD Version'], '1.0');
      assert.ok((shown.Links as Record<string, { href: string }>).self?.href.endsWith(`/vnflcm/v${api}/vnf_instances/${id}`));

      // update: PATCH with the file, 202 with an empty body -> the CLI's success line
      const file = cli.file(`update-v${api}.json`, { vnfInstanceName: `renamed-v${api}`, metadata: { by: 'cli' } });
      const upd = await cli.run(['vnflcm', 'update', id, '--I', file], { api });
      assert.equal(upd.code, 0, upd.stderr);
      assert.equal(upd.stdout, `Update vnf:${id} \n`);
      const after = (await serverInstance(id)).json();
      assert.equal(after.vnfInstanceName, `renamed-v${api}`);
      assert.deepEqual(after.metadata, { by: 'cli' });
      if (api === 1) {
        const occs = await cli.json<Row[]>(['vnflcm', 'op', 'list'], { api });
        assert.ok(occs.some((o) => o['VNF Instance ID'] === id && o.Operation === 'MODIFY_INFO' && o['Operation State'] === 'COMPLETED'), JSON.stringify(occs));
      }

      if (api === 1) {
        // several ids in one call
        const del = await cli.run(['vnflcm', 'delete', id, ...others], { api });
        assert.equal(del.code, 0, del.stderr);
        assert.match(del.stdout, /All specified vnf instances are deleted successfully/);
      } else {
        // one id: its own line; the others through the API
        const del = await cli.run(['vnflcm', 'delete', id], { api });
        assert.equal(del.code, 0, del.stderr);
        assert.equal(del.stdout.trim(), `Vnf instance '${id}' is deleted successfully`);
        for (const o of others) assert.equal((await vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/v2/vnf_instances/${o}`, headers: V2 })).statusCode, 204);
      }
      assert.equal((await serverInstance(id)).statusCode, 404);

      // error paths print our ProblemDetails detail and exit 1
      const [missing, badVnfd] = await Promise.all([cli.run(['vnflcm', 'show', 'missing'], { api }), cli.run(['vnflcm', 'create', '00000000-0000-4000-8000-000000000000'], { api })]);
      assert.equal(missing.code, 1);
      assert.equal(missing.stderr.trim(), 'VnfInstance missing not found.');
      assert.equal(missing.stdout, '');
      assert.equal(badVnfd.code, 1);
      assert.equal(badVnfd.stderr.trim(), 'VNF package with vnfdId 00000000-0000-4000-8000-000000000000 is not onboarded.');
    });
  }
});

describe('openstack vim (real python-tackerclient)', { skip }, () => {
  it('register (openstack + kubernetes), list, show by name and id, set, delete; secrets never shown', async () => {
    const osCfg = cli.file(
      'openstack.yaml',
      `auth_url: 'http://127.0.0.1:5000/v3'\nusername: 'nfv_user'\npassword: '${OS_PASSWORD}'\nproject_name: 'nfv'\nproject_domain_name: 'Default'\nuser_domain_name: 'Default'\ncert_verify: 'False'\n`,
    );
    const k8sCfg = cli.file('k8s.yaml', `auth_url: 'https://127.0.0.1:6443'\nbearer_token: '${K8S_TOKEN}'\nproject_name: 'default'\ntype: 'kubernetes'\n`);
    const outputs: string[] = [];

    const reg = await cli.run(['vim', 'register', '--config-file', osCfg, '--is-default', '--description', 'lab cloud', 'cli-os']);
    outputs.push(reg.stdout, reg.stderr);
    assert.equal(reg.code, 0, reg.stderr);
    assert.match(reg.stdout, /\| name\s+\| cli-os\s+\|/);
    assert.match(reg.stdout, /\| is_default\s+\| True\s+\|/);
    assert.match(reg.stdout, /"password": "\*\*\*"/);
    assert.match(reg.stdout, /\| project_id\s+\| nfv\s+\|/);
    const osId = (/\| id\s+\| ([0-9a-f-]{36})\s+\|/.exec(reg.stdout) as RegExpExecArray)[1] as string;
    assert.equal((await vnfm.ctx.vims.complete({ vimId: osId })).accessInfo.password, OS_PASSWORD, 'the password reached the registry');

    const [k8s, dup] = await Promise.all([
      cli.json<Row>(['vim', 'register', '--config-file', k8sCfg, '--is-default', 'cli-k8s']),
      cli.run(['vim', 'register', '--config-file', osCfg, 'cli-os']),
    ]);
    outputs.push(JSON.stringify(k8s), dup.stdout, dup.stderr);
    assert.equal(k8s.type, 'kubernetes');
    assert.equal(k8s.is_default, true);
    assert.match(String(k8s.auth_cred), /"bearer_token": "\*\*\*"/);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /a VIM named 'cli-os' already exists/);

    const [list, byName, byId] = await Promise.all([cli.json<Row[]>(['vim', 'list']), cli.json<Row>(['vim', 'show', 'cli-k8s']), cli.json<Row>(['vim', 'show', osId])]);
    outputs.push(JSON.stringify([list, byName, byId]));
    assert.deepEqual(
      list.map((v) => [v.Name, v.Type, v['Is Default'], v.Status]).sort(),
      [
        ['cli-k8s', 'kubernetes', true, 'REACHABLE'],
        ['cli-os', 'openstack', true, 'REACHABLE'],
      ],
    );
    assert.equal(byName.id, k8s.id);
    assert.equal(byId.name, 'cli-os');
    assert.equal(byId.description, 'lab cloud');

    const set = await cli.json<Row>(['vim', 'set', '--description', 'renamed cloud', '--is-default', 'False', 'cli-os']);
    outputs.push(JSON.stringify(set));
    assert.equal(set.description, 'renamed cloud');
    assert.equal(set.is_default, false);
    assert.equal((await vnfm.ctx.vims.getDefault('openstack'))?.id, undefined);

    const del = await cli.run(['vim', 'delete', 'cli-os', k8s.id as string]);
    assert.equal(del.code, 0, del.stderr);
    assert.match(del.stdout, /All specified vim\(s\) deleted successfully/);
    assert.deepEqual(await vnfm.ctx.vims.list(), []);

    for (const o of outputs) {
      assert.ok(!o.includes(OS_PASSWORD), 'the OpenStack password was printed');
      assert.ok(!o.includes(K8S_TOKEN), 'the bearer token was printed');
    }
    const logs = vnfm.logs.join('');
    assert.ok(!logs.includes(OS_PASSWORD) && !logs.includes(K8S_TOKEN), 'a secret reached the logs');
  });
});
