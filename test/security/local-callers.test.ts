/**
 * With `apiAuth` none the API trusts a caller on this host only when its socket belongs to the
 * VNFM's own OS user (or root): a process of another user (a package hook script, run as `nobody`
 * by a root VNFM) cannot list VIMs or register a Server Notifier through the loopback address.
 *
 * - a real VNFM listening on 127.0.0.1, on ::1, and on `::` (dual stack, reached at 127.0.0.1 so it
 *   sees `::ffff:127.0.0.1`): requests of a child process running as `nobody` are refused (403
 *   ProblemDetails) and change nothing; the test's own requests (root) succeed;
 * - a keep-alive connection reads the socket tables once for all its requests;
 * - the /proc/net/tcp parser: IPv4, IPv6, IPv4-mapped, and a TIME_WAIT entry (listed with uid 0)
 *   that must not pass for root.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { LocalPeerGate, findPeer, procEndpoints } from '../../src/api/auth/peer-user.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;
const linux = process.platform === 'linux';

/** Requests made by one child process running as `nobody`: each one's status and body. */
async function asNobody(reqs: { method: string; url: string; body?: unknown }[]): Promise<{ status: number; body: string }[]> {
  const script = `(async () => { const out = []; for (const r of ${JSON.stringify(reqs)}) { const res = await fetch(r.url, { method: r.method, headers: { 'content-type': 'application/json', version: '2.0.0' }, ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }) }); out.push({ status: res.status, body: await res.text() }); } console.log(JSON.stringify(out)); })().catch((e) => { console.error(e); process.exit(2); });`;
  const { stdout } = await run('runuser', ['-u', 'nobody', '--', process.execPath, '-e', script], { timeout: 120_000 });
  return JSON.parse(stdout.trim()) as { status: number; body: string }[];
}

const NOTIFIER = { name: 'probe', uri: 'http://127.0.0.1:9/notify', vimId: 'any' };

