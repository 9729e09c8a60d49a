/**
 * The one owner of op occ state. Every change of `op_occ.operation_state` goes through here, in the
 * caller's transaction, together with the notification it causes (so a notification exists if and
 * only if its state change was committed) and the operation metrics:
 *
 *   create     (none) -> STARTING, or PROCESSING for synchronous ops (MODIFY_INFO)  START
 *   started    STARTING -> PROCESSING (granted)                                   START
 *   finished   -> COMPLETED | ROLLED_BACK | FAILED_TEMP                            RESULT
 *   resumed    FAILED_TEMP -> PROCESSING (retry) | ROLLING_BACK (rollback)         START
 *   failed     FAILED_TEMP -> FAILED                                               RESULT
 *   recorded   (none) -> COMPLETED, a change the VNFM found, not made (drift sync)  none
 *
 * Transitions outside {@link NEXT} are refused (a programming error, never a client's). Writes made
 * while executing an op come in as a `write` function: the executor passes its lease's fenced write,
 * so with a lost lease the transition, its instance update and its notification are all rolled back.
 */
import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import type { VnfmMetrics } from '../core/metrics.ts';
import { vnfmError } from '../errors.ts';
import type { LcmCommand } from '../model/lcm-command.ts';
import type { OpOccRecord, OpState, Operation, Pending } from '../model/op-occ.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { Notifier } from '../notify/notifier.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { factsOf } from './instance-service.ts';
import { getOpOcc, insertOpOcc } from './op-occ-repo.ts';

type Tx = Transaction<Database>;
type OpSet = Record<string, unknown>;
/** Writes columns of the op occ row (fenced by a lease when the executor writes). */
export type OpWriter = (set: OpSet, tx: Tx) => Promise<void>;

/** Allowed transitions (SOL003 5.6.2 / SOL002 op occ state model). */
export const NEXT: Record<OpState, readonly OpState[]> = {
  STARTING: ['PROCESSING', 'ROLLED_BACK', 'FAILED_TEMP'],
  PROCESSING: ['COMPLETED', 'FAILED_TEMP'],
  FAILED_TEMP: ['PROCESSING', 'ROLLING_BACK', 'FAILED'],
  ROLLING_BACK: ['ROLLED_BACK', 'FAILED_TEMP'],
  COMPLETED: [],
  FAILED: [],
  ROLLED_BACK: [],
};

/** Final states. */
export const FINAL_STATES: readonly OpState[] = ['COMPLETED', 'FAILED', 'ROLLED_BACK'];

function check(opId: string, from: OpState, to: OpState): void {
  if (!NEXT[from].includes(to)) throw new Error(`op occ ${opId}: transition ${from} -> ${to} is not allowed`);
}

/** What {@link OpOccStates} needs. */
export interface OpOccStatesDeps {
  notifier: Notifier;
  metrics: VnfmMetrics;
  /** The instance as stored, read in the transaction (notification facts). */
  instance(id: string, tx: Tx): Promise<VnfInstanceRecord>;
}

/** A new op occ. */
export interface NewOpOcc {
  instance: VnfInstanceRecord;
  operation: Operation;
  command: LcmCommand;
  /** The request as received (secrets removed), echoed as `operationParams`. */
  params: Record<string, unknown>;
  apiVersion: 'v1' | 'v2';
  automatic: boolean;
  origin?: string;
  /** STARTING for operations the runner executes; PROCESSING for synchronous ones. */
  state: 'STARTING' | 'PROCESSING';
  pending: Pending | null;
  id?: string;
}

/** Op occ state transitions with their notifications. */
export class OpOccStates {
  constructor(private readonly d: OpOccStatesDeps) {}

  /** Inserts the op occ (409 when another is active on the instance) and its START notification. */
  async create(tx: Tx, n: NewOpOcc): Promise<OpOccRecord> {
    const op = await insertOpOcc(tx, {
      ...(n.id ? { id: n.id } : {}),
      vnfInstanceId: n.instance.id,
      operation: n.operation,
      state: n.state,
      params: n.params,
      pending: n.pending,
      apiVersion: n.apiVersion,
      automatic: n.automatic,
      command: n.command,
      ...(n.origin ? { origin: n.origin } : {}),
    });
    await this.notify(tx, op, n.state, 'START', n.instance);
    return op;
  }

  /**
   * Records a change the VIM made on its own (drift sync) as a MODIFY_INFO op occ created
   * COMPLETED; no notification (SOL defines none for a change the VNFM did not make). 409 when
   * another operation is active on the instance.
   */
  async recorded(tx: Tx, n: Omit<NewOpOcc, 'state' | 'pending'>, set: OpSet): Promise<OpOccRecord> {
    const op = await insertOpOcc(tx, { ...(n.id ? { id: n.id } : {}), vnfInstanceId: n.instance.id, operation: n.operation, state: 'COMPLETED', params: n.params, pending: null, apiVersion: n.apiVersion, automatic: n.automatic, command: n.command });
    await tx.updateTable('op_occ').set(set as never).where('id', '=', op.id).execute();
    this.count(op, 'COMPLETED');
    return op;
  }

  /** STARTING -> PROCESSING once granted; `set` carries the grant columns. */
  async started(tx: Tx, write: OpWriter, op: OpOccRecord, instance: VnfInstanceRecord, set: OpSet): Promise<void> {
    // Written first (a fenced write fails when the lease is lost), checked after: the transaction rolls back on a refusal.
    await write({ ...set, operation_state: 'PROCESSING', state_entered_time: new Date() }, tx);
    check(op.id, op.operationState, 'PROCESSING');
    await this.notify(tx, op, 'PROCESSING', 'START', instance);
  }

