/**
 * The fleet of lab hosts: each "VM" is a Linux network namespace `hvlab-<a>-<b>-<c>-<d>` on the
 * bridge `hvlab0`, with its own `/etc` overlay (`/etc/netns/<ns>/{haproxy,kubernetes,hvlab}/` and
 * `hosts`, `hostname`), its own hostname (a UTS namespace per boot) and a real sshd on its address,
 * with a host key of its own per VM generation (a replaced server presents a new key).
 *
 * Create / destroy a host for an address, kill every process of a host ("the VM died": every
 * process whose network namespace is the host's, from `ip netns pids`), start it again (a reboot:
 * same key, same disk), hold extra addresses (a VIP). Teardown goes by PID and by name, and touches
 * only what carries the `hvlab` prefix. At open, what a previous lab left is cleaned up, except
 * hosts a lab of the same directory left running (the VNFM was killed): those are adopted as they
 * are, so a VNFM crash does not take the VMs down.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { SAFE_VALUE } from './access.ts';
import { compareIps, intToIp, ipOfNamespace, ipToInt, isLabVeth, LAB_BRIDGE, type LabSubnet, namespaceOf, parseLabCidr, vethOf } from './addresses.ts';
import { acquireLabLock, LAB_RUN_DIR } from './lock.ts';
import { run, SYSTEM_PATH } from './sh.ts';

/** The logging surface the lab uses (a pino logger fits). */
export interface LabLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

const silent: LabLogger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** Options of {@link Fleet.open}. */
export interface FleetOptions {
  /** The lab subnet, e.g. `10.87.0.0/24`; the bridge gets its `.1`. */
  cidr: string;
  /** Absolute directory of the lab's files: `hosts/<ip>/` (state dirs), `machines/<ip>/` (sshd), `shared/`. */
  labDir: string;
  /** Absolute directory of the hosts' stand-in commands (`HVLAB_BIN`, first on the hosts' PATH). */
  binDir: string;
  /** The one login user of the hosts (sshd `AllowUsers`). */
  user: string;
  /** Extra `/etc/hvlab/env` entries (`HVLAB_K8S_URL`, `HVLAB_K8S_TOKEN`, `HVLAB_K8S_CA`). */
  env?: Record<string, string>;
  logger?: LabLogger;
  /** How long to wait for another lab on this machine to stop. @default 0 */
  waitForLockMs?: number;
  /** Adopt the running hosts a killed lab of the same directory left. @default true */
  adopt?: boolean;
}

/** A lab host as the fleet sees it. */
export interface HostInfo {
  readonly ip: string;
  /** `hvlab-10-87-0-11`. */
  readonly namespace: string;
  /** The generation (the server it stands for); a new generation is a new machine. */
  readonly generation: string;
  /** The hostname it boots with (`/etc/hostname` of the host, initially `vm-<last octet>`). */
  readonly hostname: string;
  /** Whether its sshd runs. */
  readonly running: boolean;
  readonly sshdPid: number | undefined;
  /** Its writable state directory (`HVLAB_STATE`). */
  readonly stateDir: string;
  /** Its `/etc` overlay, `/etc/netns/<ns>`. */
  readonly etcDir: string;
  /** Its SSH host key: type, base64 blob and OpenSSH fingerprint (`SHA256:...`). */
  readonly hostKey: { type: string; base64: string; fingerprint: string };
  /** Extra addresses it holds (VIPs), besides its own. */
  readonly extraAddresses: readonly string[];
}

interface Host {
  ip: string;
  generation: string;
  running: boolean;
  sshdPid: number | undefined;
  extra: Set<string>;
}

interface MachineRecord {
  ip: string;
  generation: string;
  createdAt: string;
}

/** Paths of the `/etc` entries each host gets its own of. */
const ETC_DIRS = ['haproxy', 'kubernetes', 'hvlab'] as const;
const MOUNTPOINTS_FILE = join(LAB_RUN_DIR, 'mountpoints.json');

