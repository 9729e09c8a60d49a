/**
 * Chaos harness: proves over HTTP and process signals only that the op engine neither loses nor
 * duplicates work while VNFM processes are killed (SIGKILL) and restarted, the VIMs fail and slow
 * down, and the notification subscriber goes away for a while.
 *
 * Real processes: the simulated OpenStack, Kubernetes and Server Notifier (`src/sim/.../main.ts`),
 * N `vnfm start --no-sim` replicas on one PostgreSQL database (or one replica on its embedded
 * PGlite), a small front proxy in this process that is every replica's `publicUrl` (the Server
 * Notifier's alarm callbacks and `Location` headers reach whichever replica is alive), and the
 * notification subscriber (also in this process). See docs/reliability.md for the invariants.
 */
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';
import { type Child, freePort, freeServerPort, GiveUp, listenOnServerPort, http, type HttpAnswer, type Json, NotSent, rng, startChild, startThrowawayPg, Unknown, until } from './procs.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const SIM_SECRET = 'chaos-sim-secret';
const INSTANCE_LABEL = 'vnfm.io/vnf-instance-id';
const FINAL = ['COMPLETED', 'FAILED', 'ROLLED_BACK'];
const ENDED = [...FINAL, 'FAILED_TEMP'];

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  /** Length of the chaos phase. @default 10 min */
  durationMs?: number;
  /**
   * The chaos phase goes on past `durationMs` until the drivers had this many LCM requests
   * accepted (a loaded machine restarts killed replicas slowly), for at most 3 more durations. @default 0
   */
  minAccepted?: number;
  /** VNFM processes (PostgreSQL; PGlite always runs one). @default 3 */
  replicas?: number;
  /** @default 'pg' */
  db?: 'pg' | 'pglite';
  /** @default Date.now() */
  seed?: number;
  /** PostgreSQL server to create the run's database on; else VNFM_TEST_PG_URL; else a throwaway cluster. */
  pgUrl?: string;
  /** VM VNFs (OpenStack). @default 3 */
  vmInstances?: number;
  /** CNFs (Kubernetes). @default 2 */
  cnfInstances?: number;
  /** Kill period bounds (ms). @default [10000, 40000] */
  killEveryMs?: [number, number];
  /** Down time after a kill (ms). @default [1000, 5000] */
  downMs?: [number, number];
  /** Subscriber outage length. @default 60000 (capped at a third of the run) */
  subscriberOutageMs?: number;
  /** Bound of the quiescence wait. @default 180000 */
  quiesceMs?: number;
  /** Pause between two operations of one instance's driver (ms). @default [1000, 4000] */
  thinkMs?: [number, number];
  /**
   * CPU load during the chaos phase: this many busy-loop processes (and the highest 1-minute load
   * average seen is reported, with the highest lease epoch of an op). @default 0
   */
  cpuHogs?: number;
  /** Lease of the replicas' ops (ms). @default 5000 */
  leaseMs?: number;
  /** Keep the work directory (logs) at the end. @default true */
  keepLogs?: boolean;
  /** Progress lines. @default console.error */
  log?: (line: string) => void;
}

/** One invariant and what broke it. */
export interface InvariantResult {
  name: string;
  checked: number;
  violations: string[];
  notes: string[];
}

/** What {@link runChaos} returns. */
export interface ChaosReport {
  seed: number;
  db: 'pg' | 'pglite';
  replicas: number;
  durationMs: number;
  quiesceMs: number;
  kills: number;
  restarts: number;
  /** Starts of a replica that failed (the process exited during start); it is started again. */
  failedStarts: number;
  vimFaults: { openstackBreaks: number; openstackLatency: number; kubernetesBreaks: number; kubernetesLatency: number };
  subscriberOutages: number;
  requests: { accepted: number; refused409: number; unknown: number; retries: number };
  ops: Record<string, Record<string, number>>;
  opsTotal: number;
  heals: number;
  faultInjections: number;
  faultNotifications: number;
  batches: Record<string, number>;
  notificationsDelivered: number;
  duplicateDeliveries: number;
  failedTemp: { id: string; operation: string; error: string }[];
  /** Automatic heals found FAILED_TEMP after the chaos and retried, as an operator would (nobody else retries them). */
  autoHealsRetried: number;
  invariants: InvariantResult[];
  violations: number;
  workDir: string;
  machine: { cpus: number; loadavg: number[] };
  /** Busy-loop processes during the chaos, and the highest 1-minute load average seen meanwhile. */
  load: { cpuHogs: number; maxLoadavg1: number };
  /** Highest `lease_epoch` of an op occ (claims of one op; PostgreSQL only, else 0), and ops claimed more than 3 times. */
  leaseEpochs: { max: number; over3: number };
}

interface Replica {
  index: number;
  port: number;
  url: string;
  child?: Child;
  generation: number;
  /** Being restarted: not picked by the next kill (two restarts of one replica would run two processes on one embedded database). */
  restarting?: boolean;
}

interface Instance {
  id: string;
  kind: 'vm' | 'cnf';
  namespace?: string;
}

/** An operation this harness requested (202), with what it expected. */
interface Requested {
  opId: string;
  instance: Instance;
  action: string;
  api: 'v1' | 'v2';
  targets: number | undefined;
  vnfcsBefore: number;
  vnfcsAfter?: number;
  retried: number;
  scaleType?: string;
}

/** Emergency stops of what runs (children, throwaway PostgreSQL), for a harness interrupted by a signal. */
const emergency = new Set<() => void>();

/** Kills every child process of running chaos runs and stops their throwaway PostgreSQL (SIGINT/SIGTERM handler of the CLI). */
export function abortAll(): void {
  for (const f of emergency) {
    try {
      f();
    } catch {
      /* best effort */
    }
  }
}

