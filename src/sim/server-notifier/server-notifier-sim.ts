/**
 * Simulated Server Notifier: the VIM-side monitoring service Tacker's FaultNotification
 * auto-heal relies on. The VNFM registers one alarm per server
 * (`POST {base}/v2/{tenant}/servers/{serverId}/alarms` with `fault_action` + `fault_id`); when a
 * server or a whole compute host fails, the notifier POSTs
 * `{"notification": {host_id, alarm_id, fault_id, fault_type, fault_option?}}` to each affected
 * alarm's `fault_action`. It learns of failures only over HTTP: the simulated OpenStack posts
 * compute fault events to this sim's `/_sim/events` (it subscribes itself at start).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readSimState, SimStateSaver } from '../state-file.ts';

/** Name of the state file (`<stateDir>/server-notifier.json`). */
export const SERVER_NOTIFIER_STATE_NAME = 'server-notifier';

/** Saved state of the Server Notifier sim: the alarm registrations. */
export interface ServerNotifierSnapshot {
  alarms: SimAlarm[];
}

/** Logging surface (pino-compatible). */
export interface NotifierLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** Authentication attached to outgoing fault notifications. */
export type NotificationAuth =
  | { readonly type: 'bearer'; readonly token: string }
  | { readonly type: 'basic'; readonly username: string; readonly password: string };

/** Options of {@link startServerNotifierSim}. */
export interface ServerNotifierSimOptions {
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** @default 0 (ephemeral) */
  readonly port?: number;
  /**
   * Base URL of the simulated OpenStack (`startOpenStackSim().url`). Tokens are validated at
   * `${openstackUrl}/v3/auth/tokens` and fault events subscribed at `${openstackUrl}/_sim/webhooks`.
   */
  readonly openstackUrl?: string;
  /** Keystone v3 URL used to validate tokens. @default `${openstackUrl}/v3` */
  readonly keystoneUrl?: string;
  /**
   * `keystone`: the alarm API requires a valid `X-Auth-Token`; `none`: no authentication (what
   * Tacker's sample MgmtDriver sends). @default 'keystone' when a Keystone URL is known, else 'none'
   */
  readonly auth?: 'keystone' | 'none';
  /** Subscribe to the OpenStack sim's fault events at start. @default true when openstackUrl is set */
  readonly subscribe?: boolean;
  /** Secret of the OpenStack sim's `/_sim` API (used to subscribe). @default 'sim-admin-secret' */
  readonly openstackAdminSecret?: string;
  /** Secret protecting this sim's `/_sim` API and event intake (`X-Sim-Admin-Secret`). @default 'sim-admin-secret' */
  readonly adminSecret?: string;
  /** Credentials attached to fault notifications (Authorization header). */
  readonly notificationAuth?: NotificationAuth;
  /** Extra attempts after a failed delivery (network error or 5xx). @default 2 */
  readonly deliveryRetries?: number;
  /** Per-attempt timeout. @default 5000 */
  readonly deliveryTimeoutMs?: number;
  /**
   * Directory where the alarm registrations are saved as `server-notifier.json` shortly after
   * each change and on close, and restored from at start. @default no saving
   */
  readonly stateDir?: string;
  readonly logger?: NotifierLogger;
}

/** One registered alarm. */
export interface SimAlarm {
  readonly alarm_id: string;
  readonly tenant: string;
  readonly server_id: string;
  readonly fault_action: string;
  readonly fault_id: readonly string[];
  readonly created_at: string;
}

/** One fault notification sent (or attempted) to an alarm's `fault_action`. */
export interface SimDelivery {
  readonly id: string;
  readonly alarm_id: string;
  readonly server_id: string;
  readonly url: string;
  readonly body: { notification: Record<string, unknown> };
  readonly time: string;
  status: number | null;
  attempts: number;
  error: string | null;
}

/** One request of the alarm API held by a {@link AlarmRequestHold}. */
export interface HeldAlarmRequest {
  readonly holdId: string;
  readonly method: 'POST' | 'DELETE';
  readonly tenant: string;
  readonly server_id: string;
  /** DELETE only. */
  readonly alarm_id?: string;
  readonly time: string;
}

