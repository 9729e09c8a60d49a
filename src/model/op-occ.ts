/**
 * The stored LCM operation occurrence. The row is also the durable job: `pending` says what the
 * runner must do next, `ctx` holds the step checkpoints, `lease_*` who runs it now.
 */

import type { LcmCommand } from './lcm-command.ts';

/** SOL LcmOperationStateType. */
export const OP_STATES = {
  STARTING: 'STARTING',
  PROCESSING: 'PROCESSING',
  COMPLETED: 'COMPLETED',
  FAILED_TEMP: 'FAILED_TEMP',
  FAILED: 'FAILED',
  ROLLING_BACK: 'ROLLING_BACK',
  ROLLED_BACK: 'ROLLED_BACK',
} as const;
export type OpState = keyof typeof OP_STATES;

/** States in which an op occ blocks other LCM operations on its instance. */
export const ACTIVE_STATES: readonly OpState[] = ['STARTING', 'PROCESSING', 'FAILED_TEMP', 'ROLLING_BACK'];

/** SOL LcmOperationType (the ones we implement). */
export const OPERATIONS = {
  INSTANTIATE: 'INSTANTIATE',
  SCALE: 'SCALE',
  HEAL: 'HEAL',
  TERMINATE: 'TERMINATE',
  MODIFY_INFO: 'MODIFY_INFO',
} as const;
export type Operation = keyof typeof OPERATIONS;

/** Runner instruction. */
export type Pending = 'run' | 'retry' | 'rollback';

/** An op occ as stored. */
export interface OpOccRecord {
  id: string;
  vnfInstanceId: string;
  operation: Operation;
  operationState: OpState;
  stateEnteredTime: Date;
  startTime: Date;
  isAutomaticInvocation: boolean;
  isCancelPending: boolean;
  cancelMode: string | null;
  operationParams: Record<string, unknown>;
  error: Record<string, unknown> | null;
  resourceChanges: Record<string, unknown> | null;
  changedInfo: Record<string, unknown> | null;
  grantId: string | null;
  grantRequest: Record<string, unknown> | null;
  grant: Record<string, unknown> | null;
  ctx: Record<string, unknown>;
  pending: Pending | null;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  /** Claims of this op so far. */
  attempts: number;
  /** Failed attempts of the step being retried automatically (0: no retry pending). */
  stepAttempts: number;
  /** When the op, waiting for an automatic retry, may be claimed again; null = now. */
  nextAttemptAt: Date | null;
  /** Claim generation; every write of the executor is fenced with it. */
  leaseEpoch: number;
  /** The facade that accepted the op (links in its grant request point there). */
  apiVersion: 'v1' | 'v2';
  /** The canonical command the op was accepted with (null on rows older than commands: see `commandOf`). */
  command: LcmCommand | null;
  /** Idempotency key of the creator (e.g. `autoheal-batch:<id>`), unique; null for API requests. */
  origin: string | null;
  createdAt: Date;
}

/** Maps a DB row to the record. */
export function opOccFromRow(r: Record<string, unknown>): OpOccRecord {
  return {
    id: r.id as string,
    vnfInstanceId: r.vnf_instance_id as string,
    operation: r.operation as Operation,
    operationState: r.operation_state as OpState,
    stateEnteredTime: new Date(r.state_entered_time as string),
    startTime: new Date(r.start_time as string),
    isAutomaticInvocation: r.is_automatic_invocation as boolean,
    isCancelPending: r.is_cancel_pending as boolean,
    cancelMode: r.cancel_mode as string | null,
    operationParams: (r.operation_params ?? {}) as Record<string, unknown>,
    error: (r.error ?? null) as Record<string, unknown> | null,
    resourceChanges: (r.resource_changes ?? null) as Record<string, unknown> | null,
    changedInfo: (r.changed_info ?? null) as Record<string, unknown> | null,
    grantId: r.grant_id as string | null,
    grantRequest: (r.grant_request ?? null) as Record<string, unknown> | null,
    grant: (r.grant ?? null) as Record<string, unknown> | null,
    ctx: (r.ctx ?? {}) as Record<string, unknown>,
    pending: r.pending as Pending | null,
    leaseOwner: r.lease_owner as string | null,
    leaseUntil: r.lease_until ? new Date(r.lease_until as string) : null,
    attempts: r.attempts as number,
    stepAttempts: (r.step_attempts as number | undefined) ?? 0,
    nextAttemptAt: r.next_attempt_at ? new Date(r.next_attempt_at as string) : null,
    leaseEpoch: Number(r.lease_epoch ?? 0),
    apiVersion: r.api_version as 'v1' | 'v2',
    command: (r.command ?? null) as LcmCommand | null,
    origin: (r.origin as string | null | undefined) ?? null,
    createdAt: new Date(r.created_at as string),
  };
}
