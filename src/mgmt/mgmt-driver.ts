/**
 * Management drivers run around each LCM operation (`<op>_start` before the infra driver,
 * `<op>_end` after it, and `<op>_rollback_start/_end` around a rollback). Two kinds:
 * built-in drivers (e.g. Server Notifier alarm registration, enabled by request parameters) and
 * the VNFD's own hook scripts (`interfaces.Vnflcm.<hook>` artifacts), run by the script runner.
 */
import type { Logger } from 'pino';
import type { VnfmConfig } from '../config.ts';
import type { LcmCommand } from '../model/lcm-command.ts';
import type { OpOccRecord } from '../model/op-occ.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { FlavourModel, VnfPackageModel } from '../packages/vnfd-model.ts';
import type { VimConnection, VimInput } from '../vims/vim-registry.ts';

/** Hook names as the VNFD declares them. */
export type HookName = `${'instantiate' | 'terminate' | 'scale' | 'heal' | 'modify_information' | 'change_external_connectivity'}_${'start' | 'end' | 'rollback_start' | 'rollback_end'}`;

/**
 * One VNFC the operation acts on, resolved by the engine (stable across the infra step: the VNFC
 * keeps its ids when the VIM replaces its resource).
 * - heal: every targeted VNFC (`change: 'heal'`); a whole-VNF heal lists none.
 * - scale in: the VNFCs the infra step removes (`'remove'`), known before it runs.
 * - scale out: in `_end` hooks, the VNFCs the infra step added (`'add'`).
 */
export interface MgmtTarget {
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  vduId: string;
  change: 'heal' | 'remove' | 'add';
  /** The VIM resource before the infra step (absent for additions). */
  oldResourceId?: string;
  /** The VIM resource after the infra step (`_end` hooks; absent for removals). */
  newResourceId?: string;
}

/** Progress of the running hook step, shown on the op occ (`vnfmProgress`). */
export interface MgmtProgress {
  /** Short step name, e.g. `drain`, `etcd-member-remove`. */
  step: string;
  /** The node or VNFC the step works on. */
  node?: string;
  /** Free text, e.g. the last line of a long command (redacted by the caller). */
  detail?: string;
}

/** VIM registry operations a management driver may perform (credentials sealed by the registry). */
export interface MgmtVims {
  /**
   * Registers a VIM, idempotently: a VIM with the same name and auth URL created for this instance
   * (tag `vnfm.io/created-for=<instanceId>` in its extra) is returned instead of a second one.
   */
  register(input: VimInput): Promise<{ id: string; created: boolean }>;
  findByName(name: string): Promise<{ id: string; authUrl: string; createdFor?: string } | undefined>;
  /** Deletes a VIM; an unknown id is not an error. */
  delete(id: string): Promise<void>;
}

/**
 * Instance-scoped state of one driver, kept across operations (e.g. host key pins, the cluster's
 * admin credentials). Stored sealed; never shown in any API body.
 */
export interface MgmtInstanceState {
  get(): Promise<Record<string, unknown>>;
  /** Replaces the state at once (not tied to the operation's outcome). */
  save(state: Record<string, unknown>): Promise<void>;
}

/** What a management driver sees. */
export interface MgmtContext {
  hook: HookName;
  /** The instance as the engine currently knows it (after the infra step for `_end` hooks). */
  instance: VnfInstanceRecord;
  /** The instance as it was before the infra step (same as `instance` in `_start` hooks). */
  previousInstance: VnfInstanceRecord;
  /** The VNFCs this operation acts on (see {@link MgmtTarget}). */
  targets: MgmtTarget[];
  /** The operation's additionalParams, secrets unsealed (never log or return them). */
  params: Record<string, unknown>;
  /**
   * The additionalParams of the INSTANTIATE that built this instance, secrets unsealed, with
   * the overrides later operations persisted (see {@link MgmtResult.instantiateParams}).
   */
  instantiateParams: Record<string, unknown>;
  opOcc: OpOccRecord;
  /** What the operation does, version-neutral (heal targets are vnfcInfo ids). */
  command: LcmCommand;
  /** The request as the client sent it (for package scripts, which get it as `request`). */
  request: Record<string, unknown>;
  vnfd: VnfPackageModel;
  flavour: FlavourModel;
  vim: VimConnection | undefined;
  grantRequest: Record<string, unknown> | null;
  grant: Record<string, unknown> | null;
  files(): Promise<Map<string, Buffer>>;
  /** Driver-private persisted state of this op (survives crash and retry). */
  state: Record<string, unknown>;
  /** Fenced write of `state`: throws (and `signal` aborts) when the op's lease is lost. */
  checkpoint(): Promise<void>;
  /**
   * Aborted when the op must stop (lease lost, VNFM shutting down): hook scripts are killed
   * (SIGTERM, then SIGKILL), requests cancelled.
   */
  signal: AbortSignal;
  log: Logger;
  config: VnfmConfig;
  publicUrl: string;
  /** Shows the running step on the op occ (throttled: at most one write per second; the last one wins). */
  progress(p: MgmtProgress): void;
  /**
   * A journaled step of this driver: runs `fn` unless a step of that name already completed in
   * this op (then returns its recorded result); records completion and checkpoints. A retried op
   * therefore resumes at the first unfinished step. Results must be JSON.
   */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Serialises drivers of different instances that share a resource (an Ansible server, a load
   * balancer): waits until `key` is free (or `signal` aborts), returns the release function.
   * Locks held by an op are released when its hook step ends, whatever the outcome.
   */
  lock(key: string): Promise<() => Promise<void>>;
  vims: MgmtVims;
  /** This driver's instance-scoped state (each driver has its own). */
  instanceState: MgmtInstanceState;
}

