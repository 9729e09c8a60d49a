/**
 * Runs the real OpenStack Tacker CLI (`openstack vnflcm ...`, `openstack vim ...` from the Debian
 * package python3-tackerclient) against a VNFM under test, the way an operator would: no
 * authentication (`--os-auth-type none`), the VNFM as endpoint, and a clean environment so no
 * `OS_*` variable of the machine leaks in. Whether the CLI is installed is the `tacker-cli` test
 * stage (test/helpers/stages.ts); nothing here installs it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What one CLI call produced. */
export interface CliResult {
  /** Exit code (null when killed by the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

const PATH = '/usr/bin:/bin';

/** Options of one {@link TackerCli.run}. */
export interface RunOptions {
  /** Tacker API major version to use (`--os-tacker-api-version`). @default 1 */
  api?: 1 | 2;
  /** Kill the CLI after this many ms. @default 30000 */
  timeoutMs?: number;
}

/** Keystone password login of the CLI (`OS_AUTH_TYPE=password`): the VNFM is then found in Keystone's catalog. */
export interface KeystoneLogin {
  authUrl: string;
  username: string;
  password: string;
  project: string;
  userDomain: string;
  projectDomain: string;
  region: string;
}

/** The Tacker CLI bound to one VNFM endpoint, with a private HOME for its files. */
export class TackerCli {
  /** Throwaway HOME of the CLI; parameter files are written here too. */
  readonly home: string;

  /**
   * `endpoint`: the VNFM, without authentication (`--os-auth-type none`); or a Keystone login:
   * the CLI logs in with a password (passed in its environment, never on its command line) and
   * finds the VNFM in the catalog (service type `nfv-orchestration`), as an operator's CLI does.
   */
  constructor(private readonly endpoint: string | KeystoneLogin) {
    this.home = mkdtempSync(join(tmpdir(), 'tacker-cli-'));
  }

  private invocation(): { args: string[]; env: Record<string, string> } {
    if (typeof this.endpoint === 'string') return { args: ['--os-auth-type', 'none', '--os-endpoint', this.endpoint], env: {} };
    const k = this.endpoint;
    return {
      args: [],
      env: {
        OS_AUTH_TYPE: 'password',
        OS_AUTH_URL: k.authUrl,
        OS_USERNAME: k.username,
        OS_PASSWORD: k.password,
        OS_PROJECT_NAME: k.project,
        OS_USER_DOMAIN_NAME: k.userDomain,
        OS_PROJECT_DOMAIN_NAME: k.projectDomain,
        OS_REGION_NAME: k.region,
        OS_IDENTITY_API_VERSION: '3',
        OS_INTERFACE: 'public',
      },
    };
  }

  /** Writes a file (e.g. a VIM config or an update request) into the CLI's home and returns its path. */
  file(name: string, content: string | object): string {
    const path = join(this.home, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  }

  /** Runs `openstack --os-auth-type none --os-endpoint <vnfm> [--os-tacker-api-version N] <args>` (or with the Keystone login). */
  run(args: readonly string[], opts: RunOptions = {}): Promise<CliResult> {
    const inv = this.invocation();
    const full = [...inv.args, ...(opts.api === 2 ? ['--os-tacker-api-version', '2'] : []), ...args];
    return new Promise((resolve, reject) => {
      const child = spawn('openstack', full, { env: { PATH, HOME: this.home, ...inv.env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** Runs a show/list command with `-f json` and parses its output; throws with the CLI output when it fails. */
  async json<T = Record<string, unknown>>(args: readonly string[], opts: RunOptions = {}): Promise<T> {
    const r = await this.run([...args, '-f', 'json'], opts);
    if (r.code !== 0) throw new Error(`openstack ${args.join(' ')} exited ${r.code}: ${r.stderr || r.stdout}`);
    return JSON.parse(r.stdout) as T;
  }

  /** Removes the CLI's home. */
  close(): void {
    rmSync(this.home, { recursive: true, force: true });
  }
}
