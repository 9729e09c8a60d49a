/**
 * The lab's operator-side hosts (stage `lab`): the external load balancer and the Ansible server
 * are stand-alone servers of the simulated Nova on the lab network, brought up by the provisioner
 * like any VM (sshd, the lab login), and left alone by stacks coming and going. And the stand-in
 * kube-proxy: node ports of NodePort Services answer on the hosts whose Node is Ready.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { acquireLabLock, type Lab, SERVICE_HOST_NAMES, serviceHostAddresses, startLab } from '../../src/lab/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { stage } from '../helpers/stages.ts';
import { until } from '../helpers/wait.ts';
import { call, login, oneServerTemplate, portState, type Session, sshRun, trySsh } from './lab-helpers.ts';

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

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

describe('serviceHostAddresses', () => {
  it('puts the load balancer at the top of the pool and the Ansible server below it', () => {
    assert.deepEqual(serviceHostAddresses('10.87.0.0/24'), { lb: '10.87.0.250', ansible: '10.87.0.249' });
    assert.deepEqual(serviceHostAddresses('10.88.0.0/16'), { lb: '10.88.0.250', ansible: '10.88.0.249' });
  });
});

describe('lab service hosts: load balancer and Ansible server VMs', { skip: lab.skip }, () => {
  let release: () => void;
  let os: OpenStackSim;
  let theLab: Lab;
  let s: Session;
  const user = () => theLab.credentials.user;
  const pw = () => theLab.credentials.password;

  before(async () => {
    release = await acquireLabLock({ waitMs: 900_000, what: 'test/lab/service-hosts.test.ts' });
    os = await startOpenStackSim({ heatDelayMs: 10 });
    theLab = await startLab({ openstack: os, dataDir: 'memory://lab-service-hosts-test', kubernetesPort: 0, serviceHosts: true });
    s = await login(os.authUrl);
  });
  after(async () => {
    await theLab?.close();
    await os?.close();
    release?.();
  });

  const serverByName = async (name: string): Promise<Doc> => {
    const list = (await call('GET', `${s.nova}/servers/detail`, s.token)).body.servers as Doc[];
    return list.find((x) => x.name === name);
  };

  it('boots both as ACTIVE servers on lab-net at their fixed addresses, reachable over SSH with the lab login', async () => {
    assert.deepEqual(theLab.serviceHosts, { lb: '10.87.0.250', ansible: '10.87.0.249' });
    for (const role of ['lb', 'ansible'] as const) {
      const ip = theLab.serviceHosts?.[role] as string;
      const server = await serverByName(SERVICE_HOST_NAMES[role]);
      assert.ok(server, `server ${SERVICE_HOST_NAMES[role]}`);
      assert.equal(server.status, 'ACTIVE');
      assert.equal(server.addresses['lab-net'][0].addr, ip);
      const r = await until(`SSH to ${role}`, () => trySsh(ip, user(), pw(), 'sudo sh -c ". /etc/hvlab/env && echo \\$HVLAB_IP"'), 60_000);
      assert.equal(r.stdout.trim(), ip);
      assert.equal(theLab.fleet.host(ip)?.generation, server.id, 'the host stands for that server');
    }
  });

  it('survives a stack created and deleted next to it (same machine, same host key)', async () => {
    const lbIp = theLab.serviceHosts?.lb as string;
    const keyBefore = theLab.fleet.host(lbIp)?.hostKey.fingerprint;
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'vnf-next-to-lb', template: oneServerTemplate() });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const url = `${s.heat}/stacks/vnf-next-to-lb/${r.body.stack.id}`;
    const st = await until('stack created', async () => {
      const g = (await call('GET', url, s.token)).body.stack;
      return g.stack_status.endsWith('_IN_PROGRESS') ? undefined : g;
    }, 60_000, 20);
    assert.equal(st.stack_status, 'CREATE_COMPLETE');
    const vnfIp = st.outputs.find((o: Doc) => o.output_key === 'ip').output_value as string;
    assert.ok(vnfIp !== lbIp && vnfIp !== theLab.serviceHosts?.ansible, `a stack gets another address (${vnfIp})`);
    await until('the VNF host up', () => trySsh(vnfIp, user(), pw(), 'true'), 60_000);
    assert.equal((await call('DELETE', url, s.token)).status, 204);
    await until('the VNF host gone', async () => theLab.fleet.host(vnfIp) === undefined, 60_000);
    await theLab.settled();
    const h = theLab.fleet.host(lbIp);
    assert.equal(h?.running, true);
    assert.equal(h?.hostKey.fingerprint, keyBefore, 'the same machine');
    const again = await until('SSH to the LB', () => trySsh(lbIp, user(), pw(), 'true'), 60_000);
    assert.equal(again.hostKey, keyBefore);
  });

  it('answers every node port of every NodePort Service on a host whose Node is Ready, following Services and the Node', async () => {
    const kube = async (method: string, path: string, body?: unknown): Promise<Doc> => {
      const res = await fetch(`${theLab.kubernetes.sim.httpUrl}${path}`, { method, headers: { authorization: `Bearer ${theLab.kubernetes.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };
    assert.ok(theLab.nodePorts, 'socat is installed: the node-port stand-in runs');
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'np-node', template: oneServerTemplate() });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const url = `${s.heat}/stacks/np-node/${r.body.stack.id}`;
    const st = await until('stack created', async () => {
      const g = (await call('GET', url, s.token)).body.stack;
      return g.stack_status.endsWith('_IN_PROGRESS') ? undefined : g;
    }, 60_000, 20);
    const ip = st.outputs.find((o: Doc) => o.output_key === 'ip').output_value as string;
    await until('the node host up', () => trySsh(ip, user(), pw(), 'true'), 60_000);
    // the host registers its Node, as the kubeadm stand-in does
    assert.equal((await kube('POST', '/api/v1/nodes', { metadata: { name: 'np-node-1' }, status: { conditions: [{ type: 'Ready', status: 'True' }], addresses: [{ type: 'InternalIP', address: ip }] } })).status, 201);
    const w = await sshRun(ip, user(), pw(), 'sudo sh -c ". /etc/hvlab/env && echo np-node-1 > \\$HVLAB_STATE/node-name"');
    assert.equal(w.code, 0, w.stderr);
    const fixed = await kube('POST', '/api/v1/namespaces/default/services', { metadata: { name: 'np-fixed' }, spec: { type: 'NodePort', selector: { app: 'x' }, ports: [{ port: 80, nodePort: 31080 }] } });
    assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
    const random = await kube('POST', '/api/v1/namespaces/default/services', { metadata: { name: 'np-random' }, spec: { type: 'NodePort', selector: { app: 'x' }, ports: [{ port: 81 }] } });
    assert.equal(random.status, 201, JSON.stringify(random.body));
    const rport = random.body.spec.ports[0].nodePort as number;
    assert.ok(rport >= 30000 && rport <= 32767, `an allocated node port: ${rport}`);
    assert.equal(await until('the fixed node port answers', async () => { const a = await answer(ip, 31080); return a.startsWith('default/') ? a : undefined; }, 30_000), 'default/np-fixed 31080 np-node-1\n');
    assert.equal(await until('the random node port answers', async () => { const a = await answer(ip, rport); return a.startsWith('default/') ? a : undefined; }, 30_000), `default/np-random ${rport} np-node-1\n`);
    // a deleted Service's port closes
    assert.equal((await kube('DELETE', '/api/v1/namespaces/default/services/np-random')).status, 200);
    await until('the deleted Service\'s port refused', async () => (await portState(ip, rport)) === 'refused', 30_000);
    assert.equal(await answer(ip, 31080), 'default/np-fixed 31080 np-node-1\n', 'the other Service still answers');
    // the host dies: its Node NotReady, nothing answers; back: answers again
    await theLab.killHost(ip);
    assert.equal(await portState(ip, 31080), 'refused');
    await theLab.startHost(ip);
    await until('the node port answers again after the host came back', async () => (await answer(ip, 31080)).startsWith('default/np-fixed'), 30_000);
    assert.ok(theLab.nodePorts?.listeners().some((l) => l.ip === ip && l.port === 31080 && l.node === 'np-node-1'));
    // nothing on the service hosts: they registered no Node
    assert.equal(await portState(theLab.serviceHosts?.lb as string, 31080), 'refused');
    assert.equal((await kube('DELETE', '/api/v1/namespaces/default/services/np-fixed')).status, 200);
    await until('the last Service\'s port refused', async () => (await portState(ip, 31080)) === 'refused', 30_000);
    assert.equal((await call('DELETE', url, s.token)).status, 204);
  });
});
