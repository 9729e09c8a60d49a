/**
 * The desired state of an external HAProxy load balancer, as data, and its rendering (spec §3.3).
 *
 * The configuration file is owned as marked sections, one per *owner* (one CNF instance, or one
 * cluster): `# BEGIN healvnfm <owner>` ... `# END healvnfm <owner>`. Everything outside the markers
 * (the operator's `global`/`defaults`, anything else) is kept as it is. An owner's section holds one
 * `frontend` + `backend` pair per published port, rendered deterministically (sorted by name,
 * servers sorted by name), so the same inputs always give the same bytes and the same hash. A
 * section is rewritten as a whole, never line by line, so owners never bleed into each other.
 *
 * Pure functions only (no I/O): unit-tested without a load balancer.
 */
import { createHash } from 'node:crypto';
import { listSections, listServers } from './haproxy-config.ts';

/** One backend server: a node's address and port. */
export interface LbServer {
  /** HAProxy server name (the node name). */
  name: string;
  /** IPv4/IPv6 address. */
  address: string;
  port: number;
}

/** One published port: `frontend <name>` binding `*:<bind>` with `backend <name>` behind it. */
export interface LbFrontend {
  /** Name of the frontend and of its backend; unique on the LB (letters, digits, `_ . : -`). */
  name: string;
  /** TCP port the LB listens on (every address). */
  bind: number;
  /** Backend servers (may be empty: the port listens, connections are refused by HAProxy). */
  servers: LbServer[];
  /** One comment line rendered above the frontend (e.g. `service default/web port 80/TCP`). */
  comment?: string;
  /** Health check arguments of every server. @default 'check inter 2s fall 2 rise 1' */
  check?: string;
}

/** Everything one owner publishes on the LB. */
export interface LbOwnerConfig {
  /** `cnf-<vnfInstanceId>` or `cluster-<vnfInstanceId>` (see {@link lbOwner}); letters, digits, `_ . -`. */
  owner: string;
  frontends: LbFrontend[];
}

export const DEFAULT_CHECK = 'check inter 2s fall 2 rise 1';
const OWNER_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const NAME_RE = /^[A-Za-z0-9_.:-]{1,200}$/;
const BEGIN = '# BEGIN healvnfm ';
const END = '# END healvnfm ';

/** The owner id of a CNF instance's or a cluster's section. */
export function lbOwner(kind: 'cnf' | 'cluster', instanceId: string): string {
  return `${kind}-${instanceId}`;
}

/** The VNF instance a section belongs to (`cnf-<id>` / `cluster-<id>`), undefined for other owners. */
export function ownerInstanceId(owner: string): string | undefined {
  const m = /^(?:cnf|cluster)-(.+)$/.exec(owner);
  return m ? m[1] : undefined;
}

/** A name part reduced to HAProxy-safe characters. */
function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, '-');
}

/** The first 8 characters of an instance id (frontend names stay short but distinct per CNF). */
export function shortId(instanceId: string): string {
  return safe(instanceId.replace(/-/g, '').slice(0, 8));
}

