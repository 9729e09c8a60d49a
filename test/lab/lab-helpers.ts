/**
 * Helpers of the live-VM lab tests: SSH with a password (the `ssh2` client, recording the host key
 * the server presents), the state of a TCP port (open / refused), the lab's namespaces and bridge
 * as the machine has them, a Heat session over HTTP against the simulated OpenStack, and
 * `vnfm start --lab` as a child process (its JSON log lines collected).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Client } from 'ssh2';
import { REPO_ROOT } from '../helpers/fixtures.ts';
import { until } from '../helpers/wait.ts';
import { type Answer, call } from '../sim/openstack/helpers.ts';

export { type Answer, call };

/** What a command run over SSH gave, and the host key the server presented. */
export interface SshResult {
  code: number;
  stdout: string;
  stderr: string;
  /** OpenSSH fingerprint (`SHA256:...`) of the host key. */
  hostKey: string;
}

/** Runs `command` on `ip` as `user` with a password; rejects when the connection or login fails. */
export function sshRun(ip: string, user: string, password: string, command: string): Promise<SshResult> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    let hostKey = '';
    const fail = (e: Error) => {
      c.end();
      reject(e);
    };
    c.on('ready', () => {
      c.exec(command, (err, stream) => {
        if (err) return fail(err);
        let stdout = '';
        let stderr = '';
        stream.on('data', (d: Buffer) => {
          stdout += d.toString();
        });
        stream.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        stream.on('close', (code: number | null) => {
          c.end();
          resolve({ code: code ?? -1, stdout, stderr, hostKey });
        });
      });
    });
    c.on('error', fail);
    c.connect({
      host: ip,
      port: 22,
      username: user,
      password,
      readyTimeout: 10_000,
      hostVerifier: (key: Buffer) => {
        hostKey = `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
        return true;
      },
    });
  });
}

/** SSH that answers undefined instead of rejecting (for polling until a host is up). */
export async function trySsh(ip: string, user: string, password: string, command: string): Promise<SshResult | undefined> {
  try {
    return await sshRun(ip, user, password, command);
  } catch {
    return undefined;
  }
}

/** Whether `ip:port` accepts ('open'), refuses ('refused') or does not answer ('silent'). */
export function portState(ip: string, port: number): Promise<'open' | 'refused' | 'silent'> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port });
    const done = (v: 'open' | 'refused' | 'silent') => {
      s.destroy();
      resolve(v);
    };
    s.setTimeout(2000, () => done('silent'));
    s.once('connect', () => done('open'));
    s.once('error', (e: NodeJS.ErrnoException) => done(e.code === 'ECONNREFUSED' ? 'refused' : 'silent'));
  });
}

/** The lab's namespaces present on the machine. */
export function labNamespaces(): string[] {
  const out = execFileSync('ip', ['-j', 'netns', 'list'], { encoding: 'utf8' }).trim();
  return (out ? (JSON.parse(out) as { name: string }[]) : []).map((n) => n.name).filter((n) => n.startsWith('hvlab-'));
}

/** Whether the lab's bridge exists. */
export function bridgeExists(): boolean {
  try {
    execFileSync('ip', ['link', 'show', 'hvlab0'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * The IPv4 addresses of a host's eth0 (its own and the extra ones), read with `ip -n`; none when
 * there is no such namespace, or no eth0 in it yet (a host being created or torn down).
 */
export function addressesIn(ns: string): string[] {
  if (!labNamespaces().includes(ns)) return [];
  let out: string;
  try {
    out = execFileSync('ip', ['-n', ns, '-j', 'addr', 'show', 'dev', 'eth0'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = String((e as { stderr?: unknown }).stderr ?? '');
    if (/does not exist|Cannot open network namespace/.test(err)) return [];
    throw e;
  }
  const info = (JSON.parse(out) as { addr_info?: { family: string; local: string }[] }[])[0];
  return (info?.addr_info ?? []).filter((a) => a.family === 'inet').map((a) => a.local);
}

/** A Keystone session of the simulated cloud's admin: token and the Heat / Nova endpoints. */
export interface Session {
  token: string;
  heat: string;
  nova: string;
  base: string;
}

/** Logs in to the simulated OpenStack at `authUrl` (`.../v3`) as its default admin. */
export async function login(authUrl: string): Promise<Session> {
  const r = await call('POST', `${authUrl}/auth/tokens`, undefined, {
    auth: {
      identity: { methods: ['password'], password: { user: { name: 'admin', domain: { name: 'Default' }, password: 'admin-secret' } } },
      scope: { project: { name: 'admin', domain: { name: 'Default' } } },
    },
  });
  if (r.status !== 201) throw new Error(`login failed: ${r.status}`);
  // biome-ignore lint/suspicious/noExplicitAny: catalog JSON
  const url = (type: string): string => r.body.token.catalog.find((s: any) => s.type === type).endpoints.find((e: any) => e.interface === 'public').url;
  return { token: r.headers.get('x-subject-token') as string, heat: url('orchestration'), nova: url('compute'), base: authUrl.replace(/\/v3$/, '') };
}

/** A HOT: one server on a port of the lab network (the port is its own resource, as in VNF packages). */
export function oneServerTemplate(network = 'lab-net'): Record<string, unknown> {
  return {
    heat_template_version: '2021-04-16',
    resources: {
      vdu1_cp: { type: 'OS::Neutron::Port', properties: { network } },
      vdu1: { type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ port: { get_resource: 'vdu1_cp' } }] } },
    },
    outputs: { ip: { value: { get_attr: ['vdu1_cp', 'fixed_ips', 0, 'ip_address'] } } },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: log lines
export type Line = any;

/** A `vnfm start --lab` child process and what it logged. */
export interface Cli {
  child: ChildProcess;
  lines: Line[];
  stderr: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts `vnfm start --lab` with `<dir>/config.json` and the data directory `<dir>/data`, on a free
 * port. For measuring where a lab test's time goes: `VNFM_TEST_LAB_LOG=<file>` appends the child's
 * log lines to that file as well, `VNFM_TEST_LAB_LOG_LEVEL=debug` logs more (default info).
 */
export function startCli(dir: string): Cli {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'start', '--lab', '--config', join(dir, 'config.json'), '--data-dir', join(dir, 'data'), '--port', '0'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, VNFM_LOG_LEVEL: process.env.VNFM_TEST_LAB_LOG_LEVEL ?? 'info' },
  });
  const lines: Line[] = [];
  let stderr = '';
  let buf = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    if (process.env.VNFM_TEST_LAB_LOG) appendFileSync(process.env.VNFM_TEST_LAB_LOG, d);
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        lines.push(JSON.parse(l));
      } catch {
        lines.push({ msg: l });
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, lines, stderr: () => stderr, exited };
}

/** Its "VNFM started" line (with the URL), once it logged it; rejects when it exited first. */
export async function started(cli: Cli): Promise<Line> {
  return until('the VNFM started', () => cli.lines.find((l) => l.msg === 'VNFM started') ?? (cli.child.exitCode !== null ? Promise.reject(new Error(`exited: ${cli.stderr()}`)) : undefined), 600_000);
}

/**
 * Samples the command line of every process of the machine (what `ps -eo args` shows, in full),
 * one pass every `everyMs` after the previous one ended, handing each to `see`; returns the stop.
 * Read from /proc without blocking: a synchronous `ps` every 150 ms kept the event loop of an
 * in-process VNFM (and its lab) waiting most of the time on a busy machine.
 */
export function sampleCommandLines(see: (line: string) => void, everyMs = 150): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const pass = async (): Promise<void> => {
    const pids = (await readdir('/proc')).filter((n) => /^\d+$/.test(n));
    await Promise.all(
      pids.map(async (pid) => {
        try {
          const raw = await readFile(`/proc/${pid}/cmdline`);
          if (raw.length > 0) see(raw.toString('utf8').replace(/\0+$/, '').replaceAll('\0', ' '));
        } catch {
          // the process ended meanwhile
        }
      }),
    );
  };
  const next = (): void => {
    if (stopped) return;
    void pass()
      .catch(() => undefined)
      .then(() => {
        if (!stopped) timer = setTimeout(next, everyMs);
      });
  };
  next();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