/**
 * A hold on alarm API requests, from {@link ServerNotifierSim.holdAlarmRequests}: matching requests
 * are received (authenticated) and then wait, unanswered and not applied, until `release()`; then
 * each is applied and answered as usual (if its client is still there).
 */
export interface AlarmRequestHold {
  readonly id: string;
  /** Resolves when the first matching request arrives. */
  readonly reached: Promise<HeldAlarmRequest>;
  /** Requests held so far. */
  held(): readonly HeldAlarmRequest[];
  /** Lets the held requests (and later ones) through, and ends the hold. */
  release(): void;
}

/** One alarm API request as answered (`GET /_sim/journal`). */
export interface AlarmJournalEntry {
  readonly seq: number;
  readonly time: string;
  readonly method: string;
  readonly tenant: string;
  readonly server_id: string;
  readonly alarm_id: string | null;
  readonly status: number;
  /** The hold that made it wait, if any. */
  readonly held_by: string | null;
}

/** A running Server Notifier sim. */
export interface ServerNotifierSim {
  /** Base URL, the `ServerNotifierUri` to give the VNFM. */
  readonly url: string;
  /** Deliveries so far (the same list as `GET /_sim/deliveries`). */
  deliveries(): readonly SimDelivery[];
  /** Registered alarms. */
  alarms(): readonly SimAlarm[];
  /**
   * Holds alarm API requests from now on (default: `DELETE`, i.e. alarm removals; optionally only
   * those of `serverId`) until `release()`. Same as `POST /_sim/holds`.
   */
  holdAlarmRequests(opts?: { method?: 'POST' | 'DELETE'; serverId?: string }): AlarmRequestHold;
  /** Alarm API requests answered so far, oldest first (also `GET /_sim/journal`). */
  journal(): readonly AlarmJournalEntry[];
  /** Waits until deliveries in flight are done. */
  drain(): Promise<void>;
  /** The state as saved in `stateDir` (JSON-serialisable). */
  snapshot(): ServerNotifierSnapshot;
  /** Whether the alarms were restored from `stateDir` at start. */
  readonly restored: boolean;
  close(): Promise<void>;
}

interface Reply {
  status: number;
  body?: unknown;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface ComputeEventServer {
  id: string;
  name?: string;
  host?: string;
  status?: string;
}

const silent: NotifierLogger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'The request body is not valid JSON.');
  }
}

function send(res: ServerResponse, r: Reply): void {
  const payload = r.body === undefined || r.status === 204 ? undefined : JSON.stringify(r.body);
  const headers: Record<string, string> = { 'Content-Length': String(payload ? Buffer.byteLength(payload) : 0) };
  if (payload) headers['Content-Type'] = 'application/json';
  res.writeHead(r.status, headers);
  res.end(payload);
}

