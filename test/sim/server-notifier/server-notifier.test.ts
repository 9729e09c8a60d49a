import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { type ServerNotifierSim, startServerNotifierSim } from '../../../src/sim/server-notifier/index.ts';
import { call, login, type Session, settled, waitStack } from '../openstack/helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Doc;
}

/** Four servers with no group: the scheduler spreads them, so one host carries two. */
const FOUR = {
  heat_template_version: '2021-04-16',
  resources: {
    vdus: {
      type: 'OS::Heat::ResourceGroup',
      properties: { count: 4, resource_def: { type: 'OS::Nova::Server', properties: { name: 'vdu-%index%', flavor: 'm1.tiny', image: 'cirros', networks: [{ network: 'net0' }] } } },
    },
  },
};

describe('Server Notifier sim', () => {
  let os: OpenStackSim;
  let notifier: ServerNotifierSim;
  let s: Session;
  let receiver: Server;
  let receiverUrl: string;
  const received: Received[] = [];
  const admin = { 'X-Sim-Admin-Secret': 'sim-admin-secret' };
  let servers: Doc[] = [];

  const waitFor = async (n: number): Promise<void> => {
    // Polls for the deliveries (the 30 s limit only guards against a hang on a loaded machine).
    for (let i = 0; i < 3000 && received.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    await notifier.drain();
  };
  const register = async (tenant: string, serverId: string, token: string | undefined, faultIds = ['1234']): Promise<Doc> =>
    call('POST', `${notifier.url}/v2/${tenant}/servers/${serverId}/alarms`, token, {
      fault_action: `${receiverUrl}//server_notification/vnf_instances/inst-1/servers/${serverId}/notify`,
      fault_id: faultIds,
    });

  before(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(body) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    os = await startOpenStackSim({ heatDelayMs: 0 });
    notifier = await startServerNotifierSim({ openstackUrl: os.url, notificationAuth: { type: 'bearer', token: 'vnfm-intake-token' } });
    s = await login(os);
    const r = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'four', template: FOUR });
    assert.equal(r.status, 201);
    assert.equal((await waitStack(s, `${s.heat}/stacks/four/${r.body.stack.id}`, settled)).stack_status, 'CREATE_COMPLETE');
    servers = (await call('GET', `${s.nova}/servers/detail`, s.token)).body.servers;
    assert.equal(servers.length, 4);
  });
  after(async () => {
    await notifier.close();
    await os.close();
    await new Promise<void>((r) => receiver.close(() => r()));
  });

  it('requires a Keystone token and a matching tenant to register alarms', async () => {
    const srv = servers[0];
    assert.equal((await register('admin', srv.id, undefined)).status, 401);
    assert.equal((await register('admin', srv.id, 'bogus')).status, 401);
    assert.equal((await register('someone-else', srv.id, s.token)).status, 403);
    const bad = await call('POST', `${notifier.url}/v2/admin/servers/${srv.id}/alarms`, s.token, { fault_action: 'not a url', fault_id: ['1234'] });
    assert.equal(bad.status, 400);
    const noIds = await call('POST', `${notifier.url}/v2/admin/servers/${srv.id}/alarms`, s.token, { fault_action: `${receiverUrl}/x`, fault_id: [] });
    assert.equal(noIds.status, 400);
  });

  it('registers, lists and deletes alarms (tenant by project name or id)', async () => {
    const srv = servers[0];
    const a = await register('admin', srv.id, s.token);
    assert.equal(a.status, 201);
    assert.match(a.body.alarm_id, /^[0-9a-f-]{36}$/);
    assert.equal(a.body.server_id, srv.id);
    const b = await register(s.projectId, srv.id, s.token);
    assert.equal(b.status, 201);
    const list = await call('GET', `${notifier.url}/v2/admin/servers/${srv.id}/alarms`, s.token);
    assert.deepEqual(list.body.alarms.map((x: Doc) => x.alarm_id), [a.body.alarm_id]);
    const del = await call('DELETE', `${notifier.url}/v2/${s.projectId}/servers/${srv.id}/alarms/${b.body.alarm_id}`, s.token);
    assert.equal(del.status, 204);
    const again = await call('DELETE', `${notifier.url}/v2/${s.projectId}/servers/${srv.id}/alarms/${b.body.alarm_id}`, s.token);
    assert.equal(again.status, 404);
    const all = await call('GET', `${notifier.url}/_sim/alarms`, undefined, undefined, admin);
    assert.equal(all.body.alarms.length, 1);
    assert.equal((await call('GET', `${notifier.url}/_sim/alarms`)).status, 401);
  });

  it('delivers one notification when a server fails', async () => {
    const srv = servers[0];
    const alarmId = (await call('GET', `${notifier.url}/v2/admin/servers/${srv.id}/alarms`, s.token)).body.alarms[0].alarm_id;
    received.length = 0;
    const f = await call('POST', `${os.url}/_sim/servers/${srv.id}/fail`, undefined, {}, { 'X-Sim-Admin-Secret': os.adminSecret });
    assert.equal(f.status, 200);
    await waitFor(1);
    assert.equal(received.length, 1);
    const got = received[0] as Received;
    assert.equal(got.path, `//server_notification/vnf_instances/inst-1/servers/${srv.id}/notify`);
    assert.equal(got.headers.authorization, 'Bearer vnfm-intake-token');
    assert.deepEqual(got.body, {
      notification: { host_id: srv['OS-EXT-SRV-ATTR:host'], alarm_id: alarmId, fault_id: '1234', fault_type: '20' },
    });
    const d = await call('GET', `${notifier.url}/_sim/deliveries`, undefined, undefined, admin);
    const last = d.body.deliveries[d.body.deliveries.length - 1];
    assert.equal(last.status, 204);
    assert.equal(last.alarm_id, alarmId);
    await call('POST', `${os.url}/_sim/servers/${srv.id}/recover`, undefined, {}, { 'X-Sim-Admin-Secret': os.adminSecret });
  });

  it('delivers one notification per alarm of every server on a failed host, at once', async () => {
    const byHost = new Map<string, Doc[]>();
    for (const x of servers) byHost.set(x['OS-EXT-SRV-ATTR:host'], [...(byHost.get(x['OS-EXT-SRV-ATTR:host']) ?? []), x]);
    const [host, onHost] = [...byHost.entries()].find(([, l]) => l.length === 2) as [string, Doc[]];
    // Alarms: every server on the host gets one (servers[0] may already have one), plus a second
    // alarm on one of them, plus an alarm on a server elsewhere (must not fire).
    const expected = new Set<string>();
    for (const x of onHost) {
      const existing = (await call('GET', `${notifier.url}/v2/admin/servers/${x.id}/alarms`, s.token)).body.alarms;
      if (existing.length > 0) for (const a of existing) expected.add(a.alarm_id);
      else expected.add((await register('admin', x.id, s.token, ['ab12', 'cd34'])).body.alarm_id);
    }
    expected.add((await register('admin', (onHost[1] as Doc).id, s.token)).body.alarm_id);
    const elsewhere = servers.find((x) => x['OS-EXT-SRV-ATTR:host'] !== host) as Doc;
    await register('admin', elsewhere.id, s.token);
    received.length = 0;
    const f = await call('POST', `${os.url}/_sim/hosts/${host}/fail`, undefined, { fault_id: '9999' }, { 'X-Sim-Admin-Secret': os.adminSecret });
    assert.equal(f.status, 200);
    await waitFor(expected.size);
    // Sync points instead of a pause: the OpenStack sim's delivery of the host.fault event was
    // answered (the notifier creates every notification before answering), then every
    // notification in flight is done. Whatever this fault makes the notifier send has arrived.
    for (let i = 0; ; i++) {
      const st = await call('GET', `${os.url}/_sim/state`, undefined, undefined, { 'X-Sim-Admin-Secret': os.adminSecret });
      const ev = (st.body.webhookDeliveries as Doc[]).filter((d) => d.event === 'host.fault').at(-1);
      if (typeof ev?.status === 'number' && ev.status < 300) break;
      assert.ok(i < 1000, `host.fault event not delivered: ${JSON.stringify(ev)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await notifier.drain();
    assert.equal(received.length, expected.size);
    assert.deepEqual(new Set(received.map((x) => x.body.notification.alarm_id)), expected);
    for (const x of received) {
      assert.equal(x.body.notification.host_id, host);
      assert.equal(x.body.notification.fault_type, '10');
      assert.equal(x.body.notification.fault_id, '9999');
    }
    await call('POST', `${os.url}/_sim/hosts/${host}/recover`, undefined, {}, { 'X-Sim-Admin-Secret': os.adminSecret });
  });

  it('does not notify for deleted alarms; /_sim/notify raises a fault directly', async () => {
    const srv = servers[3] as Doc;
    for (const old of (await call('GET', `${notifier.url}/v2/admin/servers/${srv.id}/alarms`, s.token)).body.alarms) {
      assert.equal((await call('DELETE', `${notifier.url}/v2/admin/servers/${srv.id}/alarms/${old.alarm_id}`, s.token)).status, 204);
    }
    const a = (await register('admin', srv.id, s.token)).body.alarm_id;
    await call('DELETE', `${notifier.url}/v2/admin/servers/${srv.id}/alarms/${a}`, s.token);
    const b = (await register('admin', srv.id, s.token, ['7777'])).body.alarm_id;
    received.length = 0;
    const r = await call('POST', `${notifier.url}/_sim/notify`, undefined, { server_id: srv.id, fault_option: { detail: 'manual' } }, admin);
    assert.equal(r.status, 202);
    assert.equal(r.body.deliveries.length, 1);
    await waitFor(1);
    assert.equal(received.length, 1);
    assert.equal(received[0]?.body.notification.alarm_id, b);
    assert.equal(received[0]?.body.notification.fault_id, '7777');
    assert.deepEqual(received[0]?.body.notification.fault_option, { detail: 'manual' });
  });

  it('records failed deliveries with retries', async () => {
    const srv = servers[2] as Doc;
    const r = await call('POST', `${notifier.url}/v2/admin/servers/${srv.id}/alarms`, s.token, { fault_action: 'http://127.0.0.1:1/unreachable', fault_id: ['1234'] });
    assert.equal(r.status, 201);
    await call('POST', `${notifier.url}/_sim/notify`, undefined, { server_id: srv.id }, admin);
    await notifier.drain();
    const d = notifier.deliveries().find((x) => x.alarm_id === r.body.alarm_id);
    assert.ok(d);
    assert.equal(d.status, null);
    assert.equal(d.attempts, 3);
    assert.ok(d.error);
  });

  it('holds alarm removals until released (in process and over /_sim/holds); the journal shows each answer', async () => {
    const open = await startServerNotifierSim({ auth: 'none' });
    try {
      const reg = (server: string) => call('POST', `${open.url}/v2/admin/servers/${server}/alarms`, undefined, { fault_action: `${receiverUrl}/n`, fault_id: ['1234'] });
      const a = (await reg('srv-a')).body.alarm_id as string;
      const b = (await reg('srv-b')).body.alarm_id as string;
      const hold = open.holdAlarmRequests({ serverId: 'srv-a' });
      // Only srv-a's DELETE is held: srv-b's goes through.
      assert.equal((await call('DELETE', `${open.url}/v2/admin/servers/srv-b/alarms/${b}`)).status, 204);
      const pending = call('DELETE', `${open.url}/v2/admin/servers/srv-a/alarms/${a}`);
      const held = await hold.reached;
      assert.deepEqual([held.method, held.server_id, held.alarm_id], ['DELETE', 'srv-a', a]);
      assert.equal(open.alarms().some((x) => x.alarm_id === a), true, 'not applied while held');
      hold.release();
      assert.equal((await pending).status, 204);
      assert.equal(open.alarms().length, 0);
      // Repeating the removal: 404 (what the VNFM counts as done).
      assert.equal((await call('DELETE', `${open.url}/v2/admin/servers/srv-a/alarms/${a}`)).status, 404);
      const j = open.journal().filter((e) => e.method === 'DELETE').map((e) => [e.server_id, e.alarm_id, e.status, e.held_by]);
      assert.deepEqual(j, [
        ['srv-b', b, 204, null],
        ['srv-a', a, 204, hold.id],
        ['srv-a', a, 404, null],
      ]);

      // The same over HTTP, for registrations, with a client that gives up while held.
      const h = await call('POST', `${open.url}/_sim/holds`, undefined, { method: 'POST' }, admin);
      assert.equal(h.status, 201, JSON.stringify(h.body));
      const ac = new AbortController();
      const gaveUp = fetch(`${open.url}/v2/admin/servers/srv-c/alarms`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fault_action: `${receiverUrl}/n`, fault_id: ['1'] }), signal: ac.signal }).catch((e: Error) => e.name);
      let listed: Doc;
      for (;;) {
        listed = (await call('GET', `${open.url}/_sim/holds/${h.body.hold.id}`, undefined, undefined, admin)).body.hold;
        if (listed.held.length > 0) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(listed.held[0].server_id, 'srv-c');
      ac.abort();
      assert.equal(await gaveUp, 'AbortError');
      const rel = await call('DELETE', `${open.url}/_sim/holds/${h.body.hold.id}`, undefined, undefined, admin);
      assert.equal(rel.status, 200);
      assert.equal(rel.body.hold.released, true);
      assert.equal((await call('DELETE', `${open.url}/_sim/holds/${h.body.hold.id}`, undefined, undefined, admin)).status, 404);
      // Released: the registration is applied even though its client is gone.
      for (let i = 0; i < 500 && !open.alarms().some((x) => x.server_id === 'srv-c'); i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(open.alarms().filter((x) => x.server_id === 'srv-c').length, 1);
      assert.equal((await call('GET', `${open.url}/_sim/journal`, undefined, undefined, admin)).body.journal.length, open.journal().length);
    } finally {
      await open.close();
    }
  });

  it('can run without authentication, as Tacker sample MgmtDriver expects', async () => {
    const open = await startServerNotifierSim({ auth: 'none' });
    try {
      const r = await call('POST', `${open.url}/v2/admin/servers/abc/alarms`, undefined, { fault_action: `${receiverUrl}/n`, fault_id: ['1234'] });
      assert.equal(r.status, 201);
      assert.equal(open.alarms().length, 1);
    } finally {
      await open.close();
    }
  });
});
