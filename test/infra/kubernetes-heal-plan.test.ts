/**
 * The Kubernetes heal planner (src/infra/kubernetes/heal-plan.ts) without any cluster: pods and
 * workloads built by hand for a CNF of a Deployment (VDU1), a StatefulSet (VDU2), a singleton Pod
 * (VDU3) and a DaemonSet (VDU4).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isVnfmError } from '../../src/errors.ts';
import {
  affectedVdus,
  countsToRead,
  expectedPods,
  forceOnDownNodes,
  type HealState,
  healWaitPlan,
  planEntireHeal,
  planPodHeal,
  podsToDelete,
  singletonsToRecreate,
} from '../../src/infra/kubernetes/heal-plan.ts';
import type { KubeObject } from '../../src/infra/kubernetes/kube-client.ts';
import { VDU_LABEL } from '../../src/infra/kubernetes/manifests.ts';
import type { VduWorkload } from '../../src/infra/kubernetes/pods.ts';
import type { VnfcResourceInfo } from '../../src/model/vnf-instance.ts';

const NS = 'cnf';
const WORKLOADS: VduWorkload[] = [
  { vduId: 'VDU1', kind: 'Deployment', name: 'web', namespace: NS, apiVersion: 'apps/v1' },
  { vduId: 'VDU2', kind: 'StatefulSet', name: 'db', namespace: NS, apiVersion: 'apps/v1' },
  { vduId: 'VDU3', kind: 'Pod', name: 'single', namespace: NS, apiVersion: 'v1' },
  { vduId: 'VDU4', kind: 'DaemonSet', name: 'agent', namespace: NS, apiVersion: 'apps/v1' },
];

function pod(name: string, vduId: string, opts: { uid?: string; ready?: boolean; created?: string; terminating?: boolean; node?: string; phase?: string } = {}): KubeObject {
  const ready = opts.ready ?? true;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      uid: opts.uid ?? `uid-${name}`,
      labels: { [VDU_LABEL]: vduId },
      creationTimestamp: opts.created ?? '2026-01-01T00:00:00Z',
      ...(opts.terminating ? { deletionTimestamp: '2026-01-03T00:00:00Z' } : {}),
    },
    spec: { ...(opts.node === undefined ? {} : { nodeName: opts.node }) },
    status: { phase: opts.phase ?? 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  } as KubeObject;
}

function vnfc(id: string, vduId: string, podName: string, uid?: string): VnfcResourceInfo {
  return { id, vduId, computeResource: { resourceId: podName, vimLevelResourceType: 'Pod' }, ...(uid === undefined ? {} : { metadata: { uid } }) };
}

/** The CNF as last observed: 2 web pods, 2 db pods, the singleton, 1 agent pod. */
const KNOWN = [
  vnfc('v-web-a', 'VDU1', 'web-5d-a', 'uid-web-5d-a'),
  vnfc('v-web-b', 'VDU1', 'web-5d-b', 'uid-web-5d-b'),
  vnfc('v-db-0', 'VDU2', 'db-0', 'uid-db-0'),
  vnfc('v-db-1', 'VDU2', 'db-1', 'uid-db-1'),
  vnfc('v-single', 'VDU3', 'single', 'uid-single'),
  vnfc('v-agent', 'VDU4', 'agent-x', 'uid-agent-x'),
];
const byId = (id: string) => KNOWN.find((r) => r.id === id) as VnfcResourceInfo;
const knownResourceIds = new Set(KNOWN.map((r) => r.computeResource.resourceId));

function livePods(): KubeObject[] {
  return [
    pod('web-5d-a', 'VDU1', { node: 'n1' }),
    pod('web-5d-b', 'VDU1', { node: 'n2' }),
    pod('db-0', 'VDU2', { node: 'n1' }),
    pod('db-1', 'VDU2', { node: 'n2' }),
    pod('single', 'VDU3', { node: 'n1' }),
    pod('agent-x', 'VDU4', { node: 'n1' }),
  ];
}

