/**
 * The simulated Heat engine: creates, updates (PATCH/PUT semantics), deletes and signals stacks
 * built from HOT templates, with nested templates, AutoScalingGroup and ResourceGroup as nested
 * stacks, mark-unhealthy + update replacing exactly the marked resources, and asynchronous
 * `*_IN_PROGRESS` -> `*_COMPLETE`/`*_FAILED` progression. It follows what a real Heat does where
 * the VNFM can observe it (see the docs of the real-heat test bed), so a driver proven here
 * behaves the same against a cloud.
 */
import type { ComputeService } from '../compute-service.ts';
import { isoMicros, shortId, uuid } from '../ids.ts';
import type { NetworkService } from '../network-service.ts';
import type { SimLogger } from '../options.ts';
import type { VolumeService } from '../volume-service.ts';
import type { HeatAction, HeatEnvironment, HeatEvent, HeatResource, HeatStack, HeatStatus, ResourceKind } from './heat-model.ts';
import { deepEqual, evaluate, evaluateCondition, type FunctionContext, functionName, walkPath } from './hot-functions.ts';
import {
  HeatValidationError,
  type HotTemplate,
  loadTemplateObject,
  parseTemplate,
  type ResourceDef,
  resolveParameters,
} from './hot-template.ts';
import { GROUP_TYPES, LEAF_TYPES, type LeafContext, type LeafHandler, type LeafState, ResourceError } from './resource-types.ts';

/** An error the API maps to a Heat error document (`{code, title, error: {type, message}}`). */
export class HeatApiError extends Error {
  readonly status: number;
  readonly type: string;

  constructor(status: number, type: string, message: string) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

/** A resource failure on its way up the nested stacks (builds Heat's `resources.a.resources.b: ...` reasons). */
class OpFailure extends Error {
  constructor(
    readonly errType: string,
    readonly path: string,
    readonly detail: string,
  ) {
    super(`${errType}: resources.${path}: ${detail}`);
  }
}

/** Operations whose next executions can be made to fail through the `/_sim` API. */
export type InjectableOp = 'create' | 'update' | 'delete';

/** One stack operation request the engine received (`/_sim/state` -> `heat.journal`). */
export interface HeatJournalEntry {
  /** 1, 2, 3, ... in arrival order. */
  readonly seq: number;
  readonly time: string;
  readonly operation: InjectableOp | 'mark_unhealthy' | 'signal';
  readonly stackId: string;
  readonly stackName: string;
  /** mark_unhealthy / signal: the resource name and its physical id at that moment. */
  readonly resource?: string;
  readonly physicalId?: string;
  /** mark_unhealthy: true to mark, false to clear. */
  readonly unhealthy?: boolean;
  /** Id of the hold that held this operation. */
  readonly heldBy?: string;
}

/** A stack operation that arrived while a hold was active (it stays `*_IN_PROGRESS` until released). */
export interface HeldStackOperation {
  readonly holdId: string;
  readonly operation: InjectableOp;
  readonly stackId: string;
  readonly stackName: string;
  readonly time: string;
}

/** A hold on stack operations (see {@link HeatEngine.hold}). */
export interface StackHold {
  readonly id: string;
  readonly operation: InjectableOp;
  /** Name or id of the only stack held; every stack when absent. */
  readonly stack: string | undefined;
  /** Operations held so far, in arrival order. */
  readonly held: readonly HeldStackOperation[];
  readonly released: boolean;
  /** Resolves with the first operation held. */
  readonly reached: Promise<HeldStackOperation>;
}

interface HoldState {
  id: string;
  operation: InjectableOp;
  stack: string | undefined;
  held: HeldStackOperation[];
  released: boolean;
  gate: Promise<void>;
  open: () => void;
  reached: Promise<HeldStackOperation>;
  arrive: (h: HeldStackOperation) => void;
}

const MAX_JOURNAL = 1000;

/** What the engine needs from the rest of the sim. */
export interface HeatEngineDeps {
  readonly compute: ComputeService;
  readonly network: NetworkService;
  readonly volumes: VolumeService;
  readonly logger: SimLogger;
  /** Current duration of each stack operation (changeable at run time). */
  delayMs(): number;
  /** `.../v1/{project_id}` for links. */
  heatBase(projectId: string): string;
  /** Told after each piece of background work (a stack operation progressing), so the state can be saved. */
  onChange?(): void;
}

/** A stack as saved (see {@link HeatEngine.snapshot}): the template as its JSON, resources as a list. */
export interface HeatStackSnapshot extends Omit<HeatStack, 'template' | 'files' | 'environment' | 'resources' | 'opToken'> {
  template: Record<string, unknown>;
  /** `null`: the same files as the parent stack. */
  files: Record<string, string> | null;
  /** `null`: the same environment as the parent stack. */
  environment: HeatEnvironment | null;
  resources: HeatResource[];
}

/** A scaling signal accepted but not handled yet, as saved. */
export interface PendingSignalSnapshot {
  stackId: string;
  /** The ScalingPolicy resource signalled. */
  policy: string;
  /** The AutoScalingGroup it resizes. */
  group: string;
  details: unknown;
}

/** Saved state of the simulated Heat. */
export interface HeatSnapshot {
  stacks: HeatStackSnapshot[];
  seq: number;
  pendingSignals: PendingSignalSnapshot[];
}

interface PendingSignal {
  stack: HeatStack;
  policy: HeatResource;
  group: HeatResource;
  details: unknown;
}

/** Fields of a `POST /stacks` request the engine uses. */
export interface CreateStackInput {
  readonly name: string;
  readonly template: unknown;
  readonly files: Record<string, string>;
  readonly environment: unknown;
  readonly parameters: Record<string, unknown>;
  readonly disableRollback: boolean;
  readonly timeoutMins: number | null;
  readonly tags: string[] | null;
  readonly projectId: string;
  readonly userId: string;
  readonly userName: string;
}

/** Fields of a `PUT`/`PATCH /stacks/{name}/{id}` request the engine uses. */
export interface UpdateStackInput {
  readonly template?: unknown;
  readonly files?: Record<string, string>;
  readonly environment?: unknown;
  readonly parameters?: Record<string, unknown>;
  readonly clearParameters?: string[];
  readonly disableRollback?: boolean;
  readonly timeoutMins?: number | null;
  readonly tags?: string[] | null;
}

interface KindInfo {
  kind: ResourceKind;
  leafType: string | undefined;
  file: string | undefined;
}

const STACK_NAME_RE = /^[a-zA-Z][a-zA-Z0-9_.-]{0,254}$/;
const MAX_NESTING = 8;
const MAX_EVENTS_PER_STACK = 2000;
const MAX_DELETED_STACKS = 2000;
const ENV_SECTIONS = new Set([
  'parameters',
  'parameter_defaults',
  'resource_registry',
  'event_sinks',
  'encrypted_param_names',
  'parameter_merge_strategies',
]);

/** Creation priority among resources that are ready at the same time (networks before ports, ...). */
const TYPE_PRIORITY: Record<string, number> = {
  'OS::Neutron::Net': 0,
  'OS::Nova::ServerGroup': 0,
  'OS::Nova::Flavor': 0,
  'OS::Cinder::VolumeType': 0,
  'OS::Neutron::Router': 0,
  'OS::Neutron::Subnet': 1,
  'OS::Neutron::Port': 2,
  'OS::Cinder::Volume': 2,
  'OS::Neutron::FloatingIP': 3,
};

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function num(v: unknown, fallback: number): number {
  if (v === undefined || v === null || v === '') return fallback;
  const n = Number(v);
  return Number.isFinite(n) ? n : fallback;
}

function looksLikeTemplateFile(t: string): boolean {
  return /\.(ya?ml|template|json)$/i.test(t) || t.includes('://');
}

/** Replaces `indexVar` in every string of a (resolved) value (ResourceGroup `%index%`). */
function substituteIndex(v: unknown, indexVar: string, index: string): unknown {
  if (typeof v === 'string') return v.split(indexVar).join(index);
  if (Array.isArray(v)) return v.map((x) => substituteIndex(x, indexVar, index));
  if (isObj(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = substituteIndex(x, indexVar, index);
    return out;
  }
  return v;
}

/** Collects every resource name a definition refers to, known or not (for reference validation). */
function allReferences(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const x of value) allReferences(x, out);
    return out;
  }
  if (!isObj(value)) return out;
  const fn = functionName(value);
  if (fn === 'get_resource' && typeof value[fn] === 'string') {
    out.push(value[fn] as string);
    return out;
  }
  if ((fn === 'get_attr' || fn === 'Fn::GetAtt') && Array.isArray(value[fn])) {
    const a = value[fn] as unknown[];
    if (typeof a[0] === 'string') out.push(a[0]);
    for (const x of a.slice(1)) allReferences(x, out);
    return out;
  }
  for (const v of Object.values(value)) allReferences(v, out);
  return out;
}

/** Static `get_attr` uses: [resource, attribute] pairs with literal names. */
function attrUses(value: unknown, out: [string, string][] = []): [string, string][] {
  if (Array.isArray(value)) {
    for (const x of value) attrUses(x, out);
    return out;
  }
  if (!isObj(value)) return out;
  const fn = functionName(value);
  if (fn === 'get_attr' && Array.isArray(value[fn])) {
    const a = value[fn] as unknown[];
    if (typeof a[0] === 'string' && typeof a[1] === 'string') out.push([a[0], a[1]]);
  }
  for (const v of Object.values(value)) attrUses(v, out);
  return out;
}

