/**
 * How the modules of a VNFM are put together, by value: the base services first
 * ({@link buildBaseServices}, over the VIM plugins registered here), then each module by the
 * function that builds it from explicit dependencies (engine, drift sync, notifications,
 * auto-heal, VNFC health), in the order their dependencies need, then the {@link Services} the API serves,
 * assembled from the returned values. No module sees the assembled object.
 */
import type { BaseServices } from '../core/base-services.ts';
import { VnfmMetrics } from '../core/metrics.ts';
import type { PluginHooks } from '../core/plugin.ts';
import type { Services } from '../core/services.ts';
import type { VnfmConfig } from '../config.ts';
import { createAutoheal, type AutohealPluginOptions } from '../autoheal/autoheal-plugin.ts';
import { createHealth, type HealthPluginOptions } from '../health/health-plugin.ts';
import type { SustainedFault } from '../health/health-monitor.ts';
import { kubernetesVimPlugin } from '../infra/kubernetes/index.ts';
import { openstackVimPlugin } from '../infra/openstack/index.ts';
import { type VimPlugin, VimPlugins } from '../infra/vim-plugin.ts';
import { createEngine } from '../lcm/engine.ts';
import { InstanceService } from '../lcm/instance-service.ts';
import { createSync, type SyncOptions } from '../lcm/sync.ts';
import type { Logger } from '../logger.ts';
import { configureSecretNames } from '../model/sealed-params.ts';
import { OutboundGuard, vimOutboundGuard } from '../net/outbound.ts';
import { Notifier } from '../notify/notifier.ts';
import { type NotificationOptions, createNotifications } from '../notify/setup.ts';
import { PackageService } from '../packages/package-service.ts';
import type { Store } from '../store/db.ts';
import { openSecretBox } from '../store/secret-box.ts';
import { ServerNotifierRegistry } from '../vims/server-notifiers.ts';
import { VimRegistry } from '../vims/vim-registry.ts';
import { setupSimCloud } from './sim-cloud.ts';

/** The VIM types every VNFM serves, in the order their plugins are asked (src/infra/<type>/vim-plugin.ts). */
export function builtinVimPlugins(): VimPlugin[] {
  return [openstackVimPlugin, kubernetesVimPlugin];
}

/** Builds the base services over an open store; `extraVimPlugins` are registered after the built-in ones. */
export function buildBaseServices(config: VnfmConfig, store: Store, log: Logger, extraVimPlugins: readonly VimPlugin[] = []): BaseServices {
  configureSecretNames(config.secrets);
  const box = openSecretBox({ configured: config.secretKey, file: config.secretKeyFile, dataDir: config.databaseUrl ? undefined : config.dataDir });
  const metrics = new VnfmMetrics({ defaultMetrics: true, ...(store.wasmMemoryBytes ? { wasmMemoryBytes: () => store.wasmMemoryBytes?.() ?? 0 } : {}) });
  const notifier = new Notifier(() => config.publicUrl);
  const own = () => ({ host: config.host, port: config.port || Number(new URL(config.publicUrl).port) });
  const vimOutbound = vimOutboundGuard(config.outbound, own);
  const vimPlugins = new VimPlugins([...builtinVimPlugins(), ...extraVimPlugins]);
  const vims = new VimRegistry(store.db, box, config.auth.tenancy.vims, (u) => vimOutbound.checkAccept(u), vimPlugins.list);
  const packages = new PackageService(store.db, log, (r) => metrics.packages.inc({ result: r }), config.packages);
  const instances = new InstanceService(store.db, notifier, vims, box, log);
  const outbound = new OutboundGuard(config.outbound, own);
  const serverNotifiers = new ServerNotifierRegistry(store.db, (u) => outbound.check(u));
  return { config, store, log, box, metrics, notifier, vims, packages, instances, vimPlugins, outbound, vimOutbound, serverNotifiers };
}

