/**
 * HAProxy configuration text, parsed and edited exactly (shared by the cluster drivers and the
 * load-balancer reconciler). E.g. the kubeadm masters' `backend kubernetes-apiserver` with one
 * `    server  master<N>  <ip>:6443 check` line per master, written by the install script: a
 * server is found by its name token, never by a substring (removing `master1` leaves `master12` alone, spec §2.0.3), and the rest of the file is kept byte for byte.
 * Also the runtime API (stats socket) commands and the parsing of `show servers state`.
 */

/** Section keywords of an HAProxy configuration. */
const SECTION = /^\s*(global|defaults|frontend|backend|listen|peers|resolvers|userlist|program|http-errors|ring|cache|mailers)(?:\s+(\S+))?/;

/** One `server` line of a backend. */
export interface HaproxyServer {
  name: string;
  /** `<ip>:<port>` as written. */
  address: string;
  /** Index of the line in the file (0-based). */
  line: number;
}

interface Section {
  kind: string;
  name: string | undefined;
  /** First line (the header) and the line after the last one. */
  start: number;
  end: number;
}

function linesOf(text: string): string[] {
  return text.split('\n');
}

function stripComment(line: string): string {
  const i = line.indexOf('#');
  return i >= 0 ? line.slice(0, i) : line;
}

function sections(lines: readonly string[]): Section[] {
  const out: Section[] = [];
  lines.forEach((raw, i) => {
    const m = SECTION.exec(stripComment(raw));
    if (!m) return;
    const prev = out[out.length - 1];
    if (prev) prev.end = i;
    out.push({ kind: m[1] as string, name: m[2], start: i, end: lines.length });
  });
  return out;
}

function sectionOf(lines: readonly string[], kind: 'backend' | 'listen', name: string): Section | undefined {
  return sections(lines).find((s) => (s.kind === kind || s.kind === 'listen') && s.name === name);
}

/** The sections (`frontend x`, `backend y`, ...) of a configuration, in file order. */
export function listSections(text: string): { kind: string; name: string | undefined; start: number; end: number }[] {
  return sections(linesOf(text));
}

const SERVER = /^\s*server\s+(\S+)\s+(\S+)/;

/** The servers of a backend (in file order); undefined when the backend does not exist. */
export function listServers(text: string, backend: string): HaproxyServer[] | undefined {
  const lines = linesOf(text);
  const s = sectionOf(lines, 'backend', backend);
  if (!s) return undefined;
  const out: HaproxyServer[] = [];
  for (let i = s.start + 1; i < s.end; i++) {
    const m = SERVER.exec(stripComment(lines[i] ?? ''));
    if (m) out.push({ name: m[1] as string, address: m[2] as string, line: i });
  }
  return out;
}

/** The line the install script writes for a master. */
export function serverLine(name: string, ip: string, port: number): string {
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return `    server  ${name}  ${host}:${port} check`;
}

/** The config without the server `name` of `backend` (exact name); unchanged when absent. */
export function removeServer(text: string, backend: string, name: string): { text: string; changed: boolean } {
  const servers = listServers(text, backend);
  const hits = (servers ?? []).filter((s) => s.name === name);
  if (hits.length === 0) return { text, changed: false };
  const drop = new Set(hits.map((h) => h.line));
  return { text: linesOf(text).filter((_, i) => !drop.has(i)).join('\n'), changed: true };
}

/**
 * The config with the server `name` at `ip:port` in `backend`: an existing line of that name
 * with another address is replaced; a new line goes after the backend's last server line (or at
 * the end of the backend's own lines). Throws when the backend does not exist.
 */
