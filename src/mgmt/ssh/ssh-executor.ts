/**
 * Remote execution on a VNF's VMs over SSH (the `ssh2` package), for the built-in management
 * drivers (e.g. the kubeadm cluster driver).
 *
 * - {@link connectSsh} opens one authenticated connection (password and/or private key, with an
 *   optional passphrase), retrying refused / timed-out / unreachable attempts with exponential
 *   back-off and full jitter (VMs may still be booting), until `attempts` or `deadlineMs`.
 *   Failures: all attempts failed -> retryable `VNFM_ERR_SSH_UNREACHABLE`; credentials refused ->
 *   terminal `VNFM_ERR_SSH_AUTH` (not retried); host key differs from the pinned one -> terminal
 *   `VNFM_ERR_SSH_HOST_KEY` (not retried); the signal aborted -> terminal `VNFM_ERR_LCM_INTERRUPTED`.
 * - Host keys: trust on first use. The caller pins the `SHA256:` fingerprint it learned (via
 *   `hostKey.learn`, called once the connection is authenticated) and passes it as
 *   `hostKey.pinned` afterwards.
 * - {@link SshSession.exec} runs one command (its exit status is the verdict, never stderr),
 *   capturing stdout/stderr bounded (the tail is kept), streaming complete lines, with a per-command
 *   timeout and abort that kill the remote command (SSH `signal` KILL, then channel close; for
 *   `sudo` commands also a root-side kill of every process the command started, found by a marker
 *   in their environment, since the server's signal runs as the login user). Closing a session
 *   kills its running commands by that marker before the disconnect, sudo or not (sshd leaves a
 *   command without a terminal running when the connection ends).
 * - `sudo`: `sudo -S -p '' -- sh -c '<cmd>'` with the login password written first on the
 *   command's stdin (never on a command line); with key authentication, or when the account may
 *   sudo without a password (probed once per session with `sudo -n`), `sudo -n` (so no password
 *   ever reaches the command's own stdin).
 * - Files: SFTP, written atomically (temp file + rename); `sudo` variants through `install` and
 *   `cat` for root-owned paths.
 * - Secrets: the target's password, passphrase and private key, plus `ConnectOptions.secrets`, are
 *   redacted (`***`) from every output, streamed line and error message.
 * - {@link SshPool}: one connection per (host, port, user) for the duration of a hook; a dropped
 *   connection (server gone, keep-alive timeout) is replaced on the next `get()`.
 *
 * Keep-alive probes every 10 s (3 missed -> the connection is dropped), so a host that dies while
 * a command runs ends that command with `VNFM_ERR_SSH_UNREACHABLE` instead of hanging until its
 * timeout.
 */
import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type { Client, ClientChannel, ConnectConfig, SFTPWrapper } from 'ssh2';

let ssh2Load: Promise<typeof import('ssh2')> | undefined;
/** The `ssh2` package, loaded on the first connection (a VNFM without management drivers never needs it). */
function ssh2(): Promise<typeof import('ssh2')> {
  ssh2Load ??= import('ssh2');
  return ssh2Load;
}
import { isVnfmError, retryableError, terminalError, vnfmError, type VnfmError } from '../../errors.ts';
import { fingerprintOf, normalizeFingerprint, privateKeySecrets, Redactor } from './redact.ts';

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
const HELPER_TIMEOUT_MS = 30_000;
/** Timeout of a `sudo cat` download. */
const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;
/** Environment variable marking the processes of one sudo command (for the root-side kill). */
const MARKER_VAR = 'HVVNFM_EXEC_ID';

/** A POSIX shell single-quoted word. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** `host:port`, with an IPv6 address in brackets. */
function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function randomId(): string {
  return randomBytes(6).toString('hex');
}

function reasonOf(signal: AbortSignal | undefined): string {
  const r: unknown = signal?.reason;
  return r instanceof Error ? r.message : typeof r === 'string' ? r : 'aborted';
}

