/**
 * The lab fleet with real namespaces and sshd: three hosts reachable over SSH with the lab user's
 * password, each with its own hostname, /etc/hvlab/env and /etc/haproxy; a killed host refuses
 * SSH, a recreated one presents a new host key; teardown leaves no namespace of ours, no bridge.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ensureUser, installSudoers, removeSudoers } from '../../src/lab/access.ts';
import { defaultBinDir, Fleet, acquireLabLock } from '../../src/lab/index.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { stage } from '../helpers/stages.ts';
import { until } from '../helpers/wait.ts';
import { bridgeExists, labNamespaces, portState, sshRun } from './lab-helpers.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

describe('lab fleet: hosts in network namespaces with sshd', { skip: lab.skip }, () => {
  const user = 'hvlab';
  const password = randomBytes(12).toString('base64url');
  const ips = ['10.87.0.11', '10.87.0.12', '10.87.0.13'];
  let release: () => void;
  let fleet: Fleet;
  let dir: string;

  before(async () => {
    // held for the whole file, so the teardown check below sees only what this file did
    release = await acquireLabLock({ waitMs: 600_000, what: 'test/lab/fleet.test.ts' });
    dir = mkdtempSync(join(tmpdir(), 'hvlab-fleet-test-'));
    await ensureUser(user, password, defaultBinDir());
    await installSudoers(user, defaultBinDir());
    fleet = await Fleet.open({ cidr: '10.87.0.0/24', labDir: dir, binDir: defaultBinDir(), user, env: { HVLAB_K8S_URL: 'https://10.87.0.1:26443' } });
    for (const [i, ip] of ips.entries()) await fleet.create(ip, { generation: `server-${i}` });
  });
  after(async () => {
    await fleet?.close();
    removeSudoers();
    rmSync(dir, { recursive: true, force: true });
    release?.();
  });

  it('makes each host reachable over SSH with the password, with its own hostname and /etc/hvlab/env', async () => {
    for (const ip of ips) {
      const h = fleet.host(ip);
      assert.ok(h?.running, `${ip} runs`);
      assert.equal(h.namespace, `hvlab-${ip.replaceAll('.', '-')}`);
      const r = await sshRun(ip, user, password, 'hostname; sudo cat /etc/hvlab/env; echo "PATH=$PATH"');
      assert.equal(r.code, 0, r.stderr);
      const [hostname, ...rest] = r.stdout.trim().split('\n');
      assert.equal(hostname, `vm-${ip.split('.')[3]}`);
      const env = Object.fromEntries(rest.filter((l) => /^[A-Z0-9_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      assert.equal(env.HVLAB_IP, ip);
      assert.equal(env.HVLAB_STATE, join(dir, 'hosts', ip));
      assert.equal(env.HVLAB_SHARED, join(dir, 'shared'));
      assert.equal(env.HVLAB_BIN, defaultBinDir());
      assert.equal(env.HVLAB_K8S_URL, 'https://10.87.0.1:26443');
      assert.ok(env.PATH?.startsWith(`${defaultBinDir()}:`), `the stand-ins come first on PATH: ${env.PATH}`);
      assert.equal(r.hostKey, h.hostKey.fingerprint, 'the host presents its own key');
      assert.ok(existsSync(h.stateDir));
    }
    assert.equal(new Set(ips.map((ip) => fleet.host(ip)?.hostKey.fingerprint)).size, 3, 'one host key per host');
  });

  it('gives each host its own /etc/haproxy and /etc/hosts', async () => {
    const [a, b] = ips as [string, string];
    assert.equal((await sshRun(a, user, password, 'echo "global" | sudo tee /etc/haproxy/haproxy.cfg >/dev/null && echo "10.87.0.99 extra" | sudo tee -a /etc/hosts >/dev/null')).code, 0);
    const inA = await sshRun(a, user, password, 'cat /etc/haproxy/haproxy.cfg; grep -c extra /etc/hosts');
    assert.equal(inA.stdout, 'global\n1\n');
    const inB = await sshRun(b, user, password, 'ls -A /etc/haproxy; grep -c extra /etc/hosts; grep -c vm-12 /etc/hosts');
    assert.equal(inB.stdout, '0\n1\n', 'the other host sees an empty /etc/haproxy and its own /etc/hosts');
    assert.deepEqual(readdirSync(join('/etc/netns', 'hvlab-10-87-0-11', 'haproxy')), ['haproxy.cfg'], 'written through the overlay of that host only');
  });

  it('kills a host: every process of its namespace goes, port 22 refuses; a restart keeps the key', async () => {
    const ip = ips[2] as string;
    const before = fleet.host(ip)?.hostKey.fingerprint;
    // a process a session left behind dies with the host too
    assert.equal((await sshRun(ip, user, password, 'nohup sleep 600 >/dev/null 2>&1 & echo started')).stdout.trim(), 'started');
    assert.ok((await fleet.pidsOf(ip)).length >= 2);
    const killed = await fleet.kill(ip);
    assert.ok(killed >= 2, `sshd and the sleep killed (${killed})`);
    assert.deepEqual(await fleet.pidsOf(ip), []);
    assert.equal(await portState(ip, 22), 'refused');
    assert.equal(fleet.host(ip)?.running, false);
    await fleet.start(ip);
    const r = await sshRun(ip, user, password, 'hostname');
    assert.equal(r.hostKey, before, 'a reboot keeps the host key');
  });

  it('recreates a host for a new generation: new host key, empty state, same address', async () => {
    const ip = ips[1] as string;
    const old = fleet.host(ip)?.hostKey.fingerprint;
    assert.equal((await sshRun(ip, user, password, 'sudo sh -c ". /etc/hvlab/env && touch \\$HVLAB_STATE/disk-was-here"')).code, 0);
    assert.ok(existsSync(join(dir, 'hosts', ip, 'disk-was-here')));
    const made = await fleet.create(ip, { generation: 'server-1-replaced' });
    assert.notEqual(made.hostKey.fingerprint, old);
    const r = await sshRun(ip, user, password, 'ls -A /etc/haproxy; sudo sh -c ". /etc/hvlab/env && ls -A \\$HVLAB_STATE"');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.hostKey, made.hostKey.fingerprint, 'the new machine presents the new key');
    assert.equal(r.stdout, '', 'empty /etc/haproxy and state dir');
  });

  it('holds and drops an extra address (a VIP)', async () => {
    const ip = ips[0] as string;
    await fleet.addAddress(ip, '10.87.0.200');
    assert.deepEqual(fleet.host(ip)?.extraAddresses, ['10.87.0.200']);
    assert.match((await sshRun(ip, user, password, 'ip -4 -o addr show dev eth0')).stdout, /10\.87\.0\.200\/24/);
    await fleet.removeAddress(ip, '10.87.0.200');
    assert.doesNotMatch((await sshRun(ip, user, password, 'ip -4 -o addr show dev eth0')).stdout, /10\.87\.0\.200/);
  });

  it('tears everything down: no namespace of ours, no bridge, no /etc/netns entries', async () => {
    assert.equal(labNamespaces().length, 3);
    await fleet.close();
    assert.deepEqual(labNamespaces(), []);
    assert.equal(bridgeExists(), false);
    assert.deepEqual(readdirSync('/etc/netns').filter((n) => n.startsWith('hvlab-')), []);
    // (no connection attempts from here on: without the bridge the lab addresses are not local)
    await until('nothing left in the lab directory', () => !existsSync(join(dir, 'hosts')) && !existsSync(join(dir, 'machines')), 5000);
  });
});

describe('lab fleet: what a previous lab left', { skip: lab.skip }, () => {
  const user = 'hvlab';
  const password = randomBytes(12).toString('base64url');
  let release: () => void;
  const dirs: string[] = [];

  before(async () => {
    release = await acquireLabLock({ waitMs: 600_000, what: 'test/lab/fleet.test.ts' });
    await ensureUser(user, password, defaultBinDir());
  });
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    release?.();
  });

  it('adopts the running hosts a killed lab of the same directory left; a lab of another directory removes them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hvlab-fleet-adopt-'));
    const other = mkdtempSync(join(tmpdir(), 'hvlab-fleet-other-'));
    dirs.push(dir, other);
    const first = await Fleet.open({ cidr: '10.87.0.0/24', labDir: dir, binDir: defaultBinDir(), user });
    const made = await first.create('10.87.0.21', { generation: 'server-x' });
    await first.create('10.87.0.22', { generation: 'server-y', start: false });
    await first.addAddress('10.87.0.21', '10.87.0.201');
    // `first` is never closed, as when its process is killed; a new lab on the same directory:
    const second = await Fleet.open({ cidr: '10.87.0.0/24', labDir: dir, binDir: defaultBinDir(), user });
    const x = second.host('10.87.0.21');
    assert.equal(x?.generation, 'server-x');
    assert.equal(x?.running, true, 'adopted running');
    assert.equal(x?.sshdPid, made.sshdPid, 'the same sshd');
    assert.deepEqual(x?.extraAddresses, ['10.87.0.201'], 'with the address it held');
    assert.equal(second.host('10.87.0.22')?.running, false, 'a host that was down stays down');
    assert.equal((await sshRun('10.87.0.21', user, password, 'hostname')).hostKey, made.hostKey.fingerprint);
    // a lab of another directory knows none of them: it removes them
    const third = await Fleet.open({ cidr: '10.87.0.0/24', labDir: other, binDir: defaultBinDir(), user });
    assert.deepEqual(third.list(), []);
    assert.deepEqual(labNamespaces(), []);
    await third.close();
    // the first directory's lab, started again, finds its machines gone and wipes their disks
    assert.equal(existsSync(join(dir, 'hosts', '10.87.0.21')), true);
    const fourth = await Fleet.open({ cidr: '10.87.0.0/24', labDir: dir, binDir: defaultBinDir(), user });
    assert.deepEqual(fourth.list(), []);
    assert.equal(existsSync(join(dir, 'hosts', '10.87.0.21')), false, 'the disks of machines that are gone are wiped');
    await fourth.close();
    await second.close();
    await first.close();
    assert.deepEqual(labNamespaces(), []);
    assert.equal(bridgeExists(), false);
  });
});
