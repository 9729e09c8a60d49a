/**
 * Kubernetes driver edge cases against the simulated cluster: drift (pods replaced by Kubernetes
 * outside any operation), failed pods, resumed instantiate (adoption), foreign objects, rollback,
 * terminate keeping claims, readiness timeouts, and the API client's error mapping.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import type { InfraDriver, ObservedResources, ObservedVnfc } from '../../../src/infra/infra-driver.ts';
import { createKubernetesDriver, INSTANCE_LABEL, KubeApiError, KubeClient } from '../../../src/infra/kubernetes/index.ts';
import type { VnfInstanceRecord } from '../../../src/model/vnf-instance.ts';
import { applyObserved, type CnfFixture, cnfFixture, makeCtx, newInstance, simControl, targetsFor } from './cnf-context.ts';

const LEVELS = { web_deploy_aspect: 1, db_aspect: 0 };

function vdu(obs: ObservedResources, id: string): ObservedVnfc[] {
  return obs.vnfcs.filter((v) => v.vduId === id);
}

describe('kubernetes driver: drift, resume, conflicts, timeouts', () => {
  let fx: CnfFixture;
  let driver: InfraDriver;
  const deletes: string[] = [];

  before(async () => {
    fx = await cnfFixture({ kubeletDelayMs: 50 });
    for (const ns of ['edge-a', 'edge-b', 'edge-c', 'edge-d']) await fx.kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    driver = createKubernetesDriver({
      client: { attempts: 2, baseDelayMs: 20, maxDelayMs: 50 },
      clientFactory: (vim, o) => {
        const c = KubeClient.fromVim(vim, o);
        const del = c.delete.bind(c);
        c.delete = async (ref, opts) => {
          if (ref.kind === 'Pod') deletes.push(ref.name);
          return del(ref, opts);
        };
        return c;
      },
    });
  });

  after(async () => {
    await fx?.close();
  });

  async function instantiate(ns: string): Promise<VnfInstanceRecord> {
    const inst = newInstance(fx.vnfd);
    const req = { flavourId: 'simple', additionalParams: { namespace: ns } };
    const ctx = makeCtx(fx, inst, { operationParams: req, scaleLevels: LEVELS });
    await driver.instantiate(ctx, req);
    applyObserved(inst, await driver.observe(ctx), LEVELS);
    return inst;
  }

  async function observe(inst: VnfInstanceRecord): Promise<ObservedResources> {
    return driver.observe(makeCtx(fx, inst, { operation: 'HEAL', scaleLevels: LEVELS }));
  }

  /** Waits (test-side) until `pred` holds on the observed resources. */
  async function until(inst: VnfInstanceRecord, pred: (o: ObservedResources) => boolean): Promise<ObservedResources> {
    for (let i = 0; i < 200; i++) {
      const o = await observe(inst);
      if (pred(o)) return o;
      await sleep(25);
    }
    throw new Error('condition not reached');
  }

  let inst: VnfInstanceRecord;

  test('drift: a pod Kubernetes already replaced with a Ready pod is not deleted again', async () => {
    inst = await instantiate('edge-a');
    const before = await observe(inst);
    const stale = vdu(before, 'VDU2')[0]?.computeResource.resourceId as string;
    // Kubernetes replaces it outside any operation (eviction, node drain, ...).
    await fx.kube.delete({ apiVersion: 'v1', kind: 'Pod', name: stale, namespace: 'edge-a' }, { gracePeriodSeconds: 0 });
    const drifted = await until(inst, (o) => vdu(o, 'VDU2').length === 2 && !vdu(o, 'VDU2').some((v) => v.computeResource.resourceId === stale) && o.vnfcs.every((v) => v.metadata?.ready));
    const replacement = vdu(drifted, 'VDU2').find((v) => !(inst.instantiatedVnfInfo?.vnfcResourceInfo ?? []).some((r) => r.computeResource.resourceId === v.computeResource.resourceId));
    assert.ok(replacement);
    // The instance record still names the stale pod (no sync yet): heal it.
    deletes.length = 0;
    await driver.heal(makeCtx(fx, inst, { operation: 'HEAL', scaleLevels: LEVELS }), { targets: targetsFor(inst, [stale]), entire: false, includeStorage: false, additionalParams: {} });
    assert.deepEqual(deletes, [], 'the healthy replacement was accepted, not restarted');
    const after = await observe(inst);
    assert.equal(vdu(after, 'VDU2').find((v) => v.computeResource.resourceId === replacement.computeResource.resourceId)?.metadata?.uid, replacement.metadata?.uid);
    applyObserved(inst, after, LEVELS);
  });

  test('drift: a StatefulSet pod re-created under the same name is recognised by its uid', async () => {
    const before = await observe(inst);
    const oldUid = vdu(before, 'VDU5')[0]?.metadata?.uid;
    await fx.kube.delete({ apiVersion: 'v1', kind: 'Pod', name: 'db-0', namespace: 'edge-a' }, { gracePeriodSeconds: 0 });
    const drifted = await until(inst, (o) => vdu(o, 'VDU5')[0]?.metadata?.uid !== oldUid && vdu(o, 'VDU5')[0]?.metadata?.ready === true);
    deletes.length = 0;
    await driver.heal(makeCtx(fx, inst, { operation: 'HEAL', scaleLevels: LEVELS }), { targets: targetsFor(inst, ['db-0']), entire: false, includeStorage: false, additionalParams: {} });
    assert.deepEqual(deletes, []);
    assert.equal(vdu(await observe(inst), 'VDU5')[0]?.metadata?.uid, vdu(drifted, 'VDU5')[0]?.metadata?.uid);
    applyObserved(inst, await observe(inst), LEVELS);
  });

  test('a failed singleton Pod is observed unhealthy and healed under the same name', async () => {
    await simControl(fx.sim, 'POST', 'pods/edge-a/web-pod/fail', { exitCode: 137 });
    const failed = await until(inst, (o) => vdu(o, 'VDU1')[0]?.unhealthy === true);
    assert.equal(vdu(failed, 'VDU1')[0]?.metadata?.podPhase, 'Failed');
    const oldUid = vdu(failed, 'VDU1')[0]?.metadata?.uid;
    applyObserved(inst, failed, LEVELS);
    deletes.length = 0;
    await driver.heal(makeCtx(fx, inst, { operation: 'HEAL', scaleLevels: LEVELS }), { targets: targetsFor(inst, ['web-pod']), entire: false, includeStorage: false, additionalParams: { gracePeriodSeconds: 0 } });
    assert.deepEqual(deletes, ['web-pod']);
    const healed = vdu(await observe(inst), 'VDU1')[0];
    assert.equal(healed?.computeResource.resourceId, 'web-pod');
    assert.notEqual(healed?.metadata?.uid, oldUid);
    assert.equal(healed?.metadata?.ready, true);
    assert.equal(healed?.unhealthy, undefined);
    applyObserved(inst, await observe(inst), LEVELS);
  });

  test('instantiate resumed without its checkpoint adopts the objects it already created', async () => {
    const req = { flavourId: 'simple', additionalParams: { namespace: 'edge-a' } };
    const before = await observe(inst);
    await driver.instantiate(makeCtx(fx, inst, { operationParams: req, scaleLevels: LEVELS }), req);
    const after = await observe(inst);
    assert.deepEqual(
      after.vnfcs.map((v) => v.metadata?.uid).sort(),
      before.vnfcs.map((v) => v.metadata?.uid).sort(),
      'nothing re-created',
    );
  });

  test('watch streams dropped during a heal (and one failed request) do not break the wait', async () => {
    const before = await observe(inst);
    const target = vdu(before, 'VDU3')[0]?.computeResource.resourceId as string;
    const ref = { apiVersion: 'v1', kind: 'Pod', name: target, namespace: 'edge-a' };
    // A finalizer keeps the old pod in the API after its deletion, and the heal waits until it is
    // gone: the heal cannot end before the test removes the finalizer, so the watches are dropped
    // while it waits, whatever the machine's speed.
    await fx.kube.mergePatch(ref, { metadata: { finalizers: ['test.healvnfm.io/hold'] } });
    const state = async () => (await simControl(fx.sim, 'GET', 'state?pods=false')) as { watches: number; faults: { breakRemaining: number | string } };
    const poll = async (what: string, fn: () => Promise<boolean>) => {
      for (let i = 0; !(await fn()); i++) {
        if (i > 2400) throw new Error(`gave up waiting for ${what}`);
        await sleep(25);
      }
    };
    const logsBefore = fx.logs.length;
    const watchesBefore = (await state()).watches;
    let ended = false;
    const healing = driver.heal(makeCtx(fx, inst, { operation: 'HEAL', scaleLevels: LEVELS }), { targets: targetsFor(inst, [target]), entire: false, includeStorage: false, additionalParams: {} });
    void healing.finally(() => {
      ended = true;
    });
    try {
      // Positive sync point: the heal deleted the pod and opened the watches of its wait.
      await poll('the heal to wait on its watches', async () => (await fx.kube.get(ref))?.metadata.deletionTimestamp !== undefined && (await state()).watches > watchesBefore);
      await simControl(fx.sim, 'POST', 'api/break', { requests: 1, dropWatches: true });
      // The driver re-lists after its watches ended: that request gets the 503 (then it retries).
      await poll('the failed request', async () => (await state()).faults.breakRemaining === 0);
      assert.equal(ended, false, 'the heal is still waiting');
    } finally {
      await simControl(fx.sim, 'DELETE', 'faults');
      await fx.kube.mergePatch(ref, { metadata: { finalizers: null } }).catch(() => undefined);
    }
    await healing;
    const after = await observe(inst);
    assert.equal(vdu(after, 'VDU3').length, 2);
    assert.ok(!vdu(after, 'VDU3').some((v) => v.computeResource.resourceId === target));
    assert.ok(vdu(after, 'VDU3').every((v) => v.metadata?.ready === true));
    assert.equal(await fx.kube.get(ref), undefined, 'the old pod is gone');
    assert.ok(fx.logs.slice(logsBefore).some((l) => l.includes('retrying')), 'the failed request was retried');
    applyObserved(inst, after, LEVELS);
  });

  test('terminate GRACEFUL with deletePvcs false keeps the claims', async () => {
    const pvcUid = (await fx.kube.get({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data-db-0', namespace: 'edge-a' }))?.metadata.uid;
    await driver.terminate(makeCtx(fx, inst, { operation: 'TERMINATE', scaleLevels: LEVELS }), {
      terminationType: 'GRACEFUL',
      gracefulTerminationTimeout: 1,
      additionalParams: { deletePvcs: false },
    });
    assert.equal((await fx.kube.list('v1', 'Pod', 'edge-a', { labelSelector: `${INSTANCE_LABEL}=${inst.id}` })).items.length, 0);
    assert.equal((await fx.kube.list('apps/v1', 'StatefulSet', 'edge-a')).items.length, 0);
    const pvc = await fx.kube.get({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data-db-0', namespace: 'edge-a' });
    assert.equal(pvc?.metadata.uid, pvcUid, 'claim kept');
  });

  test('an existing object that is not ours fails instantiate; rollback removes only what we created', async () => {
    await fx.kube.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web-deploy', namespace: 'edge-b', labels: { app: 'foreign' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'foreign' } },
        template: { metadata: { labels: { app: 'foreign' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      },
    });
    const other = newInstance(fx.vnfd);
    const req = { flavourId: 'simple', additionalParams: { namespace: 'edge-b' } };
    const state: Record<string, unknown> = {};
    await assert.rejects(
      driver.instantiate(makeCtx(fx, other, { operationParams: req, state, scaleLevels: LEVELS }), req),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_FAILED') && /Deployment edge-b\/web-deploy already exists and does not belong/.test(e.message),
    );
    const created = (state.kubernetes as { created: string[] }).created;
    assert.ok(created.length > 0 && created.every((k) => !k.startsWith('Deployment/')));
    await driver.rollbackInstantiate(makeCtx(fx, other, { operationParams: req, state, scaleLevels: LEVELS }));
    const sel = { labelSelector: `${INSTANCE_LABEL}=${other.id}` };
    for (const [apiVersion, kind] of [
      ['v1', 'Pod'],
      ['apps/v1', 'ReplicaSet'],
      ['apps/v1', 'DaemonSet'],
      ['v1', 'Service'],
    ] as const) {
      assert.equal((await fx.kube.list(apiVersion, kind, 'edge-b', sel)).items.length, 0, `no ${kind} of ours left`);
    }
    const foreign = await fx.kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-deploy', namespace: 'edge-b' });
    assert.equal(foreign?.metadata.labels?.app, 'foreign', 'the foreign Deployment is untouched');
  });

  test('pods that do not become Ready in time -> VNFM_ERR_LCM_TIMEOUT naming the VDU and the counts', async () => {
    await simControl(fx.sim, 'PUT', 'kubelet', { delayMs: 60_000 });
    const other = newInstance(fx.vnfd);
    const req = { flavourId: 'simple', additionalParams: { namespace: 'edge-c' } };
    const state: Record<string, unknown> = {};
    try {
      // Pods take a minute to start: only the 0.3 s wait limit can end instantiate with this error.
      await assert.rejects(driver.instantiate(makeCtx(fx, other, { operationParams: req, state, scaleLevels: LEVELS, waitMs: 300 }), req), (e: unknown) => {
        assert.ok(isVnfmError(e, 'VNFM_ERR_LCM_TIMEOUT'), String(e));
        assert.match(e.message, /instantiate of VNF .*not reached within 0\.3 s/);
        assert.match(e.message, /VDU VDU3 \(Deployment web-deploy\): 0 of 2 pod\(s\) Ready/);
        return true;
      });
    } finally {
      await simControl(fx.sim, 'PUT', 'kubelet', { delayMs: 50 });
    }
    await driver.rollbackInstantiate(makeCtx(fx, other, { operationParams: req, state, scaleLevels: LEVELS }));
    assert.equal((await fx.kube.list('v1', 'Pod', 'edge-c', { labelSelector: `${INSTANCE_LABEL}=${other.id}` })).items.length, 0);
  });

  test('a pod on a failed node is force-deleted, so its heal does not hang on a kubelet that is gone', async () => {
    const other = await instantiate('edge-d');
    const obs = await observe(other);
    const victim = vdu(obs, 'VDU3')[0];
    const node = victim?.zoneId as string;
    await simControl(fx.sim, 'POST', `nodes/${node}/fail`, { evictAfterMs: 600_000 });
    try {
      const failed = await until(other, (o) => vdu(o, 'VDU3').some((v) => v.computeResource.resourceId === victim?.computeResource.resourceId && v.unhealthy === true));
      applyObserved(other, failed, LEVELS);
      // Without the force-delete the old pod would stay Terminating (its kubelet is gone) and the
      // heal would end in VNFM_ERR_LCM_TIMEOUT after waitMs: completing at all is the proof.
      await driver.heal(makeCtx(fx, other, { operation: 'HEAL', scaleLevels: LEVELS, waitMs: 60_000 }), {
        targets: targetsFor(other, [victim?.computeResource.resourceId as string]),
        entire: false,
        includeStorage: false,
        additionalParams: {},
      });
      const after = await observe(other);
      const pods = vdu(after, 'VDU3');
      assert.equal(pods.length, 2);
      assert.ok(!pods.some((v) => v.computeResource.resourceId === victim?.computeResource.resourceId));
      const replacement = pods.find((v) => !vdu(obs, 'VDU3').some((o) => o.computeResource.resourceId === v.computeResource.resourceId));
      assert.notEqual(replacement?.zoneId, node, 'rescheduled away from the failed node');
      assert.equal(replacement?.metadata?.ready, true);
      assert.ok(fx.logs.some((l) => l.includes('"force":true')), 'deleted with grace 0');
    } finally {
      await simControl(fx.sim, 'POST', `nodes/${node}/recover`);
    }
    await driver.terminate(makeCtx(fx, other, { operation: 'TERMINATE', scaleLevels: LEVELS }), { terminationType: 'FORCEFUL' });
    assert.equal((await fx.kube.list('v1', 'Pod', 'edge-d', { labelSelector: `${INSTANCE_LABEL}=${other.id}` })).items.length, 0);
  });

  test('observe: a deleted namespace is VNFM_ERR_INFRA_STACK_MISSING, never "no resources" (except where nothing is expected)', async () => {
    await fx.kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'edge-e' } });
    const inst = await instantiate('edge-e');
    assert.ok((await observe(inst)).vnfcs.length > 0);
    await fx.kube.delete({ apiVersion: 'v1', kind: 'Namespace', name: 'edge-e' });
    for (let i = 0; i < 1500 && (await fx.kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'edge-e' })) !== undefined; i++) await sleep(20);
    await assert.rejects(observe(inst), (e: unknown) => {
      assert.ok(isVnfmError(e, 'VNFM_ERR_INFRA_STACK_MISSING'), String(e));
      assert.equal(e.retryable, false);
      assert.match(e.message, /namespace edge-e does not exist/);
      return true;
    });
    // A terminate, or an instantiate that has not created anything yet, legitimately finds nothing.
    assert.deepEqual((await driver.observe(makeCtx(fx, inst, { operation: 'TERMINATE', scaleLevels: LEVELS }))).vnfcs, []);
    assert.deepEqual((await driver.observe(makeCtx(fx, inst, { operation: 'INSTANTIATE', scaleLevels: LEVELS }))).vnfcs, []);
  });

  test('API client: 404 -> undefined/gone, uid precondition -> 409, bad token or untrusted TLS -> VIM_FAILED, no server -> VIM_UNREACHABLE', async () => {
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm1', namespace: 'edge-c' };
    assert.equal(await fx.kube.get(ref), undefined);
    assert.equal(await fx.kube.delete(ref), 'gone');
    await fx.kube.create({ ...ref, metadata: { name: 'cm1', namespace: 'edge-c' }, data: { a: '1' } } as never);
    await assert.rejects(fx.kube.delete(ref, { uid: '00000000-0000-0000-0000-000000000000' }), (e: unknown) => KubeApiError.isStatus(e, 409));
    const patched = await fx.kube.mergePatch(ref, { data: { b: '2' } });
    assert.deepEqual(patched.data, { a: '1', b: '2' });
    await assert.rejects(fx.kube.create({ ...ref, metadata: { name: 'cm1', namespace: 'edge-c' } } as never), (e: unknown) => KubeApiError.isStatus(e, 409, 'AlreadyExists'));
    assert.equal(await fx.kube.delete(ref), 'deleted');

    const badToken = KubeClient.fromVim({ ...fx.vim, accessInfo: { bearer_token: 'wrong-token-value' } }, { attempts: 1 });
    await assert.rejects(badToken.list('v1', 'Pod', 'edge-c'), (e: unknown) => {
      assert.ok(isVnfmError(e, 'VNFM_ERR_VIM_FAILED'));
      assert.match(e.message, /401/);
      assert.doesNotMatch(e.message, /wrong-token-value/);
      return true;
    });
    const down = KubeClient.fromVim({ ...fx.vim, interfaceInfo: { endpoint: 'http://127.0.0.1:1' } }, { attempts: 2, baseDelayMs: 10, maxDelayMs: 20 });
    await assert.rejects(down.list('v1', 'Pod', 'default'), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_UNREACHABLE') && /2 attempt/.test(e.message));
    const untrusted = KubeClient.fromVim({ ...fx.vim, interfaceInfo: { endpoint: fx.sim.url } }, { attempts: 3, baseDelayMs: 10, maxDelayMs: 20 });
    await assert.rejects(untrusted.list('v1', 'Pod', 'default'), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_FAILED') && /TLS verification failed/.test(e.message));
    assert.throws(() => KubeClient.fromVim({ ...fx.vim, accessInfo: {} }), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_INVALID'));
  });
});