/** `ms` of sleep, cut short (rejecting) when `signal` aborts. */
function sleepAbortable(ms: number, signal: AbortSignal | undefined, onAbort: () => Error): Promise<void> {
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
function backoffDelay(attempt: number, initial: number, max: number): number {
  const cap = Math.min(max, initial * 2 ** Math.min(attempt - 1, 30));
  return Math.floor(Math.random() * Math.max(0, cap));
}

/** The last `n` non-empty-trailing lines of `text`. */
function tailLines(text: string, n: number): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  return lines.slice(-n).join('\n');
}

/**
 * Sends an SSH `signal` channel request. ssh2's `ClientChannel.signal()` does nothing once the
 * channel's stdin was closed (EOF sent), which every command here does; the protocol allows the
 * request after EOF, so it is sent through the protocol object then. Best effort: a server
 * without signal support ignores it (the channel close that follows still ends the session).
 */
function sendSignal(ch: ClientChannel, name: string): void {
  try {
    const c = ch as ClientChannel & { outgoing?: { id?: number; state?: string }; _client?: { _protocol?: { signal?: (id: number, sig: string) => void } } };
    if (ch.writable) ch.signal(name);
    else if (c.outgoing?.state === 'eof' && typeof c.outgoing.id === 'number') c._client?._protocol?.signal?.(c.outgoing.id, name);
  } catch {
    /* connection gone */
  }
}

interface Connected {
  client: Client;
  fingerprint: string;
}

/** One connection attempt. Resolves authenticated; rejects with a VnfmError (fatal) or a plain Error (retryable). */
async function connectOnce(target: SshTarget, port: number, readyTimeoutMs: number, o: ConnectOptions, redactor: Redactor): Promise<Connected> {
  const where = hostPort(target.host, port);
  const { Client } = await ssh2();
  return new Promise<Connected>((resolve, reject) => {
    const client = new Client();
    let fingerprint: string | undefined;
    let mismatch: VnfmError | undefined;
    let settled = false;
    const pinned = o.hostKey?.pinned ? normalizeFingerprint(o.hostKey.pinned) : undefined;
    const onAbort = (): void => fail(terminalError('VNFM_ERR_LCM_INTERRUPTED', redactor.redact(`SSH connection to ${where} abandoned: the operation was stopped (${reasonOf(o.signal)})`)));
    const guard = setTimeout(() => fail(new Error(`no SSH handshake within ${readyTimeoutMs} ms`)), readyTimeoutMs + 2000);
    function cleanup(): void {
      settled = true;
      clearTimeout(guard);
      o.signal?.removeEventListener('abort', onAbort);
    }
    function fail(e: Error): void {
      if (settled) return;
      cleanup();
      client.removeAllListeners('ready');
      client.on('error', () => undefined);
      client.destroy();
      reject(e);
    }
    const onError = (e: Error & { level?: string }): void => {
      if (mismatch) fail(mismatch);
      else if (e.level === 'client-authentication') {
        const methods = [target.password !== undefined ? 'password' : '', target.privateKey !== undefined ? 'publickey' : ''].filter(Boolean).join(', ') || 'none';
        fail(terminalError('VNFM_ERR_SSH_AUTH', redactor.redact(`SSH authentication of user "${target.username}" on ${where} was refused (methods tried: ${methods})`)));
      } else fail(new Error(redactor.redact(e.message || String(e))));
    };
    const onClose = (): void => fail(mismatch ?? new Error('connection closed during the SSH handshake'));
    client.on('error', onError);
    client.on('close', onClose);
    client.on('ready', () => {
      void (async () => {
        if (!fingerprint) return fail(new Error('the server presented no host key'));
        if (!pinned && o.hostKey?.learn) {
          try {
            await o.hostKey.learn(fingerprint);
          } catch (e) {
            return fail(isVnfmError(e) ? e : terminalError('VNFM_ERR_MGMT_FAILED', redactor.redact(`cannot record the host key of ${where}: ${(e as Error).message}`)));
          }
        }
        if (settled) return;
        cleanup();
        client.removeListener('error', onError);
        client.removeListener('close', onClose);
        resolve({ client, fingerprint });
      })();
    });
    if (target.password !== undefined) {
      const password = target.password;
      client.on('keyboard-interactive', (_name, _instructions, _lang, prompts, finish) => {
        finish(prompts.length === 1 && /password/i.test(prompts[0]?.prompt ?? '') ? [password] : []);
      });
    }
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const cfg: ConnectConfig = {
      host: target.host,
      port,
      username: target.username,
      readyTimeout: readyTimeoutMs,
      keepaliveInterval: SSH_KEEPALIVE_INTERVAL_MS,
      keepaliveCountMax: SSH_KEEPALIVE_COUNT_MAX,
      tryKeyboard: target.password !== undefined,
      // called at every key exchange: a re-key must present the key of the first one
      hostVerifier: (key: Buffer): boolean => {
        const seen = fingerprintOf(key);
        const expected = pinned ?? fingerprint;
        fingerprint ??= seen;
        if (expected && seen !== expected) {
          mismatch = terminalError(
            'VNFM_ERR_SSH_HOST_KEY',
            redactor.redact(`the host key of ${where} has changed: expected ${expected}, the server presented ${seen}; refusing to connect (the host may have been replaced, or the connection is intercepted)`),
          );
          return false;
        }
        return true;
      },
    };
    if (target.password !== undefined) cfg.password = target.password;
    if (target.privateKey !== undefined) cfg.privateKey = target.privateKey;
    if (target.passphrase !== undefined) cfg.passphrase = target.passphrase;
    try {
      client.connect(cfg);
    } catch (e) {
      // ssh2 parses the private key synchronously: an unusable key (or wrong passphrase) lands here
      fail(terminalError('VNFM_ERR_SSH_AUTH', redactor.redact(`cannot use the private key of user "${target.username}" for ${where}: ${(e as Error).message}`)));
    }
  });
}