/** Runs the chaos scenario and checks the invariants. Never throws for a violation: see `report.violations`. */
export async function runChaos(opts: ChaosOptions = {}): Promise<ChaosReport> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const db = opts.db ?? 'pg';
  const seed = opts.seed ?? Date.now() % 2 ** 31;
  const R = rng(seed);
  const durationMs = opts.durationMs ?? 600_000;
  const nReplicas = db === 'pglite' ? 1 : Math.max(1, opts.replicas ?? 3);
  const killEvery = opts.killEveryMs ?? [10_000, 40_000];
  const downMs = opts.downMs ?? [1000, 5000];
  const thinkMs = opts.thinkMs ?? [1000, 4000];
  const quiesceBound = opts.quiesceMs ?? 180_000;
  const work = mkdtempSync(join(tmpdir(), 'vnfm-chaos-'));
  const logDir = join(work, 'logs');
  mkdirSync(logDir);
  const t0 = Date.now();
  const say = (m: string): void => log(`[chaos +${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);
  say(`seed ${seed}, ${db}, ${nReplicas} replica(s), ${Math.round(durationMs / 1000)} s of chaos; logs in ${logDir}`);

  const children: Child[] = [];
  const stopChildren = (): void => {
    for (const c of children) if (c.alive()) c.proc.kill('SIGKILL');
  };
  emergency.add(stopChildren);
  const cleanups: (() => Promise<void> | void)[] = [];
  const report: ChaosReport = {
    seed,
    db,
    replicas: nReplicas,
    durationMs,
    quiesceMs: 0,
    kills: 0,
    restarts: 0,
    failedStarts: 0,
    vimFaults: { openstackBreaks: 0, openstackLatency: 0, kubernetesBreaks: 0, kubernetesLatency: 0 },
    subscriberOutages: 0,
    requests: { accepted: 0, refused409: 0, unknown: 0, retries: 0 },
    ops: {},
    opsTotal: 0,
    heals: 0,
    faultInjections: 0,
    faultNotifications: 0,
    batches: {},
    notificationsDelivered: 0,
    duplicateDeliveries: 0,
    failedTemp: [],
    autoHealsRetried: 0,
    invariants: [],
    violations: 0,
    workDir: work,
    machine: { cpus: cpus().length, loadavg: loadavg().map((x) => Math.round(x * 100) / 100) },
    load: { cpuHogs: opts.cpuHogs ?? 0, maxLoadavg1: 0 },
    leaseEpochs: { max: 0, over3: 0 },
  };
  /** Times of disruptions (kills, subscriber outage) that may explain an at-least-once redelivery. */
  const disruptions: { from: number; to: number; what: string }[] = [];

  try {
    // ---- database
    let databaseUrl: string | undefined;
    if (db === 'pg') {
      let server = opts.pgUrl ?? process.env.VNFM_TEST_PG_URL;
      if (!server) {
        const pgc = await startThrowawayPg();
        const stopPg = (): void => pgc.stop();
        emergency.add(stopPg);
        cleanups.push(() => {
          emergency.delete(stopPg);
          pgc.stop();
        });
        server = pgc.url;
        say(`throwaway PostgreSQL at ${server}`);
      }
      const name = `vnfm_chaos_${randomBytes(6).toString('hex')}`;
      const admin = async (q: string): Promise<void> => {
        const c = new pg.Client({ connectionString: server });
        await c.connect();
        try {
          await c.query(q);
        } finally {
          await c.end();
        }
      };
      await admin(`create database ${name}`);
      cleanups.push(() => admin(`drop database if exists ${name} with (force)`).catch(() => undefined));
      const u = new URL(server);
      u.pathname = `/${name}`;
      databaseUrl = u.toString();
    }

    // ---- simulators
    const simEnv = { OS_SIM_ADMIN_SECRET: SIM_SECRET, SN_SIM_ADMIN_SECRET: SIM_SECRET };
    // The proxy's port is bound now (the simulators are told its URL before it serves).
    let proxyHandler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
      res.writeHead(503).end();
    };
    const proxy = createServer((req, res) => proxyHandler(req, res));
    const proxyPort = await listenOnServerPort(proxy);
    cleanups.push(() => new Promise<void>((r) => proxy.close(() => r())));
    const proxyUrl = `http://127.0.0.1:${proxyPort}`;
    const osPort = await freePort();
    const osSim = startChild('sim-openstack', join(ROOT, 'src/sim/openstack/main.ts'), ['--port', String(osPort), '--heat-delay-ms', '50', '--vnfm-url', `${proxyUrl}/`], { cwd: ROOT, logDir, env: simEnv });
    children.push(osSim);
    const osUrl = `http://127.0.0.1:${osPort}`;
    const authUrl = await until('the OpenStack sim', () => osSim.lines.map((l) => /auth URL (\S+)/.exec(l)?.[1]).find(Boolean), 120_000);
    const k8sPort = await freePort();
    const kubeconfig = join(work, 'sim.kubeconfig');
    const k8sToken = randomBytes(12).toString('hex');
    const k8sSim = startChild('sim-kubernetes', join(ROOT, 'src/sim/kubernetes/main.ts'), ['--port', String(k8sPort), '--token', k8sToken, '--kubelet-delay-ms', '100', '--kubeconfig', kubeconfig], { cwd: ROOT, logDir, env: simEnv });
    children.push(k8sSim);
    await until('the Kubernetes sim', () => k8sSim.lines.some((l) => l.includes('kubeconfig written')), 120_000);
    const kcfg = parseYaml(readFileSync(kubeconfig, 'utf8')) as Json;
    const k8sUrl = kcfg.clusters[0].cluster.server as string;
    const k8sCa = Buffer.from(kcfg.clusters[0].cluster['certificate-authority-data'] as string, 'base64').toString('utf8');
    const k8sHttp = `http://127.0.0.1:${k8sPort}`;
    const snPort = await freePort();
    const snSim = startChild('sim-server-notifier', join(ROOT, 'src/sim/server-notifier/main.ts'), ['--port', String(snPort), '--openstack-url', osUrl], { cwd: ROOT, logDir, env: simEnv });
    children.push(snSim);
    const snUrl = await until('the Server Notifier sim', () => snSim.lines.map((l) => /Server Notifier sim: (\S+)/.exec(l)?.[1]).find(Boolean), 120_000);
    say(`sims up: OpenStack ${osUrl}, Kubernetes ${k8sUrl}, Server Notifier ${snUrl}`);

    const osAdmin = (method: string, path: string, body?: unknown): Promise<HttpAnswer> =>
      http(`${osUrl}${path}`, method, { headers: { 'x-sim-admin-secret': SIM_SECRET, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const k8s = (method: string, path: string, body?: unknown): Promise<HttpAnswer> =>
      http(`${k8sHttp}${path}`, method, { headers: { authorization: `Bearer ${k8sToken}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

    // ---- VNFM replicas
    const secret = randomBytes(32).toString('hex');
    const leaseMs = opts.leaseMs ?? 5000;
    const cfgFile = join(work, 'vnfm.json');
    writeFileSync(
      cfgFile,
      JSON.stringify({
        pageSize: 0,
        runner: { leaseMs, pollMs: 250, shutdownGraceMs: 1000, stepRetries: { maxAttempts: 8, baseDelayMs: 250, maxDelayMs: 3000 } },
        notifications: { backoffMs: 250, maxBackoffMs: 3000, timeoutMs: 5000 },
        faultNotification: { windowMs: 1500 },
        autoheal: { maxHealsPerVnfc: 1_000_000, sweepMs: 500, leaseMs, busyRetryMs: 1000 },
        sync: { intervalMs: 0 },
        vim: { stackTimeoutMs: 300_000, kubernetesWaitMs: 300_000 },
        // the harness's subscriber and simulated Server Notifier listen on loopback
        outbound: { allow: ['127.0.0.0/8'], vimAllow: ['127.0.0.0/8'] },
      }),
    );
    const replicas: Replica[] = [];
    for (let i = 0; i < nReplicas; i++) replicas.push({ index: i, port: 0, url: 'http://127.0.0.1:9', generation: 0 });
    const startReplica = async (r: Replica): Promise<void> => {
      r.generation++;
      // A port of its own per generation (the proxy is every replica's public URL, so nothing
      // outside the harness knows a replica's port).
      r.port = await freeServerPort();
      r.url = `http://127.0.0.1:${r.port}`;
      const where = databaseUrl ? ['--database-url', databaseUrl] : ['--data-dir', join(work, 'pglite')];
      const child = startChild(`vnfm-${r.index}`, join(ROOT, 'src/cli/main.ts'), ['start', '--no-sim', '--config', cfgFile, ...where, '--port', String(r.port), '--public-url', proxyUrl, '--log-level', 'info'], {
        cwd: ROOT,
        logDir,
        env: { VNFM_WORKER_ID: `r${r.index}g${r.generation}`, VNFM_SECRET_KEY: secret, VNFM_TEST_PG_URL: '' },
      });
      r.child = child;
      children.push(child);
      await until(`replica ${r.index} (generation ${r.generation}) to start`, () => {
        if (!child.alive()) throw new GiveUp(`replica ${r.index} exited during start: ${child.lines.slice(-5).join(' | ')}`);
        return child.lines.some((l) => l.includes('"msg":"VNFM started"'));
      }, 180_000);
    };
    // First one alone (it migrates the database), then the others.
    for (const r of replicas) await startReplica(r);
    say(`${nReplicas} VNFM replica(s) up`);

    // ---- client: round robin over replicas, retry on connection refused
    let rr = 0;
    const send = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<HttpAnswer> => {
      const headers: Record<string, string> = { ...extra };
      if (path.startsWith('/vnflcm/v2')) headers.version = '2.0.0';
      let payload: string | Buffer | undefined;
      if (Buffer.isBuffer(body)) {
        headers['content-type'] = 'application/zip';
        payload = body;
      } else if (body !== undefined) {
        headers['content-type'] = 'application/json';
        payload = JSON.stringify(body);
      }
      const end = Date.now() + 60_000;
      for (;;) {
        const r = replicas[rr++ % replicas.length] as Replica;
        try {
          const a = await http(`${r.url}${path}`, method, { headers, ...(payload === undefined ? {} : { body: payload }) });
          if (a.status === 503 && path !== '/healthz') throw new NotSent('503 while starting or stopping');
          return a;
        } catch (e) {
          const retryable = e instanceof NotSent || (method === 'GET' && e instanceof Unknown);
          if (!retryable || Date.now() > end) throw e;
          report.requests.retries++;
          await sleep(100);
        }
      }
    };
    const get = async (path: string): Promise<Json> => {
      const a = await send('GET', path);
      if (a.status !== 200) throw new Error(`GET ${path}: ${a.status} ${a.text.slice(0, 300)}`);
      return a.body;
    };

    // ---- front proxy (publicUrl of every replica)
    proxyHandler = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
        const body = chunks.length ? Buffer.concat(chunks) : undefined;
        void (async () => {
          const end = Date.now() + 20_000;
          for (;;) {
            const r = replicas[rr++ % replicas.length] as Replica;
            try {
              const a = await http(`${r.url}${req.url}`, req.method ?? 'GET', { headers, ...(body ? { body } : {}) });
              const out: Record<string, string> = {};
              for (const [k, v] of Object.entries(a.headers)) if (typeof v === 'string' && !['connection', 'content-length', 'transfer-encoding', 'keep-alive'].includes(k)) out[k] = v;
              res.writeHead(a.status, out).end(a.text);
              return;
            } catch (e) {
              if (e instanceof NotSent && Date.now() < end) {
                await sleep(100);
                continue;
              }
              res.writeHead(502, { 'content-type': 'text/plain' }).end(String((e as Error).message));
              return;
            }
          }
        })();
      });
    };

    // ---- subscriber
    interface Received {
      id: string;
      sub: string;
      api: 'v1' | 'v2';
      body: Json;
      at: number;
    }
    const received: Received[] = [];
    let subPort = 0;
    let subServer: Server | undefined;
    const onNotify = (req: IncomingMessage, res: ServerResponse): void => {
      if (req.method === 'GET') {
        res.writeHead(204).end();
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
          received.push({ id: String(body.id), sub: String(body.subscriptionId), api: req.url?.startsWith('/v1') ? 'v1' : 'v2', body, at: Date.now() });
          res.writeHead(204).end();
        } catch {
          res.writeHead(400).end();
        }
      });
    };
    // The first opening binds a free port; a reopening (after an outage) the same one again.
    const openSubscriber = async (): Promise<void> => {
      const server = createServer(onNotify);
      if (subPort === 0) subPort = await listenOnServerPort(server);
      else
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(subPort, '127.0.0.1', () => resolve());
        });
      subServer = server;
    };
    const closeSubscriber = (): Promise<void> =>
      new Promise((r) => {
        if (!subServer) return r();
        subServer.close(() => r());
        subServer.closeAllConnections();
        subServer = undefined;
      });
    await openSubscriber();
    cleanups.push(closeSubscriber);

    // ---- set-up: VIMs, packages, subscriptions, instances
    const c201 = (a: HttpAnswer, what: string): Json => {
      if (a.status !== 201 && a.status !== 202) throw new Error(`${what}: ${a.status} ${a.text.slice(0, 500)}`);
      return a.body;
    };
    const osVim = c201(
      await send('POST', '/v1.0/vims', {
        vim: { name: 'chaos-os', type: 'openstack', is_default: true, auth_url: authUrl, auth_cred: { username: 'admin', password: 'admin-secret', user_domain_name: 'Default' }, vim_project: { name: 'admin', project_domain_name: 'Default' } },
      }),
      'register the OpenStack VIM',
    );
    // the VIM's token only goes to a Server Notifier an admin registered for that VIM
    c201(await send('POST', '/vnfm/v1/server-notifiers', { name: 'chaos-notifier', uri: snUrl, vimId: osVim.vim.id }), 'register the Server Notifier');
    const k8sVim = c201(
      await send('POST', '/v1.0/vims', { vim: { name: 'chaos-k8s', type: 'kubernetes', is_default: true, auth_url: k8sUrl, auth_cred: { bearer_token: k8sToken, ssl_ca_cert: k8sCa }, vim_project: { name: 'default' } } }),
      'register the Kubernetes VIM',
    );
    const k8sVimId = k8sVim.vim.id as string;
    const subs: Record<'v1' | 'v2', string> = { v1: '', v2: '' };
    for (const v of ['v1', 'v2'] as const) {
      const a = await send('POST', `/vnflcm/${v}/subscriptions`, { callbackUri: `http://127.0.0.1:${subPort}/${v}` });
      subs[v] = c201(a, `subscribe ${v}`).id as string;
    }
    const onboard = async (zip: Buffer): Promise<string> => {
      const pkg = c201(await send('POST', '/vnfpkgm/v1/vnf_packages', {}), 'create a package');
      c201(await send('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.id}/package_content`, zip), 'upload a package');
      return until('a package to be onboarded', async () => {
        const g = await get(`/vnfpkgm/v1/vnf_packages/${pkg.id}`);
        if (g.onboardingState === 'ERROR') throw new Error(`onboarding failed: ${JSON.stringify(g.onboardingFailureDetails ?? g)}`);
        return g.onboardingState === 'ONBOARDED' ? (g.vnfdId as string) : undefined;
      }, 180_000, 250);
    };
    const vmVnfd = await onboard(vmPackageZip());
    const cnfVnfd = await onboard(buildCsarFromDir(join(ROOT, 'samples/cnf-all-kinds')));
    say('VIMs registered, packages onboarded, v1 + v2 subscriptions');

    const waitEnd = async (opId: string, maxMs = 600_000): Promise<Json> =>
      until(`op ${opId} to end`, async () => {
        const o = await get(`/vnflcm/v2/vnf_lcm_op_occs/${opId}`);
        return ENDED.includes(o.operationState) ? o : undefined;
      }, maxMs, 250);
    const opIdOf = (a: HttpAnswer): string => String(a.headers.location ?? '').split('/').pop() as string;
    const instances: Instance[] = [];
    const createInstance = async (kind: 'vm' | 'cnf', n: number): Promise<Instance> => {
      const inst = c201(await send('POST', '/vnflcm/v2/vnf_instances', { vnfdId: kind === 'vm' ? vmVnfd : cnfVnfd, vnfInstanceName: `chaos-${kind}-${n}` }), 'create an instance');
      const me: Instance = { id: inst.id as string, kind };
      let body: Json;
      if (kind === 'vm') {
        body = { flavourId: 'simple', vnfConfigurableProperties: { isAutohealEnabled: true }, additionalParams: { ServerNotifierUri: snUrl, ServerNotifierFaultID: ['1234'] } };
      } else {
        me.namespace = `chaos-${n}`;
        const ns = await k8s('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: me.namespace } });
        if (ns.status !== 201) throw new Error(`namespace: ${ns.status} ${ns.text}`);
        body = {
          flavourId: 'simple',
          vimConnectionInfo: { vim1: { vimId: k8sVimId, vimType: 'kubernetes' } },
          additionalParams: { 'lcm-kubernetes-def-files': ['Files/kubernetes/pod.yaml', 'Files/kubernetes/replicaset.yaml', 'Files/kubernetes/deployment.yaml', 'Files/kubernetes/daemonset.yaml', 'Files/kubernetes/statefulset.yaml'], namespace: me.namespace },
        };
      }
      const a = await send('POST', `/vnflcm/v2/vnf_instances/${me.id}/instantiate`, body);
      c201(a, 'instantiate');
      const o = await waitEnd(opIdOf(a));
      if (o.operationState !== 'COMPLETED') throw new Error(`instantiate of ${kind} ${me.id} ended ${o.operationState}: ${JSON.stringify(o.error)}`);
      return me;
    };
    const nVm = opts.vmInstances ?? 3;
    const nCnf = opts.cnfInstances ?? 2;
    const made = await Promise.all([...Array.from({ length: nVm }, (_, i) => createInstance('vm', i)), ...Array.from({ length: nCnf }, (_, i) => createInstance('cnf', i))]);
    instances.push(...made);
    say(`${nVm} VM VNF(s) and ${nCnf} CNF(s) instantiated`);

    // ---- journals (polled and accumulated: the Heat journal keeps its last 1000 entries only)
    const heatJournal = new Map<number, Json>();
    const podJournal = new Map<number, Json>();
    let k8sSince = 0;
    const pollJournals = async (): Promise<void> => {
      try {
        const s = await osAdmin('GET', '/_sim/state');
        for (const e of (s.body.heat?.journal ?? []) as Json[]) heatJournal.set(e.seq as number, e);
      } catch {
        /* next round */
      }
      try {
        const j = await k8s('GET', `/_sim/journal?since=${k8sSince}`);
        for (const e of (j.body.deletions ?? []) as Json[]) {
          podJournal.set(e.seq as number, e);
          k8sSince = Math.max(k8sSince, e.seq as number);
        }
      } catch {
        /* next round */
      }
    };
    await pollJournals();

    // ---- chaos phase
    const requested: Requested[] = [];
    let running = true;
    const chaosEnd = Date.now() + durationMs;
    const hardEnd = chaosEnd + 3 * durationMs;
    const minAccepted = opts.minAccepted ?? 0;
    /** Whether the chaos phase goes on: its duration, or longer until `minAccepted` requests were accepted. */
    const chaosOn = (): boolean => Date.now() < chaosEnd || (requested.length < minAccepted && Date.now() < hardEnd);
    const tasks: Promise<void>[] = [];

    const vnfcCount = (inst: Json): number => (inst.instantiatedVnfInfo?.vnfcInfo ?? []).length;
    const driver = async (me: Instance): Promise<void> => {
      while (running && chaosOn()) {
        await sleep(R.int(thinkMs[0], thinkMs[1]));
        let inst: Json;
        try {
          inst = await get(`/vnflcm/v2/vnf_instances/${me.id}`);
        } catch {
          continue;
        }
        const info = inst.instantiatedVnfInfo;
        if (!info) continue;
        const vnfcs = (info.vnfcInfo ?? []) as Json[];
        const level = ((info.scaleStatus ?? []) as Json[]).find((s) => s.aspectId === (me.kind === 'vm' ? 'VDU1_scale' : 'web_deploy_aspect'))?.scaleLevel ?? 0;
        const action =
          me.kind === 'vm'
            ? R.weighted<string>([['heal-v2-vnfc', 28], ['heal-v1-vnfc', 18], ['heal-v2-every', 8], ['heal-v1-entire', 4], ['heal-v2-entire', 4], ['scale', 16], ['fault', 22]])
            : R.weighted<string>([['heal-v2-vnfc', 35], ['heal-v1-vnfc', 25], ['heal-v2-every', 8], ['heal-v1-entire', 5], ['scale', 27]]);
        if (action === 'fault') {
          const res = ((info.vnfcResourceInfo ?? []) as Json[]).map((r) => r.computeResource?.resourceId as string).filter(Boolean);
          const srv = R.pick(res);
          if (!srv) continue;
          try {
            const a = await osAdmin('POST', `/_sim/servers/${srv}/fail`, { fault_type: '10', fault_id: '1234' });
            if (a.status === 200) report.faultInjections++;
          } catch {
            /* the sim is always up; ignore */
          }
          await sleep(R.int(500, 2500));
          continue;
        }
        let path: string;
        let body: Json;
        let api: 'v1' | 'v2' = 'v2';
        let targets: number | undefined;
        if (action === 'scale') {
          const aspectId = me.kind === 'vm' ? 'VDU1_scale' : 'web_deploy_aspect';
          const out = level < 2 && (level === 0 || R.next() < 0.5);
          path = `/vnflcm/v2/vnf_instances/${me.id}/scale`;
          body = { type: out ? 'SCALE_OUT' : 'SCALE_IN', aspectId, numberOfSteps: 1 };
        } else if (action === 'heal-v2-vnfc' || action === 'heal-v1-vnfc') {
          const n = Math.min(vnfcs.length, R.int(1, 2));
          const picked = new Set<Json>();
          while (picked.size < n) picked.add(R.pick(vnfcs));
          targets = picked.size;
          if (action === 'heal-v1-vnfc') {
            api = 'v1';
            path = `/vnflcm/v1/vnf_instances/${me.id}/heal`;
            body = { vnfcInstanceId: [...picked].map((v) => v.vnfcResourceInfoId as string) };
          } else {
            path = `/vnflcm/v2/vnf_instances/${me.id}/heal`;
            body = { vnfcInstanceId: [...picked].map((v) => v.id as string) };
          }
        } else if (action === 'heal-v2-every') {
          path = `/vnflcm/v2/vnf_instances/${me.id}/heal`;
          body = {};
          targets = vnfcs.length;
        } else if (action === 'heal-v1-entire') {
          api = 'v1';
          path = `/vnflcm/v1/vnf_instances/${me.id}/heal`;
          body = {};
        } else {
          path = `/vnflcm/v2/vnf_instances/${me.id}/heal`;
          body = { additionalParams: { all: true } };
        }
        let a: HttpAnswer;
        try {
          a = await send('POST', path, body);
        } catch (e) {
          if (e instanceof Unknown) report.requests.unknown++;
          continue;
        }
        if (a.status === 409) {
          report.requests.refused409++;
          continue;
        }
        if (a.status !== 202) {
          say(`unexpected answer to ${action} on ${me.id}: ${a.status} ${a.text.slice(0, 300)}`);
          continue;
        }
        report.requests.accepted++;
        const req: Requested = { opId: opIdOf(a), instance: me, action, api, targets, vnfcsBefore: vnfcs.length, retried: 0, ...(action === 'scale' ? { scaleType: String(body.type) } : {}) };
        requested.push(req);
        // Drive the op to its end; FAILED_TEMP is retried (a few times), then failed.
        for (;;) {
          let o: Json;
          try {
            o = await waitEnd(req.opId);
          } catch (e) {
            say(`op ${req.opId}: ${(e as Error).message}`);
            break;
          }
          if (o.operationState !== 'FAILED_TEMP') {
            try {
              req.vnfcsAfter = vnfcCount(await get(`/vnflcm/v2/vnf_instances/${me.id}`));
            } catch {
              /* measured at the end */
            }
            break;
          }
          const verb = req.retried < 3 ? 'retry' : 'fail';
          if (verb === 'retry') req.retried++;
          try {
            const t = await send('POST', `/vnflcm/v2/vnf_lcm_op_occs/${req.opId}/${verb}`);
            if (t.status >= 400 && t.status !== 409) say(`${verb} of ${req.opId}: ${t.status} ${t.text.slice(0, 200)}`);
          } catch {
            /* asked again next round */
          }
        }
      }
    };

    // Kills are scheduled every killEvery (from one kill to the next, not counting the down time):
    // the restart of a killed replica runs on its own while the next kill may already hit another.
    const restarts: Promise<void>[] = [];
    const killer = async (): Promise<void> => {
      while (running && chaosOn()) {
        await sleep(R.int(killEvery[0], killEvery[1]));
        if (!running || !chaosOn()) break;
        const up = replicas.filter((x) => x.child?.alive() && !x.restarting);
        if (up.length === 0) continue;
        const r = R.pick(up);
        const child = r.child as Child;
        const from = Date.now();
        child.proc.kill('SIGKILL');
        await child.exited;
        report.kills++;
        say(`killed replica ${r.index} (generation ${r.generation})`);
        const down = R.int(downMs[0], downMs[1]);
        r.restarting = true;
        restarts.push(
          (async () => {
            await sleep(down);
            for (let attempt = 1; attempt <= 5; attempt++) {
              try {
                await startReplica(r);
                report.restarts++;
                break;
              } catch (e) {
                report.failedStarts++;
                say(`start ${attempt} of replica ${r.index} failed: ${(e as Error).message.slice(0, 300)}`);
                // A start that timed out may still be running: end it before the next attempt.
                const c = r.child;
                if (c?.alive()) {
                  c.proc.kill('SIGKILL');
                  await c.exited;
                }
                await sleep(5000);
              }
            }
            r.restarting = false;
            disruptions.push({ from, to: Date.now(), what: `kill of replica ${r.index}` });
          })(),
        );
      }
      await Promise.all(restarts);
    };

    const vimFaults = async (): Promise<void> => {
      while (running && chaosOn()) {
        await sleep(R.int(8000, 25_000));
        if (!running || !chaosOn()) break;
        const which = R.weighted<string>([['os-break', 3], ['os-latency', 2], ['k8s-break', 3], ['k8s-latency', 2]]);
        try {
          if (which === 'os-break') {
            await osAdmin('POST', '/_sim/api/break', { count: R.int(2, 6), status: R.pick([503, 500, 429]), retryAfter: 1, services: ['orchestration', 'compute'] });
            report.vimFaults.openstackBreaks++;
          } else if (which === 'os-latency') {
            await osAdmin('POST', '/_sim/api/latency', { ms: R.int(100, 600) });
            report.vimFaults.openstackLatency++;
            await sleep(R.int(3000, 10_000));
            await osAdmin('POST', '/_sim/api/latency', { ms: 0 });
          } else if (which === 'k8s-break') {
            await k8s('POST', '/_sim/api/break', { requests: R.int(2, 6), status: 503 });
            report.vimFaults.kubernetesBreaks++;
          } else {
            await k8s('POST', '/_sim/api/latency', { ms: R.int(100, 600) });
            report.vimFaults.kubernetesLatency++;
            await sleep(R.int(3000, 10_000));
            await k8s('POST', '/_sim/api/latency', { ms: 0 });
          }
        } catch (e) {
          say(`VIM fault injection failed: ${(e as Error).message}`);
        }
      }
    };

    const subscriberOutage = async (): Promise<void> => {
      const len = Math.min(opts.subscriberOutageMs ?? 60_000, Math.floor(durationMs / 3));
      await sleep(Math.floor(durationMs / 3));
      if (!running) return;
      const from = Date.now();
      await closeSubscriber();
      report.subscriberOutages++;
      say(`subscriber down for ${Math.round(len / 1000)} s`);
      await sleep(len);
      await openSubscriber();
      disruptions.push({ from, to: Date.now(), what: 'subscriber outage' });
      say('subscriber back');
    };

    const journalPoller = async (): Promise<void> => {
      while (running) {
        await pollJournals();
        await sleep(2000);
      }
    };

    const progress = async (): Promise<void> => {
      while (running && chaosOn()) {
        await sleep(30_000);
        say(`${requested.length} ops accepted, ${report.kills} kills, ${report.faultInjections} faults, ${received.length} notifications received`);
      }
    };

    const poller = journalPoller();
    // CPU load: busy loops next to the replicas for the chaos phase, the load average sampled
    const hogs = Array.from({ length: opts.cpuHogs ?? 0 }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
    const loadSampler = setInterval(() => (report.load.maxLoadavg1 = Math.max(report.load.maxLoadavg1, Math.round((loadavg()[0] ?? 0) * 100) / 100)), 2000);
    tasks.push(...instances.map(driver), killer(), vimFaults(), subscriberOutage(), progress());
    try {
      await Promise.all(tasks);
    } finally {
      clearInterval(loadSampler);
      for (const h of hogs) h.kill('SIGKILL');
    }
    say(`chaos over: ${requested.length} ops accepted by this harness, ${report.kills} kills`);

    // ---- quiescence
    const tq = Date.now();
    await osAdmin('POST', '/_sim/api/break', { count: 0 }).catch(() => undefined);
    await osAdmin('POST', '/_sim/api/latency', { ms: 0 }).catch(() => undefined);
    await k8s('DELETE', '/_sim/faults').catch(() => undefined);
    if (!subServer) await openSubscriber();
    for (const r of replicas) if (!r.child?.alive()) await startReplica(r);
    // The workers retry their own requests' FAILED_TEMP ops; an automatic heal left FAILED_TEMP (a
    // kill inside a step that is not safe to repeat) is retried here, up to 3 times, as an operator would.
    const autoRetries = new Map<string, number>();
    const quiet = async (): Promise<string | undefined> => {
      const ops = (await get('/vnflcm/v2/vnf_lcm_op_occs')) as unknown as Json[];
      const busy = ops.filter((o) => !ENDED.includes(o.operationState));
      if (busy.length) return `${busy.length} op(s) not ended`;
      const stuck = ops.filter((o) => o.operationState === 'FAILED_TEMP' && o.isAutomaticInvocation && (autoRetries.get(o.id) ?? 0) < 3);
      for (const o of stuck) {
        autoRetries.set(o.id, (autoRetries.get(o.id) ?? 0) + 1);
        const t = await send('POST', `/vnflcm/v2/vnf_lcm_op_occs/${o.id}/retry`).catch((e: Error) => ({ status: 0, text: e.message }));
        say(`automatic heal ${o.id} FAILED_TEMP: retry answered ${t.status}`);
      }
      report.autoHealsRetried = autoRetries.size;
      if (stuck.length) return `${stuck.length} automatic heal(s) FAILED_TEMP, retried`;
      const batches = (await get('/vnfm/v1/heal_batches')) as unknown as Json[];
      const open = batches.filter((b) => ['open', 'firing', 'waiting', 'healing'].includes(b.status));
      if (open.length) return `${open.length} batch(es) pending`;
      const pending = (await get('/vnfm/v1/notifications?status=pending&limit=10000')) as unknown as Json[];
      if (pending.length) return `${pending.length} notification(s) pending`;
      return undefined;
    };
    let why: string | undefined = 'not checked';
    const qEnd = Date.now() + quiesceBound;
    while (Date.now() < qEnd) {
      why = await quiet().catch((e: Error) => e.message);
      if (!why) {
        // Still quiet after a sweep or two (a fault notification may yet make a batch)?
        await sleep(3000);
        why = await quiet().catch((e: Error) => e.message);
        if (!why) break;
      }
      await sleep(1000);
    }
    running = false;
    await poller;
    await pollJournals();
    report.quiesceMs = Date.now() - tq;
    say(why ? `NOT quiescent after ${Math.round(report.quiesceMs / 1000)} s: ${why}` : `quiescent after ${Math.round(report.quiesceMs / 1000)} s`);

    // ---- invariants
    const ops = (await get('/vnflcm/v2/vnf_lcm_op_occs?all_fields')) as unknown as Json[];
    const batches = (await get('/vnfm/v1/heal_batches')) as unknown as Json[];
    const faults = (await get('/vnfm/v1/fault_notifications')) as unknown as Json[];
    const instIds = new Set(instances.map((i) => i.id));
    const inv = (name: string): InvariantResult => {
      const r: InvariantResult = { name, checked: 0, violations: [], notes: [] };
      report.invariants.push(r);
      return r;
    };
    if (why) inv('quiescence').violations.push(`not quiescent within ${quiesceBound} ms: ${why}`);

    // 1. every op final
    const i1 = inv('every op occ final');
    for (const o of ops) {
      i1.checked++;
      report.ops[o.operationState] ??= {};
      const key = `${o.operation}${o.isAutomaticInvocation ? ' (auto)' : ''}`;
      (report.ops[o.operationState] as Record<string, number>)[key] = ((report.ops[o.operationState] as Record<string, number>)[key] ?? 0) + 1;
      if (!FINAL.includes(o.operationState) && o.operationState !== 'FAILED_TEMP') i1.violations.push(`op ${o.id} (${o.operation}) is ${o.operationState}`);
      if (o.operationState === 'FAILED_TEMP') {
        const err = JSON.stringify(o.error ?? null).slice(0, 300);
        report.failedTemp.push({ id: o.id, operation: o.operation, error: err });
        i1.notes.push(`FAILED_TEMP ${o.id} (${o.operation}): ${err}`);
      }
      if (o.operationState === 'FAILED') i1.notes.push(`FAILED ${o.id} (${o.operation}${o.isAutomaticInvocation ? ', auto' : ''}): ${JSON.stringify(o.error ?? null).slice(0, 300)}`);
    }
    report.opsTotal = ops.length;
    report.heals = ops.filter((o) => o.operation === 'HEAL').length;
    for (const r of requested) if (!ops.some((o) => o.id === r.opId)) i1.violations.push(`op ${r.opId} (${r.action}) was accepted (202) but is not listed`);

    // 2. each heal executed exactly once at the VIM
    const i2 = inv('each op executed once at the VIM');
    const byId = new Map(requested.map((r) => [r.opId, r]));
    const inWindow = (t: string, o: Json): boolean => {
      const ms = Date.parse(t);
      return ms >= Date.parse(o.startTime) - 5 && ms <= Date.parse(o.stateEnteredTime) + 5;
    };
    const heat = [...heatJournal.values()];
    const pods = [...podJournal.values()];
    const matched = { vmVnfcHeals: 0, serversMarked: 0, vmEntireHeals: 0, stacksRecreated: 0, cnfVnfcHeals: 0, podsDeleted: 0, cnfEntireHeals: 0, workloadsDeleted: 0, scales: 0 };
    for (const o of ops) {
      if (!instIds.has(o.vnfInstanceId) || o.operation === 'INSTANTIATE') continue;
      const me = instances.find((i) => i.id === o.vnfInstanceId) as Instance;
      const req = byId.get(o.id);
      const params = (o.operationParams ?? {}) as Json;
      const done = o.operationState === 'COMPLETED';
      const retried = (req?.retried ?? 0) > 0;
      i2.checked++;
      if (o.operation === 'SCALE') {
        if (done && req && req.vnfcsAfter !== undefined) {
          const type = req.scaleType ?? params.type;
          const want = req.vnfcsBefore + (type === 'SCALE_OUT' ? 1 : -1);
          matched.scales++;
          if (req.vnfcsAfter !== want) i2.violations.push(`SCALE ${o.id} (${type}) on ${me.kind} ${me.id}: ${req.vnfcsBefore} -> ${req.vnfcsAfter} VNFCs, expected ${want}`);
        }
        continue;
      }
      if (o.operation !== 'HEAL') continue;
      const ids = (params.vnfcInstanceId ?? []) as string[];
      const entire = ids.length === 0 && (req?.action === 'heal-v1-entire' || req?.action === 'heal-v2-entire' || params.additionalParams?.all === true);
      const wantN = ids.length > 0 ? new Set(ids).size : req?.targets;
      if (me.kind === 'vm') {
        const mine = heat.filter((e) => String(e.stackName).startsWith(`vnf-${me.id}`) && inWindow(e.time, o));
        if (entire) {
          const top = mine.filter((e) => e.stackName === `vnf-${me.id}`);
          const deleted = new Set(top.filter((e) => e.operation === 'delete').map((e) => e.stackId));
          const created = new Set(top.filter((e) => e.operation === 'create').map((e) => e.stackId));
          matched.vmEntireHeals++;
          matched.stacksRecreated += created.size;
          if (deleted.size > 1 || created.size > 1) i2.violations.push(`entire HEAL ${o.id} on VM ${me.id}: ${deleted.size} stacks deleted, ${created.size} created (expected 1 and 1)`);
          if (done && !retried && (deleted.size !== 1 || created.size !== 1)) i2.violations.push(`entire HEAL ${o.id} COMPLETED on VM ${me.id} with ${deleted.size} stack deletions and ${created.size} creations`);
        } else {
          const marked = new Set(mine.filter((e) => e.operation === 'mark_unhealthy' && e.unhealthy === true).map((e) => e.physicalId));
          matched.vmVnfcHeals++;
          matched.serversMarked += marked.size;
          const repeats = mine.filter((e) => e.operation === 'mark_unhealthy' && e.unhealthy === true).length - marked.size;
          if (repeats > 0) i2.notes.push(`HEAL ${o.id}: ${repeats} mark-unhealthy call(s) re-issued for the same server (idempotent resume)`);
          if (wantN !== undefined && marked.size > wantN) i2.violations.push(`HEAL ${o.id} on VM ${me.id}: ${marked.size} servers marked unhealthy for ${wantN} VNFC(s) (${[...marked].join(', ')})`);
          if (done && wantN !== undefined && marked.size < wantN && !o.isAutomaticInvocation) i2.violations.push(`HEAL ${o.id} COMPLETED on VM ${me.id}: ${marked.size} servers marked for ${wantN} VNFC(s)`);
          if (done && !mine.some((e) => e.operation === 'update')) i2.violations.push(`HEAL ${o.id} COMPLETED on VM ${me.id} without a stack update`);
        }
      } else {
        const mine = pods.filter((e) => e.labels?.[INSTANCE_LABEL] === me.id && inWindow(e.time, o));
        if (entire) {
          const per = new Map<string, Set<string>>();
          for (const e of mine.filter((x) => x.kind !== 'Pod')) {
            const k = `${e.kind}/${e.name}`;
            if (!per.has(k)) per.set(k, new Set());
            per.get(k)?.add(e.uid);
          }
          matched.cnfEntireHeals++;
          matched.workloadsDeleted += per.size;
          for (const [k, uids] of per) if (uids.size > 1) i2.violations.push(`entire HEAL ${o.id} on CNF ${me.id}: ${k} deleted in ${uids.size} incarnations`);
          if (done && per.size === 0) i2.violations.push(`entire HEAL ${o.id} COMPLETED on CNF ${me.id} without deleting any workload`);
        } else {
          const uids = new Set(mine.filter((e) => e.kind === 'Pod').map((e) => e.uid));
          matched.cnfVnfcHeals++;
          matched.podsDeleted += uids.size;
          if (wantN !== undefined && uids.size > wantN) i2.violations.push(`HEAL ${o.id} on CNF ${me.id}: ${uids.size} pods deleted for ${wantN} VNFC(s) (${mine.filter((e) => e.kind === 'Pod').map((e) => e.name).join(', ')})`);
          if (done && wantN !== undefined && uids.size < wantN) i2.violations.push(`HEAL ${o.id} COMPLETED on CNF ${me.id}: ${uids.size} pods deleted for ${wantN} VNFC(s)`);
        }
      }
    }
    i2.notes.push(`${heat.length} Heat journal entries, ${pods.length} Kubernetes deletions observed`);
    i2.notes.push(
      `matched to the VIM journals: ${matched.vmVnfcHeals} VM VNFC heals (${matched.serversMarked} servers marked unhealthy), ${matched.vmEntireHeals} VM entire heals (${matched.stacksRecreated} stacks re-created), ${matched.cnfVnfcHeals} CNF VNFC heals (${matched.podsDeleted} pods deleted), ${matched.cnfEntireHeals} CNF entire heals (${matched.workloadsDeleted} workloads deleted), ${matched.scales} scales (VNFC count before/after)`,
    );

    // 3. each fault batch became exactly one heal
    const i3 = inv('each fault batch -> exactly one heal');
    for (const b of batches) report.batches[b.status] = (report.batches[b.status] ?? 0) + 1;
    report.faultNotifications = faults.length;
    const opOfBatch = new Map<string, string>();
    for (const b of batches) {
      i3.checked++;
      if (['done', 'failed', 'healing'].includes(b.status) && !b.vnfLcmOpOccId) i3.violations.push(`batch ${b.id} is ${b.status} without a heal op`);
      if (b.vnfLcmOpOccId) {
        const other = opOfBatch.get(b.vnfLcmOpOccId);
        if (other) i3.violations.push(`op ${b.vnfLcmOpOccId} claimed by batches ${other} and ${b.id}`);
        opOfBatch.set(b.vnfLcmOpOccId, b.id);
        const o = ops.find((x) => x.id === b.vnfLcmOpOccId);
        if (!o) i3.violations.push(`batch ${b.id}: its op ${b.vnfLcmOpOccId} does not exist`);
        else if (b.status === 'done' && o.operationState !== 'COMPLETED') i3.violations.push(`batch ${b.id} done but op ${o.id} is ${o.operationState}`);
      }
      if (['held', 'suppressed'].includes(b.status)) i3.notes.push(`batch ${b.id} ${b.status}: ${b.reason ?? ''}`);
    }
    for (const o of ops.filter((x) => x.isAutomaticInvocation && x.operation === 'HEAL')) {
      i3.checked++;
      if (!opOfBatch.has(o.id)) i3.violations.push(`automatic heal ${o.id} belongs to no batch`);
    }
    for (const f of faults) {
      if (['packed', 'healing', 'done', 'failed', 'dropped', 'suppressed'].includes(f.status) && !f.batchId) i3.violations.push(`fault notification ${f.id} (${f.status}) has no batch`);
      if (f.batchId && !batches.some((b) => b.id === f.batchId)) i3.violations.push(`fault notification ${f.id}: batch ${f.batchId} does not exist`);
      if (['new', 'packed', 'healing'].includes(f.status)) i3.violations.push(`fault notification ${f.id} still ${f.status}`);
    }
    try {
      const d = await http(`${snUrl}/_sim/deliveries`, 'GET', { headers: { 'x-sim-admin-secret': SIM_SECRET } });
      const deliveries = ((d.body.deliveries ?? d.body) as Json[]) ?? [];
      const ok = deliveries.filter((x) => x.status === 204);
      const ledgerCount = new Map<string, number>();
      for (const f of faults) ledgerCount.set(`${f.alarmId}|${f.serverId}`, (ledgerCount.get(`${f.alarmId}|${f.serverId}`) ?? 0) + 1);
      const sentCount = new Map<string, number>();
      for (const x of ok) sentCount.set(`${x.alarm_id}|${x.server_id}`, (sentCount.get(`${x.alarm_id}|${x.server_id}`) ?? 0) + 1);
      for (const [k, n] of sentCount) if ((ledgerCount.get(k) ?? 0) < n) i3.violations.push(`fault notifications for alarm|server ${k}: ${n} accepted (204) by the VNFM, ${ledgerCount.get(k) ?? 0} in its ledger`);
      i3.notes.push(`${deliveries.length} notifier deliveries (${ok.length} answered 204), ${faults.length} ledger entries, ${report.faultInjections} server faults injected`);
    } catch (e) {
      i3.notes.push(`notifier deliveries not read: ${(e as Error).message}`);
    }

    // 4. notifications delivered once, in order
    const i4 = inv('notifications: all delivered, once, in order');
    for (const v of ['v1', 'v2'] as const) {
      // Delivery order is the row's `sequence` (commit order), not its id (drawn at insert).
      const rows = ((await get(`/vnfm/v1/notifications?subscriptionId=${subs[v]}&limit=10000`)) as unknown as Json[]).sort((a, b) => Number(a.sequence ?? a.id) - Number(b.sequence ?? b.id));
      const seq = new Map(rows.map((r) => [String(r.notificationId), Number(r.sequence ?? r.id)]));
      const notDelivered = rows.filter((r) => r.status !== 'DELIVERED');
      for (const r of notDelivered) i4.violations.push(`${v}: outbox row ${r.id} (${r.notificationType}) is ${r.status}: ${r.lastError ?? ''}`);
      const mine = received.filter((x) => x.sub === subs[v]);
      const firsts: Received[] = [];
      const seen = new Map<string, Received>();
      for (const x of mine) {
        const prev = seen.get(x.id);
        if (!prev) {
          seen.set(x.id, x);
          firsts.push(x);
          continue;
        }
        report.duplicateDeliveries++;
        const explained = disruptions.some((d) => d.from <= x.at && d.to + leaseMs * 3 >= prev.at);
        (explained ? i4.notes : i4.violations).push(`${v}: notification ${x.id} (outbox row ${seq.get(x.id)}) received twice${explained ? ' (at-least-once redelivery after a kill or the subscriber outage)' : ' with no kill or outage in between'}`);
      }
      i4.checked += rows.length;
      report.notificationsDelivered += firsts.length;
      for (const r of rows) if (!seen.has(String(r.notificationId))) i4.violations.push(`${v}: outbox row ${r.id} (${r.notificationType}, ${r.status}) never received`);
      for (const x of firsts) if (!seq.has(x.id)) i4.violations.push(`${v}: received ${x.id}, which is not in the outbox`);
      const rowOf = new Map(rows.map((r) => [Number(r.sequence ?? r.id), r]));
      const firstOf = new Map(firsts.map((x) => [seq.get(x.id) ?? 0, x]));
      const describe = (n: number): string => {
        const r = rowOf.get(n);
        const x = firstOf.get(n);
        const b = x?.body ?? {};
        return `row ${r?.id ?? '?'} (sequence ${n}) [${b.notificationType ?? r?.notificationType} op ${b.vnfLcmOpOccId ?? '-'} ${b.operation ?? ''} ${b.operationState ?? ''}/${b.notificationStatus ?? ''} instance ${b.vnfInstanceId ?? '-'}; created ${r?.createdAt}, delivered ${r?.deliveredAt}, received ${x ? new Date(x.at).toISOString() : '-'}]`;
      };
      let last = 0;
      for (const x of firsts) {
        const s = seq.get(x.id) ?? 0;
        if (s < last) i4.violations.push(`${v}: sequence ${s} received after sequence ${last}: ${describe(last)} then ${describe(s)}`);
        last = Math.max(last, s);
      }
      const perOp = new Map<string, Json[]>();
      for (const x of firsts) {
        if (!x.body.vnfLcmOpOccId) continue;
        if (!perOp.has(x.body.vnfLcmOpOccId)) perOp.set(x.body.vnfLcmOpOccId, []);
        perOp.get(x.body.vnfLcmOpOccId)?.push(x.body);
      }
      for (const o of ops) {
        const ns = perOp.get(o.id);
        if (!ns) {
          i4.violations.push(`${v}: no notification of op ${o.id} (${o.operation})`);
          continue;
        }
        const names = ns.map((n) => `${n.operationState}/${n.notificationStatus}`);
        if (o.operation !== 'MODIFY_INFO' && names[0] !== 'STARTING/START') i4.violations.push(`${v}: op ${o.id} notifications start with ${names[0]}: ${names.join(' ')}`);
        const last1 = ns[ns.length - 1] as Json;
        if (last1.notificationStatus !== 'RESULT' || last1.operationState !== o.operationState) i4.violations.push(`${v}: op ${o.id} (${o.operationState}) last notification is ${names[names.length - 1]}: ${names.join(' ')}`);
        const finals = ns.filter((n) => n.notificationStatus === 'RESULT' && FINAL.includes(n.operationState));
        if (finals.length > 1) i4.violations.push(`${v}: op ${o.id} has ${finals.length} final RESULT notifications: ${names.join(' ')}`);
        for (let k = 1; k < ns.length; k++) {
          const p = ns[k - 1] as Json;
          const n = ns[k] as Json;
          if (p.notificationStatus === 'RESULT' && p.operationState !== 'FAILED_TEMP') i4.violations.push(`${v}: op ${o.id}: ${names.join(' ')} (something after a final RESULT)`);
          if (n.operationState === 'PROCESSING' && n.notificationStatus === 'START' && !(p.notificationStatus === 'START' && p.operationState === 'STARTING') && !(p.operationState === 'FAILED_TEMP')) {
            i4.violations.push(`${v}: op ${o.id}: PROCESSING/START after ${p.operationState}/${p.notificationStatus}: ${names.join(' ')}`);
          }
        }
      }
    }

    // 5. stored instantiatedVnfInfo agrees with the VIMs
    const i5 = inv('instantiatedVnfInfo agrees with the VIMs');
    const osState = (await osAdmin('GET', '/_sim/state')).body;
    const stacks = (osState.stacks ?? []) as Json[];
    const topOf = (stackId: string | null): Json | undefined => {
      let s = stacks.find((x) => x.id === stackId);
      while (s?.parent) s = stacks.find((x) => x.id === s?.parent);
      return s;
    };
    for (const me of instances) {
      i5.checked++;
      const inst = await get(`/vnflcm/v2/vnf_instances/${me.id}`);
      const info = inst.instantiatedVnfInfo;
      if (!info) {
        i5.violations.push(`${me.kind} ${me.id} is not instantiated any more`);
        continue;
      }
      const stored = new Set(((info.vnfcResourceInfo ?? []) as Json[]).map((r) => String(r.computeResource?.resourceId)));
      let actual: Set<string>;
      if (me.kind === 'vm') {
        actual = new Set(((osState.servers ?? []) as Json[]).filter((s) => { const t = topOf(s.stack_id); return t && !t.deleted && t.name === `vnf-${me.id}`; }).map((s) => String(s.id)));
        const bad = ((osState.servers ?? []) as Json[]).filter((s) => actual.has(s.id) && s.status !== 'ACTIVE');
        for (const s of bad) i5.notes.push(`VM ${me.id}: server ${s.id} is ${s.status} at the end`);
      } else {
        const l = await k8s('GET', `/api/v1/namespaces/${me.namespace}/pods?labelSelector=${encodeURIComponent(`${INSTANCE_LABEL}=${me.id}`)}`);
        actual = new Set(((l.body.items ?? []) as Json[]).filter((p) => !p.metadata.deletionTimestamp).map((p) => String(p.metadata.name)));
      }
      const missing = [...stored].filter((x) => !actual.has(x));
      const extra = [...actual].filter((x) => !stored.has(x));
      if (missing.length || extra.length) i5.violations.push(`${me.kind} ${me.id}: stored but not at the VIM [${missing.join(', ')}]; at the VIM but not stored [${extra.join(', ')}]`);
    }
    if (databaseUrl) {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      try {
        const r = await c.query<{ max: number | null; over3: string }>('select max(lease_epoch) as max, count(*) filter (where lease_epoch > 3) as over3 from op_occ');
        report.leaseEpochs = { max: Number(r.rows[0]?.max ?? 0), over3: Number(r.rows[0]?.over3 ?? 0) };
      } finally {
        await c.end();
      }
    }
    report.violations = report.invariants.reduce((s, x) => s + x.violations.length, 0);
    report.machine.loadavg = loadavg().map((x) => Math.round(x * 100) / 100);
    return report;
  } finally {
    for (const c of children.reverse()) {
      if (c.alive()) {
        c.proc.kill('SIGTERM');
        await Promise.race([c.exited, sleep(10_000)]);
        if (c.alive()) c.proc.kill('SIGKILL');
      }
    }
    emergency.delete(stopChildren);
    for (const f of cleanups.reverse()) await Promise.resolve(f()).catch(() => undefined);
    if (opts.keepLogs === false) rmSync(work, { recursive: true, force: true });
  }
}

/** samples/vm-basic without its hook scripts (their cost is the package's, not the engine's). */
function vmPackageZip(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'chaos-pkg-'));
  cpSync(join(ROOT, 'samples/vm-basic'), dir, { recursive: true });
  const df = join(dir, 'Definitions/sample_vnf_df_simple.yaml');
  writeFileSync(df, readFileSync(df, 'utf8').replace(/\n {6}interfaces:[\s\S]*?\n(?= {4}VDU1:)/, '\n'));
  const zip = buildCsarFromDir(dir);
  rmSync(dir, { recursive: true, force: true });
  return zip;
}

