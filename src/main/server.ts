/**
 * The composition root: opens the database, builds the base services and the modules from them
 * (./compose.ts: each module's builder returns its value and its background work, the services are
 * assembled from those values), builds the HTTP app over the services, starts the workers, and
 * (unless disabled) the simulated cloud. The only place that knows every module; nothing but the
 * CLI (and tests) imports it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ConfigError, type VnfmConfig, authModes } from '../config.ts';
import { buildApp } from '../api/app.ts';
import { probeCredentialCheck } from '../api/auth/index.ts';
import type { AppContext, VnfmPlugin } from '../core/services.ts';
import type { VimPlugin } from '../infra/vim-plugin.ts';
import { type LivenessServer, startLivenessServer } from './liveness.ts';
import { type BuiltinName, type ModuleOptions, buildBaseServices, composeModules } from './compose.ts';
import { type Logger, createLogger } from '../logger.ts';
import { cleanupStaleHookDirs } from '../mgmt/script-runner.ts';
import { type Store, openStore } from '../store/db.ts';
import { restrictFileModes, secureDataDir } from '../store/data-dir-perms.ts';
import { OutboundGuard } from '../net/outbound.ts';

export type { PluginHooks } from '../core/plugin.ts';
export type { VnfmPlugin } from '../core/services.ts';
export type { BuiltinName, ModuleOptions } from './compose.ts';

/** A running VNFM. */
export interface Vnfm {
  app: FastifyInstance;
  ctx: AppContext;
  /** Base URL it listens on. */
  url: string;
  /** Base URL of the liveness port (`health.livenessPort`), when it is on. */
  livenessUrl?: string;
  /** Stops workers, the HTTP server, the liveness worker and the database (and the simulated cloud if started). */
  close(): Promise<void>;
  /** Names of the stop steps of {@link close} that began and have not finished. */
  pendingStopSteps(): string[];
}

/** Options of {@link startVnfm} beyond the config. */
export interface StartOptions {
  /** Logger to use (tests pass a silent one). */
  logger?: Logger;
  /** Pre-opened store (tests share a template database). */
  store?: Store;
  /** Do not listen on a port (app.inject only). @default false */
  noListen?: boolean;
  /** Extra modules called with the assembled services after the built-in ones, before the app is built. */
  plugins?: VnfmPlugin[];
  /** Built-in modules to leave out. The engine is always on. */
  without?: BuiltinName[];
  /** Variants of the built-in modules (tests, benchmarks). */
  modules?: ModuleOptions;
  /** VIM types served besides the built-in ones (src/infra/vim-plugin.ts). */
  vimPlugins?: VimPlugin[];
}

/**
 * The NFVO's grant and token URLs against the outbound rules: a URL into a denied range stops the
 * start (a configuration error); one that does not resolve now is only logged (it is checked
 * again at each request).
 */
async function checkNfvoUrls(config: VnfmConfig, log: Logger): Promise<void> {
  if (config.grants.mode !== 'external') return;
  const guard = new OutboundGuard(config.outbound, () => ({ host: config.host, port: config.port }));
  for (const [what, url] of [['grants.endpoint', config.grants.endpoint], ['grants.tokenEndpoint', config.grants.tokenEndpoint]] as const) {
    if (!url) continue;
    const why = await guard.check(url);
    if (!why) continue;
    if (/does not resolve/.test(why)) log.warn({ setting: what, reason: why }, 'NFVO URL does not resolve now; it is checked again at each request');
    else throw new ConfigError(`${what} is refused by the outbound rules: ${why}`);
  }
}

/**
 * How long the HTTP server waits, once it stops accepting connections, for the requests still
 * being answered before it closes every connection (idle keep-alive ones and event streams are
 * closed at once).
 */
const HTTP_CLOSE_WAIT_MS = 2_000;