/** Names of the optional built-in modules. */
export type BuiltinName = 'sync' | 'notifications' | 'autoheal' | 'health' | 'sim';

/** Variants of the built-in modules (tests, benchmarks). */
export interface ModuleOptions {
  /** Drift sync options instead of the config's `sync` section. */
  sync?: Partial<SyncOptions>;
  /**
   * Delivery worker options; `manual`: the worker is neither started nor woken by new
   * notifications (the caller drives it), only stopped at close.
   */
  notifications?: NotificationOptions & { manual?: boolean };
  /** Auto-heal options (its settings, the alarm registration driver). */
  autoheal?: AutohealPluginOptions;
  /** VNFC health model options (its settings, the sustained fault callback, the sweep period). */
  health?: HealthPluginOptions;
}

/** The modules built, and their background work with the names their stop steps are logged under, in start order. */
export interface Composition {
  services: Services;
  hooks: [string, PluginHooks][];
}

/**
 * Builds every module in order (the simulated cloud when on, engine, drift sync, notifications,
 * auto-heal, VNFC health; `without` leaves optional ones out) and assembles the services. The simulated cloud
 * (and the lab's hosts) starts first and stops last: the operations the engine resumes at
 * start-up, and those it drains at shutdown, reach the VIMs they were using.
 */
export function composeModules(base: BaseServices, o: { without?: readonly BuiltinName[]; modules?: ModuleOptions } = {}): Composition {
  const wanted = (n: BuiltinName): boolean => !(o.without ?? []).includes(n);
  const m = o.modules ?? {};
  const engine = createEngine(base);
  const sync = wanted('sync') ? createSync({ ...base, engine: engine.engine }, m.sync) : undefined;
  let notifications: { value: ReturnType<typeof createNotifications>; hooks: PluginHooks } | undefined;
  if (wanted('notifications')) {
    const { manual, ...nopts } = m.notifications ?? {};
    const n = createNotifications(base, nopts);
    if (!manual) base.notifier.onQueued(() => n.worker.wake());
    notifications = { value: n, hooks: manual ? { stop: () => n.worker.stop() } : { start: () => n.worker.start(), stop: () => n.worker.stop() } };
  }
  const autoheal = wanted('autoheal') ? createAutoheal({ ...base, engine: engine.engine }, m.autoheal) : undefined;
  // A VNFC faulty for its unhealthyFor is a fault auto-heal packs like a Server Notifier report
  // (healed only when auto-heal is on for its VNF).
  const ah = autoheal?.autoheal;
  const onSustainedFault = m.health?.onSustainedFault ?? (ah ? async (f: SustainedFault) => void (await ah.reportDetected({ ...f, source: 'vim-watch' })) : undefined);
  const health = wanted('health') ? createHealth(base, { ...m.health, ...(onSustainedFault ? { onSustainedFault } : {}) }) : undefined;
  const services: Services = {
    ...base,
    engine: engine.engine,
    ...(sync ? { sync: sync.sync } : {}),
    ...(notifications ? { notifications: notifications.value } : {}),
    ...(autoheal ? { autoheal: autoheal.autoheal } : {}),
    ...(health ? { health: health.health } : {}),
    lcmRoutes: [],
    extraRoutes: [],
  };
  const sim = wanted('sim') ? setupSimCloud(base) : undefined;
  // what the simulated cloud runs, read from its own value (defined only when it is built)
  if (sim) Object.defineProperty(services, 'simCloud', { get: sim.info, enumerable: true });
  const hooks: [string, PluginHooks | undefined][] = [
    ['simulated cloud and lab', sim?.hooks],
    ['op runner (running operations)', engine.hooks],
    ['drift sync', sync?.hooks],
    ['notification delivery', notifications?.hooks],
    ['auto-heal', autoheal?.hooks],
    ['VNFC health watchers', health?.hooks],
  ];
  return { services, hooks: hooks.filter((h): h is [string, PluginHooks] => h[1] !== undefined) };
}
