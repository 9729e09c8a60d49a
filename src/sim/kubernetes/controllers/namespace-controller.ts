/**
 * The simulated namespace controller: every namespace gets its `default` ServiceAccount and the
 * `kube-root-ca.crt` ConfigMap (the cluster CA, as the root CA cert publisher of a real cluster
 * puts in every namespace), and a deleted namespace (phase Terminating) has all its content
 * deleted before it disappears, as `kubectl delete namespace` expects.
 */
import { RESOURCES, R } from '../resource-registry.ts';
import type { ControllerContext } from './context.ts';

/** Namespace lifecycle. */
export class NamespaceController {
  constructor(
    private readonly ctx: ControllerContext,
    private readonly caCertPem = '',
  ) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.namespaces) {
        const name = ev.obj.metadata.name as string;
        if (ev.type === 'ADDED') ctx.queue.add(`ns-sa:${name}`, () => this.defaultServiceAccount(name));
        if (ev.type === 'ADDED') ctx.queue.add(`ns-ca:${name}`, () => this.rootCaConfigMap(name));
        if (ev.type !== 'DELETED' && ev.obj.metadata.deletionTimestamp) ctx.queue.add(`ns-del:${name}`, () => this.drain(name));
        return;
      }
      if (ev.type === 'DELETED' && ev.def.namespaced) {
        const ns = ev.obj.metadata.namespace as string;
        const n = ctx.store.get(R.namespaces, '', ns);
        if (n?.metadata.deletionTimestamp) ctx.queue.add(`ns-del:${ns}`, () => this.drain(ns));
      }
    });
  }

  private defaultServiceAccount(ns: string): void {
    const { store, api } = this.ctx;
    const n = store.get(R.namespaces, '', ns);
    if (!n || n.metadata.deletionTimestamp || store.get(R.serviceaccounts, ns, 'default')) return;
    try {
      api.create(R.serviceaccounts, ns, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } });
    } catch {
      // raced with a client
    }
  }

  private rootCaConfigMap(ns: string): void {
    const { store, api } = this.ctx;
    const n = store.get(R.namespaces, '', ns);
    if (!n || n.metadata.deletionTimestamp || store.get(R.configmaps, ns, 'kube-root-ca.crt')) return;
    try {
      api.create(R.configmaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-root-ca.crt', namespace: ns }, data: { 'ca.crt': this.caCertPem } });
    } catch {
      // raced with a client
    }
  }

  private drain(ns: string): void {
    const { store, api } = this.ctx;
    const n = store.get(R.namespaces, '', ns);
    if (!n?.metadata.deletionTimestamp) return;
    let remaining = 0;
    for (const def of RESOURCES) {
      if (!def.namespaced) continue;
      for (const obj of store.list(def, ns)) {
        remaining++;
        if (obj.metadata.deletionTimestamp) continue;
        try {
          api.delete(def, ns, obj.metadata.name as string, { propagationPolicy: 'Background' });
        } catch {
          // already gone
        }
      }
    }
    if (remaining > 0) {
      remaining = RESOURCES.reduce((s, def) => s + (def.namespaced ? store.count(def, ns) : 0), 0);
    }
    if (remaining === 0) {
      api.mutate(R.namespaces, '', ns, (d) => {
        d.spec = { ...(d.spec ?? {}), finalizers: [] };
      });
    }
  }
}
