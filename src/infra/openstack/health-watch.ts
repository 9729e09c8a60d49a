/**
 * The OpenStack health watcher: polls Nova once per period per target (one target per VIM
 * project, whatever the number of VNFs on it) and reports the servers the VNFM's instances own.
 *
 * Requests per period and target: one `GET /servers/detail?changes-since=<start of the last
 * successful poll - skew margin>` (one more per page of 1000 changed servers, Nova's default
 * `max_limit`), one Neutron `GET /v2.0/ports?device_owner=compute:nova&status=DOWN` (only the
 * project's DOWN ports of servers; skipped when the catalog has no network service), plus a
 * Keystone authentication when the cached token is due (or a 401 refused it): 2 requests.
 * The first poll of a target, the first after a failure, and a poll whose target gained resources
 * since the last one list every server of the project instead (`GET /servers/detail`; a server of
 * the target missing from it is reported `DELETED`). Nothing is asked per server or per VNF.
 *
 * Mapping of Nova's status: ACTIVE -> healthy; ERROR (detail: Nova's fault message), SHUTOFF,
 * PAUSED, SUSPENDED, SHELVED(_OFFLOADED) -> faulty (the server does not run); DELETED,
 * SOFT_DELETED or missing from a full listing -> faulty `DELETED`; UNKNOWN (Nova lost its compute
 * host) -> unknown; every transitional status (BUILD, REBUILD, REBOOT, MIGRATING, RESIZE, ...) ->
 * degraded with the status as reason. An ACTIVE server with a DOWN port: degraded `PortDown`
 * (detail: the ports). Keystone, Nova or Neutron down, 5xx, timeouts, refused credentials:
 * `unreachable` (never faulty), and the next successful poll is a full listing.
 */
import { fetchForVimTls } from '../../net/tls-fetch.ts';
import type { HealthCondition, ResourceHealth } from '../../model/vnfc-health.ts';
import type { HealthWatcherDeps, HealthWatchTarget, VimHealthWatcher } from '../vim-plugin.ts';
import { KeystoneAuth, keystoneAuthOptionsOf, keystoneCredentialsOf, keystoneSessionKey } from './keystone-auth.ts';
import { NovaClient, type NovaServer } from './nova-client.ts';
import { OpenStackError, OpenStackErrorKind, parseJsonAnswer } from './openstack-error.ts';

/** Name of the VIM type in {@link HealthWatcherDeps.countRequest}. */
const VIM_TYPE = 'openstack';

/** Options of {@link createOpenStackHealthWatcher}. */
export interface OpenStackHealthWatchOptions {
  /**
   * How far before the start of the last successful poll `changes-since` reaches: Nova's `updated`
   * has whole seconds, and the VIM's clock may differ from ours. @default 5000
   */
  skewMarginMs?: number;
  /** Timeout of one request. @default periodMs, between 2 s and 30 s */
  requestTimeoutMs?: number;
  /** Clock (ms since epoch). @default Date.now */
  now?: () => number;
}

/** The OpenStack watcher; {@link pollNow} runs one poll of every target at once (tests, operators). */
export interface OpenStackHealthWatcher extends VimHealthWatcher {
  pollNow(): Promise<void>;
}

/** What the watcher keeps per target key. */
interface TargetState {
  /** Digest of the connection's credentials and TLS settings: another digest builds new clients. */
  clientKey: string;
  auth: KeystoneAuth;
  nova: NovaClient;
  /** Set once the catalog proved to have no network service: ports are not read. */
  noNeutron: boolean;
  /** Health per resource by Nova alone (before the port check). */
  novaHealth: Map<string, ResourceHealth>;
  /** Start (our clock) of the last successful poll; undefined: the next poll is a full listing. */
  since: number | undefined;
  /** The target's resources at the last successful poll. */
  known: ReadonlySet<string>;
  /** What was last reported per resource (`condition/reason/detail`), to report only changes. */
  reported: Map<string, string>;
  /** The poll in flight, if any (a target is never polled twice at once). */
  inflight: Promise<void> | undefined;
}

const FAULTY_STATUSES = new Set(['ERROR', 'SHUTOFF', 'PAUSED', 'SUSPENDED', 'SHELVED', 'SHELVED_OFFLOADED']);
const DELETED_STATUSES = new Set(['DELETED', 'SOFT_DELETED']);

/** The health of a server as Nova lists it (see the module comment). */
export function serverHealth(s: NovaServer, observedAt: Date): ResourceHealth {
  const status = (s.status ?? 'UNKNOWN').toUpperCase();
  let condition: HealthCondition;
  let reason = status;
  if (status === 'ACTIVE') condition = 'healthy';
  else if (DELETED_STATUSES.has(status)) {
    condition = 'faulty';
    reason = 'DELETED';
  } else if (FAULTY_STATUSES.has(status)) condition = 'faulty';
  else if (status === 'UNKNOWN') condition = 'unknown';
  else condition = 'degraded';
  const detail = status === 'ERROR' ? s.fault?.message : undefined;
  return { resourceId: s.id, kind: 'server', condition, reason, ...(detail ? { detail } : {}), observedAt };
}

