/**
 * Floating IPs in the lab (stage `lab`), driven through the simulated OpenStack's Heat as a VNF
 * package's BaseHOT does it (Tacker's Kubernetes cluster packages give each node a floating IP on
 * the `public` network, port_id the node's CP): SSH to the floating address reaches the host of
 * the port's fixed IP, from the machine and from another host (hairpin, as an Ansible server
 * reaching a node by its floating IP); after a heal replaces the server on the same port it
 * reaches the new machine; a floating IP removed from the stack no longer answers.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { acquireLabLock, type Lab, startLab } from '../../src/lab/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { labTestsExclusive } from '../helpers/lab-exclusive.ts';
import { stage } from '../helpers/stages.ts';
import { until } from '../helpers/wait.ts';
import { call, login, portState, type Session, sshRun, trySsh } from './lab-helpers.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

/** Two servers on lab-net ports; `withFip`: a floating IP on the public network bound to vdu1's port. */
function template(withFip: boolean): Record<string, unknown> {
  const server = (cp: string) => ({ type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ port: { get_resource: cp } }] } });
  return {
    heat_template_version: '2013-05-23',
    resources: {
      vdu1_cp: { type: 'OS::Neutron::Port', properties: { network: 'lab-net' } },
      vdu1: server('vdu1_cp'),
      vdu2_cp: { type: 'OS::Neutron::Port', properties: { network: 'lab-net' } },
      vdu2: server('vdu2_cp'),
      ...(withFip ? { vdu1_fip: { type: 'OS::Neutron::FloatingIP', properties: { floating_network: 'public', port_id: { get_resource: 'vdu1_cp' } } } } : {}),
    },
    outputs: {
      ip1: { value: { get_attr: ['vdu1_cp', 'fixed_ips', 0, 'ip_address'] } },
      ip2: { value: { get_attr: ['vdu2_cp', 'fixed_ips', 0, 'ip_address'] } },
      ...(withFip ? { fip: { value: { get_attr: ['vdu1_fip', 'floating_ip_address'] } } } : {}),
    },
  };
}

describe('lab: floating IPs reach the host of their port', { skip: lab.skip }, () => {
  let release: () => void;
  let os: OpenStackSim;
  let theLab: Lab;
  let s: Session;
  let url = '';
  let fip = '';
  let ip1 = '';
  let ip2 = '';
  let firstKey = '';
  const user = () => theLab.credentials.user;
  const pw = () => theLab.credentials.password;

  const settle = async (what: string): Promise<Doc> => {
    const st = await until(what, async () => {
      const g = (await call('GET', url, s.token)).body.stack;
      return g.stack_status.endsWith('_IN_PROGRESS') ? undefined : g;
    }, 30_000, 20);
    await theLab.settled();
    return st;
  };
  const output = (st: Doc, key: string): string => st.outputs.find((o: Doc) => o.output_key === key)?.output_value;

  before(async () => {
    release = await acquireLabLock({ waitMs: 900_000, what: 'test/lab/floating-ip.test.ts' });
    os = await startOpenStackSim({ heatDelayMs: 10 });
    theLab = await startLab({ openstack: os, dataDir: 'memory://lab-floating-test', kubernetesPort: 0 });
    s = await login(os.authUrl);
  });
  after(async () => {
    await theLab?.close();
    await os?.close();
    release?.();
  });

  it('SSH to the floating IP reaches the host of the port\'s fixed IP, from the machine and from another host', async () => {
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'fip', template: template(true) });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    url = `${s.heat}/stacks/fip/${r.body.stack.id}`;
    const st = await settle('stack created');
    assert.equal(st.stack_status, 'CREATE_COMPLETE', st.stack_status_reason);
    [fip, ip1, ip2] = [output(st, 'fip'), output(st, 'ip1'), output(st, 'ip2')];
    assert.match(fip, /^172\.24\.4\.\d+$/, 'from the public network');
    const viaFip = await until('SSH to the floating IP', () => trySsh(fip, user(), pw(), 'sudo sh -c ". /etc/hvlab/env && echo \\$HVLAB_IP"'), 30_000);
    assert.equal(viaFip.stdout.trim(), ip1, 'the host of the port');
    firstKey = viaFip.hostKey;
    assert.equal(firstKey, theLab.fleet.host(ip1)?.hostKey.fingerprint);
    // from another host (as an Ansible server reaching a node by its floating IP)
    const hop = await sshRun(ip2, user(), pw(), `bash -c 'exec 3<>/dev/tcp/${fip}/22 && head -c 7 <&3'`);
    assert.equal(hop.stdout, 'SSH-2.0', `${hop.stderr} (exit ${hop.code})`);
  });

  it('after a heal (same port, new server) the floating IP reaches the new machine', async () => {
    assert.equal((await call('PATCH', `${url}/resources/vdu1`, s.token, { mark_unhealthy: true, resource_status_reason: 'heal' })).status, 200);
    assert.equal((await call('PATCH', url, s.token, {})).status, 202);
    const st = await settle('the heal');
    assert.equal(st.stack_status, 'UPDATE_COMPLETE', st.stack_status_reason);
    assert.equal(output(st, 'fip'), fip, 'the floating IP is kept');
    const r = await until('SSH to the new machine through the floating IP', async () => {
      const x = await trySsh(fip, user(), pw(), 'hostname');
      return x && x.hostKey !== firstKey ? x : undefined;
    }, 30_000);
    assert.equal(r.hostKey, theLab.fleet.host(ip1)?.hostKey.fingerprint);
  });

  it('a floating IP removed from the stack no longer answers; the fixed IP still does', async () => {
    assert.equal((await call('PUT', url, s.token, { template: template(false) })).status, 202);
    const st = await settle('the floating IP removed');
    assert.equal(st.stack_status, 'UPDATE_COMPLETE', st.stack_status_reason);
    assert.equal(theLab.provisioner.lastError, undefined);
    const map = execFileSync('nft', ['list', 'map', 'ip', 'hvlab_fip', 'fips'], { encoding: 'utf8' });
    assert.doesNotMatch(map, new RegExp(fip.replaceAll('.', '\\.')), 'no NAT for it any more');
    // (the machine's own default route may go anywhere, so the check is made from another host)
    const hop = await sshRun(ip2, user(), pw(), `timeout 3 bash -c 'exec 3<>/dev/tcp/${fip}/22 && head -c 7 <&3'`);
    assert.notEqual(hop.stdout, 'SSH-2.0', 'nothing answers at the floating address');
    assert.notEqual(hop.code, 0);
    assert.equal(await portState(ip1, 22), 'open');
  });
});
