/**
 * Helpers shared by the simulated-Kubernetes tests: plain-HTTP requests to the simulator (API and
 * `/_sim` control endpoints), polling, and a kubectl runner with an isolated HOME/kubeconfig.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesSim } from '../../../src/sim/kubernetes/index.ts';

/** Parsed HTTP response. */
export interface SimResponse {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
  body: any;
  text: string;
}

/** Sends a request to the simulator over plain HTTP with the bearer token (unless `auth: false`). */
export async function simFetch(
  sim: KubernetesSim,
  method: string,
  path: string,
  body?: unknown,
  opts: { auth?: boolean; contentType?: string; accept?: string } = {},
): Promise<SimResponse> {
  const headers: Record<string, string> = {};
  if (opts.auth !== false) headers.authorization = `Bearer ${sim.token}`;
  if (body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
  if (opts.accept) headers.accept = opts.accept;
  const res = await fetch(`${sim.httpUrl}${path}`, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** Polls `fn` until it returns a truthy value or the timeout expires (then throws with `what`). */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 5000, intervalMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Result of a kubectl invocation. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A kubectl bound to a simulator through a temporary kubeconfig and HOME (isolated discovery cache). */
export function kubectlFor(sim: KubernetesSim): { run: (args: string[], stdin?: string) => Promise<KubectlResult>; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ksim-kubectl-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  const run = (args: string[], stdin?: string) =>
    new Promise<KubectlResult>((resolve) => {
      const child = execFile('kubectl', ['--kubeconfig', kubeconfig, ...args], { env: { ...process.env, HOME: dir, KUBECONFIG: kubeconfig }, timeout: 30_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as NodeJS.ErrnoException & { code?: unknown }).code === 'number' ? ((err as unknown as { code: number }).code) : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      });
      if (stdin !== undefined) child.stdin?.end(stdin);
    });
  return { run, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
