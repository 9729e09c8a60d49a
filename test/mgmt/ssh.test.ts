/**
 * The SSH executor (src/mgmt/ssh/) against a real, throw-away OpenSSH server on 127.0.0.1
 * (test/helpers/sshd.ts; stage `lab`): password and key login, exit codes, output capture and
 * streaming, the output cap, stdin, timeouts and aborts killing the remote command (checked with
 * `pgrep` on this machine, which is the server), sudo with the password on stdin (and never in the
 * process list), redaction, SFTP upload/download (plain and sudo), host key trust on first use and
 * pinning, connection retries, authentication failures and the connection pool.
 *
 * Redaction and fingerprint helpers are checked without a server. Positions are taken from
 * observed state (a process showing up in `pgrep`, the `onAttempt` hook), never from sleeps.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { isVnfmError, type VnfmError } from '../../src/errors.ts';
import { fingerprintOf, redact, Redactor } from '../../src/mgmt/ssh/redact.ts';
import { connectSsh, type ConnectOptions, type SshSession, type SshTarget, SshPool } from '../../src/mgmt/ssh/ssh-executor.ts';
import { createSshd, freePort, startSshd, type TestSshd } from '../helpers/sshd.ts';
import { stage } from '../helpers/stages.ts';
import { guard, until } from '../helpers/wait.ts';

const lab = await stage('lab');

/** Generous guard for waits (only turns a hang into a failure). */
const GUARD_MS = 30_000;

/** Pids of processes whose whole command line is `cmdline`. */
function pgrep(cmdline: string): number[] {
  const r = spawnSync('pgrep', ['-f', '-x', cmdline], { encoding: 'utf8' });
  return (r.stdout ?? '')
    .split('\n')
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0);
}

/** A `sleep` command line no other process has. */
function uniqueSleep(): string {
  return `sleep ${randomInt(3000, 9000)}.${randomInt(100, 999)}`;
}

