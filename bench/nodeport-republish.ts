/**
 * NodePort republish cost on the live-VM lab (root; docs/lab.md): what the VNFM adds to a
 * whole-CNF heal of a CNF whose NodePort Services are published on an external load balancer by
 * the `cnf-nodeport-lb` driver (spec §3.3.7: heal_end reads the new node ports, renders the LB's
 * configuration, validates it with `haproxy -c`, reloads, checks the ports).
 *
 * One VNFM with the simulated cloud and the lab (its load-balancer host `hvlab-lb` runs the real
 * HAProxy); two lab hosts registered as Nodes of the lab Kubernetes (their node ports answered by
 * the lab's stand-in kube-proxy); the sample package `samples/cnf-nodeport-lb` (one fixed, one
 * random NodePort) instantiated on that Kubernetes VIM; then N whole-CNF heals, each re-creating
 * the Services (the random node port changes every time). Per heal:
 *   total      = accepted -> COMPLETED as the engine records it
 *   infra      = the Kubernetes infra step (objects deleted and re-created, pods Ready)
 *   republish  = the heal_end management step: SSH to the LB, Services and Nodes read from the
 *                API, the file rendered, uploaded, `haproxy -c`, renamed, reloaded, ports checked
 *   overhead   = total - infra (the VNFM's own work around the infra step, republish included)
 *   answerMs   = after COMPLETED, until the new port answers through the LB (0: at once)
 *
 *   sudo npx tsx bench/nodeport-republish.ts [--heals 10]
 *
 * Prints one JSON document (p50 / p90 / min / max per measure).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { resolveConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { startVnfm } from '../src/main/server.ts';
import { buildCsarFromDir } from '../src/packages/csar-reader.ts';

const argv = process.argv.slice(2);
const HEALS = argv.includes('--heals') ? Number(argv[argv.indexOf('--heals') + 1]) : 10;
const PKG = join(import.meta.dirname, '..', 'samples', 'cnf-nodeport-lb');
const PASSWORD = 'bench-lab-pass-3e9a';
const H = { version: '2.0.0' };
// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
type Json = Record<string, any>;

const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const summary = (xs: readonly number[]) => ({ p50: Math.round(pct(xs, 50)), p90: Math.round(pct(xs, 90)), min: Math.round(Math.min(...xs)), max: Math.round(Math.max(...xs)) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function answer(ip: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port });
    let text = '';
    s.setTimeout(5000, () => {
      s.destroy();
      resolve('timeout');
    });
    s.on('data', (d) => {
      text += d.toString();
    });
    s.once('end', () => resolve(text));
    s.once('error', () => resolve('refused'));
  });
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the lab needs root: sudo npx tsx bench/nodeport-republish.ts');
  const dataDir = mkdtempSync(join(tmpdir(), 'vnfm-bench-np-'));
  const lines: Json[] = [];
  const sink = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l));
      cb();
    },
  });
  const config = resolveConfig({
    flags: {
      dataDir,
      port: 0,
      simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 },
      lab: { enabled: true, password: PASSWORD, kubernetesPort: 0, waitForLockMs: 600_000, serviceHosts: true },
      runner: { pollMs: 20 },
      sync: { intervalMs: 0 },
    } as never,
  });
  const vnfm = await startVnfm(config, { logger: createLogger('info', sink), noListen: true });
  const call = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
    const r = await vnfm.app.inject({ method, url, headers: H, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: r.statusCode, body: r.body ? (JSON.parse(r.body) as Json) : {}, location: String(r.headers.location ?? '') };
  };
  const waitOp = async (opId: string): Promise<Json> => {
    for (;;) {
      const o = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).body;
      if (['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(o.operationState)) return o;
      await sleep(20);
    }
  };
  const lcm = async (url: string, payload: unknown): Promise<Json> => {
    const r = await call('POST', url, payload);
    if (r.status !== 202) throw new Error(`${url}: ${r.status} ${JSON.stringify(r.body)}`);
    const o = await waitOp(r.location.split('/').pop() as string);
    if (o.operationState !== 'COMPLETED') throw new Error(`${url}: ${o.operationState} ${JSON.stringify(o.error)}`);
    return o;
  };
  try {
    const sim = (vnfm.ctx as unknown as { simCloud: { openstackUrl: string; lab: { labDir: string; kubernetesUrl: string; serviceHosts: { lb: string } } } }).simCloud;
    const lbIp = sim.lab.serviceHosts.lb;
    const creds = JSON.parse(readFileSync(join(sim.lab.labDir, 'credentials.json'), 'utf8')) as { kubernetesToken: string };
    const kube = async (method: string, path: string, body?: unknown): Promise<Json> => {
      const r = await fetch(`${sim.lab.kubernetesUrl.replace(/^https:/, 'http:')}${path}`, { method, headers: { authorization: `Bearer ${creds.kubernetesToken}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return (await r.json()) as Json;
    };
    // two lab hosts as the cluster's nodes
    const auth = await fetch(`${sim.openstackUrl}/v3/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { name: 'Default' }, password: 'admin-secret' } } }, scope: { project: { name: 'admin', domain: { name: 'Default' } } } } }),
    });
    const token = auth.headers.get('x-subject-token') as string;
    const catalog = ((await auth.json()) as Json).token.catalog as Json[];
    const heat = (catalog.find((s) => s.type === 'orchestration') as Json).endpoints.find((e: Json) => e.interface === 'public').url as string;
    const srv = (n: string) => ({ [`${n}_cp`]: { type: 'OS::Neutron::Port', properties: { network: 'lab-net' } }, [n]: { type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ port: { get_resource: `${n}_cp` } }] } } });
    const template = { heat_template_version: '2021-04-16', resources: { ...srv('w1'), ...srv('w2') }, outputs: { ips: { value: [{ get_attr: ['w1_cp', 'fixed_ips', 0, 'ip_address'] }, { get_attr: ['w2_cp', 'fixed_ips', 0, 'ip_address'] }] } } };
    const hdr = { 'x-auth-token': token, 'content-type': 'application/json' };
    const made = (await (await fetch(`${heat}/stacks`, { method: 'POST', headers: hdr, body: JSON.stringify({ stack_name: 'np-bench-nodes', template }) })).json()) as Json;
    let stack: Json;
    for (;;) {
      stack = ((await (await fetch(`${heat}/stacks/np-bench-nodes/${made.stack.id}`, { headers: hdr })).json()) as Json).stack;
      if (!String(stack.stack_status).endsWith('_IN_PROGRESS')) break;
      await sleep(50);
    }
    const ips = stack.outputs.find((o: Json) => o.output_key === 'ips').output_value as string[];
    for (const [i, ip] of ips.entries()) {
      const name = `np-w${i + 1}`;
      await kube('POST', '/api/v1/nodes', { metadata: { name }, status: { conditions: [{ type: 'Ready', status: 'True' }], addresses: [{ type: 'InternalIP', address: ip }] } });
      // the stand-ins' record of the host's Node (what the lab's kube-proxy stand-in follows), once
      // the lab has made the host
      const stateDir = join(sim.lab.labDir, 'hosts', ip);
      for (let t = Date.now(); !existsSync(stateDir); await sleep(50)) if (Date.now() - t > 60_000) throw new Error(`the lab host ${ip} did not come up`);
      writeFileSync(join(sim.lab.labDir, 'hosts', ip, 'node-name'), `${name}\n`);
    }
    const vim = await vnfm.ctx.vims.register({ name: 'lab-kubernetes', type: 'kubernetes', auth_url: sim.lab.kubernetesUrl, auth_cred: { bearer_token: creds.kubernetesToken, ssl_ca_cert: readFileSync(join(sim.lab.labDir, 'kubernetes-ca.pem'), 'utf8') }, vim_project: { name: 'default' } });
    const created = await call('POST', '/vnfpkgm/v1/vnf_packages', {});
    await vnfm.ctx.packages.upload(created.body.id, buildCsarFromDir(PKG));
    await vnfm.ctx.packages.idle();
    const vnfdId = (await call('GET', `/vnfpkgm/v1/vnf_packages/${created.body.id}`)).body.vnfdId;
    const req = (name: string) => JSON.parse(readFileSync(join(PKG, 'requests', name), 'utf8').replaceAll('<LB password>', PASSWORD).replaceAll('<LB IP>', lbIp).replaceAll('<Kubernetes VIM id>', vim.id));
    const id = (await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId })).body.id;
    const t0 = Date.now();
    await lcm(`/vnflcm/v2/vnf_instances/${id}/instantiate`, req('instantiate.json'));
    const instantiateMs = Date.now() - t0;
    const randomPort = async (): Promise<number> => {
      const meta = (await call('GET', `/vnflcm/v2/vnf_instances/${id}`)).body.instantiatedVnfInfo.metadata.nodePortLb;
      return (meta.frontends as Json[]).find((f) => f.service === 'default/np-web-random')?.port as number;
    };
    const results: { total: number; infra: number; republish: number; overhead: number; answerMs: number; portChanged: boolean }[] = [];
    for (let i = 0; i < HEALS; i++) {
      const before = await randomPort();
      const o = await lcm(`/vnflcm/v2/vnf_instances/${id}/heal`, req('heal-whole.json'));
      const done = Date.now();
      const after = await randomPort();
      while (!(await answer(lbIp, after)).startsWith('default/np-web-random')) {
        if (Date.now() - done > 60_000) throw new Error(`port ${after} does not answer through the LB`);
        await sleep(20);
      }
      const answerMs = Date.now() - done;
      const mine = lines.filter((l) => l.opOccId === o.id && l.msg === 'step done');
      const stepMs = (name: string) => mine.filter((l) => l.step === name).reduce((a, l) => a + Number(l.ms), 0);
      const total = new Date(o.stateEnteredTime).getTime() - new Date(o.startTime).getTime();
      const infra = stepMs('infra');
      results.push({ total, infra, republish: stepMs('mgmt-end'), overhead: total - infra, answerMs, portChanged: after !== before });
    }
    await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, req('terminate.json'));
    const out = {
      machine: { cpus: cpus().length, load: loadavg().map((x) => Math.round(x * 10) / 10) },
      heals: HEALS,
      portChangedEveryHeal: results.every((r) => r.portChanged),
      instantiateMs,
      totalMs: summary(results.map((r) => r.total)),
      infraMs: summary(results.map((r) => r.infra)),
      republishMs: summary(results.map((r) => r.republish)),
      overheadMs: summary(results.map((r) => r.overhead)),
      answerAfterCompletedMs: summary(results.map((r) => r.answerMs)),
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await vnfm.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
