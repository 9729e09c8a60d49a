/**
 * Runs the VNFD's own hook scripts (`interfaces.Vnflcm.<hook>.implementation` -> artifact file).
 * Protocol (ours, not Tacker's pickle): the package is extracted to a temp dir, the script runs with
 * that dir as cwd, gets one JSON document on stdin `{hook, operation, request, vnfInstance,
 * grantRequest, grant, packageDir}` and may print one JSON document on stdout `{metadata?,
 * extensions?, vnfcMetadata?}`. Exit code 0 = success; anything else fails the step with the
 * script's stderr. Python scripts run with python3, others must be executable. A timeout kills it.
 *
 * Temp dirs are named `vnfm-hook-<pid>-<random>` (the pid of the VNFM that made them), so
 * {@link cleanupStaleHookDirs} can remove at start-up the ones a killed VNFM left behind, and only
 * those: the owner pid is dead, or it is this very pid but the dir is older than this process (a
 * restarted container reuses pids).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { terminalError, vnfmError } from '../errors.ts';
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
  constructor(
    private readonly timeoutMs = DEFAULT_SCRIPT_TIMEOUT_MS,
    private readonly killGraceMs = KILL_GRACE_MS,
  ) {}

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
      const script = join(dir, hook.file);
      const [cmd, args] = hook.file.endsWith('.py') ? ['python3', [script]] : [script, []];
      const input = JSON.stringify({ hook: ctx.hook, operation: ctx.opOcc.operation, request: ctx.request, vnfInstance: ctx.instance, grantRequest: ctx.grantRequest, grant: ctx.grant, packageDir: dir });
      const { code, stdout, stderr } = await runProcess(cmd, args as string[], dir, input, this.timeoutMs, ctx.signal, this.killGraceMs);
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

/**
 * Runs one hook script. A timeout kills it (SIGKILL). When the op's `signal` aborts (lease lost,
 * VNFM shutting down) the script gets SIGTERM, then SIGKILL after `killGraceMs`, and the hook ends
 * with `VNFM_ERR_LCM_INTERRUPTED` (the step is not known to be safe to repeat: not resumed).
 */
function runProcess(
  cmd: string,
  args: string[],
  cwd: string,
  input: string,
  timeoutMs: number,
  signal?: AbortSignal,
  killGraceMs = KILL_GRACE_MS,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(terminalError('VNFM_ERR_LCM_INTERRUPTED', 'hook script not started: the operation was stopped'));
      return;
    }
    const child = spawn(cmd, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let killTimer: NodeJS.Timeout | undefined;
    let aborted = false;
    const onAbort = (): void => {
      aborted = true;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), killGraceMs);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      signal?.removeEventListener('abort', onAbort);
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      stderr += `\n(timed out after ${timeoutMs} ms)`;
    }, timeoutMs);
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', (e) => {
      done();
      reject(vnfmError('VNFM_ERR_MGMT_FAILED', `cannot run hook script: ${e.message}`));
    });
    child.on('close', (code, sig) => {
      done();
      if (aborted) reject(terminalError('VNFM_ERR_LCM_INTERRUPTED', `hook script stopped (${sig ?? `exit ${code}`}): the operation was stopped (${(signal?.reason as Error)?.message ?? 'aborted'})`));
      else resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}
