/**
 * The VIM registry (Tacker's legacy `/v1.0/vims`): named VIMs of the types the VIM plugins serve
 * (src/infra/vim-plugin.ts, {@link VimKindRules}) with their credentials sealed at rest, one
 * default per type. LCM requests that name only a `vimId` in
 * `vimConnectionInfo` are completed from here, so an NFVO need not send passwords with every call.
 */
import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, Kysely } from 'kysely';
import { vnfmError } from '../errors.ts';
import { ALL_PROJECTS, type ProjectScope, inScope, scopeWhere } from '../model/project-scope.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';

/**
 * Registry VIM type (`/v1.0/vims` `type`): the kind a VIM plugin serves (src/infra/<kind>/vim-plugin.ts).
 */
export type VimKind = string;

/** A complete VIM connection as drivers use it (SOL VimConnectionInfo with secrets). */
export interface VimConnection {
  vimId?: string;
  vimType: string;
  interfaceInfo: Record<string, unknown>;
  accessInfo: Record<string, unknown>;
  extra?: Record<string, unknown>;
}

/** A registered VIM (secrets included; never send this object to a client). */
export interface VimRecord {
  id: string;
  name: string;
  type: VimKind;
  description: string;
  isDefault: boolean;
  /** Non-secret settings: auth_url, project, domains, region, ssl_ca_cert, extra. */
  config: {
    authUrl: string;
    projectName?: string;
    projectDomainName?: string;
    userDomainName?: string;
    username?: string;
    region?: string;
    sslCaCert?: string;
    certVerify?: boolean;
    /** Heat environment passed with every stack create (e.g. stand-ins for nova/neutron). */
    heatEnvironment?: Record<string, unknown>;
    heatEnvironmentFiles?: Record<string, string>;
    extra?: Record<string, unknown>;
  };
  secret: { password?: string; bearerToken?: string };
  status: string;
  /** The owning project; null: shared by every project. */
  project: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Input of register/update, already validated for shape by the API schema. */
export interface VimInput {
  name?: string;
  type?: string;
  description?: string;
  is_default?: boolean;
  auth_url?: string;
  auth_cred?: Record<string, unknown>;
  vim_project?: Record<string, unknown>;
  extra?: Record<string, unknown>;
}

/**
 * What the registry knows of one VIM type: its names, how a registration's credentials are parsed
 * and validated, and how a registered VIM becomes a connection and an API resource. Each VIM
 * plugin provides these (src/infra/vim-plugin.ts); the registry names no VIM type itself.
 */
export interface VimKindRules {
  /** The registry's type of such a VIM (`/v1.0/vims` `type`, the kind of a default VIM). */
  readonly kind: string;
  /** The SOL vimType of its connections. */
  readonly vimType: string;
  /** Other names accepted for it in a vimConnectionInfo entry (compared case-insensitively, the kind included). */
  readonly aliases: readonly string[];
  /**
   * Sets what a registration says of the type's settings and secrets on `config` and `secret`
   * (which hold the stored VIM's on update, `prev`); throws VNFM_ERR_VIM_INVALID when one is missing.
   */
  applyRegistration(input: VimInput, prev: VimRecord | undefined, config: VimRecord['config'], secret: VimRecord['secret']): void;
  /** The `auth_cred` key that must be given again when the endpoint of a VIM changes. */
  readonly credentialKey: string;
  /** The SOL VimConnectionInfo (with secrets) of a registered VIM. */
  toConnection(v: VimRecord): VimConnection;
  /** `auth_cred` and `vim_project` of the `/v1.0/vims` representation (credentials masked). */
  toApi(v: VimRecord): { authCred: Record<string, unknown>; vimProject: Record<string, unknown> };
}

/** A non-empty string, else undefined (registration parsing). */
export function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}


/** Checks a VIM endpoint URL against the outbound rules of VIMs; returns why it is refused. */
export type VimUrlCheck = (url: string) => Promise<string | undefined>;

/** interfaceInfo keys that name an endpoint the VNFM connects to. */
const ENDPOINT_KEYS = ['endpoint', 'authUrl', 'auth_url', 'heatEndpoint'];

/** The endpoint URLs of a connection's interfaceInfo: the known keys and any other value that is a URL. */
export function interfaceEndpoints(ii: Record<string, unknown> | undefined): [key: string, url: string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(ii ?? {})) {
    if (typeof v !== 'string') continue;
    if (ENDPOINT_KEYS.includes(k) || /^[a-z][a-z0-9+.-]*:\/\//i.test(v.trim())) out.push([k, v]);
  }
  return out;
}

