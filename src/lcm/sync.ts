/**
 * Drift sync: re-observes an instantiated VNF through its infra driver and, when the VIM replaced
 * resources outside any LCM operation (Kubernetes re-creating a failed or evicted pod, for
 * example), brings `instantiatedVnfInfo` up to date with stable VNFC ids.
 *
 * Why: a CNF's pods are replaced by Kubernetes on its own, so the stored resource ids go stale;
 * an NFVO or an operator reading the instance would see pods that no longer exist. Tacker fixes
 * its database silently every 300 s; here every correction is visible: it is stored as an op occ
 * (operation `MODIFY_INFO`, state `COMPLETED`, `isAutomaticInvocation: true`, operationParams
 * `{"sync": true}`, with `resourceChanges`), logged and counted. No notification is sent: SOL
 * defines none for a change the VNFM did not make.
 *
 * Rules:
 * - Only INSTANTIATED instances with no active operation (STARTING, PROCESSING, FAILED_TEMP,
 *   ROLLING_BACK) are synced; the instance row revision is checked when writing, so an operation
 *   that starts while the VIM is being observed wins and the sync result is dropped.
 * - Identities are kept by {@link rebuildInstantiatedInfo}: a replaced pod keeps its VNFC's
 *   vnfcResourceInfo and vnfcInfo ids. A resource re-created under the same name (StatefulSet or
 *   singleton pods) is recognised by a changed `metadata.uid` and reported MODIFIED.
 * - A replacement in flight shows fewer (or more) resources than stored for a VDU; storing that
 *   would drop a VNFC and give it a new id when its pod is back. So when the per-VDU counts differ
 *   from the stored ones, the VIM is observed again a few times; if they still differ nothing is
 *   stored and the result says `settled: false` (a size change made outside the VNFM is not
 *   adopted: scale through the API). DaemonSet VDUs are exempt: their size follows the nodes.
 * - A sync never empties an instance: an unreachable VIM fails the sync (nothing stored), a VNF
 *   whose stack / namespace is gone fails with `VNFM_ERR_INFRA_STACK_MISSING` (logged at error
 *   level, counted as `missing`; nothing stored), and an observation with none of the stored
 *   VNFCs is never adopted (`settled: false`).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { InstanceService } from './instance-service.ts';
import { Counter } from 'prom-client';
import type { PluginHooks } from '../core/plugin.ts';
import type { BaseServices } from '../core/base-services.ts';
import { isVnfmError, vnfmError } from '../errors.ts';
import { validateSync } from '../config/validate.ts';
import type { ObserveContext, ObservedResources } from '../infra/infra-driver.ts';
import type { ModifyInfoCommand } from '../model/lcm-command.ts';
import type { InstantiatedVnfInfo, VnfInstanceRecord } from '../model/vnf-instance.ts';
import { json } from '../store/db.ts';
import type { Engine } from './engine.ts';
import { externalCps } from '../packages/ext-cps.ts';
import { type ResourceChanges, rebuildInstantiatedInfo } from './instance-info.ts';
import { updateInstanceRow } from './instance-state.ts';
import { activeOpOcc } from './op-occ-repo.ts';
import { steadyPlan } from './operations/handler.ts';

const SYNC_COMMAND: ModifyInfoCommand = { operation: 'MODIFY_INFO', sync: true };

/** Options of the drift sync (config key `sync`). */
export interface SyncOptions {
  /** Period of the background sync in ms; 0 turns it off (the API endpoint still works). @default 300000 */
  intervalMs: number;
  /** Delay before the first background run, so a restart does not start with a burst of VIM calls. @default 60000 (or intervalMs when shorter) */
  initialDelayMs: number;
  /** VIM types the background sync visits; the endpoint syncs any type. @default the types whose VIM plugin syncs by default (Kubernetes: drift is normal there) */
  vimTypes: string[];
  /** Observations made in all when the VIM shows another number of VNFCs per VDU than stored (a replacement in flight). @default 4 */
  settleAttempts: number;
  /** Pause between those observations. @default 1000 */
  settleDelayMs: number;
}

/**
 * Fills the defaults of {@link SyncOptions} under `input` (e.g. a test's options) and checks them
 * by the config's rules; `defaultVimTypes`: the VIM types visited when `vimTypes` is not given (the
 * composition root passes those whose VIM plugin syncs by default).
 */
export function resolveSyncOptions(input: Partial<SyncOptions> = {}, defaultVimTypes: readonly string[] = []): SyncOptions {
  const intervalMs = input.intervalMs ?? 300_000;
  const o: SyncOptions = {
    intervalMs,
    initialDelayMs: input.initialDelayMs ?? Math.min(60_000, intervalMs),
    vimTypes: input.vimTypes ?? [...defaultVimTypes],
    settleAttempts: input.settleAttempts ?? 4,
    settleDelayMs: input.settleDelayMs ?? 1000,
  };
  validateSync(o);
  return o;
}

