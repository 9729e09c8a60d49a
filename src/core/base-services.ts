/**
 * The services every module is built over, created by the composition root (src/main/compose.ts
 * `buildBaseServices`) before any module. Modules take the ones they need as explicit arguments;
 * nothing here constructs anything, and nothing here refers to a module built over them.
 */
import type { Logger } from 'pino';
import type { VnfmConfig } from '../config.ts';
import type { VimPlugins } from '../infra/vim-plugin.ts';
import type { InstanceService } from '../lcm/instance-service.ts';
import type { OutboundGuard } from '../net/outbound.ts';
import type { Notifier } from '../notify/notifier.ts';
import type { PackageService } from '../packages/package-service.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../store/secret-box.ts';
import type { ServerNotifierRegistry } from '../vims/server-notifiers.ts';
import type { VimRegistry } from '../vims/vim-registry.ts';
import type { VnfmMetrics } from './metrics.ts';

/** The services built before the modules. */
export interface BaseServices {
  config: VnfmConfig;
  store: Store;
  log: Logger;
  box: SecretBox;
  metrics: VnfmMetrics;
  notifier: Notifier;
  packages: PackageService;
  vims: VimRegistry;
  instances: InstanceService;
  /** The VIM types served (src/infra/vim-plugin.ts), registered at the composition root. */
  vimPlugins: VimPlugins;
  /** Outbound request rules (callbacks, NFVO, Server Notifiers). */
  outbound: OutboundGuard;
  /** Outbound request rules of VIM endpoints (Keystone and its catalog, Kubernetes API servers; `outbound.vimAllow`). */
  vimOutbound: OutboundGuard;
  /** Server Notifier endpoints registered by an admin. */
  serverNotifiers: ServerNotifierRegistry;
}