export function addServer(text: string, backend: string, name: string, ip: string, port: number): { text: string; changed: boolean } {
  const lines = linesOf(text);
  const s = sectionOf(lines, 'backend', backend);
  if (!s) throw new Error(`HAProxy configuration has no backend ${backend}`);
  const servers = listServers(text, backend) ?? [];
  const line = serverLine(name, ip, port);
  const same = servers.filter((x) => x.name === name);
  const host = ip.includes(':') ? `[${ip}]` : ip;
  if (same.length === 1 && same[0]?.address === `${host}:${port}`) return { text, changed: false };
  if (same.length > 0) {
    const first = same[0]?.line as number;
    const drop = new Set(same.slice(1).map((x) => x.line));
    const out = lines.map((l, i) => (i === first ? line : l)).filter((_, i) => !drop.has(i));
    return { text: out.join('\n'), changed: true };
  }
  let at: number;
  const last = servers[servers.length - 1];
  if (last) at = last.line + 1;
  else {
    // after the backend's last non-blank line
    at = s.end;
    while (at > s.start + 1 && (lines[at - 1] ?? '').trim() === '') at--;
  }
  const out = [...lines.slice(0, at), line, ...lines.slice(at)];
  return { text: out.join('\n'), changed: true };
}

/** Path of the first `stats socket` with `level admin` (the runtime API), if any. */
export function adminSocketPath(text: string): string | undefined {
  for (const raw of linesOf(text)) {
    const l = stripComment(raw).trim();
    const m = /^stats\s+socket\s+(\S+)(.*)$/.exec(l);
    if (!m) continue;
    if (!/\blevel\s+admin\b/.test(m[2] ?? '')) continue;
    const p = m[1] as string;
    // `ipv4@`/`ipv6@` sockets are TCP; only unix sockets are used here
    if (p.startsWith('ipv4@') || p.startsWith('ipv6@') || /^\d/.test(p) || p.startsWith('*')) continue;
    return p.replace(/^unix@/, '');
  }
  return undefined;
}

/** Runtime API commands (HAProxy 2.x). */
export const runtime = {
  maint: (backend: string, server: string) => `set server ${backend}/${server} state maint`,
  ready: (backend: string, server: string) => `set server ${backend}/${server} state ready`,
  del: (backend: string, server: string) => `del server ${backend}/${server}`,
  add: (backend: string, server: string, ip: string, port: number) => `add server ${backend}/${server} ${ip.includes(':') ? `[${ip}]` : ip}:${port} check`,
  enableHealth: (backend: string, server: string) => `enable health ${backend}/${server}`,
  showState: (backend: string) => `show servers state ${backend}`,
};

/** One server of `show servers state`. */
export interface ServerState {
  backend: string;
  name: string;
  address: string;
  /** srv_op_state: 0 stopped, 1 starting, 2 running, 3 stopping. */
  opState: number;
  /** srv_admin_state bit field (0x01 forced maint, 0x20 maint via runtime...). */
  adminState: number;
}

/** Parses `show servers state [<backend>]` (version 1 format: a `#` header naming the columns). */
export function parseServersState(out: string): ServerState[] {
  const lines = out.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const header = lines.find((l) => l.startsWith('#'));
  const cols = header ? header.replace(/^#\s*/, '').split(/\s+/) : [];
  const idx = (c: string, d: number) => (cols.indexOf(c) >= 0 ? cols.indexOf(c) : d);
  const iBe = idx('be_name', 1);
  const iName = idx('srv_name', 3);
  const iAddr = idx('srv_addr', 4);
  const iOp = idx('srv_op_state', 5);
  const iAdmin = idx('srv_admin_state', 6);
  const iPort = cols.indexOf('srv_port');
  const out2: ServerState[] = [];
  for (const l of lines) {
    if (l.startsWith('#') || /^\d+$/.test(l)) continue;
    const f = l.split(/\s+/);
    if (f.length < 7) continue;
    const port = iPort >= 0 ? f[iPort] : undefined;
    out2.push({
      backend: f[iBe] ?? '',
      name: f[iName] ?? '',
      address: port ? `${f[iAddr]}:${port}` : (f[iAddr] ?? ''),
      opState: Number(f[iOp]),
      adminState: Number(f[iAdmin]),
    });
  }
  return out2;
}