/**
 * Opens an authenticated SSH connection, retrying attempts that fail for reachability reasons (see
 * the module comment for the error mapping).
 */
export async function connectSsh(target: SshTarget, o: ConnectOptions = {}): Promise<SshSession> {
  const port = target.port ?? SSH_DEFAULT_PORT;
  const where = hostPort(target.host, port);
  const redactor = new Redactor([target.password ?? '', target.passphrase ?? '', ...privateKeySecrets(target.privateKey), ...(o.secrets ?? [])]);
  const interrupted = (): VnfmError => terminalError('VNFM_ERR_LCM_INTERRUPTED', redactor.redact(`SSH connection to ${where} abandoned: the operation was stopped (${reasonOf(o.signal)})`));
  const attempts = Math.max(1, Math.floor(o.attempts ?? SSH_DEFAULT_ATTEMPTS));
  const initial = o.backoffInitialMs ?? SSH_DEFAULT_BACKOFF_INITIAL_MS;
  const max = o.backoffMaxMs ?? SSH_DEFAULT_BACKOFF_MAX_MS;
  const perAttempt = o.readyTimeoutMs ?? SSH_DEFAULT_READY_TIMEOUT_MS;
  const deadline = o.deadlineMs !== undefined ? Date.now() + o.deadlineMs : undefined;
  let attempt = 0;
  let last: Error | undefined;
  for (;;) {
    if (o.signal?.aborted) throw interrupted();
    attempt++;
    const remaining = deadline === undefined ? Infinity : deadline - Date.now();
    const readyTimeout = Math.max(1000, Math.min(perAttempt, remaining));
    try {
      const { client, fingerprint } = await connectOnce(target, port, readyTimeout, o, redactor);
      if (o.signal?.aborted) {
        client.end();
        throw interrupted();
      }
      return new Session(client, target, port, fingerprint, redactor, o.signal);
    } catch (e) {
      if (isVnfmError(e)) throw e;
      last = e as Error;
    }
    await o.onAttempt?.(attempt, last);
    const more = deadline === undefined ? attempt < attempts : Date.now() < deadline;
    if (!more) break;
    let wait = backoffDelay(attempt, initial, max);
    if (deadline !== undefined) wait = Math.min(wait, Math.max(0, deadline - Date.now()));
    await sleepAbortable(wait, o.signal, interrupted);
    if (deadline !== undefined && Date.now() >= deadline) break;
  }
  const within = deadline !== undefined ? ` within ${o.deadlineMs} ms` : '';
  throw retryableError(
    'VNFM_ERR_SSH_UNREACHABLE',
    redactor.redact(`cannot connect over SSH to ${where} as "${target.username}": ${attempt} attempt${attempt === 1 ? '' : 's'} failed${within}; last error: ${last?.message ?? 'unknown'}`),
  );
}

