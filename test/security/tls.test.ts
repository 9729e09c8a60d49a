/**
 * TLS toward a VIM: verification is on by default (a self-signed Keystone is refused); a VIM
 * registered with `cert_verify: false` is reached without verification, and one registered with
 * its CA bundle (`ssl_ca_cert`) is verified against it. The settings travel from the VIM registry
 * to the connection (`interfaceInfo.skipCertificateVerification`, `interfaceInfo.ssl_ca_cert`) and
 * from there into every Keystone session call.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type Server, createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KeystoneAuth } from '../../src/infra/openstack/keystone-auth.ts';
import { fetchForVimTls } from '../../src/net/tls-fetch.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';

let dir: string;
let cert: string;
let server: Server;
let url: string;
let v: TestVnfm;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vnfm-tls-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  // A minimal Keystone over HTTPS with a self-signed certificate.
  server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v3/auth/tokens') {
        res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': 'tls-token-1' });
        res.end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3600_000).toISOString(), user: { id: 'u', name: 'u', domain: { id: 'default', name: 'Default' } }, project: { id: 'p', name: 'p', domain: { id: 'default', name: 'Default' } }, roles: [], catalog: [] } }));
        return;
      }
      res.writeHead(404);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `https://127.0.0.1:${(server.address() as { port: number }).port}/v3`;
  v = await testVnfm();
});
after(async () => {
  await v?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

function session(interfaceInfo: Record<string, unknown>): KeystoneAuth {
  const f = fetchForVimTls(interfaceInfo);
  return new KeystoneAuth({ authUrl: url, username: 'u', password: 'pw', projectName: 'p', userDomainName: 'Default', projectDomainName: 'Default', http: { attempts: 1, ...(f ? { fetch: f } : {}) } });
}

describe('TLS toward a VIM', () => {
  it('verification is on by default: a self-signed Keystone is refused', async () => {
    assert.equal(fetchForVimTls({ endpoint: url }), undefined, 'no TLS settings: the built-in fetch');
    await assert.rejects(session({ endpoint: url }).getToken());
  });

  it("cert_verify: false (registry) reaches it; the registry carries the setting into the connection", async () => {
    const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: 'tls-noverify', type: 'openstack', auth_url: url, auth_cred: { username: 'u', password: 'pw', cert_verify: 'False' }, vim_project: { name: 'p' } } } });
    assert.equal(r.statusCode, 201, r.body);
    assert.equal(r.json().vim.auth_cred.cert_verify, false);
    const conn = v.ctx.vims.toConnection(await v.ctx.vims.get(r.json().vim.id));
    assert.equal(conn.interfaceInfo.skipCertificateVerification, true);
    assert.equal(await session(conn.interfaceInfo).getToken(), 'tls-token-1');
  });

  it('a Kubernetes VIM registered with cert_verify false carries it into its connection (the Kubernetes client skips verification then)', async () => {
    const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: 'k8s-noverify', type: 'kubernetes', auth_url: 'https://k8s.example.net:6443', auth_cred: { bearer_token: 't', cert_verify: false }, vim_project: { name: 'default' } } } });
    assert.equal(r.statusCode, 201, r.body);
    const conn = v.ctx.vims.toConnection(await v.ctx.vims.get(r.json().vim.id));
    assert.equal(conn.interfaceInfo.skipCertificateVerification, true);
  });

  it('a CA bundle (ssl_ca_cert) verifies against it; another CA is refused', async () => {
    const r = await v.app.inject({ method: 'POST', url: '/v1.0/vims', payload: { vim: { name: 'tls-ca', type: 'openstack', auth_url: url, auth_cred: { username: 'u', password: 'pw', ssl_ca_cert: cert }, vim_project: { name: 'p' } } } });
    assert.equal(r.statusCode, 201, r.body);
    assert.equal(r.json().vim.auth_cred.ssl_ca_cert, '***');
    const conn = v.ctx.vims.toConnection(await v.ctx.vims.get(r.json().vim.id));
    assert.equal(conn.interfaceInfo.ssl_ca_cert, cert);
    assert.equal(await session(conn.interfaceInfo).getToken(), 'tls-token-1');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'other-key.pem'), '-out', join(dir, 'other.pem'), '-days', '2', '-subj', '/CN=other'], { stdio: 'ignore' });
    await assert.rejects(session({ endpoint: url, ssl_ca_cert: readFileSync(join(dir, 'other.pem'), 'utf8') }).getToken());
  });
});
