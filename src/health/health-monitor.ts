/**
 * The health monitor: starts one health watcher per VIM plugin that has one
 * ({@link VimPlugin.healthWatcher}), hands it its targets (src/health/health-targets.ts), maps
 * what it reports back to VNFCs and writes the model (src/health/health-store.ts).
 *
 * - `unreachable` makes every VNFC of the target `unknown` (reason `VimUnreachable`), never
 *   `faulty`.
 * - While an LCM operation of an instance is active (its op occ is STARTING, PROCESSING,
 *   FAILED_TEMP or ROLLING_BACK), observations of its VNFCs are held, not applied: the VNFC keeps
 *   its condition and `since`, its reason says `operation in progress`. The latest held
 *   observation of each VNFC is applied by the first sweep after the operation (unless the
 *   operation replaced the VNFC's resource), and so is the next report.
 * - Sustained faults: a VNFC `faulty` continuously for `unhealthyForMs` (per resource kind, or the
 *   VNF's `vnfConfigurableProperties.unhealthyFor` in seconds) is handed to `onSustainedFault`
 *   once per fault episode: the episode is marked `reported_at` in the store before the call (a
 *   restart does not call it again; a due episode not marked yet is called after a restart; a
 *   failed call is unmarked and retried by the next sweep). Not while an operation of the
 *   instance is active.
 * - Reports, sweeps and held observations are applied one at a time, in arrival order.
 */
import type { Logger } from 'pino';
import type { VnfmMetrics } from '../core/metrics.ts';
import type { HealthWatchTarget, VimHealthWatcher, VimPlugins } from '../infra/vim-plugin.ts';
import type { InstanceService } from '../lcm/instance-service.ts';
import { activeOpOcc } from '../lcm/op-occ-repo.ts';
import type { ResourceHealth } from '../model/vnfc-health.ts';
import type { OutboundGuard } from '../net/outbound.ts';
import type { Database } from '../store/schema.ts';
import type { Kysely } from 'kysely';
import { type HealthChange, type HealthObservation, HealthStore, rowId, type VnfcRef, type VnfcHealthRecord } from './health-store.ts';
import { type LoadedTarget, loadWatched, toWatchTarget } from './health-targets.ts';

/** Reason of the VNFCs of a target whose VIM cannot be read. */
export const VIM_UNREACHABLE = 'VimUnreachable';

/** A VNFC faulty for longer than its `unhealthyFor`: what {@link SustainedFaultCallback} receives. */
export interface SustainedFault {
  vnfInstanceId: string;
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  resourceId: string;
  reason: string;
  /** When the fault episode began. */
  since: Date;
}

/**
 * Called once per fault episode of a VNFC (see the module comment). Throwing (or rejecting) makes
 * the next sweep call it again.
 */
export type SustainedFaultCallback = (fault: SustainedFault) => void | Promise<void>;

/** Settings of the health model (config section `vnfcHealth`). */
export interface HealthOptions {
  enabled: boolean;
  /** Poll period of polling watchers, and how often the rows are reconciled with the instances (ms). */
  periodMs: number;
  /** How long a VNFC stays faulty before it is a sustained fault (ms), by resource kind. */
  unhealthyForMs: { vm: number; pod: number };
}

/** What the monitor is built with. */
export interface HealthMonitorDeps {
  db: Kysely<Database>;
  instances: Pick<InstanceService, 'vimConnections'>;
  vimPlugins: VimPlugins;
  vimOutbound: OutboundGuard;
  log: Logger;
  metrics?: VnfmMetrics;
  options: HealthOptions;
  onSustainedFault?: SustainedFaultCallback;
  /** Period of the sweep (held observations, sustained faults, reconcile when due); 0: no timer (tests call {@link HealthMonitor.sweep}). @default 1000 */
  sweepMs?: number;
  now?: () => Date;
}

/** The per-VNF override of `unhealthyFor` (seconds), in ms; undefined when absent or not a number >= 0. */
export function unhealthyForOverrideMs(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? Math.round(n * 1000) : undefined;
}

/** Keeps the VNFC health model (see the module comment). */
export class HealthMonitor {
  readonly store: HealthStore;
  private readonly watchers: { vimType: string; watcher: VimHealthWatcher }[] = [];
  /** Target key -> its VNFCs by resource id, as last handed to its watcher. */
  private readonly index = new Map<string, LoadedTarget>();
  /** Keys handed to each VIM type's watcher at its last `targets()`. */
  private readonly keysOf = new Map<string, Set<string>>();
  /** Latest observation of each VNFC held during an operation of its instance (by row id). */
  private readonly held = new Map<string, HealthObservation>();
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private lastReconcile = 0;
  private running = false;
  /** Instances whose invalid `unhealthyFor` was logged. */
  private readonly warned = new Set<string>();
  private readonly log: Logger;
  private readonly now: () => Date;

