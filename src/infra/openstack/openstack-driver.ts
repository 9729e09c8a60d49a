/**
 * The OpenStack infra driver: runs a VNF as one Heat stack built from the package's
 * `BaseHOT/<flavourId>/` templates and Tacker's `nfv` parameter, and heals, scales and observes
 * it through Heat (servers are never touched directly, so the stack stays the source of truth).
 *
 * Why it is shaped this way:
 * - Stack `vnf-<instanceId>`, always addressed as `name/id`; the id is kept in `ctx.state` during
 *   an operation and reported by {@link OpenStackDriver.observe} (`metadata.stack_id`).
 * - Every operation is resumable: what was done (stack created, resources marked, update issued,
 *   stack deleted) is recorded in `ctx.state` and checkpointed before moving on, so a retry after
 *   a crash or a failed Heat update continues instead of repeating (no double marking, no second
 *   stack).
 * - VNFC heal marks the server in the stack that owns it (a group member's nested stack, found
 *   again in a fresh listing when the stored location is stale) and then issues ONE PATCH update
 *   of the top stack, which makes Heat replace exactly the marked resources.
 * - Entire heal deletes and re-creates the stack from the current package and the current
 *   parameters (the scale level of now, not of instantiation).
 * - Scale-in marks the members the VNFM chose (its grant's removals: the newest, as Tacker picks)
 *   of each shrinking AutoScalingGroup unhealthy before the update: Heat removes failed members
 *   first, so exactly those go (the management hooks acted on them). When Heat
 *   cannot be steered (other group types, a refused mark) its own choice is accepted.
 *
 * Errors: the instance's stack gone (404 or `DELETE_COMPLETE`) where one must exist (observe,
 * heal, scale) -> `VNFM_ERR_INFRA_STACK_MISSING` (terminal; observe never reports "no resources"
 * for a missing stack), Heat/Keystone 4xx -> `VNFM_ERR_VIM_FAILED` (with Heat's message), 5xx or no answer
 * after the client's retries -> `VNFM_ERR_VIM_UNREACHABLE`, a stack ending `*_FAILED` ->
 * `VNFM_ERR_VIM_FAILED` with Heat's `stack_status_reason`, a wait running out ->
 * `VNFM_ERR_LCM_TIMEOUT`. No message carries a password or token.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { retryableError, terminalError, vnfmError } from '../../errors.ts';
import type { OutboundGuard } from '../../net/outbound.ts';
import { fetchForVimTls } from '../../net/tls-fetch.ts';
import { vnfcCountAtLevel } from '../../packages/vnfd-scaling.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import { expectsNothing, type HealPlan, type HealTarget, type InfraContext, type InfraDriver, type ObservedResources, type ScalePlan } from '../infra-driver.ts';
import { HeatClient, type HeatResource, type HeatStack, type HeatStackRef } from './heat-client.ts';
import { HEAT_TYPES, type LocatedResource, locateResources, observeFromListing, type PortFacts, portFactsOf, type ServerFacts, serverAddresses, stackRefString } from './heat-observer.ts';
import { buildNfvParameter, declaredParameters, type JsonObject, parseNfvParameter } from './hot-params.ts';
import type { HttpRetryOptions } from './http-retry.ts';
import { KeystoneAuth } from './keystone-auth.ts';
import { NovaClient } from './nova-client.ts';
import { OpenStackError, OpenStackErrorKind } from './openstack-error.ts';
import { type CreateListing, waitCreateListing, waitUpdateWatching } from './stack-watch.ts';

/** Options of {@link createOpenStackDriver}. */
export interface OpenStackDriverOptions {
  /** First poll interval of stack waits; doubles per poll. @default `vim.stackPollInitialMs` (100) */
  pollInitialMs?: number;
  /** Largest poll interval of a stack wait's first `vim.stackPollBackoffAfterMs`. @default `vim.stackPollMs` (250) */
  pollMaxMs?: number;
  /** `nested_depth` of the resource listings (2 reaches a server inside a group member). @default 2 */
  nestedDepth?: number;
  /** Retry/timeout settings of every OpenStack request. */
  http?: HttpRetryOptions;
  /** Ask Nova for server status and zone in {@link OpenStackDriver.observe}. @default true */
  useNova?: boolean;
  /**
   * The outbound rules of VIM endpoints: every Keystone, Heat and Nova request (the catalog's URLs
   * too) is checked right before it is sent and connects to the checked addresses. @default none
   */
  outbound?: OutboundGuard;
}

/** The clients of one VIM connection, kept across operations (one Keystone token cache per VIM). */
interface VimSession {
  auth: KeystoneAuth;
  heat: HeatClient;
  nova: NovaClient;
  /** Set once the catalog proved to have no compute service (e.g. a Heat-only cloud). */
  noNova: boolean;
}

/** What a stack create/update sends besides the parameters. */
interface StackFields {
  template: string;
  files: Record<string, string>;
  parameters: Record<string, unknown>;
  environment?: Record<string, unknown> | string;
}

/** Persisted progress of a VNFC heal, scale or scale rollback (`ctx.state[<key>]`). */
interface UpdateProgress {
  /** `<owning stack id>/<resource name>#<physical id>` of every resource marked unhealthy so far. */
  marked: string[];
  /** The PATCH update was (about to be) sent; a retry re-sends it instead of marking again. */
  updateIssued: boolean;
  /** The update also changed the stack's parameters (then every nested stack may change). */
  patched?: boolean;
}

/**
 * The last observation of a stack, kept in memory so that the observation after a VNFC heal
 * re-lists only the nested stacks the heal changed. `fingerprint` ties it to the instance
 * information it produced: another VNFM process that changed the VNF since makes it unusable.
 */
interface ListingCacheEntry {
  rows: HeatResource[];
  /** CP port facts when the observation read them. */
  ports: Map<string, PortFacts> | undefined;
  fingerprint: string;
}

/** Observations kept per driver (oldest dropped first). */
const LISTING_CACHE_MAX = 256;

/**
 * What the stack wait of an operation read on the way, for the observation right after it (same
 * operation, used once): the top stack as the wait's last poll returned it and, after a VNFC
 * heal, the rows and CP ports of the changed stacks read once each had finished the update, or,
 * after an entire heal, the whole listing read while the stack was created.
 */
interface Prefetch {
  opId: string;
  stack: HeatStack;
  changedRows: Map<string, Promise<HeatResource[] | undefined>>;
  changedPorts: Map<string, Promise<Map<string, PortFacts> | undefined>>;
  listing?: Promise<CreateListing | undefined>;
}

/** Persisted progress of an entire heal (`ctx.state.entireHeal`). */
interface EntireHealProgress {
  phase: 'deleting' | 'deleted' | 'created';
  /** The parameters of the new stack, fixed before the old one is deleted. */
  parameters: Record<string, unknown>;
  oldStack?: string;
}

const STATUS_ACTIONS = ['CREATE', 'UPDATE', 'DELETE', 'ROLLBACK', 'SUSPEND', 'RESUME', 'ADOPT', 'SNAPSHOT', 'CHECK', 'RESTORE'];
/** Every status a stack can rest in. */
const SETTLED = STATUS_ACTIONS.flatMap((a) => [`${a}_COMPLETE`, `${a}_FAILED`]).concat('INIT_COMPLETE');
const GROUP_SCALING = 'OS::Heat::AutoScalingGroup';

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The stack id part of `name/id` (or the value itself when it has no '/'). */
function idOf(stackId: string): string {
  const i = stackId.lastIndexOf('/');
  return i < 0 ? stackId : stackId.slice(i + 1);
}

function refOf(stack: HeatStack): HeatStackRef {
  return { name: stack.stack_name, id: stack.id };
}

/** `<owning stack id>/<resource name>`: where a resource is, whatever its physical id. */
function resourceKey(l: LocatedResource): string {
  return `${l.stack.id}/${l.row.resource_name}`;
}

/** The recorded mark (`<key>#<physical id at marking time>`) of a resource, if any. */
function markedEntry(progress: UpdateProgress, l: LocatedResource): string | undefined {
  const prefix = `${resourceKey(l)}#`;
  return progress.marked.find((m) => m.startsWith(prefix));
}

