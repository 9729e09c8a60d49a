/**
 * Heat (OpenStack Orchestration v1) REST client: the calls a VNF Manager makes to create,
 * heal, scale and delete a VNF's stack.
 *
 * Why these shapes: a heal marks the exact resource unhealthy *in the nested stack that owns
 * it* and then updates the top stack with PATCH (Heat's "existing" update keeps template, files,
 * environment and parameters), so the client exposes nested listings (`nested_depth`) with the
 * link to each row's own stack, PATCH and PUT updates separately, and a wait that reports
 * Heat's `stack_status_reason` when a stack fails. Stacks are addressed as `{name}/{id}`
 * whenever possible: by name alone Heat answers 302, which we resolve once ourselves.
 * Answers are returned as Heat sends them (snake_case), typed with the fields a driver reads.
 */
import { setTimeout as sleepTimer } from 'node:timers/promises';
import type { HttpResponse } from './http-retry.ts';
import type { AuthedRequest, KeystoneAuth } from './keystone-auth.ts';
import { OpenStackError, OpenStackErrorKind, parseJsonAnswer } from './openstack-error.ts';

/** A stack's unique address: Heat needs both to avoid a redirect. */
export interface HeatStackRef {
  name: string;
  id: string;
}

/**
 * A stack given by `{name, id}`, by `"name/id"`, by name alone or by id alone (the last two
 * cost one extra request: Heat answers them with a 302 to `name/id`).
 */
export type StackIdentifier = HeatStackRef | string;

/** Heat's `links` entries. */
export interface HeatLink {
  href: string;
  rel: string;
}

/** Heat stack status strings (`<ACTION>_<STATE>`); other values are passed through as is. */
export type HeatStackStatus =
  | `${'CREATE' | 'UPDATE' | 'DELETE' | 'ROLLBACK' | 'SUSPEND' | 'RESUME' | 'ADOPT' | 'SNAPSHOT' | 'CHECK' | 'RESTORE'}_${'IN_PROGRESS' | 'COMPLETE' | 'FAILED'}`
  | 'INIT_COMPLETE';

/** One output of a stack. */
export interface HeatOutput {
  output_key: string;
  output_value?: unknown;
  description?: string;
  output_error?: string;
}

/** A stack as `GET /stacks/{name}/{id}` returns it (fields a driver uses; others kept). */
export interface HeatStack {
  id: string;
  stack_name: string;
  stack_status: HeatStackStatus | string;
  stack_status_reason: string;
  creation_time?: string;
  updated_time?: string | null;
  deletion_time?: string | null;
  parameters?: Record<string, string>;
  outputs?: HeatOutput[];
  links?: HeatLink[];
  parent?: string | null;
  timeout_mins?: number | null;
  disable_rollback?: boolean;
  tags?: string[] | null;
  [key: string]: unknown;
}

