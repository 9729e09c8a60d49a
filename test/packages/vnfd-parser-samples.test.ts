/**
 * Our own sample packages (samples/) parse into the expected model, and their Heat templates and
 * Kubernetes manifests agree with their VNFDs (names, counts), so demos and e2e tests can rely on them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { buildCsarFromDir, readCsar } from '../../src/packages/csar-reader.ts';
import type { FlavourModel, VnfPackageModel } from '../../src/packages/vnfd-model.ts';
import { parseVnfPackage, scaleLevelsAtInstantiationLevel, vnfcCountAtLevel } from '../../src/packages/vnfd-parser.ts';
import { REPO } from './package-fixtures.ts';

async function parseSample(name: string): Promise<{ model: VnfPackageModel; files: Map<string, Buffer> }> {
  const files = await readCsar(buildCsarFromDir(`${REPO}/samples/${name}`));
  return { model: parseVnfPackage(files), files };
}

function yamlOf(files: Map<string, Buffer>, path: string): Record<string, unknown> {
  const b = files.get(path);
  assert.ok(b, `${path} is in the package`);
  return parse(b.toString('utf8')) as Record<string, unknown>;
}

/** Every instantiation level's explicit VDU counts agree with its scale levels. */
function assertLevelsConsistent(f: FlavourModel): void {
  for (const levelId of Object.keys(f.instantiationLevels)) {
    assert.deepEqual(vnfcCountAtLevel(f, undefined, scaleLevelsAtInstantiationLevel(f, levelId)), vnfcCountAtLevel(f, levelId), `level ${levelId}`);
  }
}

describe('samples/vm-basic', () => {
  test('parses into the expected model', async () => {
    const { model: m } = await parseSample('vm-basic');
    assert.equal(m.vnfdId, '5a0c8a32-3b1e-4f2a-9d63-7c1f2e4b8a01');
    assert.equal(m.vnfProvider, 'Example Co');
    assert.equal(m.vnfProductName, 'Sample VNF');
    assert.equal(m.vnfSoftwareVersion, '1.0');
    assert.equal(m.vnfdVersion, '1.0');
    assert.deepEqual(m.warnings, []);
    const f = m.flavours.simple;
    assert.ok(f);
    const vdus = Object.fromEntries(Object.values(f.vdus).map((v) => [v.vduId, [v.name, v.minInstances, v.maxInstances, v.initialDelta, v.virtualStorageIds, v.cpIds]]));
    assert.deepEqual(vdus, {
      VDU1: ['VDU1', 1, 3, 1, ['VirtualStorage1'], ['VDU1_CP1']],
      VDU2: ['VDU2', 1, 1, 1, ['VirtualStorage2'], ['VDU2_CP1']],
    });
    assert.deepEqual(f.virtualStorages.VirtualStorage1, { id: 'VirtualStorage1', type: 'BlockStorage', sizeOfStorage: '1 GB' });
    assert.deepEqual(f.cps.VDU2_CP1, { cpId: 'VDU2_CP1', vduId: 'VDU2', virtualLinkId: 'internalVL1', order: 0, layerProtocols: ['ipv4'] });
    assert.equal(f.virtualLinks.internalVL1?.protocolData[0]?.cidr, '192.168.10.0/24');
    assert.deepEqual(f.scalingAspects.VDU1_scale?.vduDeltas, { VDU1: { delta_1: 1 } });
    assert.equal(f.scalingAspects.VDU1_scale?.maxScaleLevel, 2);
    assert.equal(f.defaultInstantiationLevelId, 'instantiation_level_1');
    assert.deepEqual(vnfcCountAtLevel(f, undefined), { VDU1: 2, VDU2: 1 });
    assert.deepEqual(vnfcCountAtLevel(f, 'instantiation_level_2'), { VDU1: 3, VDU2: 1 });
    assert.deepEqual(scaleLevelsAtInstantiationLevel(f, undefined), { VDU1_scale: 1 });
    assertLevelsConsistent(f);
    assert.deepEqual(f.lcmHooks, {
      heal_end: { hook: 'heal_end', artifactName: 'noop-hook', file: 'Scripts/noop_hook.sh', type: 'tosca.artifacts.Implementation.Bash', fileInPackage: true },
      instantiate_end: { hook: 'instantiate_end', artifactName: 'noop-hook', file: 'Scripts/noop_hook.sh', type: 'tosca.artifacts.Implementation.Bash', fileInPackage: true },
    });
    assert.deepEqual(m.baseHotDirs.simple, { flavourId: 'simple', dir: 'BaseHOT/simple', topTemplate: 'BaseHOT/simple/sample.yaml', nestedTemplates: ['BaseHOT/simple/nested/VDU1.yaml'] });
  });

  test('Heat resource names match the VNFD nodes and use the nfv parameter', async () => {
    const { model: m, files } = await parseSample('vm-basic');
    const f = m.flavours.simple as FlavourModel;
    const top = yamlOf(files, 'BaseHOT/simple/sample.yaml');
    const nested = yamlOf(files, 'BaseHOT/simple/nested/VDU1.yaml');
    const topRes = top.resources as Record<string, { type: string; properties?: Record<string, unknown> }>;
    const nestedRes = nested.resources as Record<string, { type: string }>;
    assert.deepEqual(top.parameters, { nfv: { type: 'json' } });
    assert.equal(topRes.VDU2?.type, 'OS::Nova::Server');
    assert.equal(topRes.VDU2_CP1?.type, 'OS::Neutron::Port');
    assert.equal(topRes.VirtualStorage2?.type, 'OS::Cinder::Volume');
    assert.equal(topRes.internalVL1?.type, 'OS::Neutron::Net');
    assert.equal(nestedRes.VDU1?.type, 'OS::Nova::Server');
    assert.equal(nestedRes.VDU1_CP1?.type, 'OS::Neutron::Port');
    assert.equal(nestedRes.VirtualStorage1?.type, 'OS::Cinder::Volume');
    const group = topRes.VDU1_scale_group;
    assert.equal(group?.type, 'OS::Heat::AutoScalingGroup');
    assert.equal(group?.properties?.min_size, f.vdus.VDU1?.minInstances);
    assert.equal(group?.properties?.max_size, f.vdus.VDU1?.maxInstances);
    assert.deepEqual(group?.properties?.desired_capacity, { get_param: ['nfv', 'VDU', 'VDU1', 'desired_capacity'] });
    assert.deepEqual(topRes.VDU2?.properties?.flavor, { get_param: ['nfv', 'VDU', 'VDU2', 'computeFlavourId'] });
    assert.deepEqual(topRes.VDU2?.properties?.image, { get_param: ['nfv', 'VDU', 'VDU2', 'vcImageId'] });
  });

  test('the hook script accepts its JSON input and exits 0', () => {
    const r = spawnSync('sh', [`${REPO}/samples/vm-basic/Scripts/noop_hook.sh`], { input: '{"hook":"heal_end","operation":"HEAL"}', encoding: 'utf8' });
    assert.equal(r.status, 0);
    assert.match(r.stderr, /heal_end/);
  });
});

