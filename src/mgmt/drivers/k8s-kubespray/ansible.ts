/**
 * Ansible on the operator's Ansible server (spec §2.3 Kubespray rules 2-3, 6):
 *
 * - a play runs **detached** from the SSH session: its own session (`setsid`), stdin closed, no
 *   PTY, output to `<runs>/<run id>/log`, exit code to `<runs>/<run id>/rc` (written then renamed),
 *   its PID in `pid`; a VNFM restarted while the play runs finds the run by its id (journaled by the
 *   caller before the start) and waits for its `rc` instead of starting it again;
 * - the node passwords reach Ansible through a second inventory file (mode 0600) that the detached
 *   wrapper removes as soon as the play ends (also when the VNFM is gone); nothing secret is on a
 *   command line or in the log;
 * - success is the exit code AND the parsed `PLAY RECAP` (every host `failed=0 unreachable=0`);
 *   a failure names the failed / unreachable hosts and the failing task;
 * - one known_hosts file per cluster (`StrictHostKeyChecking=accept-new`): keys are learned once
 *   and then checked; the entries of VMs replaced by the operation are removed before the play.
 */
import { createHash, randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import { retryableError, vnfmError } from '../../../errors.ts';
import { type Host, shq } from '../k8s-common/host.ts';

/** One host line of a PLAY RECAP. */
export interface RecapHost {
  ok: number;
  changed: number;
  unreachable: number;
  failed: number;
  skipped: number;
  rescued: number;
  ignored: number;
}

/** The last PLAY RECAP of an ansible-playbook output (host -> counters); undefined when there is none. */
export function parseRecap(log: string): Record<string, RecapHost> | undefined {
  const at = log.lastIndexOf('PLAY RECAP');
  if (at < 0) return undefined;
  const out: Record<string, RecapHost> = {};
  const lines = log.slice(at).split('\n').slice(1);
  for (const line of lines) {
    const m = /^(\S+)\s*:\s*((?:\w+=\d+\s*)+)$/.exec(line.trim());
    if (!m) {
      if (line.trim() === '' && Object.keys(out).length === 0) continue;
      if (line.trim() === '') break;
      continue;
    }
    const c: Record<string, number> = {};
    for (const kv of (m[2] as string).trim().split(/\s+/)) {
      const [k, v] = kv.split('=');
      if (k) c[k] = Number(v);
    }
    out[m[1] as string] = { ok: c.ok ?? 0, changed: c.changed ?? 0, unreachable: c.unreachable ?? 0, failed: c.failed ?? 0, skipped: c.skipped ?? 0, rescued: c.rescued ?? 0, ignored: c.ignored ?? 0 };
  }
  return out;
}

/** The tasks that failed (fatal, not ignored) per host, from the play output. */
export function failedTasks(log: string): { host: string; task: string; unreachable: boolean; message?: string }[] {
  const out: { host: string; task: string; unreachable: boolean; message?: string }[] = [];
  let task = '';
  for (const line of log.split('\n')) {
    const t = /^TASK \[(.*)\]/.exec(line);
    if (t) {
      task = t[1] as string;
      continue;
    }
    const f = /^fatal: \[([^\]]+)\]: (FAILED|UNREACHABLE)! => (.*)$/.exec(line);
    if (f && !/\.\.\.ignoring/.test(line)) {
      let message: string | undefined;
      try {
        const j = JSON.parse(f[3] as string) as { msg?: unknown; stderr?: unknown };
        message = typeof j.msg === 'string' ? j.msg : typeof j.stderr === 'string' ? j.stderr : undefined;
      } catch {
        message = undefined;
      }
      out.push({ host: f[1] as string, task, unreachable: f[2] === 'UNREACHABLE', ...(message ? { message: message.slice(0, 300) } : {}) });
    }
  }
  return out;
}

/** The verdict of a finished play. */
export interface PlayVerdict {
  ok: boolean;
  rc: number;
  recap: Record<string, RecapHost> | undefined;
  failedHosts: string[];
  unreachableHosts: string[];
  /** One line for an error message: what failed where. */
  summary: string;
  /** How long the play itself ran (the wrapper's clock), when known. */
  durationMs?: number;
}

/**
 * Judges a finished play by its exit code (0 ok, 2 task failures, 4 unreachable hosts, other:
 * error) and its PLAY RECAP: both must say success.
 */
