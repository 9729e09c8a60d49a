/**
 * A `fetch` with per-destination TLS settings: a CA bundle (PEM) trusted instead of the system
 * CAs for that destination, or no certificate verification at all (a VIM registered with
 * `cert_verify: false`). Node's built-in fetch has no per-request TLS options, so this one speaks
 * HTTP over `node:https` / `node:http`: method, headers, a string or byte body, an abort signal,
 * no redirects (what the VNFM's clients use). A network failure rejects with a `TypeError` whose
 * `cause` is the socket error (its `code`, e.g. ECONNREFUSED, as the built-in fetch does).
 *
 * Its fetches are **pinnable** ({@link isPinnable}): the outbound guard (src/net/outbound.ts)
 * passes the addresses it checked under {@link PINNED_LOOKUP} in the request init, and the
 * connection is made to those addresses instead of resolving the name again (TLS still verifies
 * the certificate against the URL's host name).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** Request-init key of a `lookup` function (node:net style) the connection must use. */
export const PINNED_LOOKUP: unique symbol = Symbol.for('vnfm.net.pinnedLookup');
const PINNABLE: unique symbol = Symbol.for('vnfm.net.pinnable');

/** A node:net `lookup` function. */
export type LookupFunction = (hostname: string, options: unknown, callback: (...args: unknown[]) => void) => void;

/** True when `f` honours {@link PINNED_LOOKUP} (a fetch of this module, or one marked with {@link markPinnable}). */
export function isPinnable(f: unknown): boolean {
  return typeof f === 'function' && (f as unknown as Record<symbol, unknown>)[PINNABLE] === true;
}

/** Marks a fetch that passes its init (with {@link PINNED_LOOKUP}) on to a pinnable fetch. */
export function markPinnable<F extends typeof fetch>(f: F): F {
  (f as unknown as Record<symbol, unknown>)[PINNABLE] = true;
  return f;
}

/** TLS settings of one destination. */
export interface TlsOptions {
  /** PEM CA bundle trusted for the destination (replaces the system CAs for it). */
  ca?: string;
  /** Verify the server certificate. @default true */
  rejectUnauthorized?: boolean;
}

async function bodyBytes(body: RequestInit['body']): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (body instanceof ArrayBuffer) return Buffer.from(new Uint8Array(body));
  return Buffer.from(await new Response(body as BodyInit).arrayBuffer());
}

/** A fetch honouring `tls` for https URLs (http URLs are sent as they are). */
export function tlsFetch(tls: TlsOptions): typeof fetch {
  const f = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const method = (init.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => {
      headers[k] = v;
    });
    const body = await bodyBytes(init.body);
    if (body && headers['content-length'] === undefined) headers['content-length'] = String(body.length);
    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    return new Promise<Response>((resolve, reject) => {
      const onResponse = (res: IncomingMessage): void => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: e })));
        res.on('end', () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) {
            if (Array.isArray(v)) for (const x of v) h.append(k, x);
            else if (v !== undefined) h.set(k, v);
          }
          const status = res.statusCode ?? 502;
          const noBody = method === 'HEAD' || status === 204 || status === 304;
          resolve(new Response(noBody ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage ?? '', headers: h }));
        });
      };
      const lookup = (init as Record<symbol, unknown>)[PINNED_LOOKUP] as LookupFunction | undefined;
      // a pinned connection gets its own socket (a pooled one may have been opened for another address)
      const common = { method, headers, ...(signal ? { signal } : {}), ...(lookup ? { lookup: lookup as never, agent: false } : {}) };
      const req =
        url.protocol === 'https:'
          ? httpsRequest(url, { ...common, ...(tls.ca ? { ca: tls.ca } : {}), rejectUnauthorized: tls.rejectUnauthorized ?? true }, onResponse)
          : httpRequest(url, common, onResponse);
      req.on('error', (e) => reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: e })));
      req.end(body);
    });
  };
  return markPinnable(f as typeof fetch);
}

/** A CA bundle for the URLs under a prefix. */
export interface PrefixTls {
  prefix: string;
  ca: string;
}

/** True when `url` is under `prefix`: same scheme, host and port, and its path starts with the prefix's path. */
export function underPrefix(url: URL, prefix: URL): boolean {
  if (url.origin !== prefix.origin) return false;
  const p = prefix.pathname;
  return p === '/' || url.pathname === p || url.pathname.startsWith(p.endsWith('/') ? p : `${p}/`);
}

/**
 * A fetch choosing the CA bundle by URL: the longest matching prefix's (`notifications.tls`),
 * else `fallback` (a CA bundle for every other https URL, or the system CAs). Verification is
 * always on. Pinnable (src/net/outbound.ts).
 */
export function fetchByPrefixTls(entries: readonly PrefixTls[], fallback: TlsOptions = {}): typeof fetch {
  const byPrefix = entries.map((e) => ({ prefix: new URL(e.prefix), fetch: tlsFetch({ ca: e.ca }) })).sort((a, b) => b.prefix.href.length - a.prefix.href.length);
  const other = tlsFetch(fallback);
  const f = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const hit = url.protocol === 'https:' ? byPrefix.find((e) => underPrefix(url, e.prefix)) : undefined;
    return (hit?.fetch ?? other)(input, init);
  };
  return markPinnable(f as typeof fetch);
}

/**
 * The fetch for a VIM connection's TLS settings (`interfaceInfo.skipCertificateVerification`, from
 * a registered VIM's `cert_verify: false`; `interfaceInfo.ssl_ca_cert` / `caCert`, a PEM bundle),
 * or undefined when it has none (the built-in fetch, system CAs, verification on).
 */
export function fetchForVimTls(interfaceInfo: Record<string, unknown> | undefined): typeof fetch | undefined {
  const ii = interfaceInfo ?? {};
  const skip = ii.skipCertificateVerification === true || ii.skipCertificateVerification === 'true';
  const ca = typeof ii.ssl_ca_cert === 'string' && ii.ssl_ca_cert.includes('BEGIN CERTIFICATE') ? ii.ssl_ca_cert : typeof ii.caCert === 'string' && ii.caCert.includes('BEGIN CERTIFICATE') ? ii.caCert : undefined;
  if (!skip && !ca) return undefined;
  return tlsFetch({ ...(ca ? { ca } : {}), rejectUnauthorized: !skip });
}
