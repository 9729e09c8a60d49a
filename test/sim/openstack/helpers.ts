/**
 * HTTP helpers for the OpenStack sim tests: they talk to the sim only over HTTP, the way the
 * VNFM's driver does (token from Keystone, endpoints from the catalog, Heat 302 lookups).
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { REAL_HEAT_TEMPLATES_DIR, TACKER_SAMPLES_DIR } from '../../helpers/fixtures.ts';
import type { OpenStackSim } from '../../../src/sim/openstack/index.ts';

/** A JSON HTTP answer. */
export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test helper returns free-form JSON
  body: any;
}

/** Sends a request and parses the JSON answer (redirects are not followed). */
export async function call(method: string, url: string, token?: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, {
    method,
    redirect: 'manual',
    headers: {
      'Content-Type': 'application/json',
      ...(token ? { 'X-Auth-Token': token } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** A logged-in session: token plus the catalog endpoints. */
export interface Session {
  token: string;
  projectId: string;
  heat: string;
  nova: string;
  // biome-ignore lint/suspicious/noExplicitAny: catalog is free-form JSON
  catalog: any[];
}

/** Password auth with project scope, exactly as Tacker's vimConnectionInfo does it. */
export async function login(sim: OpenStackSim): Promise<Session> {
  const c = sim.credentials;
  const r = await call('POST', `${sim.authUrl}/auth/tokens`, undefined, {
    auth: {
      identity: { methods: ['password'], password: { user: { name: c.username, domain: { name: c.userDomain }, password: c.password } } },
      scope: { project: { name: c.project, domain: { name: c.projectDomain } } },
    },
  });
  if (r.status !== 201) throw new Error(`login failed: ${r.status}`);
  const token = r.headers.get('x-subject-token') as string;
  const catalog = r.body.token.catalog;
  // biome-ignore lint/suspicious/noExplicitAny: catalog is free-form JSON
  const url = (type: string): string => catalog.find((s: any) => s.type === type).endpoints.find((e: any) => e.interface === 'public').url;
  return { token, projectId: r.body.token.project.id, heat: url('orchestration'), nova: url('compute'), catalog };
}

/** Polls `GET url` until the stack status satisfies `done` (or the stack is gone: returns undefined). */
export async function waitStack(s: Session, url: string, done: (status: string) => boolean, timeoutMs = 10_000): Promise<Answer['body'] | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const r = await call('GET', url, s.token);
    if (r.status === 404) return undefined;
    if (r.status === 200 && done(r.body.stack.stack_status)) return r.body.stack;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error(`timeout waiting on ${url}`);
}

/** Stack settled (no `*_IN_PROGRESS`). */
export const settled = (status: string): boolean => !status.endsWith('_IN_PROGRESS');

const SAMPLES = pathToFileURL(`${TACKER_SAMPLES_DIR}/sol_v2_common/`);
const REAL_HEAT_TEMPLATES = pathToFileURL(`${REAL_HEAT_TEMPLATES_DIR}/`);

/** Tacker's `basic_lcms_min` BaseHOT (top template + nested VDU1.yaml), unchanged. */
export function basicLcmsMin(): { template: string; files: Record<string, string> } {
  const base = new URL('basic_lcms_min/contents/BaseHOT/simple/', SAMPLES);
  return {
    template: readFileSync(new URL('sample2.yaml', base), 'utf8'),
    files: { 'VDU1.yaml': readFileSync(new URL('nested/VDU1.yaml', base), 'utf8') },
  };
}

/** A template of the real-heat test bed (`simple.yaml`, `vnf.yaml`, `vdu.yaml`, ...), unchanged. */
export function realHeatTemplate(name: string): string {
  return readFileSync(new URL(name, REAL_HEAT_TEMPLATES), 'utf8');
}

/** The `nfv` parameter Tacker builds for basic_lcms_min. */
export function nfvFor(vdu1Capacity: number, flavor = 'm1.tiny'): Record<string, unknown> {
  return {
    VDU: {
      VDU1: { computeFlavourId: flavor, vcImageId: 'cirros', desired_capacity: vdu1Capacity },
      VDU2: { computeFlavourId: flavor, vcImageId: 'cirros' },
    },
  };
}

/** `name/id` of the stack a resource row lives in (its `stack` link), as Tacker's heat_utils reads it. */
// biome-ignore lint/suspicious/noExplicitAny: resource rows are free-form JSON
export function stackOf(row: any): string {
  // biome-ignore lint/suspicious/noExplicitAny: links are free-form JSON
  const href: string = row.links.find((l: any) => l.rel === 'stack').href;
  return href.split('/').slice(-2).join('/');
}
