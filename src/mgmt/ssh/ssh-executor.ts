/**
 * TEMPORARY placeholder of the SSH executor's interface (the implementation is a separate piece of
 * work and replaces this file): the types management drivers code against, and functions that
 * refuse to run.
 */
import { vnfmError } from '../../errors.ts';

export interface SshTarget { host: string; port?: number; username: string; password?: string; privateKey?: string; passphrase?: string; }
export interface HostKeyPolicy { pinned?: string; learn?: (fingerprint: string) => void | Promise<void>; }
export interface ConnectOptions { hostKey?: HostKeyPolicy; attempts?: number; backoffInitialMs?: number; backoffMaxMs?: number; readyTimeoutMs?: number; deadlineMs?: number; signal?: AbortSignal; secrets?: string[]; onAttempt?: (attempt: number, error: Error) => void; }
export interface ExecOptions { timeoutMs?: number; stdin?: string | Buffer; sudo?: boolean; onOutput?: (line: string, stream: 'stdout' | 'stderr') => void; maxOutputBytes?: number; signal?: AbortSignal; }
export interface ExecResult { code: number | null; signal?: string; stdout: string; stderr: string; truncated: boolean; durationMs: number; }
export interface SshSession {
  readonly host: string;
  readonly hostKeyFingerprint: string;
  exec(cmd: string, o?: ExecOptions): Promise<ExecResult>;
  run(cmd: string, o?: ExecOptions & { label?: string }): Promise<ExecResult>;
  upload(path: string, data: string | Buffer, o?: { mode?: number; sudo?: boolean }): Promise<void>;
  download(path: string, o?: { sudo?: boolean }): Promise<Buffer>;
  close(): void;
}

export function connectSsh(_target: SshTarget, _o?: ConnectOptions): Promise<SshSession> {
  return Promise.reject(vnfmError('VNFM_ERR_MGMT_FAILED', 'SSH executor not available in this build'));
}

export class SshPool {
  constructor(_defaults?: ConnectOptions) {}
  get(target: SshTarget, o?: ConnectOptions): Promise<SshSession> {
    return connectSsh(target, o);
  }
  closeAll(): void {}
}
