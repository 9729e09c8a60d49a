import assert from 'node:assert/strict';
import { after, before, describe, it, mock } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, type Session } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

/** Nova's `changes-since` / `changes-before` on the simulated Nova: `updated` is moved by a mocked clock. */
describe('OpenStack sim: Nova changes-since', () => {
  let sim: OpenStackSim;
  let s: Session;
  const ids: string[] = [];
  const admin = (): Record<string, string> => ({ 'X-Sim-Admin-Secret': sim.adminSecret });
  const iso = (ms: number): string => new Date(ms).toISOString();
  const list = async (query: string): Promise<Doc[]> => {
    const r = await call('GET', `${s.nova}/servers/detail${query}`, s.token);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.servers;
  };

  before(async () => {
    mock.timers.enable({ apis: ['Date'], now: Date.parse('2030-01-01T00:00:00Z') });
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    s = await login(sim);
    const net = sim.ensureNetwork({ name: 'watch-net', cidr: '10.21.0.0/24' });
    for (let i = 0; i < 3; i++) ids.push(sim.ensureServer({ name: `vm-${i}`, networkId: net.networkId, fixedIp: `10.21.0.${10 + i}` }).serverId);
  });
  after(async () => {
    await sim.close();
    mock.timers.reset();
  });

  it('lists what changed since a time, with the servers deleted since then, and sets updated on each change', async () => {
    const t0 = Date.now();
    assert.equal((await list(`?changes-since=${iso(t0)}`)).length, 3);
    mock.timers.tick(10_000);
    const t1 = Date.now();
    assert.deepEqual(await list(`?changes-since=${iso(t1)}`), []);

    const fail = await call('POST', `${sim.url}/_sim/servers/${ids[0]}/fail`, undefined, { message: 'disk gone' }, admin());
    assert.equal(fail.status, 200);
    const changed = await list(`?changes-since=${iso(t1)}`);
    assert.deepEqual(
      changed.map((x) => [x.id, x.status, x.fault?.message, x.updated]),
      [[ids[0], 'ERROR', 'disk gone', iso(t1).replace(/\.\d{3}Z$/, 'Z')]],
    );

    mock.timers.tick(10_000);
    const t2 = Date.now();
    assert.equal((await call('DELETE', `${s.nova}/servers/${ids[1]}`, s.token)).status, 204);
    const deleted = await list(`?changes-since=${iso(t2)}`);
    assert.deepEqual(
      deleted.map((x) => [x.id, x.status, x['OS-EXT-STS:vm_state']]),
      [[ids[1], 'DELETED', 'deleted']],
    );
    // a plain listing has no deleted rows, nor GET of the server
    assert.deepEqual((await list('')).map((x) => x.id).sort(), [ids[0], ids[2]].sort());
    assert.equal((await call('GET', `${s.nova}/servers/${ids[1]}`, s.token)).status, 404);
    // changes-before: what had not changed after t1 (the untouched server)
    assert.deepEqual((await list(`?changes-before=${iso(t1 - 1000)}`)).map((x) => x.id), [ids[2]]);
    // both bounds
    assert.deepEqual((await list(`?changes-since=${iso(t1)}&changes-before=${iso(t2 - 1000)}`)).map((x) => x.id), [ids[0]]);
    // filters still apply
    assert.deepEqual((await list(`?changes-since=${iso(t0)}&status=DELETED`)).map((x) => x.id), [ids[1]]);
    assert.deepEqual((await list(`?changes-since=${iso(t0)}&name=vm-2`)).map((x) => x.id), [ids[2]]);

    mock.timers.tick(10_000);
    const t3 = Date.now();
    assert.equal((await call('POST', `${sim.url}/_sim/servers/${ids[0]}/recover`, undefined, {}, admin())).status, 200);
    assert.deepEqual((await list(`?changes-since=${iso(t3)}`)).map((x) => [x.id, x.status]), [[ids[0], 'ACTIVE']]);
    mock.timers.tick(10_000);
    const t4 = Date.now();
    assert.equal((await call('POST', `${s.nova}/servers/${ids[2]}/action`, s.token, { 'os-stop': null })).status, 202);
    assert.deepEqual((await list(`?changes-since=${iso(t4)}`)).map((x) => [x.id, x.status]), [[ids[2], 'SHUTOFF']]);
  });

  it('accepts the time spellings Nova does and refuses others with 400', async () => {
    for (const t of ['2029-12-31', '2029-12-31T23:00:00', '2029-12-31T23:00:00Z', '2029-12-31T23:00:00.123456Z', '2029-12-31T23:00:00%2B00:00', '2029-12-31T23:00:00+0000']) {
      assert.equal((await call('GET', `${s.nova}/servers/detail?changes-since=${t}`, s.token)).status, 200, t);
    }
    for (const t of ['yesterday', '2029-13-45T99:00:00Z', '']) {
      const r = await call('GET', `${s.nova}/servers/detail?changes-since=${t}`, s.token);
      assert.equal(r.status, 400, t);
      assert.match(r.body.badRequest.message, /changes-since/);
    }
    const r = await call('GET', `${s.nova}/servers/detail?changes-since=2030-01-02T00:00:00Z&changes-before=2030-01-01T00:00:00Z`, s.token);
    assert.equal(r.status, 400);
  });

  it('saves the deleted servers in its snapshot', () => {
    const snap = sim.snapshot();
    assert.deepEqual(snap.compute.deleted?.map((x) => [x.id, x.status]), [[ids[1], 'DELETED']]);
  });
});
