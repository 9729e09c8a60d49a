/**
 * Group commit for the fault intake. Received notifications wait in a queue while the previous
 * group is being written; then the whole queue (up to `maxGroup`) is validated and stored with a
 * fixed number of statements, whatever its size: one to check the instances (see
 * {@link InstanceFactsCache}) and one to store every notification with its batch upserts (see
 * {@link FaultLedger.packGroup}). Each request is answered only after the statement holding its
 * notification returned, so a 204 still means "durably packed".
 *
 * Why: the embedded database has ONE session and runs every statement in turn, shared with the
 * heals running at the same time. Per-notification statements made the intake rate the session's
 * statement rate; grouping makes it grow with the load instead (the busier the session, the
 * larger the next group). There is no waiting timer: a lone notification is written on the next
 * turn of the event loop; groups form from what arrives while a write is in progress.
 *
 * Validation and its answers are exactly those of a single request: 404 for an unknown instance,
 * 400 with the same details for a wrong state, fault id, server or alarm; those requests are
 * answered right after the check and store nothing.
 */
import { vnfmError } from '../errors.ts';
import type { InstanceFacts, InstanceFactsCache } from './instance-facts.ts';
import type { FaultLedger, GroupItem, GroupOutcome, NotificationInput } from './ledger.ts';

/** One received notification (already schema-checked). */
export interface IntakeRequest {
  vnfInstanceId: string;
  serverId: string;
  notification: { host_id?: string | undefined; alarm_id: string; fault_id: string; fault_type: string; fault_option?: Record<string, unknown> | undefined };
}

/** What became of an accepted notification. */
export type IntakeResult =
  | { kind: 'packed'; notificationId: string; batchId: string; deadline: string; opened: boolean; vnfcInfoId: string }
  | { kind: 'ignored'; notificationId: string };

/** Dependencies and limits of the queue. */
export interface IntakeQueueDeps {
  ledger: Pick<FaultLedger, 'packGroup'>;
  facts: Pick<InstanceFactsCache, 'lookup'>;
  /** Packing window of new batches, read when a group is written (the config may change). */
  windowMs: () => number;
  /** Recorded with each notification. */
  workerId: string;
  /** Largest group. @default 500 */
  maxGroup?: number;
}

export const DISABLED_REASON = 'auto-heal is disabled for the VNF instance (vnfConfigurableProperties.isAutohealEnabled is not true)';

/** Slot of the arrival rate measurement (the rate covers one slot, sliding). */
const SLOT_MS = 500;

interface Waiter {
  req: IntakeRequest;
  resolve: (r: IntakeResult) => void;
  reject: (e: unknown) => void;
}

/**
 * Checks one request against its instance's facts: the item to store, or the error to answer
 * (same order and texts as Tacker's receiver, plus the server/alarm match).
 */
export function validateNotification(req: IntakeRequest, facts: InstanceFacts | undefined, workerId: string): GroupItem {
  const { vnfInstanceId, serverId, notification: n } = req;
  if (!facts) throw vnfmError('VNFM_ERR_FAULT_NOT_FOUND', `VnfInstance ${vnfInstanceId} not found.`);
  const bad = (detail: string) => vnfmError('VNFM_ERR_FAULT_INVALID', detail);
  if (!facts.instantiated) throw bad(`VnfInstance ${vnfInstanceId} is not instantiated.`);
  if (!facts.faultIds.includes(n.fault_id)) throw bad('fault_id does not match.');
  const s = facts.servers.get(serverId);
  if (!s) throw bad(`target vnfc not found: no VNFC of VnfInstance ${vnfInstanceId} runs on server ${serverId}.`);
  if (s.alarmId !== n.alarm_id) throw bad(`target vnfc not found: alarm_id ${n.alarm_id} is not the alarm registered for server ${serverId}.`);
  if (s.vnfcInfoId === undefined) throw bad(`target vnfc not found: server ${serverId} has no vnfcInfo.`);
  const input: NotificationInput & { vnfcInfoId: string; vnfcResourceInfoId: string } = {
    vnfInstanceId,
    serverId,
    alarmId: n.alarm_id,
    faultId: n.fault_id,
    faultType: n.fault_type,
    hostId: n.host_id,
    faultOption: n.fault_option,
    vnfcInfoId: s.vnfcInfoId,
    vnfcResourceInfoId: s.vnfcResourceInfoId,
    receivedBy: workerId,
  };
  return facts.autohealEnabled ? { kind: 'pack', input } : { kind: 'ignore', input, reason: DISABLED_REASON };
}

