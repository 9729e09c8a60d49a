/**
 * Kubernetes driver and namespaces against the simulated cluster: a namespace that does not exist
 * is created (labelled `vnfm.io/created-for`) unless `vim.kubernetesCreateNamespace` is off; a
 * resumed instantiate recognises the namespace it created by that label; terminate and rollback
 * delete it only when nothing else (kept claims included) lives in it, idempotently. Plus the VDUs
 * a subset instantiate deploys (`deployedVdus`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import type { InfraDriver } from '../../../src/infra/infra-driver.ts';
import { createKubernetesDriver, INSTANCE_LABEL } from '../../../src/infra/kubernetes/index.ts';
import { CREATED_FOR_LABEL } from '../../../src/infra/kubernetes/manifests.ts';
import type { VnfInstanceRecord } from '../../../src/model/vnf-instance.ts';
import { applyObserved, type CnfFixture, cnfFixture, makeCtx, newInstance } from './cnf-context.ts';

const LEVELS = { web_deploy_aspect: 1, db_aspect: 0 };
const DEPLOY = ['Files/kubernetes/deployment.yaml'];

describe('kubernetes driver: namespaces', () => {
  let fx: CnfFixture;
  let driver: InfraDriver;

  before(async () => {
    fx = await cnfFixture({ kubeletDelayMs: 20 });
    driver = createKubernetesDriver({ client: { attempts: 2, baseDelayMs: 20, maxDelayMs: 50 } });
  });

  after(async () => {
    await fx?.close();
  });

  const ns = (name: string) => fx.kube.get({ apiVersion: 'v1', kind: 'Namespace', name });

  async function instantiate(inst: VnfInstanceRecord, namespace: string, state: Record<string, unknown> = {}, files = DEPLOY): Promise<void> {
    const req = { flavourId: 'simple', additionalParams: { namespace, 'lcm-kubernetes-def-files': files } };
    const ctx = makeCtx(fx, inst, { operationParams: req, scaleLevels: LEVELS, state });
    await driver.instantiate(ctx, req);
    applyObserved(inst, await driver.observe(ctx), LEVELS);
  }

  function terminate(inst: VnfInstanceRecord, state: Record<string, unknown> = {}, additionalParams: Record<string, unknown> = {}): Promise<void> {
    return driver.terminate(makeCtx(fx, inst, { operation: 'TERMINATE', scaleLevels: LEVELS, state }), { terminationType: 'FORCEFUL', additionalParams });
  }

  test('vim.kubernetesCreateNamespace off: a missing namespace fails the instantiate, nothing is created', async () => {
    const inst = newInstance(fx.vnfd);
    const req = { flavourId: 'simple', additionalParams: { namespace: 'ns-off', 'lcm-kubernetes-def-files': DEPLOY } };
    const ctx = makeCtx(fx, inst, { operationParams: req, scaleLevels: LEVELS });
    ctx.vimSettings.kubernetesCreateNamespace = false;
    await assert.rejects(driver.instantiate(ctx, req), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_FAILED') && /namespace ns-off does not exist.*kubernetesCreateNamespace is off/.test(e.message));
    assert.equal(await ns('ns-off'), undefined);
  });

  test('a resumed instantiate recognises the namespace it created by its label; terminate deletes it, a repeated terminate is fine', async () => {
    const inst = newInstance(fx.vnfd);
    // The create went through but the checkpoint after it was lost.
    await fx.kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns-resume', labels: { [CREATED_FOR_LABEL]: inst.id } } });
    await instantiate(inst, 'ns-resume');
    assert.equal(inst.instantiatedVnfInfo?.metadata?.namespaceCreatedByVnfm, true);
    // A VNF that existed in the same namespace under another instance's label would be foreign; here
    // only the instance's own objects and what Kubernetes adds to every namespace are there.
    await terminate(inst);
    assert.equal(await ns('ns-resume'), undefined, 'deleted');
    // Resumed without its checkpoint: everything already gone is fine.
    await terminate(inst);
  });

  test('terminate keeping the claims (deletePvcs false) keeps the namespace the VNFM created, saying why', async () => {
    const inst = newInstance(fx.vnfd);
    await instantiate(inst, 'ns-pvc', {}, ['Files/kubernetes/statefulset.yaml']);
    assert.equal((await ns('ns-pvc'))?.metadata.labels?.[CREATED_FOR_LABEL], inst.id);
    const logsBefore = fx.logs.length;
    await terminate(inst, {}, { deletePvcs: false });
    const live = await ns('ns-pvc');
    assert.ok(live && !live.metadata.deletionTimestamp, 'namespace kept');
    assert.ok(await fx.kube.get({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data-db-0', namespace: 'ns-pvc' }), 'claim kept');
    assert.ok(fx.logs.slice(logsBefore).some((l) => l.includes('namespace created for the instance is kept') && l.includes('PersistentVolumeClaim/data-db-0')));
  });

  test('a foreign ConfigMap keeps the namespace; the kube-root-ca.crt ConfigMap and default ServiceAccount do not', async () => {
    const a = newInstance(fx.vnfd);
    await instantiate(a, 'ns-cm');
    assert.ok(await fx.kube.get({ apiVersion: 'v1', kind: 'ConfigMap', name: 'kube-root-ca.crt', namespace: 'ns-cm' }));
    await fx.kube.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'theirs', namespace: 'ns-cm' } });
    await terminate(a);
    assert.ok(await ns('ns-cm'), 'kept for the foreign ConfigMap');
    assert.equal((await fx.kube.list('v1', 'Pod', 'ns-cm', { labelSelector: `${INSTANCE_LABEL}=${a.id}` })).items.length, 0);
  });

  test('rollback of an instantiate removes the namespace the VNFM created for it', async () => {
    const inst = newInstance(fx.vnfd);
    const state: Record<string, unknown> = {};
    await instantiate(inst, 'ns-rollback', state);
    await driver.rollbackInstantiate(makeCtx(fx, inst, { operationParams: { flavourId: 'simple', additionalParams: { namespace: 'ns-rollback', 'lcm-kubernetes-def-files': DEPLOY } }, state, scaleLevels: LEVELS }));
    assert.equal(await ns('ns-rollback'), undefined);
  });

  test('deployedVdus: the VDUs of the request files at instantiate, of the record later; none is 422', async () => {
    const inst = newInstance(fx.vnfd);
    const flavour = fx.vnfd.flavours.simple;
    assert.ok(flavour && driver.deployedVdus);
    const args = (files: string[] | undefined) => {
      const ctx = makeCtx(fx, inst, { operationParams: { flavourId: 'simple', additionalParams: files === undefined ? {} : { 'lcm-kubernetes-def-files': files } } });
      return { instance: inst, command: ctx.command, vnfd: fx.vnfd, flavour, files: ctx.files };
    };
    assert.deepEqual(await driver.deployedVdus(args(['Files/kubernetes/statefulset.yaml', 'Files/kubernetes/pod.yaml'])), ['VDU1', 'VDU5']);
    assert.deepEqual(await driver.deployedVdus(args(undefined)), ['VDU1', 'VDU2', 'VDU3', 'VDU4', 'VDU5']);
    await assert.rejects(driver.deployedVdus(args(['Files/kubernetes/nope.yaml'])), (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID'));
    // Later operations read the instance's record.
    await instantiate(inst, 'ns-vdus', {}, ['Files/kubernetes/deployment.yaml', 'Files/kubernetes/statefulset.yaml']);
    const heal = makeCtx(fx, inst, { operation: 'HEAL', operationParams: {} });
    assert.deepEqual(await driver.deployedVdus({ instance: inst, command: heal.command, vnfd: fx.vnfd, flavour, files: heal.files }), ['VDU3', 'VDU5']);
    await terminate(inst);
  });
});
