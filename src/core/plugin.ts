/**
 * How a module is wired into a VNFM: a function over the services that creates what the module
 * owns (setting it on the services) and returns its background work. Plugins register no routes;
 * the API (src/api/) serves what they put on the services.
 */
import type { Services } from './services.ts';

/** A module that adds services/workers to the VNFM; may return start/stop hooks. */
export type VnfmPlugin = (ctx: Services) => void | PluginHooks;

/** Background work of a plugin. */
export interface PluginHooks {
  /** Called after the server listens. */
  start?(): void | Promise<void>;
  /** Called at close, in reverse order. */
  stop?(): void | Promise<void>;
}
