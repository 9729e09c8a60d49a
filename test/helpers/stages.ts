/**
 * Test stages: groups of tests that need something outside the repository.
 *
 * | stage        | needs                                                                    |
 * | ------------ | ------------------------------------------------------------------------ |
 * | (sims)       | nothing: the simulated cloud, PGlite; always runs                        |
 * | `pg`         | a PostgreSQL server the tests may create databases on (VNFM_TEST_PG_URL) |
 * | `real-heat`  | a real Keystone + Heat (`bash scripts/real-heat.sh up`, root, Debian)    |
 * | `tacker-cli` | the `openstack vnflcm` CLI (Debian package python3-tackerclient)         |
 * | `kubectl`    | the `kubectl` binary                                                     |
 * | `lab`        | root, `ip netns`, and the Debian packages openssh-server, etcd-server,   |
 * |              | etcd-client, haproxy, ansible, sshpass, sudo, nftables (the live-VM lab,  |
 * |              | docs/lab.md)                                                               |
 * | `browser`    | Debian's Chromium at /usr/bin/chromium (the dashboard's browser tests)   |
 *
 * A test file asks for its stage at load time (`const pg = await stage('pg')`) and passes
 * `{ skip: pg.skip }` to its `describe`. When the stage is listed in `VNFM_TEST_REQUIRE`
 * (comma-separated, or `all`) and cannot run, the file fails at once with a message naming what is
 * missing. Otherwise an unavailable stage is skipped, and the runner (scripts/run-tests.mjs) ends
 * the run with one line listing the skipped stages and why. Nothing here installs anything.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/** The optional stages. */
export const STAGES = ['pg', 'real-heat', 'tacker-cli', 'kubectl', 'lab', 'browser'] as const;
/** One optional stage. */
export type StageName = (typeof STAGES)[number];

/** What a test file gets for its stage. */
export interface Stage {
  readonly name: StageName;
  /** True when the stage's tests run. */
  readonly available: boolean;
  /** `false` when the tests run, else the reason (for node:test's `skip` option). */
  readonly skip: string | false;
}

/** The stages `VNFM_TEST_REQUIRE` names (`all` = every stage). Unknown names are an error. */
export function requiredStages(value = process.env.VNFM_TEST_REQUIRE ?? ''): Set<StageName> {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const out = new Set<StageName>();
  for (const n of names) {
    if (n === 'all') for (const s of STAGES) out.add(s);
    else if ((STAGES as readonly string[]).includes(n)) out.add(n as StageName);
    else throw new Error(`VNFM_TEST_REQUIRE names an unknown stage "${n}" (known: ${STAGES.join(', ')}, all)`);
  }
  return out;
}

/** Settings of the real Keystone + Heat: OS_* environment, else /etc/real-heat/admin-openrc, else its defaults. */
export interface RealHeatSettings {
  authUrl: string;
  username: string;
  password: string;
  project: string;
  userDomain: string;
  projectDomain: string;
  region: string;
}

const OPENRC = '/etc/real-heat/admin-openrc';

function openrcValues(): Record<string, string> {
  try {
    const out: Record<string, string> = {};
    for (const line of readFileSync(OPENRC, 'utf8').split('\n')) {
      const m = /^export (OS_[A-Z_]+)=(.*)$/.exec(line.trim());
      if (m) out[m[1] as string] = (m[2] as string).replace(/^'(.*)'$/, '$1').replace(/^"(.*)"$/, '$1');
    }
    return out;
  } catch {
    return {};
  }
}

/** Where the real Keystone + Heat is and how to log in (see docs/real-heat.md). */
export function realHeatSettings(): RealHeatSettings {
  const file = openrcValues();
  const v = (k: string, d: string): string => process.env[k] ?? file[k] ?? d;
  return {
    authUrl: v('OS_AUTH_URL', 'http://127.0.0.1:5000/v3'),
    username: v('OS_USERNAME', 'admin'),
    password: v('OS_PASSWORD', 'admin-secret'),
    project: v('OS_PROJECT_NAME', 'admin'),
    userDomain: v('OS_USER_DOMAIN_NAME', 'Default'),
    projectDomain: v('OS_PROJECT_DOMAIN_NAME', 'Default'),
    region: v('OS_REGION_NAME', 'RegionOne'),
  };
}

async function probePg(): Promise<string | undefined> {
  const url = process.env.VNFM_TEST_PG_URL;
  if (!url) return 'VNFM_TEST_PG_URL is not set (a PostgreSQL server on which the tests may create databases)';
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await c.connect();
    await c.query('select 1');
    return undefined;
  } catch (e) {
    return `cannot connect to the PostgreSQL server at VNFM_TEST_PG_URL (${redactUrl(url)}): ${(e as Error).message}`;
  } finally {
    await c.end().catch(() => undefined);
  }
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparsable URL>';
  }
}

