/**
 * Runs the VNFD's own hook scripts (`interfaces.Vnflcm.<hook>.implementation` -> artifact file).
 * Protocol (ours, not Tacker's pickle): the package is extracted to a temp dir, the script runs with
 * that dir as cwd, gets one JSON document on stdin `{hook, operation, request, vnfInstance,
 * grantRequest, grant, packageDir}` and may print one JSON document on stdout `{metadata?,
 * extensions?, vnfcMetadata?}`. Exit code 0 = success; anything else fails the step with the
 * script's stderr. Python scripts run with python3, others must be executable.
 *
 * Containment: a script runs in its own process group with a scrubbed environment (PATH, LANG,
 * TZ, HOME and TMPDIR = its temp dir, and `VNFM_HOOK` / `VNFM_OPERATION`: nothing of the VNFM's own
 * environment, where its secrets live); on timeout or stop the whole group is killed (children
 * included); each output stream keeps at most `mgmt.scriptOutputMaxBytes` (the tail). Hooks claimed
 * by a built-in driver (MgmtDriver.claims) are not run as scripts.
 *
 * A VNFM running as root runs scripts as `mgmt.scriptUser` (default `nobody`; its primary group,
 * no supplementary groups), owner of the script's temp dir: such a script cannot read the data
 * directory (0700), the key file (0600) or the VNFM's `/proc/<pid>/environ` (another user's). A
 * VNFM not running as root cannot switch users: its scripts run as itself (docs/security.md).
 *
 * Temp dirs are named `vnfm-hook-<pid>-<random>` (the pid of the VNFM that made them), so
 * {@link cleanupStaleHookDirs} can remove at start-up the ones a killed VNFM left behind, and only
 * those: the owner pid is dead, or it is this very pid but the dir is older than this process (a
 * restarted container reuses pids).
 */
import { spawn } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { terminalError, vnfmError } from '../errors.ts';
import { withoutAccessInfo } from '../model/sealed-params.ts';
import type { MgmtContext, MgmtDriver, MgmtResult } from './mgmt-driver.ts';

/** Prefix of hook temp dirs under the OS temp dir; followed by `<pid>-<random>`. */
export const HOOK_DIR_PREFIX = 'vnfm-hook-';
const HOOK_DIR = /^vnfm-hook-(\d+)-[A-Za-z0-9]{6}$/;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes hook temp dirs left by VNFM processes that are gone (call at start-up, before any hook
 * runs). Returns the removed paths. Dirs of live processes, and dirs not named by this module, are
 * left alone.
 */
export function cleanupStaleHookDirs(parent: string = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = HOOK_DIR.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    try {
      if (pid === process.pid) {
        // Ours by pid: stale only if it predates this process (pid reused after a restart).
        if (statSync(join(parent, name)).mtimeMs >= Date.now() - process.uptime() * 1000) continue;
      } else if (pidAlive(pid)) continue;
      rmSync(join(parent, name), { recursive: true, force: true });
      removed.push(join(parent, name));
    } catch {
      // not ours to remove after all (permissions): leave it
    }
  }
  return removed;
}

/** Default per-script timeout. */
export const DEFAULT_SCRIPT_TIMEOUT_MS = 30 * 60_000;

/** After the op's signal aborts, how long a hook script may take to exit on SIGTERM before SIGKILL. */
export const KILL_GRACE_MS = 5000;

/** The management driver that runs VNFD hook scripts. */
export class ScriptMgmtDriver implements MgmtDriver {
  readonly name = 'vnfd-script';
  readonly runsPackageScripts = true;
  /** Fixed limits (tests); otherwise each run reads `config.mgmt`. */
  constructor(private readonly limits: { timeoutMs?: number; killGraceMs?: number; outputMaxBytes?: number } = {}) {}

  applies(ctx: MgmtContext): boolean {
    return ctx.flavour.lcmHooks[ctx.hook] !== undefined;
  }

