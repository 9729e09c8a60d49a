import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { basicLcmsMin, call, login, nfvFor, type Session, settled, stackOf, waitStack } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: resource rows are free-form JSON
type Row = any;

/** Rows keyed `parent_resource/resource_name` ('' parent for the top stack), like the real-heat exercise does. */
function index(rows: Row[]): Map<string, Row> {
  return new Map(rows.map((r) => [`${r.parent_resource ?? ''}/${r.resource_name}`, r]));
}

describe('OpenStack sim: Heat with Tacker basic_lcms_min', () => {
  let sim: OpenStackSim;
  let s: Session;
  let stackUrl: string;
  const name = 'vnf-1b2c3d4e';

  const rows = async (depth = 2): Promise<Row[]> => {
    const r = await call('GET', `${stackUrl}/resources?nested_depth=${depth}`, s.token);
    assert.equal(r.status, 200);
    return r.body.resources;
  };
  const servers = async (): Promise<Row[]> => (await call('GET', `${s.nova}/servers/detail`, s.token)).body.servers;
  const update = async (body: unknown): Promise<Row> => {
    const r = await call('PATCH', stackUrl, s.token, body);
    assert.equal(r.status, 202);
    const st = await waitStack(s, stackUrl, settled);
    assert.equal(st.stack_status, 'UPDATE_COMPLETE', st.stack_status_reason);
    return st;
  };

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 5 });
    s = await login(sim);
  });
  after(async () => {
    await sim.close();
  });

  it('creates the stack: 2 AutoScalingGroup members + standalone VDU2, Nova servers ACTIVE', async () => {
    const { template, files } = basicLcmsMin();
    const r = await call('POST', `${s.heat}/stacks`, s.token, {
      stack_name: name,
      template,
      files,
      parameters: { nfv: nfvFor(2) },
      disable_rollback: true,
      timeout_mins: 20,
    });
    assert.equal(r.status, 201);
    assert.match(r.body.stack.id, /^[0-9a-f-]{36}$/);
    assert.equal(r.body.stack.links[0].rel, 'self');
    // Heat answers a name-only lookup with 302 to name/id.
    const lookup = await call('GET', `${s.heat}/stacks/${name}`, s.token);
    assert.equal(lookup.status, 302);
    stackUrl = lookup.headers.get('location') as string;
    assert.equal(stackUrl, `${s.heat}/stacks/${name}/${r.body.stack.id}`);
    const st = await waitStack(s, stackUrl, settled);
    assert.equal(st.stack_status, 'CREATE_COMPLETE');
    assert.equal(JSON.parse(st.parameters.nfv).VDU.VDU1.desired_capacity, 2);
    const list = await servers();
    assert.equal(list.length, 3);
    assert.deepEqual(list.map((x: Row) => x.name).sort(), ['VDU1', 'VDU1', 'VDU2']);
    for (const srv of list) {
      assert.equal(srv.status, 'ACTIVE');
      assert.match(srv['OS-EXT-SRV-ATTR:host'], /^compute-[1-3]$/);
      const addrs = Object.values(srv.addresses).flat() as Row[];
      assert.equal(addrs.length, 1);
      assert.match(addrs[0].addr, /^192\.168\.5\.\d+$/);
    }
    // The sample puts every server in one affinity group: one host for all.
    assert.equal(new Set(list.map((x: Row) => x['OS-EXT-SRV-ATTR:host'])).size, 1);
  });

  it('lists resources with nested_depth=2 in Heat shape (parent_resource, stack/nested links)', async () => {
    const all = await rows(2);
    const top = all.filter((x) => x.parent_resource === undefined);
    assert.deepEqual(top.map((x) => x.resource_name).sort(), [
      'VDU1_scale_group',
      'VDU2',
      'VDU2_CP1',
      'internalVL3',
      'internalVL3_subnet',
      'nfvi_node_affinity',
    ]);
    const members = all.filter((x) => x.parent_resource === 'VDU1_scale_group');
    assert.equal(members.length, 2);
    for (const m of members) {
      assert.match(m.resource_name, /^[a-z2-7]{12}$/);
      assert.equal(m.resource_type, 'VDU1.yaml');
      assert.ok(m.links.some((l: Row) => l.rel === 'nested'));
      const inner = all.filter((x) => x.parent_resource === m.resource_name);
      assert.deepEqual(inner.map((x) => x.resource_name).sort(), ['VDU1', 'VDU1_CP1']);
      const vdu1 = inner.find((x) => x.resource_name === 'VDU1');
      assert.equal(vdu1.resource_type, 'OS::Nova::Server');
      // The `stack` link names the member's own nested stack (what Tacker keeps as metadata.stack_id).
      const [sname, sid] = stackOf(vdu1).split('/');
      assert.equal(sid, m.physical_resource_id);
      assert.ok(sname?.startsWith(`${name}-VDU1_scale_group-`));
      assert.equal(vdu1.resource_status, 'CREATE_COMPLETE');
    }
    const vdu2 = top.find((x) => x.resource_name === 'VDU2');
    assert.equal(stackOf(vdu2), stackUrl.split('/').slice(-2).join('/'));
    assert.deepEqual(
      Object.keys(vdu2).sort(),
      [
        'creation_time',
        'links',
        'logical_resource_id',
        'physical_resource_id',
        'required_by',
        'resource_name',
        'resource_status',
        'resource_status_reason',
        'resource_type',
        'updated_time',
      ],
    );
    assert.deepEqual(top.find((x) => x.resource_name === 'VDU2_CP1').required_by, ['VDU2']);
    const novaIds = new Set((await servers()).map((x: Row) => x.id));
    for (const r of all.filter((x) => x.resource_type === 'OS::Nova::Server')) assert.ok(novaIds.has(r.physical_resource_id));
    // resource show carries attributes (Tacker reads port fixed_ips from here).
    const port = await call('GET', `${stackUrl}/resources/VDU2_CP1`, s.token);
    assert.equal(port.status, 200);
    assert.match(port.body.resource.attributes.fixed_ips[0].ip_address, /^192\.168\.5\./);
  });

  it('mark unhealthy + PATCH update replaces exactly the marked servers', async () => {
    const before = index(await rows(2));
    const member = [...before.values()].find((x) => x.parent_resource === 'VDU1_scale_group');
    const inner = before.get(`${member.resource_name}/VDU1`);
    const mark = await call('PATCH', `${s.heat}/stacks/${stackOf(inner)}/resources/VDU1`, s.token, {
      mark_unhealthy: true,
      resource_status_reason: 'marked by tacker',
    });
    assert.equal(mark.status, 200);
    const mark2 = await call('PATCH', `${stackUrl}/resources/VDU2`, s.token, { mark_unhealthy: true, resource_status_reason: 'marked by tacker' });
    assert.equal(mark2.status, 200);
    const marked = index(await rows(2));
    assert.equal(marked.get(`${member.resource_name}/VDU1`).resource_status, 'CHECK_FAILED');
    assert.equal(marked.get(`${member.resource_name}/VDU1`).resource_status_reason, 'marked by tacker');
    assert.equal(marked.get('/VDU2').resource_status, 'CHECK_FAILED');
    const missing = await call('PATCH', `${stackUrl}/resources/NOPE`, s.token, { mark_unhealthy: true, resource_status_reason: 'x' });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.type, 'ResourceNotFound');

    await update({ parameters: { nfv: nfvFor(2) } });
    const afterRows = index(await rows(2));
    assert.equal(afterRows.size, before.size);
    const changed = [...afterRows.entries()].filter(([k, v]) => before.get(k)?.physical_resource_id !== v.physical_resource_id).map(([k]) => k);
    assert.deepEqual(changed.sort(), [`${member.resource_name}/VDU1`, '/VDU2'].sort());
    assert.equal(afterRows.get('/VDU2').resource_status, 'CREATE_COMPLETE');
    // The member stack itself is kept (same id), only its server is new.
    assert.equal(afterRows.get(`VDU1_scale_group/${member.resource_name}`).physical_resource_id, member.physical_resource_id);
    const list = await servers();
    const ids = new Set(list.map((x: Row) => x.id));
    assert.equal(list.length, 3);
    assert.ok(!ids.has(inner.physical_resource_id), 'old server deleted');
    assert.ok(!ids.has(before.get('/VDU2').physical_resource_id), 'old VDU2 deleted');
    assert.ok(ids.has(afterRows.get(`${member.resource_name}/VDU1`).physical_resource_id));
  });

  it('scales out and in through desired_capacity (scale-in drops the marked member)', async () => {
    await update({ parameters: { nfv: nfvFor(3) } });
    let members = (await rows(1)).filter((x) => x.parent_resource === 'VDU1_scale_group');
    assert.equal(members.length, 3);
    assert.equal((await servers()).length, 4);
    // Tacker-style scale-in: mark the newest member unhealthy in the group's stack, then update with -1.
    members.sort((a, b) => a.creation_time.localeCompare(b.creation_time));
    const victim = members[members.length - 1] as Row;
    const mark = await call('PATCH', `${s.heat}/stacks/${stackOf(victim)}/resources/${victim.resource_name}`, s.token, {
      mark_unhealthy: true,
      resource_status_reason: 'scale in',
    });
    assert.equal(mark.status, 200);
    const st = await update({ parameters: { nfv: nfvFor(2) } });
    assert.equal(JSON.parse(st.parameters.nfv).VDU.VDU1.desired_capacity, 2);
    members = (await rows(1)).filter((x) => x.parent_resource === 'VDU1_scale_group');
    assert.equal(members.length, 2);
    assert.ok(!members.some((m) => m.resource_name === victim.resource_name));
    assert.equal((await servers()).length, 3);
  });

  it('keeps template and files on PATCH {} and updates a server flavor in place', async () => {
    const vdu2Before = index(await rows(0)).get('/VDU2').physical_resource_id;
    await update({ parameters: { nfv: nfvFor(2, 'm1.small') } });
    const vdu2After = index(await rows(0)).get('/VDU2');
    assert.equal(vdu2After.physical_resource_id, vdu2Before);
    assert.equal(vdu2After.resource_status, 'UPDATE_COMPLETE');
    const srv = await call('GET', `${s.nova}/servers/${vdu2Before}`, s.token, undefined, { 'X-OpenStack-Nova-API-Version': '2.79' });
    assert.equal(srv.body.server.flavor.original_name, 'm1.small');
    await update({});
    const files = await call('GET', `${stackUrl}/files`, s.token);
    assert.deepEqual(Object.keys(files.body), ['VDU1.yaml']);
    const tmpl = await call('GET', `${stackUrl}/template`, s.token);
    assert.equal(tmpl.body.resources.VDU1_scale_group.type, 'OS::Heat::AutoScalingGroup');
    const env = await call('GET', `${stackUrl}/environment`, s.token);
    assert.deepEqual(env.body.resource_registry, { resources: {} });
  });

  it('deletes: 204, DELETE_COMPLETE by id, 404 by name, servers gone', async () => {
    const del = await call('DELETE', stackUrl, s.token);
    assert.equal(del.status, 204);
    const st = await waitStack(s, stackUrl, (x) => x === 'DELETE_COMPLETE');
    assert.equal(st.stack_status, 'DELETE_COMPLETE');
    assert.equal((await call('GET', `${s.heat}/stacks/${name}`, s.token)).status, 404);
    const list = await call('GET', `${s.heat}/stacks`, s.token);
    assert.equal(list.body.stacks.length, 0);
    const again = await call('GET', stackUrl, s.token);
    assert.equal(again.status, 200);
    assert.equal(again.body.stack.stack_status, 'DELETE_COMPLETE');
    assert.equal((await servers()).length, 0);
    assert.equal((await call('DELETE', stackUrl, s.token)).status, 404);
  });
});

