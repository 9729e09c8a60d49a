/**
 * Background work of a module: what its builder returns next to its value, started by the
 * composition root once the server listens and stopped in reverse order at close.
 */

/** Background work of a module (or of an extra plugin); start/stop hooks. */
export interface PluginHooks {
  /** Called after the server listens. */
  start?(): void | Promise<void>;
  /** Called at close, in reverse order. */
  stop?(): void | Promise<void>;
}
