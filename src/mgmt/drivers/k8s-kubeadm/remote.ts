/**
 * Host-bound actions on a cluster node over SSH: files written in place, HAProxy edits validated
 * before any reload, the HAProxy runtime API, kubeadm join material, etcdctl, and the install
 * script. Secrets never go on a command line: the SSH password reaches sudo on stdin (the
 * executor's job), file contents go on stdin, and the join token / certificate key reach the
 * install script through a 0600 file that the command sources and removes first.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { isVnfmError, terminalError, vnfmError } from '../../../errors.ts';
import type { ExecResult } from '../../ssh/ssh-executor.ts';
import { etcdCommands, type EtcdEndpointHealth, type EtcdEndpointStatus, type EtcdMember, isMemberNotFound, memberHealth, type MemberHealth, parseEndpointHealth, parseEndpointStatus, parseMemberList } from './etcd.ts';
import { addServer, adminSocketPath, listServers, parseServersState, removeServer, runtime, type ServerState } from './haproxy.ts';
import { applyHostsBlock, type HostsEntry } from './hosts-block.ts';

export { Host, type HostOptions, shq } from '../k8s-common/host.ts';
import { Host, shq } from '../k8s-common/host.ts';

// ---------------------------------------------------------------- /etc/hosts

/** Rewrites the marked block of the hosts file; returns whether the content changed. */
export async function updateHostsBlock(h: Host, path: string, entries: readonly HostsEntry[], dropNames: readonly string[] = []): Promise<boolean> {
  const current = await h.read(path, false);
  const next = applyHostsBlock(current, entries, dropNames);
  if (next === current) return false;
  await h.writeInPlace(path, next, `write ${path} block`);
  return true;
}

// ---------------------------------------------------------------- kubeadm join material

/** `kubeadm token create` (sudo): the new bootstrap token. */
export async function createJoinToken(h: Host, ttl = '1h'): Promise<string> {
  const r = await h.sudo(`kubeadm token create --ttl ${ttl}`, { label: 'kubeadm token create' });
  const m = /\b([a-z0-9]{6}\.[a-z0-9]{16})\b/.exec(r.stdout);
  const line = r.stdout.split('\n').map((l) => l.trim()).find((l) => l !== '');
  const token = m?.[1] ?? line;
  if (!token) throw vnfmError('VNFM_ERR_MGMT_COMMAND', `kubeadm token create on ${h.name} printed no token`);
  return token;
}

/** `kubeadm init phase upload-certs --upload-certs` (sudo): the certificate key (last line). */
export async function uploadCerts(h: Host): Promise<string> {
  const r = await h.sudo('kubeadm init phase upload-certs --upload-certs', { label: 'kubeadm init phase upload-certs' });
  const lines = r.stdout.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const key = [...lines].reverse().find((l) => /^[0-9a-f]{64}$/.test(l)) ?? lines[lines.length - 1];
  if (!key) throw vnfmError('VNFM_ERR_MGMT_COMMAND', `kubeadm init phase upload-certs on ${h.name} printed no certificate key`);
  return key;
}

/** SHA-256 of the DER SubjectPublicKeyInfo of a CA certificate, as `--discovery-token-ca-cert-hash` wants it (hex). */
export function caCertHash(pem: string): string {
  const der = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex');
}

/** The cluster CA of a master (`/etc/kubernetes/pki/ca.crt`) and its hash. */
export async function clusterCa(h: Host): Promise<{ caCert: string; caHash: string }> {
  const caCert = (await h.read('/etc/kubernetes/pki/ca.crt', true)).trim();
  try {
    return { caCert: `${caCert}\n`, caHash: caCertHash(caCert) };
  } catch (e) {
    throw vnfmError('VNFM_ERR_MGMT_COMMAND', `the cluster CA certificate on ${h.name} does not parse: ${(e as Error).message}`);
  }
}

// ---------------------------------------------------------------- etcd

/** The member list and per-member health, read on one master. */
export interface EtcdView {
  members: EtcdMember[];
  status: EtcdEndpointStatus[];
  health: EtcdEndpointHealth[];
  withHealth: MemberHealth[];
}

export async function etcdMembers(h: Host): Promise<EtcdMember[]> {
  const r = await h.sudo(etcdCommands.memberList(), { label: 'etcdctl member list' });
  return parseMemberList(r.stdout);
}

