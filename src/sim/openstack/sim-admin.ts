/**
 * The `/_sim` control API of the simulated OpenStack: fault injection (servers, hosts, Heat
 * operations, API latency and outages), run-time settings, fault webhooks and a state dump.
 * Tests and demos drive failures over HTTP only, exactly as they would poke a lab cloud.
 */
import type { ComputeEvent, ComputeService, ServerStatus } from './compute-service.ts';
import type { HeatEngine, InjectableOp, StackHold } from './heat/heat-engine.ts';
import { asObject, header, SimHttpError, type SimRequest, type SimResponse } from './http-kit.ts';
import { isoSeconds, uuid } from './ids.ts';
import type { KeystoneService } from './keystone.ts';
import type { NetworkService } from './network-service.ts';
import type { SimLogger } from './options.ts';

/** Service names that injected outages can target. */
export type SimService = 'identity' | 'orchestration' | 'compute' | 'network';

/** Run-time knobs shared by the router and the control API. */
export interface SimRuntime {
  heatDelayMs: number;
  latencyMs: number;
  /** Remaining requests answered with {@link breakStatus}. */
  breakRemaining: number;
  breakStatus: number;
  breakServices: SimService[];
  /** `Retry-After` header (seconds) of the broken answers, if any. */
  breakRetryAfter?: number | undefined;
  vnfmUrl: string;
}

interface Webhook {
  readonly id: string;
  readonly url: string;
  readonly secret: string | undefined;
}

interface WebhookDelivery {
  readonly webhook: string;
  readonly event: string;
  readonly time: string;
  status: number | null;
  error: string | null;
}

function notFound(message: string): SimHttpError {
  return new SimHttpError(404, { error: { code: 404, title: 'Not Found', message } }, message);
}

function badRequest(message: string): SimHttpError {
  return new SimHttpError(400, { error: { code: 400, title: 'Bad Request', message } }, message);
}

function optString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function optObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

const SERVER_STATUSES = new Set<ServerStatus>(['ACTIVE', 'ERROR', 'SHUTOFF', 'BUILD', 'REBOOT']);

/** JSON shape of a hold on stack operations. */
function holdDoc(h: StackHold): Record<string, unknown> {
  return { id: h.id, operation: h.operation, stack: h.stack ?? null, released: h.released, held: h.held };
}

