/**
 * The simulated endpoints controller: keeps a v1 Endpoints object per Service with a selector, listing
 * the IPs of the ready pods behind it (and not-ready ones separately), so `kubectl describe svc` and
 * clients that look at Endpoints see the same picture as on a real cluster.
 */
import { R } from '../resource-registry.ts';
import { fromLabelSelector, matchLabels } from '../selectors.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { isPodActive, isPodReady } from './helpers.ts';

function selects(svc: KubeObject, pod: KubeObject | undefined): boolean {
  const sel = svc.spec?.selector;
  if (!pod || !sel || Object.keys(sel).length === 0) return false;
  return matchLabels(fromLabelSelector({ matchLabels: sel }), pod.metadata.labels);
}

/** Maintains Endpoints for selector-based Services. */
export class EndpointsController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.services) {
        this.enqueue(ev.obj.metadata.namespace as string, ev.obj.metadata.name as string);
      } else if (ev.def === R.pods) {
        const ns = ev.obj.metadata.namespace as string;
        for (const svc of ctx.store.list(R.services, ns)) {
          if (selects(svc, ev.obj) || selects(svc, ev.old)) this.enqueue(ns, svc.metadata.name as string);
        }
      }
    });
  }

  private enqueue(ns: string, name: string): void {
    this.ctx.queue.add(`ep:${ns}/${name}`, () => this.reconcile(ns, name));
  }

  private reconcile(ns: string, name: string): void {
    const { store, api } = this.ctx;
    const svc = store.get(R.services, ns, name);
    const existing = store.get(R.endpoints, ns, name);
    const managed = !svc || (svc.spec?.selector && Object.keys(svc.spec.selector).length > 0 && svc.spec.type !== 'ExternalName');
    if (!svc) {
      if (existing) store.remove(R.endpoints, ns, name);
      return;
    }
    if (!managed) return;
    const pods = store.list(R.pods, ns).filter((p) => isPodActive(p) && p.status?.podIP && selects(svc, p));
    const address = (p: KubeObject) => ({
      ip: p.status.podIP,
      nodeName: p.spec?.nodeName,
      targetRef: { kind: 'Pod', namespace: ns, name: p.metadata.name, uid: p.metadata.uid },
    });
    const ready = pods.filter(isPodReady).map(address);
    const notReady = pods.filter((p) => !isPodReady(p)).map(address);
    const sample = pods[0];
    const ports = ((svc.spec?.ports ?? []) as Loose[]).map((sp) => {
      let port = sp.targetPort ?? sp.port;
      if (typeof port === 'string' && sample) {
        for (const c of (sample.spec?.containers ?? []) as Loose[]) {
          const cp = ((c.ports ?? []) as Loose[]).find((x) => x.name === port);
          if (cp) port = cp.containerPort;
        }
      }
      const out: Loose = { port: typeof port === 'number' ? port : Number(port) || sp.port, protocol: sp.protocol ?? 'TCP' };
      if (sp.name) out.name = sp.name;
      return out;
    });
    const subsets: Loose[] = [];
    if (ready.length || notReady.length) {
      const s: Loose = {};
      if (ready.length) s.addresses = ready;
      if (notReady.length) s.notReadyAddresses = notReady;
      s.ports = ports;
      subsets.push(s);
    }
    const body: Loose = {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name, namespace: ns, labels: { ...(svc.metadata.labels ?? {}) } },
    };
    if (subsets.length) body.subsets = subsets;
    if (!existing) {
      try {
        api.create(R.endpoints, ns, body);
      } catch {
        // namespace terminating
      }
      return;
    }
    api.mutate(R.endpoints, ns, name, (d) => {
      d.metadata.labels = body.metadata.labels;
      if (subsets.length) d.subsets = subsets;
      else delete d.subsets;
    });
  }
}