export function judgePlay(rc: number, log: string): PlayVerdict {
  const recap = parseRecap(log);
  const failedHosts = Object.entries(recap ?? {}).filter(([, c]) => c.failed > 0).map(([h]) => h);
  const unreachableHosts = Object.entries(recap ?? {}).filter(([, c]) => c.unreachable > 0).map(([h]) => h);
  const ok = rc === 0 && recap !== undefined && failedHosts.length === 0 && unreachableHosts.length === 0;
  let summary = '';
  if (!ok) {
    const parts: string[] = [`exit code ${rc}${rc === 2 ? ' (task failures)' : rc === 4 ? ' (unreachable hosts)' : ''}`];
    if (failedHosts.length) parts.push(`failed hosts: ${failedHosts.join(', ')}`);
    if (unreachableHosts.length) parts.push(`unreachable hosts: ${unreachableHosts.join(', ')}`);
    if (!recap) parts.push('no PLAY RECAP in the output');
    const tasks = failedTasks(log);
    if (tasks.length) parts.push(`failing task(s): ${tasks.slice(0, 5).map((t) => `'${t.task}' on ${t.host}${t.message ? ` (${t.message})` : ''}`).join('; ')}`);
    else {
      const tail = log.trim().split('\n').slice(-3).join(' | ');
      if (tail) parts.push(`last output: ${tail.slice(0, 400)}`);
    }
    summary = parts.join('; ');
  }
  return { ok, rc, recap, failedHosts, unreachableHosts, summary };
}

/** A play to run. */
export interface PlaySpec {
  /** Run id (journaled by the caller before the start). */
  runId: string;
  /** Playbook path on the Ansible server. */
  playbook: string;
  /** Inventory file (hosts.yaml) path. */
  inventory: string;
  /** Secret inventory content (node passwords), written 0600 and removed when the play ends. */
  secretInventory: Record<string, unknown>;
  /** `-e k=v` extra variables (never secrets). */
  extraVars?: Record<string, string>;
  /** `--limit` */
  limit?: string;
  /** Working directory of the run (holds log, rc, pid). */
  runDir: string;
  /** known_hosts file of the cluster. */
  knownHosts: string;
}

/** The command line of a play (no secret in it). */
export function playCommand(s: PlaySpec): string {
  const args = ['ansible-playbook', '-i', s.inventory, '-i', `${s.runDir}/secrets.yaml`, '--become', '--become-user=root'];
  for (const [k, v] of Object.entries(s.extraVars ?? {})) args.push('-e', `${k}=${v}`);
  if (s.limit) args.push(`--limit=${s.limit}`);
  args.push(s.playbook);
  return args.map(shq).join(' ');
}

/**
 * Where a run's SSH connection masters listen (a short path: a Unix socket path is limited to
 * about 100 bytes, and the run directory alone may be longer). One directory per run: no play
 * shares a connection with another play.
 */
export function controlDirOf(runId: string): string {
  return `/tmp/.hvcp-${createHash('sha256').update(runId).digest('hex').slice(0, 12)}`;
}

/**
 * Environment of every play: non-interactive, per-cluster known hosts. The tasks of one play share
 * one SSH connection per node (a connection set-up per task and node costs more than most tasks
 * do), held by a master that lives only for that run (`controlDir`, removed when the play ends).
 * A dead node still looks dead: a host that goes away closes its connection (the next task
 * connects again, and fails), and one that stops answering loses its master after 3 keep-alives
 * of 5 s.
 */
export function playEnv(knownHosts: string, controlDir: string): Record<string, string> {
  const sharing = `-o ControlMaster=auto -o ControlPersist=60s -o ControlPath=${controlDir}/%C -o ServerAliveInterval=5 -o ServerAliveCountMax=3`;
  return {
    ANSIBLE_HOST_KEY_CHECKING: 'True',
    ANSIBLE_SSH_ARGS: `${sharing} -o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=accept-new -o ConnectTimeout=10`,
    ANSIBLE_NOCOLOR: '1',
    ANSIBLE_FORCE_COLOR: '0',
    ANSIBLE_RETRY_FILES_ENABLED: 'False',
    ANSIBLE_STDOUT_CALLBACK: 'default',
    ANSIBLE_PIPELINING: 'True',
    ANSIBLE_TIMEOUT: '20',
    PYTHONUNBUFFERED: '1',
  };
}

/** A fresh run id. */
export function newRunId(label: string): string {
  return `${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '')}-${label.replace(/[^a-zA-Z0-9_.-]/g, '_').slice(0, 40)}-${randomBytes(4).toString('hex')}`;
}

/** State of a run on the Ansible server. */
export type RunState = { state: 'absent' } | { state: 'running'; pid?: number } | { state: 'done'; rc: number } | { state: 'lost' };

/** Reads the state of a run: rc file, else whether its wrapper still lives. */
export async function runState(h: Host, runDir: string): Promise<RunState> {
  const d = shq(runDir);
  // no pid file: the wrapper never started (the start command waits for it), whatever the directory holds
  const r = await h.exec(`if [ -f ${d}/rc ]; then echo "rc $(cat ${d}/rc)"; elif [ -f ${d}/pid ]; then p=$(cat ${d}/pid); if kill -0 "$p" 2>/dev/null; then echo "running $p"; else echo lost; fi; else echo absent; fi`);
  const out = r.stdout.trim();
  if (out.startsWith('rc ')) {
    const rc = Number(out.slice(3).trim());
    return { state: 'done', rc: Number.isInteger(rc) ? rc : 255 };
  }
  if (out.startsWith('running')) return { state: 'running', pid: Number(out.split(' ')[1]) };
  if (out === 'lost') return { state: 'lost' };
  return { state: 'absent' };
}

