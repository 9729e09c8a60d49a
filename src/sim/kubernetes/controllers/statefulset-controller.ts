/**
 * The simulated StatefulSet controller: stable pod names `<sts>-<ordinal>` created in order
 * (OrderedReady: each waits for the previous one to be Running and Ready; Parallel: all at once),
 * PersistentVolumeClaims `<template>-<sts>-<ordinal>` from `volumeClaimTemplates` that outlive pods
 * and the StatefulSet (unless the retention policy says Delete), replacement of deleted and Failed
 * pods under the same name, reverse-order scale-down and RollingUpdate with partition.
 */
import { templateHash } from '../names.ts';
import { clone } from '../patch.ts';
import { R } from '../resource-registry.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { controllerOf, controllerRef, isPodReady, ownedPods, podFromTemplate } from './helpers.ts';

/** Reconciles StatefulSets. */
export class StatefulSetController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.statefulsets) {
        if (ev.type !== 'DELETED') this.enqueue(ev.obj.metadata.namespace as string, ev.obj.metadata.name as string);
      } else if (ev.def === R.pods) {
        const ref = controllerOf(ev.obj) ?? controllerOf(ev.old);
        if (ref?.kind === 'StatefulSet') this.enqueue(ev.obj.metadata.namespace as string, ref.name);
      }
    });
  }

  private enqueue(ns: string, name: string): void {
    this.ctx.queue.add(`sts:${ns}/${name}`, () => this.reconcile(ns, name));
  }

  private ensureClaims(sts: KubeObject, ord: number): void {
    const { store, api, events } = this.ctx;
    const ns = sts.metadata.namespace as string;
    const name = sts.metadata.name as string;
    const policy = sts.spec?.persistentVolumeClaimRetentionPolicy ?? {};
    for (const t of (sts.spec?.volumeClaimTemplates ?? []) as Loose[]) {
      const claim = `${t.metadata?.name}-${name}-${ord}`;
      if (store.get(R.pvcs, ns, claim)) continue;
      const md: Loose = {
        name: claim,
        namespace: ns,
        labels: { ...(t.metadata?.labels ?? {}), ...(sts.spec?.selector?.matchLabels ?? {}) },
      };
      if (t.metadata?.annotations) md.annotations = clone(t.metadata.annotations);
      if (policy.whenDeleted === 'Delete') md.ownerReferences = [{ ...controllerRef(sts), controller: true }];
      try {
        api.create(R.pvcs, ns, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: md, spec: clone(t.spec ?? {}) });
        events.record(sts, 'Normal', 'SuccessfulCreate', `create Claim ${claim} Pod ${name}-${ord} in StatefulSet ${name} success`, 'statefulset-controller');
      } catch (err) {
        events.record(sts, 'Warning', 'FailedCreate', `create Claim ${claim} for Pod ${name}-${ord} in StatefulSet ${name} failed error: ${(err as Error).message}`, 'statefulset-controller');
      }
    }
  }

  private createPod(sts: KubeObject, ord: number, revision: string): void {
    const ns = sts.metadata.namespace as string;
    const name = sts.metadata.name as string;
    const podName = `${name}-${ord}`;
    this.ensureClaims(sts, ord);
    const pod = podFromTemplate(sts.spec.template, ns, sts, { name: podName }, {
      'controller-revision-hash': revision,
      'statefulset.kubernetes.io/pod-name': podName,
      'apps.kubernetes.io/pod-index': String(ord),
    });
    pod.spec.hostname = podName;
    if (sts.spec.serviceName) pod.spec.subdomain = sts.spec.serviceName;
    const claimVolumes = ((sts.spec.volumeClaimTemplates ?? []) as Loose[]).map((t) => ({
      name: t.metadata?.name,
      persistentVolumeClaim: { claimName: `${t.metadata?.name}-${name}-${ord}` },
    }));
    if (claimVolumes.length) {
      const names = new Set(claimVolumes.map((v) => v.name));
      pod.spec.volumes = [...((pod.spec.volumes ?? []) as Loose[]).filter((v) => !names.has(v.name)), ...claimVolumes];
    }
    this.ctx.api.create(R.pods, ns, pod);
    this.ctx.events.record(sts, 'Normal', 'SuccessfulCreate', `create Pod ${podName} in StatefulSet ${name} successful`, 'statefulset-controller');
  }

  private deletePod(sts: KubeObject, pod: KubeObject): void {
    try {
      this.ctx.api.delete(R.pods, pod.metadata.namespace as string, pod.metadata.name as string);
      this.ctx.events.record(sts, 'Normal', 'SuccessfulDelete', `delete Pod ${pod.metadata.name} in StatefulSet ${sts.metadata.name} successful`, 'statefulset-controller');
    } catch {
      // already gone
    }
  }

  private reconcile(ns: string, name: string): void {
    const { store, api } = this.ctx;
    const sts = store.get(R.statefulsets, ns, name);
    if (!sts || sts.metadata.deletionTimestamp) return;
    const uid = sts.metadata.uid as string;
    const want: number = sts.spec?.replicas ?? 1;
    const start: number = sts.spec?.ordinals?.start ?? 0;
    const parallel = sts.spec?.podManagementPolicy === 'Parallel';
    const revision = `${name}-${templateHash(sts.spec?.template ?? {})}`;
    const byOrd = new Map<number, KubeObject>();
    for (const p of ownedPods(store, uid)) {
      const m = /-(\d+)$/.exec(p.metadata.name as string);
      if (m && (p.metadata.name as string) === `${name}-${m[1]}`) byOrd.set(Number(m[1]), p);
    }
    const inRange = (o: number) => o >= start && o < start + want;
    const healthy = (p: KubeObject | undefined) => !!p && !p.metadata.deletionTimestamp && p.status?.phase === 'Running' && isPodReady(p);

    // Failed (or completed) pods are deleted and come back under the same name.
    for (const p of byOrd.values()) {
      const phase = p.status?.phase;
      if ((phase === 'Failed' || phase === 'Succeeded') && !p.metadata.deletionTimestamp) this.deletePod(sts, p);
    }
    let blocked = false;
    for (let ord = start; ord < start + want; ord++) {
      const pod = store.get(R.pods, ns, `${name}-${ord}`);
      if (!pod) {
        this.createPod(sts, ord, revision);
        if (!parallel) {
          blocked = true;
          break;
        }
        continue;
      }
      if (!healthy(pod) && !parallel) {
        blocked = true;
        break;
      }
    }
    // Scale down: highest ordinal first, one at a time unless Parallel.
    const condemned = [...byOrd.entries()].filter(([o, p]) => !inRange(o) && !p.metadata.deletionTimestamp).sort((a, b) => b[0] - a[0]);
    if (condemned.length) {
      const anyTerminating = [...byOrd.values()].some((p) => p.metadata.deletionTimestamp);
      const victims = parallel ? condemned : !blocked && !anyTerminating ? condemned.slice(0, 1) : [];
      for (const [ord, p] of victims) {
        this.deletePod(sts, p);
        if (sts.spec?.persistentVolumeClaimRetentionPolicy?.whenScaled === 'Delete') {
          for (const t of (sts.spec?.volumeClaimTemplates ?? []) as Loose[]) {
            try {
              api.delete(R.pvcs, ns, `${t.metadata?.name}-${name}-${ord}`);
            } catch {
              // already gone
            }
          }
        }
      }
    }
    // Rolling update: replace outdated pods from the highest ordinal down, one at a time.
    if ((sts.spec?.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate' && !blocked) {
      const partition: number = sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
      const current = [...byOrd.entries()].filter(([o]) => inRange(o));
      const allHealthy = current.length === want && current.every(([, p]) => healthy(p));
      if (allHealthy) {
        const outdated = current.filter(([o, p]) => o >= partition && p.metadata.labels?.['controller-revision-hash'] !== revision).sort((a, b) => b[0] - a[0]);
        const first = outdated[0];
        if (first) this.deletePod(sts, first[1]);
      }
    }
    // Status.
    const cur = store.get(R.statefulsets, ns, name);
    if (!cur) return;
    const pods = ownedPods(store, uid).filter((p) => !p.metadata.deletionTimestamp);
    const ready = pods.filter((p) => healthy(p)).length;
    const updated = pods.filter((p) => p.metadata.labels?.['controller-revision-hash'] === revision).length;
    const prevCurrent: string = cur.status?.currentRevision ?? revision;
    const done = updated === want && ready === want && pods.length === want;
    const currentRevision = done ? revision : prevCurrent;
    const currentReplicas = pods.filter((p) => p.metadata.labels?.['controller-revision-hash'] === currentRevision).length;
    const status: Loose = {
      observedGeneration: cur.metadata.generation,
      replicas: pods.length,
      readyReplicas: ready,
      currentReplicas,
      updatedReplicas: updated,
      availableReplicas: ready,
      currentRevision,
      updateRevision: revision,
      collisionCount: 0,
    };
    for (const k of ['readyReplicas', 'currentReplicas', 'updatedReplicas']) if (!status[k]) delete status[k];
    api.writeStatus(R.statefulsets, cur, status);
  }
}
