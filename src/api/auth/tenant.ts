/**
 * Tenant scoping. Instances, op occs, subscriptions, fault notifications, heal batches and VNFC
 * health rows (the instance's project) belong
 * to a project (column `project`; none for rows from before projects existed). A caller sees
 * the rows of its own project, an admin (and the unauthenticated mode) every row. Lists filter in
 * SQL ({@link tenantWhere}); a request naming another project's resource by id is answered with
 * that resource's own 404, word for word, so its existence is not revealed ({@link checkResourceTenant}).
 *
 * VNF packages and VIMs (`auth.tenancy.packages` / `auth.tenancy.vims`, default `project`) belong
 * to the project that created them, as in Tacker; a null project means shared: rows from before
 * projects existed, those created by callers without a project, and everything when the setting is
 * `shared`. A caller sees shared rows and its project's ({@link ProjectScope}); it changes only its
 * project's (a shared one is changed by admins and callers without a project: 403 for others);
 * another project's package or VIM is its 404, also when an instance names it (vnfdId, vimId).
 */
import type { FastifyRequest } from 'fastify';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import { type ErrorCode, vnfmError } from '../../errors.ts';
import type { Database } from '../../store/schema.ts';
import type { Principal } from './principal.ts';
import { ALL_PROJECTS, type ProjectScope, inScope } from '../../model/project-scope.ts';

export { ALL_PROJECTS, type ProjectScope, inScope, scopeWhere } from '../../model/project-scope.ts';

/** True when the principal sees every project. */
export function seesAllProjects(p: Principal | undefined): boolean {
  return p === undefined || p.roles.has('admin') || p.via === 'none' || p.via === 'fault-credential';
}

/** The project new resources of this caller belong to (undefined: none). */
export function projectOf(req: FastifyRequest): string | undefined {
  return req.principal?.project;
}

/** How packages or VIMs are owned: per project (Tacker's way, the default) or shared by all. */
export type Tenancy = 'project' | 'shared';

/** The scope of a caller over packages or VIMs under a tenancy setting. */
export function scopeOf(p: Principal | undefined, tenancy: Tenancy = 'project'): ProjectScope {
  if (tenancy === 'shared') return ALL_PROJECTS;
  return { all: seesAllProjects(p), project: p?.project ?? null };
}

/** The scope of a request's caller over packages or VIMs. */
export function requestScope(req: FastifyRequest, tenancy: Tenancy): ProjectScope {
  return scopeOf(req.principal, tenancy);
}

/** The project a new package or VIM of this caller belongs to (null: shared). */
export function ownerProject(p: Principal | undefined, tenancy: Tenancy): string | null {
  return tenancy === 'shared' ? null : (p?.project ?? null);
}

/** SQL conditions limiting a list to what the caller may see (`column`: the project column or expression). */
export function tenantWhere(req: FastifyRequest, column = 'project'): RawBuilder<boolean>[] {
  const p = req.principal;
  if (seesAllProjects(p)) return [];
  return p?.project === undefined ? [sql<boolean>`${sql.ref(column)} is null`] : [sql<boolean>`${sql.ref(column)} = ${p.project}`];
}

/** A resource addressed by a route parameter, with the 404 its own handler answers. */
interface ResourceRoute {
  match: (url: string) => boolean;
  param: string;
  project: (db: Kysely<Database>, id: string) => Promise<{ project: string | null } | undefined>;
  notFound: (id: string) => [ErrorCode, string];
  /** Packages and VIMs: a null project is shared (visible to all); changes need the owner. */
  shared?: { tenancy: Tenancy; what: string };
}

/** `/v1.0/vims/<id>.json` (python-tackerclient's legacy spelling) names VIM `<id>`. */
const vimIdOf = (id: string) => (id.endsWith('.json') ? id.slice(0, -5) : id);

function sharedRoutes(tenancy: { packages: Tenancy; vims: Tenancy }): ResourceRoute[] {
  const pkgById = async (db: Kysely<Database>, id: string) => (await sql<{ project: string | null }>`select project from vnf_package where id = ${id}`.execute(db)).rows[0];
  const pkgByVnfd = async (db: Kysely<Database>, id: string) => (await sql<{ project: string | null }>`select project from vnf_package where vnfd_id = ${id} and onboarding_state = 'ONBOARDED'`.execute(db)).rows[0];
  const vim = async (db: Kysely<Database>, id: string) => (await sql<{ project: string | null }>`select project from vim where id = ${vimIdOf(id)}`.execute(db)).rows[0];
  const out: ResourceRoute[] = [];
  if (tenancy.packages === 'project') {
    out.push(
      { match: (u) => u.startsWith('/vnfpkgm/v1/vnf_packages/:id'), param: 'id', project: pkgById, notFound: (id) => ['VNFM_ERR_PKG_NOT_FOUND', `VNF package ${id} not found`], shared: { tenancy: tenancy.packages, what: 'VNF package' } },
      { match: (u) => /^\/vnfpkgm\/v[12]\/onboarded_vnf_packages\/:id/.test(u), param: 'id', project: pkgByVnfd, notFound: (id) => ['VNFM_ERR_PKG_NOT_FOUND', `no onboarded VNF package with vnfdId ${id}`], shared: { tenancy: tenancy.packages, what: 'VNF package' } },
    );
  }
  if (tenancy.vims === 'project') {
    out.push({ match: (u) => u.startsWith('/v1.0/vims/:id'), param: 'id', project: vim, notFound: (id) => ['VNFM_ERR_VIM_NOT_FOUND', `VIM ${vimIdOf(id)} not found`], shared: { tenancy: tenancy.vims, what: 'VIM' } });
  }
  return out;
}