/** Throws an Error naming what is wrong with an owner's configuration (names, ports, duplicates). */
export function checkOwnerConfig(c: LbOwnerConfig): void {
  if (!OWNER_RE.test(c.owner)) throw new Error(`LB owner ${JSON.stringify(c.owner)}: letters, digits, _ . - only (at most 128)`);
  const names = new Set<string>();
  const binds = new Map<number, string>();
  for (const f of c.frontends) {
    if (!NAME_RE.test(f.name)) throw new Error(`LB frontend name ${JSON.stringify(f.name)}: letters, digits, _ . : - only`);
    if (names.has(f.name)) throw new Error(`LB frontend ${f.name} is listed twice`);
    names.add(f.name);
    if (!Number.isInteger(f.bind) || f.bind < 1 || f.bind > 65535) throw new Error(`LB frontend ${f.name}: bind port ${f.bind} is not 1-65535`);
    const other = binds.get(f.bind);
    if (other !== undefined) throw new Error(`LB frontends ${other} and ${f.name} both bind port ${f.bind}`);
    binds.set(f.bind, f.name);
    const servers = new Set<string>();
    for (const s of f.servers) {
      if (!NAME_RE.test(s.name)) throw new Error(`LB server name ${JSON.stringify(s.name)} (frontend ${f.name}): letters, digits, _ . : - only`);
      if (servers.has(s.name)) throw new Error(`LB frontend ${f.name}: server ${s.name} is listed twice`);
      servers.add(s.name);
      if (!/^[0-9a-fA-F:.]+$/.test(s.address)) throw new Error(`LB server ${s.name} (frontend ${f.name}): ${JSON.stringify(s.address)} is not an IP address`);
      if (!Number.isInteger(s.port) || s.port < 1 || s.port > 65535) throw new Error(`LB server ${s.name} (frontend ${f.name}): port ${s.port} is not 1-65535`);
    }
    if (f.comment !== undefined && /[\r\n]/.test(f.comment)) throw new Error(`LB frontend ${f.name}: the comment must be one line`);
    if (f.check !== undefined && /[\r\n#]/.test(f.check)) throw new Error(`LB frontend ${f.name}: invalid check arguments`);
  }
}

function hostPort(address: string, port: number): string {
  return `${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** The marked section of one owner (deterministic: frontends and servers sorted by name). */
export function renderOwnerSection(c: LbOwnerConfig): string {
  checkOwnerConfig(c);
  const out: string[] = [`${BEGIN}${c.owner}`];
  const frontends = [...c.frontends].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const f of frontends) {
    if (f.comment) out.push(`# ${f.comment}`);
    out.push(`frontend ${f.name}`, '    mode tcp', `    bind *:${f.bind}`, '    option tcplog', `    default_backend ${f.name}`, '');
    out.push(`backend ${f.name}`, '    mode tcp', '    balance roundrobin');
    const servers = [...f.servers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const s of servers) out.push(`    server ${s.name} ${hostPort(s.address, s.port)} ${f.check ?? DEFAULT_CHECK}`);
    out.push('');
  }
  if (out[out.length - 1] === '') out.pop();
  out.push(`${END}${c.owner}`);
  return out.join('\n');
}

/** sha256 (hex) of a text. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A configuration split into the part nobody owns and the owners' sections. */
export interface ParsedLbConfig {
  /** The lines outside every marked section, joined (trailing blank lines dropped). */
  base: string;
  /** Owner -> its section text (markers included). */
  owners: Map<string, string>;
}

/** Splits a configuration into base and owned sections; throws on unbalanced or nested markers. */
export function parseLbConfig(text: string): ParsedLbConfig {
  const base: string[] = [];
  const owners = new Map<string, string>();
  let current: { owner: string; lines: string[]; at: number } | undefined;
  text.split('\n').forEach((line, i) => {
    if (line.startsWith(BEGIN)) {
      if (current) throw new Error(`line ${i + 1}: section of ${line.slice(BEGIN.length).trim()} begins inside the section of ${current.owner} (line ${current.at + 1})`);
      current = { owner: line.slice(BEGIN.length).trim(), lines: [line], at: i };
      return;
    }
    if (line.startsWith(END)) {
      const owner = line.slice(END.length).trim();
      if (!current || current.owner !== owner) throw new Error(`line ${i + 1}: end of the section of ${owner} without its beginning`);
      current.lines.push(line);
      if (owners.has(owner)) throw new Error(`line ${i + 1}: a second section of ${owner}`);
      owners.set(owner, current.lines.join('\n'));
      current = undefined;
      return;
    }
    if (current) current.lines.push(line);
    else base.push(line);
  });
  if (current) throw new Error(`the section of ${current.owner} (line ${current.at + 1}) has no end marker`);
  while (base.length > 0 && (base[base.length - 1] as string).trim() === '') base.pop();
  return { base: base.join('\n'), owners };
}

/** The base written when the LB has no configuration yet. */
export function defaultBase(o: { runtimeSocket: string }): string {
  return [
    '# HAProxy of the external load balancer. Sections between "# BEGIN healvnfm <owner>" and',
    '# "# END healvnfm <owner>" are managed by the VNFM (rewritten as a whole); the rest is kept.',
    'global',
    '    log /dev/log local0 notice',
    `    stats socket ${o.runtimeSocket} mode 600 level admin`,
    '    stats timeout 30s',
    '    maxconn 4096',
    '',
    'defaults',
    '    log global',
    '    mode tcp',
    '    option tcplog',
    '    timeout connect 5s',
    '    timeout client 1m',
    '    timeout server 1m',
  ].join('\n');
}

/** The whole file from a base and the owners' sections (sorted by owner). */
export function composeLbConfig(base: string, owners: ReadonlyMap<string, string>): string {
  const parts = [base.replace(/\s+$/, '')];
  for (const o of [...owners.keys()].sort()) parts.push(owners.get(o) as string);
  return `${parts.join('\n\n')}\n`;
}

/** What a section (or a whole file) publishes: frontend -> bind ports; backend -> servers. */
export interface LbShape {
  frontends: Map<string, number[]>;
  backends: Map<string, { name: string; address: string }[]>;
}

/** The frontends (bind ports) and backends (servers) of a configuration text. */
export function shapeOf(text: string): LbShape {
  const lines = text.split('\n');
  const frontends = new Map<string, number[]>();
  const backends = new Map<string, { name: string; address: string }[]>();
  for (const s of listSections(text)) {
    if (!s.name) continue;
    if (s.kind === 'frontend' || s.kind === 'listen') {
      const ports: number[] = [];
      for (let i = s.start + 1; i < s.end; i++) {
        const m = /^\s*bind\s+(\S+)/.exec((lines[i] ?? '').replace(/#.*/, ''));
        const p = m ? /:(\d+)$/.exec(m[1] as string) : null;
        if (p) ports.push(Number(p[1]));
      }
      frontends.set(s.name, ports);
    }
    if (s.kind === 'backend' || s.kind === 'listen') backends.set(s.name, (listServers(text, s.name) ?? []).map((x) => ({ name: x.name, address: x.address })));
  }
  return { frontends, backends };
}

/** Frontend/backend names or bind ports of `c` that another owner (or the base) already uses. */
export function conflicts(parsed: ParsedLbConfig, c: LbOwnerConfig): string[] {
  return conflictsBy(parsed, c).map((x) => x.message);
}

/** The other owners whose sections clash with `c` (names or ports), in file order. */
export function conflictingOwners(parsed: ParsedLbConfig, c: LbOwnerConfig): string[] {
  return [...new Set(conflictsBy(parsed, c).flatMap((x) => (x.owner === undefined ? [] : [x.owner])))];
}

/** Each clash with who causes it (`owner` undefined: the base configuration). */
export function conflictsBy(parsed: ParsedLbConfig, c: LbOwnerConfig): { owner: string | undefined; message: string }[] {
  const out: { owner: string | undefined; message: string }[] = [];
  const mine = new Map(c.frontends.map((f) => [f.name, f.bind]));
  const ports = new Map(c.frontends.map((f) => [f.bind, f.name]));
  const check = (owner: string | undefined, text: string): void => {
    const who = owner === undefined ? 'the base configuration' : `owner ${owner}`;
    const shape = shapeOf(text);
    for (const n of new Set([...shape.frontends.keys(), ...shape.backends.keys()])) if (mine.has(n)) out.push({ owner, message: `${n} is already defined by ${who}` });
    for (const [n, ps] of shape.frontends) for (const p of ps) if (ports.has(p)) out.push({ owner, message: `port ${p} (${ports.get(p)}) is already bound by ${n} of ${who}` });
  };
  check(undefined, parsed.base);
  for (const [o, text] of parsed.owners) if (o !== c.owner) check(o, text);
  return out;
}

/** Membership changes of one backend (servers added, removed, moved to another address). */
export interface ServerChanges {
  backend: string;
  add: LbServer[];
  remove: string[];
}

/**
 * Whether going from section `live` to the desired config changes only backend members (same
 * frontends, same ports, same backends, same check arguments): then the runtime API can apply it
 * without a reload. Returns the changes, or undefined when the shape differs.
 */
export function membershipOnly(live: string, desired: LbOwnerConfig): ServerChanges[] | undefined {
  const shape = shapeOf(live);
  const want = new Map(desired.frontends.map((f) => [f.name, f]));
  if (shape.frontends.size !== want.size || shape.backends.size !== want.size) return undefined;
  for (const [name, ports] of shape.frontends) {
    const f = want.get(name);
    if (!f || ports.length !== 1 || ports[0] !== f.bind || !shape.backends.has(name)) return undefined;
  }
  // the check arguments must be the ones rendered: compare against a rendering of the live servers
  const out: ServerChanges[] = [];
  for (const f of desired.frontends) {
    if ((f.check ?? DEFAULT_CHECK) !== DEFAULT_CHECK) return undefined;
    const have = new Map((shape.backends.get(f.name) ?? []).map((s) => [s.name, s.address]));
    const add: LbServer[] = [];
    const remove: string[] = [];
    for (const s of f.servers) {
      const a = have.get(s.name);
      if (a === hostPort(s.address, s.port)) continue;
      if (a !== undefined) remove.push(s.name);
      add.push(s);
    }
    for (const n of have.keys()) if (!f.servers.some((s) => s.name === n)) remove.push(n);
    if (add.length > 0 || remove.length > 0) out.push({ backend: f.name, add, remove });
  }
  return out;
}

/**
 * An owner's section read back into its config (the inverse of {@link renderOwnerSection});
 * undefined when the section is not exactly a rendering (edited by hand: it cannot be transformed
 * safely, only replaced).
 */
export function parseOwnerSection(section: string): LbOwnerConfig | undefined {
  const lines = section.split('\n');
  const first = lines[0] ?? '';
  if (!first.startsWith(BEGIN)) return undefined;
  const owner = first.slice(BEGIN.length).trim();
  const frontends = new Map<string, LbFrontend>();
  let comment: string | undefined;
  let current: { kind: 'frontend' | 'backend'; name: string } | undefined;
  for (const line of lines.slice(1, -1)) {
    let m: RegExpExecArray | null;
    if ((m = /^# (.*)$/.exec(line))) comment = m[1];
    else if ((m = /^frontend (\S+)$/.exec(line))) {
      current = { kind: 'frontend', name: m[1] as string };
      frontends.set(current.name, { name: current.name, bind: 0, servers: [], ...(comment !== undefined ? { comment } : {}) });
      comment = undefined;
    } else if ((m = /^backend (\S+)$/.exec(line))) current = { kind: 'backend', name: m[1] as string };
    else if (current?.kind === 'frontend' && (m = /^ {4}bind \*:(\d+)$/.exec(line))) (frontends.get(current.name) as LbFrontend).bind = Number(m[1]);
    else if (current?.kind === 'backend' && (m = /^ {4}server (\S+) (\[[0-9a-fA-F:]+\]|[0-9.]+):(\d+) (.+)$/.exec(line))) {
      const f = frontends.get(current.name);
      if (!f) return undefined;
      f.servers.push({ name: m[1] as string, address: (m[2] as string).replace(/^\[|\]$/g, ''), port: Number(m[3]) });
      if ((m[4] as string) !== DEFAULT_CHECK) f.check = m[4] as string;
    }
  }
  const config = { owner, frontends: [...frontends.values()] };
  try {
    return renderOwnerSection(config) === section ? config : undefined;
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------------ inputs -> frontends

/** The servers of a node-port backend: every Ready schedulable node on `port`. */
export function nodePortServers(nodes: readonly LbNode[], port: number): LbServer[] {
  return nodes.filter((n) => n.ready && n.schedulable).map((n) => ({ name: safe(n.name), address: n.address, port }));
}

/**
 * The config with every node-port frontend (all servers on the frontend's own port) given the
 * current nodes as servers; other frontends (e.g. API servers on 6443) kept as they are.
 */
export function withNodeMembers(c: LbOwnerConfig, nodes: readonly LbNode[]): LbOwnerConfig {
  return {
    owner: c.owner,
    frontends: c.frontends.map((f) => (f.servers.every((s) => s.port === f.bind) ? { ...f, servers: nodePortServers(nodes, f.bind) } : f)),
  };
}

/** A Kubernetes node as the LB sees it. */
export interface LbNode {
  name: string;
  /** InternalIP. */
  address: string;
  ready: boolean;
  /** Not cordoned (`spec.unschedulable` not true). */
  schedulable: boolean;
}

/** One port of a Service. */
export interface LbServicePort {
  name?: string;
  port: number;
  nodePort?: number;
  /** @default 'TCP' */
  protocol?: string;
}

/** A Service as the LB sees it. */
export interface LbService {
  namespace: string;
  name: string;
  /** `NodePort` and `LoadBalancer` Services are published; others ignored. */
  type: string;
  ports: LbServicePort[];
}

/** A Service port that is not published, and why. */
export interface Unpublished {
  service: string;
  port: number;
  protocol: string;
  reason: string;
}

/**
 * The NodePort frontends of one CNF (spec §3.3.1): one frontend per TCP node port of every
 * `NodePort`/`LoadBalancer` Service, named `np_<short id>_<ns>_<svc>_<nodePort>`, binding the same
 * port on the LB, with every Ready schedulable node as a server on that port. UDP/SCTP ports and
 * ports without an allocated node port are reported, not published.
 */
export function nodePortFrontends(input: { instanceId: string; services: readonly LbService[]; nodes: readonly LbNode[] }): { frontends: LbFrontend[]; unpublished: Unpublished[] } {
  const short = shortId(input.instanceId);
  const frontends: LbFrontend[] = [];
  const unpublished: Unpublished[] = [];
  for (const svc of input.services) {
    if (svc.type !== 'NodePort' && svc.type !== 'LoadBalancer') continue;
    for (const p of svc.ports) {
      const protocol = (p.protocol ?? 'TCP').toUpperCase();
      const label = `${svc.namespace}/${svc.name}`;
      if (protocol !== 'TCP') {
        unpublished.push({ service: label, port: p.port, protocol, reason: `${protocol} is not proxied by HAProxy` });
        continue;
      }
      if (!p.nodePort) {
        unpublished.push({ service: label, port: p.port, protocol, reason: 'no node port allocated' });
        continue;
      }
      const nodePort = p.nodePort;
      frontends.push({
        name: `np_${short}_${safe(svc.namespace)}_${safe(svc.name)}_${nodePort}`,
        bind: nodePort,
        comment: `service ${label} port ${p.name ? `${p.name} ` : ''}${p.port}/${protocol} nodePort ${nodePort}`,
        servers: nodePortServers(input.nodes, nodePort),
      });
    }
  }
  return { frontends, unpublished };
}

/** The cluster's API frontend (spec §3.3.2): `*:<bind>` (8383) -> every master on `<port>` (6443). */
export function apiServerFrontend(input: { masters: readonly { name: string; address: string }[]; bind?: number; port?: number; name?: string }): LbFrontend {
  const port = input.port ?? 6443;
  return {
    name: input.name ?? 'kubernetes-apiserver',
    bind: input.bind ?? 8383,
    comment: 'Kubernetes API servers',
    servers: input.masters.map((m) => ({ name: safe(m.name), address: m.address, port })),
  };
}
