import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, type Session } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

describe('OpenStack sim: Neutron port listing', () => {
  let sim: OpenStackSim;
  let s: Session;
  let neutron: string;
  const servers: { serverId: string; portId: string }[] = [];
  const admin = (): Record<string, string> => ({ 'X-Sim-Admin-Secret': sim.adminSecret });

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    s = await login(sim);
    // biome-ignore lint/suspicious/noExplicitAny: catalog is free-form JSON
    neutron = s.catalog.find((x: any) => x.type === 'network').endpoints.find((e: any) => e.interface === 'public').url;
    const net = sim.ensureNetwork({ name: 'ports-net', cidr: '10.41.0.0/24' });
    for (let i = 0; i < 2; i++) servers.push(sim.ensureServer({ name: `p-${i}`, networkId: net.networkId, fixedIp: `10.41.0.${10 + i}` }));
  });
  after(async () => {
    await sim.close();
  });

  it('lists ports with filters and fields, and a port link fault makes it DOWN', async () => {
    const [a, b] = servers as [{ serverId: string; portId: string }, { serverId: string; portId: string }];
    assert.equal(neutron, sim.url);
    const all = await call('GET', `${neutron}/v2.0/ports?device_owner=compute:nova`, s.token);
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.ports.map((p: Doc) => p.id).sort(), [a.portId, b.portId].sort());
    assert.ok(all.body.ports.every((p: Doc) => p.status === 'ACTIVE'));
    const two = await call('GET', `${neutron}/v2.0/ports?device_id=${a.serverId}&device_id=${b.serverId}&fields=id&fields=status`, s.token);
    assert.deepEqual(two.body.ports.map((p: Doc) => Object.keys(p).sort()), [['id', 'status'], ['id', 'status']]);

    const down = await call('POST', `${sim.url}/_sim/ports/${a.portId}/down`, undefined, {}, admin());
    assert.equal(down.status, 200);
    assert.equal(down.body.port.status, 'DOWN');
    const listed = await call('GET', `${neutron}/v2.0/ports?status=DOWN&device_owner=compute:nova&fields=id&fields=device_id`, s.token);
    assert.deepEqual(listed.body.ports, [{ id: a.portId, device_id: a.serverId }]);
    assert.equal((await call('GET', `${neutron}/v2.0/ports/${a.portId}`, s.token)).body.port.status, 'DOWN');
    await call('POST', `${sim.url}/_sim/ports/${a.portId}/up`, undefined, {}, admin());
    assert.deepEqual((await call('GET', `${neutron}/v2.0/ports?status=DOWN&device_owner=compute:nova`, s.token)).body.ports, []);

    assert.equal((await call('GET', `${neutron}/v2.0/ports/nope`, s.token)).status, 404);
    assert.equal((await call('GET', `${neutron}/v2.0/ports`)).status, 401);
    assert.equal((await call('POST', `${sim.url}/_sim/ports/nope/down`, undefined, {}, admin())).status, 404);
  });
});
