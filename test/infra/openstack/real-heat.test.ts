/**
 * Integration test against a REAL Keystone + Heat (see docs/real-heat.md): create a Tacker-like
 * stack, VNFC heal at nested depth 2 (mark one AutoScalingGroup member's server unhealthy in its
 * member stack, PATCH the top stack), scale by parameter, delete. Test stage
 * `real-heat` (test/helpers/stages.ts). Prints the time of each step.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { HeatClient, type HeatResource, type HeatStackRef } from '../../../src/infra/openstack/heat-client.ts';
import { KeystoneAuth } from '../../../src/infra/openstack/keystone-auth.ts';
import { OpenStackError } from '../../../src/infra/openstack/openstack-error.ts';
import { STAND_IN_TEMPLATES_DIR } from '../../helpers/fixtures.ts';
import { realHeatSettings, stage } from '../../helpers/stages.ts';

const settings = realHeatSettings();
const templatesDir = STAND_IN_TEMPLATES_DIR;
const authUrl = settings.authUrl;
const realHeat = await stage('real-heat');

const timings: [string, number][] = [];
async function step<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const out = await fn();
  const ms = performance.now() - t0;
  timings.push([label, ms]);
  console.log(`# real-heat step ${label.padEnd(28)} ${(ms / 1000).toFixed(2)} s`);
  return out;
}

/** 'parent_resource/resource_name' -> row. */
function index(rows: HeatResource[]): Map<string, HeatResource> {
  return new Map(rows.map((r) => [`${r.parent_resource ?? ''}/${r.resource_name}`, r]));
}