/** The group-commit queue of one process. */
export class IntakeQueue {
  private queue: Waiter[] = [];
  private draining = false;
  private readonly maxGroup: number;
  /** Arrival counting for {@link rate}: the current slot and the one before. */
  private slotStart = 0;
  private pendingCount = 0;
  private readonly counters = { groups: 0, written: 0 };
  private slotCount = 0;
  private prevCount = 0;

  constructor(private readonly d: IntakeQueueDeps) {
    this.maxGroup = Math.max(1, d.maxGroup ?? 500);
  }

  /**
   * Notifications received per second, over the last half second (sliding window). The batcher reads it
   * to let a notification storm go first (see `AutohealOptions.intakePriorityRate`).
   */
  rate(now = Date.now()): number {
    this.roll(now);
    const into = (now - this.slotStart) / SLOT_MS;
    return (this.prevCount * (1 - into) + this.slotCount) * (1000 / SLOT_MS);
  }

  private roll(now: number): void {
    if (now - this.slotStart < SLOT_MS) return;
    const slots = Math.floor((now - this.slotStart) / SLOT_MS);
    this.prevCount = slots === 1 ? this.slotCount : 0;
    this.slotCount = 0;
    this.slotStart += slots * SLOT_MS;
  }

  /** Groups written and notifications in them since start (tests, benchmarks). */
  get stats(): { groups: number; written: number } {
    return { ...this.counters };
  }

  /** Notifications received and not answered yet (queued or being written). */
  get pending(): number {
    return this.pendingCount;
  }

  /**
   * Validates and stores one notification with the next group. Resolves once it is stored;
   * rejects with the 400/404 error of a refused notification, or the database error.
   */
  submit(req: IntakeRequest): Promise<IntakeResult> {
    this.roll(Date.now());
    this.slotCount++;
    this.pendingCount++;
    return new Promise<IntakeResult>((resolve, reject) => {
      let settled = false;
      const settle = () => {
        if (settled) return false;
        settled = true;
        this.pendingCount--;
        return true;
      };
      this.queue.push({
        req,
        resolve: (r) => settle() && resolve(r),
        reject: (e) => settle() && reject(e),
      });
      if (!this.draining) {
        this.draining = true;
        void this.drain();
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        // Let the event loop read the requests that arrived while the previous group was being
        // written (database work keeps it busy): they join this group instead of the next one.
        await new Promise((r) => setImmediate(r));
        const group = this.queue.length <= this.maxGroup ? this.queue : this.queue.slice(0, this.maxGroup);
        this.queue = this.queue.length <= this.maxGroup ? [] : this.queue.slice(this.maxGroup);
        try {
          await this.write(group);
        } catch (e) {
          for (const w of group) w.reject(e);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** Validates and stores one group; answers every waiter. Never throws. */
  private async write(group: Waiter[]): Promise<void> {
    let facts: Map<string, InstanceFacts>;
    try {
      facts = await this.d.facts.lookup(group.map((w) => w.req.vnfInstanceId));
    } catch (e) {
      for (const w of group) w.reject(e);
      return;
    }
    const items: GroupItem[] = [];
    const owners: Waiter[] = [];
    for (const w of group) {
      try {
        items.push(validateNotification(w.req, facts.get(w.req.vnfInstanceId), this.d.workerId));
        owners.push(w);
      } catch (e) {
        w.reject(e);
      }
    }
    if (items.length === 0) return;
    this.counters.groups++;
    this.counters.written += items.length;
    let outcomes: GroupOutcome[];
    try {
      outcomes = await this.d.ledger.packGroup(items, this.d.windowMs());
    } catch (e) {
      for (const w of owners) w.reject(e);
      return;
    }
    owners.forEach((w, i) => {
      const o = outcomes[i];
      const it = items[i] as GroupItem;
      if (!o) w.reject(new Error('fault notification was not stored'));
      else if (o.kind === 'error') w.reject(o.error);
      else if (o.kind === 'ignored') w.resolve(o);
      else w.resolve({ ...o, vnfcInfoId: it.input.vnfcInfoId as string });
    });
  }
}