/** One row of `GET /stacks/{name}/{id}/resources`. */
export interface HeatResource {
  resource_name: string;
  logical_resource_id?: string;
  /** Id of the real thing (a server UUID, a nested stack UUID); '' while not created. */
  physical_resource_id: string;
  resource_type: string;
  resource_status: string;
  resource_status_reason: string;
  creation_time?: string;
  updated_time?: string;
  required_by?: string[];
  /** With `nested_depth`: the name of the resource (in the parent stack) whose nested stack holds this row. */
  parent_resource?: string;
  /** `self`, `stack` (the stack this row lives in) and, for nested-stack resources, `nested`. */
  links: HeatLink[];
  attributes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** One event (`GET .../events`). */
export interface HeatEvent {
  id: string;
  event_time: string;
  resource_name: string;
  logical_resource_id?: string;
  physical_resource_id?: string;
  resource_status: string;
  resource_status_reason: string;
  links?: HeatLink[];
  [key: string]: unknown;
}

/** A stack in a listing (`GET /stacks`). */
export interface HeatStackSummary {
  id: string;
  stack_name: string;
  stack_status: string;
  stack_status_reason?: string;
  creation_time?: string;
  updated_time?: string | null;
  links?: HeatLink[];
  [key: string]: unknown;
}

/** Body of a stack creation. */
export interface CreateStackRequest {
  name: string;
  /** HOT as text (YAML/JSON) or as an object. */
  template: string | Record<string, unknown>;
  /** Nested templates and get_file contents, by the names the template uses. */
  files?: Record<string, string>;
  parameters?: Record<string, unknown>;
  /** Environment as an object (e.g. `{ resource_registry: {...} }`) or as text. */
  environment?: Record<string, unknown> | string;
  /** @default 60 (Heat's own default is none) */
  timeoutMins?: number;
  /** Keep failed resources for inspection instead of rolling back. @default true */
  disableRollback?: boolean;
  tags?: string[];
}

/** Body of a PATCH ("existing") update: what is omitted keeps its current value. */
export interface StackPatch {
  parameters?: Record<string, unknown>;
  template?: string | Record<string, unknown>;
  files?: Record<string, string>;
  environment?: Record<string, unknown> | string;
  /** Parameters to reset to their defaults. */
  clearParameters?: string[];
  timeoutMins?: number;
  disableRollback?: boolean;
}

/** Body of a PUT update: the stack becomes exactly this (template required). */
export interface StackPut {
  template: string | Record<string, unknown>;
  files?: Record<string, string>;
  parameters?: Record<string, unknown>;
  environment?: Record<string, unknown> | string;
  timeoutMins?: number;
  disableRollback?: boolean;
}

/** Options of {@link HeatClient.waitForStatus}. */
export interface WaitForStatusOptions {
  /** Status (or statuses) to wait for. */
  target: HeatStackStatus | string | readonly (HeatStackStatus | string)[];
  /**
   * Statuses that end the wait with an error. Default: every `*_FAILED`, plus `ROLLBACK_COMPLETE`
   * and `DELETE_COMPLETE` unless targeted (a stack there will not reach the target by itself).
   */
  failOn?: readonly (HeatStackStatus | string)[];
  /** @default 600000 */
  timeoutMs?: number;
  /** First poll interval; doubles per poll. @default the client's `pollInitialMs` */
  pollInitialMs?: number;
  /** Largest poll interval (during the first `pollBackoffAfterMs`). @default the client's `pollMaxMs` */
  pollMaxMs?: number;
  /**
   * After this long the interval keeps doubling up to `pollSlowMaxMs` (short polls while a
   * typical action ends, fewer requests in a long one). @default never
   */
  pollBackoffAfterMs?: number;
  /** Largest poll interval after `pollBackoffAfterMs`. @default `pollMaxMs` */
  pollSlowMaxMs?: number;
  signal?: AbortSignal;
  /** Called with each polled stack (progress logs). */
  onPoll?: (stack: HeatStack) => void;
}

/** Options of the waits for a deleted stack ({@link HeatClient.waitForDeleted}, {@link HeatClient.waitUntilUnlisted}). */
export type StackDeletionWaitOptions = { timeoutMs?: number; signal?: AbortSignal } & Pick<WaitForStatusOptions, 'pollInitialMs' | 'pollMaxMs' | 'pollBackoffAfterMs' | 'pollSlowMaxMs'>;

/** Options of {@link HeatClient}. */
export interface HeatClientOptions {
  /** Authenticated session of the VIM. */
  auth: KeystoneAuth;
  /** Catalog type of Heat. @default 'orchestration' */
  serviceType?: string;
  /** First poll interval of waits. @default 50 */
  pollInitialMs?: number;
  /** Largest poll interval of waits. @default 2000 */
  pollMaxMs?: number;
  /** Per-request timeout override (otherwise the KeystoneAuth http settings). */
  requestTimeoutMs?: number;
}

const DEFAULT_FAIL_EXTRA = ['ROLLBACK_COMPLETE', 'DELETE_COMPLETE'];

/** Heat's 409 for "another action runs on this stack": it ends by itself, so retrying helps. */
const retryActionInProgress = (errorType: string | undefined): boolean => errorType === 'ActionInProgress';

function seg(s: string): string {
  return encodeURIComponent(s);
}

function withoutUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as Partial<T>;
}

/**
 * Heat v1 client on top of a {@link KeystoneAuth} session. Every method throws
 * {@link OpenStackError} on an unexpected answer, with Heat's error type and message.
 */
