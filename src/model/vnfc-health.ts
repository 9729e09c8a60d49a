/**
 * The health of a VNFC as the VNFM knows it (a `/vnfm/v1` extension; ETSI bodies are unchanged),
 * and what a VIM's health watcher reports of one VIM resource (src/infra/<type>/health-watch.ts).
 */

/** Condition of a VNFC: `unknown` when its VIM cannot be read (never `faulty` for that). */
export const HEALTH_CONDITIONS = ['healthy', 'degraded', 'faulty', 'unknown'] as const;
export type HealthCondition = (typeof HEALTH_CONDITIONS)[number];

/** Who said so. */
export const HEALTH_SOURCES = ['vim-watch', 'server-notifier', 'prometheus', 'probe', 'verification'] as const;
export type HealthSource = (typeof HEALTH_SOURCES)[number];

/** Kind of VIM resource a watcher reports on. */
export type WatchedResourceKind = 'server' | 'pod' | 'node';

/** What a VIM watcher saw of one resource at `observedAt`. */
export interface ResourceHealth {
  /**
   * The resource's id as the instance records it: a server id (OpenStack,
   * `vnfcResourceInfo[].computeResource.resourceId`), a pod name (Kubernetes, same field), or a
   * node name (kind `node`).
   */
  resourceId: string;
  kind: WatchedResourceKind;
  condition: HealthCondition;
  /** Short, stable reason: `ACTIVE`, `ERROR`, `SHUTOFF`, `DELETED`, `PortDown`, `Ready`, `NotReady`, `CrashLoopBackOff`, `Evicted`, `Deleted`, ... */
  reason: string;
  /** Free text for operators (a Nova fault message, a container's last state). */
  detail?: string;
  observedAt: Date;
}
