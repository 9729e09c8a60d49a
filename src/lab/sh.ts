/**
 * Running the system tools the lab drives (`ip`, `ssh-keygen`, `useradd`, `visudo`, ...): argument
 * vectors only (no shell), a fixed PATH, a timeout, stdin for the few inputs that are secrets
 * (`chpasswd`), so nothing secret is ever on a command line.
 */
import { spawn } from 'node:child_process';

/** PATH of every command the lab runs. */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A command the lab ran failed; the message names the command and ends with its stderr. */
export class LabCommandError extends Error {
  constructor(
    readonly command: string,
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`\`${command}\` ${code === null ? 'did not finish' : `exited ${code}`}${stderr ? `: ${stderr.trim().split('\n').slice(-3).join(' / ')}` : ''}`);
  }
}

/** What a command printed and how it ended. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `cmd args...`; rejects with {@link LabCommandError} on a non-zero exit unless `allowFail`.
 * `input` goes to stdin (for secrets); `what` replaces the command in error messages.
 */
export function run(cmd: string, args: readonly string[], opts: { input?: string; allowFail?: boolean; timeoutMs?: number } = {}): Promise<RunResult> {
  const shown = [cmd, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { PATH: SYSTEM_PATH, LANG: 'C' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new LabCommandError(shown, null, (e as Error).message));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const res = { code: code ?? -1, stdout, stderr };
      if (code !== 0 && !opts.allowFail) reject(new LabCommandError(shown, code, stderr));
      else resolve(res);
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}
