/**
 * What every step of the OpenStack driver shares: the driver's options, the clients of each VIM
 * connection (one Keystone token cache per VIM), the in-memory caches of the observation (the last
 * listing per stack, what a stack wait read on the way), the error mapping, and the stack
 * building blocks (find, wait, settle, mark) used by more than one operation.
 */
import { retryableError, terminalError, vnfmError } from '../../errors.ts';
import type { OutboundGuard } from '../../net/outbound.ts';
import { fetchForVimTls } from '../../net/tls-fetch.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { InfraContext, ObserveContext, VimSettings } from '../infra-driver.ts';
import { HeatClient, type HeatResource, type HeatStack, type HeatStackRef } from './heat-client.ts';
import { type LocatedResource, type PortFacts, stackRefString } from './heat-observer.ts';
import type { HttpRetryOptions } from './http-retry.ts';
import { KeystoneAuth, keystoneAuthOptionsOf, keystoneCredentialsOf, keystoneSessionKey } from './keystone-auth.ts';
import { NovaClient } from './nova-client.ts';
import { OpenStackError, OpenStackErrorKind } from './openstack-error.ts';
import type { CreateListing } from './stack-watch.ts';
import { idOf, isObject, markedEntry, resourceKey, str, type UpdateProgress } from './heal-plan.ts';

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
export interface VimSession {
  auth: KeystoneAuth;
  heat: HeatClient;
  nova: NovaClient;
  /** Set once the catalog proved to have no compute service (e.g. a Heat-only cloud). */
  noNova: boolean;
}

/**
 * The last observation of a stack, kept in memory so that the observation after a VNFC heal
 * re-lists only the nested stacks the heal changed. `fingerprint` ties it to the instance
 * information it produced: another VNFM process that changed the VNF since makes it unusable.
 */
export interface ListingCacheEntry {
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
export interface Prefetch {
  opId: string;
  stack: HeatStack;
  changedRows: Map<string, Promise<HeatResource[] | undefined>>;
  changedPorts: Map<string, Promise<Map<string, PortFacts> | undefined>>;
  listing?: Promise<CreateListing | undefined>;
}

/** Poll intervals of a stack wait. */
export interface PollSettings {
  pollInitialMs: number;
  pollMaxMs: number;
  pollBackoffAfterMs: number;
  pollSlowMaxMs: number;
}

const STATUS_ACTIONS = ['CREATE', 'UPDATE', 'DELETE', 'ROLLBACK', 'SUSPEND', 'RESUME', 'ADOPT', 'SNAPSHOT', 'CHECK', 'RESTORE'];
/** Every status a stack can rest in. */
const SETTLED = STATUS_ACTIONS.flatMap((a) => [`${a}_COMPLETE`, `${a}_FAILED`]).concat('INIT_COMPLETE');

export function refOf(stack: HeatStack): HeatStackRef {
  return { name: stack.stack_name, id: stack.id };
}

/** The stack a listed row lives in (its `stack` link), if it has one. */
export function stackOfRow(r: HeatResource): HeatStackRef | undefined {
  try {
    return HeatClient.stackOfResource(r);
  } catch {
    return undefined;
  }
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

/** Runs `fn`, turning OpenStack failures into catalog errors named after the operation. */
export async function guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toDriverError(e, what);
  }
}

/**
 * The driver's lasting state: its options, the clients per VIM connection and the in-memory
 * caches the observation uses (the last listing per stack, what a wait read on the way).
 */
export class OpenStackSessions {
  private readonly sessions = new Map<string, VimSession>();
  /** The last observation per top stack id (see {@link ListingCacheEntry}). */
  readonly listings = new Map<string, ListingCacheEntry>();
  /** What the last stack wait read on the way, per top stack id (see {@link Prefetch}). */
  readonly prefetched = new Map<string, Prefetch>();
  private readonly pollInitialMs: number | undefined;
  private readonly pollMaxMs: number | undefined;
  readonly nestedDepth: number;
  private readonly http: HttpRetryOptions | undefined;
  readonly useNova: boolean;
  private readonly outbound: OutboundGuard | undefined;

