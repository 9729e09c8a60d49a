/**
 * Turns LCM events into notifications in the durable outbox. It runs inside the caller's
 * transaction, so a notification exists if and only if the state change that causes it was
 * committed; delivery (src/notify/delivery.ts) happens afterwards, in order per subscription.
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, type Transaction, sql } from 'kysely';
import { affectedVirtualLinksToV1 } from '../model/sol-shapes.ts';
import { afterCommit } from '../store/after-commit.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';

/** The instance attributes subscription filters look at. */
export interface InstanceFacts {
  id: string;
  vnfInstanceName: string | null;
  vnfdId: string;
  vnfProvider: string;
  vnfProductName: string;
  vnfSoftwareVersion: string;
  vnfdVersion: string;
  /** Project (tenant) of the instance when known (null: none); otherwise read from the database. */
  project?: string | null;
}

/** An event to notify about. */
export type LcmEvent =
  | { kind: 'VnfIdentifierCreationNotification' | 'VnfIdentifierDeletionNotification'; instance: InstanceFacts }
  | {
      kind: 'VnfLcmOperationOccurrenceNotification';
      instance: InstanceFacts;
      opOccId: string;
      operation: string;
      operationState: string;
      notificationStatus: 'START' | 'RESULT';
      isAutomaticInvocation: boolean;
      error?: Record<string, unknown> | null;
      /** FULL-verbosity parts: affectedVnfcs, affectedVirtualLinks, affectedVirtualStorages, changedInfo... */
      full?: Record<string, unknown>;
    };

/** SOL LccnSubscription filter (both API versions use the same shape). */
export interface SubscriptionFilter {
  vnfInstanceSubscriptionFilter?: {
    vnfdIds?: string[];
    vnfProductsFromProviders?: { vnfProvider: string; vnfProducts?: { vnfProductName: string; versions?: { vnfSoftwareVersion: string; vnfdVersions?: string[] }[] }[] }[];
    vnfInstanceIds?: string[];
    vnfInstanceNames?: string[];
  };
  notificationTypes?: string[];
  operationTypes?: string[];
  operationStates?: string[];
}

/** True when the event passes the subscription filter (AND across criteria, OR within lists). */
export function matchesSubscription(filter: SubscriptionFilter | null | undefined, ev: LcmEvent): boolean {
  if (!filter) return true;
  const inst = ev.instance;
  const f = filter.vnfInstanceSubscriptionFilter;
  if (f) {
    if (f.vnfdIds?.length && !f.vnfdIds.includes(inst.vnfdId)) return false;
    if (f.vnfInstanceIds?.length && !f.vnfInstanceIds.includes(inst.id)) return false;
    if (f.vnfInstanceNames?.length && !(inst.vnfInstanceName !== null && f.vnfInstanceNames.includes(inst.vnfInstanceName))) return false;
    if (f.vnfProductsFromProviders?.length) {
      const ok = f.vnfProductsFromProviders.some(
        (p) =>
          p.vnfProvider === inst.vnfProvider &&
          (!p.vnfProducts?.length ||
            p.vnfProducts.some(
              (pr) =>
                pr.vnfProductName === inst.vnfProductName &&
                (!pr.versions?.length || pr.versions.some((v) => v.vnfSoftwareVersion === inst.vnfSoftwareVersion && (!v.vnfdVersions?.length || v.vnfdVersions.includes(inst.vnfdVersion)))),
            )),
      );
      if (!ok) return false;
    }
  }
  if (filter.notificationTypes?.length && !filter.notificationTypes.includes(ev.kind)) return false;
  if (ev.kind === 'VnfLcmOperationOccurrenceNotification') {
    if (filter.operationTypes?.length && !filter.operationTypes.includes(ev.operation)) return false;
    if (filter.operationStates?.length && !filter.operationStates.includes(ev.operationState)) return false;
  } else if ((filter.operationTypes?.length || filter.operationStates?.length) && !filter.notificationTypes?.includes(ev.kind)) {
    // Operation criteria only make sense for op occ notifications; identifier events still pass
    // unless the subscriber restricted notification types.
  }
  return true;
}

/** Builds notification bodies and writes them to the outbox. */
export class Notifier {
  private listener: (() => void) | undefined;

  constructor(private readonly publicUrl: () => string) {}

  /** Called whenever queued notifications were committed, so delivery starts without waiting for a poll. */
  onQueued(fn: () => void): void {
    this.listener = fn;
  }

