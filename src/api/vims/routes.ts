/**
 * Tacker's legacy VIM registry API (`/v1.0/vims`), used by `openstack vim register/list/show/
 * set/delete`. Credentials are accepted on write and always masked on read.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { VimInput } from '../../vims/vim-registry.ts';
import { vimToApi } from '../../vims/vim-registry.ts';
import type { AppContext } from '../../core/services.ts';
import { parseLimit } from '../sol/sql-list.ts';
import { ownerProject, requestScope } from '../auth/index.ts';

const Obj = Type.Record(Type.String(), Type.Unknown());
const VimBody = (required: boolean) =>
  Type.Object(
    {
      vim: Type.Object(
        {
          name: required ? Type.String({ minLength: 1, maxLength: 255 }) : Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
          type: required ? Type.String({ minLength: 1 }) : Type.Optional(Type.String({ minLength: 1 })),
          description: Type.Optional(Type.String({ maxLength: 1024 })),
          tenant_id: Type.Optional(Type.String()),
          is_default: Type.Optional(Type.Boolean()),
          auth_url: required ? Type.String({ minLength: 1, maxLength: 2048 }) : Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
          auth_cred: required ? Obj : Type.Optional(Obj),
          vim_project: Type.Optional(Obj),
          extra: Type.Optional(Obj),
        },
        { additionalProperties: true },
      ),
    },
    { additionalProperties: false },
  );
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

/**
 * python-tackerclient's legacy client appends its format to every path (`/v1.0/vims.json`,
 * `/v1.0/vims/<id>.json`), so both spellings are served.
 */
const FORMAT_SUFFIX = '.json';

function idOf(req: { params: unknown }): string {
  const id = (req.params as { id: string }).id;
  return id.endsWith(FORMAT_SUFFIX) ? id.slice(0, -FORMAT_SUFFIX.length) : id;
}

/** Attributes a list query may filter on (Tacker/Neutron style `?name=x&id=y`, repeatable = any of). */
const FILTERABLE = ['id', 'name', 'type', 'status', 'tenant_id', 'is_default', 'description', 'auth_url'];

/**
 * The legacy list query: equality filters on VIM attributes and `fields` (which attributes to
 * return, `id` always included). `openstack vim show/delete <name or id>` resolves names and ids
 * with exactly such a query (`?name=x&fields=id`, `?id=y&fields=id`). Other parameters are ignored,
 * as Tacker does.
 */
function listQuery(vims: Record<string, unknown>[], query: Record<string, string | string[] | undefined>): Record<string, unknown>[] {
  const asList = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
  let out = vims;
  for (const attr of FILTERABLE) {
    const wanted = asList(query[attr]);
    if (wanted.length === 0) continue;
    out = out.filter((v) => wanted.some((w) => String(v[attr]).toLowerCase() === w.toLowerCase() || (attr !== 'is_default' && String(v[attr]) === w)));
  }
  const fields = asList(query.fields).flatMap((f) => f.split(',')).filter((f) => f !== '');
  if (fields.length === 0) return out;
  return out.map((v) => Object.fromEntries(Object.entries(v).filter(([k]) => k === 'id' || fields.includes(k))));
}

/** Registers `/v1.0/vims`. */
export async function registerVimRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  await app.register(
    async (r) => {
      for (const collection of ['/vims', `/vims${FORMAT_SUFFIX}`]) {
        r.post(collection, { schema: { body: VimBody(true), tags: ['vims'] } }, async (req, reply) => {
          // the caller's project owns it (auth.tenancy.vims; shared: no project)
          const v = await ctx.vims.register((req.body as { vim: VimInput }).vim, ownerProject(req.principal, ctx.config.auth.tenancy.vims));
          reply.code(201);
          return { vim: vimToApi(v) };
        });
        r.get(collection, { schema: { tags: ['vims'] } }, async (req) => {
          const query = (req.query ?? {}) as Record<string, string | string[] | undefined>;
          // the uniform list `limit` rule (docs/api.md); the legacy VIM list has no paging, so
          // `limit` only caps the answer (VIMs are few; this list stays in memory)
          const limit = parseLimit(query, 0);
          const vims = listQuery((await ctx.vims.list(requestScope(req, ctx.config.auth.tenancy.vims))).map(vimToApi), query);
          return { vims: limit > 0 ? vims.slice(0, limit) : vims };
        });
      }
      r.get('/vims/:id', { schema: { params: IdParams, tags: ['vims'] } }, async (req) => ({ vim: vimToApi(await ctx.vims.get(idOf(req), requestScope(req, ctx.config.auth.tenancy.vims))) }));
      r.put('/vims/:id', { schema: { params: IdParams, body: VimBody(false), tags: ['vims'] } }, async (req) => ({
        vim: vimToApi(await ctx.vims.update(idOf(req), (req.body as { vim: VimInput }).vim)),
      }));
      r.delete('/vims/:id', { schema: { params: IdParams, tags: ['vims'] } }, async (req, reply) => {
        await ctx.vims.delete(idOf(req));
        return reply.code(204).send();
      });
    },
    { prefix: '/v1.0' },
  );
}
