/**
 * Simulated Keystone v3 (password and token auth, project scope, token validation, catalog).
 * The VNFM authenticates exactly as against a real cloud (Tacker's `vimConnectionInfo` style:
 * user + domain, project + domain), so the sim answers with the real document shapes.
 */
import { randomBytes } from 'node:crypto';
import { header, SimHttpError, type SimRequest, type SimResponse } from './http-kit.ts';
import { isoMicros, stableHexId } from './ids.ts';
import { DEFAULT_DOMAIN, type ResolvedOpenStackSimOptions } from './options.ts';

interface Domain {
  readonly id: string;
  readonly name: string;
}

interface Project {
  readonly id: string;
  readonly name: string;
  readonly domain: Domain;
}

interface User {
  readonly id: string;
  readonly name: string;
  readonly password: string;
  readonly domain: Domain;
  /** project id -> role names */
  readonly grants: Map<string, readonly string[]>;
}

/** What a valid token stands for; other simulated services use it for authorization. */
export interface TokenInfo {
  readonly userId: string;
  readonly userName: string;
  readonly domain: Domain;
  readonly project: Project | undefined;
  readonly roles: readonly string[];
  readonly methods: readonly string[];
  readonly issuedAt: number;
  readonly expiresAt: number;
  readonly auditId: string;
}

function unauthorized(message = 'The request you have made requires authentication.'): SimHttpError {
  return new SimHttpError(401, { error: { code: 401, title: 'Unauthorized', message } }, message);
}