  /**
   * The op reached COMPLETED, ROLLED_BACK or FAILED_TEMP. `set` carries the other op occ columns;
   * `instanceAfter` is read after the caller's instance update (notification facts).
   */
  async finished(
    tx: Tx,
    write: OpWriter,
    op: Pick<OpOccRecord, 'id' | 'operation' | 'operationState' | 'isAutomaticInvocation' | 'startTime'>,
    state: 'COMPLETED' | 'ROLLED_BACK' | 'FAILED_TEMP',
    set: OpSet,
    extra: { full?: Record<string, unknown>; error?: Record<string, unknown> | null; instanceId: string },
  ): Promise<void> {
    await write({ ...set, operation_state: state, state_entered_time: new Date() }, tx);
    check(op.id, op.operationState, state);
    const after = await this.d.instance(extra.instanceId, tx);
    await this.notify(tx, op, state, 'RESULT', after, extra);
    this.count(op, state);
  }

  /** retry (FAILED_TEMP -> PROCESSING) or rollback (FAILED_TEMP -> ROLLING_BACK), asked by an operator. */
  async resumed(tx: Tx, opId: string, kind: 'retry' | 'rollback'): Promise<void> {
    const op = await this.lockFailedTemp(tx, opId);
    const state = kind === 'retry' ? 'PROCESSING' : 'ROLLING_BACK';
    check(opId, op.operationState, state);
    // An operator's retry/rollback starts with a fresh budget of automatic step retries.
    await tx
      .updateTable('op_occ')
      .set({ operation_state: state, state_entered_time: new Date(), pending: kind, lease_owner: null, lease_until: null, step_attempts: 0, next_attempt_at: null, ctx: sql`ctx - 'retry'` })
      .where('id', '=', opId)
      .execute();
    await this.notify(tx, op, state, 'START', await this.d.instance(op.vnfInstanceId, tx));
  }

  /** fail: FAILED_TEMP -> FAILED (final; the error stays). */
  async failed(tx: Tx, opId: string): Promise<void> {
    const op = await this.lockFailedTemp(tx, opId);
    check(opId, op.operationState, 'FAILED');
    await tx.updateTable('op_occ').set({ operation_state: 'FAILED', state_entered_time: new Date(), grant: json(null) }).where('id', '=', opId).execute();
    await this.notify(tx, op, 'FAILED', 'RESULT', await this.d.instance(op.vnfInstanceId, tx), { error: op.error });
    this.count(op, 'FAILED');
  }

  /** Marks a STARTING or PROCESSING op cancel-pending; 409 otherwise (the runner acts on it). */
  async cancelRequested(db: Parameters<typeof getOpOcc>[0], opId: string, mode: string): Promise<void> {
    const row = await db
      .updateTable('op_occ')
      // An op waiting for an automatic retry is claimable at once: the cancel is acted upon now.
      .set({ is_cancel_pending: true, cancel_mode: mode, next_attempt_at: null })
      .where('id', '=', opId)
      .where('operation_state', 'in', ['STARTING', 'PROCESSING'])
      .returning(['id'])
      .executeTakeFirst();
    if (!row) {
      const op = await getOpOcc(db, opId);
      throw vnfmError('VNFM_ERR_OPOCC_STATE', `VnfLcmOpOcc ${opId} is ${op.operationState}; only STARTING or PROCESSING operations can be cancelled.`);
    }
  }

  private async lockFailedTemp(tx: Tx, opId: string): Promise<OpOccRecord> {
    const row = await tx.selectFrom('op_occ').select(['id', 'operation_state', 'pending']).where('id', '=', opId).forUpdate().executeTakeFirst();
    if (!row) throw vnfmError('VNFM_ERR_OPOCC_NOT_FOUND', `VnfLcmOpOcc ${opId} not found.`);
    if (row.operation_state !== 'FAILED_TEMP' || row.pending !== null) throw vnfmError('VNFM_ERR_OPOCC_STATE', `VnfLcmOpOcc ${opId} is ${row.operation_state}, not FAILED_TEMP.`);
    return getOpOcc(tx, opId);
  }

  private async notify(
    tx: Tx,
    op: Pick<OpOccRecord, 'id' | 'operation' | 'isAutomaticInvocation'>,
    state: OpState,
    status: 'START' | 'RESULT',
    instance: VnfInstanceRecord,
    extra: { full?: Record<string, unknown>; error?: Record<string, unknown> | null } = {},
  ): Promise<void> {
    await this.d.notifier.enqueue(tx, {
      kind: 'VnfLcmOperationOccurrenceNotification',
      instance: factsOf(instance),
      opOccId: op.id,
      operation: op.operation,
      operationState: state,
      notificationStatus: status,
      isAutomaticInvocation: op.isAutomaticInvocation,
      ...(extra.error !== undefined ? { error: extra.error } : {}),
      ...(extra.full ? { full: extra.full } : {}),
    });
  }

  private count(op: Pick<OpOccRecord, 'operation' | 'isAutomaticInvocation' | 'startTime'>, state: OpState): void {
    this.d.metrics.lcmOps.inc({ operation: op.operation, result: state });
    if (state === 'COMPLETED' || state === 'ROLLED_BACK') this.d.metrics.lcmOpDuration.observe({ operation: op.operation }, (Date.now() - op.startTime.getTime()) / 1000);
    if (op.operation === 'HEAL') this.d.metrics.heals.inc({ trigger: op.isAutomaticInvocation ? 'auto' : 'manual', result: state });
  }
}
