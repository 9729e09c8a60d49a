/**
 * HOT intrinsic functions (`get_param`, `get_resource`, `get_attr`, `str_replace`, `list_join`,
 * `if`, conditions, ...) for the simulated Heat. Evaluation is pure: the engine supplies lookups
 * through {@link FunctionContext}, so the same code serves validation, creation and updates.
 */
import { createHash } from 'node:crypto';
import { HeatValidationError, pyJson } from './hot-template.ts';

/** Lookups the evaluator needs from the stack being processed. */
export interface FunctionContext {
  /** A resolved parameter (including pseudo parameters); throws when undefined. */
  getParam(name: string): unknown;
  /** What `get_resource` returns for a resource (its reference id). */
  getResourceRef(name: string): unknown;
  /** An attribute value, `undefined` when the resource exists but has no such value yet. */
  getAttr(resource: string, attribute: string, path: readonly unknown[]): unknown;
  /** Content of a file from the stack's `files` map. */
  getFile(key: string): string;
  /** Value of a named condition. */
  condition(name: string): boolean;
}

const FUNCTIONS = new Set([
  'get_param',
  'get_resource',
  'get_attr',
  'get_file',
  'str_replace',
  'str_replace_strict',
  'str_replace_vstrict',
  'list_join',
  'str_split',
  'repeat',
  'map_merge',
  'map_replace',
  'list_concat',
  'list_concat_unique',
  'if',
  'equals',
  'not',
  'and',
  'or',
  'contains',
  'filter',
  'digest',
  'make_url',
  'yaql',
  'resource_facade',
  'Fn::Select',
  'Fn::Join',
  'Fn::Split',
  'Fn::Replace',
  'Fn::Base64',
  'Fn::GetAtt',
  'Ref',
]);

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Returns the function name when `v` is a function call (`{fn: args}`), else `undefined`. */
export function functionName(v: unknown): string | undefined {
  if (!isObj(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1) return undefined;
  const k = keys[0] as string;
  return FUNCTIONS.has(k) ? k : undefined;
}

/** Deep equality of JSON values (used by `equals`, `list_concat_unique` and update diffs). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

function toText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  return pyJson(v);
}

/** Follows a `get_param`/`get_attr` path into maps and lists; a missing step yields `undefined`. */
export function walkPath(value: unknown, path: readonly unknown[]): unknown {
  let cur = value;
  for (const step of path) {
    if (cur === null || cur === undefined) return undefined;
    if (Array.isArray(cur)) {
      const i = typeof step === 'number' ? step : Number(step);
      if (!Number.isInteger(i)) return undefined;
      cur = cur[i];
    } else if (isObj(cur)) {
      cur = cur[String(step)];
    } else {
      return undefined;
    }
  }
  return cur;
}

function args(fn: string, v: unknown, kind: 'list' | 'map'): unknown {
  if (kind === 'list' && !Array.isArray(v)) throw new HeatValidationError(`Arguments to "${fn}" must be a list`);
  if (kind === 'map' && !isObj(v)) throw new HeatValidationError(`Arguments to "${fn}" must be a map`);
  return v;
}

function replaceAll(template: string, params: Record<string, unknown>, fn: string): string {
  const keys = Object.keys(params).filter((k) => k !== '').sort((a, b) => b.length - a.length);
  if (fn !== 'str_replace') {
    for (const k of keys) {
      if (!template.includes(k)) throw new HeatValidationError(`The following params were not found in the template: ${k}`);
    }
  }
  if (keys.length === 0) return template;
  const re = new RegExp(keys.map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return template.replace(re, (m) => toText(params[m]));
}

/** Evaluates a condition expression (a name, a boolean or `equals`/`not`/`and`/`or`/`contains`). */
export function evaluateCondition(expr: unknown, ctx: FunctionContext): boolean {
  if (typeof expr === 'boolean') return expr;
  if (typeof expr === 'string') {
    if (expr === 'true' || expr === 'True') return true;
    if (expr === 'false' || expr === 'False') return false;
    return ctx.condition(expr);
  }
  if (expr === null || expr === undefined) return true;
  const v = evaluate(expr, ctx);
  return Boolean(v);
}

/** Evaluates every intrinsic function inside `value` (recursively). */
export function evaluate(value: unknown, ctx: FunctionContext): unknown {
  if (Array.isArray(value)) return value.map((x) => evaluate(x, ctx));
  if (!isObj(value)) return value;
  const fn = functionName(value);
  if (!fn) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = evaluate(v, ctx);
    return out;
  }
  const a = value[fn];
  switch (fn) {
    case 'get_param': {
      const list = Array.isArray(a) ? a.map((x) => evaluate(x, ctx)) : [evaluate(a, ctx)];
      const [name, ...path] = list;
      if (typeof name !== 'string') throw new HeatValidationError('Function "get_param" needs a parameter name');
      const base = ctx.getParam(name);
      if (path.length === 0) return base;
      const r = walkPath(base, path);
      return r === undefined ? '' : r;
    }
    case 'get_resource': {
      const name = evaluate(a, ctx);
      if (typeof name !== 'string') throw new HeatValidationError('Function "get_resource" needs a resource name');
      return ctx.getResourceRef(name);
    }
    case 'Ref': {
      const name = evaluate(a, ctx);
      if (typeof name !== 'string') throw new HeatValidationError('Function "Ref" needs a name');
      try {
        return ctx.getParam(name);
      } catch {
        return ctx.getResourceRef(name);
      }
    }
    case 'get_attr':
    case 'Fn::GetAtt': {
      const list = (args(fn, a, 'list') as unknown[]).map((x) => evaluate(x, ctx));
      const [res, attr, ...path] = list;
      if (typeof res !== 'string' || (attr !== undefined && typeof attr !== 'string')) {
        throw new HeatValidationError(`Arguments to "${fn}" must be of the form [resource_name, attribute, (path), ...]`);
      }
      const v = ctx.getAttr(res, attr ?? '', path);
      return v === undefined ? null : v;
    }
    case 'get_file': {
      const key = evaluate(a, ctx);
      if (typeof key !== 'string') throw new HeatValidationError('Function "get_file" needs a file name');
      return ctx.getFile(key);
    }
    case 'str_replace':
    case 'str_replace_strict':
    case 'str_replace_vstrict': {
      const m = args(fn, evaluate(a, ctx), 'map') as Record<string, unknown>;
      const template = m.template;
      const params = m.params;
      if (typeof template !== 'string' || !isObj(params)) {
        throw new HeatValidationError(`"${fn}" syntax should be {"template": "...", "params": {...}}`);
      }
      if (fn === 'str_replace_vstrict') {
        for (const [k, v] of Object.entries(params)) {
          if (v === '' || v === null) throw new HeatValidationError(`str_replace_vstrict has an empty value for "${k}"`);
        }
      }
      return replaceAll(template, params, fn);
    }
    case 'list_join':
    case 'Fn::Join': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const [delim, ...lists] = list;
      if (typeof delim !== 'string') throw new HeatValidationError(`Incorrect arguments to "${fn}"`);
      const items: unknown[] = [];
      for (const l of lists) {
        if (l === null || l === undefined) continue;
        if (!Array.isArray(l)) throw new HeatValidationError(`Incorrect arguments to "${fn}": must be lists`);
        items.push(...l);
      }
      return items.map(toText).join(delim);
    }
    case 'str_split':
    case 'Fn::Split': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const [delim, str, index] = list;
      if (typeof delim !== 'string' || typeof str !== 'string') throw new HeatValidationError(`Incorrect arguments to "${fn}"`);
      const parts = str.split(delim);
      if (index === undefined) return parts;
      const i = Number(index);
      if (!Number.isInteger(i) || i < 0 || i >= parts.length) throw new HeatValidationError(`Incorrect index to "${fn}"`);
      return parts[i];
    }
    case 'Fn::Replace': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const [map, str] = list;
      if (!isObj(map) || typeof str !== 'string') throw new HeatValidationError('Incorrect arguments to "Fn::Replace"');
      return replaceAll(str, map, 'str_replace');
    }
    case 'Fn::Select': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const [index, coll] = list;
      if (Array.isArray(coll)) {
        const v = coll[Number(index)];
        return v === undefined ? '' : v;
      }
      if (isObj(coll)) return coll[String(index)] ?? '';
      return '';
    }
    case 'Fn::Base64':
      return toText(evaluate(a, ctx));
    case 'repeat': {
      const m = args(fn, a, 'map') as Record<string, unknown>;
      const forEach = evaluate(m.for_each, ctx);
      if (!isObj(forEach)) throw new HeatValidationError('"repeat" needs a "for_each" map');
      const keys = Object.keys(forEach);
      const lists = keys.map((k) => {
        const l = forEach[k];
        if (!Array.isArray(l)) throw new HeatValidationError(`The values of the "for_each" argument to "repeat" must be lists`);
        return l;
      });
      const permutations = m.permutations === undefined ? true : Boolean(evaluate(m.permutations, ctx));
      let combos: unknown[][] = [];
      if (permutations) {
        combos = [[]];
        for (const l of lists) combos = combos.flatMap((c) => l.map((x) => [...c, x]));
      } else {
        const n = Math.min(...lists.map((l) => l.length));
        for (let i = 0; i < n; i++) combos.push(lists.map((l) => l[i]));
      }
      const subst = (t: unknown, combo: unknown[]): unknown => {
        if (typeof t === 'string') {
          const params: Record<string, unknown> = {};
          keys.forEach((k, i) => {
            params[k] = combo[i];
          });
          return replaceAll(t, params, 'str_replace');
        }
        if (Array.isArray(t)) return t.map((x) => subst(x, combo));
        if (isObj(t)) {
          const out: Record<string, unknown> = {};
          for (const [k, v] of Object.entries(t)) out[subst(k, combo) as string] = subst(v, combo);
          return out;
        }
        return t;
      };
      return combos.map((c) => evaluate(subst(m.template, c), ctx));
    }
    case 'map_merge': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const out: Record<string, unknown> = {};
      for (const m of list) {
        if (m === null || m === undefined) continue;
        if (!isObj(m)) throw new HeatValidationError('Incorrect arguments to "map_merge": must be maps');
        Object.assign(out, m);
      }
      return out;
    }
    case 'map_replace': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const [m, repl] = list;
      if (!isObj(m)) throw new HeatValidationError('Incorrect arguments to "map_replace"');
      const r = isObj(repl) ? repl : {};
      const keyMap = isObj(r.keys) ? r.keys : {};
      const valMap = isObj(r.values) ? r.values : {};
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(m)) {
        const nk = k in keyMap ? String(keyMap[k]) : k;
        const nv = typeof v === 'string' && v in valMap ? valMap[v] : v;
        out[nk] = nv;
      }
      return out;
    }
    case 'list_concat':
    case 'list_concat_unique': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const out: unknown[] = [];
      for (const l of list) {
        if (l === null || l === undefined) continue;
        if (!Array.isArray(l)) throw new HeatValidationError(`Incorrect arguments to "${fn}": must be lists`);
        for (const x of l) {
          if (fn === 'list_concat_unique' && out.some((y) => deepEqual(x, y))) continue;
          out.push(x);
        }
      }
      return out;
    }
    case 'if': {
      const list = args(fn, a, 'list') as unknown[];
      if (list.length !== 3) throw new HeatValidationError('Arguments to "if" must be of the form [condition_name, value_if_true, value_if_false]');
      return evaluateCondition(list[0], ctx) ? evaluate(list[1], ctx) : evaluate(list[2], ctx);
    }
    case 'equals': {
      const list = args(fn, a, 'list') as unknown[];
      if (list.length !== 2) throw new HeatValidationError('Arguments to "equals" must be of the form [value_1, value_2]');
      return deepEqual(evaluate(list[0], ctx), evaluate(list[1], ctx));
    }
    case 'not':
      return !evaluateCondition(a, ctx);
    case 'and':
      return (args(fn, a, 'list') as unknown[]).every((c) => evaluateCondition(c, ctx));
    case 'or':
      return (args(fn, a, 'list') as unknown[]).some((c) => evaluateCondition(c, ctx));
    case 'contains': {
      const list = args(fn, a, 'list') as unknown[];
      const needle = evaluate(list[0], ctx);
      const hay = evaluate(list[1], ctx);
      if (!Array.isArray(hay)) throw new HeatValidationError('Arguments to "contains" must be of the form [value, sequence]');
      return hay.some((x) => deepEqual(x, needle));
    }
    case 'filter': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const [remove, from] = list;
      if (!Array.isArray(from)) throw new HeatValidationError('Incorrect arguments to "filter"');
      const rm = Array.isArray(remove) ? remove : [];
      return from.filter((x) => !rm.some((r) => deepEqual(r, x)));
    }
    case 'digest': {
      const list = args(fn, evaluate(a, ctx), 'list') as unknown[];
      const [alg, val] = list;
      if (typeof alg !== 'string' || typeof val !== 'string') throw new HeatValidationError('Incorrect arguments to "digest"');
      try {
        return createHash(alg).update(val).digest('hex');
      } catch {
        throw new HeatValidationError(`Algorithm must be one of md5, sha1, sha224, sha256, sha384, sha512`);
      }
    }
    case 'make_url': {
      const m = args(fn, evaluate(a, ctx), 'map') as Record<string, unknown>;
      const scheme = m.scheme ? `${String(m.scheme)}://` : '';
      const user = m.username ? `${String(m.username)}${m.password ? `:${String(m.password)}` : ''}@` : '';
      const port = m.port !== undefined && m.port !== null && m.port !== '' ? `:${String(m.port)}` : '';
      const path = m.path ? `/${String(m.path).replace(/^\//, '')}` : '';
      const q = isObj(m.query) ? new URLSearchParams(Object.entries(m.query).map(([k, v]) => [k, toText(v)])).toString() : '';
      const frag = m.fragment ? `#${String(m.fragment)}` : '';
      return `${scheme}${user}${String(m.host ?? '')}${port}${path}${q ? `?${q}` : ''}${frag}`;
    }
    case 'resource_facade':
      return {};
    case 'yaql':
      throw new HeatValidationError('The "yaql" function is not supported by the simulated Heat.');
  }
  return value;
}

/**
 * Names of the resources a definition refers to (`get_resource`, `get_attr`, `Ref` to a resource),
 * the implicit dependencies Heat derives from a template.
 */
export function referencedResources(value: unknown, resourceNames: ReadonlySet<string>, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const x of value) referencedResources(x, resourceNames, out);
    return out;
  }
  if (!isObj(value)) return out;
  const fn = functionName(value);
  if (fn === 'get_resource' || fn === 'Ref') {
    const a = value[fn];
    if (typeof a === 'string') {
      if (resourceNames.has(a)) out.add(a);
      return out;
    }
  }
  if (fn === 'get_attr' || fn === 'Fn::GetAtt') {
    const a = value[fn];
    if (Array.isArray(a) && typeof a[0] === 'string') {
      if (resourceNames.has(a[0])) out.add(a[0]);
      for (const x of a.slice(1)) referencedResources(x, resourceNames, out);
      return out;
    }
  }
  for (const v of Object.values(value)) referencedResources(v, resourceNames, out);
  return out;
}
