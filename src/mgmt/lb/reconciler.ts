/**
 * Converges an external HAProxy load balancer, over SSH, to the desired state of one owner
 * (spec §3.3): read the live file, replace that owner's marked section as a whole, and apply:
 *
 * - nothing to do (the live file already is the rendering): no write, no reload;
 * - only backend members changed and the runtime API (admin stats socket + socat) is reachable:
 *   `set server ... state maint` + `del server` / `add server` + `enable health` +
 *   `set server ... state ready`, then the file is rewritten (validated) without a reload so a
 *   restart keeps the members;
 * - otherwise: the new file is uploaded next to the live one (`<cfg>.new`), checked with
 *   `haproxy -c -f`, renamed over the live file (atomic) and HAProxy reloaded (started when it does
 *   not run). An invalid file is removed and the live configuration stays untouched; the error
 *   names haproxy's message.
 *
 * After a reload every desired port must listen and no removed port may (`ss -lnt`), and every
 * backend of the owner must serve exactly its desired servers (`show servers state`). What was
 * applied is recorded next to the file (`<cfg>.healvnfm.json`: the file's hash and each owner's
 * section hash, whoever applied it): a live file or an owner's section that differs from its
 * record is drift — reported in the result and corrected by the same apply (for the owner being
 * applied; other owners' drift is reported by {@link readLbState}).
 */
import { isVnfmError, terminalError, vnfmError } from '../../errors.ts';
import type { ExecResult, SshSession } from '../ssh/ssh-executor.ts';
import { shQuote } from '../ssh/ssh-executor.ts';
import {
  checkOwnerConfig,
  composeLbConfig,
  conflictingOwners,
  conflicts,
  defaultBase,
  type LbOwnerConfig,
  type LbNode,
  membershipOnly,
  ownerInstanceId,
  parseLbConfig,
  parseOwnerSection,
  type ParsedLbConfig,
  renderOwnerSection,
  type ServerChanges,
  sha256,
  shapeOf,
  withNodeMembers,
} from './desired.ts';
import { adminSocketPath, parseServersState } from './haproxy-config.ts';

/** How the LB host is driven. */
export interface LbHostOptions {
  /** @default '/etc/haproxy/haproxy.cfg' */
  configPath?: string;
  /** Runtime socket written into a new base configuration. @default '/etc/haproxy/admin.sock' */
  runtimeSocket?: string;
  /** @default 'systemctl reload haproxy' */
  reloadCommand?: string;
  /** @default 'systemctl start haproxy' */
  startCommand?: string;
  /** Exit 0 when HAProxy runs. @default 'systemctl is-active haproxy' */
  isActiveCommand?: string;
  /** Per remote command. @default 60000 */
  commandTimeoutMs?: number;
  /** How long the listening ports may take to follow a reload. @default 10000 */
  settleTimeoutMs?: number;
  /** Use the runtime API for membership-only changes. @default true */
  useRuntimeApi?: boolean;
  /**
   * Hash of this owner's section as the caller last applied it ({@link LbApplyResult.hash}); only
   * used when the LB has no record of its own (an older or hand-made file).
   */
  lastAppliedHash?: string | null;
  signal?: AbortSignal;
  /** Name of the LB in messages. @default the SSH host */
  name?: string;
  /**
   * Whether another owner's section is stale: its VNF instance is unknown to the VNFM, or not
   * instantiated with no operation in progress (a rolled-back, failed or deleted instance left it).
   * A stale section that clashes with the owner being applied is removed in the same write;
   * without this, every clash refuses.
   */
  ownerIsStale?: (owner: string) => Promise<boolean>;
  /** Told of each stale section removed (to log it). */
  onStaleOwnerRemoved?: (owner: string, ports: number[]) => void;
}

