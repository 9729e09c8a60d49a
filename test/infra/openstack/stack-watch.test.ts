/**
 * The stack waits that read on the way (src/infra/openstack/stack-watch.ts), against a scripted
 * Heat (each stack's state is a function of how often the top stack was polled), so the
 * order of events is exact:
 * - a VNFC heal's wait hands over the changed member stack once it has finished THIS update
 *   (never on an earlier update's UPDATE_COMPLETE), before the top stack completes, and follows
 *   the parent chain; it fails like a plain wait;
 * - an entire heal's wait lists each nested stack once its owner is complete, before the top
 *   stack completes, and gives the listing a `nested_depth=2` request gives (rows, order,
 *   `parent_resource`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HeatClient, HeatResource, HeatStack, HeatStackRef } from '../../../src/infra/openstack/heat-client.ts';
import { OpenStackError, OpenStackErrorKind } from '../../../src/infra/openstack/openstack-error.ts';
import { limiter, waitCreateListing, waitUpdateWatching } from '../../../src/infra/openstack/stack-watch.ts';

const BASE = 'http://heat.test/v1/p';
const poll = { pollInitialMs: 1, pollMaxMs: 1, pollBackoffAfterMs: 60_000, pollSlowMaxMs: 1, timeoutMs: 30_000 };

function ref(name: string): HeatStackRef {
  return { name, id: `${name}-id` };
}

function stack(r: HeatStackRef, status: string, updated: string | null): HeatStack {
  return { id: r.id, stack_name: r.name, stack_status: status, stack_status_reason: '', updated_time: updated };
}

function row(owner: HeatStackRef, name: string, status: string, opts: { nested?: HeatStackRef; type?: string } = {}): HeatResource {
  return {
    resource_name: name,
    physical_resource_id: opts.nested?.id ?? `${name}-phys`,
    resource_type: opts.type ?? (opts.nested ? 'nested.yaml' : 'OS::Heat::None'),
    resource_status: status,
    resource_status_reason: '',
    links: [
      { rel: 'self', href: `${BASE}/stacks/${owner.name}/${owner.id}/resources/${name}` },
      { rel: 'stack', href: `${BASE}/stacks/${owner.name}/${owner.id}` },
      ...(opts.nested ? [{ rel: 'nested', href: `${BASE}/stacks/${opts.nested.name}/${opts.nested.id}` }] : []),
    ],
  };
}

describe('waitUpdateWatching (VNFC heal wait)', () => {
  const top = ref('top');
  const group = ref('group');
  const member = ref('member');

  /** top: IN_PROGRESS until poll `topDone`; member and group per the given scripts (by top polls). */
  function scripted(topDone: number, memberAt: (n: number) => HeatStack | null, groupAt: (n: number) => HeatStack, topEnd = 'UPDATE_COMPLETE') {
    let n = 0;
    const seen: string[] = [];
    const heat = {
      async getStackByNameId(name: string): Promise<HeatStack> {
        if (name === top.name) {
          n++;
          seen.push(`top:${n}`);
          return stack(top, n >= topDone ? topEnd : 'UPDATE_IN_PROGRESS', 't1');
        }
        if (name === member.name) {
          const st = memberAt(n);
          seen.push(`member:${st?.stack_status ?? '404'}`);
          if (st === null) throw new OpenStackError({ service: 'heat', kind: OpenStackErrorKind.http, status: 404, detail: 'not found', retryable: false });
          return st;
        }
        const st = groupAt(n);
        seen.push(`group:${st.stack_status}`);
        return st;
      },
    } as unknown as HeatClient;
    return { heat, seen, polls: () => n };
  }

  it('hands over the member once it finished this update (seen running), then follows its parent, before the top completes', async () => {
    const member0 = (n: number) => (n < 3 ? stack(member, 'UPDATE_COMPLETE', 't0') : n < 5 ? stack(member, 'UPDATE_IN_PROGRESS', 't1') : stack(member, 'UPDATE_COMPLETE', 't1'));
    const group0 = (n: number) => stack(group, n < 8 ? 'UPDATE_IN_PROGRESS' : 'UPDATE_COMPLETE', 't1');
    const { heat, seen, polls } = scripted(12, member0, group0);
    const changed: { name: string; atTopPoll: number }[] = [];
    const st = await waitUpdateWatching(heat, top, [[member], [group]], true, (c) => changed.push({ name: c.name, atTopPoll: polls() }), poll);
    assert.equal(st.stack_status, 'UPDATE_COMPLETE');
    assert.equal(changed.length, 1);
    assert.equal(changed[0]?.name, 'member');
    assert.ok((changed[0]?.atTopPoll ?? 99) < 12, 'handed over before the top stack completed');
    assert.ok(seen.includes('group:UPDATE_COMPLETE'), 'the parent was followed');
    assert.ok(seen.indexOf('group:UPDATE_IN_PROGRESS') > seen.indexOf('member:UPDATE_COMPLETE'), 'the parent is read only after the member finished');
  });

  it("an earlier update's UPDATE_COMPLETE never counts; a changed updated_time does", async () => {
    // Never seen running, updated_time moves at top poll 6 (a fast member update between two reads).
    const member0 = (n: number) => stack(member, 'UPDATE_COMPLETE', n < 6 ? 't0' : 't1');
    const { heat, polls } = scripted(14, member0, () => stack(group, 'UPDATE_COMPLETE', 't1'));
    const at: number[] = [];
    await waitUpdateWatching(heat, top, [[member], [group]], true, () => at.push(polls()), poll);
    assert.equal(at.length, 1);
    assert.ok((at[0] ?? 0) >= 6, `handed over at top poll ${at[0]}, not before the member's update`);

    // The member never changes: nothing is handed over, the wait still ends with the top stack.
    const still = scripted(5, () => stack(member, 'UPDATE_COMPLETE', 't0'), () => stack(group, 'UPDATE_COMPLETE', 't0'));
    const none: string[] = [];
    const st = await waitUpdateWatching(still.heat, top, [[member], [group]], true, (c) => none.push(c.name), poll);
    assert.equal(st.stack_status, 'UPDATE_COMPLETE');
    assert.deepEqual(none, []);
  });

  it('a member that disappears falls back to polling the top stack; a failed top stack fails the wait', async () => {
    const gone = scripted(6, () => null, () => stack(group, 'UPDATE_IN_PROGRESS', 't1'));
    const changed: string[] = [];
    assert.equal((await waitUpdateWatching(gone.heat, top, [[member], [group]], true, (c) => changed.push(c.name), poll)).stack_status, 'UPDATE_COMPLETE');
    assert.deepEqual(changed, []);

    const failed = scripted(4, () => stack(member, 'UPDATE_IN_PROGRESS', 't1'), () => stack(group, 'UPDATE_IN_PROGRESS', 't1'), 'UPDATE_FAILED');
    await assert.rejects(waitUpdateWatching(failed.heat, top, [[member], [group]], true, () => undefined, poll), (e: unknown) => e instanceof OpenStackError && e.kind === OpenStackErrorKind.stackFailed);
  });
});

