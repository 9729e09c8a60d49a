/**
 * A throw-away OpenSSH server for tests (stage `lab`: root, openssh-server).
 *
 * `/usr/sbin/sshd -D -e -f <cfg>` on 127.0.0.1:<free port>, with a fresh ed25519 host key in a temp
 * dir (`StrictModes no`, `UsePAM no`, password and public key login, internal SFTP), for one local
 * test user (default `hvsshtest`, created with `useradd -m` when absent) whose password is set to a
 * fresh random one (`chpasswd`, via stdin) and whose ed25519 keys (one plain, one encrypted with a
 * passphrase) are authorized through the server's own `AuthorizedKeysFile`. A sudoers drop-in lets
 * the user sudo WITH its password (no credential caching, so every sudo asks; `setSudo('nopasswd')`
 * switches to NOPASSWD). `stop()` kills the
 * server and the connection processes it started, removes the drop-in and the temp dir; the user
 * stays.
 *
 * The password of a user is set once per process: test files running at the same time must use
 * different users (`user` option).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SSHD = '/usr/sbin/sshd';
const SBIN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Credentials of the test user. */
export interface SshdUser {
  user: string;
  password: string;
  /** Unencrypted OpenSSH private key. */
  privateKey: string;
  /** Private key encrypted with `keyPassphrase`. */
  encryptedKey: string;
  keyPassphrase: string;
}

/** A test sshd. */
export interface TestSshd extends SshdUser {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** Fingerprint of the current host key, as `ssh-keygen -lf` prints it. */
  readonly hostKeyFingerprint: string;
  /** Pid of the listening server (undefined while stopped). */
  readonly pid: number | undefined;
  /** Starts the server (when created with `createSshd`); resolves once it listens. */
  start(): Promise<void>;
  /** Stops the server and cleans up (drop-in, temp dir, connection processes). */
  stop(): Promise<void>;
  /** Stops and starts the server on the same port; with `newHostKey`, with a new host key. Resolves with the fingerprint. */
  restart(o?: { newHostKey?: boolean }): Promise<string>;
  /** Pids of the server processes handling the open connections (children of the listener). */
  connectionPids(): number[];
  /** The server's recent log (its stderr). */
  log(): string;
  /** Rewrites the sudoers drop-in: sudo asks for the user's password (the default), or not (`NOPASSWD`). */
  setSudo(mode: 'password' | 'nopasswd'): void;
}

function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8', env: { PATH: SBIN_PATH, HOME: '/root' } });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${(r.stderr ?? '').trim()}`);
  return r.stdout ?? '';
}

/** A TCP port nothing listens on right now (on 127.0.0.1). */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const a = s.address();
        s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
      });
    });
    if (port && (port < 9890 || port > 9899)) return port;
  }
}

const users = new Map<string, SshdUser>();

function keyPair(dir: string, name: string, passphrase: string): { privateKey: string; publicKey: string } {
  const f = join(dir, name);
  run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', name, '-f', f]);
  return { privateKey: readFileSync(f, 'utf8'), publicKey: readFileSync(`${f}.pub`, 'utf8').trim() };
}

