/**
 * What the steps of one execution share: the op's persistent context (the `op_occ.ctx` column,
 * its checkpoint), what was loaded for the op (instance, VNFD, flavour, VIM), and the handle of the
 * execution in progress (lease, checkpoint writes). The executor (../executor.ts) sequences the
 * steps; each step lives in a file of this folder.
 */
import type { Logger } from 'pino';
import type { MgmtProgress, MgmtResult } from '../../mgmt/mgmt-driver.ts';
import type { LcmCommand } from '../../model/lcm-command.ts';
import type { VnfInstanceRecord } from '../../model/vnf-instance.ts';
import type { FlavourModel, VnfPackageModel } from '../../packages/vnfd-model.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { OpLease } from '../lease.ts';
import type { OperationHandler, OpPlan, RunInput } from '../operations/handler.ts';

/** Persistent engine context of one op occ (the `ctx` column). */
export interface OpCtx {
  done: string[];
  /** Step started but not finished (crash detection). */
  current?: string;
  flavourId?: string;
  instantiationLevelId?: string;
  targetScaleLevels?: Record<string, number>;
  targetVduCounts?: Record<string, number>;
  fromLevel?: number;
  toLevel?: number;
  /** vnfcResourceInfo ids healed. */
  healedIds?: string[];
  /** Ids given to new resources by the first rebuild of this op (see RebuildOptions.newIds). */
  newIds?: Record<string, string>;
  driver: Record<string, unknown>;
  mgmt: Record<string, unknown>;
  mgmtResult?: MgmtResult;
  /** The step in flight when it was declared safe to repeat at its start (idempotent hooks only). */
  resumableStep?: string;
  /** Progress of the running hook step (shown as `vnfmProgress` on the op occ). */
  progress?: MgmtProgress & { hook: string; startedAt: string; updatedAt: string };
  /** The automatic retry pending or last made (cleared when its step completes). */
  retry?: RetryState;
  /** Every automatic retry of this op, oldest first (at most RETRY_LOG_MAX, ./failure.ts). */
  retries?: RetryLogEntry[];
  [k: string]: unknown;
}

/** The state of an automatic step retry (`ctx.retry`, shown as `vnfmRetry` on the op occ while it waits). */
export interface RetryState {
  step: string;
  /** Failed attempts of `step` so far. */
  attempts: number;
  maxAttempts: number;
  delayMs: number;
  /** ProblemDetails of the last failure. */
  lastError: Record<string, unknown>;
}

/** One automatic retry, kept in `ctx.retries`. */
export interface RetryLogEntry {
  step: string;
  attempt: number;
  delayMs: number;
  at: string;
  detail: string;
}

/** What an execution loads for its op (./load.ts). */
export interface Loaded {
  /** The instance as stored when this execution started. */
  instance: VnfInstanceRecord;
  handler: OperationHandler;
  /** The op's command, its sealed values opened. */
  command: LcmCommand;
  vnfd: VnfPackageModel;
  flavour: FlavourModel;
  /** The connection the VNF's resources live on (with its credentials). */
  vim: VimConnection | undefined;
  vimKey: string;
  /** The package's files, read once when first asked for. */
  files: () => Promise<Map<string, Buffer>>;
}

/** One execution of an op, as its steps see it. */
export interface Run {
  ctx: OpCtx;
  lease: OpLease;
  log: Logger;
  /** Writes the op's checkpoint (fenced, serialised per op). */
  save(): Promise<void>;
  /** True once the op reached its final state (the lease is given back: no more writes). */
  finished(): boolean;
  /** Marks the op as having reached its final state. */
  finish(): void;
}

/** The op's plan as frozen in its checkpoint. */
export function planOf(ctx: OpCtx): OpPlan {
  return {
    targetScaleLevels: ctx.targetScaleLevels ?? {},
    targetVduCounts: ctx.targetVduCounts ?? {},
    ...(ctx.instantiationLevelId !== undefined ? { instantiationLevelId: ctx.instantiationLevelId } : {}),
    ...(ctx.fromLevel !== undefined ? { fromLevel: ctx.fromLevel } : {}),
    ...(ctx.toLevel !== undefined ? { toLevel: ctx.toLevel } : {}),
  };
}

/** What the operation handler's run-time parts get. */
export function runInput(ctx: OpCtx, all: Loaded): RunInput<never> {
  return { command: all.command, instance: all.instance, flavour: all.flavour, plan: planOf(ctx) } as unknown as RunInput<never>;
}
