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
import type { Client, ConnectConfig } from 'ssh2';
import { isVnfmError, retryableError, terminalError, type VnfmError } from '../../errors.ts';
import { fingerprintOf, normalizeFingerprint, privateKeySecrets, Redactor } from './redact.ts';
import {
  backoffDelay,
  type ConnectOptions,
  hostPort,
  reasonOf,
  SSH_DEFAULT_ATTEMPTS,
  SSH_DEFAULT_BACKOFF_INITIAL_MS,
  SSH_DEFAULT_BACKOFF_MAX_MS,
  SSH_DEFAULT_PORT,
  SSH_DEFAULT_READY_TIMEOUT_MS,
  SSH_KEEPALIVE_COUNT_MAX,
  SSH_KEEPALIVE_INTERVAL_MS,
  type SshSession,
  type SshTarget,
  sleepAbortable,
} from './ssh-common.ts';
import { Session } from './ssh-session.ts';

export {
  type ConnectOptions,
  type ExecOptions,
  type ExecResult,
  type HostKeyPolicy,
  SSH_DEFAULT_ATTEMPTS,
  SSH_DEFAULT_BACKOFF_INITIAL_MS,
  SSH_DEFAULT_BACKOFF_MAX_MS,
  SSH_DEFAULT_EXEC_TIMEOUT_MS,
  SSH_DEFAULT_MAX_OUTPUT_BYTES,
  SSH_DEFAULT_PORT,
  SSH_DEFAULT_READY_TIMEOUT_MS,
  SSH_KEEPALIVE_COUNT_MAX,
  SSH_KEEPALIVE_INTERVAL_MS,
  SSH_MAX_LINE_CHARS,
  type SshSession,
  type SshTarget,
  shQuote,
} from './ssh-common.ts';

let ssh2Load: Promise<typeof import('ssh2')> | undefined;
/** The `ssh2` package, loaded on the first connection (a VNFM without management drivers never needs it). */
function ssh2(): Promise<typeof import('ssh2')> {
  ssh2Load ??= import('ssh2');
  return ssh2Load;
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
