/**
 * Label and field selectors, in both their query-string form (`?labelSelector=app in (a,b),tier!=db`)
 * and the structured `LabelSelector` form used inside workload specs (`matchLabels`/`matchExpressions`).
 */
import { badRequest } from './api-errors.ts';
import type { KubeObject, Loose } from './types.ts';

type LabelOp = 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';

/** One parsed requirement of a label selector. */
export interface LabelRequirement {
  key: string;
  op: LabelOp;
  values: string[];
}

/** A parsed label selector: all requirements must hold. An empty list matches everything. */
export type LabelSelectorReq = LabelRequirement[];

function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

/** Parses the string form of a label selector (400 BadRequest when malformed). */
export function parseLabelSelector(s: string | null | undefined): LabelSelectorReq {
  if (!s) return [];
  const out: LabelSelectorReq = [];
  for (const part of splitTopLevel(s)) {
    let m = /^([^\s!=<>(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    if (m) {
      const values = (m[3] as string).split(',').map((v) => v.trim()).filter((v) => v.length > 0);
      out.push({ key: m[1] as string, op: m[2] as 'in' | 'notin', values });
      continue;
    }
    m = /^!\s*([^\s!=<>(),]+)$/.exec(part);
    if (m) {
      out.push({ key: m[1] as string, op: '!exists', values: [] });
      continue;
    }
    m = /^([^\s!=<>(),]+)\s*(==|=|!=|>|<)\s*([^\s!=<>(),]*)$/.exec(part);
    if (m) {
      const opText = m[2] as string;
      const op: LabelOp = opText === '!=' ? '!=' : opText === '>' ? 'gt' : opText === '<' ? 'lt' : '=';
      out.push({ key: m[1] as string, op, values: [m[3] as string] });
      continue;
    }
    m = /^([^\s!=<>(),]+)$/.exec(part);
    if (m) {
      out.push({ key: m[1] as string, op: 'exists', values: [] });
      continue;
    }
    throw badRequest(`unable to parse requirement: ${part}`);
  }
  return out;
}

/** Converts a structured `LabelSelector` (matchLabels + matchExpressions) to requirements. */
export function fromLabelSelector(sel: Loose): LabelSelectorReq {
  const out: LabelSelectorReq = [];
  if (!sel) return out;
  for (const [k, v] of Object.entries((sel.matchLabels ?? {}) as Record<string, string>)) out.push({ key: k, op: '=', values: [String(v)] });
  for (const e of (sel.matchExpressions ?? []) as Loose[]) {
    const op = String(e.operator ?? '');
    const values = ((e.values ?? []) as unknown[]).map(String);
    if (op === 'In') out.push({ key: e.key, op: 'in', values });
    else if (op === 'NotIn') out.push({ key: e.key, op: 'notin', values });
    else if (op === 'Exists') out.push({ key: e.key, op: 'exists', values: [] });
    else if (op === 'DoesNotExist') out.push({ key: e.key, op: '!exists', values: [] });
  }
  return out;
}

/** Whether a label map satisfies all requirements. */
export function matchLabels(req: LabelSelectorReq, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  for (const r of req) {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case 'exists':
        if (!has) return false;
        break;
      case '!exists':
        if (has) return false;
        break;
      case '=':
        if (!has || v !== r.values[0]) return false;
        break;
      case '!=':
        if (has && v === r.values[0]) return false;
        break;
      case 'in':
        if (!has || !r.values.includes(v as string)) return false;
        break;
      case 'notin':
        if (has && r.values.includes(v as string)) return false;
        break;
      case 'gt':
      case 'lt': {
        if (!has) return false;
        const a = Number(v);
        const b = Number(r.values[0]);
        if (Number.isNaN(a) || Number.isNaN(b)) return false;
        if (r.op === 'gt' ? !(a > b) : !(a < b)) return false;
        break;
      }
    }
  }
  return true;
}

/** Renders a structured selector back to its string form (used by `Scale.status.selector`). */
export function selectorToString(sel: Loose): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries((sel?.matchLabels ?? {}) as Record<string, string>)) parts.push(`${k}=${v}`);
  for (const e of (sel?.matchExpressions ?? []) as Loose[]) {
    const vals = ((e.values ?? []) as string[]).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${vals})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${vals})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

/** One parsed field selector term. */
export interface FieldRequirement {
  path: string[];
  negate: boolean;
  value: string;
}

function splitEscaped(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i] as string;
    if (ch === '\\' && i + 1 < s.length) {
      cur += ch + (s[i + 1] as string);
      i++;
    } else if (ch === sep) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

function unescapeValue(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/**
 * Parses a field selector (`metadata.name=x,status.phase!=Failed`). Any dotted path is accepted, which
 * covers the fields the real server supports (metadata.name/namespace, spec.nodeName, status.phase,
 * involvedObject.* for events, ...).
 */
export function parseFieldSelector(s: string | null | undefined): FieldRequirement[] {
  if (!s) return [];
  const out: FieldRequirement[] = [];
  for (const raw of splitEscaped(s, ',')) {
    const part = raw.trim();
    if (!part) continue;
    const m = /^([A-Za-z0-9_.\-/]+)\s*(!=|==|=)(.*)$/s.exec(part);
    if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    out.push({ path: (m[1] as string).split('.'), negate: m[2] === '!=', value: unescapeValue((m[3] as string).trim()) });
  }
  return out;
}

function fieldValue(obj: KubeObject, path: string[]): string {
  let cur: Loose = obj;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = cur[p];
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'object' ? JSON.stringify(cur) : String(cur);
}

/** Whether an object satisfies all field requirements. */
export function matchFields(req: FieldRequirement[], obj: KubeObject): boolean {
  for (const r of req) {
    const eq = fieldValue(obj, r.path) === r.value;
    if (r.negate ? eq : !eq) return false;
  }
  return true;
}

/** Extracts a `metadata.name=<x>` equality term, so lists can look the object up directly. */
export function exactName(req: FieldRequirement[]): string | undefined {
  const t = req.find((r) => !r.negate && r.path.length === 2 && r.path[0] === 'metadata' && r.path[1] === 'name');
  return t?.value;
}