describe('samples/cnf-all-kinds', () => {
  test('parses into the expected model', async () => {
    const { model: m } = await parseSample('cnf-all-kinds');
    assert.equal(m.vnfdId, 'c7e2b7a4-6f0d-4e8b-8a3f-2d9b1c0e5f02');
    assert.equal(m.vnfProvider, 'Example Co');
    assert.equal(m.vnfProductName, 'Sample CNF');
    assert.deepEqual(m.warnings, []);
    assert.deepEqual(m.baseHotDirs, {});
    const f = m.flavours.simple;
    assert.ok(f);
    const vdus = Object.fromEntries(Object.values(f.vdus).map((v) => [v.vduId, [v.name, v.minInstances, v.maxInstances, v.initialDelta]]));
    assert.deepEqual(vdus, {
      VDU1: ['web-pod', 1, 1, 1],
      VDU2: ['web-rs', 2, 2, 2],
      VDU3: ['web-deploy', 1, 3, 1],
      VDU4: ['node-agent', 1, 1, 1],
      VDU5: ['db', 1, 3, 1],
    });
    assert.deepEqual(Object.keys(f.scalingAspects).sort(), ['db_aspect', 'web_deploy_aspect']);
    assert.deepEqual(f.scalingAspects.web_deploy_aspect?.vduDeltas, { VDU3: { delta_1: 1 } });
    assert.deepEqual(f.scalingAspects.db_aspect?.vduDeltas, { VDU5: { delta_1: 1 } });
    assert.deepEqual(vnfcCountAtLevel(f, undefined), { VDU1: 1, VDU2: 2, VDU3: 2, VDU4: 1, VDU5: 1 });
    assert.deepEqual(vnfcCountAtLevel(f, 'instantiation_level_2'), { VDU1: 1, VDU2: 2, VDU3: 3, VDU4: 1, VDU5: 3 });
    assertLevelsConsistent(f);
    assert.deepEqual(f.lcmHooks, {});
    assert.deepEqual(m.kubernetesFiles, [
      'Files/kubernetes/daemonset.yaml',
      'Files/kubernetes/deployment.yaml',
      'Files/kubernetes/pod.yaml',
      'Files/kubernetes/replicaset.yaml',
      'Files/kubernetes/statefulset.yaml',
    ]);
  });

  test('each VDU name is the metadata.name of exactly one workload, one of each kind', async () => {
    const { model: m, files } = await parseSample('cnf-all-kinds');
    const f = m.flavours.simple as FlavourModel;
    const workloadKinds = new Set(['Pod', 'ReplicaSet', 'Deployment', 'DaemonSet', 'StatefulSet']);
    const kinds: string[] = [];
    const defaults = vnfcCountAtLevel(f, undefined);
    for (const vdu of Object.values(f.vdus)) {
      const matches = m.kubernetesResources.filter((r) => workloadKinds.has(r.kind) && r.name === vdu.name);
      assert.equal(matches.length, 1, `one workload named ${vdu.name}`);
      const w = matches[0];
      assert.ok(w);
      kinds.push(w.kind);
      if (w.kind === 'Pod' || w.kind === 'DaemonSet') continue;
      const text = files.get(w.file)?.toString('utf8') ?? '';
      const doc = text
        .split(/^---$/m)
        .map((d) => parse(d) as { kind?: string; spec?: { replicas?: number; volumeClaimTemplates?: unknown[] } } | null)
        .find((d) => d?.kind === w.kind);
      assert.equal(doc?.spec?.replicas, defaults[vdu.vduId], `${w.kind} ${vdu.name} replicas match the default instantiation level`);
      if (w.kind === 'StatefulSet') assert.equal(doc?.spec?.volumeClaimTemplates?.length, 1);
    }
    assert.deepEqual(kinds.sort(), [...workloadKinds].sort());
    assert.ok(m.kubernetesResources.some((r) => r.kind === 'Service' && r.name === 'db'));
  });
});