/** What an apply did. */
export interface LbApplyResult {
  owner: string;
  /** `unchanged`: nothing written; `runtime`: members changed live + file rewritten without reload; `reload`/`start`: new file, HAProxy reloaded/started. */
  action: 'unchanged' | 'runtime' | 'reload' | 'start';
  /** sha256 of the owner's section as applied (null: the owner has no section now). */
  hash: string | null;
  /** sha256 of the whole live file afterwards. */
  fileHash: string;
  /** Drift found before applying (then corrected): the file differs from the recorded apply, or the owner's section from its recorded hash. */
  drift?: { file: boolean; section: boolean };
  /** Bind ports of this owner before and after. */
  ports: { before: number[]; after: number[] };
  /** Runtime API commands sent (action `runtime`). */
  runtime?: string[];
  /** Stale sections of other owners removed because they were in the way ({@link LbHostOptions.ownerIsStale}). */
  removedStale?: string[];
}

/** What the LB holds now. */
export interface LbState {
  /** The live file, undefined when there is none. */
  text: string | undefined;
  fileHash: string | undefined;
  /** The file hash recorded by the last apply (undefined: none recorded). */
  recordedHash: string | undefined;
  /** Owner -> its section's hash, bind ports and whether it differs from the recorded hash (drift). */
  owners: Record<string, { hash: string; ports: number[]; drift: boolean }>;
  /** The file differs from the recorded apply. */
  fileDrift: boolean;
  running: boolean;
}

const DEFAULTS = {
  configPath: '/etc/haproxy/haproxy.cfg',
  runtimeSocket: '/etc/haproxy/admin.sock',
  reloadCommand: 'systemctl reload haproxy',
  startCommand: 'systemctl start haproxy',
  isActiveCommand: 'systemctl is-active haproxy',
  commandTimeoutMs: 60_000,
  settleTimeoutMs: 10_000,
};

type Resolved = typeof DEFAULTS & LbHostOptions;

/** One apply at a time per LB file in this process (drivers also take `ctx.lock('lb:<ip>')`). */
const queues = new Map<string, Promise<unknown>>();
function serialised<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(key) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.catch(() => undefined);
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return next;
}

class LbHost {
  readonly o: Resolved;
  constructor(
    readonly s: SshSession,
    o: LbHostOptions,
  ) {
    this.o = { ...DEFAULTS, ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) } as Resolved;
  }
  get name(): string {
    return this.o.name ?? this.s.host;
  }
  exec(cmd: string, sudo = true, stdin?: string): Promise<ExecResult> {
    return this.s.exec(cmd, { sudo, timeoutMs: this.o.commandTimeoutMs, ...(this.o.signal ? { signal: this.o.signal } : {}), ...(stdin !== undefined ? { stdin } : {}) });
  }
  async run(cmd: string, label: string, stdin?: string): Promise<ExecResult> {
    return this.s.run(cmd, { sudo: true, label, timeoutMs: this.o.commandTimeoutMs, ...(this.o.signal ? { signal: this.o.signal } : {}), ...(stdin !== undefined ? { stdin } : {}) });
  }
  async read(path: string): Promise<string | undefined> {
    const r = await this.exec(`if [ -e ${shQuote(path)} ]; then cat ${shQuote(path)}; else echo __healvnfm_absent__ >&2; exit 3; fi`);
    if (r.code === 3 && r.stderr.includes('__healvnfm_absent__')) return undefined;
    if (r.code !== 0) throw vnfmError('VNFM_ERR_MGMT_COMMAND', `reading ${path} on the load balancer ${this.name} failed (exit ${r.code}): ${tail(r.stderr || r.stdout)}`);
    return r.stdout;
  }
  async running(): Promise<boolean> {
    return (await this.exec(this.o.isActiveCommand)).code === 0;
  }
  /** `show servers state` etc. over the admin socket; undefined when there is no socket or socat. */
  async runtime(socket: string | undefined, command: string): Promise<ExecResult | undefined> {
    if (!socket) return undefined;
    const r = await this.exec(`command -v socat >/dev/null 2>&1 || exit 127; [ -S ${shQuote(socket)} ] || exit 126; socat stdio UNIX-CONNECT:${shQuote(socket)}`, true, `${command}\n`);
    if (r.code === 127 || r.code === 126) return undefined;
    return r;
  }
  async listening(): Promise<Set<number>> {
    const r = await this.exec('ss -Hlnt', false);
    if (r.code !== 0) throw vnfmError('VNFM_ERR_MGMT_COMMAND', `ss -lnt on the load balancer ${this.name} failed (exit ${r.code}): ${tail(r.stderr)}`);
    const out = new Set<number>();
    for (const line of r.stdout.split('\n')) {
      const f = line.trim().split(/\s+/);
      const local = f[3];
      const m = local ? /:(\d+)$/.exec(local) : null;
      if (m) out.add(Number(m[1]));
    }
    return out;
  }
  /** Writes `<cfg>.new`, validates it; throws (and removes it) when haproxy rejects it. */
  async stage(text: string): Promise<string> {
    const next = `${this.o.configPath}.new`;
    await this.s.upload(next, text, { mode: 0o644, sudo: true });
    const check = await this.exec(`haproxy -c -f ${shQuote(next)}`);
    if (check.code !== 0) {
      await this.exec(`rm -f ${shQuote(next)}`).catch(() => undefined);
      throw terminalError(
        'VNFM_ERR_MGMT_COMMAND',
        `the new HAProxy configuration of the load balancer ${this.name} is invalid (haproxy -c exit ${check.code}): ${haproxyMessage(check)}; the live configuration was not changed`,
      );
    }
    return next;
  }
  async swap(staged: string, record: LbRecord): Promise<void> {
    const cfg = this.o.configPath;
    await this.run(`mv -f ${shQuote(staged)} ${shQuote(cfg)} && cat > ${shQuote(recordPath(cfg))}`, `install ${cfg}`, `${JSON.stringify(record)}\n`);
  }
  async record(record: LbRecord): Promise<void> {
    await this.run(`cat > ${shQuote(recordPath(this.o.configPath))}`, 'record the applied hashes', `${JSON.stringify(record)}\n`);
  }
}

