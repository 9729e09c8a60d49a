/**
 * The API semantics of the simulated cluster, shared by the HTTP layer and the in-process
 * controllers: create / update / patch / delete with defaulting, validation, optimistic concurrency,
 * generation tracking, status subresource rules, graceful pod deletion, finalizers and propagation
 * policies. Keeping one implementation means a controller's write behaves exactly like a client's.
 */
import { ServiceAllocator } from './allocator.ts';
import { applyDefaults, validate } from './admission.ts';
import { ApiError, alreadyExists, badRequest, conflict, invalid, notFound } from './api-errors.ts';
import { newUid, nowTs, randomSuffix } from './names.ts';
import type { ObjectStore } from './object-store.ts';
import { clone, jsonPatch, mergePatch, PatchType, strategicMerge } from './patch.ts';
import { R, type ResourceDef } from './resource-registry.ts';
import type { KubeObject, Loose } from './types.ts';

/** Deletion propagation policies of `DeleteOptions`. */
export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';

/** The subset of `DeleteOptions` the simulator honours. */
export interface DeleteOpts {
  propagationPolicy?: PropagationPolicy;
  gracePeriodSeconds?: number;
  orphanDependents?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

/** Options of writes coming from clients. */
export interface WriteOpts {
  subresource?: 'status';
  dryRun?: boolean;
}

/** Result of a delete: the object as returned to the client and whether it is already gone. */
export interface DeleteResult {
  obj: KubeObject;
  removed: boolean;
}

function sameIgnoringRv(a: KubeObject, b: KubeObject): boolean {
  const ra = a.metadata.resourceVersion;
  const rb = b.metadata.resourceVersion;
  a.metadata.resourceVersion = undefined;
  b.metadata.resourceVersion = undefined;
  const eq = JSON.stringify(a) === JSON.stringify(b);
  a.metadata.resourceVersion = ra;
  b.metadata.resourceVersion = rb;
  return eq;
}

function isPod(def: ResourceDef): boolean {
  return def === R.pods;
}

/** API semantics over the object store. */
export class ClusterApi {
  readonly allocator = new ServiceAllocator();
  /** Pods whose termination the kubelet has finished (removable once finalizers are gone). */
  private readonly terminated = new Set<string>();

  constructor(readonly store: ObjectStore) {
    store.subscribe((ev) => {
      if (ev.type !== 'DELETED') return;
      if (ev.def === R.services) this.releaseService(ev.obj);
      if (ev.def === R.pods) this.terminated.delete(ev.obj.metadata.uid as string);
    });
  }

  /** Reads an object or throws 404. */
  get(def: ResourceDef, ns: string, name: string): KubeObject {
    const o = this.store.get(def, ns, name);
    if (!o) throw notFound(def, name);
    return o;
  }

  private checkNamespace(def: ResourceDef, ns: string): void {
    if (!def.namespaced) return;
    const n = this.store.get(R.namespaces, '', ns);
    if (!n) throw notFound(R.namespaces, ns);
    if (n.metadata.deletionTimestamp) {
      throw new ApiError(403, 'Forbidden', `${def.plural} "${''}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`, { kind: def.plural });
    }
  }