function deletedHealth(resourceId: string, observedAt: Date): ResourceHealth {
  return { resourceId, kind: 'server', condition: 'faulty', reason: 'DELETED', detail: 'not listed by Nova', observedAt };
}

/** A short reason for `unreachable`, free of the connection's secrets. */
function reasonOf(e: unknown, secrets: readonly string[]): string {
  let text = e instanceof Error ? e.message : String(e);
  for (const s of secrets) if (s.length >= 4) text = text.split(s).join('***');
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/** Server id -> its DOWN ports (one listing of the project's), or undefined without Neutron. */
async function downPorts(st: TargetState, signal: AbortSignal): Promise<Map<string, string[]> | undefined> {
  if (st.noNeutron) return undefined;
  let base: string;
  try {
    base = (await st.auth.endpoint('network')).replace(/\/+$/, '');
  } catch (e) {
    if (!(e instanceof OpenStackError) || e.kind !== OpenStackErrorKind.catalog) throw e;
    st.noNeutron = true;
    return undefined;
  }
  const url = `${base}${/\/v2\.0$/.test(base) ? '' : '/v2.0'}/ports`;
  const res = await st.auth.authedFetch({ service: 'network', url, query: { device_owner: 'compute:nova', status: 'DOWN', fields: ['id', 'device_id'] }, signal });
  if (res.status !== 200) {
    throw OpenStackError.fromResponse({ service: res.service, method: res.method, url: res.url, status: res.status, bodyText: res.text, headers: res.headers, context: 'list DOWN ports' });
  }
  const out = new Map<string, string[]>();
  const ports = (parseJsonAnswer(res) as { ports?: { id?: unknown; device_id?: unknown }[] }).ports ?? [];
  for (const p of ports) {
    if (typeof p.id !== 'string' || typeof p.device_id !== 'string' || p.device_id === '') continue;
    out.set(p.device_id, [...(out.get(p.device_id) ?? []), p.id]);
  }
  return out;
}

/** See the module comment. */
class OpenStackWatch implements OpenStackHealthWatcher {
  private readonly now: () => number;
  private readonly skewMarginMs: number;
  private readonly timeoutMs: number;
  private readonly states = new Map<string, TargetState>();
  private stopper = new AbortController();
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly deps: HealthWatcherDeps,
    options: OpenStackHealthWatchOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.skewMarginMs = options.skewMarginMs ?? 5000;
    this.timeoutMs = options.requestTimeoutMs ?? Math.min(30_000, Math.max(2000, deps.periodMs));
  }

  start(): void {
    if (this.timer !== undefined) return;
    if (this.stopped) this.stopper = new AbortController();
    this.stopped = false;
    const loop = (): void => {
      this.timer = setTimeout(() => {
        void this.runTick().finally(() => {
          if (this.timer !== undefined && !this.stopped) loop();
        });
      }, this.deps.periodMs);
      this.timer.unref?.();
    };
    void this.runTick();
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.stopper.abort();
    const inflight = [this.ticking, ...[...this.states.values()].map((s) => s.inflight)].filter((p) => p !== undefined);
    await Promise.allSettled(inflight);
  }

  /** One poll of every target now; a stopped watcher polls no more (until started again). */
  pollNow(): Promise<void> {
    return this.stopped ? Promise.resolve() : this.runTick();
  }

  private runTick(): Promise<void> {
    const p = this.tick().catch((e: unknown) => this.deps.log.error({ err: (e as Error).message }, 'openstack health watch: poll failed'));
    const tracked = p.finally(() => {
      if (this.ticking === tracked) this.ticking = undefined;
    });
    this.ticking = tracked;
    return tracked;
  }

  private async tick(): Promise<void> {
    let targets: HealthWatchTarget[];
    try {
      targets = await this.deps.targets();
    } catch (e) {
      this.deps.log.warn({ err: (e as Error).message }, 'openstack health watch: the targets could not be read');
      return;
    }
    const keys = new Set(targets.map((t) => t.key));
    for (const k of [...this.states.keys()]) if (!keys.has(k)) this.states.delete(k);
    const polls: Promise<void>[] = [];
    for (const t of targets) {
      if (this.stopper.signal.aborted) break;
      let st: TargetState;
      try {
        st = this.stateOf(t);
      } catch (e) {
        this.deps.unreachable(t.key, (e as Error).message);
        continue;
      }
      if (st.inflight === undefined) {
        const p = this.poll(t, st).finally(() => {
          st.inflight = undefined;
        });
        st.inflight = p;
      }
      polls.push(st.inflight);
    }
    await Promise.all(polls);
  }

  /** Every request of a target: counted, through the VIM outbound rules, aborted on stop. */
  private fetchFor(vim: HealthWatchTarget['vim']): typeof fetch {
    const guarded = this.deps.vimOutbound.fetch(fetchForVimTls(vim.interfaceInfo));
    const counted = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      this.deps.countRequest(VIM_TYPE);
      const stop = this.stopper.signal;
      return guarded(input, { ...(init ?? {}), signal: init?.signal ? AbortSignal.any([init.signal, stop]) : stop });
    };
    return counted as typeof fetch;
  }

  /** The target's state; new clients (and a full listing) when its credentials or TLS settings changed. */
  private stateOf(t: HealthWatchTarget): TargetState {
    const ii = t.vim.interfaceInfo ?? {};
    const ai = t.vim.accessInfo ?? {};
    const creds = keystoneCredentialsOf(t.vim);
    const region = typeof ai.region === 'string' ? ai.region : typeof ii.region === 'string' ? ii.region : undefined;
    const clientKey = keystoneSessionKey(creds, [region, ii.skipCertificateVerification ?? null, ii.ssl_ca_cert ?? ii.caCert ?? null]);
    const prev = this.states.get(t.key);
    if (prev !== undefined && prev.clientKey === clientKey) return prev;
    const { authUrl, username, password } = creds;
    if (!authUrl || !username || password === undefined || (!creds.projectName && !creds.projectId)) {
      throw new Error('the OpenStack VIM connection lacks its Keystone URL, user, password or project');
    }
    const auth = new KeystoneAuth({
      ...keystoneAuthOptionsOf({ ...creds, authUrl, username, password }),
      ...(region ? { region } : {}),
      // one try per period: the next period is the retry
      http: { attempts: 1, timeoutMs: this.timeoutMs, fetch: this.fetchFor(t.vim) },
    });
    const st: TargetState = { clientKey, auth, nova: new NovaClient({ auth }), noNeutron: false, novaHealth: new Map(), since: undefined, known: new Set(), reported: new Map(), inflight: undefined };
    this.states.set(t.key, st);
    return st;
  }

  private async poll(t: HealthWatchTarget, st: TargetState): Promise<void> {
    const start = this.now();
    const resources = t.resources;
    const full = st.since === undefined || [...resources].some((r) => !st.known.has(r));
    const filters: Record<string, string> = full ? {} : { 'changes-since': new Date((st.since as number) - this.skewMarginMs).toISOString() };
    const signal = this.stopper.signal;
    let servers: NovaServer[];
    let down: Map<string, string[]> | undefined;
    try {
      servers = await st.nova.listServers({ detail: true, filters, signal });
      down = await downPorts(st, signal);
    } catch (e) {
      if (signal.aborted) return;
      st.since = undefined;
      const secrets = [t.vim.accessInfo?.password].filter((x): x is string => typeof x === 'string');
      this.deps.unreachable(t.key, reasonOf(e, secrets));
      return;
    }
    if (signal.aborted) return;
    const observedAt = new Date(this.now());
    const listed = new Set<string>();
    for (const s of servers) {
      if (!resources.has(s.id)) continue;
      listed.add(s.id);
      st.novaHealth.set(s.id, serverHealth(s, observedAt));
    }
    if (full) for (const r of resources) if (!listed.has(r)) st.novaHealth.set(r, deletedHealth(r, observedAt));
    for (const r of st.novaHealth.keys()) if (!resources.has(r)) st.novaHealth.delete(r);
    for (const r of st.reported.keys()) if (!resources.has(r)) st.reported.delete(r);
    st.since = start;
    st.known = new Set(resources);
    const seen: ResourceHealth[] = [];
    for (const h of st.novaHealth.values()) {
      const ports = down?.get(h.resourceId);
      seen.push(h.condition === 'healthy' && ports !== undefined ? { ...h, condition: 'degraded', reason: 'PortDown', detail: `port ${ports.join(', ')} DOWN`, observedAt } : { ...h, observedAt });
    }
    this.emit(t.key, st, seen, full);
  }

  /** Reports what changed since the last report (everything on a full listing). */
  private emit(key: string, st: TargetState, seen: readonly ResourceHealth[], full: boolean): void {
    const out: ResourceHealth[] = [];
    for (const h of seen) {
      const sig = `${h.condition}/${h.reason}/${h.detail ?? ''}`;
      if (!full && st.reported.get(h.resourceId) === sig) continue;
      st.reported.set(h.resourceId, sig);
      out.push(h);
    }
    if (out.length > 0) this.deps.report(key, out);
  }
}

/** Builds the watcher (not started). */
export function createOpenStackHealthWatcher(deps: HealthWatcherDeps, options: OpenStackHealthWatchOptions = {}): OpenStackHealthWatcher {
  return new OpenStackWatch(deps, options);
}
