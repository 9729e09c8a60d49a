import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createOpenStackHealthWatcher, type OpenStackHealthWatcher, serverHealth } from '../../../src/infra/openstack/health-watch.ts';
import type { NovaServer } from '../../../src/infra/openstack/nova-client.ts';
import { openstackVimPlugin } from '../../../src/infra/openstack/vim-plugin.ts';
import type { HealthWatcherDeps, HealthWatchTarget } from '../../../src/infra/vim-plugin.ts';
import type { ResourceHealth } from '../../../src/model/vnfc-health.ts';
import { type OutboundGuard, vimOutboundGuard } from '../../../src/net/outbound.ts';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import type { VimConnection } from '../../../src/vims/vim-registry.ts';

/** The watcher against the simulated OpenStack over HTTP; polls are driven with pollNow(). */
describe('OpenStack health watcher', () => {
  let sim: OpenStackSim;
  let vim: VimConnection;
  let networkId: string;
  let ipSeq = 10;
  const reports: { key: string; obs: ResourceHealth[] }[] = [];
  const unreachable: { key: string; reason: string }[] = [];
  let requests = 0;
  let onRequest: (() => void) | undefined;
  let targets: HealthWatchTarget[] = [];

  const deps = (): HealthWatcherDeps => ({
    vimOutbound: vimOutboundGuard({ allow: [], deny: [], vimAllow: ['127.0.0.0/8'] }),
    log: pino({ level: 'silent' }),
    targets: async () => targets,
    report: (key, obs) => reports.push({ key, obs: [...obs] }),
    unreachable: (key, reason) => unreachable.push({ key, reason }),
    periodMs: 1000,
    countRequest: (vimType) => {
      assert.equal(vimType, 'openstack');
      requests += 1;
      onRequest?.();
    },
  });
  const admin = async (path: string, body: unknown = {}): Promise<void> => {
    const r = await fetch(`${sim.url}/_sim/${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Sim-Admin-Secret': sim.adminSecret }, body: JSON.stringify(body) });
    assert.equal(r.status, 200, await r.text());
  };
  const newPortServer = (name: string): { serverId: string; portId: string } => sim.ensureServer({ name, networkId, fixedIp: `10.31.${Math.floor(ipSeq / 250)}.${(ipSeq++ % 250) + 2}` });
  const newServer = (name: string): string => newPortServer(name).serverId;
  const target = (ids: readonly string[]): HealthWatchTarget => ({ key: 'vim-1/project-1', vim, resources: new Set(ids) });
  const byId = (x: readonly unknown[], y: readonly unknown[]): number => String(x[0]).localeCompare(String(y[0]));
  /** One poll: what it reported (flattened, sorted by id) and the requests it sent. */
  const poll = async (w: OpenStackHealthWatcher): Promise<{ seen: [string, string, string, string?][]; sent: number }> => {
    reports.length = 0;
    const before = requests;
    await w.pollNow();
    const seen = reports
      .flatMap((r) => r.obs.map((o) => [o.resourceId, o.condition, o.reason, ...(o.detail === undefined ? [] : [o.detail])] as [string, string, string, string?]))
      .sort((a, b) => a[0].localeCompare(b[0]));
    return { seen, sent: requests - before };
  };

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    networkId = sim.ensureNetwork({ name: 'watch-net', cidr: '10.31.0.0/16' }).networkId;
    const c = sim.credentials;
    vim = {
      vimId: 'vim-1',
      vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
      interfaceInfo: { endpoint: c.authUrl },
      accessInfo: { username: c.username, password: c.password, project: c.project, userDomain: c.userDomain, projectDomain: c.projectDomain, region: c.region },
    };
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    reports.length = 0;
    unreachable.length = 0;
    onRequest = undefined;
  });

  it('maps every Nova status', () => {
    const at = new Date();
    const h = (status: string | undefined, fault?: string): [string, string, string | undefined] => {
      const r = serverHealth({ id: 's', status, fault: fault === undefined ? undefined : { code: 500, message: fault } } as NovaServer, at);
      return [r.condition, r.reason, r.detail];
    };
    assert.deepEqual(h('ACTIVE'), ['healthy', 'ACTIVE', undefined]);
    assert.deepEqual(h('ERROR', 'No valid host'), ['faulty', 'ERROR', 'No valid host']);
    for (const st of ['SHUTOFF', 'PAUSED', 'SUSPENDED', 'SHELVED', 'SHELVED_OFFLOADED']) assert.deepEqual(h(st), ['faulty', st, undefined]);
    assert.deepEqual(h('DELETED'), ['faulty', 'DELETED', undefined]);
    assert.deepEqual(h('SOFT_DELETED'), ['faulty', 'DELETED', undefined]);
    assert.deepEqual(h('UNKNOWN'), ['unknown', 'UNKNOWN', undefined]);
    assert.deepEqual(h(undefined), ['unknown', 'UNKNOWN', undefined]);
    for (const st of ['BUILD', 'REBUILD', 'REBOOT', 'HARD_REBOOT', 'MIGRATING', 'RESIZE', 'VERIFY_RESIZE']) assert.deepEqual(h(st), ['degraded', st, undefined]);
  });

  it('is the OpenStack plugin\'s watcher', () => {
    const w = openstackVimPlugin.healthWatcher?.(deps());
    assert.equal(typeof w?.start, 'function');
    assert.equal(typeof w?.stop, 'function');
  });

  it('reports the target\'s servers, then faults, recoveries and deletions behind the VNFM\'s back', async () => {
    const [a, b, c] = [newServer('w1-a'), newServer('w1-b'), newServer('w1-c')];
    const other = newServer('w1-not-ours');
    targets = [target([a, b, c])];
    const w = createOpenStackHealthWatcher(deps());
    const first = await poll(w);
    assert.deepEqual(first.seen, [[a, 'healthy', 'ACTIVE'], [b, 'healthy', 'ACTIVE'], [c, 'healthy', 'ACTIVE']].sort(byId));
    assert.ok(!first.seen.some((x) => x[0] === other));
    assert.deepEqual(reports.map((r) => r.key), ['vim-1/project-1']);
    // nothing changed: nothing reported
    assert.deepEqual((await poll(w)).seen, []);

    await admin(`servers/${a}/fail`, { message: 'Simulated disk failure' });
    assert.deepEqual((await poll(w)).seen, [[a, 'faulty', 'ERROR', 'Simulated disk failure']]);
    await admin(`servers/${a}/recover`);
    assert.deepEqual((await poll(w)).seen, [[a, 'healthy', 'ACTIVE']]);
    await admin(`servers/${b}/fail`, { status: 'SHUTOFF' });
    assert.deepEqual((await poll(w)).seen, [[b, 'faulty', 'SHUTOFF']]);
    await admin(`servers/${b}/fail`, { status: 'BUILD' });
    assert.deepEqual((await poll(w)).seen, [[b, 'degraded', 'BUILD']]);

    // deleted through Nova: listed DELETED by changes-since
    const token = await login();
    const del = await fetch(`${sim.url}/v2.1/servers/${c}`, { method: 'DELETE', headers: { 'X-Auth-Token': token } });
    assert.equal(del.status, 204);
    assert.deepEqual((await poll(w)).seen, [[c, 'faulty', 'DELETED']]);
    assert.deepEqual(unreachable, []);
    await w.stop();
  });

  it('reports a resource added to the target even when its server did not change', async () => {
    const [a, b] = [newServer('w2-a'), newServer('w2-b')];
    targets = [target([a])];
    const w = createOpenStackHealthWatcher(deps());
    assert.deepEqual((await poll(w)).seen, [[a, 'healthy', 'ACTIVE']]);
    targets = [target([a, b])];
    const next = await poll(w);
    assert.ok(next.seen.some((x) => x[0] === b && x[1] === 'healthy'));
    // a server of the target that its project does not have (deleted long ago): DELETED on the full listing
    targets = [target([a, b, '00000000-0000-4000-8000-000000000000'])];
    assert.ok((await poll(w)).seen.some((x) => x[0] === '00000000-0000-4000-8000-000000000000' && x[2] === 'DELETED'));
    await w.stop();
  });

  it('Nova down: unreachable, never faulty; then every resource is reported again', async () => {
    const [a, b] = [newServer('w3-a'), newServer('w3-b')];
    targets = [target([a, b])];
    const w = createOpenStackHealthWatcher(deps());
    await poll(w);
    await admin('api/break', { count: 1, status: 503, services: ['compute'] });
    const down = await poll(w);
    assert.deepEqual(down.seen, []);
    assert.equal(unreachable.length, 1);
    assert.equal(unreachable[0]?.key, 'vim-1/project-1');
    assert.match(unreachable[0]?.reason ?? '', /503/);
    assert.ok(!unreachable[0]?.reason.includes(sim.credentials.password));
    // back: a full report, though nothing changed
    assert.deepEqual((await poll(w)).seen, [[a, 'healthy', 'ACTIVE'], [b, 'healthy', 'ACTIVE']].sort(byId));
    // Keystone down too (a fresh watcher has no token): unreachable
    const fresh = createOpenStackHealthWatcher(deps());
    await admin('api/break', { count: 1, status: 503, services: ['identity'] });
    unreachable.length = 0;
    assert.deepEqual((await poll(fresh)).seen, []);
    assert.equal(unreachable.length, 1);
    assert.equal((await poll(fresh)).seen.length, 2);
    await Promise.all([w.stop(), fresh.stop()]);
  });

  it('sends one request per period whatever the number of servers', async () => {
    const ids = [newServer('w4-0'), newServer('w4-1')];
    targets = [target(ids)];
    const w = createOpenStackHealthWatcher(deps());
    const first = await poll(w);
    assert.equal(first.sent, 3); // Keystone token + full listing + DOWN ports
    assert.equal((await poll(w)).sent, 2);
    for (let i = 2; i < 30; i++) ids.push(newServer(`w4-${i}`));
    targets = [target(ids)];
    const grown = await poll(w);
    assert.equal(grown.sent, 2); // full listing (the target gained servers) + DOWN ports, token cached
    assert.equal(grown.seen.length, 30);
    for (const id of ids.slice(0, 10)) await admin(`servers/${id}/fail`);
    const faults = await poll(w);
    assert.equal(faults.sent, 2);
    assert.equal(faults.seen.filter((x) => x[2] === 'ERROR').length, 10);
    assert.equal((await poll(w)).sent, 2);
    await w.stop();
  });

  it('a DOWN port of an ACTIVE server: degraded PortDown, until the port is up again', async () => {
    const { serverId: a, portId } = newPortServer('w6-a');
    const b = newServer('w6-b');
    targets = [target([a, b])];
    const w = createOpenStackHealthWatcher(deps());
    await poll(w);
    await admin(`ports/${portId}/down`);
    assert.deepEqual((await poll(w)).seen, [[a, 'degraded', 'PortDown', `port ${portId} DOWN`]]);
    // the server's own status wins over its port's
    await admin(`servers/${a}/fail`, { message: 'boom' });
    assert.deepEqual((await poll(w)).seen, [[a, 'faulty', 'ERROR', 'boom']]);
    await admin(`servers/${a}/recover`);
    assert.deepEqual((await poll(w)).seen, [[a, 'degraded', 'PortDown', `port ${portId} DOWN`]]);
    await admin(`ports/${portId}/up`);
    assert.deepEqual((await poll(w)).seen, [[a, 'healthy', 'ACTIVE']]);
    // Neutron down: unreachable too
    await admin('api/break', { count: 1, status: 500, services: ['network'] });
    assert.deepEqual((await poll(w)).seen, []);
    assert.equal(unreachable.length, 1);
    assert.equal((await poll(w)).seen.length, 2);
    await w.stop();
  });

  it('start polls at once and then every period; stop ends it', async () => {
    const a = newServer('w7-a');
    targets = [target([a])];
    let polled = 0;
    let reported = false;
    let pollAfterReport: () => void = () => undefined;
    const periodic = new Promise<void>((resolve) => {
      pollAfterReport = resolve;
    });
    const base = deps();
    const w = createOpenStackHealthWatcher({
      ...base,
      periodMs: 20,
      report: (key, obs) => {
        base.report(key, obs);
        reported = true;
      },
      targets: async () => {
        polled += 1;
        if (reported) pollAfterReport();
        return targets;
      },
    });
    w.start();
    await periodic;
    await w.stop();
    assert.ok(reports.some((r) => r.obs.some((o) => o.resourceId === a && o.condition === 'healthy')));
    const after = polled;
    await w.pollNow();
    assert.equal(polled, after);
  });

  it('a revoked token: one re-authentication, no outage', async () => {
    const a = newServer('w8-a');
    targets = [target([a])];
    const tokens: string[] = [];
    const guard = vimOutboundGuard({ allow: [], deny: [], vimAllow: ['127.0.0.0/8'] });
    const recording = {
      fetch: (base?: typeof fetch): typeof fetch => {
        const inner = guard.fetch(base);
        return ((input: string | URL | Request, init?: RequestInit) => {
          const t = new Headers(init?.headers).get('x-auth-token');
          if (t) tokens.push(t);
          return inner(input, init);
        }) as typeof fetch;
      },
    } as unknown as OutboundGuard;
    const w = createOpenStackHealthWatcher({ ...deps(), vimOutbound: recording });
    await poll(w);
    const token = tokens.at(-1) as string;
    const revoked = await fetch(`${sim.authUrl}/auth/tokens`, { method: 'DELETE', headers: { 'X-Auth-Token': token, 'X-Subject-Token': token } });
    assert.equal(revoked.status, 204);
    const next = await poll(w);
    assert.equal(next.sent, 4); // Nova 401, Keystone, Nova again, DOWN ports
    assert.deepEqual(unreachable, []);
    assert.notEqual(tokens.at(-1), token);
    await w.stop();
  });

  it('stop aborts the request in flight and polls no more', async () => {
    const a = newServer('w5-a');
    targets = [target([a])];
    const w = createOpenStackHealthWatcher(deps());
    await poll(w);
    reports.length = 0;
    await admin('api/latency', { ms: 2000 });
    const sent = new Promise<void>((resolve) => {
      onRequest = resolve;
    });
    const polling = w.pollNow();
    await sent;
    await w.stop();
    await polling;
    await admin('api/latency', { ms: 0 });
    assert.deepEqual(reports, []);
    assert.deepEqual(unreachable, []);
    const after = requests;
    await w.pollNow();
    assert.equal(requests, after);
  });

  async function login(): Promise<string> {
    const c = sim.credentials;
    const r = await fetch(`${sim.authUrl}/auth/tokens`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { name: c.username, domain: { name: c.userDomain }, password: c.password } } },
          scope: { project: { name: c.project, domain: { name: c.projectDomain } } },
        },
      }),
    });
    assert.equal(r.status, 201);
    await r.arrayBuffer();
    return r.headers.get('x-subject-token') as string;
  }
});
