/**
 * The SSH executor's public types and defaults ({@link SshTarget}, {@link SshSession}, ...) and the
 * small helpers its parts share (back-off, abortable sleep, shell quoting, SSH signals).
 */
import { randomBytes } from 'node:crypto';
import type { ClientChannel } from 'ssh2';

/** Where and as whom to log in. */
export interface SshTarget {
  host: string;
  /** Default 22. */
  port?: number;
  username: string;
  password?: string;
  /** OpenSSH / PEM private key text. */
  privateKey?: string;
  /** Passphrase of an encrypted `privateKey`. */
  passphrase?: string;
}

/** How the server's host key is checked. */
export interface HostKeyPolicy {
  /** Expected host key fingerprint, 'SHA256:<base64 no padding>' (as ssh-keygen -lf prints). A different key -> VNFM_ERR_SSH_HOST_KEY (terminal), naming host and both fingerprints. */
  pinned?: string;
  /** Called with the fingerprint when nothing is pinned (trust on first use); the caller persists it. */
  learn?: (fingerprint: string) => void | Promise<void>;
}

/** Options of {@link connectSsh}. */
export interface ConnectOptions {
  hostKey?: HostKeyPolicy;
  /** connection attempts (default 3) with exponential back-off from backoffInitialMs (5000) to backoffMaxMs (60000), plus full jitter; */
  attempts?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** per attempt (default 15000) */
  readyTimeoutMs?: number;
  /** stop trying after this long in total (e.g. 10 min for a VM being created); overrides attempts when set: keep trying until then */
  deadlineMs?: number;
  /** Aborting it stops connecting, and closes the session (and kills its running commands) once connected. */
  signal?: AbortSignal;
  /** extra strings to redact from every output/error besides the target's own password/passphrase/key */
  secrets?: string[];
  /** Called after each failed (retryable) attempt, before the back-off; awaited when it returns a promise. */
  onAttempt?: (attempt: number, error: Error) => void | Promise<void>;
}

/** Options of {@link SshSession.exec}. */
export interface ExecOptions {
  /** default 60000 (0 or Infinity: none); on timeout the remote command is killed and the result is a VNFM_ERR_MGMT_COMMAND error naming the timeout */
  timeoutMs?: number;
  /** written then closed */
  stdin?: string | Buffer;
  /** run as root: `sudo -S -p '' -- sh -c '<cmd>'` (password on stdin first), or `sudo -n` with key auth */
  sudo?: boolean;
  /** complete lines, already redacted */
  onOutput?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** per stream, default 1 MiB: keep the TAIL, mark truncated */
  maxOutputBytes?: number;
  /** abort kills the command */
  signal?: AbortSignal;
}

/** What a command did. */
export interface ExecResult {
  /** Exit status; null when the command was killed by a signal (then `signal` names it, e.g. `SIGTERM`). */
  code: number | null;
  signal?: string;
  stdout: string;
  stderr: string;
  /** True when either stream exceeded `maxOutputBytes` (only its tail is kept). */
  truncated: boolean;
  durationMs: number;
}

/** One authenticated SSH connection. */
export interface SshSession {
  readonly host: string;
  readonly hostKeyFingerprint: string;
  /** True once the connection is closed (by {@link close}, the server, a keep-alive timeout or an abort). */
  readonly closed: boolean;
  /** Runs a command; resolves whatever the exit status. stdout/stderr redacted. */
  exec(cmd: string, o?: ExecOptions): Promise<ExecResult>;
  /** Like exec, but a non-zero exit is a VNFM_ERR_MGMT_COMMAND error whose detail names the host, a short
   *  label (o.label ?? the first 80 chars of the command, redacted), the exit code and the last 20 lines of stderr (else stdout). */
  run(cmd: string, o?: ExecOptions & { label?: string }): Promise<ExecResult>;
  /** SFTP write, atomic: `<path>.tmp-<rand>` then rename over `<path>`; mode default 0o644. With sudo: write to a temp file under /tmp (mode 0600) then `sudo install -m <mode> tmp path` and remove the temp (for root-owned targets). */
  upload(path: string, data: string | Buffer, o?: { mode?: number; sudo?: boolean }): Promise<void>;
  /** SFTP read (with sudo: `sudo cat`). The content is returned as is (not redacted). */
  download(path: string, o?: { sudo?: boolean }): Promise<Buffer>;
  close(): void;
}

/** Defaults. */
export const SSH_DEFAULT_PORT = 22;
export const SSH_DEFAULT_ATTEMPTS = 3;
export const SSH_DEFAULT_BACKOFF_INITIAL_MS = 5000;
export const SSH_DEFAULT_BACKOFF_MAX_MS = 60_000;
export const SSH_DEFAULT_READY_TIMEOUT_MS = 15_000;
export const SSH_DEFAULT_EXEC_TIMEOUT_MS = 60_000;
export const SSH_DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
export const SSH_KEEPALIVE_INTERVAL_MS = 10_000;
export const SSH_KEEPALIVE_COUNT_MAX = 3;
/** A streamed line longer than this is passed to `onOutput` in pieces. */
export const SSH_MAX_LINE_CHARS = 64 * 1024;
/** Timeout of the helper commands (sudo probe, root-side kill, temp file removal). */
export const HELPER_TIMEOUT_MS = 30_000;
/** Timeout of a `sudo cat` download. */
export const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;
/** Environment variable marking the processes of one sudo command (for the root-side kill). */
export const MARKER_VAR = 'HVVNFM_EXEC_ID';

/** A POSIX shell single-quoted word. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** `host:port`, with an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export function randomId(): string {
  return randomBytes(6).toString('hex');
}

export function reasonOf(signal: AbortSignal | undefined): string {
  const r: unknown = signal?.reason;
  return r instanceof Error ? r.message : typeof r === 'string' ? r : 'aborted';
}

/** `ms` of sleep, cut short (rejecting) when `signal` aborts. */
export function sleepAbortable(ms: number, signal: AbortSignal | undefined, onAbort: () => Error): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(onAbort());
      return;
    }
    const abort = (): void => {
      clearTimeout(t);
      reject(onAbort());
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** Delay before attempt `attempt + 1`: exponential from `initial`, capped at `max`, full jitter. */
export function backoffDelay(attempt: number, initial: number, max: number): number {
  const cap = Math.min(max, initial * 2 ** Math.min(attempt - 1, 30));
  return Math.floor(Math.random() * Math.max(0, cap));
}

/** The last `n` non-empty-trailing lines of `text`. */
export function tailLines(text: string, n: number): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  return lines.slice(-n).join('\n');
}

/**
 * Sends an SSH `signal` channel request. ssh2's `ClientChannel.signal()` does nothing once the
 * channel's stdin was closed (EOF sent), which every command here does; the protocol allows the
 * request after EOF, so it is sent through the protocol object then. Best effort: a server
 * without signal support ignores it (the channel close that follows still ends the session).
 */
export function sendSignal(ch: ClientChannel, name: string): void {
  try {
    const c = ch as ClientChannel & { outgoing?: { id?: number; state?: string }; _client?: { _protocol?: { signal?: (id: number, sig: string) => void } } };
    if (ch.writable) ch.signal(name);
    else if (c.outgoing?.state === 'eof' && typeof c.outgoing.id === 'number') c._client?._protocol?.signal?.(c.outgoing.id, name);
  } catch {
    /* connection gone */
  }
}

