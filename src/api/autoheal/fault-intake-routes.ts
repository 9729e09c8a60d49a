/**
 * The fault notification receiver of the Server Notifier (Tacker's FaultNotification API):
 * `POST {prefix}/vnf_instances/{vnfInstanceId}/servers/{serverId}/notify`.
 *
 * Everything is checked before anything is stored: the body, the instance, the fault id against
 * the ones the instance was instantiated with, and the target VNFC, which must match on BOTH the
 * server id of the URL and the alarm id of the body (Tacker ignores the server id). Only then is
 * the notification written to the ledger, atomically with its heal batch, and answered 204. A
 * wrong request changes nothing and is answered 400/401/404, never 500.
 *
 * Notifications are validated and written in groups ({@link IntakeQueue}): under load many
 * notifications share the same two statements, which is what lets one embedded database session
 * take a fault storm.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../core/services.ts';
import { vnfmError } from '../../errors.ts';
import type { VnfInstanceRecord } from '../../model/vnf-instance.ts';
import type { HealBatcher } from '../../autoheal/batcher.ts';
import { InstanceFactsCache } from '../../autoheal/instance-facts.ts';
import { IntakeQueue } from '../../autoheal/intake-queue.ts';
import type { FaultLedger } from '../../autoheal/ledger.ts';

/** Fault types of the Server Notifier: physical server fault / out of service, VM status inconsistency / reboot. */
export const FAULT_TYPES = ['10', '11', '20', '21'] as const;

const Params = Type.Object({
  vnfInstanceId: Type.String({ minLength: 1, maxLength: 255 }),
  serverId: Type.String({ minLength: 1, maxLength: 255 }),
});

