/**
 * The live-VM lab's stand-ins (`src/lab/bin`: kubeadm, systemctl, service) and the sample
 * package's install script, with REAL etcd and HAProxy, on loopback "hosts" (127.0.0.11-14 and
 * .21, each with its own HVLAB_ETC / HVLAB_STATE, see src/lab/bin/README.md) against a simulated
 * Kubernetes API started in this process with zero nodes:
 * - the main master built by the install script (HA layout, 3 master addresses): one healthy etcd
 *   member, Node master11 Ready, HAProxy on 127.0.0.11:16443, Tacker's output markers and the
 *   HEALVNFM-RESULT line, the CA hash equal to Tacker's openssl pipeline;
 * - two masters joined by the script: 3 voting etcd members, no learner, all healthy through the
 *   real etcdctl with the healthcheck-client certificate; a worker joined: Node worker21 Ready;
 * - a client trusting the printed CA reaches the simulator's nodes through <master>:6443 and the
 *   HAProxy frontend with the admin token;
 * - joins refused like kubeadm: bad token, bad CA hash, expired and wrong certificate key, a Ready
 *   Node of the same name; a NotReady one is re-registered;
 * - `token create` / `upload-certs` give new valid values; `reset` removes the member and the Node,
 *   the master joins again; a stale member with its peer URL blocks the join ("Peer URLs already
 *   exists") until removed;
 * - the systemctl shim validates before reloading: an invalid file is refused and the running
 *   HAProxy keeps serving, a valid one replaces the process;
 * - every daemon started is stopped by its pid file at the end, also when a test fails.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../src/sim/kubernetes/index.ts';
import { stage } from '../helpers/stages.ts';
import { waitFor } from '../sim/kubernetes/sim-test-helpers.ts';
import { ROOT } from '../helpers/packages.ts';

const lab = await stage('lab');

// biome-ignore lint/suspicious/noExplicitAny: Kubernetes and etcdctl JSON
type Json = any;

const BIN = join(ROOT, 'src/lab/bin');
const SCRIPT = join(ROOT, 'samples/k8s-cluster-kubeadm/Scripts/install_k8s_cluster.sh');
const SYS_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const MASTERS = '127.0.0.11,127.0.0.12,127.0.0.13';
const DAEMONS = ['etcd', 'kube-apiserver', 'haproxy'] as const;

interface Host {
  n: number;
  ip: string;
  etc: string;
  state: string;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Polls until `fn` returns a truthy value; the deadline only fails the test. */
const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 60_000): Promise<T> => waitFor(what, fn, timeoutMs, 100);

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.setTimeout(2000);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** GET over HTTPS trusting only `ca`, with a bearer token. */
function httpsGet(url: string, ca: string, token: string): Promise<{ status: number; body: Json }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, agent: false, headers: { authorization: `Bearer ${token}`, connection: 'close' }, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

function markers(out: string): { token: string; server: string; caCert: string; caHash: string; certKey: string; result: Json } {
  const one = (re: RegExp): string => {
    const m = re.exec(out);
    assert.ok(m, `no ${re} in the output`);
    return m[1] as string;
  };
  const lines = out.split('\n').filter((l) => l.startsWith('HEALVNFM-RESULT '));
  assert.equal(lines.length, 1, 'one HEALVNFM-RESULT line');
  assert.ok(out.trimEnd().endsWith(lines[0] as string), 'the HEALVNFM-RESULT line is the last one');
  return {
    token: one(/^token:(\S+)$/m),
    server: one(/^server:(\S+)$/m),
    caCert: one(/^(-----BEGIN CERTIFICATE-----\n[\s\S]*?\n-----END CERTIFICATE-----)$/m),
    caHash: one(/^ssl_ca_cert_hash:([0-9a-f]{64})$/m),
    certKey: one(/^certificate_key:([0-9a-f]{64})$/m),
    result: JSON.parse((lines[0] as string).slice('HEALVNFM-RESULT '.length)),
  };
}

function resultOf(out: string): Json {
  const line = out.split('\n').find((l) => l.startsWith('HEALVNFM-RESULT '));
  assert.ok(line, out);
  return JSON.parse(line.slice('HEALVNFM-RESULT '.length));
}

