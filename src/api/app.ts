/**
 * Builds the Fastify app: strict body validation (unknown enum values and wrong types are 400,
 * never silently coerced), ProblemDetails for every error, SOL `Version` header handling, auth,
 * metrics and OpenAPI docs. Every route of the VNFM is registered here or by the route modules
 * it calls, from the services on the context (a module that is not wired has no routes). Route
 * modules stay thin and call services.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { isUtf8 } from 'node:buffer';
import Fastify, { type FastifyBaseLogger, type FastifyBodyParser, type FastifyInstance, type FastifyRequest, LogController } from 'fastify';
import { vnfmError } from '../errors.ts';
import type { AppContext } from '../core/services.ts';
import { auditLogger } from '../logger.ts';
import { httpsOptions, installAuth } from './auth/index.ts';
import { installConcurrencyCap } from './concurrency-cap.ts';
import { LIVENESS_PATH, READINESS_PATH, installLivenessShortCircuit, readinessChecker } from './health.ts';
import { catalogProblem, errorHandler, sendProblem } from './problem.ts';
import { faultIntakeRoutes } from './autoheal/fault-intake-routes.ts';
import { ledgerRoutes } from './autoheal/ledger-routes.ts';
import { healthRoutes } from './health/health-routes.ts';
import { registerVimRoutes } from './vims/routes.ts';
import { registerServerNotifierRoutes } from './vims/server-notifier-routes.ts';
import { registerVnflcmRoutes } from './vnflcm/routes.ts';
import { registerOutboxRoutes } from './vnflcm/subscription-routes.ts';
import { registerVnfpkgmRoutes } from './vnfpkgm/routes.ts';
import { registerEventRoutes } from './events.ts';
import { registerUiRoutes } from './ui.ts';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route has no request body: an empty body is accepted even with `Content-Type: application/json` (task resources). */
    emptyBody?: boolean;
  }
}

/** Charsets accepted on JSON bodies (RFC 8259: JSON exchanged between systems is UTF-8). */
const UTF8_NAMES = new Set(['utf-8', 'utf8']);