function planOf(ids: string[], pods = livePods()) {
  return planPodHeal({ targets: ids.map(byId), workloads: WORKLOADS, pods, knownResourceIds });
}

/** `<requested>:<action>[:<pod>]` of each planned target. */
function summary(ids: string[], pods = livePods()): string[] {
  return planOf(ids, pods).targets.map((t) => `${t.requested}:${t.action}${t.podName !== undefined && t.podName !== t.requested ? `:${t.podName}` : ''}${t.deleted ? ':already-deleting' : ''}`);
}

describe('Kubernetes heal planner', () => {
  test('single VNFC: its pod (exact incarnation) is deleted', () => {
    const { targets, notes } = planOf(['v-web-a']);
    assert.deepEqual(targets, [{ vduId: 'VDU1', kind: 'Deployment', requested: 'web-5d-a', podName: 'web-5d-a', podUid: 'uid-web-5d-a', action: 'delete' }]);
    assert.deepEqual(notes, []);
  });

  test('several VNFCs of every kind, request order kept (cluster members: StatefulSet ordinals, DaemonSet pods)', () => {
    assert.deepEqual(summary(['v-db-1', 'v-web-b', 'v-single', 'v-agent']), ['db-1:delete', 'web-5d-b:delete', 'single:delete', 'agent-x:delete']);
  });

  test('whole VNF with all=false: every VNFC is a target, one by one', () => {
    assert.deepEqual(summary(KNOWN.map((r) => r.id)), ['web-5d-a:delete', 'web-5d-b:delete', 'db-0:delete', 'db-1:delete', 'single:delete', 'agent-x:delete']);
    assert.deepEqual(affectedVdus(planOf(KNOWN.map((r) => r.id)).targets), ['VDU1', 'VDU2', 'VDU3', 'VDU4']);
  });

  test('a target whose VDU has no workload in the CNF is refused', () => {
    const stray = vnfc('v-x', 'VDU9', 'x-1');
    assert.throws(
      () => planPodHeal({ targets: [stray], workloads: WORKLOADS, pods: livePods(), knownResourceIds }),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_FAILED') && /VNFC v-x: VDU VDU9 has no workload/.test(e.message),
    );
  });

  test('drift: a Ready replacement is accepted, a not Ready one deleted, each claimed once, oldest first', () => {
    // web-5d-a and web-5d-b are gone; Kubernetes made web-5d-c (Ready, older) and web-5d-d (not Ready).
    const pods = [pod('web-5d-c', 'VDU1', { created: '2026-01-02T00:00:00Z' }), pod('web-5d-d', 'VDU1', { ready: false, created: '2026-01-02T00:01:00Z' }), ...livePods().slice(2)];
    const { targets, notes } = planOf(['v-web-a', 'v-web-b'], pods);
    assert.deepEqual(targets.map((t) => [t.requested, t.action, t.podName]), [
      ['web-5d-a', 'accept', 'web-5d-c'],
      ['web-5d-b', 'delete', 'web-5d-d'],
    ]);
    assert.deepEqual(notes, [{ kind: 'accepted', requested: 'web-5d-a', replacement: 'web-5d-c' }]);
  });

  test('drift: no replacement yet: wait for the controller, or re-create a singleton Pod', () => {
    const pods = livePods().filter((p) => p.metadata.name !== 'web-5d-a' && p.metadata.name !== 'single');
    assert.deepEqual(summary(['v-web-a', 'v-single'], pods), ['web-5d-a:wait', 'single:recreate']);
    assert.deepEqual(planOf(['v-single'], pods).notes, [{ kind: 'missing', requested: 'single', vduId: 'VDU3' }]);
  });

  test('drift: a StatefulSet or singleton pod re-created under its name (new uid) is the replacement', () => {
    const pods = livePods().map((p) => (p.metadata.name === 'db-0' ? pod('db-0', 'VDU2', { uid: 'uid-db-0-new' }) : p.metadata.name === 'single' ? pod('single', 'VDU3', { uid: 'uid-single-new', ready: false }) : p));
    const { targets } = planOf(['v-db-0', 'v-single'], pods);
    assert.deepEqual(targets.map((t) => [t.action, t.podUid]), [
      ['accept', 'uid-db-0-new'],
      ['delete', 'uid-single-new'],
    ]);
  });

  test('a pod already being deleted needs no delete call', () => {
    const pods = livePods().map((p) => (p.metadata.name === 'db-1' ? pod('db-1', 'VDU2', { terminating: true }) : p));
    assert.deepEqual(summary(['v-db-1'], pods), ['db-1:delete:already-deleting']);
  });

  test('pods on a node that is not Ready are force-deleted', () => {
    const pods = livePods();
    const { targets } = planOf(['v-web-a', 'v-web-b', 'v-db-0'], pods);
    assert.deepEqual(podsToDelete(targets, pods).map((p) => p.metadata.name), ['web-5d-a', 'web-5d-b', 'db-0']);
    forceOnDownNodes(targets, pods, new Set(['n1']));
    assert.deepEqual(targets.map((t) => [t.requested, t.force === true]), [
      ['web-5d-a', true],
      ['web-5d-b', false],
      ['db-0', true],
    ]);
  });

  test('expected pods: 1 for a singleton, the live replicas (else the target count), none for a DaemonSet; a gone workload fails', () => {
    const { targets } = planOf(['v-web-a', 'v-db-0', 'v-single', 'v-agent']);
    const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db' }, spec: {} } as KubeObject;
    const live = new Map<string, KubeObject | undefined>([
      ['VDU1', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 3 } } as KubeObject],
      ['VDU2', sts],
      ['VDU4', { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'agent' }, spec: {} } as KubeObject],
    ]);
    const nameOf = (w: VduWorkload) => `${w.kind}/${w.name}`;
    assert.deepEqual(expectedPods(targets, WORKLOADS, live, { VDU2: 2 }, nameOf), { VDU1: 3, VDU2: 2, VDU3: 1 });
    live.set('VDU2', undefined);
    assert.throws(() => expectedPods(targets, WORKLOADS, live, {}, nameOf), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_FAILED') && /StatefulSet\/db does not exist any more/.test(e.message));
  });

  test('what the heal waits for, and the singletons it re-creates', () => {
    const h: HealState = {
      targets: [
        { vduId: 'VDU1', kind: 'Deployment', requested: 'web-5d-a', podName: 'web-5d-a', podUid: 'u1', action: 'delete', deleted: true },
        { vduId: 'VDU3', kind: 'Pod', requested: 'single', podName: 'single', podUid: 'u3', action: 'delete' },
        { vduId: 'VDU4', kind: 'DaemonSet', requested: 'agent-x', podName: 'agent-x', podUid: 'u4', action: 'accept' },
      ],
      expected: { VDU1: 2, VDU3: 1 },
    };
    const { expectations, goneUids } = healWaitPlan(h, WORKLOADS);
    assert.deepEqual(expectations.map((x) => [x.workload.vduId, x.expected]), [
      ['VDU1', 2],
      ['VDU3', 1],
      ['VDU4', undefined],
    ]);
    assert.deepEqual([...goneUids], ['u1', 'u3']);
    assert.deepEqual(singletonsToRecreate(h).map((t) => t.requested), ['single']);
    (h.targets[1] as { recreated?: boolean }).recreated = true;
    assert.deepEqual(singletonsToRecreate(h), []);
  });

  test('whole CNF (all=true): the old pods to see gone and the counts to re-create with', () => {
    const pods = livePods();
    assert.deepEqual(countsToRead(WORKLOADS, { VDU1: 2 }).map((w) => w.vduId), ['VDU2']);
    const e = planEntireHeal(WORKLOADS, pods, { VDU1: 2 }, new Map([['VDU2', 3]]));
    assert.deepEqual(e, { phase: 'delete', oldPodUids: pods.map((p) => p.metadata.uid), counts: { VDU1: 2, VDU2: 3 } });
    // A workload whose live count could not be read gets none (its manifest's replicas then apply).
    assert.deepEqual(planEntireHeal(WORKLOADS, [], {}, new Map()).counts, {});
  });
});
