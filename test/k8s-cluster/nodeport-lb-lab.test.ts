/**
 * CNF NodePort publishing on the live-VM lab (stage `lab`): the sample package
 * `samples/cnf-nodeport-lb` instantiated on a Kubernetes VIM that is the lab's Kubernetes, whose
 * Nodes are two lab hosts (their node ports answered by the lab's stand-in kube-proxy), with the
 * built-in `cnf-nodeport-lb` driver publishing the Services on the lab's load-balancer host
 * (`hvlab-lb`, real HAProxy) over real SSH.
 *
 * Each scenario asserts what the API shows and what really answers through the LB address.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { csarOf, onboard, ROOT } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { until } from '../helpers/wait.ts';
import { call as httpCall, login, sshRun } from '../lab/lab-helpers.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
type Json = any;

const PKG = join(ROOT, 'samples/cnf-nodeport-lb');
const LAB_PASSWORD = 'lab-pass-6a1f0c93';
const V2 = { version: '2.0.0' };

/** What a TCP server at ip:port says before closing ('refused' when nothing listens). */
function answer(ip: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port });
    let text = '';
    s.setTimeout(5000, () => {
      s.destroy();
      resolve(`timeout after ${JSON.stringify(text)}`);
    });
    s.on('data', (d) => {
      text += d.toString();
    });
    s.once('end', () => resolve(text));
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED' ? 'refused' : `error ${e.code}`));
  });
}

