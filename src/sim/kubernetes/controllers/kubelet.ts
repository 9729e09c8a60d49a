/**
 * The simulated kubelets of all nodes: a pod bound to a Ready node goes Pending (ContainerCreating)
 * -> Running with Ready/ContainersReady conditions, container statuses, podIP, hostIP and startTime
 * after the configurable kubelet delay; a terminating pod disappears after the same delay (or at once
 * with a zero grace period). Pods on NotReady nodes make no progress, like on a real cluster.
 */
import { nowTs } from '../names.ts';
import { R } from '../resource-registry.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { isNodeReady, setCondition } from './helpers.ts';

function hostIpOf(node: KubeObject | undefined): string {
  return (node?.status?.addresses ?? []).find((a: Loose) => a.type === 'InternalIP')?.address ?? '192.168.0.10';
}

function imageId(image: string): string {
  const base = image.includes('/') ? image : `docker.io/library/${image}`;
  return `${base.split(':')[0]}@sha256:${Buffer.from(image).toString('hex').padEnd(64, '0').slice(0, 64)}`;
}

const CONDITION_ORDER = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'];

/** Pod conditions in the order the real kubelet reports them (kubectl describe prints them as stored). */
function ordered(conds: Loose[]): Loose[] {
  const rank = (c: Loose) => {
    const i = CONDITION_ORDER.indexOf(c.type);
    return i < 0 ? CONDITION_ORDER.length : i;
  };
  return [...conds].sort((a, b) => rank(a) - rank(b));
}

