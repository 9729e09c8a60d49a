/**
 * CNF instantiate the Tacker way, end to end over HTTP against the simulated Kubernetes cluster:
 *
 * - namespaces: a namespace that does not exist is created by the VNFM, labelled
 *   `vnfm.io/created-for=<instance id>`, and deleted at terminate; a namespace that existed
 *   before (somebody else's) is never deleted; a VNFM-created namespace in which something else
 *   lives (a foreign pod) is kept at terminate.
 * - subset instantiate: `lcm-kubernetes-def-files` naming only some manifests deploys only their
 *   VDUs (instance info, grant request, resourceChanges), which heal and terminate then work on;
 *   files naming no VDU's workload are refused with 422 at once.
 *
 * A second package (a copy of samples/cnf-all-kinds with its own vnfdId and one more manifest,
 * `extras.yaml`, holding a ConfigMap and no VDU workload) serves the subset cases.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '../../src/infra/kubernetes/kube-client.ts';
import { CREATED_FOR_LABEL, INSTANCE_LABEL, VDU_LABEL } from '../../src/infra/kubernetes/manifests.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { csarOf, ROOT } from '../helpers/packages.ts';
import { type CnfEnv, createInstance, getInstance, isReady, type Json, opIdOf, podsOf, startCnfEnv, until, vnfcsOf, waitOp } from './cnf-fixture.ts';

const SUBSET_VNFD = 'c7e2b7a4-6f0d-4e8b-8a3f-2d9b1c0e5f99';

let env: CnfEnv;
let tmp: string;

/** Onboards a copy of the sample CNF with its own vnfdId and an extra manifest without VDU. */
async function onboardExtrasPackage(): Promise<void> {
  tmp = mkdtempSync(join(tmpdir(), 'cnf-ns-pkg-'));
  cpSync(join(ROOT, 'samples/cnf-all-kinds'), tmp, { recursive: true });
  const top = join(tmp, 'Definitions/sample_cnf_top.vnfd.yaml');
  writeFileSync(top, readFileSync(top, 'utf8').replace('c7e2b7a4-6f0d-4e8b-8a3f-2d9b1c0e5f02', SUBSET_VNFD));
  writeFileSync(join(tmp, 'Files/kubernetes/extras.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extras-cfg\ndata:\n  mode: fast\n');
  const pkg = await env.api('POST', '/vnfpkgm/v1/vnf_packages', {});
  assert.equal(pkg.status, 201, pkg.text);
  const up = await env.api('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, csarOf(tmp));
  assert.equal(up.status, 202, up.text);
  await until('extras package onboarded', async () => {
    const g = await env.api('GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
    assert.notEqual(g.body.onboardingState, 'ERROR', g.text);
    return g.body.onboardingState === 'ONBOARDED' && g.body.vnfdId === SUBSET_VNFD ? true : undefined;
  });
}

async function createOf(vnfdId: string, name: string): Promise<string> {
  const r = await env.api('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: name });
  assert.equal(r.status, 201, r.text);
  return r.body.id as string;
}

function instantiateBody(namespace: string, files: string[]): Json {
  return { flavourId: 'simple', additionalParams: { 'lcm-kubernetes-def-files': files, namespace }, vimConnectionInfo: { vim1: { vimId: env.vimId, vimType: 'kubernetes' } } };
}

async function instantiateV2(id: string, namespace: string, files: string[]): Promise<Json> {
  const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, instantiateBody(namespace, files)));
  return waitOp(env, opId, 'COMPLETED');
}

async function terminateV2(id: string): Promise<Json> {
  const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' }));
  return waitOp(env, opId, 'COMPLETED');
}

async function namespace(name: string): Promise<Json | undefined> {
  return (await env.kube.get({ apiVersion: 'v1', kind: 'Namespace', name })) as Json | undefined;
}

/** The grant request the VNFM sent for an op occ (stored with it). */
async function grantRequestOf(opId: string): Promise<Json> {
  const row = await env.vnfm.store.db.selectFrom('op_occ').select('grant_request').where('id', '=', opId).executeTakeFirstOrThrow();
  const gr = row.grant_request as unknown;
  return (typeof gr === 'string' ? JSON.parse(gr) : gr) as Json;
}

function foreignPod(name: string, ns: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels: { app: 'someone-else' } }, spec: { containers: [{ name: 'c', image: 'nginx:1.25' }] } };
}

const FULL = ['Files/kubernetes/pod.yaml', 'Files/kubernetes/replicaset.yaml', 'Files/kubernetes/deployment.yaml', 'Files/kubernetes/daemonset.yaml', 'Files/kubernetes/statefulset.yaml'];

before(async () => {
  env = await startCnfEnv();
  await onboardExtrasPackage();
});

