/**
 * Minimal HTTP plumbing shared by the simulated OpenStack services (Keystone, Heat, Nova, fault
 * injection). The simulators deliberately use bare `node:http` instead of the product's web stack
 * so they stay independent of it: a bug in the VNFM's HTTP layer must never hide in the sims.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A parsed request as every simulated API handler sees it. */
export interface SimRequest {
  readonly method: string;
  /** Path without query string, with duplicate slashes collapsed. */
  readonly path: string;
  /** Path segments, already percent-decoded. */
  readonly segments: readonly string[];
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];
  /** Parsed JSON body (`undefined` when empty). */
  readonly body: unknown;
  /** Raw query string including the leading `?` (empty when none), kept for redirects. */
  readonly search: string;
  /** Base URL (`http://host:port`) as the client addressed us, used to build links. */
  readonly baseUrl: string;
}

/** What a handler returns; `body` is JSON-encoded unless it is a string or `undefined`. */
export interface SimResponse {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/**
 * Thrown by handlers to answer with an error; carries an OpenStack-shaped body so callers see the
 * same error documents a real service would send.
 */
export class SimHttpError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown, message?: string) {
    super(message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** Largest request body the sims accept (templates with many nested files stay far below). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** Reads and parses a JSON request body; an invalid document answers 400 like the real services. */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) {
      throw new SimHttpError(413, { error: { code: 413, title: 'Request Entity Too Large', message: 'body too large' } });
    }
    chunks.push(buf);
  }
  if (size === 0) return undefined;
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SimHttpError(400, {
      error: { code: 400, title: 'Bad Request', message: 'The request body is not valid JSON.' },
    });
  }
}

/** Builds a {@link SimRequest} from a raw request once its body has been read. */
export function toSimRequest(req: IncomingMessage, body: unknown): SimRequest {
  const rawUrl = req.url ?? '/';
  const host = req.headers.host ?? 'localhost';
  const url = new URL(rawUrl.replace(/\/{2,}/g, '/'), `http://${host}`);
  const segments = url.pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  return {
    method: (req.method ?? 'GET').toUpperCase(),
    path: url.pathname,
    segments,
    query: url.searchParams,
    headers: req.headers,
    body,
    search: url.search,
    baseUrl: `http://${host}`,
  };
}

/** Writes a {@link SimResponse}; JSON bodies get `Content-Type: application/json`. */
export function sendResponse(res: ServerResponse, out: SimResponse): void {
  const headers: Record<string, string> = { ...(out.headers ?? {}) };
  let payload: string | undefined;
  if (out.body !== undefined && out.status !== 204) {
    if (out.body === null) {
      payload = 'null';
      headers['Content-Type'] ??= 'application/json';
    } else if (typeof out.body === 'string') {
      payload = out.body;
      headers['Content-Type'] ??= 'text/plain; charset=utf-8';
    } else {
      payload = JSON.stringify(out.body);
      headers['Content-Type'] ??= 'application/json';
    }
  }
  headers['Content-Length'] = String(payload === undefined ? 0 : Buffer.byteLength(payload));
  res.writeHead(out.status, headers);
  res.end(payload);
}

/** Reads one header as a single string (first value when repeated). */
export function header(req: SimRequest, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  if (Array.isArray(v)) return v[0];
  return v;
}

/** Returns `value` as a plain object or throws 400, so handlers can read request fields safely. */
export function asObject(value: unknown, what = 'request body'): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new SimHttpError(400, {
      error: { code: 400, title: 'Bad Request', message: `The ${what} must be a JSON object.` },
    });
  }
  return value as Record<string, unknown>;
}

/** A tiny promise-based sleep used for injected latency and operation delays. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    t.unref?.();
  });
}
