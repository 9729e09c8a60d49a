/**
 * A scripted kubeadm cluster for the k8s-kubeadm driver tests: VMs reached over a fake SSH
 * (files, a per-VM host key that changes with each VM generation, reachability), answering the
 * commands the driver sends by regex (etcdctl 3.4 JSON over one shared etcd membership model,
 * kubeadm token / upload-certs / reset, HAProxy check / reload / runtime API, in-place file
 * writes, and the install script: main master init, control-plane join, worker join, which
 * register Nodes in the {@link FakeKube} API), recording every command line, upload and connection.
 */
import { retryableError, terminalError, vnfmError } from '../../../src/errors.ts';
import { caCertHash } from '../../../src/mgmt/drivers/k8s-kubeadm/remote.ts';
import type { ConnectOptions, ExecOptions, ExecResult, SshSession, SshTarget } from '../../../src/mgmt/ssh/ssh-executor.ts';
import { createSelfSignedCert } from '../../../src/sim/kubernetes/tls-cert.ts';
import { FakeClock, FakeKube } from './fake-kube.ts';

export interface FakeVm {
  ip: string;
  generation: number;
  files: Map<string, string>;
  /** Answers SSH (and, for a master, its etcd answers). */
  alive: boolean;
  tools: Set<string>;
  /** HAProxy configuration currently loaded (after the last reload). */
  loadedHaproxy?: string;
  reloads: number;
  runtime: string[];
  resets: number;
  /** `haproxy -c` refuses every configuration. */
  haproxyBroken: boolean;
}

export interface Recorded {
  host: string;
  cmd: string;
  sudo: boolean;
  stdin?: string;
}

export interface EtcdMemberModel {
  id: bigint;
  name: string;
  ip: string;
  learner: boolean;
  /** Explicitly unhealthy (alarms, ...), besides its VM being dead. */
  sick?: boolean;
}

const ok = (stdout = '', stderr = ''): ExecResult => ({ code: 0, stdout, stderr, truncated: false, durationMs: 1 });
const fail = (code: number, stderr: string, stdout = ''): ExecResult => ({ code, stdout, stderr, truncated: false, durationMs: 1 });

function lastOctet(ip: string): string {
  return ip.split('.').pop() as string;
}

/** Splits a shell word list with '…' and "…" quoting, expanding "$VAR" from `vars`. */
function words(s: string, vars: Record<string, string>): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === "'") {
      const j = s.indexOf("'", i + 1);
      cur += s.slice(i + 1, j);
      i = j;
      inWord = true;
    } else if (c === '"') {
      const j = s.indexOf('"', i + 1);
      cur += s.slice(i + 1, j).replace(/\$(\w+)/g, (_, v: string) => vars[v] ?? '');
      i = j;
      inWord = true;
    } else if (c === '\\' && s[i + 1] === "'") {
      cur += "'";
      i++;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) out.push(cur);
  return out;
}

export class FakeCluster {
  readonly vms = new Map<string, FakeVm>();
  readonly clock = new FakeClock();
  readonly kube = new FakeKube(this.clock);
  readonly commands: Recorded[] = [];
  readonly uploads: { host: string; path: string; mode?: number; data: string }[] = [];
  readonly connects: { host: string; username: string; hasPassword: boolean; pinned?: string; learned?: string; deadlineMs?: number; attempts?: number }[] = [];
  readonly installs: { host: string; args: string[]; env: Record<string, string>; vars: Record<string, string> }[] = [];
  members: EtcdMemberModel[] = [];
  leader: bigint | undefined;
  readonly joinTokens: string[] = [];
  readonly certKeys: string[] = [];
  readonly caPem: string;
  readonly caHash: string;
  private seq = 0;
  private nextMemberId = 0xa1b2c3d4e5f60718n;
  /** Throw a crash (not a VnfmError) when a command matching this runs. */
  crashOn: RegExp | undefined;
  /** Install runs on these hosts fail, echoing the join command (with its token) as kubeadm does. */
  readonly failInstallOn = new Set<string>();
  /** Install runs on these hosts exit 0 having installed nothing and printed no marker (Tacker's script after its package installation failed). */
  readonly silentInstallOn = new Set<string>();

  constructor(
    readonly clusterIp: string,
    readonly ha: boolean,
  ) {
    this.caPem = createSelfSignedCert(['kubernetes'], 'kubernetes').certPem;
    this.caHash = caCertHash(this.caPem);
  }