/** The stack a listed row lives in (its `stack` link), if it has one. */
function stackOfRow(r: HeatResource): HeatStackRef | undefined {
  try {
    return HeatClient.stackOfResource(r);
  } catch {
    return undefined;
  }
}

/** What an observation says about the servers and volumes of a VNF (sorted ids by VDU / storage). */
function fingerprintOfObserved(o: ObservedResources): string {
  return JSON.stringify([o.vnfcs.map((v) => `${v.vduId}:${v.computeResource.resourceId}`).sort(), o.storages.map((v) => v.resourceId).sort()]);
}

/** The same of the instance information an operation started from. */
function fingerprintOfInstance(ctx: InfraContext): string {
  const info = ctx.instance.instantiatedVnfInfo;
  return JSON.stringify([
    (info?.vnfcResourceInfo ?? []).map((v) => `${v.vduId}:${v.computeResource.resourceId}`).sort(),
    (info?.virtualStorageResourceInfo ?? []).map((v) => v.storageResource.resourceId).sort(),
  ]);
}

/** The stack name of a VNF instance (Tacker's convention). */
export function stackNameOf(instanceId: string): string {
  return `vnf-${instanceId}`;
}

/**
 * Maps a failure of an OpenStack call to the catalog error the engine acts on, keeping Heat's
 * message (already free of secrets) and prefixing what the driver was doing. Retryable (the engine
 * re-runs the step with back-off): 5xx but 501/505, 408, 429 with its Retry-After, Heat's 409
 * `ActionInProgress`, request timeouts, refused/reset connections. Terminal (FAILED_TEMP at once):
 * every other 4xx (validation, quota, not found, authentication refused), a stack that ended
 * `*_FAILED`, a stack wait that ran out of `vim.stackTimeoutMs`, TLS and catalog errors.
 */
function toDriverError(e: unknown, what: string): unknown {
  if (!(e instanceof OpenStackError)) return e;
  const detail = `${what}: ${e.message}`;
  const opts = { cause: e, ...(e.extra === undefined ? {} : { extra: e.extra }) };
  switch (e.kind) {
    case OpenStackErrorKind.waitTimeout:
      return terminalError('VNFM_ERR_LCM_TIMEOUT', detail, opts);
    case OpenStackErrorKind.stackFailed:
      return terminalError('VNFM_ERR_VIM_FAILED', detail, opts);
    case OpenStackErrorKind.timeout:
    case OpenStackErrorKind.connection:
      return e.retryable ? retryableError('VNFM_ERR_VIM_UNREACHABLE', detail, opts) : terminalError('VNFM_ERR_VIM_UNREACHABLE', detail, opts);
    case OpenStackErrorKind.aborted:
      return terminalError('VNFM_ERR_LCM_INTERRUPTED', detail, opts);
    default: {
      const code = (e.status !== undefined && e.status >= 500) || e.retryable ? 'VNFM_ERR_VIM_UNREACHABLE' : 'VNFM_ERR_VIM_FAILED';
      return e.retryable ? retryableError(code, detail, { ...opts, ...(e.retryAfterMs === undefined ? {} : { retryAfterMs: e.retryAfterMs }) }) : terminalError(code, detail, opts);
    }
  }
}

/** The OpenStack (Heat) implementation of {@link InfraDriver}. */
export class OpenStackDriver implements InfraDriver {
  readonly vimTypes = ['ETSINFV.OPENSTACK_KEYSTONE.V_3', 'ETSINFV.OPENSTACK_KEYSTONE.V_2', 'OPENSTACK', 'openstack'] as const;
  private readonly sessions = new Map<string, VimSession>();
  /** The last observation per top stack id (see {@link ListingCacheEntry}). */
  private readonly listings = new Map<string, ListingCacheEntry>();
  /** What the last stack wait read on the way, per top stack id (see {@link Prefetch}). */
  private readonly prefetched = new Map<string, Prefetch>();
  private readonly pollInitialMs: number | undefined;
  private readonly pollMaxMs: number | undefined;
  private readonly nestedDepth: number;
  private readonly http: HttpRetryOptions | undefined;
  private readonly useNova: boolean;
  private readonly outbound: OutboundGuard | undefined;

  constructor(options: OpenStackDriverOptions = {}) {
    this.outbound = options.outbound;
    this.pollInitialMs = options.pollInitialMs;
    this.pollMaxMs = options.pollMaxMs;
    this.nestedDepth = Math.max(2, options.nestedDepth ?? 2);
    this.http = options.http;
    this.useNova = options.useNova ?? true;
  }

  // -------------------------------------------------------------------------------------------
  // InfraDriver

  async instantiate(ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
    await this.guard('instantiate', async () => {
      const s = this.session(ctx.vim);
      const additional = isObject(req.additionalParams) ? req.additionalParams : {};
      const current = await this.findStack(ctx, s.heat);
      const fields = await this.stackFields(ctx, {
        current: null,
        extVirtualLinks: Array.isArray(req.extVirtualLinks) ? req.extVirtualLinks : undefined,
        requestNfv: additional.nfv,
      });
      await this.ensureStack(ctx, s, fields, current);
    });
  }

  async terminate(ctx: InfraContext): Promise<void> {
    await this.guard('terminate', async () => {
      const s = this.session(ctx.vim);
      await this.deleteStack(ctx, s);
    });
  }

  async rollbackInstantiate(ctx: InfraContext): Promise<void> {
    await this.guard('rollback instantiate', async () => {
      const s = this.session(ctx.vim);
      await this.deleteStack(ctx, s);
    });
  }

  async scale(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    await this.guard(`scale (${plan.type} ${plan.aspectId})`, async () => {
      const s = this.session(ctx.vim);
      await this.resize(ctx, s, 'scale', ctx.targetVduCounts, plan.additionalParams.nfv, new Set(plan.removeResourceIds ?? []));
    });
  }

  async rollbackScaleOut(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    await this.guard(`rollback scale out (${plan.aspectId})`, async () => {
      const s = this.session(ctx.vim);
      const levels: Record<string, number> = {};
      for (const a of ctx.instance.instantiatedVnfInfo?.scaleStatus ?? []) levels[a.aspectId] = a.scaleLevel;
      Object.assign(levels, ctx.targetScaleLevels);
      levels[plan.aspectId] = plan.fromLevel;
      const known: Record<string, number> = {};
      for (const [k, v] of Object.entries(levels)) if (Object.hasOwn(ctx.flavour.scalingAspects, k)) known[k] = v;
      const counts = vnfcCountAtLevel(ctx.flavour, undefined, known);
      await this.resize(ctx, s, 'scaleRollback', counts, undefined);
    });
  }

  async heal(ctx: InfraContext, plan: HealPlan): Promise<void> {
    await this.guard(plan.entire ? 'heal (entire VNF)' : 'heal', async () => {
      const s = this.session(ctx.vim);
      if (plan.entire) await this.healEntire(ctx, s, plan);
      else if (plan.targets.length > 0) await this.healVnfcs(ctx, s, plan);
      else ctx.log.info({ step: 'heal' }, 'heal: no VNFC to heal');
    });
  }

