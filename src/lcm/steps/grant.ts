/**
 * The grant step: the GrantRequest built from the operation's resources (its handler's `grant`),
 * asked of the NFVO (or granted locally), the Grant stored sealed on the op occ, and STARTING ->
 * PROCESSING in the same fenced transaction. A cancel that came while the grant was asked for rolls
 * a STARTING op back instead; a rejected grant rolls it back too.
 */
import type { Kysely } from 'kysely';
import { isVnfmError } from '../../errors.ts';
import { maskSealed } from '../../model/sealed-params.ts';
import type { OpOccRecord } from '../../model/op-occ.ts';
import type { GrantClient, GrantRequest } from '../../nfvo/grant-client.ts';
import { json } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import type { MgmtStore } from '../mgmt-context.ts';
import type { OpOccStates } from '../op-occ-state.ts';
import { getOpOcc } from '../op-occ-repo.ts';
import { Cancelled } from './failure.ts';
import { type Loaded, type OpCtx, type Run, runInput } from './op-ctx.ts';

/** What the grant step needs. */
export interface GrantDeps {
  db: Kysely<Database>;
  publicUrl: string;
  grants: GrantClient;
  mgmtStore: MgmtStore;
  states: OpOccStates;
}

/** The GrantRequest of the op (secrets of its additionalParams masked). */
export function grantRequestOf(publicUrl: string, op: OpOccRecord, ctx: OpCtx, all: Loaded): GrantRequest {
  const base = `${publicUrl}/vnflcm/${op.apiVersion}`;
  const { add, remove } = all.handler.grant(runInput(ctx, all));
  const additionalParams = (all.command as { additionalParams?: Record<string, unknown> }).additionalParams;
  return {
    vnfInstanceId: all.instance.id,
    vnfLcmOpOccId: op.id,
    vnfdId: all.vnfd.vnfdId,
    flavourId: all.flavour.flavourId,
    operation: op.operation,
    isAutomaticInvocation: op.isAutomaticInvocation,
    ...(ctx.instantiationLevelId && op.operation === 'INSTANTIATE' ? { instantiationLevelId: ctx.instantiationLevelId } : {}),
    ...(add.length ? { addResources: add } : {}),
    ...(remove.length ? { removeResources: remove } : {}),
    // Secrets of the request (e.g. SSH passwords for management drivers) never leave the VNFM.
    ...(additionalParams && Object.keys(additionalParams).length ? { additionalParams: maskSealed(additionalParams) } : {}),
    _links: { vnfLcmOpOcc: { href: `${base}/vnf_lcm_op_occs/${op.id}` }, vnfInstance: { href: `${base}/vnf_instances/${all.instance.id}` } },
  };
}

/** The op's stored Grant with its sealed values opened (stored sealed: VIM credentials an NFVO may grant). */
export function grantOf(mgmtStore: MgmtStore, op: OpOccRecord): Record<string, unknown> | null {
  return op.grant ? mgmtStore.unseal(op.grant) : op.grant;
}

/**
 * Asks for the op's grant and stores it (a STARTING op becomes PROCESSING with it); returns the
 * Grant in clear and the op occ as stored now.
 */
export async function requestGrant(d: GrantDeps, run: Run, op: OpOccRecord, all: Loaded): Promise<{ grant: Record<string, unknown> | null; op: OpOccRecord }> {
  const gr = grantRequestOf(d.publicUrl, op, run.ctx, all);
  let grant: Record<string, unknown> | null;
  try {
    grant = await d.grants.grant(gr, { signal: run.lease.signal });
  } catch (e) {
    if (isVnfmError(e, 'VNFM_ERR_GRANT_REJECTED')) throw Object.assign(e, { rollBack: true });
    throw e;
  }
  const lease = run.lease;
  await d.db.transaction().execute(async (tx) => {
    const set = { grant_request: json(gr), grant: json(grant ? d.mgmtStore.sealGrant(grant) : grant), grant_id: (grant?.id as string) ?? null };
    if (op.operationState !== 'STARTING') {
      await lease.write(set, tx);
      return;
    }
    // Fenced; a cancel that came while the grant was requested (read in the same statement,
    // the row is locked from here on): a STARTING op is rolled back instead (the rollback of
    // this transaction undoes the update).
    const cur = await lease.writeReturning(set, ['is_cancel_pending', 'cancel_mode'], tx);
    if (cur.is_cancel_pending) throw new Cancelled(cur.cancel_mode ?? 'GRACEFUL', true);
    await d.states.started(tx, (s, t) => lease.write(s, t), op, all.instance, {});
  });
  return { grant, op: await getOpOcc(d.db, op.id) };
}
