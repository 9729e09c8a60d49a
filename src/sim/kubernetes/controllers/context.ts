/**
 * What every simulated controller gets: the API semantics, the store (for indexed reads and change
 * notifications), the shared work queue, the event recorder and the live configuration.
 */
import type { ClusterApi } from '../cluster-api.ts';
import type { ObjectStore } from '../object-store.ts';
import type { EventRecorder } from './event-recorder.ts';
import type { WorkQueue } from './work-queue.ts';

/** Mutable runtime settings (changed through the fault-injection endpoints). */
export interface SimSettings {
  /** Time the kubelet takes to start or stop a pod's containers. */
  kubeletDelayMs: number;
}

/** Dependencies shared by the controllers. */
export interface ControllerContext {
  api: ClusterApi;
  store: ObjectStore;
  queue: WorkQueue;
  events: EventRecorder;
  settings: SimSettings;
  log: (line: string) => void;
}