  async observe(ctx: InfraContext): Promise<ObservedResources> {
    return this.guard('observe', async () => {
      const s = this.session(ctx.vim);
      // After a VNFC heal the stack is known: its changed stacks are listed while it is read.
      const known = str(ctx.state.stack);
      const slash = known?.lastIndexOf('/') ?? -1;
      const knownRef = known === undefined || slash <= 0 ? undefined : { name: known.slice(0, slash), id: known.slice(slash + 1) };
      // The wait of this operation's heal just read the stack (and maybe its resources): used once.
      const pre = knownRef === undefined ? undefined : this.takePrefetch(ctx, knownRef.id);
      const full = pre?.listing === undefined ? undefined : await pre.listing;
      const early = knownRef === undefined || full !== undefined ? undefined : this.partialListing(ctx, s, knownRef, pre);
      early?.catch(() => undefined); // awaited below, or dropped with the stack
      const stack = pre?.stack ?? (await this.findStack(ctx, s.heat));
      if (stack === null) {
        // "No stack" is never "no resources", except where nothing is expected: a terminate, or an
        // instantiate that has not created its stack yet.
        if (expectsNothing(ctx, str(ctx.state.stack) !== undefined)) return { vnfcs: [], storages: [], virtualLinks: [], metadata: {} };
        throw this.stackMissing(ctx);
      }
      const ref = refOf(stack);
      const early2 = early === undefined ? undefined : await early;
      const partial = early2 !== undefined && early2.top.id === ref.id ? early2 : undefined;
      // Without Nova the CP ports' facts are always needed: read them while the stack is listed.
      const fullPorts = full?.portRows === undefined ? undefined : this.portFactsFromRows(ctx, full.portRows);
      const portsAhead = partial === undefined && fullPorts === undefined && (s.noNova || !this.useNova) && Object.keys(ctx.flavour.cps).length > 0 ? this.portFacts(ctx, s, ref) : undefined;
      portsAhead?.catch(() => undefined);
      const rows = full?.rows ?? partial?.rows ?? (await s.heat.listResources(ref, { nestedDepth: this.nestedDepth, signal: ctx.signal }));
      const serverIds = rows.filter((r) => r.resource_type === HEAT_TYPES.server && r.physical_resource_id).map((r) => r.physical_resource_id);
      const servers = serverIds.length > 0 ? await this.serverFacts(ctx, s, serverIds) : new Map<string, ServerFacts>();
      let ports: Map<string, PortFacts> | undefined;
      if (this.needPortFacts(ctx, rows, servers)) {
        if (fullPorts !== undefined) ports = fullPorts;
        else if (partial !== undefined && partial.ports !== undefined) ports = await partial.ports;
        else ports = await (portsAhead ?? this.portFacts(ctx, s, ref));
      } else await portsAhead;
      const observed = observeFromListing({ top: ref, rows, flavour: ctx.flavour, servers, nfv: parseNfvParameter(stack.parameters?.nfv), ...(ports === undefined ? {} : { ports }) });
      this.remember(ref, { rows, ports, fingerprint: fingerprintOfObserved(observed) });
      if (partial !== undefined) ctx.log.debug({ step: 'observe', stacks: partial.changed.map((c) => c.name), prefetched: pre !== undefined }, 'observed: re-listed only the nested stacks the heal changed');
      if (full !== undefined) ctx.log.debug({ step: 'observe' }, 'observed: the listing read while the stack was created');
      return observed;
    });
  }

  // -------------------------------------------------------------------------------------------
  // partial observation

  private keepPrefetch(stackId: string, pre: Prefetch): void {
    this.prefetched.delete(stackId);
    this.prefetched.set(stackId, pre);
    while (this.prefetched.size > LISTING_CACHE_MAX) this.prefetched.delete(this.prefetched.keys().next().value as string);
  }

  /** The prefetch of this operation's last wait on stack `stackId`, removed (used once). */
  private takePrefetch(ctx: InfraContext, stackId: string): Prefetch | undefined {
    const pre = this.prefetched.get(stackId);
    if (pre === undefined) return undefined;
    this.prefetched.delete(stackId);
    return pre.opId === ctx.opOcc.id ? pre : undefined;
  }

  private remember(ref: HeatStackRef, entry: ListingCacheEntry): void {
    this.listings.delete(ref.id);
    this.listings.set(ref.id, entry);
    while (this.listings.size > LISTING_CACHE_MAX) this.listings.delete(this.listings.keys().next().value as string);
  }

  /**
   * The listing of the whole stack without listing it whole, when this operation is a VNFC heal
   * whose update changed only the stacks owning the marked resources: the last observation of
   * this stack (kept in memory, and matching the instance information it produced) with the rows
   * of those stacks read again (in place, so the order is Heat's). Undefined (-> full listing)
   * otherwise: no heal update, a parameter change, no or an outdated kept observation, a changed
   * stack that cannot be listed.
   */
  private async partialListing(
    ctx: InfraContext,
    s: VimSession,
    ref: HeatStackRef,
    pre?: Prefetch,
  ): Promise<{ top: HeatStackRef; rows: HeatResource[]; ports: Promise<Map<string, PortFacts> | undefined> | undefined; changed: HeatStackRef[] } | undefined> {
    const progress = ctx.state.vnfcHeal;
    if (!isObject(progress) || progress.updateIssued !== true || progress.patched === true || !Array.isArray(progress.marked) || progress.marked.length === 0) return undefined;
    const cached = this.listings.get(ref.id);
    if (cached === undefined || cached.fingerprint !== fingerprintOfInstance(ctx)) return undefined;
    const refs = new Map<string, HeatStackRef>([[ref.id, ref]]);
    for (const r of cached.rows) {
      const own = stackOfRow(r);
      if (own !== undefined) refs.set(own.id, own);
    }
    const changed: HeatStackRef[] = [];
    for (const m of progress.marked as string[]) {
      const id = m.slice(0, m.indexOf('/'));
      const own = refs.get(id);
      if (own === undefined) return undefined;
      if (!changed.some((c) => c.id === id)) changed.push(own);
    }
    // The kept observation needed the CP ports' facts: those of the changed stacks are read alongside.
    const ports = cached.ports === undefined ? undefined : this.changedPortFacts(ctx, s, cached.ports, changed, pre);
    ports?.catch(() => undefined); // awaited by observe when still needed
    const fresh = new Map<string, HeatResource[]>();
    try {
      // Rows the heal's wait read once the stack had finished the update, else listed now.
      const lists = await Promise.all(
        changed.map(async (c) => (await pre?.changedRows.get(c.id)?.catch(() => undefined)) ?? s.heat.listResources(c, { signal: ctx.signal })),
      );
      changed.forEach((c, i) => fresh.set(c.id, lists[i] as HeatResource[]));
    } catch (e) {
      if (OpenStackError.isStatus(e, 404)) return undefined;
      throw e;
    }
    const rows: HeatResource[] = [];
    for (const r of cached.rows) {
      const id = stackOfRow(r)?.id;
      if (id === undefined || !changed.some((c) => c.id === id)) {
        rows.push(r);
        continue;
      }
      // The first row of a changed stack brings all of its rows; its other old rows go.
      const again = fresh.get(id);
      if (again !== undefined) rows.push(...again);
      fresh.delete(id);
    }
    for (const again of fresh.values()) rows.push(...again); // a changed stack without rows before
    return { top: ref, rows, ports, changed };
  }

  /** `ports` with the CP ports of the `changed` stacks read again (one detailed listing each). */
  private async changedPortFacts(ctx: InfraContext, s: VimSession, ports: ReadonlyMap<string, PortFacts>, changed: readonly HeatStackRef[], pre?: Prefetch): Promise<Map<string, PortFacts> | undefined> {
    const out = new Map(ports);
    for (const again of await Promise.all(changed.map(async (c) => (await pre?.changedPorts.get(c.id)?.catch(() => undefined)) ?? this.portFactsOf(ctx, s, c, 0)))) {
      if (again === undefined) return undefined;
      for (const [k, v] of again) out.set(k, v);
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // sessions, stacks, fields

  /** Runs `fn`, turning OpenStack failures into catalog errors named after the operation. */
  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw toDriverError(e, what);
    }
  }

