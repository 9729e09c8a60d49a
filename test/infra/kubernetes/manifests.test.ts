/**
 * Manifest planning of the Kubernetes driver: which files, which namespace, labels on objects,
 * pod templates and claim templates, replicas from the instance counts, VDU mapping and creation
 * order.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import { buildPlan, checkDeployedVdus, INSTANCE_LABEL, loadManifests, resolveDefFiles, resolveNamespace, VDU_LABEL, vdusOfManifests } from '../../../src/infra/kubernetes/manifests.ts';
import { buildCsarFromDir, readCsar } from '../../../src/packages/csar-reader.ts';
import type { FlavourModel, VnfPackageModel } from '../../../src/packages/vnfd-model.ts';
import { parseVnfPackage } from '../../../src/packages/vnfd-parser.ts';

const ID = '0b5f8a62-6a8e-4b8e-9a55-0c3e1c7c2f11';

describe('kubernetes manifests', () => {
  let vnfd: VnfPackageModel;
  let files: Map<string, Buffer>;
  let flavour: FlavourModel;

  before(async () => {
    files = await readCsar(buildCsarFromDir('samples/cnf-all-kinds'));
    vnfd = parseVnfPackage(files);
    flavour = vnfd.flavours.simple as FlavourModel;
  });

  test('def files: all package manifests by default, or the requested package files', () => {
    assert.deepEqual(resolveDefFiles(vnfd, {}), vnfd.kubernetesFiles);
    assert.ok(vnfd.kubernetesFiles.length >= 5);
    assert.deepEqual(resolveDefFiles(vnfd, { 'lcm-kubernetes-def-files': ['Files/kubernetes/pod.yaml', './Files/kubernetes/pod.yaml'] }), ['Files/kubernetes/pod.yaml']);
    assert.throws(() => resolveDefFiles(vnfd, { 'lcm-kubernetes-def-files': ['Files/kubernetes/nope.yaml'] }), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /no file 'Files\/kubernetes\/nope.yaml'/.test(e.message));
    assert.throws(() => resolveDefFiles(vnfd, { 'lcm-kubernetes-def-files': ['https://example.com/x.yaml'] }), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /URL/.test(e.message));
    assert.throws(() => resolveDefFiles(vnfd, { 'lcm-kubernetes-def-files': [] }), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID'));
  });

  test('manifests: multi-document files, empty documents and List kinds', () => {
    const m = new Map<string, Buffer>([
      ['a.yaml', Buffer.from('---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n')],
      ['bad.yaml', Buffer.from('kind: ConfigMap\nmetadata: {name: x}\n')],
    ]);
    assert.deepEqual(
      loadManifests(m, ['a.yaml']).map((o) => `${o.kind}/${o.metadata.name}`),
      ['ConfigMap/a', 'Secret/s'],
    );
    assert.throws(() => loadManifests(m, ['bad.yaml']), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /apiVersion, kind and metadata.name/.test(e.message));
  });

  test('namespace: request, else the manifests, else default; several namespaces refused', () => {
    const obj = (ns?: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', ...(ns ? { namespace: ns } : {}) } });
    assert.equal(resolveNamespace([obj('a')], 'req'), 'req');
    assert.equal(resolveNamespace([obj('a'), obj()], undefined), 'a');
    assert.equal(resolveNamespace([obj()], undefined), 'default');
    assert.equal(resolveNamespace([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n', namespace: 'ignored' } }], undefined), 'default');
    assert.throws(() => resolveNamespace([obj('a'), obj('b')], undefined), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /several namespaces \(a, b\)/.test(e.message));
    assert.throws(() => resolveNamespace([obj()], 'Bad_NS'), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID'));
  });

  test('plan: labels everywhere, VDU mapping, replicas from counts, creation order', () => {
    const defFiles = resolveDefFiles(vnfd, {});
    const plan = buildPlan({ objects: loadManifests(files, defFiles), defFiles, namespace: 'ns1', instanceId: ID, flavour, vduCounts: { VDU2: 2, VDU3: 3, VDU5: 2 } });
    const kinds = plan.objects.map((o) => o.ref.kind);
    assert.ok(kinds.indexOf('Service') < kinds.indexOf('StatefulSet'), 'Service before the StatefulSet that names it');
    const byVdu = Object.fromEntries(plan.objects.filter((o) => o.vduId).map((o) => [o.vduId, o]));
    assert.deepEqual(Object.keys(byVdu).sort(), ['VDU1', 'VDU2', 'VDU3', 'VDU4', 'VDU5']);
    assert.equal(byVdu.VDU1?.ref.kind, 'Pod');
    assert.equal(byVdu.VDU3?.body.spec.replicas, 3);
    assert.equal(byVdu.VDU5?.body.spec.replicas, 2);
    for (const o of plan.objects) {
      assert.equal(o.body.metadata.namespace, 'ns1');
      assert.equal(o.ref.namespace, 'ns1');
      assert.equal(o.body.metadata.labels?.[INSTANCE_LABEL], ID);
    }
    const sts = byVdu.VDU5?.body;
    assert.equal(sts?.spec.template.metadata.labels[INSTANCE_LABEL], ID);
    assert.equal(sts?.spec.template.metadata.labels[VDU_LABEL], 'VDU5');
    assert.equal(sts?.spec.template.metadata.labels.app, 'db', 'manifest labels kept');
    assert.equal(sts?.spec.volumeClaimTemplates[0].metadata.labels[INSTANCE_LABEL], ID);
    assert.equal(byVdu.VDU1?.body.metadata.labels?.[VDU_LABEL], 'VDU1');
    assert.deepEqual(plan.record.resources.find((r) => r.kind === 'StatefulSet')?.claimTemplates, ['data']);
    assert.equal(plan.record.namespace, 'ns1');
    assert.deepEqual(JSON.parse(JSON.stringify(plan.record)), plan.record, 'the record is plain JSON');
  });

  test('plan: a VDU without a workload of its name (all files), or two objects with one name, are refused', () => {
    const only = ['Files/kubernetes/pod.yaml'];
    assert.throws(
      () => buildPlan({ objects: loadManifests(files, only), defFiles: only, namespace: 'n', instanceId: ID, flavour, vduCounts: {}, subset: false }),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /VDU2 \(name 'web-rs'\)/.test(e.message),
    );
    const all = resolveDefFiles(vnfd, {});
    const objs = loadManifests(files, all);
    assert.throws(
      () => buildPlan({ objects: [...objs, objs[0] as (typeof objs)[number]], defFiles: all, namespace: 'n', instanceId: ID, flavour, vduCounts: {} }),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /twice/.test(e.message),
    );
  });

  test('subset: files naming some VDUs deploy only those; none at all is refused naming the files and the VDUs', () => {
    const some = ['Files/kubernetes/deployment.yaml', 'Files/kubernetes/statefulset.yaml'];
    const objects = loadManifests(files, some);
    assert.deepEqual(vdusOfManifests(objects, flavour), { deployed: ['VDU3', 'VDU5'], missing: ['VDU1', 'VDU2', 'VDU4'] });
    assert.deepEqual(checkDeployedVdus(objects, flavour, some, true), ['VDU3', 'VDU5']);
    const plan = buildPlan({ objects, defFiles: some, namespace: 'n', instanceId: ID, flavour, vduCounts: { VDU3: 3, VDU5: 1 } });
    assert.deepEqual(plan.objects.filter((o) => o.vduId !== undefined).map((o) => [o.vduId, o.body.spec?.replicas]), [['VDU3', 3], ['VDU5', 1]]);
    assert.deepEqual(plan.record.defFiles, some);
    // Not named by the request (every manifest of the package): every VDU needs its workload.
    assert.throws(() => checkDeployedVdus(objects, flavour, some, false), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /VDU1 \(name 'web-pod'\)/.test(e.message));
    // Nothing of the flavour: refused, naming the files and every VDU.
    const cm = [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-deploy' } }, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'other' } }];
    assert.throws(
      () => checkDeployedVdus(cm, flavour, ['Files/kubernetes/extras.yaml'], true),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /Files\/kubernetes\/extras\.yaml/.test(e.message) && ['VDU1', 'VDU2', 'VDU3', 'VDU4', 'VDU5'].every((v) => e.message.includes(v)),
    );
    assert.throws(() => buildPlan({ objects: cm, defFiles: ['x.yaml'], namespace: 'n', instanceId: ID, flavour, vduCounts: {} }), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID'));
  });
});