/** The `charset` parameter of a Content-Type header, lower-cased and unquoted, if present. */
export function charsetOf(contentType: string | undefined): string | undefined {
  for (const param of (contentType ?? '').split(';').slice(1)) {
    const eq = param.indexOf('=');
    if (eq === -1) continue;
    if (param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    return param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
  }
  return undefined;
}

/**
 * A strict JSON body parser over the raw bytes: a charset other than UTF-8 is 415, bytes that are
 * not UTF-8 are 400 (never decoded to U+FFFD and stored), an empty body is `onEmpty` (undefined
 * when accepted), and the rest is Fastify's own JSON parser (prototype-poisoning checks kept).
 */
function strictJsonParser(app: FastifyInstance, onEmpty: (req: FastifyRequest) => Error | undefined): FastifyBodyParser<Buffer> {
  const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error');
  return (req, body, done) => {
    const charset = charsetOf(req.headers['content-type']);
    if (charset !== undefined && !UTF8_NAMES.has(charset)) {
      done(vnfmError('VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE', `charset "${charset}" is not supported: JSON bodies must be UTF-8 (omit charset or send charset=utf-8)`), undefined);
      return;
    }
    if (body.length === 0) {
      const err = onEmpty(req);
      done(err ?? null, undefined);
      return;
    }
    if (!isUtf8(body)) {
      done(vnfmError('VNFM_ERR_API_BAD_REQUEST', 'request body is not valid UTF-8'), undefined);
      return;
    }
    parseJson(req, body.toString('utf8'), done);
  };
}

/** True when the route declares no body schema (or the method has no body semantics). */
function takesNoBody(req: FastifyRequest): boolean {
  if (req.method === 'DELETE' || req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return true;
  return req.routeOptions.schema?.body === undefined;
}

/** Creates the app (not listening). */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const https = httpsOptions(ctx.config);
  const app = Fastify({
    ...(https ? { https } : {}),
    loggerInstance: ctx.log as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: ctx.config.maxBodyBytes,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: false } },
    return503OnClosing: true,
    // ids longer than the router's default (100) must reach the schemas and get a 400 ProblemDetails
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
    // malformed URLs (bad percent-encoding, ...) are answered before routing: still ProblemDetails
    frameworkErrors: (err, _req, reply) => {
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
      return sendProblem(reply, catalogProblem(status === 414 ? 'VNFM_ERR_API_URI_TOO_LONG' : 'VNFM_ERR_API_BAD_REQUEST', `malformed request URL: ${err.message}`));
    },
  }) as unknown as FastifyInstance;
  // GET/HEAD /healthz is answered from the raw HTTP request event, before routing, hooks and body parsing
  installLivenessShortCircuit(app.server, ctx);
  // beyond api.maxInFlightRequests: 503 + Retry-After at once, before routing (probes and /metrics exempt)
  installConcurrencyCap(app.server, {
    maxInFlight: ctx.config.api?.maxInFlightRequests ?? 0,
    retryAfterSeconds: ctx.config.api?.busyRetryAfterSeconds ?? 1,
    onReject: () => ctx.metrics.httpRejectedBusy.inc(),
  });

  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    // an empty body is "no body" where the route takes none (DELETE, GET, task resources): clients
    // such as python-tackerclient send Content-Type: application/json on every request
    strictJsonParser(app, (req) => (req.routeOptions.config?.emptyBody || req.is404 || takesNoBody(req) ? undefined : vnfmError('VNFM_ERR_API_BAD_REQUEST', 'body is missing or empty'))),
  );
  // merge-patch: an empty body stays "no body" (the route's schema decides)
  app.addContentTypeParser(['application/merge-patch+json'], { parseAs: 'buffer' }, strictJsonParser(app, () => undefined));
  app.addContentTypeParser(['application/zip', 'application/octet-stream', 'application/x-zip-compressed', 'multipart/form-data'], { parseAs: 'buffer', bodyLimit: ctx.config.maxPackageBytes }, (_req, body, done) => done(null, body));

  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    const allowed = METHODS.filter((m) => m !== req.method && app.findRoute({ method: m, url: path }) !== null);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendProblem(reply, catalogProblem('VNFM_ERR_API_METHOD_NOT_ALLOWED', `method ${req.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`));
    }
    return sendProblem(reply, catalogProblem('VNFM_ERR_API_NOT_FOUND', `no resource at ${path}`));
  });

  // authentication, the role of each route and the tenant of the resource it names (src/api/auth/): before every route
  const auth = await installAuth(app, ctx);
  // Refuse what cannot be stored (U+0000, unpaired surrogates, absurd nesting) up front with a 400, instead of failing
  // inside the database or the serializer with a 500.
  app.addHook('preValidation', async (req) => {
    // a body-less task resource without a body validates as an empty object (an optional body schema, e.g. cancel's, then passes)
    if (req.body === undefined && req.routeOptions.config?.emptyBody) req.body = {};
    for (const [where, value] of [
      ['path', req.params],
      ['query', req.query],
      ['body', req.body],
    ] as const) {
      const why = unstorable(value, where);
      if (why) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', why);
    }
  });
  // How long the VNFM took to produce the answer (W3C Server-Timing: browsers' developer tools show
  // it; a client tells the VNFM's time from the network's and its own)
  app.addHook('onSend', (_req, reply, payload, done) => {
    reply.header('server-timing', `app;dur=${reply.elapsedTime.toFixed(2)}`);
    done(null, payload);
  });
  // Audit log: one line per mutating call (who, project, action, target, status, op occ id).
  const audit = auditLogger(ctx.log);
  app.addHook('onResponse', async (req, reply) => {
    if (MUTATING.has(req.method)) audit.record(auditOf(req, reply.statusCode, reply.getHeader('location')));
  });
  app.addHook('onResponse', async (req, reply) => {
    ctx.metrics.httpRequests.inc({ method: req.method, route: req.routeOptions.url ?? 'unknown', status: `${Math.floor(reply.statusCode / 100)}xx` });
    req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  await app.register(swagger, {
    openapi: {
      info: { title: 'VNF Manager API', description: 'ETSI NFV-SOL002/SOL003 VNF LCM (v1 and v2), VNF packages, VIMs, fault intake', version: '0.1.0' },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type(ctx.metrics.registry.contentType);
    return ctx.metrics.registry.metrics();
  });
  // Liveness: over a listening server the short-circuit above answers first; this route serves app.inject.
  app.get(LIVENESS_PATH, { schema: { hide: true } }, (_req, reply) => {
    reply.header('cache-control', 'no-store').send({ status: 'ok' });
  });
  const readiness = readinessChecker(ctx);
  app.get(READINESS_PATH, { schema: { hide: true } }, async (_req, reply) => {
    const r = await readiness();
    return reply
      .code(r.status === 'ok' ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(r);
  });

  await registerVnfpkgmRoutes(app, ctx);
  await registerVimRoutes(app, ctx);
  await registerServerNotifierRoutes(app, ctx);
  await registerVnflcmRoutes(app, ctx, 'v1');
  await registerVnflcmRoutes(app, ctx, 'v2');
  if (ctx.notifications) await registerOutboxRoutes(app, ctx, ctx.notifications.worker);
  if (ctx.autoheal) {
    const { ledger, batcher, intake } = ctx.autoheal;
    await faultIntakeRoutes({ ctx, ledger, batcher, workerId: ctx.config.runner.workerId, queue: intake })(app);
    await ledgerRoutes(ctx, ledger, batcher)(app);
  }
  if (ctx.health) await healthRoutes(ctx, ctx.health)(app);
  // the operator dashboard (/ui) and its live feed of LCM events
  await registerEventRoutes(app, ctx);
  await registerUiRoutes(app, ctx);
  for (const r of ctx.extraRoutes ?? []) await r(app);
  auth.verify();
  return app;
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const OP_OCC_IN_PATH = /\/vnf_lcm_op_occs\/([^/?#]+)/;

/**
 * The audit record of an API call: the principal (set by the authentication hook, when there is
 * one; read structurally), the route pattern (never the query or the body), the path ids, the
 * status, and the op occ the call created (its `Location`) or addressed.
 */
function auditOf(req: FastifyRequest, status: number, location: unknown): import('../logger.ts').AuditRecord {
  const principal = (req as { principal?: { name?: string; project?: string } }).principal;
  const route = req.routeOptions.url ?? (req.url.split('?')[0] as string);
  const params = req.params && typeof req.params === 'object' ? Object.values(req.params as Record<string, unknown>).filter((v): v is string => typeof v === 'string') : [];
  const opOcc = (typeof location === 'string' ? OP_OCC_IN_PATH.exec(location)?.[1] : undefined) ?? OP_OCC_IN_PATH.exec(req.url)?.[1];
  const created = typeof location === 'string' ? location.split('?')[0]?.split('/').pop() : undefined;
  const target = params.length ? params.join('/') : created;
  return {
    who: principal?.name ?? 'anonymous',
    ...(principal?.project ? { project: principal.project } : {}),
    action: `${req.method} ${route}`,
    ...(target ? { target: target.slice(0, 300) } : {}),
    result: status,
    ...(opOcc ? { opOccId: decodeURIComponent(opOcc).slice(0, 100) } : {}),
    requestId: req.id,
  };
}

/** Deepest nesting accepted in a request body: far above any SOL structure, far below what JSON.stringify and PostgreSQL can handle. */
const MAX_JSON_DEPTH = 100;
/** A UTF-16 surrogate without its partner: JSON can carry it as an escape, PostgreSQL jsonb cannot store it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why a parsed request part cannot be stored, if it cannot: a string (value or attribute name)
 * holding U+0000 or an unpaired surrogate, which PostgreSQL text and jsonb reject, or nesting deeper than
 * {@link MAX_JSON_DEPTH}, which would overflow the stack when serialised again.
 */
function unstorable(root: unknown, rootPath: string): string | undefined {
  // iterative, so a deeply nested body cannot exhaust the stack here either
  const stack: [unknown, string, number][] = [[root, rootPath, 0]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop() as [unknown, string, number];
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return `${path} contains a NUL character (U+0000), which is not accepted`;
      if (LONE_SURROGATE.test(v)) return `${path} contains an unpaired UTF-16 surrogate (not a Unicode character), which is not accepted`;
      continue;
    }
    if (v === null || typeof v !== 'object' || Buffer.isBuffer(v)) continue;
    if (depth >= MAX_JSON_DEPTH) return `${rootPath} is nested more than ${MAX_JSON_DEPTH} levels deep`;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${path}[${i}]`, depth + 1]);
      continue;
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k.includes('\u0000') || LONE_SURROGATE.test(k)) return `${path} has an attribute name with a NUL character or an unpaired surrogate, which is not accepted`;
      stack.push([x, `${path}.${k}`, depth + 1]);
    }
  }
  return undefined;
}
