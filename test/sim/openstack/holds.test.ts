/**
 * Holds on Heat stack operations (the fault-positioning hook of the OpenStack sim) and the Heat
 * journal: a held update is accepted (202) but the stack stays UPDATE_IN_PROGRESS until the hold
 * is released, `reached` says when it arrived; the same over `/_sim/heat/holds`; `/_sim/reset`
 * releases holds. Heat runs with no delay here, so an operation that is not held completes during
 * its own request: "still in progress" after the answer can only come from the hold.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, type Session } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

const TEMPLATE = {
  heat_template_version: '2021-04-16',
  parameters: { flavor: { type: 'string', default: 'm1.tiny' } },
  resources: { vdu: { type: 'OS::Nova::Server', properties: { name: 'vdu', flavor: { get_param: 'flavor' }, image: 'cirros', networks: [{ network: 'net0' }] } } },
};

describe('OpenStack sim: holds on stack operations', () => {
  let sim: OpenStackSim;
  let s: Session;
  const admin = () => ({ 'X-Sim-Admin-Secret': sim.adminSecret });

  async function createStack(name: string): Promise<string> {
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: name, template: TEMPLATE });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const url = `${s.heat}/stacks/${name}/${r.body.stack.id}`;
    assert.equal((await stack(url)).stack_status, 'CREATE_COMPLETE', 'no delay: done during the request');
    return url;
  }
  async function stack(url: string): Promise<Doc> {
    const r = await call('GET', url, s.token);
    assert.equal(r.status, 200);
    return r.body.stack;
  }
  async function server(url: string): Promise<Doc> {
    return (await call('GET', `${url}/resources/vdu`, s.token)).body.resource;
  }
  async function patch(url: string, parameters: Record<string, unknown> = {}): Promise<void> {
    const r = await call('PATCH', url, s.token, { parameters });
    assert.equal(r.status, 202, JSON.stringify(r.body));
  }

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    s = await login(sim);
  });
  after(async () => {
    await sim?.close();
  });

  it('holds an update (202, UPDATE_IN_PROGRESS) until released; reached names the stack; the journal records it', async () => {
    const url = await createStack('held-1');
    const stackId = url.split('/').pop() as string;
    const from = sim.heatJournal().length;
    const old = (await server(url)).physical_resource_id as string;
    const m = await call('PATCH', `${url}/resources/vdu`, s.token, { mark_unhealthy: true, resource_status_reason: 'test' });
    assert.equal(m.status, 200);

    const hold = sim.holdStackUpdates();
    await patch(url);
    const reached = await hold.reached;
    assert.deepEqual([reached.holdId, reached.operation, reached.stackName, reached.stackId], [hold.id, 'update', 'held-1', stackId]);
    const during = await stack(url);
    assert.equal(during.stack_status, 'UPDATE_IN_PROGRESS');
    assert.equal((await server(url)).resource_status, 'CHECK_FAILED', 'nothing replaced while held');
    assert.equal(hold.held().length, 1);

    hold.release();
    // With no Heat delay the released update completes on the next turn of the event loop.
    await new Promise((r) => setImmediate(r));
    assert.equal((await stack(url)).stack_status, 'UPDATE_COMPLETE');
    const replaced = await server(url);
    assert.notEqual(replaced.physical_resource_id, old, 'the marked server was replaced after the release');
    assert.equal(replaced.resource_status, 'CREATE_COMPLETE');

    const seen = sim.heatJournal().slice(from);
    assert.deepEqual(
      seen.map((e) => [e.operation, e.stackName, e.physicalId ?? null, e.heldBy ?? null]),
      [
        ['mark_unhealthy', 'held-1', old, null],
        ['update', 'held-1', null, hold.id],
      ],
    );
    assert.ok(seen.every((e, i) => i === 0 || e.seq > (seen[i - 1] as Doc).seq));

    // Released: the next update is not held.
    await patch(url, { flavor: 'm1.small' });
    assert.equal((await stack(url)).stack_status, 'UPDATE_COMPLETE');
    assert.equal(sim.heatJournal().at(-1)?.heldBy, undefined);
  });

  it('holds over /_sim/heat/holds only the named stack; an update during a hold supersedes the held one', async () => {
    const a = await createStack('held-a');
    const b = await createStack('held-b');
    const created = await call('POST', `${sim.url}/_sim/heat/holds`, undefined, { operation: 'update', stack: 'held-a' }, admin());
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const h = created.body.hold;
    assert.deepEqual([h.operation, h.stack, h.released, h.held], ['update', 'held-a', false, []]);

    await patch(b, { flavor: 'm1.small' });
    assert.equal((await stack(b)).stack_status, 'UPDATE_COMPLETE', 'another stack is not held');
    await patch(a, { flavor: 'm1.small' });
    await patch(a, { flavor: 'm1.medium' });
    assert.equal((await stack(a)).stack_status, 'UPDATE_IN_PROGRESS');
    const got = await call('GET', `${sim.url}/_sim/heat/holds/${h.id}`, undefined, undefined, admin());
    assert.deepEqual(
      got.body.hold.held.map((x: Doc) => x.stackName),
      ['held-a', 'held-a'],
    );
    const state = (await call('GET', `${sim.url}/_sim/state`, undefined, undefined, admin())).body;
    assert.deepEqual(
      state.heat.holds.map((x: Doc) => x.id),
      [h.id],
    );
    assert.ok(state.heat.journal.some((e: Doc) => e.operation === 'update' && e.heldBy === h.id));

    const del = await call('DELETE', `${sim.url}/_sim/heat/holds/${h.id}`, undefined, undefined, admin());
    assert.equal(del.status, 200);
    assert.equal(del.body.hold.held.length, 2);
    await new Promise((r) => setImmediate(r));
    const done = await stack(a);
    assert.equal(done.stack_status, 'UPDATE_COMPLETE');
    assert.equal(done.parameters.flavor, 'm1.medium', 'the later update wins');
    assert.equal((await call('DELETE', `${sim.url}/_sim/heat/holds/${h.id}`, undefined, undefined, admin())).status, 404, 'released holds are gone');
    assert.deepEqual((await call('GET', `${sim.url}/_sim/heat/holds`, undefined, undefined, admin())).body.holds, []);
  });

  it('holds deletes too; /_sim/reset releases every hold; bad requests are 400 and need the admin secret', async () => {
    const url = await createStack('held-del');
    const h = (await call('POST', `${sim.url}/_sim/heat/holds`, undefined, { operation: 'delete' }, admin())).body.hold;
    assert.equal((await call('DELETE', url, s.token)).status, 204);
    assert.equal((await stack(url)).stack_status, 'DELETE_IN_PROGRESS');
    assert.equal((await call('POST', `${sim.url}/_sim/reset`, undefined, {}, admin())).status, 200);
    await new Promise((r) => setImmediate(r));
    assert.equal((await stack(url)).stack_status, 'DELETE_COMPLETE');
    assert.equal((await call('GET', `${sim.url}/_sim/heat/holds/${h.id}`, undefined, undefined, admin())).status, 404);

    assert.equal((await call('POST', `${sim.url}/_sim/heat/holds`, undefined, { operation: 'signal' }, admin())).status, 400);
    assert.equal((await call('POST', `${sim.url}/_sim/heat/holds`, undefined, { stack: 7 }, admin())).status, 400);
    assert.equal((await call('POST', `${sim.url}/_sim/heat/holds`, undefined, {})).status, 401);
  });
});