function alive(pid: number | undefined): boolean {
  if (pid === undefined || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Resolves when `ip:port` accepts a TCP connection (true) or refuses / times out (false). */
function accepts(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port });
    const done = (v: boolean) => {
      s.destroy();
      resolve(v);
    };
    s.setTimeout(1000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** The lab's hosts. Open one with {@link Fleet.open}; {@link Fleet.close} tears everything down. */
export class Fleet {
  private readonly hostsByIp = new Map<string, Host>();
  private env: Record<string, string>;
  private closed = false;
  private readonly log: LabLogger;
  /** Serialises the operations on one host. */
  private readonly queues = new Map<string, Promise<unknown>>();

  private constructor(
    readonly subnet: LabSubnet,
    private readonly opts: FleetOptions,
    private readonly releaseLock: () => void,
  ) {
    this.env = { ...(opts.env ?? {}) };
    this.log = opts.logger ?? silent;
  }

  /** The bridge's address, the hosts' gateway. */
  get bridgeIp(): string {
    return this.subnet.gatewayIp;
  }

  /** The lab's directory. */
  get labDir(): string {
    return this.opts.labDir;
  }

  /** Cluster-wide records of the stand-ins (`HVLAB_SHARED`). */
  get sharedDir(): string {
    return join(this.opts.labDir, 'shared');
  }

  /** State directory of a host (`HVLAB_STATE`). */
  stateDirOf(ip: string): string {
    return join(this.opts.labDir, 'hosts', ip);
  }

  private machineDir(ip: string): string {
    return join(this.opts.labDir, 'machines', ip);
  }

  private etcDir(ip: string): string {
    return `/etc/netns/${namespaceOf(ip)}`;
  }

  /**
   * Takes the machine's lab lock, cleans up what a previous lab left (adopting the hosts a killed
   * lab of the same directory left running), creates the bridge.
   */
  static async open(opts: FleetOptions): Promise<Fleet> {
    const subnet = parseLabCidr(opts.cidr);
    for (const [k, v] of [
      ['labDir', opts.labDir],
      ['binDir', opts.binDir],
    ] as const) {
      if (!v.startsWith('/') || !SAFE_VALUE.test(v)) throw new Error(`lab ${k} ${JSON.stringify(v)} must be an absolute path of letters, digits and ._-/:@+= only`);
    }
    const release = await acquireLabLock({ waitMs: opts.waitForLockMs ?? 0, what: opts.labDir });
    const fleet = new Fleet(subnet, opts, release);
    try {
      await fleet.prepare(opts.adopt ?? true);
    } catch (e) {
      release();
      throw e;
    }
    return fleet;
  }

  private async prepare(adopt: boolean): Promise<void> {
    const { labDir } = this.opts;
    for (const d of ['hosts', 'machines', 'shared']) mkdirSync(join(labDir, d), { recursive: true, mode: 0o755 });
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    mkdirSync('/etc/netns', { recursive: true, mode: 0o755 });
    // `ip netns exec` bind-mounts /etc/netns/<ns>/<x> over /etc/<x>: the mount points must exist.
    const made = readJson<string[]>(MOUNTPOINTS_FILE) ?? [];
    for (const d of ETC_DIRS) {
      const p = `/etc/${d}`;
      if (!existsSync(p)) {
        mkdirSync(p, { mode: 0o755 });
        made.push(p);
      }
    }
    mkdirSync(LAB_RUN_DIR, { recursive: true, mode: 0o755 });
    writeFileSync(MOUNTPOINTS_FILE, JSON.stringify([...new Set(made)]));

    // The bridge: kept (with the hosts on it) only when it has exactly our address.
    const bridge = await run('ip', ['-j', 'addr', 'show', 'dev', LAB_BRIDGE], { allowFail: true });
    let bridgeKept = false;
    if (bridge.code === 0) {
      const info = (JSON.parse(bridge.stdout || '[]') as { addr_info?: { family: string; local: string; prefixlen: number }[] }[])[0];
      const v4 = (info?.addr_info ?? []).filter((a) => a.family === 'inet');
      bridgeKept = v4.length === 1 && v4[0]?.local === this.bridgeIp && v4[0]?.prefixlen === this.subnet.prefixLength;
    }
    const adopting = adopt && bridgeKept;

    // Namespaces of ours: adopt those whose machine record is in our directory, remove the others.
    const adopted: string[] = [];
    const removed: string[] = [];
    for (const ns of await this.namespaces()) {
      const ip = ipOfNamespace(ns) as string;
      const rec = readJson<MachineRecord>(join(this.machineDir(ip), 'machine.json'));
      if (adopting && rec && rec.ip === ip && this.subnet.contains(ip)) {
        const pids = await this.pidsOf(ip);
        let sshdPid: number | undefined;
        try {
          sshdPid = Number(readFileSync(join(this.machineDir(ip), 'sshd.pid'), 'utf8').trim()) || undefined;
        } catch {
          sshdPid = undefined;
        }
        const running = sshdPid !== undefined && pids.includes(sshdPid) && alive(sshdPid);
        this.hostsByIp.set(ip, { ip, generation: rec.generation, running, sshdPid: running ? sshdPid : undefined, extra: new Set(await this.extraAddressesIn(ip)) });
        adopted.push(ip);
      } else {
        await this.removeNamespace(ns, ip);
        removed.push(ns);
      }
    }
    if (bridge.code === 0 && !bridgeKept) await run('ip', ['link', 'del', LAB_BRIDGE], { allowFail: true });
    // Links, /etc overlays and directories nobody owns any more.
    const links = JSON.parse((await run('ip', ['-j', 'link', 'show'])).stdout || '[]') as { ifname: string }[];
    const ownVeths = new Set([...this.hostsByIp.keys()].map(vethOf));
    for (const l of links) if (isLabVeth(l.ifname) && !ownVeths.has(l.ifname)) await run('ip', ['link', 'del', l.ifname], { allowFail: true });
    for (const name of readdirSync('/etc/netns')) {
      const ip = ipOfNamespace(name);
      if (ip !== undefined && !this.hostsByIp.has(ip)) rmSync(`/etc/netns/${name}`, { recursive: true, force: true });
    }
    for (const d of ['hosts', 'machines']) {
      for (const name of readdirSync(join(labDir, d))) if (!this.hostsByIp.has(name)) rmSync(join(labDir, d, name), { recursive: true, force: true });
    }
    if (!bridgeKept) {
      await run('ip', ['link', 'add', LAB_BRIDGE, 'type', 'bridge']);
      await run('ip', ['addr', 'add', `${this.bridgeIp}/${this.subnet.prefixLength}`, 'dev', LAB_BRIDGE]);
    }
    await run('ip', ['link', 'set', LAB_BRIDGE, 'up']);
    for (const ip of adopted) this.writeEnv(ip);
    if (adopted.length > 0 || removed.length > 0) {
      this.log.info({ adopted, removed }, adopted.length > 0 ? 'lab: hosts left running by the previous lab adopted' : 'lab: leftovers of a previous lab removed');
    }
  }

  /** Our namespaces (`hvlab-<ip>`) present on the machine. */
  private async namespaces(): Promise<string[]> {
    const out = (await run('ip', ['-j', 'netns', 'list'])).stdout.trim();
    const list = out ? (JSON.parse(out) as { name: string }[]) : [];
    return list.map((n) => n.name).filter((n) => ipOfNamespace(n) !== undefined);
  }

  /** PIDs of every process whose network namespace is the host's. */
  async pidsOf(ip: string): Promise<number[]> {
    const r = await run('ip', ['netns', 'pids', namespaceOf(ip)], { allowFail: true });
    if (r.code !== 0) return [];
    return r.stdout
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0 && n !== process.pid);
  }

  private async extraAddressesIn(ip: string): Promise<string[]> {
    const r = await run('ip', ['-n', namespaceOf(ip), '-j', 'addr', 'show', 'dev', 'eth0'], { allowFail: true });
    if (r.code !== 0) return [];
    const info = (JSON.parse(r.stdout || '[]') as { addr_info?: { family: string; local: string }[] }[])[0];
    return (info?.addr_info ?? []).filter((a) => a.family === 'inet' && a.local !== ip).map((a) => a.local);
  }

  /** Kills every process of a namespace (repeatedly, until none is left). Returns how many. */
  private async killAll(ip: string): Promise<number> {
    let killed = 0;
    for (let round = 0; round < 100; round++) {
      const pids = await this.pidsOf(ip);
      if (pids.length === 0) return killed;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
          killed++;
        } catch {
          // gone already
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const left = await this.pidsOf(ip);
    if (left.length > 0) throw new Error(`lab host ${ip}: processes ${left.join(', ')} survive SIGKILL`);
    return killed;
  }

  private async removeNamespace(ns: string, ip: string): Promise<void> {
    await this.killAll(ip);
    await run('ip', ['netns', 'del', ns], { allowFail: true });
    await run('ip', ['link', 'del', vethOf(ip)], { allowFail: true });
    rmSync(`/etc/netns/${ns}`, { recursive: true, force: true });
    rmSync(this.machineDir(ip), { recursive: true, force: true });
    rmSync(this.stateDirOf(ip), { recursive: true, force: true });
  }

  /** Runs `fn` after every earlier operation on the same host. */
  private serial<T>(ip: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(ip) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.queues.set(ip, tail);
    void tail.then(() => {
      if (this.queues.get(ip) === tail) this.queues.delete(ip);
    });
    return next;
  }

  private check(ip: string): void {
    if (this.closed) throw new Error('the lab fleet is closed');
    if (!this.subnet.contains(ip) || ip === this.bridgeIp) throw new Error(`${ip} is not a host address of the lab subnet ${this.subnet.cidr} (the bridge is ${this.bridgeIp})`);
  }

  /** The hosts, by address. */
  list(): HostInfo[] {
    return [...this.hostsByIp.keys()].sort(compareIps).map((ip) => this.info(ip) as HostInfo);
  }

  /** One host, or undefined. */
  host(ip: string): HostInfo | undefined {
    return this.hostsByIp.has(ip) ? this.info(ip) : undefined;
  }

  private info(ip: string): HostInfo | undefined {
    const h = this.hostsByIp.get(ip);
    if (!h) return undefined;
    const running = h.running && alive(h.sshdPid);
    return {
      ip,
      namespace: namespaceOf(ip),
      generation: h.generation,
      hostname: this.bootHostname(ip),
      running,
      sshdPid: running ? h.sshdPid : undefined,
      stateDir: this.stateDirOf(ip),
      etcDir: this.etcDir(ip),
      hostKey: this.hostKey(ip),
      extraAddresses: [...h.extra].sort(compareIps),
    };
  }

  private hostKey(ip: string): { type: string; base64: string; fingerprint: string } {
    try {
      const [type, base64] = readFileSync(join(this.machineDir(ip), 'ssh_host_ed25519_key.pub'), 'utf8').trim().split(/\s+/) as [string, string];
      const fingerprint = `SHA256:${createHash('sha256').update(Buffer.from(base64, 'base64')).digest('base64').replace(/=+$/, '')}`;
      return { type, base64, fingerprint };
    } catch {
      return { type: '', base64: '', fingerprint: '' };
    }
  }

  private bootHostname(ip: string): string {
    const fallback = `vm-${ip.split('.')[3]}`;
    try {
      const name = readFileSync(join(this.etcDir(ip), 'hostname'), 'utf8').split('\n')[0]?.trim() ?? '';
      return /^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/.test(name) ? name : fallback;
    } catch {
      return fallback;
    }
  }

  /**
   * Makes sure a host of this generation exists for `ip` and (unless `start: false`) runs. A host
   * of another generation is destroyed first (its processes killed, its disk and `/etc` wiped) and
   * a new machine made: new namespace, new host key, empty state. Same generation: it is started
   * if it is down (a reboot).
   */
  create(ip: string, opts: { generation?: string; start?: boolean } = {}): Promise<HostInfo> {
    this.check(ip);
    return this.serial(ip, async () => {
      const generation = opts.generation ?? `gen-${Date.now().toString(36)}`;
      const existing = this.hostsByIp.get(ip);
      if (existing && existing.generation === generation) {
        if (opts.start !== false && !(existing.running && alive(existing.sshdPid))) await this.boot(ip);
        return this.info(ip) as HostInfo;
      }
      if (existing) await this.teardown(ip);
      await this.makeMachine(ip, generation);
      if (opts.start !== false) await this.boot(ip);
      return this.info(ip) as HostInfo;
    });
  }

  private async makeMachine(ip: string, generation: string): Promise<void> {
    const ns = namespaceOf(ip);
    const machine = this.machineDir(ip);
    rmSync(machine, { recursive: true, force: true });
    rmSync(this.stateDirOf(ip), { recursive: true, force: true });
    mkdirSync(machine, { recursive: true, mode: 0o700 });
    mkdirSync(this.stateDirOf(ip), { recursive: true, mode: 0o755 });
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `hvlab-${ip}`, '-f', join(machine, 'ssh_host_ed25519_key')]);
    writeFileSync(join(machine, 'machine.json'), JSON.stringify({ ip, generation, createdAt: new Date().toISOString() } satisfies MachineRecord));
    // the host's own /etc entries
    const etc = this.etcDir(ip);
    rmSync(etc, { recursive: true, force: true });
    for (const d of ETC_DIRS) mkdirSync(join(etc, d), { recursive: true, mode: 0o755 });
    const name = `vm-${ip.split('.')[3]}`;
    writeFileSync(join(etc, 'hostname'), `${name}\n`);
    writeFileSync(
      join(etc, 'hosts'),
      `127.0.0.1\tlocalhost\n${ip}\t${name}\n\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n`,
    );
    // the network: a namespace with a veth into the bridge
    await run('ip', ['netns', 'del', ns], { allowFail: true });
    await run('ip', ['link', 'del', vethOf(ip)], { allowFail: true });
    await run('ip', ['netns', 'add', ns]);
    await run('ip', ['link', 'add', vethOf(ip), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    await run('ip', ['link', 'set', vethOf(ip), 'master', LAB_BRIDGE, 'up']);
    await run('ip', ['-n', ns, 'addr', 'add', `${ip}/${this.subnet.prefixLength}`, 'dev', 'eth0']);
    await run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    await run('ip', ['-n', ns, 'route', 'add', 'default', 'via', this.bridgeIp]);
    this.hostsByIp.set(ip, { ip, generation, running: false, sshdPid: undefined, extra: new Set() });
    // a new machine has a new MAC address: drop what the others cached of the old one
    await this.forgetNeighbour(ip);
    this.writeEnv(ip);
  }

  private writeEnv(ip: string): void {
    const env: Record<string, string> = {
      HVLAB_IP: ip,
      HVLAB_STATE: this.stateDirOf(ip),
      HVLAB_SHARED: this.sharedDir,
      HVLAB_BIN: this.opts.binDir,
      HVLAB_CIDR: this.subnet.cidr,
      HVLAB_GATEWAY: this.bridgeIp,
      HVLAB_K8S_URL: '',
      HVLAB_K8S_TOKEN: '',
      HVLAB_K8S_CA: '',
      ...this.env,
    };
    const lines = Object.entries(env).map(([k, v]) => {
      if (v !== '' && !SAFE_VALUE.test(v)) throw new Error(`lab env ${k}: value has characters that need quoting`);
      return `${k}=${v}`;
    });
    const file = join(this.etcDir(ip), 'hvlab', 'env');
    mkdirSync(join(this.etcDir(ip), 'hvlab'), { recursive: true, mode: 0o755 });
    writeFileSync(`${file}.tmp`, `# healvnfm lab host ${ip} (written by the lab)\n${lines.join('\n')}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  /** Changes the extra `/etc/hvlab/env` entries and rewrites the env file of every host. */
  setEnv(extra: Record<string, string>): void {
    this.env = { ...this.env, ...extra };
    for (const ip of this.hostsByIp.keys()) this.writeEnv(ip);
  }

  private sshdConfig(ip: string): string {
    const machine = this.machineDir(ip);
    return [
      `# healvnfm lab host ${ip} (written by the lab at each boot)`,
      `ListenAddress ${ip}:22`,
      `HostKey ${join(machine, 'ssh_host_ed25519_key')}`,
      'PidFile none',
      'PasswordAuthentication yes',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin no',
      `AllowUsers ${this.opts.user}`,
      `SetEnv PATH=${this.opts.binDir}:${SYSTEM_PATH}`,
      'Subsystem sftp internal-sftp',
      'UseDNS no',
      'MaxStartups 100:30:200',
      'MaxSessions 64',
      '',
    ].join('\n');
  }

  /** Starts the host's sshd in its namespace and a new UTS namespace; resolves once it accepts connections. */
  private async boot(ip: string): Promise<void> {
    const h = this.hostsByIp.get(ip);
    if (!h) throw new Error(`no lab host ${ip}`);
    if (h.running && alive(h.sshdPid)) return;
    const machine = this.machineDir(ip);
    const cfg = join(machine, 'sshd_config');
    writeFileSync(cfg, this.sshdConfig(ip), { mode: 0o600 });
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    const log = openSync(join(machine, 'sshd.log'), 'a', 0o600);
    const child = spawn('ip', ['netns', 'exec', namespaceOf(ip), 'unshare', '--uts', 'sh', '-c', 'hostname "$1" && exec /usr/sbin/sshd -D -e -f "$2"', 'sh', this.bootHostname(ip), cfg], {
      detached: true,
      stdio: ['ignore', log, log],
      env: { PATH: SYSTEM_PATH, LANG: 'C' },
    });
    closeSync(log);
    child.unref();
    const pid = child.pid;
    let exited: number | null | undefined;
    child.once('exit', (code, signal) => {
      exited = code ?? (signal ? -1 : null);
      if (h.sshdPid === pid) {
        h.running = false;
        h.sshdPid = undefined;
      }
    });
    child.once('error', () => {
      exited = -1;
    });
    if (pid === undefined) throw new Error(`lab host ${ip}: sshd could not be started`);
    h.sshdPid = pid;
    h.running = true;
    writeFileSync(join(machine, 'sshd.pid'), `${pid}\n`);
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (exited !== undefined) {
        const tail = readFileSync(join(machine, 'sshd.log'), 'utf8').trim().split('\n').slice(-3).join(' / ');
        throw new Error(`lab host ${ip}: sshd exited at start (${tail})`);
      }
      if (await accepts(ip, 22)) return;
      if (Date.now() > deadline) throw new Error(`lab host ${ip}: sshd does not accept connections after 15 s`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /**
   * Kills every process of the host at once, synchronously (the caller is the simulated Nova
   * deleting the server: nothing of the old machine may answer on its address once the deletion
   * returns, before a new server gets the address). The bookkeeping follows with {@link kill} or
   * {@link destroy}. Returns how many processes were killed.
   */
  killNow(ip: string): number {
    if (!this.hostsByIp.has(ip)) return 0;
    let killed = 0;
    for (let round = 0; round < 5; round++) {
      const r = spawnSync('ip', ['netns', 'pids', namespaceOf(ip)], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } });
      const pids = (r.status === 0 ? r.stdout : '').split(/\s+/).filter(Boolean).map(Number).filter((n) => Number.isInteger(n) && n > 0 && n !== process.pid);
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
          killed++;
        } catch {
          // already gone
        }
      }
    }
    return killed;
  }

  /**
   * "The VM died": kills every process whose network namespace is the host's (sshd, sessions,
   * whatever the stand-ins started). Its network, disk and `/etc` stay. Returns how many were killed.
   */
  kill(ip: string): Promise<number> {
    this.check(ip);
    return this.serial(ip, async () => {
      const h = this.hostsByIp.get(ip);
      if (!h) throw new Error(`no lab host ${ip}`);
      h.running = false;
      h.sshdPid = undefined;
      return this.killAll(ip);
    });
  }

  /** Starts a host that was killed (a reboot: same host key, same disk and `/etc`). */
  start(ip: string): Promise<HostInfo> {
    this.check(ip);
    return this.serial(ip, async () => {
      await this.boot(ip);
      return this.info(ip) as HostInfo;
    });
  }

  /** Destroys a host: processes killed, namespace and veth deleted, its `/etc`, state and machine dirs wiped. */
  destroy(ip: string): Promise<void> {
    this.check(ip);
    return this.serial(ip, () => this.teardown(ip));
  }

  private async teardown(ip: string): Promise<void> {
    await this.removeNamespace(namespaceOf(ip), ip);
    this.hostsByIp.delete(ip);
  }

  /** Makes the host hold `address` too (a secondary address on its eth0: a VIP). */
  addAddress(ip: string, address: string): Promise<void> {
    this.check(ip);
    if (!this.subnet.contains(address)) throw new Error(`${address} is not in the lab subnet ${this.subnet.cidr}`);
    return this.serial(ip, async () => {
      const h = this.hostsByIp.get(ip);
      if (!h) throw new Error(`no lab host ${ip}`);
      const r = await run('ip', ['-n', namespaceOf(ip), 'addr', 'add', `${address}/${this.subnet.prefixLength}`, 'dev', 'eth0'], { allowFail: true });
      if (r.code !== 0 && !/exists/i.test(r.stderr)) throw new Error(`lab host ${ip}: cannot add ${address}: ${r.stderr.trim()}`);
      h.extra.add(address);
      await this.forgetNeighbour(address);
    });
  }

  /** Stops holding an extra address. */
  removeAddress(ip: string, address: string): Promise<void> {
    this.check(ip);
    return this.serial(ip, async () => {
      const h = this.hostsByIp.get(ip);
      if (!h) return;
      await run('ip', ['-n', namespaceOf(ip), 'addr', 'del', `${address}/${this.subnet.prefixLength}`, 'dev', 'eth0'], { allowFail: true });
      h.extra.delete(address);
      await this.forgetNeighbour(address);
    });
  }

  /** Drops cached neighbour entries of a moved address (root namespace and every host), like a gratuitous ARP would update them. */
  private async forgetNeighbour(address: string): Promise<void> {
    await run('ip', ['neigh', 'flush', 'to', address], { allowFail: true });
    for (const other of this.hostsByIp.keys()) await run('ip', ['-n', namespaceOf(other), 'neigh', 'flush', 'to', address], { allowFail: true });
  }

  /**
   * Tears everything down: every host (by PID, then by name), the bridge, the mount points the lab
   * made in `/etc`, and (`wipe`, the default) the hosts' disks and the shared records. Then the
   * machine's lab lock is released.
   */
  async close(opts: { wipe?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await Promise.allSettled([...this.queues.values()]);
      for (const ip of [...this.hostsByIp.keys()]) {
        try {
          await this.teardown(ip);
        } catch (e) {
          this.log.warn({ ip, err: (e as Error).message }, 'lab: tearing a host down failed');
        }
      }
      // anything of ours that appeared meanwhile
      for (const ns of await this.namespaces()) await this.removeNamespace(ns, ipOfNamespace(ns) as string);
      await run('ip', ['link', 'del', LAB_BRIDGE], { allowFail: true });
      const made = readJson<string[]>(MOUNTPOINTS_FILE) ?? [];
      for (const p of made) {
        try {
          rmdirSync(p);
        } catch {
          // not empty (someone put something there) or gone: leave it
        }
      }
      rmSync(MOUNTPOINTS_FILE, { force: true });
      if (opts.wipe !== false) for (const d of ['hosts', 'machines', 'shared']) rmSync(join(this.opts.labDir, d), { recursive: true, force: true });
    } finally {
      this.releaseLock();
    }
  }
}

/** For tests and the docs: the address `n` of the lab subnet (`10.87.0.<n>` for a /24). */
export function labAddress(subnet: LabSubnet, n: number): string {
  return intToIp(ipToInt(subnet.gatewayIp) - 1 + n);
}
