/**
 * The LCM event feed GET /vnfm/v1/events (server-sent events) over real HTTP, with API tokens of
 * two projects and an admin: the feed needs a token, carries the events the notifier wrote
 * (instance creation and deletion here), each caller sees only its project's events (the admin
 * all), and a client that reconnects with Last-Event-ID gets exactly what it missed, in order.
 * Also the dashboard's static route: 503 ProblemDetails naming `npm run build:ui` when the build
 * is missing, files and the SPA fallback when present, open without a token.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { registerUiRoutes } from '../../src/api/ui.ts';
import type { AppContext } from '../../src/core/services.ts';
import { resolveConfig } from '../../src/config.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { ROOT, csarOf } from '../helpers/packages.ts';
import { guard } from '../helpers/wait.ts';

const TOKENS = [
  { token: 'events-admin-token-1', name: 'admin', role: 'admin' },
  { token: 'events-p1-token-1', name: 'alice', role: 'operator', project: 'p1' },
  { token: 'events-p2-token-1', name: 'bob', role: 'operator', project: 'p2' },
] as const;
const [ADMIN, P1, P2] = TOKENS.map((t) => t.token) as [string, string, string];
const V2 = { version: '2.0.0', 'content-type': 'application/json' };
const GUARD_MS = 30_000;

let vnfm: TestVnfm;
let vnfdId: string;

interface Sse {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** An open feed: the events received so far, and a way to wait for more and to close it. */
class FeedClient {
  readonly events: Sse[] = [];
  private buf = '';
  private waiters: (() => void)[] = [];
  private readonly ac = new AbortController();
  status = 0;
  private constructor() {}

  static async open(token: string, lastEventId?: number | string): Promise<FeedClient> {
    const c = new FeedClient();
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
    const r = await fetch(`${vnfm.url}/vnfm/v1/events`, { headers, signal: c.ac.signal });
    c.status = r.status;
    assert.equal(r.status, 200, await (r.status === 200 ? Promise.resolve('') : r.text()));
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    void c.read(r.body as ReadableStream<Uint8Array>);
    return c;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const dec = new TextDecoder();
    try {
      for await (const chunk of body) {
        this.buf += dec.decode(chunk, { stream: true });
        let i: number;
        while ((i = this.buf.indexOf('\n\n')) !== -1) {
          const block = this.buf.slice(0, i);
          this.buf = this.buf.slice(i + 2);
          const f: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':') || !line.includes(':')) continue;
            const k = line.slice(0, line.indexOf(':'));
            f[k] = line.slice(line.indexOf(':') + 1).trimStart();
          }
          if (f.data !== undefined && f.id !== undefined) this.events.push({ id: Number(f.id), event: f.event ?? 'message', data: JSON.parse(f.data) });
          for (const w of this.waiters.splice(0)) w();
        }
      }
    } catch {
      // aborted
    }
  }

  /** Waits until an event satisfies `pred`. */
  async waitFor(what: string, pred: (e: Sse) => boolean): Promise<Sse> {
    return guard(
      what,
      (async () => {
        for (;;) {
          const e = this.events.find(pred);
          if (e) return e;
          await new Promise<void>((r) => this.waiters.push(r));
        }
      })(),
      GUARD_MS,
    );
  }

  close(): void {
    this.ac.abort();
  }
}

async function createInstance(token: string, name: string): Promise<string> {
  const r = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { method: 'POST', headers: { ...V2, authorization: `Bearer ${token}` }, body: JSON.stringify({ vnfdId, vnfInstanceName: name }) });
  assert.equal(r.status, 201, await r.clone().text());
  return ((await r.json()) as { id: string }).id;
}

async function deleteInstance(token: string, id: string): Promise<void> {
  const r = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances/${id}`, { method: 'DELETE', headers: { version: '2.0.0', authorization: `Bearer ${token}` } });
  assert.equal(r.status, 204, await r.text());
}

before(async () => {
  vnfm = await testVnfm({ listen: true, config: { apiAuth: 'token', apiTokens: [...TOKENS] } });
  const auth = { authorization: `Bearer ${ADMIN}` };
  const c = await vnfm.app.inject({ method: 'POST', url: '/vnfpkgm/v1/vnf_packages', payload: {}, headers: auth });
  assert.equal(c.statusCode, 201, c.body);
  const id = c.json().id as string;
  const u = await vnfm.app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${id}/package_content`, payload: csarOf(join(ROOT, 'samples/vm-basic')), headers: { ...auth, 'content-type': 'application/zip' } });
  assert.equal(u.statusCode, 202, u.body);
  await vnfm.ctx.packages.idle();
  vnfdId = (await vnfm.app.inject({ method: 'GET', url: `/vnfpkgm/v1/vnf_packages/${id}`, headers: auth })).json().vnfdId;
  assert.ok(vnfdId);
});
let leftOpen: FeedClient | undefined;
after(async () => {
  // a stream still open when the VNFM stops is ended by it (preClose): close() must not wait for the client
  await guard('close with an open event stream', (vnfm?.close() ?? Promise.resolve()) as Promise<void>, GUARD_MS);
  leftOpen?.close();
});