/** Members and their health (`endpoint status` / `endpoint health` over the cluster, 3 s each). */
export async function etcdView(h: Host, maxLag: number): Promise<EtcdView> {
  // three independent reads on three channels of the one session, side by side.
  // --cluster probes exit non-zero when an endpoint does not answer; their JSON still lists the others
  const [members, st, he] = await Promise.all([etcdMembers(h), h.exec(etcdCommands.endpointStatus(), { sudo: true }), h.exec(etcdCommands.endpointHealth(), { sudo: true })]);
  let status: EtcdEndpointStatus[] = [];
  let health: EtcdEndpointHealth[] = [];
  try {
    status = parseEndpointStatus(st.stdout);
  } catch {
    status = [];
  }
  try {
    health = parseEndpointHealth(he.stdout);
  } catch {
    health = [];
  }
  return { members, status, health, withHealth: memberHealth(members, status, health, maxLag) };
}

/**
 * `member remove`; false when the member was already gone. etcd's strict reconfiguration check
 * refuses any membership change for a few seconds after a member (re)joined ("etcdserver:
 * unhealthy cluster"): that answer is retried with back-off for up to `unhealthyRetryMs`.
 */
export async function etcdRemoveMember(h: Host, id: string, unhealthyRetryMs = 60_000, sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms))): Promise<boolean> {
  const until = Date.now() + unhealthyRetryMs;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5_000)) {
    const r = await h.exec(etcdCommands.memberRemove(id), { sudo: true });
    if (r.code === 0) return true;
    const out = `${r.stderr}\n${r.stdout}`;
    if (isMemberNotFound(out)) return false;
    if (/unhealthy cluster/.test(out) && Date.now() + delay < until) {
      await sleep(delay);
      continue;
    }
    throw vnfmError('VNFM_ERR_MGMT_COMMAND', `etcdctl member remove on ${h.name} failed (exit ${r.code}): ${lastLines(r.stderr || r.stdout)}`);
  }
}

/** `move-leader`, sent to the current leader's endpoint. */
export async function etcdMoveLeader(h: Host, leaderClientUrl: string, toId: string): Promise<void> {
  await h.sudo(etcdCommands.moveLeader(leaderClientUrl, toId), { label: 'etcdctl move-leader' });
}

export function lastLines(text: string, n = 5): string {
  return text.trim().split('\n').slice(-n).join(' | ');
}

// ---------------------------------------------------------------- HAProxy

/** How a survivor's HAProxy is edited. */
export interface HaproxySettings {
  configPath: string;
  backend: string;
  reloadCommand: string;
  port: number;
}

/** Exit status of the runtime client wrapper when the host has neither `socat` nor `nc`. */
const NO_RUNTIME_TOOL = 127;

/** The shell pipeline sending one runtime API command to `socket` (`socat` preferred, else `nc -U`). */
function runtimeClient(socket: string, command: string): string {
  return `printf '%s\\n' ${shq(command)} | { if command -v socat >/dev/null 2>&1; then socat stdio UNIX-CONNECT:${shq(socket)}; elif command -v nc >/dev/null 2>&1; then nc -U -w 3 ${shq(socket)}; else exit ${NO_RUNTIME_TOOL}; fi; }`;
}

function runtimeResult(r: ExecResult): ExecResult | undefined {
  return r.code === NO_RUNTIME_TOOL && r.stdout.trim() === '' ? undefined : r;
}

/**
 * Sends one runtime API command over the admin stats socket, in one round trip; undefined when
 * there is no way to (no socket in the configuration, no client on the host).
 */
export async function haproxyRuntime(h: Host, configText: string, command: string): Promise<ExecResult | undefined> {
  const socket = adminSocketPath(configText);
  if (!socket) return undefined;
  return runtimeResult(await h.exec(runtimeClient(socket, command), { sudo: true }));
}

/** Exit status of {@link installHaproxyConfig}'s script when `haproxy -c` refused the new file. */
const CONFIG_INVALID = 97;

/** A runtime API command run inside the install script, its output framed by `tag` on stdout. */
function framedRuntime(socket: string, command: string, tag: string): string {
  return `rt_out=$(${runtimeClient(socket, command)} 2>&1); rt=$?; printf '@@%s-begin@@\\n%s\\n@@%s-end %s@@\\n' ${tag} "$rt_out" ${tag} "$rt"`;
}

