/**
 * A CA bundle per subscriber (`notifications.tls`): a subscription whose callback server has a
 * certificate of a private CA is usable with verification on, by mapping its URL prefix to that
 * CA. Real HTTPS callback servers with certificates made by openssl:
 * - under a configured prefix, certificate of that prefix's CA: the subscription's callback test
 *   passes over verified TLS (201) and notifications are delivered;
 * - a certificate of another CA under the same prefix: refused (422, nothing stored);
 * - a server of the private CA at a URL no prefix covers: refused (the system CAs do not know it),
 *   so a prefix opens nothing beyond itself;
 * - the prefix matches by scheme, host, port and path segment (`/cb` does not cover `/cbx`).
 * The configuration is checked at load.
 */
import assert from 'node:assert/strict';
import { type Server, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, resolveConfig } from '../../src/config.ts';
import { underPrefix } from '../../src/net/tls-fetch.ts';
import { TestPki } from '../helpers/auth.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { type NotifyVnfm, drainAll, notifyVnfm } from '../notify/fixture.ts';

interface Callback {
  url: string;
  gets: number;
  posts: Record<string, unknown>[];
  close(): Promise<void>;
}

async function callbackServer(key: string, cert: string): Promise<Callback> {
  const cb: Omit<Callback, 'url' | 'close'> = { gets: 0, posts: [] };
  const server: Server = createServer({ key, cert }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method === 'GET') cb.gets++;
      else if (req.method === 'POST') cb.posts.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return Object.assign(cb, {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
}

describe('a CA bundle per subscriber (notifications.tls)', () => {
  let pki: TestPki;
  let otherCa: ReturnType<TestPki['selfSigned']>;
  let good: Callback;
  let foreign: Callback;
  let uncovered: Callback;
  let vnfm: NotifyVnfm;

  before(async () => {
    pki = new TestPki(); // its server certificate (127.0.0.1) is signed by its private CA
    otherCa = pki.selfSigned('other-ca', 'Another CA');
    const foreignCert = pki.issue('foreign', 'localhost', otherCa, []);
    good = await callbackServer(pki.server.key, pki.server.cert);
    foreign = await callbackServer(foreignCert.key, foreignCert.cert);
    uncovered = await callbackServer(pki.server.key, pki.server.cert);
    vnfm = await notifyVnfm({
      config: {
        notifications: {
          testCallback: true,
          tls: [
            { prefix: `${good.url}/nfvo/`, caFile: pki.ca.certFile },
            { prefix: foreign.url, caFile: pki.ca.certFile },
          ],
        },
      },
    });
  });
  after(async () => {
    await vnfm?.close();
    for (const c of [good, foreign, uncovered]) await c?.close();
    pki?.close();
  });

  const subscribe = (callbackUri: string) => vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/subscriptions', headers: { version: '2.0.0', 'content-type': 'application/json' }, payload: { callbackUri } });
  const subscriptions = async () => (await vnfm.store.db.selectFrom('subscription').select('callback_uri').execute()).map((r) => r.callback_uri);

  it('the private CA of the prefix verifies the callback: subscription created (callback test over TLS) and notified', async () => {
    const r = await subscribe(`${good.url}/nfvo/callback`);
    assert.equal(r.statusCode, 201, r.body);
    assert.equal(good.gets, 1, 'the callback test reached the server');
    await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
    const vnfdId = (await vnfm.store.db.selectFrom('vnf_package').select('vnfd_id').executeTakeFirstOrThrow()).vnfd_id as string;
    const inst = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { version: '2.0.0', 'content-type': 'application/json' }, payload: { vnfdId } });
    assert.equal(inst.statusCode, 201, inst.body);
    await drainAll(vnfm.notify);
    assert.equal(good.posts.length, 1);
    assert.equal(good.posts[0]?.notificationType, 'VnfIdentifierCreationNotification');
    const row = await vnfm.store.db.selectFrom('outbox').select(['status']).executeTakeFirstOrThrow();
    assert.equal(row.status, 'DELIVERED');
  });

  it('a certificate of another CA under a configured prefix is refused (verification stays on)', async () => {
    const before = await subscriptions();
    const r = await subscribe(`${foreign.url}/callback`);
    assert.equal(r.statusCode, 422, r.body);
    assert.equal(foreign.gets, 0, 'the TLS handshake failed before any request');
    assert.deepEqual(await subscriptions(), before, 'nothing stored');
  });

  it('the private CA opens nothing beyond its prefix: another port, or a path outside the prefix, is refused', async () => {
    const before = await subscriptions();
    assert.equal((await subscribe(`${uncovered.url}/nfvo/callback`)).statusCode, 422);
    assert.equal(uncovered.gets, 0);
    const gets = good.gets;
    assert.equal((await subscribe(`${good.url}/nfvox/callback`)).statusCode, 422, 'a path beside the prefix');
    assert.equal((await subscribe(`${good.url}/callback`)).statusCode, 422, 'a path above the prefix');
    assert.equal(good.gets, gets);
    assert.deepEqual(await subscriptions(), before);
  });

  it('prefix matching and configuration checks', () => {
    const p = new URL('https://nfvo.example:8443/cb');
    assert.ok(underPrefix(new URL('https://nfvo.example:8443/cb'), p));
    assert.ok(underPrefix(new URL('https://nfvo.example:8443/cb/x'), p));
    assert.ok(!underPrefix(new URL('https://nfvo.example:8443/cbx'), p));
    assert.ok(!underPrefix(new URL('https://nfvo.example/cb'), p), 'another port');
    assert.ok(!underPrefix(new URL('http://nfvo.example:8443/cb'), p), 'another scheme');
    assert.ok(!underPrefix(new URL('https://nfvo.example.evil:8443/cb'), p), 'another host');
    assert.ok(underPrefix(new URL('https://nfvo.example/anything'), new URL('https://nfvo.example')));
    const load = (tls: unknown) => resolveConfig({ flags: { sim: false, notifications: { tls } } as never });
    assert.deepEqual(load([{ prefix: 'https://nfvo.example/', caFile: '/etc/ca.pem' }]).notifications.tls, [{ prefix: 'https://nfvo.example/', caFile: '/etc/ca.pem' }]);
    assert.throws(() => load([{ prefix: 'http://nfvo.example/', caFile: '/x' }]), (e: unknown) => e instanceof ConfigError && /notifications\.tls\[0\]\.prefix: must be an https URL/.test(e.message));
    assert.throws(() => load([{ prefix: 'https://nfvo.example/' }]), /notifications\.tls\[0\]\.caFile/);
    assert.throws(() => load([{ prefix: 'https://nfvo.example/', caFile: '/x', verify: false }]), /unknown setting verify/);
  });
});