/** Control API and fault-event fan-out of the simulated OpenStack. */
export class SimAdmin {
  private readonly webhooks: Webhook[] = [];
  private readonly deliveries: WebhookDelivery[] = [];
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly runtime: SimRuntime,
    private readonly compute: ComputeService,
    private readonly heat: HeatEngine,
    private readonly keystone: KeystoneService,
    private readonly adminSecret: string,
    private readonly logger: SimLogger,
    private readonly network: NetworkService,
  ) {
    compute.onEvent((ev) => this.fanOut(ev));
  }

  /** Registers a URL that receives every compute fault/recovery event (POST, JSON). */
  addWebhook(url: string, secret?: string): string {
    const existing = this.webhooks.find((w) => w.url === url);
    if (existing) return existing.id;
    const w: Webhook = { id: uuid(), url, secret };
    this.webhooks.push(w);
    return w.id;
  }

  /** Waits for event deliveries in flight (used on shutdown and by tests). */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  private fanOut(ev: ComputeEvent): void {
    for (const w of this.webhooks) {
      const delivery: WebhookDelivery = { webhook: w.url, event: ev.event, time: isoSeconds(), status: null, error: null };
      this.deliveries.push(delivery);
      if (this.deliveries.length > 500) this.deliveries.splice(0, this.deliveries.length - 500);
      const p = this.post(w, ev, delivery).finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
  }

  private async post(w: Webhook, ev: ComputeEvent, delivery: WebhookDelivery): Promise<void> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (w.secret) headers['X-Sim-Admin-Secret'] = w.secret;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const res = await fetch(w.url, { method: 'POST', headers, body: JSON.stringify(ev), signal: AbortSignal.timeout(5000) });
        delivery.status = res.status;
        await res.arrayBuffer().catch(() => undefined);
        if (res.status < 500) return;
      } catch (e) {
        delivery.error = (e as Error).message;
      }
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
    this.logger.warn({ webhook: w.url, event: ev.event }, 'fault webhook delivery failed');
  }

  private authorize(req: SimRequest): void {
    const secret = header(req, 'x-sim-admin-secret');
    const auth = header(req, 'authorization');
    if (secret !== undefined && secret === this.adminSecret) return;
    if (auth !== undefined && auth === `Bearer ${this.adminSecret}`) return;
    const token = this.keystone.validate(header(req, 'x-auth-token'));
    if (token?.roles.includes('admin')) return;
    throw new SimHttpError(401, { error: { code: 401, title: 'Unauthorized', message: 'A Keystone admin token (X-Auth-Token) or the sim admin secret (X-Sim-Admin-Secret) is required.' } });
  }

  /** Handles `/_sim/...`; returns `undefined` for other paths. */
  handle(req: SimRequest): SimResponse | undefined {
    const s = req.segments;
    if (s[0] !== '_sim') return undefined;
    this.authorize(req);
    const b = req.method === 'GET' || req.method === 'DELETE' ? {} : asObject(req.body);
    const [, what, id, action] = s;
    if (what === 'state' && req.method === 'GET') return { status: 200, body: this.state() };
    if (what === 'servers' && id && (action === 'fail' || action === 'recover') && req.method === 'POST') {
      if (action === 'fail') {
        const status = (optString(b.status) ?? 'ERROR').toUpperCase() as ServerStatus;
        if (!SERVER_STATUSES.has(status)) throw badRequest(`Unsupported status ${status}`);
        const srv = this.compute.failServer(id, {
          status,
          fault_type: optString(b.fault_type),
          fault_id: optString(b.fault_id),
          fault_option: optObject(b.fault_option),
          message: optString(b.message),
        });
        if (!srv) throw notFound(`Server ${id} not found`);
        return { status: 200, body: { server: { id: srv.id, status: srv.status, host: srv.host } } };
      }
      const srv = this.compute.recoverServer(id);
      if (!srv) throw notFound(`Server ${id} not found`);
      return { status: 200, body: { server: { id: srv.id, status: srv.status, host: srv.host } } };
    }
    if (what === 'hosts' && id && (action === 'fail' || action === 'recover') && req.method === 'POST') {
      const hit =
        action === 'fail'
          ? this.compute.failHost(id, { fault_type: optString(b.fault_type), fault_id: optString(b.fault_id), fault_option: optObject(b.fault_option) })
          : this.compute.recoverHost(id);
      if (!hit) throw notFound(`Host ${id} not found`);
      return { status: 200, body: { host: id, servers: hit.map((x) => ({ id: x.id, status: x.status })) } };
    }
    if (what === 'ports' && id && (action === 'down' || action === 'up') && req.method === 'POST') {
      const port = this.network.ports.get(id);
      if (!port) throw notFound(`Port ${id} not found`);
      port.linkDown = action === 'down';
      this.network.portChanged(id, 'update');
      return { status: 200, body: { port: { id, status: this.network.portDoc(port).status, device_id: port.deviceId } } };
    }
    if (what === 'heat' && id === 'failures') {
      if (req.method === 'DELETE') {
        this.heat.clearFailures();
        return { status: 204 };
      }
      if (req.method === 'POST') {
        const op = (optString(b.operation) ?? 'update') as InjectableOp;
        if (!['create', 'update', 'delete'].includes(op)) throw badRequest('operation must be create, update or delete');
        const count = b.count === undefined ? 1 : Number(b.count);
        if (!Number.isInteger(count) || count < 1) throw badRequest('count must be an integer >= 1');
        const reason = optString(b.reason) ?? `Error: resources: simulated ${op} failure (injected through /_sim)`;
        this.heat.injectFailures(op, count, reason);
        return { status: 200, body: { pending: this.heat.pendingFailures() } };
      }
    }
    if (what === 'heat' && id === 'holds') {
      if (action === undefined && req.method === 'GET') return { status: 200, body: { holds: this.heat.holds().map(holdDoc) } };
      if (action === undefined && req.method === 'POST') {
        const op = (optString(b.operation) ?? 'update') as InjectableOp;
        if (!['create', 'update', 'delete'].includes(op)) throw badRequest('operation must be create, update or delete');
        if (b.stack !== undefined && (typeof b.stack !== 'string' || b.stack === '')) throw badRequest('stack must be a stack name or id');
        return { status: 201, body: { hold: holdDoc(this.heat.hold(op, optString(b.stack))) } };
      }
      if (action !== undefined && (req.method === 'GET' || req.method === 'DELETE')) {
        const h = this.heat.getHold(action);
        if (!h) throw notFound(`Hold ${action} not found (unknown or released)`);
        if (req.method === 'DELETE') this.heat.releaseHold(action);
        return { status: 200, body: { hold: holdDoc(h) } };
      }
    }
    if (what === 'config' && (req.method === 'PUT' || req.method === 'POST' || req.method === 'PATCH')) {
      if (b.heatDelayMs !== undefined) this.runtime.heatDelayMs = this.nonNegative('heatDelayMs', b.heatDelayMs);
      if (b.latencyMs !== undefined) this.runtime.latencyMs = this.nonNegative('latencyMs', b.latencyMs);
      if (b.vnfmUrl !== undefined) this.runtime.vnfmUrl = String(b.vnfmUrl);
      if (b.tokenTtlSeconds !== undefined) this.keystone.setTokenTtlSeconds(this.nonNegative('tokenTtlSeconds', b.tokenTtlSeconds));
      return { status: 200, body: { config: this.configDoc() } };
    }
    if (what === 'api' && id === 'latency' && req.method === 'POST') {
      this.runtime.latencyMs = this.nonNegative('ms', b.ms);
      return { status: 200, body: { config: this.configDoc() } };
    }
    if (what === 'api' && id === 'break' && req.method === 'POST') {
      const count = this.nonNegative('count', b.count ?? 1);
      const status = b.status === undefined ? 503 : Number(b.status);
      if (!Number.isInteger(status) || status < 400 || status > 599) throw badRequest('status must be 4xx or 5xx');
      const services = Array.isArray(b.services) ? (b.services.map(String) as SimService[]) : ['identity', 'orchestration', 'compute'];
      this.runtime.breakRemaining = count;
      this.runtime.breakStatus = status;
      this.runtime.breakServices = services as SimService[];
      this.runtime.breakRetryAfter = b.retryAfter === undefined ? undefined : this.nonNegative('retryAfter', b.retryAfter);
      return { status: 200, body: { config: this.configDoc() } };
    }
    if (what === 'webhooks') {
      if (req.method === 'GET') return { status: 200, body: { webhooks: this.webhooks.map((w) => ({ id: w.id, url: w.url })) } };
      if (req.method === 'POST') {
        const url = optString(b.url);
        if (!url || !/^https?:\/\//.test(url)) throw badRequest('url (http or https) is required');
        const wid = this.addWebhook(url, optString(b.secret));
        return { status: 201, body: { webhook: { id: wid, url } } };
      }
      if (req.method === 'DELETE' && id) {
        const i = this.webhooks.findIndex((w) => w.id === id);
        if (i < 0) throw notFound(`Webhook ${id} not found`);
        this.webhooks.splice(i, 1);
        return { status: 204 };
      }
    }
    if (what === 'reset' && req.method === 'POST') {
      this.heat.clearFailures();
      this.heat.releaseAllHolds();
      this.runtime.latencyMs = 0;
      this.runtime.breakRemaining = 0;
      for (const h of this.compute.hosts) if (h.state === 'down') this.compute.recoverHost(h.name);
      for (const srv of this.compute.servers.values()) if (srv.status === 'ERROR') this.compute.recoverServer(srv.id);
      return { status: 200, body: this.state() };
    }
    throw notFound('Unknown /_sim endpoint');
  }

  private nonNegative(name: string, v: unknown): number {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw badRequest(`${name} must be a number >= 0`);
    return n;
  }

  private configDoc(): Record<string, unknown> {
    return {
      heatDelayMs: this.runtime.heatDelayMs,
      latencyMs: this.runtime.latencyMs,
      breakRemaining: this.runtime.breakRemaining,
      breakStatus: this.runtime.breakStatus,
      breakServices: this.runtime.breakServices,
      breakRetryAfter: this.runtime.breakRetryAfter ?? null,
      vnfmUrl: this.runtime.vnfmUrl,
    };
  }

  /** Everything a test may want to assert on, in one document. */
  state(): Record<string, unknown> {
    return {
      config: this.configDoc(),
      hosts: this.compute.hosts.map((h) => ({
        name: h.name,
        state: h.state,
        servers: [...this.compute.servers.values()].filter((x) => x.host === h.name).map((x) => x.id),
      })),
      servers: [...this.compute.servers.values()].map((x) => ({
        id: x.id,
        name: x.name,
        status: x.status,
        host: x.host,
        project_id: x.projectId,
        flavor: x.flavor,
        image: x.image,
        addresses: this.compute.addresses(x),
        stack_id: x.owner?.stackId ?? null,
        resource_name: x.owner?.resourceName ?? null,
      })),
      stacks: [...this.heat.stacks.values()].map((st) => ({
        id: st.id,
        name: st.name,
        status: `${st.action}_${st.status}`,
        reason: st.reason,
        parent: st.parent?.stackId ?? null,
        deleted: st.deleted,
      })),
      heat: { pendingFailures: this.heat.pendingFailures(), holds: this.heat.holds().map(holdDoc), journal: this.heat.journal() },
      webhooks: this.webhooks.map((w) => ({ id: w.id, url: w.url })),
      webhookDeliveries: this.deliveries.slice(-50),
    };
  }
}
