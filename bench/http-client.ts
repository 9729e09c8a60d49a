/**
 * The benchmarks' HTTP client for a listening VNFM: JSON or zip bodies, the v2 `Version` header
 * on /vnflcm/v2, errors thrown with the answer, and a poll of an op occ until it ends.
 */
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
