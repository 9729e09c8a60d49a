/**
 * DNS pinning of outbound requests (src/net/outbound.ts): the connection goes to the address the
 * outbound check accepted, without resolving the name a second time. A resolver hook answers a
 * "public" address (127.0.0.2, allowed by the rules here, where the legitimate server listens) to
 * the first query and a loopback one (127.0.0.1, denied, where an internal service listens on the
 * same port) to every later query: the request reaches the legitimate server, the internal service
 * gets nothing, and the name is resolved once per request. Over HTTPS the pinned connection still
 * verifies the certificate against the URL's host name.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { type Server, createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { OutboundDeniedError, OutboundGuard, pinnedLookup } from '../../src/net/outbound.ts';
import { tlsFetch } from '../../src/net/tls-fetch.ts';
import { TestPki } from '../helpers/auth.ts';

interface Hit {
  host: string | undefined;
  path: string | undefined;
}

async function listen(server: Server, host: string, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

/** A server on 127.0.0.2 (the "public" one) and one on 127.0.0.1 (internal), on the same port. */
async function pairOfServers(make: (onHit: (h: Hit) => void) => Server): Promise<{ port: number; legit: Hit[]; internal: Hit[]; close(): Promise<void> }> {
  const legit: Hit[] = [];
  const internal: Hit[] = [];
  for (let attempt = 0; ; attempt++) {
    const a = make((h) => legit.push(h));
    const b = make((h) => internal.push(h));
    const port = await listen(a, '127.0.0.2');
    try {
      await listen(b, '127.0.0.1', port);
    } catch (e) {
      await new Promise<void>((r) => a.close(() => r()));
      if (attempt < 20) continue; // that port was taken on 127.0.0.1: take another
      throw e;
    }
    return {
      port,
      legit,
      internal,
      async close() {
        for (const s of [a, b]) await new Promise<void>((r) => s.close(() => r()));
      },
    };
  }
}

const handler = (onHit: (h: Hit) => void) => (req: { headers: { host?: string }; url?: string; resume(): void; on(e: 'end', f: () => void): void }, res: { writeHead(s: number): { end(): void } }) => {
  req.resume();
  req.on('end', () => {
    onHit({ host: req.headers.host, path: req.url });
    res.writeHead(204).end();
  });
};

/** A resolver hook: 127.0.0.2 to the first query of `rebind.test`, 127.0.0.1 afterwards. */
function rebindingResolver() {
  const queries: string[] = [];
  const resolve = async (host: string): Promise<string[]> => {
    queries.push(host);
    if (host !== 'rebind.test') throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return queries.length === 1 ? ['127.0.0.2'] : ['127.0.0.1'];
  };
  return { queries, resolve };
}

describe('outbound requests are pinned to the checked address', () => {
  let pki: TestPki;
  before(() => {
    pki = new TestPki();
  });
  after(() => pki?.close());

  it('HTTP: a name answering a public address to the check and loopback afterwards reaches only the checked address', async () => {
    const servers = await pairOfServers((onHit) => createHttpServer(handler(onHit)));
    try {
      const dns = rebindingResolver();
      const guard = new OutboundGuard({ allow: ['127.0.0.2/32'], deny: [] }, () => undefined, dns.resolve);
      const f = guard.fetch();
      const r = await f(`http://rebind.test:${servers.port}/callback`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      assert.equal(r.status, 204);
      assert.deepEqual(servers.legit, [{ host: `rebind.test:${servers.port}`, path: '/callback' }], 'the checked address got the request, with the original Host');
      assert.deepEqual(servers.internal, [], 'the loopback service got nothing');
      assert.deepEqual(dns.queries, ['rebind.test'], 'resolved once: by the check, not again by the connection');
      // the next request is checked again: the name now resolves to loopback, which is refused
      await assert.rejects(f(`http://rebind.test:${servers.port}/callback`), (e: unknown) => e instanceof OutboundDeniedError && /loopback/.test(e.reason));
      assert.equal(servers.internal.length, 0);
    } finally {
      await servers.close();
    }
  });

  it('HTTPS with a CA bundle: pinned to the checked address, the certificate verified against the host name', async () => {
    const ext = join(pki.dir, 'rebind-ext.cnf');
    writeFileSync(ext, 'subjectAltName=DNS:rebind.test\n');
    const cert = pki.issue('rebind', 'rebind.test', pki.ca, ['-extfile', ext]);
    const wrongExt = join(pki.dir, 'other-ext.cnf');
    writeFileSync(wrongExt, 'subjectAltName=DNS:other.test\n');
    const wrong = pki.issue('other', 'other.test', pki.ca, ['-extfile', wrongExt]);
    for (const [c, ok] of [
      [cert, true],
      [wrong, false],
    ] as const) {
      const servers = await pairOfServers((onHit) => createHttpsServer({ key: c.key, cert: c.cert }, handler(onHit)));
      try {
        const dns = rebindingResolver();
        const guard = new OutboundGuard({ allow: ['127.0.0.2/32'], deny: [] }, () => undefined, dns.resolve);
        const f = guard.fetch(tlsFetch({ ca: pki.ca.cert }));
        if (ok) {
          const r = await f(`https://rebind.test:${servers.port}/cb`);
          assert.equal(r.status, 204);
          assert.equal(servers.legit.length, 1);
        } else {
          // a certificate for another name is refused even though the address was pinned
          await assert.rejects(f(`https://rebind.test:${servers.port}/cb`), (e: unknown) => /altnames|Hostname\/IP does not match|ERR_TLS_CERT_ALTNAME_INVALID/.test(String((e as { cause?: { code?: string; message?: string } }).cause?.code ?? '') + String((e as { cause?: { message?: string } }).cause?.message ?? '')));
          assert.equal(servers.legit.length, 0);
        }
        assert.equal(servers.internal.length, 0);
        assert.deepEqual(dns.queries, ['rebind.test']);
      } finally {
        await servers.close();
      }
    }
  });

  it('the pinned lookup answers the checked addresses in both node:net forms and per family', async () => {
    const lookup = pinnedLookup(['192.0.2.7', '2001:db8::7']);
    const one = await new Promise<unknown[]>((resolve) => lookup('any.name', {}, (...args: unknown[]) => resolve(args)));
    assert.deepEqual(one, [null, '192.0.2.7', 4]);
    const all = await new Promise<unknown[]>((resolve) => lookup('any.name', { all: true }, (...args: unknown[]) => resolve(args)));
    assert.deepEqual(all, [null, [{ address: '192.0.2.7', family: 4 }, { address: '2001:db8::7', family: 6 }]]);
    const v6 = await new Promise<unknown[]>((resolve) => lookup('any.name', { family: 6 }, (...args: unknown[]) => resolve(args)));
    assert.deepEqual(v6, [null, '2001:db8::7', 6]);
    const none = await new Promise<unknown[]>((resolve) => pinnedLookup(['192.0.2.7'])('x', { family: 6 }, (...args: unknown[]) => resolve(args)));
    assert.equal((none[0] as { code?: string }).code, 'ENOTFOUND');
  });
});
