/**
 * The liveness port (`health.livenessPort`, off when 0): `/healthz` served by a worker thread
 * (`liveness-worker.ts`) with its own event loop, so the probe never waits for the main loop's
 * backlog or the database, yet says 503 when the main thread stops turning for longer than
 * `health.maxStallMs`. The main thread proves it turns by storing `process.hrtime.bigint()` into a
 * shared buffer from an unref'd timer every {@link TICK_MS}.
 *
 * With `health.public` false a probe needs a credential: the static tokens are checked in the
 * worker; any other token (Keystone, OAuth 2.0) is handed to the main thread, which checks it with
 * the API's own modes (`checkCredential`) and answers; the worker then keeps the accepted token's
 * hash for {@link PROBE_CACHE_MS}, so later probes with it never wait for the main thread.
 *
 * The worker is started from the file next to this module, with this module's extension: the
 * compiled `.js` under `dist/`, the `.ts` source through tsx (dev, tests), as for the onboarding
 * process (`packages/onboard-isolate.ts`).
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type VnfmConfig, authModes } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ProbeCredentialCheck } from '../api/auth/index.ts';
import type { LivenessWorkerCommand, LivenessWorkerData, LivenessWorkerMessage } from './liveness-worker.ts';

/** How often the main thread ticks. */
export const TICK_MS = 100;

/** How long the worker keeps a token the main thread accepted (a deleted OAuth client's or revoked Keystone token's probes pass this long at most). */
export const PROBE_CACHE_MS = 30_000;

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(`./liveness-worker${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url);

/**
 * A worker thread over the liveness worker file. From source, Node 20 does not apply tsx's
 * `--import` hooks inside a worker thread (`Unknown file extension ".ts"`): a two-line bootstrap
 * loads the file through tsx's API instead.
 */
function spawnWorker(data: LivenessWorkerData): Worker {
  // execArgv []: the VNFM's own node options (heap size, loaders, test runner flags) are not the worker's
  if (!FROM_SOURCE) return new Worker(fileURLToPath(WORKER_URL), { workerData: data, execArgv: [] });
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => tsx.tsImport(${JSON.stringify(WORKER_URL.href)}, ${JSON.stringify(import.meta.url)}));`;
  return new Worker(boot, { eval: true, workerData: data, execArgv: [] });
}

/** A running liveness server. */
export interface LivenessServer {
  /** `http://host:port` of the liveness port. */
  url: string;
  /** Stops the tick, closes the server and ends the worker (its port is free when this resolves). */
  close(): Promise<void>;
}

/** The host part of a URL (IPv6 in brackets). */
function urlHost(host: string): string {
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return h.includes(':') ? `[${h}]` : h;
}

/** Starts the liveness worker on `health.livenessPort`; rejects when it cannot listen. */
export async function startLivenessServer(config: VnfmConfig, log: Logger, opts: { checkCredential?: ProbeCredentialCheck } = {}): Promise<LivenessServer> {
  const host = config.health.livenessHost ?? config.host;
  const tickBuf = new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT);
  const tick = new BigInt64Array(tickBuf);
  const beat = (): void => {
    Atomics.store(tick, 0, process.hrtime.bigint());
  };
  beat();
  // ticking starts now: the worker may answer as soon as it listens
  const timer = setInterval(beat, TICK_MS);
  timer.unref();
  // with health.public false a probe needs a credential: static tokens checked in the worker, the
  // other modes' tokens by the main thread (docs/security.md)
  const needsToken = !authModes(config).includes('none') && !config.health.public;
  const delegate = needsToken && opts.checkCredential !== undefined;
  const data: LivenessWorkerData = {
    host,
    port: config.health.livenessPort,
    tick: tickBuf,
    tickMs: TICK_MS,
    maxStallMs: config.health.maxStallMs,
    tokenHashes: needsToken ? config.apiTokens.map((t) => createHash('sha256').update(typeof t === 'string' ? t : t.token, 'utf8').digest('hex')) : [],
    closed: needsToken && config.apiTokens.length === 0 && !delegate,
    delegate,
    probeCacheMs: PROBE_CACHE_MS,
    checkTimeoutMs: Math.max(1000, config.health.maxStallMs),
  };
  const worker = spawnWorker(data);
  if (delegate) {
    const check = opts.checkCredential as ProbeCredentialCheck;
    worker.on('message', (m: LivenessWorkerMessage) => {
      if (m.type !== 'check') return;
      void check(m.headers)
        .catch((): { ok: false; status: 503 } => ({ ok: false, status: 503 }))
        .then((v) => worker.postMessage({ type: 'checked', id: m.id, ok: v.ok, ...(v.ok ? {} : { status: v.status }) } satisfies LivenessWorkerCommand));
    });
  }
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  let closing = false;
  const port = await new Promise<number>((resolve, reject) => {
    const onMessage = (m: LivenessWorkerMessage): void => {
      if (m.type === 'listening') {
        worker.off('error', onError);
        resolve(m.port);
      } else if (m.type === 'error') {
        reject(new Error(`liveness server cannot listen on ${host}:${config.health.livenessPort} (health.livenessPort): ${m.message}`));
      }
    };
    const onError = (e: Error): void => reject(new Error(`liveness worker failed to start: ${e.message}`));
    worker.on('message', onMessage);
    worker.once('error', onError);
    void exited.then((code) => reject(new Error(`liveness worker exited during start (code ${code})`)));
  }).catch(async (e: Error) => {
    clearInterval(timer);
    await worker.terminate();
    throw e;
  });
  worker.on('error', (e) => log.error({ err: e.message }, 'liveness worker failed; the liveness port no longer answers'));
  void exited.then((code) => {
    if (!closing) log.error({ code }, 'liveness worker exited; the liveness port no longer answers');
  });
  const url = `http://${urlHost(host)}:${port}`;
  log.info({ url, maxStallMs: config.health.maxStallMs }, 'liveness server listening');
  return {
    url,
    async close() {
      if (closing) return exited.then(() => undefined);
      closing = true;
      clearInterval(timer);
      const closed = new Promise<void>((resolve) => {
        worker.on('message', (m: LivenessWorkerMessage) => {
          if (m.type === 'closed') resolve();
        });
        void exited.then(() => resolve());
      });
      worker.postMessage({ type: 'close' } satisfies LivenessWorkerCommand);
      await closed;
      await worker.terminate();
    },
  };
}
