/**
 * What a pod or a node's status means for the health of a VNFC (the Kubernetes health watcher's
 * mapping, health-watch.ts): the API server's phase, conditions and container states to a
 * condition, a short stable reason and a one-line detail for operators.
 */
import type { ResourceHealth } from '../../model/vnfc-health.ts';
import type { KubeObject } from './kube-client.ts';
import { isTerminating } from './pods.ts';

interface Cond {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

function conditionOf(obj: KubeObject, type: string): Cond | undefined {
  const conds: unknown = obj.status?.conditions;
  return Array.isArray(conds) ? (conds as Cond[]).find((c) => c !== null && typeof c === 'object' && c.type === type) : undefined;
}

export function oneLine(parts: (string | undefined)[]): string | undefined {
  const s = parts
    .filter((p): p is string => typeof p === 'string' && p !== '')
    .join(': ')
    .replace(/\s+/g, ' ')
    .trim();
  if (s === '') return undefined;
  return s.length > 200 ? `${s.slice(0, 200)}...` : s;
}

interface ContainerStatus {
  name?: string;
  restartCount?: number;
  state?: { waiting?: { reason?: string; message?: string } };
  lastState?: { terminated?: { reason?: string; exitCode?: number } };
}

function containerStatuses(pod: KubeObject): ContainerStatus[] {
  const all = [pod.status?.initContainerStatuses, pod.status?.containerStatuses];
  return all.flatMap((l) => (Array.isArray(l) ? (l as ContainerStatus[]).filter((c) => c !== null && typeof c === 'object') : []));
}

/**
 * A pod's health: Running and Ready -> healthy `Ready`; a container waiting in CrashLoopBackOff ->
 * faulty `CrashLoopBackOff`; Failed with reason Evicted -> faulty `Evicted` (any other Failed ->
 * faulty `Failed`, Succeeded -> faulty `Succeeded`); Running not Ready -> faulty `NotReady`;
 * Pending -> degraded `Pending`; being deleted -> degraded `Terminating`; phase Unknown (its node
 * is not heard from) -> unknown `Unknown`.
 */
export function podHealth(pod: KubeObject, observedAt: Date): ResourceHealth {
  const base = { resourceId: pod.metadata.name ?? '', kind: 'pod' as const, observedAt };
  const phase: unknown = pod.status?.phase;
  const message = typeof pod.status?.message === 'string' ? pod.status.message : undefined;
  if (phase === 'Failed' && pod.status?.reason === 'Evicted') {
    return { ...base, condition: 'faulty', reason: 'Evicted', ...opt(oneLine([message])) };
  }
  const looping = containerStatuses(pod).find((c) => c.state?.waiting?.reason === 'CrashLoopBackOff');
  if (looping !== undefined && phase !== 'Failed' && phase !== 'Succeeded') {
    const last = looping.lastState?.terminated;
    const lastText = last === undefined ? undefined : `last exit ${last.reason ?? ''}${last.exitCode === undefined ? '' : ` (${last.exitCode})`}`.trim();
    return { ...base, condition: 'faulty', reason: 'CrashLoopBackOff', ...opt(oneLine([`container ${looping.name ?? '?'}`, `${looping.restartCount ?? 0} restarts`, lastText])) };
  }
  if (phase === 'Failed' || phase === 'Succeeded') {
    return { ...base, condition: 'faulty', reason: phase, ...opt(oneLine([typeof pod.status?.reason === 'string' ? pod.status.reason : undefined, message])) };
  }
  if (isTerminating(pod)) return { ...base, condition: 'degraded', reason: 'Terminating' };
  if (phase === 'Running') {
    const ready = conditionOf(pod, 'Ready');
    if (ready?.status === 'True') return { ...base, condition: 'healthy', reason: 'Ready' };
    return { ...base, condition: 'faulty', reason: 'NotReady', ...opt(oneLine([ready?.reason, ready?.message])) };
  }
  if (phase === 'Pending' || phase === undefined) {
    const waiting = containerStatuses(pod).find((c) => c.state?.waiting?.reason !== undefined)?.state?.waiting;
    const scheduled = conditionOf(pod, 'PodScheduled');
    const why = scheduled?.status === 'False' ? oneLine([scheduled.reason, scheduled.message]) : oneLine([waiting?.reason, waiting?.message]);
    return { ...base, condition: 'degraded', reason: 'Pending', ...opt(why) };
  }
  return { ...base, condition: 'unknown', reason: 'Unknown', ...opt(oneLine([message])) };
}

/** A node's health: its Ready condition True -> healthy `Ready`; False, Unknown or missing -> faulty `NotReady`. */
export function nodeHealth(node: KubeObject, observedAt: Date): ResourceHealth {
  const base = { resourceId: node.metadata.name ?? '', kind: 'node' as const, observedAt };
  const ready = conditionOf(node, 'Ready');
  if (ready?.status === 'True') return { ...base, condition: 'healthy', reason: 'Ready' };
  return { ...base, condition: 'faulty', reason: 'NotReady', ...opt(oneLine([ready?.status === undefined ? 'no Ready condition' : `Ready ${ready.status}`, ready?.reason, ready?.message])) };
}

export function deletedHealth(resourceId: string, kind: 'pod' | 'node', observedAt: Date): ResourceHealth {
  return { resourceId, kind, condition: 'faulty', reason: 'Deleted', observedAt };
}

function opt(detail: string | undefined): { detail?: string } {
  return detail === undefined ? {} : { detail };
}

export function signature(h: ResourceHealth): string {
  return `${h.condition}|${h.reason}|${h.detail ?? ''}`;
}
