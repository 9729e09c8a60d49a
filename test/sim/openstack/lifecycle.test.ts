/**
 * What the simulated OpenStack offers in-process observers (the live-VM lab): networks made at
 * start with a given subnet (`networks` option, `ensureNetwork`), port addresses kept across a
 * heal, and the server lifecycle events (created ACTIVE with its ports' fixed IPs, deleted, state
 * changes by faults, recoveries and actions, port changes) with `serverViews()`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, type ServerLifecycleEvent, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, type Session, settled, waitStack } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

const TEMPLATE = {
  heat_template_version: '2021-04-16',
  resources: {
    vip_cp: { type: 'OS::Neutron::Port', properties: { network: 'lab-net' } },
    cp: { type: 'OS::Neutron::Port', properties: { network: 'lab-net', allowed_address_pairs: [{ ip_address: { get_attr: ['vip_cp', 'fixed_ips', 0, 'ip_address'] } }] } },
    vdu: { type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ port: { get_resource: 'cp' } }] } },
  },
  outputs: { ip: { value: { get_attr: ['cp', 'fixed_ips', 0, 'ip_address'] } }, vip: { value: { get_attr: ['vip_cp', 'fixed_ips', 0, 'ip_address'] } } },
};

describe('OpenStack sim: networks made at start, lifecycle events for in-process observers', () => {
  let sim: OpenStackSim;
  let s: Session;
  const events: ServerLifecycleEvent[] = [];
  let unsubscribe: () => void;
  let url: string;

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0, networks: [{ name: 'lab-net', cidr: '10.87.0.0/24', gatewayIp: '10.87.0.1', allocationPools: [{ start: '10.87.0.10', end: '10.87.0.250' }] }] });
    s = await login(sim);
    unsubscribe = sim.onServerLifecycle((ev) => events.push(ev));
  });
  after(async () => {
    unsubscribe?.();
    await sim.close();
  });

  it('has the network from the start with that subnet; ensureNetwork finds it again', async () => {
    const again = sim.ensureNetwork({ name: 'lab-net', cidr: '10.87.0.0/24', gatewayIp: '10.87.0.1', allocationPools: [{ start: '10.87.0.10', end: '10.87.0.250' }] });
    assert.equal(again.cidr, '10.87.0.0/24');
    assert.equal(again.subnetName, 'lab-net-subnet');
    const other = sim.ensureNetwork({ name: 'side-net', cidr: '10.88.0.5/24' });
    assert.equal(other.cidr, '10.88.0.0/24', 'normalised');
    assert.notEqual(other.networkId, again.networkId);
  });

  it('reports a server created ACTIVE with its ports\' fixed IPs, and lists it in serverViews()', async () => {
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'lc', template: TEMPLATE });
    assert.equal(r.status, 201);
    url = `${s.heat}/stacks/lc/${r.body.stack.id}`;
    const st = await waitStack(s, url, settled);
    assert.equal(st.stack_status, 'CREATE_COMPLETE');
    const out = Object.fromEntries(st.outputs.map((o: Doc) => [o.output_key, o.output_value]));
    assert.deepEqual([out.vip, out.ip], ['10.87.0.10', '10.87.0.11'], 'allocated in order from the pool');
    const created = events.filter((e) => e.event === 'server.created');
    assert.equal(created.length, 1);
    const v = created[0]?.server;
    assert.equal(v?.status, 'ACTIVE');
    assert.equal(v?.ports[0]?.networkName, 'lab-net');
    assert.deepEqual(v?.ports[0]?.fixedIps, ['10.87.0.11']);
    assert.deepEqual(v?.ports[0]?.allowedAddresses, ['10.87.0.10']);
    assert.ok(events.some((e) => e.event === 'port.changed' && e.cause === 'create'));
    assert.deepEqual(sim.serverViews().map((x) => x.id), [v?.id]);
  });

  it('reports faults, recoveries and actions as server.updated with their cause', async () => {
    const id = sim.serverViews()[0]?.id as string;
    const admin = { 'X-Sim-Admin-Secret': sim.adminSecret };
    events.length = 0;
    assert.equal((await call('POST', `${sim.url}/_sim/servers/${id}/fail`, undefined, {}, admin)).status, 200);
    assert.equal((await call('POST', `${sim.url}/_sim/servers/${id}/recover`, undefined, {}, admin)).status, 200);
    assert.equal((await call('POST', `${s.nova}/servers/${id}/action`, s.token, { 'os-stop': null })).status, 202);
    assert.equal((await call('POST', `${s.nova}/servers/${id}/action`, s.token, { 'os-start': null })).status, 202);
    assert.equal((await call('POST', `${s.nova}/servers/${id}/action`, s.token, { reboot: { type: 'HARD' } })).status, 202);
    assert.deepEqual(
      events.map((e) => [e.event, e.cause, e.server?.status]),
      [
        ['server.updated', 'fault', 'ERROR'],
        ['server.updated', 'recover', 'ACTIVE'],
        ['server.updated', 'stop', 'SHUTOFF'],
        ['server.updated', 'start', 'ACTIVE'],
        ['server.updated', 'reboot', 'ACTIVE'],
      ],
    );
  });

  it('heals: a new server on the same port (same IP), then the old one deleted', async () => {
    const old = sim.serverViews()[0]?.id as string;
    events.length = 0;
    assert.equal((await call('PATCH', `${url}/resources/vdu`, s.token, { mark_unhealthy: true, resource_status_reason: 'heal' })).status, 200);
    assert.equal((await call('PATCH', url, s.token, {})).status, 202);
    assert.equal((await waitStack(s, url, settled)).stack_status, 'UPDATE_COMPLETE');
    const order = events.filter((e) => e.event !== 'port.changed').map((e) => [e.event, e.server?.id === old ? 'old' : 'new', e.server?.ports[0]?.fixedIps[0]]);
    assert.deepEqual(order, [
      ['server.created', 'new', '10.87.0.11'],
      ['server.deleted', 'old', '10.87.0.11'],
    ]);
    assert.notEqual(sim.serverViews()[0]?.id, old);
  });

  it('reports port updates (allowed address pairs) and refuses to re-address a network in use', async () => {
    events.length = 0;
    const t = structuredClone(TEMPLATE) as Doc;
    t.resources.cp.properties.allowed_address_pairs = [];
    assert.equal((await call('PUT', url, s.token, { template: t })).status, 202);
    assert.equal((await waitStack(s, url, settled)).stack_status, 'UPDATE_COMPLETE');
    assert.ok(events.some((e) => e.event === 'port.changed' && e.cause === 'update'));
    assert.deepEqual(sim.serverViews()[0]?.ports[0]?.allowedAddresses, []);
    assert.throws(() => sim.ensureNetwork({ name: 'lab-net', cidr: '10.99.0.0/24' }), /cannot be re-addressed/);
  });

  it('reports the deletion with the stack delete', async () => {
    events.length = 0;
    assert.equal((await call('DELETE', url, s.token)).status, 204);
    await waitStack(s, url, (st) => st === 'DELETE_COMPLETE');
    assert.deepEqual(events.filter((e) => e.event.startsWith('server.')).map((e) => [e.event, e.server?.status]), [['server.deleted', 'DELETED']]);
    assert.deepEqual(sim.serverViews(), []);
  });
});