describe('OpenStack sim: Heat with the in-repo vm-basic sample (volumes in group members)', () => {
  it('creates with each volume attached to the server beside it, and deletes everything', async () => {
    const sim = await startOpenStackSim({ heatDelayMs: 0 });
    try {
      const s = await login(sim);
      const base = new URL('../../../samples/vm-basic/BaseHOT/simple/', import.meta.url);
      const r = await call('POST', `${s.heat}/stacks`, s.token, {
        stack_name: 'vnf-vm-basic',
        template: readFileSync(new URL('sample.yaml', base), 'utf8'),
        files: { 'VDU1.yaml': readFileSync(new URL('nested/VDU1.yaml', base), 'utf8') },
        parameters: {
          nfv: { VDU: { VDU1: { computeFlavourId: 'm1.tiny', vcImageId: 'cirros', desired_capacity: 2 }, VDU2: { computeFlavourId: 'm1.tiny', vcImageId: 'cirros' } } },
        },
      });
      assert.equal(r.status, 201);
      const url = `${s.heat}/stacks/vnf-vm-basic/${r.body.stack.id}`;
      const st = await waitStack(s, url, settled);
      assert.equal(st.stack_status, 'CREATE_COMPLETE', st.stack_status_reason);
      const all: Row[] = (await call('GET', `${url}/resources?nested_depth=2`, s.token)).body.resources;
      const volumes = all.filter((x) => x.resource_type === 'OS::Cinder::Volume');
      assert.equal(volumes.length, 3);
      const srv = (await call('GET', `${s.nova}/servers/detail`, s.token)).body.servers;
      assert.equal(srv.length, 3);
      for (const x of srv) assert.equal(x['os-extended-volumes:volumes_attached'].length, 1);
      // Volumes sit beside their server (same parent_resource), as Tacker's storageResourceIds expects.
      const vdu1 = all.find((x) => x.resource_name === 'VDU1') as Row;
      const vol = all.find((x) => x.resource_name === 'VirtualStorage1' && x.parent_resource === vdu1.parent_resource) as Row;
      const server = srv.find((x: Row) => x.id === vdu1.physical_resource_id);
      assert.equal(server['os-extended-volumes:volumes_attached'][0].id, vol.physical_resource_id);
      const del = await call('DELETE', url, s.token);
      assert.equal(del.status, 204);
      assert.equal((await waitStack(s, url, (x) => x === 'DELETE_COMPLETE')).stack_status, 'DELETE_COMPLETE');
      assert.equal((await call('GET', `${s.nova}/servers`, s.token)).body.servers.length, 0);
    } finally {
      await sim.close();
    }
  });
});
