/**
 * The simulated volume provisioner and binder: a PersistentVolumeClaim with a storage class gets a
 * dynamically provisioned PersistentVolume `pvc-<claim uid>` and both become Bound at once; a claim
 * naming a volume (or with `storageClassName: ""`) binds to a matching Available volume. When a claim
 * goes away its volume is deleted (reclaim policy Delete) or Released (Retain).
 */
import { R } from '../resource-registry.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';

/** Provisions and binds volumes. */
export class StorageController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.pvcs) {
        const o = ev.obj;
        const key = `${o.metadata.namespace}/${o.metadata.name}`;
        if (ev.type === 'DELETED') ctx.queue.add(`pv-release:${o.metadata.uid}`, () => this.release(o));
        else if (!o.spec?.volumeName || o.status?.phase !== 'Bound') ctx.queue.add(`pvc:${key}`, () => this.bind(o.metadata.namespace as string, o.metadata.name as string));
      } else if (ev.def === R.pvs && ev.type !== 'DELETED' && ev.obj.status?.phase === 'Available') {
        ctx.queue.add('pvc:pending', () => {
          for (const c of ctx.store.list(R.pvcs)) if (c.status?.phase === 'Pending') this.bind(c.metadata.namespace as string, c.metadata.name as string);
        });
      }
    });
  }

  private bind(ns: string, name: string): void {
    const { store, api, events } = this.ctx;
    const pvc = store.get(R.pvcs, ns, name);
    if (!pvc || pvc.metadata.deletionTimestamp || pvc.status?.phase === 'Bound') return;
    const size = pvc.spec?.resources?.requests?.storage ?? '1Gi';
    const claimRef = { kind: 'PersistentVolumeClaim', namespace: ns, name, uid: pvc.metadata.uid, apiVersion: 'v1', resourceVersion: pvc.metadata.resourceVersion };
    let pv: KubeObject | undefined;
    const wanted = pvc.spec?.volumeName as string | undefined;
    if (wanted) {
      pv = store.get(R.pvs, '', wanted);
      if (!pv || (pv.spec?.claimRef && pv.spec.claimRef.uid !== pvc.metadata.uid)) return;
    } else if (pvc.spec?.storageClassName === '' || !store.get(R.storageclasses, '', pvc.spec?.storageClassName ?? '')) {
      pv = store.list(R.pvs).find((v) => v.status?.phase === 'Available' && !v.spec?.claimRef && (v.spec?.storageClassName ?? '') === (pvc.spec?.storageClassName ?? ''));
      if (!pv) return;
    }
    const pvName = pv ? (pv.metadata.name as string) : `pvc-${pvc.metadata.uid}`;
    if (pv) {
      api.mutate(R.pvs, '', pvName, (d) => {
        d.spec.claimRef = claimRef;
        d.status = { ...(d.status ?? {}), phase: 'Bound' };
      });
    } else {
      const body: Loose = {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: pvName, annotations: { 'pv.kubernetes.io/provisioned-by': 'sim.k8s.io/hostpath' } },
        spec: {
          capacity: { storage: size },
          accessModes: pvc.spec?.accessModes ?? ['ReadWriteOnce'],
          claimRef,
          persistentVolumeReclaimPolicy: 'Delete',
          storageClassName: pvc.spec?.storageClassName,
          volumeMode: pvc.spec?.volumeMode ?? 'Filesystem',
          hostPath: { path: `/var/lib/sim-volumes/${pvName}`, type: '' },
        },
      };
      const created = api.create(R.pvs, '', body);
      api.writeStatus(R.pvs, created, { phase: 'Bound' });
      events.record(pvc, 'Normal', 'ProvisioningSucceeded', `Successfully provisioned volume ${pvName}`, 'sim.k8s.io/hostpath');
    }
    const cap = store.get(R.pvs, '', pvName)?.spec?.capacity ?? { storage: size };
    api.mutate(R.pvcs, ns, name, (d) => {
      d.spec.volumeName = pvName;
      d.metadata.annotations = { ...(d.metadata.annotations ?? {}), 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' };
      d.status = { phase: 'Bound', accessModes: d.spec.accessModes, capacity: cap };
    });
  }

  private release(pvc: KubeObject): void {
    const { store, api } = this.ctx;
    const pvName = pvc.spec?.volumeName as string | undefined;
    if (!pvName) return;
    const pv = store.get(R.pvs, '', pvName);
    if (!pv || pv.spec?.claimRef?.uid !== pvc.metadata.uid) return;
    if (pv.spec?.persistentVolumeReclaimPolicy === 'Delete') {
      try {
        api.delete(R.pvs, '', pvName);
      } catch {
        // already gone
      }
    } else api.writeStatus(R.pvs, pv, { ...(pv.status ?? {}), phase: 'Released' });
  }
}
