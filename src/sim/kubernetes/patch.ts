/**
 * The three PATCH flavours kubectl and client-node send: JSON merge patch (RFC 7386), JSON patch
 * (RFC 6902) and Kubernetes strategic merge patch (lists of named things such as containers, env,
 * ports and volumes are merged by their key instead of replaced). Server-side apply bodies are
 * approximated as a strategic merge of the applied configuration.
 */
import { ApiError, badRequest } from './api-errors.ts';
import type { Loose } from './types.ts';

/** PATCH content types the simulator accepts. */
export const PatchType = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** One of the accepted PATCH content types. */
export type PatchType = (typeof PatchType)[keyof typeof PatchType];

function isObj(v: unknown): v is Record<string, Loose> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep copy of a JSON value. */
export function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: Loose, patch: Loose): Loose {
  if (!isObj(patch)) return clone(patch);
  const out: Record<string, Loose> = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unprocessable(message: string): ApiError {
  return new ApiError(422, 'Invalid', message);
}

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw unprocessable(`invalid JSON pointer "${p}"`);
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function getAt(doc: Loose, path: string[]): Loose {
  let cur = doc;
  for (const seg of path) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (isObj(cur)) cur = cur[seg];
    else return undefined;
  }
  return cur;
}

function parentOf(doc: Loose, path: string[], op: string, full: string): { parent: Loose; key: string } {
  if (path.length === 0) throw unprocessable(`${op} at document root is not supported`);
  const parent = getAt(doc, path.slice(0, -1));
  if (parent === undefined || parent === null || typeof parent !== 'object') {
    throw unprocessable(`jsonpatch ${op} operation does not apply: doc is missing path: "${full}"`);
  }
  return { parent, key: path[path.length - 1] as string };
}

function addAt(doc: Loose, path: string[], value: Loose, full: string): Loose {
  if (path.length === 0) return value;
  const { parent, key } = parentOf(doc, path, 'add', full);
  if (Array.isArray(parent)) {
    const idx = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(idx) || idx < 0 || idx > parent.length) throw unprocessable(`jsonpatch add operation does not apply: index out of bounds: "${full}"`);
    parent.splice(idx, 0, value);
  } else parent[key] = value;
  return doc;
}

function removeAt(doc: Loose, path: string[], full: string): Loose {
  const { parent, key } = parentOf(doc, path, 'remove', full);
  if (Array.isArray(parent)) {
    const idx = Number(key);
    if (!Number.isInteger(idx) || idx < 0 || idx >= parent.length) throw unprocessable(`jsonpatch remove operation does not apply: doc is missing path: "${full}"`);
    return parent.splice(idx, 1)[0];
  }
  if (!Object.hasOwn(parent, key)) throw unprocessable(`jsonpatch remove operation does not apply: doc is missing path: "${full}"`);
  const v = parent[key];
  delete parent[key];
  return v;
}

/** RFC 6902 JSON patch (add, remove, replace, move, copy, test). */
export function jsonPatch(target: Loose, ops: Loose): Loose {
  if (!Array.isArray(ops)) throw badRequest('json patch must be a JSON array of operations');
  let doc = clone(target);
  for (const op of ops as Loose[]) {
    if (!isObj(op) || typeof op.op !== 'string' || typeof op.path !== 'string') throw unprocessable('invalid JSON patch operation');
    const path = parsePointer(op.path);
    switch (op.op) {
      case 'add':
        doc = addAt(doc, path, clone(op.value), op.path);
        break;
      case 'remove':
        removeAt(doc, path, op.path);
        break;
      case 'replace':
        if (path.length === 0) doc = clone(op.value);
        else {
          removeAt(doc, path, op.path);
          doc = addAt(doc, path, clone(op.value), op.path);
        }
        break;
      case 'move': {
        const from = parsePointer(String(op.from));
        const v = removeAt(doc, from, String(op.from));
        doc = addAt(doc, path, v, op.path);
        break;
      }
      case 'copy': {
        const v = getAt(doc, parsePointer(String(op.from)));
        if (v === undefined) throw unprocessable(`jsonpatch copy operation does not apply: doc is missing from path: "${op.from}"`);
        doc = addAt(doc, path, clone(v), op.path);
        break;
      }
      case 'test':
        if (!deepEqual(getAt(doc, path), op.value)) throw unprocessable(`testing value ${op.path} failed: test failed`);
        break;
      default:
        throw unprocessable(`Unexpected kind: ${op.op}`);
    }
  }
  return doc;
}

