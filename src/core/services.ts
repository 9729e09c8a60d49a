/**
 * The services a VNFM is made of, as the API (src/api/) reads them: the base services and the
 * value each module's builder returned, assembled by the composition root (src/main/compose.ts).
 * Types only: every module value type is defined by its module, which never sees this object.
 */
import type { FastifyInstance } from 'fastify';
import type { AutohealHandle } from '../autoheal/autoheal-plugin.ts';
import type { HealthHandle } from '../health/health-plugin.ts';
import type { Engine } from '../lcm/engine.ts';
import type { DriftSync } from '../lcm/sync.ts';
import type { NotificationServices } from '../notify/setup.ts';
import type { BaseServices } from './base-services.ts';
import type { PluginHooks } from './plugin.ts';

export type { BaseServices } from './base-services.ts';

/** Services shared by the modules and the API routes. Optional members belong to modules that may be left out. */
export interface Services extends BaseServices {
  /** The LCM engine (its routes: src/api/vnflcm/lcm-routes.ts). */
  engine: Engine;
  /** The drift sync (its route: src/api/vnflcm/sync-routes.ts). */
  sync?: DriftSync;
  /** Subscriptions and the delivery worker (routes: src/api/vnflcm/subscription-routes.ts). */
  notifications?: NotificationServices;
  /** Auto-heal (routes: src/api/autoheal/). */
  autoheal?: AutohealHandle;
  /** The VNFC health model (routes: src/api/health/). */
  health?: HealthHandle;
  /** LCM routes added inside each `/vnflcm/{v}` facade by extra plugins (tests); built-in modules register none. */
  lcmRoutes?: ((app: FastifyInstance, v: 'v1' | 'v2') => void | Promise<void>)[];
  /** Extra route registrations contributed by extra plugins (tests); built-in modules register none. */
  extraRoutes?: ((app: FastifyInstance) => void | Promise<void>)[];
  /**
   * Start-up, set by the composition root while its modules start after the port opened: API
   * requests wait for it (probes and /metrics do not) and /readyz answers 503 until it is done.
   */
  startup?: StartupGate;
  /** The simulated cloud (`config.sim`) once it has started: what runs where (readiness and tests read it). */
  readonly simCloud?: SimCloudInfo;
}

/** What the simulated cloud runs (src/main/sim-cloud.ts). */
export interface SimCloudInfo {
  openstackUrl: string;
  kubernetesUrl: string;
  serverNotifierUrl?: string;
  /** Where the simulated cloud's state is saved (none for a `memory://` data directory). */
  stateDir?: string;
  /** Whether the state was restored from `stateDir` (else the cloud started empty). */
  restored?: boolean;
  /** The live-VM lab, when `lab.enabled` (src/lab/). */
  lab?: unknown;
}

/** Whether the modules of a listening VNFM have all started. */
export interface StartupGate {
  done: boolean;
  /** API requests waiting for the start-up now. */
  waiting: number;
  /** Resolves when every module started. */
  whenDone: Promise<void>;
}

/**
 * An extra module (tests, benchmarks) given to the composition root: called with the assembled
 * services after the built-in modules were built; it may add routes (`lcmRoutes`, `extraRoutes`)
 * and return background work, and uses the services otherwise as they are.
 */
export type VnfmPlugin = (ctx: Services) => void | PluginHooks;

/** The former name of {@link Services}, kept so that route module signatures read as before. */
export type AppContext = Services;
