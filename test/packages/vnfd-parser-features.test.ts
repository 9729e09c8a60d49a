/**
 * TOSCA/SOL001/SOL004 features the parser supports beyond what the sample packages use.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { PackageError } from '../../src/packages/package-error.ts';
import { externalCps } from '../../src/packages/ext-cps.ts';
import { parseVnfPackage } from '../../src/packages/vnfd-parser.ts';
import { throughCsar } from './package-fixtures.ts';

const META = 'TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: test\nEntry-Definitions: Definitions/top.yaml\n';

const TYPES = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
  - https://forge.etsi.org/rep/nfv/SOL001/raw/v3.3.1/etsi_nfv_sol001_vnfd_types.yaml
node_types:
  acme.BaseVNF:
    derived_from: tosca.nodes.nfv.VNF
    properties:
      provider: { type: string, default: Acme }
      descriptor_version: { type: string, default: 2.0 }
      vnfm_info: { type: list, default: [ Acme-VNFM ] }
    interfaces:
      Vnflcm:
        type: tosca.interfaces.nfv.Vnflcm
        heal_start:
          implementation: type-hook
    artifacts:
      type-hook:
        type: tosca.artifacts.Implementation.Bash
        file: ../Scripts/type_hook.sh
  acme.VNF:
    derived_from: acme.BaseVNF
    properties:
      descriptor_id: { type: string, default: 11111111-2222-4333-8444-555555555555 }
      product_name: { type: string, default: Acme Router }
      software_version: { type: string, default: 3.1.0 }
      flavour_id: { type: string }
  acme.Compute:
    derived_from: tosca.nodes.nfv.Vdu.Compute
`;

const TOP = `tosca_definitions_version: tosca_simple_yaml_1_3
description: Acme router
imports:
  - file: types.yaml
  - small: df_small.yaml
topology_template:
  inputs:
    selected_flavour: { type: string }
  node_templates:
    VNF:
      type: acme.VNF
      properties:
        flavour_id: { get_input: selected_flavour }
`;

function df(flavourId: string, extra = ''): string {
  return `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  profile: &profile
    min_number_of_instances: 1
    max_number_of_instances: 7
imports: [ types.yaml ]
topology_template:
  inputs:
    product_name: { type: string }
  substitution_mappings:
    node_type: acme.VNF
    properties:
      flavour_id: ${flavourId}
  node_templates:
    VNF:
      type: acme.VNF
      properties:
        flavour_description: flavour ${flavourId}
      interfaces:
        Vnflcm:
          operations:
            instantiate_end:
              implementation:
                primary: post-install
            terminate_start: Scripts/direct.sh
            instantiate:
              implementation: mistral-workflow
      artifacts:
        post-install: ../Scripts/post_install.py
        mistral-workflow:
          type: tosca.artifacts.Implementation.nfv.Mistral
          file: ../Workflows/instantiate.yaml
    VDU1:
      type: acme.Compute
      properties:
        name: { get_input: product_name }
        vdu_profile:
          <<: *profile
          max_number_of_instances: 6
      artifacts:
        sw_image:
          type: tosca.artifacts.nfv.SwImage
          file: ../Images/router.qcow2
    VDU2:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        name: vdu2
        vdu_profile: { min_number_of_instances: 0, max_number_of_instances: 2 }
      requirements:
        - virtual_storage:
            node: Root
    Root:
      type: tosca.nodes.nfv.Vdu.VirtualBlockStorage
      properties:
        virtual_block_storage_data: { size_of_storage: 10 GB }
        sw_image_data: { name: router-root, version: 3.10 }
${extra}
  groups:
    pair:
      type: tosca.groups.nfv.PlacementGroup
      members: [ VDU1, VDU2 ]
  policies:
    - spread:
        type: tosca.policies.nfv.AntiAffinityRule
        targets: [ pair ]
        properties: { scope: zone }
    - aspects:
        type: tosca.policies.nfv.ScalingAspects
        properties:
          aspects:
            grow:
              name: grow
              max_scale_level: 3
    - grow_deltas:
        type: tosca.policies.nfv.VduScalingAspectDeltas
        properties:
          aspect: grow
          deltas: { d2: { number_of_instances: 2 } }
        targets: [ VDU1 ]
`;
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

function base(): Record<string, string> {
  return {
    'TOSCA-Metadata/TOSCA.meta': META,
    'Definitions/top.yaml': TOP,
    'Definitions/types.yaml': TYPES,
    'Definitions/df_small.yaml': df('small'),
    'Definitions/df_large.yaml': df('large'),
    'Scripts/post_install.py': 'print("ok")\n',
    'Scripts/type_hook.sh': '#!/bin/sh\nexit 0\n',
    'Workflows/instantiate.yaml': 'version: 2.0\n',
  };
}

describe('TOSCA features', () => {
  test('type defaults through derived_from, import forms, flavours found without imports, hooks in every form', async () => {
    const m = parseVnfPackage(await throughCsar(base()));
    assert.equal(m.vnfdId, '11111111-2222-4333-8444-555555555555');
    assert.equal(m.vnfProvider, 'Acme');
    assert.equal(m.vnfProductName, 'Acme Router');
    assert.equal(m.vnfSoftwareVersion, '3.1.0');
    assert.equal(m.vnfdVersion, '2.0', 'the default 2.0 keeps its spelling');
    assert.deepEqual(m.vnfmInfo, ['Acme-VNFM']);
    assert.equal(m.vnfNodeType, 'acme.VNF');
    assert.equal(m.description, 'Acme router');
    assert.deepEqual(Object.keys(m.flavours).sort(), ['large', 'small'], 'df_large.yaml is found although nothing imports it');
    const f = m.flavours.small;
    assert.ok(f);
    assert.equal(f.description, 'flavour small');
    assert.equal(f.vdus.VDU1?.name, 'Acme Router', 'get_input gets the entry VNF node property value');
    assert.equal(f.vdus.VDU1?.minInstances, 1, 'merge key');
    assert.equal(f.vdus.VDU1?.maxInstances, 6, 'explicit key wins over the merged one');
    assert.equal(f.vdus.VDU1?.nodeType, 'acme.Compute');
    assert.equal(f.vdus.VDU1?.swImage, undefined, 'an image artifact alone does not make sw_image_data');
    assert.deepEqual(f.vdus.VDU2?.virtualStorageIds, ['Root']);
    assert.deepEqual(f.virtualStorages.Root, { id: 'Root', type: 'BlockStorage', sizeOfStorage: '10 GB', swImage: { name: 'router-root', version: '3.10' } });
    assert.deepEqual(f.placementRules, [{ ruleId: 'spread', type: 'ANTI_AFFINITY', scope: 'zone', vduIds: ['VDU1', 'VDU2'] }]);
    assert.deepEqual(f.scalingAspects.grow?.stepDeltas, ['d2'], 'the single delta becomes the uniform step delta');
    assert.deepEqual(f.lcmHooks, {
      heal_start: { hook: 'heal_start', artifactName: 'type-hook', file: 'Scripts/type_hook.sh', type: 'tosca.artifacts.Implementation.Bash', fileInPackage: true },
      instantiate_end: { hook: 'instantiate_end', artifactName: 'post-install', file: 'Scripts/post_install.py', type: '', fileInPackage: true },
      terminate_start: { hook: 'terminate_start', artifactName: 'direct.sh', file: 'Definitions/Scripts/direct.sh', type: '', fileInPackage: false },
    });
    assert.ok(m.warnings.some((w) => /Vnflcm operation 'instantiate' is not a hook the VNFM runs/.test(w)));
    assert.ok(m.warnings.some((w) => /script Definitions\/Scripts\/direct\.sh .* hooks terminate_start will fail when run/.test(w)));
    assert.deepEqual(m.definitionFiles, ['Definitions/top.yaml', 'Definitions/types.yaml', 'Definitions/df_small.yaml', 'Definitions/df_large.yaml']);
  });

  test('external CPs: substitution_mappings requirements, VduCps on no internal VL, VnfExtCp nodes', async () => {
    const files = base();
    const cps = `    CP_INT:
      type: tosca.nodes.nfv.VduCp
      properties: { layer_protocols: [ ipv4 ] }
      requirements: [ { virtual_binding: VDU1 }, { virtual_link: intVL } ]
    CP_MAPPED:
      type: tosca.nodes.nfv.VduCp
      properties: { layer_protocols: [ ipv4 ], order: 1 }
      requirements: [ { virtual_binding: VDU1 } ]
    CP_FREE:
      type: tosca.nodes.nfv.VduCp
      properties: { layer_protocols: [ ipv4 ] }
      requirements: [ { virtual_binding: VDU2 } ]
    EXT_VL_CP:
      type: tosca.nodes.nfv.VnfExtCp
      properties: { layer_protocols: [ ipv4 ] }
      requirements: [ { internal_virtual_link: intVL } ]
    intVL:
      type: tosca.nodes.nfv.VnfVirtualLink
      properties:
        connectivity_type: { layer_protocols: [ ipv4 ] }
        vl_profile: { max_bitrate_requirements: { root: 1000 }, min_bitrate_requirements: { root: 1000 } }
`;
    files['Definitions/df_small.yaml'] = df('small', cps).replace(
      '      flavour_id: small\n',
      '      flavour_id: small\n    requirements:\n      virtual_link_ext1: [ CP_MAPPED, virtual_link ]\n      virtual_link_ext2: [ EXT_VL_CP, external_virtual_link ]\n',
    );
    const f = parseVnfPackage(await throughCsar(files)).flavours.small;
    assert.ok(f);
    assert.deepEqual(f.extCps, {
      CP_FREE: { cpdId: 'CP_FREE', vduCpId: 'CP_FREE' },
      CP_MAPPED: { cpdId: 'CP_MAPPED', vduCpId: 'CP_MAPPED', requirement: 'virtual_link_ext1' },
      EXT_VL_CP: { cpdId: 'EXT_VL_CP', internalVirtualLinkId: 'intVL', requirement: 'virtual_link_ext2' },
    });
    assert.deepEqual(externalCps(f).map((c) => c.cpdId), ['CP_FREE', 'CP_MAPPED', 'EXT_VL_CP']);
    // a model stored before extCps existed: VduCps without an internal VL
    const { extCps: _gone, ...old } = f;
    assert.deepEqual(externalCps(old), [
      { cpdId: 'CP_FREE', vduCpId: 'CP_FREE' },
      { cpdId: 'CP_MAPPED', vduCpId: 'CP_MAPPED' },
    ]);
    assert.deepEqual(parseVnfPackage(await throughCsar(base())).flavours.small?.extCps, {}, 'no CP, no external CP');
  });

  test('several step deltas without step_deltas are ambiguous', async () => {
    const files = base();
    files['Definitions/df_small.yaml'] = (files['Definitions/df_small.yaml'] as string).replace('deltas: { d2: { number_of_instances: 2 } }', 'deltas: { d1: { number_of_instances: 1 }, d2: { number_of_instances: 2 } }');
    assert.throws(() => parseVnfPackage(new Map(Object.entries(files).map(([k, v]) => [k, Buffer.from(v)]))), (e: unknown) => e instanceof PackageError && /aspect 'grow' has several deltas \(d1, d2\) but no step_deltas/.test(e.message));
  });

  test('a flavour described twice, and a flavour for another VNF type', async () => {
    const dup = base();
    dup['Definitions/df_large.yaml'] = df('small');
    assert.throws(() => parseVnfPackage(new Map(Object.entries(dup).map(([k, v]) => [k, Buffer.from(v)]))), /flavour 'small' is described twice/);
    const other = base();
    other['Definitions/types.yaml'] = `${TYPES}  acme.Other:\n    derived_from: tosca.nodes.nfv.VNF\n`;
    other['Definitions/df_large.yaml'] = df('large').replace(/node_type: acme\.VNF/, 'node_type: acme.Other').replace(/type: acme\.VNF\n {6}properties:\n {8}flavour_description/, 'type: acme.Other\n      properties:\n        flavour_description');
    assert.throws(() => parseVnfPackage(new Map(Object.entries(other).map(([k, v]) => [k, Buffer.from(v)]))), /flavour 'large' implements node type acme\.Other, but the VNF node in Definitions\/top\.yaml is a acme\.VNF/);
  });

  test('SOL004 manifest digests (ETSI-Entry-Manifest) are verified', async () => {
    const files = base();
    files['TOSCA-Metadata/TOSCA.meta'] = `${META}ETSI-Entry-Manifest: vnf.mf\n`;
    files['vnf.mf'] = `metadata:
  vnf_provider_id: Acme
  vnf_product_name: Acme Router
  vnf_release_date_time: 2024-01-01T00:00:00+00:00
  vnf_package_version: 1.0

Source: Definitions/top.yaml
Algorithm: SHA-256
Hash: ${sha256(TOP)}

Source: Scripts/post_install.py
Algorithm: SHA-512
Hash: ${createHash('sha512').update('print("ok")\n').digest('hex').toUpperCase()}

Source: https://images.example.com/router.qcow2
Algorithm: SHA-256
Hash: ${'0'.repeat(64)}
-----BEGIN CMS-----
abc
-----END CMS-----
`;
    const m = parseVnfPackage(await throughCsar(files));
    assert.deepEqual(Object.keys(m.manifestDigests ?? {}).sort(), ['Definitions/top.yaml', 'Scripts/post_install.py', 'https://images.example.com/router.qcow2']);
    assert.equal(m.manifestDigests?.['Definitions/top.yaml']?.declaredIn, 'vnf.mf:7');
    files['Scripts/post_install.py'] = 'print("tampered")\n';
    await assert.rejects(async () => parseVnfPackage(await throughCsar(files)), /^PackageError: vnf\.mf:11: Scripts\/post_install\.py: SHA-512 digest does not match/);
    files['TOSCA-Metadata/TOSCA.meta'] = `${META}ETSI-Entry-Manifest: missing.mf\n`;
    await assert.rejects(async () => parseVnfPackage(await throughCsar(files)), /TOSCA-Metadata\/TOSCA\.meta:5: ETSI-Entry-Manifest names missing\.mf, which is not in the package/);
  });

  test('an ETSI type file imported by URL is read from the package when shipped next to the importer', async () => {
    const files = base();
    files['Definitions/etsi_nfv_sol001_vnfd_types.yaml'] = `tosca_definitions_version: tosca_simple_yaml_1_3
node_types:
  tosca.nodes.nfv.VNF:
    derived_from: tosca.nodes.Root
    properties:
      descriptor_version: { type: string, default: '9.9' }
`;
    const m = parseVnfPackage(await throughCsar(files));
    assert.ok(m.definitionFiles.includes('Definitions/etsi_nfv_sol001_vnfd_types.yaml'));
    assert.equal(m.vnfdVersion, '2.0', 'the nearer default (acme.BaseVNF) wins over the ETSI one');
  });
});