async function probeRealHeat(): Promise<string | undefined> {
  const s = realHeatSettings();
  const how = 'start it with `sudo bash scripts/real-heat.sh up` (docs/real-heat.md)';
  let res: Response;
  try {
    res = await fetch(`${s.authUrl.replace(/\/$/, '')}/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { name: s.username, domain: { name: s.userDomain }, password: s.password } } },
          scope: { project: { name: s.project, domain: { name: s.projectDomain } } },
        },
      }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (e) {
    return `no Keystone answers at ${s.authUrl} (${(e as Error).message}): ${how}`;
  }
  if (res.status !== 201) return `Keystone at ${s.authUrl} refused the credentials of user ${s.username} (HTTP ${res.status}): ${how}`;
  const body = (await res.json()) as { token?: { catalog?: { type: string; endpoints: { interface: string; url: string }[] }[] } };
  const heat = body.token?.catalog?.find((c) => c.type === 'orchestration')?.endpoints.find((e) => e.interface === 'public')?.url;
  if (!heat) return `Keystone at ${s.authUrl} has no orchestration (Heat) endpoint in its catalog: ${how}`;
  try {
    const h = await fetch(`${heat}/stacks`, { headers: { 'x-auth-token': res.headers.get('x-subject-token') ?? '' }, signal: AbortSignal.timeout(15_000) });
    if (h.status !== 200) return `Heat at ${heat} answered HTTP ${h.status} to a stack list: ${how}`;
  } catch (e) {
    return `Heat at ${heat} does not answer (${(e as Error).message}): ${how}`;
  }
  return undefined;
}

function probeCommand(cmd: string, args: string[], what: string, fix: string, path = process.env.PATH ?? '/usr/bin:/bin'): string | undefined {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 120_000, env: { PATH: path, HOME: process.env.HOME ?? '/tmp' } });
  if (r.error) return `${what} is not available (${(r.error as NodeJS.ErrnoException).code ?? r.error.message}): ${fix}`;
  if (r.status !== 0) return `${what} does not work (\`${cmd} ${args.join(' ')}\` exited ${r.status}: ${(r.stderr ?? '').trim().split('\n').slice(-1)[0] ?? ''}): ${fix}`;
  return undefined;
}

const TACKER_FIX = 'install the Debian packages python3-tackerclient and python3-openstackclient';

const PROBES: Record<StageName, () => Promise<string | undefined>> = {
  pg: probePg,
  'real-heat': probeRealHeat,
  // the system's Python and `openstack`, as test/helpers/tacker-cli.ts runs them (PATH=/usr/bin:/bin)
  'tacker-cli': async () =>
    probeCommand('python3', ['-c', 'import tackerclient.osc.v1.vnflcm.vnflcm'], 'the Tacker CLI plugin (python3-tackerclient)', TACKER_FIX, '/usr/bin:/bin') ??
    probeCommand('openstack', ['--version'], 'the `openstack` command', TACKER_FIX, '/usr/bin:/bin'),
  kubectl: async () => probeCommand('kubectl', ['version', '--client'], 'kubectl', 'install kubectl (Debian package kubernetes-client)'),
  lab: probeLab,
  // the dashboard's browser tests (test/ui/) drive Debian's Chromium through playwright-core
  browser: async () => probeCommand('/usr/bin/chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--dump-dom', 'about:blank'], 'Chromium (/usr/bin/chromium)', 'install the Debian package chromium'),
};

const LAB_FIX = 'run as root on Debian 12 with the packages openssh-server etcd-server etcd-client haproxy ansible sshpass sudo nftables (`sudo bash scripts/test-all.sh` installs them)';

async function probeLab(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return `the live-VM lab needs root (network namespaces): ${LAB_FIX}`;
  const sbin = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
  return (
    probeCommand('ip', ['netns', 'list'], '`ip netns`', LAB_FIX, sbin) ??
    probeCommand('sshd', ['-V'], 'sshd (openssh-server)', LAB_FIX, sbin) ??
    probeCommand('etcd', ['--version'], 'etcd (etcd-server)', LAB_FIX, sbin) ??
    probeCommand('etcdctl', ['version'], 'etcdctl (etcd-client)', LAB_FIX, sbin) ??
    probeCommand('haproxy', ['-v'], 'haproxy', LAB_FIX, sbin) ??
    probeCommand('ansible-playbook', ['--version'], 'ansible-playbook (ansible)', LAB_FIX, sbin) ??
    probeCommand('sshpass', ['-V'], 'sshpass', LAB_FIX, sbin) ??
    probeCommand('visudo', ['-V'], 'sudo and visudo (sudo)', LAB_FIX, sbin) ??
    probeCommand('nft', ['--version'], 'nft (nftables: the floating IPs of the lab)', LAB_FIX, sbin)
  );
}

const cache = new Map<StageName, Promise<Stage>>();

function report(name: StageName, ran: boolean, reason?: string): void {
  const dir = process.env.VNFM_TEST_STAGE_DIR;
  if (!dir) return;
  try {
    appendFileSync(join(dir, `${process.pid}.jsonl`), `${JSON.stringify({ stage: name, ran, reason })}\n`);
  } catch {
    /* the runner's report folder is gone: nothing to tell */
  }
}

/**
 * Probes a stage once per process. Unavailable + required (VNFM_TEST_REQUIRE) -> throws, so the
 * test file fails with the reason; unavailable + optional -> `skip` holds the reason.
 */
export function stage(name: StageName): Promise<Stage> {
  let p = cache.get(name);
  if (!p) {
    p = (async (): Promise<Stage> => {
      const reason = await PROBES[name]();
      if (reason === undefined) {
        report(name, true);
        return { name, available: true, skip: false };
      }
      if (requiredStages().has(name)) {
        report(name, false, reason);
        throw new Error(`required test stage "${name}" cannot run: ${reason}`);
      }
      report(name, false, reason);
      return { name, available: false, skip: `stage ${name} skipped: ${reason}` };
    })();
    cache.set(name, p);
  }
  return p;
}