/** Creates (if absent) the local user, sets a fresh random password, makes its keys; once per process and user. */
function ensureUser(user: string): SshdUser & { publicKeys: string[] } {
  const known = users.get(user);
  const dir = mkdtempSync(join(tmpdir(), 'hv-sshkeys-'));
  try {
    if (!known) {
      if (spawnSync('id', [user], { stdio: 'ignore' }).status !== 0) run('useradd', ['-m', '-s', '/bin/sh', user]);
      const password = `pw-${randomBytes(12).toString('base64url')}`;
      run('chpasswd', [], `${user}:${password}\n`);
      const plain = keyPair(dir, 'id_plain', '');
      const keyPassphrase = `pp-${randomBytes(9).toString('base64url')}`;
      const enc = keyPair(dir, 'id_enc', keyPassphrase);
      const u = { user, password, privateKey: plain.privateKey, encryptedKey: enc.privateKey, keyPassphrase, publicKeys: [plain.publicKey, enc.publicKey] };
      users.set(user, u);
      return u;
    }
    return known as SshdUser & { publicKeys: string[] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function fingerprintOfFile(pub: string): string {
  // "256 SHA256:xxxx comment (ED25519)"
  const fp = run('ssh-keygen', ['-l', '-E', 'sha256', '-f', pub]).split(' ')[1];
  if (!fp?.startsWith('SHA256:')) throw new Error(`unexpected ssh-keygen -lf output for ${pub}`);
  return fp;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function childPids(pid: number): number[] {
  const r = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' });
  return (r.stdout ?? '')
    .split('\n')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
}

function isSshd(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sshd');
  } catch {
    return false;
  }
}

/** Prepares a server (config, keys, user, sudoers drop-in) without starting it. */
export async function createSshd(o: { user?: string } = {}): Promise<TestSshd> {
  const u = ensureUser(o.user ?? 'hvsshtest');
  if (!existsSync('/run/sshd')) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const dir = mkdtempSync(join(tmpdir(), 'hv-sshd-'));
  chmodSync(dir, 0o755); // the user's session reads the authorized keys file from here
  const port = await freePort();
  const hostKey = join(dir, 'host_ed25519');
  const newHostKey = (): string => {
    rmSync(hostKey, { force: true });
    rmSync(`${hostKey}.pub`, { force: true });
    run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'hv-test-host', '-f', hostKey]);
    return fingerprintOfFile(`${hostKey}.pub`);
  };
  let fingerprint = newHostKey();
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, `${u.publicKeys.join('\n')}\n`, { mode: 0o644 });
  const cfg = join(dir, 'sshd_config');
  writeFileSync(
    cfg,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'StrictModes no',
      'UsePAM no',
      'PasswordAuthentication yes',
      'PubkeyAuthentication yes',
      'KbdInteractiveAuthentication no',
      `AuthorizedKeysFile ${authorized}`,
      `AllowUsers ${u.user}`,
      'PermitRootLogin no',
      'Subsystem sftp internal-sftp',
      'MaxStartups 50',
      `LogLevel ${process.env.HV_SSHD_LOGLEVEL ?? 'VERBOSE'}`,
      '',
    ].join('\n'),
  );
  run(SSHD, ['-t', '-f', cfg]);
  const sudoers = `/etc/sudoers.d/hvtest-${u.user}-${randomBytes(4).toString('hex')}`;
  const setSudo = (mode: 'password' | 'nopasswd'): void => {
    const tmp = join(dir, 'sudoers');
    writeFileSync(tmp, `Defaults:${u.user} lecture=never, timestamp_timeout=0\n${u.user} ALL=(ALL:ALL) ${mode === 'nopasswd' ? 'NOPASSWD: ' : ''}ALL\n`, { mode: 0o440 });
    run('visudo', ['-c', '-q', '-f', tmp]);
    writeFileSync(`${sudoers}.new`, readFileSync(tmp), { mode: 0o440 }); // sudo ignores names with a dot
    renameSync(`${sudoers}.new`, sudoers);
    rmSync(tmp);
  };
  setSudo('password');
  const onExit = (): void => rmSync(sudoers, { force: true });
  process.once('exit', onExit);

  let child: ChildProcess | undefined;
  let log = '';
  const leftovers = new Set<number>();

  const start = async (): Promise<void> => {
    if (child) return;
    log = '';
    const c = spawn(SSHD, ['-D', '-e', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    child = c;
    await new Promise<void>((resolve, reject) => {
      c.stderr?.on('data', (d: Buffer): void => {
        log = (log + d.toString('utf8')).slice(-50_000);
        if (log.includes(`Server listening on 127.0.0.1 port ${port}`)) resolve();
      });
      c.once('error', reject);
      c.once('exit', (code, sig) => {
        if (child === c) child = undefined;
        reject(new Error(`sshd exited (${sig ?? code}) before listening: ${log.trim()}`));
      });
    });
  };

  /** Stops the listener; open connections' processes are remembered for stop(). */
  const halt = async (): Promise<void> => {
    const c = child;
    if (!c || c.pid === undefined) return;
    for (const p of childPids(c.pid)) leftovers.add(p);
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGTERM');
    await exited;
    child = undefined;
  };

  const sshd: TestSshd = {
    host: '127.0.0.1',
    port,
    user: u.user,
    password: u.password,
    privateKey: u.privateKey,
    encryptedKey: u.encryptedKey,
    keyPassphrase: u.keyPassphrase,
    get hostKeyFingerprint() {
      return fingerprint;
    },
    get pid() {
      return child?.pid;
    },
    start,
    async stop() {
      await halt();
      for (const p of leftovers) if (alive(p) && isSshd(p)) process.kill(p, 'SIGKILL');
      leftovers.clear();
      rmSync(sudoers, { force: true });
      process.removeListener('exit', onExit);
      rmSync(dir, { recursive: true, force: true });
    },
    async restart(r = {}) {
      await halt();
      if (r.newHostKey) fingerprint = newHostKey();
      await start();
      return fingerprint;
    },
    connectionPids() {
      return child?.pid === undefined ? [] : childPids(child.pid);
    },
    log() {
      return log;
    },
    setSudo,
  };
  return sshd;
}

/** Prepares and starts a server. */
export async function startSshd(o: { user?: string } = {}): Promise<TestSshd> {
  const s = await createSshd(o);
  try {
    await s.start();
  } catch (e) {
    await s.stop();
    throw e;
  }
  return s;
}
