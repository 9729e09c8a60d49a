/**
 * Tacker's legacy VIM registry API (`/v1.0/vims`), used by `openstack vim register/list/show/
 * set/delete`. Credentials are accepted on write and always masked on read.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { VimInput } from '../../vims/vim-registry.ts';
import type { AppContext } from '../../core/services.ts';
import { sql, type RawBuilder } from 'kysely';
import type { VimRecord, VimRegistry } from '../../vims/vim-registry.ts';
import { ALL_PROJECTS, type ProjectScope, scopeWhere } from '../../model/project-scope.ts';
import { ownerProject, requestScope } from '../auth/index.ts';
import { parseSelectorQuery } from '../sol/attribute-selector.ts';
import { parseFilterQuery } from '../sol/filter.ts';
import { NEXTPAGE_MARKER_PARAMETER } from '../sol/paging.ts';
import { type ColumnAttr, type SqlListSpec, decodeCursor, linkFor, parseLimit, readPage } from '../sol/sql-list.ts';

const NO_SELECTOR = parseSelectorQuery({});

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

type LegacyQuery = Record<string, string | string[] | undefined>;

const asList = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * The legacy equality filters: `String(value)` equals the wanted value ignoring case (JavaScript
 * `toLowerCase`), or exactly (`is_default`: only ignoring case). The exact check runs in memory
 * ({@link SqlListSpec.accept}); SQL gets a superset of it.
 */
function legacyAccept(query: LegacyQuery): ((v: Record<string, unknown>) => boolean) | undefined {
  const terms = FILTERABLE.map((attr) => [attr, asList(query[attr])] as const).filter(([, w]) => w.length > 0);
  if (terms.length === 0) return undefined;
  return (v) => terms.every(([attr, wanted]) => wanted.some((w) => String(v[attr]).toLowerCase() === w.toLowerCase() || (attr !== 'is_default' && String(v[attr]) === w)));
}

/** Characters outside ASCII: PostgreSQL's lower() may differ from JavaScript's there, so such rows are read and decided in memory. */
const NON_ASCII = '[^\\x01-\\x7f]';

function legacyWhere(query: LegacyQuery, attrs: SqlListSpec['attrs']): RawBuilder<boolean>[] {
  const out: RawBuilder<boolean>[] = [];
  for (const attr of FILTERABLE) {
    const wanted = asList(query[attr]);
    if (wanted.length === 0) continue;
    const a = attrs[attr] as ColumnAttr;
    const col = a.expr ?? sql.ref(a.column);
    if (attr === 'is_default') {
      const bools = [...new Set(wanted.map((w) => w.toLowerCase()).filter((w) => w === 'true' || w === 'false'))];
      out.push(bools.length ? sql<boolean>`(${sql.join(bools.map((b) => sql<boolean>`${col} = ${b === 'true'}`), sql` or `)})` : sql<boolean>`false`);
      continue;
    }
    const text = sql<string>`${col}::text`;
    out.push(sql<boolean>`(${text} in (${sql.join(wanted)}) or lower(${text}) in (${sql.join(wanted.map((w) => w.toLowerCase()))}) or ${text} ~ ${NON_ASCII})`);
  }
  return out;
}

const VIM_COLUMNS = ['id', 'name', 'type', 'description', 'is_default', 'config', 'status', 'project', 'created_at', 'updated_at'];

/**
 * `/v1.0/vims` listed in SQL (src/api/sol/sql-list.ts), oldest first: SOL013 `filter` (plain
 * attributes and `extra/...` in SQL), the legacy equality parameters, keyset paging when `limit`
 * is given. Secrets are never read for a list.
 */
