/**
 * Records core/v1 Events about objects (Scheduled, Pulled, Started, SuccessfulCreate,
 * ScalingReplicaSet, ...) so `kubectl describe` and `kubectl get events` show what the controllers
 * did. The number of stored events is capped, like the real cluster's event TTL, to bound memory.
 */
import type { ClusterApi } from '../cluster-api.ts';
import { nowTs } from '../names.ts';
import { R } from '../resource-registry.ts';
import type { KubeObject } from '../types.ts';

/** Writes Events and evicts the oldest ones beyond the cap. */
export class EventRecorder {
  private readonly fifo: { ns: string; name: string }[] = [];
  private head = 0;
  private seq = 0;

  constructor(
    private readonly api: ClusterApi,
    private readonly max = 2000,
  ) {}

  /** Counts the Events already stored (a restored cluster) towards the cap, oldest first. */
  adoptStored(): void {
    const stored = this.api.store.list(R.events).sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
    for (const e of stored) this.fifo.push({ ns: e.metadata.namespace as string, name: e.metadata.name as string });
  }

  /** Records an event about `obj` from `component` (e.g. `kubelet`, `replicaset-controller`). */
  record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string, component: string, host?: string): void {
    const ns = obj.metadata.namespace || 'default';
    if (!this.api.store.get(R.namespaces, '', ns)) return;
    const ts = nowTs();
    this.seq++;
    const name = `${obj.metadata.name}.${(Date.now() * 1000 + (this.seq % 1000)).toString(16)}`;
    const ev = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: ns },
      involvedObject: {
        kind: obj.kind,
        namespace: obj.metadata.namespace,
        name: obj.metadata.name,
        uid: obj.metadata.uid,
        apiVersion: obj.apiVersion,
        resourceVersion: obj.metadata.resourceVersion,
      },
      reason,
      message,
      source: host ? { component, host } : { component },
      firstTimestamp: ts,
      lastTimestamp: ts,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: component,
      reportingInstance: host ?? '',
    };
    try {
      this.api.create(R.events, ns, ev);
    } catch {
      return;
    }
    this.fifo.push({ ns, name });
    while (this.fifo.length - this.head > this.max) {
      const old = this.fifo[this.head++];
      if (old) this.api.store.remove(R.events, old.ns, old.name);
    }
    if (this.head > 4096) {
      this.fifo.splice(0, this.head);
      this.head = 0;
    }
  }
}
