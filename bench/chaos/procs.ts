/**
 * Process and HTTP plumbing of the chaos harness: child processes with their output in log files,
 * a throwaway PostgreSQL cluster, a no-keep-alive HTTP client that tells "never sent" (connection
 * refused: safe to send elsewhere) from "fate unknown" (the peer died mid-request), and a seeded
 * random source.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, createWriteStream, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON
export type Json = Record<string, any>;

/** mulberry32: a small seeded PRNG, so a run's schedule of kills and faults is reproducible. */
export function rng(seed: number): { next(): number; int(lo: number, hi: number): number; pick<T>(xs: readonly T[]): T; weighted<T>(xs: readonly [T, number][]): T } {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1));
  return {
    next,
    int,
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T,
    weighted: <T>(xs: readonly [T, number][]): T => {
      const total = xs.reduce((s, [, w]) => s + w, 0);
      let r = next() * total;
      for (const [v, w] of xs) {
        r -= w;
        if (r < 0) return v;
      }
      return (xs[xs.length - 1] as [T, number])[0];
    },
  };
}

/** A free TCP port on 127.0.0.1 (the kernel's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/**
 * Listens `server` on a free port outside the kernel's ephemeral range (see {@link freeServerPort}),
 * trying another port when one was taken between the probe and the bind (other test processes
 * share the machine). Returns the port.
 */
export async function listenOnServerPort(server: import('node:net').Server): Promise<number> {
  for (let i = 0; ; i++) {
    const port = await freeServerPort();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      return port;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE' || i >= 20) throw e;
    }
  }
}

/**
 * A free port outside the kernel's ephemeral range (32768-60999 on Linux), for a server that is
 * killed and started again: in the ephemeral range, one of the many short client connections of
 * the run may hold the port as its local end meanwhile (EADDRINUSE at the restart).
 */
export async function freeServerPort(lo = 20_000, hi = 32_000): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = lo + Math.floor(Math.random() * (hi - lo));
    const ok = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (ok) return port;
  }
  throw new Error(`no free port in ${lo}-${hi}`);
}

/** One HTTP answer. */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: Json;
}

/** A request that failed before anything was sent (connection refused): safe to send elsewhere. */
export class NotSent extends Error {}
/** A request whose fate is unknown (the peer went away after the request may have been received). */
export class Unknown extends Error {}

/** One HTTP request without keep-alive (a killed peer never leaves a stale pooled socket). */
export function http(url: string, method: string, opts: { headers?: Record<string, string>; body?: string | Buffer; timeoutMs?: number } = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const headers: Record<string, string | number> = { connection: 'close', ...(opts.headers ?? {}) };
    if (opts.body !== undefined) headers['content-length'] = Buffer.byteLength(opts.body);
    let connected = false;
    const req = httpRequest({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (e) => reject(new Unknown(`${method} ${url}: ${e.message}`)));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Json = {};
        try {
          body = text ? (JSON.parse(text) as Json) : {};
        } catch {
          body = {};
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
    });
    req.on('socket', (s) => s.on('connect', () => (connected = true)));
    req.setTimeout(opts.timeoutMs ?? 60_000, () => req.destroy(new Error('timeout')));
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (!connected && (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET' && !connected)) reject(new NotSent(`${method} ${url}: ${e.code}`));
      else reject(new Unknown(`${method} ${url}: ${e.code ?? e.message}`));
    });
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/** A child process with its output in a log file and the lines kept in memory (bounded). */
export interface Child {
  name: string;
  proc: ChildProcess;
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
}

/** Starts `node --import tsx <script> ...args`, logging to `<logDir>/<name>.log`. */
export function startChild(name: string, script: string, args: string[], opts: { cwd: string; logDir: string; env?: Record<string, string> }): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(opts.env ?? {}) } });
  const log = createWriteStream(join(opts.logDir, `${name}.log`), { flags: 'a' });
  const lines: string[] = [];
  let buf = '';
  const onData = (d: Buffer): void => {
    log.write(d);
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts);
    if (lines.length > 5000) lines.splice(0, lines.length - 5000);
  };
  proc.stdout?.on('data', onData);
  proc.stderr?.on('data', onData);
  let gone = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.once('exit', (code, signal) => {
      gone = true;
      log.end(`\n[chaos] ${name} exited code=${code} signal=${signal}\n`);
      r({ code, signal });
    }),
  );
  return { name, proc, lines, exited, alive: () => !gone };
}

/** Thrown from the function {@link until} polls to stop waiting at once. */
export class GiveUp extends Error {}

/** Waits until `fn` returns a value, polling every `everyMs`, at most `maxMs` (then throws naming `what`); a {@link GiveUp} ends the wait at once. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, maxMs: number, everyMs = 100): Promise<T> {
  const end = Date.now() + maxMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      if (e instanceof GiveUp) throw e;
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${maxMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(everyMs);
  }
}

/**
 * A throwaway PostgreSQL cluster in a fresh directory of its own under the system temp directory
 * (the `postgres` user must be able to reach it), run as the `postgres` system user when we are
 * root (as scripts/test-all.sh does); `stop()` stops it and removes the directory.
 */
export async function startThrowawayPg(): Promise<{ url: string; dir: string; stop(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'vnfm-chaos-pg-'));
  const bin = ['/usr/lib/postgresql/15/bin', ...(existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').map((v) => `/usr/lib/postgresql/${v}/bin`) : [])].find((b) => existsSync(join(b, 'initdb')));
  if (!bin) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql/*/bin: give --pg-url or VNFM_TEST_PG_URL');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim()), Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim()));
  const run = (cmd: string, args: string[]): void => {
    const r = asRoot ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' }) : spawnSync(join(bin, cmd), args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
  };
  const port = await freePort();
  run('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust']);
  run('pg_ctl', ['-D', join(dir, 'data'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off`, '-l', join(dir, 'log'), '-w', 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    stop: () => {
      try {
        run('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', 'stop']);
      } catch {
        /* already down */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
