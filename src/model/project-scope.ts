/**
 * Which VNF packages and VIMs a caller may see and use (docs/security.md, "Tenants"): every row
 * (`all`: admins, the VNFM's own work, tenancy `shared`), else the shared rows (project null) and
 * those of the caller's project. The API builds a scope from the request's principal
 * (src/api/auth/tenant.ts); services below the API take it as a plain value.
 */
import { type RawBuilder, sql } from 'kysely';

export interface ProjectScope {
  all: boolean;
  /** The caller's project (new packages and VIMs take it); null: none. */
  project: string | null;
}

/** Every project. */
export const ALL_PROJECTS: ProjectScope = Object.freeze({ all: true, project: null });

/** True when a package or VIM of `rowProject` (null: shared) is visible in `scope`. */
export function inScope(scope: ProjectScope, rowProject: string | null | undefined): boolean {
  return scope.all || rowProject === null || rowProject === undefined || rowProject === scope.project;
}

/** SQL conditions limiting packages or VIMs to a scope (shared rows and the scope's project). */
export function scopeWhere(scope: ProjectScope, column = 'project'): RawBuilder<boolean>[] {
  if (scope.all) return [];
  return scope.project === null ? [sql<boolean>`${sql.ref(column)} is null`] : [sql<boolean>`(${sql.ref(column)} is null or ${sql.ref(column)} = ${scope.project})`];
}
