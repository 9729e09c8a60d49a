/**
 * In-memory object store of the simulated cluster (the simulator's "etcd").
 *
 * It keeps one global, monotonic resourceVersion counter like etcd's revision, indexes the objects the
 * controllers look up on every event (by uid, by owner uid, pods by node) so that reconciles stay
 * O(dependents) instead of O(cluster), keeps a bounded history of changes so watches can resume from a
 * resourceVersion, and notifies listeners synchronously after every write.
 *
 * Stored objects are treated as immutable: writers always pass a fresh object.
 */
import type { ResourceDef } from './resource-registry.ts';
import type { KubeObject } from './types.ts';

/** One change of the store, as watches and controllers see it. */
export interface StoreEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  def: ResourceDef;
  /** The object after the change (for DELETED: the last state, stamped with the deletion's rv). */
  obj: KubeObject;
  /** The object before the change (MODIFIED and DELETED). */
  old?: KubeObject;
  rv: number;
}

/** Listener called synchronously after each write. Listeners must not write to the store. */
export type StoreListener = (ev: StoreEvent) => void;

interface UidEntry {
  def: ResourceDef;
  obj: KubeObject;
}

/** Saved content of the store: every object (by store key) and the resourceVersion counter. */
export interface StoreSnapshot {
  rv: number;
  objects: { key: string; obj: KubeObject }[];
}

/** The simulated cluster's storage with change notification, indexes and watch history. */
export class ObjectStore {
  private rv = 1000;
  private readonly tables = new Map<string, Map<string, Map<string, KubeObject>>>();
  private readonly byUid = new Map<string, UidEntry>();
  private readonly dependents = new Map<string, Set<string>>();
  private readonly podsByNode = new Map<string, Set<string>>();
  private readonly listeners: StoreListener[] = [];
  private history: StoreEvent[] = [];
  private historyStart = 0;
  /** Highest rv whose event is no longer in the history (watches from older rvs get 410 Gone). */
  private compactedRv = 1000;

  constructor(private readonly historyLimit = 10000) {}

  /** The latest resourceVersion handed out. */
  currentRv(): number {
    return this.rv;
  }

  /** Every object and the resourceVersion counter (JSON-serialisable; restored by {@link restore}). */
  snapshot(): StoreSnapshot {
    const objects: { key: string; obj: KubeObject }[] = [];
    for (const [key, byNs] of this.tables) for (const t of byNs.values()) for (const obj of t.values()) objects.push({ key, obj });
    return { rv: this.rv, objects };
  }

  /**
   * Replaces the content with a saved one, objects verbatim (uids, resourceVersions, generations).
   * The watch history starts empty at the saved resourceVersion: a watch from an older one gets
   * 410 Gone and re-lists, as after an etcd compaction. Then every object is announced to the
   * listeners as ADDED (not to watches), so the controllers reconcile what they find the way a
   * restarted controller manager does: pending pods are scheduled and started, terminating ones
   * finish, workloads converge. Call once at start, before any request.
   */
  restore(s: StoreSnapshot, defOf: (key: string) => ResourceDef | undefined): void {
    this.tables.clear();
    this.byUid.clear();
    this.dependents.clear();
    this.podsByNode.clear();
    const loaded: { def: ResourceDef; obj: KubeObject }[] = [];
    for (const { key, obj } of s.objects) {
      const def = defOf(key);
      if (!def) continue;
      const ns = def.namespaced ? (obj.metadata.namespace ?? '') : '';
      this.table(def, ns, true)?.set(obj.metadata.name as string, obj);
      this.indexAdd(def, obj);
      loaded.push({ def, obj });
    }
    this.rv = s.rv;
    this.compactedRv = s.rv;
    this.history = [];
    this.historyStart = 0;
    for (const { def, obj } of loaded) {
      const ev: StoreEvent = { type: 'ADDED', def, obj, rv: Number(obj.metadata.resourceVersion ?? s.rv) };
      for (const l of [...this.listeners]) l(ev);
    }
  }

