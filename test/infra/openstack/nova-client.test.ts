import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { KeystoneAuth } from '../../../src/infra/openstack/keystone-auth.ts';
import { NovaClient } from '../../../src/infra/openstack/nova-client.ts';
import { OpenStackError } from '../../../src/infra/openstack/openstack-error.ts';
import { type FakeOpenStack, PASSWORD, startFakeOpenStack } from './fake-openstack-server.ts';

const server = (id: string, host: string) => ({
  id,
  name: `vdu-${id}`,
  status: 'ACTIVE',
  hostId: 'h4sh',
  tenant_id: 'p',
  'OS-EXT-SRV-ATTR:host': host,
  'OS-EXT-SRV-ATTR:hypervisor_hostname': `${host}.example`,
  'OS-EXT-AZ:availability_zone': 'nova',
  'OS-EXT-STS:task_state': null,
  'OS-EXT-STS:vm_state': 'active',
  'OS-EXT-STS:power_state': 1,
  addresses: { net0: [{ addr: '10.0.0.5', version: 4 }] },
  created: '2024-01-01T00:00:00Z',
  updated: '2024-01-01T00:01:00Z',
});

describe('NovaClient (against a local fake Nova)', () => {
  let fake: FakeOpenStack;
  let nova: NovaClient;
  before(async () => {
    fake = await startFakeOpenStack();
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    const auth = new KeystoneAuth({ authUrl: fake.authUrl, username: 'admin', password: PASSWORD, projectName: 'admin', http: { baseDelayMs: 1, maxDelayMs: 5 } });
    nova = new NovaClient({ auth, microversion: '2.47' });
    fake.handler = (req, res) => {
      const [path, query = ''] = req.path.split('?');
      if (path === '/nova/v2.1/servers/s1') return fake.json(res, 200, { server: server('s1', 'compute-1') });
      if (path?.startsWith('/nova/v2.1/servers/') && !path.endsWith('/detail') && path !== '/nova/v2.1/servers/') {
        return fake.json(res, 404, { itemNotFound: { code: 404, message: `Instance ${path.split('/').pop()} could not be found.` } });
      }
      if (path === '/nova/v2.1/servers/detail') {
        const q = new URLSearchParams(query);
        if (q.get('marker') === null) {
          // next link deliberately points at another host: the client keeps its own endpoint
          return fake.json(res, 200, { servers: [server('s1', 'compute-1')], servers_links: [{ rel: 'next', href: `http://nova.internal:8774/v2.1/servers/detail?limit=1&marker=s1` }] });
        }
        return fake.json(res, 200, { servers: [server('s2', 'compute-2')] });
      }
      if (path === '/nova/v2.1/servers') return fake.json(res, 200, { servers: [{ id: 's1', name: 'vdu-s1', links: [] }] });
      return fake.json(res, 404, { itemNotFound: { code: 404, message: 'no' } });
    };
  });

  it('getServer maps status, host and extension attributes, sends the microversion', async () => {
    const s = await nova.getServer('s1');
    assert.equal(s.id, 's1');
    assert.equal(s.status, 'ACTIVE');
    assert.equal(s.host, 'compute-1');
    assert.equal(s.hypervisorHostname, 'compute-1.example');
    assert.equal(s.availabilityZone, 'nova');
    assert.equal(s.taskState, undefined);
    assert.equal(s.vmState, 'active');
    assert.equal(s.powerState, 1);
    assert.deepEqual(s.addresses, { net0: [{ addr: '10.0.0.5', version: 4 }] });
    assert.equal(s.raw['OS-EXT-SRV-ATTR:host'], 'compute-1');
    const r = fake.serviceRequests()[0];
    assert.equal(r?.headers['openstack-api-version'], 'compute 2.47');
  });

  it('getServer: unknown server is an OpenStackError 404 with Nova message; findServer gives null', async () => {
    await assert.rejects(nova.getServer('gone'), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.status, 404);
      assert.equal(e.service, 'nova');
      assert.equal(e.errorType, 'itemNotFound');
      assert.match(e.message, /Instance gone could not be found/);
      return true;
    });
    assert.equal(await nova.findServer('gone'), null);
  });

  it('listServers follows next links (on our endpoint) and supports non-detailed listing', async () => {
    const all = await nova.listServers({ limit: 1, allTenants: true, filters: { host: 'compute-1' } });
    assert.deepEqual(
      all.map((s) => [s.id, s.host]),
      [
        ['s1', 'compute-1'],
        ['s2', 'compute-2'],
      ],
    );
    const paths = fake.serviceRequests().map((r) => r.path);
    assert.equal(paths[0], '/nova/v2.1/servers/detail?host=compute-1&limit=1&all_tenants=1');
    assert.equal(paths[1], '/nova/v2.1/servers/detail?limit=1&marker=s1');
    const brief = await nova.listServers({ detail: false });
    assert.equal(brief[0]?.name, 'vdu-s1');
    assert.equal(brief[0]?.status, undefined);
  });
});