function tail(text: string, n = 5): string {
  return text.trim().split('\n').slice(-n).join(' | ');
}

/** The interesting lines of `haproxy -c` output (ALERT/error lines first). */
function haproxyMessage(r: ExecResult): string {
  const lines = `${r.stderr}\n${r.stdout}`.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const alerts = lines.filter((l) => /ALERT|error|Error|fatal/.test(l));
  return (alerts.length > 0 ? alerts : lines).slice(0, 5).join(' | ') || `exit ${r.code}`;
}

function portsOf(section: string | undefined): number[] {
  if (!section) return [];
  return [...shapeOf(section).frontends.values()].flat().sort((a, b) => a - b);
}

/** What the last apply left next to the file. */
interface LbRecord {
  file: string;
  owners: Record<string, string>;
}

function recordPath(cfg: string): string {
  return `${cfg}.healvnfm.json`;
}

/**
 * The record after applying `owner`: the new file's hash, this owner's new section hash, and for
 * the other owners their previous record (their sections are not ours to vouch for: a hand edit
 * there stays drift until their owner applies again); owners never recorded get their live hash.
 */
function recordOf(text: string, owners: ReadonlyMap<string, string>, owner: string, previous: LbRecord | undefined): LbRecord {
  const out: Record<string, string> = {};
  for (const o of [...owners.keys()].sort()) out[o] = o !== owner && previous?.owners[o] !== undefined ? (previous.owners[o] as string) : sha256(owners.get(o) as string);
  return { file: sha256(text), owners: out };
}

async function readParsed(h: LbHost): Promise<{ text: string | undefined; parsed: ParsedLbConfig; recorded: LbRecord | undefined }> {
  const text = await h.read(h.o.configPath);
  let parsed: ParsedLbConfig;
  try {
    parsed = text === undefined || text.trim() === '' ? { base: defaultBase({ runtimeSocket: h.o.runtimeSocket }), owners: new Map() } : parseLbConfig(text);
  } catch (e) {
    throw terminalError('VNFM_ERR_MGMT_FAILED', `${h.o.configPath} of the load balancer ${h.name} cannot be managed: ${(e as Error).message}`);
  }
  const rec = await h.read(recordPath(h.o.configPath));
  let recorded: LbRecord | undefined;
  try {
    const j = rec ? (JSON.parse(rec) as LbRecord) : undefined;
    if (j && typeof j.file === 'string' && typeof j.owners === 'object' && j.owners !== null) recorded = j;
  } catch {
    recorded = undefined; // unreadable record: no drift can be told
  }
  return { text, parsed, recorded };
}

