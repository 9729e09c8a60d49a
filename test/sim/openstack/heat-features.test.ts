import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, realHeatTemplate, type Session, settled, stackOf, waitStack } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: resource rows are free-form JSON
type Row = any;

describe('OpenStack sim: Heat features', () => {
  let sim: OpenStackSim;
  let s: Session;
  const admin = (): Record<string, string> => ({ 'X-Sim-Admin-Secret': sim.adminSecret });

  const create = async (name: string, template: unknown, extra: Record<string, unknown> = {}): Promise<{ url: string; stack: Row }> => {
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: name, template, ...extra });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const url = `${s.heat}/stacks/${name}/${r.body.stack.id}`;
    return { url, stack: await waitStack(s, url, settled) };
  };

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 5 });
    s = await login(sim);
  });
  after(async () => {
    await sim.close();
  });

  it('rejects invalid templates at POST time with Heat error documents', async () => {
    const unknown = await call('POST', `${s.heat}/stacks`, s.token, {
      stack_name: 'bad1',
      template: { heat_template_version: '2021-04-16', resources: { x: { type: 'Foo::Bar' } } },
    });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.type, 'StackValidationFailed');
    assert.equal(unknown.body.error.message, 'The Resource Type (Foo::Bar) could not be found.');
    assert.equal(unknown.body.title, 'Bad Request');
    const missingParam = await call('POST', `${s.heat}/stacks`, s.token, {
      stack_name: 'bad2',
      template: { heat_template_version: '2021-04-16', parameters: { p: { type: 'string' } }, resources: {} },
    });
    assert.equal(missingParam.status, 400);
    assert.equal(missingParam.body.error.type, 'UserParameterMissing');
    const missingFile = await call('POST', `${s.heat}/stacks`, s.token, {
      stack_name: 'bad3',
      template: { heat_template_version: '2021-04-16', resources: { x: { type: 'missing.yaml' } } },
    });
    assert.equal(missingFile.status, 400);
    assert.match(missingFile.body.error.message, /Could not fetch remote template "missing.yaml"/);
    const badRef = await call('POST', `${s.heat}/stacks`, s.token, {
      stack_name: 'bad4',
      template: { heat_template_version: '2021-04-16', resources: { x: { type: 'OS::Heat::None', properties: { a: { get_resource: 'y' } } } } },
    });
    assert.equal(badRef.status, 400);
    const badProp = await call('POST', `${s.heat}/stacks`, s.token, {
      stack_name: 'bad5',
      template: { heat_template_version: '2021-04-16', resources: { x: { type: 'OS::Neutron::Net', properties: { colour: 'red' } } } },
    });
    assert.equal(badProp.status, 400);
    assert.match(badProp.body.error.message, /Unknown Property colour/);
    assert.equal((await call('GET', `${s.heat}/stacks`, s.token)).body.stacks.length, 0);
  });

  it('reports runtime failures as CREATE_FAILED with a reason, and 409 on a duplicate name', async () => {
    const tmpl = { heat_template_version: '2021-04-16', resources: { t: { type: 'OS::Heat::TestResource', properties: { fail: true } } } };
    const { url, stack } = await create('fails', tmpl);
    assert.equal(stack.stack_status, 'CREATE_FAILED');
    assert.match(stack.stack_status_reason, /^Resource CREATE failed: .*resources\.t: /);
    const dup = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'fails', template: tmpl });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.error.type, 'StackExists');
    const res = await call('GET', `${url}/resources`, s.token);
    assert.equal(res.body.resources[0].resource_status, 'CREATE_FAILED');
    assert.equal((await call('DELETE', url, s.token)).status, 204);
    await waitStack(s, url, (x) => x === 'DELETE_COMPLETE');
  });

  it('fails server creation when no compute host is up (No valid host)', async () => {
    for (const h of sim.hosts) assert.equal((await call('POST', `${sim.url}/_sim/hosts/${h}/fail`, undefined, {}, admin())).status, 200);
    const { url, stack } = await create('nohost', {
      heat_template_version: '2021-04-16',
      resources: { srv: { type: 'OS::Nova::Server', properties: { flavor: 'm1.tiny', image: 'cirros', networks: [{ network: 'net0' }] } } },
    });
    assert.equal(stack.stack_status, 'CREATE_FAILED');
    assert.match(stack.stack_status_reason, /No valid host was found/);
    for (const h of sim.hosts) await call('POST', `${sim.url}/_sim/hosts/${h}/recover`, undefined, {}, admin());
    const retry = await call('PATCH', url, s.token, {});
    assert.equal(retry.status, 202);
    const st = await waitStack(s, url, settled);
    assert.equal(st.stack_status, 'UPDATE_COMPLETE');
    await call('DELETE', url, s.token);
    await waitStack(s, url, (x) => x === 'DELETE_COMPLETE');
  });

  it('makes the next update fail on request, then recovers on the following update', async () => {
    const { url } = await create('upd-fault', realHeatTemplate('simple.yaml'), { parameters: { label: 'a' } });
    const inj = await call('POST', `${sim.url}/_sim/heat/failures`, undefined, { operation: 'update', count: 1, reason: 'injected: disk full' }, admin());
    assert.equal(inj.status, 200);
    assert.equal(inj.body.pending.update, 1);
    assert.equal((await call('PATCH', url, s.token, { parameters: { label: 'b' } })).status, 202);
    const failed = await waitStack(s, url, settled);
    assert.equal(failed.stack_status, 'UPDATE_FAILED');
    assert.equal(failed.stack_status_reason, 'Resource UPDATE failed: injected: disk full');
    assert.equal((await call('PATCH', url, s.token, {})).status, 202);
    const ok = await waitStack(s, url, settled);
    assert.equal(ok.stack_status, 'UPDATE_COMPLETE');
    assert.equal(ok.outputs.find((o: Row) => o.output_key === 'test_output').output_value, 'b');
    await call('DELETE', url, s.token);
  });

  it('PATCH merges parameters, PUT replaces them (defaults come back)', async () => {
    const { url, stack } = await create('put-vs-patch', realHeatTemplate('simple.yaml'), { parameters: { label: 'first' } });
    assert.equal(stack.parameters.label, 'first');
    const rand = stack.outputs.find((o: Row) => o.output_key === 'rand_value').output_value;
    assert.equal(typeof rand, 'string');
    assert.equal(rand.length, 12);
    await call('PATCH', url, s.token, { parameters: {} });
    assert.equal((await waitStack(s, url, settled)).parameters.label, 'first');
    const put = await call('PUT', url, s.token, { template: realHeatTemplate('simple.yaml'), parameters: {} });
    assert.equal(put.status, 202);
    const st = await waitStack(s, url, settled);
    assert.equal(st.stack_status, 'UPDATE_COMPLETE');
    assert.equal(st.parameters.label, 'smoke');
    assert.equal(st.outputs.find((o: Row) => o.output_key === 'rand_value').output_value, rand, 'unchanged RandomString kept');
    const putNoTemplate = await call('PUT', url, s.token, { parameters: {} });
    assert.equal(putNoTemplate.status, 400);
    const out = await call('GET', `${url}/outputs/test_output`, s.token);
    assert.deepEqual(out.body.output.output_value, 'smoke');
    const events = await call('GET', `${url}/events?sort_dir=asc`, s.token);
    assert.equal(events.body.events[0].resource_status, 'CREATE_IN_PROGRESS');
    assert.equal(events.body.events[0].resource_name, 'put-vs-patch');
    await call('DELETE', url, s.token);
  });

  it('evaluates intrinsic functions and conditions', async () => {
    const tmpl = {
      heat_template_version: '2021-04-16',
      parameters: {
        env: { type: 'string', default: 'prod' },
        cfg: { type: 'json', default: { a: { b: [10, 20] } } },
        names: { type: 'comma_delimited_list', default: 'x, y' },
        n: { type: 'number', default: 3 },
        flag: { type: 'boolean', default: 'yes' },
      },
      conditions: { is_prod: { equals: [{ get_param: 'env' }, 'prod'] }, not_prod: { not: 'is_prod' } },
      resources: {
        v: { type: 'OS::Heat::Value', properties: { value: { str_replace: { template: 'h-$e-$n', params: { $e: { get_param: 'env' }, $n: { get_param: 'n' } } } } } },
        only_dev: { type: 'OS::Heat::None', condition: 'not_prod' },
      },
      outputs: {
        joined: { value: { list_join: ['+', { get_param: 'names' }, ['z']] } },
        path: { value: { get_param: ['cfg', 'a', 'b', 1] } },
        missing: { value: { get_param: ['cfg', 'nope', 'x'] } },
        cond: { value: { if: ['is_prod', 'P', 'D'] } },
        v: { value: { get_attr: ['v', 'value'] } },
        flag: { value: { get_param: 'flag' } },
        merged: { value: { map_merge: [{ a: 1 }, { b: 2 }] } },
        dev: { value: { get_resource: 'only_dev' } },
        rep: { value: { repeat: { for_each: { '%i%': [1, 2] }, template: 'n%i%' } } },
      },
    };
    const { url, stack } = await create('functions', tmpl);
    assert.equal(stack.stack_status, 'CREATE_COMPLETE', stack.stack_status_reason);
    const out = Object.fromEntries(stack.outputs.map((o: Row) => [o.output_key, o.output_value]));
    assert.equal(out.joined, 'x+y+z');
    assert.equal(out.path, 20);
    assert.equal(out.missing, '');
    assert.equal(out.cond, 'P');
    assert.equal(out.v, 'h-prod-3');
    assert.equal(out.flag, true);
    assert.deepEqual(out.merged, { a: 1, b: 2 });
    assert.equal(out.dev, null);
    assert.deepEqual(out.rep, ['n1', 'n2']);
    assert.equal(stack.parameters.cfg, '{"a": {"b": [10, 20]}}');
    assert.equal(stack.parameters.names, 'x,y');
    const res = await call('GET', `${url}/resources`, s.token);
    assert.deepEqual(res.body.resources.map((r: Row) => r.resource_name), ['v']);
    // Switching the condition on creates the resource on update.
    await call('PATCH', url, s.token, { parameters: { env: 'dev' } });
    await waitStack(s, url, settled);
    const res2 = await call('GET', `${url}/resources`, s.token);
    assert.deepEqual(res2.body.resources.map((r: Row) => r.resource_name).sort(), ['only_dev', 'v']);
    await call('DELETE', url, s.token);
  });

  it('runs the real-heat vnf.yaml: ResourceGroup members, ScalingPolicy signals, heal at depth 1 and 2', async () => {
    const { url, stack } = await create('rh-vnf', realHeatTemplate('vnf.yaml'), { files: { 'vdu.yaml': realHeatTemplate('vdu.yaml') } });
    assert.equal(stack.stack_status, 'CREATE_COMPLETE', stack.stack_status_reason);
    const rows = async (depth: number): Promise<Row[]> => (await call('GET', `${url}/resources?nested_depth=${depth}`, s.token)).body.resources;
    let all = await rows(2);
    // As Heat: a name filter selects per stack and descends only into what it selected; type filters the whole listing.
    const named: Row[] = (await call('GET', `${url}/resources?nested_depth=2&name=VDU&name=VDU3_group`, s.token)).body.resources;
    assert.deepEqual(named.map((x) => x.resource_name), ['VDU3_group'], 'no nested VDU under a parent the filter did not select');
    const vduType = all.find((x) => x.resource_name === 'VDU' && x.parent_resource === '0')?.resource_type as string;
    const typed: Row[] = (await call('GET', `${url}/resources?nested_depth=2&type=${encodeURIComponent(vduType)}`, s.token)).body.resources;
    assert.deepEqual(typed.map((x) => x.physical_resource_id).sort(), all.filter((x) => x.resource_type === vduType).map((x) => x.physical_resource_id).sort());
    assert.ok(typed.some((x) => x.parent_resource === '0') && typed.some((x) => x.parent_resource === '1'), 'resources of nested stacks are listed');
    const rg = all.filter((x) => x.parent_resource === 'VDU3_group');
    assert.deepEqual(rg.map((x) => x.resource_name).sort(), ['0', '1']);
    assert.ok(rg.every((x) => x.resource_type === 'vdu.yaml'));
    const rgMembers = stack.outputs.find((o: Row) => o.output_key === 'vdu3_members').output_value;
    assert.deepEqual(Object.keys(rgMembers).sort(), ['0', '1']);
    assert.equal(stack.outputs.find((o: Row) => o.output_key === 'vdu2_size').output_value, 1);

    // VNFC heal at depth 2 inside a ResourceGroup member: only that VDU gets a new id.
    const vdu1of1 = all.find((x) => x.parent_resource === '1' && x.resource_name === 'VDU');
    const vdu1of0 = all.find((x) => x.parent_resource === '0' && x.resource_name === 'VDU');
    assert.equal((await call('PATCH', `${s.heat}/stacks/${stackOf(vdu1of1)}/resources/VDU`, s.token, { mark_unhealthy: true, resource_status_reason: 'x' })).status, 200);
    await call('PATCH', url, s.token, {});
    assert.equal((await waitStack(s, url, settled)).stack_status, 'UPDATE_COMPLETE');
    all = await rows(2);
    assert.notEqual(all.find((x) => x.parent_resource === '1' && x.resource_name === 'VDU').physical_resource_id, vdu1of1.physical_resource_id);
    assert.equal(all.find((x) => x.parent_resource === '0' && x.resource_name === 'VDU').physical_resource_id, vdu1of0.physical_resource_id);

    // Whole-member heal at depth 1: the member gets a new nested stack.
    const member = all.find((x) => x.parent_resource === 'VDU2_group');
    await call('PATCH', `${s.heat}/stacks/${stackOf(member)}/resources/${member.resource_name}`, s.token, { mark_unhealthy: true, resource_status_reason: 'x' });
    await call('PATCH', url, s.token, {});
    await waitStack(s, url, settled);
    const replaced = (await rows(1)).find((x) => x.parent_resource === 'VDU2_group' && x.resource_name === member.resource_name);
    assert.notEqual(replaced.physical_resource_id, member.physical_resource_id);

    // Signals: scale out then in; each signal leaves one SIGNAL_COMPLETE event on the policy.
    const count = async (): Promise<number> => (await rows(1)).filter((x) => x.parent_resource === 'VDU2_group').length;
    const signal = async (policy: string): Promise<void> => {
      const before = (await call('GET', `${url}/resources/${policy}/events?sort_dir=asc`, s.token)).body.events.length;
      const r = await call('POST', `${url}/resources/${policy}/signal`, s.token);
      assert.equal(r.status, 200);
      for (let i = 0; i < 200; i++) {
        const ev = (await call('GET', `${url}/resources/${policy}/events?sort_dir=asc`, s.token)).body.events;
        if (ev.length > before) {
          assert.equal(ev[ev.length - 1].resource_status, 'SIGNAL_COMPLETE');
          return;
        }
        await new Promise((res) => setTimeout(res, 5));
      }
      assert.fail('no SIGNAL event');
    };
    await signal('VDU2_scale_out');
    assert.equal(await count(), 2);
    const meta = await call('GET', `${url}/resources/VDU2_group/metadata`, s.token);
    assert.equal(meta.body.metadata.scaling_in_progress, false);
    await signal('VDU2_scale_in');
    assert.equal(await count(), 1);
    assert.equal((await call('POST', `${url}/resources/VDU1/signal`, s.token)).status, 400);

    // Parameter-driven sizes.
    await call('PATCH', url, s.token, { parameters: { vdu2_desired_capacity: 3, vdu3_count: 3 } });
    const st = await waitStack(s, url, settled);
    assert.equal(st.outputs.find((o: Row) => o.output_key === 'vdu2_size').output_value, 3);
    assert.deepEqual(
      (await rows(1)).filter((x) => x.parent_resource === 'VDU3_group').map((x) => x.resource_name).sort(),
      ['0', '1', '2'],
    );
    await call('DELETE', url, s.token);
    await waitStack(s, url, (x) => x === 'DELETE_COMPLETE');
  });

  it('takes a stand-in environment (real-heat fake_*.yaml mappings) and still simulates natively', async () => {
    const env = { resource_registry: { 'OS::Nova::Server': 'fake_server.yaml', 'OS::Neutron::Port': 'fake_port.yaml' } };
    const { url, stack } = await create('tk-like', realHeatTemplate('fake-nova-neutron/tacker_like.yaml'), {
      files: {
        'VDU1.yaml': realHeatTemplate('fake-nova-neutron/VDU1.yaml'),
        'fake_server.yaml': realHeatTemplate('fake-nova-neutron/fake_server.yaml'),
        'fake_port.yaml': realHeatTemplate('fake-nova-neutron/fake_port.yaml'),
      },
      environment: env,
      parameters: { nfv: { VDU: { VDU1: { desired_capacity: 2, computeFlavourId: 'm1.tiny', vcImageId: 'cirros' } }, CP: { VDU1_CP1: { network: 'net0' } } } },
    });
    assert.equal(stack.stack_status, 'CREATE_COMPLETE', stack.stack_status_reason);
    const rows: Row[] = (await call('GET', `${url}/resources?nested_depth=2`, s.token)).body.resources;
    assert.equal(rows.filter((x) => x.resource_type === 'OS::Nova::Server').length, 2);
    const servers = (await call('GET', `${s.nova}/servers/detail`, s.token)).body.servers;
    assert.equal(servers.length, 2);
    assert.ok(servers.every((x: Row) => Object.keys(x.addresses).includes('net0')));
    await call('DELETE', url, s.token);
    await waitStack(s, url, (x) => x === 'DELETE_COMPLETE');
  });
});
