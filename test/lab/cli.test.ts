/**
 * `vnfm start --lab` end to end, as a child process (the real CLI, a temporary data directory,
 * free ports): it comes up with the lab, a Heat stack's server on lab-net becomes a host reachable
 * over SSH with the password the lab generated (in `<dataDir>/lab/credentials.json`), and SIGTERM
 * tears everything down (no namespace of ours, no bridge, no sudoers drop-in). Without root, `--lab`
 * exits at once naming what is missing.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { acquireLabLock } from '../../src/lab/index.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';
import { stage } from '../helpers/stages.ts';
import { guard, until } from '../helpers/wait.ts';
import { bridgeExists, call, labNamespaces, login, oneServerTemplate, trySsh } from './lab-helpers.ts';

const lab = await stage('lab');

// biome-ignore lint/suspicious/noExplicitAny: log lines
type Line = any;

describe('vnfm start --lab (the CLI as a child process)', { skip: lab.skip }, () => {
  let dir: string;
  let child: ChildProcess | undefined;
  const lines: Line[] = [];
  let stderr = '';
  let exited: Promise<number | null>;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hvlab-cli-test-'));
    // free ports for everything; wait for another lab of the test run to finish
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 }, lab: { kubernetesPort: 0, waitForLockMs: 600_000 }, runner: { shutdownGraceMs: 1000 } }));
  });
  after(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('comes up, turns a stack\'s server into a reachable host, and tears everything down on SIGTERM', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'start', '--lab', '--config', join(dir, 'config.json'), '--data-dir', join(dir, 'data'), '--port', '0'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, VNFM_LOG_LEVEL: 'info' },
    });
    exited = new Promise((resolve) => child?.once('exit', (code) => resolve(code)));
    let buf = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
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
    const started = await until('the VNFM started', () => lines.find((l) => l.msg === 'VNFM started') ?? (child?.exitCode !== null ? Promise.reject(new Error(`exited: ${stderr}`)) : undefined), 600_000);
    assert.ok(started.url);
    const labLine = lines.find((l) => l.msg === 'lab started');
    assert.ok(labLine, 'the lab logged its start');
    assert.equal(labLine.bridge, '10.87.0.1');
    assert.equal(labLine.network, 'lab-net');
    const simLine = lines.find((l) => l.msg?.startsWith('simulated cloud started'));
    const credsFile = join(dir, 'data', 'lab', 'credentials.json');
    assert.equal(labLine.credentialsFile, credsFile);
    assert.equal(statSync(credsFile).mode & 0o777, 0o600);
    const { password } = JSON.parse(readFileSync(credsFile, 'utf8')) as { password: string };
    assert.ok(password.length >= 16);
    assert.ok(!JSON.stringify(lines).includes(password), 'the password is never logged');
    assert.ok(existsSync('/etc/sudoers.d/hvlab'));

    const s = await login(simLine.openstack);
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'cli-one', template: oneServerTemplate() });
    assert.equal(r.status, 201);
    const url = `${s.heat}/stacks/cli-one/${r.body.stack.id}`;
    const st = await until('the stack', async () => {
      const g = (await call('GET', url, s.token)).body.stack;
      return g.stack_status.endsWith('_IN_PROGRESS') ? undefined : g;
    }, 30_000, 20);
    assert.equal(st.stack_status, 'CREATE_COMPLETE');
    const ip = st.outputs.find((o: Line) => o.output_key === 'ip').output_value as string;
    const ssh = await until('SSH to the host', () => trySsh(ip, 'hvlab', password, 'hostname; sudo cat /etc/hvlab/env'), 30_000);
    assert.equal(ssh.stdout.split('\n')[0], `vm-${ip.split('.')[3]}`);
    assert.match(ssh.stdout, new RegExp(`HVLAB_IP=${ip.replaceAll('.', '\\.')}\\n`));
    await until('the host logged up', () => lines.some((l) => l.msg === 'lab host up' && l.ip === ip), 10_000);
    assert.ok(labNamespaces().includes(`hvlab-${ip.replaceAll('.', '-')}`));

    child.kill('SIGTERM');
    const code = await guard('the VNFM to stop', exited, 120_000);
    assert.equal(code, 0, stderr);
    assert.ok(lines.some((l) => l.msg?.startsWith('lab stopped')), 'the lab logged its stop');
    // checked under the machine's lab lock, so no other lab of the test run is up meanwhile
    const release = await acquireLabLock({ waitMs: 600_000, what: 'test/lab/cli.test.ts' });
    try {
      assert.deepEqual(labNamespaces(), [], 'no namespace of ours left');
      assert.equal(bridgeExists(), false, 'no bridge left');
      assert.equal(existsSync('/etc/sudoers.d/hvlab'), false, 'the sudoers drop-in is removed');
      assert.equal(existsSync(join(dir, 'data', 'lab', 'hosts', ip)), false, 'the host\'s disk is wiped');
    } finally {
      release();
    }
  });

  it('exits at once without root, naming what is missing', async () => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'start', '--lab', '--data-dir', join(dir, 'nobody-data'), '--port', '0'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      uid: 65534,
      gid: 65534,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir() },
    });
    let err = '';
    p.stderr?.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    const code = await guard('the CLI to exit', new Promise<number | null>((resolve) => p.once('exit', (c) => resolve(c))), 120_000);
    assert.equal(code, 1, err);
    assert.match(err, /cannot start: --lab: the live-VM lab needs root/);
    assert.equal(existsSync(join(dir, 'nobody-data')), false, 'nothing was started');
  });
});