async function waitPorts(h: LbHost, want: number[], gone: number[]): Promise<void> {
  const deadline = Date.now() + h.o.settleTimeoutMs;
  for (;;) {
    const l = await h.listening();
    const missing = want.filter((p) => !l.has(p));
    const still = gone.filter((p) => l.has(p));
    if (missing.length === 0 && still.length === 0) return;
    if (Date.now() > deadline) {
      throw terminalError(
        'VNFM_ERR_MGMT_FAILED',
        `HAProxy on the load balancer ${h.name} after the reload: ${missing.length ? `port(s) ${missing.join(', ')} not listening` : ''}${missing.length && still.length ? '; ' : ''}${still.length ? `removed port(s) ${still.join(', ')} still listening` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * After a reload: every backend of the owner serves exactly its desired servers, as the running
 * HAProxy reports them (`show servers state`). Skipped when the admin socket cannot be reached.
 */
async function verifyServers(h: LbHost, socket: string | undefined, desired: LbOwnerConfig): Promise<void> {
  for (const f of desired.frontends) {
    const st = await h.runtime(socket, `show servers state ${f.name}`);
    if (!st) return;
    if (st.code !== 0 || !/srv_name/.test(st.stdout)) {
      throw terminalError('VNFM_ERR_MGMT_FAILED', `HAProxy on the load balancer ${h.name} does not know backend ${f.name} after the reload: ${tail(st.stdout || st.stderr)}`);
    }
    const have = parseServersState(st.stdout).map((x) => x.name).sort();
    const want = f.servers.map((x) => x.name).sort();
    if (JSON.stringify(have) !== JSON.stringify(want)) {
      throw terminalError('VNFM_ERR_MGMT_FAILED', `HAProxy on the load balancer ${h.name} serves [${have.join(', ')}] in backend ${f.name} after the reload, not [${want.join(', ')}]`);
    }
  }
}

/** Applies membership changes through the runtime API; false when any command was refused. */
async function applyRuntime(h: LbHost, socket: string | undefined, changes: ServerChanges[], sent: string[]): Promise<boolean> {
  const send = async (cmd: string, ok: RegExp): Promise<boolean> => {
    const r = await h.runtime(socket, cmd);
    sent.push(cmd);
    return r !== undefined && r.code === 0 && ok.test(r.stdout.trim() === '' ? 'ok' : r.stdout);
  };
  for (const c of changes) {
    for (const name of c.remove) {
      if (!(await send(`set server ${c.backend}/${name} state maint`, /^(ok|\s*)$/i))) return false;
      if (!(await send(`del server ${c.backend}/${name}`, /deleted/i))) return false;
    }
    for (const s of c.add) {
      const addr = s.address.includes(':') ? `[${s.address}]` : s.address;
      if (!(await send(`add server ${c.backend}/${s.name} ${addr}:${s.port} check inter 2s fall 2 rise 1`, /registered/i))) return false;
      if (!(await send(`enable health ${c.backend}/${s.name}`, /^(ok|\s*)$/i))) return false;
      if (!(await send(`set server ${c.backend}/${s.name} state ready`, /^(ok|\s*)$/i))) return false;
    }
  }
  // verify: every backend lists exactly the wanted servers
  for (const c of changes) {
    const st = await h.runtime(socket, `show servers state ${c.backend}`);
    if (!st || st.code !== 0) return false;
    const names = new Set(parseServersState(st.stdout).map((x) => x.name));
    if (c.add.some((s) => !names.has(s.name)) || c.remove.some((n) => !c.add.some((s) => s.name === n) && names.has(n))) return false;
  }
  return true;
}

async function apply(h: LbHost, owner: string, desired: LbOwnerConfig | undefined): Promise<LbApplyResult> {
  const { text, parsed, recorded } = await readParsed(h);
  const liveSection = parsed.owners.get(owner);
  const before = portsOf(liveSection);
  const expected = recorded ? (recorded.owners[owner] ?? null) : h.o.lastAppliedHash;
  const drift = {
    file: text !== undefined && recorded !== undefined && sha256(text) !== recorded.file,
    section: expected !== undefined && (liveSection === undefined ? expected !== null : sha256(liveSection) !== expected),
  };
  const section = desired ? renderOwnerSection(desired) : undefined;
  const owners = new Map(parsed.owners);
  const removedStale: string[] = [];
  if (desired) {
    // sections in the way whose instance is gone (or never got instantiated) go; others refuse
    const inUse = new Map<string, 'in use' | 'stale check unavailable'>();
    for (const o of conflictingOwners(parsed, desired)) {
      if (h.o.ownerIsStale && (await h.o.ownerIsStale(o))) {
        h.o.onStaleOwnerRemoved?.(o, portsOf(owners.get(o)));
        owners.delete(o);
        removedStale.push(o);
      } else inUse.set(o, h.o.ownerIsStale ? 'in use' : 'stale check unavailable');
    }
    const clash = conflicts({ base: parsed.base, owners }, desired);
    if (clash.length > 0) {
      const who = [...inUse].map(([o, why]) => {
        const id = ownerInstanceId(o);
        return id === undefined ? `${o} (not a VNF instance's section)` : `${o} (VNF instance ${id}${why === 'in use' ? ', which still exists and is instantiated or has an operation in progress' : ''})`;
      });
      throw terminalError(
        'VNFM_ERR_MGMT_REFUSED',
        `the load balancer ${h.name} cannot publish ${owner}: ${clash.join('; ')}${who.length > 0 ? `; sections in the way: ${who.join(', ')}` : ''}`,
      );
    }
  }
  if (section) owners.set(owner, section);
  else owners.delete(owner);
  const next = composeLbConfig(parsed.base, owners);
  const hash = section ? sha256(section) : null;
  const after = portsOf(section);
  const fileHash = sha256(next);
  const record = recordOf(next, owners, owner, recorded);
  const base = { owner, hash, fileHash, ports: { before, after }, ...(drift.file || drift.section ? { drift } : {}), ...(removedStale.length > 0 ? { removedStale } : {}) };
  const running = await h.running();
  if (text === next && running) {
    // nothing written: the record stays (a drift elsewhere in the file stays visible), unless there is none yet
    if (!recorded || recorded.owners[owner] !== hash) await h.record({ file: recorded?.file ?? fileHash, owners: { ...(recorded?.owners ?? {}), ...(hash ? { [owner]: hash } : {}) } });
    return { ...base, action: 'unchanged' };
  }
  // membership only: runtime API first, then the file (validated) without a reload
  const socket = text ? adminSocketPath(text) : undefined;
  if (running && desired && liveSection && text !== undefined && h.o.useRuntimeApi !== false && parseLbConfig(next).base === parsed.base) {
    const changes = membershipOnly(liveSection, desired);
    const othersSame = [...parsed.owners].every(([o, t]) => o === owner || owners.get(o) === t);
    if (changes && othersSame && socket) {
      const staged = await h.stage(next);
      const sent: string[] = [];
      if (await applyRuntime(h, socket, changes, sent)) {
        await h.swap(staged, record);
        return { ...base, action: 'runtime', runtime: sent };
      }
      // a refused runtime command: the validated file and a reload settle it
      await h.swap(staged, record);
      await h.run(h.o.reloadCommand, 'reload haproxy');
      await waitPorts(h, after, before.filter((p) => !after.includes(p)));
      await verifyServers(h, adminSocketPath(next), desired);
      return { ...base, action: 'reload', runtime: sent };
    }
  }
  const staged = await h.stage(next);
  await h.swap(staged, record);
  const action = running ? 'reload' : 'start';
  await h.run(running ? h.o.reloadCommand : h.o.startCommand, `${action} haproxy`);
  const staleGone = removedStale.flatMap((o) => portsOf(parsed.owners.get(o)));
  await waitPorts(h, after, [...new Set([...before, ...staleGone])].filter((p) => !after.includes(p)));
  if (desired) await verifyServers(h, adminSocketPath(next), desired);
  return { ...base, action };
}