after(async () => {
  await env?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('CNF namespaces (simulated Kubernetes)', () => {
  it('a namespace that does not exist is created, labelled for the instance, used, and deleted at terminate', async () => {
    const ns = 'cnf-ns-created';
    assert.equal(await namespace(ns), undefined);
    const id = await createInstance(env, 'v2', 'ns-created');
    const occ = await instantiateV2(id, ns, ['Files/kubernetes/deployment.yaml']);
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);
    const live = await namespace(ns);
    assert.ok(live, 'namespace created');
    assert.equal(live.metadata.labels[CREATED_FOR_LABEL], id);
    assert.equal(live.status.phase, 'Active');
    const pods = (await podsOf(env, ns, id)).filter(isReady);
    assert.equal(pods.length, 2, 'the Deployment runs in it');
    const inst = await getInstance(env, id);
    assert.equal(inst.instantiatedVnfInfo.metadata.namespace, ns);
    assert.equal(inst.instantiatedVnfInfo.metadata.namespaceCreatedByVnfm, true);

    const term = await terminateV2(id);
    expectEtsiValid('v2', 'VnfLcmOpOcc', term);
    assert.equal(await namespace(ns), undefined, 'namespace deleted at terminate');
    assert.equal((await getInstance(env, id)).instantiationState, 'NOT_INSTANTIATED');
  });

  it('a namespace created beforehand by somebody else is used and never deleted', async () => {
    const ns = 'cnf-ns-theirs';
    await env.kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { team: 'ops' } } });
    const id = await createInstance(env, 'v2', 'ns-theirs');
    await instantiateV2(id, ns, ['Files/kubernetes/deployment.yaml']);
    const live = await namespace(ns);
    assert.equal(live?.metadata.labels[CREATED_FOR_LABEL], undefined, 'not labelled as ours');
    assert.equal((await getInstance(env, id)).instantiatedVnfInfo.metadata.namespaceCreatedByVnfm, undefined);
    await terminateV2(id);
    // Give a wrongful deletion time to show.
    await sleep(300);
    const still = await namespace(ns);
    assert.ok(still && !still.metadata.deletionTimestamp, 'namespace kept');
    assert.equal(still.status.phase, 'Active');
    assert.deepEqual(await podsOf(env, ns, id), [], 'the CNF itself is gone');
  });

  it('a namespace the VNFM created is kept at terminate when a foreign pod lives in it', async () => {
    const ns = 'cnf-ns-shared';
    const id = await createInstance(env, 'v2', 'ns-shared');
    await instantiateV2(id, ns, ['Files/kubernetes/pod.yaml']);
    assert.equal((await namespace(ns))?.metadata.labels[CREATED_FOR_LABEL], id);
    await env.kube.create(foreignPod('squatter', ns));
    await terminateV2(id);
    await sleep(300);
    const still = await namespace(ns);
    assert.ok(still && !still.metadata.deletionTimestamp, 'namespace kept');
    const squatter = await env.kube.get({ apiVersion: 'v1', kind: 'Pod', name: 'squatter', namespace: ns });
    assert.ok(squatter && !squatter.metadata.deletionTimestamp, 'the foreign pod is untouched');
    assert.deepEqual(await podsOf(env, ns, id), [], 'the CNF itself is gone');
  });
});