/** An HTTP server answering each request with the gate's verdict on its connection. */
async function gateServer(gate: LocalPeerGate, host: string): Promise<{ url: (connectTo: string) => string; close(): Promise<void> }> {
  const server = createServer((req, res) => void gate.check(req.socket).then((t) => res.end(JSON.stringify(t))));
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (c) => `http://${c.includes(':') ? `[${c}]` : c}:${port}/`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('apiAuth none: local callers of another OS user are refused', { skip: !isRoot || !linux ? 'needs root on Linux (to run a child as nobody)' : false, timeout: 300_000 }, () => {
  let vnfm: TestVnfm | undefined;
  after(async () => {
    await vnfm?.close();
  });

  it('a process running as nobody cannot list VIMs or register a Server Notifier; the VNFM\'s own user can', async () => {
    vnfm = await testVnfm({ listen: true });
    const base = `http://127.0.0.1:${(vnfm.app.server.address() as AddressInfo).port}`;
    const [vims, reg, inst, probe] = await asNobody([
      { method: 'GET', url: `${base}/v1.0/vims` },
      { method: 'POST', url: `${base}/vnfm/v1/server-notifiers`, body: NOTIFIER },
      { method: 'GET', url: `${base}/vnflcm/v2/vnf_instances` },
      { method: 'GET', url: `${base}/healthz` },
    ]);
    for (const r of [vims, reg, inst]) {
      assert.equal(r?.status, 403, r?.body);
      const p = JSON.parse(r?.body as string) as { status: number; detail: string };
      assert.equal(p.status, 403);
      assert.match(p.detail, /loopback callers of another OS user are not trusted with apiAuth none \(the caller runs as uid \d+\); configure an API authentication mode/);
    }
    // probes stay open to anyone on the host
    assert.equal(probe?.status, 200, probe?.body);
    // the VNFM's own user (root here) is trusted, and the refused call registered nothing
    const own = await fetch(`${base}/v1.0/vims`);
    assert.equal(own.status, 200, await own.text());
    const notifiers = await fetch(`${base}/vnfm/v1/server-notifiers`);
    assert.equal(notifiers.status, 200);
    assert.deepEqual(await notifiers.json(), []);
  });

  it('IPv4, IPv6 and IPv4-mapped (dual-stack listener) connections of nobody are refused; a trusted uid passes', async () => {
    const nobody = Number((await run('id', ['-u', 'nobody'])).stdout.trim());
    const strict = new LocalPeerGate(new Set([0, process.getuid?.() ?? 0]));
    const lenient = new LocalPeerGate(new Set([0, nobody]));
    const servers = [await gateServer(strict, '127.0.0.1'), await gateServer(strict, '::1'), await gateServer(strict, '::'), await gateServer(lenient, '127.0.0.1')];
    try {
      const urls = [servers[0]?.url('127.0.0.1'), servers[1]?.url('::1'), servers[2]?.url('127.0.0.1'), servers[2]?.url('::1'), servers[3]?.url('127.0.0.1')] as string[];
      const got = (await asNobody(urls.map((url) => ({ method: 'GET', url })))).map((r) => JSON.parse(r.body) as { trusted: boolean; why?: string });
      for (const [i, t] of got.slice(0, 4).entries()) {
        assert.equal(t.trusted, false, `${urls[i]}: ${JSON.stringify(t)}`);
        assert.equal(t.why, `the caller runs as uid ${nobody}`);
      }
      assert.deepEqual(got[4], { trusted: true });
      for (const url of urls.slice(0, 4)) assert.deepEqual(await (await fetch(url)).json(), { trusted: true }, url);
    } finally {
      for (const s of servers) await s.close();
    }
  });
});

describe('the socket table lookup', () => {
  it('a keep-alive connection reads the tables once for all its requests; a new connection reads again', { skip: !linux }, async () => {
    const gate = new LocalPeerGate(new Set([process.getuid?.() ?? 0]));
    const server = createServer((req, res) => {
      void gate.check(req.socket).then((t) => res.end(JSON.stringify(t)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<string>((resolve, reject) => {
        httpRequest({ host: '127.0.0.1', port, agent, path: '/' }, (res) => {
          let b = '';
          res.on('data', (c) => (b += c));
          res.on('end', () => resolve(b));
        })
          .on('error', reject)
          .end();
      });
    try {
      for (let i = 0; i < 5; i++) assert.deepEqual(JSON.parse(await get()), { trusted: true });
      assert.equal(gate.reads, 1);
      agent.destroy();
      const fresh = await fetch(`http://127.0.0.1:${port}/`);
      assert.deepEqual(await fresh.json(), { trusted: true });
      assert.equal(gate.reads, 2);
    } finally {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('parses IPv4, IPv6 and IPv4-mapped entries; TIME_WAIT and orphaned entries do not count', () => {
    const v4 = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:2692 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0',
      '   1: 0100007F:C350 0100007F:2692 01 00000000:00000000 00:00000000 00000000 65534        0 2222 1 0000000000000000 20 4 30 10 -1',
      '   2: 0100007F:2692 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 20 4 30 10 -1',
      '   3: 0100007F:C351 0100007F:2692 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000',
      '   4: 0100007F:C352 0100007F:2692 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 20 4 30 10 -1',
    ].join('\n');
    const ep = procEndpoints('127.0.0.1', 0x2692);
    assert.equal(ep.v4, '0100007F:2692');
    assert.equal(ep.v6, '0000000000000000FFFF00000100007F:2692');
    assert.equal(procEndpoints('::1', 80).v6, '00000000000000000000000001000000:0050');
    assert.equal(procEndpoints('::1', 80).v4, undefined);
    const server = { ip: '127.0.0.1', port: 0x2692 };
    // the client's own entry (uid 65534), not the server's (uid 0) for the same pair
    assert.deepEqual(findPeer({ v4, v6: '' }, { ip: '127.0.0.1', port: 0xc350 }, server), { found: true, uid: 65534 });
    // as seen by a dual-stack server
    assert.deepEqual(findPeer({ v4, v6: '' }, { ip: '::ffff:127.0.0.1', port: 0xc350 }, { ip: '::ffff:127.0.0.1', port: 0x2692 }), { found: true, uid: 65534 });
    // TIME_WAIT (uid shown as 0) and an orphaned socket (inode 0): not a known owner
    assert.equal(findPeer({ v4, v6: '' }, { ip: '127.0.0.1', port: 0xc351 }, server).found, false);
    assert.equal(findPeer({ v4, v6: '' }, { ip: '127.0.0.1', port: 0xc352 }, server).found, false);
    assert.equal(findPeer({ v4, v6: '' }, { ip: '127.0.0.1', port: 0xc353 }, server).found, false);
    const v6 = [
      '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 00000000000000000000000001000000:C350 00000000000000000000000001000000:2692 01 00000000:00000000 00:00000000 00000000  1000        0 4444 1 0000000000000000 20 4 30 10 -1',
      '   1: 0000000000000000FFFF00000100007F:C354 0000000000000000FFFF00000100007F:2692 01 00000000:00000000 00:00000000 00000000  1001        0 5555 1 0000000000000000 20 4 30 10 -1',
    ].join('\n');
    assert.deepEqual(findPeer({ v4: '', v6 }, { ip: '::1', port: 0xc350 }, { ip: '::1', port: 0x2692 }), { found: true, uid: 1000 });
    // an AF_INET6 client socket connected to an IPv4-mapped address, seen by an IPv4 server
    assert.deepEqual(findPeer({ v4: '', v6 }, { ip: '127.0.0.1', port: 0xc354 }, server), { found: true, uid: 1001 });
  });

  it('refuses when the tables cannot be read', async () => {
    const gate = new LocalPeerGate(new Set([0]), () => Promise.reject(new Error('/proc/net/tcp cannot be read')));
    const server = createServer((req, res) => void gate.check(req.socket).then((t) => res.end(JSON.stringify(t))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const t = (await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)).json()) as { trusted: boolean; why: string };
      assert.equal(t.trusted, false);
      assert.match(t.why, /cannot be determined/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
