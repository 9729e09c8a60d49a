/**
 * A stand-in kube-proxy for the lab's hosts: on every running host whose Kubernetes Node (the name
 * in `<state dir>/node-name`, written by the stand-ins) is Ready in the lab Kubernetes, every node
 * port of every `NodePort`/`LoadBalancer` Service (TCP) listens and answers one line,
 * `<namespace>/<service> <port> <node name>\n`, then closes — so a load balancer in front of the
 * nodes can be checked end to end. One `socat` per host and port, started inside the host's network
 * namespace (`ip netns exec`), so it dies with the host like any of its processes.
 *
 * The proxy follows the cluster by listing Services and Nodes every `intervalMs` (the lab's
 * Kubernetes is in this process; a listing is cheap): a new Service or port opens listeners, a
 * deleted Service or a changed node port closes them, a Node going NotReady (its host killed)
 * closes its host's listeners, and they come back when it is Ready again.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { namespaceOf } from './addresses.ts';
import type { Fleet, LabLogger } from './hosts.ts';
import { SYSTEM_PATH } from './sh.ts';

/** Options of {@link NodePortProxy}. */
export interface NodePortProxyOptions {
  fleet: Pick<Fleet, 'list' | 'stateDirOf' | 'pidsOf'>;
  /** The lab Kubernetes (plain-HTTP URL and bearer token). */
  kube: { httpUrl: string; token: string };
  /** @default 300 */
  intervalMs?: number;
  /** @default '/usr/bin/socat' */
  socat?: string;
  logger?: LabLogger;
}

/** One listener: a node port of a Service on one host. */
export interface NodePortListener {
  ip: string;
  port: number;
  /** `<namespace>/<service>`. */
  service: string;
  node: string;
}

interface Running extends NodePortListener {
  key: string;
  reply: string;
  generation: string;
  child: ChildProcess;
  exited: boolean;
}

// biome-ignore lint/suspicious/noExplicitAny: Kubernetes JSON
type Json = any;

const silent: LabLogger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** Keeps the hosts' node-port listeners in step with the lab Kubernetes' Services and Nodes. */
export class NodePortProxy {
  private readonly running = new Map<string, Running>();
  /** Per key: failed starts in a row and the sync from which the next start may be tried. */
  private readonly failures = new Map<string, { count: number; nextSync: number }>();
  private syncs = 0;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private stopped = false;
  private readonly log: LabLogger;
  /** Last error of a sync (diagnostics). */
  lastError: string | undefined;

  constructor(private readonly o: NodePortProxyOptions) {
    this.log = o.logger ?? silent;
  }

  private async reapOrphans(): Promise<void> {
    for (const h of this.o.fleet.list()) {
      for (const pid of await this.o.fleet.pidsOf(h.ip)) {
        let argv: string[];
        try {
          argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        } catch {
          continue;
        }
        if (!/(^|\/)socat$/.test(argv[0] ?? '') || !(argv[1] ?? '').startsWith('TCP-LISTEN:') || !(argv[2] ?? '').startsWith("SYSTEM:echo '")) continue;
        try {
          process.kill(pid, 'SIGTERM');
          this.log.info({ ip: h.ip, pid, listener: argv[1] }, 'lab node ports: a listener left by a previous lab stopped');
        } catch {
          // gone meanwhile
        }
      }
    }
  }

  /** Whether the machine has socat. */
  static available(socat = '/usr/bin/socat'): boolean {
    return existsSync(socat);
  }