describe('CNF subset instantiate (simulated Kubernetes)', () => {
  it('deploys only the VDUs of the given files: instance info, grant, resourceChanges; heal and terminate work on them', async () => {
    const ns = 'cnf-subset';
    const id = await createOf(SUBSET_VNFD, 'subset');
    const files = ['Files/kubernetes/deployment.yaml', 'Files/kubernetes/statefulset.yaml', 'Files/kubernetes/extras.yaml'];
    const opId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, instantiateBody(ns, files)));
    const occ = await waitOp(env, opId, 'COMPLETED');
    expectEtsiValid('v2', 'VnfLcmOpOcc', occ);

    // The cluster: VDU3 (2 pods) and VDU5 (1 pod), the extra ConfigMap; nothing else of the package.
    const pods = (await podsOf(env, ns, id)).filter((p) => !p.metadata.deletionTimestamp);
    const byVdu: Record<string, number> = {};
    for (const p of pods) byVdu[p.metadata.labels?.[VDU_LABEL] ?? ''] = (byVdu[p.metadata.labels?.[VDU_LABEL] ?? ''] ?? 0) + 1;
    assert.deepEqual(byVdu, { VDU3: 2, VDU5: 1 });
    const cfg = await env.kube.get({ apiVersion: 'v1', kind: 'ConfigMap', name: 'extras-cfg', namespace: ns });
    assert.equal(cfg?.metadata.labels?.[INSTANCE_LABEL], id);
    for (const [kind, apiVersion, name] of [['Pod', 'v1', 'web-pod'], ['ReplicaSet', 'apps/v1', 'web-rs'], ['DaemonSet', 'apps/v1', 'node-agent']] as const) {
      assert.equal(await env.kube.get({ apiVersion, kind, name, namespace: ns }), undefined, `${kind} ${name} not deployed`);
    }

    // The instance: VNFCs of the deployed VDUs only.
    const inst = await getInstance(env, id);
    const info = inst.instantiatedVnfInfo;
    assert.deepEqual([...new Set((info.vnfcResourceInfo as Json[]).map((r) => r.vduId))].sort(), ['VDU3', 'VDU5']);
    assert.equal(info.vnfcResourceInfo.length, 3);
    assert.equal(info.vnfcInfo.length, 3);
    assert.deepEqual(info.metadata['lcm-kubernetes-def-files'], files);
    assert.deepEqual((info.scaleStatus as Json[]).map((x) => `${x.aspectId}=${x.scaleLevel}`).sort(), ['db_aspect=0', 'web_deploy_aspect=1']);

    // The grant asked for exactly what was deployed.
    const gr = await grantRequestOf(opId);
    const computes = (gr.addResources as Json[]).filter((r) => r.type === 'COMPUTE');
    assert.deepEqual(computes.map((r) => r.vduId).sort(), ['VDU3', 'VDU3', 'VDU5']);
    assert.ok((gr.addResources as Json[]).every((r) => r.vduId === 'VDU3' || r.vduId === 'VDU5'), JSON.stringify(gr.addResources));

    // The op occ: ADDED VNFCs of the deployed VDUs only.
    const added = occ.resourceChanges.affectedVnfcs as Json[];
    assert.ok(added.every((a) => a.changeType === 'ADDED'));
    assert.deepEqual(added.map((a) => a.vduId).sort(), ['VDU3', 'VDU3', 'VDU5']);

    // Heal one of them.
    const [target] = vnfcsOf(inst, 'VDU5');
    assert.ok(target);
    const healId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.info.id] }));
    const healed = await waitOp(env, healId, 'COMPLETED');
    expectEtsiValid('v2', 'VnfLcmOpOcc', healed);
    assert.deepEqual((healed.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.vduId, a.changeType]), [[target.res.id, 'VDU5', 'MODIFIED']]);
    const healGrant = await grantRequestOf(healId);
    assert.deepEqual(((healGrant.addResources ?? []) as Json[]).map((r) => r.vduId), ['VDU5']);

    // Scale the deployed Deployment out: only VDU3 grows.
    const scaleId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/scale`, { type: 'SCALE_OUT', aspectId: 'web_deploy_aspect', numberOfSteps: 1 }));
    const scaled = await waitOp(env, scaleId, 'COMPLETED');
    expectEtsiValid('v2', 'VnfLcmOpOcc', scaled);
    assert.ok((scaled.resourceChanges.affectedVnfcs as Json[]).every((a) => a.vduId === 'VDU3' && a.changeType === 'ADDED'));
    const afterScale = (await getInstance(env, id)).instantiatedVnfInfo;
    assert.equal((afterScale.vnfcResourceInfo as Json[]).filter((r) => r.vduId === 'VDU5').length, 1);
    assert.deepEqual([...new Set((afterScale.vnfcResourceInfo as Json[]).map((r) => r.vduId))].sort(), ['VDU3', 'VDU5']);

    // Terminate removes exactly what was deployed (and the namespace the VNFM created for it).
    const termId = opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' }));
    const term = await waitOp(env, termId, 'COMPLETED');
    expectEtsiValid('v2', 'VnfLcmOpOcc', term);
    const termGrant = await grantRequestOf(termId);
    assert.deepEqual(((termGrant.removeResources ?? []) as Json[]).map((r) => r.vduId).sort(), (afterScale.vnfcResourceInfo as Json[]).map((r) => r.vduId).sort());
    assert.ok((term.resourceChanges.affectedVnfcs as Json[]).every((a) => a.changeType === 'REMOVED'));
    assert.equal(await namespace(ns), undefined);
  });

  it('files naming no VDU workload are refused at once with 422 naming the files and the VDUs', async () => {
    const id = await createOf(SUBSET_VNFD, 'subset-none');
    const r = await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, instantiateBody('cnf-subset-none', ['Files/kubernetes/extras.yaml']));
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.status, 422);
    assert.match(r.body.detail, /Files\/kubernetes\/extras\.yaml/);
    for (const vdu of ['VDU1', 'VDU2', 'VDU3', 'VDU4', 'VDU5']) assert.match(r.body.detail, new RegExp(vdu));
    const v1 = await env.api('POST', `/vnflcm/v1/vnf_instances/${id}/instantiate`, { flavourId: 'simple', additionalParams: { 'lcm-kubernetes-def-files': ['Files/kubernetes/extras.yaml'] } });
    assert.equal(v1.status, 422, v1.text);
    // Nothing was started, nothing was created.
    assert.equal((await getInstance(env, id)).instantiationState, 'NOT_INSTANTIATED');
    const ops = (await env.api('GET', '/vnflcm/v2/vnf_lcm_op_occs')).body as Json[];
    assert.deepEqual(ops.filter((o) => o.vnfInstanceId === id), []);
    assert.equal(await namespace('cnf-subset-none'), undefined);
  });

  it('the full set of files still deploys every VDU', async () => {
    const id = await createOf(SUBSET_VNFD, 'subset-full');
    await instantiateV2(id, 'cnf-subset-full', FULL);
    const vdus = new Set(((await getInstance(env, id)).instantiatedVnfInfo.vnfcResourceInfo as Json[]).map((r) => r.vduId));
    assert.deepEqual([...vdus].sort(), ['VDU1', 'VDU2', 'VDU3', 'VDU4', 'VDU5']);
    await terminateV2(id);
  });
});