describe('cnf-nodeport-lb: CNF NodePorts published on the lab\'s load balancer', { skip: lab.skip }, () => {
  let vnfm: TestVnfm;
  let vnfdId = '';
  let k8sVimId = '';
  let lbIp = '';
  const nodeIps: string[] = [];

  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const r = await vnfm.app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: r.statusCode, body: r.body ? (JSON.parse(r.body) as Json) : undefined, location: r.headers.location as string | undefined };
  };
  const settle = () => vnfm.ctx.engine?.runner.idle(600_000);
  const lcm = async (url: string, payload: unknown): Promise<Json> => {
    const r = await call('POST', url, payload);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const opId = String(r.location).split('/').pop();
    await settle();
    return (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).body;
  };
  const request = (name: string): Json =>
    JSON.parse(readFileSync(join(PKG, 'requests', name), 'utf8').replaceAll('<LB password>', LAB_PASSWORD).replaceAll('<LB IP>', lbIp).replaceAll('<Kubernetes VIM id>', k8sVimId));
  const labInfo = () => {
    const info = (vnfm.ctx as { simCloud?: { openstackUrl: string; lab?: { labDir: string; kubernetesUrl: string; serviceHosts?: { lb: string } } } }).simCloud;
    assert.ok(info?.lab, 'the lab runs');
    return { ...info.lab, openstackUrl: info.openstackUrl };
  };
  const labKube = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const info = labInfo();
    const creds = JSON.parse(readFileSync(join(info.labDir, 'credentials.json'), 'utf8')) as { kubernetesToken: string };
    const url = info.kubernetesUrl.replace(/^https:/, 'http:');
    const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${creds.kubernetesToken}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: r.status, body: await r.json() };
  };
  const ssh = (ip: string, cmd: string) => sshRun(ip, 'hvlab', LAB_PASSWORD, cmd);
  const instance = async (id: string): Promise<Json> => (await call('GET', `/vnflcm/v2/vnf_instances/${id}`)).body;
  /** Frontends the driver reports: service name -> LB port. */
  const published = async (id: string): Promise<Record<string, number>> => {
    const meta = (await instance(id)).instantiatedVnfInfo?.metadata?.nodePortLb;
    return Object.fromEntries(((meta?.frontends ?? []) as Json[]).map((f) => [f.service, f.port]));
  };
  /** The answer through the LB on `port`, waited for until it comes from `service` (nodes follow Services within a sync). */
  const answersThroughLb = async (port: number, service: string): Promise<string> =>
    until(`${service} answering through the LB on ${port}`, async () => {
      const a = await answer(lbIp, port);
      return a.startsWith(`${service} `) ? a : undefined;
    }, 60_000, 100);

  let dataDir = '';
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'vnfm-np-lab-'));
    vnfm = await testVnfm({
      config: {
        dataDir,
        sim: true,
        simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 },
        lab: { enabled: true, password: LAB_PASSWORD, kubernetesPort: 0, waitForLockMs: 900_000, serviceHosts: true },
        runner: { pollMs: 50, leaseMs: 120_000 },
      } as never,
    });
    const info = labInfo();
    lbIp = info.serviceHosts?.lb as string;
    assert.ok(lbIp, 'the lab has its load-balancer host');
    // Two lab hosts as the cluster's nodes: a stack of two servers on lab-net, each registering
    // its Node (InternalIP = its address) as the kubeadm stand-in does.
    const s = await login(`${info.openstackUrl}/v3`);
    const server = (n: string) => ({
      [`${n}_cp`]: { type: 'OS::Neutron::Port', properties: { network: 'lab-net' } },
      [n]: { type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ port: { get_resource: `${n}_cp` } }] } },
    });
    const template = {
      heat_template_version: '2021-04-16',
      resources: { ...server('w1'), ...server('w2') },
      outputs: { ips: { value: [{ get_attr: ['w1_cp', 'fixed_ips', 0, 'ip_address'] }, { get_attr: ['w2_cp', 'fixed_ips', 0, 'ip_address'] }] } },
    };
    const created = await httpCall('POST', `${s.heat}/stacks`, s.token, { stack_name: 'np-cluster-nodes', template });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const url = `${s.heat}/stacks/np-cluster-nodes/${created.body.stack.id}`;
    const st = await until('the node stack', async () => {
      const g = (await httpCall('GET', url, s.token)).body.stack;
      return g.stack_status.endsWith('_IN_PROGRESS') ? undefined : g;
    }, 60_000, 50);
    assert.equal(st.stack_status, 'CREATE_COMPLETE', st.stack_status_reason);
    nodeIps.push(...(st.outputs.find((o: Json) => o.output_key === 'ips').output_value as string[]));
    for (const [i, ip] of nodeIps.entries()) {
      const name = `np-w${i + 1}`;
      const n = await labKube('POST', '/api/v1/nodes', {
        metadata: { name, labels: { 'kubernetes.io/hostname': name } },
        status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }], addresses: [{ type: 'InternalIP', address: ip }, { type: 'Hostname', address: name }] },
      });
      assert.equal(n.status, 201, JSON.stringify(n.body));
      await until(`SSH to ${ip}`, async () => {
        try {
          const r = await ssh(ip, `sudo sh -c ". /etc/hvlab/env && echo ${name} > \\$HVLAB_STATE/node-name"`);
          return r.code === 0 ? true : undefined;
        } catch {
          return undefined;
        }
      }, 60_000, 200);
    }
    // The lab Kubernetes as a VIM.
    const creds = JSON.parse(readFileSync(join(info.labDir, 'credentials.json'), 'utf8')) as { kubernetesToken: string };
    const vim = await vnfm.ctx.vims.register({
      name: 'lab-kubernetes',
      type: 'kubernetes',
      auth_url: info.kubernetesUrl,
      auth_cred: { bearer_token: creds.kubernetesToken, ssl_ca_cert: readFileSync(join(info.labDir, 'kubernetes-ca.pem'), 'utf8') },
      vim_project: { name: 'default' },
    });
    k8sVimId = vim.id;
    const pkg = await onboard(vnfm.app, csarOf(PKG), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
  });
  after(async () => {
    await vnfm?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const create = async (name: string): Promise<string> => {
    const c = await call('POST', '/vnflcm/v2/vnf_instances', { vnfdId, vnfInstanceName: name });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    return c.body.id as string;
  };

  it('refuses bad LB parameters at acceptance: 400 malformed, 422 a script_path not in the package', async () => {
    const id = await create('np-bad');
    const good = request('instantiate.json');
    const bad = structuredClone(good);
    bad.additionalParams['lcm-kubernetes-external-lb'].external_lb_param.ssh_ip = 'not-an-ip';
    let r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, bad);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.detail, /ssh_ip/);
    const missing = structuredClone(good);
    delete missing.additionalParams['lcm-kubernetes-external-lb'];
    r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, missing);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    const script = structuredClone(good);
    script.additionalParams['lcm-kubernetes-external-lb'].script_path = 'Scripts/missing.sh';
    r = await call('POST', `/vnflcm/v2/vnf_instances/${id}/instantiate`, script);
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.match(r.body.detail, /Scripts\/missing\.sh/);
    assert.equal((await call('DELETE', `/vnflcm/v2/vnf_instances/${id}`)).status, 204);
  });

  let a = '';
  let b = '';
  let randomA = 0;

  it('instantiate publishes the fixed and the random NodePort on the LB: both answer through the LB address', async () => {
    a = await create('np-a');
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${a}/instantiate`, request('instantiate.json'));
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.ok(!JSON.stringify(occ).includes(LAB_PASSWORD), 'password masked in the op occ');
    const ports = await published(a);
    assert.equal(ports['default/np-web-fixed'], 30080);
    randomA = ports['default/np-web-random'] as number;
    assert.ok(randomA >= 30000 && randomA <= 32767 && randomA !== 30080, `an auto-assigned node port: ${randomA}`);
    const svc = await labKube('GET', '/api/v1/namespaces/default/services/np-web-random');
    assert.equal(svc.body.spec.ports[0].nodePort, randomA, 'the port the cluster assigned');
    assert.match(await answersThroughLb(30080, 'default/np-web-fixed'), /^default\/np-web-fixed 30080 np-w[12]\n$/);
    assert.match(await answersThroughLb(randomA, 'default/np-web-random'), new RegExp(`^default/np-web-random ${randomA} np-w[12]\\n$`));
    const meta = (await instance(a)).instantiatedVnfInfo.metadata.nodePortLb;
    assert.equal(meta.lb, lbIp);
    assert.deepEqual(meta.frontends.find((f: Json) => f.port === 30080).servers, ['np-w1', 'np-w2']);
    const cfg = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.match(cfg, new RegExp(`^# BEGIN healvnfm cnf-${a}$`, 'm'));
    assert.match(cfg, new RegExp(`^frontend np_${a.replaceAll('-', '').slice(0, 8)}_default_np-web-fixed_30080$`, 'm'));
  });

  it('a whole-CNF heal that changes the random port republishes: the old port refused, the new one answers through the LB', async () => {
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${a}/heal`, request('heal-whole.json'));
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const ports = await published(a);
    const now = ports['default/np-web-random'] as number;
    assert.notEqual(now, randomA, 'the re-created Service got another node port');
    assert.equal((await labKube('GET', '/api/v1/namespaces/default/services/np-web-random')).body.spec.ports[0].nodePort, now);
    assert.match(await answersThroughLb(now, 'default/np-web-random'), new RegExp(`^default/np-web-random ${now} `));
    assert.equal(await answer(lbIp, randomA), 'refused', 'the old port is no longer published');
    assert.match(await answersThroughLb(30080, 'default/np-web-fixed'), /^default\/np-web-fixed 30080 /);
    const cfg = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.ok(!cfg.includes(`_${randomA}`), 'no frontend of the old port left in the file');
    randomA = now;
  });

  it('a second CNF on the same LB gets its own section; both answer', async () => {
    b = await create('np-b');
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${b}/instantiate`, request('instantiate-second.json'));
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    const ports = await published(b);
    assert.equal(ports['np-second/np-web-fixed'], 30081);
    assert.match(await answersThroughLb(30081, 'np-second/np-web-fixed'), /^np-second\/np-web-fixed 30081 /);
    assert.match(await answersThroughLb(ports['np-second/np-web-random'] as number, 'np-second/np-web-random'), /^np-second\/np-web-random /);
    assert.match(await answersThroughLb(30080, 'default/np-web-fixed'), /^default\/np-web-fixed 30080 /);
    const cfg = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.match(cfg, new RegExp(`^# BEGIN healvnfm cnf-${a}$`, 'm'));
    assert.match(cfg, new RegExp(`^# BEGIN healvnfm cnf-${b}$`, 'm'));
  });

  it('an invalid LB configuration: FAILED_TEMP naming haproxy\'s message, the live configuration untouched; retry completes once it is fixed', async () => {
    // The operator's part of the file (outside the VNFM's sections) gets a line HAProxy rejects.
    const broke = await ssh(lbIp, `sudo sed -i 's/^    maxconn 4096$/    maxconn 4096\\n    bogus-directive-np 1/' /etc/haproxy/haproxy.cfg`);
    assert.equal(broke.code, 0, broke.stderr);
    const live = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.match(live, /bogus-directive-np/);
    const before = await published(b);
    const oldRandom = before['np-second/np-web-random'] as number;
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${b}/heal`, request('heal-whole.json'));
    assert.equal(occ.operationState, 'FAILED_TEMP', JSON.stringify(occ));
    assert.match(occ.error.detail, /haproxy -c/);
    assert.match(occ.error.detail, /bogus-directive-np/);
    assert.match(occ.error.detail, /the live configuration was not changed/);
    assert.ok(!occ.error.detail.includes(LAB_PASSWORD));
    assert.equal((await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout, live, 'the live file is untouched');
    assert.equal((await ssh(lbIp, 'sudo test -e /etc/haproxy/haproxy.cfg.new; echo $?')).stdout.trim(), '1', 'no rejected file left behind');
    // the running HAProxy still serves what was applied last
    assert.match(await answer(lbIp, 30080), /^default\/np-web-fixed 30080 /);
    assert.match(await answer(lbIp, 30081), /^np-second\/np-web-fixed 30081 /);
    const newRandom = (await labKube('GET', '/api/v1/namespaces/np-second/services/np-web-random')).body.spec.ports[0].nodePort as number;
    assert.notEqual(newRandom, oldRandom);
    assert.equal(await answer(lbIp, newRandom), 'refused', 'the new port is not published while the file is invalid');
    // The operator fixes the file, then retries.
    const fixed = await ssh(lbIp, `sudo sed -i '/bogus-directive-np/d' /etc/haproxy/haproxy.cfg`);
    assert.equal(fixed.code, 0, fixed.stderr);
    const r = await call('POST', `/vnflcm/v2/vnf_lcm_op_occs/${occ.id}/retry`);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    await settle();
    const done = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${occ.id}`)).body;
    assert.equal(done.operationState, 'COMPLETED', JSON.stringify(done.error));
    assert.equal((await published(b))['np-second/np-web-random'], newRandom);
    assert.match(await answersThroughLb(newRandom, 'np-second/np-web-random'), new RegExp(`^np-second/np-web-random ${newRandom} `));
    assert.equal(await answer(lbIp, oldRandom), 'refused');
  });

  const terminate = async (id: string): Promise<void> => {
    const occ = await lcm(`/vnflcm/v2/vnf_instances/${id}/terminate`, request('terminate.json'));
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
  };

  it('terminating the first CNF removes only its frontends; then the second one\'s', async () => {
    const portsA = await published(a);
    const portsB = await published(b);
    await terminate(a);
    for (const p of Object.values(portsA)) assert.equal(await answer(lbIp, p), 'refused', `port ${p} of the terminated CNF`);
    assert.match(await answersThroughLb(30081, 'np-second/np-web-fixed'), /^np-second\/np-web-fixed 30081 /);
    assert.match(await answersThroughLb(portsB['np-second/np-web-random'] as number, 'np-second/np-web-random'), /^np-second\/np-web-random /);
    let cfg = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.ok(!cfg.includes(`cnf-${a}`));
    assert.match(cfg, new RegExp(`^# BEGIN healvnfm cnf-${b}$`, 'm'));
    await terminate(b);
    for (const p of Object.values(portsB)) assert.equal(await answer(lbIp, p), 'refused', `port ${p} of the terminated CNF`);
    cfg = (await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout;
    assert.doesNotMatch(cfg, /^# BEGIN healvnfm /m, 'no section left');
  });

  it('terminating in the other order (second CNF first) keeps the first one\'s frontends intact', async () => {
    const occA = await lcm(`/vnflcm/v2/vnf_instances/${a}/instantiate`, request('instantiate.json'));
    assert.equal(occA.operationState, 'COMPLETED', JSON.stringify(occA.error));
    const occB = await lcm(`/vnflcm/v2/vnf_instances/${b}/instantiate`, request('instantiate-second.json'));
    assert.equal(occB.operationState, 'COMPLETED', JSON.stringify(occB.error));
    const portsA = await published(a);
    const portsB = await published(b);
    const sectionA = (cfg: string) => cfg.slice(cfg.indexOf(`# BEGIN healvnfm cnf-${a}`), cfg.indexOf(`# END healvnfm cnf-${a}`));
    const before = sectionA((await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout);
    await terminate(b);
    for (const p of Object.values(portsB)) assert.equal(await answer(lbIp, p), 'refused', `port ${p} of the terminated CNF`);
    assert.equal(sectionA((await ssh(lbIp, 'sudo cat /etc/haproxy/haproxy.cfg')).stdout), before, 'the first CNF\'s section is byte for byte the same');
    assert.match(await answersThroughLb(30080, 'default/np-web-fixed'), /^default\/np-web-fixed 30080 /);
    assert.match(await answersThroughLb(portsA['default/np-web-random'] as number, 'default/np-web-random'), /^default\/np-web-random /);
    await terminate(a);
    for (const p of Object.values(portsA)) assert.equal(await answer(lbIp, p), 'refused');
  });
});
