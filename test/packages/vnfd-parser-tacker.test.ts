/**
 * Tacker's own sample packages must onboard unchanged, whether the ETSI SOL001 type files are
 * shipped (as Tacker's build does), shipped in a strictly valid form, imported by URL, or absent.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VnfPackageModel } from '../../src/packages/vnfd-model.ts';
import { parseVnfPackage } from '../../src/packages/vnfd-parser.ts';
import { type EtsiVariant, packageFiles, TACKER_PACKAGES, TACKER_SAMPLES, throughCsar } from './package-fixtures.ts';


type Variant = EtsiVariant | 'url-imports';
const VARIANTS: Variant[] = ['absent', 'tacker-copies', 'repaired-copies', 'url-imports'];

async function parseVariant(pkg: { dir: string; etsi: string }, variant: Variant): Promise<VnfPackageModel> {
  const files = packageFiles(pkg.dir, pkg.etsi, variant === 'url-imports' ? 'absent' : variant);
  if (variant === 'url-imports') {
    for (const [path, content] of files) {
      if (!path.startsWith('Definitions/')) continue;
      const text = content
        .toString('utf8')
        .replace(/- (etsi_nfv_sol001_\w+_types\.yaml)/g, '- https://forge.etsi.org/rep/nfv/SOL001/raw/v2.6.1/$1');
      files.set(path, Buffer.from(text));
    }
  }
  return parseVnfPackage(await throughCsar(files));
}

/** The model without the parts that legitimately differ between the variants. */
function core(m: VnfPackageModel): unknown {
  const { files: _f, definitionFiles: _d, warnings: _w, ...rest } = m;
  return rest;
}

function assertVariants(models: Map<Variant, VnfPackageModel>): void {
  const base = models.get('absent');
  assert.ok(base);
  for (const [v, m] of models) {
    assert.deepEqual(core(m), core(base), `variant ${v} gives the same model`);
    assert.deepEqual(JSON.parse(JSON.stringify(m)), m, `variant ${v} is JSON round-trippable`);
  }
  const tacker = models.get('tacker-copies');
  assert.ok(tacker?.definitionFiles.includes('Definitions/etsi_nfv_sol001_common_types.yaml'));
  assert.ok(tacker?.warnings.some((w) => /etsi_nfv_sol001_vnfd_types\.yaml:652:1: .*built-in definitions of its types are used instead/.test(w)));
  const repaired = models.get('repaired-copies');
  assert.ok(repaired?.definitionFiles.includes('Definitions/etsi_nfv_sol001_vnfd_types.yaml'));
  assert.ok(!repaired?.warnings.some((w) => w.includes('etsi_nfv_sol001')));
  assert.ok(!base.definitionFiles.some((f) => f.includes('etsi_nfv_sol001')));
}

async function allVariants(pkg: { dir: string; etsi: string }): Promise<Map<Variant, VnfPackageModel>> {
  const out = new Map<Variant, VnfPackageModel>();
  for (const v of VARIANTS) out.set(v, await parseVariant(pkg, v));
  return out;
}