export function vimListSpec(vims: Pick<VimRegistry, 'toApi'>, query: LegacyQuery = {}, scope: ProjectScope = ALL_PROJECTS): SqlListSpec {
  const attrs: SqlListSpec['attrs'] = {
    id: { column: 'id', type: 'text' },
    name: { column: 'name', type: 'text' },
    type: { column: 'type', type: 'text' },
    description: { column: 'description', type: 'text' },
    status: { column: 'status', type: 'text' },
    is_default: { column: 'is_default', type: 'bool' },
    tenant_id: { column: 'config', expr: sql`coalesce(config->>'projectName', '')`, type: 'text' },
    auth_url: { column: 'config', expr: sql`(config->>'authUrl')`, type: 'text' },
    created_at: { column: 'created_at', type: 'time' },
    updated_at: { column: 'updated_at', type: 'time' },
  };
  const accept = legacyAccept(query);
  return {
    collection: 'v1.0/vims',
    table: 'vim',
    orderColumn: 'created_at',
    orderDir: 'asc',
    columns: VIM_COLUMNS,
    attrs,
    jsonAttrs: { extra: { expr: sql`coalesce(config->'extra', '{}'::jsonb)` } },
    // the caller's project's VIMs and the shared ones (auth.tenancy.vims)
    where: [...legacyWhere(query, attrs), ...scopeWhere(scope)],
    ...(accept ? { accept } : {}),
    toApi: (r) =>
      vims.toApi({
        id: r.id as string,
        name: r.name as string,
        type: r.type as VimRecord['type'],
        description: r.description as string,
        isDefault: r.is_default === true,
        config: r.config as VimRecord['config'],
        secret: {},
        status: r.status as string,
        project: (r.project ?? null) as string | null,
        createdAt: new Date(r.created_at as string),
        updatedAt: new Date(r.updated_at as string),
      }),
  };
}

/** Legacy `fields` (which attributes to return, `id` always included). */
function project(vims: Record<string, unknown>[], query: LegacyQuery): Record<string, unknown>[] {
  const fields = asList(query.fields).flatMap((f) => f.split(',')).filter((f) => f !== '');
  if (fields.length === 0) return vims;
  return vims.map((v) => Object.fromEntries(Object.entries(v).filter(([k]) => k === 'id' || fields.includes(k))));
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
          return { vim: ctx.vims.toApi(v) };
        });
        r.get(collection, { schema: { tags: ['vims'] } }, async (req, reply) => {
          const query = (req.query ?? {}) as LegacyQuery;
          // `filter` (SOL013), the uniform `limit` rule (docs/api.md): without `limit` every VIM
          // (the Tacker clients do not follow Link headers); with it, one page and a Link to the next
          const spec = vimListSpec(ctx.vims, query, requestScope(req, ctx.config.auth.tenancy.vims));
          const filter = parseFilterQuery(query);
          const pageSize = parseLimit(query, 0);
          const marker = query[NEXTPAGE_MARKER_PARAMETER];
          const after = marker === undefined ? undefined : decodeCursor(spec.collection, marker);
          const page = await readPage(ctx.store.db, spec, { filter, selector: NO_SELECTOR, pageSize, after }, []);
          if (page.nextMarker) reply.header('link', linkFor(`${ctx.config.publicUrl}/v1.0${collection}`, query, page.nextMarker));
          return { vims: project(page.items, query) };
        });
      }
      r.get('/vims/:id', { schema: { params: IdParams, tags: ['vims'] } }, async (req) => ({ vim: ctx.vims.toApi(await ctx.vims.get(idOf(req), requestScope(req, ctx.config.auth.tenancy.vims))) }));
      r.put('/vims/:id', { schema: { params: IdParams, body: VimBody(false), tags: ['vims'] } }, async (req) => ({
        vim: ctx.vims.toApi(await ctx.vims.update(idOf(req), (req.body as { vim: VimInput }).vim)),
      }));
      r.delete('/vims/:id', { schema: { params: IdParams, tags: ['vims'] } }, async (req, reply) => {
        await ctx.vims.delete(idOf(req));
        return reply.code(204).send();
      });
    },
    { prefix: '/v1.0' },
  );
}