function hdr(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Starts the Server Notifier sim. */
export async function startServerNotifierSim(opts: ServerNotifierSimOptions = {}): Promise<ServerNotifierSim> {
  const logger = opts.logger ?? silent;
  const openstackUrl = opts.openstackUrl?.replace(/\/+$/, '');
  const keystoneUrl = (opts.keystoneUrl ?? (openstackUrl ? `${openstackUrl}/v3` : undefined))?.replace(/\/+$/, '');
  const authMode = opts.auth ?? (keystoneUrl ? 'keystone' : 'none');
  if (authMode === 'keystone' && !keystoneUrl) throw new Error('Server Notifier sim: auth "keystone" needs openstackUrl or keystoneUrl');
  const adminSecret = opts.adminSecret ?? 'sim-admin-secret';
  const retries = opts.deliveryRetries ?? 2;
  const timeoutMs = opts.deliveryTimeoutMs ?? 5000;
  let notificationAuth = opts.notificationAuth;
  const alarms = new Map<string, SimAlarm>();
  const saved = opts.stateDir === undefined ? undefined : readSimState<ServerNotifierSnapshot>(opts.stateDir, SERVER_NOTIFIER_STATE_NAME);
  for (const a of saved?.alarms ?? []) alarms.set(a.alarm_id, a);
  const snapshot = (): ServerNotifierSnapshot => ({ alarms: [...alarms.values()] });
  const saver =
    opts.stateDir === undefined
      ? undefined
      : new SimStateSaver({
          dir: opts.stateDir,
          name: SERVER_NOTIFIER_STATE_NAME,
          snapshot,
          onError: (e) => logger.error({ err: e.message }, 'server notifier sim: saving the state failed'),
        });
  if (saved) logger.info({ alarms: alarms.size }, 'server notifier sim state restored');
  const deliveries: SimDelivery[] = [];
  const inflight = new Set<Promise<void>>();
  /** token -> {project id and name, valid until} (short cache so each call does not hit Keystone). */
  const tokenCache = new Map<string, { projectId: string; projectName: string; until: number }>();

  const validateToken = async (token: string | undefined): Promise<{ projectId: string; projectName: string }> => {
    if (!token) throw new HttpError(401, 'The request you have made requires authentication.');
    const cached = tokenCache.get(token);
    if (cached && cached.until > Date.now()) return cached;
    let res: Response;
    try {
      res = await fetch(`${keystoneUrl}/auth/tokens?nocatalog`, {
        headers: { 'X-Auth-Token': token, 'X-Subject-Token': token },
        signal: AbortSignal.timeout(5000),
      });
    } catch (e) {
      throw new HttpError(503, `Keystone unreachable: ${(e as Error).message}`);
    }
    if (res.status !== 200) {
      await res.arrayBuffer().catch(() => undefined);
      throw new HttpError(401, 'The request you have made requires authentication.');
    }
    const body = (await res.json()) as { token?: { project?: { id?: string; name?: string } } };
    const entry = {
      projectId: body.token?.project?.id ?? '',
      projectName: body.token?.project?.name ?? '',
      until: Date.now() + 30_000,
    };
    tokenCache.set(token, entry);
    return entry;
  };

  const checkAdmin = (req: IncomingMessage): void => {
    const secret = hdr(req, 'x-sim-admin-secret');
    const auth = hdr(req, 'authorization');
    if (secret === adminSecret || auth === `Bearer ${adminSecret}`) return;
    throw new HttpError(401, 'The sim admin secret (X-Sim-Admin-Secret) is required.');
  };

  const deliver = async (d: SimDelivery): Promise<void> => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (notificationAuth?.type === 'bearer') headers.Authorization = `Bearer ${notificationAuth.token}`;
    if (notificationAuth?.type === 'basic') {
      headers.Authorization = `Basic ${Buffer.from(`${notificationAuth.username}:${notificationAuth.password}`).toString('base64')}`;
    }
    for (let attempt = 0; attempt <= retries; attempt++) {
      d.attempts = attempt + 1;
      try {
        const res = await fetch(d.url, { method: 'POST', headers, body: JSON.stringify(d.body), signal: AbortSignal.timeout(timeoutMs) });
        d.status = res.status;
        d.error = null;
        await res.arrayBuffer().catch(() => undefined);
        if (res.status < 500) break;
      } catch (e) {
        d.error = (e as Error).message;
      }
      if (attempt < retries) await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
    logger.info({ alarmId: d.alarm_id, serverId: d.server_id, status: d.status, attempts: d.attempts }, 'fault notification delivered');
  };

  /** Sends one notification per alarm of every affected server, all at once. */
  const raise = (servers: ComputeEventServer[], hostFallback: string | null, faultType: string, faultId?: string, faultOption?: Record<string, unknown>): SimDelivery[] => {
    const out: SimDelivery[] = [];
    for (const srv of servers) {
      for (const alarm of alarms.values()) {
        if (alarm.server_id !== srv.id) continue;
        const notification: Record<string, unknown> = {
          host_id: srv.host ?? hostFallback ?? '',
          alarm_id: alarm.alarm_id,
          fault_id: faultId ?? alarm.fault_id[0] ?? '0000',
          fault_type: faultType,
        };
        if (faultOption !== undefined) notification.fault_option = faultOption;
        const d: SimDelivery = {
          id: randomUUID(),
          alarm_id: alarm.alarm_id,
          server_id: srv.id,
          url: alarm.fault_action,
          body: { notification },
          time: new Date().toISOString(),
          status: null,
          attempts: 0,
          error: null,
        };
        deliveries.push(d);
        if (deliveries.length > 5000) deliveries.splice(0, deliveries.length - 5000);
        out.push(d);
      }
    }
    for (const d of out) {
      const p = deliver(d).finally(() => inflight.delete(p));
      inflight.add(p);
    }
    return out;
  };

  const onEvent = (body: unknown): Reply => {
    if (!isObj(body) || typeof body.event !== 'string' || !Array.isArray(body.servers)) {
      throw new HttpError(400, 'Expected a compute event {event, host, servers[]}.');
    }
    const servers = body.servers.filter(isObj).filter((s) => typeof s.id === 'string') as unknown as ComputeEventServer[];
    const host = typeof body.host === 'string' ? body.host : null;
    if (body.event !== 'server.fault' && body.event !== 'host.fault') return { status: 202, body: { deliveries: 0 } };
    const faultType = typeof body.fault_type === 'string' ? body.fault_type : body.event === 'host.fault' ? '10' : '20';
    const sent = raise(
      servers,
      host,
      faultType,
      typeof body.fault_id === 'string' ? body.fault_id : undefined,
      isObj(body.fault_option) ? body.fault_option : undefined,
    );
    return { status: 202, body: { deliveries: sent.length } };
  };

  const alarmDoc = (a: SimAlarm): Record<string, unknown> => ({ ...a, fault_id: [...a.fault_id] });

  // Holds and the journal of the alarm API.
  interface Hold {
    id: string;
    method: 'POST' | 'DELETE';
    serverId: string | undefined;
    held: HeldAlarmRequest[];
    released: boolean;
    reached: Promise<HeldAlarmRequest>;
    onReached: (h: HeldAlarmRequest) => void;
    gate: Promise<void>;
    open: () => void;
  }
  const holds = new Map<string, Hold>();
  const journal: AlarmJournalEntry[] = [];
  let journalSeq = 0;
  const createHold = (method: 'POST' | 'DELETE', serverId: string | undefined): Hold => {
    let onReached!: (h: HeldAlarmRequest) => void;
    let open!: () => void;
    const h: Hold = {
      id: randomUUID(),
      method,
      serverId,
      held: [],
      released: false,
      reached: new Promise<HeldAlarmRequest>((r) => (onReached = r)),
      onReached: (x) => onReached(x),
      gate: new Promise<void>((r) => (open = r)),
      open: () => open(),
    };
    holds.set(h.id, h);
    return h;
  };
  const releaseHold = (id: string): Hold | undefined => {
    const h = holds.get(id);
    if (!h) return undefined;
    holds.delete(id);
    h.released = true;
    h.open();
    logger.info({ holdId: id, held: h.held.length }, 'alarm request hold released');
    return h;
  };
  const holdDoc = (h: Hold): Record<string, unknown> => ({ id: h.id, method: h.method, server_id: h.serverId ?? null, released: h.released, held: h.held });
  /** Waits while a hold matches this request; returns the hold that made it wait. */
  const holdPoint = async (method: string, tenant: string, serverId: string, alarmId: string | undefined): Promise<string | null> => {
    const h = [...holds.values()].find((x) => x.method === method && (x.serverId === undefined || x.serverId === serverId));
    if (!h) return null;
    const entry: HeldAlarmRequest = { holdId: h.id, method: h.method, tenant, server_id: serverId, ...(alarmId === undefined ? {} : { alarm_id: alarmId }), time: new Date().toISOString() };
    h.held.push(entry);
    h.onReached(entry);
    logger.info({ holdId: h.id, method, serverId, alarmId }, 'alarm request held');
    await h.gate;
    return h.id;
  };

  const route = async (req: IncomingMessage, path: string[], body: unknown): Promise<Reply> => {
    const method = req.method ?? 'GET';
    if (path[0] === '_sim') {
      checkAdmin(req);
      const what = path[1];
      if (what === 'events' && method === 'POST') return onEvent(body);
      if (what === 'deliveries' && method === 'GET') return { status: 200, body: { deliveries } };
      if (what === 'deliveries' && method === 'DELETE') {
        deliveries.splice(0);
        return { status: 204 };
      }
      if (what === 'alarms' && method === 'GET') return { status: 200, body: { alarms: [...alarms.values()].map(alarmDoc) } };
      if (what === 'journal' && method === 'GET') return { status: 200, body: { journal } };
      if (what === 'holds') {
        const hid = path[2];
        if (hid === undefined && method === 'POST') {
          const m = isObj(body) && body.method !== undefined ? body.method : 'DELETE';
          if (m !== 'DELETE' && m !== 'POST') throw new HttpError(400, 'method must be DELETE or POST');
          const sid = isObj(body) && typeof body.server_id === 'string' && body.server_id !== '' ? body.server_id : undefined;
          return { status: 201, body: { hold: holdDoc(createHold(m, sid)) } };
        }
        if (hid === undefined && method === 'GET') return { status: 200, body: { holds: [...holds.values()].map(holdDoc) } };
        if (hid !== undefined && method === 'GET') {
          const h = holds.get(hid);
          if (!h) throw new HttpError(404, `No active hold ${hid}`);
          return { status: 200, body: { hold: holdDoc(h) } };
        }
        if (hid !== undefined && method === 'DELETE') {
          const h = releaseHold(hid);
          if (!h) throw new HttpError(404, `No active hold ${hid}`);
          return { status: 200, body: { hold: holdDoc(h) } };
        }
      }
      if (what === 'state' && method === 'GET') {
        return { status: 200, body: { alarms: [...alarms.values()].map(alarmDoc), deliveries, auth: authMode } };
      }
      if (what === 'notify' && method === 'POST') {
        if (!isObj(body)) throw new HttpError(400, 'Expected {server_id | server_ids | host, fault_type?, fault_id?, fault_option?}.');
        const ids = Array.isArray(body.server_ids) ? body.server_ids.map(String) : typeof body.server_id === 'string' ? [body.server_id] : [];
        const host = typeof body.host === 'string' ? body.host : null;
        if (ids.length === 0 && !host) throw new HttpError(400, 'server_id, server_ids or host is required');
        const faultType = typeof body.fault_type === 'string' ? body.fault_type : host && ids.length === 0 ? '10' : '20';
        const sent = raise(
          ids.map((id) => ({ id, host: host ?? undefined })),
          host,
          faultType,
          typeof body.fault_id === 'string' ? body.fault_id : undefined,
          isObj(body.fault_option) ? body.fault_option : undefined,
        );
        return { status: 202, body: { deliveries: sent.map((d) => d.id) } };
      }
      if (what === 'config' && (method === 'PUT' || method === 'POST')) {
        if (isObj(body) && 'notificationAuth' in body) {
          const na = body.notificationAuth;
          if (na === null) notificationAuth = undefined;
          else if (isObj(na) && na.type === 'bearer' && typeof na.token === 'string') notificationAuth = { type: 'bearer', token: na.token };
          else if (isObj(na) && na.type === 'basic' && typeof na.username === 'string' && typeof na.password === 'string') {
            notificationAuth = { type: 'basic', username: na.username, password: na.password };
          } else throw new HttpError(400, 'notificationAuth must be null, {type: bearer, token} or {type: basic, username, password}');
        }
        return { status: 200, body: { notificationAuth: notificationAuth ? notificationAuth.type : null } };
      }
      throw new HttpError(404, 'Unknown /_sim endpoint');
    }
    // /v2/{tenant}/servers/{serverId}/alarms[/{alarmId}]
    if (path[0] !== 'v2' || path[2] !== 'servers' || path[4] !== 'alarms' || path.length < 5 || path.length > 6) {
      throw new HttpError(404, 'The resource could not be found.');
    }
    const tenant = path[1] as string;
    const serverId = path[3] as string;
    if (authMode === 'keystone') {
      const who = await validateToken(hdr(req, 'x-auth-token'));
      if (tenant !== who.projectId && tenant !== who.projectName) {
        throw new HttpError(403, `The token is not scoped to tenant ${tenant}.`);
      }
    }
    const alarmId = path[5];
    const heldBy = method === 'POST' || method === 'DELETE' ? await holdPoint(method, tenant, serverId, alarmId) : null;
    let reply: Reply;
    try {
      reply = alarmApi(method, tenant, serverId, alarmId, body);
      if (method === 'POST' || method === 'DELETE') saver?.markDirty();
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      reply = { status: e.status, body: { error: { code: e.status, message: e.message } } };
    }
    journal.push({ seq: ++journalSeq, time: new Date().toISOString(), method, tenant, server_id: serverId, alarm_id: alarmId ?? ((reply.body as { alarm_id?: string } | undefined)?.alarm_id ?? null), status: reply.status, held_by: heldBy });
    if (journal.length > 5000) journal.splice(0, journal.length - 5000);
    return reply;
  };

  /** The alarm API proper (after authentication and holds). */
  const alarmApi = (method: string, tenant: string, serverId: string, alarmId: string | undefined, body: unknown): Reply => {
    if (alarmId === undefined) {
      if (method === 'GET') {
        const list = [...alarms.values()].filter((a) => a.tenant === tenant && a.server_id === serverId);
        return { status: 200, body: { alarms: list.map(alarmDoc) } };
      }
      if (method === 'POST') {
        if (!isObj(body)) throw new HttpError(400, 'Expected {"fault_action": "<url>", "fault_id": ["<id>", ...]}.');
        const action = body.fault_action;
        if (typeof action !== 'string' || !/^https?:\/\/[^/]/.test(action)) throw new HttpError(400, 'fault_action must be an http(s) URL');
        const faultIds = body.fault_id;
        if (!Array.isArray(faultIds) || faultIds.length === 0 || !faultIds.every((x) => typeof x === 'string' && x !== '')) {
          throw new HttpError(400, 'fault_id must be a non-empty list of strings');
        }
        const alarm: SimAlarm = {
          alarm_id: randomUUID(),
          tenant,
          server_id: serverId,
          fault_action: action,
          fault_id: faultIds as string[],
          created_at: new Date().toISOString(),
        };
        alarms.set(alarm.alarm_id, alarm);
        logger.debug({ alarmId: alarm.alarm_id, serverId }, 'alarm registered');
        return { status: 201, body: alarmDoc(alarm) };
      }
      throw new HttpError(405, 'Method not allowed');
    }
    const alarm = alarms.get(alarmId);
    if (!alarm || alarm.server_id !== serverId || alarm.tenant !== tenant) return { status: 404, body: { error: { code: 404, message: `Alarm ${alarmId} not found` } } };
    if (method === 'GET') return { status: 200, body: alarmDoc(alarm) };
    if (method === 'DELETE') {
      alarms.delete(alarmId);
      return { status: 204 };
    }
    throw new HttpError(405, 'Method not allowed');
  };

  const server = createServer((req, res) => {
    void (async () => {
      try {
        const url = new URL((req.url ?? '/').replace(/\/{2,}/g, '/'), 'http://localhost');
        const path = url.pathname.split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s));
        const body = await readBody(req);
        send(res, await route(req, path, body));
      } catch (e) {
        if (e instanceof HttpError) {
          send(res, { status: e.status, body: { error: { code: e.status, message: e.message } } });
          return;
        }
        logger.error({ err: (e as Error).message }, 'server notifier sim: unexpected error');
        send(res, { status: 500, body: { error: { code: 500, message: (e as Error).message } } });
      }
    })();
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const h = opts.host === undefined || opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host;
  const url = `http://${h}:${addr.port}`;
  const close = async (): Promise<void> => {
    for (const id of [...holds.keys()]) releaseHold(id);
    while (inflight.size > 0) await Promise.allSettled([...inflight]);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    saver?.close();
  };
  if (openstackUrl && opts.subscribe !== false) {
    try {
      const res = await fetch(`${openstackUrl}/_sim/webhooks`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Sim-Admin-Secret': opts.openstackAdminSecret ?? 'sim-admin-secret' },
        body: JSON.stringify({ url: `${url}/_sim/events`, secret: adminSecret }),
        signal: AbortSignal.timeout(5000),
      });
      if (res.status !== 201) throw new Error(`subscription answered ${res.status}`);
      await res.arrayBuffer();
    } catch (e) {
      await close();
      throw new Error(`Server Notifier sim: cannot subscribe to ${openstackUrl}: ${(e as Error).message}`);
    }
  }
  logger.info({ url, auth: authMode }, 'server notifier sim listening');
  return {
    url,
    deliveries: () => deliveries,
    alarms: () => [...alarms.values()],
    holdAlarmRequests: (o = {}) => {
      const h = createHold(o.method ?? 'DELETE', o.serverId);
      return { id: h.id, reached: h.reached, held: () => h.held, release: () => void releaseHold(h.id) };
    },
    journal: () => journal,
    drain: async () => {
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    },
    snapshot,
    restored: saved !== undefined,
    close,
  };
}
