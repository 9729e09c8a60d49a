/**
 * The Server Notifier sim keeps its alarm registrations in a directory (`stateDir`): after a
 * restart on it the alarms are listed as before and a fault still reaches each alarm's
 * `fault_action`; a deleted alarm stays deleted.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type ServerNotifierSim, startServerNotifierSim } from '../../../src/sim/server-notifier/index.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents
type Doc = any;

const work = mkdtempSync(join(tmpdir(), 'notifier-sim-state-'));
const running: ServerNotifierSim[] = [];
const received: Doc[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => {
    body += c.toString();
  });
  req.on('end', () => {
    received.push(JSON.parse(body));
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const actionUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/server_notification`;

after(async () => {
  for (const s of running) await s.close();
  receiver.close();
  rmSync(work, { recursive: true, force: true });
});

async function start(): Promise<ServerNotifierSim> {
  const sim = await startServerNotifierSim({ auth: 'none', stateDir: work });
  running.push(sim);
  return sim;
}

async function call(sim: ServerNotifierSim, method: string, path: string, body?: unknown): Promise<{ status: number; body: Doc }> {
  const res = await fetch(`${sim.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-sim-admin-secret': 'sim-admin-secret' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('Server Notifier sim: alarms saved in stateDir and restored', () => {
  it('alarms survive a restart and still deliver faults; a deleted one stays deleted', async () => {
    const a = await start();
    const kept = await call(a, 'POST', '/v2/tenant-1/servers/srv-1/alarms', { fault_action: actionUrl, fault_id: ['1234'] });
    assert.equal(kept.status, 201);
    const dropped = await call(a, 'POST', '/v2/tenant-1/servers/srv-2/alarms', { fault_action: actionUrl, fault_id: ['5678'] });
    assert.equal((await call(a, 'DELETE', `/v2/tenant-1/servers/srv-2/alarms/${dropped.body.alarm_id}`)).status, 204);
    await a.close();

    const b = await start();
    assert.equal(b.restored, true);
    assert.deepEqual((await call(b, 'GET', '/v2/tenant-1/servers/srv-1/alarms')).body.alarms, [kept.body]);
    assert.deepEqual((await call(b, 'GET', '/v2/tenant-1/servers/srv-2/alarms')).body.alarms, []);
    const n = await call(b, 'POST', '/_sim/notify', { server_id: 'srv-1' });
    assert.equal(n.status, 202);
    await b.drain();
    assert.equal(received.length, 1);
    assert.equal(received[0].notification.alarm_id, kept.body.alarm_id);
    assert.equal(received[0].notification.fault_id, '1234');
  });
});
