/**
 * Simulated nodes and their lifecycle faults: builds the worker Node objects, marks a node NotReady
 * (conditions Unknown, unreachable taints) and evicts its pods so controllers reschedule them,
 * recovers a node, and garbage-collects pods bound to deleted nodes.
 */
import { nowTs } from '../names.ts';
import { R } from '../resource-registry.ts';
import type { KubeObject, Loose } from '../types.ts';
import type { ControllerContext } from './context.ts';
import { setCondition } from './helpers.ts';

const UNREACHABLE = 'node.kubernetes.io/unreachable';

function readyConditions(prev: Loose[] | undefined): Loose[] {
  let c = prev;
  const hb = nowTs();
  const set = (type: string, status: 'True' | 'False', reason: string, message: string) => {
    c = setCondition(c, { type, status, reason, message }).map((x: Loose) => (x.type === type ? { type: x.type, status: x.status, lastHeartbeatTime: hb, lastTransitionTime: x.lastTransitionTime, reason: x.reason, message: x.message } : x));
  };
  set('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available');
  set('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure');
  set('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available');
  set('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status');
  return c as Loose[];
}

/** A Ready worker node manifest (`worker-<i>`, InternalIP 192.168.0.<10+i>). */
export function workerNode(name: string, index: number): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node-role.kubernetes.io/worker': '',
        'topology.kubernetes.io/zone': `zone-${((index - 1) % 3) + 1}`,
      },
      annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    spec: { podCIDR: `10.244.${index}.0/24`, podCIDRs: [`10.244.${index}.0/24`], providerID: `sim://${name}` },
    status: {
      capacity: { cpu: '4', 'ephemeral-storage': '102400Mi', 'hugepages-2Mi': '0', memory: '16384Mi', pods: '110' },
      allocatable: { cpu: '4', 'ephemeral-storage': '102400Mi', 'hugepages-2Mi': '0', memory: '16284Mi', pods: '110' },
      conditions: readyConditions(undefined),
      addresses: [
        { type: 'InternalIP', address: `192.168.0.${10 + index}` },
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: Buffer.from(name).toString('hex').padEnd(32, '0').slice(0, 32),
        systemUUID: `00000000-0000-0000-0000-${String(index).padStart(12, '0')}`,
        bootID: `b0000000-0000-0000-0000-${String(index).padStart(12, '0')}`,
        kernelVersion: '6.1.0-sim',
        osImage: 'Simulated Linux 1.0',
        containerRuntimeVersion: 'containerd://1.7.0-sim',
        kubeletVersion: 'v1.32.0',
        kubeProxyVersion: 'v1.32.0',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    },
  };
}

/** Node faults and pod clean-up for deleted nodes. */
export class NodeController {
  constructor(private readonly ctx: ControllerContext) {
    ctx.store.subscribe((ev) => {
      if (ev.def === R.nodes && ev.type === 'DELETED') {
        const name = ev.obj.metadata.name as string;
        ctx.queue.add(`podgc:${name}`, () => this.evict(name, 'NodeDeleted'));
      }
    });
  }

  /** Force-deletes the pods of a node (they are rescheduled by their controllers). */
  private evict(nodeName: string, reason: string): number {
    const { store, api, events } = this.ctx;
    let n = 0;
    for (const p of store.podsOnNode(nodeName)) {
      try {
        events.record(p, 'Normal', reason === 'NodeDeleted' ? 'NodeDeleted' : 'TaintManagerEviction', `Marking for deletion Pod ${p.metadata.namespace}/${p.metadata.name}`, 'node-controller');
        api.delete(R.pods, p.metadata.namespace as string, p.metadata.name as string, { gracePeriodSeconds: 0 });
        n++;
      } catch {
        // already gone
      }
    }
    return n;
  }

  /**
   * Marks a node NotReady (kubelet stopped posting status) and taints it unreachable; its pods become
   * not ready at once and are evicted after `evictAfterMs` (0 = right away).
   */
  failNode(name: string, evictAfterMs = 0): KubeObject | undefined {
    const { api, store, queue, events } = this.ctx;
    const node = api.mutate(R.nodes, '', name, (d) => {
      const msg = 'Kubelet stopped posting node status.';
      d.spec ??= {};
      d.status ??= {};
      d.status.conditions = ((d.status.conditions ?? []) as Loose[]).map((c) => ({
        ...c,
        status: 'Unknown',
        reason: 'NodeStatusUnknown',
        message: msg,
        lastTransitionTime: c.status === 'Unknown' ? c.lastTransitionTime : nowTs(),
      }));
      const taints = ((d.spec.taints ?? []) as Loose[]).filter((t) => t.key !== UNREACHABLE);
      taints.push({ key: UNREACHABLE, effect: 'NoSchedule', timeAdded: nowTs() }, { key: UNREACHABLE, effect: 'NoExecute', timeAdded: nowTs() });
      d.spec.taints = taints;
    });
    if (!node) return undefined;
    events.record(node, 'Normal', 'NodeNotReady', `Node ${name} status is now: NodeNotReady`, 'node-controller');
    for (const p of store.podsOnNode(name)) {
      if (p.metadata.deletionTimestamp) continue;
      let conds = setCondition(p.status?.conditions, { type: 'Ready', status: 'False' });
      conds = conds.map((c: Loose) => (c.type === 'Ready' ? { ...c, reason: undefined, message: undefined } : c));
      api.writeStatus(R.pods, p, { ...p.status, conditions: JSON.parse(JSON.stringify(conds)) });
    }
    queue.after(evictAfterMs, `evict:${name}`, () => {
      const cur = store.get(R.nodes, '', name);
      if (cur?.spec?.taints?.some((t: Loose) => t.key === UNREACHABLE)) this.evict(name, 'Evicted');
    });
    return node;
  }

  /** Brings a failed node back to Ready and removes the unreachable taints. */
  recoverNode(name: string): KubeObject | undefined {
    const node = this.ctx.api.mutate(R.nodes, '', name, (d) => {
      d.spec ??= {};
      d.status ??= {};
      d.status.conditions = readyConditions(d.status.conditions);
      const taints = ((d.spec.taints ?? []) as Loose[]).filter((t) => t.key !== UNREACHABLE);
      if (taints.length) d.spec.taints = taints;
      else delete d.spec.taints;
    });
    if (node) this.ctx.events.record(node, 'Normal', 'NodeReady', `Node ${name} status is now: NodeReady`, 'kubelet', name);
    return node;
  }
}
