/**
 * Reads and writes op occ rows. Creating one is where "one operation per VNF instance at a time"
 * is enforced: the partial unique index rejects a second active op occ, and that becomes a
 * synchronous 409, never a 202 that hangs.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { vnfmError } from '../errors.ts';
import type { LcmCommand } from '../model/lcm-command.ts';
import { type OpOccRecord, type OpState, type Operation, type Pending, opOccFromRow } from '../model/op-occ.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** True when a database error is a unique-constraint violation (PostgreSQL 23505). */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: string })?.code;
  return code === '23505' || /duplicate key value/.test(String((e as Error)?.message ?? ''));
}

/** Inserts a new op occ; throws 409 when another operation is active on the instance. */
export async function insertOpOcc(
  tx: Db,
  o: {
    vnfInstanceId: string;
    operation: Operation;
    state: OpState;
    params: Record<string, unknown>;
    automatic?: boolean;
    pending: Pending | null;
    apiVersion: 'v1' | 'v2';
    id?: string;
    command?: LcmCommand;
    origin?: string;
  },
): Promise<OpOccRecord> {
  const now = new Date();
  const id = o.id ?? randomUUID();
  const active = await tx.selectFrom('op_occ').select(['id', 'operation', 'operation_state']).where('vnf_instance_id', '=', o.vnfInstanceId).where('operation_state', 'in', ['STARTING', 'PROCESSING', 'FAILED_TEMP', 'ROLLING_BACK']).executeTakeFirst();
  if (active) throw busyError(o.vnfInstanceId, active);
  try {
    await tx
      .insertInto('op_occ')
      .values({
        id,
        vnf_instance_id: o.vnfInstanceId,
        operation: o.operation,
        operation_state: o.state,
        state_entered_time: now,
        start_time: now,
        is_automatic_invocation: o.automatic ?? false,
        is_cancel_pending: false,
        operation_params: json(o.params),
        error: json(null),
        resource_changes: json(null),
        changed_info: json(null),
        grant_request: json(null),
        grant: json(null),
        ctx: json({}),
        pending: o.pending,
        attempts: 0,
        api_version: o.apiVersion,
        command: o.command ? json(o.command) : null,
        origin: o.origin ?? null,
      })
      .execute();
  } catch (e) {
    if (isOriginViolation(e)) throw vnfmError('VNFM_ERR_INST_BUSY', `An LCM operation with origin ${o.origin} exists already.`, { extra: { origin: o.origin } });
    if (isUniqueViolation(e)) throw vnfmError('VNFM_ERR_INST_BUSY', `Other LCM operation of vnfInstance ${o.vnfInstanceId} is in progress.`);
    throw e;
  }
  return getOpOcc(tx, id);
}

/** True when the unique origin (idempotency key) of op occs was violated. */
export function isOriginViolation(e: unknown): boolean {
  const x = e as { constraint?: string; message?: string };
  return isUniqueViolation(e) && (x?.constraint === 'op_occ_origin_uq' || /op_occ_origin_uq/.test(String(x?.message ?? '')));
}

/** The op occ created with an origin (idempotency key), if any. */
export async function findByOrigin(db: Db, origin: string): Promise<OpOccRecord | undefined> {
  const r = await db.selectFrom('op_occ').selectAll().where('origin', '=', origin).executeTakeFirst();
  return r ? opOccFromRow(r as unknown as Record<string, unknown>) : undefined;
}

function busyError(instanceId: string, active: { id: string; operation: string; operation_state: string }) {
  const hint = active.operation_state === 'FAILED_TEMP' ? ' (it is FAILED_TEMP: retry, rollback or fail it first)' : '';
  return vnfmError('VNFM_ERR_INST_BUSY', `Other LCM operation of vnfInstance ${instanceId} is in progress: ${active.operation} ${active.id} is ${active.operation_state}${hint}.`, {
    extra: { conflictingLcmOpOccId: active.id },
  });
}

/** Loads one op occ or throws 404. */
export async function getOpOcc(db: Db, id: string): Promise<OpOccRecord> {
  const r = await db.selectFrom('op_occ').selectAll().where('id', '=', id).executeTakeFirst();
  if (!r) throw vnfmError('VNFM_ERR_OPOCC_NOT_FOUND', `VnfLcmOpOcc ${id} not found.`);
  return opOccFromRow(r as unknown as Record<string, unknown>);
}

/** All op occs (optionally of one instance), oldest first. */
export async function listOpOccs(db: Db, vnfInstanceId?: string): Promise<OpOccRecord[]> {
  let q = db.selectFrom('op_occ').selectAll().orderBy('created_at').orderBy('id');
  if (vnfInstanceId) q = q.where('vnf_instance_id', '=', vnfInstanceId);
  return (await q.execute()).map((r) => opOccFromRow(r as unknown as Record<string, unknown>));
}

/** The active (non-final) op occ of an instance, if any. */
export async function activeOpOcc(db: Db, vnfInstanceId: string): Promise<OpOccRecord | undefined> {
  const r = await db.selectFrom('op_occ').selectAll().where('vnf_instance_id', '=', vnfInstanceId).where('operation_state', 'in', ['STARTING', 'PROCESSING', 'FAILED_TEMP', 'ROLLING_BACK']).executeTakeFirst();
  return r ? opOccFromRow(r as unknown as Record<string, unknown>) : undefined;
}
