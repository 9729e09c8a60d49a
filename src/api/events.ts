/**
 * `GET /vnfm/v1/events`: the LCM event feed as server-sent events (a VNFM extension, used by the
 * operator dashboard). Fed by the notification pipeline: the notifier writes every LCM event
 * (op occ state changes, instance creation and deletion) to `event_log` in the transaction of the
 * state change (src/notify/notifier.ts), so the feed holds exactly what was committed.
 *
 * - Order and ids: each event's SSE `id` is its `seq`, stamped in commit order by one stamper at
 *   a time (an advisory lock, as the outbox does); a client that reconnects with `Last-Event-ID`
 *   (or `?lastEventId=`) gets every event after that id, then the live ones. Without it, the feed
 *   starts with the next event. An id older than the retained feed (24 h) gets a `reset` event:
 *   the client reloads its lists.
 * - Auth: the route follows the normal API authentication and policy (reader); the caller sees
 *   the events of its own project's instances (admins and the unauthenticated mode: all).
 * - One poll loop per process (every {@link POLL_MS} while a client is connected) stamps new rows
 *   and wakes the streams; a comment line every {@link HEARTBEAT_MS} keeps proxies from closing
 *   an idle stream. Events older than 24 h are deleted every 10 minutes (connected clients or not).
 * - A request without `Accept: text/event-stream` gets one JSON answer instead of a stream:
 *   `{events: [{id, event, data}], lastEventId}` (what follows the resume point, up to 500), for
 *   clients that poll.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import { Type } from 'typebox';
import type { AppContext } from '../core/services.ts';
import { vnfmError } from '../errors.ts';
import { stampCommitOrder } from '../store/commit-order.ts';
import type { Database } from '../store/schema.ts';
import { tenantWhere } from './auth/tenant.ts';

export const EVENTS_PATH = '/vnfm/v1/events';
const POLL_MS = 250;
const HEARTBEAT_MS = 15_000;
const RETAIN_MS = 24 * 3600_000;
const PRUNE_EVERY_MS = 10 * 60_000;
const BATCH = 500;

interface Stream {
  cursor: number;
  where: RawBuilder<boolean>[];
  reply: FastifyReply;
  busy: boolean;
  closed: boolean;
}

/** Stamps visible rows in order; returns the highest stamped seq. */
async function stamp(db: Kysely<Database>): Promise<number> {
  return db.transaction().execute(async (tx) => {
    await stampCommitOrder(tx, 'event_log');
    const r = await sql<{ m: string | number | null }>`select max(seq) as m from event_log`.execute(tx);
    return Number(r.rows[0]?.m ?? 0);
  });
}

/** The feed hub of one app: one poll loop for every connected stream. */
class EventHub {
  private readonly streams = new Set<Stream>();
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private top = 0;
  private lastPrune = Date.now();
  private ticking = false;

  constructor(private readonly db: Kysely<Database>) {}

  /** Highest stamped seq now (stamping what is visible first). */
  async head(): Promise<number> {
    this.top = Math.max(this.top, await stamp(this.db));
    return this.top;
  }

  /** Lowest retained seq (0: none). */
  async oldest(): Promise<number> {
    const r = await sql<{ m: string | number | null }>`select min(seq) as m from event_log`.execute(this.db);
    return Number(r.rows[0]?.m ?? 0);
  }

  /** Deletes what is older than the retention (stamping first, so nothing unstamped is lost); every {@link PRUNE_EVERY_MS}, clients or not. */
  async prune(): Promise<void> {
    if (Date.now() - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = Date.now();
    try {
      await this.head();
      await sql`delete from event_log where created_at < ${new Date(Date.now() - RETAIN_MS)} and seq is not null`.execute(this.db);
    } catch {
      // the next round tries again
    }
  }

  add(s: Stream): void {
    this.streams.add(s);
    this.timer ??= setInterval(() => void this.tick(), POLL_MS);
    this.heartbeat ??= setInterval(() => {
      for (const x of this.streams) if (!x.closed) x.reply.raw.write(': keep-alive\n\n');
    }, HEARTBEAT_MS);
    void this.pump(s);
  }

  remove(s: Stream): void {
    s.closed = true;
    this.streams.delete(s);
    if (this.streams.size === 0) this.stop();
  }

  /** Ends every stream (app closing). */
  closeAll(): void {
    for (const s of [...this.streams]) {
      s.closed = true;
      s.reply.raw.end();
    }
    this.streams.clear();
    this.stop();
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.timer = undefined;
    this.heartbeat = undefined;
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await this.head();
      for (const s of this.streams) if (s.cursor < this.top) void this.pump(s);
    } catch {
      // the database is briefly unavailable (restart, closing): the next tick tries again
    } finally {
      this.ticking = false;
    }
  }

