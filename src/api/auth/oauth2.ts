/**
 * Mode `oauth2` (ETSI GS NFV-SOL 013 client credentials).
 *
 * Built-in authorization server: clients are registered by an admin (`/vnfm/v1/oauth2/clients`
 * or `vnfm oauth2-client create`), each with a role, an optional project and optionally bound to
 * its TLS client certificate. `POST /token` (`grant_type=client_credentials`, client secret basic
 * or post) issues an opaque bearer token with an expiry; only its SHA-256 is stored, and the
 * client secret only as an scrypt hash. A token obtained over a connection with a verified client
 * certificate is bound to it (RFC 8705 `cnf.x5t#S256`): it is only accepted with that certificate.
 * Scopes: the role names (`reader`, `operator`, `admin`) and the keys of `auth.oauth2.scopeMap`;
 * a token's role is the strongest its scopes map to, never above the client's own role.
 *
 * External authorization server: tokens the built-in server did not issue are checked by RFC 7662
 * introspection when `auth.oauth2.introspection.endpoint` is set (active answers cached until the
 * token expires, at most `cacheTtlMs`).
 *
 * Revocation across processes: deleting a client bumps `auth_revocation.generation` in the same
 * transaction. A token is cached with the generation read before its row; a process re-reads the
 * generation at most every `revocationCheckMs` (1 s) before it trusts a cached token, and a token
 * cached under an older generation is read again. A deleted client's tokens therefore stop working
 * everywhere within that interval, not when the cache entries expire (a minute).
 */
import { createHash, randomBytes, randomUUID, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import { type ApiRole, API_ROLES, type AuthConfig } from '../../config.ts';
import { vnfmError } from '../../errors.ts';
import type { Database } from '../../store/schema.ts';
import { ExpiringCache, credentialHash } from './cache.ts';
import { DEFAULT_FAILURE_CACHE, type FailureCacheSettings } from './keystone.ts';
import { type Principal, rolesUpTo, strongest } from './principal.ts';

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number, opts: { N: number; r: number; p: number }) => Promise<Buffer>;
const SCRYPT = { N: 16384, r: 8, p: 1 };

/** Prefix of the access tokens the built-in server issues (tells them apart without a lookup). */
export const TOKEN_PREFIX = 'vnfmat_';
/** Prefix of client secrets (shown once at registration). */
const SECRET_PREFIX = 'vnfmcs_';

/** A registered client as the API shows it (never its secret). */
export interface OAuthClient {
  clientId: string;
  name: string;
  role: ApiRole;
  project?: string;
  certificateBound: boolean;
  createdAt: string;
}

/** An error of the token endpoint (RFC 6749 section 5.2). */
export class OAuthError extends Error {
  constructor(
    readonly status: 400 | 401,
    readonly error: 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unauthorized_client' | 'unsupported_grant_type' | 'invalid_scope',
    readonly description: string,
  ) {
    super(description);
  }
}

