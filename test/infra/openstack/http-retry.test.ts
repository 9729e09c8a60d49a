import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  backoffDelay,
  type HttpRequest,
  type RetryEvent,
  requestWithRetry,
  resolveHttpRetryOptions,
} from '../../../src/infra/openstack/http-retry.ts';
import { OpenStackError } from '../../../src/infra/openstack/openstack-error.ts';

type Step = (req: IncomingMessage, res: ServerResponse) => void;

describe('requestWithRetry', () => {
  let base = '';
  let steps: Step[] = [];
  let hits: { method: string; url: string; body: string }[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ method: req.method ?? '', url: req.url ?? '', body: Buffer.concat(chunks).toString() });
      const step = steps.shift() ?? ((_q: IncomingMessage, r: ServerResponse) => r.writeHead(200).end('{"ok":true}'));
      step(req, res);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const status =
    (code: number, body: unknown = {}, headers: Record<string, string> = {}): Step =>
    (_req, res) => {
      res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
  const hang: Step = () => {
    /* never answers */
  };

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    steps = [];
    hits = [];
  });

  const fast = (extra: Parameters<typeof resolveHttpRetryOptions>[0] = {}) =>
    resolveHttpRetryOptions({ attempts: 4, baseDelayMs: 2, maxDelayMs: 10, timeoutMs: 2000, ...extra });
  const req = (extra: Partial<HttpRequest> = {}): HttpRequest => ({ service: 'heat', method: 'GET', url: `${base}/stacks`, ...extra });

  it('retries 503 and then returns the success', async () => {
    steps = [status(503, { code: 503 }), status(503, { code: 503 }), status(200, { stacks: [] })];
    const events: RetryEvent[] = [];
    const res = await requestWithRetry(req(), fast({ onRetry: (e) => events.push(e) }));
    assert.equal(res.status, 200);
    assert.equal(res.attempts, 3);
    assert.deepEqual(JSON.parse(res.text), { stacks: [] });
    assert.equal(hits.length, 3);
    assert.deepEqual(
      events.map((e) => [e.attempt, e.reason]),
      [
        [1, '503'],
        [2, '503'],
      ],
    );
  });

  it('returns the last 5xx when attempts are used up', async () => {
    steps = [status(502), status(504), status(503)];
    const res = await requestWithRetry(req(), fast({ attempts: 3 }));
    assert.equal(res.status, 503);
    assert.equal(hits.length, 3);
  });

  it('never retries a 400 (nor other 4xx)', async () => {
    for (const code of [400, 401, 403, 404, 409, 429]) {
      hits = [];
      steps = [status(code, { error: { type: 'X' } })];
      const res = await requestWithRetry(req(), fast());
      assert.equal(res.status, code);
      assert.equal(hits.length, 1, `no retry on ${code}`);
    }
  });

  it('does not retry a 500 by default', async () => {
    steps = [status(500)];
    const res = await requestWithRetry(req(), fast());
    assert.equal(res.status, 500);
    assert.equal(hits.length, 1);
  });

  it('times out a hanging request, retries it, then fails with a retryable timeout error', async () => {
    steps = [hang, hang];
    const started = Date.now();
    await assert.rejects(requestWithRetry(req(), fast({ attempts: 2, timeoutMs: 150 })), (e: unknown) => {
      assert.ok(e instanceof OpenStackError);
      assert.equal(e.kind, 'timeout');
      assert.equal(e.retryable, true);
      assert.equal(e.status, undefined);
      assert.equal(e.code, 'VNFM_ERR_VIM_UNREACHABLE');
      assert.match(e.message, /no answer within 150 ms after 2 attempt/);
      return true;
    });
    assert.equal(hits.length, 2);
    assert.ok(Date.now() - started >= 300);
  });

  it('a timeout followed by an answer succeeds', async () => {
    steps = [hang, status(200, { ok: 1 })];
    const res = await requestWithRetry(req(), fast({ timeoutMs: 150 }));
    assert.equal(res.status, 200);
    assert.equal(res.attempts, 2);
  });

  it('does not repeat a non-idempotent POST after a timeout or a 504, but does after 503', async () => {
    steps = [hang];
    await assert.rejects(requestWithRetry(req({ method: 'POST', body: '{}' }), fast({ timeoutMs: 100 })), /no answer within 100 ms after 1 attempt/);
    assert.equal(hits.length, 1);
    hits = [];
    steps = [status(504)];
    assert.equal((await requestWithRetry(req({ method: 'POST', body: '{}' }), fast())).status, 504);
    assert.equal(hits.length, 1);
    hits = [];
    steps = [status(503), status(201, { stack: { id: 'x' } })];
    assert.equal((await requestWithRetry(req({ method: 'POST', body: '{"a":1}' }), fast())).status, 201);
    assert.equal(hits.length, 2);
    assert.equal(hits[1]?.body, '{"a":1}', 'body sent again');
    hits = [];
    steps = [hang, status(200)];
    assert.equal((await requestWithRetry(req({ method: 'POST', idempotent: true }), fast({ timeoutMs: 100 }))).status, 200);
    assert.equal(hits.length, 2);
  });

  it('retries connection refused (even for POST) and then reports a connection error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const events: RetryEvent[] = [];
    await assert.rejects(
      requestWithRetry(req({ method: 'POST', url: `http://127.0.0.1:${port}/v3/auth/tokens` }), fast({ attempts: 3, onRetry: (e) => events.push(e) })),
      (e: unknown) => {
        assert.ok(e instanceof OpenStackError);
        assert.equal(e.kind, 'connection');
        assert.equal(e.retryable, true);
        assert.match(e.message, /ECONNREFUSED/);
        return true;
      },
    );
    assert.deepEqual(
      events.map((e) => e.reason),
      ['ECONNREFUSED', 'ECONNREFUSED'],
    );
  });

  it('retries a connection reset', async () => {
    steps = [(req2) => req2.socket.destroy(), status(200)];
    const res = await requestWithRetry(req(), fast());
    assert.equal(res.status, 200);
    assert.equal(hits.length, 2);
  });

  it('retries 409 only when the caller says the conflict is transient', async () => {
    const inProgress = { code: 409, title: 'Conflict', error: { type: 'ActionInProgress', message: 'Stack s already has an action (UPDATE) in progress.' } };
    const exists = { code: 409, title: 'Conflict', error: { type: 'StackExists', message: 'The Stack (s) already exists.' } };
    const retryConflict = (t: string | undefined) => t === 'ActionInProgress';
    steps = [status(409, inProgress), status(202)];
    assert.equal((await requestWithRetry(req({ method: 'PATCH', retryConflict }), fast())).status, 202);
    assert.equal(hits.length, 2);
    hits = [];
    steps = [status(409, exists)];
    assert.equal((await requestWithRetry(req({ method: 'POST', retryConflict }), fast())).status, 409);
    assert.equal(hits.length, 1);
    hits = [];
    steps = [status(409, inProgress)];
    assert.equal((await requestWithRetry(req({ method: 'PATCH' }), fast())).status, 409, 'no opt-in, no retry');
    assert.equal(hits.length, 1);
  });

  it('does not follow redirects (a Heat 302 stays visible)', async () => {
    steps = [status(302, { message: 'found' }, { Location: `${base}/stacks/s/1` })];
    const res = await requestWithRetry(req(), fast());
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('location'), `${base}/stacks/s/1`);
    assert.equal(hits.length, 1);
  });

  it('stops retrying when the caller aborts', async () => {
    steps = [status(503), status(503), status(503), status(503)];
    const ac = new AbortController();
    const p = requestWithRetry(req({ signal: ac.signal }), resolveHttpRetryOptions({ attempts: 4, baseDelayMs: 1000, maxDelayMs: 1000 }));
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(p, (e: unknown) => e instanceof OpenStackError && e.kind === 'aborted' && !e.retryable);
    assert.equal(hits.length, 1);
  });

  it('computes exponential back-off with jitter, capped, honouring Retry-After', () => {
    const lo = resolveHttpRetryOptions({ baseDelayMs: 100, maxDelayMs: 1000, random: () => 0 });
    const hi = resolveHttpRetryOptions({ baseDelayMs: 100, maxDelayMs: 1000, random: () => 0.999999 });
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, lo)),
      [50, 100, 200, 400, 500, 500],
    );
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, hi)),
      [100, 200, 400, 800, 1000, 1000],
    );
    assert.equal(backoffDelay(1, lo, 700), 700);
    assert.equal(backoffDelay(1, lo, 5000), 1000, 'Retry-After capped');
  });

  it('validates options: only 5xx may be retried', () => {
    assert.throws(() => resolveHttpRetryOptions({ retryStatuses: [503, 429] }), /only 5xx/);
    assert.throws(() => resolveHttpRetryOptions({ attempts: 0 }), /attempts/);
    assert.throws(() => resolveHttpRetryOptions({ baseDelayMs: 10, maxDelayMs: 5 }), /baseDelayMs/);
    assert.deepEqual(resolveHttpRetryOptions().retryStatuses, [502, 503, 504]);
    assert.equal(resolveHttpRetryOptions().attempts, 4);
  });
});