  addVm(ip: string, o: { generation?: number } = {}): FakeVm {
    const vm: FakeVm = { ip, generation: o.generation ?? 1, files: new Map([['/etc/hosts', '127.0.0.1 localhost\n']]), alive: true, tools: new Set(['socat']), reloads: 0, runtime: [], resets: 0, haproxyBroken: false };
    this.vms.set(ip, vm);
    return vm;
  }

  /** The VM is replaced by a new, empty one (same IP, next generation: a new host key). */
  replaceVm(ip: string): FakeVm {
    const old = this.vms.get(ip);
    return this.addVm(ip, { generation: (old?.generation ?? 0) + 1 });
  }

  fingerprint(vm: FakeVm): string {
    return `SHA256:host-${vm.ip}-gen${vm.generation}`;
  }

  /** The commands sent, as text lines `<host>: <cmd>`. */
  lines(filter?: RegExp): string[] {
    return this.commands.filter((c) => !filter || filter.test(c.cmd)).map((c) => `${c.host}: ${c.cmd}`);
  }

  // ------------------------------------------------------------ SSH

  readonly connect = async (target: SshTarget, o: ConnectOptions = {}): Promise<SshSession> => {
    const vm = this.vms.get(target.host);
    const rec: FakeCluster['connects'][number] = { host: target.host, username: target.username, hasPassword: target.password !== undefined, ...(o.hostKey?.pinned ? { pinned: o.hostKey.pinned } : {}), ...(o.deadlineMs !== undefined ? { deadlineMs: o.deadlineMs } : {}), ...(o.attempts !== undefined ? { attempts: o.attempts } : {}) };
    this.connects.push(rec);
    if (!vm || !vm.alive) throw retryableError('VNFM_ERR_SSH_UNREACHABLE', `SSH to ${target.host}: connection refused after ${o.attempts ?? 3} attempt(s)`);
    const fp = this.fingerprint(vm);
    if (o.hostKey?.pinned && o.hostKey.pinned !== fp) throw terminalError('VNFM_ERR_SSH_HOST_KEY', `host key of ${target.host} changed: expected ${o.hostKey.pinned}, got ${fp}`);
    if (!o.hostKey?.pinned) {
      rec.learned = fp;
      await o.hostKey?.learn?.(fp);
    }
    const session: SshSession & { closed: boolean } = {
      host: target.host,
      hostKeyFingerprint: fp,
      closed: false,
      exec: async (cmd, eo = {}) => this.exec(vm, cmd, eo),
      run: async (cmd, eo = {}) => {
        const r = await this.exec(vm, cmd, eo);
        if (r.code !== 0) throw vnfmError('VNFM_ERR_MGMT_COMMAND', `${target.host}: ${eo.label ?? cmd.slice(0, 80)} exited ${r.code}: ${r.stderr || r.stdout}`);
        return r;
      },
      upload: async (path, data, uo = {}) => {
        if (!vm.alive) throw retryableError('VNFM_ERR_SSH_UNREACHABLE', `${vm.ip} gone`);
        const text = typeof data === 'string' ? data : data.toString('utf8');
        this.uploads.push({ host: vm.ip, path, ...(uo.mode !== undefined ? { mode: uo.mode } : {}), data: text });
        vm.files.set(path, text);
      },
      download: async (path) => {
        if (!vm.alive) throw retryableError('VNFM_ERR_SSH_UNREACHABLE', `${vm.ip} gone`);
        const f = vm.files.get(path);
        if (f === undefined) throw vnfmError('VNFM_ERR_MGMT_COMMAND', `${vm.ip}: cat ${path}: No such file or directory`);
        return Buffer.from(f);
      },
      close: () => {
        session.closed = true;
      },
    };
    return session;
  };