/** What about a registered VIM decides where its credentials go and whom they trust. */
function trustOf(c: VimRecord['config']): string {
  return JSON.stringify([c.authUrl, c.sslCaCert ?? null, c.certVerify ?? null]);
}

/** Stores and resolves VIMs. */
export class VimRegistry {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly box: SecretBox,
    /** 'shared': every VIM is registered without a project (`auth.tenancy.vims`). */
    private readonly tenancy: 'project' | 'shared' = 'project',
    /** The outbound rules of VIM endpoints (`outbound.vimAllow`), applied to every URL registered or given inline. */
    private readonly checkUrl: VimUrlCheck = async () => undefined,
    /** The VIM types registrations may have, in registration order (the first is the type of a registration that names none). */
    private readonly kinds: readonly VimKindRules[] = [],
  ) {}

  /** The rules of a registry type; throws VNFM_ERR_VIM_INVALID naming the supported ones. */
  private rulesOf(kind: string): VimKindRules {
    const r = this.kinds.find((k) => k.kind === kind);
    if (r) return r;
    const names = this.kinds.map((k) => k.kind);
    const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : (names[0] ?? 'none');
    throw vnfmError('VNFM_ERR_VIM_INVALID', `VIM type '${kind}' is not supported; use ${list}`);
  }

  /** Accepts the legacy names Tacker accepts (a registry type, aliases) and returns the SOL vimType. */
  normalizeVimType(t: string): string {
    const l = t.toLowerCase();
    for (const k of this.kinds) if ([k.vimType, k.kind, ...k.aliases].some((n) => n.toLowerCase() === l)) return k.vimType;
    return t;
  }

  /** 422 naming the rule (and the setting that opens it) when `url` may not be a VIM endpoint. */
  private async checkEndpoint(what: string, url: string): Promise<void> {
    const why = await this.checkUrl(url);
    if (why) throw vnfmError('VNFM_ERR_VIM_INVALID', `${what} is refused by the outbound rules of VIM endpoints: ${why}`);
  }

  private toRecord(r: Database['vim'] extends infer T ? { [K in keyof T]: unknown } : never): VimRecord {
    return {
      id: r.id as string,
      name: r.name as string,
      type: r.type as VimKind,
      description: r.description as string,
      isDefault: r.is_default as boolean,
      config: r.config as VimRecord['config'],
      secret: this.box.open(r.secret as string),
      status: r.status as string,
      project: (r.project ?? null) as string | null,
      createdAt: new Date(r.created_at as string),
      updatedAt: new Date(r.updated_at as string),
    };
  }

  private build(input: VimInput, prev?: VimRecord): Omit<VimRecord, 'id' | 'createdAt' | 'updatedAt' | 'status' | 'project'> {
    const type = (input.type ?? prev?.type ?? this.kinds[0]?.kind ?? '') as string;
    const rules = this.rulesOf(type);
    const name = input.name ?? prev?.name;
    if (!name) throw vnfmError('VNFM_ERR_VIM_INVALID', 'VIM name is required');
    const authUrl = input.auth_url ?? prev?.config.authUrl;
    if (!authUrl) throw vnfmError('VNFM_ERR_VIM_INVALID', 'auth_url is required');
    try {
      const u = new URL(authUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw vnfmError('VNFM_ERR_VIM_INVALID', `auth_url '${authUrl}' is not an http(s) URL`);
    }
    const cred = input.auth_cred ?? {};
    const secret = { ...(prev?.secret ?? {}) };
    const config: VimRecord['config'] = { ...(prev?.config ?? { authUrl }), authUrl };
    rules.applyRegistration(input, prev, config, secret);
    // A CA bundle (PEM) the VIM's endpoints are verified against (every type).
    if (typeof cred.ssl_ca_cert === 'string') config.sslCaCert = cred.ssl_ca_cert;
    if (typeof cred.cert_verify === 'boolean') config.certVerify = cred.cert_verify;
    else if (cred.cert_verify === 'True' || cred.cert_verify === 'False') config.certVerify = cred.cert_verify === 'True';
    if (input.extra !== undefined) {
      const { heat_environment, heat_environment_files, ...rest } = input.extra as Record<string, unknown>;
      if (heat_environment !== undefined) config.heatEnvironment = heat_environment as Record<string, unknown>;
      if (heat_environment_files !== undefined) config.heatEnvironmentFiles = heat_environment_files as Record<string, string>;
      config.extra = rest;
    }
    return { name, type, description: input.description ?? prev?.description ?? '', isDefault: input.is_default ?? prev?.isDefault ?? false, config, secret };
  }

  /** The project a VIM registered for `project` belongs to (null with tenancy `shared`). */
  ownerFor(project: string | null): string | null {
    return this.tenancy === 'shared' ? null : project;
  }

  /**
   * Registers a VIM for `project` (null: shared; always null with tenancy `shared`); `is_default`
   * moves the default flag of that type within the project to it.
   */
  async register(input: VimInput, project: string | null = null): Promise<VimRecord> {
    const v = this.build(input);
    await this.checkEndpoint('auth_url', v.config.authUrl);
    const id = randomUUID();
    const owner = this.ownerFor(project);
    await this.db.transaction().execute(async (tx) => {
      const dup = await tx.selectFrom('vim').select('id').where('name', '=', v.name).where(sameProject(owner)).executeTakeFirst();
      if (dup) throw vnfmError('VNFM_ERR_VIM_CONFLICT', `a VIM named '${v.name}' already exists`);
      if (v.isDefault) await tx.updateTable('vim').set({ is_default: false }).where('type', '=', v.type).where(sameProject(owner)).execute();
      await tx
        .insertInto('vim')
        .values({ id, name: v.name, type: v.type, description: v.description, is_default: v.isDefault, config: json(v.config), secret: this.box.seal(v.secret), status: 'REACHABLE', project: owner })
        .execute();
    });
    return this.get(id);
  }

  /** Updates name/description/credentials/default flag; the type cannot change. */
  async update(id: string, input: VimInput): Promise<VimRecord> {
    const prev = await this.get(id);
    if (input.type !== undefined && input.type !== prev.type) throw vnfmError('VNFM_ERR_VIM_INVALID', 'the type of a VIM cannot be changed');
    const v = this.build(input, prev);
    if (trustOf(v.config) !== trustOf(prev.config)) {
      // The stored password/token must not follow a VIM to another endpoint (or to one trusted differently).
      const cred = input.auth_cred ?? {};
      const key = this.rulesOf(prev.type).credentialKey;
      const given = typeof cred[key] === 'string' && cred[key] !== '';
      if (!given) {
        throw vnfmError(
          'VNFM_ERR_VIM_INVALID',
          `a changed endpoint needs its credentials again: auth_url, ssl_ca_cert or cert_verify changed, so auth_cred.${key} must be given in the same request`,
        );
      }
    }
    await this.checkEndpoint('auth_url', v.config.authUrl);
    await this.db.transaction().execute(async (tx) => {
      if (v.name !== prev.name) {
        const dup = await tx.selectFrom('vim').select('id').where('name', '=', v.name).where(sameProject(prev.project)).executeTakeFirst();
        if (dup) throw vnfmError('VNFM_ERR_VIM_CONFLICT', `a VIM named '${v.name}' already exists`);
      }
      if (v.isDefault && !prev.isDefault) await tx.updateTable('vim').set({ is_default: false }).where('type', '=', v.type).where(sameProject(prev.project)).execute();
      await tx
        .updateTable('vim')
        .set({ name: v.name, description: v.description, is_default: v.isDefault, config: json(v.config), secret: this.box.seal(v.secret), updated_at: new Date() })
        .where('id', '=', id)
        .execute();
    });
    return this.get(id);
  }

  /** Finds a VIM visible in `scope` or throws 404 (another project's VIM: the same 404). */
  async get(id: string, scope: ProjectScope = ALL_PROJECTS): Promise<VimRecord> {
    const r = await this.db.selectFrom('vim').selectAll().where('id', '=', id).executeTakeFirst();
    if (!r || !inScope(scope, r.project)) throw vnfmError('VNFM_ERR_VIM_NOT_FOUND', `VIM ${id} not found`);
    return this.toRecord(r as never);
  }

  /** The VIMs visible in `scope`, oldest first. */
  async list(scope: ProjectScope = ALL_PROJECTS): Promise<VimRecord[]> {
    let q = this.db.selectFrom('vim').selectAll();
    for (const w of scopeWhere(scope)) q = q.where(w);
    const rows = await q.orderBy('created_at').orderBy('id').execute();
    return rows.map((r) => this.toRecord(r as never));
  }

  /**
   * Deletes a VIM; refused while a VNF instance uses it (`exceptInstance`: one instance whose use
   * does not count, e.g. the cluster VNF whose management driver registered it and now removes it).
   */
  async delete(id: string, o: { exceptInstance?: string } = {}): Promise<void> {
    await this.get(id);
    const users = await this.db.selectFrom('vnf_instance').select('id').where('instantiation_state', '=', 'INSTANTIATED').execute();
    const rows = await this.db.selectFrom('vnf_instance').select(['id', 'vim_connection_info']).where('id', 'in', users.length ? users.map((u) => u.id) : ['']).execute();
    for (const r of rows) {
      if (r.id === o.exceptInstance) continue;
      const vci = (r.vim_connection_info ?? {}) as Record<string, { vimId?: string }>;
      if (Object.values(vci).some((c) => c?.vimId === id)) throw vnfmError('VNFM_ERR_VIM_CONFLICT', `VIM ${id} is used by VNF instance ${r.id}`);
    }
    await this.db.deleteFrom('vim').where('id', '=', id).execute();
  }

  /** The default VIM of a type for `project`: the project's own default, else the shared one. */
  async getDefault(type: VimKind, project: string | null = null): Promise<VimRecord | undefined> {
    const rows = await this.db
      .selectFrom('vim')
      .selectAll()
      .where('type', '=', type)
      .where('is_default', '=', true)
      .where((eb) => (project === null ? eb('project', 'is', null) : eb.or([eb('project', 'is', null), eb('project', '=', project)])))
      .execute();
    const r = rows.find((x) => x.project !== null) ?? rows[0];
    return r ? this.toRecord(r as never) : undefined;
  }

  /** The SOL VimConnectionInfo (with secrets) of a registered VIM. */
  toConnection(v: VimRecord): VimConnection {
    return this.rulesOf(v.type).toConnection(v);
  }

  /** The `/v1.0/vims` representation: credentials masked. */
  toApi(v: VimRecord): Record<string, unknown> {
    const { authCred, vimProject } = this.rulesOf(v.type).toApi(v);
    return {
      id: v.id,
      name: v.name,
      type: v.type,
      description: v.description,
      tenant_id: v.config.projectName ?? '',
      auth_url: v.config.authUrl,
      auth_cred: authCred,
      vim_project: vimProject,
      placement_attr: { regions: v.config.region ? [v.config.region] : [] },
      is_default: v.isDefault,
      status: v.status,
      extra: v.config.extra ?? {},
      created_at: v.createdAt.toISOString(),
      updated_at: v.updatedAt.toISOString(),
    };
  }

  /**
   * Completes a vimConnectionInfo entry: one naming only a registered `vimId` (visible in
   * `scope`: another project's VIM is answered as not registered) is filled from the registry;
   * one carrying its own interface/access info is used as given.
   */
  async complete(entry: Partial<VimConnection>, scope: ProjectScope = ALL_PROJECTS): Promise<VimConnection> {
    const hasOwn = entry.interfaceInfo && Object.keys(entry.interfaceInfo).length > 0 && entry.accessInfo && Object.keys(entry.accessInfo).length > 0;
    if (hasOwn) {
      if (!entry.vimType) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'vimConnectionInfo entry needs vimType');
      // the VIM types of the VIM plugins, whose drivers connect to the endpoints (another type's driver is an extra one's)
      if (this.kinds.some((k) => k.vimType === this.normalizeVimType(entry.vimType as string))) {
        for (const [k, url] of interfaceEndpoints(entry.interfaceInfo)) await this.checkEndpoint(`vimConnectionInfo interfaceInfo.${k}`, url);
      }
      return { vimType: this.normalizeVimType(entry.vimType), interfaceInfo: entry.interfaceInfo ?? {}, accessInfo: entry.accessInfo ?? {}, ...(entry.vimId ? { vimId: entry.vimId } : {}), ...(entry.extra ? { extra: entry.extra } : {}) };
    }
    if (!entry.vimId) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'vimConnectionInfo entry needs a vimId of a registered VIM, or interfaceInfo and accessInfo');
    const r = await this.db.selectFrom('vim').selectAll().where('id', '=', entry.vimId).executeTakeFirst();
    if (!r || !inScope(scope, r.project)) throw vnfmError('VNFM_ERR_INST_INVALID', `vimConnectionInfo names VIM ${entry.vimId}, which is not registered`);
    const conn = this.toConnection(this.toRecord(r as never));
    if (entry.vimType && this.normalizeVimType(entry.vimType) !== conn.vimType) throw vnfmError('VNFM_ERR_INST_INVALID', `VIM ${entry.vimId} is of type ${conn.vimType}, not ${entry.vimType}`);
    return { ...conn, extra: { ...(conn.extra ?? {}), ...(entry.extra ?? {}) } };
  }
}

/** Rows of the same project as `project` (null: the shared rows). */
function sameProject(project: string | null) {
  return (eb: ExpressionBuilder<Database, 'vim'>) => (project === null ? eb('project', 'is', null) : eb('project', '=', project));
}