/** Whether a resource should be replaced because of its state (marked unhealthy or failed). */
function isFailed(r: HeatResource): boolean {
  return r.status === 'FAILED';
}

/** The simulated Heat engine. */
export class HeatEngine {
  readonly stacks = new Map<string, HeatStack>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly failures: Record<InjectableOp, string[]> = { create: [], update: [], delete: [] };
  private seq = 0;
  private closed = false;
  private readonly holdStates = new Map<string, HoldState>();
  private readonly journalEntries: HeatJournalEntry[] = [];
  private journalSeq = 0;
  private readonly pendingSignals = new Set<PendingSignal>();

  constructor(private readonly deps: HeatEngineDeps) {}

  // -------------------------------------------------------------------------------------------
  // Saved state

  /** The state to save (JSON-serialisable; restored by {@link restore}). */
  snapshot(): HeatSnapshot {
    const stacks: HeatStackSnapshot[] = [];
    for (const st of this.stacks.values()) {
      const { template, files, environment, resources, opToken: _token, ...rest } = st;
      const parent = st.parent ? this.stacks.get(st.parent.stackId) : undefined;
      stacks.push({
        ...rest,
        template: template.raw as Record<string, unknown>,
        files: parent && parent.files === files ? null : files,
        environment: parent && parent.environment === environment ? null : environment,
        resources: [...resources.values()],
      });
    }
    const pendingSignals = [...this.pendingSignals].map((p) => ({ stackId: p.stack.id, policy: p.policy.name, group: p.group.name, details: p.details }));
    return { stacks, seq: this.seq, pendingSignals };
  }