const CONTAINER_LISTS = new Set(['containers', 'initContainers', 'ephemeralContainers']);

/** The merge key of a list field in the built-in types (`''` = merge primitives, undefined = replace). */
function mergeKeyFor(field: string, path: string[]): string | undefined {
  switch (field) {
    case 'containers':
    case 'initContainers':
    case 'ephemeralContainers':
    case 'volumes':
    case 'imagePullSecrets':
    case 'env':
    case 'resourceClaims':
    case 'schedulingGates':
    case 'secrets':
      return 'name';
    case 'volumeMounts':
      return 'mountPath';
    case 'volumeDevices':
      return 'devicePath';
    case 'ports':
      return CONTAINER_LISTS.has(path[path.length - 1] ?? '') ? 'containerPort' : 'port';
    case 'hostAliases':
      return 'ip';
    case 'ownerReferences':
      return 'uid';
    case 'conditions':
      return 'type';
    case 'topologySpreadConstraints':
      return 'topologyKey';
    case 'finalizers':
      return '';
    default:
      return undefined;
  }
}

function orderBy(list: Loose[], order: Loose[], key: string): Loose[] {
  const keyOf = (x: Loose): string => JSON.stringify(key && isObj(x) ? x[key] : x);
  const rank = new Map(order.map((o, i) => [keyOf(o), i]));
  const inOrder = list.filter((x) => rank.has(keyOf(x))).sort((a, b) => (rank.get(keyOf(a)) as number) - (rank.get(keyOf(b)) as number));
  return [...inOrder, ...list.filter((x) => !rank.has(keyOf(x)))];
}

function mergeList(orig: Loose[], patch: Loose[], key: string, path: string[], applyMode: boolean): Loose[] {
  if (patch.some((x) => isObj(x) && x.$patch === 'replace')) return clone(patch.filter((x) => !(isObj(x) && x.$patch === 'replace')));
  if (key === '') {
    const out = [...orig];
    for (const v of patch) if (!out.some((o) => deepEqual(o, v))) out.push(clone(v));
    return out;
  }
  const out = [...orig];
  for (const item of patch) {
    if (!isObj(item)) continue;
    const idx = out.findIndex((o) => isObj(o) && deepEqual(o[key], item[key]));
    if (item.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMerge(out[idx], item, path, applyMode);
    else out.push(strategicMerge(undefined, item, path, applyMode));
  }
  return out;
}

/**
 * Kubernetes strategic merge patch for the common built-in list fields, with the `$patch`,
 * `$retainKeys`, `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>` directives kubectl
 * emits. `applyMode` (server-side apply approximation) never deletes fields.
 */
export function strategicMerge(orig: Loose, patch: Loose, path: string[] = [], applyMode = false): Loose {
  if (!isObj(patch)) return clone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _p, ...rest } = patch;
    return clone(rest);
  }
  if (patch.$patch === 'delete') return undefined;
  const out: Record<string, Loose> = isObj(orig) ? { ...orig } : {};
  const orders: [string, Loose[]][] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (k.startsWith('$setElementOrder/')) {
      if (Array.isArray(v)) orders.push([k.slice('$setElementOrder/'.length), v]);
      continue;
    }
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      if (Array.isArray(out[field]) && Array.isArray(v)) out[field] = (out[field] as Loose[]).filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    if (v === null) {
      if (!applyMode) delete out[k];
      continue;
    }
    if (Array.isArray(v)) {
      const key = mergeKeyFor(k, path);
      out[k] = key !== undefined && Array.isArray(out[k]) ? mergeList(out[k], v, key, [...path, k], applyMode) : clone(v.filter((x) => !(isObj(x) && x.$patch)));
      continue;
    }
    if (isObj(v)) {
      const merged = strategicMerge(out[k], v, [...path, k], applyMode);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
      continue;
    }
    out[k] = v;
  }
  for (const [field, order] of orders) {
    if (Array.isArray(out[field])) out[field] = orderBy(out[field], order, mergeKeyFor(field, path) ?? '');
  }
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys as string[]);
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }
  return out;
}