  /** The cached clients of a VIM connection (keyed by a digest of endpoint + credentials). */
  private session(vim: VimConnection): VimSession {
    const ii = vim.interfaceInfo ?? {};
    const ai = vim.accessInfo ?? {};
    const authUrl = str(ii.endpoint) ?? str(ii.authUrl) ?? str(ii.auth_url);
    const username = str(ai.username) ?? str(ai.userName);
    const password = typeof ai.password === 'string' ? ai.password : undefined;
    const projectName = str(ai.project) ?? str(ai.projectName) ?? str(ai.tenant);
    const projectId = str(ai.projectId);
    if (!authUrl) throw vnfmError('VNFM_ERR_VIM_INVALID', 'the OpenStack VIM connection has no interfaceInfo.endpoint (Keystone v3 URL)');
    if (!username || password === undefined) throw vnfmError('VNFM_ERR_VIM_INVALID', 'the OpenStack VIM connection needs accessInfo.username and accessInfo.password');
    if (!projectName && !projectId) throw vnfmError('VNFM_ERR_VIM_INVALID', 'the OpenStack VIM connection needs accessInfo.project (or projectId)');
    const userDomain = str(ai.userDomain) ?? str(ai.userDomainName) ?? 'Default';
    const projectDomain = str(ai.projectDomain) ?? str(ai.projectDomainName) ?? 'Default';
    const region = str(ai.region) ?? str(ii.region);
    const heatEndpoint = str(ii.heatEndpoint);
    const tlsFetch = fetchForVimTls(ii);
    // every request checked against the VIM outbound rules right before it goes, pinned to the checked addresses
    const tlsFetchOf = this.outbound ? this.outbound.fetch(tlsFetch ?? this.http?.fetch) : tlsFetch;
    const key = createHash('sha256')
      .update(JSON.stringify([authUrl, username, password, projectName, projectId, userDomain, projectDomain, region, heatEndpoint, ii.skipCertificateVerification ?? null, ii.ssl_ca_cert ?? ii.caCert ?? null]))
      .digest('hex');
    const cached = this.sessions.get(key);
    if (cached !== undefined) return cached;
    const auth = new KeystoneAuth({
      authUrl,
      username,
      password,
      ...(projectId ? { projectId } : { projectName: projectName as string }),
      userDomainName: userDomain,
      projectDomainName: projectDomain,
      ...(region ? { region } : {}),
      ...(heatEndpoint ? { endpointOverrides: { orchestration: heatEndpoint } } : {}),
      // The VIM's TLS settings (a registered VIM's cert_verify: false, its CA bundle) for every call of the session.
      ...(this.http || tlsFetchOf ? { http: { ...(this.http ?? {}), ...(tlsFetchOf ? { fetch: tlsFetchOf } : {}) } } : {}),
    });
    const session: VimSession = {
      auth,
      heat: new HeatClient({ auth, pollInitialMs: this.pollInitialMs ?? 100, pollMaxMs: Math.max(this.pollMaxMs ?? 250, this.pollInitialMs ?? 100) }),
      nova: new NovaClient({ auth }),
      noNova: false,
    };
    this.sessions.set(key, session);
    return session;
  }

  /**
   * The instance's live stack, or null: tries the stack recorded during this operation, the one
   * in `instantiatedVnfInfo.metadata`, then the name `vnf-<id>`. A stack Heat reports
   * `DELETE_COMPLETE` (an entire heal that deleted it) does not count. Read without its outputs
   * (the driver uses none).
   */
  private async findStack(ctx: InfraContext, heat: HeatClient): Promise<HeatStack | null> {
    const name = stackNameOf(ctx.instance.id);
    const md = ctx.instance.instantiatedVnfInfo?.metadata ?? {};
    const candidates: string[] = [];
    const fromState = str(ctx.state.stack);
    if (fromState?.includes('/')) candidates.push(fromState);
    const mdId = str(md.stack_id);
    if (mdId) candidates.push(mdId.includes('/') ? mdId : `${str(md.stack_name) ?? name}/${mdId}`);
    const tried = new Set<string>();
    for (const c of candidates) {
      if (tried.has(c)) continue;
      tried.add(c);
      const s = await heat.findStack(c, { signal: ctx.signal, resolveOutputs: false });
      if (s !== null && s.stack_status !== 'DELETE_COMPLETE') return s;
    }
    const byName = await heat.findStack(name, { signal: ctx.signal, resolveOutputs: false });
    return byName !== null && byName.stack_status !== 'DELETE_COMPLETE' ? byName : null;
  }

  private async requireStack(ctx: InfraContext, heat: HeatClient): Promise<HeatStack> {
    const stack = await this.findStack(ctx, heat);
    if (stack === null) throw this.stackMissing(ctx);
    ctx.state.stack = stackRefString(refOf(stack));
    return stack;
  }

  /**
   * The error for a stack that is gone (404, or `DELETE_COMPLETE`) while the instance has one:
   * terminal (a retry cannot bring it back), and the instance information is left as it was.
   */
  private stackMissing(ctx: InfraContext): Error {
    const md = ctx.instance.instantiatedVnfInfo?.metadata ?? {};
    const known = str(ctx.state.stack) ?? (str(md.stack_id) ? `${str(md.stack_name) ?? stackNameOf(ctx.instance.id)}/${idOf(str(md.stack_id) as string)}` : stackNameOf(ctx.instance.id));
    return vnfmError(
      'VNFM_ERR_INFRA_STACK_MISSING',
      `the Heat stack ${known} of VNF instance ${ctx.instance.id} does not exist any more (not found, or DELETE_COMPLETE): it was deleted outside the VNFM. The VNFM cannot see the VNF's resources, so the instance information was left unchanged; mark the operation failed, then heal the entire VNF (additionalParams.all: true) to re-create the stack, or terminate the instance`,
    );
  }

  /**
   * Template, nested files, environment and parameters of the instance's stack, from the
   * current package (`BaseHOT/<flavourId>/`) and the VIM's Heat environment.
   */
  private async stackFields(
    ctx: InfraContext,
    opts: { current: JsonObject | null; extVirtualLinks?: readonly unknown[] | undefined; requestNfv?: unknown; vduCounts?: Readonly<Record<string, number>> },
  ): Promise<StackFields> {
    const base = ctx.vnfd.baseHotDirs[ctx.flavour.flavourId];
    if (base === undefined) {
      throw vnfmError('VNFM_ERR_INST_INVALID', `the VNF package has no Heat templates for flavour '${ctx.flavour.flavourId}' (BaseHOT/${ctx.flavour.flavourId}/ is missing)`);
    }
    const pkg = await ctx.files();
    const text = (path: string): string => {
      const buf = pkg.get(path);
      if (buf === undefined) throw vnfmError('VNFM_ERR_INST_INVALID', `the VNF package lacks ${path}`);
      return buf.toString('utf8');
    };
    const template = text(base.topTemplate);
    const extra = ctx.vim.extra ?? {};
    const files: Record<string, string> = {};
    if (isObject(extra.heatEnvironmentFiles)) {
      for (const [k, v] of Object.entries(extra.heatEnvironmentFiles)) if (typeof v === 'string') files[k] = v;
    }
    for (const nested of base.nestedTemplates) files[posix.basename(nested)] = text(nested);
    const parameters: Record<string, unknown> = {};
    if (declaredParameters(template).has('nfv')) {
      parameters.nfv = buildNfvParameter({
        flavour: ctx.flavour,
        vduCounts: opts.vduCounts ?? ctx.targetVduCounts,
        grant: ctx.grant,
        grantRequest: ctx.opOcc.grantRequest,
        current: opts.current,
        extVirtualLinks: opts.extVirtualLinks,
        requestNfv: opts.requestNfv,
      });
    }
    const env = extra.heatEnvironment;
    return { template, files, parameters, ...(isObject(env) || (typeof env === 'string' && env !== '') ? { environment: env } : {}) };
  }

  private timeoutMins(ctx: InfraContext): number {
    return Math.max(1, Math.ceil(ctx.config.vim.stackTimeoutMs / 60_000));
  }

  /**
   * Poll intervals of stack waits: short (`vim.stackPollMs`) while a typical stack action ends,
   * doubling to `vim.stackPollMaxMs` after `vim.stackPollBackoffAfterMs`. The driver's options
   * override the first two.
   */
  private poll(ctx: InfraContext): { pollInitialMs: number; pollMaxMs: number; pollBackoffAfterMs: number; pollSlowMaxMs: number } {
    const v = ctx.config.vim;
    const pollInitialMs = this.pollInitialMs ?? v.stackPollInitialMs ?? 100;
    const pollMaxMs = Math.max(this.pollMaxMs ?? v.stackPollMs ?? 250, pollInitialMs);
    return { pollInitialMs, pollMaxMs, pollBackoffAfterMs: v.stackPollBackoffAfterMs ?? 60_000, pollSlowMaxMs: Math.max(v.stackPollMaxMs ?? 2000, pollMaxMs) };
  }

