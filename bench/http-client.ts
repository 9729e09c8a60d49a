/**
 * The benchmarks' HTTP client for a listening VNFM: JSON or zip bodies, the v2 `Version` header
 * on /vnflcm/v2, errors thrown with the answer, and a poll of an op occ until it ends.
 */
import { Agent, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { vnfmRequest } from '../test/helpers/http.ts';

// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON
export type Json = Record<string, any>;

/** One answer: status, parsed body (`{}` when empty), Location header. */
export interface Answer {
  status: number;
  json: Json;
  location: string | null;
}

/** A caller bound to the VNFM at `base`; 4xx/5xx answers throw. */
export function apiClient(base: string): { call(method: string, path: string, body?: unknown): Promise<Answer>; waitDone(opId: string): Promise<Json> } {
  async function call(method: string, path: string, body?: unknown): Promise<Answer> {
    const r = await vnfmRequest(base, method, path, body);
    if (r.status >= 400) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return { status: r.status, json: r.body, location: r.headers.get('location') };
  }
  /** Polls the op occ every 5 ms until COMPLETED; throws on FAILED_TEMP, FAILED, ROLLED_BACK. */
  async function waitDone(opId: string): Promise<Json> {
    for (;;) {
      const o = (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).json;
      if (o.operationState === 'COMPLETED') return o;
      if (['FAILED_TEMP', 'FAILED', 'ROLLED_BACK'].includes(o.operationState)) throw new Error(`op ${opId} ${o.operationState}: ${JSON.stringify(o.error)}`);
      await sleep(5);
    }
  }
  return { call, waitDone };
}

/** One timed GET: status, headers, body text, and the time from sending to the last byte. */
export interface TimedAnswer {
  ms: number;
  /** The VNFM's own time for the answer (its `Server-Timing: app;dur=`), when it sent one. */
  serverMs: number | undefined;
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * A light timed GET for latency series: `node:http` over keep-alive connections (one per
 * concurrent caller), so the figures are the server's and the loopback's, not the cost and
 * garbage of a heavier client (`fetch` added ~0.3 ms per request and its own GC pauses).
 */
export function timedGetter(base: string, headers: Record<string, string> = {}): { get(path: string): Promise<TimedAnswer>; close(): void } {
  const u = new URL(base);
  const agent = new Agent({ keepAlive: true });
  return {
    get(path) {
      const start = performance.now();
      return new Promise<TimedAnswer>((resolve, reject) => {
        const req = httpRequest({ host: u.hostname, port: Number(u.port), path, agent, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const timing = /app;dur=([\d.]+)/.exec(String(res.headers['server-timing'] ?? ''));
            resolve({ ms: performance.now() - start, serverMs: timing ? Number(timing[1]) : undefined, status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
    },
    close: () => agent.destroy(),
  };
}