function badRequest(message: string): SimHttpError {
  return new SimHttpError(400, { error: { code: 400, title: 'Bad Request', message } }, message);
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** Saved state of the simulated Keystone: the tokens still valid (users and projects come from the options). */
export interface KeystoneSnapshot {
  tokens: [string, TokenInfo][];
}

/** Catalog and links need the sim's public base URL and the (changeable) VNFM URL. */
export interface KeystoneEnv {
  baseUrl(): string;
  vnfmUrl(): string;
}

/**
 * Keystone state (domains, projects, users, tokens) and its HTTP API under `/v3`.
 * Tokens live in memory; an expired or revoked token is rejected everywhere.
 */
export class KeystoneService {
  private readonly domains = new Map<string, Domain>();
  private readonly projects = new Map<string, Project>();
  private readonly users: User[] = [];
  private readonly tokens = new Map<string, TokenInfo>();
  private readonly roleIds = new Map<string, string>();
  private tokenTtlMs: number;

  constructor(
    private readonly opts: ResolvedOpenStackSimOptions,
    private readonly env: KeystoneEnv,
  ) {
    this.tokenTtlMs = opts.tokenTtlSeconds * 1000;
    for (const p of opts.projects) {
      const domain = this.domain(p.domain);
      const id = p.id !== '' ? p.id : stableHexId(`project:${domain.id}:${p.name}`);
      this.projects.set(id, { id, name: p.name, domain });
    }
    for (const u of opts.users) {
      const domain = this.domain(u.domain);
      const grants = new Map<string, readonly string[]>();
      for (const pname of u.projects) {
        const project = this.findProjectByName(pname, domain.id);
        if (project) grants.set(project.id, u.roles);
      }
      this.users.push({
        id: stableHexId(`user:${domain.id}:${u.name}`),
        name: u.name,
        password: u.password,
        domain,
        grants,
      });
    }
  }

  private domain(name: string): Domain {
    let d = [...this.domains.values()].find((x) => x.name === name);
    if (!d) {
      d = { id: name === DEFAULT_DOMAIN ? 'default' : stableHexId(`domain:${name}`), name };
      this.domains.set(d.id, d);
    }
    return d;
  }

  private findProjectByName(name: string, domainId: string): Project | undefined {
    return [...this.projects.values()].find((p) => p.name === name && p.domain.id === domainId);
  }

  private roleId(name: string): string {
    let id = this.roleIds.get(name);
    if (!id) {
      id = stableHexId(`role:${name}`);
      this.roleIds.set(name, id);
    }
    return id;
  }

  /** The state to save (JSON-serialisable; restored by {@link restore}). */
  snapshot(): KeystoneSnapshot {
    const now = Date.now();
    return { tokens: [...this.tokens].filter(([, t]) => t.expiresAt > now) };
  }

  /**
   * Takes the saved tokens back, so clients holding one need not log in again; a token whose
   * user, domain or project the options no longer define is dropped.
   */
  restore(s: KeystoneSnapshot): void {
    const now = Date.now();
    for (const [token, t] of s.tokens) {
      if (t.expiresAt <= now) continue;
      const domain = this.domains.get(t.domain.id);
      const project = t.project ? this.projects.get(t.project.id) : undefined;
      if (!domain || (t.project && !project) || !this.users.some((u) => u.id === t.userId)) continue;
      this.tokens.set(token, { ...t, domain, project });
    }
  }

  /** Changes the lifetime of tokens issued from now on (fault injection / tests of expiry). */
  setTokenTtlSeconds(seconds: number): void {
    this.tokenTtlMs = Math.max(0, seconds) * 1000;
  }

  /** Project ids by name, for state dumps and the sim's credentials. */
  projectIdByName(name: string, domainName = DEFAULT_DOMAIN): string | undefined {
    const d = [...this.domains.values()].find((x) => x.name === domainName);
    return d ? this.findProjectByName(name, d.id)?.id : undefined;
  }

  /** Returns what a token stands for, or `undefined` when it is unknown or expired. */
  validate(token: string | undefined): TokenInfo | undefined {
    if (!token) return undefined;
    const info = this.tokens.get(token);
    if (!info) return undefined;
    if (info.expiresAt <= Date.now()) {
      this.tokens.delete(token);
      return undefined;
    }
    return info;
  }

  /** Issues a token directly (used by the sim's own tooling, never exposed). */
  issue(userName: string, projectName: string, domainName = DEFAULT_DOMAIN): string {
    const user = this.users.find((u) => u.name === userName && u.domain.name === domainName);
    const project = this.projectIdByName(projectName, domainName);
    if (!user || !project) throw new Error('unknown user or project');
    return this.mint(user, this.projects.get(project), ['password']).token;
  }

  private mint(user: User, project: Project | undefined, methods: readonly string[]): { token: string; info: TokenInfo } {
    const now = Date.now();
    const token = `gAAAAA${randomBytes(96).toString('base64url')}`;
    const info: TokenInfo = {
      userId: user.id,
      userName: user.name,
      domain: user.domain,
      project,
      roles: project ? (user.grants.get(project.id) ?? []) : [],
      methods,
      issuedAt: now,
      expiresAt: now + this.tokenTtlMs,
      auditId: randomBytes(16).toString('base64url').slice(0, 22),
    };
    this.tokens.set(token, info);
    return { token, info };
  }

  /** Handles `/v3...` requests; returns `undefined` for paths it does not own. */
  handle(req: SimRequest): SimResponse | undefined {
    const s = req.segments;
    if (s[0] !== 'v3') return undefined;
    if (s.length === 1 && req.method === 'GET') return { status: 200, body: { version: this.versionDoc() } };
    if (s[1] === 'auth' && s[2] === 'tokens' && s.length === 3) {
      switch (req.method) {
        case 'POST':
          return this.createToken(req);
        case 'GET':
        case 'HEAD':
          return this.checkToken(req, req.method === 'HEAD');
        case 'DELETE':
          return this.revokeToken(req);
        default:
          return { status: 405, body: { error: { code: 405, title: 'Method Not Allowed', message: 'Method not allowed' } } };
      }
    }
    const caller = this.validate(header(req, 'x-auth-token'));
    if (!caller) throw unauthorized();
    if (s[1] === 'auth' && s[2] === 'catalog' && req.method === 'GET') {
      return { status: 200, body: { catalog: caller.project ? this.catalog(caller.project.id) : [] } };
    }
    if (s[1] === 'auth' && s[2] === 'projects' && req.method === 'GET') {
      const user = this.users.find((u) => u.id === caller.userId);
      const projects = user ? [...user.grants.keys()].map((id) => this.projects.get(id)).filter((p) => p) : [];
      return { status: 200, body: { projects: projects.map((p) => this.projectDoc(p as Project)) } };
    }
    if (s[1] === 'projects' && req.method === 'GET') {
      if (s.length === 2) return { status: 200, body: { projects: [...this.projects.values()].map((p) => this.projectDoc(p)) } };
      const p = this.projects.get(s[2] ?? '');
      if (!p) throw new SimHttpError(404, { error: { code: 404, title: 'Not Found', message: 'Could not find project.' } });
      return { status: 200, body: { project: this.projectDoc(p) } };
    }
    throw new SimHttpError(404, { error: { code: 404, title: 'Not Found', message: 'The resource could not be found.' } });
  }

  /** Version document, also used for `GET /` (multiple choices). */
  versionDoc(): Record<string, unknown> {
    return {
      id: 'v3.14',
      status: 'stable',
      updated: '2020-04-07T00:00:00Z',
      links: [{ rel: 'self', href: `${this.env.baseUrl()}/v3/` }],
      'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
    };
  }

  private projectDoc(p: Project): Record<string, unknown> {
    return {
      id: p.id,
      name: p.name,
      domain_id: p.domain.id,
      enabled: true,
      is_domain: false,
      parent_id: p.domain.id,
      description: '',
      tags: [],
      links: { self: `${this.env.baseUrl()}/v3/projects/${p.id}` },
    };
  }

  private findDomainRef(ref: unknown): Domain | undefined {
    const d = obj(ref);
    if (!d) return undefined;
    const id = str(d.id);
    const name = str(d.name);
    return [...this.domains.values()].find((x) => (id !== undefined && x.id === id) || (name !== undefined && x.name === name));
  }

  private createToken(req: SimRequest): SimResponse {
    const auth = obj(obj(req.body)?.auth);
    if (!auth) throw badRequest("Expecting to find auth in request body.");
    const identity = obj(auth.identity);
    const methods = identity?.methods;
    if (!identity || !Array.isArray(methods) || methods.length === 0) {
      throw badRequest('Expecting to find identity methods in request body.');
    }
    let user: User | undefined;
    let inheritedProject: Project | undefined;
    if (methods.includes('password')) {
      const u = obj(obj(identity.password)?.user);
      if (!u) throw badRequest("Expecting to find user in password.");
      const password = str(u.password);
      const id = str(u.id);
      const name = str(u.name);
      if (id !== undefined) user = this.users.find((x) => x.id === id);
      else if (name !== undefined) {
        const dom = this.findDomainRef(u.domain);
        if (!dom) throw unauthorized('The request you have made requires authentication.');
        user = this.users.find((x) => x.name === name && x.domain.id === dom.id);
      }
      if (!user || password === undefined || user.password !== password) {
        throw unauthorized('The request you have made requires authentication.');
      }
    } else if (methods.includes('token')) {
      const old = this.validate(str(obj(identity.token)?.id));
      if (!old) throw unauthorized('The request you have made requires authentication.');
      user = this.users.find((x) => x.id === old.userId);
      inheritedProject = old.project;
      if (!user) throw unauthorized();
    } else {
      throw unauthorized('Attempted to authenticate with an unsupported method.');
    }

    let project: Project | undefined;
    const scope = auth.scope;
    if (scope !== undefined && scope !== null) {
      const p = obj(obj(scope)?.project);
      if (!p) {
        // Domain and system scopes are not simulated; answer as Keystone does for an unknown target.
        throw unauthorized('The request you have made requires authentication.');
      }
      const pid = str(p.id);
      if (pid !== undefined) project = this.projects.get(pid);
      else {
        const dom = this.findDomainRef(p.domain);
        const pname = str(p.name);
        if (dom && pname !== undefined) project = this.findProjectByName(pname, dom.id);
      }
      if (!project) throw unauthorized('The request you have made requires authentication.');
      if (!user.grants.has(project.id)) {
        throw unauthorized(`User ${user.id} has no access to project ${project.id}`);
      }
    } else if (inheritedProject) {
      project = inheritedProject;
    }
    const { token, info } = this.mint(user, project, methods.filter((m): m is string => typeof m === 'string'));
    this.opts.logger.debug({ user: user.name, project: project?.name }, 'keystone token issued');
    return { status: 201, headers: { 'X-Subject-Token': token }, body: { token: this.tokenDoc(info) } };
  }

  private checkToken(req: SimRequest, headOnly: boolean): SimResponse {
    const caller = this.validate(header(req, 'x-auth-token'));
    if (!caller) throw unauthorized();
    const subject = this.validate(header(req, 'x-subject-token'));
    if (!subject) {
      throw new SimHttpError(404, { error: { code: 404, title: 'Not Found', message: 'Could not find token.' } });
    }
    if (headOnly) return { status: 200 };
    const noCatalog = req.query.has('nocatalog');
    return {
      status: 200,
      headers: { 'X-Subject-Token': header(req, 'x-subject-token') ?? '' },
      body: { token: this.tokenDoc(subject, !noCatalog) },
    };
  }

  private revokeToken(req: SimRequest): SimResponse {
    const caller = this.validate(header(req, 'x-auth-token'));
    if (!caller) throw unauthorized();
    const subject = header(req, 'x-subject-token');
    if (!subject || !this.validate(subject)) {
      throw new SimHttpError(404, { error: { code: 404, title: 'Not Found', message: 'Could not find token.' } });
    }
    this.tokens.delete(subject);
    return { status: 204 };
  }

  private tokenDoc(info: TokenInfo, withCatalog = true): Record<string, unknown> {
    const doc: Record<string, unknown> = {
      methods: info.methods,
      user: {
        domain: { id: info.domain.id, name: info.domain.name },
        id: info.userId,
        name: info.userName,
        password_expires_at: null,
      },
      audit_ids: [info.auditId],
      expires_at: isoMicros(info.expiresAt),
      issued_at: isoMicros(info.issuedAt),
    };
    if (info.project) {
      doc.project = {
        domain: { id: info.project.domain.id, name: info.project.domain.name },
        id: info.project.id,
        name: info.project.name,
      };
      doc.is_domain = false;
      doc.roles = info.roles.map((r) => ({ id: this.roleId(r), name: r }));
      if (withCatalog) doc.catalog = this.catalog(info.project.id);
    }
    return doc;
  }

  /** The service catalog for a project: identity, orchestration, compute, network and the VNFM. */
  catalog(projectId: string): Record<string, unknown>[] {
    const base = this.env.baseUrl();
    const region = this.opts.region;
    const service = (type: string, name: string, url: string): Record<string, unknown> => ({
      id: stableHexId(`service:${type}`),
      type,
      name,
      endpoints: ['public', 'internal', 'admin'].map((iface) => ({
        id: stableHexId(`endpoint:${type}:${iface}`),
        interface: iface,
        region_id: region,
        region,
        url,
      })),
    });
    const out = [
      service('identity', 'keystone', `${base}/v3`),
      service('orchestration', 'heat', `${base}/v1/${projectId}`),
      service('compute', 'nova', `${base}/v2.1`),
      service('network', 'neutron', base),
    ];
    const vnfm = this.env.vnfmUrl();
    if (vnfm !== '') out.push(service('nfv-orchestration', 'tacker', vnfm));
    return out;
  }
}