/** Starts the VNFM with the given config. */
export async function startVnfm(config: VnfmConfig, opts: StartOptions = {}): Promise<Vnfm> {
  const log = opts.logger ?? createLogger(config.logLevel);
  const t0 = Date.now();
  // The data directory is ours to create with the embedded database; with PostgreSQL only when it exists (simulated cloud state).
  const onDisk = !config.dataDir.startsWith('memory://') && (!config.databaseUrl || existsSync(config.dataDir));
  const dataDirSkip = config.lab.enabled ? ['lab'] : [];
  if (onDisk) {
    // The data directory and everything in it private to the VNFM's user from creation on (the
    // embedded database would chmod its files world-writable). The live-VM lab's host trees
    // (`lab/`) are read by other users: a VNFM with the lab keeps the default umask and leaves them alone.
    restrictFileModes(config.dataDir, { umask: !config.lab.enabled, except: [join(config.dataDir, 'lab')] });
    const fixed = secureDataDir(config.dataDir, dataDirSkip);
    if (fixed > 0) log.warn({ dataDir: config.dataDir, entries: fixed }, 'data directory entries were accessible to other users; made private');
  }
  await checkNfvoUrls(config, log);
  // how long each start-up phase took, logged with "VNFM started" (docs/benchmarks.md, restart)
  const phases: Record<string, number> = {};
  let tPhase = Date.now();
  const phase = (name: string): void => {
    const now = Date.now();
    phases[name] = now - tPhase;
    tPhase = now;
  };
  const store =
    opts.store ??
    (await openStore({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      embedded: config.embeddedDatabase,
      onPoolError: (e) => log.warn({ err: e.message }, 'database connection lost; it will be re-opened'),
      onStaleLock: (stale, file) => log.warn({ dataDir: config.dataDir, lockFile: file, stalePid: stale.pid, staleHost: stale.hostname, staleStartedAt: stale.startedAt }, 'data directory lock left by a process that is gone; taken over'),
    }));
  phase('database');
  const { services: ctx, hooks } = composeModules(buildBaseServices(config, store, log, opts.vimPlugins), { ...(opts.without ? { without: opts.without } : {}), ...(opts.modules ? { modules: opts.modules } : {}) });
  const closers: [string, () => Promise<void>][] = [];
  /** Stop steps begun and not finished (logged when a stop overruns its deadline). */
  const pendingStop = new Set<string>();
  const step = async (name: string, fn: () => Promise<void> | void): Promise<void> => {
    pendingStop.add(name);
    try {
      await fn();
    } finally {
      pendingStop.delete(name);
    }
  };
  // Files are private from creation (restrictFileModes); what something else (a copy, an older
  // version) exposes is made private again every minute while it runs and once more after it closed.
  const fixPerms = (): void => {
    try {
      secureDataDir(config.dataDir, dataDirSkip);
    } catch (e) {
      log.warn({ err: (e as Error).message }, 'could not make the data directory private');
    }
  };
  const permTimer = onDisk ? setInterval(fixPerms, 60_000).unref() : undefined;
  for (const [i, p] of (opts.plugins ?? []).entries()) {
    const h = p(ctx);
    if (h) hooks.push([`plugin ${p.name || i + 1}`, h]);
  }
  phase('modules');
  // API requests that arrive between listen and the end of start-up wait for it (src/api/health.ts)
  let startupDone: () => void = () => undefined;
  let startupFailed: (e: unknown) => void = () => undefined;
  const whenDone = new Promise<void>((resolve, reject) => {
    startupDone = resolve;
    startupFailed = reject;
  });
  whenDone.catch(() => undefined);
  ctx.startup = { done: false, waiting: 0, whenDone };
  const app = await buildApp(ctx);
  phase('app');
  let url = config.publicUrl;
  if (!opts.noListen) {
    url = await app.listen({ host: config.host, port: config.port });
    if (config.port === 0) {
      const addr = app.server.address();
      if (addr && typeof addr === 'object') {
        url = `${authModes(config).includes('mtls') ? 'https' : 'http'}://${config.host}:${addr.port}`;
        config.publicUrl = url;
      }
    }
  }
  let liveness: LivenessServer | undefined;
  if (!opts.noListen && config.health.livenessPort !== 0) {
    try {
      const checkCredential = probeCredentialCheck(app);
      liveness = await startLivenessServer(config, log, checkCredential ? { checkCredential } : {});
    } catch (e) {
      clearInterval(permTimer);
      await app.close();
      ctx.packages.stopWorkers();
      if (!opts.store) await store.close();
      throw e;
    }
  }
  phase('listen');
  const staleHookDirs = cleanupStaleHookDirs();
  if (staleHookDirs.length > 0) log.info({ dirs: staleHookDirs }, 'removed hook script temp dirs left by stopped VNFM processes');
  try {
    await ctx.packages.recover();
    phase('recover');
    for (const [name, h] of hooks) {
      await h.start?.();
      if (h.stop) closers.push([name, async () => h.stop?.()]);
    }
  } catch (e) {
    // requests held for the start-up are dropped (the caller exits or closes the app)
    startupFailed(e);
    throw e;
  }
  phase('start');
  ctx.startup.done = true;
  startupDone();
  log.info({ url, ms: Date.now() - t0, db: store.kind, phases }, 'VNFM started');
  return {
    app,
    ctx,
    url,
    ...(liveness ? { livenessUrl: liveness.url } : {}),
    pendingStopSteps: () => [...pendingStop],
    async close() {
      for (const [name, c] of closers.reverse()) await step(name, c).catch(() => undefined);
      // Event streams are ended (preClose), idle keep-alive connections closed; requests still
      // being answered get HTTP_CLOSE_WAIT_MS, then every connection is closed.
      await step('HTTP server', async () => {
        const force = setTimeout(() => app.server.closeAllConnections?.(), HTTP_CLOSE_WAIT_MS);
        try {
          await app.close();
        } finally {
          clearTimeout(force);
        }
      });
      // liveness stays answered while the workers and the API drain, then the port is freed
      await step('liveness port', async () => liveness?.close());
      await step('package workers', async () => {
        ctx.packages.stopWorkers();
        await ctx.packages.idle();
      });
      if (!opts.store) await step('database', () => store.close());
      if (permTimer) {
        clearInterval(permTimer);
        fixPerms();
      }
    },
  };
}
