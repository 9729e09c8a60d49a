import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, type Session, settled, waitStack } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

/** Three servers spread by an anti-affinity group (one per compute host), each on its own port. */
const SPREAD = {
  heat_template_version: '2021-04-16',
  resources: {
    net: { type: 'OS::Neutron::Net' },
    subnet: { type: 'OS::Neutron::Subnet', properties: { network: { get_resource: 'net' }, cidr: '10.9.0.0/24' } },
    group: { type: 'OS::Nova::ServerGroup', properties: { policies: ['anti-affinity'] } },
    vdus: {
      type: 'OS::Heat::ResourceGroup',
      properties: {
        count: 3,
        resource_def: {
          type: 'OS::Nova::Server',
          properties: {
            name: 'vdu-%index%',
            flavor: 'm1.tiny',
            image: 'cirros',
            networks: [{ network: { get_resource: 'net' } }],
            scheduler_hints: { group: { get_resource: 'group' } },
            metadata: { role: 'worker' },
          },
        },
      },
    },
  },
};

describe('OpenStack sim: Nova and fault injection', () => {
  let sim: OpenStackSim;
  let s: Session;
  let stackUrl: string;
  const admin = (): Record<string, string> => ({ 'X-Sim-Admin-Secret': sim.adminSecret });
  const servers = async (): Promise<Doc[]> => (await call('GET', `${s.nova}/servers/detail`, s.token)).body.servers;

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    s = await login(sim);
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'spread', template: SPREAD });
    assert.equal(r.status, 201);
    stackUrl = `${s.heat}/stacks/spread/${r.body.stack.id}`;
    assert.equal((await waitStack(s, stackUrl, settled)).stack_status, 'CREATE_COMPLETE');
  });
  after(async () => {
    await sim.close();
  });

  it('serves servers, details and 404s like Nova', async () => {
    const list = await call('GET', `${s.nova}/servers`, s.token);
    assert.equal(list.status, 200);
    assert.equal(list.body.servers.length, 3);
    assert.deepEqual(Object.keys(list.body.servers[0]).sort(), ['id', 'links', 'name']);
    const detail = await servers();
    assert.deepEqual(detail.map((x) => x.name).sort(), ['vdu-0', 'vdu-1', 'vdu-2']);
    assert.deepEqual(detail.map((x) => x['OS-EXT-SRV-ATTR:host']).sort(), ['compute-1', 'compute-2', 'compute-3']);
    const one = detail[0];
    assert.equal(one.status, 'ACTIVE');
    assert.match(one.hostId, /^[0-9a-f]{56}$/);
    assert.deepEqual(one.metadata, { role: 'worker' });
    assert.equal(one.tenant_id, s.projectId);
    const net = Object.keys(one.addresses)[0] as string;
    assert.match(one.addresses[net][0].addr, /^10\.9\.0\.\d+$/);
    // /v2.1/{project_id}/... is accepted too.
    const byProject = await call('GET', `${sim.url}/v2.1/${s.projectId}/servers/${one.id}`, s.token);
    assert.equal(byProject.status, 200);
    assert.equal(byProject.body.server.id, one.id);
    const missing = await call('GET', `${s.nova}/servers/00000000-0000-0000-0000-000000000000`, s.token);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.itemNotFound.code, 404);
    const filtered = await call('GET', `${s.nova}/servers/detail?name=vdu-1`, s.token);
    assert.equal(filtered.body.servers.length, 1);
  });

  it('protects /_sim with the admin secret or an admin token', async () => {
    assert.equal((await call('GET', `${sim.url}/_sim/state`)).status, 401);
    assert.equal((await call('GET', `${sim.url}/_sim/state`, undefined, undefined, { 'X-Sim-Admin-Secret': 'wrong' })).status, 401);
    assert.equal((await call('GET', `${sim.url}/_sim/state`, s.token)).status, 200);
    const st = await call('GET', `${sim.url}/_sim/state`, undefined, undefined, admin());
    assert.equal(st.status, 200);
    assert.equal(st.body.hosts.length, 3);
    assert.equal(st.body.servers.length, 3);
    assert.ok(st.body.stacks.some((x: Doc) => x.name === 'spread' && x.status === 'CREATE_COMPLETE'));
  });

  it('fails and recovers one server', async () => {
    const target = (await servers())[1];
    const r = await call('POST', `${sim.url}/_sim/servers/${target.id}/fail`, undefined, {}, admin());
    assert.equal(r.status, 200);
    const after1 = await call('GET', `${s.nova}/servers/${target.id}`, s.token);
    assert.equal(after1.body.server.status, 'ERROR');
    assert.equal(after1.body.server.fault.code, 500);
    assert.equal((await servers()).filter((x) => x.status === 'ERROR').length, 1);
    await call('POST', `${sim.url}/_sim/servers/${target.id}/recover`, undefined, {}, admin());
    assert.equal((await call('GET', `${s.nova}/servers/${target.id}`, s.token)).body.server.status, 'ACTIVE');
    const stopped = await call('POST', `${sim.url}/_sim/servers/${target.id}/fail`, undefined, { status: 'SHUTOFF' }, admin());
    assert.equal(stopped.body.server.status, 'SHUTOFF');
    const start = await call('POST', `${s.nova}/servers/${target.id}/action`, s.token, { 'os-start': null });
    assert.equal(start.status, 202);
    assert.equal((await call('GET', `${s.nova}/servers/${target.id}`, s.token)).body.server.status, 'ACTIVE');
    assert.equal((await call('POST', `${sim.url}/_sim/servers/nope/fail`, undefined, {}, admin())).status, 404);
  });

  it('fails a host (all its servers ERROR), heals them elsewhere through Heat, recovers the host', async () => {
    const victim = (await servers()).find((x) => x['OS-EXT-SRV-ATTR:host'] === 'compute-2') as Doc;
    const r = await call('POST', `${sim.url}/_sim/hosts/compute-2/fail`, undefined, {}, admin());
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.servers.map((x: Doc) => x.id), [victim.id]);
    assert.equal((await call('GET', `${s.nova}/servers/${victim.id}`, s.token)).body.server.status, 'ERROR');
    // Heal the way a VNFM does: mark the server resource of the group member unhealthy, update.
    const rows: Doc[] = (await call('GET', `${stackUrl}/resources?nested_depth=1`, s.token)).body.resources;
    const row = rows.find((x) => x.physical_resource_id === victim.id) as Doc;
    const owner = row.links.find((l: Doc) => l.rel === 'stack').href;
    assert.equal((await call('PATCH', `${owner}/resources/${row.resource_name}`, s.token, { mark_unhealthy: true, resource_status_reason: 'host down' })).status, 200);
    assert.equal((await call('PATCH', stackUrl, s.token, {})).status, 202);
    assert.equal((await waitStack(s, stackUrl, settled)).stack_status, 'UPDATE_COMPLETE');
    const now = await servers();
    assert.equal(now.length, 3);
    assert.ok(!now.some((x) => x.id === victim.id));
    assert.ok(now.every((x) => x.status === 'ACTIVE' && x['OS-EXT-SRV-ATTR:host'] !== 'compute-2'));
    await call('POST', `${sim.url}/_sim/hosts/compute-2/recover`, undefined, {}, admin());
    const st = await call('GET', `${sim.url}/_sim/state`, undefined, undefined, admin());
    assert.ok(st.body.hosts.every((h: Doc) => h.state === 'up'));
  });

  it('breaks the API for N requests and adds latency', async () => {
    const b = await call('POST', `${sim.url}/_sim/api/break`, undefined, { count: 2, services: ['compute'] }, admin());
    assert.equal(b.status, 200);
    assert.equal((await call('GET', `${s.nova}/servers`, s.token)).status, 503);
    // Heat is not in the broken set.
    assert.equal((await call('GET', `${s.heat}/stacks`, s.token)).status, 200);
    assert.equal((await call('GET', `${s.nova}/servers`, s.token)).status, 503);
    assert.equal((await call('GET', `${s.nova}/servers`, s.token)).status, 200);
    await call('POST', `${sim.url}/_sim/api/latency`, undefined, { ms: 120 }, admin());
    const t0 = Date.now();
    assert.equal((await call('GET', `${s.heat}/stacks`, s.token)).status, 200);
    assert.ok(Date.now() - t0 >= 110);
    await call('PUT', `${sim.url}/_sim/config`, undefined, { latencyMs: 0, heatDelayMs: 20 }, admin());
    const cfg = await call('GET', `${sim.url}/_sim/state`, undefined, undefined, admin());
    assert.equal(cfg.body.config.latencyMs, 0);
    assert.equal(cfg.body.config.heatDelayMs, 20);
    // An update held by the sim is visible as IN_PROGRESS until the hold is released.
    const hold = await call('POST', `${sim.url}/_sim/heat/holds`, undefined, { operation: 'update' }, admin());
    assert.equal(hold.status, 201);
    assert.equal((await call('PATCH', stackUrl, s.token, {})).status, 202);
    assert.equal((await call('GET', stackUrl, s.token)).body.stack.stack_status, 'UPDATE_IN_PROGRESS');
    assert.equal((await call('DELETE', `${sim.url}/_sim/heat/holds/${hold.body.hold.id}`, undefined, undefined, admin())).status, 200);
    assert.equal((await waitStack(s, stackUrl, settled)).stack_status, 'UPDATE_COMPLETE');
  });

  it('posts compute fault events to registered webhooks', async () => {
    const got: Doc[] = [];
    const { createServer } = await import('node:http');
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        got.push({ secret: req.headers['x-sim-admin-secret'], body: JSON.parse(body) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const port = (receiver.address() as { port: number }).port;
      const reg = await call('POST', `${sim.url}/_sim/webhooks`, undefined, { url: `http://127.0.0.1:${port}/events`, secret: 'hook-secret' }, admin());
      assert.equal(reg.status, 201);
      const onHost = (await servers()).filter((x) => x['OS-EXT-SRV-ATTR:host'] === 'compute-1').map((x) => x.id);
      assert.ok(onHost.length >= 1);
      await call('POST', `${sim.url}/_sim/hosts/compute-1/fail`, undefined, { fault_id: '1234' }, admin());
      for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(got.length, 1);
      assert.equal(got[0].secret, 'hook-secret');
      assert.equal(got[0].body.event, 'host.fault');
      assert.equal(got[0].body.host, 'compute-1');
      assert.equal(got[0].body.fault_type, '10');
      assert.equal(got[0].body.fault_id, '1234');
      assert.deepEqual(got[0].body.servers.map((x: Doc) => x.id).sort(), onHost.sort());
      assert.ok(got[0].body.servers.every((x: Doc) => x.status === 'ERROR' && x.host === 'compute-1'));
      await call('POST', `${sim.url}/_sim/reset`, undefined, {}, admin());
      assert.ok((await servers()).every((x) => x.status === 'ACTIVE'));
      await call('DELETE', `${sim.url}/_sim/webhooks/${reg.body.webhook.id}`, undefined, undefined, admin());
    } finally {
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });
});
