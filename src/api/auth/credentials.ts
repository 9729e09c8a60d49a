/**
 * What credential a request presents, read defensively: a header that is repeated, too long or
 * holds characters no token has is refused here (400 or 401), so no mode ever sees it and no
 * malformed header can reach a code path that fails with a 500.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { vnfmError } from '../../errors.ts';

/** A credential from the request headers. */
export type Presented =
  | { kind: 'none' }
  /** X-Auth-Token (Keystone style) or `Authorization: Bearer` */
  | { kind: 'token'; token: string; header: 'x-auth-token' | 'bearer' }
  | { kind: 'basic'; user: string; password: string }
  /** An Authorization scheme no mode accepts. */
  | { kind: 'other'; scheme: string };

/** Visible ASCII only (RFC 7230 token68 and Keystone/Fernet tokens are a subset). */
const TOKEN_CHARS = /^[\x21-\x7e]+$/;

const AUTH_ERROR = Symbol('oauthError');

/** A 401 with the RFC 6750 error code its `WWW-Authenticate` challenge names. */
export function unauthorized(detail: string, oauthError?: 'invalid_request' | 'invalid_token'): Error {
  const e = vnfmError('VNFM_ERR_API_UNAUTHORIZED', detail);
  if (oauthError) (e as unknown as Record<symbol, string>)[AUTH_ERROR] = oauthError;
  return e;
}

/** The RFC 6750 error code of an error made by {@link unauthorized}. */
export function oauthErrorOf(e: unknown): string | undefined {
  return e && typeof e === 'object' ? ((e as Record<symbol, string>)[AUTH_ERROR] ?? undefined) : undefined;
}

/** Thrown for a malformed credential header (401 with `error="invalid_request"`). */
export function malformed(detail: string): Error {
  return unauthorized(detail, 'invalid_request');
}

function single(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  if (v === undefined) return undefined;
  if (Array.isArray(v)) throw malformed(`the ${name} header is given more than once`);
  return v;
}

/**
 * Reads the credential of a request; throws 400 (oversized) or 401 (malformed). `rawHeaders`
 * (the request's header list as received) refuses a repeated Authorization header, which Node
 * would otherwise reduce silently to its first value.
 */
export function presentedCredential(h: IncomingHttpHeaders, maxBytes: number, rawHeaders?: readonly string[]): Presented {
  if (rawHeaders) {
    let authz = 0;
    let xAuth = 0;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const n = (rawHeaders[i] as string).toLowerCase();
      if (n === 'authorization') authz++;
      else if (n === 'x-auth-token') xAuth++;
    }
    if (authz > 1) throw malformed('the Authorization header is given more than once');
    if (xAuth > 1) throw malformed('the X-Auth-Token header is given more than once');
  }
  const xAuth = single(h, 'x-auth-token');
  const authz = single(h, 'authorization');
  for (const [name, v] of [
    ['X-Auth-Token', xAuth],
    ['Authorization', authz],
  ] as const) {
    if (v !== undefined && Buffer.byteLength(v, 'latin1') > maxBytes) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `the ${name} header is longer than ${maxBytes} bytes`);
  }
  if (xAuth !== undefined) {
    const t = xAuth.trim();
    if (t === '' || !TOKEN_CHARS.test(t)) throw malformed('the X-Auth-Token header is empty or holds characters no token has');
    return { kind: 'token', token: t, header: 'x-auth-token' };
  }
  if (authz === undefined || authz.trim() === '') return { kind: 'none' };
  const m = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?: +(.*))?$/.exec(authz.trim());
  if (!m) throw malformed('the Authorization header is malformed');
  const scheme = (m[1] as string).toLowerCase();
  const rest = (m[2] ?? '').trim();
  if (scheme === 'bearer') {
    if (rest === '' || !TOKEN_CHARS.test(rest)) throw malformed('the Bearer token is empty or holds characters no token has');
    return { kind: 'token', token: rest, header: 'bearer' };
  }
  if (scheme === 'basic') {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(rest)) throw malformed('the Basic credentials are not base64');
    const decoded = Buffer.from(rest, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw malformed('the Basic credentials have no user:password');
    return { kind: 'basic', user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return { kind: 'other', scheme };
}
