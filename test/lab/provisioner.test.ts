/**
 * The lab bound to the simulated OpenStack (in-process), driven only through the cloud's HTTP APIs
 * the way a VNFM drives it: a Heat stack's server on lab-net becomes a host reachable over SSH at
 * its port's IP; a heal (mark unhealthy + stack update) replaces the machine (same IP, new host
 * key, empty disk); a server failed through the fault API loses its sshd and its Kubernetes Node
 * goes NotReady, recovery brings both back; a reboot restarts the machine with its disk; a host
 * killed behind the cloud's back stays dead; deleting the stack removes the host; a VIP allowed on
 * two servers' ports is held by the lower-IP host and moves when that host dies; servers off the
 * lab network are no hosts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { acquireLabLock, type Lab, startLab } from '../../src/lab/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { stage } from '../helpers/stages.ts';
import { until } from '../helpers/wait.ts';
import { addressesIn, call, labNamespaces, login, oneServerTemplate, portState, type Session, sshRun, trySsh } from './lab-helpers.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

describe('lab provisioner: the simulated OpenStack\'s servers as live hosts', { skip: lab.skip }, () => {
  let release: () => void;
  let os: OpenStackSim;
  let theLab: Lab;
  let s: Session;
  const admin = () => ({ 'x-sim-admin-secret': os.adminSecret });
  const user = () => theLab.credentials.user;
  const pw = () => theLab.credentials.password;

  async function createStack(name: string, template: Record<string, unknown>): Promise<{ url: string; outputs: Record<string, string> }> {
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: name, template });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const url = `${s.heat}/stacks/${name}/${r.body.stack.id}`;
    const st = await until(`stack ${name} created`, async () => {
      const g = await call('GET', url, s.token);
      return g.body.stack.stack_status.endsWith('_IN_PROGRESS') ? undefined : g.body.stack;
    }, 30_000, 20);
    assert.equal(st.stack_status, 'CREATE_COMPLETE', st.stack_status_reason);
    return { url, outputs: Object.fromEntries((st.outputs ?? []).map((o: Doc) => [o.output_key, o.output_value])) };
  }
  const physicalId = async (url: string, resource: string): Promise<string> => (await call('GET', `${url}/resources/${resource}`, s.token)).body.resource.physical_resource_id;
  const kube = async (method: string, path: string, body?: unknown): Promise<Doc> => {
    const res = await fetch(`${theLab.kubernetes.sim.httpUrl}${path}`, { method, headers: { authorization: `Bearer ${theLab.kubernetes.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  };
  const nodeReady = async (name: string): Promise<string | undefined> => (await kube('GET', `/api/v1/nodes/${name}`)).body.status?.conditions?.find((c: Doc) => c.type === 'Ready')?.status;

  before(async () => {
    release = await acquireLabLock({ waitMs: 600_000, what: 'test/lab/provisioner.test.ts' });
    os = await startOpenStackSim({ heatDelayMs: 10 });
    theLab = await startLab({ openstack: os, dataDir: 'memory://lab-provisioner-test', kubernetesPort: 0, podEvictionTimeoutMs: 600_000 });
    s = await login(os.authUrl);
  });
  after(async () => {
    await theLab?.close();
    await os?.close();
    release?.();
  });

  let url: string;
  let ip: string;
  let firstKey: string;

  it('makes a stack\'s server on lab-net a host reachable over SSH at its port\'s IP', async () => {
    assert.equal(theLab.network.name, 'lab-net');
    ({ url } = await createStack('one', oneServerTemplate()));
    ip = (await call('GET', url, s.token)).body.stack.outputs.find((o: Doc) => o.output_key === 'ip').output_value;
    assert.match(ip, /^10\.87\.0\.\d+$/);
    const last = Number(ip.split('.')[3]);
    assert.ok(last >= 10 && last <= 250, `from the pool .10-.250: ${ip}`);
    const r = await until('SSH to the new host', () => trySsh(ip, user(), pw(), 'hostname; sudo sh -c ". /etc/hvlab/env && echo \\$HVLAB_IP \\$HVLAB_K8S_URL && touch \\$HVLAB_STATE/disk-was-here"'), 30_000);
    const [hostname, env] = r.stdout.trim().split('\n');
    assert.equal(hostname, `vm-${last}`);
    assert.equal(env, `${ip} ${theLab.kubernetes.url}`);
    firstKey = r.hostKey;
    const server = await physicalId(url, 'vdu1');
    assert.equal(theLab.fleet.host(ip)?.generation, server, 'the host stands for that server');
    assert.equal(theLab.fleet.host(ip)?.hostKey.fingerprint, firstKey);
    const nova = (await call('GET', `${s.nova}/servers/${server}`, s.token)).body.server;
    assert.equal(nova.addresses['lab-net'][0].addr, ip);
  });

  it('heals (mark unhealthy + stack update): same IP, a new machine with a new host key and an empty disk', async () => {
    const old = await physicalId(url, 'vdu1');
    assert.equal((await call('PATCH', `${url}/resources/vdu1`, s.token, { mark_unhealthy: true, resource_status_reason: 'heal' })).status, 200);
    assert.equal((await call('PATCH', url, s.token, {})).status, 202);
    const st = await until('the update', async () => {
      const g = (await call('GET', url, s.token)).body.stack;
      return g.stack_status.endsWith('_IN_PROGRESS') ? undefined : g;
    }, 30_000, 20);
    assert.equal(st.stack_status, 'UPDATE_COMPLETE');
    const now = await physicalId(url, 'vdu1');
    assert.notEqual(now, old, 'the server was replaced');
    assert.equal(st.outputs.find((o: Doc) => o.output_key === 'ip').output_value, ip, 'the port, so the IP, is kept');
    const r = await until('SSH to the replacement with a new key', async () => {
      const x = await trySsh(ip, user(), pw(), 'sudo sh -c ". /etc/hvlab/env && ls -A \\$HVLAB_STATE"');
      return x && x.hostKey !== firstKey ? x : undefined;
    }, 30_000);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '', 'the state dir is empty');
    assert.equal(theLab.fleet.host(ip)?.generation, now);
    assert.equal(r.hostKey, theLab.fleet.host(ip)?.hostKey.fingerprint);
  });

  it('fails the server through the fault API: SSH refused, the host\'s Node NotReady; recovery brings both back', async () => {
    const server = await physicalId(url, 'vdu1');
    const created = await kube('POST', '/api/v1/nodes', { metadata: { name: 'lab-node-a' }, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }] } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const w = await sshRun(ip, user(), pw(), 'sudo sh -c ". /etc/hvlab/env && echo lab-node-a > \\$HVLAB_STATE/node-name"');
    assert.equal(w.code, 0, w.stderr);
    const keyBefore = w.hostKey;
    assert.equal(await nodeReady('lab-node-a'), 'True');

    assert.equal((await call('POST', `${os.url}/_sim/servers/${server}/fail`, undefined, {}, admin())).status, 200);
    await until('port 22 refused', async () => (await portState(ip, 22)) === 'refused', 30_000);
    await until('the Node NotReady', async () => (await nodeReady('lab-node-a')) === 'Unknown', 30_000);
    assert.deepEqual(await theLab.fleet.pidsOf(ip), [], 'no process left in the host');

    assert.equal((await call('POST', `${os.url}/_sim/servers/${server}/recover`, undefined, {}, admin())).status, 200);
    const r = await until('SSH again after recovery', () => trySsh(ip, user(), pw(), 'sudo sh -c ". /etc/hvlab/env && cat \\$HVLAB_STATE/node-name"'), 30_000);
    assert.equal(r.hostKey, keyBefore, 'a recovered server is the same machine');
    assert.equal(r.stdout.trim(), 'lab-node-a', 'with its disk');
    await until('the Node Ready again', async () => (await nodeReady('lab-node-a')) === 'True', 30_000);
  });

  it('reboots the machine on a server reboot (processes gone, disk kept); a host killed behind the cloud\'s back stays dead until started', async () => {
    const server = await physicalId(url, 'vdu1');
    const bg = await sshRun(ip, user(), pw(), 'nohup sleep 900 >/dev/null 2>&1 & echo $!');
    const sleeper = Number(bg.stdout.trim());
    assert.ok((await theLab.fleet.pidsOf(ip)).includes(sleeper));
    assert.equal((await call('POST', `${s.nova}/servers/${server}/action`, s.token, { reboot: { type: 'SOFT' } })).status, 202);
    await until('the sleep gone with the reboot', async () => !(await theLab.fleet.pidsOf(ip)).includes(sleeper), 30_000);
    const r = await until('SSH after the reboot', () => trySsh(ip, user(), pw(), 'sudo sh -c ". /etc/hvlab/env && cat \\$HVLAB_STATE/node-name"'), 30_000);
    assert.equal(r.stdout.trim(), 'lab-node-a', 'the disk is kept');
    assert.equal(r.hostKey, bg.hostKey, 'same machine');
    await until('the Node Ready after the reboot', async () => (await nodeReady('lab-node-a')) === 'True', 30_000);

    await theLab.killHost(ip);
    assert.equal(await portState(ip, 22), 'refused');
    assert.equal(await nodeReady('lab-node-a'), 'Unknown', 'its kubelet died with it');
    // another server's life goes on; the dead one is not brought back by it
    const other = await createStack('bystander', oneServerTemplate());
    await until('the bystander up', () => trySsh(other.outputs.ip as string, user(), pw(), 'true'), 30_000);
    await theLab.settled();
    assert.equal(await portState(ip, 22), 'refused', 'a crashed VM stays down while its server says ACTIVE');
    assert.equal((await call('DELETE', other.url, s.token)).status, 204);
    await theLab.startHost(ip);
    assert.equal((await sshRun(ip, user(), pw(), 'true')).hostKey, bg.hostKey);
    assert.equal(await nodeReady('lab-node-a'), 'True');
  });

  it('deletes the host with its stack; a server off the lab network is no host', async () => {
    const ns = `hvlab-${ip.replaceAll('.', '-')}`;
    const other = await createStack('off-lab', oneServerTemplate('net-elsewhere'));
    assert.ok(!other.outputs.ip?.startsWith('10.87.0.'), `not on the lab subnet: ${other.outputs.ip}`);
    assert.equal((await call('DELETE', url, s.token)).status, 204);
    await until('the host gone', () => theLab.fleet.host(ip) === undefined && !labNamespaces().includes(ns), 30_000);
    await theLab.settled();
    assert.deepEqual(theLab.fleet.list(), [], 'no host for the server off the lab network');
  });

  it('puts a VIP on the lower-IP host whose port allows it, moves it when that host dies, and keeps it there when the host returns', async () => {
    const port = (allow: boolean) => ({
      type: 'OS::Neutron::Port',
      properties: { network: 'lab-net', ...(allow ? { allowed_address_pairs: [{ ip_address: { get_attr: ['vip_cp', 'fixed_ips', 0, 'ip_address'] } }] } : {}) },
    });
    const server = (cp: string) => ({ type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ port: { get_resource: cp } }] } });
    const { url: vurl, outputs } = await createStack('vip', {
      heat_template_version: '2021-04-16',
      resources: { vip_cp: port(false), a_cp: port(true), b_cp: port(true), a: server('a_cp'), b: server('b_cp') },
      outputs: {
        vip: { value: { get_attr: ['vip_cp', 'fixed_ips', 0, 'ip_address'] } },
        a: { value: { get_attr: ['a_cp', 'fixed_ips', 0, 'ip_address'] } },
        b: { value: { get_attr: ['b_cp', 'fixed_ips', 0, 'ip_address'] } },
      },
    });
    const { vip } = outputs as { vip: string };
    const [low, high] = [outputs.a, outputs.b].sort((x, y) => Number(x?.split('.')[3]) - Number(y?.split('.')[3])) as [string, string];
    const nsOf = (x: string) => `hvlab-${x.replaceAll('.', '-')}`;
    await until('the VIP on the lower host', () => addressesIn(nsOf(low)).includes(vip), 30_000);
    assert.ok(!addressesIn(nsOf(high)).includes(vip), 'only one host holds it');
    await theLab.settled();
    assert.equal(theLab.provisioner.holders().get(vip), low);
    assert.equal(theLab.fleet.host(vip), undefined, 'the VIP port has no server, so no host');

    const lowServer = await physicalId(vurl, low === outputs.a ? 'a' : 'b');
    assert.equal((await call('POST', `${os.url}/_sim/servers/${lowServer}/fail`, undefined, {}, admin())).status, 200);
    await until('the VIP on the other host', () => addressesIn(nsOf(high)).includes(vip) && !addressesIn(nsOf(low)).includes(vip), 30_000);
    await theLab.settled();
    assert.equal(theLab.provisioner.holders().get(vip), high);
    assert.equal((await sshRun(high, user(), pw(), 'ip -4 -o addr show dev eth0')).stdout.includes(`${vip}/24`), true);
    // The lower host comes back: the VIP stays where it is (no HAProxy on a fresh host yet).
    assert.equal((await call('POST', `${os.url}/_sim/servers/${lowServer}/recover`, undefined, {}, admin())).status, 200);
    await until('the lower host up again', () => theLab.fleet.host(low)?.running === true, 30_000);
    await theLab.settled();
    assert.equal(theLab.provisioner.holders().get(vip), high, 'the VIP is sticky');
    assert.equal(addressesIn(nsOf(low)).includes(vip), false);
  });
});
