/**
 * Keystone v3 password authentication with a project-scoped token, for the VNFM's OpenStack
 * driver (Heat, Nova calls) and for checking tokens that API clients present.
 *
 * Why our own: no maintained npm Keystone client exists, and the driver needs exactly this:
 * one cached token per VIM, renewed a little before it expires (so a long heal never runs
 * with a token that dies mid-way), endpoints picked from the token's catalog by interface and
 * region (as `openstack` CLI does), and a single transparent re-authentication when a service
 * answers 401 (token revoked, Keystone restarted with new fernet keys).
 */
import { createHash } from 'node:crypto';
import { OpenStackError, OpenStackErrorKind, parseJsonAnswer } from './openstack-error.ts';
import {
  type HttpResponse,
  type HttpRetryOptions,
  type ResolvedHttpRetryOptions,
  requestWithRetry,
  resolveHttpRetryOptions,
} from './http-retry.ts';

/** Endpoint interfaces of the Keystone catalog. */
/** Keystone credentials as a VIM connection spells them (SOL keys and the aliases Tacker accepts). */
export interface KeystoneCredentials {
  authUrl: string | undefined;
  username: string | undefined;
  password: string | undefined;
  projectName: string | undefined;
  projectId: string | undefined;
  userDomain: string;
  projectDomain: string;
}

/** The {@link KeystoneAuthOptions} of credentials that have their URL, user and password (a project id wins over the name). */
export function keystoneAuthOptionsOf(c: KeystoneCredentials & { authUrl: string; username: string; password: string }): KeystoneAuthOptions {
  return {
    authUrl: c.authUrl,
    username: c.username,
    password: c.password,
    ...(c.projectId ? { projectId: c.projectId } : { projectName: c.projectName as string }),
    userDomainName: c.userDomain,
    projectDomainName: c.projectDomain,
  };
}

/** A digest of the credentials and `extra` (TLS settings, region, ...) to key cached Keystone sessions by. */
export function keystoneSessionKey(c: KeystoneCredentials, extra: readonly unknown[]): string {
  return createHash('sha256')
    .update(JSON.stringify([c.authUrl, c.username, c.password, c.projectName, c.projectId, c.userDomain, c.projectDomain, ...extra]))
    .digest('hex');
}

const nonEmpty = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The Keystone credentials of a VIM connection's `interfaceInfo` and `accessInfo` (domains default to `Default`). */
export function keystoneCredentialsOf(vim: { interfaceInfo?: Record<string, unknown> | undefined; accessInfo?: Record<string, unknown> | undefined }): KeystoneCredentials {
  const ii = vim.interfaceInfo ?? {};
  const ai = vim.accessInfo ?? {};
  return {
    authUrl: nonEmpty(ii.endpoint) ?? nonEmpty(ii.authUrl) ?? nonEmpty(ii.auth_url),
    username: nonEmpty(ai.username) ?? nonEmpty(ai.userName),
    password: typeof ai.password === 'string' ? ai.password : undefined,
    projectName: nonEmpty(ai.project) ?? nonEmpty(ai.projectName) ?? nonEmpty(ai.tenant),
    projectId: nonEmpty(ai.projectId),
    userDomain: nonEmpty(ai.userDomain) ?? nonEmpty(ai.userDomainName) ?? 'Default',
    projectDomain: nonEmpty(ai.projectDomain) ?? nonEmpty(ai.projectDomainName) ?? 'Default',
  };
}

export const EndpointInterface = { public: 'public', internal: 'internal', admin: 'admin' } as const;
/** See {@link EndpointInterface}. */
export type EndpointInterface = (typeof EndpointInterface)[keyof typeof EndpointInterface];

/** How to reach and authenticate against one VIM's Keystone. */
export interface KeystoneAuthOptions {
  /** Keystone v3 URL, e.g. `http://127.0.0.1:5000/v3` (`/v3` is appended when missing). */
  authUrl: string;
  username: string;
  password: string;
  /** Project to scope the token to, by name (with {@link projectDomainName}) ... */
  projectName?: string;
  /** ... or by id (wins over the name). */
  projectId?: string;
  /** Domain of the user. @default 'Default' (unless {@link userDomainId} is set) */
  userDomainName?: string;
  userDomainId?: string;
  /** Domain of the project, when scoping by name. @default 'Default' (unless {@link projectDomainId} is set) */
  projectDomainName?: string;
  projectDomainId?: string;
  /** Region to pick endpoints in; any region when unset. */
  region?: string;
  /** Endpoint interface to pick. @default 'public' */
  interface?: EndpointInterface;
  /** Renew the token this long before it expires (capped at a tenth of its lifetime). @default 60000 */
  refreshMarginMs?: number;
  /** Fixed URLs per catalog type, bypassing the catalog (e.g. `{ orchestration: 'http://heat:8004/v1/<project>' }`). */
  endpointOverrides?: Readonly<Record<string, string>>;
  /** Retry/timeout settings of every request made through this object. */
  http?: HttpRetryOptions;
  /** Clock (ms since epoch), for tests. @default Date.now */
  now?: () => number;
}

