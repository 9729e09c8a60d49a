/**
 * The local OS user at the other end of a TCP connection to the API (Linux): with `apiAuth` none
 * the API trusts a caller on this host only when its socket belongs to the VNFM's own user, root,
 * or a uid of `auth.trustedLocalUids` (docs/security.md).
 *
 * The kernel lists every TCP socket of the network namespace in `/proc/net/tcp` (IPv4) and
 * `/proc/net/tcp6` (IPv6, IPv4-mapped addresses included), with the uid that created it. The
 * caller's socket is the entry whose local address is the connection's remote address and whose
 * remote address is the connection's local address. Only an ESTABLISHED entry that a process still
 * holds (inode not 0) counts: a socket in TIME_WAIT or orphaned by its process is listed with uid 0
 * and tells nothing about its owner.
 *
 * Both files are read asynchronously (never on the event loop), once per new connection, not per
 * request; the lookups of connections that arrive together share one read. The verdict is kept
 * per socket, so the requests of a keep-alive connection reuse it.
 */
import { readFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { endianness, networkInterfaces } from 'node:os';

const LITTLE_ENDIAN = endianness() === 'LE';
const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const;
/** `st` of an established connection in /proc/net/tcp. */
const ESTABLISHED = '01';

/** Eight hex digits of a 32-bit word as /proc/net/tcp prints an address word (host byte order). */
function word(bytes: readonly number[]): string {
  const b = LITTLE_ENDIAN ? [...bytes].reverse() : bytes;
  return b.map((x) => x.toString(16).padStart(2, '0')).join('').toUpperCase();
}

function v4Bytes(ip: string): number[] | undefined {
  const p = ip.split('.');
  if (p.length !== 4) return undefined;
  const n = p.map(Number);
  return n.every((x) => Number.isInteger(x) && x >= 0 && x <= 255) ? n : undefined;
}

function v6Bytes(ip: string): number[] | undefined {
  let s = ip.split('%')[0] as string;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.')) {
    const v4 = v4Bytes(s.slice(lastColon + 1));
    if (!v4) return undefined;
    tail = v4;
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const parse = (x: string) => (x === '' ? [] : x.split(':'));
  const head = parse(halves[0] as string);
  const rest = halves.length === 2 ? parse(halves[1] as string) : [];
  const fill = 8 - head.length - rest.length;
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return undefined;
  const groups = [...head, ...Array(fill).fill('0'), ...rest];
  const out: number[] = [];
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    const n = parseInt(g, 16);
    out.push(n >> 8, n & 0xff);
  }
  if (tail.length) out.splice(12, 4, ...tail);
  return out;
}

/** The IPv4 address of `ip` when it is one (dotted or IPv4-mapped IPv6), else undefined. */
function asV4(ip: string): string | undefined {
  if (v4Bytes(ip)) return ip;
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1] : undefined;
}

/**
 * The `address:port` spellings of an endpoint in /proc/net/tcp (`v4`) and /proc/net/tcp6 (`v6`,
 * IPv4 addresses as IPv4-mapped ones).
 */
export function procEndpoints(ip: string, port: number): { v4?: string; v6?: string } {
  const p = port.toString(16).padStart(4, '0').toUpperCase();
  const four = asV4(ip);
  const bytes6 = four ? [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...(v4Bytes(four) as number[])] : v6Bytes(ip);
  const out: { v4?: string; v6?: string } = {};
  if (four) out.v4 = `${word(v4Bytes(four) as number[])}:${p}`;
  if (bytes6) out.v6 = `${[0, 4, 8, 12].map((i) => word(bytes6.slice(i, i + 4))).join('')}:${p}`;
  return out;
}

/** What a TCP socket table says about one connection's client end. */
export type PeerVerdict = { found: true; uid: number } | { found: false; why: string };

/**
 * Finds the client end of a connection (client `remote`, server `local`, as the server sees them)
 * in the text of /proc/net/tcp and /proc/net/tcp6.
 */
