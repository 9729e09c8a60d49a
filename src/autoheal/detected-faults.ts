/**
 * Faults the VNFM detected itself (its health model: a VNFC faulty for its `unhealthyFor`), fed
 * into the same ledger, packing window, storm guard and heal batches as Server Notifier reports.
 * One fault, one heal: a VNFC already in the VNF's pending batch is recorded as a duplicate of it,
 * and a batch that fires after another operation healed the VNFC drops it as healed meanwhile.
 */
import type { HealBatcher } from './batcher.ts';
import type { InstanceFactsCache } from './instance-facts.ts';
import type { IntakeResult } from './intake-queue.ts';
import { DISABLED_REASON } from './intake-queue.ts';
import type { FaultLedger, GroupItem, NotificationInput } from './ledger.ts';

/** Alarm id recorded with the VNFM's own detections (a Server Notifier's are the VIM's alarm ids). */
export const DETECTED_ALARM_ID = 'vnfm-health';
/** Tacker's fault type for a VM (or pod) whose status is not what it should be. */
export const DETECTED_FAULT_TYPE = '20';

/** A VNFC the health model has held faulty for its `unhealthyFor`. */
export interface DetectedFault {
  vnfInstanceId: string;
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  /** The server id or pod name the VNFC runs on. */
  resourceId: string;
  /** The condition's reason (`ERROR`, `SHUTOFF`, `DELETED`, `NotReady`, ...). */
  reason: string;
  /** Who saw it (`vim-watch`, `probe`, ...). */
  source: string;
  /** Since when the VNFC is faulty. */
  since: Date;
}

/** What packing a detected fault needs. */
export interface DetectedFaultDeps {
  ledger: Pick<FaultLedger, 'packGroup'>;
  facts: Pick<InstanceFactsCache, 'lookup'>;
  batcher: Pick<HealBatcher, 'scheduleAt'>;
  windowMs: () => number;
  workerId: string;
}

/** Why a detected fault was not recorded at all (the instance is gone or not instantiated). */
export type DetectedFaultResult = IntakeResult | { kind: 'refused'; reason: string };

/**
 * Records a detected fault in the ledger: packed into the VNF's batch when auto-heal is on for it,
 * else recorded as ignored (the evidence stays). Never throws for a vanished instance.
 */
export async function packDetectedFault(d: DetectedFaultDeps, f: DetectedFault): Promise<DetectedFaultResult> {
  const facts = (await d.facts.lookup([f.vnfInstanceId])).get(f.vnfInstanceId);
  if (!facts?.instantiated) return { kind: 'refused', reason: `VnfInstance ${f.vnfInstanceId} is ${facts ? 'not instantiated' : 'gone'}` };
  const input: NotificationInput & { vnfcInfoId: string; vnfcResourceInfoId: string } = {
    vnfInstanceId: f.vnfInstanceId,
    serverId: f.resourceId,
    alarmId: DETECTED_ALARM_ID,
    faultId: `${f.source}:${f.reason}`,
    faultType: DETECTED_FAULT_TYPE,
    faultOption: { source: f.source, reason: f.reason, faultySince: f.since.toISOString() },
    vnfcInfoId: f.vnfcInfoId,
    vnfcResourceInfoId: f.vnfcResourceInfoId,
    receivedBy: d.workerId,
  };
  const item: GroupItem = facts.autohealEnabled ? { kind: 'pack', input } : { kind: 'ignore', input, reason: DISABLED_REASON };
  const [o] = await d.ledger.packGroup([item], d.windowMs());
  if (!o) throw new Error('detected fault was not stored');
  if (o.kind === 'error') throw o.error;
  if (o.kind === 'ignored') return o;
  if (o.opened) d.batcher.scheduleAt(new Date(o.deadline));
  return { ...o, vnfcInfoId: f.vnfcInfoId };
}
