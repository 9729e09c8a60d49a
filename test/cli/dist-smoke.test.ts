/**
 * Smoke test of the built `vnfm` command (package.json "bin": dist/cli/main.js), built the way
 * `npm run build` builds it (tsconfig.build.json) into a throwaway folder of the repository:
 *
 * - the output is plain runnable JavaScript: a shebang on the bin, no `.ts` import left, and every
 *   package it imports at run time is a runtime dependency (an install without devDependencies
 *   has it);
 * - `vnfm --help` and `vnfm csar` work;
 * - `vnfm start --no-sim` on an embedded data directory serves /healthz (on the API port and, from
 *   its worker thread, on the liveness port), the v2 LCM API, onboards samples/vm-basic, and stops
 *   cleanly (exit code 0) on SIGTERM.
 *
 * Timeouts only guard against hangs: building and starting take a while on a loaded machine.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { freePort } from '../helpers/app.ts';
import { ROOT } from '../helpers/packages.ts';

const run = promisify(execFile);
/** Inside the repository (so that node_modules and package.json "type" apply as to dist/), git-ignored (.tmp/). */
const OUT = join(ROOT, '.tmp', `dist-smoke-${process.pid}`);
const BIN = join(OUT, 'cli', 'main.js');
const GUARD_MS = 240_000;

// biome-ignore lint/suspicious/noExplicitAny: API JSON
type Json = any;

function jsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...jsFiles(p));
    else if (name.endsWith('.js')) out.push(p);
  }
  return out;
}