describe('Tacker sample packages', () => {
  test('basic_lcms_min: VM VNF with an AutoScalingGroup VDU and BaseHOT', async () => {
    const models = await allVariants(TACKER_PACKAGES.basicLcmsMin);
    assertVariants(models);
    const m = models.get('absent') as VnfPackageModel;
    assert.equal(m.vnfdId, 'b1bb0ce7-ebca-4fa7-95ed-4840d7000000');
    assert.equal(m.vnfProvider, 'Company');
    assert.equal(m.vnfProductName, 'Sample VNF');
    assert.equal(m.vnfSoftwareVersion, '1.0');
    assert.equal(m.vnfdVersion, '1.0');
    assert.deepEqual(m.vnfmInfo, ['Tacker']);
    assert.equal(m.vnfNodeType, 'company.provider.VNF');
    assert.equal(m.entryDefinitions, 'Definitions/v2_sample2_top.vnfd.yaml');
    assert.deepEqual(Object.keys(m.flavours), ['simple']);
    const f = m.flavours.simple;
    assert.ok(f);
    assert.equal(f.description, 'A simple flavour');
    assert.equal(f.definitionFile, 'Definitions/v2_sample2_df_simple.yaml');

    assert.deepEqual(Object.keys(f.vdus).sort(), ['VDU1', 'VDU2']);
    const vdu1 = f.vdus.VDU1;
    assert.ok(vdu1);
    assert.equal(vdu1.name, 'VDU1');
    assert.equal(vdu1.description, 'VDU1 compute node');
    assert.equal(vdu1.minInstances, 1);
    assert.equal(vdu1.maxInstances, 3);
    assert.equal(vdu1.initialDelta, 1);
    assert.deepEqual(vdu1.cpIds, ['VDU1_CP1']);
    assert.deepEqual(vdu1.virtualStorageIds, []);
    assert.equal(vdu1.swImage?.name, 'cirros-0.5.2-x86_64-disk');
    assert.equal(vdu1.swImage?.version, '0.5.2');
    assert.deepEqual(vdu1.swImage?.checksum, { algorithm: 'sha-256', hash: '932fcae93574e242dc3d772d5235061747dfe537668443a1f0567d893614b464' });
    assert.equal(vdu1.swImage?.diskFormat, 'qcow2');
    assert.deepEqual(vdu1.flavour, { virtualMemSize: '512 MB', numVirtualCpu: 1, localStorageSizes: ['3 GB'], requestedAdditionalCapabilityNames: ['m1.tiny'] });
    assert.equal(f.vdus.VDU2?.minInstances, 1);
    assert.equal(f.vdus.VDU2?.maxInstances, 1);

    assert.deepEqual(f.cps.VDU1_CP1, { cpId: 'VDU1_CP1', vduId: 'VDU1', virtualLinkId: 'internalVL3', order: 4, layerProtocols: ['ipv4'] });
    assert.equal(f.cps.VDU2_CP1?.vduId, 'VDU2');
    assert.deepEqual(f.virtualLinks.internalVL3?.protocolData, [{ associatedLayerProtocol: 'ipv4', ipVersion: 'ipv4', cidr: '192.168.5.0/24' }]);

    assert.deepEqual(f.scalingAspects, {
      VDU1_scale: { aspectId: 'VDU1_scale', name: 'VDU1_scale', description: 'VDU1 scaling aspect', maxScaleLevel: 2, stepDeltas: ['delta_1'], vduDeltas: { VDU1: { delta_1: 1 } } },
    });
    assert.deepEqual(f.instantiationLevels, {
      instantiation_level_1: { levelId: 'instantiation_level_1', description: 'Smallest size', scaleInfo: { VDU1_scale: 0 }, vduInstances: { VDU1: 1, VDU2: 1 } },
      instantiation_level_2: { levelId: 'instantiation_level_2', description: 'Largest size', scaleInfo: { VDU1_scale: 2 }, vduInstances: { VDU1: 3, VDU2: 1 } },
    });
    assert.equal(f.defaultInstantiationLevelId, 'instantiation_level_1');
    assert.deepEqual(f.placementRules, [{ ruleId: 'policy_affinity_group', type: 'AFFINITY', scope: 'nfvi_node', vduIds: ['VDU1', 'VDU2'] }]);

    assert.deepEqual(Object.keys(f.lcmHooks).sort(), [
      'change_external_connectivity_start',
      'instantiate_end',
      'instantiate_start',
      'modify_information_start',
      'terminate_end',
      'terminate_start',
    ]);
    assert.deepEqual(f.lcmHooks.instantiate_start, {
      hook: 'instantiate_start',
      artifactName: 'sample-script',
      file: 'Scripts/sample_script.py',
      type: 'tosca.artifacts.Implementation.Python',
      fileInPackage: false,
    });
    assert.ok(m.warnings.some((w) => /^Definitions\/v2_sample2_df_simple\.yaml:\d+:\d+: script Scripts\/sample_script\.py .* not in the package/.test(w)));

    assert.deepEqual(m.baseHotDirs, {
      simple: { flavourId: 'simple', dir: 'BaseHOT/simple', topTemplate: 'BaseHOT/simple/sample2.yaml', nestedTemplates: ['BaseHOT/simple/nested/VDU1.yaml'] },
    });
    assert.deepEqual(m.kubernetesFiles, []);
    assert.equal(m.manifestDigests, undefined);
    assert.ok(m.files.includes('TOSCA-Metadata/TOSCA.meta'));
  });

  test('server_notification: adds heal, scale and rollback hooks declared with a custom interface type', async () => {
    const models = await allVariants(TACKER_PACKAGES.serverNotification);
    assertVariants(models);
    const f = models.get('absent')?.flavours.simple;
    assert.ok(f);
    assert.deepEqual(Object.keys(f.lcmHooks).sort(), [
      'change_external_connectivity_start',
      'heal_end',
      'heal_start',
      'instantiate_end',
      'instantiate_rollback_start',
      'instantiate_start',
      'modify_information_start',
      'scale_end',
      'scale_rollback_start',
      'scale_start',
      'terminate_end',
      'terminate_start',
    ]);
    for (const h of Object.values(f.lcmHooks)) assert.equal(h.file, 'Scripts/sample_script.py');
    assert.equal(f.vdus.VDU1?.maxInstances, 3);
  });

  test('test_instantiate_cnf_resources: CNF with five workload kinds and per-file digests', async () => {
    const models = await allVariants(TACKER_PACKAGES.cnfResources);
    assertVariants(models);
    const m = models.get('absent') as VnfPackageModel;
    assert.equal(m.vnfdId, 'b1bb0ce7-ebca-4fa7-95ed-4840d7000000');
    const f = m.flavours.simple;
    assert.ok(f);
    const summary = Object.fromEntries(Object.values(f.vdus).map((v) => [v.vduId, [v.name, v.minInstances, v.maxInstances, v.initialDelta]]));
    assert.deepEqual(summary, {
      VDU1: ['vdu1', 1, 1, 1],
      VDU2: ['vdu2', 1, 3, 2],
      VDU3: ['vdu3', 1, 3, 1],
      VDU5: ['vdu5', 1, 3, 1],
      VDU6: ['vdu6', 1, 1, 1],
    });
    assert.deepEqual(Object.keys(f.scalingAspects).sort(), ['vdu2_aspect', 'vdu3_aspect', 'vdu5_aspect']);
    assert.deepEqual(f.scalingAspects.vdu5_aspect?.vduDeltas, { VDU5: { delta_1: 1 } });
    assert.deepEqual(f.instantiationLevels.instantiation_level_1?.scaleInfo, { vdu2_aspect: 1, vdu3_aspect: 0, vdu5_aspect: 0 });
    assert.deepEqual(f.instantiationLevels.instantiation_level_2?.vduInstances, { VDU1: 1, VDU2: 3, VDU3: 3, VDU5: 3 });
    assert.equal(Object.keys(f.lcmHooks).length, 10);
    assert.ok(f.lcmHooks.heal_start && f.lcmHooks.heal_end && f.lcmHooks.scale_start);
    assert.deepEqual(m.baseHotDirs, {});

    assert.equal(m.kubernetesFiles.length, 28);
    assert.ok(m.kubernetesFiles.includes('Files/kubernetes/statefulset.yaml'));
    const byName = (kind: string, name: string) => m.kubernetesResources.find((r) => r.kind === kind && r.name === name);
    assert.deepEqual(byName('StatefulSet', 'vdu5'), { file: 'Files/kubernetes/statefulset.yaml', index: 0, apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'vdu5', namespace: 'default' });
    assert.equal(byName('ReplicaSet', 'vdu3')?.file, 'Files/kubernetes/replicaset_service_secret.yaml');
    assert.equal(byName('ReplicaSet', 'vdu3')?.index, 2);
    assert.ok(byName('Pod', 'vdu1') && byName('Deployment', 'vdu2') && byName('DaemonSet', 'vdu6'));

    assert.ok(m.manifestDigests);
    assert.equal(Object.keys(m.manifestDigests).length, 28);
    assert.deepEqual(m.manifestDigests['Files/kubernetes/pod.yaml'], {
      algorithm: 'SHA-256',
      hash: 'f209377ea169abbceecc4f0b5c37cd686cc37e5dc03a668c06793692a63c5954',
      declaredIn: 'TOSCA-Metadata/TOSCA.meta:96',
    });
  });
});
