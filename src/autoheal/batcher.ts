/**
 * Turns due heal batches into heal op occs. Any VNFM process sharing the database may fire any
 * batch: due batches are claimed with `FOR UPDATE SKIP LOCKED` plus a lease, and the op occ's
 * `cause` carries the batch id, so a process that takes over a batch whose claimer died finds the
 * heal that claimer already created instead of creating a second one.
 *
 * A batch never silently disappears: a busy VNF makes it wait (retried when the blocking op ends,
 * or by the periodic sweep), a FAILED_TEMP op holds it (resumed when the op is resolved), the
 * storm guard suppresses it (an operator releases it), and targets that no longer need a heal are
 * dropped with a note saying why.
 */
import type { Logger } from 'pino';
import type { VnfmMetrics } from '../core/metrics.ts';
import { isVnfmError } from '../errors.ts';
import { auditLogger } from '../logger.ts';
import type { InstanceService } from '../lcm/instance-service.ts';
import type { LcmService } from '../lcm/lcm-service.ts';
import { activeOpOcc } from '../lcm/op-occ-repo.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';
import { type BatchNote, type ClaimedBatch, type FaultLedger, type FaultNotificationRecord, type NotificationStatus, batchOrigin, healCausePrefix, note } from './ledger.ts';
import { type AutohealOptions, evaluateStormGuard, policyFor } from './storm-guard.ts';

/** What the batcher needs. */
export interface HealBatcherDeps {
  ledger: FaultLedger;
  lcm: Pick<LcmService, 'heal'>;
  instances: Pick<InstanceService, 'get'>;
  metrics: VnfmMetrics;
  log: Logger;
  options: AutohealOptions;
  /** Lease owner name of this process. */
  workerId: string;
  /**
   * Embedded single-process database: claims of batches by other owners belong to a dead process
   * and are voided at start (as the op runner voids op leases), so a kill right after a packing
   * deadline does not delay the heal by a whole batch lease. @default false
   */
  singleProcess?: boolean;
  /** The intake's load, for its storm priority (absent: never defer): notifications per second, and not yet answered. */
  intake?: { rate(): number; readonly pending: number };
}

/** True when auto-heal is switched on for the instance (`vnfConfigurableProperties.isAutohealEnabled`). */
export function isAutohealEnabled(inst: Pick<VnfInstanceRecord, 'vnfConfigurableProperties'>): boolean {
  const v = inst.vnfConfigurableProperties?.isAutohealEnabled;
  return v === true || v === 'true';
}

/** Fires due batches and follows their heals. */
export class HealBatcher {
  private running = false;
  /** Not started, or stopped: no timers, kicks ignored. */
  private stopped = true;
  /** stop() was called: a cycle in progress ends early. */
  private stopRequested = false;
  private again = false;
  private loop: Promise<void> | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = Number.POSITIVE_INFINITY;
  /** Since when due batches wait for a notification storm to pass (undefined: not deferring). */
  private deferringSince: number | undefined;
  /** This claim round is the one a long storm lets through: claim only `concurrency` batches. */
  private forcedRound = false;

  /** The audit log (one line per automatic heal). */
  private readonly audit: ReturnType<typeof auditLogger>;

  constructor(private readonly d: HealBatcherDeps) {
    this.audit = auditLogger(d.log);
  }

  /**
   * Starts the periodic sweep (and fires whatever is already due, e.g. after a restart). With an
   * embedded database, claims left by an earlier process are voided first.
   */
  async start(): Promise<void> {
    if (!this.stopped) return;
    if (this.d.singleProcess) {
      const voided = await this.d.ledger.voidForeignClaims(this.d.workerId);
      if (voided.length > 0) this.d.log.warn({ batches: voided }, 'auto-heal: claims of heal batches left by an earlier process voided; firing them now');
    }
    this.stopped = false;
    this.stopRequested = false;
    this.sweepTimer = setInterval(() => this.kick(), this.d.options.sweepMs);
    this.sweepTimer.unref?.();
    this.kick();
  }

