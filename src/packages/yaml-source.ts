/**
 * YAML loading that remembers where every value came from.
 *
 * The VNFD parser works on plain JS values, but its errors must point at `file:line:col`. This
 * module converts a YAML document to plain values itself and records, in weak maps keyed by the
 * produced objects and arrays, the source position of each object and of each of its keys/items,
 * plus the source text of numbers written in a non-canonical way (`1.0`), so a version written
 * unquoted keeps its spelling when read as a string.
 */
import { type Alias, isAlias, isMap, isNode, isPair, isScalar, isSeq, LineCounter, type Node as YamlNode, parseAllDocuments, parseDocument, type Document, visit } from 'yaml';
import { PackageError } from './package-error.ts';

/** A position in a package file (1-based line and column). */
export interface SourcePos {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** Plain JSON-like value produced from YAML. */
export type Plain = null | boolean | number | string | Plain[] | { [k: string]: Plain };

/** Upper bound on converted nodes per document, a backstop for huge files. */
const MAX_NODES = 2_000_000;
/**
 * Upper bound on nodes produced by expanding aliases, over all the YAML files of one package:
 * stops alias bombs ("billion laughs"), also one split over many files, early.
 * A real VNFD uses aliases sparingly (a shared property block, a few dozen nodes per use); the
 * bound is far above that and reached in milliseconds by a bomb (aliases are resolved once per
 * document, {@link aliasTargets}, so each expanded node costs O(1)).
 */
export const MAX_ALIAS_NODES = 100_000;
/** Upper bound on nesting depth, far above any real VNFD and far below the JS stack limit. */
const MAX_DEPTH = 400;

/**
 * The node every alias of `doc` stands for, in one walk: the last node before the alias carrying
 * its anchor (YAML 1.2, as yaml's `Alias.resolve`, which walks the whole document per call).
 */
function aliasTargets(doc: Document): Map<Alias, YamlNode | undefined> {
  const anchors = new Map<string, YamlNode>();
  const out = new Map<Alias, YamlNode | undefined>();
  visit(doc, {
    Node: (_key, node) => {
      if (isAlias(node)) out.set(node, anchors.get(node.source));
      else if (isNode(node) && node.anchor) anchors.set(node.anchor, node);
    },
  });
  return out;
}

/** Defines an own enumerable property, so a key named `__proto__` stays data and never touches the prototype. */
function setOwn(obj: { [k: string]: Plain }, key: string, value: Plain): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

interface ConvertState {
  readonly file: string;
  readonly doc: Document;
  /** The node each alias of the document stands for ({@link aliasTargets}). */
  readonly targets: Map<Alias, YamlNode | undefined>;
  readonly lc: LineCounter;
  count: number;
  inAlias: number;
}

/**
 * A registry of parsed YAML files with source positions. One instance per package parse, so the
 * weak maps die with the parse.
 */
export class YamlSources {
  private readonly objPos = new WeakMap<object, SourcePos>();
  private readonly keyPos = new WeakMap<object, Map<string, SourcePos>>();
  private readonly numText = new WeakMap<object, Map<string, string>>();
  /** Nodes produced by expanding aliases, over every file of the package (bounded by {@link MAX_ALIAS_NODES}). */
  private aliasNodes = 0;

  /**
   * Parses one YAML document. Throws a {@link PackageError} with the file, line and column of the
   * first syntax error (duplicate keys and several documents in one file included).
   */
  parse(file: string, text: string): Plain {
    const lc = new LineCounter();
    const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    const doc = parseDocument(src, { lineCounter: lc, prettyErrors: false, merge: true, uniqueKeys: true });
    const err = doc.errors[0];
    if (err) {
      const p = lc.linePos(err.pos[0]);
      throw new PackageError(`invalid YAML: ${err.message}`, { file, line: p.line, column: p.col });
    }
    return this.convertDoc(file, doc, lc);
  }

  /**
   * Parses a multi-document YAML stream (Kubernetes manifests). Throws like {@link parse}.
   */
  parseAll(file: string, text: string): Plain[] {
    const lc = new LineCounter();
    const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    const docs = parseAllDocuments(src, { lineCounter: lc, prettyErrors: false, merge: true, uniqueKeys: true });
    if (!Array.isArray(docs)) {
      const p = lc.linePos(0);
      throw new PackageError('invalid YAML stream', { file, line: p.line, column: p.col });
    }
    const out: Plain[] = [];
    for (const doc of docs) {
      const err = doc.errors[0];
      if (err) {
        const p = lc.linePos(err.pos[0]);
        throw new PackageError(`invalid YAML: ${err.message}`, { file, line: p.line, column: p.col });
      }
      out.push(this.convertDoc(file, doc, lc));
    }
    return out;
  }

  private convertDoc(file: string, doc: Document, lc: LineCounter): Plain {
    const st: ConvertState = { file, doc, lc, targets: aliasTargets(doc), count: 0, inAlias: 0 };
    const root = doc.contents;
    if (root === null || root === undefined) return null;
    return this.convert(root as YamlNode, st, 0);
  }

  /** Position of an object/array, or of one of its keys (maps) or items (arrays). */
  posOf(obj: unknown, key?: string | number): SourcePos | undefined {
    if (obj === null || typeof obj !== 'object') return undefined;
    if (key !== undefined) {
      const k = this.keyPos.get(obj)?.get(String(key));
      if (k) return k;
    }
    return this.objPos.get(obj);
  }

