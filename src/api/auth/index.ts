/**
 * API authentication and authorization (docs/security.md). {@link installAuth} adds one
 * `onRequest` hook in front of every route, run before the body is read, so a refused request
 * stores nothing:
 * 1. the route's requirement from the policy table (src/api/auth/policy.ts);
 * 2. the caller from the enabled modes (`apiAuth`): static tokens, Keystone, the built-in OAuth
 *    2.0 server or an external one (introspection), TLS client certificates. Missing, unknown,
 *    expired or forged credentials are a 401 ProblemDetails with `WWW-Authenticate`; malformed or
 *    oversized credential headers a 401 or 400;
 * 3. the role: a 403 naming the missing role;
 * 4. the tenant: a route naming another project's resource answers that resource's 404.
 * The caller is `request.principal` for the handlers (new resources take its project).
 */
import { readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type ApiAuthMode, type ApiRole, type VnfmConfig, authModes } from '../../config.ts';
import type { AppContext } from '../../core/services.ts';
import { vnfmError } from '../../errors.ts';
import { checkReceiverAuth } from '../autoheal/fault-intake-routes.ts';
import { isProbePath } from '../health.ts';
import { credentialHash } from './cache.ts';
import { FailureLimiter, clientKey } from './failure-limit.ts';
import { type Presented, oauthErrorOf, presentedCredential, unauthorized } from './credentials.ts';
import { KeystoneValidator } from './keystone.ts';
import { OAuthService, TOKEN_PREFIX, certThumbprint } from './oauth2.ts';
import { LocalPeerGate } from './peer-user.ts';
import { oauthRoutes } from './oauth2-routes.ts';
import { Policy, loadPolicyOverrides } from './policy.ts';
import { ANONYMOUS, type Principal, rolesUpTo } from './principal.ts';
import { resourceTenantCheck } from './tenant.ts';

export type { Principal } from './principal.ts';
export { ALL_PROJECTS, type ProjectScope, inScope, ownerProject, projectOf, requestScope, scopeOf, scopeWhere, seesAllProjects, tenantWhere } from './tenant.ts';

/** Every route registered on an app (method and pattern), in registration order. */
const ROUTES = new WeakMap<FastifyInstance, { method: string; url: string }[]>();

/** The verdict on a probe's credential: accepted, refused (401) or not checkable now (503). */
export type ProbeVerdict = { ok: true } | { ok: false; status: 401 | 503 };
/** Checks the credential headers of a probe (any authenticated caller passes) with the app's enabled modes. */
export type ProbeCredentialCheck = (headers: Record<string, string | undefined>) => Promise<ProbeVerdict>;
const PROBE_CHECKS = new WeakMap<FastifyInstance, ProbeCredentialCheck>();

/**
 * The credential check of an app built by buildApp, for the liveness port (`health.public` false):
 * the same modes as the API (static tokens, Keystone, OAuth 2.0 built-in or introspection), over a
 * connection without a client certificate (certificate-bound tokens and mTLS principals are refused).
 */
export function probeCredentialCheck(app: FastifyInstance): ProbeCredentialCheck | undefined {
  return PROBE_CHECKS.get(app);
}

/** The routes registered on an app built by buildApp (the route-table tests walk them all). */
export function registeredRoutes(app: FastifyInstance): readonly { method: string; url: string }[] {
  return ROUTES.get(app) ?? [];
}

