/**
 * The services a VNFM is made of, built once by the composition root (src/main/server.ts) and
 * by tests, and handed to every module: domain modules add their services to it at setup, route
 * modules (src/api/) read what they serve from it. Nothing here constructs anything.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AutohealHandle } from '../autoheal/autoheal-plugin.ts';
import type { VnfmConfig } from '../config.ts';
import type { Engine } from '../lcm/engine.ts';
import type { InstanceService } from '../lcm/instance-service.ts';
import type { DriftSync } from '../lcm/sync.ts';
import type { Notifier } from '../notify/notifier.ts';
import type { NotificationServices } from '../notify/setup.ts';
import type { PackageService } from '../packages/package-service.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../store/secret-box.ts';
import type { VimRegistry } from '../vims/vim-registry.ts';
import type { ServerNotifierRegistry } from '../vims/server-notifiers.ts';
import type { OutboundGuard } from '../net/outbound.ts';
import type { VnfmMetrics } from './metrics.ts';

/** Services shared by the modules and the API routes. Optional members are set by the module that owns them. */
export interface Services {
  config: VnfmConfig;
  store: Store;
  log: Logger;
  box: SecretBox;
  metrics: VnfmMetrics;
  notifier: Notifier;
  packages: PackageService;
  vims: VimRegistry;
  instances: InstanceService;
  /** Outbound request rules (callbacks, NFVO, Server Notifiers). */
  outbound: OutboundGuard;
  /** Outbound request rules of VIM endpoints (Keystone and its catalog, Kubernetes API servers; `outbound.vimAllow`). */
  vimOutbound: OutboundGuard;
  /** Server Notifier endpoints registered by an admin. */
  serverNotifiers: ServerNotifierRegistry;
  /** The LCM engine, set by the engine module at start-up (its routes: src/api/vnflcm/lcm-routes.ts). */
  engine?: Engine;
  /** The drift sync, set by the sync module (its route: src/api/vnflcm/sync-routes.ts). */
  sync?: DriftSync;
  /** Subscriptions and the delivery worker, set by the notification module (routes: src/api/vnflcm/subscription-routes.ts). */
  notifications?: NotificationServices;
  /** Auto-heal, set by the auto-heal module (routes: src/api/autoheal/). */
  autoheal?: AutohealHandle;
  /** LCM routes added inside each `/vnflcm/{v}` facade by extra plugins (tests); built-in modules register none. */
  lcmRoutes?: ((app: FastifyInstance, v: 'v1' | 'v2') => void | Promise<void>)[];
  /** Extra route registrations contributed by extra plugins (tests); built-in modules register none. */
  extraRoutes?: ((app: FastifyInstance) => void | Promise<void>)[];
  /**
   * Start-up, set by the composition root while its modules start after the port opened: API
   * requests wait for it (probes and /metrics do not) and /readyz answers 503 until it is done.
   */
  startup?: StartupGate;
}

/** Whether the modules of a listening VNFM have all started. */
export interface StartupGate {
  done: boolean;
  /** API requests waiting for the start-up now. */
  waiting: number;
  /** Resolves when every module started. */
  whenDone: Promise<void>;
}

/** The former name of {@link Services}, kept so that module signatures read as before. */
export type AppContext = Services;
