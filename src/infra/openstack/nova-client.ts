/**
 * Nova (OpenStack Compute v2.1) read-only client: the server facts a VNF Manager needs to
 * judge a VNFC (status, host, task state) and to rebuild `instantiatedVnfInfo` from what the
 * VIM really runs.
 *
 * Why read-only: the VNFM changes servers only through Heat (so the stack stays the source of
 * truth); Nova is asked what happened to them, e.g. which compute host a server is on when a
 * fault notification names a host.
 */
import type { HttpResponse } from './http-retry.ts';
import type { KeystoneAuth } from './keystone-auth.ts';
import { OpenStackError, OpenStackErrorKind, parseJsonAnswer } from './openstack-error.ts';

/** A server, with Nova's extension attributes turned into plain fields. */
export interface NovaServer {
  id: string;
  name: string;
  /** ACTIVE, BUILD, ERROR, SHUTOFF, ... (absent in non-detailed listings). */
  status: string | undefined;
  /** `OS-EXT-SRV-ATTR:host` (admin only). */
  host: string | undefined;
  /** `OS-EXT-SRV-ATTR:hypervisor_hostname` (admin only). */
  hypervisorHostname: string | undefined;
  /** Opaque per-project host hash Nova shows to everyone. */
  hostId: string | undefined;
  /** `OS-EXT-AZ:availability_zone`. */
  availabilityZone: string | undefined;
  /** `OS-EXT-STS:task_state`, e.g. 'rebuilding' (null in Nova when idle). */
  taskState: string | undefined;
  /** `OS-EXT-STS:vm_state`, e.g. 'active', 'error'. */
  vmState: string | undefined;
  /** `OS-EXT-STS:power_state` (1 = running, 4 = shutdown, ...). */
  powerState: number | undefined;
  tenantId: string | undefined;
  /** Network name -> addresses, as Nova gives it. */
  addresses: Record<string, unknown> | undefined;
  created: string | undefined;
  updated: string | undefined;
  /** Nova's `fault` (shown for servers in ERROR), e.g. `{ code: 500, message: 'No valid host was found.' }`. */
  fault: { code: number | undefined; message: string | undefined } | undefined;
  /** The server as Nova sent it. */
  raw: Record<string, unknown>;
}

/** Options of {@link NovaClient}. */
export interface NovaClientOptions {
  auth: KeystoneAuth;
  /** Catalog type of Nova. @default 'compute' */
  serviceType?: string;
  /** Compute microversion to ask for (e.g. '2.47'); none = Nova's base 2.1 behaviour. */
  microversion?: string;
}

/** Filters of {@link NovaClient.listServers}. */
export interface ListServersOptions {
  /** `/servers/detail` (status, host, ...) instead of `/servers` (id, name). @default true */
  detail?: boolean;
  /** All projects (admin). @default false */
  allTenants?: boolean;
  /** Nova query filters (`name`, `status`, `host`, `changes-since`, ...). */
  filters?: Record<string, string>;
  /** Page size; all pages are fetched. */
  limit?: number;
  /** Cancels the listing. */
  signal?: AbortSignal;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** Maps Nova's server body (with its `OS-EXT-*` keys) to {@link NovaServer}. */
function toServer(raw: Record<string, unknown>): NovaServer {
  const addresses = raw.addresses;
  const power = raw['OS-EXT-STS:power_state'];
  const fault = raw.fault !== null && typeof raw.fault === 'object' ? (raw.fault as Record<string, unknown>) : undefined;
  return {
    id: str(raw.id) ?? '',
    name: str(raw.name) ?? '',
    status: str(raw.status),
    host: str(raw['OS-EXT-SRV-ATTR:host']),
    hypervisorHostname: str(raw['OS-EXT-SRV-ATTR:hypervisor_hostname']),
    hostId: str(raw.hostId),
    availabilityZone: str(raw['OS-EXT-AZ:availability_zone']),
    taskState: str(raw['OS-EXT-STS:task_state']),
    vmState: str(raw['OS-EXT-STS:vm_state']),
    powerState: typeof power === 'number' ? power : undefined,
    tenantId: str(raw.tenant_id),
    addresses: addresses !== null && typeof addresses === 'object' ? (addresses as Record<string, unknown>) : undefined,
    created: str(raw.created),
    updated: str(raw.updated),
    fault: fault === undefined ? undefined : { code: typeof fault.code === 'number' ? fault.code : undefined, message: str(fault.message) },
    raw,
  };
}

/** Nova client on top of a {@link KeystoneAuth} session; errors are {@link OpenStackError}. */
export class NovaClient {
  private readonly auth: KeystoneAuth;
  private readonly serviceType: string;
  private readonly headers: Record<string, string>;

