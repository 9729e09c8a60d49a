/**
 * Keeps a simulator's state on disk so the simulated cloud survives a restart (or a kill -9) of
 * its process: each simulator owns a JSON snapshot of its state (`snapshot()` / `restore()` of its
 * services); this module writes it to `<dir>/<name>.json` atomically (temp file, fsync, rename,
 * fsync of the directory) shortly after each change and once more on a clean shutdown, and reads
 * it back at start. A crash loses at most the changes of the last debounce period.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Format version of the files; a file of another version is refused rather than misread. */
export const SIM_STATE_VERSION = 1;

/** Default delay between a change and the write that saves it. */
export const DEFAULT_SAVE_DEBOUNCE_MS = 100;

/** A state file that exists but cannot be used (unreadable, not JSON, other version or simulator). */
export class SimStateError extends Error {
  override readonly name = 'SimStateError';
}

interface Envelope {
  format: 'vnfm-sim-state';
  sim: string;
  version: number;
  savedAt: string;
  state: unknown;
}

/** Path of the state file of simulator `name` in `dir`. */
export function simStatePath(dir: string, name: string): string {
  return join(dir, `${name}.json`);
}

/** Writes `text` to `path` so that a crash leaves either the old or the new content, never a mix. */
export function writeFileAtomic(path: string, text: string): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  // The rename itself is durable once the directory is synced (not possible on every platform).
  try {
    const d = openSync(dir, 'r');
    try {
      fsyncSync(d);
    } finally {
      closeSync(d);
    }
  } catch {
    // best effort
  }
}

/**
 * Reads the state saved for simulator `name` in `dir`: undefined when there is none; throws
 * {@link SimStateError} when the file exists but cannot be used (the caller decides: a VNFM stops
 * and names `--reset-sim`).
 */
export function readSimState<T>(dir: string, name: string): T | undefined {
  const path = simStatePath(dir, name);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SimStateError(`cannot read the ${name} simulator state ${path}: ${(e as Error).message}`);
  }
  let env: Partial<Envelope>;
  try {
    env = JSON.parse(text) as Partial<Envelope>;
  } catch (e) {
    throw new SimStateError(`the ${name} simulator state ${path} is not valid JSON: ${(e as Error).message}`);
  }
  if (env?.format !== 'vnfm-sim-state' || env.sim !== name || env.state === undefined) {
    throw new SimStateError(`${path} is not a saved ${name} simulator state`);
  }
  if (env.version !== SIM_STATE_VERSION) {
    throw new SimStateError(`the ${name} simulator state ${path} has format version ${env.version}; this version reads ${SIM_STATE_VERSION}`);
  }
  return env.state as T;
}

/** Writes the state of simulator `name` to `<dir>/<name>.json` now (atomically). */
export function writeSimState(dir: string, name: string, state: unknown): void {
  const env: Envelope = { format: 'vnfm-sim-state', sim: name, version: SIM_STATE_VERSION, savedAt: new Date().toISOString(), state };
  writeFileAtomic(simStatePath(dir, name), JSON.stringify(env));
}

/** Deletes the saved state of simulator `name` in `dir` (nothing when there is none). */
export function removeSimState(dir: string, name: string): void {
  rmSync(simStatePath(dir, name), { force: true });
}

/** Options of {@link SimStateSaver}. */
export interface SimStateSaverOptions {
  /** Directory of the state files (created on the first write). */
  readonly dir: string;
  /** Simulator name: the file is `<dir>/<name>.json`. */
  readonly name: string;
  /** The current state, JSON-serialisable. */
  readonly snapshot: () => unknown;
  /** Delay between the first change and the write. @default 100 */
  readonly debounceMs?: number;
  /** Told about a failed write (the simulator keeps running; the next change tries again). */
  readonly onError?: (err: Error) => void;
}

/**
 * Saves a simulator's state shortly after it changes: {@link markDirty} after each change arms one
 * timer; when it fires the whole snapshot is written. The delay is counted from the first change
 * after a write, so a steady stream of changes is still saved every `debounceMs`.
 */
export class SimStateSaver {
  readonly path: string;
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;
  private closed = false;
  private readonly debounceMs: number;
  /** Number of writes so far (tests). */
  writes = 0;

  constructor(private readonly opts: SimStateSaverOptions) {
    this.path = simStatePath(opts.dir, opts.name);
    this.debounceMs = Math.max(0, opts.debounceMs ?? DEFAULT_SAVE_DEBOUNCE_MS);
  }

  /** Notes a change; the state is written within `debounceMs`. */
  markDirty(): void {
    if (this.closed) return;
    this.dirty = true;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, this.debounceMs);
    this.timer.unref();
  }

  /** Writes the state now if it changed since the last write. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (!this.dirty) return;
    this.dirty = false;
    try {
      writeSimState(this.opts.dir, this.opts.name, this.opts.snapshot());
      this.writes += 1;
    } catch (e) {
      this.dirty = true;
      this.opts.onError?.(e as Error);
    }
  }

  /** Writes pending changes and stops saving (clean shutdown). */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
  }
}