describe('waitCreateListing (entire heal wait)', () => {
  const top = ref('top');
  const fake = ref('fake'); // a top-level resource with a nested stack (rows of its own)
  const group = ref('group');
  const m1 = ref('m1');
  const m2 = ref('m2');

  /** The tree; `at(n)` = statuses after `n` top polls. Members complete at polls 3 and 5, the group at 7, the top at 9. */
  function tree(n: number): Map<string, HeatResource[]> {
    const s = (doneAt: number) => (n >= doneAt ? 'CREATE_COMPLETE' : n >= doneAt - 2 ? 'CREATE_IN_PROGRESS' : 'INIT_COMPLETE');
    return new Map([
      [top.id, [row(top, 'net', s(1), { type: 'OS::Neutron::Net' }), row(top, 'F', s(2), { nested: fake }), row(top, 'G', s(7), { nested: group }), row(top, 'P', s(2), { type: 'OS::Neutron::Port' })]],
      [fake.id, [row(fake, 'inner', s(2))]],
      [group.id, [row(group, 'a', s(3), { nested: m1 }), row(group, 'b', s(5), { nested: m2 })]],
      [m1.id, [row(m1, 'VDU1', s(3), { type: 'OS::Nova::Server' }), row(m1, 'CP1', s(3), { type: 'OS::Neutron::Port' })]],
      [m2.id, [row(m2, 'VDU1', s(5), { type: 'OS::Nova::Server' }), row(m2, 'CP1', s(5), { type: 'OS::Neutron::Port' })]],
    ]);
  }

  /** What `GET top/resources?nested_depth=2` returns for the complete tree. */
  function depth2(): HeatResource[] {
    const t = tree(99);
    const within = (id: string, parent: string) => (t.get(id) ?? []).map((r) => ({ ...r, parent_resource: parent }));
    return [...(t.get(top.id) ?? []), ...within(fake.id, 'F'), ...within(group.id, 'G'), ...within(m1.id, 'a'), ...within(m2.id, 'b')];
  }

  it('lists each nested stack once its owner is complete, before the top completes, and composes the nested_depth=2 listing', async () => {
    let n = 0;
    let completedAt = Number.POSITIVE_INFINITY;
    const listings: { stack: string; ports: boolean; afterTop: boolean }[] = [];
    const heat = {
      async getStackByNameId(): Promise<HeatStack> {
        n++;
        if (n >= 9 && completedAt === Number.POSITIVE_INFINITY) completedAt = n;
        return stack(top, n >= 9 ? 'CREATE_COMPLETE' : 'CREATE_IN_PROGRESS', null);
      },
      async listResources(r: HeatStackRef, opts: { filters?: Record<string, string>; withDetail?: boolean } = {}): Promise<HeatResource[]> {
        const ports = opts.filters?.type === 'OS::Neutron::Port';
        listings.push({ stack: r.name, ports, afterTop: n >= completedAt });
        const rows = tree(n).get(r.id) ?? [];
        return ports ? rows.filter((x) => x.resource_type === 'OS::Neutron::Port').map((x) => ({ ...x, attributes: { mac_address: `${r.name}-mac` } })) : rows;
      },
    } as unknown as HeatClient;
    const { stack: st, listing } = await waitCreateListing(heat, top, { ...poll, depth: 2, withPorts: true });
    assert.equal(st.stack_status, 'CREATE_COMPLETE');
    const got = await listing;
    assert.ok(got);
    assert.deepEqual(got.rows, depth2());
    assert.deepEqual(got.portRows?.map((p) => `${p.resource_name}@${String(p.attributes?.mac_address)}`).sort(), ['CP1@m1-mac', 'CP1@m2-mac', 'P@top-mac']);
    for (const m of ['m1', 'm2']) assert.ok(listings.some((l) => l.stack === m && !l.afterTop), `${m} listed while the stack was created`);
    const late = listings.filter((l) => l.afterTop && !l.ports).map((l) => l.stack);
    assert.ok(!late.includes('m1') && !late.includes('m2'), `after the top completed only the top and open stacks were listed: ${late.join(',')}`);
  });

  it('a failed create fails the wait', async () => {
    const heat = {
      async getStackByNameId(): Promise<HeatStack> {
        return { ...stack(top, 'CREATE_FAILED', null), stack_status_reason: 'quota' };
      },
      async listResources(): Promise<HeatResource[]> {
        return [];
      },
    } as unknown as HeatClient;
    await assert.rejects(waitCreateListing(heat, top, { ...poll, depth: 2, withPorts: false }), /CREATE_FAILED while waiting for CREATE_COMPLETE: quota/);
  });
});

describe('limiter', () => {
  it('runs at most n tasks at a time, all of them', async () => {
    const limit = limiter(2);
    let running = 0;
    let most = 0;
    const gates: (() => void)[] = [];
    const tasks = Array.from({ length: 5 }, (_, i) =>
      limit(async () => {
        running++;
        most = Math.max(most, running);
        await new Promise<void>((r) => gates.push(r));
        running--;
        return i;
      }),
    );
    for (let released = 0; released < 5; ) {
      await new Promise((r) => setImmediate(r));
      const g = gates.shift();
      if (g !== undefined) {
        g();
        released++;
      }
    }
    assert.deepEqual(await Promise.all(tasks), [0, 1, 2, 3, 4]);
    assert.equal(most, 2);
  });
});
