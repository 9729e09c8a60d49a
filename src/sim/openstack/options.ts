/**
 * Options of the simulated OpenStack. One module holds every knob with its default so a test, a
 * benchmark and `main.ts` all start the same cloud unless they say otherwise.
 */

/** A Keystone user of the simulated cloud. */
export interface SimUserConfig {
  readonly name: string;
  readonly password: string;
  /** Name of the user's domain. @default 'Default' */
  readonly domain?: string;
  /** Names of the projects (in the user's domain) the user has roles on. @default ['admin'] */
  readonly projects?: readonly string[];
  /** Role names granted on those projects. @default ['admin', 'member', 'reader'] */
  readonly roles?: readonly string[];
}

/** A Keystone project of the simulated cloud. */
export interface SimProjectConfig {
  readonly name: string;
  /** @default 'Default' */
  readonly domain?: string;
  /** Fixed id; by default a stable id derived from domain and name. */
  readonly id?: string;
}

/** The logging surface the sims use; a pino logger fits, and so does `console`-like shims. */
export interface SimLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** Options of {@link startOpenStackSim}. */
export interface OpenStackSimOptions {
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /**
   * Base URL put in the catalog and in links; set it when clients reach the sim through another
   * address (a container, a proxy). @default `http://<host>:<port>`
   */
  readonly publicUrl?: string;
  /** @default [{ name: 'admin', password: 'admin-secret', domain: 'Default', projects: ['admin'] }] */
  readonly users?: readonly SimUserConfig[];
  /** Projects besides those the users name. @default [{ name: 'admin' }] */
  readonly projects?: readonly SimProjectConfig[];
  /** @default 'RegionOne' */
  readonly region?: string;
  /** Number of simulated compute hosts, named `compute-1` .. `compute-N`. @default 3 */
  readonly hosts?: number;
  /** Time each Heat stack operation stays `*_IN_PROGRESS`; 0 completes at once. @default 50 */
  readonly heatDelayMs?: number;
  /** Keystone token lifetime. @default 86400 */
  readonly tokenTtlSeconds?: number;
  /** Endpoint of the `nfv-orchestration` catalog entry (the VNFM). @default 'http://127.0.0.1:9890/' */
  readonly vnfmUrl?: string;
  /** URL that receives compute fault events (e.g. the Server Notifier sim's `/_sim/events`). */
  readonly faultWebhook?: string;
  /** Sent as `X-Sim-Admin-Secret` with events to {@link faultWebhook}. */
  readonly faultWebhookSecret?: string;
  /** Secret accepted (header `X-Sim-Admin-Secret`) on the `/_sim/...` API besides a Keystone token. @default 'sim-admin-secret' */
  readonly adminSecret?: string;
  /**
   * Directory where the cloud's state (stacks, servers, networks, volumes, tokens) is saved as
   * `openstack.json` shortly after each change and on close, and restored from at start (work in
   * progress resumes). @default no saving: the cloud starts empty and lives in memory only
   */
  readonly stateDir?: string;
  /**
   * Shared networks made at start as an operator would, each with exactly one IPv4 subnet
   * (`<name>-subnet`; gateway the CIDR's first address and pool the rest unless given). @default none
   */
  readonly networks?: readonly SimNetworkConfig[];
  readonly logger?: SimLogger;
}

/** A network the simulated cloud has from the start (see {@link OpenStackSimOptions.networks}). */
export interface SimNetworkConfig {
  readonly name: string;
  readonly cidr: string;
  readonly gatewayIp?: string;
  readonly allocationPools?: readonly { start: string; end: string }[];
}

/** {@link OpenStackSimOptions} with every default filled in. */
export interface ResolvedOpenStackSimOptions {
  readonly host: string;
  readonly port: number;
  readonly publicUrl: string | undefined;
  readonly users: readonly Required<SimUserConfig>[];
  readonly projects: readonly Required<SimProjectConfig>[];
  readonly region: string;
  readonly hosts: number;
  readonly heatDelayMs: number;
  readonly tokenTtlSeconds: number;
  readonly vnfmUrl: string;
  readonly faultWebhook: string | undefined;
  readonly faultWebhookSecret: string | undefined;
  readonly adminSecret: string;
  readonly stateDir: string | undefined;
  readonly networks: readonly SimNetworkConfig[];
  readonly logger: SimLogger;
}

/** Default password of the default `admin` user (the same as the real-heat test bed). */
export const DEFAULT_ADMIN_PASSWORD = 'admin-secret';
/** Default secret of the `/_sim` fault-injection API. */
export const DEFAULT_SIM_ADMIN_SECRET = 'sim-admin-secret';
/** Name of the default domain (id `default`), as in every Keystone. */
export const DEFAULT_DOMAIN = 'Default';

const silentLogger: SimLogger = {
  info: () => {},
  warn: () => {},
  error: () => {},
  debug: () => {},
};

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new Error(`OpenStack sim: ${name} must be >= 0 (got ${value})`);
  return value;
}

/** Validates options and fills defaults; throws on nonsense values so a misconfigured sim fails at start. */
export function resolveOpenStackSimOptions(opts: OpenStackSimOptions = {}): ResolvedOpenStackSimOptions {
  const users = (
    opts.users ?? [{ name: 'admin', password: DEFAULT_ADMIN_PASSWORD, domain: DEFAULT_DOMAIN, projects: ['admin'] }]
  ).map((u) => ({
    name: u.name,
    password: u.password,
    domain: u.domain ?? DEFAULT_DOMAIN,
    projects: [...(u.projects ?? ['admin'])],
    roles: [...(u.roles ?? ['admin', 'member', 'reader'])],
  }));
  if (users.length === 0) throw new Error('OpenStack sim: at least one user is needed');
  const projects = new Map<string, Required<SimProjectConfig>>();
  const addProject = (p: SimProjectConfig): void => {
    const domain = p.domain ?? DEFAULT_DOMAIN;
    const key = `${domain}/${p.name}`;
    if (!projects.has(key)) projects.set(key, { name: p.name, domain, id: p.id ?? '' });
  };
  for (const p of opts.projects ?? [{ name: 'admin' }]) addProject(p);
  for (const u of users) for (const p of u.projects) addProject({ name: p, domain: u.domain });
  const hosts = nonNegative('hosts', opts.hosts, 3);
  if (!Number.isInteger(hosts) || hosts < 1) throw new Error('OpenStack sim: hosts must be an integer >= 1');
  return {
    host: opts.host ?? '127.0.0.1',
    port: nonNegative('port', opts.port, 0),
    publicUrl: opts.publicUrl?.replace(/\/+$/, ''),
    users,
    projects: [...projects.values()],
    region: opts.region ?? 'RegionOne',
    hosts,
    heatDelayMs: nonNegative('heatDelayMs', opts.heatDelayMs, 50),
    tokenTtlSeconds: nonNegative('tokenTtlSeconds', opts.tokenTtlSeconds, 86400),
    vnfmUrl: opts.vnfmUrl ?? 'http://127.0.0.1:9890/',
    faultWebhook: opts.faultWebhook,
    faultWebhookSecret: opts.faultWebhookSecret,
    adminSecret: opts.adminSecret ?? DEFAULT_SIM_ADMIN_SECRET,
    stateDir: opts.stateDir,
    networks: [...(opts.networks ?? [])],
    logger: opts.logger ?? silentLogger,
  };
}
