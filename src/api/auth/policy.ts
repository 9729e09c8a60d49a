/**
 * Authorization: one table from route to the minimum role it needs, overridable per route by a
 * policy file. The defaults (docs/security.md):
 * - reads (GET/HEAD): reader; OAuth client management: admin even to read;
 * - LCM mutations (instances, operations, op occ tasks, subscriptions, auto-heal releases,
 *   notification redelivery) and the fault intake: operator;
 * - VIMs, VNF packages: operator to write when they belong to projects (`auth.tenancy.*`
 *   `project`, the default: a project manages its own), admin when they are `shared`; OAuth clients and Server Notifier registrations: admin, reads too;
 * - `POST /token`: open (the client authenticates itself there); the dashboard's static files
 *   (`/ui`), its login configuration and its Keystone login forwarder: open (src/api/ui.ts); `/metrics`, `/docs` and the
 *   probes follow their own settings (auth.metrics, auth.docs, health.public).
 * A route the table does not know needs an authenticated caller (so an unknown path answers 401
 * before it answers 404).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { type ApiRole, API_ROLES } from '../../config.ts';

/** What a route needs: a role, any authenticated caller, or nothing. */
export type Requirement = ApiRole | 'authenticated' | 'open';
const REQUIREMENTS: readonly Requirement[] = [...API_ROLES, 'authenticated', 'open'];

/** Routes of the built-in OAuth 2.0 server. */
export const TOKEN_PATH = '/token';
export const OAUTH_CLIENTS_PATH = '/vnfm/v1/oauth2/clients';
/** Server Notifier registrations (they decide where VIM tokens may be sent): admin only, reads too. */
export const SERVER_NOTIFIERS_PATH = '/vnfm/v1/server-notifiers';

/** The default requirement of a route (`url`: the route pattern, e.g. `/vnflcm/v2/vnf_instances/:id`). */
export function defaultRequirement(method: string, url: string, faultPrefix: string, tenancy: { packages: 'project' | 'shared'; vims: 'project' | 'shared' } = { packages: 'project', vims: 'project' }): Requirement {
  if (url === TOKEN_PATH) return 'open';
  if (url === '/ui' || url.startsWith('/ui/') || url === '/vnfm/v1/ui/config' || url === '/vnfm/v1/ui/keystone-tokens') return 'open';
  if (url.startsWith(OAUTH_CLIENTS_PATH) || url.startsWith(SERVER_NOTIFIERS_PATH)) return 'admin';
  const read = method === 'GET' || method === 'HEAD';
  if (read) return 'reader';
  if (url.startsWith('/v1.0/vims')) return tenancy.vims === 'project' ? 'operator' : 'admin';
  if (url.startsWith('/vnfpkgm/')) return tenancy.packages === 'project' ? 'operator' : 'admin';
  if (url === faultPrefix || url.startsWith(`${faultPrefix}/`)) return 'operator';
  return 'operator';
}

/** The policy: defaults plus overrides (`"METHOD /route/pattern": requirement`). */
export class Policy {
  constructor(
    private readonly faultPrefix: string,
    readonly overrides: ReadonlyMap<string, Requirement> = new Map(),
    private readonly tenancy: { packages: 'project' | 'shared'; vims: 'project' | 'shared' } = { packages: 'project', vims: 'project' },
  ) {}

  requirement(method: string, url: string): Requirement {
    return this.overrides.get(`${method} ${url}`) ?? defaultRequirement(method, url, this.faultPrefix, this.tenancy);
  }

  /** Override keys that name no registered route (a typo would silently leave the default). */
  unknownKeys(routes: readonly { method: string; url: string }[]): string[] {
    const known = new Set(routes.map((r) => `${r.method} ${r.url}`));
    return [...this.overrides.keys()].filter((k) => !known.has(k));
  }
}

/** Reads a policy file (JSON or YAML map of `"METHOD /route": role | authenticated | open`). */
export function loadPolicyOverrides(path: string): Map<string, Requirement> {
  let raw: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    raw = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new Error(`auth.policyFile ${path}: ${(e as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`auth.policyFile ${path}: must be a map of "METHOD /route" to a role`);
  const out = new Map<string, Requirement>();
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const m = /^(GET|HEAD|POST|PUT|PATCH|DELETE) (\/\S*)$/.exec(k.trim());
    if (!m) throw new Error(`auth.policyFile ${path}: key "${k}" must be "METHOD /route/pattern" (e.g. "POST /vnflcm/v2/vnf_instances/:id/heal")`);
    if (typeof v !== 'string' || !REQUIREMENTS.includes(v as Requirement)) throw new Error(`auth.policyFile ${path}: "${k}" must be one of ${REQUIREMENTS.join(', ')}`);
    out.set(`${m[1]} ${m[2]}`, v as Requirement);
  }
  return out;
}