/** FaultNotification body (`notification` may carry extra attributes; they are ignored). */
export const FaultNotificationBody = Type.Object(
  {
    notification: Type.Object(
      {
        host_id: Type.Optional(Type.String({ maxLength: 255 })),
        alarm_id: Type.String({ minLength: 1, maxLength: 255 }),
        fault_id: Type.String({ minLength: 4, maxLength: 4 }),
        fault_type: Type.Union(FAULT_TYPES.map((t) => Type.Literal(t))),
        fault_option: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: false },
);

interface Body {
  notification: { host_id?: string; alarm_id: string; fault_id: string; fault_type: string; fault_option?: Record<string, unknown> };
}

/** Where a VNFC's Server Notifier alarm id is kept: `vnfcResourceInfo.metadata.server_notification.alarmId`. */
export function alarmIdOf(metadata: Record<string, unknown> | undefined): string | undefined {
  const sn = metadata?.server_notification;
  if (!sn || typeof sn !== 'object') return undefined;
  const a = (sn as { alarmId?: unknown }).alarmId;
  return typeof a === 'string' ? a : undefined;
}

function asIdList(v: unknown): string[] | undefined {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return undefined;
}

/**
 * The fault ids an instance accepts: `metadata.ServerNotifierFaultID` (written by the alarm
 * registration driver, editable with a PATCH), else `instantiatedVnfInfo.metadata`, else the
 * `additionalParams.ServerNotifierFaultID` of the instantiate request.
 */
export async function configuredFaultIds(ctx: AppContext, inst: VnfInstanceRecord, cache?: Map<string, { rev: number; ids: string[] }>): Promise<string[]> {
  const direct = asIdList(inst.metadata?.ServerNotifierFaultID) ?? asIdList(inst.instantiatedVnfInfo?.metadata?.ServerNotifierFaultID);
  if (direct) return direct;
  const hit = cache?.get(inst.id);
  if (hit && hit.rev === inst.rev) return hit.ids;
  const row = await ctx.store.db
    .selectFrom('op_occ')
    .select('operation_params')
    .where('vnf_instance_id', '=', inst.id)
    .where('operation', '=', 'INSTANTIATE')
    .where('operation_state', '=', 'COMPLETED')
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  const ap = (row?.operation_params as { additionalParams?: Record<string, unknown> } | undefined)?.additionalParams;
  const ids = asIdList(ap?.ServerNotifierFaultID) ?? [];
  if (cache) {
    // Every operation bumps the instance's rev, so an entry is never used after a change.
    if (cache.size >= 10_000) cache.delete(cache.keys().next().value as string);
    cache.set(inst.id, { rev: inst.rev, ids });
  }
  return ids;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Constant-time check of the receiver credential (bearer token or basic `user:password`). */
export function checkReceiverAuth(config: AppContext['config']['faultNotification'], header: string | undefined): boolean {
  if (config.auth === 'none') return true;
  if (!header || !config.credential) return false;
  let presented: string | undefined;
  if (config.auth === 'bearer' && /^bearer /i.test(header)) presented = header.slice(7).trim();
  if (config.auth === 'basic' && /^basic /i.test(header)) {
    try {
      presented = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    } catch {
      presented = undefined;
    }
  }
  if (presented === undefined) return false;
  return timingSafeEqual(digest(presented), digest(config.credential));
}

/** Dependencies of the receiver. */
export interface FaultIntakeDeps {
  ctx: AppContext;
  ledger: FaultLedger;
  batcher: HealBatcher;
  /** Recorded with each notification (which process received it). */
  workerId: string;
  /** The group-commit queue (shared with the batcher, which reads its rate); created when absent. */
  queue?: IntakeQueue;
}

/** Registers the receiver route under the configured prefix. */
export function faultIntakeRoutes(d: FaultIntakeDeps): (app: FastifyInstance) => Promise<void> {
  const { ctx } = d;
  const cfg = ctx.config.faultNotification;
  const rejected = () => ctx.metrics.faultNotifications.inc({ result: 'rejected' });
  const queue = d.queue ?? new IntakeQueue({ ledger: d.ledger, facts: new InstanceFactsCache(ctx.store.db), windowMs: () => cfg.windowMs, workerId: d.workerId });
  return async (app) => {
    await app.register(
      async (r) => {
        r.addHook('onRequest', async () => {
          if (!ctx.config.faultNotification.enabled) {
            throw vnfmError('VNFM_ERR_FAULT_NOT_FOUND', 'ServerNotification API is not enabled.');
          }
          // who may notify (the receiver credential, or the API's authentication modes) is decided by the API's auth hook (src/api/auth/)
        });
        // Every refused notification (auth, schema, unknown ids, disabled receiver) is counted once.
        r.addHook('onResponse', async (_req, reply) => {
          if (reply.statusCode >= 400 && reply.statusCode < 500) rejected();
        });
        r.post(
          '/vnf_instances/:vnfInstanceId/servers/:serverId/notify',
          { schema: { params: Params, body: FaultNotificationBody, tags: ['fault-intake'], summary: 'Server Notifier fault notification (auto-heal)' } },
          async (req: FastifyRequest, reply) => {
            const { vnfInstanceId, serverId } = req.params as { vnfInstanceId: string; serverId: string };
            const n = (req.body as Body).notification;
            const r = await queue.submit({ vnfInstanceId, serverId, notification: n });
            if (r.kind === 'ignored') {
              ctx.metrics.faultNotifications.inc({ result: 'ignored' });
              req.log.info({ vnfInstanceId, serverId, faultType: n.fault_type }, 'fault notification ignored: auto-heal disabled');
              return reply.code(204).send();
            }
            ctx.metrics.faultNotifications.inc({ result: 'accepted' });
            if (r.opened) d.batcher.scheduleAt(new Date(r.deadline));
            req.log.info({ vnfInstanceId, serverId, vnfcInstanceId: r.vnfcInfoId, batchId: r.batchId, faultType: n.fault_type }, 'fault notification packed');
            return reply.code(204).send();
          },
        );
      },
      { prefix: cfg.prefix },
    );
  };
}