async function rejection(p: Promise<unknown>): Promise<VnfmError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isVnfmError(e), `expected a VnfmError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a rejection');
}

describe('redact and fingerprintOf', () => {
  it('replaces every occurrence of each secret, longest first, ignoring short ones', () => {
    assert.equal(redact('a hunter2x b hunter2x', ['hunter2x']), 'a *** b ***');
    assert.equal(redact('secret-long and secret', ['secret', 'secret-long']), '*** and ***');
    assert.equal(redact('abc a.c? (x)', ['abc', '', 'a.c?', '(x)']), 'abc *** (x)');
  });

  it('masks fragments of secrets at the edges of a cut text', () => {
    const r = new Redactor(['password123']);
    assert.equal(r.redactCut('rd123 and more', true, false), '*** and more');
    assert.equal(r.redactCut('some text passw', false, true), 'some text ***');
    assert.equal(r.redactCut('rd123 and passw', false, false), 'rd123 and passw');
  });

  it('computes the SHA256 fingerprint of a key blob as ssh-keygen prints it', () => {
    const blob = randomBytes(51);
    assert.equal(fingerprintOf(blob), `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`);
    assert.ok(!fingerprintOf(blob).endsWith('='));
  });
});

describe('SSH executor on a real sshd', { skip: lab.skip }, () => {
  let sshd: TestSshd;
  const open: SshSession[] = [];
  const cleanups: (() => void | Promise<void>)[] = [];

  const pw = (): SshTarget => ({ host: sshd.host, port: sshd.port, username: sshd.user, password: sshd.password });
  const key = (): SshTarget => ({ host: sshd.host, port: sshd.port, username: sshd.user, privateKey: sshd.privateKey });
  async function connect(t: SshTarget, o?: ConnectOptions): Promise<SshSession> {
    const s = await connectSsh(t, o);
    open.push(s);
    return s;
  }
  /** A fresh directory in the test user's home, removed after the test. */
  function userDir(): string {
    const dir = `/home/${sshd.user}/t-${randomBytes(4).toString('hex')}`;
    mkdirSync(dir, { mode: 0o755 });
    const uid = Number(spawnSync('id', ['-u', sshd.user], { encoding: 'utf8' }).stdout.trim());
    spawnSync('chown', [`${uid}:${uid}`, dir]);
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  before(async () => {
    sshd = await startSshd();
  });
  afterEach(async () => {
    for (const s of open.splice(0)) s.close();
    for (const c of cleanups.splice(0)) await c();
  });
  after(async () => {
    await sshd?.stop();
  });

  it('logs in with a password and learns the host key fingerprint ssh-keygen shows', async () => {
    const learned: string[] = [];
    const s = await connect(pw(), { hostKey: { learn: (fp) => void learned.push(fp) } });
    assert.deepEqual(learned, [sshd.hostKeyFingerprint]);
    assert.equal(s.hostKeyFingerprint, sshd.hostKeyFingerprint);
    assert.equal(s.host, '127.0.0.1');
    const r = await s.exec('id -un');
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `${sshd.user}\n`);
  });

  it('logs in with a private key, and with an encrypted key and its passphrase', async () => {
    const s = await connect(key());
    assert.equal((await s.exec('id -un')).stdout, `${sshd.user}\n`);
    const e = await connect({ ...key(), privateKey: sshd.encryptedKey, passphrase: sshd.keyPassphrase });
    assert.equal((await e.exec('echo ok')).stdout, 'ok\n');
  });

  it('refuses a wrong key passphrase as an authentication error that names no secret', async () => {
    const err = await rejection(connectSsh({ ...key(), privateKey: sshd.encryptedKey, passphrase: 'wrong-passphrase' }));
    assert.equal(err.code, 'VNFM_ERR_SSH_AUTH');
    assert.equal(err.retryable, false);
    assert.ok(!err.message.includes('wrong-passphrase'), err.message);
    assert.ok(err.message.includes(sshd.user), err.message);
  });

  it('reports exit codes and signals; run() fails non-zero exits with the last 20 lines of stderr', async () => {
    const s = await connect(pw());
    assert.equal((await s.exec('true')).code, 0);
    assert.equal((await s.exec('exit 7')).code, 7);
    const killed = await s.exec('kill -TERM $$');
    assert.equal(killed.code, null);
    assert.equal(killed.signal, 'SIGTERM');
    assert.equal((await s.run('echo fine')).stdout, 'fine\n');
    const err = await rejection(s.run('for i in $(seq 1 30); do echo line$i >&2; done; echo out; exit 3', { label: 'thirty lines' }));
    assert.equal(err.code, 'VNFM_ERR_MGMT_COMMAND');
    assert.match(err.message, /^127\.0\.0\.1: "thirty lines" failed \(exit 3\)/);
    assert.ok(err.message.includes('line11\n') && err.message.endsWith('line30'), err.message);
    assert.ok(!err.message.includes('line10\n') && !err.message.includes('out'), err.message);
    const err2 = await rejection(s.run('echo only-stdout; exit 4'));
    assert.ok(err2.message.includes('"echo only-stdout; exit 4" failed (exit 4)') && err2.message.includes('only-stdout'), err2.message);
    const long = `echo ${'x'.repeat(100)}; exit 1`;
    const err3 = await rejection(s.run(long));
    assert.ok(err3.message.includes(`"${long.slice(0, 80)}"`), err3.message);
  });

  it('captures stdout and stderr and streams complete lines per stream', async () => {
    const s = await connect(pw());
    const lines: [string, string][] = [];
    const r = await s.exec("printf 'a\\nb\\r\\n'; printf 'e1\\n' >&2; printf 'c\\n'; printf 'e2' >&2; printf 'partial'", { onOutput: (l, st) => lines.push([st, l]) });
    assert.equal(r.stdout, 'a\nb\r\nc\npartial');
    assert.equal(r.stderr, 'e1\ne2');
    assert.equal(r.truncated, false);
    assert.ok(r.durationMs >= 0);
    assert.deepEqual(
      lines.filter(([st]) => st === 'stdout').map(([, l]) => l),
      ['a', 'b', 'c', 'partial'],
    );
    assert.deepEqual(
      lines.filter(([st]) => st === 'stderr').map(([, l]) => l),
      ['e1', 'e2'],
    );
  });

  it('caps each stream at maxOutputBytes, keeping the tail', async () => {
    const s = await connect(pw());
    const r = await s.exec('seq 1 200000; echo small >&2', { maxOutputBytes: 1000 });
    assert.equal(r.code, 0);
    assert.equal(r.truncated, true);
    assert.ok(Buffer.byteLength(r.stdout) <= 1000, `${Buffer.byteLength(r.stdout)} bytes kept`);
    assert.ok(Buffer.byteLength(r.stdout) > 900);
    assert.ok(r.stdout.endsWith('199999\n200000\n'));
    assert.ok(!r.stdout.startsWith('1\n2\n'));
    assert.equal(r.stderr, 'small\n');
    const whole = await s.exec('seq 1 1000');
    assert.equal(whole.truncated, false);
    assert.ok(whole.stdout.startsWith('1\n2\n'));
  });

  it('writes stdin and closes it', async () => {
    const s = await connect(pw());
    assert.equal((await s.exec('cat', { stdin: 'hello\nworld' })).stdout, 'hello\nworld');
    const bin = randomBytes(200_000);
    const r = await s.exec('sha256sum', { stdin: bin });
    assert.equal(r.stdout.split(' ')[0], createHash('sha256').update(bin).digest('hex'));
    // without stdin the command sees end of input at once (does not hang)
    assert.equal((await s.exec('cat; echo done')).stdout, 'done\n');
  });

  it('kills the remote command when it times out', async () => {
    const s = await connect(pw());
    const cmd = uniqueSleep();
    const p = s.exec(cmd, { timeoutMs: 3000 });
    p.catch(() => undefined);
    await until(`${cmd} running`, () => pgrep(cmd).length > 0, GUARD_MS, 20);
    const err = await rejection(p);
    assert.equal(err.code, 'VNFM_ERR_MGMT_COMMAND');
    assert.match(err.message, new RegExp(`"${cmd}" timed out after 3000 ms and was killed`));
    await until(`${cmd} gone`, () => pgrep(cmd).length === 0, GUARD_MS);
    // the session is still usable
    assert.equal((await s.exec('echo alive')).stdout, 'alive\n');
  });

  it('kills a timed-out sudo command, root processes included', async () => {
    const s = await connect(pw());
    const cmd = uniqueSleep();
    const p = s.exec(`${cmd}; echo never`, { timeoutMs: 4000, sudo: true });
    p.catch(() => undefined);
    await until(`${cmd} running as root`, () => pgrep(cmd).length > 0, GUARD_MS, 20);
    const pid = pgrep(cmd)[0] as number;
    assert.equal(statSync(`/proc/${pid}`).uid, 0);
    const err = await rejection(p);
    assert.equal(err.code, 'VNFM_ERR_MGMT_COMMAND');
    await until(`${cmd} gone`, () => pgrep(cmd).length === 0, GUARD_MS);
  });

  it('kills the remote command when the signal aborts', async () => {
    const s = await connect(pw());
    const cmd = uniqueSleep();
    const ac = new AbortController();
    const p = s.exec(cmd, { signal: ac.signal });
    p.catch(() => undefined);
    await until(`${cmd} running`, () => pgrep(cmd).length > 0, GUARD_MS, 20);
    ac.abort(new Error('lease lost'));
    const err = await rejection(p);
    assert.equal(err.code, 'VNFM_ERR_LCM_INTERRUPTED');
    assert.equal(err.retryable, false);
    assert.ok(err.message.includes('lease lost'), err.message);
    await until(`${cmd} gone`, () => pgrep(cmd).length === 0, GUARD_MS);
    await rejection(s.exec('true', { signal: ac.signal })).then((e) => assert.equal(e.code, 'VNFM_ERR_LCM_INTERRUPTED'));
  });

  it('closes the session and kills its commands when the connection signal aborts', async () => {
    const ac = new AbortController();
    const s = await connect(pw(), { signal: ac.signal });
    const cmd = uniqueSleep();
    const p = s.exec(cmd);
    p.catch(() => undefined);
    await until(`${cmd} running`, () => pgrep(cmd).length > 0, GUARD_MS, 20);
    ac.abort(new Error('shutting down'));
    const err = await rejection(p);
    assert.equal(err.code, 'VNFM_ERR_LCM_INTERRUPTED');
    assert.ok(s.closed);
    await until(`${cmd} gone`, () => pgrep(cmd).length === 0, GUARD_MS);
    assert.equal((await rejection(s.exec('true'))).code, 'VNFM_ERR_LCM_INTERRUPTED');
  });

  it('runs sudo with the password on stdin, never in the process list', async () => {
    const s = await connect(pw());
    const id = await s.exec('id -u', { sudo: true });
    assert.equal(id.code, 0, id.stderr);
    assert.equal(id.stdout, '0\n');
    // the password is consumed by sudo: the command's stdin starts after it
    assert.equal((await s.exec('cat', { sudo: true, stdin: 'payload\n' })).stdout, 'payload\n');
    const cmd = uniqueSleep();
    const ac = new AbortController();
    const p = s.exec(cmd, { sudo: true, signal: ac.signal });
    p.catch(() => undefined);
    await until(`${cmd} running as root`, () => pgrep(cmd).length > 0, GUARD_MS, 20);
    const ps = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).stdout;
    assert.ok(ps.includes(`sudo -S -p  -- sh -c`), 'the sudo process is in the snapshot');
    assert.ok(ps.includes(cmd));
    assert.ok(!ps.includes(sshd.password), 'the password is not in the process list');
    ac.abort();
    await rejection(p);
    await until(`${cmd} gone`, () => pgrep(cmd).length === 0, GUARD_MS);
  });

  it('does not feed the password to a sudo that does not ask for it (NOPASSWD)', async () => {
    sshd.setSudo('nopasswd');
    cleanups.push(() => sshd.setSudo('password'));
    const s = await connect(pw());
    const r = await s.exec('cat; id -u', { sudo: true, stdin: 'payload\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'payload\n0\n');
    const cmd = uniqueSleep();
    const ac = new AbortController();
    const p = s.exec(cmd, { sudo: true, signal: ac.signal });
    p.catch(() => undefined);
    await until(`${cmd} running as root`, () => pgrep(cmd).length > 0, GUARD_MS, 20);
    assert.ok(spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).stdout.includes('sudo -n -- sh -c'), 'sudo -n is used');
    ac.abort();
    await rejection(p);
    await until(`${cmd} gone`, () => pgrep(cmd).length === 0, GUARD_MS);
  });

  it('uses sudo -n with key authentication (no password to give)', async () => {
    const s = await connect(key());
    const r = await s.exec('id -u', { sudo: true, timeoutMs: 20_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /password is required/);
  });

  it('redacts the password and extra secrets from output, lines and errors', async () => {
    const s = await connect(pw(), { secrets: ['tok-abcdef123'] });
    const lines: string[] = [];
    const r = await s.exec(`echo "pw=${sshd.password}"; echo tok-abcdef123 >&2`, { onOutput: (l) => lines.push(l) });
    assert.equal(r.stdout, 'pw=***\n');
    assert.equal(r.stderr, '***\n');
    assert.deepEqual(lines.sort(), ['***', 'pw=***']);
    const err = await rejection(s.run(`echo ${sshd.password} >&2; exit 1`));
    assert.ok(!err.message.includes(sshd.password), err.message);
    assert.ok(err.message.includes('***'), err.message);
    // the truncated tail does not start with the end of the password
    const cut = await s.exec(`printf '%s' '${sshd.password}'; seq 1 10`, { maxOutputBytes: 21 + 5 });
    assert.ok(cut.truncated);
    assert.ok(!cut.stdout.includes(sshd.password.slice(-3)), cut.stdout);
  });

  it('uploads atomically with the mode, replacing the file, and downloads it', async () => {
    const s = await connect(pw());
    const dir = userDir();
    const path = `${dir}/conf.txt`;
    await s.upload(path, 'v1\n', { mode: 0o600 });
    const st1 = statSync(path);
    assert.equal(st1.mode & 0o777, 0o600);
    assert.equal(readFileSync(path, 'utf8'), 'v1\n');
    await s.upload(path, Buffer.from('v2\n'), { mode: 0o664 });
    const st2 = statSync(path);
    assert.equal(st2.mode & 0o777, 0o664, 'the mode is set exactly (not reduced by the umask)');
    assert.notEqual(st2.ino, st1.ino, 'replaced by rename, not rewritten in place');
    assert.equal(st2.uid, Number(spawnSync('id', ['-u', sshd.user], { encoding: 'utf8' }).stdout.trim()));
    assert.deepEqual(readdirSync(dir), ['conf.txt'], 'no temp file is left');
    await s.upload(`${dir}/default`, 'x');
    assert.equal(statSync(`${dir}/default`).mode & 0o777, 0o644);
    assert.deepEqual(await s.download(path), Buffer.from('v2\n'));
    const missing = await rejection(s.download(`${dir}/none`));
    assert.equal(missing.code, 'VNFM_ERR_MGMT_COMMAND');
    assert.ok(missing.message.includes(`${dir}/none`), missing.message);
  });

  it('uploads with sudo into a root-owned directory and downloads root-only files with sudo', async () => {
    const s = await connect(pw());
    const dir = `/tmp/hv-rootdir-${randomBytes(4).toString('hex')}`;
    mkdirSync(dir, { mode: 0o755 });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const denied = await rejection(s.upload(`${dir}/a.conf`, 'nope'));
    assert.equal(denied.code, 'VNFM_ERR_MGMT_COMMAND');
    // only this user's temp files: lab tests running at the same time upload with sudo as other users
    const uid = Number(spawnSync('id', ['-u', sshd.user], { encoding: 'utf8' }).stdout.trim());
    const uploadTemps = () => readdirSync('/tmp').filter((n) => n.startsWith('.hvvnfm-upload-') && statSync(join('/tmp', n), { throwIfNoEntry: false })?.uid === uid);
    const before = uploadTemps();
    await s.upload(`${dir}/a.conf`, 'root data\n', { sudo: true, mode: 0o600 });
    const st = statSync(`${dir}/a.conf`);
    assert.equal(st.uid, 0);
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(readFileSync(`${dir}/a.conf`, 'utf8'), 'root data\n');
    assert.deepEqual(
      uploadTemps(),
      before,
      'the temp file is removed',
    );
    assert.deepEqual(readdirSync(dir), ['a.conf']);
    assert.equal((await rejection(s.download(`${dir}/a.conf`))).code, 'VNFM_ERR_MGMT_COMMAND');
    const secret = `${dir}/secret.bin`;
    const bin = randomBytes(300_000);
    writeFileSync(secret, bin);
    chmodSync(secret, 0o600);
    assert.deepEqual(await s.download(secret, { sudo: true }), bin);
    const err = await rejection(s.download(`${dir}/none`, { sudo: true }));
    assert.equal(err.code, 'VNFM_ERR_MGMT_COMMAND');
  });

  it('learns the host key, accepts it pinned, and refuses a changed one without retrying', async () => {
    const other = await startSshd();
    cleanups.push(() => other.stop());
    const t: SshTarget = { host: other.host, port: other.port, username: other.user, password: other.password };
    let learned: string | undefined;
    (await connect(t, { hostKey: { learn: (fp) => void (learned = fp) } })).close();
    assert.equal(learned, other.hostKeyFingerprint);
    const pinned = learned as string;
    let learnedAgain = false;
    const ok = await connect(t, { hostKey: { pinned, learn: () => void (learnedAgain = true) } });
    assert.equal(ok.hostKeyFingerprint, pinned);
    assert.equal(learnedAgain, false, 'a pinned key is not learned again');
    ok.close();
    const fresh = await other.restart({ newHostKey: true });
    assert.notEqual(fresh, pinned);
    const attempts: number[] = [];
    const err = await rejection(connectSsh(t, { hostKey: { pinned }, attempts: 3, backoffInitialMs: 1, backoffMaxMs: 2, onAttempt: (n) => void attempts.push(n) }));
    assert.equal(err.code, 'VNFM_ERR_SSH_HOST_KEY');
    assert.equal(err.retryable, false);
    assert.deepEqual(attempts, [], 'not retried');
    assert.ok(err.message.includes(`127.0.0.1:${other.port}`), err.message);
    assert.ok(err.message.includes(pinned) && err.message.includes(fresh), err.message);
  });

  it('gives up on an unreachable port after the attempts, retryable', async () => {
    const port = await freePort();
    const attempts: { n: number; msg: string }[] = [];
    const err = await rejection(
      connectSsh({ host: '127.0.0.1', port, username: 'nobody', password: 'irrelevant-pw' }, { attempts: 3, backoffInitialMs: 1, backoffMaxMs: 5, onAttempt: (n, e) => void attempts.push({ n, msg: e.message }) }),
    );
    assert.equal(err.code, 'VNFM_ERR_SSH_UNREACHABLE');
    assert.equal(err.retryable, true);
    assert.deepEqual(
      attempts.map((a) => a.n),
      [1, 2, 3],
    );
    assert.match(attempts[0]?.msg ?? '', /ECONNREFUSED/);
    assert.ok(err.message.includes(`127.0.0.1:${port}`) && err.message.includes('3 attempts') && err.message.includes('ECONNREFUSED'), err.message);
  });

  it('keeps trying until the deadline, beyond the attempt count', async () => {
    const port = await freePort();
    let count = 0;
    const err = await rejection(
      connectSsh({ host: '127.0.0.1', port, username: 'nobody' }, { attempts: 1, deadlineMs: 2000, backoffInitialMs: 1, backoffMaxMs: 20, onAttempt: () => void count++ }),
    );
    assert.equal(err.code, 'VNFM_ERR_SSH_UNREACHABLE');
    assert.ok(count >= 2, `${count} attempts`);
    assert.ok(err.message.includes('within 2000 ms'), err.message);
  });

  it('stops waiting between attempts when the signal aborts', async () => {
    const port = await freePort();
    const ac = new AbortController();
    const err = await rejection(
      connectSsh({ host: '127.0.0.1', port, username: 'nobody' }, { attempts: 5, backoffInitialMs: 600_000, backoffMaxMs: 600_000, signal: ac.signal, onAttempt: () => ac.abort(new Error('stop now')) }),
    );
    assert.equal(err.code, 'VNFM_ERR_LCM_INTERRUPTED');
    assert.equal(err.retryable, false);
  });

  it('connects on a later attempt when the server comes up after the first one failed', async () => {
    const late = await createSshd();
    cleanups.push(() => late.stop());
    const attempts: number[] = [];
    const s = await guard(
      'connect',
      connectSsh(
        { host: late.host, port: late.port, username: late.user, password: late.password },
        {
          attempts: 4,
          backoffInitialMs: 1,
          backoffMaxMs: 5,
          onAttempt: async (n) => {
            attempts.push(n);
            if (n === 1) await late.start();
          },
        },
      ),
      GUARD_MS,
    );
    open.push(s);
    assert.deepEqual(attempts, [1]);
    assert.equal((await s.exec('echo up')).stdout, 'up\n');
  });

  it('refuses a wrong password at once, naming the user and host but no password', async () => {
    const attempts: number[] = [];
    const err = await rejection(connectSsh({ ...pw(), password: 'wrong-password-1' }, { attempts: 3, backoffInitialMs: 1, backoffMaxMs: 2, onAttempt: (n) => void attempts.push(n) }));
    assert.equal(err.code, 'VNFM_ERR_SSH_AUTH');
    assert.equal(err.retryable, false);
    assert.deepEqual(attempts, []);
    assert.ok(err.message.includes(`"${sshd.user}"`) && err.message.includes(`127.0.0.1:${sshd.port}`), err.message);
    assert.ok(!err.message.includes('wrong-password-1') && !err.message.includes(sshd.password), err.message);
  });

  it('pools one connection per host and user, and reconnects after the server dropped it', async () => {
    const pool = new SshPool({ attempts: 2, backoffInitialMs: 1, backoffMaxMs: 5 });
    cleanups.push(() => pool.closeAll());
    const beforePids = new Set(sshd.connectionPids());
    const newPids = (): number[] => sshd.connectionPids().filter((p) => !beforePids.has(p));
    const [a, b] = await Promise.all([pool.get(pw()), pool.get(pw())]);
    assert.equal(a, b);
    assert.equal(await pool.get(pw()), a);
    // the server process of this connection: the parent of the command's shell
    const server = Number((await a.exec('echo $PPID')).stdout.trim());
    assert.equal(Number((await b.exec('echo $PPID')).stdout.trim()), server);
    await until('one new connection on the server', () => newPids().length === 1, GUARD_MS);
    const cmd = uniqueSleep();
    const running = a.exec(cmd);
    running.catch(() => undefined);
    await until(`${cmd} running`, () => pgrep(cmd).length > 0, GUARD_MS, 20);
    process.kill(server, 'SIGTERM');
    const lostRun = await rejection(running);
    assert.equal(lostRun.code, 'VNFM_ERR_SSH_UNREACHABLE');
    assert.equal(lostRun.retryable, true);
    assert.ok(lostRun.message.includes('did not finish'), lostRun.message);
    assert.ok(a.closed);
    for (const pid of pgrep(cmd)) process.kill(pid, 'SIGKILL'); // orphaned by the server's death
    const c = await pool.get(pw());
    assert.notEqual(c, a);
    assert.equal((await c.exec('echo again')).stdout, 'again\n');
    const lost = await rejection(a.exec('true'));
    assert.equal(lost.code, 'VNFM_ERR_SSH_UNREACHABLE');
    pool.closeAll();
    assert.ok(c.closed);
  });
});