function unframe(stdout: string, tag: string): ExecResult | undefined {
  const m = new RegExp(`@@${tag}-begin@@\\n([\\s\\S]*?)\\n@@${tag}-end (\\d+)@@`).exec(stdout);
  if (!m) return undefined;
  return runtimeResult({ code: Number(m[2]), stdout: m[1] as string, stderr: '' } as ExecResult);
}

/**
 * Installs a new configuration in one round trip: the text (on stdin) goes to a private temp file,
 * is checked with `haproxy -c -f` (a failing check leaves the live file untouched), copied in place
 * (same inode), and HAProxy is reloaded; the temp file is removed in every case. `before` / `after`:
 * runtime API commands sent (over the live configuration's admin socket) before the new file is
 * checked / after the reload, in the same round trip; their answers are returned.
 */
export async function installHaproxyConfig(h: Host, s: HaproxySettings, text: string, rt: { before?: string; after?: string; socket?: string } = {}): Promise<{ before?: ExecResult; after?: ExecResult }> {
  const socket = rt.socket ?? adminSocketPath(text);
  const script = [
    'umask 077',
    ...(rt.before && socket ? [framedRuntime(socket, rt.before, 'before')] : []),
    't=$(mktemp /tmp/healvnfm-haproxy-XXXXXXXX) || exit 1',
    `trap 'rm -f "$t" "$t.check"' EXIT`,
    'cat > "$t"',
    `if ! haproxy -c -f "$t" >"$t.check" 2>&1; then cat "$t.check" >&2; exit ${CONFIG_INVALID}; fi`,
    `cat "$t" > ${shq(s.configPath)} || exit 1`,
    rt.after && socket ? `${s.reloadCommand} || exit $?` : s.reloadCommand,
    ...(rt.after && socket ? [framedRuntime(socket, rt.after, 'after')] : []),
  ].join('\n');
  const r = await h.exec(script, { sudo: true, stdin: text });
  if (r.code === CONFIG_INVALID) {
    throw vnfmError('VNFM_ERR_MGMT_COMMAND', `the new HAProxy configuration of ${h.name} is invalid (haproxy -c): ${lastLines(r.stderr || r.stdout)}; the live configuration was not changed`);
  }
  if (r.code !== 0) throw vnfmError('VNFM_ERR_MGMT_COMMAND', `installing the HAProxy configuration on ${h.name} failed (exit ${r.code}): ${lastLines(r.stderr || r.stdout)}`);
  const before = rt.before ? unframe(r.stdout, 'before') : undefined;
  const after = rt.after ? unframe(r.stdout, 'after') : undefined;
  return { ...(before ? { before } : {}), ...(after ? { after } : {}) };
}

/** Result of taking a master out of a survivor's HAProxy. */
export interface HaproxyRemoval {
  runtime: 'maint' | 'unavailable' | 'failed';
  fileChanged: boolean;
}

function maintOutcome(r: ExecResult | undefined): HaproxyRemoval['runtime'] {
  return r === undefined ? 'unavailable' : r.code === 0 && !/No such|not found|Unknown/i.test(r.stdout) ? 'maint' : 'failed';
}

/**
 * Runtime `maint` of server `name` (immediate: no new connection goes to it, no reload), given the
 * live configuration text (for the admin socket). Nothing is sent when the file no longer lists it.
 */
export async function haproxyMaint(h: Host, s: HaproxySettings, text: string, name: string): Promise<HaproxyRemoval['runtime']> {
  if (!(listServers(text, s.backend) ?? []).some((x) => x.name === name)) return 'unavailable';
  return maintOutcome(await haproxyRuntime(h, text, runtime.maint(s.backend, name)));
}

/**
 * Takes server `name` out of the backend: runtime `maint` first (immediate, no restart), then the
 * file without that exact server line, validated, in place, reloaded (one round trip after the
 * read). Nothing changes when the server is not in the file (already done). `done`: the live text
 * already read and the `maint` already sent ({@link haproxyMaint}).
 */