/** One endpoint of a catalog entry, as Keystone returns it. */
export interface KeystoneEndpoint {
  id?: string;
  interface: string;
  region_id?: string | null;
  region?: string | null;
  url: string;
}

/** One service of the token's catalog. */
export interface KeystoneCatalogEntry {
  id?: string;
  type: string;
  name?: string;
  endpoints: KeystoneEndpoint[];
}

/** What a token says about itself (from the token body of Keystone). */
export interface KeystoneTokenInfo {
  /** Keystone's `expires_at` (ISO 8601). */
  expiresAt: string;
  issuedAt: string;
  userId: string;
  userName: string;
  userDomainId: string | undefined;
  userDomainName: string | undefined;
  projectId: string | undefined;
  projectName: string | undefined;
  projectDomainId: string | undefined;
  projectDomainName: string | undefined;
  /** Role names. */
  roles: string[];
  /** Authentication methods ('password', 'token', ...). */
  methods: string[];
  catalog: KeystoneCatalogEntry[];
}

/** The cached authentication: token plus local renewal/expiry times. */
export interface KeystoneSession {
  /** The token (X-Auth-Token). Never log it. */
  readonly token: string;
  readonly info: KeystoneTokenInfo;
  /** Local time (ms) from which a new token is fetched before use. */
  readonly renewAt: number;
  /** Local time (ms) at which Keystone considers the token expired. */
  readonly expiresAt: number;
}

/** A request to an OpenStack service, authenticated with the cached token. */
export interface AuthedRequest {
  /** Catalog type of the service ('orchestration', 'compute', 'identity'). */
  service: string;
  /** Path appended to the service's endpoint URL (ignored when {@link url} is given). */
  path?: string;
  /** Absolute URL (e.g. a link from an earlier answer). */
  url?: string;
  /** @default 'GET' */
  method?: string;
  /** JSON body (serialised here; `null` is sent as `null`). */
  body?: unknown;
  /** Query parameters (undefined values are skipped; an array repeats the parameter, e.g. `name=a&name=b`). */
  query?: Readonly<Record<string, string | number | boolean | readonly string[] | undefined>>;
  /** Extra headers (e.g. a Nova microversion). */
  headers?: Readonly<Record<string, string>>;
  /** See {@link HttpRequest.idempotent}. */
  idempotent?: boolean;
  /** See {@link HttpRequest.retryConflict}. */
  retryConflict?: (errorType: string | undefined, bodyText: string) => boolean;
  timeoutMs?: number;
  attempts?: number;
  signal?: AbortSignal;
}

const SERVICE_LABELS: Readonly<Record<string, string>> = {
  identity: 'keystone',
  orchestration: 'heat',
  compute: 'nova',
  network: 'neutron',
  'block-storage': 'cinder',
  volumev3: 'cinder',
  image: 'glance',
};

/** Short label of a catalog type for errors ('orchestration' -> 'heat'). */
function serviceLabel(serviceType: string): string {
  return SERVICE_LABELS[serviceType] ?? serviceType;
}

function normaliseAuthUrl(url: string): string {
  const trimmed = url.trim().replace(/\/+$/, '');
  return /\/v3$/.test(trimmed) ? trimmed : `${trimmed}/v3`;
}

