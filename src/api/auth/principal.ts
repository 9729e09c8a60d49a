/**
 * Who made a request: the principal every authenticated request carries (`request.principal`),
 * whichever mode authenticated it, and the role arithmetic the policy uses.
 */
import type { ApiRole } from '../../config.ts';

export type { ApiRole } from '../../config.ts';

/** The caller of a request. */
export interface Principal {
  /** Stable id in its source (Keystone user id, OAuth client id, token name, certificate fingerprint). */
  id: string;
  name: string;
  /** Project (tenant); undefined: the resources without a project (admins see every project). */
  project?: string;
  /** Roles, each implied weaker role included (an operator is also a reader). */
  roles: ReadonlySet<ApiRole>;
  /** How it was authenticated: 'none' | 'token' | 'keystone' | 'oauth2' | 'oauth2-introspection' | 'mtls' | 'fault-credential'. */
  via: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller (set by the auth hook before routing handlers run). */
    principal?: Principal;
  }
}

const RANK: Record<ApiRole, number> = { reader: 1, operator: 2, admin: 3 };

/** The role and every weaker one. */
export function rolesUpTo(role: ApiRole): ReadonlySet<ApiRole> {
  return new Set((['reader', 'operator', 'admin'] as const).filter((r) => RANK[r] <= RANK[role]));
}

/** The strongest of some roles (undefined for none). */
export function strongest(roles: Iterable<ApiRole>): ApiRole | undefined {
  let best: ApiRole | undefined;
  for (const r of roles) if (best === undefined || RANK[r] > RANK[best]) best = r;
  return best;
}

/** True when the principal holds `role` (or a stronger one). */
export function hasRole(p: Principal, role: ApiRole): boolean {
  return p.roles.has(role);
}

/** True when the principal sees every project. */
export function isAdmin(p: Principal | undefined): boolean {
  return p === undefined || p.roles.has('admin');
}

/** The principal of unauthenticated mode `none`: everything, every project. */
export const ANONYMOUS: Principal = Object.freeze({ id: 'anonymous', name: 'anonymous', roles: rolesUpTo('admin'), via: 'none' });