function wrap<T>(h: LbHost, what: string, fn: () => Promise<T>): Promise<T> {
  return serialised(`${h.s.host}|${h.o.configPath}`, async () => {
    try {
      return await fn();
    } catch (e) {
      if (isVnfmError(e)) throw e;
      throw vnfmError('VNFM_ERR_MGMT_FAILED', `${what} on the load balancer ${h.name}: ${(e as Error).message}`);
    }
  });
}

/**
 * Makes the LB publish exactly `config.frontends` for `config.owner` (its section replaced as a
 * whole; other owners' sections and the base untouched). Validated before anything is written
 * (bad names/ports, clashes with other owners: VNFM_ERR_MGMT_REFUSED); an invalid resulting file
 * leaves the live one untouched (VNFM_ERR_MGMT_COMMAND naming haproxy's message).
 */
export function reconcileOwner(session: SshSession, config: LbOwnerConfig, opts: LbHostOptions = {}): Promise<LbApplyResult> {
  const h = new LbHost(session, opts);
  try {
    checkOwnerConfig(config);
  } catch (e) {
    return Promise.reject(terminalError('VNFM_ERR_MGMT_REFUSED', `the load balancer ${h.name}: ${(e as Error).message}`));
  }
  return wrap(h, `publishing ${config.owner}`, () => apply(h, config.owner, config));
}