/** The report as the table the CLI prints. */
export function formatReport(r: ChaosReport): string {
  const lines: string[] = [];
  const row = (k: string, v: unknown): number => lines.push(`| ${k} | ${v} |`);
  lines.push('| figure | value |', '| --- | --- |');
  row('seed', r.seed);
  row('database', r.db);
  row('replicas', r.replicas);
  row('chaos duration', `${Math.round(r.durationMs / 1000)} s`);
  row('quiescence after chaos', `${Math.round(r.quiesceMs / 1000)} s`);
  row('kills (SIGKILL) / restarts / failed starts', `${r.kills} / ${r.restarts} / ${r.failedStarts}`);
  row('VIM faults (OpenStack break / latency, Kubernetes break / latency)', `${r.vimFaults.openstackBreaks} / ${r.vimFaults.openstackLatency}, ${r.vimFaults.kubernetesBreaks} / ${r.vimFaults.kubernetesLatency}`);
  row('subscriber outages', r.subscriberOutages);
  row('requests: accepted 202 / refused 409 / fate unknown / resent after refused connection', `${r.requests.accepted} / ${r.requests.refused409} / ${r.requests.unknown} / ${r.requests.retries}`);
  row('op occs in all', r.opsTotal);
  for (const [state, by] of Object.entries(r.ops)) row(`ops ${state}`, Object.entries(by).map(([k, n]) => `${k}: ${n}`).join(', '));
  row('heals (manual + automatic)', r.heals);
  row('server faults injected', r.faultInjections);
  row('fault notifications in the ledger', r.faultNotifications);
  row('heal batches', Object.entries(r.batches).map(([k, n]) => `${k}: ${n}`).join(', ') || '0');
  row('LCM notifications delivered (distinct, v1 + v2)', r.notificationsDelivered);
  row('duplicate deliveries (same id twice)', r.duplicateDeliveries);
  row('automatic heals retried after the chaos (FAILED_TEMP, retried as an operator would)', r.autoHealsRetried);
  row('FAILED_TEMP at the end', r.failedTemp.length);
  row('machine', `${r.machine.cpus} cores, load average at the end ${r.machine.loadavg.join(' ')}`);
  row('CPU load during the chaos', `${r.load.cpuHogs} busy-loop process(es), highest 1-min load average ${r.load.maxLoadavg1}`);
  row('lease epochs (claims of one op; PostgreSQL)', `highest ${r.leaseEpochs.max}, ops claimed more than 3 times: ${r.leaseEpochs.over3}`);
  lines.push('', '| invariant | checked | violations |', '| --- | --- | --- |');
  for (const i of r.invariants) lines.push(`| ${i.name} | ${i.checked} | ${i.violations.length} |`);
  for (const i of r.invariants) {
    for (const v of i.violations.slice(0, 50)) lines.push(`VIOLATION [${i.name}] ${v}`);
    for (const n of i.notes.slice(0, 30)) lines.push(`note [${i.name}] ${n}`);
  }
  lines.push('', `violations: ${r.violations}`, `logs: ${r.workDir}/logs`);
  return lines.join('\n');
}