async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const h = await scrypt(secret, salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${salt.toString('base64url')}$${h.toString('base64url')}`;
}

async function secretMatches(secret: string, stored: string): Promise<boolean> {
  const [alg, n, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !n || !salt || !hash) return false;
  const want = Buffer.from(hash, 'base64url');
  const got = await scrypt(secret, Buffer.from(salt, 'base64url'), want.length, { ...SCRYPT, N: Number(n) });
  return got.length === want.length && timingSafeEqual(got, want);
}

/** RFC 8705 thumbprint of a DER certificate: base64url(SHA-256(DER)). */
export function certThumbprint(der: Buffer): string {
  return createHash('sha256').update(der).digest('base64url');
}

interface CachedToken {
  principal: Principal;
  clientId: string;
  cnf: string | null;
  /** The revocation generation read before the token's row: the entry is stale once it moved. */
  generation: string;
}

type OAuthSettings = AuthConfig['oauth2'];

/** The built-in authorization server and the introspection client. */
export class OAuthService {
  private readonly tokens = new ExpiringCache<CachedToken | null>(10_000);
  private readonly introspected = new ExpiringCache<{ principal: Principal; cnf: string | null }>(10_000);
  /** Tokens the external server said are not active, kept apart so they never push active ones out. */
  private readonly inactive: ExpiringCache<true>;
  private readonly introspecting = new Map<string, Promise<{ principal: Principal; cnf: string | null } | null>>();
  /** A client's dummy hash, compared against when the client id is unknown (same timing). */
  private dummyHash: Promise<string> | undefined;
  /** The revocation generation the token cache was filled under, and when it was last read. */
  private generation: string | undefined;
  private generationReadAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly s: OAuthSettings,
    private readonly failures: FailureCacheSettings = DEFAULT_FAILURE_CACHE,
  ) {
    this.inactive = new ExpiringCache(Math.max(1, failures.maxEntries));
  }

  /** What is known of an external token without introspecting it: the cached answer, null (refused lately) or undefined. */
  cached(token: string): { principal: Principal; cnf: string | null } | null | undefined {
    const key = credentialHash(token);
    return this.introspected.get(key) ?? (this.inactive.get(key) ? null : undefined);
  }

  /** Registers a client; the secret is returned once, only its hash is stored. */
  async register(input: { name: string; role: ApiRole; project?: string; certificateBound?: boolean }): Promise<OAuthClient & { clientSecret: string }> {
    const clientId = randomUUID();
    const clientSecret = `${SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
    const row = await this.db
      .insertInto('oauth_client')
      .values({ id: clientId, name: input.name, secret_hash: await hashSecret(clientSecret), project: input.project ?? null, role: input.role, certificate_bound: input.certificateBound ?? false })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ...clientFromRow(row), clientSecret };
  }

  async list(): Promise<OAuthClient[]> {
    return (await this.db.selectFrom('oauth_client').selectAll().orderBy('created_at').orderBy('id').execute()).map(clientFromRow);
  }

  async get(id: string): Promise<OAuthClient> {
    const row = await this.db.selectFrom('oauth_client').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw vnfmError('VNFM_ERR_API_NOT_FOUND', `OAuth client ${id} not found`);
    return clientFromRow(row);
  }

  /**
   * Deletes a client and every token it holds. The revocation generation grows in the same
   * transaction: other processes drop their cached tokens at their next check (`revocationCheckMs`).
   */
  async delete(id: string): Promise<void> {
    const deleted = await this.db.transaction().execute(async (tx) => {
      const r = await tx.deleteFrom('oauth_client').where('id', '=', id).executeTakeFirst();
      if (Number(r.numDeletedRows) === 0) return false;
      await tx.updateTable('auth_revocation').set((eb) => ({ generation: eb('generation', '+', 1) })).where('id', '=', 1).execute();
      return true;
    });
    if (!deleted) throw vnfmError('VNFM_ERR_API_NOT_FOUND', `OAuth client ${id} not found`);
    this.tokens.deleteWhere((t) => t?.clientId === id);
  }

  /** The client credentials grant. `cert`: thumbprint of the verified TLS client certificate, if any. */
  async issue(req: { clientId: string; clientSecret: string; scope: string | undefined; cert: string | undefined }): Promise<{ access_token: string; token_type: 'Bearer'; expires_in: number; scope: string }> {
    const row = await this.db.selectFrom('oauth_client').selectAll().where('id', '=', req.clientId).executeTakeFirst();
    this.dummyHash ??= hashSecret(randomBytes(16).toString('hex'));
    const ok = await secretMatches(req.clientSecret, row?.secret_hash ?? (await this.dummyHash));
    if (!row || !ok) throw new OAuthError(401, 'invalid_client', 'client authentication failed');
    if (row.certificate_bound && !req.cert) throw new OAuthError(400, 'unauthorized_client', 'this client must present its TLS client certificate');
    const clientRole = row.role as ApiRole;
    const allowed = new Map<string, ApiRole>();
    for (const r of rolesUpTo(clientRole)) allowed.set(r, r);
    for (const [scope, r] of Object.entries(this.s.scopeMap)) if (rolesUpTo(clientRole).has(r)) allowed.set(scope, r);
    const requested = req.scope === undefined || req.scope.trim() === '' ? [clientRole as string] : [...new Set(req.scope.trim().split(/ +/))];
    const unknown = requested.filter((x) => !allowed.has(x));
    if (unknown.length > 0) throw new OAuthError(400, 'invalid_scope', `scope not allowed for this client: ${unknown.join(' ')}`);
    const role = strongest(requested.map((x) => allowed.get(x) as ApiRole)) ?? clientRole;
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + this.s.tokenTtlSeconds * 1000);
    await this.db.deleteFrom('oauth_token').where('expires_at', '<', new Date()).execute();
    await this.db
      .insertInto('oauth_token')
      .values({ token_hash: credentialHash(token), client_id: row.id, role, scope: requested.join(' '), cnf_x5t: req.cert ?? null, expires_at: expiresAt })
      .execute();
    return { access_token: token, token_type: 'Bearer', expires_in: this.s.tokenTtlSeconds, scope: requested.join(' ') };
  }

  /**
   * The principal of a built-in token, or null when it is unknown or expired; throws 401 when it
   * is bound to a certificate the request does not present.
   */
  async verify(token: string, cert: string | undefined): Promise<{ principal: Principal; cnf: string | null } | null> {
    const key = credentialHash(token);
    let hit = this.tokens.get(key);
    if (hit) {
      // a cached token is trusted only while no client was deleted since it was read
      if ((await this.generationNow(false)) !== hit.generation) hit = undefined;
    }
    if (hit === undefined) {
      // read before the token: a deletion committed after this read moves the generation past it
      const generation = await this.generationNow(true);
      const row = await this.db
        .selectFrom('oauth_token as t')
        .innerJoin('oauth_client as c', 'c.id', 't.client_id')
        .select(['t.client_id', 't.role', 't.cnf_x5t', 't.expires_at', 'c.name', 'c.project'])
        .where('t.token_hash', '=', key)
        .executeTakeFirst();
      const exp = row ? new Date(row.expires_at).getTime() : 0;
      if (!row || exp <= Date.now()) {
        if (this.failures.ttlMs > 0) this.tokens.set(key, null, Date.now() + this.failures.ttlMs);
        return null;
      }
      hit = {
        clientId: row.client_id,
        cnf: row.cnf_x5t,
        generation,
        principal: { id: row.client_id, name: row.name, ...(row.project ? { project: row.project } : {}), roles: rolesUpTo(row.role as ApiRole), via: 'oauth2' },
      };
      this.tokens.set(key, hit, Math.min(exp, Date.now() + 60_000));
    }
    if (hit === null) return null;
    return { principal: hit.principal, cnf: hit.cnf };
  }

  /**
   * The revocation generation (grows whenever any process on this database deletes a client):
   * read from the database when `fresh`, else at most every `revocationCheckMs`. Cached tokens
   * read under another generation are dropped when it moves.
   */
  private async generationNow(fresh: boolean): Promise<string> {
    const now = Date.now();
    if (!fresh && this.generation !== undefined && now - this.generationReadAt < this.s.revocationCheckMs) return this.generation;
    const row = await this.db.selectFrom('auth_revocation').select('generation').where('id', '=', 1).executeTakeFirst();
    const g = String(row?.generation ?? '0');
    if (this.generation !== undefined && g !== this.generation) this.tokens.deleteWhere((t) => t !== null && t.generation !== g);
    this.generation = g;
    this.generationReadAt = now;
    return g;
  }

  /** True when an external authorization server is configured. */
  get introspects(): boolean {
    return Boolean(this.s.introspection.endpoint);
  }

  /** RFC 7662 introspection at the external server: the principal, or null when the token is not active. */
  async introspect(token: string): Promise<{ principal: Principal; cnf: string | null } | null> {
    const key = credentialHash(token);
    const hit = this.introspected.get(key);
    if (hit !== undefined) return hit;
    if (this.inactive.get(key)) return null;
    // concurrent requests with one token share one introspection
    let p = this.introspecting.get(key);
    if (!p) {
      p = this.introspectNow(token, key).finally(() => this.introspecting.delete(key));
      this.introspecting.set(key, p);
    }
    return p;
  }

  private async introspectNow(token: string, key: string): Promise<{ principal: Principal; cnf: string | null } | null> {
    const i = this.s.introspection;
    let res: Response;
    try {
      res = await fetch(i.endpoint as string, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: `Basic ${Buffer.from(`${encodeURIComponent(i.clientId ?? '')}:${encodeURIComponent(i.clientSecret ?? '')}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', 'the OAuth 2.0 authorization server does not answer; try again later');
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', `the OAuth 2.0 authorization server could not introspect the token (HTTP ${res.status})`);
    }
    const b = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    const now = Date.now();
    const exp = typeof b.exp === 'number' ? b.exp * 1000 : now + i.cacheTtlMs;
    if (b.active !== true || exp <= now) {
      if (this.failures.ttlMs > 0) this.inactive.set(key, true, now + this.failures.ttlMs);
      return null;
    }
    const scopes = typeof b.scope === 'string' ? b.scope.split(' ').filter(Boolean) : [];
    const role = strongest(scopes.map((x) => (API_ROLES.includes(x as ApiRole) ? (x as ApiRole) : this.s.scopeMap[x])).filter((r): r is ApiRole => r !== undefined));
    const project = b[i.projectClaim];
    const cnf = b.cnf && typeof b.cnf === 'object' ? (b.cnf as Record<string, unknown>)['x5t#S256'] : undefined;
    const out = {
      principal: {
        id: String(b.sub ?? b.client_id ?? 'unknown'),
        name: String(b.username ?? b.client_id ?? b.sub ?? 'unknown'),
        ...(typeof project === 'string' && project !== '' ? { project } : {}),
        roles: role ? rolesUpTo(role) : new Set<ApiRole>(),
        via: 'oauth2-introspection',
      },
      cnf: typeof cnf === 'string' ? cnf : null,
    };
    this.introspected.set(key, out, Math.min(exp, now + i.cacheTtlMs));
    return out;
  }
}

function clientFromRow(r: { id: string; name: string; role: string; project: string | null; certificate_bound: boolean; created_at: Date | string }): OAuthClient {
  return { clientId: r.id, name: r.name, role: r.role as ApiRole, ...(r.project ? { project: r.project } : {}), certificateBound: r.certificate_bound, createdAt: new Date(r.created_at).toISOString() };
}
