/**
 * Routes of the built-in OAuth 2.0 server:
 * - `POST /token` (RFC 6749 section 4.4, SOL013): form body `grant_type=client_credentials`
 *   [`&scope=...`], client authentication `client_secret_basic` (Authorization: Basic) or
 *   `client_secret_post` (`client_id`, `client_secret` in the body). Answers
 *   `{access_token, token_type: "Bearer", expires_in, scope}` or an RFC 6749 error object.
 * - `/vnfm/v1/oauth2/clients` (admin): `POST` registers a client `{name, role, project?,
 *   certificateBound?}` and answers its `clientSecret` once; `GET` lists, `GET /:id` shows,
 *   `DELETE /:id` removes a client and its tokens.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TLSSocket } from 'node:tls';
import { Type } from 'typebox';
import type { AppContext } from '../../core/services.ts';
import { type OAuthService, OAuthError, certThumbprint } from './oauth2.ts';
import { OAUTH_CLIENTS_PATH, TOKEN_PATH } from './policy.ts';

const ClientBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    role: Type.Union([Type.Literal('reader'), Type.Literal('operator'), Type.Literal('admin')]),
    project: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    certificateBound: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

function sendOAuthError(reply: FastifyReply, e: OAuthError): FastifyReply {
  if (e.status === 401) reply.header('www-authenticate', 'Basic realm="vnfm-token"');
  return reply.code(e.status).header('cache-control', 'no-store').header('pragma', 'no-cache').type('application/json').send({ error: e.error, error_description: e.description });
}

function verifiedCertThumbprint(req: FastifyRequest): string | undefined {
  const sock = req.raw.socket as Partial<TLSSocket> | undefined;
  if (!sock || typeof sock.getPeerCertificate !== 'function' || sock.authorized !== true) return undefined;
  const c = sock.getPeerCertificate();
  return c?.raw ? certThumbprint(c.raw) : undefined;
}

/** Registers `/token` and the client management API. */
export async function oauthRoutes(app: FastifyInstance, oauth: OAuthService, ctx: AppContext): Promise<void> {
  await app.register(async (r) => {
    r.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16_384 }, (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    r.post(TOKEN_PATH, { schema: { hide: false, tags: ['oauth2'], summary: 'OAuth 2.0 client credentials token endpoint (SOL013)' } }, async (req, reply) => {
      try {
        const ct = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
        if (ct !== 'application/x-www-form-urlencoded') throw new OAuthError(400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
        const b = (req.body ?? {}) as Record<string, string>;
        if (b.grant_type !== 'client_credentials') throw new OAuthError(400, b.grant_type ? 'unsupported_grant_type' : 'invalid_request', 'grant_type must be client_credentials');
        let clientId: string | undefined;
        let clientSecret: string | undefined;
        const authz = req.headers.authorization;
        if (typeof authz === 'string' && /^basic /i.test(authz)) {
          const raw = authz.slice(6).trim();
          const decoded = /^[A-Za-z0-9+/]+={0,2}$/.test(raw) && raw.length <= 4096 ? Buffer.from(raw, 'base64').toString('utf8') : '';
          const colon = decoded.indexOf(':');
          if (colon < 0) throw new OAuthError(401, 'invalid_client', 'malformed Basic client credentials');
          try {
            clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
            clientSecret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
          } catch {
            throw new OAuthError(401, 'invalid_client', 'malformed Basic client credentials');
          }
          if (b.client_secret !== undefined) throw new OAuthError(400, 'invalid_request', 'use one client authentication method, not both');
        } else {
          clientId = b.client_id;
          clientSecret = b.client_secret;
        }
        if (!clientId || !clientSecret || clientId.length > 255 || clientSecret.length > 1024) throw new OAuthError(401, 'invalid_client', 'client authentication is required (client_secret_basic or client_secret_post)');
        const t = await oauth.issue({ clientId, clientSecret, scope: typeof b.scope === 'string' ? b.scope : undefined, cert: verifiedCertThumbprint(req) });
        req.log.info({ clientId, scope: t.scope }, 'OAuth 2.0 token issued');
        return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(t);
      } catch (e) {
        if (e instanceof OAuthError) return sendOAuthError(reply, e);
        throw e;
      }
    });
  });

  const tags = ['oauth2'];
  app.post(OAUTH_CLIENTS_PATH, { schema: { body: ClientBody, tags, summary: 'Register an OAuth 2.0 client (its secret is shown once)' } }, async (req, reply) => {
    const b = req.body as { name: string; role: 'reader' | 'operator' | 'admin'; project?: string; certificateBound?: boolean };
    const c = await oauth.register(b);
    req.log.info({ clientId: c.clientId, name: c.name, role: c.role, project: c.project, by: req.principal?.name }, 'OAuth 2.0 client registered');
    reply.code(201).header('location', `${ctx.config.publicUrl}${OAUTH_CLIENTS_PATH}/${c.clientId}`).header('cache-control', 'no-store');
    return { ...c, tokenEndpoint: `${ctx.config.publicUrl}${TOKEN_PATH}` };
  });
  app.get(OAUTH_CLIENTS_PATH, { schema: { tags, summary: 'OAuth 2.0 clients' } }, async () => oauth.list());
  app.get(`${OAUTH_CLIENTS_PATH}/:id`, { schema: { params: IdParams, tags } }, async (req) => oauth.get((req.params as { id: string }).id));
  app.delete(`${OAUTH_CLIENTS_PATH}/:id`, { schema: { params: IdParams, tags } }, async (req, reply) => {
    const id = (req.params as { id: string }).id;
    await oauth.delete(id);
    req.log.info({ clientId: id, by: req.principal?.name }, 'OAuth 2.0 client deleted');
    return reply.code(204).send();
  });
}
