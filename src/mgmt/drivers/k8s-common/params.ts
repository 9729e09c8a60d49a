/**
 * Parameter helpers shared by the Kubernetes cluster drivers (Tacker's parameters, spec §1.2):
 * camelCase keys (as Tacker's v1 API shows them) normalised to snake_case, CIDR and path checks,
 * how a driver logs in to a node.
 */
import { isIP } from 'node:net';

type Obj = Record<string, unknown>;

/** How the driver logs in to a node. */
export interface NodeAccess {
  username: string;
  password?: string;
  privateKey?: string;
  passphrase?: string;
}

export function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `sshCpName` -> `ssh_cp_name`, `k8sClusterInstallationParam` -> `k8s_cluster_installation_param`. */
export function snakeCase(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

function deepMerge(base: unknown, over: unknown): unknown {
  if (isObj(base) && isObj(over)) {
    const out: Obj = { ...base };
    for (const [k, v] of Object.entries(over)) out[k] = k in out ? deepMerge(out[k], v) : v;
    return out;
  }
  return over;
}

/**
 * Keys converted to snake_case, recursively (values untouched). When both spellings of a key are
 * given, the snake_case one wins (merged into the converted one when both are objects).
 */
export function normalizeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizeKeys);
  if (!isObj(value)) return value;
  const converted: Obj = {};
  const snake: Obj = {};
  for (const [k, v] of Object.entries(value)) {
    const s = snakeCase(k);
    if (s === k) snake[k] = normalizeKeys(v);
    else converted[s] = k in converted ? deepMerge(converted[s], normalizeKeys(v)) : normalizeKeys(v);
  }
  const out: Obj = { ...converted };
  for (const [k, v] of Object.entries(snake)) out[k] = k in out ? deepMerge(out[k], v) : v;
  return out;
}

/** Whether `s` is an IP network `addr/prefix` (host bits allowed, as Tacker's check allows them). */
export function isCidr(s: unknown): boolean {
  if (typeof s !== 'string') return false;
  const m = /^([^/\s]+)\/(\d{1,3})$/.exec(s.trim());
  if (!m) return false;
  const v = isIP(m[1] ?? '');
  const len = Number(m[2]);
  return (v === 4 && len <= 32) || (v === 6 && len <= 128);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

/** Package-relative path as the package lists it (`./Scripts/x.sh` -> `Scripts/x.sh`). */
export function packagePath(p: string): string {
  return p.replace(/\\/g, '/').replace(/^(\.\/)+/, '').replace(/^\/+/, '');
}


/** `ssh_address`: which address of the `ssh_cp_name` CP to connect to (`fixed` by default, as Tacker). */
export function sshAddressOf(raw: Obj, where: string, problems: string[]): { sshAddress?: 'fixed' | 'floating' } {
  const v = raw.ssh_address;
  if (v === undefined) return {};
  if (v === 'fixed' || v === 'floating') return { sshAddress: v };
  problems.push(`${where}.ssh_address must be 'fixed' or 'floating'`);
  return {};
}
