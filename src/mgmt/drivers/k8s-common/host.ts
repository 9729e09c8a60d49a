/**
 * A cluster node (or any host a cluster driver manages: an Ansible server, a load balancer)
 * reached over SSH: commands with the hook's timeout and abort signal, sudo (password on stdin,
 * the executor's job), files read and written in place.
 */
import { randomBytes } from 'node:crypto';
import type { ExecOptions, ExecResult, SshSession } from '../../ssh/ssh-executor.ts';

/** A string quoted for a POSIX shell. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Options every command of a host gets. */
export interface HostOptions {
  /** Node name (messages). */
  name: string;
  commandTimeoutMs: number;
  signal?: AbortSignal;
}

/** A node reached over SSH. */
export class Host {
  constructor(
    readonly session: SshSession,
    readonly o: HostOptions,
  ) {}

  get name(): string {
    return this.o.name;
  }

  private opts(extra: ExecOptions = {}): ExecOptions {
    return { timeoutMs: this.o.commandTimeoutMs, ...(this.o.signal ? { signal: this.o.signal } : {}), ...extra };
  }

  /** Runs a command; non-zero exit = VNFM_ERR_MGMT_COMMAND. */
  run(cmd: string, extra: ExecOptions & { label?: string } = {}): Promise<ExecResult> {
    return this.session.run(cmd, this.opts(extra));
  }

  /** Runs a command whatever its exit status. */
  exec(cmd: string, extra: ExecOptions = {}): Promise<ExecResult> {
    return this.session.exec(cmd, this.opts(extra));
  }

  sudo(cmd: string, extra: ExecOptions & { label?: string } = {}): Promise<ExecResult> {
    return this.run(cmd, { ...extra, sudo: true });
  }

  async read(path: string, sudo = true): Promise<string> {
    return (await this.session.download(path, { sudo })).toString('utf8');
  }

  /** Writes a root-owned file in place (`cat >`: same inode, works on bind-mounted files). */
  async writeInPlace(path: string, content: string, label?: string): Promise<void> {
    await this.sudo(`cat > ${shq(path)}`, { stdin: content, label: label ?? `write ${path}` });
  }

  /** A fresh private temp path under /tmp. */
  tempPath(prefix: string): string {
    return `/tmp/${prefix}-${randomBytes(6).toString('hex')}`;
  }

  async exists(path: string, sudo = true): Promise<boolean> {
    const r = await this.exec(`test -e ${shq(path)}`, { sudo });
    return r.code === 0;
  }

  /** Whether a program is on the PATH. */
  async has(program: string): Promise<boolean> {
    const r = await this.exec(`command -v ${shq(program)}`);
    return r.code === 0 && r.stdout.trim() !== '';
  }
}
