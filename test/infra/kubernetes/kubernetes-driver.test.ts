/**
 * The Kubernetes driver against the simulated cluster over HTTPS: one CNF (samples/cnf-all-kinds:
 * Pod, ReplicaSet, Deployment, DaemonSet, StatefulSet) through instantiate, observe, VNFC heal of
 * each kind, scale, heal under a broken API (and its retry), whole-CNF heal, and terminate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import type { InfraDriver, ObservedResources, ObservedVnfc } from '../../../src/infra/infra-driver.ts';
import { createKubernetesDriver, INSTANCE_LABEL, KubeClient, VDU_LABEL } from '../../../src/infra/kubernetes/index.ts';
import type { VnfInstanceRecord } from '../../../src/model/vnf-instance.ts';
import { applyObserved, type CnfFixture, cnfFixture, makeCtx, newInstance, simControl, targetsFor } from './cnf-context.ts';

const NS = 'cnf-a';

function byVdu(obs: ObservedResources): Record<string, ObservedVnfc[]> {
  const out: Record<string, ObservedVnfc[]> = {};
  for (const v of obs.vnfcs) {
    out[v.vduId] ??= [];
    out[v.vduId]?.push(v);
  }
  return out;
}

function names(vs: readonly ObservedVnfc[] | undefined): string[] {
  return (vs ?? []).map((v) => v.computeResource.resourceId).sort();
}

describe('kubernetes driver: CNF lifecycle', () => {
  let fx: CnfFixture;
  let driver: InfraDriver;
  let instance: VnfInstanceRecord;
  let levels: Record<string, number>;
  const deletes: string[] = [];
  let breakAfterFirstDelete = false;

  before(async () => {
    fx = await cnfFixture({ kubeletDelayMs: 100 });
    await fx.kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    driver = createKubernetesDriver({
      client: { attempts: 3, baseDelayMs: 20, maxDelayMs: 100 },
      // Counts pod deletions, and can break the API right after the first one (mid-heal fault).
      clientFactory: (vim, o) => {
        const c = KubeClient.fromVim(vim, o);
        const del = c.delete.bind(c);
        c.delete = async (ref, opts) => {
          const r = await del(ref, opts);
          if (ref.kind === 'Pod') deletes.push(ref.name);
          if (breakAfterFirstDelete) {
            breakAfterFirstDelete = false;
            await simControl(fx.sim, 'POST', 'api/break', { dropWatches: true });
          }
          return r;
        };
        return c;
      },
    });
    instance = newInstance(fx.vnfd);
    levels = { web_deploy_aspect: 1, db_aspect: 0 };
  });

  after(async () => {
    await fx?.close();
  });

  async function observeInto(op: VnfInstanceRecord): Promise<ObservedResources> {
    const obs = await driver.observe(makeCtx(fx, op, { operation: 'HEAL', scaleLevels: levels }));
    applyObserved(op, obs, levels);
    return obs;
  }

  test('instantiate creates labelled objects in the requested namespace and waits for Ready pods', async () => {
    const req = { flavourId: 'simple', additionalParams: { namespace: NS } };
    const ctx = makeCtx(fx, instance, { operationParams: req, scaleLevels: levels });
    await driver.instantiate(ctx, req);
    const obs = await driver.observe(ctx);
    applyObserved(instance, obs, levels);

    const v = byVdu(obs);
    assert.deepEqual(
      Object.fromEntries(Object.entries(v).map(([k, xs]) => [k, xs.length])),
      { VDU1: 1, VDU2: 2, VDU3: 2, VDU4: 3, VDU5: 1 },
      'Pod 1, ReplicaSet 2, Deployment 2 (level 1), DaemonSet one per node (3), StatefulSet 1',
    );
    assert.equal(v.VDU1?.[0]?.computeResource.resourceId, 'web-pod');
    assert.equal(v.VDU1?.[0]?.stableKey, 'Pod/web-pod');
    assert.equal(v.VDU1?.[0]?.computeResource.vimLevelResourceType, 'Pod');
    assert.equal(v.VDU5?.[0]?.computeResource.resourceId, 'db-0');
    assert.equal(v.VDU5?.[0]?.stableKey, 'StatefulSet/db/0');
    assert.equal(v.VDU3?.[0]?.stableKey, undefined);
    for (const [vduId, kind] of Object.entries({ VDU2: 'ReplicaSet', VDU3: 'Deployment', VDU4: 'DaemonSet', VDU5: 'StatefulSet' })) {
      for (const x of v[vduId] ?? []) {
        assert.equal(x.computeResource.vimLevelResourceType, kind);
        assert.equal(x.metadata?.kind, kind);
        assert.equal(x.metadata?.namespace, NS);
        assert.equal(x.metadata?.ready, true);
        assert.equal(x.metadata?.podPhase, 'Running');
        assert.equal(typeof x.zoneId, 'string');
        assert.equal(x.zoneId, x.metadata?.nodeName);
      }
    }
    assert.deepEqual(new Set((v.VDU4 ?? []).map((x) => x.zoneId)).size, 3, 'one DaemonSet pod per node');
    // StatefulSet claim as storage, attached to its pod.
    assert.equal(obs.storages.length, 1);
    const pvc = obs.storages[0];
    assert.equal(pvc?.resourceId, `${NS}/data-db-0`);
    assert.equal(pvc?.virtualStorageDescId, 'data');
    assert.equal(pvc?.vimLevelResourceType, 'PersistentVolumeClaim');
    assert.equal(typeof pvc?.metadata?.uid, 'string');
    assert.deepEqual(v.VDU5?.[0]?.storageResourceIds, [`${NS}/data-db-0`]);
    assert.equal(obs.metadata?.namespace, NS);
    assert.deepEqual(obs.metadata?.['lcm-kubernetes-def-files'], fx.vnfd.kubernetesFiles);

    // Labels on the objects, on the pod templates and on the pods.
    const dep = await fx.kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-deploy', namespace: NS });
    assert.equal(dep?.metadata.labels?.[INSTANCE_LABEL], instance.id);
    assert.equal(dep?.spec.template.metadata.labels[INSTANCE_LABEL], instance.id);
    assert.equal(dep?.spec.template.metadata.labels[VDU_LABEL], 'VDU3');
    assert.equal(dep?.spec.replicas, 2, 'replicas from the instantiation level, not the manifest');
    const svc = await fx.kube.get({ apiVersion: 'v1', kind: 'Service', name: 'db', namespace: NS });
    assert.equal(svc?.metadata.labels?.[INSTANCE_LABEL], instance.id, 'non-VDU objects are labelled too');
    const pods = await fx.kube.list('v1', 'Pod', NS, { labelSelector: `${INSTANCE_LABEL}=${instance.id}` });
    assert.equal(pods.items.length, 9);
    // Remembered for later operations.
    assert.equal((ctx.state.kubernetes as { cnf: { namespace: string } }).cnf.namespace, NS);
  });

  test('heal of one pod of each kind replaces exactly those pods', async () => {
    const before = byVdu(await observeInto(instance));
    const pvcBefore = (await fx.kube.get({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data-db-0', namespace: NS }))?.metadata.uid;
    const targets = ['VDU1', 'VDU2', 'VDU3', 'VDU4', 'VDU5'].map((vdu) => before[vdu]?.[0]?.computeResource.resourceId as string);
    const uidOf = (vdu: string, name: string) => before[vdu]?.find((x) => x.computeResource.resourceId === name)?.metadata?.uid;
    deletes.length = 0;
    const ctx = makeCtx(fx, instance, { operation: 'HEAL', scaleLevels: levels });
    await driver.heal(ctx, { targets: targetsFor(instance, targets), entire: false, includeStorage: false, additionalParams: {} });
    assert.deepEqual([...deletes].sort(), [...targets].sort(), 'exactly the target pods were deleted');

    const after = byVdu(await driver.observe(ctx));
    for (const [i, vdu] of ['VDU1', 'VDU2', 'VDU3', 'VDU4', 'VDU5'].entries()) {
      const target = targets[i] as string;
      const others = names(before[vdu]).filter((n) => n !== target);
      assert.equal(after[vdu]?.length, before[vdu]?.length, `${vdu} keeps its pod count`);
      assert.ok(others.every((n) => names(after[vdu]).includes(n)), `${vdu}: the other pods are untouched`);
      for (const x of after[vdu] ?? []) assert.equal(x.metadata?.ready, true, `${vdu} ${x.computeResource.resourceId} Ready`);
      if (vdu === 'VDU1' || vdu === 'VDU5') {
        const healed = after[vdu]?.find((x) => x.computeResource.resourceId === target);
        assert.ok(healed, `${vdu}: same name ${target}`);
        assert.notEqual(healed?.metadata?.uid, uidOf(vdu, target), `${vdu}: new incarnation`);
      } else {
        assert.ok(!names(after[vdu]).includes(target), `${vdu}: ${target} is gone`);
      }
      // Other pods keep their incarnation.
      for (const n of others) assert.equal(after[vdu]?.find((x) => x.computeResource.resourceId === n)?.metadata?.uid, uidOf(vdu, n));
    }
    const pvcAfter = (await fx.kube.get({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data-db-0', namespace: NS }))?.metadata.uid;
    assert.equal(pvcAfter, pvcBefore, 'the StatefulSet pod re-attached its claim');
    await observeInto(instance);
  });

  test('heal of one Deployment pod, then of the singleton Pod: each returns with the replacement Ready', async () => {
    // How long a heal takes is measured by bench/cnf-heal.ts (docs/benchmarks.md), not asserted here.
    // A slow kubelet (1 s to start or stop a pod) makes "Ready when heal returns" mean that the
    // heal waited: the observation right after it is much quicker than a pod start.
    await simControl(fx.sim, 'PUT', 'kubelet', { delayMs: 1000 });
    try {
      const obs = await observeInto(instance);
      const pods = byVdu(obs);
      const pod = pods.VDU3?.[0]?.computeResource.resourceId as string;
      await driver.heal(makeCtx(fx, instance, { operation: 'HEAL', scaleLevels: levels }), { targets: targetsFor(instance, [pod]), entire: false, includeStorage: false, additionalParams: {} });
      const afterDeploy = byVdu(await observeInto(instance));
      assert.equal(afterDeploy.VDU3?.length, pods.VDU3?.length, 'same pod count');
      assert.ok(!names(afterDeploy.VDU3).includes(pod), `${pod} replaced`);
      assert.ok(afterDeploy.VDU3?.every((x) => x.metadata?.ready === true), 'every VDU3 pod Ready when heal returns');

      const single = pods.VDU1?.[0];
      const name = single?.computeResource.resourceId as string;
      await driver.heal(makeCtx(fx, instance, { operation: 'HEAL', scaleLevels: levels }), { targets: targetsFor(instance, [name]), entire: false, includeStorage: false, additionalParams: {} });
      const healed = byVdu(await observeInto(instance)).VDU1?.[0];
      assert.equal(healed?.computeResource.resourceId, name, 'a singleton Pod comes back under its name');
      assert.notEqual(healed?.metadata?.uid, single?.metadata?.uid, 'new incarnation');
      assert.equal(healed?.metadata?.ready, true, 'Ready when heal returns');
    } finally {
      await simControl(fx.sim, 'PUT', 'kubelet', { delayMs: 100 });
    }
  });

  test('scale out and in patches replicas and waits for the Ready count', async () => {
    levels = { web_deploy_aspect: 2, db_aspect: 1 };
    let ctx = makeCtx(fx, instance, { operation: 'SCALE', scaleLevels: levels });
    await driver.scale(ctx, { type: 'SCALE_OUT', aspectId: 'web_deploy_aspect', numberOfSteps: 1, fromLevel: 1, toLevel: 2, additionalParams: {} });
    await driver.scale(ctx, { type: 'SCALE_OUT', aspectId: 'db_aspect', numberOfSteps: 1, fromLevel: 0, toLevel: 1, additionalParams: {} });
    let obs = await observeInto(instance);
    assert.equal(byVdu(obs).VDU3?.length, 3);
    assert.deepEqual(names(byVdu(obs).VDU5), ['db-0', 'db-1']);
    assert.deepEqual(obs.storages.map((s) => s.resourceId), [`${NS}/data-db-0`, `${NS}/data-db-1`]);
    assert.ok(obs.vnfcs.every((x) => x.metadata?.ready === true));

    // Roll the db scale-out back: replicas at the aspect's previous level.
    ctx = makeCtx(fx, instance, { operation: 'SCALE', scaleLevels: levels });
    await driver.rollbackScaleOut(ctx, { type: 'SCALE_OUT', aspectId: 'db_aspect', numberOfSteps: 1, fromLevel: 0, toLevel: 1, additionalParams: {} });
    levels = { web_deploy_aspect: 2, db_aspect: 0 };
    obs = await observeInto(instance);
    assert.deepEqual(names(byVdu(obs).VDU5), ['db-0']);

    levels = { web_deploy_aspect: 1, db_aspect: 0 };
    ctx = makeCtx(fx, instance, { operation: 'SCALE', scaleLevels: levels });
    await driver.scale(ctx, { type: 'SCALE_IN', aspectId: 'web_deploy_aspect', numberOfSteps: 1, fromLevel: 2, toLevel: 1, additionalParams: {} });
    obs = await observeInto(instance);
    assert.equal(byVdu(obs).VDU3?.length, 2);
    const dep = await fx.kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-deploy', namespace: NS });
    assert.equal(dep?.spec.replicas, 2);
  });

  test('API failure during heal -> VNFM_ERR_VIM_UNREACHABLE; a retry with the same state completes', async () => {
    const obs = await observeInto(instance);
    const target = byVdu(obs).VDU2?.[0]?.computeResource.resourceId as string;
    const other = names(byVdu(obs).VDU2).find((n) => n !== target) as string;
    const state: Record<string, unknown> = {};
    deletes.length = 0;
    breakAfterFirstDelete = true;
    const plan = { targets: targetsFor(instance, [target]), entire: false, includeStorage: false, additionalParams: {} };
    await assert.rejects(
      driver.heal(makeCtx(fx, instance, { operation: 'HEAL', state, scaleLevels: levels }), plan),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_UNREACHABLE') && /503/.test(e.message),
    );
    assert.deepEqual(deletes, [target]);
    const healState = (state.kubernetes as { heal: { targets: { deleted?: boolean }[] } }).heal;
    assert.equal(healState.targets[0]?.deleted, true, 'the deletion was checkpointed');

    await simControl(fx.sim, 'DELETE', 'api/break');
    await driver.heal(makeCtx(fx, instance, { operation: 'HEAL', state, scaleLevels: levels }), plan);
    assert.deepEqual(deletes, [target], 'the retry did not delete anything again');
    const after = byVdu(await observeInto(instance));
    assert.equal(after.VDU2?.length, 2);
    assert.ok(names(after.VDU2).includes(other));
    assert.ok(!names(after.VDU2).includes(target));
    assert.ok((after.VDU2 ?? []).every((x) => x.metadata?.ready === true));
  });

  test('whole-CNF heal (resumed after an API outage) re-creates every pod and keeps the StatefulSet claim', async () => {
    const before = await observeInto(instance);
    const oldUids = new Set(before.vnfcs.map((x) => x.metadata?.uid));
    const pvcUid = before.storages[0]?.metadata?.uid;
    const depUid = (await fx.kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-deploy', namespace: NS }))?.metadata.uid;
    // An API outage in the middle of the deletions: FAILED_TEMP, then the retry carries on.
    const state: Record<string, unknown> = {};
    const plan = { targets: [], entire: true, includeStorage: true, additionalParams: {} };
    breakAfterFirstDelete = true;
    await assert.rejects(driver.heal(makeCtx(fx, instance, { operation: 'HEAL', state, scaleLevels: levels }), plan), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_UNREACHABLE'));
    assert.equal((state.kubernetes as { entire: { phase: string } }).entire.phase, 'delete');
    await simControl(fx.sim, 'DELETE', 'api/break');
    const ctx = makeCtx(fx, instance, { operation: 'HEAL', state, scaleLevels: levels });
    await driver.heal(ctx, plan);
    assert.equal((state.kubernetes as { entire: { phase: string } }).entire.phase, 'wait');
    const after = await driver.observe(ctx);
    assert.equal(after.vnfcs.length, before.vnfcs.length);
    assert.ok(after.vnfcs.every((x) => !oldUids.has(x.metadata?.uid)), 'every pod is new');
    assert.ok(after.vnfcs.every((x) => x.metadata?.ready === true));
    assert.deepEqual(names(byVdu(after).VDU5), ['db-0']);
    assert.equal(after.storages[0]?.metadata?.uid, pvcUid, 'same claim, re-attached');
    const dep = await fx.kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-deploy', namespace: NS });
    assert.notEqual(dep?.metadata.uid, depUid, 'the workloads were re-created');
    assert.equal(dep?.spec.replicas, 2, 'at the current scale level');
    applyObserved(instance, after, levels);
  });

  test('terminate deletes every object, its pods and (by default) its claims', async () => {
    const ctx = makeCtx(fx, instance, { operation: 'TERMINATE', scaleLevels: levels });
    await driver.terminate(ctx, { terminationType: 'FORCEFUL' });
    const sel = { labelSelector: `${INSTANCE_LABEL}=${instance.id}` };
    assert.equal((await fx.kube.list('v1', 'Pod', NS, sel)).items.length, 0, 'no pods left');
    for (const [apiVersion, kind] of [
      ['apps/v1', 'Deployment'],
      ['apps/v1', 'ReplicaSet'],
      ['apps/v1', 'DaemonSet'],
      ['apps/v1', 'StatefulSet'],
      ['v1', 'Service'],
    ] as const) {
      assert.equal((await fx.kube.list(apiVersion, kind, NS, sel)).items.length, 0, `no ${kind} left`);
    }
    assert.equal((await fx.kube.list('v1', 'PersistentVolumeClaim', NS)).items.length, 0, 'claims deleted (deletePvcs defaults to true)');
    const obs = await driver.observe(ctx);
    assert.deepEqual(obs.vnfcs, []);
    assert.deepEqual(obs.storages, []);
  });
});