  async run(ctx: MgmtContext): Promise<MgmtResult | void> {
    const hook = ctx.flavour.lcmHooks[ctx.hook];
    if (!hook) return;
    const files = await ctx.files();
    if (!files.has(hook.file)) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${ctx.hook}: artifact ${hook.artifactName} (${hook.file}) is missing from the VNF package`);
    const dir = mkdtempSync(join(tmpdir(), `${HOOK_DIR_PREFIX}${process.pid}-`));
    try {
      for (const [p, data] of files) {
        const target = join(dir, p);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, data, { mode: p === hook.file ? 0o755 : 0o644 });
      }
      const runAs = scriptIdentity(ctx.config.mgmt?.scriptUser ?? null);
      if (runAs) chownTree(dir, runAs.uid, runAs.gid);
      const script = join(dir, hook.file);
      const [cmd, args] = hook.file.endsWith('.py') ? ['python3', [script]] : [script, []];
      // Only what the hook needs: no VIM credentials (a grant's accessInfo) reach a package script.
      const input = JSON.stringify({ hook: ctx.hook, operation: ctx.opOcc.operation, request: ctx.request, vnfInstance: ctx.instance, grantRequest: ctx.grantRequest, grant: ctx.grant ? withoutAccessInfo(ctx.grant) : ctx.grant, packageDir: dir });
      const m = ctx.config.mgmt;
      const env = scrubbedEnv(dir, { VNFM_HOOK: ctx.hook, VNFM_OPERATION: ctx.opOcc.operation });
      const { code, stdout, stderr } = await runProcess(cmd, args as string[], dir, input, {
        timeoutMs: this.limits.timeoutMs ?? m?.scriptTimeoutMs ?? DEFAULT_SCRIPT_TIMEOUT_MS,
        killGraceMs: this.limits.killGraceMs ?? m?.scriptKillGraceMs ?? KILL_GRACE_MS,
        outputMaxBytes: this.limits.outputMaxBytes ?? m?.scriptOutputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES,
        env,
        ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      if (code !== 0) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${ctx.hook} failed (exit ${code}): ${stderr.trim().slice(-2000) || 'no error output'}`);
      const text = stdout.trim();
      if (!text) return;
      try {
        return JSON.parse(text) as MgmtResult;
      } catch {
        ctx.log.warn({ hook: ctx.hook }, 'hook script printed non-JSON output; ignored');
        return;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** Default output kept per stream of a hook script. */
export const DEFAULT_OUTPUT_MAX_BYTES = 1024 * 1024;

/**
 * The environment of a hook script: only what a script needs to run, never the VNFM's own
 * variables (secret key, API tokens, credentials).
 */
export function scrubbedEnv(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: dir, TMPDIR: dir, LANG: process.env.LANG ?? 'C.UTF-8' };
  if (process.env.TZ) env.TZ = process.env.TZ;
  return { ...env, ...extra };
}

/**
 * The user and group a script runs as: `user`'s (from /etc/passwd) when the VNFM runs as root and
 * a user is configured; undefined (the VNFM's own) otherwise. An unknown user fails the hook.
 */
export function scriptIdentity(user: string | null): { uid: number; gid: number } | undefined {
  if (user === null || typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  let passwd = '';
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    // no passwd file: refused below
  }
  for (const line of passwd.split('\n')) {
    const f = line.split(':');
    if (f[0] === user && f.length >= 4) {
      const uid = Number(f[2]);
      const gid = Number(f[3]);
      if (Number.isInteger(uid) && Number.isInteger(gid)) {
        if (uid === 0) throw vnfmError('VNFM_ERR_MGMT_FAILED', `mgmt.scriptUser ${user} is root; hook scripts are not run as root`);
        return { uid, gid };
      }
    }
  }
  throw vnfmError('VNFM_ERR_MGMT_FAILED', `mgmt.scriptUser ${user} is not a local user; hook scripts are not run (create it, or set mgmt.scriptUser)`);
}

function chownTree(dir: string, uid: number, gid: number): void {
  chownSync(dir, uid, gid);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) chownTree(p, uid, gid);
    else chownSync(p, uid, gid);
  }
}

/** Keeps the last `max` bytes written. */
class Tail {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly max: number) {}
  push(b: Buffer): void {
    this.chunks.push(b);
    this.size += b.length;
    while (this.size > this.max && this.chunks.length > 0) {
      const first = this.chunks[0] as Buffer;
      const over = this.size - this.max;
      this.truncated = true;
      if (first.length <= over) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.size -= over;
      }
    }
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

interface RunLimits {
  /** Run as this user and group (the VNFM runs as root). */
  uid?: number;
  gid?: number;
  timeoutMs: number;
  killGraceMs: number;
  outputMaxBytes: number;
  env: Record<string, string>;
  signal?: AbortSignal;
}

/** Signals the script's whole process group (it is its leader: spawned detached). */
function killGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}

/**
 * Runs one hook script in its own process group. A timeout kills the group (SIGKILL). When the
 * op's `signal` aborts (lease lost, VNFM shutting down) the group gets SIGTERM, then SIGKILL after
 * `killGraceMs`, and the hook ends with `VNFM_ERR_LCM_INTERRUPTED` (the step is not known to be
 * safe to repeat: not resumed).
 */
function runProcess(cmd: string, args: string[], cwd: string, input: string, o: RunLimits): Promise<{ code: number; stdout: string; stderr: string }> {
  const { signal } = o;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(terminalError('VNFM_ERR_LCM_INTERRUPTED', 'hook script not started: the operation was stopped'));
      return;
    }
    const child = spawn(cmd, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'], env: o.env, detached: true, ...(o.uid !== undefined ? { uid: o.uid } : {}), ...(o.gid !== undefined ? { gid: o.gid } : {}) });
    const out = new Tail(o.outputMaxBytes);
    const err = new Tail(o.outputMaxBytes);
    let killTimer: NodeJS.Timeout | undefined;
    let aborted = false;
    let timedOut = false;
    const onAbort = (): void => {
      aborted = true;
      killGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), o.killGraceMs);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      signal?.removeEventListener('abort', onAbort);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid, 'SIGKILL');
    }, o.timeoutMs);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e) => {
      done();
      reject(vnfmError('VNFM_ERR_MGMT_FAILED', `cannot run hook script: ${e.message}`));
    });
    child.on('close', (code, sig) => {
      done();
      // Children the script left behind die with it.
      killGroup(child.pid, 'SIGKILL');
      let stderr = err.text();
      if (err.truncated) stderr = `(earlier output dropped)\n${stderr}`;
      if (timedOut) stderr += `\n(timed out after ${o.timeoutMs} ms; the script and its children were killed)`;
      if (aborted) reject(terminalError('VNFM_ERR_LCM_INTERRUPTED', `hook script stopped (${sig ?? `exit ${code}`}): the operation was stopped (${(signal?.reason as Error)?.message ?? 'aborted'})`));
      else resolve({ code: code ?? -1, stdout: out.text(), stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}
