/**
 * Entry of the onboarding worker process (started by {@link parseInWorker} in
 * `onboard-isolate.ts`): reads the CSAR and parses the VNFD outside the VNFM process, inside the
 * heap limit the parent gave it (`--max-old-space-size`). Receives one IPC message
 * `{ zip, limits }`, answers exactly one: `{ ok: true, model }` or `{ ok: false, error }` (a
 * {@link PackageError} flattened, so the parent rebuilds it with its location), then exits. A
 * crash, an out-of-memory abort or a kill answers nothing: the parent sees the exit and reports it.
 */
import { readCsar, type CsarLimits } from './csar-reader.ts';
import { isPackageError } from './package-error.ts';
import { parseVnfPackage } from './vnfd-parser.ts';

/** What the parent sends: `extract` answers the package's files instead of its model. */
export interface OnboardWorkerInput {
  zip: Uint8Array;
  limits: CsarLimits;
  mode?: 'parse' | 'extract';
}

/** What the worker answers. */
export type OnboardWorkerOutput =
  | { ok: true; model: unknown }
  | { ok: true; files: Map<string, Uint8Array> }
  | { ok: false; error: { packageError: boolean; message: string; problem?: string; file?: string | undefined; line?: number | undefined; column?: number | undefined } };

async function handle(input: OnboardWorkerInput): Promise<OnboardWorkerOutput> {
  try {
    const zip = Buffer.from(input.zip.buffer, input.zip.byteOffset, input.zip.byteLength);
    const files = await readCsar(zip, input.limits);
    if (input.mode === 'extract') return { ok: true, files };
    const model = parseVnfPackage(files, input.limits.maxVnfdBytes === undefined ? {} : { maxVnfdBytes: input.limits.maxVnfdBytes });
    return { ok: true, model };
  } catch (e) {
    return isPackageError(e)
      ? { ok: false, error: { packageError: true, message: e.message, problem: e.problem, file: e.file, line: e.line, column: e.column } }
      : { ok: false, error: { packageError: false, message: e instanceof Error ? e.message : String(e) } };
  }
}

if (typeof process.send === 'function') {
  // The parent going away (VNFM stopped) ends the worker too.
  process.once('disconnect', () => process.exit(0));
  process.once('message', (input: OnboardWorkerInput) => {
    void handle(input).then((out) => {
      process.send?.(out, () => process.exit(0));
    });
  });
}