  /** Sends a stream what it has not seen yet. */
  private async pump(s: Stream): Promise<void> {
    if (s.busy || s.closed) return;
    s.busy = true;
    try {
      for (;;) {
        const top = this.top;
        const rows = await sql<{ seq: string | number; event: Record<string, unknown> }>`
          select seq, event from event_log
          where seq > ${s.cursor} ${s.where.length ? sql`and ${sql.join(s.where, sql` and `)}` : sql``}
          order by seq limit ${BATCH}`.execute(this.db);
        if (s.closed) return;
        for (const r of rows.rows) {
          const seq = Number(r.seq);
          s.reply.raw.write(`id: ${seq}\nevent: ${String(r.event.notificationType ?? 'message')}\ndata: ${JSON.stringify(r.event)}\n\n`);
          s.cursor = seq;
        }
        if (rows.rows.length < BATCH) {
          // rows of other projects move the cursor too (nothing to send for them)
          if (s.cursor < top && s.where.length) s.cursor = top;
          return;
        }
      }
    } catch {
      // retried at the next tick
    } finally {
      s.busy = false;
    }
  }
}

const Query = Type.Object({ lastEventId: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })) }, { additionalProperties: false });

/** Parses the resume point: `Last-Event-ID` header, else `?lastEventId=`. */
function resumeFrom(req: FastifyRequest): number | undefined {
  const h = req.headers['last-event-id'];
  const raw = (typeof h === 'string' && h.trim() !== '' ? h.trim() : undefined) ?? (req.query as { lastEventId?: string }).lastEventId;
  if (raw === undefined) return undefined;
  if (!/^[0-9]{1,15}$/.test(raw)) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'Last-Event-ID must be an event id of this feed (a non-negative integer)');
  return Number(raw);
}

/** Registers the event feed route. */
export async function registerEventRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const hub = new EventHub(ctx.store.db);
  const pruner = setInterval(() => void hub.prune(), 60_000).unref();
  app.addHook('preClose', async () => {
    clearInterval(pruner);
    hub.closeAll();
  });
  app.get(
    EVENTS_PATH,
    {
      schema: {
        querystring: Query,
        tags: ['vnfm'],
        summary: 'LCM events as server-sent events (op occ state changes, instance creation and deletion), resumable with Last-Event-ID',
      },
    },
    async (req, reply) => {
      const from = resumeFrom(req);
      const head = await hub.head();
      const where = tenantWhere(req);
      let cursor = from ?? head;
      let reset = false;
      if (from !== undefined) {
        const oldest = await hub.oldest();
        // ids beyond the head (another database, a wiped feed) and ids before what is retained: start afresh
        if (from > head || (oldest > 0 && from < oldest - 1)) {
          reset = true;
          cursor = head;
        }
      }
      // without `Accept: text/event-stream` (a plain HTTP client, a probe): one JSON answer with
      // what follows the resume point (up to one batch), no stream
      if (!/text\/event-stream/i.test(String(req.headers.accept ?? ''))) {
        const rows = await sql<{ seq: string | number; event: Record<string, unknown> }>`
          select seq, event from event_log
          where seq > ${cursor} and seq <= ${head} ${where.length ? sql`and ${sql.join(where, sql` and `)}` : sql``}
          order by seq limit ${BATCH}`.execute(ctx.store.db);
        const events = rows.rows.map((r) => ({ id: Number(r.seq), event: String(r.event.notificationType ?? 'message'), data: r.event }));
        reply.header('cache-control', 'no-store');
        return { events, lastEventId: events.length === BATCH ? events[events.length - 1]?.id : head, ...(reset ? { reset: true } : {}) };
      }
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      raw.write(`retry: 2000\n\n`);
      if (reset) raw.write(`id: ${head}\nevent: reset\ndata: ${JSON.stringify({ reason: 'the requested id is no longer retained; reload the lists', head })}\n\n`);
      else raw.write(`: stream from ${cursor}\n\n`);
      const s: Stream = { cursor, where, reply, busy: false, closed: false };
      req.raw.on('close', () => hub.remove(s));
      raw.on('close', () => hub.remove(s));
      hub.add(s);
    },
  );
}
