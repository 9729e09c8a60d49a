/**
 * State records of the simulated Heat (stacks, resources, events). Plain data so the engine, the
 * HTTP views and the `/_sim/state` dump all read the same thing.
 */
import type { HotTemplate } from './hot-template.ts';

/** Heat's resource/stack actions. */
export type HeatAction = 'INIT' | 'CREATE' | 'UPDATE' | 'DELETE' | 'CHECK' | 'SUSPEND' | 'RESUME' | 'SIGNAL' | 'ROLLBACK';
/** Heat's resource/stack statuses. */
export type HeatStatus = 'IN_PROGRESS' | 'COMPLETE' | 'FAILED';

/** A stack environment, kept in the shape `GET .../environment` returns. */
export interface HeatEnvironment {
  parameters: Record<string, unknown>;
  parameter_defaults: Record<string, unknown>;
  resource_registry: Record<string, unknown>;
  event_sinks: unknown[];
  encrypted_param_names: string[];
}

/** How the engine implements a resource. */
export type ResourceKind = 'leaf' | 'nested' | 'asg' | 'rg';

/** One resource of a stack. */
export interface HeatResource {
  readonly name: string;
  /** Type as written in the template (what `resource_type` shows). */
  type: string;
  kind: ResourceKind;
  /** Native type implementing a leaf (after registry resolution). */
  leafType: string | undefined;
  /** Template file of a nested resource. */
  templateFile: string | undefined;
  physicalId: string;
  action: HeatAction;
  status: HeatStatus;
  reason: string;
  createdAt: number;
  updatedAt: number | undefined;
  /** Creation order inside the stack (AutoScalingGroup removes the oldest members first). */
  seq: number;
  /** Properties as last applied. */
  props: Record<string, unknown>;
  /** Type-specific state (random value, group capacity, cooldown, ...). */
  data: Record<string, unknown>;
  nestedStackId: string | undefined;
  metadata: Record<string, unknown>;
  requiredBy: string[];
}

/** One stack event. */
export interface HeatEvent {
  readonly id: string;
  readonly time: number;
  readonly resourceName: string;
  readonly physicalId: string;
  readonly action: HeatAction;
  readonly status: HeatStatus;
  readonly reason: string;
  /** Whether the event is about the stack itself rather than one of its resources. */
  readonly stackEvent: boolean;
}

/** One stack (top-level or nested). */
export interface HeatStack {
  readonly id: string;
  readonly name: string;
  readonly projectId: string;
  readonly userId: string;
  readonly userName: string;
  readonly parent: { readonly stackId: string; readonly resourceName: string } | undefined;
  template: HotTemplate;
  files: Record<string, string>;
  environment: HeatEnvironment;
  /** Values the stack was given for its parameters (request parameters, or a nested resource's properties). */
  userParams: Record<string, unknown>;
  /** Resolved, typed parameter values. */
  params: Record<string, unknown>;
  action: HeatAction;
  status: HeatStatus;
  reason: string;
  readonly createdAt: number;
  updatedAt: number | undefined;
  deletedAt: number | undefined;
  resources: Map<string, HeatResource>;
  disableRollback: boolean;
  timeoutMins: number | null;
  tags: string[] | null;
  readonly events: HeatEvent[];
  deleted: boolean;
  /** Incremented for each scheduled operation; a timer whose token is stale does nothing. */
  opToken: number;
}