  /**
   * Starts following the cluster (first sync awaited). Listeners a previous lab of the same hosts
   * left running (the VNFM was killed; its hosts were adopted) are stopped first, so every
   * listener is one of this proxy's.
   */
  async start(): Promise<void> {
    await this.reapOrphans();
    await this.sync();
    const tick = (): void => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        void this.sync().finally(tick);
      }, this.o.intervalMs ?? 300);
      this.timer.unref();
    };
    tick();
  }

  /** Stops following and closes every listener. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.syncing;
    await Promise.all([...this.running.values()].map((r) => this.close(r)));
  }

  /** The listeners now (host, port, Service, node). */
  listeners(): NodePortListener[] {
    return [...this.running.values()].filter((r) => !r.exited).map(({ ip, port, service, node }) => ({ ip, port, service, node }));
  }

  /** One pass: lists Services and Nodes, opens and closes listeners. Coalesced with one in flight. */
  sync(): Promise<void> {
    this.syncing ??= this.once().finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  private async get(path: string): Promise<Json> {
    const r = await fetch(`${this.o.kube.httpUrl}${path}`, { headers: { authorization: `Bearer ${this.o.kube.token}` } });
    if (!r.ok) throw new Error(`GET ${path}: ${r.status}`);
    return r.json();
  }

  private nodeNameOf(ip: string): string | undefined {
    try {
      return readFileSync(join(this.o.fleet.stateDirOf(ip), 'node-name'), 'utf8').trim() || undefined;
    } catch {
      return undefined;
    }
  }

  private async once(): Promise<void> {
    if (this.stopped) return;
    this.syncs++;
    let services: Json[];
    let nodes: Json[];
    try {
      [services, nodes] = await Promise.all([this.get('/api/v1/services').then((x) => x.items ?? []), this.get('/api/v1/nodes').then((x) => x.items ?? [])]);
      this.lastError = undefined;
    } catch (e) {
      this.lastError = (e as Error).message;
      this.log.debug({ err: this.lastError }, 'lab node ports: listing the cluster failed');
      return;
    }
    const ready = new Set(
      nodes.filter((n) => (n.status?.conditions ?? []).some((c: Json) => c.type === 'Ready' && c.status === 'True')).map((n) => String(n.metadata?.name)),
    );
    const ports: { service: string; port: number }[] = [];
    for (const s of services) {
      if (s.spec?.type !== 'NodePort' && s.spec?.type !== 'LoadBalancer') continue;
      for (const p of s.spec?.ports ?? []) {
        if ((p.protocol ?? 'TCP') !== 'TCP' || !Number.isInteger(p.nodePort)) continue;
        ports.push({ service: `${s.metadata?.namespace ?? 'default'}/${s.metadata?.name}`, port: p.nodePort });
      }
    }
    const want = new Map<string, Omit<Running, 'child' | 'exited'>>();
    for (const h of this.o.fleet.list()) {
      if (!h.running) continue;
      const node = this.nodeNameOf(h.ip);
      if (!node || !ready.has(node)) continue;
      for (const p of ports) {
        const key = `${h.ip}:${p.port}`;
        want.set(key, { key, ip: h.ip, port: p.port, service: p.service, node, generation: h.generation, reply: `${p.service} ${p.port} ${node}` });
      }
    }
    for (const r of [...this.running.values()]) {
      const w = want.get(r.key);
      if (!r.exited) this.failures.delete(r.key); // it bound and runs
      if (!w || w.reply !== r.reply || w.generation !== r.generation || r.exited) {
        await this.close(r);
        if (!w) this.failures.delete(r.key);
      }
    }
    for (const w of want.values()) {
      if (this.running.has(w.key) || this.stopped) continue;
      this.open(w);
    }
  }

  private open(w: Omit<Running, 'child' | 'exited'>): void {
    // a port that keeps failing to bind is retried less and less often (after 2^n syncs, at most 64)
    const f = this.failures.get(w.key);
    if (f && this.syncs < f.nextSync) return;
    const socat = this.o.socat ?? '/usr/bin/socat';
    const child = spawn('ip', ['netns', 'exec', namespaceOf(w.ip), socat, `TCP-LISTEN:${w.port},reuseaddr,fork`, `SYSTEM:echo '${w.reply}'`], {
      env: { PATH: SYSTEM_PATH, LANG: 'C' },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: false,
    });
    const r: Running = { ...w, child, exited: false };
    let err = '';
    child.stderr?.on('data', (d: Buffer) => {
      if (err.length < 2000) err += d.toString();
    });
    child.once('exit', (code, signal) => {
      r.exited = true;
      if (signal === null && code !== 0) {
        const count = (this.failures.get(w.key)?.count ?? 0) + 1;
        this.failures.set(w.key, { count, nextSync: this.syncs + 2 ** Math.min(count, 6) });
        if (count === 1) this.log.warn({ ip: w.ip, port: w.port, service: w.service, code, err: err.trim().split('\n').pop() }, 'lab node ports: listener exited');
      }
    });
    child.once('error', () => {
      r.exited = true;
    });
    this.running.set(w.key, r);
    this.log.debug({ ip: w.ip, port: w.port, service: w.service, node: w.node }, 'lab node ports: listening');
  }

  private async close(r: Running): Promise<void> {
    this.running.delete(r.key);
    if (r.exited) return;
    await new Promise<void>((resolve) => {
      r.child.once('exit', () => resolve());
      r.child.kill('SIGTERM');
      setTimeout(() => {
        if (!r.exited) r.child.kill('SIGKILL');
      }, 2000).unref();
    });
  }
}