  constructor(private readonly d: HealthMonitorDeps) {
    this.store = new HealthStore(d.db);
    this.log = d.log.child({ component: 'vnfc-health' });
    this.now = d.now ?? (() => new Date());
  }

  /** VIM types whose plugin has a health watcher. */
  watchedVimTypes(): string[] {
    return this.d.vimPlugins.list.filter((p) => p.healthWatcher !== undefined).map((p) => p.vimType);
  }

  /** Starts a watcher per VIM plugin that has one, and the sweep. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (const p of this.d.vimPlugins.list) {
      if (!p.healthWatcher) continue;
      const vimType = p.vimType;
      const watcher = p.healthWatcher({
        vimOutbound: this.d.vimOutbound,
        log: this.d.log.child({ component: 'health-watch', vimType }),
        targets: () => this.targets(vimType),
        report: (key, observations) => this.report(key, observations),
        unreachable: (key, reason) => this.unreachable(key, reason),
        periodMs: this.d.options.periodMs,
        countRequest: (t) => this.d.metrics?.healthWatchRequests.inc({ vim_type: t }),
      });
      this.watchers.push({ vimType, watcher });
      try {
        await watcher.start();
      } catch (e) {
        // the VNFM runs on without this VIM type's health: its VNFCs stay as they are (unknown when new)
        this.log.error({ err: e, vimType }, 'health watcher failed to start');
      }
    }
    const every = this.d.sweepMs ?? 1000;
    if (every > 0) this.timer = setInterval(() => void this.sweep().catch(() => undefined), every);
    this.timer?.unref();
  }

  /** Stops the watchers and the sweep; resolves when nothing of the monitor is in flight. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const ws = this.watchers.splice(0);
    await Promise.all(ws.map(async (w) => Promise.resolve(w.watcher.stop()).catch((e: unknown) => this.log.warn({ err: e, vimType: w.vimType }, 'health watcher failed to stop'))));
    await this.idle();
  }

  /** Resolves when every report and sweep queued so far is applied. */
  async idle(): Promise<void> {
    let last: Promise<void>;
    do {
      last = this.chain;
      await last;
    } while (last !== this.chain);
  }

  /** The current targets of a VIM type's watcher (and the index its reports are mapped with). */
  async targets(vimType: string): Promise<HealthWatchTarget[]> {
    const w = await loadWatched(this.d.db, this.d.instances, [vimType]);
    for (const k of this.keysOf.get(vimType) ?? []) if (!w.targets.has(k)) this.index.delete(k);
    for (const [k, t] of w.targets) this.index.set(k, t);
    this.keysOf.set(vimType, new Set(w.targets.keys()));
    return [...w.targets.values()].map(toWatchTarget);
  }

  /** A watcher's observations of a target's resources (applied in order, in the background). */
  report(key: string, observations: readonly ResourceHealth[]): void {
    const copy = [...observations];
    this.enqueue(async () => {
      const t = this.index.get(key);
      if (!t) {
        this.log.debug({ key }, 'health report of an unknown target ignored');
        return;
      }
      const obs: HealthObservation[] = [];
      for (const o of copy) {
        for (const ref of t.resources.get(o.resourceId) ?? []) {
          obs.push({ ref, condition: o.condition, reason: o.reason, ...(o.detail !== undefined ? { detail: o.detail } : {}), source: 'vim-watch', kind: o.kind, observedAt: o.observedAt });
        }
      }
      await this.applyOrHold(obs);
    });
  }

  /** A target's VIM cannot be read: its VNFCs become `unknown`. */
  unreachable(key: string, reason: string): void {
    this.enqueue(async () => {
      const t = this.index.get(key);
      if (!t) return;
      const at = this.now();
      const obs: HealthObservation[] = [];
      for (const refs of t.resources.values()) for (const ref of refs) obs.push({ ref, condition: 'unknown', reason: VIM_UNREACHABLE, detail: reason.slice(0, 1000), source: 'vim-watch', observedAt: at });
      await this.applyOrHold(obs);
    });
  }