export function findPeer(tables: { v4: string; v6: string }, remote: { ip: string; port: number }, local: { ip: string; port: number }): PeerVerdict {
  const r = procEndpoints(remote.ip, remote.port);
  const l = procEndpoints(local.ip, local.port);
  const wanted: [string, string, string][] = [];
  if (r.v4 && l.v4) wanted.push([tables.v4, r.v4, l.v4]);
  if (r.v6 && l.v6) wanted.push([tables.v6, r.v6, l.v6]);
  let seen: string | undefined;
  for (const [text, mine, theirs] of wanted) {
    for (const line of text.split('\n')) {
      if (!line.includes(mine)) continue;
      const f = line.trim().split(/\s+/);
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (f[1] !== mine || f[2] !== theirs) continue;
      if (f[3] !== ESTABLISHED || f[9] === '0' || f[9] === undefined) {
        seen = `the client's socket is not an established socket held by a process (state ${f[3]})`;
        continue;
      }
      const uid = Number(f[7]);
      if (!Number.isInteger(uid) || uid < 0) continue;
      return { found: true, uid };
    }
  }
  return { found: false, why: seen ?? "the client's socket is not in the host's TCP socket tables" };
}

async function readTables(): Promise<{ v4: string; v6: string }> {
  const [v4, v6] = await Promise.all(TABLES.map((f) => readFile(f, 'latin1').catch(() => '')));
  if (v4 === '' && v6 === '') throw new Error('/proc/net/tcp cannot be read (not Linux?)');
  return { v4: v4 as string, v6: v6 as string };
}

/** True for an address of the loopback range (127.0.0.0/8, ::1, their IPv4-mapped forms). */
export function isLoopbackAddress(a: string): boolean {
  const four = asV4(a);
  return four ? four.startsWith('127.') : a === '::1';
}

/** True for an address of one of this host's network interfaces (or loopback). */
export function isOwnAddress(a: string): boolean {
  if (isLoopbackAddress(a)) return true;
  const four = asV4(a);
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) {
      if (i.address === a || (four !== undefined && i.address === four)) return true;
    }
  }
  return false;
}

/** The decision on one connection: trusted, or refused with the reason. */
export type PeerTrust = { trusted: true } | { trusted: false; why: string };

/**
 * Decides, once per connection, whether a caller on this host is a trusted local user. Callers
 * from other hosts are trusted here (the listen address and `auth.allowUnauthenticated` govern
 * them); in-process requests (`inject`, no real socket) too.
 */
export class LocalPeerGate {
  private readonly verdicts = new WeakMap<object, Promise<PeerTrust>>();
  private waiting: { remote: { ip: string; port: number }; local: { ip: string; port: number }; resolve: (v: PeerVerdict) => void }[] = [];
  private reading = false;
  /** Reads of the socket tables so far (tests and metrics). */
  reads = 0;

  constructor(
    private readonly trustedUids: ReadonlySet<number>,
    private readonly read: () => Promise<{ v4: string; v6: string }> = readTables,
  ) {}

  /** The verdict for the connection of `socket` (computed on its first request, then reused). */
  check(socket: unknown): Promise<PeerTrust> {
    if (!(socket instanceof Socket)) return Promise.resolve({ trusted: true });
    let v = this.verdicts.get(socket);
    if (!v) {
      v = this.decide(socket);
      this.verdicts.set(socket, v);
    }
    return v;
  }

  private async decide(socket: Socket): Promise<PeerTrust> {
    const ip = socket.remoteAddress;
    const port = socket.remotePort;
    const lip = socket.localAddress;
    const lport = socket.localPort;
    if (!ip || port === undefined || !lip || lport === undefined) return { trusted: false, why: 'the connection has no address' };
    if (!isOwnAddress(ip)) return { trusted: true };
    const peer = await this.lookup({ ip, port }, { ip: lip, port: lport });
    if (!peer.found) return { trusted: false, why: `the caller's OS user cannot be determined: ${peer.why}` };
    if (this.trustedUids.has(peer.uid)) return { trusted: true };
    return { trusted: false, why: `the caller runs as uid ${peer.uid}` };
  }

  private lookup(remote: { ip: string; port: number }, local: { ip: string; port: number }): Promise<PeerVerdict> {
    return new Promise((resolve) => {
      this.waiting.push({ remote, local, resolve });
      this.pump();
    });
  }

  /** One read serves every lookup queued before it started; later ones wait for the next read. */
  private pump(): void {
    if (this.reading || this.waiting.length === 0) return;
    const batch = this.waiting;
    this.waiting = [];
    this.reading = true;
    this.reads++;
    this.read()
      .then(
        (tables) => {
          for (const b of batch) b.resolve(findPeer(tables, b.remote, b.local));
        },
        (e: Error) => {
          for (const b of batch) b.resolve({ found: false, why: e.message });
        },
      )
      .finally(() => {
        this.reading = false;
        this.pump();
      });
  }
}
