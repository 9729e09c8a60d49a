/**
 * Secrets inside operation parameters (`additionalParams` of LCM requests: SSH passwords and keys of
 * a VNF's VMs, tokens). They are sealed before an op occ is stored: the value of every key named
 * like a secret ({@link isSecretKey}) becomes the string `vnfm-sealed:<sealed JSON>`. API bodies
 * show `****` in their place ({@link maskSealed}); only management drivers get them back in clear
 * ({@link unsealParams}). The functions take the sealing functions as arguments (the key lives in
 * the store's SecretBox).
 */

/** Prefix of a sealed value inside a parameter tree. */
export const SEALED_PREFIX = 'vnfm-sealed:';
/** What API bodies show instead of a secret. */
export const MASK = '****';

const SECRET_KEY = /^(?:.*_)?(?:password|passwd|passphrase|private_?key|secret|client_?secret|token|bearer_?token)$/i;
const CAMEL_SECRET = /(?:Password|Passwd|Passphrase|PrivateKey|Secret|Token)$/;

/** Whether a parameter of this name holds a secret (snake_case or camelCase spellings). */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || CAMEL_SECRET.test(key);
}

type Tree = unknown;

function mapTree(v: Tree, leaf: (key: string, value: unknown) => unknown, secret: (key: string) => boolean, key = ''): unknown {
  if (Array.isArray(v)) return v.map((x) => mapTree(x, leaf, secret, key));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      out[k] = secret(k) && x !== null && x !== undefined ? leaf(k, x) : mapTree(x, leaf, secret, k);
    }
    return out;
  }
  return v;
}

/**
 * A copy of `tree` with every secret value sealed (already sealed values are kept). `secret`
 * decides which attribute names hold secrets (default {@link isSecretKey}); a whole object or
 * array under such a name is sealed as one value.
 */
export function sealParams<T>(tree: T, seal: (value: unknown) => string, secret: (key: string) => boolean = isSecretKey): T {
  return mapTree(tree, (_k, x) => (typeof x === 'string' && x.startsWith(SEALED_PREFIX) ? x : `${SEALED_PREFIX}${seal(x)}`), secret) as T;
}

/** Secret attribute names of an NFVO's Grant: the usual ones, and every `accessInfo` (VIM credentials a grant may carry). */
export function isGrantSecretKey(key: string): boolean {
  return key === 'accessInfo' || isSecretKey(key);
}

/** A copy of a Grant without its VIM credentials (`accessInfo` removed), for package hook scripts. */
export function withoutAccessInfo<T>(tree: T): T {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([k]) => k !== 'accessInfo').map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(tree) as T;
}

/** A copy of `tree` with every sealed value opened. */
export function unsealParams<T>(tree: T, open: (sealed: string) => unknown): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string' && v.startsWith(SEALED_PREFIX)) return open(v.slice(SEALED_PREFIX.length));
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(tree) as T;
}

/** A copy of `tree` for API bodies: sealed values and any secret-named value become `****`. */
export function maskSealed<T>(tree: T): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string' && v.startsWith(SEALED_PREFIX)) return MASK;
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, isSecretKey(k) && x !== null && x !== undefined ? MASK : walk(x)]));
    return v;
  };
  return walk(tree) as T;
}