/** Removes the owner's section (its ports stop listening); nothing to do when it has none. */
export function removeOwner(session: SshSession, owner: string, opts: LbHostOptions = {}): Promise<LbApplyResult> {
  const h = new LbHost(session, opts);
  return wrap(h, `removing ${owner}`, async () => {
    const { text, parsed } = await readParsed(h);
    if (text === undefined || !parsed.owners.has(owner)) {
      return { owner, action: 'unchanged', hash: null, fileHash: text === undefined ? '' : sha256(text), ports: { before: [], after: [] } } satisfies LbApplyResult;
    }
    return apply(h, owner, undefined);
  });
}

/** Reads what the LB holds (for drift checks and tests): the file, its hashes, the owners' sections. */
export function readLbState(session: SshSession, opts: LbHostOptions = {}): Promise<LbState> {
  const h = new LbHost(session, opts);
  return wrap(h, 'reading the state', async () => {
    const { text, parsed, recorded } = await readParsed(h);
    const owners: LbState['owners'] = {};
    for (const [o, t] of parsed.owners) owners[o] = { hash: sha256(t), ports: portsOf(t), drift: recorded !== undefined && recorded.owners[o] !== sha256(t) };
    const fileHash = text === undefined ? undefined : sha256(text);
    return { text, fileHash, recordedHash: recorded?.file, owners, fileDrift: recorded !== undefined && fileHash !== recorded.file, running: await h.running() };
  });
}

/**
 * The cluster's nodes changed (a worker healed, added, removed, drained): every node-port backend
 * of the selected owners (default: every CNF section, `cnf-*`) gets the Ready schedulable nodes
 * as its servers — through the runtime API when only members change, the file rewritten
 * (validated) so a restart keeps them. Sections that are not exactly a rendering (edited by hand)
 * are skipped and named in `skipped`.
 */
export function reconcileNodeMembers(
  session: SshSession,
  nodes: readonly LbNode[],
  opts: LbHostOptions & { owners?: (owner: string) => boolean } = {},
): Promise<{ results: LbApplyResult[]; skipped: string[] }> {
  const h = new LbHost(session, opts);
  const select = opts.owners ?? ((o: string) => o.startsWith('cnf-'));
  return wrap(h, 'updating node members', async () => {
    const { parsed } = await readParsed(h);
    const results: LbApplyResult[] = [];
    const skipped: string[] = [];
    for (const [owner, section] of parsed.owners) {
      if (!select(owner)) continue;
      const config = parseOwnerSection(section);
      if (!config) {
        skipped.push(owner);
        continue;
      }
      results.push(await apply(h, owner, withNodeMembers(config, nodes)));
    }
    return { results, skipped };
  });
}
