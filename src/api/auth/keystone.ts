/**
 * Mode `keystone`: the caller's `X-Auth-Token` is validated by Keystone v3
 * (`GET /v3/auth/tokens` with `X-Subject-Token`), authenticated as the VNFM's own service user.
 * User, project and roles come from the token; Keystone role names map to VNFM roles through
 * `auth.keystone.roleMap`. A validated token is cached until it expires or `cacheTtlMs` passes
 * (bounded); an invalid one for `auth.failureCacheMs` in a cache of its own (bounded by
 * `auth.failureCacheMaxEntries`, so a flood of bad tokens never pushes valid ones out), so a client
 * retrying a bad token does not load Keystone. Concurrent validations of one token share one
 * Keystone request.
 */
import type { AuthConfig } from '../../config.ts';
import { vnfmError } from '../../errors.ts';
import { ExpiringCache, credentialHash } from './cache.ts';
import { type Principal, rolesUpTo, strongest } from './principal.ts';

type KeystoneSettings = AuthConfig['keystone'];

interface KeystoneToken {
  expires_at?: string;
  user?: { id?: string; name?: string };
  project?: { id?: string; name?: string };
  roles?: { name?: string }[];
}

/** How long, and how many, refused tokens are remembered. */
export interface FailureCacheSettings {
  ttlMs: number;
  maxEntries: number;
}
export const DEFAULT_FAILURE_CACHE: FailureCacheSettings = { ttlMs: 5000, maxEntries: 10_000 };

export class KeystoneValidator {
  private readonly cache: ExpiringCache<Principal>;
  private readonly refused: ExpiringCache<true>;
  private readonly inflight = new Map<string, Promise<Principal | null>>();
  private service: { token: string; until: number } | undefined;
  private serviceInflight: Promise<string> | undefined;

  constructor(
    private readonly s: KeystoneSettings,
    private readonly failures: FailureCacheSettings = DEFAULT_FAILURE_CACHE,
  ) {
    this.cache = new ExpiringCache(s.cacheMaxEntries);
    this.refused = new ExpiringCache(Math.max(1, failures.maxEntries));
  }

  /** What is known of a token without asking Keystone: its principal, null (refused lately) or undefined (unknown). */
  cached(token: string): Principal | null | undefined {
    const key = credentialHash(token);
    return this.cache.get(key) ?? (this.refused.get(key) ? null : undefined);
  }

  private refuse(key: string): null {
    if (this.failures.ttlMs > 0) this.refused.set(key, true, Date.now() + this.failures.ttlMs);
    return null;
  }

  private get base(): string {
    return (this.s.authUrl ?? '').replace(/\/+$/, '');
  }

  /** The principal of a token, or null when Keystone does not know it (expired, revoked, forged). */
  async validate(token: string): Promise<Principal | null> {
    const key = credentialHash(token);
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    if (this.refused.get(key)) return null;
    let p = this.inflight.get(key);
    if (!p) {
      p = this.fetchPrincipal(token, key).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  }

  private async fetchPrincipal(token: string, key: string): Promise<Principal | null> {
    let res = await this.check(token, await this.serviceToken(false));
    if (res.status === 401) res = await this.check(token, await this.serviceToken(true));
    if (res.status === 404 || res.status === 401) {
      await res.body?.cancel();
      return this.refuse(key);
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', `Keystone could not validate the token (HTTP ${res.status}); try again later`);
    }
    const t = ((await res.json()) as { token?: KeystoneToken }).token ?? {};
    const expires = t.expires_at ? Date.parse(t.expires_at) : NaN;
    const now = Date.now();
    if (Number.isFinite(expires) && expires <= now) return this.refuse(key);
    const mapped = (t.roles ?? []).map((r) => (r.name ? this.s.roleMap[r.name] ?? this.s.roleMap[r.name.toLowerCase()] : undefined)).filter((r) => r !== undefined);
    const top = strongest(mapped);
    const principal: Principal = {
      id: t.user?.id ?? 'unknown',
      name: t.user?.name ?? t.user?.id ?? 'unknown',
      ...(t.project?.id ? { project: t.project.id } : {}),
      roles: top ? rolesUpTo(top) : new Set(),
      via: 'keystone',
    };
    this.cache.set(key, principal, Math.min(Number.isFinite(expires) ? expires : Infinity, now + this.s.cacheTtlMs));
    return principal;
  }

  private async check(token: string, service: string): Promise<Response> {
    try {
      return await fetch(`${this.base}/auth/tokens`, {
        headers: { 'x-auth-token': service, 'x-subject-token': token, accept: 'application/json' },
        signal: AbortSignal.timeout(this.s.timeoutMs),
      });
    } catch (e) {
      throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', `Keystone does not answer (${(e as Error).name === 'TimeoutError' ? 'timeout' : 'connection failed'}); try again later`);
    }
  }

  /** The VNFM's own token (password authentication, project-scoped), renewed before it expires. */
  private async serviceToken(renew: boolean): Promise<string> {
    if (!renew && this.service && this.service.until > Date.now()) return this.service.token;
    this.serviceInflight ??= this.login().finally(() => (this.serviceInflight = undefined));
    return this.serviceInflight;
  }

  private async login(): Promise<string> {
    const s = this.s;
    let res: Response;
    try {
      res = await fetch(`${this.base}/auth/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          auth: {
            identity: { methods: ['password'], password: { user: { name: s.username, domain: { name: s.userDomainName }, password: s.password } } },
            scope: { project: { name: s.projectName, domain: { name: s.projectDomainName } } },
          },
        }),
        signal: AbortSignal.timeout(s.timeoutMs),
      });
    } catch {
      throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', 'Keystone does not answer; try again later');
    }
    const token = res.headers.get('x-subject-token');
    if (res.status !== 201 || !token) {
      await res.body?.cancel();
      throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', `the VNFM's service user cannot log in to Keystone (HTTP ${res.status}); check auth.keystone`);
    }
    const body = (await res.json()) as { token?: { expires_at?: string } };
    const exp = Date.parse(body.token?.expires_at ?? '');
    // renewed a minute before Keystone's expiry (or after 10 minutes when it gives none)
    this.service = { token, until: Number.isFinite(exp) ? exp - 60_000 : Date.now() + 600_000 };
    return token;
  }
}
