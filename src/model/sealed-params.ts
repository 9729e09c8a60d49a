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

/** Words that make a name a secret wherever they stand (`ssh_password`, `authToken`, `client_secret`). */
const SECRET_WORDS = new Set([
  'password', 'passwords', 'passwd', 'passphrase', 'secret', 'secrets', 'token', 'tokens', 'credential', 'credentials', 'cred', 'creds',
  'bearer', 'cookie', 'cookies', 'authorization', 'kubeconfig', 'apikey', 'accesskey', 'secretkey', 'privatekey', 'sshkey', 'authkey', 'psk',
]);
/** Leading words that make a name a secret (`auth`, `auth_info`, `authCred`), unless its last word describes it. */
const AUTH_WORDS = new Set(['auth', 'authentication', 'authn', 'authz']);
/**
 * Last words of names that describe a secret without holding it (`auth_url`, `token_type`,
 * `secret_name`, `ssh_key_file`, `kubeconfig_path`, `access_key_id`): never a secret.
 */
const DESCRIPTOR_WORDS = new Set([
  'url', 'urls', 'uri', 'uris', 'endpoint', 'endpoints', 'host', 'hostname', 'address', 'port', 'path', 'file', 'dir', 'directory', 'name', 'names',
  'id', 'ids', 'type', 'kind', 'ref', 'format', 'length', 'size', 'ttl', 'expiry', 'expires', 'expiration', 'at', 'algorithm', 'alg', 'mode', 'method',
  'scheme', 'policy', 'enabled', 'required', 'version', 'timeout', 'count', 'interval',
]);
/**
 * Words before `key` that make it structural or public, not a credential: `label_key` and
 * `sort_key` (a Kubernetes selector, an ordering), `public_key`, `host_key`, `authorized_keys`.
 */
const STRUCTURAL_KEY_QUALIFIERS = new Set([
  'public', 'host', 'authorized', 'label', 'labels', 'sort', 'partition', 'primary', 'foreign', 'idempotency', 'cache', 'map', 'routing', 'object',
  'range', 'lookup', 'index', 'unique', 'composite', 'match', 'selector', 'annotation', 'field', 'dict', 'row', 'column', 'group', 'topology', 'node',
  'hash', 'shard', 'dedup', 'metadata', 'tag', 'json', 'yaml', 'config', 'param', 'parameter', 'env', 'dns', 'registry',
]);

/** Names configured as secrets (`secrets.extraNames`) and as never secrets (`secrets.neverNames`), lower case. */
let extraNames = new Set<string>();
let neverNames = new Set<string>();

/**
 * Adds names to the rule of {@link isSecretKey} (process-wide; from `secrets.extraNames` and
 * `secrets.neverNames`): an extra name is always a secret, a never name never. Exact names,
 * compared without regard to case.
 */
export function configureSecretNames(o: { extraNames?: readonly string[]; neverNames?: readonly string[] }): void {
  extraNames = new Set((o.extraNames ?? []).map((n) => n.toLowerCase()));
  neverNames = new Set((o.neverNames ?? []).map((n) => n.toLowerCase()));
}

/** The words of a name: snake_case, kebab-case, dotted and camelCase split, lower case, trailing digits dropped. */
export function nameWords(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .map((w) => w.toLowerCase().replace(/\d+$/, ''))
    .filter((w) => w !== '');
}

/**
 * Whether a parameter of this name holds a secret (docs/security.md, Secrets and files). In order:
 * a `secrets.neverNames` name is not, a `secrets.extraNames` name is; a name whose last word
 * describes a secret without holding it (`..._url`, `..._type`, `..._name`, `..._file`, `..._id`,
 * ...) is not; a name with a secret word (password, passwd, passphrase, secret, token, credential,
 * cred, bearer, cookie, authorization, kubeconfig, apikey, ...), or starting with `auth`, is; so is
 * `<qualifier>_key` (`api_key`, `access_key`, `secret_key`, `private_key`, `ssh_key`, `sshPrivateKey`)
 * unless the qualifier makes it structural or public (`label_key`, `sort_key`, `public_key`,
 * `host_key`); a bare `key` is not.
 */
export function isSecretKey(key: string): boolean {
  const lower = key.toLowerCase();
  if (neverNames.has(lower)) return false;
  if (extraNames.has(lower)) return true;
  const w = nameWords(key);
  if (w.length === 0) return false;
  if (DESCRIPTOR_WORDS.has(w[w.length - 1] as string)) return false;
  for (let i = 0; i < w.length; i++) {
    const word = w[i] as string;
    if (SECRET_WORDS.has(word)) return true;
    if (i > 0 && SECRET_WORDS.has(`${w[i - 1]}${word}`)) return true;
    if (i > 0 && (word === 'key' || word === 'keys') && !STRUCTURAL_KEY_QUALIFIERS.has(w[i - 1] as string)) return true;
  }
  return AUTH_WORDS.has(w[0] as string);
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