describe('lab stand-ins: kubeadm with real etcd and HAProxy, the install script, the systemctl shim', { skip: lab.skip }, () => {
  let sim: KubernetesSim;
  let root: string;
  let simCa: string;
  const hosts = new Map<number, Host>();
  // join data of the cluster, as printed by the main master's install script
  let join1: { token: string; caHash: string; certKey: string; caCert: string };

  const host = (n: number): Host => hosts.get(n) as Host;

  function run(h: Host, cmd: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
    return new Promise((resolve) => {
      const child = execFile(
        cmd,
        args,
        {
          env: {
            PATH: `${BIN}:${SYS_PATH}`,
            HOME: join(root, 'home'),
            HVLAB_ETC: h.etc,
            HVLAB_ENV_FILE: join(h.etc, 'etc/hvlab/env'),
            K8S_NODE_IP: h.ip,
            K8S_HAPROXY_BIND: h.ip,
            ...env,
          },
          timeout: 180_000,
          maxBuffer: 4 * 1024 * 1024,
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as unknown as { code: number }).code : -1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        },
      );
      child.stdin?.end(input ?? '');
    });
  }

  const install = (h: Host, args: string[], haFlag = 'True') => run(h, 'bash', [SCRIPT, ...args], { ha_flag: haFlag });
  const kubeadm = (h: Host, ...args: string[]) => run(h, join(BIN, 'kubeadm'), args);
  const pki = (h: Host, f: string) => join(h.etc, 'etc/kubernetes/pki', f);

  /** The real etcdctl with the host's healthcheck-client certificate. */
  const etcdctl = (h: Host, ...args: string[]) =>
    run(h, 'etcdctl', ['--endpoints', `https://${h.ip}:2379`, '--cacert', pki(h, 'etcd/ca.crt'), '--cert', pki(h, 'etcd/healthcheck-client.crt'), '--key', pki(h, 'etcd/healthcheck-client.key'), '--command-timeout=5s', ...args]);

  /** `member list` as [id(hex), name, peerURL, isLearner]. */
  async function members(h: Host): Promise<[string, string, string, boolean][]> {
    const r = await etcdctl(h, 'member', 'list');
    assert.equal(r.code, 0, r.stderr);
    return r.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(', '))
      .map((f) => [f[0] as string, f[2] as string, f[3] as string, f[5] === 'true']);
  }

  async function node(name: string): Promise<Json | undefined> {
    const res = await fetch(`${sim.httpUrl}/api/v1/nodes/${name}`, { headers: { authorization: `Bearer ${sim.token}` } });
    return res.status === 200 ? res.json() : undefined;
  }

  const ready = (n: Json): boolean => !!n?.status?.conditions?.some((c: Json) => c.type === 'Ready' && c.status === 'True');

  function pidOf(h: Host, daemon: (typeof DAEMONS)[number]): number | undefined {
    const f = join(h.state, `${daemon}.pid`);
    if (!existsSync(f)) return undefined;
    const pid = Number(readFileSync(f, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  function addHost(n: number, hostname?: string): Host {
    const h: Host = { n, ip: `127.0.0.${n}`, etc: join(root, `h${n}`, 'etc'), state: join(root, `h${n}`, 'state') };
    for (const d of ['etc/kubernetes', 'etc/haproxy', 'etc/hvlab']) mkdirSync(join(h.etc, d), { recursive: true });
    mkdirSync(h.state, { recursive: true });
    writeFileSync(join(h.etc, 'etc/hosts'), '127.0.0.1 localhost\n');
    if (hostname) writeFileSync(join(h.etc, 'etc/hostname'), `${hostname}\n`);
    const env = [
      `HVLAB_IP=${h.ip}`,
      `HVLAB_STATE=${h.state}`,
      `HVLAB_SHARED=${join(root, 'shared')}`,
      `HVLAB_K8S_URL=${sim.url}`,
      `HVLAB_K8S_TOKEN=${sim.token}`,
      `HVLAB_K8S_CA=${simCa}`,
      `HVLAB_BIN=${BIN}`,
    ];
    writeFileSync(join(h.etc, 'etc/hvlab/env'), `${env.join('\n')}\n`, { mode: 0o600 });
    hosts.set(n, h);
    return h;
  }

  /** Sends `signal` to `pid` (a negative pid: its process group); false when it is gone. */
  function signal(pid: number, sig: NodeJS.Signals): boolean {
    try {
      process.kill(pid, sig);
      return true;
    } catch {
      return false;
    }
  }

  /** Waits up to `ms` for the processes to exit; SIGKILL for those left, then waits for them too. */
  async function reap(pids: number[], ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (pids.some(pidAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const pid of pids.filter(pidAlive)) signal(pid, 'SIGKILL');
    const killed = Date.now() + 10_000;
    while (pids.some(pidAlive) && Date.now() < killed) await new Promise((r) => setTimeout(r, 50));
  }

  /**
   * Stops every daemon of every host by its pid file (the apiserver stand-ins with their process
   * group): SIGTERM to all, up to 3 s, then SIGKILL (etcd members stopping together may wait on
   * each other).
   */
  async function stopAll(): Promise<number[]> {
    const pids: number[] = [];
    for (const h of hosts.values()) {
      for (const d of DAEMONS) {
        const pid = pidOf(h, d);
        if (pid === undefined || !pidAlive(pid)) continue;
        pids.push(pid);
        signal(d === 'kube-apiserver' ? -pid : pid, 'SIGTERM');
      }
    }
    await reap(pids, 3_000);
    return pids;
  }

  before(async () => {
    sim = await startKubernetesSim({ nodes: 0, kubeletDelayMs: 10 });
    root = mkdtempSync(join(tmpdir(), 'hvlab-standins-'));
    mkdirSync(join(root, 'home'));
    simCa = join(root, 'sim-ca.pem');
    writeFileSync(simCa, sim.caCert);
    for (const n of [11, 12, 13, 21]) addHost(n);
    addHost(14, 'master14');
  });

  after(async () => {
    await stopAll();
    if (root) rmSync(root, { recursive: true, force: true });
    await sim?.close();
  });

  it('main master via the install script (HA, 3 masters): 1 healthy etcd member, Node master11 Ready, HAProxy on :16443, markers and HEALVNFM-RESULT, CA hash of the openssl pipeline', async () => {
    const h = host(11);
    const r = await install(h, ['-m', MASTERS, '-i', h.ip, '-p', '192.168.0.0/16', '-a', '10.96.0.0/12']);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const m = markers(r.stdout);
    assert.match(m.token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    assert.equal(m.server, 'https://127.0.0.11:16443');
    assert.deepEqual(
      { ...m.result, caCert: undefined },
      { role: 'master', node: 'master11', ip: h.ip, joined: true, mainMaster: true, alreadyJoined: false, endpoint: '127.0.0.11:16443', token: m.token, server: m.server, caHash: m.caHash, certificateKey: m.certKey, caCert: undefined },
    );
    assert.equal(m.result.caCert.trim(), m.caCert);
    assert.equal(readFileSync(pki(h, 'ca.crt'), 'utf8').trim(), m.caCert);
    const pipeline = await run(h, 'bash', ['-c', `openssl x509 -pubkey -in ${pki(h, 'ca.crt')} | openssl rsa -pubin -outform der 2>/dev/null | openssl dgst -sha256 -hex | sed 's/^.* //'`]);
    assert.equal(pipeline.stdout.trim(), m.caHash);
    join1 = { token: m.token, caHash: m.caHash, certKey: m.certKey, caCert: m.caCert };

    assert.deepEqual((await members(h)).map(([, name, peer, learner]) => [name, peer, learner]), [['master11', 'https://127.0.0.11:2380', false]]);
    const health = await etcdctl(h, 'endpoint', 'health', '-w', 'json');
    assert.equal(health.code, 0, health.stderr);
    assert.deepEqual(JSON.parse(health.stdout).map((e: Json) => e.health), [true]);
    const n11 = await node('master11');
    assert.ok(ready(n11), 'Node master11 Ready');
    assert.equal(n11.metadata.labels['node-role.kubernetes.io/control-plane'], '');
    assert.deepEqual(n11.status.addresses.find((a: Json) => a.type === 'InternalIP'), { type: 'InternalIP', address: h.ip });
    assert.equal(readFileSync(join(h.state, 'node-name'), 'utf8').trim(), 'master11');
    assert.match(readFileSync(join(h.etc, 'etc/hosts'), 'utf8'), /^127\.0\.0\.11 master11$/m);
    assert.equal(readFileSync(join(h.etc, 'etc/hostname'), 'utf8').trim(), 'master11');

    assert.ok(await portOpen(h.ip, 16443), 'HAProxy listens on 127.0.0.11:16443');
    const cfg = readFileSync(join(h.etc, 'etc/haproxy/haproxy.cfg'), 'utf8');
    assert.match(cfg, /^frontend kubernetes-apiserver$/m);
    assert.match(cfg, /^ {4}bind {17}127\.0\.0\.11:16443$/m);
    assert.match(cfg, /^backend kubernetes-apiserver$/m);
    assert.match(cfg, /^ {4}balance {5}roundrobin$/m);
    assert.deepEqual(cfg.split('\n').filter((l) => l.includes('server  master')), ['    server  master11  127.0.0.11:6443 check', '    server  master12  127.0.0.12:6443 check', '    server  master13  127.0.0.13:6443 check']);
    assert.match(cfg, new RegExp(`^ {4}stats socket ${join(h.etc, 'etc/haproxy/admin.sock')} mode 600 level admin$`, 'm'));
    assert.ok(pidAlive(pidOf(h, 'haproxy') as number));
  });

  it('two more masters join through the install script: 3 voting etcd members, no learner, all healthy with the healthcheck-client certificate', async () => {
    for (const n of [12, 13]) {
      const h = host(n);
      const r = await install(h, ['-m', MASTERS, '-i', '127.0.0.11', '-p', '192.168.0.0/16', '-a', '10.96.0.0/12', '-t', join1.token, '-s', join1.caHash, '-k', join1.certKey]);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /This node has joined the cluster and a new control plane instance was created/);
      assert.deepEqual(resultOf(r.stdout), { role: 'master', node: `master${n}`, ip: h.ip, joined: true, mainMaster: false, alreadyJoined: false, endpoint: '127.0.0.11:16443' });
      assert.ok(ready(await node(`master${n}`)), `Node master${n} Ready`);
      assert.ok(await portOpen(h.ip, 16443), `HAProxy of master${n}`);
    }
    const list = await members(host(11));
    assert.deepEqual(list.map(([, name, , learner]) => [name, learner]).sort(), [['master11', false], ['master12', false], ['master13', false]]);
    const health = await etcdctl(host(12), 'endpoint', 'health', '--cluster', '-w', 'json');
    assert.equal(health.code, 0, health.stderr);
    const eps = JSON.parse(health.stdout) as Json[];
    assert.equal(eps.length, 3);
    assert.ok(eps.every((e) => e.health === true), health.stdout);
  });

  it('a worker joins through the install script: Node worker21 Ready; running the script again changes nothing', async () => {
    const h = host(21);
    const args = ['-w', h.ip, '-i', '127.0.0.11', '-t', join1.token, '-s', join1.caHash];
    const r = await install(h, args);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /This node has joined the cluster:/);
    assert.deepEqual(resultOf(r.stdout), { role: 'worker', node: 'worker21', ip: h.ip, joined: true, mainMaster: false, alreadyJoined: false, endpoint: '127.0.0.11:16443' });
    const w = await node('worker21');
    assert.ok(ready(w));
    assert.equal(w.metadata.labels['node-role.kubernetes.io/control-plane'], undefined);
    const uid = w.metadata.uid;
    const again = await install(h, args);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(resultOf(again.stdout).alreadyJoined, true);
    assert.equal((await node('worker21')).metadata.uid, uid, 'the Node was not registered again');
  });

  it('a client trusting the printed CA reaches the simulator through <master>:6443 and the HAProxy frontend with the admin token', async () => {
    const adminConf = readFileSync(join(host(12).etc, 'etc/kubernetes/admin.conf'), 'utf8');
    const token = /^\s+token: (\S+)$/m.exec(adminConf)?.[1];
    assert.equal(token, sim.token);
    assert.match(adminConf, /server: https:\/\/127\.0\.0\.11:16443$/m);
    // each master's own address, and the control-plane endpoint (HAProxy, round robin over the three)
    for (const url of ['https://127.0.0.11:6443', 'https://127.0.0.12:6443', 'https://127.0.0.13:6443', 'https://127.0.0.11:16443', 'https://127.0.0.11:16443', 'https://127.0.0.11:16443']) {
      const res = await httpsGet(`${url}/api/v1/nodes`, join1.caCert, token as string);
      assert.equal(res.status, 200, url);
      assert.deepEqual(res.body.items.map((n: Json) => n.metadata.name).sort(), ['master11', 'master12', 'master13', 'worker21'], url);
    }
    await assert.rejects(httpsGet('https://127.0.0.11:6443/api/v1/nodes', sim.caCert, sim.token), /certificate|self.signed|unable to verify/i, 'the stand-in presents the cluster CA, not the simulator certificate');
  });

  it('joins are refused like kubeadm: bad token, bad CA hash, expired or wrong certificate key, a Ready Node of the same name', async () => {
    const h = host(14);
    const ep = '127.0.0.11:16443';
    const badToken = await kubeadm(h, 'join', ep, '--token', 'abcdef.0123456789abcdef', '--discovery-token-ca-cert-hash', `sha256:${join1.caHash}`);
    assert.equal(badToken.code, 1);
    assert.match(badToken.stderr, /could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"/);
    const badHash = await kubeadm(h, 'join', ep, '--token', join1.token, '--discovery-token-ca-cert-hash', `sha256:${'0'.repeat(64)}`);
    assert.equal(badHash.code, 1);
    assert.match(badHash.stderr, new RegExp(`none of the public keys "sha256:${join1.caHash}" are pinned`));
    // --config: a JoinConfiguration file, not mixed with flags (the install script's way: no secret on a command line)
    const cfgFile = join(root, 'join-config-test.yaml');
    writeFileSync(cfgFile, `apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: "${ep}"\n    token: "abcdef.0123456789abcdef"\n    caCertHashes:\n    - "sha256:${join1.caHash}"\n`);
    const mixed = await kubeadm(h, 'join', '--config', cfgFile, '--token', join1.token);
    assert.equal(mixed.code, 1);
    assert.match(mixed.stderr, /can not mix '--config' with arguments \[--token/);
    const cfgToken = await kubeadm(h, 'join', '--config', cfgFile);
    assert.equal(cfgToken.code, 1);
    assert.match(cfgToken.stderr, /could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"/, 'the token came from the file');
    writeFileSync(cfgFile, 'apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\n');
    const wrongKind = await kubeadm(h, 'join', `--config=${cfgFile}`);
    assert.equal(wrongKind.code, 1);
    assert.match(wrongKind.stderr, /no JoinConfiguration kind was found/);
    rmSync(cfgFile);
    const unreachable = await kubeadm(h, 'join', '127.0.0.99:6443', '--token', join1.token, '--discovery-token-ca-cert-hash', `sha256:${join1.caHash}`);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /dial tcp 127\.0\.0\.99:6443: connect: connection refused/);

    // the uploaded certificates expire two hours after the upload: age the record
    const keyFile = join(root, 'shared/kubeadm/clusters', join1.caHash, 'certificate-key');
    const [digest] = readFileSync(keyFile, 'utf8').trim().split(' ');
    writeFileSync(keyFile, `${digest} ${Math.floor(Date.now() / 1000) - 1}\n`);
    const expired = await kubeadm(h, 'join', ep, '--token', join1.token, '--discovery-token-ca-cert-hash', `sha256:${join1.caHash}`, '--control-plane', '--certificate-key', join1.certKey);
    assert.equal(expired.code, 1);
    assert.match(expired.stderr, /Secret "kubeadm-certs" was not found in the "kube-system" Namespace\. This Secret might have expired/);
    const upload = await kubeadm(host(11), 'init', 'phase', 'upload-certs', '--upload-certs');
    assert.equal(upload.code, 0, upload.stderr);
    const wrong = await kubeadm(h, 'join', ep, '--token', join1.token, '--discovery-token-ca-cert-hash', `sha256:${join1.caHash}`, '--control-plane', '--certificate-key', join1.certKey);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /error decoding secret data with provided key: cipher: message authentication failed/);

    // a Ready Node of this host's name already exists
    writeFileSync(join(h.etc, 'etc/hostname'), 'master12\n');
    const taken = await kubeadm(h, 'join', ep, '--token', join1.token, '--discovery-token-ca-cert-hash', `sha256:${join1.caHash}`);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /a Node with name "master12" and status "Ready" already exists in the cluster/);
    writeFileSync(join(h.etc, 'etc/hostname'), 'master14\n');

    // nothing was left behind by the refused joins
    assert.equal(await node('master14'), undefined);
    for (const d of DAEMONS) assert.equal(pidOf(h, d), undefined, `${d} of master14`);
    assert.equal((await members(host(11))).length, 3);
    assert.equal(existsSync(join(h.etc, 'etc/kubernetes/kubelet.conf')), false);
  });

  it('a NotReady Node of the same name is registered again by a join', async () => {
    const failed = await fetch(`${sim.httpUrl}/_sim/nodes/worker21/fail`, { method: 'POST', headers: { authorization: `Bearer ${sim.token}` } });
    assert.equal(failed.status, 200);
    assert.equal(ready(await node('worker21')), false);
    const before = (await node('worker21')).metadata.uid;
    const h = host(21);
    rmSync(join(h.etc, 'etc/kubernetes/kubelet.conf'));
    const r = await kubeadm(h, 'join', '127.0.0.11:16443', '--token', join1.token, '--discovery-token-ca-cert-hash', `sha256:${join1.caHash}`);
    assert.equal(r.code, 0, r.stderr);
    const after = await node('worker21');
    assert.ok(ready(after));
    assert.notEqual(after.metadata.uid, before);
  });

  let fresh: { token: string; certKey: string };

  it('token create and upload-certs give new values (checked by the joins below)', async () => {
    const t = await kubeadm(host(12), 'token', 'create', '--ttl', '1h');
    assert.equal(t.code, 0, t.stderr);
    const token = t.stdout.trim();
    assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    assert.notEqual(token, join1.token);
    const pj = await kubeadm(host(12), 'token', 'create', '--print-join-command');
    assert.match(pj.stdout.trim(), new RegExp(`^kubeadm join 127\\.0\\.0\\.11:16443 --token [a-z0-9]{6}\\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:${join1.caHash}$`));
    const u = await kubeadm(host(13), 'init', 'phase', 'upload-certs', '--upload-certs');
    assert.equal(u.code, 0, u.stderr);
    const lines = u.stdout.trim().split('\n');
    const certKey = lines[lines.length - 1] as string;
    assert.match(certKey, /^[0-9a-f]{64}$/);
    assert.notEqual(certKey, join1.certKey);
    assert.match(u.stdout, /Storing the certificates in Secret "kubeadm-certs"/);
    fresh = { token, certKey };
  });

  const joinMaster13 = () =>
    kubeadm(host(13), 'join', '127.0.0.11:16443', '--token', fresh.token, '--discovery-token-ca-cert-hash', `sha256:${join1.caHash}`, '--control-plane', '--certificate-key', fresh.certKey);

  async function threeVoters(): Promise<void> {
    const list = await members(host(11));
    assert.deepEqual(list.map(([, name, , learner]) => [name, learner]).sort(), [['master11', false], ['master12', false], ['master13', false]]);
    const health = await etcdctl(host(11), 'endpoint', 'health', '--cluster', '-w', 'json');
    assert.equal(health.code, 0, health.stderr);
    assert.ok((JSON.parse(health.stdout) as Json[]).every((e) => e.health === true));
  }

  it('reset of master13 removes its etcd member (2 left) and its Node; master13 joins again with the new token and key', async () => {
    const h = host(13);
    const etcdPid = pidOf(h, 'etcd') as number;
    const r = await kubeadm(h, 'reset', '-f');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Removed the etcd member [0-9a-f]+ of this node/);
    assert.deepEqual((await members(host(11))).map(([, name]) => name).sort(), ['master11', 'master12']);
    assert.equal(await node('master13'), undefined);
    assert.equal(pidAlive(etcdPid), false);
    assert.deepEqual(readdirSync(join(h.etc, 'etc/kubernetes')), []);
    assert.equal(existsSync(join(h.state, 'node-name')), false);

    const j = await joinMaster13();
    assert.equal(j.code, 0, `${j.stdout}\n${j.stderr}`);
    assert.match(j.stdout, /Promoted learner member [0-9a-f]+ to a voting member/);
    await threeVoters();
    assert.ok(ready(await node('master13')));
  });

  it('a stale member with the same peer URL blocks the join ("Peer URLs already exists") until it is removed', async () => {
    const h = host(13);
    const r = await kubeadm(h, 'reset', '-f', '--skip-phases=remove-etcd-member');
    assert.equal(r.code, 0, r.stderr);
    const stale = (await members(host(11))).find(([, name]) => name === 'master13');
    assert.ok(stale, 'the member of master13 stays');
    const blocked = await joinMaster13();
    assert.equal(blocked.code, 1);
    assert.match(blocked.stderr, /etcdserver: Peer URLs already exists/);
    assert.equal(pidOf(h, 'etcd'), undefined);

    const removed = await etcdctl(host(11), 'member', 'remove', stale[0]);
    assert.equal(removed.code, 0, removed.stderr);
    const j = await joinMaster13();
    assert.equal(j.code, 0, `${j.stdout}\n${j.stderr}`);
    await threeVoters();
  });

  it('the systemctl shim validates before reloading: an invalid file is refused and HAProxy keeps serving; a valid one replaces the process', async () => {
    const h = host(11);
    const cfgFile = join(h.etc, 'etc/haproxy/haproxy.cfg');
    const good = readFileSync(cfgFile, 'utf8');
    const oldPid = pidOf(h, 'haproxy') as number;
    assert.ok(pidAlive(oldPid));
    const active = await run(h, join(BIN, 'systemctl'), ['is-active', 'haproxy']);
    assert.deepEqual([active.code, active.stdout.trim()], [0, 'active']);

    writeFileSync(cfgFile, `${good}    no-such-keyword here\n`);
    const refused = await run(h, join(BIN, 'systemctl'), ['reload', 'haproxy']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /is invalid; nothing was changed/);
    assert.equal(pidOf(h, 'haproxy'), oldPid);
    assert.ok(pidAlive(oldPid));
    const viaOld = await httpsGet('https://127.0.0.11:16443/api/v1/nodes', join1.caCert, sim.token);
    assert.equal(viaOld.status, 200, 'the old HAProxy still serves');

    writeFileSync(cfgFile, good);
    const reloaded = await run(h, join(BIN, 'service'), ['haproxy', 'reload']);
    assert.equal(reloaded.code, 0, reloaded.stderr);
    const newPid = pidOf(h, 'haproxy') as number;
    assert.notEqual(newPid, oldPid);
    assert.ok(pidAlive(newPid));
    await until('the old HAProxy process exits', () => !pidAlive(oldPid), 30_000);
    assert.ok(await portOpen(h.ip, 16443));

    const unknown = await run(h, join(BIN, 'systemctl'), ['restart', 'nginx']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /nginx\.service not found/);
    for (const unit of ['kubelet', 'etcd', 'docker', 'containerd']) assert.equal((await run(h, join(BIN, 'systemctl'), ['restart', unit])).code, 0, unit);
  });

  it('every daemon the stand-ins started stops by its pid file', async () => {
    const pids = await stopAll();
    // 3 etcd + 3 apiserver stand-ins + 3 HAProxy (the worker runs none)
    assert.equal(pids.length, 9, `pids: ${pids.join(' ')}`);
    assert.deepEqual(pids.filter(pidAlive), []);
  });
});
