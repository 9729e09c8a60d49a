/**
 * Pure parts of the OpenStack driver: the `nfv` parameter builder (VNFD defaults, grant, request
 * overrides, the stack's current value) and the Heat listing -> location resolution.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { HeatResource } from '../../../src/infra/openstack/heat-client.ts';
import { locateResources, observeFromListing } from '../../../src/infra/openstack/heat-observer.ts';
import { buildNfvParameter, declaredParameters, mergePatch, parseNfvParameter } from '../../../src/infra/openstack/hot-params.ts';
import type { FlavourModel } from '../../../src/packages/vnfd-model.ts';
import { loadPackage, VM_BASIC_DIR } from './driver-fixtures.ts';

describe('nfv parameter builder', () => {
  let flavour: FlavourModel;
  before(async () => {
    const f = (await loadPackage(VM_BASIC_DIR)).model.flavours.simple;
    assert.ok(f);
    flavour = f;
  });

  it('fills flavour, image and capacity from the VNFD', () => {
    const nfv = buildNfvParameter({ flavour, vduCounts: { VDU1: 2, VDU2: 1 } }) as { VDU: Record<string, Record<string, unknown>> };
    assert.equal(nfv.VDU.VDU1?.desired_capacity, 2);
    assert.equal(nfv.VDU.VDU2?.desired_capacity, 1);
    assert.equal(nfv.VDU.VDU1?.computeFlavourId, flavour.vdus.VDU1?.flavour?.requestedAdditionalCapabilityNames[0]);
    assert.equal(nfv.VDU.VDU1?.vcImageId, flavour.vdus.VDU1?.swImage?.name);
    assert.equal(nfv.VDU.VDU1?.locationConstraints, undefined);
    assert.equal('CP' in nfv, false);
  });

  it('prefers granted assets and zones, then request and grant overrides; keeps the current value but not its count', () => {
    const grantRequest = { addResources: [{ id: 'r1', type: 'COMPUTE', resourceTemplateId: 'VDU1' }, { id: 'r2', type: 'COMPUTE', resourceTemplateId: 'VDU2' }] };
    const grant = {
      vimAssets: {
        computeResourceFlavours: [{ vnfdVirtualComputeDescId: 'VDU1', vimFlavourId: 'flavor-uuid-1' }],
        softwareImages: [{ vnfdSoftwareImageId: 'VDU2', vimSoftwareImageId: 'image-uuid-2' }],
      },
      zones: [{ id: 'z1', zoneId: 'az-1' }],
      addResources: [{ resourceDefinitionId: 'r1', zoneId: 'z1' }],
      additionalParams: { nfv: { VDU: { VDU2: { computeFlavourId: 'from-grant' } } } },
    };
    const extVirtualLinks = [
      {
        id: 'ext1',
        resourceId: 'net-uuid',
        extCps: [
          {
            cpdId: 'VDU2_CP1',
            cpConfig: { c1: { cpProtocolData: [{ layerProtocol: 'IP_OVER_ETHERNET', ipOverEthernet: { ipAddresses: [{ type: 'IPV4', fixedAddresses: ['10.0.0.5'], subnetId: 'sub-1' }] } }] } },
          },
        ],
      },
    ];
    const nfv = buildNfvParameter({
      flavour,
      vduCounts: { VDU1: 3, VDU2: 1 },
      grant,
      grantRequest,
      extVirtualLinks,
      current: { VDU: { VDU1: { desired_capacity: 1, vcImageId: 'kept-user-image' } }, CP: { X: { network: 'n' } } },
      requestNfv: { VDU: { VDU1: { computeFlavourId: 'user-flavour' } } },
    }) as { VDU: Record<string, Record<string, unknown>>; CP: Record<string, Record<string, unknown>> };
    assert.deepEqual(nfv.VDU.VDU1, {
      computeFlavourId: 'user-flavour',
      flavor: 'user-flavour',
      vcImageId: 'kept-user-image',
      image: 'kept-user-image',
      locationConstraints: 'az-1',
      desired_capacity: 3,
    });
    assert.equal(nfv.VDU.VDU2?.vcImageId, 'image-uuid-2');
    assert.equal(nfv.VDU.VDU2?.image, 'image-uuid-2');
    assert.equal(nfv.VDU.VDU2?.computeFlavourId, 'from-grant');
    assert.equal(nfv.VDU.VDU2?.flavor, 'from-grant');
    assert.deepEqual(nfv.CP.VDU2_CP1, { network: 'net-uuid', fixed_ips: [{ ip_address: '10.0.0.5', subnet: 'sub-1' }] });
    assert.deepEqual(nfv.CP.X, { network: 'n' });
  });

  it("also fills Tacker v1 UserData keys (flavor, image, CP mac_address); a layer setting either key of a pair sets both", () => {
    const vdu1 = flavour.vdus.VDU1;
    const nfv = buildNfvParameter({
      flavour,
      vduCounts: { VDU1: 1, VDU2: 1 },
      extVirtualLinks: [
        {
          id: 'ext1',
          resourceId: 'net-uuid',
          extCps: [{ cpdId: 'VDU1_CP1', cpConfig: [{ cpProtocolData: [{ layerProtocol: 'IP_OVER_ETHERNET', ipOverEthernet: { macAddress: 'fa:16:3e:00:00:01', ipAddresses: [{ type: 'IPV4', numDynamicAddresses: 1 }] } }] }] }],
        },
      ],
      current: { VDU: { VDU2: { flavor: 'old-flavour', computeFlavourId: 'old-flavour' } } },
      requestNfv: { VDU: { VDU2: { computeFlavourId: 'new-flavour' }, VDU1: { image: 'user-image' } } },
    }) as { VDU: Record<string, Record<string, unknown>>; CP: Record<string, Record<string, unknown>> };
    assert.equal(nfv.VDU.VDU1?.flavor, vdu1?.flavour?.requestedAdditionalCapabilityNames[0]);
    assert.equal(nfv.VDU.VDU1?.computeFlavourId, nfv.VDU.VDU1?.flavor);
    assert.equal(nfv.VDU.VDU1?.image, 'user-image');
    assert.equal(nfv.VDU.VDU1?.vcImageId, 'user-image');
    assert.equal(nfv.VDU.VDU2?.flavor, 'new-flavour');
    assert.equal(nfv.VDU.VDU2?.computeFlavourId, 'new-flavour');
    assert.deepEqual(nfv.CP.VDU1_CP1, { network: 'net-uuid', mac_address: 'fa:16:3e:00:00:01' });
  });

  it('merge-patches per RFC 7396 and reads Heat parameter strings', () => {
    assert.deepEqual(mergePatch({ a: { b: 1, c: 2 } }, { a: { c: null, d: 3 } }), { a: { b: 1, d: 3 } });
    assert.deepEqual(parseNfvParameter('{"VDU": {}}'), { VDU: {} });
    assert.equal(parseNfvParameter('not json'), null);
    assert.deepEqual([...declaredParameters('heat_template_version: 2013-05-23\nparameters:\n  nfv: {type: json}\n')], ['nfv']);
    assert.deepEqual([...declaredParameters(': bad: yaml: [')], []);
  });
});

function row(name: string, type: string, physId: string, stack: [string, string], nested?: [string, string], parent?: string): HeatResource {
  const links = [
    { rel: 'self', href: `http://h/v1/p/stacks/${stack[0]}/${stack[1]}/resources/${name}` },
    { rel: 'stack', href: `http://h/v1/p/stacks/${stack[0]}/${stack[1]}` },
  ];
  if (nested) links.push({ rel: 'nested', href: `http://h/v1/p/stacks/${nested[0]}/${nested[1]}` });
  return { resource_name: name, resource_type: type, physical_resource_id: physId, resource_status: 'CREATE_COMPLETE', resource_status_reason: '', links, ...(parent ? { parent_resource: parent } : {}) };
}

describe('Heat listing -> locations', () => {
  const top: [string, string] = ['vnf-1', 'top-id'];
  const group: [string, string] = ['vnf-1-VDU1-abc', 'group-id'];
  const member: [string, string] = ['vnf-1-VDU1-abc-m1-xyz', 'member-id'];
  // the group is named like the VDU (Tacker bug 1924214): only the path tells them apart; rows of
  // nested stacks come first (Heat does not promise an order)
  const rows = [
    row('VDU1', 'OS::Nova::Server', 'server-1', member, undefined, 'm1'),
    row('m1', 'VDU1.yaml', 'member-id', group, member, 'VDU1'),
    row('VDU1', 'OS::Heat::AutoScalingGroup', 'group-id', top, group),
    row('VDU2', 'OS::Nova::Server', 'server-2', top),
  ];

  it('gives each row its owning stack and its path from the top', () => {
    const located = locateResources({ name: top[0], id: top[1] }, rows);
    assert.deepEqual(
      located.map((l) => [l.path, l.stack.id]),
      [
        ['VDU1/m1/VDU1', 'member-id'],
        ['VDU1/m1', 'group-id'],
        ['VDU1', 'top-id'],
        ['VDU2', 'top-id'],
      ],
    );
  });

  it('reports only servers as VNFCs, located in their member stack', async () => {
    const flavour = (await loadPackage(VM_BASIC_DIR)).model.flavours.simple;
    assert.ok(flavour);
    const obs = observeFromListing({ top: { name: top[0], id: top[1] }, rows, flavour });
    assert.deepEqual(
      obs.vnfcs.map((v) => [v.vduId, v.stableKey, v.metadata?.stack_id, v.metadata?.parent_stack_id ?? null]),
      [
        ['VDU1', 'VDU1/m1/VDU1', 'vnf-1-VDU1-abc-m1-xyz/member-id', 'vnf-1-VDU1-abc/group-id'],
        ['VDU2', 'VDU2', 'vnf-1/top-id', null],
      ],
    );
    assert.deepEqual(obs.metadata, { stack_id: 'top-id', stack_name: 'vnf-1' });
  });
});