/** What one sync of an instance found. */
export interface SyncResult {
  /** True when the stored instance info was updated. */
  changed: boolean;
  /** False when the VIM did not show the stored number of VNFCs (nothing stored; try again later). */
  settled: boolean;
  affectedVnfcs: Record<string, unknown>[];
  affectedVirtualStorages: Record<string, unknown>[];
  affectedVirtualLinks: Record<string, unknown>[];
  /** The MODIFY_INFO op occ recording the change (only when `changed`). */
  vnfLcmOpOccId?: string;
  /** Why nothing was stored (not settled, or the instance changed meanwhile). */
  detail?: string;
}

/** Totals of one background pass. */
export interface SyncPassResult {
  visited: number;
  changed: number;
  unsettled: number;
  skipped: number;
  failed: number;
  /** Instances whose resources the VIM does not show at all (stack / namespace gone): logged as errors, nothing stored. */
  missing: number;
}

/** The services the drift sync reads and writes through. */
export type SyncServices = Pick<BaseServices, 'config' | 'store' | 'log' | 'metrics' | 'instances' | 'packages'>;

/** Dependencies of {@link DriftSync}. */
export interface DriftSyncDeps {
  ctx: SyncServices;
  engine: Engine;
  options: SyncOptions;
}

const RESULTS = ['changed', 'unchanged', 'unsettled', 'skipped', 'failed', 'missing'] as const;
type SyncMetricResult = (typeof RESULTS)[number];

/** VDUs whose size the VNFM does not set (one pod per node). */
const UNCOUNTED_TYPES = new Set(['DaemonSet']);

function vduCounts(vnfcs: readonly { vduId: string; computeResource: { vimLevelResourceType?: string | undefined } }[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of vnfcs) {
    if (UNCOUNTED_TYPES.has(v.computeResource.vimLevelResourceType ?? '')) continue;
    m.set(v.vduId, (m.get(v.vduId) ?? 0) + 1);
  }
  return m;
}

function countMismatch(prev: InstantiatedVnfInfo, observed: ObservedResources): string | undefined {
  const stored = prev.vnfcResourceInfo?.length ?? 0;
  // Never adopt "nothing" (DaemonSet-only VNFs included): that would erase the instance's VNFCs.
  if (stored > 0 && observed.vnfcs.length === 0) return `none of the ${stored} stored VNFCs is observed`;
  const want = vduCounts(prev.vnfcResourceInfo ?? []);
  const have = vduCounts(observed.vnfcs);
  const diffs: string[] = [];
  for (const vdu of [...new Set([...want.keys(), ...have.keys()])].sort()) {
    const w = want.get(vdu) ?? 0;
    const h = have.get(vdu) ?? 0;
    if (w !== h) diffs.push(`${vdu}: ${h} observed, ${w} stored`);
  }
  return diffs.length ? diffs.join('; ') : undefined;
}

/** Re-observes instances and records drift (see the module comment). */
export class DriftSync {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<SyncPassResult> | undefined;
  private stopped = false;
  private readonly counter: Counter<'result'>;
  private readonly log: Logger;

  constructor(private readonly d: DriftSyncDeps) {
    this.log = d.ctx.log.child({ component: 'drift-sync' });
    const existing = d.ctx.metrics.registry.getSingleMetric('vnfm_sync_total') as Counter<'result'> | undefined;
    this.counter = existing ?? new Counter({ name: 'vnfm_sync_total', help: 'Drift syncs of VNF instances, by result', labelNames: ['result'] as const, registers: [d.ctx.metrics.registry] });
    for (const r of RESULTS) this.counter.inc({ result: r }, 0);
  }

  private count(r: SyncMetricResult): void {
    this.counter.inc({ result: r });
  }

