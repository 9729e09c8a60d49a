/**
 * `vnfm start --lab` end to end, as a child process (the real CLI, a temporary data directory,
 * free ports): it comes up with the lab, a Heat stack's server on lab-net becomes a host reachable
 * over SSH with the password the lab generated (in `<dataDir>/lab/credentials.json`); a SIGKILL of
 * the VNFM leaves the host running and the restarted VNFM adopts it (same sshd, same host key);
 * SIGTERM tears everything down (no namespace of ours, no bridge, no sudoers drop-in). Without
 * root, `--lab` exits at once naming what is missing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { acquireLabLock } from '../../src/lab/index.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { stage } from '../helpers/stages.ts';
import { guard, until } from '../helpers/wait.ts';
import { bridgeExists, type Cli, call, labNamespaces, type Line, login, oneServerTemplate, started, startCli, trySsh } from './lab-helpers.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

describe('vnfm start --lab (the CLI as a child process)', { skip: lab.skip }, () => {
  let dir: string;
  let cli: Cli | undefined;
  let password: string;
  let ip: string;
  let hostKey: string;
  let serverId: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hvlab-cli-test-'));
    // free ports for everything; wait for another lab of the test run to finish
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 }, lab: { kubernetesPort: 0, waitForLockMs: 600_000 }, runner: { shutdownGraceMs: 1000 } }));
  });
  after(() => {
    if (cli && cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('comes up with the lab: bridge, lab-net, a generated password in credentials.json (0600, never logged), sudoers', async () => {
    cli = startCli(dir);
    const up = await started(cli);
    assert.ok(up.url);
    const labLine = cli.lines.find((l) => l.msg === 'lab started');
    assert.ok(labLine, 'the lab logged its start');
    assert.equal(labLine.bridge, '10.87.0.1');
    assert.equal(labLine.network, 'lab-net');
    const credsFile = join(dir, 'data', 'lab', 'credentials.json');
    assert.equal(labLine.credentialsFile, credsFile);
    assert.equal(statSync(credsFile).mode & 0o777, 0o600);
    ({ password } = JSON.parse(readFileSync(credsFile, 'utf8')) as { password: string });
    assert.ok(password.length >= 16);
    assert.ok(!JSON.stringify(cli.lines).includes(password), 'the password is never logged');
    assert.ok(existsSync('/etc/sudoers.d/hvlab'));
    assert.ok(bridgeExists());
  });

  it('turns a Heat stack\'s server on lab-net into a host reachable over SSH', async () => {
    const c = cli as Cli;
    const s = await login(c.lines.find((l) => l.msg?.startsWith('simulated cloud started')).openstack);
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'cli-one', template: oneServerTemplate() });
    assert.equal(r.status, 201);
    const url = `${s.heat}/stacks/cli-one/${r.body.stack.id}`;
    const st = await until('the stack', async () => {
      const g = (await call('GET', url, s.token)).body.stack;
      return g.stack_status.endsWith('_IN_PROGRESS') ? undefined : g;
    }, 30_000, 20);
    assert.equal(st.stack_status, 'CREATE_COMPLETE');
    ip = st.outputs.find((o: Line) => o.output_key === 'ip').output_value as string;
    serverId = (await call('GET', `${url}/resources/vdu1`, s.token)).body.resource.physical_resource_id;
    const ssh = await until('SSH to the host', () => trySsh(ip, 'hvlab', password, 'hostname; sudo cat /etc/hvlab/env'), 30_000);
    assert.equal(ssh.stdout.split('\n')[0], `vm-${ip.split('.')[3]}`);
    assert.match(ssh.stdout, new RegExp(`HVLAB_IP=${ip.replaceAll('.', '\\.')}\\n`));
    hostKey = ssh.hostKey;
    const upLine = await until('the host logged up', () => c.lines.find((l) => l.msg === 'lab host up' && l.ip === ip), 10_000);
    assert.equal(upLine.server, serverId);
    assert.equal(upLine.hostKey, hostKey);
    assert.ok(labNamespaces().includes(`hvlab-${ip.replaceAll('.', '-')}`));
  });

  it('survives a VNFM crash: the host keeps running, the restarted VNFM adopts it as it is', async () => {
    const c = cli as Cli;
    // the simulated cloud has saved the server before the crash
    // (the server ACTIVE in it: a state saved while it was still building would restore no VM to adopt)
    const savedActive = (): boolean => {
      const file = join(dir, 'data', 'sim', 'openstack.json');
      if (!existsSync(file)) return false;
      try {
        const saved = JSON.parse(readFileSync(file, 'utf8')) as { state?: { compute?: { servers?: { id: string; status: string }[] } } };
        return saved.state?.compute?.servers?.some((x) => x.id === serverId && x.status === 'ACTIVE') === true;
      } catch {
        return false; // being written
      }
    };
    await until('the cloud state saved', () => savedActive(), 10_000);
    c.child.kill('SIGKILL');
    await guard('the VNFM to die', c.exited, 30_000);
    const during = await trySsh(ip, 'hvlab', password, 'hostname');
    assert.equal(during?.hostKey, hostKey, 'the VM runs on while the VNFM is down');

    cli = startCli(dir);
    await started(cli);
    const adopted = cli.lines.find((l) => l.msg?.startsWith('lab: hosts left running by the previous lab adopted'));
    // the VNF's host, and the lab's service hosts (load balancer, Ansible server: on with --lab)
    assert.deepEqual([...(adopted?.adopted ?? [])].sort(), [ip, '10.87.0.249', '10.87.0.250'].sort());
    assert.ok(!cli.lines.some((l) => l.msg === 'lab host up' && l.ip === ip), 'not re-made');
    const after = await trySsh(ip, 'hvlab', password, 'hostname');
    assert.equal(after?.hostKey, hostKey, 'the same machine');
  });

  it('tears everything down on SIGTERM', async () => {
    const c = cli as Cli;
    c.child.kill('SIGTERM');
    const code = await guard('the VNFM to stop', c.exited, 120_000);
    assert.equal(code, 0, c.stderr());
    assert.ok(c.lines.some((l) => l.msg?.startsWith('lab stopped')), 'the lab logged its stop');
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
