/**
 * The simulated OpenStack keeps its state in a directory (`stateDir`): a second sim started on the
 * same directory answers the Heat, Nova and Keystone APIs as the first one did (same stacks with
 * nested stacks, resources, events and templates; same servers, ports, volumes; the old token is
 * still valid), work in progress resumes (a held stack update saved UPDATE_IN_PROGRESS completes
 * after the restart and replaces the marked server), changes are saved without a clean close (the
 * debounced write), and an unusable state file is refused rather than ignored.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, type Session, settled, waitStack } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

const MEMBER = {
  heat_template_version: '2021-04-16',
  resources: {
    member: { type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ network: 'net0' }] } },
  },
  outputs: { server_id: { value: { get_resource: 'member' } } },
};

const TEMPLATE = {
  heat_template_version: '2021-04-16',
  parameters: { flavor: { type: 'string', default: 'm1.small' } },
  resources: {
    port: { type: 'OS::Neutron::Port', properties: { network: 'net0' } },
    vol: { type: 'OS::Cinder::Volume', properties: { size: 1 } },
    vdu: { type: 'OS::Nova::Server', properties: { name: 'vdu', flavor: { get_param: 'flavor' }, image: 'cirros', networks: [{ port: { get_resource: 'port' } }] } },
    attach: { type: 'OS::Cinder::VolumeAttachment', properties: { instance_uuid: { get_resource: 'vdu' }, volume_id: { get_resource: 'vol' } } },
    fip: { type: 'OS::Neutron::FloatingIP', properties: { floating_network: 'public', port_id: { get_resource: 'port' } } },
    group: { type: 'OS::Heat::AutoScalingGroup', properties: { min_size: 1, max_size: 3, desired_capacity: 2, resource: { type: 'member.yaml' } } },
  },
  outputs: { vdu_ip: { value: { get_attr: ['port', 'fixed_ips', 0, 'ip_address'] } }, members: { value: { get_attr: ['group', 'refs'] } } },
};

const work = mkdtempSync(join(tmpdir(), 'os-sim-state-'));
const running: OpenStackSim[] = [];

after(async () => {
  for (const s of running) await s.close();
  rmSync(work, { recursive: true, force: true });
});

async function start(stateDir: string, heatDelayMs = 0): Promise<OpenStackSim> {
  const sim = await startOpenStackSim({ heatDelayMs, stateDir });
  running.push(sim);
  return sim;
}

/** The same document with the base URL of `from` written as that of `to` (links carry the port). */
function rebased(doc: unknown, from: OpenStackSim, to: OpenStackSim): Doc {
  return JSON.parse(JSON.stringify(doc).split(from.url).join(to.url));
}