const projectOfRow = (table: 'vnf_instance' | 'op_occ' | 'subscription' | 'fault_notification' | 'autoheal_batch') => async (db: Kysely<Database>, id: string) =>
  (await sql<{ project: string | null }>`select project from ${sql.table(table)} where id = ${id}`.execute(db)).rows[0];

function resourceRoutes(faultPrefix: string, tenancy: { packages: Tenancy; vims: Tenancy }): ResourceRoute[] {
  const lcm = (what: string) => (url: string) => new RegExp(`^/vnflcm/v[12]/${what}/:id(/|$)`).test(url);
  return [
    { match: lcm('vnf_instances'), param: 'id', project: projectOfRow('vnf_instance'), notFound: (id) => ['VNFM_ERR_INST_NOT_FOUND', `VnfInstance ${id} not found.`] },
    { match: lcm('vnf_lcm_op_occs'), param: 'id', project: projectOfRow('op_occ'), notFound: (id) => ['VNFM_ERR_OPOCC_NOT_FOUND', `VnfLcmOpOcc ${id} not found.`] },
    { match: lcm('subscriptions'), param: 'id', project: projectOfRow('subscription'), notFound: (id) => ['VNFM_ERR_SUB_NOT_FOUND', `LccnSubscription ${id} not found.`] },
    { match: (u) => u === '/vnfm/v1/subscriptions/:id/redeliver', param: 'id', project: projectOfRow('subscription'), notFound: (id) => ['VNFM_ERR_SUB_NOT_FOUND', `subscription ${id} not found`] },
    {
      match: (u) => u.startsWith('/vnfm/v1/notifications/:id'),
      param: 'id',
      // a row whose subscription was deleted has no project any more: admins (and callers without a project) only
      project: async (db, id) => {
        if (!/^[0-9]{1,15}$/.test(id)) return undefined;
        return (await sql<{ project: string | null }>`select s.project from outbox o left join subscription s on s.id = o.subscription_id where o.id = ${Number(id)}`.execute(db)).rows[0];
      },
      notFound: (id) => ['VNFM_ERR_API_NOT_FOUND', `notification ${id} not found in the outbox`],
    },
    { match: (u) => u === '/vnfm/v1/vnf_instances/:id/health', param: 'id', project: projectOfRow('vnf_instance'), notFound: (id) => ['VNFM_ERR_INST_NOT_FOUND', `VnfInstance ${id} not found.`] },
    { match: (u) => u.startsWith('/vnfm/v1/heal_batches/:id'), param: 'id', project: projectOfRow('autoheal_batch'), notFound: (id) => ['VNFM_ERR_FAULT_NOT_FOUND', `heal batch ${id} not found`] },
    { match: (u) => u.startsWith('/vnfm/v1/fault_notifications/:id'), param: 'id', project: projectOfRow('fault_notification'), notFound: (id) => ['VNFM_ERR_FAULT_NOT_FOUND', `fault notification ${id} not found`] },
    { match: (u) => u.startsWith(`${faultPrefix}/vnf_instances/:vnfInstanceId/`), param: 'vnfInstanceId', project: projectOfRow('vnf_instance'), notFound: (id) => ['VNFM_ERR_FAULT_NOT_FOUND', `VnfInstance ${id} not found.`] },
    ...sharedRoutes(tenancy),
  ];
}

/** Builds the per-request check: throws the resource's 404 when the caller may not see the resource its route names. */
export function resourceTenantCheck(db: Kysely<Database>, faultPrefix: string, tenancy: { packages: Tenancy; vims: Tenancy } = { packages: 'project', vims: 'project' }): (req: FastifyRequest) => Promise<void> {
  const routes = resourceRoutes(faultPrefix, tenancy);
  const byUrl = new Map<string, ResourceRoute | null>();
  return async (req) => {
    const p = req.principal;
    if (seesAllProjects(p)) return;
    const url = req.routeOptions.url;
    if (!url) return;
    let r = byUrl.get(url);
    if (r === undefined) {
      r = routes.find((x) => x.match(url)) ?? null;
      byUrl.set(url, r);
    }
    if (!r) return;
    const id = (req.params as Record<string, string> | undefined)?.[r.param];
    if (typeof id !== 'string' || id.length > 255) return;
    const row = await r.project(db, id);
    if (!row) return; // unknown: the handler answers its own 404
    if (r.shared) {
      const scope = scopeOf(p, r.shared.tenancy);
      if (!inScope(scope, row.project)) {
        const [code, msg] = r.notFound(id);
        throw vnfmError(code, msg);
      }
      const read = req.method === 'GET' || req.method === 'HEAD';
      if (!read && (row.project ?? null) !== scope.project) {
        throw vnfmError('VNFM_ERR_API_FORBIDDEN', `${r.shared.what} ${r.param === 'id' ? vimIdOf(id) : id} is shared by every project: only an admin changes it`);
      }
      return;
    }
    if ((row.project ?? undefined) === p?.project) return;
    const [code, msg] = r.notFound(id);
    throw vnfmError(code, msg);
  };
}