  /** Stops timers and waits for the cycle in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopRequested = true;
    clearInterval(this.sweepTimer);
    clearTimeout(this.dueTimer);
    this.dueAt = Number.POSITIVE_INFINITY;
    await this.loop;
  }

  /** Asks for a cycle now (coalesced with one in progress). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.loop = (async () => {
      try {
        do {
          this.again = false;
          await this.cycle();
        } while (this.again && !this.stopped);
      } finally {
        this.running = false;
      }
    })();
  }

  /** Schedules a cycle at `at` (e.g. the deadline of a batch just opened). */
  scheduleAt(at: Date): void {
    if (this.stopped) return;
    const t = at.getTime();
    if (t >= this.dueAt) return;
    clearTimeout(this.dueTimer);
    this.dueAt = t;
    this.dueTimer = setTimeout(
      () => {
        this.dueAt = Number.POSITIVE_INFINITY;
        this.kick();
      },
      Math.max(0, t - Date.now()),
    );
    this.dueTimer.unref?.();
  }

  /** An op of `vnfInstanceId` left the runner: its waiting batches may fire, its heal batch may be done. */
  onOpFinished(vnfInstanceId: string): void {
    if (this.stopped) return;
    void this.d.ledger
      .wakeWaiting(vnfInstanceId)
      .catch((e) => this.d.log.warn({ err: e, vnfInstanceId }, 'auto-heal: cannot wake waiting batches'))
      .finally(() => this.kick());
  }

  /**
   * One full cycle: follow running heals, resume held batches, then claim and fire every due
   * batch. Never throws. Returns the number of batches fired (tests, benchmarks).
   */
  async cycle(): Promise<number> {
    let fired = 0;
    try {
      if (this.yieldToIntake()) {
        // A fault notification storm: no database work here until it passes (checked again
        // shortly). Nothing is lost: due batches stay open, and keep packing meanwhile.
        this.recheckSoon();
        return 0;
      }
      for (const c of await this.d.ledger.followHeals()) {
        if (c.status === 'done') this.d.metrics.healBatches.inc({ result: 'healed' });
        else if (c.status === 'failed') this.d.metrics.healBatches.inc({ result: 'failed' });
        this.d.log.info({ batchId: c.id, status: c.status, opState: c.opState }, 'auto-heal batch follows its heal');
      }
      await this.d.ledger.resumeHeld();
      const limit = this.d.options.concurrency * 4;
      for (let round = 0; ; round++) {
        if (this.stopRequested) break;
        if (round > 0 && this.yieldToIntake()) {
          this.recheckSoon();
          return fired;
        }
        // The one round a long storm lets through is small (see yieldToIntake).
        const forced = this.forcedRound;
        this.forcedRound = false;
        const claimed = await this.d.ledger.claimDue(this.d.workerId, this.d.options.leaseMs, forced ? this.d.options.concurrency : limit);
        if (claimed.length === 0) break;
        fired += claimed.length;
        await pool(claimed, this.d.options.concurrency, (b) => this.fire(b));
        if (forced) {
          // The next deferral period starts when this round is done.
          if (this.deferringSince !== undefined) this.deferringSince = Date.now();
          this.recheckSoon();
          return fired;
        }
        if (claimed.length < limit) break;
      }
      const next = await this.d.ledger.nextDue();
      if (next) this.scheduleAt(next);
    } catch (e) {
      this.d.log.error({ err: e }, 'auto-heal cycle failed');
    }
    return fired;
  }

  /** Another cycle in a moment (storm priority re-check). */
  private recheckSoon(): void {
    this.scheduleAt(new Date(Date.now() + Math.min(100, this.d.options.sweepMs)));
  }

  /**
   * True while due batches should wait for a notification storm. A storm starts when the intake
   * rate reaches `intakePriorityRate` and lasts until the rate is below it AND no notification is
   * waiting for its answer (heals fired during a storm slow the intake down, which lowers the
   * rate: the waiting notifications show the storm is still on). Deferral lasts at most
   * `intakePriorityMaxMs` in a row; then one round of batches (`concurrency`) is fired and a new
   * period starts, so heals keep going even in an endless storm.
   */
  private yieldToIntake(): boolean {
    const { intakePriorityRate: threshold, intakePriorityMaxMs: maxMs } = this.d.options;
    const intake = this.d.intake;
    if (!intake || !(threshold > 0)) return false;
    const now = Date.now();
    const rate = intake.rate();
    if (this.deferringSince === undefined) {
      if (rate < threshold) return false;
      this.deferringSince = now;
      this.d.log.info({ rate: Math.round(rate) }, 'auto-heal: fault notification storm; due batches wait for the intake');
    } else if (rate < threshold && intake.pending === 0) {
      this.d.log.info({ deferredMs: now - this.deferringSince }, 'auto-heal: fault notification storm over; firing due batches');
      this.deferringSince = undefined;
      return false;
    }
    if (now - this.deferringSince < maxMs) return true;
    this.deferringSince = now;
    this.forcedRound = true;
    return false;
  }