/** Bounded capture of one output stream (the tail is kept), with line streaming. */
class StreamCapture {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private continued = false;

  constructor(
    private readonly max: number,
    private readonly redactor: Redactor,
    private readonly onLine: ((line: string) => void) | undefined,
    /** Keep everything, unredacted (downloads); no streaming. */
    private readonly raw = false,
  ) {}

  push(buf: Buffer): void {
    this.chunks.push(buf);
    this.size += buf.length;
    if (this.raw) return;
    while (this.size > this.max) {
      this.truncated = true;
      const first = this.chunks[0] as Buffer;
      const excess = this.size - this.max;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
    if (!this.onLine) return;
    this.pending += this.decoder.write(buf);
    let i: number;
    while ((i = this.pending.indexOf('\n')) >= 0) {
      this.emit(this.pending.slice(0, i).replace(/\r$/, ''), this.continued, false);
      this.pending = this.pending.slice(i + 1);
      this.continued = false;
    }
    while (this.pending.length > SSH_MAX_LINE_CHARS) {
      this.emit(this.pending.slice(0, SSH_MAX_LINE_CHARS), this.continued, true);
      this.pending = this.pending.slice(SSH_MAX_LINE_CHARS);
      this.continued = true;
    }
  }

  private emit(line: string, cutStart: boolean, cutEnd: boolean): void {
    try {
      this.onLine?.(this.redactor.redactCut(line, cutStart, cutEnd));
    } catch {
      /* a listener's failure must not break the capture */
    }
  }

  /** Flushes the last partial line to the listener. */
  end(): void {
    if (!this.onLine || this.raw) return;
    this.pending += this.decoder.end();
    if (this.pending) this.emit(this.pending.replace(/\r$/, ''), this.continued, false);
    this.pending = '';
  }

  buffer(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  /** The captured text, redacted. */
  text(): string {
    let buf = this.buffer();
    if (this.truncated) {
      let i = 0;
      while (i < buf.length && i < 4 && ((buf[i] as number) & 0xc0) === 0x80) i++; // a cut UTF-8 sequence
      buf = buf.subarray(i);
      return this.redactor.redactCut(buf.toString('utf8'), true, false);
    }
    return this.redactor.redact(buf.toString('utf8'));
  }
}

interface CoreResult {
  result: ExecResult;
  rawStdout: Buffer;
}

/** A command in flight, as {@link Session.close} sees it. */
interface Running {
  /** Kills the remote command (signal + channel close) and settles its promise with `e`. */
  stop(e: Error): void;
  /** The command's marker (for the kill by marker when the session closes; root-side for sudo). */
  marker: string | undefined;
  sudo: '-n' | '-S' | undefined;
}

/** How long {@link Session.close} lets the root-side kill of running sudo commands take before disconnecting anyway. */
const CLOSE_KILL_GRACE_MS = 10_000;

class Session implements SshSession {
  readonly host: string;
  private readonly where: string;
  private isClosed = false;
  /** The transport is gone (server closed it, keep-alive timeout, or our disconnect completed). */
  private connGone = false;
  private readonly running = new Set<Running>();
  private abortedBy: AbortSignal | undefined;
  private lostReason: string | undefined;
  private sftpP: Promise<SFTPWrapper> | undefined;
  private sudoModeP: Promise<'-n' | '-S'> | undefined;
  private readonly onAbort = (): void => {
    this.abortedBy = this.signal;
    this.close();
  };

  constructor(
    private readonly client: Client,
    private readonly target: SshTarget,
    port: number,
    readonly hostKeyFingerprint: string,
    private readonly redactor: Redactor,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.host = target.host;
    this.where = hostPort(target.host, port);
    client.on('error', (e: Error) => {
      this.lostReason = e.message;
    });
    client.on('close', () => {
      this.isClosed = true;
      this.connGone = true;
      this.signal?.removeEventListener('abort', this.onAbort);
    });
    if (signal?.aborted) this.onAbort();
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Closes the connection. Running commands are killed first (and their promises rejected): the
   * SSH signal, then a kill by marker (root-side for sudo commands) before the disconnect (at most 10 s).
   */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.signal?.removeEventListener('abort', this.onAbort);
    const running = [...this.running];
    this.running.clear();
    const kills: Promise<void>[] = [];
    for (const r of running) {
      r.stop(this.gone('the command was killed'));
      if (r.marker && !this.connGone) kills.push(this.killMarked(r.marker, r.sudo));
    }
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      try {
        this.client.end();
      } catch {
        /* already gone */
      }
      // a server that does not answer the disconnect must not keep the socket open
      setTimeout(() => this.client.destroy(), 2000).unref();
    };
    if (!kills.length) return end();
    const t = setTimeout(end, CLOSE_KILL_GRACE_MS);
    void Promise.allSettled(kills).then(() => {
      clearTimeout(t);
      end();
    });
  }

  private r(text: string): string {
    return this.redactor.redact(text);
  }

  private label(cmd: string, label?: string): string {
    return this.r(label ?? cmd.replace(/\s+/g, ' ').trim().slice(0, 80));
  }

  private interrupted(what: string, signal: AbortSignal | undefined): VnfmError {
    return terminalError('VNFM_ERR_LCM_INTERRUPTED', this.r(`${this.host}: ${what}: the operation was stopped (${reasonOf(signal)})`));
  }

  /** The error for a connection that is gone (or for an op-level abort that closed it). */
  private gone(what: string): VnfmError {
    if (this.abortedBy) return this.interrupted(what, this.abortedBy);
    return retryableError('VNFM_ERR_SSH_UNREACHABLE', this.r(`${this.host}: ${what}: the SSH connection to ${this.where} is closed${this.lostReason ? ` (${this.lostReason})` : ''}`));
  }

  /** `-n` (no password needed: key auth, or an account that may sudo without one) or `-S` (password on stdin). */
  private sudoMode(): Promise<'-n' | '-S'> {
    if (this.target.password === undefined) return Promise.resolve('-n');
    this.sudoModeP ??= this.core(`sudo -n -- sh -c 'exit 0'`, { timeoutMs: HELPER_TIMEOUT_MS }, { label: 'sudo probe', raw: false, sudo: undefined, internal: false })
      .then(({ result }) => (result.code === 0 ? ('-n' as const) : ('-S' as const)))
      .catch((e: unknown) => {
        this.sudoModeP = undefined;
        throw e;
      });
    return this.sudoModeP;
  }

  exec(cmd: string, o: ExecOptions = {}): Promise<ExecResult> {
    return this.execAs(cmd, o, this.label(cmd)).then((c) => c.result);
  }

  private async execAs(cmd: string, o: ExecOptions, label: string, raw = false): Promise<CoreResult> {
    const sudo = o.sudo ? await this.sudoMode() : undefined;
    return this.core(cmd, o, { label, raw, sudo, internal: false });
  }

  /**
   * Runs `cmd` (wrapped in sudo when asked) on a new channel. `internal` commands (the root-side
   * kill) may run while the session closes and are not killed by it.
   */
  private core(cmd: string, o: ExecOptions, how: { label: string; raw: boolean; sudo: '-n' | '-S' | undefined; internal: boolean }): Promise<CoreResult> {
    const { label, raw, sudo, internal } = how;
    const what = `"${label}"`;
    if (this.connGone || (this.isClosed && !internal)) return Promise.reject(this.gone(`cannot run ${what}`));
    if (o.signal?.aborted) return Promise.reject(this.interrupted(`${what} not started`, o.signal));
    // every command the session may have to kill carries a marker in its environment: a root-side
    // kill for sudo commands, and a kill before the disconnect for all (a server may ignore or
    // drop the SSH `signal` request, and sshd leaves a non-pty command running when the
    // connection ends)
    const marker = internal ? undefined : randomId();
    const wire = sudo
      ? `sudo ${sudo === '-S' ? "-S -p ''" : '-n'} -- sh -c ${shQuote(`${MARKER_VAR}=${marker}; export ${MARKER_VAR}; exec sh -c ${shQuote(cmd)}`)}`
      : marker
        ? `${MARKER_VAR}=${marker}; export ${MARKER_VAR}; ${cmd}`
        : cmd;
    const timeoutMs = o.timeoutMs ?? SSH_DEFAULT_EXEC_TIMEOUT_MS;
    const timed = Number.isFinite(timeoutMs) && timeoutMs > 0;
    const max = Math.max(1, o.maxOutputBytes ?? SSH_DEFAULT_MAX_OUTPUT_BYTES);
    const onOutput = o.onOutput;
    const out = new StreamCapture(max, this.redactor, onOutput ? (l) => onOutput(l, 'stdout') : undefined, raw);
    const err = new StreamCapture(max, this.redactor, onOutput ? (l) => onOutput(l, 'stderr') : undefined);
    const started = Date.now();
    return new Promise<CoreResult>((resolve, reject) => {
      let channel: ClientChannel | undefined;
      let settled = false;
      let exit: { code: number | null; signal?: string } | undefined;
      let timer: NodeJS.Timeout | undefined;
      const finish = (e?: Error): void => {
        if (settled) return;
        settled = true;
        this.running.delete(entry);
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', onAbort);
        this.client.removeListener('close', onConnClose);
        out.end();
        err.end();
        if (e) return reject(e);
        const result: ExecResult = { code: exit?.code ?? null, stdout: out.text(), stderr: err.text(), truncated: out.truncated || err.truncated, durationMs: Date.now() - started };
        if (exit?.signal !== undefined) result.signal = exit.signal;
        resolve({ result, rawStdout: raw ? out.buffer() : Buffer.alloc(0) });
      };
      const outputTail = (): string => {
        const t = tailLines(err.text().trim() ? err.text() : out.text(), 20);
        return t.trim() ? `; last output:\n${t}` : '';
      };
      const kill = (): void => {
        const ch = channel;
        if (ch) {
          sendSignal(ch, 'KILL');
          try {
            ch.close();
          } catch {
            /* already closed */
          }
        }
        if (marker && sudo && !this.isClosed) void this.killMarked(marker, sudo);
      };
      const onAbort = (): void => {
        const e = this.interrupted(`${what} killed`, o.signal);
        kill();
        finish(e);
      };
      const onConnClose = (): void => finish(this.gone(`${what} did not finish (its outcome is unknown)`));
      const entry: Running = {
        stop: (e) => {
          kill();
          finish(e);
        },
        marker,
        sudo,
      };
      if (!internal) this.running.add(entry);
      o.signal?.addEventListener('abort', onAbort, { once: true });
      this.client.once('close', onConnClose);
      if (timed) {
        timer = setTimeout(
          () => {
            kill();
            finish(vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: ${what} timed out after ${timeoutMs} ms and was killed`) + outputTail()));
          },
          Math.min(timeoutMs, 2 ** 31 - 1),
        );
      }
      try {
        this.client.exec(wire, (e, ch) => {
          if (e) {
            finish(this.isClosed ? this.gone(`cannot run ${what}`) : vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: cannot start ${what}: ${e.message}`)));
            return;
          }
          channel = ch;
          if (settled) {
            kill();
            return;
          }
          ch.on('error', () => undefined);
          ch.on('data', (d: Buffer) => out.push(d));
          ch.stderr.on('data', (d: Buffer) => err.push(d));
          ch.on('exit', (code: number | null, signal?: string) => {
            exit = signal !== undefined && signal !== null ? { code: null, signal: String(signal) } : { code: typeof code === 'number' ? code : null };
          });
          ch.on('close', () => finish());
          if (sudo === '-S') ch.write(`${this.target.password}\n`);
          if (o.stdin !== undefined) ch.write(o.stdin);
          ch.end();
        });
      } catch (e) {
        finish(this.isClosed ? this.gone(`cannot run ${what}`) : vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: cannot start ${what}: ${(e as Error).message}`)));
      }
    });
  }

  /**
   * Root-side kill of every process a sudo command started (the server's `signal` runs as the
   * login user and cannot reach them): they carry the command's marker in their environment.
   * Best effort: never rejects.
   */
  private killMarked(marker: string, sudo: '-n' | '-S' | undefined): Promise<void> {
    const script = `for p in /proc/[0-9]*; do if tr '\\0' '\\n' < "$p/environ" 2>/dev/null | grep -qx '${MARKER_VAR}=${marker}'; then kill -KILL "\${p#/proc/}" 2>/dev/null; fi; done; exit 0`;
    return this.core(script, { timeoutMs: HELPER_TIMEOUT_MS }, { label: 'kill of a sudo command', raw: false, sudo, internal: true }).then(
      () => undefined,
      () => undefined,
    );
  }

  async run(cmd: string, o: ExecOptions & { label?: string } = {}): Promise<ExecResult> {
    const label = this.label(cmd, o.label);
    const { result } = await this.execAs(cmd, o, label);
    if (result.code !== 0) {
      const status = result.code === null ? `killed by signal ${result.signal ?? 'unknown'}` : `exit ${result.code}`;
      const tail = tailLines(result.stderr.trim() ? result.stderr : result.stdout, 20);
      throw vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: "${label}" failed (${status})${tail.trim() ? `:\n${tail}` : ' with no output'}`));
    }
    return result;
  }

  private sftp(): Promise<SFTPWrapper> {
    if (this.isClosed) return Promise.reject(this.gone('cannot open SFTP'));
    this.sftpP ??= new Promise<SFTPWrapper>((resolve, reject) => {
      this.client.sftp((e, sftp) => {
        if (e) {
          this.sftpP = undefined;
          reject(this.isClosed ? this.gone('cannot open SFTP') : vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: cannot open SFTP: ${e.message}`)));
          return;
        }
        sftp.on('close', () => {
          this.sftpP = undefined;
        });
        sftp.on('error', () => undefined);
        resolve(sftp);
      });
    });
    return this.sftpP;
  }

  /** One SFTP call as a promise; failures become VNFM_ERR_MGMT_COMMAND (or unreachable when the connection is gone). */
  private async sftpCall<T>(what: string, fn: (sftp: SFTPWrapper, cb: (e: Error | null | undefined, v?: T) => void) => void): Promise<T> {
    const sftp = await this.sftp();
    return new Promise<T>((resolve, reject) => {
      try {
        fn(sftp, (e, v) => {
          if (e) reject(this.isClosed ? this.gone(what) : vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: ${what} failed: ${e.message}`)));
          else resolve(v as T);
        });
      } catch (e) {
        reject(vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: ${what} failed: ${(e as Error).message}`)));
      }
    });
  }

  private async writeNew(path: string, data: Buffer, mode: number, what: string): Promise<void> {
    await this.sftpCall<void>(what, (s, cb) => s.writeFile(path, data, { mode, flag: 'wx' }, (e) => cb(e)));
    // the open's mode is subject to the server's umask
    await this.sftpCall<void>(what, (s, cb) => s.chmod(path, mode, (e) => cb(e)));
  }

  private async removeQuietly(path: string): Promise<void> {
    await this.sftpCall<void>(`removal of ${path}`, (s, cb) => s.unlink(path, (e) => cb(e))).catch(() => undefined);
  }

  async upload(path: string, data: string | Buffer, o: { mode?: number; sudo?: boolean } = {}): Promise<void> {
    const mode = o.mode ?? 0o644;
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const what = `upload of ${path}`;
    if (o.sudo) {
      const tmp = `/tmp/.hvvnfm-upload-${randomId()}`;
      await this.writeNew(tmp, buf, 0o600, what);
      try {
        await this.run(`install -m ${mode.toString(8).padStart(4, '0')} ${shQuote(tmp)} ${shQuote(path)}`, { sudo: true, label: `install ${path}`, timeoutMs: HELPER_TIMEOUT_MS });
      } finally {
        await this.removeQuietly(tmp);
      }
      return;
    }
    const tmp = `${path}.tmp-${randomId()}`;
    try {
      await this.writeNew(tmp, buf, mode, what);
      await this.sftpCall<void>(what, (s, cb) => {
        try {
          s.ext_openssh_rename(tmp, path, (e) => cb(e));
        } catch {
          // no posix-rename extension: plain SFTP rename does not replace an existing file
          s.unlink(path, () => s.rename(tmp, path, (e) => cb(e)));
        }
      });
    } catch (e) {
      await this.removeQuietly(tmp);
      throw e;
    }
  }

  async download(path: string, o: { sudo?: boolean } = {}): Promise<Buffer> {
    const what = `download of ${path}`;
    if (o.sudo) {
      const label = `cat ${path}`;
      const { result, rawStdout } = await this.execAs(`cat -- ${shQuote(path)}`, { sudo: true, timeoutMs: DOWNLOAD_TIMEOUT_MS }, this.r(label), true);
      if (result.code !== 0) throw vnfmError('VNFM_ERR_MGMT_COMMAND', this.r(`${this.host}: ${what} failed (exit ${result.code ?? result.signal}): ${tailLines(result.stderr, 5) || 'no error output'}`));
      return rawStdout;
    }
    return this.sftpCall<Buffer>(what, (s, cb) => s.readFile(path, (e, d) => cb(e, d)));
  }
}

/** One pooled connection per (host, port, username) for the duration of a hook; get() reconnects a dropped one. */
export class SshPool {
  private readonly sessions = new Map<string, Promise<SshSession>>();
  /** The connections opened so far (closed synchronously by closeAll). */
  private readonly opened = new Set<SshSession>();

  constructor(private readonly defaults: ConnectOptions = {}) {}

  async get(target: SshTarget, o: ConnectOptions = {}): Promise<SshSession> {
    const key = `${target.host}\u0000${target.port ?? SSH_DEFAULT_PORT}\u0000${target.username}`;
    for (;;) {
      const existing = this.sessions.get(key);
      if (!existing) break;
      const s = await existing;
      if (!s.closed) return s;
      this.opened.delete(s);
      if (this.sessions.get(key) === existing) {
        this.sessions.delete(key);
        break;
      }
    }
    const merged: ConnectOptions = { ...this.defaults, ...o, secrets: [...(this.defaults.secrets ?? []), ...(o.secrets ?? [])] };
    const p = connectSsh(target, merged).then((s) => {
      this.opened.add(s);
      return s;
    });
    this.sessions.set(key, p);
    try {
      return await p;
    } catch (e) {
      if (this.sessions.get(key) === p) this.sessions.delete(key);
      throw e;
    }
  }

  /** Closes every pooled connection (and one still being opened, once it opens). */
  closeAll(): void {
    for (const s of this.opened) s.close();
    this.opened.clear();
    for (const p of this.sessions.values()) p.then((s) => s.close(), () => undefined);
    this.sessions.clear();
  }
}