  /** The observation context of a driver call outside any operation. */
  private async infraContext(inst: VnfInstanceRecord): Promise<{ ictx: ObserveContext; vimKey: string }> {
    const { ctx, engine } = this.d;
    const info = inst.instantiatedVnfInfo as InstantiatedVnfInfo;
    const vnfd = await engine.lcm.vnfdOf(inst);
    const flavour = vnfd.flavours[info.flavourId];
    if (!flavour) throw vnfmError('VNFM_ERR_INST_INVALID', `flavour ${info.flavourId} not found in VNFD ${vnfd.vnfdId}`);
    const conns = await ctx.instances.vimConnections(inst.id);
    const vimKey = InstanceService.infraConnectionKey(conns);
    const vim = vimKey === undefined ? undefined : conns[vimKey];
    if (!vim || vimKey === undefined) throw vnfmError('VNFM_ERR_INST_INVALID', `VnfInstance ${inst.id} has no vimConnectionInfo`);
    const plan = steadyPlan(inst, flavour);
    let files: Promise<Map<string, Buffer>> | undefined;
    const ictx: ObserveContext = {
      instance: inst,
      vnfd,
      flavour,
      vim,
      files: () => (files ??= ctx.packages.files(inst.vnfPkgId)),
      signal: new AbortController().signal,
      targetVduCounts: plan.targetVduCounts,
      log: this.log.child({ vnfInstanceId: inst.id }),
    };
    return { ictx, vimKey };
  }

  /**
   * Syncs one instance now. Throws 404 for an unknown instance, 409 when it is not instantiated
   * or an operation is active on it (or starts while the VIM is observed), and the driver's error
   * when the VIM cannot be read.
   */
  async syncInstance(id: string): Promise<SyncResult> {
    const { ctx, engine, options } = this.d;
    const inst = await ctx.instances.get(id);
    if (inst.instantiationState !== 'INSTANTIATED' || !inst.instantiatedVnfInfo) throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${id} isn't instantiated.`);
    const active = await activeOpOcc(ctx.store.db, id);
    if (active) {
      throw vnfmError('VNFM_ERR_INST_BUSY', `Other LCM operation of vnfInstance ${id} is in progress: ${active.operation} ${active.id} is ${active.operationState}; sync after it ends.`, {
        extra: { conflictingLcmOpOccId: active.id },
      });
    }
    const prev = inst.instantiatedVnfInfo;
    const opId = randomUUID();
    const { ictx, vimKey } = await this.infraContext(inst);
    const vim = ictx.vim;
    const driver = engine.drivers.find(vim.vimType);
    if (!driver) throw vnfmError('VNFM_ERR_VIM_INVALID', `no infra driver for VIM type ${vim.vimType}`);

    const observe = async (): Promise<ObservedResources> => {
      try {
        return await driver.observe(ictx);
      } catch (e) {
        if (isVnfmError(e, 'VNFM_ERR_INFRA_STACK_MISSING')) {
          // Drift, reported loudly; the stored instance information is kept as it was.
          this.count('missing');
          this.log.error({ vnfInstanceId: id, err: e.message }, 'drift sync: the VIM shows none of the VNF\'s resources; instance information kept, nothing stored');
        }
        throw e;
      }
    };
    let observed = await observe();
    let mismatch = countMismatch(prev, observed);
    for (let i = 1; mismatch !== undefined && i < options.settleAttempts; i++) {
      await sleep(options.settleDelayMs);
      observed = await observe();
      mismatch = countMismatch(prev, observed);
    }
    const empty = { affectedVnfcs: [], affectedVirtualStorages: [], affectedVirtualLinks: [] };
    if (mismatch !== undefined) {
      this.count('unsettled');
      const detail = `the VIM does not show the stored number of VNFCs (${mismatch}); a replacement may be in progress, or the VNF was resized outside the VNFM; nothing was stored`;
      this.log.info({ vnfInstanceId: id, mismatch }, 'drift sync: not settled');
      return { changed: false, settled: false, ...empty, detail };
    }

    // Same resource id but another incarnation (StatefulSet / singleton pod re-created).
    const reincarnated = new Set<string>();
    for (const r of prev.vnfcResourceInfo ?? []) {
      const oldUid = r.metadata?.uid;
      if (typeof oldUid !== 'string') continue;
      const o = observed.vnfcs.find((v) => v.vduId === r.vduId && v.computeResource.resourceId === r.computeResource.resourceId);
      const newUid = o?.metadata?.uid;
      if (typeof newUid === 'string' && newUid !== oldUid) reincarnated.add(r.id);
    }
    const { info, changes } = rebuildInstantiatedInfo(prev, observed, {
      flavourId: prev.flavourId,
      vimConnectionId: vimKey,
      scaleStatus: prev.scaleStatus ?? [],
      maxScaleLevels: prev.maxScaleLevels ?? [],
      instantiationLevelId: prev.instantiationLevelId,
      healedIds: reincarnated,
      externalCps: externalCps(ictx.flavour),
    });
    if (!hasChanges(changes)) {
      this.count('unchanged');
      return { changed: false, settled: true, ...empty };
    }

    await ctx.store.db.transaction().execute(async (tx) => {
      // Refused (nothing stored) when the instance changed since it was read: an operation won.
      await updateInstanceRow(tx, id, inst.rev, { instantiatedVnfInfo: info }, `VnfInstance ${id} changed while the VIM was being observed; nothing was stored`);
      // Throws 409 (and rolls the update back) when an operation started meanwhile.
      await engine.states.recorded(tx, { id: opId, instance: inst, operation: 'MODIFY_INFO', command: SYNC_COMMAND, params: { sync: true }, apiVersion: 'v2', automatic: true }, { resource_changes: json(changes) });
    });
    this.count('changed');
    this.log.info(
      {
        vnfInstanceId: id,
        opOccId: opId,
        affectedVnfcs: changes.affectedVnfcs.length,
        affectedVirtualStorages: changes.affectedVirtualStorages.length,
        affectedVirtualLinks: changes.affectedVirtualLinks.length,
      },
      'drift sync: instance info updated from the VIM',
    );
    return { changed: true, settled: true, ...changes, vnfLcmOpOccId: opId };
  }