  constructor(options: NovaClientOptions) {
    this.auth = options.auth;
    this.serviceType = options.serviceType ?? 'compute';
    this.headers = options.microversion === undefined ? {} : { 'OpenStack-API-Version': `compute ${options.microversion}`, 'X-OpenStack-Nova-API-Version': options.microversion };
  }

  /** `GET /servers/{id}`. Throws {@link OpenStackError} (status 404) when Nova does not know it. */
  async getServer(id: string, opts: { signal?: AbortSignal } = {}): Promise<NovaServer> {
    const res = await this.auth.authedFetch({
      service: this.serviceType,
      path: `/servers/${encodeURIComponent(id)}`,
      headers: this.headers,
      ...(opts.signal === undefined ? {} : { signal: opts.signal }),
    });
    this.expect(res, `get server ${id}`);
    const server = (this.json(res) as { server?: Record<string, unknown> }).server;
    if (server === undefined) throw this.protocolError(res, 'server answer has no "server"');
    return toServer(server);
  }

  /** Like {@link getServer} but null on 404. */
  async findServer(id: string): Promise<NovaServer | null> {
    try {
      return await this.getServer(id);
    } catch (e) {
      if (OpenStackError.isStatus(e, 404)) return null;
      throw e;
    }
  }

  /** `GET /servers[/detail]`, following Nova's `servers_links` "next" pages. */
  async listServers(opts: ListServersOptions = {}): Promise<NovaServer[]> {
    const out: NovaServer[] = [];
    const query: Record<string, string | number | undefined> = { ...(opts.filters ?? {}), limit: opts.limit };
    if (opts.allTenants) query.all_tenants = 1;
    let url: string | undefined;
    let path: string | undefined = opts.detail === false ? '/servers' : '/servers/detail';
    for (let page = 0; page < 10_000; page++) {
      const res = await this.auth.authedFetch({
        service: this.serviceType,
        headers: this.headers,
        ...(url === undefined ? { path, query } : { url }),
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      });
      this.expect(res, 'list servers');
      const body = this.json(res) as { servers?: Record<string, unknown>[]; servers_links?: { rel?: string; href?: string }[] };
      const servers = body.servers ?? [];
      for (const s of servers) out.push(toServer(s));
      const next = body.servers_links?.find((l) => l.rel === 'next')?.href;
      if (next === undefined || servers.length === 0) return out;
      url = await this.sameOrigin(next);
      path = undefined;
    }
    return out;
  }

  /**
   * Nova builds `next` links from its own idea of its URL, which behind a proxy may not be
   * reachable; keep our endpoint and take only the path tail and query from the link.
   */
  private async sameOrigin(next: string): Promise<string> {
    const base = await this.auth.endpoint(this.serviceType);
    try {
      const u = new URL(next);
      const i = u.pathname.indexOf('/servers');
      return i < 0 ? next : `${base}${u.pathname.slice(i)}${u.search}`;
    } catch {
      return next;
    }
  }

  private expect(res: HttpResponse, context: string): void {
    if (res.status === 200) return;
    throw OpenStackError.fromResponse({ service: res.service, method: res.method, url: res.url, status: res.status, bodyText: res.text, headers: res.headers, context });
  }

  private json(res: HttpResponse): unknown {
    return parseJsonAnswer(res);
  }

  private protocolError(res: HttpResponse, detail: string): OpenStackError {
    return new OpenStackError({ service: res.service, kind: OpenStackErrorKind.protocol, detail: `nova: ${detail}`, retryable: false, status: res.status });
  }
}
