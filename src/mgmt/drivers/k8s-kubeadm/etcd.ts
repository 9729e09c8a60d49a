/**
 * etcd of a stacked kubeadm control plane, driven with `etcdctl` (3.4) on a master over SSH with
 * the host's client certificates (spec §2.3 rule 2: no `kubectl exec` into the etcd pod).
 *
 * Member ids are uint64: JSON numbers above 2^53 lose precision in `JSON.parse`, so they are
 * quoted before parsing and kept as decimal strings; etcdctl takes them in hex. A member is
 * identified by its name AND its peer URL (never "the first line containing the name").
 */

/** etcdctl flags of a kubeadm master (healthcheck client certificate, root-readable). */
export const ETCD_TLS_FLAGS = '--cacert /etc/kubernetes/pki/etcd/ca.crt --cert /etc/kubernetes/pki/etcd/healthcheck-client.crt --key /etc/kubernetes/pki/etcd/healthcheck-client.key';
export const ETCD_LOCAL_ENDPOINT = 'https://127.0.0.1:2379';
/** Every health probe is bounded so that a dead member costs 3 s, not etcdctl's 5 s default. */
export const ETCD_COMMAND_TIMEOUT = '--command-timeout=3s';

/** An etcdctl command line (run with sudo). */
export function etcdctl(args: string, endpoints: string = ETCD_LOCAL_ENDPOINT): string {
  return `ETCDCTL_API=3 etcdctl --endpoints ${endpoints} ${ETCD_TLS_FLAGS} ${ETCD_COMMAND_TIMEOUT} ${args}`;
}

export const etcdCommands = {
  memberList: () => etcdctl('member list -w json'),
  endpointStatus: () => etcdctl('endpoint status --cluster -w json'),
  endpointHealth: () => etcdctl('endpoint health --cluster -w json'),
  alarmList: () => etcdctl('alarm list'),
  memberRemove: (id: string) => etcdctl(`member remove ${memberIdHex(id)}`),
  /** Must be sent to the current leader's endpoint. */
  moveLeader: (leaderClientUrl: string, toId: string) => etcdctl(`move-leader ${memberIdHex(toId)}`, leaderClientUrl),
};

/** One member of `member list`. */
export interface EtcdMember {
  /** Decimal string of the uint64 id. */
  id: string;
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
}

/** One endpoint of `endpoint status`. */
export interface EtcdEndpointStatus {
  endpoint: string;
  memberId: string;
  leader: string;
  raftIndex: bigint;
  raftAppliedIndex: bigint;
  errors: string[];
  isLearner: boolean;
}

/** One endpoint of `endpoint health`. */
export interface EtcdEndpointHealth {
  endpoint: string;
  health: boolean;
  error?: string;
}

/** A member id, decimal, as etcdctl wants it: lower-case hex. */
export function memberIdHex(id: string): string {
  return BigInt(id).toString(16);
}

/** A member id given in hex (as etcdctl prints it in text output) -> decimal string. */
export function memberIdFromHex(hex: string): string {
  return BigInt(`0x${hex.replace(/^0x/i, '')}`).toString(10);
}

/** JSON text with every integer of 16 or more digits turned into a string (uint64 ids). */
export function quoteBigInts(text: string): string {
  return text.replace(/([:[,]\s*)(-?\d{16,})(?=\s*[,}\]])/g, '$1"$2"');
}

function parseJson(text: string): unknown {
  const t = text.trim();
  const start = Math.min(...['{', '['].map((c) => (t.indexOf(c) < 0 ? Number.POSITIVE_INFINITY : t.indexOf(c))));
  if (!Number.isFinite(start)) throw new Error('no JSON in etcdctl output');
  return JSON.parse(quoteBigInts(t.slice(start)));
}

function idString(v: unknown): string {
  if (typeof v === 'string' && /^\d+$/.test(v)) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'bigint') return v.toString();
  throw new Error(`not a member id: ${String(v)}`);
}