/** Runs pods on the simulated nodes. */
export class Kubelet {
  private readonly starting = new Set<string>();
  private readonly stopping = new Set<string>();
  private readonly nextIp = new Map<string, number>();

  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.pods) {
        const uid = ev.obj.metadata.uid as string;
        if (ev.type === 'DELETED') {
          this.starting.delete(uid);
          this.stopping.delete(uid);
          return;
        }
        this.consider(ev.obj);
      } else if (ev.def === R.nodes && ev.type !== 'DELETED' && isNodeReady(ev.obj) && !isNodeReady(ev.old)) {
        const name = ev.obj.metadata.name as string;
        ctx.queue.add(`kl-node:${name}`, () => {
          for (const p of ctx.store.podsOnNode(name)) this.consider(p);
        });
      }
    });
  }

  private consider(pod: KubeObject): void {
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) return;
    const { store, queue, settings } = this.ctx;
    if (!isNodeReady(store.get(R.nodes, '', nodeName))) return;
    const uid = pod.metadata.uid as string;
    const ns = pod.metadata.namespace as string;
    const name = pod.metadata.name as string;
    if (pod.metadata.deletionTimestamp) {
      if (this.stopping.has(uid)) return;
      this.stopping.add(uid);
      const delay = pod.metadata.deletionGracePeriodSeconds === 0 ? 0 : Math.min(settings.kubeletDelayMs, (pod.metadata.deletionGracePeriodSeconds ?? 30) * 1000);
      queue.after(delay, `kl-stop:${uid}`, () => this.ctx.api.podTerminated(ns, name, uid));
      return;
    }
    if ((pod.status?.phase ?? 'Pending') === 'Pending' && !this.starting.has(uid)) {
      this.starting.add(uid);
      queue.add(`kl-accept:${uid}`, () => this.accept(ns, name, uid));
      queue.after(settings.kubeletDelayMs, `kl-start:${uid}`, () => this.start(ns, name, uid));
    }
  }

  /** The state to save: the next pod IP per node (pods keep theirs in their status). */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.nextIp);
  }

  /** Takes a saved state back (before the store is restored). */
  restore(nextIp: Record<string, number>): void {
    this.nextIp.clear();
    for (const [node, n] of Object.entries(nextIp)) this.nextIp.set(node, n);
  }

  private current(ns: string, name: string, uid: string): KubeObject | undefined {
    const pod = this.ctx.store.get(R.pods, ns, name);
    if (!pod || pod.metadata.uid !== uid || pod.metadata.deletionTimestamp || pod.status?.phase !== 'Pending') return undefined;
    if (!isNodeReady(this.ctx.store.get(R.nodes, '', pod.spec?.nodeName))) return undefined;
    return pod;
  }

  private accept(ns: string, name: string, uid: string): void {
    const pod = this.current(ns, name, uid);
    if (!pod) return;
    const node = this.ctx.store.get(R.nodes, '', pod.spec.nodeName);
    const hostIP = hostIpOf(node);
    let conds = pod.status?.conditions;
    conds = setCondition(conds, { type: 'PodReadyToStartContainers', status: 'False' });
    conds = setCondition(conds, { type: 'Initialized', status: 'True' });
    conds = setCondition(conds, { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: `containers with unready status: [${(pod.spec.containers ?? []).map((c: Loose) => c.name).join(' ')}]` });
    conds = setCondition(conds, { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: `containers with unready status: [${(pod.spec.containers ?? []).map((c: Loose) => c.name).join(' ')}]` });
    conds = setCondition(conds, { type: 'PodScheduled', status: 'True' });
    this.ctx.api.writeStatus(R.pods, pod, {
      ...pod.status,
      phase: 'Pending',
      conditions: ordered(conds),
      hostIP,
      hostIPs: [{ ip: hostIP }],
      startTime: pod.status?.startTime ?? nowTs(),
      containerStatuses: (pod.spec.containers ?? []).map((c: Loose) => ({
        name: c.name,
        image: c.image,
        imageID: '',
        ready: false,
        restartCount: 0,
        started: false,
        state: { waiting: { reason: 'ContainerCreating' } },
        lastState: {},
      })),
    });
  }

  private allocateIp(nodeName: string): string {
    const nodes = this.ctx.store.list(R.nodes);
    const idx = Math.max(0, nodes.findIndex((n) => n.metadata.name === nodeName)) + 1;
    const n = this.nextIp.get(nodeName) ?? 2;
    this.nextIp.set(nodeName, n >= 254 ? 2 : n + 1);
    return `10.244.${idx}.${n}`;
  }

  private start(ns: string, name: string, uid: string): void {
    const pod = this.current(ns, name, uid);
    if (!pod) return;
    const { api, events } = this.ctx;
    const nodeName = pod.spec.nodeName as string;
    const node = this.ctx.store.get(R.nodes, '', nodeName);
    const hostIP = hostIpOf(node);
    const podIP = pod.spec.hostNetwork ? hostIP : this.allocateIp(nodeName);
    const started = nowTs();
    let conds = pod.status?.conditions;
    for (const t of ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled']) conds = setCondition(conds, { type: t, status: 'True' });
    const containers = (pod.spec.containers ?? []) as Loose[];
    const status = {
      ...pod.status,
      phase: 'Running',
      conditions: ordered(conds),
      hostIP,
      hostIPs: [{ ip: hostIP }],
      podIP,
      podIPs: [{ ip: podIP }],
      startTime: pod.status?.startTime ?? started,
      containerStatuses: containers.map((c) => ({
        name: c.name,
        state: { running: { startedAt: started } },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: c.image,
        imageID: imageId(String(c.image)),
        containerID: `containerd://${Buffer.from(`${uid}/${c.name}`).toString('hex').padEnd(64, '0').slice(0, 64)}`,
        started: true,
      })),
    };
    const running = api.writeStatus(R.pods, pod, status);
    for (const c of containers) {
      events.record(running, 'Normal', 'Pulled', `Container image "${c.image}" already present on machine`, 'kubelet', nodeName);
      events.record(running, 'Normal', 'Created', `Created container ${c.name}`, 'kubelet', nodeName);
      events.record(running, 'Normal', 'Started', `Started container ${c.name}`, 'kubelet', nodeName);
    }
  }

  /**
   * A running pod's health as its probes see it, until changed again: `unready` (readiness probe
   * failing: containers run, Ready False), `crashloop` (containers waiting in CrashLoopBackOff) or
   * `ready` (running and Ready again). The pod stays Running; nothing else changes it.
   */
  setHealth(pod: KubeObject, health: 'ready' | 'unready' | 'crashloop'): KubeObject {
    const now = nowTs();
    const ready = health === 'ready';
    const reason = health === 'crashloop' ? 'ContainersNotReady' : 'ReadinessProbeFailed';
    let conds = setCondition(pod.status?.conditions, ready ? { type: 'Ready', status: 'True' } : { type: 'Ready', status: 'False', reason, message: 'containers with unready status' });
    conds = setCondition(conds, ready ? { type: 'ContainersReady', status: 'True' } : { type: 'ContainersReady', status: 'False', reason, message: 'containers with unready status' });
    const containerStatuses = (pod.status?.containerStatuses ?? []).map((cs: Loose) => {
      if (health === 'crashloop') {
        return {
          ...cs,
          ready: false,
          started: false,
          restartCount: (cs.restartCount ?? 0) + 1,
          state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 5m0s restarting failed container' } },
          lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: cs.state?.running?.startedAt ?? now, finishedAt: now } },
        };
      }
      const running = cs.state?.running ? cs.state : { running: { startedAt: now } };
      return { ...cs, ready, started: true, state: running };
    });
    const out = this.ctx.api.writeStatus(R.pods, pod, { ...pod.status, conditions: conds, containerStatuses });
    if (!ready) this.ctx.events.record(out, 'Warning', health === 'crashloop' ? 'BackOff' : 'Unhealthy', health === 'crashloop' ? 'Back-off restarting failed container' : 'Readiness probe failed (simulated fault)', 'kubelet', pod.spec?.nodeName);
    return out;
  }

  /** Simulates a container crash + restart: Ready drops, restartCount grows, Ready again after the delay. */
  restartContainers(pod: KubeObject): void {
    const { api, queue, settings, events } = this.ctx;
    const now = nowTs();
    let conds = setCondition(pod.status?.conditions, { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status' });
    conds = setCondition(conds, { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status' });
    const down = api.writeStatus(R.pods, pod, {
      ...pod.status,
      conditions: conds,
      containerStatuses: (pod.status?.containerStatuses ?? []).map((cs: Loose) => ({
        ...cs,
        ready: false,
        started: false,
        restartCount: (cs.restartCount ?? 0) + 1,
        state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off restarting failed container' } },
        lastState: { terminated: { exitCode: 137, reason: 'Error', startedAt: cs.state?.running?.startedAt ?? now, finishedAt: now } },
      })),
    });
    events.record(down, 'Warning', 'BackOff', 'Back-off restarting failed container', 'kubelet', pod.spec?.nodeName);
    const uid = pod.metadata.uid as string;
    const ns = pod.metadata.namespace as string;
    const name = pod.metadata.name as string;
    queue.after(settings.kubeletDelayMs, `kl-restart:${uid}`, () => {
      const p = this.ctx.store.get(R.pods, ns, name);
      if (!p || p.metadata.uid !== uid || p.metadata.deletionTimestamp || p.status?.phase !== 'Running') return;
      if (!isNodeReady(this.ctx.store.get(R.nodes, '', p.spec?.nodeName))) return;
      const at = nowTs();
      let c2 = setCondition(p.status?.conditions, { type: 'Ready', status: 'True' });
      c2 = setCondition(c2, { type: 'ContainersReady', status: 'True' });
      api.writeStatus(R.pods, p, {
        ...p.status,
        conditions: c2,
        containerStatuses: (p.status?.containerStatuses ?? []).map((cs: Loose) => ({ ...cs, ready: true, started: true, state: { running: { startedAt: at } } })),
      });
    });
  }
}