  /** One background pass over every instantiated instance of the configured VIM types; never throws. */
  async syncAll(): Promise<SyncPassResult> {
    if (this.pass) return this.pass;
    this.pass = this.runPass().finally(() => {
      this.pass = undefined;
    });
    return this.pass;
  }

  private async runPass(): Promise<SyncPassResult> {
    const out: SyncPassResult = { visited: 0, changed: 0, unsettled: 0, skipped: 0, failed: 0, missing: 0 };
    // only the ids the pass visits, chosen by the database (not every instance with its JSON)
    let ids: string[];
    try {
      ids = await this.d.ctx.instances.instantiatedIdsByVimType(this.d.options.vimTypes);
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'drift sync: cannot list instances');
      return out;
    }
    for (const id of ids) {
      if (this.stopped) break;
      out.visited++;
      try {
        const r = await this.syncInstance(id);
        if (r.changed) out.changed++;
        else if (!r.settled) out.unsettled++;
      } catch (e) {
        if (isVnfmError(e, 'VNFM_ERR_INFRA_STACK_MISSING')) {
          out.missing++; // counted and logged (error level) by syncInstance
        } else if (isVnfmError(e, 'VNFM_ERR_INST_BUSY', 'VNFM_ERR_INST_STATE', 'VNFM_ERR_INST_NOT_FOUND')) {
          out.skipped++;
          this.count('skipped');
          this.log.debug({ vnfInstanceId: id, reason: e.message }, 'drift sync: skipped');
        } else {
          out.failed++;
          this.count('failed');
          this.log.warn({ vnfInstanceId: id, err: (e as Error).message }, 'drift sync: failed');
        }
      }
    }
    return out;
  }

  /** Starts the periodic background sync (no-op when `intervalMs` is 0). */
  start(): void {
    if (this.d.options.intervalMs <= 0 || this.timer) return;
    this.stopped = false;
    const schedule = (ms: number) => {
      this.timer = setTimeout(() => {
        void this.syncAll().finally(() => {
          if (!this.stopped) schedule(this.d.options.intervalMs);
        });
      }, ms);
      this.timer.unref();
    };
    schedule(this.d.options.initialDelayMs);
    this.log.info({ intervalMs: this.d.options.intervalMs, vimTypes: this.d.options.vimTypes }, 'drift sync started');
  }

  /** Stops the background sync and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.pass?.catch(() => undefined);
  }
}

function hasChanges(c: ResourceChanges): boolean {
  return c.affectedVnfcs.length > 0 || c.affectedVirtualStorages.length > 0 || c.affectedVirtualLinks.length > 0;
}

/** What the drift sync is built over. */
export type SyncDeps = SyncServices & Pick<BaseServices, 'vimPlugins'> & { engine: Engine };

/**
 * Builds the drift sync (served by the API as `POST /vnflcm/v2/vnf_instances/{id}/sync`) and the
 * hooks that run the periodic sync. Options come from `options`, else the config's `sync` section,
 * else the defaults (the VIM types whose plugin syncs by default).
 */
export function createSync(deps: SyncDeps, options?: Partial<SyncOptions>): { sync: DriftSync; hooks: PluginHooks } {
  const { engine, vimPlugins, ...ctx } = deps;
  // The config's section was checked when the config was resolved; only options given here are checked now.
  const fromConfig = ctx.config.sync;
  const resolved = options ? resolveSyncOptions(options, vimPlugins.syncVimTypes()) : { ...fromConfig, vimTypes: fromConfig.vimTypes ?? vimPlugins.syncVimTypes() };
  const sync = new DriftSync({ ctx, engine, options: resolved });
  return { sync, hooks: { start: () => sync.start(), stop: () => sync.stop() } };
}
