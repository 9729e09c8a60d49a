/**
 * vnfcCpInfo and extCpInfo of the rebuilt instance information: addresses per VNFC CP, external
 * CPs from the request, the VNFD, the VIM (Services) or the fallback, stable ids across a heal,
 * and ETSI-valid bodies without external virtual links.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ObservedResources } from '../../src/infra/infra-driver.ts';
import { cpProtocolInfoOf, rebuildInstantiatedInfo } from '../../src/lcm/instance-info.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';

const opts = { flavourId: 'simple', vimConnectionId: 'vim1', scaleStatus: [], maxScaleLevels: [] };
const server = (id: string, ip: string, mac: string, extra: Partial<ObservedResources['vnfcs'][number]> = {}) => ({
  vduId: 'VDU1',
  computeResource: { resourceId: id, vimLevelResourceType: 'OS::Nova::Server' },
  stableKey: 'VDU1',
  cps: [{ cpdId: 'VDU1_CP1', resourceId: `port-${id}`, macAddress: mac, addresses: [{ address: ip, type: 'IPV4' as const, subnetId: 'sub1' }, { address: '172.24.4.1', floating: true }] }],
  ...extra,
});
const body = (info: unknown) => ({
  id: 'i1',
  vnfdId: 'd1',
  vnfProvider: 'p',
  vnfProductName: 'n',
  vnfSoftwareVersion: '1',
  vnfdVersion: '1',
  instantiationState: 'INSTANTIATED',
  instantiatedVnfInfo: info,
  _links: { self: { href: 'http://x/vnflcm/v2/vnf_instances/i1' } },
});

describe('instance info: CP addresses and external CPs', () => {
  test('cpProtocolInfo groups addresses per type, subnet and kind', () => {
    assert.deepEqual(cpProtocolInfoOf(undefined, []), []);
    assert.deepEqual(cpProtocolInfoOf('fa:16:3e:00:00:01', [{ address: '10.0.0.5', subnetId: 's' }, { address: 'fd00::1' }, { address: '172.24.4.1', floating: true }, { address: '10.0.0.6', subnetId: 's' }], new Set(['10.0.0.6'])), [
      {
        layerProtocol: 'IP_OVER_ETHERNET',
        ipOverEthernet: {
          macAddress: 'fa:16:3e:00:00:01',
          ipAddresses: [
            { type: 'IPV4', addresses: ['10.0.0.5'], isDynamic: true, subnetId: 's' },
            { type: 'IPV6', addresses: ['fd00::1'], isDynamic: true },
            { type: 'IPV4', addresses: ['172.24.4.1'], isDynamic: true },
            { type: 'IPV4', addresses: ['10.0.0.6'], isDynamic: false, subnetId: 's' },
          ],
        },
      },
    ]);
  });

  test('VNFD external CP: vnfcCpInfo carries the addresses, extCpInfo links it; a heal changes the addresses, not the ids', () => {
    const observed: ObservedResources = { vnfcs: [server('srv-1', '10.0.0.5', 'fa:16:3e:00:00:01')], storages: [], virtualLinks: [] };
    const { info } = rebuildInstantiatedInfo(null, observed, { ...opts, externalCps: [{ cpdId: 'VDU1_CP1', vduCpId: 'VDU1_CP1' }] });
    const cp = info.vnfcResourceInfo?.[0]?.vnfcCpInfo?.[0];
    assert.ok(cp);
    assert.equal(cp.cpdId, 'VDU1_CP1');
    assert.deepEqual(cp.cpProtocolInfo?.[0]?.ipOverEthernet?.ipAddresses?.map((a) => a.addresses[0]), ['10.0.0.5', '172.24.4.1']);
    assert.equal(info.extCpInfo?.length, 1);
    const ext = info.extCpInfo?.[0] as Record<string, unknown>;
    assert.equal(ext.associatedVnfcCpId, cp.id);
    assert.equal(cp.vnfExtCpId, ext.id);
    assert.deepEqual(ext.cpProtocolInfo, cp.cpProtocolInfo);
    expectEtsiValid('v2', 'VnfInstance', body(info));

    const healed: ObservedResources = { vnfcs: [server('srv-2', '10.0.0.9', 'fa:16:3e:00:00:02')], storages: [], virtualLinks: [] };
    const { info: after } = rebuildInstantiatedInfo(info, healed, { ...opts, healedIds: new Set([info.vnfcResourceInfo?.[0]?.id as string]), externalCps: [{ cpdId: 'VDU1_CP1', vduCpId: 'VDU1_CP1' }] });
    const cp2 = after.vnfcResourceInfo?.[0]?.vnfcCpInfo?.[0];
    assert.equal(after.vnfcResourceInfo?.[0]?.id, info.vnfcResourceInfo?.[0]?.id, 'same VNFC');
    assert.equal(cp2?.id, cp.id, 'same CP id');
    assert.equal((after.extCpInfo?.[0] as Record<string, unknown>).id, ext.id, 'same ext CP id');
    assert.equal(cp2?.cpProtocolInfo?.[0]?.ipOverEthernet?.macAddress, 'fa:16:3e:00:00:02');
    assert.deepEqual(cp2?.cpProtocolInfo?.[0]?.ipOverEthernet?.ipAddresses?.[0]?.addresses, ['10.0.0.9'], 'the new address');
  });

  test('no external virtual link and no external CP in the VNFD: the first CP of each VNFC is the external CP (schema: 1..N)', () => {
    const observed: ObservedResources = {
      vnfcs: [server('srv-1', '10.0.0.5', 'fa:16:3e:00:00:01'), { vduId: 'VDU2', computeResource: { resourceId: 'srv-9', vimLevelResourceType: 'OS::Nova::Server' }, cps: [{ cpdId: 'VDU2_CP1' }] }],
      storages: [],
      virtualLinks: [],
    };
    const { info } = rebuildInstantiatedInfo(null, observed, { ...opts, externalCps: [] });
    assert.deepEqual(info.extCpInfo?.map((e) => e.cpdId), ['VDU1_CP1', 'VDU2_CP1']);
    assert.deepEqual((info.extCpInfo?.[1] as Record<string, unknown>).cpProtocolInfo, [], 'no address known: empty cpProtocolInfo');
    expectEtsiValid('v2', 'VnfInstance', body(info));
  });

  test('external virtual link with a fixed address: isDynamic false; the cpConfig id is the request one', () => {
    const observed: ObservedResources = { vnfcs: [server('srv-1', '10.0.0.5', 'fa:16:3e:00:00:01')], storages: [], virtualLinks: [] };
    const extVirtualLinks = [{ id: 'ext1', resourceId: 'net-1', extCps: [{ cpdId: 'VDU1_CP1', cpConfig: { c1: { cpProtocolData: [{ layerProtocol: 'IP_OVER_ETHERNET', ipOverEthernet: { ipAddresses: [{ type: 'IPV4', fixedAddresses: ['10.0.0.5'] }] } }] } } }] }];
    const { info } = rebuildInstantiatedInfo(null, observed, { ...opts, extVirtualLinks, externalCps: [{ cpdId: 'VDU1_CP1', vduCpId: 'VDU1_CP1' }] });
    assert.equal(info.extCpInfo?.length, 1, 'one ext CP although the VNFD names it too');
    const ext = info.extCpInfo?.[0] as { cpConfigId: string; cpProtocolInfo: { ipOverEthernet: { ipAddresses: { addresses: string[]; isDynamic: boolean }[] } }[] };
    assert.equal(ext.cpConfigId, 'c1');
    assert.deepEqual(ext.cpProtocolInfo[0]?.ipOverEthernet.ipAddresses.map((a) => [a.addresses[0], a.isDynamic]), [['10.0.0.5', false], ['172.24.4.1', true]]);
    expectEtsiValid('v2', 'VnfInstance', body(info));
  });

  test('Services the VIM reports are external CPs of the pods they select; a VnfExtCp exposes its internal VL', () => {
    const pod = (name: string, ip: string) => ({ vduId: 'VDU1', computeResource: { resourceId: name, vimLevelResourceType: 'Deployment' }, cps: [{ cpdId: 'VDU1_pod', addresses: [{ address: ip }] }] });
    const observed: ObservedResources = {
      vnfcs: [pod('web-a', '10.244.0.5'), pod('web-b', '10.244.0.6')],
      storages: [],
      virtualLinks: [{ vnfVirtualLinkDescId: 'intVL', resourceId: 'net-9', vimLevelResourceType: 'OS::Neutron::Net' }],
      extCps: [{ id: 'svc-web', cpdId: 'web', resourceId: 'ns/web', vimLevelResourceType: 'Service', addresses: [{ address: '10.96.0.10' }], vnfcResourceIds: ['web-b', 'web-a'] }],
    };
    const { info } = rebuildInstantiatedInfo(null, observed, { ...opts, externalCps: [{ cpdId: 'EXT', internalVirtualLinkId: 'intVL' }] });
    const byId = new Map((info.extCpInfo ?? []).map((e) => [e.id as string, e]));
    const svc = byId.get('svc-web') as Record<string, unknown>;
    assert.ok(svc);
    assert.deepEqual((svc.cpProtocolInfo as { ipOverEthernet: { ipAddresses: unknown[] } }[])[0]?.ipOverEthernet.ipAddresses, [{ type: 'IPV4', addresses: ['10.96.0.10'], isDynamic: true }]);
    for (const v of info.vnfcResourceInfo ?? []) assert.equal(v.vnfcCpInfo?.[0]?.vnfExtCpId, 'svc-web', 'every selected pod is connected to the Service');
    assert.ok((info.vnfcResourceInfo ?? []).some((v) => v.vnfcCpInfo?.[0]?.id === svc.associatedVnfcCpId));
    const vlExt = [...byId.values()].find((e) => e.cpdId === 'EXT') as Record<string, unknown>;
    assert.equal(vlExt.associatedVnfVirtualLinkId, info.vnfVirtualLinkResourceInfo?.[0]?.id);
    expectEtsiValid('v2', 'VnfInstance', body(info));
  });
});
