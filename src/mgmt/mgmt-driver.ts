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
import type { VimConnection } from '../vims/vim-registry.ts';

/** Hook names as the VNFD declares them. */
export type HookName = `${'instantiate' | 'terminate' | 'scale' | 'heal' | 'modify_information' | 'change_external_connectivity'}_${'start' | 'end' | 'rollback_start' | 'rollback_end'}`;

/** What a management driver sees. */
export interface MgmtContext {
  hook: HookName;
  /** The instance as the engine currently knows it (after the infra step for `_end` hooks). */
  instance: VnfInstanceRecord;
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
}

/** Changes a hook asks the engine to make to the instance. */
export interface MgmtResult {
  /** Merged into instance.metadata. */
  metadata?: Record<string, unknown>;
  /** Merged into instance.extensions. */
  extensions?: Record<string, unknown>;
  /** vnfcResourceInfo id -> metadata merged into that VNFC. */
  vnfcMetadata?: Record<string, Record<string, unknown>>;
}

/** A management driver. */
export interface MgmtDriver {
  readonly name: string;
  /** Whether this driver acts on this hook for this operation. */
  applies(ctx: MgmtContext): boolean;
  run(ctx: MgmtContext): Promise<MgmtResult | void>;
  /**
   * True when running this hook again after an interruption at any point is safe (idempotent by
   * construction: e.g. removals where "already gone" counts as done, journaled in `ctx.state`).
   * Then a crash inside the hook's step is resumed automatically instead of leaving the operation
   * FAILED_TEMP for a person. Absent = not known to be safe (hook scripts).
   */
  idempotent?(ctx: MgmtContext): boolean;
}

/** Runs every applicable driver for a hook, in registration order. */
export class MgmtRunner {
  private readonly drivers: MgmtDriver[] = [];
  register(d: MgmtDriver): void {
    this.drivers.push(d);
  }
  /** Whether any driver acts on this hook (so the engine can skip the step cheaply). */
  applies(ctx: MgmtContext): boolean {
    return this.drivers.some((d) => d.applies(ctx));
  }
  /** Whether every driver that acts on this hook declares it safe to run again after an interruption. */
  idempotent(ctx: MgmtContext): boolean {
    const acting = this.drivers.filter((d) => d.applies(ctx));
    return acting.length > 0 && acting.every((d) => d.idempotent?.(ctx) === true);
  }
  /** Runs the hook; results are merged in order. */
  async run(ctx: MgmtContext): Promise<MgmtResult> {
    const out: MgmtResult = {};
    for (const d of this.drivers) {
      ctx.signal.throwIfAborted();
      if (!d.applies(ctx)) continue;
      ctx.log.info({ hook: ctx.hook, driver: d.name }, 'management hook');
      const r = await d.run(ctx);
      if (!r) continue;
      if (r.metadata) out.metadata = { ...(out.metadata ?? {}), ...r.metadata };
      if (r.extensions) out.extensions = { ...(out.extensions ?? {}), ...r.extensions };
      if (r.vnfcMetadata) {
        out.vnfcMetadata ??= {};
        for (const [k, v] of Object.entries(r.vnfcMetadata)) out.vnfcMetadata[k] = { ...(out.vnfcMetadata[k] ?? {}), ...v };
      }
    }
    return out;
  }
}
