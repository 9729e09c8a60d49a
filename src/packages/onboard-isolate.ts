/**
 * Onboarding in isolation: the CSAR read and the VNFD parse run in a separate Node.js process
 * (`onboard-worker.ts`) with a V8 heap limit (`--max-old-space-size`) and a time limit, so a
 * hostile or merely huge package can neither exhaust the VNFM's memory nor stall its event loop.
 * Whatever goes wrong in the worker (out of memory, time limit, crash) comes back as a
 * {@link PackageError} with a message an operator can act on; the VNFM process is never at risk.
 *
 * Why a process and not a worker thread: a worker thread's `resourceLimits` do not contain every
 * out-of-memory. When one allocation jumps past the limit (a 150 MiB YAML scalar turned into a
 * string), V8 reports a fatal OOM for the worker's isolate and Node aborts the whole process
 * (measured on Node 20: exit 134, "Reached heap limit" in the worker isolate). A child process
 * dies alone.
 *
 * The worker is started from the file next to this module, with this module's extension: the
 * compiled `.js` under `dist/`, the `.ts` source with tsx's loader (dev, tests).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CsarFiles, CsarLimits } from './csar-reader.ts';
import { PackageError } from './package-error.ts';
import type { VnfPackageModel } from './vnfd-model.ts';
import type { OnboardWorkerInput, OnboardWorkerOutput } from './onboard-worker.ts';

/** Limits of one isolated onboarding. */
export interface IsolateLimits extends CsarLimits {
  /** V8 old-generation heap limit of the worker, in MiB. */
  readonly maxOldGenerationSizeMb: number;
  /** Wall-clock limit of the read + parse, in ms. */
  readonly timeoutMs: number;
}

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_PATH = fileURLToPath(new URL(`./onboard-worker${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url));

function describeMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** Rejection of an onboarding stopped by its caller (shutdown): not a verdict on the package. */
export class OnboardingAborted extends Error {}

/**
 * Reads and parses a CSAR in a worker process. Resolves to the package model; rejects with a
 * {@link PackageError} when the package is invalid or when the worker ran out of memory, out of
 * time, or died. `beforeSend` (fault positioning) is awaited once the worker process is started,
 * before it gets the package; the time limit runs meanwhile.
 */
export function parseInWorker(zip: Uint8Array, limits: IsolateLimits, signal?: AbortSignal, beforeSend?: () => Promise<void>): Promise<VnfPackageModel> {
  return runWorker(zip, limits, 'parse', signal, beforeSend).then((m) => (m as { model: VnfPackageModel }).model);
}

/**
 * Reads a CSAR in a worker process (the same limits and failures as {@link parseInWorker}) and
 * resolves to its files: listing, checking and inflating the entries of a large package is not
 * the VNFM's event loop's work.
 */
export function extractInWorker(zip: Uint8Array, limits: IsolateLimits, signal?: AbortSignal): Promise<CsarFiles> {
  return runWorker(zip, limits, 'extract', signal).then((m) => {
    const out: CsarFiles = new Map();
    for (const [path, bytes] of (m as { files: Map<string, Uint8Array> }).files) out.set(path, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    return out;
  });
}

function runWorker(zip: Uint8Array, limits: IsolateLimits, mode: 'parse' | 'extract', signal?: AbortSignal, beforeSend?: () => Promise<void>): Promise<OnboardWorkerOutput & { ok: true }> {
  const { maxOldGenerationSizeMb, timeoutMs, ...csarLimits } = limits;
  const input: OnboardWorkerInput = { zip, limits: csarLimits, mode };
  if (signal?.aborted) return Promise.reject(new OnboardingAborted('onboarding stopped: the VNFM is shutting down'));
  return new Promise<OnboardWorkerOutput & { ok: true }>((resolve, reject) => {
    let settled = false;
    let stderr = '';
    const execArgv = [...(FROM_SOURCE ? ['--import', import.meta.resolve('tsx')] : []), `--max-old-space-size=${maxOldGenerationSizeMb}`];
    const child = fork(WORKER_PATH, [], { execArgv, serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    const onAbort = (): void => {
      settle(() => reject(new OnboardingAborted('onboarding stopped: the VNFM is shutting down')));
      child.kill('SIGKILL');
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-8192);
    });
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const timer = setTimeout(() => {
      settle(() => reject(new PackageError(`VNFD parsing exceeded the time limit of ${describeMs(timeoutMs)} (packages.onboardTimeoutMs); the package is too large or too complex`)));
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('message', (m: OnboardWorkerOutput) => {
      settle(() => {
        if (m.ok) resolve(m);
        else if (m.error.packageError) reject(new PackageError(m.error.problem ?? m.error.message, { file: m.error.file, line: m.error.line, column: m.error.column }));
        else reject(new PackageError(`package could not be processed: ${m.error.message}`));
      });
    });
    child.once('error', (e: Error) => {
      settle(() => reject(new PackageError(`package could not be processed: the parsing worker could not run: ${e.message}`, {}, { cause: e })));
      child.kill('SIGKILL');
    });
    child.once('exit', (code, signal) => {
      settle(() => {
        if (/heap out of memory|Reached heap limit|Allocation failed/i.test(stderr)) {
          reject(new PackageError(`VNFD parsing exceeded the memory limit of ${maxOldGenerationSizeMb} MiB (packages.maxOldGenerationSizeMb); the package is too large or too complex`));
        } else {
          const last = stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500);
          reject(new PackageError(`package could not be processed: the parsing worker died (${signal ? `signal ${signal}` : `exit code ${code}`})${last ? `: ${last}` : ''}`));
        }
      });
    });
    const send = (): void => {
      if (settled) return;
      child.send(input, (e) => {
        if (e) settle(() => reject(new PackageError(`package could not be processed: cannot hand the package to the parsing worker: ${e.message}`)));
      });
    };
    if (beforeSend) beforeSend().then(send, (e: unknown) => settle(() => reject(e)));
    else send();
  });
}
