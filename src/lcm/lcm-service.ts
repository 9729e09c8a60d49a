/**
 * Accepts LCM requests: validates them against the instance state and the VNFD, then creates the
 * op occ (STARTING) and its START notification in one transaction and wakes the runner. Everything
 * that can be decided synchronously is (409 busy, 404, 400/422 with the exact reason), so a 202 is
 * only ever answered for an operation that will run.
 */
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import { vnfmError } from '../errors.ts';
import type { HealTarget } from '../infra/infra-driver.ts';
import type { OpOccRecord, Operation } from '../model/op-occ.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { Notifier } from '../notify/notifier.ts';
import type { PackageService } from '../packages/package-service.ts';
import { validateScale } from '../packages/vnfd-scaling.ts';
import type { FlavourModel, VnfPackageModel } from '../packages/vnfd-model.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import type { VimConnection } from '../vims/vim-registry.ts';
import type { InstanceService } from './instance-service.ts';
import { factsOf } from './instance-service.ts';
import { getOpOcc, insertOpOcc } from './op-occ-repo.ts';

/** Request bodies after schema validation. */
export type LcmRequest = Record<string, unknown>;

/** Accepts LCM operations and task requests. */
export class LcmService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly instances: InstanceService,
    private readonly packages: PackageService,
    private readonly notifier: Notifier,
    private readonly log: Logger,
    private readonly wake: () => void,
    private readonly hasDriver: (vimType: string) => boolean = () => true,
  ) {}

  /** The parsed VNFD of an instance's package. */
  async vnfdOf(inst: VnfInstanceRecord): Promise<VnfPackageModel> {
    return this.packages.vnfd(inst.vnfPkgId);
  }

  private flavourOf(vnfd: VnfPackageModel, flavourId: string): FlavourModel {
    const f = vnfd.flavours[flavourId];
    if (!f) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `flavourId ${flavourId} is not defined in VNFD ${vnfd.vnfdId}; known: ${Object.keys(vnfd.flavours).join(', ')}`);
    return f;
  }

  private async start(inst: VnfInstanceRecord, operation: Operation, params: LcmRequest, v: 'v1' | 'v2', opts: { automatic?: boolean; instanceUpdate?: Record<string, unknown> } = {}): Promise<OpOccRecord> {
    let id = '';
    await this.db.transaction().execute(async (tx) => {
      const op = await insertOpOcc(tx, { vnfInstanceId: inst.id, operation, state: 'STARTING', params, pending: 'run', apiVersion: v, automatic: opts.automatic ?? false });
      id = op.id;
      if (opts.instanceUpdate) await tx.updateTable('vnf_instance').set(opts.instanceUpdate as never).where('id', '=', inst.id).execute();
      await this.notifier.enqueue(tx, { kind: 'VnfLcmOperationOccurrenceNotification', instance: factsOf(inst), opOccId: op.id, operation, operationState: 'STARTING', notificationStatus: 'START', isAutomaticInvocation: opts.automatic ?? false });
    });
    this.log.info({ vnfInstanceId: inst.id, opOccId: id, operation }, 'lcm operation accepted');
    this.wake();
    return getOpOcc(this.db, id);
  }

  /** InstantiateVnfRequest. */
  async instantiate(id: string, req: LcmRequest, v: 'v1' | 'v2'): Promise<OpOccRecord> {
    const inst = await this.instances.get(id);
    if (inst.instantiationState !== 'NOT_INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${id} is already INSTANTIATED.`);
    const vnfd = await this.vnfdOf(inst);
    const flavour = this.flavourOf(vnfd, req.flavourId as string);
    const level = req.instantiationLevelId as string | undefined;
    if (level !== undefined && !flavour.instantiationLevels[level]) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `instantiationLevelId ${level} is not defined in flavour ${flavour.flavourId}; known: ${Object.keys(flavour.instantiationLevels).join(', ') || 'none'}`);
    // VIM: from the request, else the instance, else the default VIM of the package's kind.
    let conns: Record<string, VimConnection> | undefined;
    const reqVci = req.vimConnectionInfo;
    if (reqVci !== undefined) {
      const asMap = Array.isArray(reqVci) ? Object.fromEntries((reqVci as { id?: string }[]).map((c, i) => [c.id ?? `vim_${i}`, c])) : (reqVci as Record<string, Partial<VimConnection>>);
      conns = await this.instances.completeConnections({ ...(await this.instances.vimConnections(id)), ...asMap } as Record<string, Partial<VimConnection>>);
    } else if (Object.keys(inst.vimConnectionInfo).length === 0) {
      const kind = vnfd.baseHotDirs[flavour.flavourId] ? 'openstack' : vnfd.kubernetesFiles.length > 0 ? 'kubernetes' : 'openstack';
      const def = await this.instances.defaultVim(kind);
      if (!def) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `no vimConnectionInfo given and no default ${kind} VIM registered`);
      conns = { vim1: def };
    }
    for (const c of Object.values(conns ?? (await this.instances.vimConnections(id)))) {
      if (!this.hasDriver(c.vimType)) throw vnfmError('VNFM_ERR_INST_INVALID', `vimType ${c.vimType} is not supported; supported: ETSINFV.OPENSTACK_KEYSTONE.V_3, ETSINFV.KUBERNETES.V_1`);
    }
    let instanceUpdate: Record<string, unknown> | undefined;
    if (conns) {
      const sealed = await this.instances.sealConnections(conns);
      instanceUpdate = { vim_connection_info: json(sealed.info), vim_secrets: sealed.secrets };
    }
    const { vimConnectionInfo: _omit, ...params } = req;
    return this.start(inst, 'INSTANTIATE', { ...params, ...(reqVci !== undefined ? { vimConnectionInfo: redactVci(reqVci) } : {}) }, v, instanceUpdate ? { instanceUpdate } : {});
  }

  /** TerminateVnfRequest. */
  async terminate(id: string, req: LcmRequest, v: 'v1' | 'v2'): Promise<OpOccRecord> {
    const inst = await this.instances.get(id);
    if (inst.instantiationState !== 'INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${id} isn't instantiated.`);
    return this.start(inst, 'TERMINATE', req, v);
  }

  /** ScaleVnfRequest: aspect and level validated against the VNFD. */
  async scale(id: string, req: LcmRequest, v: 'v1' | 'v2', automatic = false): Promise<OpOccRecord> {
    const inst = await this.instances.get(id);
    if (inst.instantiationState !== 'INSTANTIATED' || !inst.instantiatedVnfInfo) throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${id} isn't instantiated.`);
    const vnfd = await this.vnfdOf(inst);
    const flavour = this.flavourOf(vnfd, inst.instantiatedVnfInfo.flavourId);
    const aspectId = req.aspectId as string;
    if (!flavour.scalingAspects[aspectId]) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `aspectId ${aspectId} is not defined in flavour ${flavour.flavourId}; known: ${Object.keys(flavour.scalingAspects).join(', ') || 'none'}`);
    const cur = inst.instantiatedVnfInfo.scaleStatus?.find((s) => s.aspectId === aspectId)?.scaleLevel ?? 0;
    const steps = (req.numberOfSteps as number | undefined) ?? 1;
    const r = validateScale(flavour, aspectId, cur, steps, req.type as 'SCALE_OUT' | 'SCALE_IN');
    if (!r.ok) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', r.message);
    return this.start(inst, 'SCALE', { ...req, numberOfSteps: steps }, v, { automatic });
  }

  /** Resolves heal targets: v2 by vnfcInfo id, v1 by vnfcResourceInfo id. Unknown ids -> 422 naming them. */
  resolveHealTargets(inst: VnfInstanceRecord, ids: string[], v: 'v1' | 'v2'): HealTarget[] {
    const info = inst.instantiatedVnfInfo;
    const res = info?.vnfcResourceInfo ?? [];
    const vi = info?.vnfcInfo ?? [];
    const targets: HealTarget[] = [];
    const missing: string[] = [];
    for (const x of [...new Set(ids)]) {
      let r = res.find((c) => c.id === x);
      let i = r ? vi.find((c) => c.vnfcResourceInfoId === r?.id) : undefined;
      if (!r || v === 'v2') {
        i = vi.find((c) => c.id === x) ?? (v === 'v2' ? undefined : i);
        r = i ? res.find((c) => c.id === i?.vnfcResourceInfoId) : v === 'v2' ? res.find((c) => c.id === x) : r;
        if (r && !i) i = vi.find((c) => c.vnfcResourceInfoId === r?.id);
      }
      if (!r || !i) missing.push(x);
      else targets.push({ vnfcInfo: i, vnfcResourceInfo: r });
    }
    if (missing.length) throw vnfmError('VNFM_ERR_INST_INVALID', `vnfcInstanceId(${missing.join(', ')}) does not exist.`, { extra: { unknownVnfcInstanceIds: missing } });
    return targets;
  }

  /** HealVnfRequest. */
  async heal(id: string, req: LcmRequest, v: 'v1' | 'v2', automatic = false): Promise<OpOccRecord> {
    const inst = await this.instances.get(id);
    if (inst.instantiationState !== 'INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${id} isn't instantiated.`);
    const ap = (req.additionalParams ?? {}) as Record<string, unknown>;
    if (ap.all !== undefined && typeof ap.all !== 'boolean') throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'additionalParams.all must be a boolean');
    const ids = (req.vnfcInstanceId as string[] | undefined) ?? [];
    this.resolveHealTargets(inst, ids, v);
    return this.start(inst, 'HEAL', req, v, { automatic });
  }

  /** retry: FAILED_TEMP -> PROCESSING, continue from the failed step. */
  async retry(opId: string): Promise<OpOccRecord> {
    return this.task(opId, 'retry');
  }

  /** rollback: FAILED_TEMP -> ROLLING_BACK (INSTANTIATE and SCALE out only; others 409/422 at once). */
  async rollback(opId: string): Promise<OpOccRecord> {
    const op = await getOpOcc(this.db, opId);
    if (op.operationState !== 'FAILED_TEMP') throw vnfmError('VNFM_ERR_OPOCC_STATE', `VnfLcmOpOcc ${opId} is ${op.operationState}, not FAILED_TEMP.`);
    if (op.operation === 'SCALE' && op.operationParams.type === 'SCALE_IN') throw vnfmError('VNFM_ERR_OPOCC_UNSUPPORTED', 'Rollback of SCALE_IN is not supported; retry it or fail it.');
    if (op.operation !== 'INSTANTIATE' && op.operation !== 'SCALE') throw vnfmError('VNFM_ERR_OPOCC_UNSUPPORTED', `Rollback of ${op.operation} is not supported; retry it or fail it.`);
    return this.task(opId, 'rollback');
  }

  private async task(opId: string, kind: 'retry' | 'rollback'): Promise<OpOccRecord> {
    await this.db.transaction().execute(async (tx) => {
      const row = await tx.selectFrom('op_occ').selectAll().where('id', '=', opId).forUpdate().executeTakeFirst();
      if (!row) throw vnfmError('VNFM_ERR_OPOCC_NOT_FOUND', `VnfLcmOpOcc ${opId} not found.`);
      if (row.operation_state !== 'FAILED_TEMP' || row.pending !== null) throw vnfmError('VNFM_ERR_OPOCC_STATE', `VnfLcmOpOcc ${opId} is ${row.operation_state}, not FAILED_TEMP.`);
      const state = kind === 'retry' ? 'PROCESSING' : 'ROLLING_BACK';
      // An operator's retry/rollback starts with a fresh budget of automatic step retries.
      await tx
        .updateTable('op_occ')
        .set({ operation_state: state, state_entered_time: new Date(), pending: kind, lease_owner: null, lease_until: null, step_attempts: 0, next_attempt_at: null, ctx: sql`ctx - 'retry'` })
        .where('id', '=', opId)
        .execute();
      const inst = await this.instances.get(row.vnf_instance_id, tx);
      await this.notifier.enqueue(tx, { kind: 'VnfLcmOperationOccurrenceNotification', instance: factsOf(inst), opOccId: opId, operation: row.operation, operationState: state, notificationStatus: 'START', isAutomaticInvocation: row.is_automatic_invocation });
    });
    this.log.info({ opOccId: opId, task: kind }, 'lcm task accepted');
    this.wake();
    return getOpOcc(this.db, opId);
  }

  /** fail: FAILED_TEMP -> FAILED (synchronous). */
  async fail(opId: string): Promise<OpOccRecord> {
    await this.db.transaction().execute(async (tx) => {
      const row = await tx.selectFrom('op_occ').selectAll().where('id', '=', opId).forUpdate().executeTakeFirst();
      if (!row) throw vnfmError('VNFM_ERR_OPOCC_NOT_FOUND', `VnfLcmOpOcc ${opId} not found.`);
      if (row.operation_state !== 'FAILED_TEMP' || row.pending !== null) throw vnfmError('VNFM_ERR_OPOCC_STATE', `VnfLcmOpOcc ${opId} is ${row.operation_state}, not FAILED_TEMP.`);
      await tx.updateTable('op_occ').set({ operation_state: 'FAILED', state_entered_time: new Date(), grant: json(null) }).where('id', '=', opId).execute();
      const inst = await this.instances.get(row.vnf_instance_id, tx);
      await this.notifier.enqueue(tx, { kind: 'VnfLcmOperationOccurrenceNotification', instance: factsOf(inst), opOccId: opId, operation: row.operation, operationState: 'FAILED', notificationStatus: 'RESULT', isAutomaticInvocation: row.is_automatic_invocation, error: row.error as Record<string, unknown> | null });
    });
    this.log.info({ opOccId: opId }, 'lcm operation failed by request');
    return getOpOcc(this.db, opId);
  }

  /**
   * v1 cancel (SOL003 2.6.1 5.4.17): only a STARTING or PROCESSING op; marks it cancel pending
   * (`isCancelPending`, `cancelMode`) in one conditional update, so an op that finished meanwhile
   * is answered 409 and never shows a pending cancel. The runner acts at the next step boundary:
   * a STARTING op (not granted yet) ends ROLLED_BACK, a PROCESSING one FAILED_TEMP (retry or fail
   * then). Both modes let the VIM operation in flight finish (FORCEFUL does not abort it).
   */
  async cancel(opId: string, mode: string): Promise<OpOccRecord> {
    const row = await this.db
      .updateTable('op_occ')
      // An op waiting for an automatic retry is claimable at once: the cancel is acted upon now.
      .set({ is_cancel_pending: true, cancel_mode: mode, next_attempt_at: null })
      .where('id', '=', opId)
      .where('operation_state', 'in', ['STARTING', 'PROCESSING'])
      .returning(['id'])
      .executeTakeFirst();
    if (!row) {
      const op = await getOpOcc(this.db, opId);
      throw vnfmError('VNFM_ERR_OPOCC_STATE', `VnfLcmOpOcc ${opId} is ${op.operationState}; only STARTING or PROCESSING operations can be cancelled.`);
    }
    this.log.info({ opOccId: opId, cancelMode: mode }, 'lcm operation cancel requested');
    this.wake();
    return getOpOcc(this.db, opId);
  }
}

function redactVci(v: unknown): unknown {
  const strip = (c: Record<string, unknown>) => {
    const { accessInfo: _a, ...rest } = c;
    return rest;
  };
  if (Array.isArray(v)) return v.map((c) => strip(c as Record<string, unknown>));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, Record<string, unknown>>).map(([k, c]) => [k, strip(c ?? {})]));
  return v;
}

