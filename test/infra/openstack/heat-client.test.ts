import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { HeatClient, type HeatResource } from '../../../src/infra/openstack/heat-client.ts';
import { KeystoneAuth } from '../../../src/infra/openstack/keystone-auth.ts';
import { OpenStackError } from '../../../src/infra/openstack/openstack-error.ts';
import { type FakeOpenStack, PASSWORD, PROJECT_ID, type RecordedRequest, startFakeOpenStack } from './fake-openstack-server.ts';

const H = `/heat-r1-public/v1/${PROJECT_ID}`;

describe('HeatClient (against a local fake Heat)', () => {
  let fake: FakeOpenStack;
  let heat: HeatClient;
  let statuses: { stack_status: string; stack_status_reason: string }[];
  let pollTimes: number[];

  const stackBody = (s: { stack_status: string; stack_status_reason: string }) => ({
    stack: { id: 'sid-1', stack_name: 'vnf-a', ...s, links: [{ rel: 'self', href: `${fake.base}${H}/stacks/vnf-a/sid-1` }] },
  });
  const heatErr = (code: number, type: string, message: string) => ({ code, title: 'X', explanation: 'x', error: { type, message, traceback: null } });

  before(async () => {
    fake = await startFakeOpenStack();
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    statuses = [];
    pollTimes = [];
    const auth = new KeystoneAuth({ authUrl: fake.authUrl, username: 'admin', password: PASSWORD, projectName: 'admin', http: { baseDelayMs: 1, maxDelayMs: 5 } });
    heat = new HeatClient({ auth, pollInitialMs: 5, pollMaxMs: 40 });
    fake.handler = (req: RecordedRequest, res) => {
      const path = req.path.split('?')[0] ?? '';
      if (!path.startsWith(H)) return fake.json(res, 404, heatErr(404, 'NotFound', 'bad prefix'));
      const p = path.slice(H.length);
      if (req.method === 'GET' && (p === '/stacks/vnf-a' || p === '/stacks/sid-1')) {
        return fake.json(res, 302, { message: 'found' }, { Location: `http://heat.internal:8004/v1/${PROJECT_ID}/stacks/vnf-a/sid-1` });
      }
      if (req.method === 'GET' && p === '/stacks/nope') return fake.json(res, 404, heatErr(404, 'EntityNotFound', 'The Stack (nope) could not be found.'));
      if (req.method === 'GET' && p === '/stacks/vnf-a/sid-1') {
        pollTimes.push(Date.now());
        const s = statuses.length > 1 ? statuses.shift() : statuses[0];
        return fake.json(res, 200, stackBody(s ?? { stack_status: 'CREATE_COMPLETE', stack_status_reason: 'ok' }));
      }
      if (req.method === 'POST' && p === '/stacks') {
        const body = JSON.parse(req.body);
        if (body.stack_name === 'dup') return fake.json(res, 409, heatErr(409, 'StackExists', 'The Stack (dup) already exists.'));
        return fake.json(res, 201, { stack: { id: 'sid-1', links: [{ rel: 'self', href: 'x' }] } });
      }
      if (req.method === 'PATCH' && p === '/stacks/vnf-a/sid-1') return fake.json(res, 202, { message: 'accepted' });
      if (req.method === 'PUT' && p === '/stacks/vnf-a/sid-1') return fake.json(res, 202, { message: 'accepted' });
      if (req.method === 'DELETE' && p === '/stacks/vnf-a/sid-1') {
        res.writeHead(204);
        return res.end();
      }
      if (req.method === 'PATCH' && p === '/stacks/member-1/mid-1/resources/VDU1') return fake.json(res, 200, null);
      if (req.method === 'PATCH' && p.startsWith('/stacks/member-1/mid-1/resources/')) return fake.json(res, 404, heatErr(404, 'ResourceNotFound', 'The Resource (x) could not be found in Stack member-1.'));
      if (req.method === 'GET' && p === '/stacks/vnf-a/sid-1/resources') return fake.json(res, 200, { resources: [{ resource_name: 'VDU1', links: [] }] });
      if (req.method === 'POST' && p === '/stacks/vnf-a/sid-1/resources/scale_out/signal') return fake.json(res, 200, null);
      if (req.method === 'GET' && p === '/stacks/vnf-a/sid-1/template') return fake.json(res, 200, { heat_template_version: '2021-04-16' });
      if (req.method === 'GET' && p === '/stacks/vnf-a/sid-1/files') return fake.json(res, 200, { 'VDU1.yaml': 'x' });
      if (req.method === 'GET' && p === '/stacks/vnf-a/sid-1/environment') return fake.json(res, 200, { resource_registry: { resources: {} } });
      if (req.method === 'GET' && p === '/stacks/vnf-a/sid-1/outputs/addr') return fake.json(res, 200, { output: { output_key: 'addr', output_value: '10.0.0.1' } });
      if (req.method === 'GET' && p === '/stacks/vnf-a/sid-1/resources/scale_out/events') return fake.json(res, 200, { events: [{ id: 'e1', resource_status: 'SIGNAL_COMPLETE' }] });
      return fake.json(res, 404, heatErr(404, 'NotFound', `unexpected ${req.method} ${p}`));
    };
  });

  const heatRequests = () => fake.serviceRequests().map((r) => `${r.method} ${r.path.slice(H.length)}`);

  it('createStack posts the Heat body and returns the id', async () => {
    const ref = await heat.createStack({
      name: 'vnf-a',
      template: 'heat_template_version: 2021-04-16',
      files: { 'VDU1.yaml': 'x' },
      parameters: { nfv: { VDU: {} } },
      environment: { resource_registry: { 'OS::Nova::Server': 'fake_server.yaml' } },
      timeoutMins: 10,
    });
    assert.deepEqual({ name: ref.name, id: ref.id }, { name: 'vnf-a', id: 'sid-1' });
    const body = JSON.parse(fake.serviceRequests()[0]?.body ?? '{}');
    assert.deepEqual(body, {
      stack_name: 'vnf-a',
      template: 'heat_template_version: 2021-04-16',
      files: { 'VDU1.yaml': 'x' },
      parameters: { nfv: { VDU: {} } },
      environment: { resource_registry: { 'OS::Nova::Server': 'fake_server.yaml' } },
      timeout_mins: 10,
      disable_rollback: true,
    });
  });

  it('createStack: 409 StackExists becomes an OpenStackError with Heat type and message', async () => {
    await assert.rejects(heat.createStack({ name: 'dup', template: {} }), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.status, 409);
      assert.equal(e.service, 'heat');
      assert.equal(e.errorType, 'StackExists');
      assert.equal(e.retryable, false);
      assert.match(e.message, /create stack dup: heat POST .*\/stacks answered 409 \(StackExists: The Stack \(dup\) already exists\.\)/);
      return true;
    });
    assert.equal(fake.serviceRequests().length, 1);
  });

  it('getStack follows the 302 of a name (and of an id) onto our own endpoint', async () => {
    const s = await heat.getStack('vnf-a');
    assert.equal(s.id, 'sid-1');
    assert.equal((await heat.getStack('sid-1')).stack_name, 'vnf-a');
    assert.deepEqual(heatRequests(), ['GET /stacks/vnf-a', 'GET /stacks/vnf-a/sid-1', 'GET /stacks/sid-1', 'GET /stacks/vnf-a/sid-1']);
    assert.equal((await heat.getStack({ name: 'vnf-a', id: 'sid-1' })).id, 'sid-1');
    assert.equal((await heat.getStack('vnf-a/sid-1')).id, 'sid-1');
    assert.equal(await heat.findStack('nope'), null);
    await assert.rejects(heat.getStack('nope'), (e: unknown) => OpenStackError.isStatus(e, 404, 'EntityNotFound'));
  });

  it('updateStackPatch resolves the name and PATCHes {name}/{id}; PUT sends the full body', async () => {
    await heat.updateStackPatch('vnf-a', {});
    await heat.updateStackPatch({ name: 'vnf-a', id: 'sid-1' }, { parameters: { nfv: { x: 1 } } });
    await heat.updateStackPut('vnf-a/sid-1', { template: { heat_template_version: '2021-04-16' }, files: {} });
    assert.deepEqual(heatRequests(), ['GET /stacks/vnf-a', 'PATCH /stacks/vnf-a/sid-1', 'PATCH /stacks/vnf-a/sid-1', 'PUT /stacks/vnf-a/sid-1']);
    const bodies = fake.serviceRequests().map((r) => r.body);
    assert.equal(bodies[1], '{}');
    assert.deepEqual(JSON.parse(bodies[2] ?? ''), { parameters: { nfv: { x: 1 } } });
    assert.deepEqual(JSON.parse(bodies[3] ?? ''), { template: { heat_template_version: '2021-04-16' }, files: {}, parameters: {}, environment: {}, disable_rollback: true });
  });

  it('markUnhealthy PATCHes the resource in the given (nested) stack; unknown resource is a 404', async () => {
    await heat.markUnhealthy({ name: 'member-1', id: 'mid-1' }, 'VDU1', 'heal requested');
    const r = fake.serviceRequests()[0];
    assert.equal(r?.method, 'PATCH');
    assert.deepEqual(JSON.parse(r?.body ?? ''), { mark_unhealthy: true, resource_status_reason: 'heal requested' });
    await heat.markUnhealthy('member-1/mid-1', 'VDU1', 'undo', { unhealthy: false });
    assert.deepEqual(JSON.parse(fake.serviceRequests()[1]?.body ?? ''), { mark_unhealthy: false, resource_status_reason: 'undo' });
    await assert.rejects(heat.markUnhealthy('member-1/mid-1', 'nope', 'x'), (e: unknown) => OpenStackError.isStatus(e, 404, 'ResourceNotFound'));
  });

  it('deleteStack: 204, and an unknown stack counts as already deleted', async () => {
    assert.equal(await heat.deleteStack('vnf-a'), true);
    assert.equal(await heat.deleteStack('nope'), false);
  });

  it('reads resources, template, files, environment, outputs, events; signals', async () => {
    assert.equal((await heat.listResources('vnf-a/sid-1', { nestedDepth: 2 }))[0]?.resource_name, 'VDU1');
    assert.match(fake.serviceRequests().at(-1)?.path ?? '', /resources\?nested_depth=2$/);
    assert.deepEqual(await heat.getTemplate('vnf-a/sid-1'), { heat_template_version: '2021-04-16' });
    assert.deepEqual(await heat.getFiles('vnf-a/sid-1'), { 'VDU1.yaml': 'x' });
    assert.deepEqual(await heat.getEnvironment('vnf-a/sid-1'), { resource_registry: { resources: {} } });
    assert.equal(await heat.getOutput('vnf-a/sid-1', 'addr'), '10.0.0.1');
    await heat.signal('vnf-a/sid-1', 'scale_out');
    assert.equal(fake.serviceRequests().at(-1)?.body, 'null');
    const ev = await heat.listEvents('vnf-a/sid-1', { resourceName: 'scale_out' });
    assert.equal(ev[0]?.resource_status, 'SIGNAL_COMPLETE');
    assert.match(fake.serviceRequests().at(-1)?.path ?? '', /events\?sort_dir=asc$/);
  });

  it('waitForStatus polls with a growing interval until the target', async () => {
    statuses = [
      { stack_status: 'UPDATE_IN_PROGRESS', stack_status_reason: '' },
      { stack_status: 'UPDATE_IN_PROGRESS', stack_status_reason: '' },
      { stack_status: 'UPDATE_IN_PROGRESS', stack_status_reason: '' },
      { stack_status: 'UPDATE_IN_PROGRESS', stack_status_reason: '' },
      { stack_status: 'UPDATE_COMPLETE', stack_status_reason: 'Stack UPDATE completed successfully' },
    ];
    const seen: string[] = [];
    const s = await heat.waitForStatus('vnf-a', { target: 'UPDATE_COMPLETE', timeoutMs: 5000, onPoll: (x) => seen.push(x.stack_status) });
    assert.equal(s.stack_status, 'UPDATE_COMPLETE');
    assert.equal(seen.length, 5);
    const gaps = pollTimes.slice(1).map((t, i) => t - (pollTimes[i] as number));
    assert.ok((gaps[3] as number) > (gaps[0] as number), `intervals grow: ${gaps.join(',')}`);
  });

  it('waitForStatus polls at a short interval first, then backs off to pollSlowMaxMs', async () => {
    const busy = { stack_status: 'UPDATE_IN_PROGRESS', stack_status_reason: '' };
    statuses = [...Array.from({ length: 16 }, () => busy), { stack_status: 'UPDATE_COMPLETE', stack_status_reason: 'done' }];
    const t0 = Date.now();
    await heat.waitForStatus('vnf-a/sid-1', { target: 'UPDATE_COMPLETE', timeoutMs: 10_000, pollInitialMs: 5, pollMaxMs: 10, pollBackoffAfterMs: 100, pollSlowMaxMs: 80 });
    assert.equal(pollTimes.length, 17);
    const gaps = pollTimes.slice(1).map((t, i) => t - (pollTimes[i] as number));
    const fast = gaps.filter((_, i) => (pollTimes[i] as number) - t0 < 60);
    const slow = gaps.slice(-3);
    // Timers never fire early: the slow gaps are at least the capped interval (80) or one doubling short of it.
    for (const g of slow) assert.ok(g >= 38, `backed off: ${gaps.join(',')}`);
    assert.ok(fast.length >= 3, `several short polls before backing off: ${gaps.join(',')}`);
    const sorted = [...fast].sort((x, y) => x - y);
    assert.ok((sorted[Math.floor(sorted.length / 2)] as number) < 40, `short polls while the action usually ends: ${gaps.join(',')}`);
  });

  it('waitForStatus throws with Heat stack_status_reason on a failure status', async () => {
    statuses = [
      { stack_status: 'UPDATE_IN_PROGRESS', stack_status_reason: '' },
      { stack_status: 'UPDATE_FAILED', stack_status_reason: 'Resource UPDATE failed: ResourceInError: resources.VDU1: Went to status ERROR' },
    ];
    await assert.rejects(heat.waitForStatus('vnf-a/sid-1', { target: 'UPDATE_COMPLETE', timeoutMs: 5000 }), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.kind, 'stack_failed');
      assert.equal(e.stackStatus, 'UPDATE_FAILED');
      assert.match(e.message, /is UPDATE_FAILED while waiting for UPDATE_COMPLETE: Resource UPDATE failed: ResourceInError/);
      assert.equal(e.stackStatusReason, 'Resource UPDATE failed: ResourceInError: resources.VDU1: Went to status ERROR');
      return true;
    });
  });

  it('waitForStatus: explicit failOn, default ROLLBACK_COMPLETE failure, and timeout', async () => {
    statuses = [{ stack_status: 'CHECK_COMPLETE', stack_status_reason: 'checked' }];
    await assert.rejects(heat.waitForStatus('vnf-a/sid-1', { target: 'UPDATE_COMPLETE', failOn: ['CHECK_COMPLETE'], timeoutMs: 5000 }), /is CHECK_COMPLETE/);
    statuses = [{ stack_status: 'ROLLBACK_COMPLETE', stack_status_reason: 'rolled back' }];
    await assert.rejects(heat.waitForStatus('vnf-a/sid-1', { target: 'CREATE_COMPLETE' }), /is ROLLBACK_COMPLETE .*rolled back/);
    statuses = [{ stack_status: 'UPDATE_IN_PROGRESS', stack_status_reason: 'busy' }];
    await assert.rejects(heat.waitForStatus('vnf-a/sid-1', { target: 'UPDATE_COMPLETE', timeoutMs: 120 }), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.kind, 'wait_timeout');
      assert.equal(e.code, 'VNFM_ERR_LCM_TIMEOUT');
      assert.match(e.message, /did not reach UPDATE_COMPLETE within 120 ms \(last UPDATE_IN_PROGRESS: busy\)/);
      return true;
    });
  });

  it('stackOfResource / nestedStackOfResource read the links of a nested_depth row', () => {
    const row: Pick<HeatResource, 'links'> = {
      links: [
        { rel: 'self', href: `http://h/v1/p/stacks/vnf-a-VDU1-abc-m1-xyz/1111/resources/VDU1` },
        { rel: 'stack', href: `http://h/v1/p/stacks/vnf-a-VDU1-abc-m1-xyz/1111` },
        { rel: 'nested', href: `http://h/v1/p/stacks/vnf-a-VDU1-abc-m1-xyz-VDU1-q/2222` },
      ],
    };
    assert.deepEqual(HeatClient.stackOfResource(row), { name: 'vnf-a-VDU1-abc-m1-xyz', id: '1111' });
    assert.deepEqual(HeatClient.nestedStackOfResource(row), { name: 'vnf-a-VDU1-abc-m1-xyz-VDU1-q', id: '2222' });
    assert.equal(HeatClient.nestedStackOfResource({ links: [] }), undefined);
    assert.throws(() => HeatClient.stackOfResource({ links: [] }), OpenStackError);
  });
});