/** Package name of a bare import specifier (`@scope/name/sub` -> `@scope/name`). */
function packageOf(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

before(async () => {
  assert.ok(readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n').includes('.tmp/'), '.tmp/ is git-ignored');
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', OUT], { cwd: ROOT, timeout: GUARD_MS, maxBuffer: 16 * 1024 * 1024 });
});
after(() => {
  rmSync(OUT, { recursive: true, force: true });
});

describe('the built vnfm command (dist)', { timeout: 600_000 }, () => {
  it('is runnable JavaScript whose run-time imports are all runtime dependencies', () => {
    assert.ok(existsSync(BIN), `${relative(ROOT, BIN)} built`);
    assert.equal(readFileSync(BIN, 'utf8').split('\n')[0], '#!/usr/bin/env node', 'the bin keeps its shebang');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    assert.equal(pkg.bin.vnfm, './dist/cli/main.js');
    const runtime = new Set(Object.keys(pkg.dependencies ?? {}));
    const builtins = new Set(builtinModules);
    const missing = new Map<string, string[]>();
    const files = jsFiles(OUT);
    assert.ok(files.length > 50, `${files.length} files`);
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      // Relative imports must have been rewritten to .js (rewriteRelativeImportExtensions).
      const tsImport = /(?:from\s+|import\s*\(\s*)['"](\.\.?\/[^'"]+\.ts)['"]/.exec(text);
      assert.equal(tsImport, null, `${relative(OUT, f)} still imports ${tsImport?.[1]}`);
      // Static and dynamic imports, require() and createRequire(...)('x') of packages.
      for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|require\s*\(\s*|\)\s*\(\s*)['"]([^'"./][^'"]*)['"]/g)) {
        const spec = m[1] as string;
        if (spec.startsWith('node:') || builtins.has(spec)) continue;
        const name = packageOf(spec);
        if (!runtime.has(name)) missing.set(name, [...new Set([...(missing.get(name) ?? []), relative(OUT, f)])]);
      }
    }
    assert.deepEqual(Object.fromEntries(missing), {}, 'packages used at run time but not in package.json "dependencies"');
  });

  it('answers --help and builds a CSAR like buildCsarFromDir', async () => {
    const help = await run(process.execPath, [BIN, '--help'], { cwd: ROOT, timeout: GUARD_MS });
    assert.match(help.stdout, /Usage: vnfm/);
    for (const cmd of ['start', 'csar', 'onboard']) assert.match(help.stdout, new RegExp(`\\n\\s+${cmd}\\b`));
    const dir = mkdtempSync(join(tmpdir(), 'vnfm-dist-csar-'));
    try {
      const out = join(dir, 'vm-basic.zip');
      await run(process.execPath, [BIN, 'csar', join(ROOT, 'samples/vm-basic'), out], { cwd: ROOT, timeout: GUARD_MS });
      assert.deepEqual(readFileSync(out), buildCsarFromDir(join(ROOT, 'samples/vm-basic')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('start --no-sim serves the API, onboards a package, and exits 0 on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vnfm-dist-data-'));
    const port = await freePort();
    const livenessPort = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let proc: ChildProcess | undefined;
    try {
      proc = spawn(process.execPath, [BIN, 'start', '--no-sim', '--data-dir', dataDir, '--port', String(port), '--log-level', 'info'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, VNFM_HEALTH_LIVENESS_PORT: String(livenessPort) } });
      let stdout = '';
      let stderr = '';
      proc.stdout?.on('data', (d) => {
        stdout += d;
      });
      proc.stderr?.on('data', (d) => {
        stderr += d;
      });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc?.once('exit', (code, signal) => r({ code, signal })));
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      void exited.then((e) => {
        exit = e;
      });
      // Positive sync point: the process logs "VNFM started" once it is fully up (signal handlers set).
      const end = Date.now() + GUARD_MS;
      while (!stdout.includes('"msg":"VNFM started"')) {
        assert.equal(exit, undefined, `the VNFM exited during start: ${stderr}${stdout}`);
        assert.ok(Date.now() < end, `the VNFM did not start: ${stderr}${stdout}`);
        await sleep(100);
      }

      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok' });
      const live = await fetch(`http://127.0.0.1:${livenessPort}/healthz`);
      assert.equal(live.status, 200);
      assert.equal(((await live.json()) as Json).status, 'ok');
      const list = await fetch(`${url}/vnflcm/v2/vnf_instances`, { headers: { Version: '2.0.0' } });
      assert.equal(list.status, 200);
      assert.deepEqual(await list.json(), []);

      const created = await fetch(`${url}/vnfpkgm/v1/vnf_packages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      assert.equal(created.status, 201);
      const pkgId = ((await created.json()) as Json).id as string;
      const up = await fetch(`${url}/vnfpkgm/v1/vnf_packages/${pkgId}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(buildCsarFromDir(join(ROOT, 'samples/vm-basic'))) });
      assert.equal(up.status, 202);
      let pkg: Json;
      for (;;) {
        pkg = await (await fetch(`${url}/vnfpkgm/v1/vnf_packages/${pkgId}`)).json();
        if (pkg.onboardingState !== 'CREATED' && pkg.onboardingState !== 'UPLOADING' && pkg.onboardingState !== 'PROCESSING') break;
        assert.ok(Date.now() < end + GUARD_MS, `package still ${pkg.onboardingState}`);
        await sleep(100);
      }
      assert.equal(pkg.onboardingState, 'ONBOARDED', JSON.stringify(pkg.onboardingFailureDetails));
      assert.equal(pkg.vnfdId, '5a0c8a32-3b1e-4f2a-9d63-7c1f2e4b8a01');
      const vnfd = await fetch(`${url}/vnfpkgm/v1/vnf_packages/${pkgId}/vnfd`, { headers: { accept: 'application/zip' } });
      assert.equal(vnfd.status, 200);
      assert.equal(vnfd.headers.get('content-type'), 'application/zip');
      assert.ok((await vnfd.arrayBuffer()).byteLength > 100, 'the VNFD zip (built with fflate at run time)');

      proc.kill('SIGTERM');
      const e = await exited;
      proc = undefined;
      assert.deepEqual(e, { code: 0, signal: null }, `exit after SIGTERM; stderr: ${stderr}`);
      assert.match(stdout, /"signal":"SIGTERM".*"msg":"stopping/);
    } finally {
      proc?.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
