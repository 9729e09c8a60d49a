/**
 * The operator dashboard (docs/ui.md): the built front end (`ui/dist`, `npm run build:ui`) served
 * at `/ui`, plus the two small routes its login page needs.
 *
 * - `GET /ui/...`: files of `ui/dist`; any other path under `/ui` answers `index.html` (the
 *   front end routes in the browser). Hashed assets (`/ui/assets/`) are cached for a year
 *   (immutable), `index.html` is revalidated each time (`no-cache` + ETag). A Content-Security-Policy
 *   allows only this origin (the dashboard loads nothing from elsewhere). When `ui/dist` is missing,
 *   `/ui` answers 503 ProblemDetails naming `npm run build:ui`.
 * - `GET /vnfm/v1/ui/config`: the enabled authentication modes, so the login page offers the right
 *   forms (open, like the static files: it says nothing a 401's `WWW-Authenticate` would not).
 * - `POST /vnfm/v1/ui/keystone-tokens`: user name + password (+ project) forwarded to the Keystone
 *   the VNFM validates tokens with (`auth.keystone.authUrl`); answers the token (no CORS for the
 *   browser, no password kept). Open: the caller authenticates itself there, as at `POST /token`.
 *
 * The static files are public; every API call the dashboard makes goes through the normal API
 * authentication (the token it holds in sessionStorage).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { authModes } from '../config.ts';
import type { AppContext } from '../core/services.ts';
import { vnfmError } from '../errors.ts';
import { catalogProblem, problem, sendProblem } from './problem.ts';

export const UI_PREFIX = '/ui';
export const UI_CONFIG_PATH = '/vnfm/v1/ui/config';
export const UI_KEYSTONE_PATH = '/vnfm/v1/ui/keystone-tokens';

/** Where `npm run build:ui` writes the front end (repository root `ui/dist`, from src/api or dist/api). */
export const DEFAULT_UI_DIST = fileURLToPath(new URL('../../ui/dist', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json',
  '.woff2': 'font/woff2',
};

const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

interface Cached {
  body: Buffer;
  etag: string;
  mtimeMs: number;
}

/** Registers `/ui` and the login helpers. `dir`: the built front end (default: `ui/dist` of the repository). */
export async function registerUiRoutes(app: FastifyInstance, ctx: AppContext, opts: { dir?: string } = {}): Promise<void> {
  const root = resolve(opts.dir ?? DEFAULT_UI_DIST);
  const cache = new Map<string, Cached>();

  const load = async (file: string): Promise<Cached | undefined> => {
    let st: Awaited<ReturnType<typeof stat>>;
    try {
      st = await stat(file);
    } catch {
      return undefined;
    }
    if (!st.isFile()) return undefined;
    const hit = cache.get(file);
    if (hit && hit.mtimeMs === st.mtimeMs) return hit;
    const body = await readFile(file);
    const c = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, mtimeMs: st.mtimeMs };
    cache.set(file, c);
    return c;
  };

  const send = (req: FastifyRequest, reply: FastifyReply, c: Cached, file: string, immutable: boolean) => {
    reply
      .header('content-type', TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream')
      .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('etag', c.etag)
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', CSP)
      .header('referrer-policy', 'no-referrer');
    if (req.headers['if-none-match'] === c.etag) return reply.code(304).send();
    return reply.send(c.body);
  };

  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const index = join(root, 'index.html');
    if (!existsSync(index)) {
      return sendProblem(
        reply.header('cache-control', 'no-store'),
        problem(503, 'Service Unavailable', `the dashboard is not built: run \`npm run build:ui\` (it writes ${root}), then reload`),
      );
    }
    const path = decodeURIComponent((req.url.split('?')[0] ?? '').slice(UI_PREFIX.length)).replace(/^\/+/, '');
    const file = normalize(join(root, path));
    if (path !== '' && (file === root || file.startsWith(root + sep))) {
      const c = await load(file);
      if (c) return send(req, reply, c, file, path.startsWith('assets/'));
      // a missing asset is a 404 (an old page asking for a replaced bundle), not the page itself
      if (path.startsWith('assets/') || /\.[a-z0-9]{1,6}$/i.test(path)) return sendProblem(reply, catalogProblem('VNFM_ERR_API_NOT_FOUND', `no resource at ${UI_PREFIX}/${path}`));
    }
    const c = await load(index);
    if (!c) throw vnfmError('VNFM_ERR_API_NOT_FOUND', 'index.html of the dashboard is missing');
    return send(req, reply, c, index, false);
  };

  app.get(UI_PREFIX, { schema: { hide: true } }, serve);
  app.get(`${UI_PREFIX}/*`, { schema: { hide: true } }, serve);

  app.get(UI_CONFIG_PATH, { schema: { hide: true } }, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    const modes = authModes(ctx.config);
    return { authModes: modes, keystone: modes.includes('keystone') };
  });

  const KeystoneBody = Type.Object(
    {
      username: Type.String({ minLength: 1, maxLength: 255 }),
      password: Type.String({ minLength: 1, maxLength: 4096 }),
      project: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      userDomain: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      projectDomain: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    },
    { additionalProperties: false },
  );
  app.post(UI_KEYSTONE_PATH, { schema: { body: KeystoneBody, hide: true } }, async (req, reply) => {
    const modes = authModes(ctx.config);
    const ks = ctx.config.auth.keystone;
    const authUrl = ks.authUrl;
    if (!modes.includes('keystone') || !authUrl) throw vnfmError('VNFM_ERR_API_NOT_FOUND', 'Keystone authentication is not enabled on this VNFM');
    const b = req.body as { username: string; password: string; project?: string; userDomain?: string; projectDomain?: string };
    const body = {
      auth: {
        identity: { methods: ['password'], password: { user: { name: b.username, domain: { name: b.userDomain ?? ks.userDomainName }, password: b.password } } },
        ...(b.project ? { scope: { project: { name: b.project, domain: { name: b.projectDomain ?? ks.projectDomainName } } } } : {}),
      },
    };
    let r: Response;
    try {
      r = await fetch(`${authUrl.replace(/\/+$/, '')}/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(ks.timeoutMs) });
    } catch {
      throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', 'Keystone does not answer; try again later');
    }
    const token = r.headers.get('x-subject-token');
    await r.body?.cancel().catch(() => undefined);
    if (r.status === 401) throw vnfmError('VNFM_ERR_API_UNAUTHORIZED', 'Keystone refused the user name, password or project');
    if (!r.ok || !token) throw vnfmError('VNFM_ERR_API_AUTH_UNAVAILABLE', `Keystone answered ${r.status} to the login`);
    reply.header('cache-control', 'no-store');
    return { token };
  });
}