  /**
   * One sweep: reconciles the rows with the instances (every `periodMs`, or when held
   * observations of an instance whose operation ended wait), applies held observations of instances whose operation ended, reports
   * due sustained faults and refreshes the `vnfm_vnfc_health` gauge.
   */
  sweep(): Promise<void> {
    return this.enqueue(async () => {
      const now = this.now();
      let current: Map<string, VnfcRef> | undefined;
      const heldOf = new Set([...this.held.values()].map((o) => o.ref.vnfInstanceId));
      const releasable = heldOf.size > 0 && (await this.busy(heldOf)).size < heldOf.size;
      if (now.getTime() - this.lastReconcile >= this.d.options.periodMs || releasable) {
        const w = await loadWatched(this.d.db, this.d.instances, this.watchedVimTypes());
        this.lastReconcile = now.getTime();
        current = new Map(w.vnfcs.map((v) => [rowId(v.vnfInstanceId, v.vnfcResourceInfoId), v]));
        if (this.watchedVimTypes().length > 0) this.noteChanges(await this.store.reconcile(w.vnfcs, now));
      }
      await this.releaseHeld(current);
      await this.reportSustained(now);
      const counts = await this.store.counts();
      for (const [c, n] of Object.entries(counts)) this.d.metrics?.vnfcHealth.set({ condition: c }, n);
    });
  }

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const p = this.chain.then(fn).catch((e: unknown) => this.log.warn({ err: e }, 'VNFC health update failed'));
    this.chain = p;
    return p;
  }

  /** Instances among `ids` with an active LCM operation. */
  private async busy(ids: Iterable<string>): Promise<Set<string>> {
    const out = new Set<string>();
    for (const id of new Set(ids)) if ((await activeOpOcc(this.d.db, id)) !== undefined) out.add(id);
    return out;
  }

  private async applyOrHold(obs: HealthObservation[]): Promise<void> {
    if (obs.length === 0) return;
    const busy = await this.busy(obs.map((o) => o.ref.vnfInstanceId));
    const apply: HealthObservation[] = [];
    const hold: HealthObservation[] = [];
    for (const o of obs) (busy.has(o.ref.vnfInstanceId) ? hold : apply).push(o);
    for (const o of hold) {
      const id = rowId(o.ref.vnfInstanceId, o.ref.vnfcResourceInfoId);
      const prev = this.held.get(id);
      if (!prev || prev.observedAt.getTime() <= o.observedAt.getTime()) this.held.set(id, o);
    }
    if (hold.length > 0) await this.store.hold(hold.map((o) => o.ref));
    this.noteChanges(await this.store.apply(apply));
  }

  /** Applies the held observations of instances no longer in an operation (dropping those of replaced resources). */
  private async releaseHeld(current: Map<string, VnfcRef> | undefined): Promise<void> {
    if (this.held.size === 0 || current === undefined) return;
    const busy = await this.busy([...this.held.values()].map((o) => o.ref.vnfInstanceId));
    const release: HealthObservation[] = [];
    for (const [id, o] of this.held) {
      if (busy.has(o.ref.vnfInstanceId)) continue;
      this.held.delete(id);
      const now = current.get(id);
      if (now && now.resourceId === o.ref.resourceId) release.push({ ...o, ref: now });
    }
    this.noteChanges(await this.store.apply(release));
  }

  private noteChanges(changes: readonly HealthChange[]): void {
    const at = this.now().getTime();
    for (const c of changes) {
      this.d.metrics?.healthDetection.observe(Math.max(0, at - c.observedAt.getTime()) / 1000);
      this.log.info({ vnfInstanceId: c.ref.vnfInstanceId, vnfcInfoId: c.ref.vnfcInfoId, resourceId: c.ref.resourceId, from: c.oldCondition, to: c.newCondition, reason: c.reason, source: c.source }, 'VNFC health changed');
    }
  }

  /** The sustained-fault threshold of a row (ms). */
  private thresholdMs(rec: VnfcHealthRecord, override: unknown): number {
    const o = override === undefined ? undefined : unhealthyForOverrideMs(override);
    if (override !== undefined && o === undefined && !this.warned.has(rec.vnfInstanceId)) {
      this.warned.add(rec.vnfInstanceId);
      this.log.warn({ vnfInstanceId: rec.vnfInstanceId, unhealthyFor: override }, 'vnfConfigurableProperties.unhealthyFor is not a number of seconds >= 0: the default applies');
    }
    return o ?? (rec.resourceKind === 'pod' ? this.d.options.unhealthyForMs.pod : this.d.options.unhealthyForMs.vm);
  }

  private async reportSustained(now: Date): Promise<void> {
    const cb = this.d.onSustainedFault;
    if (!cb) return;
    const due = (await this.store.unreportedFaults()).filter((f) => now.getTime() - Date.parse(f.record.since) >= this.thresholdMs(f.record, f.unhealthyFor));
    if (due.length === 0) return;
    const busy = await this.busy(due.map((f) => f.record.vnfInstanceId));
    for (const { record: r } of due) {
      if (busy.has(r.vnfInstanceId)) continue;
      if (!(await this.store.claimReport(r, now))) continue;
      try {
        await cb({ vnfInstanceId: r.vnfInstanceId, vnfcInfoId: r.vnfcInfoId, vnfcResourceInfoId: r.vnfcResourceInfoId, resourceId: r.resourceId, reason: r.reason, since: new Date(r.since) });
        this.log.info({ vnfInstanceId: r.vnfInstanceId, vnfcInfoId: r.vnfcInfoId, resourceId: r.resourceId, since: r.since }, 'sustained VNFC fault reported');
      } catch (e) {
        this.log.warn({ err: e, vnfInstanceId: r.vnfInstanceId, vnfcInfoId: r.vnfcInfoId }, 'sustained fault callback failed: retried at the next sweep');
        await this.store.unclaimReport(r);
      }
    }
  }
}