/** HTTPS options of the listener when mode `mtls` is on (client certificates requested, checked per request). */
export function httpsOptions(config: VnfmConfig): { key: Buffer; cert: Buffer; ca: Buffer; requestCert: true; rejectUnauthorized: false } | undefined {
  if (!authModes(config).includes('mtls')) return undefined;
  const m = config.auth.mtls;
  const read = (setting: string, path: string | undefined): Buffer => {
    try {
      return readFileSync(path as string);
    } catch (e) {
      throw new Error(`auth.mtls.${setting} ${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  };
  return { key: read('keyFile', m.keyFile), cert: read('certFile', m.certFile), ca: read('caFile', m.caFile), requestCert: true, rejectUnauthorized: false };
}

/** A verified TLS client certificate of the request's connection. */
interface PeerCert {
  thumbprint: string;
  fingerprint256: string;
  cn: string | undefined;
}

function peerCert(req: FastifyRequest): PeerCert | undefined {
  const sock = req.raw.socket as Partial<TLSSocket> | undefined;
  if (!sock || typeof sock.getPeerCertificate !== 'function' || sock.authorized !== true) return undefined;
  const c = sock.getPeerCertificate();
  if (!c || !c.raw) return undefined;
  const cn = c.subject?.CN;
  return { thumbprint: certThumbprint(c.raw), fingerprint256: c.fingerprint256.replace(/:/g, '').toLowerCase(), cn: Array.isArray(cn) ? cn[0] : cn };
}

function isLoopbackPeer(req: FastifyRequest): boolean {
  const a = req.socket?.remoteAddress ?? '';
  return a === '::1' || a.startsWith('127.') || a.startsWith('::ffff:127.');
}

/**
 * Builds the auth services of an app and installs its hook and routes (call before any other
 * route). Call `verify` once every route is registered: it refuses a policy file naming a route
 * that does not exist.
 */
export async function installAuth(app: FastifyInstance, ctx: AppContext): Promise<{ verify(): void }> {
  const config = ctx.config;
  const modes = new Set<ApiAuthMode>(authModes(config));
  const routes: { method: string; url: string }[] = [];
  ROUTES.set(app, routes);
  app.addHook('onRoute', (r) => {
    for (const m of Array.isArray(r.method) ? r.method : [r.method]) routes.push({ method: m, url: r.url });
  });

  const policy = new Policy(config.faultNotification.prefix, config.auth.policyFile ? loadPolicyOverrides(config.auth.policyFile) : new Map(), config.auth.tenancy);
  const verify = () => {
    const unknown = policy.unknownKeys(routes);
    if (unknown.length > 0) throw new Error(`auth.policyFile names routes that do not exist: ${unknown.join(', ')}`);
  };

  const staticTokens = staticTokensOf(config);
  const failureCache = { ttlMs: config.auth.failureCacheMs, maxEntries: config.auth.failureCacheMaxEntries };
  const keystone = modes.has('keystone') ? new KeystoneValidator(config.auth.keystone, failureCache) : undefined;
  const oauth = modes.has('oauth2') ? new OAuthService(ctx.store.db, config.auth.oauth2, failureCache) : undefined;
  const limiter = new FailureLimiter(config.auth.failureLimit);
  const mtlsClients = config.auth.mtls.clients.map((c) => ({ ...c, fingerprint256: c.fingerprint256?.replace(/:/g, '').toLowerCase() }));
  const tenantCheck = resourceTenantCheck(ctx.store.db, config.faultNotification.prefix, config.auth.tenancy);
  const faultPrefix = config.faultNotification.prefix;

  const checkCnf = (cnf: string | null, cert: PeerCert | undefined) => {
    if (cnf !== null && cnf !== cert?.thumbprint) throw unauthorized('the token is bound to a client certificate that this request does not present', 'invalid_token');
  };

  /**
   * The principal of a token, or null when no mode knows it. `limited`: the client is over its
   * failure limit; only what is known without an upstream round trip (static tokens, built-in
   * OAuth 2.0 tokens, cached answers) is checked, and a token that would need one is refused
   * with 429.
   */
  const tokenPrincipal = async (token: string, cert: PeerCert | undefined, limited = 0): Promise<Principal | null> => {
    if (modes.has('token')) {
      const p = staticTokens.get(credentialHash(token));
      if (p) return p;
    }
    // the built-in server's tokens are checked locally (one indexed read): never limited
    if (oauth && token.startsWith(TOKEN_PREFIX)) {
      const r = await oauth.verify(token, cert?.thumbprint);
      if (!r) return null;
      checkCnf(r.cnf, cert);
      return r.principal;
    }
    let unknown = false;
    if (keystone) {
      const p = limited ? keystone.cached(token) : await keystone.validate(token);
      if (p) return p;
      if (p === undefined) unknown = true;
    }
    if (oauth?.introspects) {
      const r = limited ? oauth.cached(token) : await oauth.introspect(token);
      if (r) {
        checkCnf(r.cnf, cert);
        return r.principal;
      }
      if (r === undefined) unknown = true;
    }
    if (unknown) throw tooManyFailures(limited);
    return null;
  };

  const authenticate = async (req: FastifyRequest, cred: Presented, limited: number): Promise<Principal> => {
    const cert = modes.has('mtls') || modes.has('oauth2') ? peerCert(req) : undefined;
    if (cred.kind === 'token') {
      const p = await tokenPrincipal(cred.token, cert, limited);
      if (!p) throw unauthorized('the token is not valid (unknown, expired, revoked or forged)', 'invalid_token');
      return p;
    }
    if (cred.kind === 'basic' || cred.kind === 'other') throw unauthorized(`the ${cred.kind === 'basic' ? 'Basic' : cred.scheme} authorization scheme is not accepted here; send a token (X-Auth-Token or Authorization: Bearer)`);
    if (modes.has('mtls') && cert) {
      const c = mtlsClients.find((x) => (x.fingerprint256 && x.fingerprint256 === cert.fingerprint256) || (x.subjectCn && x.subjectCn === cert.cn));
      if (!c) throw unauthorized('the client certificate is not registered with the VNFM');
      return { id: `cert:${cert.fingerprint256}`, name: c.name, ...(c.project ? { project: c.project } : {}), roles: rolesUpTo(c.role), via: 'mtls' };
    }
    throw unauthorized(`authentication is required (${[...modes].map(describeMode).join(', ')})`);
  };

  const challenge = (oauthError: string | undefined): string => challengeOf(modes, keystone ? config.auth.keystone.authUrl : undefined, oauthError);

  const unauthenticated = modes.has('none');
  // apiAuth none: a caller on this host is trusted only as the VNFM's own OS user, root or a listed uid
  const localPeers = unauthenticated ? new LocalPeerGate(new Set([0, ...(typeof process.getuid === 'function' ? [process.getuid()] : []), ...config.auth.trustedLocalUids])) : undefined;
  app.addHook('onRequest', async (req, reply) => {
    const url = req.routeOptions.url;
    const path = url ?? (req.url.split('?')[0] as string);
    // the fault intake: a Server Notifier's own credential (faultNotification.auth) is accepted as is
    if (path.startsWith(`${faultPrefix}/`) && config.faultNotification.auth !== 'none') {
      if (checkReceiverAuth(config.faultNotification, typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined)) {
        req.principal = { id: 'server-notifier', name: 'server-notifier', roles: rolesUpTo('operator'), via: 'fault-credential' };
        return;
      }
      if (unauthenticated) {
        reply.header('www-authenticate', config.faultNotification.auth === 'basic' ? 'Basic realm="vnfm-fault-notification"' : 'Bearer realm="vnfm-fault-notification"');
        throw vnfmError('VNFM_ERR_API_UNAUTHORIZED', 'the fault notification receiver requires valid credentials');
      }
    }
    if (unauthenticated) {
      if (localPeers && !isProbePath(path)) {
        const t = await localPeers.check(req.raw.socket);
        if (!t.trusted) throw vnfmError('VNFM_ERR_API_FORBIDDEN', `loopback callers of another OS user are not trusted with apiAuth none (${t.why}); configure an API authentication mode (apiAuth token, keystone, oauth2 or mtls)`);
      }
      req.principal = ANONYMOUS;
      return;
    }
    let need = url ? policy.requirement(req.method, url) : 'authenticated';
    if (path === '/metrics' || path === '/docs' || path.startsWith('/docs/')) {
      const rule = path === '/metrics' ? config.auth.metrics : config.auth.docs;
      if (rule === 'open' || (rule === 'loopback' && isLoopbackPeer(req))) return;
    } else if (isProbePath(path)) {
      if (config.health.public) return;
      need = 'authenticated';
    }
    if (need === 'open') return;
    let principal: Principal;
    const client = clientKey(req.ip);
    const limited = limiter.retryAfterSeconds(client);
    let cred: Presented = { kind: 'none' };
    try {
      cred = presentedCredential(req.headers, config.auth.maxCredentialBytes, req.raw.rawHeaders);
      principal = await authenticate(req, cred, limited);
    } catch (e) {
      const status = (e as { httpStatus?: number }).httpStatus;
      if (status === 401) {
        reply.header('www-authenticate', challenge(oauthErrorOf(e)));
        // a presented credential that failed (not a missing one) counts against the client's address
        if (cred.kind !== 'none' || req.headers.authorization !== undefined || req.headers['x-auth-token'] !== undefined) limiter.fail(client);
      } else if (status === 429) reply.header('retry-after', String(limited));
      throw e;
    }
    req.principal = principal;
    if (need !== 'authenticated' && !principal.roles.has(need)) {
      const has = ['admin', 'operator', 'reader'].find((r) => principal.roles.has(r as ApiRole));
      throw vnfmError('VNFM_ERR_API_FORBIDDEN', `role ${need} is required for ${req.method} ${url}; ${principal.name} has ${has ? `role ${has}` : 'no VNFM role'}`);
    }
    await tenantCheck(req);
  });

  PROBE_CHECKS.set(app, probeCheckOf(config.auth.maxCredentialBytes, (token) => tokenPrincipal(token, undefined)));

  if (oauth) await oauthRoutes(app, oauth, ctx);
  return { verify };
}

/** The principals of the static API tokens (`apiTokens`), keyed by the token's hash. */
function staticTokensOf(config: VnfmConfig): Map<string, Principal> {
  const staticTokens = new Map<string, Principal>();
  config.apiTokens.forEach((t, i) => {
    const e = typeof t === 'string' ? { token: t } : t;
    const name = e.name ?? `token-${i + 1}`;
    staticTokens.set(credentialHash(e.token), { id: name, name, ...(e.project ? { project: e.project } : {}), roles: rolesUpTo((e.role ?? 'admin') as ApiRole), via: 'token' });
  });
  return staticTokens;
}

/** The `WWW-Authenticate` value of a 401: one challenge per enabled mode that takes a token. */
function challengeOf(modes: ReadonlySet<ApiAuthMode>, keystoneAuthUrl: string | undefined, oauthError: string | undefined): string {
  const out: string[] = [];
  if (modes.has('token') || modes.has('oauth2') || modes.has('mtls')) out.push(`Bearer realm="vnfm"${oauthError ? `, error="${oauthError}"` : ''}`);
  if (keystoneAuthUrl !== undefined) out.push(`Keystone uri="${keystoneAuthUrl}"`);
  return out.join(', ');
}

/** The check of a probe's credential headers against the token modes. */
function probeCheckOf(maxCredentialBytes: number, tokenPrincipal: (token: string) => Promise<Principal | null>): ProbeCredentialCheck {
  return async (headers) => {
    try {
      const cred = presentedCredential({ 'x-auth-token': headers['x-auth-token'], authorization: headers.authorization }, maxCredentialBytes);
      if (cred.kind !== 'token') return { ok: false, status: 401 };
      return (await tokenPrincipal(cred.token)) ? { ok: true } : { ok: false, status: 401 };
    } catch (e) {
      return { ok: false, status: (e as { httpStatus?: number }).httpStatus === 503 ? 503 : 401 };
    }
  };
}

/** The 429 of a client over `auth.failureLimit`. */
function tooManyFailures(retryAfterSeconds: number): Error {
  return vnfmError('VNFM_ERR_API_TOO_MANY_FAILURES', `too many failed authentications from this client address (auth.failureLimit); retry after ${retryAfterSeconds} s`);
}

function describeMode(m: ApiAuthMode): string {
  switch (m) {
    case 'token':
      return 'an API token';
    case 'keystone':
      return 'a Keystone token in X-Auth-Token';
    case 'oauth2':
      return 'an OAuth 2.0 bearer token from POST /token';
    case 'mtls':
      return 'a registered TLS client certificate';
    default:
      return m;
  }
}