  /** Decides what becomes of one claimed batch. */
  private async fire(b: ClaimedBatch): Promise<void> {
    const log = this.d.log.child({ vnfInstanceId: b.vnfInstanceId, batchId: b.id });
    try {
      // A previous claimer may have created the heal and died before recording it.
      if (b.attempts > 1 || b.vnfLcmOpOccId) {
        const existing = b.vnfLcmOpOccId ?? (await this.d.ledger.findHealOf(b));
        if (existing) {
          await this.settle(b, log, { status: 'healing', opOccId: existing, notes: [note(`heal op occ ${existing} found (created by an earlier attempt)`)], notifications: { status: 'healing' } });
          return;
        }
      }
      let inst: VnfInstanceRecord;
      try {
        inst = await this.d.instances.get(b.vnfInstanceId);
      } catch (e) {
        if (!isVnfmError(e, 'VNFM_ERR_INST_NOT_FOUND')) throw e;
        await this.drop(b, log, 'the VNF instance no longer exists');
        return;
      }
      if (inst.instantiationState !== 'INSTANTIATED' || !inst.instantiatedVnfInfo) {
        await this.drop(b, log, 'the VNF instance is not instantiated any more');
        return;
      }
      // Targets: drop the ones that no longer need a heal (VNFC gone, or its server already replaced).
      const notifs = (await this.d.ledger.notificationsOf(b.id)).filter((n) => n.status === 'packed' || n.status === 'new' || n.status === 'suppressed');
      const info = inst.instantiatedVnfInfo;
      const resById = new Map((info.vnfcResourceInfo ?? []).map((r) => [r.id, r]));
      const keep: string[] = [];
      const notes: BatchNote[] = [];
      const perNotification: { id: string; status: NotificationStatus; reason: string }[] = [];
      for (const t of b.targets) {
        const vi = (info.vnfcInfo ?? []).find((v) => v.id === t.vnfcInfoId);
        const res = vi ? resById.get(vi.vnfcResourceInfoId) : undefined;
        let why: string | undefined;
        if (!vi || !res) why = `VNFC ${t.vnfcInfoId} no longer exists`;
        else if (res.computeResource.resourceId !== t.serverId) why = `server ${t.serverId} of VNFC ${t.vnfcInfoId} was already replaced (now ${res.computeResource.resourceId})`;
        if (why) {
          notes.push(note(`target dropped: ${why}`));
          for (const n of notifs) if (n.vnfcInstanceId === t.vnfcInfoId && n.serverId === t.serverId) perNotification.push({ id: n.id, status: 'dropped', reason: why });
        } else if (!keep.includes(t.vnfcInfoId)) keep.push(t.vnfcInfoId);
      }
      if (keep.length === 0) {
        await this.drop(b, log, 'no target left to heal', notes, perNotification);
        return;
      }
      if (!b.released) {
        if (!isAutohealEnabled(inst)) {
          await this.suppress(b, log, 'disabled', 'auto-heal was switched off for the VNF (vnfConfigurableProperties.isAutohealEnabled) after the faults were reported', notes, perNotification);
          return;
        }
        const policy = policyFor(this.d.options, inst);
        const [recentHeals, alsoUnhealthy] = await Promise.all([
          this.d.ledger.recentAutoHeals(inst.id, policy.frequencyPeriodMs),
          this.d.ledger.recentlySuppressedTargets(inst.id, policy.frequencyPeriodMs, b.id),
        ]);
        const verdict = evaluateStormGuard({ policy, totalVnfcs: (info.vnfcInfo ?? []).length, targets: keep, alsoUnhealthy, recentHeals });
        if (!verdict.allowed) {
          await this.suppress(b, log, verdict.reason, verdict.detail, notes, perNotification);
          return;
        }
      }
      const cause = `${healCausePrefix(b.id)}: ${b.notificationCount} fault notification(s) for ${keep.length} VNFC(s)${faultTypesOf(notifs)}`;
      try {
        const op = await this.d.lcm.heal(inst.id, { operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: keep, includeStorage: false, cause, additionalParams: {} }, { apiVersion: 'v2', params: { vnfcInstanceId: keep, cause }, automatic: true, origin: batchOrigin(b.id) });
        await this.settle(b, log, { status: 'healing', opOccId: op.id, healedVnfcIds: keep, notes: [...notes, note(`heal op occ ${op.id} created for ${keep.length} VNFC(s)`)], notifications: { status: 'healing' }, perNotification });
        log.info({ opOccId: op.id, vnfcs: keep.length }, 'auto-heal started');
        this.audit.record({ who: 'vnfm', action: 'HEAL (automatic)', target: inst.id, result: 'accepted', opOccId: op.id, batchId: b.id, vnfcs: keep.length });
      } catch (e) {
        if (isVnfmError(e, 'VNFM_ERR_INST_BUSY')) {
          const active = await activeOpOcc(this.d.ledger.db as never, inst.id).catch(() => undefined);
          if (active?.operationState === 'FAILED_TEMP') {
            const why = `the VNF has a FAILED_TEMP ${active.operation} operation ${active.id}: retry, rollback or fail it; the batch resumes then (or release it)`;
            await this.settle(b, log, { status: 'held', reason: why, reasonCode: 'failed_temp', notes: [...notes, note(why)], perNotification });
            this.d.metrics.healBatches.inc({ result: 'held' });
            return;
          }
          const why = `the VNF is busy${active ? ` with ${active.operation} ${active.id} (${active.operationState})` : ''}; the heal starts when it ends`;
          await this.settle(b, log, { status: 'waiting', reason: why, reasonCode: 'busy', nextAttemptInMs: this.d.options.busyRetryMs, notes: [...notes, note(why)], perNotification });
          this.d.metrics.healBatches.inc({ result: 'waiting' });
          // The blocking op may have ended while this batch was not yet 'waiting' (its event missed it).
          if (!(await activeOpOcc(this.d.ledger.db as never, inst.id).catch(() => active))) this.onOpFinished(inst.id);
          return;
        }
        if (isVnfmError(e, 'VNFM_ERR_INST_STATE', 'VNFM_ERR_INST_NOT_FOUND')) {
          await this.drop(b, log, e.message, notes, perNotification);
          return;
        }
        // The instance changed between our read and the heal request (ids vanished), or a
        // transient failure: try again soon, with back-off.
        const delay = Math.min(60_000, 200 * 2 ** Math.min(b.attempts, 8));
        const why = `heal request failed: ${(e as Error).message ?? String(e)}; retrying`;
        await this.settle(b, log, { status: 'waiting', reason: why, reasonCode: 'error', nextAttemptInMs: delay, notes: [...notes, note(why)], perNotification });
        log.warn({ err: e }, 'auto-heal request failed; will retry');
      }
    } catch (e) {
      // Database trouble: the claim's lease expires and the batch is fired again.
      log.error({ err: e }, 'auto-heal batch could not be processed; it will be retried when its claim expires');
    }
  }