  private wait(ctx: InfraContext, heat: HeatClient, ref: HeatStackRef, target: string): Promise<HeatStack> {
    return heat.waitForStatus(ref, {
      target,
      ...this.poll(ctx),
      timeoutMs: ctx.config.vim.stackTimeoutMs,
      signal: ctx.signal,
      onPoll: (st) => ctx.log.debug({ step: 'heat.wait', stack: ref.name, status: st.stack_status }, 'stack status'),
    });
  }

  /** Waits until no action runs on the stack, whatever its outcome (a retry after a crash mid-wait). */
  private async settle(ctx: InfraContext, heat: HeatClient, ref: HeatStackRef, known?: HeatStack): Promise<HeatStack> {
    const st = known ?? (await heat.getStack(ref, { signal: ctx.signal }));
    if (!st.stack_status.endsWith('_IN_PROGRESS')) return st;
    ctx.log.info({ step: 'heat.settle', stack: ref.name, status: st.stack_status }, 'waiting for the running stack action to end');
    return heat.waitForStatus(ref, { target: SETTLED, failOn: [], timeoutMs: ctx.config.vim.stackTimeoutMs, signal: ctx.signal, ...this.poll(ctx) });
  }

  /**
   * Makes the stack exist and be `*_COMPLETE` with `fields`: creates it, or adopts the one a
   * previous attempt created (waits for it; re-converges a failed one with an update).
   */
  private async ensureStack(ctx: InfraContext, s: VimSession, fields: StackFields, existing: HeatStack | null, listWhileCreating = false): Promise<HeatStack> {
    const name = stackNameOf(ctx.instance.id);
    if (existing === null) {
      let ref: HeatStackRef;
      try {
        ctx.log.info({ step: 'heat.create', stack: name }, 'creating stack');
        ref = await s.heat.createStack({
          name,
          template: fields.template,
          files: fields.files,
          parameters: fields.parameters,
          ...(fields.environment === undefined ? {} : { environment: fields.environment }),
          timeoutMins: this.timeoutMins(ctx),
          disableRollback: true,
        }, { signal: ctx.signal });
      } catch (e) {
        if (!OpenStackError.isStatus(e, 409)) throw e;
        // Created by an earlier attempt whose answer was lost: adopt it.
        const found = await this.findStack(ctx, s.heat);
        if (found === null) throw e;
        return this.ensureStack(ctx, s, fields, found);
      }
      ctx.state.stack = stackRefString(ref);
      await ctx.checkpoint();
      if (!listWhileCreating) return this.wait(ctx, s.heat, ref, 'CREATE_COMPLETE');
      // Every resource of the new stack is new, so the observation after needs the whole listing:
      // it is read while Heat creates the stack.
      const { stack, listing } = await waitCreateListing(s.heat, ref, {
        ...this.poll(ctx),
        timeoutMs: ctx.config.vim.stackTimeoutMs,
        signal: ctx.signal,
        onPoll: (st) => ctx.log.debug({ step: 'heat.wait', stack: ref.name, status: st.stack_status }, 'stack status'),
        depth: this.nestedDepth,
        withPorts: Object.keys(ctx.flavour.cps).length > 0,
      });
      this.keepPrefetch(ref.id, { opId: ctx.opOcc.id, stack, changedRows: new Map(), changedPorts: new Map(), listing });
      await listing; // what was left to read when the stack completed (its own rows, the last members)
      return stack;
    }
    const ref = refOf(existing);
    ctx.state.stack = stackRefString(ref);
    await ctx.checkpoint();
    const settled = await this.settle(ctx, s.heat, ref);
    const status = settled.stack_status;
    if (status === 'CREATE_COMPLETE' || status === 'UPDATE_COMPLETE') {
      ctx.log.info({ step: 'heat.adopt', stack: name, status }, 'stack already exists; adopted');
      return settled;
    }
    if (status.startsWith('DELETE_')) {
      await s.heat.deleteStack(ref, { signal: ctx.signal });
      await s.heat.waitForDeleted(ref, { timeoutMs: ctx.config.vim.stackTimeoutMs, signal: ctx.signal, ...this.poll(ctx) });
      delete ctx.state.stack;
      await ctx.checkpoint();
      return this.ensureStack(ctx, s, fields, null);
    }
    // CREATE_FAILED / UPDATE_FAILED / ROLLBACK_*: an update with the full fields retries the failed resources.
    ctx.log.info({ step: 'heat.reconverge', stack: name, status }, 'stack exists in a failed state; updating it');
    await s.heat.updateStackPatch(ref, {
      template: fields.template,
      files: fields.files,
      parameters: fields.parameters,
      ...(fields.environment === undefined ? {} : { environment: fields.environment }),
      timeoutMins: this.timeoutMins(ctx),
    }, { signal: ctx.signal });
    return this.wait(ctx, s.heat, ref, 'UPDATE_COMPLETE');
  }

  /** Deletes the instance's stack (if any) and waits until its name is free. */
  private async deleteStack(ctx: InfraContext, s: VimSession): Promise<void> {
    const stack = await this.findStack(ctx, s.heat);
    if (stack === null) return;
    const ref = refOf(stack);
    ctx.state.stack = stackRefString(ref);
    ctx.log.info({ step: 'heat.delete', stack: ref.name }, 'deleting stack');
    await this.settle(ctx, s.heat, ref);
    await s.heat.deleteStack(ref, { signal: ctx.signal });
    await s.heat.waitForDeleted(ref, { timeoutMs: ctx.config.vim.stackTimeoutMs, signal: ctx.signal, ...this.poll(ctx) });
  }

  // -------------------------------------------------------------------------------------------
  // scale

  /**
   * PATCHes the stack's `nfv` so each VDU has `counts` members. For every shrinking
   * AutoScalingGroup the members the VNFM chose (`preferred` server ids: its grant's removals),
   * then the newest, are marked unhealthy first (Heat removes failed members first); their marks
   * and the update are recorded in `ctx.state[key]`.
   */
  private async resize(ctx: InfraContext, s: VimSession, key: 'scale' | 'scaleRollback', counts: Readonly<Record<string, number>>, requestNfv: unknown, preferred: ReadonlySet<string> = new Set()): Promise<void> {
    const stack = await this.requireStack(ctx, s.heat);
    const ref = refOf(stack);
    const progress = this.progress(ctx, key);
    const fields = await this.stackFields(ctx, { current: parseNfvParameter(stack.parameters?.nfv), requestNfv, vduCounts: counts });
    const currentVdus = (parseNfvParameter(stack.parameters?.nfv)?.VDU ?? null) as Record<string, { desired_capacity?: unknown } | undefined> | null;
    const shrinking = currentVdus === null || Object.entries(counts).some(([vdu, n]) => {
      const was = currentVdus[vdu]?.desired_capacity;
      return typeof was !== 'number' || n < was;
    });
    await this.settle(ctx, s.heat, ref);
    if (!progress.updateIssued && shrinking) {
      const rows = await s.heat.listResources(ref, { nestedDepth: this.nestedDepth, signal: ctx.signal });
      await this.markScaleInVictims(ctx, s, ref, rows, counts, progress, preferred);
    }
    progress.updateIssued = true;
    await ctx.checkpoint();
    ctx.log.info({ step: 'heat.update', stack: ref.name, counts }, 'updating stack (desired capacity)');
    await s.heat.updateStackPatch(ref, { parameters: fields.parameters, timeoutMins: this.timeoutMins(ctx) }, { signal: ctx.signal });
    await this.wait(ctx, s.heat, ref, 'UPDATE_COMPLETE');
  }

