/**
 * The simulated garbage collector: when an owner disappears, dependents whose owners are all gone are
 * deleted (Background propagation), and references to the missing owner are dropped from dependents
 * that still have other owners. Owners in Foreground deletion (finalizer `foregroundDeletion`) get
 * their dependents deleted first and are removed once none are left. Dependents created with owners
 * that never existed are collected too.
 */
import type { KubeObject } from '../types.ts';
import type { ControllerContext } from './context.ts';

const FOREGROUND = 'foregroundDeletion';

/** Cascading deletion. */
export class GarbageCollector {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      const md = ev.obj.metadata;
      const uid = md.uid as string;
      if (ev.type === 'DELETED') {
        if (ctx.store.hasDependents(uid)) ctx.queue.add(`gc-owner:${uid}`, () => this.ownerGone(uid));
        for (const ref of md.ownerReferences ?? []) {
          const owner = ctx.store.getByUid(ref.uid);
          if (owner?.obj.metadata.finalizers?.includes(FOREGROUND)) ctx.queue.add(`gc-fg:${ref.uid}`, () => this.foreground(ref.uid));
        }
        return;
      }
      if (md.deletionTimestamp && md.finalizers?.includes(FOREGROUND)) ctx.queue.add(`gc-fg:${uid}`, () => this.foreground(uid));
      if (ev.type === 'ADDED' && md.ownerReferences?.length) ctx.queue.add(`gc-dep:${uid}`, () => this.checkDependent(uid));
    });
  }

  private ownerGone(ownerUid: string): void {
    for (const dep of this.ctx.store.dependentsOf(ownerUid)) this.checkDependent(dep.obj.metadata.uid as string);
  }

  private checkDependent(uid: string): void {
    const { store, api } = this.ctx;
    const entry = store.getByUid(uid);
    if (!entry) return;
    const obj = entry.obj;
    const refs = obj.metadata.ownerReferences ?? [];
    const alive = refs.filter((r) => {
      const o = store.getByUid(r.uid);
      return o && o.obj.metadata.name === r.name;
    });
    if (alive.length === refs.length) return;
    const ns = obj.metadata.namespace ?? '';
    const name = obj.metadata.name as string;
    if (alive.length === 0) {
      if (obj.metadata.deletionTimestamp) return;
      try {
        api.delete(entry.def, ns, name, { propagationPolicy: 'Background' });
      } catch {
        // already gone
      }
      return;
    }
    const keep = new Set(alive.map((r) => r.uid));
    api.mutate(entry.def, ns, name, (d) => {
      d.metadata.ownerReferences = (d.metadata.ownerReferences ?? []).filter((r) => keep.has(r.uid));
    });
  }

  private foreground(ownerUid: string): void {
    const { store, api } = this.ctx;
    const owner = store.getByUid(ownerUid);
    if (!owner?.obj.metadata.finalizers?.includes(FOREGROUND)) return;
    const deps = store.dependentsOf(ownerUid);
    if (deps.length === 0) {
      const o: KubeObject = owner.obj;
      api.mutate(owner.def, o.metadata.namespace ?? '', o.metadata.name as string, (d) => {
        d.metadata.finalizers = (d.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND);
        if (d.metadata.finalizers.length === 0) delete d.metadata.finalizers;
      });
      return;
    }
    for (const dep of deps) {
      if (dep.obj.metadata.deletionTimestamp) continue;
      try {
        api.delete(dep.def, dep.obj.metadata.namespace ?? '', dep.obj.metadata.name as string, { propagationPolicy: 'Foreground' });
      } catch {
        // already gone
      }
    }
  }
}
