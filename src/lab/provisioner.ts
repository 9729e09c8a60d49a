/**
 * Binds the fleet to the simulated OpenStack, in-process. The provisioner subscribes to the
 * cloud's server lifecycle events (no polling) and, on each, reconciles the fleet with what the
 * cloud has now:
 *
 * - a server with a port on the lab network, ACTIVE, with fixed IP X = host X running sshd, of the
 *   server's generation (its id);
 * - a server deleted, or replaced by another (a heal: Heat keeps the port, so the IP) = the host's
 *   processes killed, its state and `/etc` wiped, a new machine (new host key) for the new server;
 * - a server that stops being ACTIVE (the sim's faults: ERROR, a compute host down; SHUTOFF) =
 *   the host's processes killed; ACTIVE again (recovered, started) = the host started again (same
 *   key, same disk); rebooted = killed and started. A host killed while its server stays ACTIVE
 *   ({@link Provisioner.killHost}, a crashed VM) stays dead until its server's state changes;
 * - every time a host's processes die, the Kubernetes Node the host registered (its name in
 *   `<state dir>/node-name`, written by the stand-ins) is marked failed in the lab Kubernetes
 *   (kubelet gone); when the same host starts again, the Node is recovered (kubelet back);
 * - VIPs (keepalived's job): an address in a port's `allowed_address_pairs` is held, as a
 *   secondary address, by a running host among the servers whose port allows it (the lowest IP
 *   when it is first placed); it stays there while that host runs and, when the host dies or is
 *   replaced, moves to the host running the longest (keepalived with a track script: a fresh
 *   machine has no HAProxy yet), never back by itself. Further fixed IPs of a server on the lab
 *   network are held by its host the same way.
 *
 * - floating IPs (Neutron's NAT): a floating IP bound to a lab port reaches the host of the
 *   port's fixed IP, whichever server holds the port now (see floating.ts).
 *
 * Servers without a port on the lab network are not hosts. Reconciles run one at a time; events
 * during one make one more.
 */
import type { ServerLifecycleEvent, ServerView } from '../sim/openstack/index.ts';
import { compareIps } from './addresses.ts';
import type { FloatingNat } from './floating.ts';
import type { Fleet, LabLogger } from './hosts.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the provisioner needs of the simulated OpenStack (in-process). */
export interface LabCloud {
  onServerLifecycle(listener: (ev: ServerLifecycleEvent) => void): () => void;
  serverViews(): ServerView[];
}

/** What the provisioner needs of the lab Kubernetes (in-process). */
export interface LabNodes {
  failNode(name: string, opts?: { evictAfterMs?: number }): boolean;
  recoverNode(name: string): boolean;
}

/** Options of {@link Provisioner}. */
export interface ProvisionerOptions {
  cloud: LabCloud;
  fleet: Fleet;
  /** Id of the lab network in the simulated Neutron. */
  networkId: string;
  /** The lab Kubernetes, whose Nodes follow their hosts. */
  nodes?: LabNodes;
  /** When a failed Node's pods are evicted (the real default toleration: 300 s). @default 300000 */
  podEvictionTimeoutMs?: number;
  /** The NAT of floating IPs bound to lab ports (none: floating IPs do not answer). */
  floating?: FloatingNat;
  logger?: LabLogger;
}

interface Desired {
  ip: string;
  serverId: string;
  serverName: string;
  running: boolean;
  /** Further lab addresses of the server (held by its host). */
  extra: string[];
  /** `allowed_address_pairs` addresses of its lab ports. */
  allowed: string[];
  /** Floating IPs bound to its lab ports -> the fixed IP each maps to. */
  floating: [string, string][];
  createdAt: string;
}

const silent: LabLogger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** Keeps the fleet in step with the simulated cloud's servers. */
export class Provisioner {
  private unsubscribe: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private dirty = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private waiters: (() => void)[] = [];
  /** Extra address -> host holding it. */
  private readonly held = new Map<string, string>();
  /** Per host address: the server and whether it was ACTIVE at the last reconcile. */
  private readonly seen = new Map<string, { serverId: string; running: boolean }>();
  /** Servers rebooted since the last reconcile. */
  private readonly reboots = new Set<string>();
  private readonly log: LabLogger;
  /** Last error of a reconcile, cleared by a clean one (for diagnostics and tests). */
  lastError: string | undefined;

