/**
 * What route modules get: config, services and metrics. Built once by the start-up wiring
 * (src/server.ts) and by tests; route modules never construct services themselves.
 */
import type { Logger } from 'pino';
import type { VnfmConfig } from '../config.ts';
import type { InstanceService } from '../lcm/instance-service.ts';
import type { Notifier } from '../notify/notifier.ts';
import type { PackageService } from '../packages/package-service.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../store/secret-box.ts';
import type { VimRegistry } from '../vims/vim-registry.ts';
import type { VnfmMetrics } from './metrics.ts';

/** Services shared by the API routes. Later capabilities add optional members. */
export interface AppContext {
  config: VnfmConfig;
  store: Store;
  log: Logger;
  box: SecretBox;
  metrics: VnfmMetrics;
  notifier: Notifier;
  packages: PackageService;
  vims: VimRegistry;
  instances: InstanceService;
  /** The LCM engine, set by the engine module at start-up. */
  engine?: import('../lcm/engine.ts').Engine;
  /** Extra route registrations contributed by other modules (engine, auto-heal, sims). */
  /** LCM routes added inside each `/vnflcm/{v}` facade by the engine (operations, task resources). */
  lcmRoutes?: ((app: import('fastify').FastifyInstance, v: 'v1' | 'v2') => void | Promise<void>)[];
  extraRoutes?: ((app: import('fastify').FastifyInstance) => void | Promise<void>)[];
}