  private async markScaleInVictims(
    ctx: InfraContext,
    s: VimSession,
    top: HeatStackRef,
    rows: readonly HeatResource[],
    counts: Readonly<Record<string, number>>,
    progress: UpdateProgress,
    preferred: ReadonlySet<string> = new Set(),
  ): Promise<void> {
    const located = locateResources(top, rows);
    const ownerOf = new Map<string, LocatedResource>();
    for (const l of located) {
      const nested = HeatClient.nestedStackOfResource(l.row);
      if (nested !== undefined) ownerOf.set(nested.id, l);
    }
    for (const [vduId, want] of Object.entries(counts)) {
      const servers = located.filter((l) => l.row.resource_type === HEAT_TYPES.server && l.row.resource_name === vduId && l.row.physical_resource_id);
      if (servers.length <= want) continue;
      // member = the resource (in the group's nested stack) whose nested stack holds the server
      const members: LocatedResource[] = [];
      for (const srv of servers) {
        const member = ownerOf.get(srv.stack.id);
        const group = member === undefined ? undefined : ownerOf.get(member.stack.id);
        if (member !== undefined && group?.row.resource_type === GROUP_SCALING) members.push(member);
      }
      if (members.length !== servers.length) {
        ctx.log.info({ step: 'heat.scale_in', vduId }, 'VDU is not in an AutoScalingGroup: Heat chooses the members to remove');
        continue;
      }
      // The VNFM's choice (the grant's removals) first, then the newest.
      const chosen = (m: LocatedResource): boolean => servers.some((srv) => preferred.has(srv.row.physical_resource_id) && ownerOf.get(srv.stack.id) === m);
      members.sort((a, b) => Number(chosen(b)) - Number(chosen(a)) || String(b.row.creation_time ?? '').localeCompare(String(a.row.creation_time ?? '')));
      for (const m of members.slice(0, servers.length - want)) {
        if (/_FAILED$/.test(m.row.resource_status ?? '')) continue; // removed first anyway
        await this.mark(ctx, s, m, progress, 'scale in: removed by the VNFM', true);
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // heal

  private progress(ctx: InfraContext, key: string): UpdateProgress {
    const cur = ctx.state[key];
    if (isObject(cur) && Array.isArray(cur.marked) && typeof cur.updateIssued === 'boolean') return cur as unknown as UpdateProgress;
    const fresh: UpdateProgress = { marked: [], updateIssued: false };
    ctx.state[key] = fresh;
    return fresh;
  }

  /** Marks one resource unhealthy in the stack that owns it, once per operation (checkpointed). */
  private async mark(ctx: InfraContext, s: VimSession, l: LocatedResource, progress: UpdateProgress, reason: string, bestEffort = false): Promise<void> {
    if (markedEntry(progress, l) !== undefined) return;
    ctx.log.info({ step: 'heat.mark_unhealthy', stack: l.stack.name, resource: l.row.resource_name, path: l.path }, 'marking resource unhealthy');
    try {
      await s.heat.markUnhealthy(l.stack, l.row.resource_name, reason, { signal: ctx.signal });
    } catch (e) {
      if (!bestEffort || !(e instanceof OpenStackError) || e.status === undefined || e.status >= 500) throw e;
      ctx.log.warn({ step: 'heat.mark_unhealthy', resource: l.row.resource_name, err: e.message }, 'Heat refused the mark; it chooses the members to remove');
      return;
    }
    progress.marked.push(`${resourceKey(l)}#${l.row.physical_resource_id}`);
    await ctx.checkpoint();
  }

  /**
   * Finds a heal target's server in a fresh listing: where its metadata says (owning stack +
   * resource name) when that row still holds the server, else wherever the server id is, else the
   * stored location or resource path (the server was replaced since the last observation).
   */
  private locateTarget(located: readonly LocatedResource[], target: HealTarget): LocatedResource {
    const info = target.vnfcResourceInfo;
    const md = info.metadata ?? {};
    const rid = info.computeResource.resourceId;
    const servers = located.filter((l) => l.row.resource_type === HEAT_TYPES.server);
    const mdStack = str(md.stack_id);
    const mdName = str(md.resource_name) ?? info.vduId;
    const atMetadata = mdStack === undefined ? undefined : servers.find((l) => l.stack.id === idOf(mdStack) && l.row.resource_name === mdName);
    if (atMetadata !== undefined && atMetadata.row.physical_resource_id === rid) return atMetadata;
    const byId = servers.find((l) => l.row.physical_resource_id === rid);
    if (byId !== undefined) return byId;
    if (atMetadata !== undefined) return atMetadata;
    const path = str(md.heat_resource_path);
    const byPath = path === undefined ? undefined : servers.find((l) => l.path === path);
    if (byPath !== undefined) return byPath;
    throw vnfmError(
      'VNFM_ERR_VIM_FAILED',
      `VNFC ${target.vnfcInfo.id} (server ${rid}, VDU ${info.vduId}) is not in Heat stack ${located[0]?.stack.name ?? ''}: observe the instance again before healing`,
    );
  }

  /** Volumes of a heal target: its storage in the server's own stack, plus any listed by id. */
  private targetVolumes(ctx: InfraContext, located: readonly LocatedResource[], server: LocatedResource, target: HealTarget): LocatedResource[] {
    const vdu = ctx.flavour.vdus[target.vnfcResourceInfo.vduId];
    const ids = new Set(target.vnfcResourceInfo.storageResourceIds ?? []);
    for (const v of ctx.instance.instantiatedVnfInfo?.virtualStorageResourceInfo ?? []) if (ids.has(v.id)) ids.add(v.storageResource.resourceId);
    return located.filter(
      (l) =>
        l.row.resource_type === HEAT_TYPES.volume &&
        (ids.has(l.row.physical_resource_id) || (l.stack.id === server.stack.id && (vdu?.virtualStorageIds ?? []).includes(l.row.resource_name))),
    );
  }

  private async healVnfcs(ctx: InfraContext, s: VimSession, plan: HealPlan): Promise<void> {
    const progress = this.progress(ctx, 'vnfcHeal');
    const fresh = !progress.updateIssued && progress.marked.length === 0;
    const reason = plan.cause ? `heal by the VNFM: ${plan.cause}` : 'heal by the VNFM';
    // The targets' own stacks are listed while the top stack is read, and the targets found there
    // are marked at once (still while it is read).
    const stackRead = this.requireStack(ctx, s.heat);
    stackRead.catch(() => undefined); // awaited below
    let quick = fresh ? await this.locateAtMetadata(ctx, s, plan) : undefined;
    if (quick !== undefined) await this.markTargets(ctx, s, plan, quick, progress, reason);
    const stack = await stackRead;
    const ref = refOf(stack);
    if (stack.stack_status.endsWith('_IN_PROGRESS')) {
      // A retry (or an update outside the VNFM) may find an update still running: marks are refused
      // (409) meanwhile, Heat may drop them, and what was listed may be changing. Once it has
      // ended the targets are found and marked again (a mark Heat dropped is made once more).
      await this.settle(ctx, s.heat, ref, stack);
      quick = fresh ? await this.locateAtMetadata(ctx, s, plan) : undefined;
      const located = quick ?? locateResources(ref, await s.heat.listResources(ref, { nestedDepth: this.nestedDepth, signal: ctx.signal }));
      await this.markTargets(ctx, s, plan, located, progress, reason);
    } else if (quick === undefined) {
      const located = locateResources(ref, await s.heat.listResources(ref, { nestedDepth: this.nestedDepth, signal: ctx.signal }));
      await this.markTargets(ctx, s, plan, located, progress, reason);
    }
    progress.updateIssued = true;
    await ctx.checkpoint();
    const requestNfv = plan.additionalParams.nfv;
    const patch = isObject(requestNfv) ? (await this.stackFields(ctx, { current: parseNfvParameter(stack.parameters?.nfv), requestNfv })).parameters : undefined;
    if (patch !== undefined && progress.patched !== true) {
      progress.patched = true;
      await ctx.checkpoint();
    }
    ctx.log.info({ step: 'heat.update', stack: ref.name, marked: progress.marked.length }, 'updating stack (replaces the marked resources)');
    await s.heat.updateStackPatch(ref, { ...(patch === undefined ? {} : { parameters: patch }), timeoutMins: this.timeoutMins(ctx) }, { signal: ctx.signal });
    await this.waitHealUpdate(ctx, s, ref, progress);
  }

  /** Marks each target's server (and, with `includeStorage`, its volumes) found in `located`. */
  private async markTargets(ctx: InfraContext, s: VimSession, plan: HealPlan, located: readonly LocatedResource[], progress: UpdateProgress, reason: string): Promise<void> {
    for (const target of plan.targets) {
      const server = this.findHealTarget(ctx, located, target, progress);
      if (server === undefined) continue;
      await this.markForHeal(ctx, s, server, progress, reason);
      if (plan.includeStorage) {
        for (const vol of this.targetVolumes(ctx, located, server, target)) await this.markForHeal(ctx, s, vol, progress, reason);
      }
    }
  }

  /**
   * Waits for a VNFC heal's update. When the observation after it can re-list only the changed
   * stacks (see {@link partialListing}), the wait follows those stacks and their parents
   * ({@link waitUpdateWatching}): each changed stack's resources and CP ports are read as soon as
   * it has finished the update, and the top stack is polled at the short interval only once its
   * completion is imminent. What was read is kept for that observation (with the top stack's last
   * poll).
   */
  private async waitHealUpdate(ctx: InfraContext, s: VimSession, ref: HeatStackRef, progress: UpdateProgress): Promise<void> {
    this.prefetched.delete(ref.id);
    const cached = this.listings.get(ref.id);
    if (progress.patched === true || cached === undefined || cached.fingerprint !== fingerprintOfInstance(ctx)) {
      const done = await this.wait(ctx, s.heat, ref, 'UPDATE_COMPLETE');
      this.keepPrefetch(ref.id, { opId: ctx.opOcc.id, stack: done, changedRows: new Map(), changedPorts: new Map() });
      return;
    }
    // Stacks by id, and the stack owning each nested stack, from the kept observation.
    const refs = new Map<string, HeatStackRef>([[ref.id, ref]]);
    const parentOf = new Map<string, HeatStackRef>();
    for (const r of cached.rows) {
      const own = stackOfRow(r);
      if (own === undefined) continue;
      refs.set(own.id, own);
      const nested = HeatClient.nestedStackOfResource(r);
      if (nested !== undefined) parentOf.set(nested.id, own);
    }
    const changed = new Map<string, HeatStackRef>();
    for (const m of progress.marked) {
      const id = m.slice(0, m.indexOf('/'));
      const own = refs.get(id);
      if (own !== undefined && id !== ref.id) changed.set(id, own);
    }
    const levels: HeatStackRef[][] = [];
    let chainComplete = changed.size > 0;
    for (let level = [...changed.values()]; level.length > 0 && levels.length < 8; ) {
      levels.push(level);
      const up = new Map<string, HeatStackRef>();
      for (const r of level) {
        const parent = parentOf.get(r.id);
        if (parent === undefined) chainComplete = false;
        else if (parent.id !== ref.id) up.set(parent.id, parent);
      }
      level = [...up.values()];
    }
    const pre: Prefetch = { opId: ctx.opOcc.id, stack: undefined as unknown as HeatStack, changedRows: new Map(), changedPorts: new Map() };
    const stack = await waitUpdateWatching(
      s.heat,
      ref,
      levels,
      chainComplete,
      (c) => {
        ctx.log.debug({ step: 'heat.wait', stack: c.name }, 'changed stack updated; reading its resources');
        const rows = s.heat.listResources(c, { signal: ctx.signal }).catch(() => undefined);
        pre.changedRows.set(c.id, rows);
        if (cached.ports !== undefined) pre.changedPorts.set(c.id, this.portFactsOf(ctx, s, c, 0).catch(() => undefined));
      },
      { ...this.poll(ctx), timeoutMs: ctx.config.vim.stackTimeoutMs, signal: ctx.signal, onPoll: (st) => ctx.log.debug({ step: 'heat.wait', stack: ref.name, status: st.stack_status }, 'stack status') },
    );
    pre.stack = stack;
    this.keepPrefetch(ref.id, pre);
  }

  /**
   * The heal targets' servers (and their stacks' other resources) without listing the whole
   * stack: each target's owning stack (`metadata.stack_id`) is listed alone, and used when the
   * row named `metadata.resource_name` there still holds the target's server (and, with
   * `includeStorage`, every volume of the target is in that listing). Undefined when any target's
   * stored location is missing or stale (the caller then lists the whole stack, so a target is
   * never taken for another server).
   */
  private async locateAtMetadata(ctx: InfraContext, s: VimSession, plan: HealPlan): Promise<LocatedResource[] | undefined> {
    const out: LocatedResource[] = [];
    const listed = new Map<string, LocatedResource[]>();
    for (const target of plan.targets) {
      const info = target.vnfcResourceInfo;
      const md = info.metadata ?? {};
      const stackId = str(md.stack_id);
      const name = str(md.resource_name) ?? info.vduId;
      const parent = typeof md.parent_stack === 'string' ? md.parent_stack : undefined;
      const slash = stackId?.lastIndexOf('/') ?? -1;
      if (stackId === undefined || parent === undefined || slash <= 0) return undefined;
      const owner: HeatStackRef = { name: stackId.slice(0, slash), id: stackId.slice(slash + 1) };
      let rows = listed.get(owner.id);
      if (rows === undefined) {
        let raw: HeatResource[];
        try {
          raw = await s.heat.listResources(owner, { signal: ctx.signal });
        } catch (e) {
          if (OpenStackError.isStatus(e, 404)) return undefined;
          throw e;
        }
        rows = raw.map((row) => {
          const own = stackOfRow(row) ?? owner;
          return { row, stack: own, stackPath: own.id === owner.id ? parent : `?${own.id}`, path: own.id === owner.id ? (parent === '' ? row.resource_name : `${parent}/${row.resource_name}`) : `?${own.id}/${row.resource_name}` };
        });
        listed.set(owner.id, rows);
        out.push(...rows);
      }
      const server = rows.find((l) => l.stack.id === owner.id && l.row.resource_type === HEAT_TYPES.server && l.row.resource_name === name);
      if (server === undefined || server.row.physical_resource_id !== info.computeResource.resourceId) return undefined;
      if (plan.includeStorage) {
        const vols = new Set(rows.filter((l) => l.row.resource_type === HEAT_TYPES.volume).map((l) => l.row.physical_resource_id));
        const ids = new Set(info.storageResourceIds ?? []);
        for (const v of ctx.instance.instantiatedVnfInfo?.virtualStorageResourceInfo ?? []) if (ids.has(v.id) && !vols.has(v.storageResource.resourceId)) return undefined;
      }
    }
    ctx.log.debug({ step: 'heal.locate', stacks: [...listed.keys()] }, 'heal targets found where their metadata says');
    return out;
  }

  /**
   * The server of a heal target, or undefined when a previous attempt already handled it: after
   * the update was issued a target whose original server is gone has been replaced.
   */
  private findHealTarget(ctx: InfraContext, located: readonly LocatedResource[], target: HealTarget, progress: UpdateProgress): LocatedResource | undefined {
    if (!progress.updateIssued) return this.locateTarget(located, target);
    const rid = target.vnfcResourceInfo.computeResource.resourceId;
    const still = located.find((l) => l.row.resource_type === HEAT_TYPES.server && l.row.physical_resource_id === rid);
    if (still === undefined) return undefined;
    ctx.log.debug({ step: 'heal.retry', resource: still.path, status: still.row.resource_status }, 'target not replaced yet');
    return still;
  }

  /**
   * Marks a heal resource unless this operation already did. A resource marked earlier that
   * Heat shows `*_COMPLETE` again with the SAME physical id (Heat dropped the mark) is marked once
   * more; one still `CHECK_FAILED` / `*_FAILED`, or already replaced (new id), is left as is: the
   * next update replaces or finishes it.
   */
  private async markForHeal(ctx: InfraContext, s: VimSession, l: LocatedResource, progress: UpdateProgress, reason: string): Promise<void> {
    const entry = markedEntry(progress, l);
    if (entry !== undefined) {
      const status = l.row.resource_status ?? '';
      const sameId = entry.slice(entry.lastIndexOf('#') + 1) === l.row.physical_resource_id;
      if (!(sameId && status.endsWith('_COMPLETE') && !status.startsWith('CHECK_'))) return;
      ctx.log.warn({ step: 'heat.mark_unhealthy', resource: l.path, status }, 'Heat no longer holds the mark; marking again');
      progress.marked.splice(progress.marked.indexOf(entry), 1);
    }
    await this.mark(ctx, s, l, progress, reason);
  }

  private async healEntire(ctx: InfraContext, s: VimSession, plan: HealPlan): Promise<void> {
    let progress = ctx.state.entireHeal as EntireHealProgress | undefined;
    /** The old stack as read by this attempt (not read again before its delete). */
    let known: HeatStack | null | undefined;
    if (!isObject(progress) || typeof progress.phase !== 'string') {
      const stack = await this.findStack(ctx, s.heat);
      known = stack;
      const current = stack === null ? null : parseNfvParameter(stack.parameters?.nfv);
      const fields = await this.stackFields(ctx, { current, requestNfv: plan.additionalParams.nfv });
      progress = { phase: 'deleting', parameters: fields.parameters, ...(stack === null ? {} : { oldStack: stackRefString(refOf(stack)) }) };
      ctx.state.entireHeal = progress;
      await ctx.checkpoint();
    }
    // Whether this attempt saw the name free (the old stack deleted and no longer listed, or none).
    let nameFree = false;
    if (progress.phase === 'deleting') {
      const old =
        progress.oldStack === undefined
          ? null
          : known != null && stackRefString(refOf(known)) === progress.oldStack
            ? known
            : await s.heat.findStack(progress.oldStack, { signal: ctx.signal });
      if (old !== null && old.stack_status !== 'DELETE_COMPLETE') {
        const ref = refOf(old);
        ctx.log.info({ step: 'heat.delete', stack: ref.name }, 'entire heal: deleting stack');
        await this.settle(ctx, s.heat, ref, old);
        await s.heat.deleteStack(ref, { signal: ctx.signal });
        // Gone once Heat no longer lists it (a create of the same name before that gets 409).
        await s.heat.waitUntilUnlisted(ref, { timeoutMs: ctx.config.vim.stackTimeoutMs, signal: ctx.signal, ...this.poll(ctx) });
        nameFree = true;
      } else nameFree = known === null;
      progress.phase = 'deleted';
      delete ctx.state.stack;
      await ctx.checkpoint();
    }
    // 'deleted' or 'created': create (or adopt what an earlier attempt created) from the current package.
    const fields = await this.stackFields(ctx, { current: null });
    fields.parameters = progress.parameters;
    const existing = nameFree ? null : await this.findStack(ctx, s.heat);
    const created = await this.ensureStack(ctx, s, fields, existing, true);
    progress.phase = 'created';
    ctx.state.stack = stackRefString(refOf(created));
    await ctx.checkpoint();
  }

  // -------------------------------------------------------------------------------------------
  // observe helpers

  /**
   * Whether the CP ports' own facts (MAC, fixed IPs) are needed to tell the servers' addresses
   * apart: not when every server with a CP port has exactly that one port and Nova shows one MAC
   * for it (then the server's addresses are the port's).
   */
  private needPortFacts(ctx: InfraContext, rows: readonly HeatResource[], servers: ReadonlyMap<string, ServerFacts>): boolean {
    const stackOf = (r: HeatResource) => r.links?.find((l) => l.rel === 'stack')?.href ?? '';
    const cpPorts = rows.filter((r) => r.resource_type === HEAT_TYPES.port && r.physical_resource_id && Object.hasOwn(ctx.flavour.cps, r.resource_name));
    // A port of the top stack that no VDU owns (e.g. a VIP): only Heat's port attributes give its address.
    if (rows.some((r) => r.resource_type === HEAT_TYPES.port && r.physical_resource_id && !r.parent_resource && !Object.hasOwn(ctx.flavour.cps, r.resource_name))) return true;
    if (cpPorts.length === 0) return false;
    for (const srv of rows) {
      if (srv.resource_type !== HEAT_TYPES.server || !srv.physical_resource_id) continue;
      const vdu = ctx.flavour.vdus[srv.resource_name];
      if (vdu === undefined) continue;
      const n = cpPorts.filter((p) => stackOf(p) === stackOf(srv) && vdu.cpIds.includes(p.resource_name)).length;
      if (n === 0) continue;
      const macs = new Set((servers.get(srv.physical_resource_id)?.addresses ?? []).map((a) => a.mac).filter((m) => m !== undefined));
      if (n > 1 || macs.size !== 1) return true;
    }
    return false;
  }

  /**
   * MAC and fixed IPs of the CP ports, from ONE detailed listing of just the ports (`with_detail`
   * and a `type` filter, so Heat resolves the attributes of the ports only). Not a `name` filter:
   * Heat descends only into resources a column filter selected, so it would miss every port in a
   * nested stack (a scaling group's members).
   * Best effort: without it the addresses come from Nova alone.
   */
  private portFacts(ctx: InfraContext, s: VimSession, ref: HeatStackRef): Promise<Map<string, PortFacts> | undefined> {
    return this.portFactsOf(ctx, s, ref, this.nestedDepth);
  }

  private async portFactsOf(ctx: InfraContext, s: VimSession, ref: HeatStackRef, nestedDepth: number): Promise<Map<string, PortFacts> | undefined> {
    try {
      const rows = await s.heat.listResources(ref, { ...(nestedDepth > 0 ? { nestedDepth } : {}), withDetail: true, filters: { type: HEAT_TYPES.port }, signal: ctx.signal });
      return this.portFactsFromRows(ctx, rows);
    } catch (e) {
      if (e instanceof OpenStackError && e.kind === OpenStackErrorKind.aborted) throw e;
      ctx.log.warn({ step: 'heat.list_ports', err: e instanceof Error ? e.message : String(e) }, 'cannot read the CP ports from Heat; addresses from Nova only');
      return undefined;
    }
  }

  /** Port facts of detailed port rows: CP ports, and the top stack's other ports (a cluster's VIP port, reported in metadata.ports). */
  private portFactsFromRows(ctx: InfraContext, rows: readonly HeatResource[]): Map<string, PortFacts> {
    const out = new Map<string, PortFacts>();
    for (const r of rows) {
      if (r.resource_type !== HEAT_TYPES.port || !r.physical_resource_id || (!Object.hasOwn(ctx.flavour.cps, r.resource_name) && r.parent_resource)) continue;
      const f = portFactsOf(r);
      if (f !== undefined) out.set(r.physical_resource_id, f);
    }
    return out;
  }

  /** Status, zone and addresses of servers from Nova (one listing); empty when the cloud has no Nova. */
  private async serverFacts(ctx: InfraContext, s: VimSession, ids: readonly string[]): Promise<Map<string, ServerFacts>> {
    const out = new Map<string, ServerFacts>();
    if (!this.useNova || s.noNova) return out;
    try {
      await s.auth.endpoint('compute');
    } catch (e) {
      if (e instanceof OpenStackError && e.kind === OpenStackErrorKind.catalog) {
        s.noNova = true;
        return out;
      }
      throw e;
    }
    try {
      const wanted = new Set(ids);
      const servers = await s.nova.listServers({ detail: true, signal: ctx.signal });
      for (const srv of servers) {
        if (!wanted.has(srv.id)) continue;
        out.set(srv.id, { status: srv.status, availabilityZone: srv.availabilityZone, host: srv.host, addresses: serverAddresses(srv.addresses) });
      }
    } catch (e) {
      // Heat's view is enough to observe; Nova only adds status and zone.
      ctx.log.warn({ step: 'nova.list', err: e instanceof Error ? e.message : String(e) }, 'cannot read servers from Nova');
    }
    return out;
  }
}

/**
 * The OpenStack driver the VNFM registers for `ETSINFV.OPENSTACK_KEYSTONE.V_3` VIMs. Keeps one
 * Keystone session per VIM connection for its lifetime.
 */
export function createOpenStackDriver(options: OpenStackDriverOptions = {}): InfraDriver {
  return new OpenStackDriver(options);
}

