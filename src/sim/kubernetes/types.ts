/**
 * Shared object shapes of the simulated Kubernetes API server.
 *
 * The simulator stores arbitrary Kubernetes JSON (specs and statuses of many kinds, plus kinds it only
 * accepts and stores), so only `metadata` is typed precisely; `spec`/`status` stay loosely typed on
 * purpose, the same way the real API server treats unknown fields as opaque JSON.
 */

/**
 * Loosely typed JSON value: the simulator handles schemaless Kubernetes documents, so spec, status and
 * patch bodies cannot be described by static types without re-implementing the whole OpenAPI schema.
 */
// biome-ignore lint/suspicious/noExplicitAny: arbitrary Kubernetes JSON documents are handled here
export type Loose = any;

/** An owner reference, used by the garbage collector and the workload controllers. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Object metadata as the real API server returns it (the subset the simulator maintains). */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [key: string]: unknown;
}

/** Any Kubernetes object kept in the simulated store. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: Loose;
  status?: Loose;
  [key: string]: Loose;
}

/** Watch event types the API streams (`BOOKMARK` and `ERROR` are produced by the HTTP layer only). */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