  private async exec(vm: FakeVm, cmd: string, o: ExecOptions): Promise<ExecResult> {
    if (!vm.alive) throw retryableError('VNFM_ERR_SSH_UNREACHABLE', `${vm.ip} gone`);
    const stdin = o.stdin === undefined ? undefined : typeof o.stdin === 'string' ? o.stdin : o.stdin.toString('utf8');
    this.commands.push({ host: vm.ip, cmd, sudo: o.sudo === true, ...(stdin !== undefined ? { stdin } : {}) });
    if (this.crashOn?.test(cmd)) throw new Error(`simulated crash while running: ${cmd.slice(0, 40)}`);
    let m: RegExpExecArray | null;
    // installHaproxyConfig: stdin -> private temp file, `haproxy -c`, copy in place, reload (one script)
    if (cmd.startsWith('umask 077\n') && cmd.includes('haproxy -c -f')) {
      if (!o.sudo) return fail(1, 'Permission denied');
      const text = stdin ?? '';
      const lines = cmd.split('\n');
      // framed runtime API commands (before the check / after the reload), answered like the socket
      const framed = (line: string): string => {
        const f = /^rt_out=\$\(printf '%s\\n' '([^']+)' \| .*printf '@@%s-begin@@.*' (\w+) "\$rt_out" \w+ "\$rt"$/.exec(line);
        if (!f) return '';
        if (!vm.tools.has('socat') && !vm.tools.has('nc')) return `@@${f[2]}-begin@@\n\n@@${f[2]}-end 127@@\n`;
        const c = f[1] as string;
        vm.runtime.push(c);
        const out = c.startsWith('show servers state') ? this.serversState(vm).replace(/\n+$/, '') : '';
        return `@@${f[2]}-begin@@\n${out}\n@@${f[2]}-end 0@@\n`;
      };
      const check = lines.findIndex((l) => l.includes('haproxy -c -f'));
      let stdout = lines.slice(0, check).map(framed).join('');
      const live = /cat "\$t" > '([^']+)'/.exec(cmd)?.[1] as string;
      if (vm.haproxyBroken || !/backend kubernetes-apiserver/.test(text)) return fail(97, "[ALERT] config : parsing [x:1] : unknown keyword 'bogus'", stdout);
      vm.files.set(live, text);
      if (lines.some((l) => l === 'systemctl reload haproxy' || l === 'systemctl reload haproxy || exit $?')) {
        vm.reloads++;
        vm.loadedHaproxy = text;
      }
      stdout += lines.slice(check + 1).map(framed).join('');
      return ok(stdout);
    }
    // haproxyRuntime: socat (else nc) on the admin socket, in one command
    if ((m = /^printf '%s\\n' '([^']+)' \| \{ if command -v socat >\/dev\/null 2>&1; then socat stdio UNIX-CONNECT:'([^']+)'; elif .* fi; \}$/.exec(cmd))) {
      if (!vm.tools.has('socat') && !vm.tools.has('nc')) return fail(127, '');
      const c = m[1] as string;
      vm.runtime.push(c);
      if (c.startsWith('show servers state')) return ok(this.serversState(vm));
      return ok('\n');
    }
    if ((m = /^cat > '([^']+)'$/.exec(cmd))) {
      if (!o.sudo) return fail(1, 'Permission denied');
      vm.files.set(m[1] as string, stdin ?? '');
      return ok();
    }
    if ((m = /^cat '([^']+)' > '([^']+)'$/.exec(cmd))) {
      const src = vm.files.get(m[1] as string);
      if (src === undefined) return fail(1, 'No such file');
      vm.files.set(m[2] as string, src);
      return ok();
    }
    if ((m = /^rm -f '([^']+)'$/.exec(cmd))) {
      vm.files.delete(m[1] as string);
      return ok();
    }
    if ((m = /^test -e '([^']+)'$/.exec(cmd))) return vm.files.has(m[1] as string) ? ok() : fail(1, '');
    if ((m = /^command -v '([\w-]+)'$/.exec(cmd))) return vm.tools.has(m[1] as string) ? ok(`/usr/bin/${m[1]}\n`) : fail(1, '');
    if ((m = /^haproxy -c -f '([^']+)'$/.exec(cmd))) {
      const text = vm.files.get(m[1] as string) ?? '';
      if (vm.haproxyBroken || !/backend kubernetes-apiserver/.test(text)) return fail(1, "[ALERT] config : parsing [x:1] : unknown keyword 'bogus'");
      return ok('Configuration file is valid\n');
    }
    if (cmd === 'systemctl reload haproxy') {
      vm.reloads++;
      vm.loadedHaproxy = vm.files.get('/etc/haproxy/haproxy.cfg');
      return ok();
    }
    if ((m = /^printf '%s\\n' '([^']+)' \| socat stdio UNIX-CONNECT:'([^']+)'$/.exec(cmd))) {
      const c = m[1] as string;
      vm.runtime.push(c);
      if (c.startsWith('show servers state')) return ok(this.serversState(vm));
      return ok('\n');
    }
    if (cmd === 'kubeadm token create --ttl 1h') {
      const t = `tok${String(++this.seq).padStart(3, '0')}.${'0123456789abcdef'}`;
      this.joinTokens.push(t);
      return ok(`${t}\n`);
    }
    if (cmd === 'kubeadm init phase upload-certs --upload-certs') {
      const k = `${String(++this.seq).padStart(4, '0')}${'c'.repeat(60)}`;
      this.certKeys.push(k);
      return ok(`[upload-certs] Storing the certificates in Secret "kubeadm-certs" in the "kube-system" Namespace\n[upload-certs] Using certificate key:\n${k}\n`);
    }
    if (cmd.startsWith('kubeadm reset -f')) {
      vm.resets++;
      return ok('[reset] done\n');
    }
    if (cmd.startsWith('ETCDCTL_API=3 etcdctl ')) return this.etcdctl(vm, cmd);
    if (cmd.includes("bash '/tmp/install_k8s_cluster.sh'")) return this.install(vm, cmd);
    return fail(127, `fake: unknown command: ${cmd}`);
  }

  // ------------------------------------------------------------ etcd

  private memberAlive(m: EtcdMemberModel): boolean {
    return this.vms.get(m.ip)?.alive === true && !m.sick && !m.learner;
  }

  private etcdctl(vm: FakeVm, cmd: string): ExecResult {
    const endpoint = /--endpoints (\S+)/.exec(cmd)?.[1] as string;
    if (!/--command-timeout=3s/.test(cmd)) return fail(2, 'test: every etcdctl call must be bounded');
    const json = (ms: EtcdMemberModel[]) =>
      `{"header":{"cluster_id":17953654596774702974,"member_id":${ms[0]?.id ?? 0},"raft_term":2},"members":[${ms
        .map((m) => `{"ID":${m.id},${m.learner && !this.vms.get(m.ip)?.alive ? '' : `"name":"${m.name}",`}"peerURLs":["https://${m.ip}:2380"]${m.learner ? ',"isLearner":true' : `,"clientURLs":["https://${m.ip}:2379"]`}}`)
        .join(',')}]}`;
    if (!this.vms.get(vm.ip)?.alive) return fail(1, 'context deadline exceeded');
    if (cmd.endsWith('member list -w json')) return ok(json(this.members));
    if (cmd.endsWith('endpoint status --cluster -w json')) {
      const live = this.members.filter((m) => this.memberAlive(m));
      const out = `[${live.map((m) => `{"Endpoint":"https://${m.ip}:2379","Status":{"header":{"cluster_id":1,"member_id":${m.id},"revision":1,"raft_term":2},"version":"3.4.23","dbSize":20480,"leader":${this.leader ?? 0},"raftIndex":5000,"raftTerm":2,"raftAppliedIndex":5000,"dbSizeInUse":16384}}`).join(',')}]`;
      return live.length === this.members.filter((m) => !m.learner).length ? ok(out) : fail(1, 'Failed to get the status of endpoint', out);
    }
    if (cmd.endsWith('endpoint health --cluster -w json')) {
      const voting = this.members.filter((m) => !m.learner);
      const out = `[${voting.map((m) => (this.memberAlive(m) ? `{"endpoint":"https://${m.ip}:2379","health":true,"took":"2ms"}` : `{"endpoint":"https://${m.ip}:2379","health":false,"took":"3s","error":"context deadline exceeded"}`)).join(',')}]`;
      return voting.every((m) => this.memberAlive(m)) ? ok(out) : fail(1, 'Error: unhealthy cluster', out);
    }
    let m: RegExpExecArray | null;
    if ((m = /member remove ([0-9a-f]+)$/.exec(cmd))) {
      const id = BigInt(`0x${m[1]}`);
      const before = this.members.length;
      this.members = this.members.filter((x) => x.id !== id);
      if (this.members.length === before) return fail(1, 'Error: etcdserver: member not found');
      if (this.leader === id) this.leader = this.members.find((x) => this.memberAlive(x))?.id;
      return ok(`Member ${m[1]} removed from cluster\n`);
    }
    if ((m = /move-leader ([0-9a-f]+)$/.exec(cmd))) {
      const leader = this.members.find((x) => x.id === this.leader);
      if (!leader || endpoint !== `https://${leader.ip}:2379`) return fail(1, 'Error: etcdserver: not leader');
      this.leader = BigInt(`0x${m[1]}`);
      return ok(`Leadership transferred from ${leader.id.toString(16)} to ${m[1]}\n`);
    }
    return fail(2, `fake etcdctl: unknown ${cmd}`);
  }

  memberNamed(name: string): EtcdMemberModel | undefined {
    return this.members.find((m) => m.name === name);
  }

  private serversState(vm: FakeVm): string {
    const cfg = vm.loadedHaproxy ?? '';
    const lines = [...cfg.matchAll(/^\s*server\s+(\S+)\s+(\S+):(\d+)/gm)].map((m, i) => `3 kubernetes-apiserver ${i + 1} ${m[1]} ${m[2]} 2 0 1 1 5 6 3 4 6 0 0 0 - ${m[3]} - 0 0 - - 0`);
    return `1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n${lines.join('\n')}\n`;
  }

  haproxyConfig(masters: string[]): string {
    const servers = masters.map((ip) => `    server  master${lastOctet(ip)}  ${ip}:6443 check`).join('\n');
    return `global\n    stats socket /run/haproxy/admin.sock mode 660 level admin expose-fd listeners\n    daemon\n\ndefaults\n    mode tcp\n\nfrontend kubernetes-apiserver\n    mode                 tcp\n    bind                 *:16443\n    default_backend      kubernetes-apiserver\n\nbackend kubernetes-apiserver\n    mode        tcp\n    balance     roundrobin\n${servers}\n\nlisten stats\n    bind                 *:1080\n    stats auth           admin:awesomePassword\n`;
  }

  adminConf(): string {
    const server = `https://${this.clusterIp}:${this.ha ? 16443 : 6443}`;
    return `apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: ${Buffer.from(this.caPem).toString('base64')}\n    server: ${server}\n  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n    user: kubernetes-admin\n  name: kubernetes-admin@kubernetes\ncurrent-context: kubernetes-admin@kubernetes\nusers:\n- name: kubernetes-admin\n  user:\n    token: bootstrap-admin-credential\n`;
  }

  // ------------------------------------------------------------ the install script

  private install(vm: FakeVm, cmd: string): ExecResult {
    const vars: Record<string, string> = {};
    const env: Record<string, string> = {};
    let args: string[] = [];
    for (const part of cmd.split(' && ')) {
      let m: RegExpExecArray | null;
      if ((m = /^\. '([^']+)'$/.exec(part))) {
        const f = vm.files.get(m[1] as string);
        if (f === undefined) return fail(1, 'no such file');
        for (const line of f.split('\n')) {
          const a = /^(\w+)=(.*)$/.exec(line);
          if (a) vars[a[1] as string] = words(a[2] as string, {})[0] ?? '';
          const x = /^export ((?:\w+ ?)+)$/.exec(line);
          if (x) for (const n of (x[1] as string).trim().split(' ')) env[n] = vars[n] ?? '';
        }
      } else if ((m = /^rm -f '([^']+)'$/.exec(part))) vm.files.delete(m[1] as string);
      else if ((m = /^export (\w+)=(.*)$/.exec(part))) env[m[1] as string] = words(m[2] as string, {})[0] ?? '';
      else if (part.startsWith('bash ')) args = words(part, vars).slice(2);
    }
    this.installs.push({ host: vm.ip, args, env, vars });
    const opt = (f: string) => {
      const i = args.indexOf(f);
      return i >= 0 ? args[i + 1] : undefined;
    };
    const token = opt('-t') ?? env.HEALVNFM_TOKEN;
    const hash = opt('-s') ?? env.HEALVNFM_CA_HASH;
    const key = opt('-k') ?? env.HEALVNFM_CERT_KEY;
    const out: string[] = ['Installing Kubernetes...', '[preflight] Running pre-flight checks'];
    if (this.failInstallOn.has(vm.ip)) {
      return fail(1, `[kubeadm] running: kubeadm join ${this.clusterIp}:6443 --token ${token} --discovery-token-ca-cert-hash sha256:${hash}\nerror execution phase preflight: couldn't validate the identity of the API Server`);
    }
    if (this.silentInstallOn.has(vm.ip)) {
      out.push('E: Unable to locate package kubeadm', '[bootstrap-token] Using token: abcdef.0123456789abcdef', 'bash: line 12: kubeadm: command not found', 'sed: can\'t read /etc/kubernetes/admin.conf: No such file or directory');
      return ok(`${out.join('\n')}\n`);
    }
    if (opt('-w')) {
      const ip = opt('-w') as string;
      if (!token || !this.joinTokens.includes(token) || hash !== this.caHash) return fail(255, 'error execution phase preflight: couldn\'t validate the identity of the API Server');
      this.kube.node(`worker${lastOctet(ip)}`, true);
      vm.files.set('/etc/kubernetes/kubelet.conf', 'x');
      out.push('This node has joined the cluster');
      out.push(`HEALVNFM-RESULT ${JSON.stringify({ role: 'worker', node: `worker${lastOctet(ip)}`, joined: true })}`);
      return ok(`${out.join('\n')}\n`);
    }
    const masters = (opt('-m') ?? '').split(',');
    const name = `master${lastOctet(vm.ip)}`;
    if (masters[0] === vm.ip) {
      vm.files.set('/etc/kubernetes/admin.conf', this.adminConf());
      vm.files.set('/etc/kubernetes/pki/ca.crt', this.caPem);
      const id = this.nextMemberId++;
      this.members = [{ id, name, ip: vm.ip, learner: false }];
      this.leader = id;
      this.kube.node(name, true);
      this.kube.pod('kube-system', `kube-apiserver-${name}`, name, { mirror: true });
      for (const c of ['etcd', 'kube-controller-manager', 'kube-scheduler']) this.kube.pod('kube-system', `${c}-${name}`, name, { mirror: true });
      if (this.ha) {
        vm.files.set('/etc/haproxy/haproxy.cfg', this.haproxyConfig(masters));
        vm.loadedHaproxy = vm.files.get('/etc/haproxy/haproxy.cfg');
      }
      const t = `main${String(++this.seq).padStart(2, '0')}.fedcba9876543210`;
      const k = `${'d'.repeat(60)}${String(++this.seq).padStart(4, '0')}`;
      this.joinTokens.push(t);
      this.certKeys.push(k);
      const server = `https://${this.clusterIp}:${this.ha ? 16443 : 6443}`;
      out.push(`[upload-certs] Using certificate key:`, k, `[bootstrap-token] Using token: ${t}`);
      out.push(`token:${t}`, `server:${server}`, ...this.caPem.trim().split('\n'), `ssl_ca_cert_hash:${this.caHash}`, `certificate_key:${k}`);
      out.push(`HEALVNFM-RESULT ${JSON.stringify({ role: 'master', node: name, joined: true, token: t, server, caHash: this.caHash, certificateKey: k, caCert: this.caPem })}`);
      return ok(`${out.join('\n')}\n`);
    }
    // another master: kubeadm join --control-plane
    if (!token || !this.joinTokens.includes(token) || hash !== this.caHash || !key || !this.certKeys.includes(key)) return fail(255, 'error execution phase control-plane-prepare: invalid join material');
    if (this.members.some((m) => m.ip === vm.ip)) return fail(255, 'error execution phase control-plane-join/etcd: etcdserver: Peer URLs already exists');
    if (this.kube.obj('Node', undefined, name) && this.kube.obj('Node', undefined, name)?.status?.conditions?.[0]?.status === 'True') return fail(255, `a Node with name "${name}" and status "Ready" already exists in the cluster`);
    this.members.push({ id: this.nextMemberId++, name, ip: vm.ip, learner: false });
    this.kube.node(name, true);
    for (const c of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) this.kube.pod('kube-system', `${c}-${name}`, name, { mirror: true });
    vm.files.set('/etc/kubernetes/admin.conf', this.adminConf());
    vm.files.set('/etc/kubernetes/pki/ca.crt', this.caPem);
    vm.files.set('/etc/haproxy/haproxy.cfg', this.haproxyConfig(masters));
    vm.loadedHaproxy = vm.files.get('/etc/haproxy/haproxy.cfg');
    out.push('This node has joined the cluster and a new control plane instance was created');
    out.push(`HEALVNFM-RESULT ${JSON.stringify({ role: 'master', node: name, joined: true })}`);
    return ok(`${out.join('\n')}\n`);
  }
}