  constructor(private readonly o: ProvisionerOptions) {
    this.log = o.logger ?? silent;
  }

  /** Subscribes to the cloud and reconciles once (resolves after that first reconcile). */
  async start(): Promise<void> {
    // Hosts adopted from a killed lab: the VIPs they hold stay theirs, and count as placed before
    // (a later move goes to the longest-running host, not to the lowest IP, which may be a new VM
    // without HAProxy); the adopted hosts count as running since now, before any host made later.
    const now = Date.now();
    for (const h of this.o.fleet.list()) {
      if (h.running) this.upSince.set(h.ip, { generation: h.generation, at: now });
      for (const a of h.extraAddresses) {
        this.held.set(a, h.ip);
        this.everHeld.add(a);
      }
    }
    this.unsubscribe = this.o.cloud.onServerLifecycle((ev) => {
      if (ev.cause === 'reboot' && ev.server) this.reboots.add(ev.server.id);
      // A deleted server's machine stops now, not at the next reconcile: its address may be given
      // to a new server at once (a whole-VNF heal), which must not find the old sshd answering.
      if (ev.event === 'server.deleted' && ev.server) {
        for (const h of this.o.fleet.list()) {
          if (h.generation !== ev.server.id) continue;
          this.o.fleet.killNow(h.ip);
          this.failNode(h.ip, 'server deleted');
        }
      }
      this.kick();
    });
    this.kick();
    await this.settled();
  }