  /** Registers a change listener; returns an unsubscribe function. */
  subscribe(fn: StoreListener): () => void {
    this.listeners.push(fn);
    return () => {
      const i = this.listeners.indexOf(fn);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  private table(def: ResourceDef, ns: string, create: boolean): Map<string, KubeObject> | undefined {
    let byNs = this.tables.get(def.key);
    if (!byNs) {
      if (!create) return undefined;
      byNs = new Map();
      this.tables.set(def.key, byNs);
    }
    let t = byNs.get(ns);
    if (!t && create) {
      t = new Map();
      byNs.set(ns, t);
    }
    return t;
  }

  /** Reads one object (`ns` is `''` for cluster-scoped kinds). */
  get(def: ResourceDef, ns: string, name: string): KubeObject | undefined {
    return this.table(def, def.namespaced ? ns : '', false)?.get(name);
  }

  /** Reads an object by uid, whatever its kind. */
  getByUid(uid: string): UidEntry | undefined {
    return this.byUid.get(uid);
  }

  /** All objects of a kind, in one namespace or (ns undefined) everywhere. Insertion order. */
  list(def: ResourceDef, ns?: string): KubeObject[] {
    const byNs = this.tables.get(def.key);
    if (!byNs) return [];
    if (ns !== undefined && def.namespaced) return [...(byNs.get(ns)?.values() ?? [])];
    const out: KubeObject[] = [];
    for (const t of byNs.values()) for (const o of t.values()) out.push(o);
    return out;
  }

  /** Number of objects of a kind in a namespace. */
  count(def: ResourceDef, ns: string): number {
    return this.tables.get(def.key)?.get(ns)?.size ?? 0;
  }

  /** Objects whose ownerReferences name `ownerUid`. */
  dependentsOf(ownerUid: string): UidEntry[] {
    const set = this.dependents.get(ownerUid);
    if (!set) return [];
    const out: UidEntry[] = [];
    for (const uid of set) {
      const e = this.byUid.get(uid);
      if (e) out.push(e);
    }
    return out;
  }

  /** Whether any object still names `ownerUid` as owner. */
  hasDependents(ownerUid: string): boolean {
    return (this.dependents.get(ownerUid)?.size ?? 0) > 0;
  }

  /** Pods bound to a node. */
  podsOnNode(node: string): KubeObject[] {
    const set = this.podsByNode.get(node);
    if (!set) return [];
    const out: KubeObject[] = [];
    for (const uid of set) {
      const e = this.byUid.get(uid);
      if (e) out.push(e.obj);
    }
    return out;
  }

  private indexAdd(def: ResourceDef, obj: KubeObject): void {
    const uid = obj.metadata.uid as string;
    this.byUid.set(uid, { def, obj });
    for (const ref of obj.metadata.ownerReferences ?? []) {
      let s = this.dependents.get(ref.uid);
      if (!s) {
        s = new Set();
        this.dependents.set(ref.uid, s);
      }
      s.add(uid);
    }
    if (def.kind === 'Pod' && def.group === '' && obj.spec?.nodeName) {
      let s = this.podsByNode.get(obj.spec.nodeName);
      if (!s) {
        s = new Set();
        this.podsByNode.set(obj.spec.nodeName, s);
      }
      s.add(uid);
    }
  }

  private indexRemove(def: ResourceDef, obj: KubeObject): void {
    const uid = obj.metadata.uid as string;
    this.byUid.delete(uid);
    for (const ref of obj.metadata.ownerReferences ?? []) {
      const s = this.dependents.get(ref.uid);
      if (s) {
        s.delete(uid);
        if (s.size === 0) this.dependents.delete(ref.uid);
      }
    }
    if (def.kind === 'Pod' && def.group === '' && obj.spec?.nodeName) {
      const s = this.podsByNode.get(obj.spec.nodeName);
      if (s) {
        s.delete(uid);
        if (s.size === 0) this.podsByNode.delete(obj.spec.nodeName);
      }
    }
  }

  private emit(ev: StoreEvent): void {
    this.history.push(ev);
    if (this.history.length - this.historyStart > this.historyLimit) {
      const dropped = this.history[this.historyStart];
      if (dropped) this.compactedRv = dropped.rv;
      this.history[this.historyStart] = undefined as unknown as StoreEvent;
      this.historyStart++;
      if (this.historyStart > this.historyLimit) {
        this.history = this.history.slice(this.historyStart);
        this.historyStart = 0;
      }
    }
    for (const l of [...this.listeners]) l(ev);
  }

  /** Stores a new object, stamping its resourceVersion. The caller guarantees the name is free. */
  insert(def: ResourceDef, obj: KubeObject): KubeObject {
    const ns = def.namespaced ? (obj.metadata.namespace ?? '') : '';
    this.rv++;
    obj.metadata.resourceVersion = String(this.rv);
    this.table(def, ns, true)?.set(obj.metadata.name as string, obj);
    this.indexAdd(def, obj);
    this.emit({ type: 'ADDED', def, obj, rv: this.rv });
    return obj;
  }

  /** Replaces an existing object (same namespace/name/uid), stamping a new resourceVersion. */
  replace(def: ResourceDef, obj: KubeObject): KubeObject {
    const ns = def.namespaced ? (obj.metadata.namespace ?? '') : '';
    const name = obj.metadata.name as string;
    const t = this.table(def, ns, true) as Map<string, KubeObject>;
    const old = t.get(name);
    if (!old) throw new Error(`replace of missing object ${def.key} ${ns}/${name}`);
    this.rv++;
    obj.metadata.resourceVersion = String(this.rv);
    this.indexRemove(def, old);
    t.set(name, obj);
    this.indexAdd(def, obj);
    this.emit({ type: 'MODIFIED', def, obj, old, rv: this.rv });
    return obj;
  }

  /** Removes an object; returns its last state (stamped with the deletion's resourceVersion). */
  remove(def: ResourceDef, ns: string, name: string): KubeObject | undefined {
    const t = this.table(def, def.namespaced ? ns : '', false);
    const old = t?.get(name);
    if (!t || !old) return undefined;
    t.delete(name);
    this.indexRemove(def, old);
    this.rv++;
    const last: KubeObject = { ...old, metadata: { ...old.metadata, resourceVersion: String(this.rv) } };
    this.emit({ type: 'DELETED', def, obj: last, old, rv: this.rv });
    return last;
  }

  /**
   * Drops the whole watch history, as an etcd compaction at the current resourceVersion does: a
   * watch resuming from an older resourceVersion gets 410 Gone (`POST /_sim/watches/compact`).
   */
  compact(): number {
    this.compactedRv = this.rv;
    this.history = [];
    this.historyStart = 0;
    return this.rv;
  }

  /**
   * Changes after `rv` (exclusive), or `'expired'` when the history no longer reaches back that far
   * (the HTTP layer answers 410 Gone like the real server after compaction).
   */
  eventsSince(rv: number): StoreEvent[] | 'expired' {
    if (rv < this.compactedRv) return 'expired';
    const out: StoreEvent[] = [];
    // History is ordered by rv: binary search for the first event after rv.
    let lo = this.historyStart;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const e = this.history[mid] as StoreEvent;
      if (e.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.history.length; i++) out.push(this.history[i] as StoreEvent);
    return out;
  }

  /** Object counts per kind (for the `/_sim/state` summary). */
  counts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [key, byNs] of this.tables) {
      let n = 0;
      for (const t of byNs.values()) n += t.size;
      if (n > 0) out[key.startsWith('/') ? key.slice(1) : key] = n;
    }
    return out;
  }
}
