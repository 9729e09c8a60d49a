/**
 * Runs the VNFD's own hook scripts (`interfaces.Vnflcm.<hook>.implementation` -> artifact file).
 * Protocol (ours, not Tacker's pickle): the package is extracted to a temp dir, the script runs with
 * that dir as cwd, gets one JSON document on stdin `{hook, operation, request, vnfInstance,
 * grantRequest, grant, packageDir}` and may print one JSON document on stdout `{metadata?,
 * extensions?, vnfcMetadata?}`. Exit code 0 = success; anything else fails the step with the
 * script's stderr. Python scripts run with python3, others must be executable. A timeout kills it.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { vnfmError } from '../errors.ts';
import type { MgmtContext, MgmtDriver, MgmtResult } from './mgmt-driver.ts';

/** Default per-script timeout. */
export const DEFAULT_SCRIPT_TIMEOUT_MS = 30 * 60_000;

/** The management driver that runs VNFD hook scripts. */
export class ScriptMgmtDriver implements MgmtDriver {
  readonly name = 'vnfd-script';
  constructor(private readonly timeoutMs = DEFAULT_SCRIPT_TIMEOUT_MS) {}

  applies(ctx: MgmtContext): boolean {
    return ctx.flavour.lcmHooks[ctx.hook] !== undefined;
  }

  async run(ctx: MgmtContext): Promise<MgmtResult | void> {
    const hook = ctx.flavour.lcmHooks[ctx.hook];
    if (!hook) return;
    const files = await ctx.files();
    if (!files.has(hook.file)) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${ctx.hook}: artifact ${hook.artifactName} (${hook.file}) is missing from the VNF package`);
    const dir = mkdtempSync(join(tmpdir(), 'vnfm-hook-'));
    try {
      for (const [p, data] of files) {
        const target = join(dir, p);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, data, { mode: p === hook.file ? 0o755 : 0o644 });
      }
      const script = join(dir, hook.file);
      const [cmd, args] = hook.file.endsWith('.py') ? ['python3', [script]] : [script, []];
      const input = JSON.stringify({ hook: ctx.hook, operation: ctx.opOcc.operation, request: ctx.request, vnfInstance: ctx.instance, grantRequest: ctx.grantRequest, grant: ctx.grant, packageDir: dir });
      const { code, stdout, stderr } = await runProcess(cmd, args as string[], dir, input, this.timeoutMs);
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

function runProcess(cmd: string, args: string[], cwd: string, input: string, timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
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
      clearTimeout(timer);
      reject(vnfmError('VNFM_ERR_MGMT_FAILED', `cannot run hook script: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}