/** Changes a hook asks the engine to make to the instance. */
export interface MgmtResult {
  /** Merged into instance.metadata. */
  metadata?: Record<string, unknown>;
  /** Merged into instance.extensions. */
  extensions?: Record<string, unknown>;
  /** vnfcResourceInfo id -> metadata merged into that VNFC. */
  vnfcMetadata?: Record<string, Record<string, unknown>>;
  /** Keys of instantiatedVnfInfo.metadata to set, each replaced as a whole (e.g. `k8sCluster`); a null value removes the key. */
  vnfInfoMetadata?: Record<string, unknown>;
  /** vimConnectionInfo changes, applied when the operation completes. */
  vimConnectionInfo?: {
    /** New entries by id (the VIM must be registered: `vimId`). */
    add?: Record<string, { vimId: string; vimType: string; interfaceInfo?: Record<string, unknown>; extra?: Record<string, unknown> }>;
    /** Entries whose vimId is one of these are removed. */
    removeVimIds?: string[];
  };
  /**
   * Overrides merged (JSON merge patch, secrets sealed) into the stored instantiate parameters
   * when the operation COMPLETES (never after a failure), e.g. a credential that now works.
   */
  instantiateParams?: Record<string, unknown>;
}

/** What a driver's request validation sees (at acceptance, before any op occ exists). */
export interface MgmtValidation {
  command: LcmCommand;
  /** The instance as stored (NOT_INSTANTIATED for an instantiate). */
  instance: VnfInstanceRecord;
  vnfd: VnfPackageModel;
  flavour: FlavourModel;
  /** The hooks of the flavour this driver is bound to. */
  hooks: HookName[];
  /** The operation's additionalParams (secrets in clear: validate, never echo them). */
  params: Record<string, unknown>;
  /** Stored instantiate parameters (for scale/heal/terminate). */
  instantiateParams: Record<string, unknown>;
  files(): Promise<Map<string, Buffer>>;
}

/** How a VNFD hook's artifact names a built-in driver. */
export interface HookArtifact {
  artifactName: string;
  file: string;
  type: string;
  properties: Record<string, unknown>;
}

/** A management driver. */
export interface MgmtDriver {
  readonly name: string;
  /** Whether this driver acts on this hook for this operation. */
  applies(ctx: MgmtContext): boolean;
  run(ctx: MgmtContext): Promise<MgmtResult | void>;
  /** True for the driver that runs the VNFD's own hook scripts (skipped for hooks a built-in driver claims). */
  readonly runsPackageScripts?: boolean;
  /**
   * Built-in drivers: whether this driver serves the VNFD hook whose artifact this is (by artifact
   * name or `properties.healvnfm_driver`). A hook claimed by a built-in driver is not run as a
   * package script.
   */
  claims?(artifact: HookArtifact): boolean;
  /**
   * Request validation at acceptance (throws a VnfmError: 400 for malformed parameters, 422 for a
   * request the driver refuses); called only when the driver claims a hook of the flavour.
   */
  validate?(v: MgmtValidation): Promise<void>;
  /**
   * True when running this hook again after an interruption at any point is safe (idempotent by
   * construction: e.g. removals where "already gone" counts as done, journaled in `ctx.state`).
   * Then a crash inside the hook's step is resumed automatically instead of leaving the operation
   * FAILED_TEMP for a person. Absent = not known to be safe (hook scripts).
   */
  idempotent?(ctx: MgmtContext): boolean;
}

/** The artifact behind a flavour's hook, as built-in drivers see it (undefined: no such hook). */
export function hookArtifact(flavour: FlavourModel, hook: string): HookArtifact | undefined {
  const h = flavour?.lcmHooks?.[hook];
  return h ? { artifactName: h.artifactName, file: h.file, type: h.type, properties: { ...(h.properties ?? {}) } } : undefined;
}

/** Per-driver parts of a context: each driver gets its own step journal and instance state. */
export type DriverScope = (driver: string) => Pick<MgmtContext, 'step' | 'instanceState'>;

