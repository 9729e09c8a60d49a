/**
 * One HTTP request to a listening VNFM, as the e2e tests and the benchmarks make them: a JSON
 * body (or a zip Buffer for a package upload), the `Version: 2.0.0` header on /vnflcm/v2, and the
 * answer's body parsed when it is JSON (`{}` otherwise).
 */
// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON
type Json = Record<string, any>;

/** An answer of the VNFM. */
export interface Reply {
  status: number;
  headers: Headers;
  body: Json;
  text: string;
}

/** `method path` on the VNFM at `base`; never throws for an HTTP status. */
export async function vnfmRequest(base: string, method: string, path: string, body?: unknown): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (path.startsWith('/vnflcm/v2')) headers.version = '2.0.0';
  let payload: string | Uint8Array<ArrayBuffer> | undefined;
  if (Buffer.isBuffer(body)) {
    headers['content-type'] = 'application/zip';
    payload = new Uint8Array(body);
  } else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(`${base}${path}`, { method, headers, ...(payload === undefined ? {} : { body: payload }) });
  const text = await res.text();
  let parsed: Json = {};
  try {
    parsed = text ? (JSON.parse(text) as Json) : {};
  } catch {
    parsed = {};
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}
