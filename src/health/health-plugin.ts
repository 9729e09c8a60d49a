/**
 * Builds the VNFC health model over the base services: the monitor (watchers, sweep) and its
 * start/stop hooks. The API (src/api/health/) serves `Services.health`. The sustained fault
 * callback is injected here by whoever acts on sustained faults (auto-heal).
 */
import type { BaseServices } from '../core/base-services.ts';
import type { PluginHooks } from '../core/plugin.ts';
import { type HealthMonitorDeps, HealthMonitor, type HealthOptions, type SustainedFaultCallback } from './health-monitor.ts';
import type { HealthStore } from './health-store.ts';

/** What the health model serves. */
export interface HealthHandle {
  monitor: HealthMonitor;
  store: HealthStore;
  options: HealthOptions;
}

/** What the health model is built over. */
export type HealthDeps = Pick<BaseServices, 'config' | 'store' | 'log' | 'metrics' | 'instances' | 'vimPlugins' | 'vimOutbound'>;

/** Options of {@link createHealth} (tests, and the module acting on sustained faults). */
export interface HealthPluginOptions {
  /** Settings instead of the config's `vnfcHealth` section (missing ones from it). */
  settings?: Partial<HealthOptions>;
  /** Called once per sustained fault episode (see {@link SustainedFaultCallback}). */
  onSustainedFault?: SustainedFaultCallback;
  /** Sweep period (ms); 0: no timer. @default 1000 */
  sweepMs?: number;
  now?: HealthMonitorDeps['now'];
}

/** Builds the health model and its hooks; with `vnfcHealth.enabled` false nothing is watched (the API still answers). */
export function createHealth(ctx: HealthDeps, o: HealthPluginOptions = {}): { health: HealthHandle; hooks: PluginHooks } {
  const options: HealthOptions = { ...ctx.config.vnfcHealth, ...(o.settings ?? {}) };
  const monitor = new HealthMonitor({
    db: ctx.store.db,
    instances: ctx.instances,
    vimPlugins: ctx.vimPlugins,
    vimOutbound: ctx.vimOutbound,
    log: ctx.log,
    metrics: ctx.metrics,
    options,
    ...(o.onSustainedFault ? { onSustainedFault: o.onSustainedFault } : {}),
    ...(o.sweepMs !== undefined ? { sweepMs: o.sweepMs } : {}),
    ...(o.now ? { now: o.now } : {}),
  });
  const hooks: PluginHooks = options.enabled ? { start: () => monitor.start(), stop: () => monitor.stop() } : {};
  return { health: { monitor, store: monitor.store, options }, hooks };
}