  private async settle(b: ClaimedBatch, log: Logger, change: Parameters<FaultLedger['settleClaimed']>[1]): Promise<void> {
    const ok = await this.d.ledger.settleClaimed(b, change);
    if (!ok) log.warn({ status: change.status }, 'auto-heal batch claim was lost to another process; leaving it to that process');
  }

  private async drop(b: ClaimedBatch, log: Logger, why: string, notes: BatchNote[] = [], perNotification: { id: string; status: NotificationStatus; reason: string }[] = []): Promise<void> {
    await this.settle(b, log, { status: 'dropped', reason: why, reasonCode: 'nothing_to_heal', notes: [...notes, note(`dropped: ${why}`)], notifications: { status: 'dropped', reason: why }, perNotification });
    this.d.metrics.healBatches.inc({ result: 'dropped' });
    log.info({ reason: why }, 'auto-heal batch dropped');
  }

  private async suppress(b: ClaimedBatch, log: Logger, reason: string, detail: string, notes: BatchNote[], perNotification: { id: string; status: NotificationStatus; reason: string }[]): Promise<void> {
    await this.settle(b, log, { status: 'suppressed', reason: detail, reasonCode: reason, notes: [...notes, note(`suppressed (${reason}): ${detail}`)], notifications: { status: 'suppressed', reason: detail }, perNotification });
    this.d.metrics.healBatches.inc({ result: 'suppressed' });
    this.d.metrics.autohealSuppressed.inc({ reason });
    log.warn({ reason, detail }, 'auto-heal suppressed');
  }
}

function faultTypesOf(notifs: FaultNotificationRecord[]): string {
  const types = [...new Set(notifs.map((n) => n.faultType))].sort();
  return types.length ? ` (fault_type ${types.join(', ')})` : '';
}

/** Runs `fn` over `items` with at most `n` in flight. */
async function pool<T>(items: readonly T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  const worker = async () => {
    while (i < items.length) {
      const t = items[i++] as T;
      await fn(t);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}