describe('GET /vnfm/v1/events', { timeout: 120_000 }, () => {
  it('needs a valid token (401 with a challenge, like every API route)', async () => {
    const none = await fetch(`${vnfm.url}/vnfm/v1/events`);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /Bearer/);
    assert.match(none.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const bad = await fetch(`${vnfm.url}/vnfm/v1/events`, { headers: { authorization: 'Bearer not-a-token' } });
    assert.equal(bad.status, 401);
    await bad.text();
    const malformed = await fetch(`${vnfm.url}/vnfm/v1/events`, { headers: { authorization: `Bearer ${ADMIN}`, 'last-event-id': 'abc' } });
    assert.equal(malformed.status, 400);
    await malformed.text();
  });

  it('streams the events of the caller\'s project only; the admin sees every project', async () => {
    const admin = await FeedClient.open(ADMIN);
    const p1 = await FeedClient.open(P1);
    const p2 = await FeedClient.open(P2);
    try {
      const a = await createInstance(P1, 'events-p1-a');
      const b = await createInstance(P2, 'events-p2-b');
      const a2 = await createInstance(P1, 'events-p1-c');
      const created = (c: FeedClient, id: string) => c.waitFor(`creation of ${id}`, (e) => e.event === 'VnfIdentifierCreationNotification' && e.data.vnfInstanceId === id);
      await created(admin, a);
      await created(admin, b);
      await created(admin, a2);
      await created(p1, a2);
      await created(p2, b);
      // the admin saw all three after p1's last one was delivered to p1 and p2's to p2: nothing of another project can still be on its way
      assert.deepEqual(
        p1.events.map((e) => e.data.vnfInstanceId),
        [a, a2],
      );
      assert.deepEqual(
        p2.events.map((e) => e.data.vnfInstanceId),
        [b],
      );
      const ev = admin.events.find((e) => e.data.vnfInstanceId === a) as Sse;
      assert.equal(ev.data.notificationType, 'VnfIdentifierCreationNotification');
      assert.equal(ev.data.vnfInstanceName, 'events-p1-a');
      assert.equal(ev.data.subscriptionId, undefined, 'no subscription in the feed');
      // ids increase in the order the events were sent
      const ids = admin.events.map((e) => e.id);
      assert.deepEqual([...ids].sort((x, y) => x - y), ids);
      assert.equal(new Set(ids).size, ids.length);
    } finally {
      admin.close();
      p1.close();
      p2.close();
    }
  });

  it('resumes after a reconnect with Last-Event-ID: exactly the missed events, in order, then live ones', async () => {
    const first = await FeedClient.open(P1);
    const x = await createInstance(P1, 'events-resume-x');
    const seen = await first.waitFor('creation of x', (e) => e.data.vnfInstanceId === x);
    first.close();
    // while disconnected
    const y = await createInstance(P1, 'events-resume-y');
    await createInstance(P2, 'events-resume-other-project');
    await deleteInstance(P1, x);
    const again = await FeedClient.open(P1, seen.id);
    try {
      const del = await again.waitFor('deletion of x', (e) => e.event === 'VnfIdentifierDeletionNotification' && e.data.vnfInstanceId === x);
      assert.deepEqual(
        again.events.map((e) => [e.event, e.data.vnfInstanceId]),
        [
          ['VnfIdentifierCreationNotification', y],
          ['VnfIdentifierDeletionNotification', x],
        ],
      );
      assert.ok(again.events.every((e) => e.id > seen.id));
      // and the live ones after it
      const z = await createInstance(P1, 'events-resume-z');
      const live = await again.waitFor('creation of z', (e) => e.data.vnfInstanceId === z);
      assert.ok(live.id > del.id);
    } finally {
      again.close();
    }
  });

  it('without Accept: text/event-stream: one JSON answer with the events after the resume point, tenant-scoped', async () => {
    const head = (await (await fetch(`${vnfm.url}/vnfm/v1/events`, { headers: { authorization: `Bearer ${P2}` } })).json()) as { events: unknown[]; lastEventId: number };
    assert.deepEqual(head.events, [], 'no resume point: nothing but the head');
    const u = await createInstance(P2, 'events-json-u');
    await createInstance(P1, 'events-json-other');
    const r = await fetch(`${vnfm.url}/vnfm/v1/events?lastEventId=${head.lastEventId}`, { headers: { authorization: `Bearer ${P2}` } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await r.json()) as { events: Sse[]; lastEventId: number };
    assert.deepEqual(
      body.events.map((e) => [e.event, e.data.vnfInstanceId]),
      [['VnfIdentifierCreationNotification', u]],
    );
    assert.ok(body.lastEventId > head.lastEventId);
  });

  it('a stream stays open for the VNFM to end at close (checked by the after hook)', async () => {
    leftOpen = await FeedClient.open(ADMIN);
    const id = await createInstance(ADMIN, 'events-left-open');
    await leftOpen.waitFor('creation', (e) => e.data.vnfInstanceId === id);
  });

  it('an id the feed does not hold answers a reset event, then the live feed', async () => {
    const c = await FeedClient.open(ADMIN, 999_999_999);
    try {
      const reset = await c.waitFor('reset', (e) => e.event === 'reset');
      assert.match(String(reset.data.reason), /reload/);
      const w = await createInstance(ADMIN, 'events-after-reset');
      await c.waitFor('creation of w', (e) => e.data.vnfInstanceId === w);
    } finally {
      c.close();
    }
  });
});

describe('/ui static files', () => {
  it('is open (no token), with the SPA fallback, cache headers and a 503 naming npm run build:ui when not built', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vnfm-ui-'));
    const ctx = { config: resolveConfig({ flags: { sim: false, dataDir: 'memory://' } }) } as unknown as AppContext;
    const app = Fastify();
    await registerUiRoutes(app, ctx, { dir });
    try {
      const missing = await app.inject({ method: 'GET', url: '/ui' });
      assert.equal(missing.statusCode, 503);
      assert.match(missing.headers['content-type'] as string, /^application\/problem\+json/);
      assert.match(missing.json().detail, /npm run build:ui/);
      mkdirSync(join(dir, 'assets'));
      writeFileSync(join(dir, 'index.html'), '<!doctype html><title>x</title>');
      writeFileSync(join(dir, 'assets', 'app-abc.js'), 'console.log(1)');
      const index = await app.inject({ method: 'GET', url: '/ui/' });
      assert.equal(index.statusCode, 200);
      assert.match(index.headers['content-type'] as string, /^text\/html/);
      assert.equal(index.headers['cache-control'], 'no-cache');
      assert.match(index.headers['content-security-policy'] as string, /default-src 'self'/);
      const etag = index.headers.etag as string;
      assert.equal((await app.inject({ method: 'GET', url: '/ui/', headers: { 'if-none-match': etag } })).statusCode, 304);
      const deep = await app.inject({ method: 'GET', url: '/ui/instances/some-id' });
      assert.equal(deep.statusCode, 200);
      assert.equal(deep.body, index.body, 'a route of the front end answers index.html');
      const js = await app.inject({ method: 'GET', url: '/ui/assets/app-abc.js' });
      assert.equal(js.statusCode, 200);
      assert.match(js.headers['content-type'] as string, /^text\/javascript/);
      assert.match(js.headers['cache-control'] as string, /immutable/);
      assert.equal((await app.inject({ method: 'GET', url: '/ui/assets/gone-123.js' })).statusCode, 404);
      assert.equal((await app.inject({ method: 'GET', url: '/ui/..%2f..%2fetc%2fpasswd' })).body, index.body, 'no escape from the folder');
    } finally {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the VNFM serves /ui and its login configuration without a token while the API needs one', async () => {
    const r = await fetch(`${vnfm.url}/ui/`);
    assert.ok(r.status === 200 || r.status === 503, `status ${r.status}`);
    await r.text();
    const cfg = await fetch(`${vnfm.url}/vnfm/v1/ui/config`);
    assert.equal(cfg.status, 200);
    assert.deepEqual(((await cfg.json()) as { authModes: string[] }).authModes, ['token']);
    const api = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { headers: { version: '2.0.0' } });
    assert.equal(api.status, 401);
    await api.text();
  });
});