/** What a client can read about the cloud, to compare two sims. */
async function view(s: Session, stackUrl: string): Promise<Doc> {
  const get = async (url: string): Promise<Doc> => {
    const r = await call('GET', url, s.token);
    assert.equal(r.status, 200, `${url}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const resources = await get(`${stackUrl}/resources?nested_depth=2`);
  const nested = (resources.resources as Doc[]).filter((r) => r.resource_type === 'OS::Heat::AutoScalingGroup').map((r) => r.physical_resource_id as string);
  assert.equal(nested.length, 1);
  const list = await get(`${s.heat}/stacks?show_nested=true`);
  const nestedStack = (list.stacks as Doc[]).find((x) => x.id === nested[0]);
  assert.ok(nestedStack, 'the nested stack is listed');
  return {
    stack: await get(stackUrl),
    resources,
    events: await get(`${stackUrl}/events`),
    template: await get(`${stackUrl}/template`),
    environment: await get(`${stackUrl}/environment`),
    outputs: await get(`${stackUrl}/outputs`),
    nested: await get(`${s.heat}/stacks/${nestedStack.stack_name}/${nestedStack.id}`),
    nestedResources: await get(`${s.heat}/stacks/${nestedStack.stack_name}/${nestedStack.id}/resources`),
    servers: await get(`${s.nova}/servers/detail`),
    stacks: list,
  };
}

describe('OpenStack sim: state saved in stateDir and restored', () => {
  it('a restarted sim answers as before: stacks (nested, resources, events, template), servers, faults, the old token; then it heals as usual', async () => {
    const dir = join(work, 'restart');
    const a = await start(dir);
    assert.equal(a.restored, false, 'nothing to restore the first time');
    const s = await login(a);
    const files = { 'member.yaml': JSON.stringify(MEMBER) };
    const c = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'vnf-1', template: TEMPLATE, files, parameters: { flavor: 'm1.medium' } });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const stackUrl = `${s.heat}/stacks/vnf-1/${c.body.stack.id}`;
    assert.equal((await waitStack(s, stackUrl, settled))?.stack_status, 'CREATE_COMPLETE');
    // A second stack, deleted: soft-deleted stacks still answer by id.
    const d = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'gone', template: MEMBER });
    const goneUrl = `${s.heat}/stacks/gone/${d.body.stack.id}`;
    assert.equal((await call('DELETE', goneUrl, s.token)).status, 204);
    // A server fault injected through /_sim is part of the state.
    const vdu = (await call('GET', `${stackUrl}/resources/vdu`, s.token)).body.resource.physical_resource_id as string;
    const f = await call('POST', `${a.url}/_sim/servers/${vdu}/fail`, undefined, {}, { 'X-Sim-Admin-Secret': a.adminSecret });
    assert.equal(f.status, 200);
    const before = await view(s, stackUrl);
    const goneBefore = (await call('GET', goneUrl, s.token)).body;
    assert.equal(goneBefore.stack.stack_status, 'DELETE_COMPLETE');
    await a.close();

    const b = await start(dir);
    assert.equal(b.restored, true);
    const s2: Session = { ...s, heat: s.heat.replace(a.url, b.url), nova: s.nova.replace(a.url, b.url) };
    const t = await call('GET', `${b.authUrl}/auth/tokens`, s.token, undefined, { 'X-Subject-Token': s.token });
    assert.equal(t.status, 200, 'the token issued before the restart is still valid');
    const restored: Doc = await view(s2, stackUrl.replace(a.url, b.url));
    assert.deepEqual(restored, rebased(before, a, b), 'every answer is the same (but for the port in links)');
    assert.deepEqual((await call('GET', goneUrl.replace(a.url, b.url), s.token)).body, rebased(goneBefore, a, b));
    const failed = (restored.servers.servers as Doc[]).find((x) => x.id === vdu);
    assert.equal(failed.status, 'ERROR', 'the injected fault survived');

    // The restored stack heals like any other: mark the failed server and a group member unhealthy, PATCH.
    const member = (restored.nestedResources.resources as Doc[])[0];
    const nestedUrl = `${s2.heat}/stacks/${restored.nested.stack.stack_name}/${restored.nested.stack.id}`;
    assert.equal((await call('PATCH', `${nestedUrl}/resources/${member.resource_name}`, s.token, { mark_unhealthy: true, resource_status_reason: 'heal' })).status, 200);
    assert.equal((await call('PATCH', `${stackUrl.replace(a.url, b.url)}/resources/vdu`, s.token, { mark_unhealthy: true, resource_status_reason: 'heal' })).status, 200);
    assert.equal((await call('PATCH', stackUrl.replace(a.url, b.url), s.token, {})).status, 202);
    assert.equal((await waitStack(s2, stackUrl.replace(a.url, b.url), settled))?.stack_status, 'UPDATE_COMPLETE');
    const healed = await view(s2, stackUrl.replace(a.url, b.url));
    const newVdu = (healed.resources.resources as Doc[]).find((r) => r.resource_name === 'vdu').physical_resource_id;
    assert.notEqual(newVdu, vdu, 'the failed server was replaced');
    const members = (r: Doc) => (r.nestedResources.resources as Doc[]).map((x) => x.physical_resource_id as string).sort();
    const kept = members(restored).filter((id) => id !== member.physical_resource_id);
    assert.deepEqual(members(healed).filter((id) => kept.includes(id)), kept, 'the healthy member was kept');
    assert.ok(!members(healed).includes(member.physical_resource_id), 'the marked member was replaced');
    const ids = (healed.servers.servers as Doc[]).map((x) => x.id as string);
    assert.ok(!ids.includes(vdu) && ids.includes(newVdu), 'Nova agrees');
  });

  it('a stack update in progress when the sim stopped completes after the restart', async () => {
    const dir = join(work, 'in-progress');
    const a = await start(dir);
    const s = await login(a);
    const c = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'busy', template: MEMBER });
    const url = `${s.heat}/stacks/busy/${c.body.stack.id}`;
    const old = (await call('GET', `${url}/resources/member`, s.token)).body.resource.physical_resource_id as string;
    assert.equal((await call('PATCH', `${url}/resources/member`, s.token, { mark_unhealthy: true, resource_status_reason: 'dead' })).status, 200);
    const hold = a.holdStackUpdates();
    assert.equal((await call('PATCH', url, s.token, {})).status, 202);
    await hold.reached;
    assert.equal((await call('GET', url, s.token)).body.stack.stack_status, 'UPDATE_IN_PROGRESS');
    await a.close(); // the held update never ran in this sim

    const b = await start(dir, 20);
    const s2: Session = { ...s, heat: s.heat.replace(a.url, b.url) };
    const url2 = url.replace(a.url, b.url);
    const first = (await call('GET', url2, s.token)).body.stack;
    assert.equal(first.stack_status, 'UPDATE_IN_PROGRESS', 'restored in progress');
    assert.equal((await waitStack(s2, url2, settled))?.stack_status, 'UPDATE_COMPLETE', 'and then it completes');
    const now = (await call('GET', `${url2}/resources/member`, s.token)).body.resource;
    assert.notEqual(now.physical_resource_id, old, 'the marked server was replaced');
    assert.equal(now.resource_status, 'CREATE_COMPLETE');
  });

  it('changes are saved shortly after they happen, without a clean close (what a kill -9 keeps)', async () => {
    const dir = join(work, 'debounce');
    const a = await start(dir);
    const s = await login(a);
    const c = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'saved', template: MEMBER });
    assert.equal(c.status, 201);
    const file = join(dir, 'openstack.json');
    const deadline = Date.now() + 5000;
    let saved: Doc;
    for (;;) {
      try {
        saved = JSON.parse(readFileSync(file, 'utf8'));
        if (saved.state.heat.stacks.some((x: Doc) => x.id === c.body.stack.id && x.status === 'COMPLETE')) break;
      } catch {
        // not written yet
      }
      assert.ok(Date.now() < deadline, 'the state file was written');
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(saved.format, 'vnfm-sim-state');
    assert.equal(saved.sim, 'openstack');
    assert.equal(saved.version, 1);
    assert.equal(saved.state.compute.servers.length, 1);
  });

  it('an unusable state file stops the start with a message naming it; without stateDir nothing is read or written', async () => {
    const dir = join(work, 'corrupt');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'openstack.json'), '{"format":"vnfm-sim-state","sim":"openstack","version":1,"state":');
    await assert.rejects(startOpenStackSim({ stateDir: dir }), (e: Error) => e.name === 'SimStateError' && e.message.includes(join(dir, 'openstack.json')));
    writeFileSync(join(dir, 'openstack.json'), JSON.stringify({ format: 'vnfm-sim-state', sim: 'openstack', version: 99, savedAt: '', state: {} }));
    await assert.rejects(startOpenStackSim({ stateDir: dir }), /format version 99/);
    const plain = await startOpenStackSim();
    running.push(plain);
    assert.equal(plain.restored, false);
  });
});
