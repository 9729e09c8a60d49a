/**
 * The Kubernetes API client's failure taxonomy and cancellation, against a minimal API server
 * written here (so the exact answers are under the test's control): 429 with Retry-After is
 * retryable and its delay honoured, 403 quota is terminal, and the op's AbortSignal cancels a call
 * in flight and a watch-based wait (never retried).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import { KubeClient } from '../../../src/infra/kubernetes/kube-client.ts';
import { KubeApiError } from '../../../src/infra/kubernetes/kube-error.ts';
import { watchUntil } from '../../../src/infra/kubernetes/readiness.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let endpoint: string;
/** Answers of the next pod listings, in order (then an empty list). */
const podAnswers: Handler[] = [];
const arrived: (() => void)[] = [];

function status(res: ServerResponse, code: number, reason: string, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(code, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code }));
}

before(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/api/v1') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'APIResourceList', groupVersion: 'v1', resources: [{ name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list', 'watch'] }] }));
      return;
    }
    if (url.pathname === '/api/v1/namespaces/default/pods') {
      for (const f of arrived.splice(0)) f();
      if (url.searchParams.get('watch') === 'true') {
        // A watch stream that stays open and quiet.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        return;
      }
      const next = podAnswers.shift();
      if (next) {
        next(req, res);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
      return;
    }
    status(res, 404, 'NotFound', 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const vim = () => ({ vimId: 'k', vimType: 'ETSINFV.KUBERNETES.V_1', interfaceInfo: { endpoint }, accessInfo: { bearer_token: 'tok' } }) as never;
const nextArrival = () => new Promise<void>((r) => arrived.push(r));

describe('Kubernetes API client: failure taxonomy and cancellation', () => {
  it('429 is retryable and carries the Retry-After; the client waits at least that long before its own retry', async () => {
    podAnswers.push((_q, res) => status(res, 429, 'TooManyRequests', 'too many requests, please try again later', { 'Retry-After': '2' }));
    const once = KubeClient.fromVim(vim(), { attempts: 1 });
    await assert.rejects(once.list('v1', 'Pod', 'default'), (e: unknown) => {
      assert.ok(e instanceof KubeApiError);
      assert.equal(e.status, 429);
      assert.equal(e.retryable, true);
      assert.equal(e.retryAfterMs, 2000);
      assert.equal(e.code, 'VNFM_ERR_VIM_UNREACHABLE');
      return true;
    });
    podAnswers.push((_q, res) => status(res, 429, 'TooManyRequests', 'slow down', { 'Retry-After': '0.2' }));
    const delays: number[] = [];
    const twice = KubeClient.fromVim(vim(), { attempts: 2, baseDelayMs: 1, maxDelayMs: 5000, onRetry: (ev) => delays.push(ev.delayMs) });
    assert.deepEqual((await twice.list('v1', 'Pod', 'default')).items, []);
    assert.deepEqual(delays, [200]);
  });

  it('403 quota and 422 invalid are terminal', async () => {
    podAnswers.push((_q, res) => status(res, 403, 'Forbidden', 'pods "x" is forbidden: exceeded quota: compute-resources'));
    podAnswers.push((_q, res) => status(res, 422, 'Invalid', 'Pod "x" is invalid'));
    const c = KubeClient.fromVim(vim(), { attempts: 3, baseDelayMs: 1 });
    for (const want of [403, 422]) {
      await assert.rejects(c.list('v1', 'Pod', 'default'), (e: unknown) => {
        assert.ok(e instanceof KubeApiError && e.status === want, String(e));
        assert.equal(e.retryable, false);
        assert.ok(isVnfmError(e, 'VNFM_ERR_VIM_FAILED'));
        return true;
      });
    }
  });

  it("the op's signal cancels a call in flight; a cancelled call is never retried", async () => {
    podAnswers.push(() => undefined); // never answers
    const ac = new AbortController();
    const c = KubeClient.fromVim(vim(), { attempts: 4, baseDelayMs: 1 }).withSignal(ac.signal);
    const reached = nextArrival();
    const call = c.list('v1', 'Pod', 'default');
    await reached;
    ac.abort(new Error('lease lost'));
    await assert.rejects(call, (e: unknown) => {
      assert.ok(e instanceof KubeApiError, String(e));
      assert.equal(e.retryable, false);
      assert.match(e.message, /cancelled/);
      return true;
    });
    await assert.rejects(c.list('v1', 'Pod', 'default'), /cancelled/, 'an aborted view refuses new calls');
  });

  it("the op's signal ends a watch-based wait at once (terminal, not a timeout)", async () => {
    const ac = new AbortController();
    const c = KubeClient.fromVim(vim(), {}).withSignal(ac.signal);
    let evaluated!: () => void;
    const listed = new Promise<void>((r) => (evaluated = r));
    const wait = watchUntil(
      c,
      [{ apiVersion: 'v1', kind: 'Pod', namespace: 'default' }],
      () => {
        evaluated();
        return { done: false, progress: 'no pod Ready' };
      },
      { timeoutMs: 600_000, what: 'test wait' },
    );
    await listed;
    ac.abort(new Error('the VNFM is shutting down'));
    await assert.rejects(wait, (e: unknown) => {
      assert.ok(isVnfmError(e, 'VNFM_ERR_LCM_INTERRUPTED'), String(e));
      assert.equal(e.retryable, false);
      assert.match(e.message, /test wait: cancelled \(the VNFM is shutting down\)/);
      return true;
    });
  });
});
