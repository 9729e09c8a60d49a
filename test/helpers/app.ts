/**
 * Builds a VNFM app for HTTP tests (`app.inject`), over a fresh test database, with a silent
 * logger (or one that captures lines for secret-leak checks).
 */
import { Writable } from 'node:stream';
import { resolveConfig, type ConfigInput } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import type { VimPlugin } from '../../src/infra/vim-plugin.ts';
import { type BuiltinName, type ModuleOptions, type Vnfm, type VnfmPlugin, startVnfm } from '../../src/main/server.ts';
import type { Store } from '../../src/store/db.ts';
import { testStore } from './db.ts';

/** Outbound rules of test VNFMs: loopback allowed (test endpoints and test VIMs live there). */
export const TEST_OUTBOUND = { allow: ['127.0.0.0/8', '::1'], deny: [] as string[], vimAllow: ['127.0.0.0/8', '::1'] };

/** A test VNFM plus the log lines it wrote. */
export interface TestVnfm extends Vnfm {
  logs: string[];
  store: Store;
}

/** Starts a VNFM for tests. `listen` true binds 127.0.0.1 on a free port. */
export async function testVnfm(opts: { config?: ConfigInput; listen?: boolean; store?: Store; plugins?: VnfmPlugin[]; without?: BuiltinName[]; modules?: ModuleOptions; vimPlugins?: VimPlugin[] } = {}): Promise<TestVnfm> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const store = opts.store ?? (await testStore());
  // port 0: the kernel picks a free port at listen time (no probe-then-bind race between test files)
  const port = opts.listen ? 0 : 9890;
  // Test endpoints (callbacks, NFVO and Server Notifier stand-ins) listen on loopback, which the
  // outbound rules deny by default.
  // A test's own outbound rules replace these key by key (its VIMs stay allowed on loopback unless it says otherwise).
  const outbound = { ...TEST_OUTBOUND, ...((opts.config as { outbound?: object } | undefined)?.outbound ?? {}) };
  // The VNFC health watchers poll every VIM of the instances: a test that wants them says so
  // (test/health/, test/e2e/health-*.test.ts), so that the others' VIM request counts stay theirs.
  const config = resolveConfig({ flags: { sim: false, logLevel: 'debug', dataDir: 'memory://', port, sync: { intervalMs: 0 }, vnfcHealth: { enabled: false }, ...(opts.config ?? {}), outbound } as ConfigInput });
  const vnfm = await startVnfm(config, { logger: createLogger('debug', sink), store, noListen: !opts.listen, ...(opts.plugins ? { plugins: opts.plugins } : {}), ...(opts.without ? { without: opts.without } : {}), ...(opts.modules ? { modules: opts.modules } : {}), ...(opts.vimPlugins ? { vimPlugins: opts.vimPlugins } : {}) });
  return {
    ...vnfm,
    logs,
    store,
    async close() {
      await vnfm.close();
      if (!opts.store) await store.close();
    },
  };
}

/**
 * A free TCP port on 127.0.0.1, for a server in another process that cannot be told to listen on
 * port 0. The port is free when probed, so prefer port 0 wherever the server can report its port.
 */
export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}