  /** The body sent to one subscription. */
  build(ev: LcmEvent, sub: { id: string; api_version: string; verbosity: string }, notificationId: string = randomUUID()): Record<string, unknown> {
    const v = sub.api_version === 'v1' ? 'v1' : 'v2';
    const base = `${this.publicUrl()}/vnflcm/${v}`;
    const links: Record<string, { href: string }> = {
      vnfInstance: { href: `${base}/vnf_instances/${ev.instance.id}` },
      subscription: { href: `${base}/subscriptions/${sub.id}` },
    };
    const common = { id: notificationId, notificationType: ev.kind, subscriptionId: sub.id, timeStamp: new Date().toISOString(), vnfInstanceId: ev.instance.id };
    if (ev.kind !== 'VnfLcmOperationOccurrenceNotification') return { ...common, _links: links };
    links.vnfLcmOpOcc = { href: `${base}/vnf_lcm_op_occs/${ev.opOccId}` };
    const body: Record<string, unknown> = {
      ...common,
      notificationStatus: ev.notificationStatus,
      operationState: ev.operationState,
      operation: ev.operation,
      isAutomaticInvocation: ev.isAutomaticInvocation,
      vnfLcmOpOccId: ev.opOccId,
      _links: links,
    };
    if (v === 'v2') body.verbosity = sub.verbosity === 'SHORT' ? 'SHORT' : 'FULL';
    if (ev.error && ['FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(ev.operationState)) body.error = ev.error;
    if (sub.verbosity !== 'SHORT' && ev.full) {
      for (const [k, val] of Object.entries(ev.full)) {
        if (val === undefined || val === null || (Array.isArray(val) && val.length === 0)) continue;
        // SOL 2.6.1 (v1) AffectedVirtualLink names the descriptor `virtualLinkDescId`.
        body[k] = v === 'v1' && k === 'affectedVirtualLinks' ? affectedVirtualLinksToV1(val as Record<string, unknown>[]) : val;
      }
    }
    return body;
  }

  /** The event as the dashboard's feed carries it: the notification's SHORT shape, without subscription. */
  feedEvent(ev: LcmEvent): Record<string, unknown> {
    const body = this.build(ev, { id: '', api_version: 'v2', verbosity: 'SHORT' });
    delete body.subscriptionId;
    delete body.id;
    delete body.verbosity;
    const links = body._links as Record<string, unknown>;
    delete links.subscription;
    if (ev.instance.vnfInstanceName) body.vnfInstanceName = ev.instance.vnfInstanceName;
    return body;
  }

  /** Fans the event out to every matching subscription, inside `tx`. Returns how many were queued. */
  async enqueue(tx: Kysely<Database> | Transaction<Database>, ev: LcmEvent): Promise<number> {
    // tenants: a subscription of a project hears only of that project's instances; one without a project hears of all
    const subs = await tx
      .selectFrom('subscription')
      .select(['id', 'api_version', 'verbosity', 'filter'])
      .where(
        ev.instance.project !== undefined
          ? sql<boolean>`(project is null or project is not distinct from ${ev.instance.project})`
          : sql<boolean>`(project is null or project is not distinct from (select i.project from vnf_instance i where i.id = ${ev.instance.id}))`,
      )
      .execute();
    // The dashboard's event feed (GET /vnfm/v1/events) hears of every event, subscribed or not.
    await sql`insert into event_log (project, vnf_instance_id, event) values (
        ${ev.instance.project !== undefined ? ev.instance.project : sql`(select i.project from vnf_instance i where i.id = ${ev.instance.id})`},
        ${ev.instance.id}, ${json(this.feedEvent(ev))}::jsonb)`.execute(tx);
    // One notification, one id, whichever subscriptions receive it. The delivery order is not the
    // row id (drawn at insert; transactions may commit in the other order): the delivery worker
    // stamps rows in the order they become visible, i.e. commit order (`outbox.seq`).
    const notificationId = randomUUID();
    let n = 0;
    for (const s of subs) {
      if (!matchesSubscription(s.filter as SubscriptionFilter | null, ev)) continue;
      await tx.insertInto('outbox').values({ subscription_id: s.id, notification: json(this.build(ev, s, notificationId)), status: 'PENDING', attempts: 0, next_attempt_at: new Date() }).execute();
      n++;
    }
    // The worker is woken once the caller's transaction has committed (at once outside a transaction).
    const listener = this.listener;
    if (n > 0 && listener) afterCommit(tx, listener);
    return n;
  }
}