  /**
   * The source spelling of a number stored at `obj[key]`, when it differs from JS's own
   * (`1.0` vs `1`); undefined otherwise.
   */
  numberText(obj: unknown, key: string | number): string | undefined {
    if (obj === null || typeof obj !== 'object') return undefined;
    return this.numText.get(obj)?.get(String(key));
  }

  private pos(st: ConvertState, node: YamlNode | null | undefined): SourcePos | undefined {
    const range = node?.range;
    if (!range) return undefined;
    const p = st.lc.linePos(range[0]);
    return { file: st.file, line: p.line, column: p.col };
  }

  private noteKey(obj: object, key: string, pos: SourcePos | undefined): void {
    if (!pos) return;
    let m = this.keyPos.get(obj);
    if (!m) {
      m = new Map();
      this.keyPos.set(obj, m);
    }
    m.set(key, pos);
  }

  private noteNumber(obj: object, key: string, node: YamlNode): void {
    if (!isScalar(node) || typeof node.value !== 'number') return;
    const source = (node as { source?: unknown }).source;
    if (typeof source !== 'string' || source === String(node.value)) return;
    let m = this.numText.get(obj);
    if (!m) {
      m = new Map();
      this.numText.set(obj, m);
    }
    m.set(key, source.trim());
  }

  private scalarKey(node: unknown, st: ConvertState, depth: number): string {
    if (isScalar(node)) {
      const v = node.value;
      if (v === null || v === undefined) return 'null';
      return typeof v === 'string' ? v : String(v);
    }
    const plain = node === null || node === undefined ? null : this.convert(node as YamlNode, st, depth + 1);
    return JSON.stringify(plain);
  }

  private convert(node: YamlNode, st: ConvertState, depth: number): Plain {
    st.count += 1;
    if (st.inAlias > 0) this.aliasNodes += 1;
    if (st.count > MAX_NODES || this.aliasNodes > MAX_ALIAS_NODES) {
      const p = this.pos(st, node);
      const what = this.aliasNodes > MAX_ALIAS_NODES ? `the package's YAML aliases expand to more than ${MAX_ALIAS_NODES} nodes (an alias bomb?)` : `it has more than ${MAX_NODES} nodes`;
      throw new PackageError(`YAML document is too large once aliases are expanded: ${what}`, p ? { file: st.file, line: p.line, column: p.column } : { file: st.file });
    }
    if (depth > MAX_DEPTH) {
      const p = this.pos(st, node);
      throw new PackageError(`YAML nesting deeper than ${MAX_DEPTH} levels`, p ? { file: st.file, line: p.line, column: p.column } : { file: st.file });
    }
    if (isAlias(node)) {
      // Resolved once per document (yaml's Alias.resolve walks the whole document on every call).
      const target = st.targets.get(node);
      if (!target) return null;
      st.inAlias += 1;
      try {
        return this.convert(target as YamlNode, st, depth + 1);
      } finally {
        st.inAlias -= 1;
      }
    }
    if (isScalar(node)) {
      const v = node.value;
      if (v === null || v === undefined) return null;
      if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number') return v;
      if (typeof v === 'bigint') return Number(v);
      if (v instanceof Date) return v.toISOString();
      if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
      return String(v);
    }
    if (isSeq(node)) {
      const arr: Plain[] = [];
      const p = this.pos(st, node);
      if (p) this.objPos.set(arr, p);
      node.items.forEach((item, i) => {
        const child = item as YamlNode | null;
        this.noteKey(arr, String(i), this.pos(st, child));
        if (child === null || child === undefined) {
          arr.push(null);
          return;
        }
        if (isPair(child)) {
          // `- key: value` written in flow form: treat as a one-key map
          const obj: { [k: string]: Plain } = {};
          const k = this.scalarKey(child.key, st, depth);
          setOwn(obj, k, child.value === null || child.value === undefined ? null : this.convert(child.value as YamlNode, st, depth + 1));
          arr.push(obj);
          return;
        }
        this.noteNumber(arr, String(i), child);
        arr.push(this.convert(child, st, depth + 1));
      });
      return arr;
    }
    if (isMap(node)) {
      const obj: { [k: string]: Plain } = {};
      const p = this.pos(st, node);
      if (p) this.objPos.set(obj, p);
      const merges: Plain[] = [];
      for (const pair of node.items) {
        const keyNode = pair.key as YamlNode | null;
        if (isScalar(keyNode) && typeof keyNode.value === 'symbol') {
          // YAML merge key `<<`: applied after the explicit keys, which take precedence
          if (pair.value) merges.push(this.convert(pair.value as YamlNode, st, depth + 1));
          continue;
        }
        const k = this.scalarKey(keyNode, st, depth);
        this.noteKey(obj, k, this.pos(st, keyNode));
        const valueNode = pair.value as YamlNode | null;
        if (valueNode === null || valueNode === undefined) {
          setOwn(obj, k, null);
          continue;
        }
        this.noteNumber(obj, k, valueNode);
        setOwn(obj, k, this.convert(valueNode, st, depth + 1));
      }
      for (const m of merges) {
        const sources = Array.isArray(m) ? m : [m];
        for (const s of sources) {
          if (s === null || typeof s !== 'object' || Array.isArray(s)) continue;
          for (const [k, v] of Object.entries(s)) {
            if (!Object.hasOwn(obj, k)) setOwn(obj, k, v);
          }
        }
      }
      return obj;
    }
    return null;
  }

}
