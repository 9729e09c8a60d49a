/**
 * Test doubles and material for the API authentication tests: a fake Keystone v3 (token issue
 * and validation, as keystonemiddleware sees it), a test PKI made with the `openssl` command (a
 * CA, a server certificate, client certificates, one from another CA and one expired), and HTTPS
 * requests with a client certificate.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One user of the fake Keystone. */
export interface FakeKeystoneUser {
  id: string;
  name: string;
  project?: string;
  roles: string[];
}

/** A fake Keystone v3: the service user logs in with a password; user tokens are registered by the test. */
export class FakeKeystone {
  readonly tokens = new Map<string, FakeKeystoneUser & { expiresAt?: string }>();
  validations = 0;
  private serviceToken = `svc-${Math.random().toString(36).slice(2)}`;
  private server = createServer((req, res) => this.handle(req, res));
  url = '';

  constructor(private readonly service: { username: string; password: string }) {}

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const a = this.server.address();
    this.url = `http://127.0.0.1:${a && typeof a === 'object' ? a.port : 0}/v3`;
    return this.url;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/v3/auth/tokens' && req.method === 'POST') {
        const b = JSON.parse(body || '{}') as { auth?: { identity?: { password?: { user?: { name?: string; password?: string } } } } };
        const u = b.auth?.identity?.password?.user;
        if (u?.name !== this.service.username || u?.password !== this.service.password) {
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":401}}');
          return;
        }
        res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': this.serviceToken }).end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3_600_000).toISOString() } }));
        return;
      }
      if (req.url === '/v3/auth/tokens' && req.method === 'GET') {
        this.validations++;
        if (req.headers['x-auth-token'] !== this.serviceToken) {
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":401}}');
          return;
        }
        const t = this.tokens.get(String(req.headers['x-subject-token']));
        if (!t || (t.expiresAt && Date.parse(t.expiresAt) <= Date.now())) {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":404,"title":"Not Found"}}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            token: {
              expires_at: t.expiresAt ?? new Date(Date.now() + 3_600_000).toISOString(),
              user: { id: t.id, name: t.name, domain: { id: 'default' } },
              ...(t.project ? { project: { id: t.project, name: `${t.project}-name`, domain: { id: 'default' } } } : {}),
              roles: t.roles.map((name, i) => ({ id: `r${i}`, name })),
            },
          }),
        );
        return;
      }
      res.writeHead(404).end();
    });
  }
}

/** A PEM key and certificate pair. */
export interface KeyCert {
  key: string;
  cert: string;
  keyFile: string;
  certFile: string;
}

/** Test PKI: a CA, a server certificate for 127.0.0.1, client certificates by CN. */
export class TestPki {
  readonly dir = mkdtempSync(join(tmpdir(), 'vnfm-pki-'));
  readonly ca: KeyCert;
  readonly server: KeyCert;

  constructor() {
    this.ca = this.selfSigned('ca', 'VNFM Test CA');
    this.server = this.issue('server', 'localhost', this.ca, ['-extfile', this.ext('subjectAltName=IP:127.0.0.1,DNS:localhost')]);
  }

  private ext(line: string): string {
    const f = join(this.dir, `ext-${Math.random().toString(36).slice(2)}.cnf`);
    writeFileSync(f, `${line}\n`);
    return f;
  }

  private run(args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  }

  private pair(name: string): KeyCert {
    const keyFile = join(this.dir, `${name}.key`);
    const certFile = join(this.dir, `${name}.crt`);
    return { keyFile, certFile, key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8') };
  }

  /** A self-signed CA. */
  selfSigned(name: string, cn: string): KeyCert {
    this.run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${cn}`]);
    return this.pair(name);
  }

  /** A certificate signed by `ca`. */
  issue(name: string, cn: string, ca: KeyCert = this.ca, extra: string[] = []): KeyCert {
    this.run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
    this.run(['x509', '-req', '-in', `${name}.csr`, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', ...extra]);
    return this.pair(name);
  }

  /** A certificate of the CA that expired long ago (`openssl ca` with explicit dates). */
  expired(name: string, cn: string): KeyCert {
    const db = join(this.dir, 'ca-db');
    execFileSync('mkdir', ['-p', db]);
    writeFileSync(join(db, 'index.txt'), '');
    writeFileSync(join(db, 'serial'), '1000\n');
    const cnf = join(this.dir, 'ca.cnf');
    writeFileSync(
      cnf,
      `[ca]\ndefault_ca=test\n[test]\ndatabase=${db}/index.txt\nserial=${db}/serial\nnew_certs_dir=${db}\ncertificate=${this.ca.certFile}\nprivate_key=${this.ca.keyFile}\ndefault_md=sha256\npolicy=any\n[any]\ncommonName=supplied\n`,
    );
    this.run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
    this.run(['ca', '-batch', '-config', cnf, '-in', `${name}.csr`, '-out', `${name}.crt`, '-startdate', '20200101000000Z', '-enddate', '20200102000000Z', '-notext']);
    return this.pair(name);
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What an HTTPS request answered. */
export interface HttpsAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json(): Record<string, unknown>;
}

/** One HTTPS request, optionally with a client certificate. */
export function httpsCall(base: string, opts: { method: string; path: string; ca: string; client?: KeyCert; headers?: Record<string, string>; body?: string }): Promise<HttpsAnswer> {
  const u = new URL(opts.path, base);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: opts.method, ca: opts.ca, ...(opts.client ? { key: opts.client.key, cert: opts.client.cert } : {}), headers: { ...(opts.headers ?? {}), ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}) }, agent: false },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) as Record<string, unknown> }));
      },
    );
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}