export class HeatClient {
  private readonly auth: KeystoneAuth;
  private readonly serviceType: string;
  private readonly pollInitialMs: number;
  private readonly pollMaxMs: number;
  private readonly requestTimeoutMs: number | undefined;

  constructor(options: HeatClientOptions) {
    this.auth = options.auth;
    this.serviceType = options.serviceType ?? 'orchestration';
    this.pollInitialMs = options.pollInitialMs ?? 50;
    this.pollMaxMs = options.pollMaxMs ?? 2000;
    this.requestTimeoutMs = options.requestTimeoutMs;
    if (!(this.pollInitialMs > 0) || !(this.pollMaxMs >= this.pollInitialMs)) {
      throw new RangeError('HeatClient: need 0 < pollInitialMs <= pollMaxMs');
    }
  }

  /**
   * The `(name, id)` of the stack a resource row (from {@link listResources} with
   * `nestedDepth`) lives in, taken from its `stack` link. This is where `markUnhealthy` must be
   * sent for a resource inside a group member.
   */
  static stackOfResource(resource: Pick<HeatResource, 'links'>): HeatStackRef {
    const link = resource.links?.find((l) => l.rel === 'stack');
    const ref = link === undefined ? undefined : HeatClient.refFromUrl(link.href);
    if (ref === undefined) {
      throw new OpenStackError({ service: 'heat', kind: OpenStackErrorKind.protocol, detail: 'heat resource row has no usable "stack" link', retryable: false });
    }
    return ref;
  }

  /** The `(name, id)` of the nested stack a resource owns (its `nested` link), if any. */
  static nestedStackOfResource(resource: Pick<HeatResource, 'links'>): HeatStackRef | undefined {
    const link = resource.links?.find((l) => l.rel === 'nested');
    return link === undefined ? undefined : HeatClient.refFromUrl(link.href);
  }