/**
 * Runs the drivers acting on a hook, in registration order. A hook whose artifact a built-in
 * driver claims ({@link MgmtDriver.claims}) is served by that driver only (the first claimer);
 * package scripts ({@link MgmtDriver.runsPackageScripts}) run only for unclaimed hooks; drivers
 * that claim nothing (e.g. enabled by request parameters) run when they apply.
 */
export class MgmtRunner {
  private readonly drivers: MgmtDriver[] = [];
  register(d: MgmtDriver): void {
    this.drivers.push(d);
  }

  /**
   * The built-in driver claiming this hook of the flavour, if any. A rollback hook the flavour does
   * not bind (`<op>_rollback_start|end`) goes to the built-in driver claiming `<op>_end`: the
   * driver that did the work may undo it (it acts only when its `applies()` says so).
   */
  claimer(flavour: FlavourModel, hook: string): MgmtDriver | undefined {
    const art = hookArtifact(flavour, hook);
    if (art) return this.drivers.find((d) => d.claims?.(art) === true);
    const m = /^(.+)_rollback_(?:start|end)$/.exec(hook);
    const forward = m ? hookArtifact(flavour, `${m[1]}_end`) : undefined;
    return forward ? this.drivers.find((d) => d.claims?.(forward) === true) : undefined;
  }

  private acting(ctx: MgmtContext): MgmtDriver[] {
    const claimer = this.claimer(ctx.flavour, ctx.hook);
    return this.drivers.filter((d) => {
      if (d.claims) return d === claimer && d.applies(ctx);
      if (d.runsPackageScripts) return claimer === undefined && d.applies(ctx);
      return d.applies(ctx);
    });
  }

  /** Whether any driver acts on this hook (so the engine can skip the step cheaply). */
  applies(ctx: MgmtContext): boolean {
    return this.acting(ctx).length > 0;
  }
  /** Whether every driver that acts on this hook declares it safe to run again after an interruption. */
  idempotent(ctx: MgmtContext): boolean {
    const acting = this.acting(ctx);
    return acting.length > 0 && acting.every((d) => d.idempotent?.(ctx) === true);
  }

  /**
   * Request validation at acceptance by every built-in driver bound to a hook of the flavour
   * (throws the first driver's refusal).
   */
  async validate(v: Omit<MgmtValidation, 'hooks'>): Promise<void> {
    const bound = new Map<MgmtDriver, HookName[]>();
    for (const hook of Object.keys(v.flavour.lcmHooks)) {
      const d = this.claimer(v.flavour, hook);
      if (d) bound.set(d, [...(bound.get(d) ?? []), hook as HookName]);
    }
    for (const [d, hooks] of bound) await d.validate?.({ ...v, hooks });
  }

  /** Runs the hook; results are merged in order. `scope` gives each driver its own journal and state. */
  async run(ctx: MgmtContext, scope?: DriverScope): Promise<MgmtResult> {
    const out: MgmtResult = {};
    for (const d of this.acting(ctx)) {
      ctx.signal.throwIfAborted();
      ctx.log.info({ hook: ctx.hook, driver: d.name }, 'management hook');
      const r = await d.run(scope ? { ...ctx, ...scope(d.name) } : ctx);
      if (r) mergeResult(out, r);
    }
    return out;
  }
}

/** Merges `r` into `out` (later results win per key; vimConnectionInfo changes accumulate). */
export function mergeResult(out: MgmtResult, r: MgmtResult): MgmtResult {
  if (r.metadata) out.metadata = { ...(out.metadata ?? {}), ...r.metadata };
  if (r.extensions) out.extensions = { ...(out.extensions ?? {}), ...r.extensions };
  if (r.vnfInfoMetadata) out.vnfInfoMetadata = { ...(out.vnfInfoMetadata ?? {}), ...r.vnfInfoMetadata };
  if (r.instantiateParams) out.instantiateParams = { ...(out.instantiateParams ?? {}), ...r.instantiateParams };
  if (r.vnfcMetadata) {
    out.vnfcMetadata ??= {};
    for (const [k, v] of Object.entries(r.vnfcMetadata)) out.vnfcMetadata[k] = { ...(out.vnfcMetadata[k] ?? {}), ...v };
  }
  if (r.vimConnectionInfo) {
    const cur = out.vimConnectionInfo ?? {};
    const removed = [...(cur.removeVimIds ?? []), ...(r.vimConnectionInfo.removeVimIds ?? [])];
    // An entry added earlier (e.g. heal_end after heal_start) survives a removal listed before it.
    const add = { ...(cur.add ?? {}), ...(r.vimConnectionInfo.add ?? {}) };
    out.vimConnectionInfo = { ...(Object.keys(add).length ? { add } : {}), ...(removed.length ? { removeVimIds: [...new Set(removed)] } : {}) };
  }
  return out;
}