  constructor(options: OpenStackDriverOptions = {}) {
    this.outbound = options.outbound;
    this.pollInitialMs = options.pollInitialMs;
    this.pollMaxMs = options.pollMaxMs;
    this.nestedDepth = Math.max(2, options.nestedDepth ?? 2);
    this.http = options.http;
    this.useNova = options.useNova ?? true;
  }

  /** The cached clients of a VIM connection (keyed by a digest of endpoint + credentials). */
  session(vim: VimConnection): VimSession {
    const ii = vim.interfaceInfo ?? {};
    const ai = vim.accessInfo ?? {};
    const creds = keystoneCredentialsOf(vim);
    const { authUrl, username, password, projectName, projectId } = creds;
    if (!authUrl) throw vnfmError('VNFM_ERR_VIM_INVALID', 'the OpenStack VIM connection has no interfaceInfo.endpoint (Keystone v3 URL)');
    if (!username || password === undefined) throw vnfmError('VNFM_ERR_VIM_INVALID', 'the OpenStack VIM connection needs accessInfo.username and accessInfo.password');
    if (!projectName && !projectId) throw vnfmError('VNFM_ERR_VIM_INVALID', 'the OpenStack VIM connection needs accessInfo.project (or projectId)');
    const region = str(ai.region) ?? str(ii.region);
    const heatEndpoint = str(ii.heatEndpoint);
    const tlsFetch = fetchForVimTls(ii);
    // every request checked against the VIM outbound rules right before it goes, pinned to the checked addresses
    const tlsFetchOf = this.outbound ? this.outbound.fetch(tlsFetch ?? this.http?.fetch) : tlsFetch;
    const key = keystoneSessionKey(creds, [region, heatEndpoint, ii.skipCertificateVerification ?? null, ii.ssl_ca_cert ?? ii.caCert ?? null]);
    const cached = this.sessions.get(key);
    if (cached !== undefined) return cached;
    const auth = new KeystoneAuth({
      ...keystoneAuthOptionsOf({ ...creds, authUrl, username, password }),
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
   * Poll intervals of stack waits: short (`vim.stackPollMs`) while a typical stack action ends,
   * doubling to `vim.stackPollMaxMs` after `vim.stackPollBackoffAfterMs`. The driver's options
   * override the first two.
   */
  poll(v: VimSettings): PollSettings {
    const pollInitialMs = this.pollInitialMs ?? v.stackPollInitialMs ?? 100;
    const pollMaxMs = Math.max(this.pollMaxMs ?? v.stackPollMs ?? 250, pollInitialMs);
    return { pollInitialMs, pollMaxMs, pollBackoffAfterMs: v.stackPollBackoffAfterMs ?? 60_000, pollSlowMaxMs: Math.max(v.stackPollMaxMs ?? 2000, pollMaxMs) };
  }

  keepPrefetch(stackId: string, pre: Prefetch): void {
    this.prefetched.delete(stackId);
    this.prefetched.set(stackId, pre);
    while (this.prefetched.size > LISTING_CACHE_MAX) this.prefetched.delete(this.prefetched.keys().next().value as string);
  }

  /** The prefetch of this operation's last wait on stack `stackId`, removed (used once). */
  takePrefetch(ctx: ObserveContext, stackId: string): Prefetch | undefined {
    const pre = this.prefetched.get(stackId);
    if (pre === undefined) return undefined;
    this.prefetched.delete(stackId);
    return pre.opId === ctx.op?.id ? pre : undefined;
  }

  remember(ref: HeatStackRef, entry: ListingCacheEntry): void {
    this.listings.delete(ref.id);
    this.listings.set(ref.id, entry);
    while (this.listings.size > LISTING_CACHE_MAX) this.listings.delete(this.listings.keys().next().value as string);
  }
}

export function timeoutMins(ctx: InfraContext): number {
  return Math.max(1, Math.ceil(ctx.vimSettings.stackTimeoutMs / 60_000));
}

/**
 * The instance's live stack, or null: tries the stack recorded during this operation, the one
 * in `instantiatedVnfInfo.metadata`, then the name `vnf-<id>`. A stack Heat reports
 * `DELETE_COMPLETE` (an entire heal that deleted it) does not count. Read without its outputs
 * (the driver uses none).
 */
export async function findStack(ctx: ObserveContext, heat: HeatClient): Promise<HeatStack | null> {
  const name = stackNameOf(ctx.instance.id);
  const md = ctx.instance.instantiatedVnfInfo?.metadata ?? {};
  const candidates: string[] = [];
  const fromState = str(ctx.state?.stack);
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

export async function requireStack(ctx: InfraContext, heat: HeatClient): Promise<HeatStack> {
  const stack = await findStack(ctx, heat);
  if (stack === null) throw stackMissing(ctx);
  ctx.state.stack = stackRefString(refOf(stack));
  return stack;
}

/**
 * The error for a stack that is gone (404, or `DELETE_COMPLETE`) while the instance has one:
 * terminal (a retry cannot bring it back), and the instance information is left as it was.
 */
export function stackMissing(ctx: ObserveContext): Error {
  const md = ctx.instance.instantiatedVnfInfo?.metadata ?? {};
  const known = str(ctx.state?.stack) ?? (str(md.stack_id) ? `${str(md.stack_name) ?? stackNameOf(ctx.instance.id)}/${idOf(str(md.stack_id) as string)}` : stackNameOf(ctx.instance.id));
  return vnfmError(
    'VNFM_ERR_INFRA_STACK_MISSING',
    `the Heat stack ${known} of VNF instance ${ctx.instance.id} does not exist any more (not found, or DELETE_COMPLETE): it was deleted outside the VNFM. The VNFM cannot see the VNF's resources, so the instance information was left unchanged; mark the operation failed, then heal the entire VNF (additionalParams.all: true) to re-create the stack, or terminate the instance`,
  );
}

export function waitStack(rt: OpenStackSessions, ctx: InfraContext, heat: HeatClient, ref: HeatStackRef, target: string): Promise<HeatStack> {
  return heat.waitForStatus(ref, {
    target,
    ...rt.poll(ctx.vimSettings),
    timeoutMs: ctx.vimSettings.stackTimeoutMs,
    signal: ctx.signal,
    onPoll: (st) => ctx.log.debug({ step: 'heat.wait', stack: ref.name, status: st.stack_status }, 'stack status'),
  });
}

/** Waits until no action runs on the stack, whatever its outcome (a retry after a crash mid-wait). */
export async function settle(rt: OpenStackSessions, ctx: InfraContext, heat: HeatClient, ref: HeatStackRef, known?: HeatStack): Promise<HeatStack> {
  const st = known ?? (await heat.getStack(ref, { signal: ctx.signal }));
  if (!st.stack_status.endsWith('_IN_PROGRESS')) return st;
  ctx.log.info({ step: 'heat.settle', stack: ref.name, status: st.stack_status }, 'waiting for the running stack action to end');
  return heat.waitForStatus(ref, { target: SETTLED, failOn: [], timeoutMs: ctx.vimSettings.stackTimeoutMs, signal: ctx.signal, ...rt.poll(ctx.vimSettings) });
}

/** The persisted progress `ctx.state[key]` of a VNFC heal, scale or scale rollback (created empty). */
export function progressOf(ctx: InfraContext, key: string): UpdateProgress {
  const cur = ctx.state[key];
  if (isObject(cur) && Array.isArray(cur.marked) && typeof cur.updateIssued === 'boolean') return cur as unknown as UpdateProgress;
  const fresh: UpdateProgress = { marked: [], updateIssued: false };
  ctx.state[key] = fresh;
  return fresh;
}

/** Marks one resource unhealthy in the stack that owns it, once per operation (checkpointed). */
export async function mark(ctx: InfraContext, s: VimSession, l: LocatedResource, progress: UpdateProgress, reason: string, bestEffort = false): Promise<void> {
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