  /** Parses `.../stacks/{name}/{id}[/...]` out of a Heat URL or path. */
  static refFromUrl(href: string): HeatStackRef | undefined {
    const m = /\/stacks\/([^/?#]+)\/([^/?#]+)/.exec(href);
    if (m === null) return undefined;
    return { name: decodeURIComponent(m[1] as string), id: decodeURIComponent(m[2] as string) };
  }

  // ---------------------------------------------------------------------------------------
  // stacks

  /**
   * `POST /stacks`. Returns at once (the stack is then `CREATE_IN_PROGRESS`); wait with
   * {@link waitForStatus}. Not retried after an ambiguous failure (timeout, 504): a second POST
   * would answer 409 `StackExists`.
   */
  async createStack(req: CreateStackRequest, opts: { signal?: AbortSignal } = {}): Promise<HeatStackRef & { links: HeatLink[] }> {
    const body = withoutUndefined({
      stack_name: req.name,
      template: req.template,
      files: req.files ?? {},
      parameters: req.parameters ?? {},
      environment: req.environment,
      timeout_mins: req.timeoutMins ?? 60,
      disable_rollback: req.disableRollback ?? true,
      tags: req.tags === undefined ? undefined : req.tags.join(','),
    });
    const res = await this.call({ method: 'POST', path: '/stacks', body, idempotent: false, ...sig(opts.signal) });
    this.expect(res, [201], `create stack ${req.name}`);
    const stack = (this.json(res) as { stack?: { id?: string; links?: HeatLink[] } }).stack;
    if (stack?.id === undefined) throw this.protocolError(res, 'create stack answer has no stack id');
    return { name: req.name, id: stack.id, links: stack.links ?? [] };
  }

  /** `GET /stacks/{nameOrId}`: follows Heat's 302 to `{name}/{id}`. Accepts any {@link StackIdentifier}. */
  async getStack(stack: StackIdentifier, opts: { signal?: AbortSignal; resolveOutputs?: boolean } = {}): Promise<HeatStack> {
    const ref = typeof stack === 'string' && !stack.includes('/') ? await this.resolveStack(stack, opts.signal === undefined ? {} : { signal: opts.signal }) : this.parseRef(stack);
    return this.getStackByNameId(ref.name, ref.id, opts);
  }

  /** Like {@link getStack} but null when Heat does not know the stack (404). */
  async findStack(stack: StackIdentifier, opts: { signal?: AbortSignal; resolveOutputs?: boolean } = {}): Promise<HeatStack | null> {
    try {
      return await this.getStack(stack, opts);
    } catch (e) {
      if (OpenStackError.isStatus(e, 404)) return null;
      throw e;
    }
  }

  /**
   * `GET /stacks/{name}/{id}` (no redirect). A soft-deleted stack still answers 200 `DELETE_COMPLETE`.
   * `resolveOutputs: false` (`resolve_outputs=False`) skips the outputs (cheaper for Heat: a
   * group's nested stack resolves attributes of every member for them); the answer then has none.
   */
  async getStackByNameId(name: string, id: string, opts: { signal?: AbortSignal; resolveOutputs?: boolean } = {}): Promise<HeatStack> {
    const res = await this.call({ path: `/stacks/${seg(name)}/${seg(id)}`, ...(opts.resolveOutputs === false ? { query: { resolve_outputs: 'False' } } : {}), ...sig(opts.signal) });
    this.expect(res, [200], `get stack ${name}`);
    const stack = (this.json(res) as { stack?: HeatStack }).stack;
    if (stack === undefined) throw this.protocolError(res, 'stack answer has no "stack"');
    return stack;
  }

  /**
   * Turns a stack name (or id) into `{name, id}` with Heat's 302 (`GET /stacks/{name}` ->
   * `Location: .../stacks/{name}/{id}`). Strings with a '/' and refs are returned parsed.
   */
  async resolveStack(stack: StackIdentifier, opts: { signal?: AbortSignal } = {}): Promise<HeatStackRef> {
    if (typeof stack !== 'string' || stack.includes('/')) return this.parseRef(stack);
    const res = await this.call({ path: `/stacks/${seg(stack)}`, ...sig(opts.signal) });
    if (res.status >= 300 && res.status < 400) {
      const loc = res.headers.get('location');
      const ref = loc === null ? undefined : HeatClient.refFromUrl(loc);
      if (ref === undefined) throw this.protocolError(res, `redirect for stack ${stack} has no usable Location`);
      return ref;
    }
    if (res.status === 200) {
      const s = (this.json(res) as { stack?: HeatStack }).stack;
      if (s !== undefined) return { name: s.stack_name, id: s.id };
    }
    this.expect(res, [302], `find stack ${stack}`);
    throw this.protocolError(res, `cannot resolve stack ${stack}`);
  }

  /** `GET /stacks` with optional filters (e.g. `{ name: 'vnf-1' }`); includes only live (not soft-deleted) stacks. */
  async listStacks(filters: { name?: string; status?: string; showNested?: boolean; limit?: number; tags?: string } = {}, opts: { signal?: AbortSignal } = {}): Promise<HeatStackSummary[]> {
    const res = await this.call({
      path: '/stacks',
      query: { stack_name: filters.name, status: filters.status, show_nested: filters.showNested, limit: filters.limit, tags: filters.tags },
      ...sig(opts.signal),
    });
    this.expect(res, [200], 'list stacks');
    return (this.json(res) as { stacks?: HeatStackSummary[] }).stacks ?? [];
  }

  /**
   * `PATCH /stacks/{name}/{id}`: update keeping everything not given (`openstack stack update
   * --existing`). With an empty patch this is the "re-converge" that replaces resources marked
   * unhealthy. Returns once Heat accepted it (202, then `UPDATE_IN_PROGRESS`). A 409
   * `ActionInProgress` is retried with back-off.
   */
  async updateStackPatch(stack: StackIdentifier, patch: StackPatch = {}, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const ref = await this.resolveStack(stack, opts);
    const body = withoutUndefined({
      parameters: patch.parameters,
      template: patch.template,
      files: patch.files,
      environment: patch.environment,
      clear_parameters: patch.clearParameters,
      timeout_mins: patch.timeoutMins,
      disable_rollback: patch.disableRollback,
    });
    const res = await this.call({ method: 'PATCH', path: this.stackPath(ref), body, retryConflict: retryActionInProgress, ...sig(opts.signal) });
    this.expect(res, [202, 200], `update (PATCH) stack ${ref.name}`);
  }

  /** `PUT /stacks/{name}/{id}`: replace template, files, environment and parameters. */
  async updateStackPut(stack: StackIdentifier, put: StackPut, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const ref = await this.resolveStack(stack, opts);
    const body = withoutUndefined({
      template: put.template,
      files: put.files ?? {},
      parameters: put.parameters ?? {},
      environment: put.environment ?? {},
      timeout_mins: put.timeoutMins,
      disable_rollback: put.disableRollback ?? true,
    });
    const res = await this.call({ method: 'PUT', path: this.stackPath(ref), body, retryConflict: retryActionInProgress, ...sig(opts.signal) });
    this.expect(res, [202, 200], `update (PUT) stack ${ref.name}`);
  }

  /**
   * `DELETE /stacks/{name}/{id}`; 204 then `DELETE_IN_PROGRESS`. A stack Heat does not know
   * counts as deleted (returns false). Wait with {@link waitForDeleted} before re-using the name.
   */
  async deleteStack(stack: StackIdentifier, opts: { signal?: AbortSignal } = {}): Promise<boolean> {
    let ref: HeatStackRef;
    try {
      ref = await this.resolveStack(stack, opts);
    } catch (e) {
      if (OpenStackError.isStatus(e, 404)) return false;
      throw e;
    }
    const res = await this.call({ method: 'DELETE', path: this.stackPath(ref), retryConflict: retryActionInProgress, ...sig(opts.signal) });
    if (res.status === 404) return false;
    this.expect(res, [204, 200], `delete stack ${ref.name}`);
    return true;
  }

  /** `GET .../template`: the stack's current template as an object. */
  async getTemplate(stack: StackIdentifier): Promise<Record<string, unknown>> {
    return this.getJson(stack, '/template', 'get template');
  }

  /** `GET .../files`: the nested templates / get_file contents the stack was given. */
  async getFiles(stack: StackIdentifier): Promise<Record<string, string>> {
    return this.getJson(stack, '/files', 'get files') as Promise<Record<string, string>>;
  }

  /** `GET .../environment`: the stack's environment (`resource_registry`, `parameters`, ...). */
  async getEnvironment(stack: StackIdentifier): Promise<Record<string, unknown>> {
    return this.getJson(stack, '/environment', 'get environment');
  }

  /** `GET .../outputs/{key}`: one output's value. */
  async getOutput(stack: StackIdentifier, key: string): Promise<unknown> {
    const body = (await this.getJson(stack, `/outputs/${seg(key)}`, `get output ${key}`)) as { output?: HeatOutput };
    if (body.output?.output_error !== undefined) {
      throw new OpenStackError({ service: 'heat', kind: OpenStackErrorKind.http, detail: `heat output ${key}: ${body.output.output_error}`, retryable: false });
    }
    return body.output?.output_value;
  }

  // ---------------------------------------------------------------------------------------
  // resources

  /**
   * `GET .../resources[?nested_depth=N]`. With a depth, rows of nested stacks come too, each
   * with `parent_resource` and a `stack` link to the stack it lives in (see {@link stackOfResource}).
   * `withDetail` adds each row's `attributes` (Heat resolves them: keep the listing small with
   * `filters`); a filter with several values matches any of them (`name: ['CP1', 'CP2']`).
   */
  async listResources(stack: StackIdentifier, opts: { nestedDepth?: number; withDetail?: boolean; filters?: Record<string, string | readonly string[]>; signal?: AbortSignal } = {}): Promise<HeatResource[]> {
    const ref = await this.resolveStack(stack, sig(opts.signal));
    const res = await this.call({
      path: `${this.stackPath(ref)}/resources`,
      query: { ...(opts.filters ?? {}), nested_depth: opts.nestedDepth || undefined, with_detail: opts.withDetail || undefined },
      ...sig(opts.signal),
    });
    this.expect(res, [200], `list resources of ${ref.name}`);
    return (this.json(res) as { resources?: HeatResource[] }).resources ?? [];
  }

  /** `GET .../resources/{name}`: one resource with its `attributes`. */
  async getResource(stack: StackIdentifier, resourceName: string): Promise<HeatResource> {
    const body = (await this.getJson(stack, `/resources/${seg(resourceName)}`, `get resource ${resourceName}`)) as { resource?: HeatResource };
    if (body.resource === undefined) throw new OpenStackError({ service: 'heat', kind: OpenStackErrorKind.protocol, detail: 'resource answer has no "resource"', retryable: false });
    return body.resource;
  }

  /**
   * `PATCH .../resources/{name}` `{mark_unhealthy: true, resource_status_reason}`: the resource
   * goes to `CHECK_FAILED` and the next update of the top stack replaces it. `stack` must be
   * the stack that owns the resource (a nested member stack for a VDU inside a group). Unknown
   * resource: 404 `ResourceNotFound`.
   */
  async markUnhealthy(stack: StackIdentifier, resourceName: string, reason: string, opts: { unhealthy?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    const ref = await this.resolveStack(stack, sig(opts.signal));
    const res = await this.call({
      method: 'PATCH',
      path: `${this.stackPath(ref)}/resources/${seg(resourceName)}`,
      body: { mark_unhealthy: opts.unhealthy ?? true, resource_status_reason: reason },
      retryConflict: retryActionInProgress,
      ...sig(opts.signal),
    });
    this.expect(res, [200, 202, 204], `mark ${resourceName} ${opts.unhealthy === false ? 'healthy' : 'unhealthy'} in ${ref.name}`);
  }

  /**
   * `POST .../resources/{name}/signal` (e.g. a ScalingPolicy). Returns at once; the effect runs
   * in the background. Never retried once it may have reached Heat (a signal is not idempotent).
   */
  async signal(stack: StackIdentifier, resourceName: string, details: unknown = null): Promise<void> {
    const ref = await this.resolveStack(stack);
    const res = await this.call({ method: 'POST', path: `${this.stackPath(ref)}/resources/${seg(resourceName)}/signal`, body: details, idempotent: false });
    this.expect(res, [200, 202, 204], `signal ${resourceName} in ${ref.name}`);
  }

  /**
   * `GET .../events` (or `.../resources/{name}/events` with `resourceName`), oldest first by
   * default.
   */
  async listEvents(
    stack: StackIdentifier,
    opts: { resourceName?: string; sortDir?: 'asc' | 'desc'; limit?: number; marker?: string; nestedDepth?: number; filters?: Record<string, string> } = {},
  ): Promise<HeatEvent[]> {
    const ref = await this.resolveStack(stack);
    const path = opts.resourceName === undefined ? `${this.stackPath(ref)}/events` : `${this.stackPath(ref)}/resources/${seg(opts.resourceName)}/events`;
    const res = await this.call({
      path,
      query: { ...(opts.filters ?? {}), sort_dir: opts.sortDir ?? 'asc', limit: opts.limit, marker: opts.marker, nested_depth: opts.nestedDepth || undefined },
    });
    this.expect(res, [200], `list events of ${ref.name}`);
    return (this.json(res) as { events?: HeatEvent[] }).events ?? [];
  }

  // ---------------------------------------------------------------------------------------
  // waits

  /**
   * Polls the stack (50 ms, doubling to 2 s by default; with `pollBackoffAfterMs`, doubling to
   * `pollMaxMs` first and to `pollSlowMaxMs` after that long) until its status is one of `target`.
   * Throws {@link OpenStackError} kind `stack_failed` (with Heat's `stack_status_reason`) on a
   * `failOn` status and kind `wait_timeout` after `timeoutMs`. A 404 while waiting for
   * `DELETE_COMPLETE` counts as deleted.
   */
  async waitForStatus(stack: StackIdentifier, opts: WaitForStatusOptions): Promise<HeatStack> {
    const targets = new Set<string>(typeof opts.target === 'string' ? [opts.target] : opts.target);
    const failOn = new Set<string>(opts.failOn ?? DEFAULT_FAIL_EXTRA.filter((s) => !targets.has(s)));
    const failAnyFailed = opts.failOn === undefined;
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const maxMs = opts.pollMaxMs ?? this.pollMaxMs;
    const slowMaxMs = Math.max(maxMs, opts.pollSlowMaxMs ?? maxMs);
    const backoffAt = opts.pollBackoffAfterMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + opts.pollBackoffAfterMs;
    let interval = Math.min(opts.pollInitialMs ?? this.pollInitialMs, maxMs);
    const deadline = Date.now() + timeoutMs;
    const ref = await this.resolveStack(stack, sig(opts.signal));
    let last: HeatStack | undefined;
    for (;;) {
      let current: HeatStack | undefined;
      try {
        current = await this.getStackByNameId(ref.name, ref.id, sig(opts.signal));
      } catch (e) {
        if (OpenStackError.isStatus(e, 404) && targets.has('DELETE_COMPLETE')) {
          return { ...(last ?? { id: ref.id, stack_name: ref.name, stack_status_reason: '' }), stack_status: 'DELETE_COMPLETE' } as HeatStack;
        }
        throw e;
      }
      last = current;
      opts.onPoll?.(current);
      const status = current.stack_status;
      if (targets.has(status)) return current;
      if (failOn.has(status) || (failAnyFailed && status.endsWith('_FAILED'))) {
        throw new OpenStackError({
          service: 'heat',
          kind: OpenStackErrorKind.stackFailed,
          detail: `heat stack ${ref.name} (${ref.id}) is ${status} while waiting for ${[...targets].join('/')}: ${current.stack_status_reason || 'no reason given'}`,
          retryable: false,
          stackStatus: status,
          stackStatusReason: current.stack_status_reason,
        });
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new OpenStackError({
          service: 'heat',
          kind: OpenStackErrorKind.waitTimeout,
          detail: `heat stack ${ref.name} (${ref.id}) did not reach ${[...targets].join('/')} within ${timeoutMs} ms (last ${status}: ${current.stack_status_reason || 'no reason given'})`,
          retryable: false,
          stackStatus: status,
          stackStatusReason: current.stack_status_reason,
        });
      }
      await this.pause(Math.min(interval, left), opts.signal, `wait for stack ${ref.name}`);
      interval = Math.min(interval * 2, Date.now() >= backoffAt ? slowMaxMs : maxMs);
    }
  }

  /**
   * Waits until a deleted stack is really gone: `DELETE_COMPLETE` (or 404) and then no longer
   * listed under its name. Why both: Heat reports `DELETE_COMPLETE` a moment before it
   * soft-deletes the row, and a create with the same name in that window gets 409 `StackExists`.
   */
  async waitForDeleted(
    stack: StackIdentifier,
    opts: StackDeletionWaitOptions = {},
  ): Promise<void> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const started = Date.now();
    let ref: HeatStackRef;
    try {
      ref = await this.resolveStack(stack, sig(opts.signal));
    } catch (e) {
      if (OpenStackError.isStatus(e, 404)) return;
      throw e;
    }
    const { signal: _s, timeoutMs: _t, ...poll } = opts;
    await this.waitForStatus(ref, { target: 'DELETE_COMPLETE', timeoutMs, ...poll, ...sig(opts.signal) });
    let interval = opts.pollInitialMs ?? this.pollInitialMs;
    for (;;) {
      const listed = await this.listStacks({ name: ref.name }, sig(opts.signal));
      if (!listed.some((s) => s.id === ref.id)) return;
      const left = started + timeoutMs - Date.now();
      if (left <= 0) {
        throw new OpenStackError({
          service: 'heat',
          kind: OpenStackErrorKind.waitTimeout,
          detail: `heat stack ${ref.name} (${ref.id}) still listed ${timeoutMs} ms after delete`,
          retryable: false,
          stackStatus: 'DELETE_COMPLETE',
        });
      }
      await this.pause(Math.min(interval, left), opts.signal, `wait for the deletion of stack ${ref.name}`);
      interval = Math.min(interval * 2, opts.pollMaxMs ?? this.pollMaxMs);
    }
  }

  /**
   * Waits until a deleted stack is no longer listed under its name (`GET /stacks?stack_name=`),
   * polling only that listing: the moment a create of the same name can succeed. Throws kind
   * `stack_failed` when the listing shows it `DELETE_FAILED`, `wait_timeout` after `timeoutMs`.
   */
  async waitUntilUnlisted(
    ref: HeatStackRef,
    opts: StackDeletionWaitOptions = {},
  ): Promise<void> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const started = Date.now();
    const maxMs = opts.pollMaxMs ?? this.pollMaxMs;
    const slowMaxMs = Math.max(maxMs, opts.pollSlowMaxMs ?? maxMs);
    let interval = Math.min(opts.pollInitialMs ?? this.pollInitialMs, maxMs);
    for (;;) {
      const listed = (await this.listStacks({ name: ref.name }, sig(opts.signal))).find((s) => s.id === ref.id);
      if (listed === undefined) return;
      if (listed.stack_status === 'DELETE_FAILED') {
        throw new OpenStackError({
          service: 'heat',
          kind: OpenStackErrorKind.stackFailed,
          detail: `heat stack ${ref.name} (${ref.id}) is DELETE_FAILED while waiting for its deletion: ${listed.stack_status_reason || 'no reason given'}`,
          retryable: false,
          stackStatus: listed.stack_status,
          ...(listed.stack_status_reason === undefined ? {} : { stackStatusReason: listed.stack_status_reason }),
        });
      }
      const left = started + timeoutMs - Date.now();
      if (left <= 0) {
        throw new OpenStackError({
          service: 'heat',
          kind: OpenStackErrorKind.waitTimeout,
          detail: `heat stack ${ref.name} (${ref.id}) still listed ${timeoutMs} ms after delete (${listed.stack_status})`,
          retryable: false,
          stackStatus: listed.stack_status,
        });
      }
      await this.pause(Math.min(interval, left), opts.signal, `wait for the deletion of stack ${ref.name}`);
      const slow = opts.pollBackoffAfterMs !== undefined && Date.now() - started >= opts.pollBackoffAfterMs;
      // DELETE_COMPLETE: Heat removes it from the listing next.
      interval = listed.stack_status === 'DELETE_COMPLETE' ? (opts.pollInitialMs ?? this.pollInitialMs) : Math.min(interval * 2, slow ? slowMaxMs : maxMs);
    }
  }

  // ---------------------------------------------------------------------------------------
  // plumbing

  /** Sleeps between two polls of a wait; the op's cancellation ends it with kind `aborted` ("<what> cancelled"). */
  private async pause(ms: number, signal: AbortSignal | undefined, what: string): Promise<void> {
    try {
      await sleepTimer(ms, undefined, signal === undefined ? undefined : { signal });
    } catch (err) {
      throw new OpenStackError({ service: 'heat', kind: OpenStackErrorKind.aborted, detail: `${what} cancelled`, retryable: false, cause: err });
    }
  }

  private parseRef(stack: StackIdentifier): HeatStackRef {
    if (typeof stack !== 'string') return stack;
    const i = stack.indexOf('/');
    if (i <= 0 || i === stack.length - 1) throw new TypeError(`not a "name/id" stack identifier: ${stack}`);
    return { name: stack.slice(0, i), id: stack.slice(i + 1) };
  }

  private stackPath(ref: HeatStackRef): string {
    return `/stacks/${seg(ref.name)}/${seg(ref.id)}`;
  }

  private async getJson(stack: StackIdentifier, suffix: string, what: string): Promise<Record<string, unknown>> {
    const ref = await this.resolveStack(stack);
    const res = await this.call({ path: `${this.stackPath(ref)}${suffix}` });
    this.expect(res, [200], `${what} of ${ref.name}`);
    return this.json(res) as Record<string, unknown>;
  }

  private call(req: Omit<AuthedRequest, 'service'>): Promise<HttpResponse> {
    return this.auth.authedFetch({
      service: this.serviceType,
      ...req,
      ...(this.requestTimeoutMs === undefined || req.timeoutMs !== undefined ? {} : { timeoutMs: this.requestTimeoutMs }),
    });
  }

  private expect(res: HttpResponse, ok: readonly number[], context: string): void {
    if (ok.includes(res.status)) return;
    throw OpenStackError.fromResponse({ service: res.service, method: res.method, url: res.url, status: res.status, bodyText: res.text, headers: res.headers, context });
  }

  private json(res: HttpResponse): unknown {
    return parseJsonAnswer(res, { emptyAsObject: true });
  }

  private protocolError(res: HttpResponse, detail: string): OpenStackError {
    return new OpenStackError({ service: res.service, kind: OpenStackErrorKind.protocol, detail: `heat: ${detail}`, retryable: false, status: res.status, method: res.method, url: res.url });
  }
}

function sig(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal === undefined ? {} : { signal };
}
