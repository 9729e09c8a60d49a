/**
 * The dashboard's API client: every call goes to the VNFM's normal API (same origin) with the
 * token of the login (sessionStorage) and `Version: 2.0.0` on the v2 LCM API. Errors become
 * {@link ApiError} carrying the ProblemDetails.
 */
import type { InstantiatedVnfInfo, VnfcInfo, VnfcResourceInfo } from '../../src/model/vnf-instance.ts';
import type { Operation, OpState } from '../../src/model/op-occ.ts';

export type { InstantiatedVnfInfo, VnfcInfo, VnfcResourceInfo, Operation, OpState };

/** SOL ProblemDetails (plus the VNFM's own fields). */
export interface Problem {
  status: number;
  title?: string;
  detail: string;
  type?: string;
  instance?: string;
  [k: string]: unknown;
}

/** A VnfInstance as the v2 API returns it (JSON: dates as strings). */
export interface VnfInstance {
  id: string;
  vnfInstanceName?: string;
  vnfInstanceDescription?: string;
  vnfdId: string;
  vnfPkgId?: string;
  vnfProvider: string;
  vnfProductName: string;
  vnfSoftwareVersion: string;
  vnfdVersion: string;
  instantiationState: 'NOT_INSTANTIATED' | 'INSTANTIATED';
  vnfConfigurableProperties?: Record<string, unknown>;
  vimConnectionInfo?: Record<string, { vimId?: string; vimType: string; interfaceInfo?: Record<string, unknown> }>;
  instantiatedVnfInfo?: InstantiatedVnfInfo;
  metadata?: Record<string, unknown>;
}

/** A VnfLcmOpOcc as the v2 API returns it. */
export interface OpOcc {
  id: string;
  operationState: OpState;
  stateEnteredTime: string;
  startTime: string;
  vnfInstanceId: string;
  operation: Operation;
  isAutomaticInvocation: boolean;
  operationParams?: Record<string, unknown>;
  error?: Problem;
  resourceChanges?: Record<string, unknown>;
  vnfmRetry?: { step?: string; failedAttempts?: number; maxAttempts?: number; nextAttemptTime?: string; lastError?: unknown };
  vnfmProgress?: Record<string, unknown>;
  _links?: Record<string, { href: string }>;
}

const TOKEN_KEY = 'vnfm.token';
const TOKEN_KIND_KEY = 'vnfm.tokenKind';

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.status} ${problem.title ?? ''}: ${problem.detail}`);
  }
}

/** The login of this browser tab. */
export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  get kind(): string | null {
    return sessionStorage.getItem(TOKEN_KIND_KEY);
  },
  set(token: string, kind: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(TOKEN_KIND_KEY, kind);
  },
  clear(): void {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(TOKEN_KIND_KEY);
  },
};

let onUnauthorized: (() => void) | undefined;
/** Called when the API answers 401 (the login page is shown again). */
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

/** Headers of an API call: the token, and the v2 version header for the LCM API. */
export function authHeaders(path: string): Record<string, string> {
  const h: Record<string, string> = {};
  const t = session.token;
  if (t) {
    if (session.kind === 'keystone') h['x-auth-token'] = t;
    else h.authorization = `Bearer ${t}`;
  }
  if (path.startsWith('/vnflcm/v2/')) h.version = '2.0.0';
  return h;
}

async function problemOf(r: Response): Promise<Problem> {
  const text = await r.text();
  try {
    const p = JSON.parse(text) as Problem;
    if (p && typeof p === 'object' && typeof p.detail === 'string') return { ...p, status: p.status ?? r.status };
  } catch {
    // not JSON
  }
  return { status: r.status, title: r.statusText, detail: text.slice(0, 500) || r.statusText };
}

/** One API call; JSON in and out. Throws {@link ApiError}. */
export async function api<T = unknown>(path: string, init: { method?: string; body?: unknown; raw?: BodyInit; contentType?: string; headers?: Record<string, string> } = {}): Promise<{ data: T; headers: Headers; status: number }> {
  const headers: Record<string, string> = { accept: 'application/json', ...authHeaders(path), ...(init.headers ?? {}) };
  let body: BodyInit | undefined;
  if (init.raw !== undefined) {
    body = init.raw;
    headers['content-type'] = init.contentType ?? 'application/octet-stream';
  } else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] = init.contentType ?? 'application/json';
  }
  const r = await fetch(path, { method: init.method ?? 'GET', headers, body });
  if (r.status === 401) onUnauthorized?.();
  if (!r.ok) throw new ApiError(await problemOf(r));
  const text = r.status === 204 ? '' : await r.text();
  return { data: (text ? JSON.parse(text) : undefined) as T, headers: r.headers, status: r.status };
}

/** One page of a SOL list and the marker of the next (from the `Link: <...>; rel="next"` header). */
export interface Page<T> {
  items: T[];
  next?: string;
}

/** Reads one page of a SOL list (`query` without the marker; `marker`: the page to read). */
export async function listPage<T>(path: string, query: Record<string, string | undefined>, marker?: string): Promise<Page<T>> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, v);
  if (marker) q.set('nextpage_opaque_marker', marker);
  const qs = q.toString();
  const r = await api<T[]>(qs ? `${path}?${qs}` : path);
  const link = r.headers.get('link') ?? '';
  const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(link);
  const next = m ? (new URL(m[1] as string, location.origin).searchParams.get('nextpage_opaque_marker') ?? undefined) : undefined;
  return { items: r.data ?? [], next };
}

/** Every item of a list (follows the next links; for the small lists). */
export async function listAll<T>(path: string, query: Record<string, string | undefined> = {}, max = 2000): Promise<T[]> {
  const out: T[] = [];
  let marker: string | undefined;
  do {
    const p = await listPage<T>(path, query, marker);
    out.push(...p.items);
    marker = p.next;
  } while (marker && out.length < max);
  return out;
}

/** Quotes a value for a SOL filter expression (`'` doubled, the whole value in quotes). */
export function solValue(v: string): string {
  return `'${v.replace(/'/g, "''")}'`;
}

/** Terminal and waiting op states. */
export const FINAL_STATES: ReadonlySet<string> = new Set(['COMPLETED', 'FAILED', 'ROLLED_BACK']);
