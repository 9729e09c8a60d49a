/**
 * Addresses of the VNFC CPs on OpenStack: Nova's server `addresses` (real Nova shape), Heat's port
 * attributes from a detailed listing, and how they are put together per CP port.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HeatResource } from '../../../src/infra/openstack/heat-client.ts';
import { cpsOfServer, portFactsOf, serverAddresses, type ServerFacts } from '../../../src/infra/openstack/heat-observer.ts';
import type { VduModel } from '../../../src/packages/vnfd-model.ts';

const vdu = (cpIds: string[]): VduModel => ({ vduId: 'VDU1', name: 'VDU1', description: '', minInstances: 1, maxInstances: 1, initialDelta: 1, virtualStorageIds: [], cpIds, nodeType: 'tosca.nodes.nfv.Vdu.Compute' });
const portRow = (name: string, id: string, attributes?: Record<string, unknown>): HeatResource => ({
  resource_name: name,
  physical_resource_id: id,
  resource_type: 'OS::Neutron::Port',
  resource_status: 'CREATE_COMPLETE',
  resource_status_reason: '',
  links: [],
  ...(attributes ? { attributes } : {}),
});
const nova = (entries: [string, string, number, 'fixed' | 'floating', string][]): Record<string, unknown> => {
  const out: Record<string, unknown[]> = {};
  for (const [net, addr, version, type, mac] of entries) (out[net] ??= []).push({ addr, version, 'OS-EXT-IPS:type': type, 'OS-EXT-IPS-MAC:mac_addr': mac });
  return out;
};

describe('OpenStack CP addresses', () => {
  test("Nova's addresses map is flattened (fixed and floating, with the port MAC)", () => {
    const a = serverAddresses(nova([['net1', '10.0.0.5', 4, 'fixed', 'FA:16:3E:00:00:01'], ['net1', '172.24.4.9', 4, 'floating', 'fa:16:3e:00:00:01'], ['net2', 'fd00::5', 6, 'fixed', 'fa:16:3e:00:00:02']]));
    assert.deepEqual(a, [
      { address: '10.0.0.5', version: 4, kind: 'fixed', mac: 'fa:16:3e:00:00:01', network: 'net1' },
      { address: '172.24.4.9', version: 4, kind: 'floating', mac: 'fa:16:3e:00:00:01', network: 'net1' },
      { address: 'fd00::5', version: 6, kind: 'fixed', mac: 'fa:16:3e:00:00:02', network: 'net2' },
    ]);
    assert.deepEqual(serverAddresses(undefined), []);
    assert.deepEqual(serverAddresses({ net: [{ version: 4 }, null, 'x'], other: 'nope' }), [], 'unknown shapes are skipped');
  });

  test('port attributes of a detailed listing', () => {
    assert.deepEqual(portFactsOf(portRow('CP1', 'p1', { mac_address: 'FA:16:3E:AA:BB:CC', fixed_ips: [{ ip_address: '10.0.0.7', subnet_id: 's1' }, { ip_address: '' }] })), {
      macAddress: 'fa:16:3e:aa:bb:cc',
      fixedIps: [{ address: '10.0.0.7', subnetId: 's1' }],
    });
    assert.equal(portFactsOf(portRow('CP1', 'p1')), undefined, 'no attributes (plain listing)');
  });

  test('one CP port and one MAC in Nova: the server addresses are the port addresses, floating ones marked', () => {
    const server: ServerFacts = { addresses: serverAddresses(nova([['net1', '10.0.0.5', 4, 'fixed', 'fa:16:3e:00:00:01'], ['net1', '172.24.4.9', 4, 'floating', 'fa:16:3e:00:00:01']])) };
    assert.deepEqual(cpsOfServer(vdu(['CP1']), [portRow('CP1', 'p1')], server, undefined), [
      { cpdId: 'CP1', resourceId: 'p1', macAddress: 'fa:16:3e:00:00:01', addresses: [{ address: '10.0.0.5', type: 'IPV4' }, { address: '172.24.4.9', type: 'IPV4', floating: true }] },
    ]);
  });

  test('two CP ports: told apart by the port MACs of the detailed listing, subnets from Heat', () => {
    const server: ServerFacts = { addresses: serverAddresses(nova([['a', '10.0.0.5', 4, 'fixed', 'fa:16:3e:00:00:01'], ['b', '10.1.0.5', 4, 'fixed', 'fa:16:3e:00:00:02'], ['b', '172.24.4.2', 4, 'floating', 'fa:16:3e:00:00:02']])) };
    const ports = new Map([
      ['p1', { macAddress: 'fa:16:3e:00:00:01', fixedIps: [{ address: '10.0.0.5', subnetId: 'sa' }] }],
      ['p2', { macAddress: 'fa:16:3e:00:00:02', fixedIps: [{ address: '10.1.0.5', subnetId: 'sb' }] }],
    ]);
    assert.deepEqual(cpsOfServer(vdu(['CP1', 'CP2']), [portRow('CP2', 'p2'), portRow('CP1', 'p1')], server, ports), [
      { cpdId: 'CP2', resourceId: 'p2', macAddress: 'fa:16:3e:00:00:02', addresses: [{ address: '10.1.0.5', type: 'IPV4', subnetId: 'sb' }, { address: '172.24.4.2', type: 'IPV4', floating: true }] },
      { cpdId: 'CP1', resourceId: 'p1', macAddress: 'fa:16:3e:00:00:01', addresses: [{ address: '10.0.0.5', type: 'IPV4', subnetId: 'sa' }] },
    ]);
    // without the port facts two ports cannot be told apart: no addresses rather than wrong ones
    assert.deepEqual(cpsOfServer(vdu(['CP1', 'CP2']), [portRow('CP1', 'p1'), portRow('CP2', 'p2')], server, undefined), [
      { cpdId: 'CP1', resourceId: 'p1' },
      { cpdId: 'CP2', resourceId: 'p2' },
    ]);
  });

  test('without Nova (a Heat-only cloud) the port attributes alone give MAC and fixed IPs', () => {
    const ports = new Map([['p1', { macAddress: 'fa:16:3e:01:02:03', fixedIps: [{ address: '10.1.2.4' }, { address: 'fd00::4' }] }]]);
    assert.deepEqual(cpsOfServer(vdu(['CP1']), [portRow('CP1', 'p1')], undefined, ports), [
      { cpdId: 'CP1', resourceId: 'p1', macAddress: 'fa:16:3e:01:02:03', addresses: [{ address: '10.1.2.4', type: 'IPV4' }, { address: 'fd00::4', type: 'IPV6' }] },
    ]);
  });

  test('a VduCp without a port resource (server networks) gets the one MAC no port claims', () => {
    const server: ServerFacts = { addresses: serverAddresses(nova([['a', '10.0.0.5', 4, 'fixed', 'fa:16:3e:00:00:01'], ['b', '10.9.0.5', 4, 'fixed', 'fa:16:3e:00:00:09']])) };
    const ports = new Map([['p1', { macAddress: 'fa:16:3e:00:00:01', fixedIps: [] }]]);
    assert.deepEqual(cpsOfServer(vdu(['CP1', 'CP2']), [portRow('CP1', 'p1')], server, ports), [
      { cpdId: 'CP1', resourceId: 'p1', macAddress: 'fa:16:3e:00:00:01', addresses: [{ address: '10.0.0.5', type: 'IPV4' }] },
      { cpdId: 'CP2', macAddress: 'fa:16:3e:00:00:09', addresses: [{ address: '10.9.0.5', type: 'IPV4' }] },
    ]);
  });
});
