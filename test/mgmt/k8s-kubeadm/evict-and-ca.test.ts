/**
 * `KubeClient.evict` against a minimal HTTP API server (the Eviction subresource: 201 accepted,
 * 404 gone, 429 blocked by a budget and NOT retried by the client), and the CA hash the driver
 * computes locally compared with Tacker's openssl pipeline on a real RSA certificate.
 */
import assert from 'node:assert/strict';
import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../../../src/infra/kubernetes/kube-client.ts';
import { caCertHash } from '../../../src/mgmt/drivers/k8s-kubeadm/remote.ts';

describe('KubeClient.evict', () => {
  let server: Server;
  let client: KubeClient;
  const seen: { path: string; auth: string | undefined; body: Record<string, unknown> }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      let data = '';
      req.on('data', (c) => (data += c));
      req.on('end', () => {
        seen.push({ path: req.url ?? '', auth: req.headers.authorization, body: data ? JSON.parse(data) : {} });
        const name = /pods\/([^/]+)\/eviction/.exec(req.url ?? '')?.[1];
        const send = (code: number, body: unknown) => {
          res.writeHead(code, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (req.method !== 'POST' || !name) return send(405, { kind: 'Status', code: 405 });
        if (name === 'blocked') return send(429, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'TooManyRequests', code: 429, message: "Cannot evict pod as it would violate the pod's disruption budget." });
        if (name === 'missing') return send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'pods "missing" not found' });
        return send(201, { kind: 'Status', apiVersion: 'v1', status: 'Success', code: 201 });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    client = KubeClient.fromVim({ vimType: 'ETSINFV.KUBERNETES.V_1', interfaceInfo: { endpoint: `http://127.0.0.1:${port}` }, accessInfo: { bearer_token: 'tok-123' } }, { baseDelayMs: 1, maxDelayMs: 2 });
  });

  after(() => {
    server.close();
  });

  it('POSTs a policy/v1 Eviction to the pod subresource: evicted / gone / blocked (429 not retried)', async () => {
    assert.deepEqual(await client.evict({ namespace: 'default', name: 'web-1' }), { outcome: 'evicted' });
    assert.deepEqual(await client.evict({ namespace: 'default', name: 'missing' }), { outcome: 'gone' });
    const b = await client.evict({ namespace: 'db', name: 'blocked' });
    assert.equal(b.outcome, 'blocked');
    assert.match(b.outcome === 'blocked' ? b.message : '', /429 TooManyRequests: Cannot evict pod as it would violate the pod's disruption budget/);
    assert.equal(seen.filter((s) => s.path.includes('/blocked/')).length, 1, 'a 429 is returned at once, not retried by the client');
    const first = seen[0];
    assert.equal(first?.path, '/api/v1/namespaces/default/pods/web-1/eviction');
    assert.equal(first?.auth, 'Bearer tok-123');
    assert.equal(first?.body.kind, 'Eviction');
    assert.equal(first?.body.apiVersion, 'policy/v1');
    assert.deepEqual(first?.body.metadata, { name: 'web-1', namespace: 'default' });
  });
});

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('cluster CA hash', { skip: hasOpenssl() ? false : 'openssl is not installed' }, () => {
  it('equals the openssl pipeline of kubeadm / Tacker on the same RSA CA', () => {
    const dir = mkdtempSync(join(tmpdir(), 'k8s-ca-'));
    try {
      const crt = join(dir, 'ca.crt');
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'ca.key'), '-out', crt, '-subj', '/CN=kubernetes', '-days', '1'], { stdio: 'ignore' });
      const expected = execSync(`openssl x509 -pubkey -in ${crt} | openssl rsa -pubin -outform der 2>/dev/null | openssl dgst -sha256 -hex | sed 's/^.* //'`).toString().trim();
      assert.match(expected, /^[0-9a-f]{64}$/);
      assert.equal(caCertHash(readFileSync(crt, 'utf8')), expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
