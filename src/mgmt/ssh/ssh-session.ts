/**
 * One authenticated SSH connection ({@link SshSession}): commands with bounded capture, timeouts
 * and kills, sudo, SFTP file transfer, and the close that kills what still runs. Opened by
 * `connectSsh` (src/mgmt/ssh/ssh-executor.ts).
 */
import type { Client, ClientChannel, SFTPWrapper } from 'ssh2';
import { retryableError, terminalError, vnfmError, type VnfmError } from '../../errors.ts';
import type { Redactor } from './redact.ts';
import { StreamCapture } from './ssh-capture.ts';
import {
  DOWNLOAD_TIMEOUT_MS,
  type ExecOptions,
  type ExecResult,
  HELPER_TIMEOUT_MS,
  hostPort,
  MARKER_VAR,
  randomId,
  reasonOf,
  sendSignal,
  SSH_DEFAULT_EXEC_TIMEOUT_MS,
  SSH_DEFAULT_MAX_OUTPUT_BYTES,
  type SshSession,
  type SshTarget,
  shQuote,
  tailLines,
} from './ssh-common.ts';

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

export class Session implements SshSession {
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