/**
 * Starts a play detached (its own session; the SSH command returns at once). The wrapper writes
 * its PID, runs the play with stdin from /dev/null, writes the exit code to `rc` (atomically) and
 * removes the secret inventory whatever the outcome.
 */
export async function startPlay(h: Host, s: PlaySpec): Promise<void> {
  const d = s.runDir;
  await h.run(`mkdir -p ${shq(d)} && chmod 700 ${shq(d)}`, { label: 'create the run directory' });
  await h.session.upload(`${d}/secrets.yaml`, stringify(s.secretInventory), { mode: 0o600 });
  const cp = controlDirOf(s.runId);
  const env = Object.entries(playEnv(s.knownHosts, cp))
    .map(([k, v]) => `export ${k}=${shq(v)}`)
    .join('; ');
  const wrapper = [
    '#!/bin/sh',
    `cd ${shq(d)} || exit 1`,
    'echo $$ > pid.tmp && mv pid.tmp pid',
    env,
    `rm -rf ${shq(cp)}; mkdir -m 700 ${shq(cp)}`,
    'date +%s%3N > t0',
    `${playCommand(s)} < /dev/null > log 2>&1`,
    'rc=$?',
    'date +%s%3N > t1',
    // the run's connection masters end with it
    `for m in ${shq(cp)}/*; do [ -S "$m" ] && ssh -o ControlPath="$m" -O exit run-end >/dev/null 2>&1; done; rm -rf ${shq(cp)}`,
    'rm -f secrets.yaml key-*',
    'echo $rc > rc.tmp && mv rc.tmp rc',
    '',
  ].join('\n');
  await h.session.upload(`${d}/run.sh`, wrapper, { mode: 0o700 });
  // detached (own session, no terminal); returns once the wrapper has written its pid
  await h.run(`cd ${shq(d)} && rm -f pid rc && (setsid sh ./run.sh < /dev/null > /dev/null 2>&1 &) && i=0 && while [ ! -f pid ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; test -f pid`, { label: `start ${s.playbook}` });
}

/** What waiting for a play reports. */
export interface PlayWait {
  pollMs: number;
  timeoutMs: number;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
  onLine?: (line: string) => void;
}

/** The run's log (the tail: at most 512 KiB). */
export async function readLog(h: Host, runDir: string): Promise<string> {
  const r = await h.exec(`tail -c 524288 ${shq(`${runDir}/log`)} 2>/dev/null`);
  return r.stdout;
}

/**
 * Waits for a started run's exit code and judges it. A run whose wrapper died without an exit code
 * (the Ansible server rebooted) or that outlives the timeout is an error naming the run.
 */
export async function waitPlay(h: Host, s: Pick<PlaySpec, 'runDir' | 'playbook' | 'runId'>, w: PlayWait): Promise<PlayVerdict> {
  const end = w.now() + w.timeoutMs;
  for (;;) {
    const st = await runState(h, s.runDir);
    if (st.state === 'done') {
      const log = await readLog(h, s.runDir);
      const t = await h.exec(`cat ${shq(`${s.runDir}/t0`)} ${shq(`${s.runDir}/t1`)} 2>/dev/null`);
      const [t0, t1] = t.stdout.trim().split('\n').map(Number);
      const v = judgePlay(st.rc, log);
      return t0 && t1 && t1 >= t0 ? { ...v, durationMs: t1 - t0 } : v;
    }
    if (st.state === 'lost') {
      await h.exec(`rm -f ${shq(`${s.runDir}/secrets.yaml`)} ${shq(s.runDir)}/key-*`);
      throw retryableError('VNFM_ERR_MGMT_FAILED', `ansible run ${s.runId} (${s.playbook}) ended without an exit code (the Ansible server restarted?); retry runs it again`);
    }
    if (st.state === 'absent') throw vnfmError('VNFM_ERR_MGMT_FAILED', `ansible run ${s.runId} (${s.playbook}) is not on the Ansible server (${s.runDir})`);
    if (w.now() >= end) throw retryableError('VNFM_ERR_MGMT_FAILED', `ansible run ${s.runId} (${s.playbook}) still running after ${Math.round(w.timeoutMs / 1000)} s (left running; its log: ${s.runDir}/log)`);
    if (w.onLine) {
      const r = await h.exec(`tail -n 1 ${shq(`${s.runDir}/log`)} 2>/dev/null`);
      const l = r.stdout.trim();
      if (l) w.onLine(l);
    }
    await w.sleep(w.pollMs);
  }
}