export async function haproxyRemoveServer(h: Host, s: HaproxySettings, name: string, done?: { text: string; runtime: HaproxyRemoval['runtime'] }): Promise<HaproxyRemoval> {
  const text = done?.text ?? (await h.read(s.configPath, true));
  if (listServers(text, s.backend) === undefined) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${s.configPath} of ${h.name} has no backend ${s.backend}`);
  const next = removeServer(text, s.backend, name);
  if (!next.changed) return { runtime: 'unavailable', fileChanged: false };
  if (done) {
    await installHaproxyConfig(h, s, next.text);
    return { runtime: done.runtime, fileChanged: true };
  }
  const socket = adminSocketPath(text);
  const { before: r } = await installHaproxyConfig(h, s, next.text, { before: runtime.maint(s.backend, name), ...(socket ? { socket } : {}) });
  return { runtime: maintOutcome(r), fileChanged: true };
}

/**
 * Puts server `name` (`ip:port`) back in the backend: file rewrite, validated, reloaded; then
 * verified (runtime `show servers state` when the admin socket is reachable, else the file read
 * back). Throws when the verification fails.
 */
export async function haproxyAddServer(h: Host, s: HaproxySettings, name: string, ip: string): Promise<{ fileChanged: boolean; verifiedBy: 'runtime' | 'file' }> {
  const text = await h.read(s.configPath, true);
  const next = addServer(text, s.backend, name, ip, s.port);
  const state = next.changed ? (await installHaproxyConfig(h, s, next.text, { after: runtime.showState(s.backend) })).after : await haproxyRuntime(h, next.text, runtime.showState(s.backend));
  const host = ip.includes(':') ? `[${ip}]` : ip;
  if (state && state.code === 0 && /srv_name/.test(state.stdout)) {
    const servers: ServerState[] = parseServersState(state.stdout);
    if (!servers.some((x) => x.name === name && (x.address === `${ip}:${s.port}` || x.address === ip || x.address === `${host}:${s.port}`))) {
      throw vnfmError('VNFM_ERR_MGMT_FAILED', `HAProxy on ${h.name} does not serve ${name} (${ip}) in backend ${s.backend} after the reload`);
    }
    return { fileChanged: next.changed, verifiedBy: 'runtime' };
  }
  const back = await h.read(s.configPath, true);
  if (!(listServers(back, s.backend) ?? []).some((x) => x.name === name && x.address === `${host}:${s.port}`)) {
    throw vnfmError('VNFM_ERR_MGMT_FAILED', `${s.configPath} of ${h.name} does not list ${name} (${ip}) after the update`);
  }
  return { fileChanged: next.changed, verifiedBy: 'file' };
}

// ---------------------------------------------------------------- install script

/** Secrets of an install run, kept off the command line. */
export interface InstallSecrets {
  token?: string;
  caHash?: string;
  certificateKey?: string;
}

/** What an install script reported. */
export interface InstallReport {
  role?: string;
  node?: string;
  joined?: boolean;
  token?: string;
  server?: string;
  caHash?: string;
  certificateKey?: string;
  caCert?: string;
  /** The last lines the script printed (at most {@link OUTPUT_TAIL_LINES}), secrets redacted, for error messages. */
  outputTail?: string[];
}

/** How many of the script's last output lines an error message shows. */
export const OUTPUT_TAIL_LINES = 10;
const OUTPUT_TAIL_LINE_CHARS = 200;

/**
 * The last lines of a script's output, fit to be shown: at most `n` non-empty lines, each cut at
 * 200 characters, with token- and key-shaped strings and the values of `token` / `certificate_key`
 * / `password` markers replaced by `****`.
 */
export function redactedTail(lines: readonly string[], n = OUTPUT_TAIL_LINES): string[] {
  return lines
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() !== '')
    .slice(-n)
    .map((l) => {
      let x = l;
      for (const sec of secretsIn(x)) x = x.split(sec).join('****');
      x = x.replace(/\b(token|certificate[ _-]?key|password|HEALVNFM_\w+)(\s*[:=]\s*)\S+/gi, '$1$2****');
      if (/HEALVNFM-RESULT/.test(x)) x = 'HEALVNFM-RESULT ****';
      return x.length > OUTPUT_TAIL_LINE_CHARS ? `${x.slice(0, OUTPUT_TAIL_LINE_CHARS)}...` : x;
    });
}

/** The markers the main master's install must print (Tacker's script: `token:`, `server:`, `ssl_ca_cert_hash:`; `certificate_key:` for several masters). */
export function missingInstallMarkers(report: InstallReport, ha: boolean): string[] {
  const missing: string[] = [];
  if (!report.token) missing.push('token:');
  if (!report.server) missing.push('server:');
  if (!report.caHash) missing.push('ssl_ca_cert_hash:');
  if (ha && !report.certificateKey) missing.push('certificate_key:');
  return missing;
}

/**
 * Fails at once when the main master's install script exited 0 without its result markers (e.g.
 * Tacker's script after its package installation failed): the message names the missing markers and the
 * script's last output lines (bounded, secrets redacted).
 */
export function requireInstallMarkers(report: InstallReport, o: { host: string; ha: boolean }): void {
  const missing = missingInstallMarkers(report, o.ha);
  if (missing.length === 0) return;
  const tail = report.outputTail ?? [];
  throw terminalError(
    'VNFM_ERR_MGMT_FAILED',
    `the install script on ${o.host} exited 0 but did not print ${missing.join(', ')} (nor a HEALVNFM-RESULT line with them): the installation did not complete. Its last output lines: ${tail.length > 0 ? tail.join(' | ') : '(none)'}`,
    { extra: { host: o.host, missingMarkers: missing } },
  );
}

/** Reads the final `HEALVNFM-RESULT {json}` line, else the legacy markers of Tacker's script. */
export function parseInstallOutput(lines: readonly string[]): InstallReport {
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /HEALVNFM-RESULT\s+(\{.*\})\s*$/.exec(lines[i] ?? '');
    if (!m) continue;
    try {
      const j = JSON.parse(m[1] as string) as Record<string, unknown>;
      const s = (k: string) => (typeof j[k] === 'string' && j[k] !== '' ? (j[k] as string) : undefined);
      return {
        ...(s('role') ? { role: s('role') } : {}),
        ...(s('node') ? { node: s('node') } : {}),
        ...(typeof j.joined === 'boolean' ? { joined: j.joined } : {}),
        ...(s('token') ? { token: s('token') } : {}),
        ...(s('server') ? { server: s('server') } : {}),
        ...(s('caHash') ? { caHash: s('caHash') } : {}),
        ...(s('certificateKey') ? { certificateKey: s('certificateKey') } : {}),
        ...(s('caCert') ? { caCert: s('caCert') } : {}),
      };
    } catch {
      // fall through to the legacy markers
    }
  }
  const out: InstallReport = {};
  let pem: string[] | undefined;
  for (const raw of lines) {
    const l = raw.replace(/\r$/, '');
    if (l.includes('-----BEGIN CERTIFICATE-----')) pem = [];
    if (pem) {
      pem.push(l.trim());
      if (l.includes('-----END CERTIFICATE-----')) {
        out.caCert = `${pem.join('\n')}\n`;
        pem = undefined;
      }
      continue;
    }
    const m = /^(token|server|ssl_ca_cert_hash|certificate_key):\s*(\S+)\s*$/.exec(l.trim());
    if (!m) continue;
    const v = m[2] as string;
    if (m[1] === 'token') out.token = v;
    else if (m[1] === 'server') out.server = v;
    else if (m[1] === 'ssl_ca_cert_hash') out.caHash = v;
    else out.certificateKey = v;
  }
  return out;
}

/** Bootstrap tokens and certificate keys as kubeadm prints them. */
const SECRET_SHAPES = [/\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g, /\b[0-9a-f]{64}\b/g];

/** Lines of install output that carry secrets or key material (never shown as progress). */
export function isSensitiveOutput(line: string): boolean {
  return /HEALVNFM-RESULT|token|certificate[ _-]?key|ssl_ca_cert_hash|CERTIFICATE/i.test(line) || SECRET_SHAPES.some((re) => new RegExp(re.source).test(line));
}

/** Token- and key-shaped strings of an output line (to redact them from anything shown later). */
export function secretsIn(line: string): string[] {
  return SECRET_SHAPES.flatMap((re) => [...line.matchAll(new RegExp(re.source, 'g'))].map((m) => m[0]));
}

/** One run of the install script. */
export interface InstallRun {
  /** Package bytes of the script. */
  script: Buffer;
  remotePath: string;
  /** Script arguments without secrets (`-m ...`, `-w ...`, `-i`, `-p`, `-a`). */
  args: string[];
  secrets: InstallSecrets;
  /** Exported before the run (`ha_flag`, proxies): not secret. */
  env: Record<string, string>;
  timeoutMs: number;
  /** Every output line, for the caller's progress (the caller filters sensitive ones). */
  onLine?: (line: string) => void;
  /** Told of every token- or key-shaped string the script prints, as soon as it does. */
  onSecret?: (secret: string) => void;
  /** Told how long the script ran (ms), whatever its outcome. */
  onDone?: (ms: number) => void;
}

/** Environment variables a secret-aware install script reads instead of `-t` / `-k`. */
export const SECRET_ENV = { token: 'HEALVNFM_TOKEN', caHash: 'HEALVNFM_CA_HASH', certificateKey: 'HEALVNFM_CERT_KEY' } as const;

/** Whether a script reads the join secrets from the environment (it names {@link SECRET_ENV}`.token`). */
export function scriptReadsSecretEnv(script: Buffer | string): boolean {
  return (typeof script === 'string' ? script : script.toString('utf8')).includes(SECRET_ENV.token);
}

/**
 * Uploads and runs the install script as the login user (it uses sudo itself, as Tacker's does).
 * The token / CA hash / certificate key are written to a 0600 file that the command sources and
 * removes before the script starts, so the command line only names variables. A script that reads
 * `HEALVNFM_TOKEN` / `HEALVNFM_CERT_KEY` from its environment gets them exported instead of as
 * `-t` / `-k` arguments (then no secret is in any process's arguments); Tacker's script takes them
 * as arguments, visible in the process list while it runs.
 */
export async function runInstall(h: Host, run: InstallRun): Promise<InstallReport> {
  await h.session.upload(run.remotePath, run.script, { mode: 0o700 });
  const secretFile = h.tempPath('.healvnfm-join');
  const viaEnv = scriptReadsSecretEnv(run.script);
  const assignments: string[] = [];
  const exported: string[] = [];
  const flags: string[] = [];
  const put = (flag: string, v: string | undefined, key: keyof typeof SECRET_ENV, isSecret: boolean) => {
    if (v === undefined) return;
    const name = SECRET_ENV[key];
    assignments.push(`${name}=${shq(v)}`);
    if (viaEnv) exported.push(name);
    if (!viaEnv || !isSecret) flags.push(`${flag} "$${name}"`);
  };
  put('-t', run.secrets.token, 'token', true);
  put('-s', run.secrets.caHash, 'caHash', false);
  put('-k', run.secrets.certificateKey, 'certificateKey', true);
  if (exported.length > 0) assignments.push(`export ${exported.join(' ')}`);
  if (assignments.length > 0) await h.session.upload(secretFile, `${assignments.join('\n')}\n`, { mode: 0o600 });
  const exports = Object.entries(run.env).map(([k, v]) => `export ${k}=${shq(v)}`);
  const parts = [
    ...(assignments.length > 0 ? [`. ${shq(secretFile)}`, `rm -f ${shq(secretFile)}`] : []),
    ...exports,
    `bash ${shq(run.remotePath)} ${[...run.args.map(shq), ...flags].join(' ')}`,
  ];
  const lines: string[] = [];
  const started = Date.now();
  let result: ExecResult | undefined;
  try {
    result = await h.run(parts.join(' && '), {
      timeoutMs: run.timeoutMs,
      label: `install script on ${h.name}`,
      maxOutputBytes: 4 * 1024 * 1024,
      onOutput: (line) => {
        for (const x of secretsIn(line)) run.onSecret?.(x);
        lines.push(line);
        if (lines.length > 20_000) lines.splice(0, lines.length - 10_000);
        run.onLine?.(line);
      },
    });
  } catch (e) {
    if (isVnfmError(e)) throw e;
    throw vnfmError('VNFM_ERR_MGMT_COMMAND', `install script on ${h.name} failed: ${(e as Error).message}`, { cause: e });
  } finally {
    if (assignments.length > 0) await h.exec(`rm -f ${shq(secretFile)}`).catch(() => undefined);
    // How long the VM itself took (install / join), apart from the VNFM's own work (benchmarks).
    run.onDone?.(Date.now() - started);
  }
  // an executor that does not stream gives the whole output at the end
  const all = lines.length > 0 || !result ? lines : `${result.stdout}\n${result.stderr}`.split('\n');
  return { ...parseInstallOutput(all), outputTail: redactedTail(all) };
}