  /**
   * Replaces the stacks with saved ones and resumes what was in progress: a top-level stack saved
   * `*_IN_PROGRESS` runs its create, update or delete again after the usual delay (the saved
   * template, parameters and resources are those of the operation), and accepted scaling signals
   * are handled. Call once at start, before any request.
   */
  restore(s: HeatSnapshot): void {
    this.stacks.clear();
    this.pendingSignals.clear();
    for (const x of s.stacks) {
      const stack: HeatStack = {
        ...x,
        template: parseTemplate(x.template),
        files: x.files ?? {},
        environment: x.environment ?? { parameters: {}, parameter_defaults: {}, resource_registry: { resources: {} }, event_sinks: [], encrypted_param_names: [] },
        resources: new Map(x.resources.map((r) => [r.name, r])),
        opToken: 0,
      };
      this.stacks.set(stack.id, stack);
    }
    // Nested stacks share their parent's files and environment (parents first: ancestors resolve before descendants).
    const share = (st: HeatStack, saved: HeatStackSnapshot, seen: Set<string>): void => {
      if (seen.has(st.id)) return;
      seen.add(st.id);
      const parent = st.parent ? this.stacks.get(st.parent.stackId) : undefined;
      if (!parent) return;
      const parentSaved = savedById.get(parent.id);
      if (parentSaved) share(parent, parentSaved, seen);
      if (saved.files === null) st.files = parent.files;
      if (saved.environment === null) st.environment = parent.environment;
    };
    const savedById = new Map(s.stacks.map((x) => [x.id, x]));
    const seen = new Set<string>();
    for (const x of s.stacks) share(this.stacks.get(x.id) as HeatStack, x, seen);
    this.seq = s.seq;
    for (const st of this.stacks.values()) {
      if (st.parent !== undefined || st.deleted || st.status !== 'IN_PROGRESS') continue;
      this.deps.logger.info({ stack: st.name, stackId: st.id, action: st.action }, 'heat stack operation resumed after restart');
      if (st.action === 'CREATE') this.schedule(st, () => this.runCreate(st, false));
      else if (st.action === 'UPDATE') this.schedule(st, () => this.runUpdate(st, st.template, st.userParams, false));
      else if (st.action === 'DELETE') this.schedule(st, () => this.runDelete(st, false));
      else this.setStackState(st, st.action, 'FAILED', `${st.action} interrupted by a restart of the simulated Heat`);
    }
    for (const p of s.pendingSignals) {
      const stack = this.stacks.get(p.stackId);
      const policy = stack?.resources.get(p.policy);
      const group = stack?.resources.get(p.group);
      if (!stack || !policy || !group || stack.deleted) continue;
      group.data.scalingInProgress = true;
      this.scheduleSignal({ stack, policy, group, details: p.details });
    }
    // A group whose signal was not saved would never scale again.
    for (const st of this.stacks.values()) {
      for (const r of st.resources.values()) {
        if (r.kind === 'asg' && r.data.scalingInProgress === true && ![...this.pendingSignals].some((p) => p.group === r)) r.data.scalingInProgress = false;
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Public operations

  /** Stops pending timers (sim shutdown). */
  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** Makes the next `count` executions of `op` on top-level stacks fail with `reason`. */
  injectFailures(op: InjectableOp, count: number, reason: string): void {
    for (let i = 0; i < count; i++) this.failures[op].push(reason);
  }

  /** Drops pending injected failures. */
  clearFailures(): void {
    this.failures.create = [];
    this.failures.update = [];
    this.failures.delete = [];
  }

  /**
   * Holds the next `operation`s (on `stack`, a name or id, or on every top-level stack): each is
   * accepted as usual (the stack goes `*_IN_PROGRESS` and the API answers) but does not progress
   * until the hold is released; then it completes after the usual delay. `reached` of the result
   * resolves when the first operation is held. Tests use it to act at a known point of a stack
   * operation (e.g. kill the VNFM while Heat is updating).
   */
  hold(operation: InjectableOp, stack?: string): StackHold {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let arrive!: (h: HeldStackOperation) => void;
    const reached = new Promise<HeldStackOperation>((r) => (arrive = r));
    // A hold released (or a sim closed) before anything arrived leaves `reached` pending: no unhandled rejection.
    const h: HoldState = { id: uuid(), operation, stack, held: [], released: false, gate, open, reached, arrive };
    this.holdStates.set(h.id, h);
    return this.holdView(h);
  }

  /** Lets the operations of a hold progress and ends the hold; false when unknown or released already. */
  releaseHold(id: string): boolean {
    const h = this.holdStates.get(id);
    if (!h || h.released) return false;
    h.released = true;
    this.holdStates.delete(id);
    h.open();
    return true;
  }

  /** Releases every hold (`/_sim/reset`). */
  releaseAllHolds(): void {
    for (const id of [...this.holdStates.keys()]) this.releaseHold(id);
  }

  /** Active holds. */
  holds(): StackHold[] {
    return [...this.holdStates.values()].map((h) => this.holdView(h));
  }

  /** An active hold by id. */
  getHold(id: string): StackHold | undefined {
    const h = this.holdStates.get(id);
    return h ? this.holdView(h) : undefined;
  }

  private holdView(h: HoldState): StackHold {
    return {
      id: h.id,
      operation: h.operation,
      stack: h.stack,
      get held() {
        return [...h.held];
      },
      get released() {
        return h.released;
      },
      reached: h.reached,
    };
  }

  /** The gate of the first active hold matching this operation (recording the arrival), if any. */
  private holdFor(op: InjectableOp, stack: HeatStack): HoldState | undefined {
    for (const h of this.holdStates.values()) {
      if (h.released || h.operation !== op) continue;
      if (h.stack !== undefined && h.stack !== stack.name && h.stack !== stack.id) continue;
      const arrival: HeldStackOperation = { holdId: h.id, operation: op, stackId: stack.id, stackName: stack.name, time: isoMicros() };
      h.held.push(arrival);
      if (h.held.length === 1) h.arrive(arrival);
      this.deps.logger.debug({ stack: stack.name, operation: op, hold: h.id }, 'heat stack operation held');
      return h;
    }
    return undefined;
  }

  /** Stack operations received so far (the last {@link MAX_JOURNAL}), oldest first. */
  journal(): HeatJournalEntry[] {
    return [...this.journalEntries];
  }

  private record(e: Omit<HeatJournalEntry, 'seq' | 'time'>): void {
    this.journalEntries.push({ seq: ++this.journalSeq, time: isoMicros(), ...e });
    if (this.journalEntries.length > MAX_JOURNAL) this.journalEntries.splice(0, this.journalEntries.length - MAX_JOURNAL);
  }

  /** Pending injected failures per operation (for `/_sim/state`). */
  pendingFailures(): Record<InjectableOp, number> {
    return { create: this.failures.create.length, update: this.failures.update.length, delete: this.failures.delete.length };
  }

  /** A live stack by name or id (what `GET /stacks/{name}` resolves before redirecting). */
  lookup(projectId: string, nameOrId: string): HeatStack | undefined {
    const byId = this.stacks.get(nameOrId);
    if (byId && !byId.deleted && byId.projectId === projectId) return byId;
    let found: HeatStack | undefined;
    for (const s of this.stacks.values()) {
      if (s.name === nameOrId && !s.deleted && s.projectId === projectId) found = s;
    }
    return found;
  }

  /** A stack by name and id, soft-deleted ones included (`GET /stacks/{name}/{id}`). */
  get(projectId: string, name: string, id: string): HeatStack | undefined {
    const s = this.stacks.get(id);
    if (!s || s.projectId !== projectId || s.name !== name) return undefined;
    return s;
  }

  /** Validates a create request and starts the asynchronous creation. */
  createStack(input: CreateStackInput): HeatStack {
    if (!STACK_NAME_RE.test(input.name)) {
      throw new HeatApiError(
        400,
        'StackValidationFailed',
        `Invalid stack name ${input.name} must contain only alphanumeric or "_-." characters, must start with alpha and must be 255 characters or less.`,
      );
    }
    if (this.lookup(input.projectId, input.name)?.name === input.name) {
      throw new HeatApiError(409, 'StackExists', `The Stack (${input.name}) already exists.`);
    }
    const { tmpl, env, files } = this.prepare(input.template, input.files, input.environment, undefined, input.parameters, []);
    const now = Date.now();
    const stack: HeatStack = {
      id: uuid(),
      name: input.name,
      projectId: input.projectId,
      userId: input.userId,
      userName: input.userName,
      parent: undefined,
      template: tmpl,
      files,
      environment: env,
      userParams: env.parameters,
      params: {},
      action: 'CREATE',
      status: 'IN_PROGRESS',
      reason: 'Stack CREATE started',
      createdAt: now,
      updatedAt: undefined,
      deletedAt: undefined,
      resources: new Map(),
      disableRollback: input.disableRollback,
      timeoutMins: input.timeoutMins,
      tags: input.tags,
      events: [],
      deleted: false,
      opToken: 0,
    };
    stack.params = this.resolveStackParams(stack, false);
    this.stacks.set(stack.id, stack);
    this.stackEvent(stack);
    this.initResources(stack);
    const hold = this.holdFor('create', stack);
    this.record({ operation: 'create', stackId: stack.id, stackName: stack.name, ...(hold ? { heldBy: hold.id } : {}) });
    this.schedule(stack, () => {
      const injected = this.failures.create.shift();
      if (injected !== undefined) {
        this.setStackState(stack, 'CREATE', 'FAILED', `Resource CREATE failed: ${injected}`);
        return;
      }
      this.runCreate(stack, false);
    }, hold?.gate);
    this.deps.logger.debug({ stack: stack.name, stackId: stack.id }, 'heat stack create started');
    return stack;
  }

  /** Validates an update request (PATCH = existing, PUT = replace) and starts it. */
  updateStack(stack: HeatStack, input: UpdateStackInput, patch: boolean): void {
    if (stack.deleted) throw new HeatApiError(404, 'EntityNotFound', `The Stack (${stack.name}) could not be found.`);
    if (stack.action === 'DELETE' && stack.status === 'IN_PROGRESS') {
      throw new HeatApiError(409, 'ActionInProgress', `Stack ${stack.name} already has an action (DELETE) in progress.`);
    }
    // Like Heat's convergence engine, an update during another create/update supersedes it.
    if (!patch && input.template === undefined) {
      throw new HeatApiError(400, 'HTTPBadRequest', 'No template specified');
    }
    const { tmpl, env, files } = this.prepare(
      input.template ?? (patch ? stack.template.raw : undefined),
      input.files,
      input.environment,
      patch ? stack : undefined,
      input.parameters ?? {},
      input.clearParameters ?? [],
      patch ? stack.files : undefined,
    );
    if (input.disableRollback !== undefined) stack.disableRollback = input.disableRollback;
    if (input.timeoutMins !== undefined) stack.timeoutMins = input.timeoutMins;
    if (input.tags !== undefined) stack.tags = input.tags;
    // Like Heat, the new template/environment/files/parameters are the stack's from now on, so a
    // later PATCH (even one superseding this update before it ran) builds on them.
    stack.files = files;
    stack.environment = env;
    stack.template = tmpl;
    stack.userParams = env.parameters;
    stack.params = this.resolveStackParams(stack, false);
    this.setStackState(stack, 'UPDATE', 'IN_PROGRESS', 'Stack UPDATE started');
    stack.updatedAt = Date.now();
    const hold = this.holdFor('update', stack);
    this.record({ operation: 'update', stackId: stack.id, stackName: stack.name, ...(hold ? { heldBy: hold.id } : {}) });
    this.schedule(
      stack,
      () => {
        const injected = this.failures.update.shift();
        if (injected !== undefined) {
          this.setStackState(stack, 'UPDATE', 'FAILED', `Resource UPDATE failed: ${injected}`);
          return;
        }
        this.runUpdate(stack, stack.template, stack.userParams, false);
      },
      hold?.gate,
    );
  }

  /** Starts the asynchronous deletion (answers 204 right away, as Heat does). */
  deleteStack(stack: HeatStack): void {
    if (stack.deleted) throw new HeatApiError(404, 'EntityNotFound', `The Stack (${stack.name}) could not be found.`);
    this.setStackState(stack, 'DELETE', 'IN_PROGRESS', 'Stack DELETE started');
    const hold = this.holdFor('delete', stack);
    this.record({ operation: 'delete', stackId: stack.id, stackName: stack.name, ...(hold ? { heldBy: hold.id } : {}) });
    this.schedule(
      stack,
      () => {
        const injected = this.failures.delete.shift();
        if (injected !== undefined) {
          this.setStackState(stack, 'DELETE', 'FAILED', `Resource DELETE failed: ${injected}`);
          return;
        }
        this.runDelete(stack, false);
      },
      hold?.gate,
    );
  }

  /** `PATCH .../resources/{name}` with `mark_unhealthy`. */
  markUnhealthy(stack: HeatStack, resourceName: string, unhealthy: boolean, reason: string): void {
    const r = stack.resources.get(resourceName);
    if (!r || stack.deleted) {
      throw new HeatApiError(404, 'ResourceNotFound', `The Resource (${resourceName}) could not be found in Stack ${stack.name}.`);
    }
    this.record({ operation: 'mark_unhealthy', stackId: stack.id, stackName: stack.name, resource: resourceName, physicalId: r.physicalId, unhealthy });
    if (unhealthy) {
      this.setResourceState(stack, r, 'CHECK', 'FAILED', reason || 'state changed by resource_mark_unhealthy api');
    } else if (r.action === 'CHECK' && r.status === 'FAILED') {
      this.setResourceState(stack, r, 'CHECK', 'COMPLETE', reason || 'state changed by resource_mark_unhealthy api');
    }
  }

  /** `POST .../resources/{name}/signal`: a ScalingPolicy resizes its group in the background. */
  signal(stack: HeatStack, resourceName: string, details: unknown): void {
    const r = stack.resources.get(resourceName);
    if (!r || stack.deleted) {
      throw new HeatApiError(404, 'ResourceNotFound', `The Resource (${resourceName}) could not be found in Stack ${stack.name}.`);
    }
    if (r.leafType !== 'OS::Heat::ScalingPolicy') {
      throw new HeatApiError(400, 'ResourceActionNotSupported', `Signal resource during ${r.action} is not supported.`);
    }
    if (r.action === 'INIT' || r.status === 'IN_PROGRESS') {
      throw new HeatApiError(400, 'ResourceActionNotSupported', `Signal resource during ${r.action} is not supported.`);
    }
    this.record({ operation: 'signal', stackId: stack.id, stackName: stack.name, resource: resourceName, physicalId: r.physicalId });
    const groupRef = String(r.props.auto_scaling_group_id ?? '');
    const group = [...stack.resources.values()].find(
      (g) => g.kind === 'asg' && (g.physicalId === groupRef || g.name === groupRef),
    );
    const reasonText = `Signal: ${details === undefined || details === null ? 'None' : JSON.stringify(details)}`;
    if (!group) {
      this.resourceEvent(stack, r, 'SIGNAL', 'FAILED', `${reasonText}: group not found`);
      return;
    }
    const now = Date.now();
    const cooldownEnd = num(group.data.cooldownEnd, 0);
    if (group.data.scalingInProgress === true || cooldownEnd > now) {
      // Heat drops such signals silently (no event), see the real-heat notes.
      return;
    }
    group.data.scalingInProgress = true;
    this.scheduleSignal({ stack, policy: r, group, details });
  }

  /** Heat records one event per signal, SIGNAL_COMPLETE (or SIGNAL_FAILED), once it is handled. */
  private scheduleSignal(p: PendingSignal): void {
    this.pendingSignals.add(p);
    this.later(() => {
      this.pendingSignals.delete(p);
      this.applySignal(p);
    });
  }

  private applySignal({ stack, policy: r, group, details }: PendingSignal): void {
    const reasonText = `Signal: ${details === undefined || details === null ? 'None' : JSON.stringify(details)}`;
    group.data.scalingInProgress = false;
    if (stack.deleted || !stack.resources.has(group.name)) return;
    const child = group.nestedStackId ? this.stacks.get(group.nestedStackId) : undefined;
    const current = child ? [...child.resources.values()].filter((m) => !isFailed(m)).length : 0;
    const type = String(r.props.adjustment_type ?? 'change_in_capacity');
    const adj = num(r.props.scaling_adjustment, 0);
    let capacity = current;
    if (type === 'exact_capacity') capacity = adj;
    else if (type === 'percent_change_in_capacity') {
      const delta = (current * adj) / 100;
      const step = num(r.props.min_adjustment_step, 0);
      let d = delta < 0 ? Math.ceil(delta) : Math.floor(delta);
      if (Math.abs(d) < step) d = Math.sign(adj) * step;
      if (d === 0 && adj !== 0) d = Math.sign(adj);
      capacity = current + d;
    } else capacity = current + adj;
    try {
      this.resizeGroup(stack, group, group.props, capacity);
      const cooldown = num(r.props.cooldown, num(group.props.cooldown, 0));
      group.data.cooldownEnd = Date.now() + cooldown * 1000;
      this.resourceEvent(stack, r, 'SIGNAL', 'COMPLETE', reasonText);
    } catch (e) {
      this.resourceEvent(stack, r, 'SIGNAL', 'FAILED', e instanceof Error ? e.message : String(e));
    }
  }

  /** Output values of a stack (errors reported per output, as Heat does). */
  outputs(stack: HeatStack): { key: string; value: unknown; description: string; error?: string }[] {
    const ctx = this.ctx(stack);
    const out: { key: string; value: unknown; description: string; error?: string }[] = [];
    for (const [key, def] of Object.entries(stack.template.outputs)) {
      try {
        if (def.condition !== undefined && !evaluateCondition(def.condition, ctx)) {
          out.push({ key, value: null, description: def.description });
          continue;
        }
        out.push({ key, value: evaluate(def.value, ctx) ?? null, description: def.description });
      } catch (e) {
        out.push({ key, value: null, description: def.description, error: (e as Error).message });
      }
    }
    return out;
  }

  /** Attribute values shown by `GET .../resources/{name}` (`show` excluded, like Heat). */
  resourceAttributes(stack: HeatStack, r: HeatResource): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (r.physicalId === '' || r.action === 'INIT') return out;
    try {
      if (r.kind === 'leaf') {
        const h = this.handler(r);
        if (h.attributes !== 'any') for (const a of h.attributes) if (a !== 'show') out[a] = this.attr(stack, r, a, []) ?? null;
      } else if (r.kind === 'nested') {
        const child = r.nestedStackId ? this.stacks.get(r.nestedStackId) : undefined;
        if (child) for (const o of this.outputs(child)) if (o.key !== 'show') out[o.key] = o.value;
      } else {
        // Heat shows group attributes as null in `resource show` (they are read with get_attr).
        const names = r.kind === 'asg' ? ['outputs_list', 'current_size', 'outputs', 'refs', 'refs_map'] : ['refs', 'refs_map', 'attributes', 'removed_rsrc_list'];
        for (const a of names) out[a] = null;
      }
    } catch {
      // attributes of half-built resources are best effort
    }
    return out;
  }

  /** Metadata of a resource (`GET .../resources/{name}/metadata`). */
  resourceMetadata(r: HeatResource): Record<string, unknown> {
    if (r.kind === 'asg') {
      const end = num(r.data.cooldownEnd, 0);
      return {
        ...r.metadata,
        scaling_in_progress: r.data.scalingInProgress === true,
        ...(end > 0 ? { cooldown_end: { [new Date(end).toISOString()]: 'ExactCapacity : 0' } } : {}),
      };
    }
    return r.metadata;
  }

  /** Ids of stacks nested (directly) in `stack`. */
  children(stack: HeatStack): HeatStack[] {
    const out: HeatStack[] = [];
    for (const r of stack.resources.values()) {
      const c = r.nestedStackId ? this.stacks.get(r.nestedStackId) : undefined;
      if (c && !c.deleted) out.push(c);
    }
    return out;
  }

  /** Resource type names the engine knows (for `GET /resource_types`). */
  resourceTypes(): string[] {
    return [...LEAF_TYPES.keys(), ...GROUP_TYPES].sort();
  }

  /** Validates a template as `POST /validate` does; returns Heat's summary document. */
  validateOnly(template: unknown, files: Record<string, string>, environment: unknown, parameters: Record<string, unknown>): Record<string, unknown> {
    const { tmpl } = this.prepare(template, files, environment, undefined, parameters, [], undefined, false);
    const params: Record<string, unknown> = {};
    for (const [name, def] of Object.entries(tmpl.parameters)) {
      params[name] = {
        Type: def.type === 'comma_delimited_list' ? 'CommaDelimitedList' : def.type[0]?.toUpperCase() + def.type.slice(1),
        Description: def.description ?? '',
        Default: def.default,
        Label: def.label ?? name,
        NoEcho: def.hidden ? 'true' : 'false',
      };
    }
    return { Description: tmpl.description, Parameters: params, Environment: this.parseEnvironment(environment) };
  }

  // -------------------------------------------------------------------------------------------
  // Preparation and validation

  private parseEnvironment(raw: unknown): HeatEnvironment {
    let envObj: Record<string, unknown> = {};
    if (typeof raw === 'string') {
      if (raw.trim() !== '') envObj = loadTemplateObject(raw, 'environment');
    } else if (isObj(raw)) envObj = raw;
    else if (raw !== undefined && raw !== null) throw new HeatValidationError('The environment is not a valid YAML mapping data type.');
    for (const k of Object.keys(envObj)) {
      if (!ENV_SECTIONS.has(k)) throw new HeatValidationError(`environment has wrong section "${k}"`, 'InvalidEnvironment');
    }
    const registry = isObj(envObj.resource_registry) ? { ...envObj.resource_registry } : {};
    if (!isObj(registry.resources)) registry.resources = {};
    return {
      parameters: isObj(envObj.parameters) ? { ...envObj.parameters } : {},
      parameter_defaults: isObj(envObj.parameter_defaults) ? { ...envObj.parameter_defaults } : {},
      resource_registry: registry,
      event_sinks: Array.isArray(envObj.event_sinks) ? [...envObj.event_sinks] : [],
      encrypted_param_names: Array.isArray(envObj.encrypted_param_names) ? envObj.encrypted_param_names.map(String) : [],
    };
  }

  /**
   * Parses template/environment/files of a request, merges them with the current stack for PATCH,
   * checks parameters and validates the whole template tree. Throws 400 errors like Heat.
   */
  private prepare(
    templateIn: unknown,
    filesIn: Record<string, string> | undefined,
    envIn: unknown,
    current: HeatStack | undefined,
    parameters: Record<string, unknown>,
    clearParameters: string[],
    currentFiles?: Record<string, string>,
    strictMissing = true,
  ): { tmpl: HotTemplate; env: HeatEnvironment; files: Record<string, string> } {
    try {
      if (templateIn === undefined || templateIn === null) throw new HeatValidationError('No template specified', 'HTTPBadRequest');
      const tmpl = parseTemplate(templateIn);
      const files: Record<string, string> = { ...(currentFiles ?? {}) };
      for (const [k, v] of Object.entries(filesIn ?? {})) files[k] = typeof v === 'string' ? v : JSON.stringify(v);
      const reqEnv = this.parseEnvironment(envIn);
      let env: HeatEnvironment;
      if (current) {
        const old = current.environment;
        const registry: Record<string, unknown> = { ...old.resource_registry, ...reqEnv.resource_registry };
        registry.resources = { ...(isObj(old.resource_registry.resources) ? old.resource_registry.resources : {}), ...(reqEnv.resource_registry.resources as object) };
        env = {
          parameters: { ...old.parameters, ...reqEnv.parameters, ...parameters },
          parameter_defaults: { ...old.parameter_defaults, ...reqEnv.parameter_defaults },
          resource_registry: registry,
          event_sinks: reqEnv.event_sinks.length > 0 ? reqEnv.event_sinks : old.event_sinks,
          encrypted_param_names: old.encrypted_param_names,
        };
        for (const k of clearParameters) delete env.parameters[k];
        // Parameters the (new) template no longer declares are dropped rather than rejected.
        for (const k of Object.keys(env.parameters)) {
          if (!(k in tmpl.parameters) && !(k in parameters) && !(k in reqEnv.parameters)) delete env.parameters[k];
        }
      } else {
        env = { ...reqEnv, parameters: { ...reqEnv.parameters, ...parameters } };
      }
      for (const k of [...Object.keys(parameters), ...Object.keys(reqEnv.parameters)]) {
        if (!(k in tmpl.parameters)) {
          throw new HeatValidationError(`The Parameter (${k}) was not defined in template.`, 'UnknownUserParameter');
        }
      }
      this.validateTemplate(tmpl, env, files, []);
      if (strictMissing) {
        const params = resolveParameters(tmpl, env.parameters, {}, env.parameter_defaults, false);
        this.checkGroupSizes(tmpl, params, files);
      }
      return { tmpl, env, files };
    } catch (e) {
      if (e instanceof HeatValidationError) {
        throw new HeatApiError(400, e.type, e.message);
      }
      throw e;
    }
  }

  /** Resolves a type name through the environment's registry and the `files` map. */
  private resolveKind(typeName: string, env: HeatEnvironment, files: Record<string, string>, seen = new Set<string>()): KindInfo {
    if (seen.has(typeName)) throw new HeatValidationError(`Resource type ${typeName} is mapped to itself in the resource_registry.`);
    seen.add(typeName);
    const native = LEAF_TYPES.has(typeName) || GROUP_TYPES.has(typeName);
    const mapped = env.resource_registry[typeName];
    if (typeof mapped === 'string' && mapped !== typeName) {
      const mappedIsFile = mapped in files || looksLikeTemplateFile(mapped);
      // Natively simulated types keep their native behaviour even when an environment maps them
      // onto a stand-in template (e.g. the real-heat test bed's fake_*.yaml).
      if (!(native && mappedIsFile)) {
        if (mapped in files) return { kind: 'nested', leafType: undefined, file: mapped };
        if (looksLikeTemplateFile(mapped)) {
          throw new HeatValidationError(`Could not fetch remote template "${mapped}": Invalid URL scheme `);
        }
        return this.resolveKind(mapped, env, files, seen);
      }
    }
    if (typeName === 'OS::Heat::AutoScalingGroup') return { kind: 'asg', leafType: undefined, file: undefined };
    if (typeName === 'OS::Heat::ResourceGroup') return { kind: 'rg', leafType: undefined, file: undefined };
    if (LEAF_TYPES.has(typeName)) return { kind: 'leaf', leafType: typeName, file: undefined };
    if (typeName in files) return { kind: 'nested', leafType: undefined, file: typeName };
    if (looksLikeTemplateFile(typeName)) {
      throw new HeatValidationError(`Could not fetch remote template "${typeName}": Invalid URL scheme `);
    }
    throw new HeatValidationError(`The Resource Type (${typeName}) could not be found.`, 'StackValidationFailed');
  }

  private validateProperties(
    name: string,
    type: string,
    props: unknown,
    env: HeatEnvironment,
    files: Record<string, string>,
    chain: string[],
  ): void {
    const kind = this.resolveKind(type, env, files);
    const where = `resources.${name}.properties`;
    if (!isObj(props) || functionName(props)) return;
    const keys = Object.keys(props);
    if (kind.kind === 'leaf') {
      const h = LEAF_TYPES.get(kind.leafType as string) as LeafHandler;
      if (h.properties !== 'any') {
        for (const k of keys) if (!h.properties.includes(k)) throw new HeatValidationError(`Property error: ${where}: Unknown Property ${k}`);
      }
      for (const k of h.required) if (!keys.includes(k)) throw new HeatValidationError(`Property error: ${where}: Property ${k} not assigned`);
      return;
    }
    if (kind.kind === 'nested') {
      const file = kind.file as string;
      if (chain.includes(file) || chain.length >= MAX_NESTING) {
        throw new HeatValidationError(`Recursion depth exceeds ${MAX_NESTING}.`, 'RecursionError');
      }
      let nested: HotTemplate;
      try {
        nested = parseTemplate(files[file], file);
      } catch (e) {
        throw new HeatValidationError(`Failed to validate: resources.${name}: ${(e as Error).message}`);
      }
      for (const k of keys) {
        if (!(k in nested.parameters)) throw new HeatValidationError(`Property error: ${where}: Unknown Property ${k}`);
      }
      for (const [pname, pdef] of Object.entries(nested.parameters)) {
        if (!keys.includes(pname) && (pdef.default === undefined || pdef.default === null) && !(pname in env.parameter_defaults)) {
          throw new HeatValidationError(`Property error: ${where}: Property ${pname} not assigned`);
        }
      }
      this.validateTemplate(nested, env, files, [...chain, file]);
      return;
    }
    if (kind.kind === 'asg') {
      for (const k of ['min_size', 'max_size', 'resource']) {
        if (!keys.includes(k)) throw new HeatValidationError(`Property error: ${where}: Property ${k} not assigned`);
      }
      const allowed = ['min_size', 'max_size', 'desired_capacity', 'resource', 'cooldown', 'rolling_updates'];
      for (const k of keys) if (!allowed.includes(k)) throw new HeatValidationError(`Property error: ${where}: Unknown Property ${k}`);
      const res = props.resource;
      if (isObj(res) && !functionName(res)) {
        if (typeof res.type !== 'string') throw new HeatValidationError(`Property error: ${where}.resource: "type" is required`);
        this.validateProperties(name, res.type, res.properties ?? {}, env, files, chain);
      }
      return;
    }
    const allowed = ['count', 'index_var', 'resource_def', 'removal_policies', 'removal_policies_mode'];
    for (const k of keys) if (!allowed.includes(k)) throw new HeatValidationError(`Property error: ${where}: Unknown Property ${k}`);
    if (!keys.includes('resource_def')) throw new HeatValidationError(`Property error: ${where}: Property resource_def not assigned`);
    const def = props.resource_def;
    if (isObj(def) && !functionName(def)) {
      if (typeof def.type !== 'string') throw new HeatValidationError(`Property error: ${where}.resource_def: "type" is required`);
      this.validateProperties(name, def.type, def.properties ?? {}, env, files, chain);
    }
  }

  private validateTemplate(tmpl: HotTemplate, env: HeatEnvironment, files: Record<string, string>, chain: string[]): void {
    const names = new Set(tmpl.resourceOrder);
    for (const name of tmpl.resourceOrder) {
      const def = tmpl.resources[name] as ResourceDef;
      for (const ref of allReferences([def.properties, def.metadata])) {
        if (!names.has(ref)) throw new HeatValidationError(`The specified reference "${ref}" (in ${name}) is incorrect.`, 'InvalidTemplateReference');
      }
      for (const dep of def.dependsOn) {
        if (!names.has(dep)) throw new HeatValidationError(`The specified reference "${dep}" (in ${name}) is incorrect.`, 'InvalidTemplateReference');
      }
      this.validateProperties(name, def.type, def.properties, env, files, chain);
    }
    for (const [oname, odef] of Object.entries(tmpl.outputs)) {
      for (const ref of allReferences(odef.value)) {
        if (!names.has(ref)) throw new HeatValidationError(`The specified reference "${ref}" (in output ${oname}) is incorrect.`, 'InvalidTemplateReference');
      }
    }
    // Attribute names of native types.
    const all = [...tmpl.resourceOrder.map((n) => tmpl.resources[n]?.properties), ...Object.values(tmpl.outputs).map((o) => o.value)];
    for (const [res, attr] of attrUses(all)) {
      const def = tmpl.resources[res];
      if (!def) continue;
      const kind = this.resolveKind(def.type, env, files);
      if (kind.kind !== 'leaf') continue;
      const h = LEAF_TYPES.get(kind.leafType as string) as LeafHandler;
      if (h.attributes !== 'any' && !h.attributes.includes(attr)) {
        throw new HeatValidationError(`The Referenced Attribute (${res} ${attr}) is incorrect.`, 'InvalidTemplateAttribute');
      }
    }
    this.topoOrder(tmpl, names, env, files);
  }

  /**
   * Heat computes properties that depend only on parameters at validation time, so a group size
   * that is not an integer (e.g. `desired_capacity` read from a missing `nfv` key) is a 400.
   */
  private checkGroupSizes(tmpl: HotTemplate, params: Record<string, unknown>, files: Record<string, string>): void {
    const ctx: FunctionContext = {
      getParam: (name) => (name.startsWith('OS::') ? 'placeholder' : params[name]),
      getResourceRef: (name) => name,
      getAttr: () => null,
      getFile: (key) => files[key] ?? '',
      condition: () => true,
    };
    for (const name of tmpl.resourceOrder) {
      const def = tmpl.resources[name] as ResourceDef;
      if (def.type !== 'OS::Heat::AutoScalingGroup' && def.type !== 'OS::Heat::ResourceGroup') continue;
      let props: unknown;
      try {
        props = evaluate(def.properties, ctx);
      } catch {
        continue;
      }
      if (!isObj(props)) continue;
      const keys = def.type === 'OS::Heat::AutoScalingGroup' ? ['min_size', 'max_size', 'desired_capacity'] : ['count'];
      for (const k of keys) {
        const v = props[k];
        if (v === undefined || v === null) continue;
        const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
        if (!Number.isInteger(n)) {
          throw new HeatValidationError(`ValueError: : resources.${name}: : Value '${String(v)}' is not an integer`);
        }
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Evaluation

  private resolveStackParams(stack: HeatStack, strict: boolean): Record<string, unknown> {
    return resolveParameters(stack.template, stack.userParams, {}, stack.environment.parameter_defaults, strict);
  }

  private ctx(stack: HeatStack): FunctionContext {
    const conditionStack: string[] = [];
    const cache = new Map<string, boolean>();
    const ctx: FunctionContext = {
      getParam: (name) => {
        if (name === 'OS::stack_name') return stack.name;
        if (name === 'OS::stack_id') return stack.id;
        if (name === 'OS::project_id') return stack.projectId;
        if (!(name in stack.params)) throw new HeatValidationError(`The Parameter (${name}) was not provided.`);
        return stack.params[name];
      },
      getResourceRef: (name) => {
        const r = stack.resources.get(name);
        if (!r) return null;
        return this.refId(stack, r);
      },
      getAttr: (res, attr, path) => {
        const r = stack.resources.get(res);
        if (!r) return null;
        return this.attr(stack, r, attr, path);
      },
      getFile: (key) => {
        const f = stack.files[key];
        if (f === undefined) throw new HeatValidationError(`Could not fetch remote template "${key}": Invalid URL scheme`);
        return f;
      },
      condition: (name) => {
        const cached = cache.get(name);
        if (cached !== undefined) return cached;
        if (!(name in stack.template.conditions)) throw new HeatValidationError(`Invalid condition "${name}"`);
        if (conditionStack.includes(name)) throw new HeatValidationError(`Circular definition for condition "${name}"`);
        conditionStack.push(name);
        const v = evaluateCondition(stack.template.conditions[name], ctx);
        conditionStack.pop();
        cache.set(name, v);
        return v;
      },
    };
    return ctx;
  }

  private activeNames(stack: HeatStack, tmpl: HotTemplate = stack.template): Set<string> {
    const ctx = this.ctx(stack);
    const out = new Set<string>();
    for (const name of tmpl.resourceOrder) {
      const def = tmpl.resources[name] as ResourceDef;
      if (def.condition === undefined || evaluateCondition(def.condition, ctx)) out.add(name);
    }
    return out;
  }

  /** Dependency order (Kahn) with Heat's implicit port -> subnet dependencies and a type priority among ready resources. */
  private topoOrder(tmpl: HotTemplate, active: Set<string>, env: HeatEnvironment, files: Record<string, string>): string[] {
    const names = tmpl.resourceOrder.filter((n) => active.has(n));
    const deps = new Map<string, Set<string>>();
    const subnetsByNet = new Map<string, string[]>();
    for (const n of names) {
      const def = tmpl.resources[n] as ResourceDef;
      if (def.type !== 'OS::Neutron::Subnet' || !isObj(def.properties)) continue;
      const net = def.properties.network ?? def.properties.network_id;
      if (isObj(net) && typeof net.get_resource === 'string') {
        const l = subnetsByNet.get(net.get_resource) ?? [];
        l.push(n);
        subnetsByNet.set(net.get_resource, l);
      }
    }
    for (const n of names) {
      const def = tmpl.resources[n] as ResourceDef;
      const d = new Set<string>();
      for (const ref of allReferences([def.properties, def.metadata])) if (active.has(ref) && ref !== n) d.add(ref);
      for (const dep of def.dependsOn) if (active.has(dep)) d.add(dep);
      if ((def.type === 'OS::Neutron::Port' || def.type === 'OS::Nova::Server') && isObj(def.properties)) {
        const nets: unknown[] = [def.properties.network, def.properties.network_id];
        if (Array.isArray(def.properties.networks)) for (const e of def.properties.networks) if (isObj(e)) nets.push(e.network);
        for (const net of nets) {
          if (isObj(net) && typeof net.get_resource === 'string') for (const s of subnetsByNet.get(net.get_resource) ?? []) d.add(s);
        }
      }
      deps.set(n, d);
    }
    const priority = (n: string): number => {
      const t = (tmpl.resources[n] as ResourceDef).type;
      let p = TYPE_PRIORITY[t];
      if (p === undefined) {
        try {
          const k = this.resolveKind(t, env, files);
          p = k.leafType ? (TYPE_PRIORITY[k.leafType] ?? 4) : 4;
        } catch {
          p = 4;
        }
      }
      return p;
    };
    const order: string[] = [];
    const done = new Set<string>();
    while (order.length < names.length) {
      const ready = names.filter((n) => !done.has(n) && [...(deps.get(n) as Set<string>)].every((d) => done.has(d)));
      if (ready.length === 0) {
        const left = names.filter((n) => !done.has(n));
        throw new HeatValidationError(`Circular Dependency Found: ${left.join(', ')}`, 'CircularDependencyException');
      }
      ready.sort((a, b) => priority(a) - priority(b) || names.indexOf(a) - names.indexOf(b));
      const next = ready[0] as string;
      order.push(next);
      done.add(next);
    }
    return order;
  }

  private handler(r: HeatResource): LeafHandler {
    return LEAF_TYPES.get(r.leafType as string) as LeafHandler;
  }

  private leafCtx(stack: HeatStack, r: HeatResource): LeafContext {
    return {
      projectId: stack.projectId,
      userId: stack.userId,
      stackId: stack.id,
      stackName: stack.name,
      resourceName: r.name,
      compute: this.deps.compute,
      network: this.deps.network,
      volumes: this.deps.volumes,
      physicalName: () => `${stack.name}-${r.name}-${shortId()}`.slice(-255),
      stackUrl: () => `${this.deps.heatBase(stack.projectId)}/stacks/${stack.name}/${stack.id}`,
    };
  }

  /** What `get_resource` returns. */
  private refId(stack: HeatStack, r: HeatResource): unknown {
    if (r.physicalId === '') return r.name;
    if (r.kind === 'leaf') {
      const h = this.handler(r);
      return h.refId ? h.refId({ physicalId: r.physicalId, data: r.data }) : r.physicalId;
    }
    if (r.kind === 'nested') {
      const child = r.nestedStackId ? this.stacks.get(r.nestedStackId) : undefined;
      if (!child) return r.physicalId;
      if ('OS::stack_id' in child.template.outputs) {
        const o = this.outputs(child).find((x) => x.key === 'OS::stack_id');
        if (o && o.value !== null && o.value !== undefined) return o.value;
      }
      return `arn:openstack:heat::${stack.projectId}:stacks/${child.name}/${child.id}`;
    }
    return r.physicalId;
  }

  private groupMembers(r: HeatResource): { child: HeatStack | undefined; members: HeatResource[] } {
    const child = r.nestedStackId ? this.stacks.get(r.nestedStackId) : undefined;
    if (!child) return { child, members: [] };
    const members = [...child.resources.values()];
    if (r.kind === 'rg') members.sort((a, b) => Number(a.name) - Number(b.name));
    else members.sort((a, b) => a.seq - b.seq);
    return { child, members };
  }

  /** An attribute value (`get_attr`), following `path` into it. */
  private attr(stack: HeatStack, r: HeatResource, name: string, path: readonly unknown[]): unknown {
    if (r.physicalId === '' && r.kind === 'leaf') return null;
    if (r.kind === 'leaf') {
      const h = this.handler(r);
      const v = h.attr(this.leafCtx(stack, r), { physicalId: r.physicalId, data: r.data }, r.props, name);
      return walkPath(v ?? null, path) ?? null;
    }
    if (r.kind === 'nested') {
      const child = r.nestedStackId ? this.stacks.get(r.nestedStackId) : undefined;
      if (!child) return null;
      if (name === 'OS::stack_id') return child.id;
      const o = this.outputs(child).find((x) => x.key === name);
      return walkPath(o?.value ?? null, path) ?? null;
    }
    const { child, members } = this.groupMembers(r);
    if (!child) return null;
    const memberAttr = (m: HeatResource, attrName: string, p: readonly unknown[]): unknown => this.attr(child, m, attrName, p);
    if (name.startsWith('resource.')) {
      const [, memberName, ...rest] = name.split('.');
      const m = members.find((x) => x.name === memberName);
      if (!m) return null;
      if (rest.length === 0 && path.length === 0) return this.refId(child, m);
      const attrName = rest.length > 0 ? rest.join('.') : String(path[0]);
      const p = rest.length > 0 ? path : path.slice(1);
      return memberAttr(m, attrName, p);
    }
    switch (name) {
      case 'current_size':
        return members.filter((m) => !isFailed(m)).length;
      case 'refs':
        return walkPath(
          members.map((m) => this.refId(child, m)),
          path,
        );
      case 'refs_map': {
        const out: Record<string, unknown> = {};
        for (const m of members) out[m.name] = this.refId(child, m);
        return walkPath(out, path) ?? null;
      }
      case 'outputs': {
        if (path.length === 0) return {};
        const out: Record<string, unknown> = {};
        for (const m of members) out[m.name] = memberAttr(m, String(path[0]), path.slice(1));
        return out;
      }
      case 'outputs_list':
        if (path.length === 0) return [];
        return members.map((m) => memberAttr(m, String(path[0]), path.slice(1)));
      case 'attributes': {
        if (path.length === 0) return {};
        const out: Record<string, unknown> = {};
        for (const m of members) out[m.name] = memberAttr(m, String(path[0]), path.slice(1));
        return out;
      }
      case 'removed_rsrc_list':
        return Array.isArray(r.data.blacklist) ? r.data.blacklist : [];
      default:
        return members.map((m) => memberAttr(m, name, path));
    }
  }

  private evalProps(stack: HeatStack, def: ResourceDef): Record<string, unknown> {
    const v = evaluate(def.properties, this.ctx(stack));
    return isObj(v) ? v : {};
  }

  // -------------------------------------------------------------------------------------------
  // State bookkeeping

  private pushEvent(stack: HeatStack, ev: Omit<HeatEvent, 'id' | 'time'>): void {
    stack.events.push({ id: uuid(), time: Date.now(), ...ev });
    if (stack.events.length > MAX_EVENTS_PER_STACK) stack.events.splice(0, stack.events.length - MAX_EVENTS_PER_STACK);
  }

  private stackEvent(stack: HeatStack): void {
    this.pushEvent(stack, {
      resourceName: stack.name,
      physicalId: stack.id,
      action: stack.action,
      status: stack.status,
      reason: stack.reason,
      stackEvent: true,
    });
  }

  private resourceEvent(stack: HeatStack, r: HeatResource, action: HeatAction, status: HeatStatus, reason: string): void {
    this.pushEvent(stack, { resourceName: r.name, physicalId: r.physicalId, action, status, reason, stackEvent: false });
  }

  private setStackState(stack: HeatStack, action: HeatAction, status: HeatStatus, reason: string): void {
    stack.action = action;
    stack.status = status;
    stack.reason = reason;
    this.stackEvent(stack);
  }

  private setResourceState(stack: HeatStack, r: HeatResource, action: HeatAction, status: HeatStatus, reason = 'state changed'): void {
    r.action = action;
    r.status = status;
    r.reason = reason;
    if (status === 'COMPLETE' && action !== 'CREATE') r.updatedAt = Date.now();
    this.resourceEvent(stack, r, action, status, reason);
  }

  private newResource(stack: HeatStack, name: string, type: string): HeatResource {
    const kind = this.resolveKind(type, stack.environment, stack.files);
    this.seq += 1;
    return {
      name,
      type,
      kind: kind.kind,
      leafType: kind.leafType,
      templateFile: kind.file,
      physicalId: '',
      action: 'INIT',
      status: 'COMPLETE',
      reason: '',
      createdAt: Date.now(),
      updatedAt: undefined,
      seq: this.seq,
      props: {},
      data: {},
      nestedStackId: undefined,
      metadata: {},
      requiredBy: [],
    };
  }

  private initResources(stack: HeatStack): void {
    for (const name of this.activeNames(stack)) {
      stack.resources.set(name, this.newResource(stack, name, (stack.template.resources[name] as ResourceDef).type));
    }
  }

  private computeRequiredBy(stack: HeatStack): void {
    const names = new Set(stack.resources.keys());
    for (const r of stack.resources.values()) r.requiredBy = [];
    for (const [name, def] of Object.entries(stack.template.resources)) {
      if (!names.has(name)) continue;
      const refs = new Set<string>([...allReferences([def.properties, def.metadata]), ...def.dependsOn]);
      for (const ref of refs) {
        const target = stack.resources.get(ref);
        if (target && ref !== name && !target.requiredBy.includes(name)) target.requiredBy.push(name);
      }
    }
  }

  private reorderResources(stack: HeatStack): void {
    const ordered = new Map<string, HeatResource>();
    for (const n of stack.template.resourceOrder) {
      const r = stack.resources.get(n);
      if (r) ordered.set(n, r);
    }
    for (const [n, r] of stack.resources) if (!ordered.has(n)) ordered.set(n, r);
    stack.resources = ordered;
  }

  // -------------------------------------------------------------------------------------------
  // Scheduling

  /** Runs `fn` after the delay (after `gate` opens first, when given); a later operation on the stack supersedes it. */
  private schedule(stack: HeatStack, fn: () => void, gate?: Promise<void>): void {
    stack.opToken += 1;
    const token = stack.opToken;
    const run = (): void => {
      if (this.closed || stack.opToken !== token) return;
      try {
        fn();
      } catch (e) {
        if (!(e instanceof OpFailure)) {
          this.deps.logger.error({ err: (e as Error).message, stack: stack.name }, 'heat operation crashed');
          if (stack.status === 'IN_PROGRESS') this.setStackState(stack, stack.action, 'FAILED', `Error: ${(e as Error).message}`);
        }
      }
    };
    if (gate === undefined) this.later(run);
    else
      void gate.then(() => {
        if (!this.closed) this.later(run);
      });
  }

  private later(fn: () => void): void {
    const delay = this.deps.delayMs();
    if (delay <= 0) {
      fn();
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      try {
        fn();
      } finally {
        this.deps.onChange?.();
      }
    }, delay);
    this.timers.add(t);
  }

  // -------------------------------------------------------------------------------------------
  // Create / update / delete (synchronous once scheduled)

  private toFailure(r: HeatResource, e: unknown): OpFailure {
    if (e instanceof OpFailure) return new OpFailure(e.errType, `${r.name}.resources.${e.path}`, e.detail);
    if (e instanceof ResourceError) return new OpFailure(e.type, r.name, e.message);
    if (e instanceof HeatValidationError) return new OpFailure(e.type, r.name, e.message);
    return new OpFailure('Error', r.name, e instanceof Error ? e.message : String(e));
  }

  private fail(stack: HeatStack, r: HeatResource, action: HeatAction, e: unknown): OpFailure {
    const f = this.toFailure(r, e);
    this.setResourceState(stack, r, action, 'FAILED', f.message);
    return f;
  }

  private runCreate(stack: HeatStack, announce: boolean): void {
    if (announce) this.setStackState(stack, 'CREATE', 'IN_PROGRESS', 'Stack CREATE started');
    try {
      for (const name of this.topoOrder(stack.template, new Set(stack.resources.keys()), stack.environment, stack.files)) {
        this.createResource(stack, stack.resources.get(name) as HeatResource);
      }
      this.computeRequiredBy(stack);
      this.setStackState(stack, 'CREATE', 'COMPLETE', 'Stack CREATE completed successfully');
    } catch (e) {
      const f = e instanceof OpFailure ? e : new OpFailure('Error', stack.name, (e as Error).message);
      this.computeRequiredBy(stack);
      this.setStackState(stack, 'CREATE', 'FAILED', `Resource CREATE failed: ${f.message}`);
      throw f;
    }
  }

  private createResource(stack: HeatStack, r: HeatResource): void {
    const def = stack.template.resources[r.name] as ResourceDef;
    this.setResourceState(stack, r, 'CREATE', 'IN_PROGRESS');
    r.createdAt = Date.now();
    try {
      r.metadata = isObj(def.metadata) ? (evaluate(def.metadata, this.ctx(stack)) as Record<string, unknown>) : {};
      const props = this.evalProps(stack, def);
      r.props = props;
      if (r.kind === 'leaf') {
        const st = this.handler(r).create(this.leafCtx(stack, r), props);
        r.physicalId = st.physicalId;
        r.data = st.data;
      } else if (r.kind === 'nested') {
        this.createNested(stack, r, props);
      } else {
        this.createGroup(stack, r, props);
      }
    } catch (e) {
      throw this.fail(stack, r, 'CREATE', e);
    }
    this.setResourceState(stack, r, 'CREATE', 'COMPLETE');
  }

  private newChild(parent: HeatStack, r: HeatResource, tmpl: HotTemplate, userParams: Record<string, unknown>): HeatStack {
    const child: HeatStack = {
      id: uuid(),
      name: `${parent.name}-${r.name}-${shortId()}`,
      projectId: parent.projectId,
      userId: parent.userId,
      userName: parent.userName,
      parent: { stackId: parent.id, resourceName: r.name },
      template: tmpl,
      files: parent.files,
      environment: parent.environment,
      userParams,
      params: {},
      action: 'INIT',
      status: 'COMPLETE',
      reason: '',
      createdAt: Date.now(),
      updatedAt: undefined,
      deletedAt: undefined,
      resources: new Map(),
      disableRollback: parent.disableRollback,
      timeoutMins: parent.timeoutMins,
      tags: null,
      events: [],
      deleted: false,
      opToken: 0,
    };
    this.stacks.set(child.id, child);
    r.nestedStackId = child.id;
    r.physicalId = child.id;
    return child;
  }

  private createNested(stack: HeatStack, r: HeatResource, props: Record<string, unknown>): void {
    const tmpl = parseTemplate(stack.files[r.templateFile as string], r.templateFile);
    const child = this.newChild(stack, r, tmpl, props);
    child.params = this.resolveStackParams(child, true);
    this.initResources(child);
    this.runCreate(child, true);
  }

  /** The synthetic template of a group's nested stack: one resource per member. */
  private groupTemplate(entries: [string, string, Record<string, unknown>][]): HotTemplate {
    const resources: Record<string, unknown> = {};
    for (const [name, type, properties] of entries) resources[name] = { type, properties };
    return parseTemplate({ heat_template_version: '2015-04-30', resources });
  }

  private memberDefinition(r: HeatResource, props: Record<string, unknown>): { type: string; properties: Record<string, unknown> } {
    const def = r.kind === 'asg' ? props.resource : props.resource_def;
    if (!isObj(def) || typeof def.type !== 'string') {
      throw new ResourceError('StackValidationFailed', `Property error: resources.${r.name}.properties: invalid member definition`);
    }
    return { type: def.type, properties: isObj(def.properties) ? def.properties : {} };
  }

  private rgNames(r: HeatResource, props: Record<string, unknown>, count: number): string[] {
    const blacklist = new Set<string>(Array.isArray(r.data.blacklist) ? (r.data.blacklist as string[]) : []);
    for (const p of Array.isArray(props.removal_policies) ? props.removal_policies : []) {
      if (isObj(p) && Array.isArray(p.resource_list)) for (const x of p.resource_list) blacklist.add(String(x));
    }
    r.data.blacklist = [...blacklist];
    const names: string[] = [];
    for (let i = 0; names.length < count; i++) if (!blacklist.has(String(i))) names.push(String(i));
    return names;
  }

  private groupEntries(r: HeatResource, props: Record<string, unknown>, names: string[]): [string, string, Record<string, unknown>][] {
    const def = this.memberDefinition(r, props);
    if (r.kind === 'asg') return names.map((n) => [n, def.type, def.properties]);
    const indexVar = typeof props.index_var === 'string' ? props.index_var : '%index%';
    return names.map((n) => [n, def.type, substituteIndex(def.properties, indexVar, n) as Record<string, unknown>]);
  }

  private asgBounds(props: Record<string, unknown>): { min: number; max: number } {
    const min = num(props.min_size, 0);
    const max = num(props.max_size, min);
    return { min, max: Math.max(min, max) };
  }

  private createGroup(stack: HeatStack, r: HeatResource, props: Record<string, unknown>): void {
    let names: string[];
    if (r.kind === 'asg') {
      const { min, max } = this.asgBounds(props);
      const capacity = Math.min(max, Math.max(min, num(props.desired_capacity, min)));
      names = Array.from({ length: capacity }, () => shortId());
      r.data.capacity = capacity;
    } else {
      names = this.rgNames(r, props, Math.max(0, num(props.count, 1)));
    }
    const child = this.newChild(stack, r, this.groupTemplate(this.groupEntries(r, props, names)), {});
    child.params = {};
    this.initResources(child);
    this.runCreate(child, true);
  }

  /**
   * Resizes a group's nested stack like Heat: AutoScalingGroup keeps the newest members, dropping
   * failed (marked unhealthy) members first, then the oldest; ResourceGroup keeps indices 0..n-1.
   * Kept members get the current definition; the nested update replaces failed ones.
   */
  private resizeGroup(stack: HeatStack, r: HeatResource, props: Record<string, unknown>, explicitCapacity?: number): void {
    const { child, members } = this.groupMembers(r);
    if (!child) throw new ResourceError('NotFound', `Nested stack of ${r.name} not found`);
    let names: string[];
    if (r.kind === 'asg') {
      const { min, max } = this.asgBounds(props);
      const healthy = members.filter((m) => !isFailed(m)).length;
      const desired = props.desired_capacity === undefined || props.desired_capacity === null || props.desired_capacity === '' ? undefined : num(props.desired_capacity, healthy);
      const capacity = Math.min(max, Math.max(min, explicitCapacity ?? desired ?? healthy));
      const sorted = [...members].sort((a, b) => (isFailed(a) === isFailed(b) ? a.seq - b.seq || a.name.localeCompare(b.name) : isFailed(a) ? -1 : 1));
      const keep = capacity >= sorted.length ? sorted : sorted.slice(sorted.length - capacity);
      names = keep.sort((a, b) => a.seq - b.seq).map((m) => m.name);
      while (names.length < capacity) names.push(shortId());
      r.data.capacity = capacity;
    } else {
      names = this.rgNames(r, props, Math.max(0, num(props.count, 1)));
    }
    child.files = stack.files;
    child.environment = stack.environment;
    this.runUpdate(child, this.groupTemplate(this.groupEntries(r, props, names)), {}, true);
  }

  private runUpdate(stack: HeatStack, tmpl: HotTemplate, userParams: Record<string, unknown>, announce: boolean): void {
    if (announce) {
      this.setStackState(stack, 'UPDATE', 'IN_PROGRESS', 'Stack UPDATE started');
      stack.updatedAt = Date.now();
    }
    try {
      stack.template = tmpl;
      stack.userParams = userParams;
      stack.params = this.resolveStackParams(stack, stack.parent !== undefined);
      const active = this.activeNames(stack, tmpl);
      const order = this.topoOrder(tmpl, active, stack.environment, stack.files);
      for (const name of order) {
        const def = tmpl.resources[name] as ResourceDef;
        const old = stack.resources.get(name);
        if (!old) {
          const r = this.newResource(stack, name, def.type);
          stack.resources.set(name, r);
          this.createResource(stack, r);
          continue;
        }
        if (old.action === 'INIT' || (old.physicalId === '' && old.status === 'FAILED')) {
          const r = this.newResource(stack, name, def.type);
          stack.resources.set(name, r);
          this.createResource(stack, r);
          continue;
        }
        const kind = this.resolveKind(def.type, stack.environment, stack.files);
        if (old.type !== def.type || old.kind !== kind.kind || old.leafType !== kind.leafType || old.templateFile !== kind.file) {
          this.replaceResource(stack, old);
          continue;
        }
        this.updateResource(stack, old);
      }
      const existing = [...stack.resources.values()].reverse();
      for (const r of existing) {
        if (!active.has(r.name)) {
          this.deleteResource(stack, r);
          stack.resources.delete(r.name);
        }
      }
      this.reorderResources(stack);
      this.computeRequiredBy(stack);
      this.setStackState(stack, 'UPDATE', 'COMPLETE', 'Stack UPDATE completed successfully');
    } catch (e) {
      const f = e instanceof OpFailure ? e : new OpFailure(e instanceof HeatValidationError ? e.type : 'Error', stack.name, (e as Error).message);
      this.reorderResources(stack);
      this.computeRequiredBy(stack);
      this.setStackState(stack, 'UPDATE', 'FAILED', `Resource UPDATE failed: ${f.message}`);
      throw f;
    }
  }

  /** Replaces a resource: the new one is created first (new physical id), then the old one deleted. */
  private replaceResource(stack: HeatStack, old: HeatResource): void {
    const def = stack.template.resources[old.name] as ResourceDef;
    const r = this.newResource(stack, old.name, def.type);
    try {
      this.createResource(stack, r);
    } finally {
      stack.resources.set(old.name, r);
      try {
        this.deleteResource(stack, old, false);
      } catch (e) {
        this.deps.logger.warn({ err: (e as Error).message, resource: old.name }, 'heat: deleting replaced resource failed');
      }
    }
  }

  private updateResource(stack: HeatStack, r: HeatResource): void {
    const def = stack.template.resources[r.name] as ResourceDef;
    if (isFailed(r)) {
      this.replaceResource(stack, r);
      return;
    }
    let props: Record<string, unknown>;
    try {
      props = this.evalProps(stack, def);
      r.metadata = isObj(def.metadata) ? (evaluate(def.metadata, this.ctx(stack)) as Record<string, unknown>) : {};
    } catch (e) {
      throw this.fail(stack, r, 'UPDATE', e);
    }
    if (r.kind === 'leaf') {
      const h = this.handler(r);
      if (h.updatable === 'keep') {
        r.props = props;
        return;
      }
      if (deepEqual(r.props, props)) return;
      const keys = new Set([...Object.keys(r.props), ...Object.keys(props)]);
      const changed = [...keys].filter((k) => !deepEqual(r.props[k], props[k]));
      const inPlace = h.updatable === 'all' || changed.every((k) => (h.updatable as readonly string[]).includes(k));
      if (!inPlace || h.needsReplace?.(r.props, props) === true) {
        this.replaceResource(stack, r);
        return;
      }
      this.setResourceState(stack, r, 'UPDATE', 'IN_PROGRESS');
      try {
        const state: LeafState = { physicalId: r.physicalId, data: r.data };
        h.update?.(this.leafCtx(stack, r), state, r.props, props);
        r.physicalId = state.physicalId;
        r.data = state.data;
        r.props = props;
      } catch (e) {
        throw this.fail(stack, r, 'UPDATE', e);
      }
      this.setResourceState(stack, r, 'UPDATE', 'COMPLETE');
      return;
    }
    // Nested stacks are always updated (Heat does so for every template resource and group).
    this.setResourceState(stack, r, 'UPDATE', 'IN_PROGRESS');
    try {
      if (r.kind === 'nested') {
        const child = r.nestedStackId ? this.stacks.get(r.nestedStackId) : undefined;
        if (!child) throw new ResourceError('NotFound', `Nested stack of ${r.name} not found`);
        child.files = stack.files;
        child.environment = stack.environment;
        const tmpl = parseTemplate(stack.files[r.templateFile as string], r.templateFile);
        this.runUpdate(child, tmpl, props, true);
      } else {
        this.resizeGroup(stack, r, props);
      }
      r.props = props;
    } catch (e) {
      throw this.fail(stack, r, 'UPDATE', e);
    }
    this.setResourceState(stack, r, 'UPDATE', 'COMPLETE');
  }

  private deleteResource(stack: HeatStack, r: HeatResource, events = true): void {
    if (r.physicalId === '' && r.kind === 'leaf') return;
    if (events) this.setResourceState(stack, r, 'DELETE', 'IN_PROGRESS');
    if (r.kind === 'leaf') {
      try {
        this.handler(r).delete(this.leafCtx(stack, r), { physicalId: r.physicalId, data: r.data });
      } catch (e) {
        this.deps.logger.warn({ err: (e as Error).message, resource: r.name }, 'heat: resource delete failed');
      }
    } else {
      const child = r.nestedStackId ? this.stacks.get(r.nestedStackId) : undefined;
      if (child && !child.deleted) this.runDelete(child, true);
    }
    if (events) this.setResourceState(stack, r, 'DELETE', 'COMPLETE');
  }

  private runDelete(stack: HeatStack, announce: boolean): void {
    if (announce) this.setStackState(stack, 'DELETE', 'IN_PROGRESS', 'Stack DELETE started');
    let order: string[];
    try {
      order = this.topoOrder(stack.template, new Set(stack.resources.keys()), stack.environment, stack.files).reverse();
    } catch {
      order = [...stack.resources.keys()].reverse();
    }
    for (const name of order) {
      const r = stack.resources.get(name);
      if (r) this.deleteResource(stack, r);
    }
    for (const r of stack.resources.values()) if (!order.includes(r.name)) this.deleteResource(stack, r);
    stack.resources.clear();
    stack.deletedAt = Date.now();
    this.setStackState(stack, 'DELETE', 'COMPLETE', 'Stack DELETE completed successfully');
    stack.deleted = true;
    if (stack.parent === undefined) this.pruneDeleted();
  }

  /** Forgets the oldest soft-deleted stacks beyond {@link MAX_DELETED_STACKS} (long benchmark runs). */
  private pruneDeleted(): void {
    const deleted = [...this.stacks.values()].filter((x) => x.deleted);
    if (deleted.length <= MAX_DELETED_STACKS) return;
    deleted.sort((a, b) => (a.deletedAt ?? 0) - (b.deletedAt ?? 0));
    for (const x of deleted.slice(0, deleted.length - MAX_DELETED_STACKS)) this.stacks.delete(x.id);
  }
}
