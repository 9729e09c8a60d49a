/**
 * How a failed step ends: the ProblemDetails recorded, the automatic retry's back-off, the cancel
 * that stops an op at a step boundary, and the FAILED_TEMP (or ROLLED_BACK) transition written
 * with the op's lease.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { VnfmConfig } from '../../config.ts';
import type { VnfmMetrics } from '../../core/metrics.ts';
import { classifyFailure, isVnfmError, type VnfmError } from '../../errors.ts';
import type { OpOccRecord } from '../../model/op-occ.ts';
import { json } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import { dbNowPlus, type OpLease } from '../lease.ts';
import type { OpOccStates } from '../op-occ-state.ts';
import { getOpOcc } from '../op-occ-repo.ts';
import type { OpCtx } from './op-ctx.ts';

/** Automatic retries kept in `ctx.retries`. */
export const RETRY_LOG_MAX = 50;

/**
 * Delay before the next attempt after `failed` failed attempts of a step: "equal jitter"
 * exponential back-off (half of min(max, base * 2^(failed-1)) fixed, the other half random), raised
 * to a VIM's Retry-After, never above `maxDelayMs`.
 */
export function stepRetryDelay(failed: number, cfg: { baseDelayMs: number; maxDelayMs: number }, retryAfterMs?: number, random: () => number = Math.random): number {
  const cap = Math.min(cfg.maxDelayMs, cfg.baseDelayMs * 2 ** Math.max(0, failed - 1));
  const jittered = cap / 2 + random() * (cap / 2);
  return Math.round(Math.min(cfg.maxDelayMs, Math.max(jittered, retryAfterMs ?? 0)));
}

/**
 * Raised to stop an op at a step boundary (v1 cancel). A cancel seen before the op left STARTING
 * (not granted, nothing done) rolls it back (SOL003: STARTING -> ROLLED_BACK); later, FAILED_TEMP.
 */
export class Cancelled extends Error {
  readonly rollBack: boolean;
  constructor(
    readonly mode: string,
    starting: boolean,
  ) {
    super(`the operation was cancelled by request (cancelMode ${mode})`);
    this.rollBack = starting;
  }
}

/** The ProblemDetails recorded for a failure. */
export function problemOf(e: unknown): { title: string; status: number; detail: string; type?: string } {
  if (isVnfmError(e)) return { title: e.title, status: e.httpStatus, detail: e.message, type: `urn:vnfm:error:${e.code}` };
  if (e instanceof Cancelled) return { title: 'Cancelled', status: 409, detail: e.message };
  return { title: 'Internal Server Error', status: 500, detail: `unexpected failure: ${(e as Error)?.message ?? String(e)}` };
}

/** What failing an op needs. */
export interface FailDeps {
  db: Kysely<Database>;
  states: OpOccStates;
}

/** What handling a step's failure needs. */
export interface StepFailureDeps extends FailDeps {
  config: VnfmConfig;
  metrics: VnfmMetrics;
  /** Asks the runner to look for work again in `ms` (an automatic retry falls due then). */
  wakeAfter?: ((ms: number) => void) | undefined;
}

/**
 * Step `step` failed: retry it later (retryable, attempts left) or FAILED_TEMP at once. The retry is
 * a fenced write that releases the op with `next_attempt_at` on the database clock.
 */
export async function onStepFailure(d: StepFailureDeps, lease: OpLease, op: OpOccRecord, ctx: OpCtx, step: string, e: unknown, log: Logger): Promise<void> {
  const cls = e instanceof Cancelled ? { retryable: false } : classifyFailure(e);
  const failed = (ctx.retry?.step === step ? ctx.retry.attempts : 0) + 1;
  const cfg = d.config.runner.stepRetries;
  if (!cls.retryable || failed >= cfg.maxAttempts) {
    await failTemp(d, lease, op.id, ctx, e, log, cls.retryable ? { step, attempts: failed } : undefined);
    return;
  }
  const delayMs = stepRetryDelay(failed, cfg, cls.retryAfterMs);
  const lastError = problemOf(e);
  ctx.retry = { step, attempts: failed, maxAttempts: cfg.maxAttempts, delayMs, lastError };
  ctx.retries = [...(ctx.retries ?? []), { step, attempt: failed, delayMs, at: new Date().toISOString(), detail: lastError.detail }].slice(-RETRY_LOG_MAX);
  // The step did not finish: it runs again from its start (drivers and hooks resume through their state).
  delete ctx.current;
  await lease.write({ ctx: json(ctx), step_attempts: failed, next_attempt_at: dbNowPlus(delayMs), lease_owner: null, lease_until: null });
  d.metrics.stepRetries.inc({ operation: op.operation, step });
  log.warn(
    { step, attempt: failed, maxAttempts: cfg.maxAttempts, delayMs, retryAfterMs: cls.retryAfterMs, error: lastError.detail, code: (e as VnfmError).code },
    'step failed with a retryable error; it runs again after the back-off',
  );
  d.wakeAfter?.(delayMs);
}

/**
 * The op ends FAILED_TEMP (or ROLLED_BACK: a cancel or a grant refusal while STARTING) with the
 * failure's ProblemDetails; `exhausted`: a retryable failure that ran out of automatic retries.
 */
export async function failTemp(d: FailDeps, lease: OpLease, opId: string, ctx: OpCtx, e: unknown, log: Logger, exhausted?: { step: string; attempts: number }): Promise<void> {
  const cancelled = e instanceof Cancelled;
  const rolledBack = (e as { rollBack?: boolean })?.rollBack === true;
  const err = problemOf(e);
  // A retryable failure that ran out of automatic retries says so.
  if (exhausted && exhausted.attempts > 1) err.detail = `${err.detail} (step '${exhausted.step}' failed ${exhausted.attempts} times; no automatic retry left)`;
  if (!isVnfmError(e) && !cancelled) log.error({ err: e }, 'operation failed unexpectedly');
  else log.warn({ step: ctx.current, error: err.detail, attempts: exhausted?.attempts }, 'operation failed');
  const state = rolledBack ? 'ROLLED_BACK' : 'FAILED_TEMP';
  await d.db.transaction().execute(async (tx) => {
    // Read under the lock of the fenced write below; its state is the transition's origin.
    const op = await getOpOcc(tx, opId);
    const set = {
      error: json(err),
      pending: null,
      lease_owner: null,
      lease_until: null,
      next_attempt_at: null,
      ...(exhausted ? { step_attempts: exhausted.attempts } : {}),
      ctx: json(ctx),
      is_cancel_pending: false,
      cancel_mode: null,
    };
    // Fenced: with the lease lost nothing is written and nothing is notified.
    await d.states.finished(tx, (s, t) => lease.write(s, t), op, state, set, { instanceId: op.vnfInstanceId, error: err });
  });
}
