/**
 * A tiny Keystone v3 (+ any service) HTTP server for the OpenStack client unit tests: issues
 * tokens with a catalog of several regions/interfaces, validates tokens, can revoke them, and
 * hands every other request to a per-test handler. Listens on 127.0.0.1, port 0.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: RecordedRequest, res: ServerResponse) => unknown;

export interface FakeOpenStack {
  /** http://127.0.0.1:PORT */
  base: string;
  /** http://127.0.0.1:PORT/v3 */
  authUrl: string;
  /** Every request (Keystone and services), in arrival order. */
  requests: RecordedRequest[];
  /** Tokens issued so far. */
  issued: string[];
  /** Tokens that currently answer 401 at services and 404 at validation. */
  revoked: Set<string>;
  /** Lifetime of new tokens (ms). */
  tokenLifetimeMs: number;
  /** Status to answer POST /v3/auth/tokens with (201 = success). */
  authStatus: number;
  /** Statuses answered (one each) to the next POST /v3/auth/tokens before {@link authStatus} applies. */
  authQueue: number[];
  /** Handles non-Keystone requests. Default: 404. */
  handler: Handler;
  /** Answer JSON. */
  json(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void;
  /** Requests to non-Keystone paths. */
  serviceRequests(): RecordedRequest[];
  authRequests(): RecordedRequest[];
  /** True when the request carries a token issued and not revoked. */
  tokenOk(req: RecordedRequest): boolean;
  close(): Promise<void>;
}

export const PROJECT_ID = 'p-0123456789';
export const PASSWORD = 'pw-very-secret-1';

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(text);
}

export async function startFakeOpenStack(): Promise<FakeOpenStack> {
  const sockets = new Set<import('node:net').Socket>();
  let base = '';
  const fake: FakeOpenStack = {
    base: '',
    authUrl: '',
    requests: [],
    issued: [],
    revoked: new Set(),
    tokenLifetimeMs: 3_600_000,
    authStatus: 201,
    authQueue: [],
    handler: (_req, res) => sendJson(res, 404, { error: { code: 404, title: 'Not Found', message: 'no handler' } }),
    json: sendJson,
    serviceRequests: () => fake.requests.filter((r) => !r.path.startsWith('/v3/')),
    authRequests: () => fake.requests.filter((r) => r.path.startsWith('/v3/auth/tokens')),
    tokenOk: (req) => {
      const t = req.headers['x-auth-token'];
      return typeof t === 'string' && fake.issued.includes(t) && !fake.revoked.has(t);
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const catalog = () => [
    {
      type: 'identity',
      name: 'keystone',
      endpoints: [{ interface: 'public', region_id: 'RegionOne', region: 'RegionOne', url: `${base}/v3/` }],
    },
    {
      type: 'orchestration',
      name: 'heat',
      endpoints: [
        { interface: 'internal', region_id: 'RegionOne', region: 'RegionOne', url: `${base}/heat-r1-internal/v1/${PROJECT_ID}` },
        { interface: 'public', region_id: 'RegionOne', region: 'RegionOne', url: `${base}/heat-r1-public/v1/${PROJECT_ID}/` },
        { interface: 'public', region_id: 'RegionTwo', region: 'RegionTwo', url: `${base}/heat-r2-public/v1/${PROJECT_ID}` },
        { interface: 'admin', region_id: 'RegionTwo', region: 'RegionTwo', url: `${base}/heat-r2-admin/v1/${PROJECT_ID}` },
      ],
    },
    {
      type: 'compute',
      name: 'nova',
      endpoints: [{ interface: 'public', region_id: 'RegionOne', region: 'RegionOne', url: `${base}/nova/v2.1` }],
    },
  ];

  const tokenBody = (withCatalog: boolean) => {
    const issued = new Date();
    return {
      token: {
        methods: ['password'],
        user: { domain: { id: 'default', name: 'Default' }, id: 'u-1', name: 'admin' },
        project: { domain: { id: 'default', name: 'Default' }, id: PROJECT_ID, name: 'admin' },
        roles: [{ id: 'r1', name: 'admin' }, { id: 'r2', name: 'member' }],
        issued_at: issued.toISOString().replace('Z', '000Z'),
        expires_at: new Date(issued.getTime() + fake.tokenLifetimeMs).toISOString().replace('Z', '000Z'),
        ...(withCatalog ? { catalog: catalog() } : {}),
      },
    };
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: RecordedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      fake.requests.push(rec);
      const path = rec.path.split('?')[0];
      if (path === '/v3/auth/tokens' && rec.method === 'POST') {
        const status = fake.authQueue.shift() ?? fake.authStatus;
        if (status !== 201) {
          // Keystone-like error that (unlike Keystone) echoes the password, to test redaction
          sendJson(res, status, { error: { code: status, title: 'Unauthorized', message: `The request you have made requires authentication. (password was ${PASSWORD})` } });
          return;
        }
        const token = `gAAAAAB${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;
        fake.issued.push(token);
        sendJson(res, 201, tokenBody(true), { 'X-Subject-Token': token });
        return;
      }
      if (path === '/v3/auth/tokens' && rec.method === 'GET') {
        if (!fake.tokenOk(rec)) {
          sendJson(res, 401, { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } });
          return;
        }
        const subject = rec.headers['x-subject-token'];
        if (typeof subject !== 'string' || !fake.issued.includes(subject) || fake.revoked.has(subject)) {
          sendJson(res, 404, { error: { code: 404, title: 'Not Found', message: 'Could not find token.' } });
          return;
        }
        sendJson(res, 200, tokenBody(false), { 'X-Subject-Token': subject });
        return;
      }
      Promise.resolve(fake.handler(rec, res)).catch((err: unknown) => {
        sendJson(res, 500, { error: { message: String(err) } });
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  fake.base = base;
  fake.authUrl = `${base}/v3`;
  return fake;
}