function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function optStr(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function parseTokenBody(body: unknown): KeystoneTokenInfo | undefined {
  const token = asRecord(asRecord(body).token);
  const user = asRecord(token.user);
  const userDomain = asRecord(user.domain);
  const project = asRecord(token.project);
  const projectDomain = asRecord(project.domain);
  const expiresAt = optStr(token.expires_at);
  if (expiresAt === undefined || optStr(user.id) === undefined) return undefined;
  const catalog: KeystoneCatalogEntry[] = [];
  if (Array.isArray(token.catalog)) {
    for (const raw of token.catalog) {
      const s = asRecord(raw);
      const type = optStr(s.type);
      if (type === undefined) continue;
      const endpoints: KeystoneEndpoint[] = [];
      if (Array.isArray(s.endpoints)) {
        for (const e of s.endpoints) {
          const ep = asRecord(e);
          const url = optStr(ep.url);
          const iface = optStr(ep.interface);
          if (url === undefined || iface === undefined) continue;
          endpoints.push({
            ...(optStr(ep.id) === undefined ? {} : { id: optStr(ep.id) as string }),
            interface: iface,
            region_id: optStr(ep.region_id) ?? null,
            region: optStr(ep.region) ?? null,
            url,
          });
        }
      }
      catalog.push({
        type,
        ...(optStr(s.id) === undefined ? {} : { id: optStr(s.id) as string }),
        ...(optStr(s.name) === undefined ? {} : { name: optStr(s.name) as string }),
        endpoints,
      });
    }
  }
  return {
    expiresAt,
    issuedAt: optStr(token.issued_at) ?? '',
    userId: optStr(user.id) as string,
    userName: optStr(user.name) ?? '',
    userDomainId: optStr(userDomain.id),
    userDomainName: optStr(userDomain.name),
    projectId: optStr(project.id),
    projectName: optStr(project.name),
    projectDomainId: optStr(projectDomain.id),
    projectDomainName: optStr(projectDomain.name),
    roles: Array.isArray(token.roles) ? token.roles.map((r) => optStr(asRecord(r).name)).filter((n): n is string => n !== undefined) : [],
    methods: Array.isArray(token.methods) ? token.methods.filter((m): m is string => typeof m === 'string') : [],
    catalog,
  };
}

/**
 * Keystone v3 session of one VIM: authenticates with a password and a project scope, caches
 * the token until shortly before it expires, finds service endpoints in the catalog, and sends
 * authenticated requests ({@link authedFetch}) that re-authenticate once on a 401.
 */
export class KeystoneAuth {
  /** Normalised Keystone v3 URL (no trailing slash). */
  readonly authUrl: string;
  private readonly opts: KeystoneAuthOptions;
  private readonly http: ResolvedHttpRetryOptions;
  private readonly now: () => number;
  private readonly refreshMarginMs: number;
  private session: KeystoneSession | undefined;
  private pending: Promise<KeystoneSession> | undefined;
  private authCount = 0;

  constructor(options: KeystoneAuthOptions) {
    if (!options.authUrl) throw new TypeError('KeystoneAuth: authUrl is required');
    if (!options.username) throw new TypeError('KeystoneAuth: username is required');
    if (typeof options.password !== 'string') throw new TypeError('KeystoneAuth: password is required');
    if (!options.projectId && !options.projectName) throw new TypeError('KeystoneAuth: projectName or projectId is required');
    this.opts = options;
    this.authUrl = normaliseAuthUrl(options.authUrl);
    this.http = resolveHttpRetryOptions(options.http);
    this.now = options.now ?? Date.now;
    this.refreshMarginMs = options.refreshMarginMs ?? 60_000;
  }

  /** How many times a token was requested from Keystone (for metrics and tests). */
  get authentications(): number {
    return this.authCount;
  }

  /** Region endpoints are picked in (undefined: any). */
  get region(): string | undefined {
    return this.opts.region;
  }

  /**
   * The cached session, authenticating first when there is none, it is due for renewal, or
   * `forceRefresh` is set. Concurrent callers share one authentication request.
   */
  async getSession(opts: { forceRefresh?: boolean } = {}): Promise<KeystoneSession> {
    const current = this.session;
    if (!opts.forceRefresh && current !== undefined && this.now() < current.renewAt) return current;
    if (this.pending === undefined) {
      const p = this.authenticate();
      this.pending = p;
      const clear = (): void => {
        if (this.pending === p) this.pending = undefined;
      };
      p.then(clear, clear);
    }
    return this.pending;
  }

  /** A valid token (see {@link getSession}). */
  async getToken(opts: { forceRefresh?: boolean } = {}): Promise<string> {
    return (await this.getSession(opts)).token;
  }

  /** Id of the project the token is scoped to. */
  async projectId(): Promise<string> {
    const info = (await this.getSession()).info;
    if (info.projectId === undefined) {
      throw new OpenStackError({ service: 'keystone', kind: OpenStackErrorKind.protocol, detail: 'keystone token has no project scope', retryable: false });
    }
    return info.projectId;
  }

  /**
   * Drops the cached token so the next call authenticates again. With `token`, only when the
   * cache still holds that very token (another caller may already have renewed it).
   */
  invalidate(token?: string): void {
    if (token === undefined || this.session?.token === token) this.session = undefined;
  }

  /**
   * URL of a service (no trailing slash) from the catalog: the endpoint of type `serviceType`
   * with the wanted interface, in the configured region when one is set. A configured
   * override wins.
   */
  async endpoint(serviceType: string, opts: { interface?: EndpointInterface; region?: string } = {}): Promise<string> {
    const override = this.opts.endpointOverrides?.[serviceType];
    if (override !== undefined) return override.replace(/\/+$/, '');
    const session = await this.getSession();
    return KeystoneAuth.findEndpoint(session.info.catalog, serviceType, {
      interface: opts.interface ?? this.opts.interface ?? EndpointInterface.public,
      ...(opts.region ?? this.opts.region ? { region: (opts.region ?? this.opts.region) as string } : {}),
    });
  }

  /**
   * Picks an endpoint URL out of a catalog (pure; exposed for tests and for callers that hold a
   * catalog already). Throws {@link OpenStackError} kind `catalog` when nothing matches.
   */
  static findEndpoint(catalog: readonly KeystoneCatalogEntry[], serviceType: string, opts: { interface: string; region?: string }): string {
    const services = catalog.filter((s) => s.type === serviceType);
    for (const s of services) {
      for (const e of s.endpoints) {
        if (e.interface !== opts.interface) continue;
        if (opts.region !== undefined && e.region_id !== opts.region && e.region !== opts.region) continue;
        return e.url.replace(/\/+$/, '');
      }
    }
    const where = `interface '${opts.interface}'${opts.region === undefined ? '' : ` in region '${opts.region}'`}`;
    const detail =
      services.length === 0
        ? `keystone catalog has no service of type '${serviceType}'`
        : `keystone catalog has no '${serviceType}' endpoint with ${where}`;
    throw new OpenStackError({ service: 'keystone', kind: OpenStackErrorKind.catalog, detail, retryable: false });
  }

  /**
   * Sends a request to a service with the cached token (`X-Auth-Token`), JSON in and out, with
   * the retry policy of {@link requestWithRetry}. On a 401 it re-authenticates once and sends
   * the request again. Returns the answer whatever its status; redirects are not followed.
   */
  async authedFetch(req: AuthedRequest): Promise<HttpResponse> {
    const base = req.url ?? `${await this.endpoint(req.service)}${req.path ?? ''}`;
    let url = base;
    if (req.query !== undefined) {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(req.query)) {
        if (v === undefined) continue;
        if (Array.isArray(v)) for (const x of v) qs.append(k, String(x));
        else qs.append(k, String(v));
      }
      const s = qs.toString();
      if (s !== '') url += (url.includes('?') ? '&' : '?') + s;
    }
    const method = (req.method ?? 'GET').toUpperCase();
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    let res: HttpResponse | undefined;
    for (let round = 0; round < 2; round++) {
      // After a 401 the token was invalidated: this authenticates again, or picks up the token
      // another caller already renewed.
      const session = await this.getSession();
      const headers: Record<string, string> = { Accept: 'application/json', ...req.headers, 'X-Auth-Token': session.token };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      res = await requestWithRetry(
        {
          service: serviceLabel(req.service),
          method,
          url,
          headers,
          ...(body === undefined ? {} : { body }),
          ...(req.idempotent === undefined ? {} : { idempotent: req.idempotent }),
          ...(req.retryConflict === undefined ? {} : { retryConflict: req.retryConflict }),
          ...(req.timeoutMs === undefined ? {} : { timeoutMs: req.timeoutMs }),
          ...(req.attempts === undefined ? {} : { attempts: req.attempts }),
          ...(req.signal === undefined ? {} : { signal: req.signal }),
          secrets: this.secrets(),
        },
        this.http,
      );
      if (res.status !== 401) return res;
      this.invalidate(session.token);
    }
    return res as HttpResponse;
  }

  /**
   * Checks a token someone else presented (e.g. the `openstack vnflcm` CLI): `GET /auth/tokens`
   * with our own token and `X-Subject-Token`. Returns what the token says, or null when Keystone
   * does not know it (invalid, expired, revoked). Needs a role allowed to validate tokens
   * (admin or service).
   */
  async validateToken(subjectToken: string, opts: { allowExpired?: boolean; signal?: AbortSignal } = {}): Promise<KeystoneTokenInfo | null> {
    if (subjectToken === '') return null;
    const res = await this.authedFetch({
      service: 'identity',
      url: `${this.authUrl}/auth/tokens${opts.allowExpired ? '?allow_expired=1' : ''}`,
      headers: { 'X-Subject-Token': subjectToken },
      ...(opts.signal === undefined ? {} : { signal: opts.signal }),
    });
    if (res.status === 404 || res.status === 401) {
      // 401 here means our own fresh token was refused too (authedFetch re-authenticated once);
      // 404 is Keystone's answer for an unknown/expired subject token.
      if (res.status === 401) throw this.httpError(res, 'validate token', [subjectToken]);
      return null;
    }
    if (res.status !== 200) throw this.httpError(res, 'validate token', [subjectToken]);
    const info = parseTokenBody(this.parseJson(res, [subjectToken]));
    if (info === undefined) {
      throw new OpenStackError({ service: 'keystone', kind: OpenStackErrorKind.protocol, detail: 'keystone token validation answer has no token body', retryable: false });
    }
    return info;
  }

  private secrets(extra: readonly string[] = []): string[] {
    const s = [this.opts.password, ...extra];
    if (this.session !== undefined) s.push(this.session.token);
    return s;
  }

  private httpError(res: HttpResponse, context: string, extraSecrets: readonly string[] = []): OpenStackError {
    return OpenStackError.fromResponse({
      service: res.service,
      method: res.method,
      url: res.url,
      status: res.status,
      bodyText: res.text,
      headers: res.headers,
      secrets: this.secrets(extraSecrets),
      context,
    });
  }

  private parseJson(res: HttpResponse, extraSecrets: readonly string[] = []): unknown {
    return parseJsonAnswer(res, { secrets: this.secrets(extraSecrets) });
  }

  private authBody(): unknown {
    const o = this.opts;
    const userDomain = o.userDomainId !== undefined ? { id: o.userDomainId } : { name: o.userDomainName ?? 'Default' };
    const project =
      o.projectId !== undefined
        ? { id: o.projectId }
        : { name: o.projectName, domain: o.projectDomainId !== undefined ? { id: o.projectDomainId } : { name: o.projectDomainName ?? 'Default' } };
    return {
      auth: {
        identity: { methods: ['password'], password: { user: { name: o.username, domain: userDomain, password: o.password } } },
        scope: { project },
      },
    };
  }

  private async authenticate(): Promise<KeystoneSession> {
    this.authCount++;
    const sentAt = this.now();
    const res = await requestWithRetry(
      {
        service: 'keystone',
        method: 'POST',
        url: `${this.authUrl}/auth/tokens`,
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(this.authBody()),
        // Asking for a token twice is harmless: it only mints another token.
        idempotent: true,
        secrets: [this.opts.password],
      },
      this.http,
    );
    if (res.status !== 201 && res.status !== 200) {
      const scope = this.opts.projectId !== undefined ? `project id ${this.opts.projectId}` : `project ${this.opts.projectName}`;
      throw this.httpError(res, `authentication of user ${this.opts.username} (${scope})`);
    }
    const token = res.headers.get('x-subject-token');
    if (token === null || token === '') {
      throw new OpenStackError({ service: 'keystone', kind: OpenStackErrorKind.protocol, detail: 'keystone answered without an X-Subject-Token header', retryable: false, status: res.status });
    }
    const info = parseTokenBody(this.parseJson(res, [token]));
    if (info === undefined) {
      throw new OpenStackError({ service: 'keystone', kind: OpenStackErrorKind.protocol, detail: 'keystone token answer has no token body', retryable: false, status: res.status });
    }
    // Keystone's clock and ours may differ: keep the token's lifetime, counted from when we asked.
    const expires = Date.parse(info.expiresAt);
    const issued = Date.parse(info.issuedAt);
    const lifetime = Number.isNaN(expires) ? 3_600_000 : Number.isNaN(issued) ? expires - sentAt : expires - issued;
    const expiresAt = sentAt + Math.max(0, lifetime);
    const margin = Math.min(this.refreshMarginMs, Math.max(0, lifetime) / 10);
    const session: KeystoneSession = { token, info, expiresAt, renewAt: expiresAt - margin };
    this.session = session;
    return session;
  }
}