  /** Unsubscribes and waits for the reconcile in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.running;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves when no reconcile is running or pending. */
  settled(): Promise<void> {
    if (!this.running && !this.dirty) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Extra addresses (VIPs) and the host holding each. */
  holders(): Map<string, string> {
    return new Map(this.held);
  }

  /** Asks for a reconcile (coalesced with one in flight). */
  kick(): void {
    if (this.stopped) return;
    this.dirty = true;
    if (!this.running) this.running = this.loop();
  }

  private async loop(): Promise<void> {
    try {
      while (this.dirty && !this.stopped) {
        this.dirty = false;
        try {
          await this.reconcile();
          this.failures = 0;
          this.lastError = undefined;
        } catch (e) {
          this.failures++;
          this.lastError = (e as Error).message;
          const delay = Math.min(30_000, 500 * 2 ** Math.min(this.failures - 1, 6));
          this.log.error({ err: this.lastError, retryInMs: delay }, 'lab: bringing the hosts in line with the cloud failed; retrying');
          if (this.retryTimer) clearTimeout(this.retryTimer);
          this.retryTimer = setTimeout(() => this.kick(), delay);
          this.retryTimer.unref();
        }
      }
    } finally {
      this.running = undefined;
      if (!this.dirty || this.stopped) for (const w of this.waiters.splice(0)) w();
      else this.running = this.loop();
    }
  }

  /** What the cloud says the hosts should be. */
  private desired(): Map<string, Desired> {
    const { fleet, networkId } = this.o;
    const out = new Map<string, Desired>();
    const views = this.o.cloud.serverViews().sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
    for (const v of views) {
      const ports = v.ports.filter((p) => p.networkId === networkId);
      const ips = ports.flatMap((p) => p.fixedIps).filter((ip) => fleet.subnet.contains(ip) && ip !== fleet.bridgeIp);
      const [primary, ...extra] = ips;
      if (primary === undefined) continue;
      const allowed = ports
        .flatMap((p) => p.allowedAddresses)
        .map((a) => a.replace(/\/32$/, ''))
        .filter((a) => fleet.subnet.contains(a));
      const floating = ports.flatMap((p) => p.floatingIps ?? []).filter((f) => fleet.subnet.contains(f.fixedIp)).map((f): [string, string] => [f.floatingIp, f.fixedIp]);
      // two servers on one address (a replacement in the middle of a Heat step): the newer wins
      out.set(primary, { ip: primary, serverId: v.id, serverName: v.name, running: v.status === 'ACTIVE', extra, allowed, floating, createdAt: v.createdAt });
    }
    return out;
  }

  private nodeNameOf(ip: string): string | undefined {
    try {
      const name = readFileSync(join(this.o.fleet.stateDirOf(ip), 'node-name'), 'utf8').trim();
      return name || undefined;
    } catch {
      return undefined;
    }
  }

  private failNode(ip: string, why: string): void {
    const name = this.nodeNameOf(ip);
    if (!name || !this.o.nodes) return;
    try {
      if (this.o.nodes.failNode(name, { evictAfterMs: this.o.podEvictionTimeoutMs ?? 300_000 })) this.log.info({ ip, node: name, why }, 'lab: Kubernetes node of the host marked failed');
    } catch (e) {
      this.log.warn({ ip, node: name, err: (e as Error).message }, 'lab: marking the Kubernetes node of the host failed did not work');
    }
  }

  private recoverNode(ip: string): void {
    const name = this.nodeNameOf(ip);
    if (!name || !this.o.nodes) return;
    try {
      if (this.o.nodes.recoverNode(name)) this.log.info({ ip, node: name }, 'lab: Kubernetes node of the host ready again');
    } catch (e) {
      this.log.warn({ ip, node: name, err: (e as Error).message }, 'lab: marking the Kubernetes node of the host ready did not work');
    }
  }

  /**
   * "The VM died" without the cloud knowing (a kernel panic: Nova still says ACTIVE): every
   * process of the host killed, its Node failed, its VIPs moved to the next host. It stays dead
   * until its server changes state (recovered, started, rebooted) or {@link startHost}.
   */
  async killHost(ip: string): Promise<void> {
    await this.o.fleet.kill(ip);
    this.failNode(ip, 'host killed');
    this.log.info({ ip }, 'lab host down: killed');
    this.kick();
    await this.settled();
  }

  /** Starts a host that was killed (a reboot: same key, same disk), its Node Ready again. */
  async startHost(ip: string): Promise<void> {
    await this.o.fleet.start(ip);
    this.recoverNode(ip);
    this.log.info({ ip }, 'lab host up again (started)');
    this.kick();
    await this.settled();
  }

  private async reconcile(): Promise<void> {
    const { fleet } = this.o;
    const want = this.desired();
    const reboots = new Set(this.reboots);
    this.reboots.clear();
    const errors: string[] = [];
    const step = async (ip: string, fn: () => Promise<void>): Promise<void> => {
      try {
        await fn();
      } catch (e) {
        errors.push(`${ip}: ${(e as Error).message}`);
      }
    };
    // Hosts are independent machines (the fleet serialises the work on one address): they are
    // torn down and booted side by side, as a cloud boots a stack's servers, not one after the other.
    // hosts whose server is gone
    const gone = fleet.list().filter((h) => !want.has(h.ip));
    await Promise.all(
      gone.map((h) =>
        step(h.ip, async () => {
          if (h.running) this.failNode(h.ip, 'server deleted');
          this.forgetHolder(h.ip);
          await fleet.destroy(h.ip);
          this.seen.delete(h.ip);
          this.log.info({ ip: h.ip, server: h.generation }, 'lab host down: server deleted');
        }),
      ),
    );
    const wanted = [...want.values()].sort((a, b) => compareIps(a.ip, b.ip));
    await Promise.all(wanted.map((d) => step(d.ip, () => this.follow(d, reboots))));
    await this.placeAddresses(want).catch((e: Error) => errors.push(`addresses: ${e.message}`));
    if (this.o.floating) {
      // Neutron's NAT follows the port: whichever server holds it now (a healed one too)
      const nat = new Map<string, string>();
      for (const d of want.values()) for (const [f, x] of d.floating) nat.set(f, x);
      await this.o.floating.apply(nat).catch((e: Error) => errors.push(`floating IPs: ${e.message}`));
    }
    if (errors.length > 0) throw new Error(errors.join('; '));
  }

  /** One host brought in line with its server: made (or remade for a new server), rebooted, started or stopped. */
  private async follow(d: Desired, reboots: Set<string>): Promise<void> {
    const { fleet } = this.o;
    const h = fleet.host(d.ip);
    const prev = this.seen.get(d.ip);
    if (!h || h.generation !== d.serverId) {
      if (h) {
        if (h.running) this.failNode(h.ip, 'server replaced');
        this.forgetHolder(h.ip);
        this.log.info({ ip: h.ip, server: h.generation, by: d.serverId }, 'lab host down: server replaced');
      }
      this.seen.delete(d.ip);
      const made = await fleet.create(d.ip, { generation: d.serverId, start: d.running });
      if (d.running) this.log.info({ ip: d.ip, server: d.serverId, name: d.serverName, hostname: made.hostname, hostKey: made.hostKey.fingerprint }, 'lab host up');
      else this.log.info({ ip: d.ip, server: d.serverId, name: d.serverName }, 'lab host made, not started: its server is not ACTIVE');
    } else if (reboots.has(d.serverId) && d.running) {
      // a reboot: the machine goes down and comes back with its disk
      if (h.running) {
        await fleet.kill(d.ip);
        this.failNode(d.ip, 'server rebooted');
      }
      await fleet.start(d.ip);
      this.recoverNode(d.ip);
      this.log.info({ ip: d.ip, server: d.serverId, name: d.serverName }, 'lab host rebooted');
    } else if (prev === undefined || prev.serverId !== d.serverId || prev.running !== d.running) {
      // first sight (start, adoption) or a change of the server's state: follow it. A host
      // killed while its server stayed ACTIVE stays dead, as a crashed VM does.
      if (d.running && !h.running) {
        await fleet.start(d.ip);
        this.recoverNode(d.ip);
        this.log.info({ ip: d.ip, server: d.serverId, name: d.serverName }, 'lab host up again (server ACTIVE)');
      } else if (!d.running && h.running) {
        await fleet.kill(d.ip);
        this.failNode(d.ip, 'server not ACTIVE');
        this.log.info({ ip: d.ip, server: d.serverId, name: d.serverName }, 'lab host down: server not ACTIVE (processes killed)');
      }
    }
    this.seen.set(d.ip, { serverId: d.serverId, running: d.running });
  }

  /** Since when each running host runs (its generation then), for VIP moves. */
  private readonly upSince = new Map<string, { generation: string; at: number }>();
  /** VIPs that had a holder once (a move goes to the longest-running host, not the lowest IP). */
  private readonly everHeld = new Set<string>();

  private forgetHolder(ip: string): void {
    for (const [a, holder] of this.held) if (holder === ip) this.held.delete(a);
  }

  /** Extra fixed IPs on their server's host; each VIP on its running holder, else on the longest-running host allowed to hold it. */
  private async placeAddresses(want: Map<string, Desired>): Promise<void> {
    const { fleet } = this.o;
    const live = (ip: string): boolean => fleet.host(ip)?.running === true;
    const target = new Map<string, string>();
    for (const d of want.values()) if (live(d.ip)) for (const a of d.extra) target.set(a, d.ip);
    const candidates = new Map<string, string[]>();
    for (const d of want.values()) {
      if (!live(d.ip)) continue;
      for (const a of d.allowed) {
        if (want.has(a) || target.has(a)) continue; // some host's own address
        candidates.set(a, [...(candidates.get(a) ?? []), d.ip]);
      }
    }
    // Like keepalived with a track script: the holder keeps the VIP while it runs. When it must
    // move, it goes to the host running the longest (a replaced or restarted host has no HAProxy
    // yet); the first placement takes the lowest IP.
    const now = Date.now();
    for (const d of want.values()) {
      const h = fleet.host(d.ip);
      const since = this.upSince.get(d.ip);
      if (!h?.running) this.upSince.delete(d.ip);
      else if (since === undefined || since.generation !== h.generation) this.upSince.set(d.ip, { generation: h.generation, at: now });
    }
    for (const [a, ips] of candidates) {
      const current = this.held.get(a);
      if (current !== undefined && ips.includes(current)) target.set(a, current);
      else if (!this.everHeld.has(a)) target.set(a, [...ips].sort(compareIps)[0] as string);
      else target.set(a, [...ips].sort((x, y) => (this.upSince.get(x)?.at ?? now) - (this.upSince.get(y)?.at ?? now) || compareIps(x, y))[0] as string);
    }
    for (const [a, holder] of [...this.held]) {
      if (target.get(a) === holder) continue;
      if (fleet.host(holder)) await fleet.removeAddress(holder, a);
      this.held.delete(a);
      if (!target.has(a)) this.log.info({ address: a, from: holder }, 'lab: address no longer held (no running host may hold it)');
    }
    for (const [a, holder] of target) {
      if (this.held.get(a) === holder) continue;
      await fleet.addAddress(holder, a);
      this.held.set(a, holder);
      this.everHeld.add(a);
      this.log.info({ address: a, host: holder }, 'lab: address held by host');
    }
  }
}
