/**
 * The detached play runner (src/mgmt/drivers/k8s-kubespray/ansible.ts) against a local shell
 * standing in for the Ansible server's SSH session, and a fake `ansible-playbook` on the PATH:
 * the play runs on after the caller stopped waiting (a VNFM restart), a second waiter picks up the
 * same run's exit code and recap; the secret inventory is gone when the play ends and never on the
 * command line; a wrapper that died without an exit code is reported, not waited for.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Host } from '../../../src/mgmt/drivers/k8s-common/host.ts';
import { controlDirOf, runState, startPlay, waitPlay } from '../../../src/mgmt/drivers/k8s-kubespray/ansible.ts';
import type { ExecOptions, ExecResult, SshSession } from '../../../src/mgmt/ssh/ssh-executor.ts';
import { until } from '../../helpers/wait.ts';

const SECRET = 'play-secret-5b7e21';

/** An SshSession that runs commands in a local shell (PATH with the fake ansible-playbook first). */
function localSession(path: string): SshSession {
  const exec = (cmd: string, o: ExecOptions = {}): Promise<ExecResult> =>
    new Promise((resolve) => {
      const t0 = Date.now();
      const p = spawn('sh', ['-c', cmd], { env: { ...process.env, PATH: `${path}:${process.env.PATH}` }, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => {
        stdout += d;
      });
      p.stderr.on('data', (d) => {
        stderr += d;
      });
      p.stdin.on('error', () => undefined); // a command that does not read its stdin
      p.stdin.end(o.stdin ?? '');
      p.on('close', (code) => resolve({ code, stdout, stderr, truncated: false, durationMs: Date.now() - t0 }));
    });
  return {
    host: 'local',
    hostKeyFingerprint: 'SHA256:local',
    closed: false,
    exec,
    run: async (cmd, o) => {
      const r = await exec(cmd, o);
      if (r.code !== 0) throw new Error(`${o?.label ?? cmd}: exit ${r.code}: ${r.stderr}`);
      return r;
    },
    upload: async (p, data, o) => {
      writeFileSync(p, data);
      chmodSync(p, o?.mode ?? 0o644);
    },
    download: async (p) => readFileSync(p),
    close: () => undefined,
  };
}

describe('detached Ansible plays', () => {
  let dir = '';
  let h: Host;
  const spec = (runId: string, playbook = 'cluster.yml') => ({
    runId,
    playbook,
    inventory: join(dir, 'hosts.yaml'),
    secretInventory: { all: { hosts: { worker11: { ansible_password: SECRET } } } },
    runDir: join(dir, 'runs', runId),
    knownHosts: join(dir, 'known_hosts'),
  });
  const wait = { pollMs: 20, timeoutMs: 60_000, sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)), now: () => Date.now() };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'vnfm-detached-play-'));
    // fake ansible-playbook: waits for <dir>/release (when asked), records its argv, prints a recap, exits with $FAKE_RC
    writeFileSync(
      join(dir, 'ansible-playbook'),
      `#!/bin/sh
echo "$@" > argv
echo "$ANSIBLE_SSH_ARGS" > ssh-args
case "$ANSIBLE_SSH_ARGS" in *"ControlPath=$(cat control-dir 2>/dev/null)/%C"*) [ -d "$(cat control-dir)" ] && echo yes > control-dir-seen ;; esac
grep -q '${SECRET}' secrets.yaml && echo "secret inventory readable" > secret-seen
case "$*" in *hold.yml*) while [ ! -f ${dir}/release ]; do sleep 0.05; done ;; esac
case "$*" in *fail.yml*) printf 'TASK [do it]\\nfatal: [worker11]: FAILED! => {"msg": "boom"}\\n\\nPLAY RECAP ***\\nworker11 : ok=0 changed=0 unreachable=0 failed=1 skipped=0 rescued=0 ignored=0\\n'; exit 2 ;; esac
printf 'PLAY RECAP ***\\nworker11 : ok=2 changed=1 unreachable=0 failed=0 skipped=0 rescued=0 ignored=0\\n'
`,
    );
    chmodSync(join(dir, 'ansible-playbook'), 0o755);
    h = new Host(localSession(dir), { name: 'ansible-server', commandTimeoutMs: 30_000 });
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    // a wrapper killed before its end (r-lost) leaves its connection directory behind
    for (const id of ['r-hold', 'r-fail', 'r-lost']) rmSync(controlDirOf(id), { recursive: true, force: true });
  });

  it('runs on without its waiter; a later waiter picks up the same run; the secret inventory is removed', async () => {
    const s = spec('r-hold', 'hold.yml');
    assert.deepEqual(await runState(h, s.runDir), { state: 'absent' });
    // (the fake play checks that its SSH connection masters have a directory of this run's own)
    mkdirSync(s.runDir, { recursive: true });
    writeFileSync(join(s.runDir, 'control-dir'), controlDirOf(s.runId));
    await startPlay(h, s);
    assert.equal((await runState(h, s.runDir)).state, 'running');
    // the first waiter gives up (a VNFM going away); the play holds on
    await assert.rejects(waitPlay(h, s, { ...wait, timeoutMs: 100 }), /still running/);
    writeFileSync(join(dir, 'release'), '');
    const v = await waitPlay(h, s, wait);
    assert.equal(v.ok, true, v.summary);
    assert.equal(typeof v.durationMs, 'number');
    assert.ok(existsSync(join(s.runDir, 'secret-seen')), 'the play could read its secret inventory');
    assert.equal(existsSync(join(s.runDir, 'secrets.yaml')), false, 'removed when the play ended');
    const argv = readFileSync(join(s.runDir, 'argv'), 'utf8');
    assert.ok(!argv.includes(SECRET), 'no secret on the command line');
    assert.match(argv, /--become/);
    assert.ok(!readFileSync(join(s.runDir, 'log'), 'utf8').includes(SECRET));
    // one SSH connection per node for the whole play, in a directory of the run's own, gone with it
    assert.match(readFileSync(join(s.runDir, 'ssh-args'), 'utf8'), /ControlMaster=auto .*ControlPersist=\S+ .*ServerAliveInterval=/);
    assert.ok(existsSync(join(s.runDir, 'control-dir-seen')), 'the control directory existed while the play ran');
    assert.equal(existsSync(controlDirOf(s.runId)), false, 'the control directory is removed when the play ends');
    assert.notEqual(controlDirOf(s.runId), controlDirOf('r-fail'), 'one directory per run');
  });

  it('a failed play is judged by exit code and recap, naming the host and the task', async () => {
    const s = spec('r-fail', 'fail.yml');
    await startPlay(h, s);
    const v = await waitPlay(h, s, wait);
    assert.equal(v.ok, false);
    assert.deepEqual(v.failedHosts, ['worker11']);
    assert.match(v.summary, /'do it' on worker11 \(boom\)/);
  });

  it('a wrapper gone without an exit code is reported (and its secret inventory removed), not waited for', async () => {
    const s = spec('r-lost', 'hold.yml');
    rmSync(join(dir, 'release'), { force: true });
    await startPlay(h, s);
    const pid = Number(readFileSync(join(s.runDir, 'pid'), 'utf8'));
    process.kill(-pid, 'SIGKILL');
    await until('the wrapper gone', async () => (await runState(h, s.runDir)).state === 'lost', 30_000, 20);
    await assert.rejects(waitPlay(h, s, wait), /ended without an exit code/);
    assert.equal(existsSync(join(s.runDir, 'secrets.yaml')), false);
  });
});