describe('real Keystone + Heat', { timeout: 180_000 }, () => {
  const opts = { skip: realHeat.skip };
  let auth: KeystoneAuth;
  let heat: HeatClient;
  let ref: HeatStackRef | undefined;
  const name = `vnfm-it-${process.pid}-${Date.now().toString(36)}`;
  const nfv = (capacity: number) => ({
    VDU: { VDU1: { desired_capacity: capacity, computeFlavourId: 'm1.tiny', vcImageId: 'cirros' } },
    CP: { VDU1_CP1: { network: 'net0' } },
  });

  before(() => {
    auth = new KeystoneAuth({
      authUrl,
      username: settings.username,
      password: settings.password,
      projectName: settings.project,
      userDomainName: settings.userDomain,
      projectDomainName: settings.projectDomain,
      region: settings.region,
    });
    heat = new HeatClient({ auth });
  });

  after(async () => {
    if (ref !== undefined) {
      // best effort, for a run that failed half-way
      try {
        if (await heat.deleteStack(ref)) await heat.waitForDeleted(ref, { timeoutMs: 60_000 });
      } catch {
        /* reported by the failing test already */
      }
    }
    if (timings.length > 0) {
      console.log(`# real-heat timings: ${timings.map(([l, ms]) => `${l}=${(ms / 1000).toFixed(2)}s`).join(' ')}`);
    }
  });

  it('authenticates, finds Heat in the catalog, validates a token', opts, async () => {
    const token = await step('token', () => auth.getToken());
    assert.ok(token.length > 20);
    const url = await auth.endpoint('orchestration');
    assert.match(url, new RegExp(`/v1/${await auth.projectId()}$`));
    const info = await step('validate token', () => auth.validateToken(token));
    assert.equal(info?.userName, settings.username);
    assert.ok(info?.roles.includes('admin'));
    assert.equal(await auth.validateToken('gAAAAABnot-a-token-0000000000000000000000000000'), null);
  });

  it('creates, heals one VNFC at nested depth 2, scales by parameter and deletes a Tacker-like stack', opts, async () => {
    const files: Record<string, string> = {};
    for (const f of readdirSync(templatesDir)) {
      if (f === 'VDU1.yaml' || f.startsWith('fake_')) files[f] = readFileSync(join(templatesDir, f), 'utf8');
    }
    const environment = parseYaml(readFileSync(join(templatesDir, 'env.yaml'), 'utf8')) as Record<string, unknown>;
    const template = readFileSync(join(templatesDir, 'tacker_like.yaml'), 'utf8');

    // --- create
    const created = await step('create (until CREATE_COMPLETE)', async () => {
      const r = await heat.createStack({ name, template, files, environment, parameters: { nfv: nfv(2) }, timeoutMins: 10 });
      ref = { name: r.name, id: r.id };
      return heat.waitForStatus(r, { target: 'CREATE_COMPLETE', timeoutMs: 90_000 });
    });
    assert.equal(created.stack_status, 'CREATE_COMPLETE');
    assert.ok(ref);
    const top = ref;

    // same name again: 409 StackExists, surfaced with Heat's type and message
    await assert.rejects(heat.createStack({ name, template: { heat_template_version: '2021-04-16' } }), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.status, 409);
      assert.equal(e.errorType, 'StackExists');
      assert.match(e.message, /already exists/);
      return true;
    });
    // by name: Heat answers 302, the client resolves it
    assert.equal((await heat.getStack(name)).id, top.id);

    // --- nested listing
    const rows = await step('list resources depth 2', () => heat.listResources(top, { nestedDepth: 2 }));
    const members = rows.filter((r) => r.parent_resource === 'VDU1' && r.resource_type === 'VDU1.yaml');
    const servers = rows.filter((r) => r.resource_type === 'OS::Nova::Server');
    const ports = rows.filter((r) => r.resource_type === 'OS::Neutron::Port');
    assert.equal(members.length, 2, 'two ASG members');
    assert.equal(servers.length, 2);
    assert.equal(ports.length, 2);
    const asg = rows.find((r) => r.resource_name === 'VDU1' && r.parent_resource === undefined);
    assert.equal(asg?.resource_type, 'OS::Heat::AutoScalingGroup');
    for (const r of rows) {
      assert.ok(r.physical_resource_id !== '', 'every row has a physical id');
      assert.ok(['self', 'stack'].every((rel) => r.links.some((l) => l.rel === rel)));
    }
    // a server row lives in its member's nested stack; the member row's `nested` link points there
    const victim = servers[0] as HeatResource;
    const victimStack = HeatClient.stackOfResource(victim);
    const victimMember = members.find((m) => m.resource_name === victim.parent_resource) as HeatResource;
    assert.deepEqual(HeatClient.nestedStackOfResource(victimMember), victimStack);
    assert.equal(victimStack.id, victimMember.physical_resource_id);

    // --- VNFC heal: mark the server unhealthy in its member stack, PATCH the top stack
    const before = index(rows);
    await assert.rejects(heat.markUnhealthy(victimStack, 'NoSuchResource', 'x'), (e: unknown) => OpenStackError.isStatus(e, 404, 'ResourceNotFound'));
    await step('mark unhealthy', () => heat.markUnhealthy(victimStack, victim.resource_name, 'VNFC heal by integration test'));
    assert.equal((await heat.getResource(victimStack, victim.resource_name)).resource_status, 'CHECK_FAILED');
    const healed = await step('heal: PATCH until UPDATE_COMPLETE', async () => {
      await heat.updateStackPatch(top, {});
      return heat.waitForStatus(top, { target: 'UPDATE_COMPLETE', timeoutMs: 90_000 });
    });
    assert.equal(healed.stack_status, 'UPDATE_COMPLETE');
    const afterHeal = index(await heat.listResources(top, { nestedDepth: 2 }));
    assert.equal(afterHeal.size, before.size);
    const changed = [...before.entries()].filter(([k, r]) => afterHeal.get(k)?.physical_resource_id !== r.physical_resource_id).map(([k]) => k);
    assert.deepEqual(changed, [`${victim.parent_resource}/${victim.resource_name}`], 'only the healed server got a new physical id');

    // --- scale out by parameter (Tacker v2 style)
    const scaled = await step('scale 2->3: PATCH parameters', async () => {
      await heat.updateStackPatch(top, { parameters: { nfv: nfv(3) } });
      return heat.waitForStatus(top, { target: 'UPDATE_COMPLETE', timeoutMs: 90_000 });
    });
    assert.equal(scaled.stack_status, 'UPDATE_COMPLETE');
    const afterScale = await heat.listResources(top, { nestedDepth: 2 });
    const scaledMembers = afterScale.filter((r) => r.parent_resource === 'VDU1' && r.resource_type === 'VDU1.yaml');
    assert.equal(scaledMembers.length, 3);
    for (const m of members) {
      assert.equal(scaledMembers.find((x) => x.resource_name === m.resource_name)?.physical_resource_id, m.physical_resource_id, 'old members kept');
    }
    assert.equal(afterScale.filter((r) => r.resource_type === 'OS::Nova::Server').length, 3);

    // --- delete
    await step('delete (until name is free)', async () => {
      assert.equal(await heat.deleteStack(top), true);
      await heat.waitForDeleted(top, { timeoutMs: 90_000 });
    });
    ref = undefined;
    // soft delete: by name/id Heat still answers 200 DELETE_COMPLETE; by name it is gone (404)
    assert.equal((await heat.getStackByNameId(top.name, top.id)).stack_status, 'DELETE_COMPLETE');
    assert.equal(await heat.findStack(name), null);
    assert.equal(await heat.deleteStack(name), false);
  });
});