function big(v: unknown): bigint {
  if (typeof v === 'string' && /^\d+$/.test(v)) return BigInt(v);
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt(Math.trunc(v));
  return 0n;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Parses `member list -w json`. */
export function parseMemberList(text: string): EtcdMember[] {
  const j = parseJson(text) as { members?: Record<string, unknown>[] };
  return (j.members ?? []).map((m) => ({
    id: idString(m.ID),
    name: typeof m.name === 'string' ? m.name : '',
    peerUrls: strings(m.peerURLs),
    clientUrls: strings(m.clientURLs),
    isLearner: m.isLearner === true,
  }));
}

/** Parses `endpoint status -w json` (the endpoints that answered). */
export function parseEndpointStatus(text: string): EtcdEndpointStatus[] {
  if (text.trim() === '') return [];
  const j = parseJson(text) as { Endpoint?: string; Status?: Record<string, unknown> }[];
  return (Array.isArray(j) ? j : []).map((e) => {
    const s = e.Status ?? {};
    const header = (s.header ?? {}) as Record<string, unknown>;
    return {
      endpoint: e.Endpoint ?? '',
      memberId: idString(header.member_id),
      leader: s.leader === undefined ? '0' : idString(s.leader),
      raftIndex: big(s.raftIndex),
      raftAppliedIndex: big(s.raftAppliedIndex),
      errors: strings(s.errors),
      isLearner: s.isLearner === true,
    };
  });
}

/** Parses `endpoint health` (`-w json`, or the text form `<ep> is healthy: ...` / `<ep> is unhealthy: ...`). */
export function parseEndpointHealth(text: string): EtcdEndpointHealth[] {
  const t = text.trim();
  if (t.startsWith('[')) {
    const j = JSON.parse(t) as { endpoint?: string; health?: boolean; error?: string }[];
    return j.map((e) => ({ endpoint: e.endpoint ?? '', health: e.health === true, ...(e.error ? { error: e.error } : {}) }));
  }
  const out: EtcdEndpointHealth[] = [];
  for (const line of t.split('\n')) {
    const m = /^(\S+) is (healthy|unhealthy)(?::\s*(.*))?$/.exec(line.trim());
    if (m) out.push({ endpoint: m[1] as string, health: m[2] === 'healthy', ...(m[2] === 'unhealthy' && m[3] ? { error: m[3] } : {}) });
  }
  return out;
}

/** `host` of a URL, without IPv6 brackets; undefined when it does not parse. */
function urlHost(u: string): { host: string; port: string } | undefined {
  try {
    const x = new URL(u);
    return { host: x.hostname.replace(/^\[|\]$/g, ''), port: x.port };
  } catch {
    return undefined;
  }
}

/** The peer URL kubeadm gives a member at `ip`. */
export function peerUrlOf(ip: string): string {
  return `https://${ip.includes(':') ? `[${ip}]` : ip}:2380`;
}

/** Whether a member has the peer URL of `ip` (port 2380), compared parsed, not as text. */
export function hasPeerIp(m: EtcdMember, ip: string): boolean {
  return m.peerUrls.some((u) => {
    const h = urlHost(u);
    return h !== undefined && h.host === ip && (h.port === '2380' || h.port === '');
  });
}

/** The member of a node: exact name AND peer URL of its NIC address. */
export function findMember(members: readonly EtcdMember[], name: string, ip: string): EtcdMember | undefined {
  return members.find((m) => m.name === name && hasPeerIp(m, ip));
}

/** Members holding the peer URL of `ip` whatever their name (stale members, unstarted learners). */
export function membersWithPeerIp(members: readonly EtcdMember[], ip: string): EtcdMember[] {
  return members.filter((m) => hasPeerIp(m, ip));
}

/** The leader id as the answering endpoints see it (the most common answer); undefined when none. */
export function leaderOf(status: readonly EtcdEndpointStatus[]): string | undefined {
  const votes = new Map<string, number>();
  for (const s of status) if (s.leader !== '0') votes.set(s.leader, (votes.get(s.leader) ?? 0) + 1);
  let best: string | undefined;
  let n = 0;
  for (const [k, v] of votes) if (v > n) [best, n] = [k, v];
  return best;
}

/** Health of one member, from the three probes. */
export interface MemberHealth extends EtcdMember {
  healthy: boolean;
  reason?: string;
}

/**
 * Health per member: healthy when one of its client URLs answers `endpoint health`, its status
 * has no errors (alarms) and its raft index does not lag the leader's by more than `maxLag`.
 */
export function memberHealth(members: readonly EtcdMember[], status: readonly EtcdEndpointStatus[], health: readonly EtcdEndpointHealth[], maxLag = 1000): MemberHealth[] {
  const leader = leaderOf(status);
  const leaderIndex = status.find((s) => s.memberId === leader)?.raftIndex;
  const sameEndpoint = (a: string, b: string) => {
    const x = urlHost(a);
    const y = urlHost(b);
    return x !== undefined && y !== undefined && x.host === y.host && x.port === y.port;
  };
  return members.map((m) => {
    const st = status.find((s) => s.memberId === m.id) ?? status.find((s) => m.clientUrls.some((u) => sameEndpoint(u, s.endpoint)));
    const h = health.find((x) => m.clientUrls.some((u) => sameEndpoint(u, x.endpoint)));
    let reason: string | undefined;
    if (m.clientUrls.length === 0) reason = 'not started';
    else if (!h || !h.health) reason = h?.error ? `unhealthy: ${h.error}` : 'endpoint does not answer';
    else if (!st) reason = 'no status';
    else if (st.errors.length > 0) reason = `alarms: ${st.errors.join('; ')}`;
    else if (leaderIndex !== undefined && leaderIndex - st.raftIndex > BigInt(maxLag)) reason = `lags the leader by ${leaderIndex - st.raftIndex} raft entries`;
    return reason === undefined ? { ...m, healthy: true } : { ...m, healthy: false, reason };
  });
}

/** Whether an etcdctl error says the member is already gone. */
export function isMemberNotFound(text: string): boolean {
  return /member not found/i.test(text);
}