  private checkTypeMeta(def: ResourceDef, obj: Loose): void {
    if (obj.apiVersion !== undefined && obj.apiVersion !== def.apiVersion) {
      throw badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${def.apiVersion})`);
    }
    if (obj.kind !== undefined && obj.kind !== def.kind) {
      throw badRequest(`the kind in the data (${obj.kind}) does not match the expected kind (${def.kind})`);
    }
  }

  /** Creates an object (POST). */
  create(def: ResourceDef, ns: string, body: Loose, opts: WriteOpts = {}): KubeObject {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('the body of the request must be a JSON object');
    this.checkTypeMeta(def, body);
    const obj = clone(body) as KubeObject;
    obj.apiVersion = def.apiVersion;
    obj.kind = def.kind;
    obj.metadata = obj.metadata && typeof obj.metadata === 'object' ? obj.metadata : {};
    const md = obj.metadata;
    if (def.namespaced) {
      if (md.namespace && md.namespace !== ns) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      md.namespace = ns;
    } else delete md.namespace;
    if (!md.name && md.generateName) {
      for (let i = 0; i < 10; i++) {
        md.name = `${md.generateName}${randomSuffix()}`;
        if (!this.store.get(def, ns, md.name)) break;
      }
    }
    md.uid = newUid();
    md.creationTimestamp = nowTs();
    delete md.resourceVersion;
    delete md.deletionTimestamp;
    delete md.deletionGracePeriodSeconds;
    delete md.managedFields;
    delete md.selfLink;
    if (def.generation) md.generation = 1;
    else delete md.generation;
    // Reorder so metadata comes first like the real server's output.
    applyDefaults(def, obj, true);
    const causes = validate(def, obj);
    if (causes.length) throw invalid(def, md.name ?? '', causes);
    this.checkNamespace(def, ns);
    if (this.store.get(def, ns, md.name as string)) throw alreadyExists(def, md.name as string);
    if (def === R.services) this.allocateService(obj, undefined, opts.dryRun === true);
    const ordered = this.ordered(obj);
    if (opts.dryRun) return ordered;
    return this.store.insert(def, ordered);
  }

  private ordered(obj: KubeObject): KubeObject {
    const { apiVersion, kind, metadata, ...rest } = obj;
    return { apiVersion, kind, metadata, ...rest };
  }

  /** Replaces an object (PUT), or its status with `subresource: 'status'`. */
  update(def: ResourceDef, ns: string, name: string, body: Loose, opts: WriteOpts = {}): KubeObject {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('the body of the request must be a JSON object');
    const old = this.get(def, ns, name);
    this.checkTypeMeta(def, body);
    const bmd = (body.metadata ?? {}) as Loose;
    if (bmd.name !== undefined && bmd.name !== name) throw badRequest(`the name of the object (${bmd.name}) does not match the name on the URL (${name})`);
    if (def.namespaced && bmd.namespace && bmd.namespace !== ns) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    if (bmd.resourceVersion && bmd.resourceVersion !== old.metadata.resourceVersion) throw conflict(def, name);
    if (bmd.uid && bmd.uid !== old.metadata.uid) throw conflict(def, name, `Precondition failed: UID in precondition: ${bmd.uid}, UID in object meta: ${old.metadata.uid}`);
    return this.applyUpdate(def, old, clone(body), opts);
  }

  private applyUpdate(def: ResourceDef, old: KubeObject, body: Loose, opts: WriteOpts): KubeObject {
    let next: KubeObject;
    if (opts.subresource === 'status') {
      next = { ...clone(old), status: body.status };
    } else {
      next = body as KubeObject;
      next.apiVersion = def.apiVersion;
      next.kind = def.kind;
      const md = (next.metadata && typeof next.metadata === 'object' ? next.metadata : {}) as Loose;
      next.metadata = {
        ...md,
        name: old.metadata.name,
        namespace: old.metadata.namespace,
        uid: old.metadata.uid,
        creationTimestamp: old.metadata.creationTimestamp,
        generation: old.metadata.generation,
        deletionTimestamp: old.metadata.deletionTimestamp,
        deletionGracePeriodSeconds: old.metadata.deletionGracePeriodSeconds,
      };
      delete next.metadata.managedFields;
      delete next.metadata.selfLink;
      for (const k of Object.keys(next.metadata)) if (next.metadata[k] === undefined) delete next.metadata[k];
      if (def.sub.status || def === R.namespaces) next.status = clone(old.status);
      if (next.status === undefined) delete next.status;
      applyDefaults(def, next, false);
      const causes = validate(def, next, old);
      if (causes.length) throw invalid(def, old.metadata.name as string, causes);
      if (def === R.services) this.allocateService(next, old, opts.dryRun === true);
    }
    if (def.generation && JSON.stringify(next.spec) !== JSON.stringify(old.spec)) {
      next.metadata.generation = (old.metadata.generation ?? 1) + 1;
    }
    next = this.ordered(next);
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    if (sameIgnoringRv(next, old)) return old;
    if (opts.dryRun) return next;
    const stored = this.store.replace(def, next);
    return this.finalizeIfDone(def, stored) ?? stored;
  }

  /** Applies a PATCH of the given content type. `created` is true when server-side apply created it. */
  patch(def: ResourceDef, ns: string, name: string, type: string, patch: Loose, opts: WriteOpts = {}): { obj: KubeObject; created: boolean } {
    const old = this.store.get(def, ns, name);
    if (!old) {
      if (type === PatchType.apply && !opts.subresource) {
        const body = { ...patch, metadata: { ...(patch?.metadata ?? {}), name } };
        return { obj: this.create(def, ns, body, opts), created: true };
      }
      throw notFound(def, name);
    }
    const patched = this.patchDocument(old, type, patch);
    const pmd = (patched?.metadata ?? {}) as Loose;
    if (pmd.resourceVersion && pmd.resourceVersion !== old.metadata.resourceVersion) throw conflict(def, name);
    if (pmd.uid && pmd.uid !== old.metadata.uid) throw conflict(def, name, `Precondition failed: UID in precondition: ${pmd.uid}, UID in object meta: ${old.metadata.uid}`);
    if (pmd.name !== undefined && pmd.name !== name) throw badRequest(`metadata.name: Invalid value: "${pmd.name}": field is immutable`);
    return { obj: this.applyUpdate(def, old, patched, opts), created: false };
  }

  /** Applies a patch document to a JSON value (also used for the scale subresource). */
  patchDocument(doc: Loose, type: string, patch: Loose): Loose {
    switch (type) {
      case PatchType.json:
        return jsonPatch(doc, patch);
      case PatchType.merge:
        return mergePatch(clone(doc), patch);
      case PatchType.strategic:
        return strategicMerge(clone(doc), patch);
      case PatchType.apply:
        return strategicMerge(clone(doc), patch, [], true);
      default:
        throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`);
    }
  }

  /** Deletes an object following the real server's graceful deletion, finalizer and propagation rules. */
  delete(def: ResourceDef, ns: string, name: string, opts: DeleteOpts = {}): DeleteResult {
    const obj = this.get(def, ns, name);
    const md = obj.metadata;
    if (opts.preconditions?.uid && opts.preconditions.uid !== md.uid) {
      throw conflict(def, name, `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${md.uid}`);
    }
    if (opts.preconditions?.resourceVersion && opts.preconditions.resourceVersion !== md.resourceVersion) {
      throw conflict(def, name, `Precondition failed: ResourceVersion in precondition: ${opts.preconditions.resourceVersion}, ResourceVersion in object meta: ${md.resourceVersion}`);
    }
    if (opts.dryRun) return { obj, removed: false };
    const policy: PropagationPolicy = opts.propagationPolicy ?? (opts.orphanDependents === true ? 'Orphan' : 'Background');
    let grace = 0;
    if (isPod(def)) {
      const requested = opts.gracePeriodSeconds !== undefined && opts.gracePeriodSeconds >= 0 ? opts.gracePeriodSeconds : undefined;
      grace = requested ?? obj.spec?.terminationGracePeriodSeconds ?? 30;
      const phase = obj.status?.phase;
      if (!obj.spec?.nodeName || phase === 'Failed' || phase === 'Succeeded') grace = 0;
    }
    if (md.deletionTimestamp) {
      // Already terminating: a shorter grace (force delete) can still take effect.
      if (isPod(def) && grace === 0 && md.deletionGracePeriodSeconds !== 0) {
        const next = this.mutate(def, ns, name, (d) => {
          d.metadata.deletionGracePeriodSeconds = 0;
        });
        const gone = next ? this.finalizeIfDone(def, next) : undefined;
        return gone ? { obj: gone, removed: true } : { obj: next ?? obj, removed: false };
      }
      return { obj, removed: false };
    }
    if (policy === 'Orphan') this.orphanDependents(md.uid as string);
    const finalizers = [...(md.finalizers ?? [])];
    if (policy === 'Foreground' && this.store.hasDependents(md.uid as string) && !finalizers.includes('foregroundDeletion')) {
      finalizers.push('foregroundDeletion');
    }
    const graceful = def === R.namespaces || grace > 0 || finalizers.length > 0;
    if (!graceful) {
      const last = this.store.remove(def, ns, name) as KubeObject;
      return { obj: last, removed: true };
    }
    const next: KubeObject = { ...clone(obj) };
    next.metadata.deletionTimestamp = nowTs(Date.now() + grace * 1000);
    next.metadata.deletionGracePeriodSeconds = grace;
    if (finalizers.length) next.metadata.finalizers = finalizers;
    if (def === R.namespaces) next.status = { ...(next.status ?? {}), phase: 'Terminating' };
    if (def.generation) next.metadata.generation = (md.generation ?? 1) + 1;
    const stored = this.store.replace(def, next);
    return { obj: stored, removed: false };
  }

  private orphanDependents(ownerUid: string): void {
    for (const dep of this.store.dependentsOf(ownerUid)) {
      const d = dep.obj;
      this.mutate(dep.def, d.metadata.namespace ?? '', d.metadata.name as string, (x) => {
        x.metadata.ownerReferences = (x.metadata.ownerReferences ?? []).filter((r) => r.uid !== ownerUid);
        if (x.metadata.ownerReferences.length === 0) delete x.metadata.ownerReferences;
      });
    }
  }

  /**
   * Removes an object whose deletion is pending once nothing holds it any more (no finalizers, pod
   * termination done). Returns its last state when removed.
   */
  finalizeIfDone(def: ResourceDef, obj: KubeObject): KubeObject | undefined {
    const md = obj.metadata;
    if (!md.deletionTimestamp || (md.finalizers?.length ?? 0) > 0) return undefined;
    if (def === R.namespaces && (obj.spec?.finalizers?.length ?? 0) > 0) return undefined;
    if (isPod(def) && md.deletionGracePeriodSeconds !== 0 && obj.spec?.nodeName && !this.terminated.has(md.uid as string)) return undefined;
    return this.store.remove(def, md.namespace ?? '', md.name as string);
  }

  /** Called by the kubelet when a terminating pod's containers have stopped. */
  podTerminated(ns: string, name: string, uid: string): void {
    const pod = this.store.get(R.pods, ns, name);
    if (!pod || pod.metadata.uid !== uid) return;
    this.terminated.add(uid);
    this.finalizeIfDone(R.pods, pod);
  }

  /**
   * Controller write: clones the current object, lets `fn` change it, stores it if anything changed
   * (bumping generation on spec changes). Returns the stored object, or undefined if it is gone.
   */
  mutate(def: ResourceDef, ns: string, name: string, fn: (draft: KubeObject) => void): KubeObject | undefined {
    const cur = this.store.get(def, ns, name);
    if (!cur) return undefined;
    const draft = clone(cur);
    fn(draft);
    if (def.generation && JSON.stringify(draft.spec) !== JSON.stringify(cur.spec)) {
      draft.metadata.generation = (cur.metadata.generation ?? 1) + 1;
    }
    if (sameIgnoringRv(draft, cur)) return cur;
    const stored = this.store.replace(def, draft);
    return this.finalizeIfDone(def, stored) ? undefined : stored;
  }

  /** Controller write of `status` only; no-op when unchanged. */
  writeStatus(def: ResourceDef, obj: KubeObject, status: Loose): KubeObject {
    const cur = this.store.get(def, obj.metadata.namespace ?? '', obj.metadata.name as string);
    if (!cur || cur.metadata.uid !== obj.metadata.uid) return obj;
    if (JSON.stringify(cur.status) === JSON.stringify(status)) return cur;
    return this.store.replace(def, { ...cur, metadata: { ...cur.metadata }, status });
  }

  private allocateService(obj: KubeObject, old: KubeObject | undefined, dryRun: boolean): void {
    const spec = obj.spec;
    const a = this.allocator;
    const reserved: (() => void)[] = [];
    const fail = (field: string, value: unknown, why: string): never => {
      for (const undo of reserved) undo();
      throw invalid(R.services, obj.metadata.name as string, [{ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(value)}: ${why}`, field }]);
    };
    if (spec.type === 'ExternalName') {
      if (old?.spec?.clusterIP && old.spec.clusterIP !== 'None') a.releaseClusterIp(old.spec.clusterIP);
      delete spec.clusterIP;
      delete spec.clusterIPs;
    } else {
      const oldIp = old?.spec?.clusterIP;
      if (!spec.clusterIP && oldIp) spec.clusterIP = oldIp;
      if (spec.clusterIP === 'None') {
        spec.clusterIPs = ['None'];
      } else if (!spec.clusterIP) {
        spec.clusterIP = a.allocateClusterIp();
        reserved.push(() => a.releaseClusterIp(spec.clusterIP));
      } else if (spec.clusterIP !== oldIp) {
        if (!/^10\.96\.\d+\.\d+$/.test(spec.clusterIP)) fail('spec.clusterIPs', [spec.clusterIP], 'failed to allocate IP: the provided IP is not in the valid range (10.96.0.0/16)');
        if (!a.reserveClusterIp(spec.clusterIP)) fail('spec.clusterIPs', [spec.clusterIP], `failed to allocate IP ${spec.clusterIP}: provided IP is already allocated`);
        reserved.push(() => a.releaseClusterIp(spec.clusterIP));
      }
      if (spec.clusterIP !== 'None') spec.clusterIPs = [spec.clusterIP];
    }
    const wantsNodePorts = spec.type === 'NodePort' || spec.type === 'LoadBalancer';
    const oldPorts: Loose[] = old?.spec?.ports ?? [];
    const oldNodePorts = new Set<number>(oldPorts.map((p) => p.nodePort).filter((p) => typeof p === 'number'));
    const keep = new Set<number>();
    (spec.ports ?? []).forEach((p: Loose, i: number) => {
      if (!wantsNodePorts) {
        delete p.nodePort;
        return;
      }
      if (p.nodePort === undefined || p.nodePort === null || p.nodePort === 0) {
        const prev = oldPorts.find((o) => o.port === p.port && (o.protocol ?? 'TCP') === (p.protocol ?? 'TCP') && o.nodePort);
        if (prev) p.nodePort = prev.nodePort;
        else {
          p.nodePort = a.allocateNodePort();
          reserved.push(() => a.releaseNodePort(p.nodePort));
        }
      } else if (!oldNodePorts.has(p.nodePort) && !keep.has(p.nodePort)) {
        if (!a.reserveNodePort(p.nodePort)) fail(`spec.ports[${i}].nodePort`, p.nodePort, 'provided port is already allocated');
        reserved.push(() => a.releaseNodePort(p.nodePort));
      }
      keep.add(p.nodePort);
    });
    if (spec.type === 'LoadBalancer' && !obj.status?.loadBalancer?.ingress?.length) {
      const prevIngress = old?.status?.loadBalancer?.ingress;
      const ip = prevIngress?.[0]?.ip ?? a.allocateLbIp();
      if (!prevIngress) reserved.push(() => a.releaseLbIp(ip));
      obj.status = { ...(obj.status ?? {}), loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } };
    } else if (spec.type !== 'LoadBalancer' && old?.status?.loadBalancer?.ingress?.length) {
      a.releaseLbIp(old.status.loadBalancer.ingress[0]?.ip);
      obj.status = { ...(obj.status ?? {}), loadBalancer: {} };
    }
    if (dryRun) {
      for (const undo of reserved) undo();
      return;
    }
    // Release what the previous version held and no longer uses.
    if (old) {
      for (const np of oldNodePorts) if (!keep.has(np)) a.releaseNodePort(np);
      const oldIp = old.spec?.clusterIP;
      if (oldIp && oldIp !== 'None' && oldIp !== spec.clusterIP) a.releaseClusterIp(oldIp);
    }
  }

  private releaseService(obj: KubeObject): void {
    const spec = obj.spec ?? {};
    if (spec.clusterIP && spec.clusterIP !== 'None') this.allocator.releaseClusterIp(spec.clusterIP);
    for (const p of (spec.ports ?? []) as Loose[]) this.allocator.releaseNodePort(p?.nodePort);
    this.allocator.releaseLbIp(obj.status?.loadBalancer?.ingress?.[0]?.ip);
  }
}
