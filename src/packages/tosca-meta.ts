/**
 * SOL004 metadata files: `TOSCA-Metadata/TOSCA.meta` (block-structured `Key: Value` lines) and the
 * manifest file (`.mf`, with `Source:`/`Algorithm:`/`Hash:` entries).
 *
 * Both can declare per-file digests (Tacker puts `Name:`/`Algorithm:`/`Hash:` blocks into
 * TOSCA.meta; SOL004 puts `Source:` entries in the manifest). They are parsed here with line
 * numbers, so a wrong digest is reported where it was declared.
 */
import { PackageError } from './package-error.ts';

/** One `Key: Value` line of a metadata file. */
export interface MetaLine {
  readonly key: string;
  readonly value: string;
  readonly line: number;
}

/** A digest a metadata file declares for one package file (or an external URI). */
export interface DeclaredDigest {
  /** The path or URI exactly as written. */
  readonly source: string;
  readonly algorithm: string;
  readonly hash: string;
  /** Metadata file and line of the declaration, e.g. `TOSCA-Metadata/TOSCA.meta:83`. */
  readonly declaredIn: string;
  readonly file: string;
  readonly line: number;
}

/** The parsed TOSCA.meta: its first (block 0) keys and all digest declarations. */
export interface ToscaMeta {
  readonly block0: ReadonlyMap<string, MetaLine>;
  readonly digests: readonly DeclaredDigest[];
}

/** Path of TOSCA.meta inside a CSAR (SOL004 clause 4.3.2). */
export const TOSCA_META_PATH = 'TOSCA-Metadata/TOSCA.meta';

function splitBlocks(file: string, text: string): MetaLine[][] {
  const blocks: MetaLine[][] = [];
  let cur: MetaLine[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.replace(/\s+$/, '');
    if (line.trim() === '') {
      if (cur.length > 0) blocks.push(cur);
      cur = [];
      return;
    }
    if (line.trimStart().startsWith('#')) return;
    const m = /^([^:]+):\s*(.*)$/.exec(line.trim());
    if (!m || m[1] === undefined || m[2] === undefined) {
      throw new PackageError(`malformed line ${JSON.stringify(raw.trim())}: expected 'Key: Value'`, { file, line: i + 1, column: 1 });
    }
    cur.push({ key: m[1].trim(), value: m[2].trim().replace(/^(["'])(.*)\1$/, '$2'), line: i + 1 });
  });
  if (cur.length > 0) blocks.push(cur);
  return blocks;
}

function digestsOf(file: string, lines: readonly MetaLine[], nameKey: string): DeclaredDigest[] {
  const out: DeclaredDigest[] = [];
  let pending: { source: string; line: number; algorithm?: string; hash?: string } | undefined;
  const flush = (): void => {
    if (!pending) return;
    if (pending.algorithm === undefined || pending.hash === undefined) {
      // an entry without a digest declares the file only; SOL004 allows that for TOSCA.meta
      if (pending.algorithm !== undefined || pending.hash !== undefined) {
        throw new PackageError(`entry for ${pending.source} has ${pending.algorithm === undefined ? 'a Hash but no Algorithm' : 'an Algorithm but no Hash'}`, { file, line: pending.line, column: 1 });
      }
    } else {
      out.push({ source: pending.source, algorithm: pending.algorithm, hash: pending.hash, declaredIn: `${file}:${pending.line}`, file, line: pending.line });
    }
    pending = undefined;
  };
  for (const l of lines) {
    if (l.key === nameKey) {
      flush();
      pending = { source: l.value, line: l.line };
    } else if (l.key === 'Algorithm' && pending) {
      pending.algorithm = l.value;
    } else if (l.key === 'Hash' && pending) {
      pending.hash = l.value;
    }
  }
  flush();
  return out;
}

/** Parses TOSCA.meta. Throws a {@link PackageError} on malformed lines or a missing `Entry-Definitions`. */
export function parseToscaMeta(text: string, file = TOSCA_META_PATH): ToscaMeta {
  const blocks = splitBlocks(file, text);
  const first = blocks[0];
  if (!first) throw new PackageError('the file is empty: it must declare Entry-Definitions', { file });
  const block0 = new Map<string, MetaLine>();
  for (const l of first) {
    if (l.key === 'Name') break;
    if (!block0.has(l.key)) block0.set(l.key, l);
  }
  if (!block0.has('Entry-Definitions')) {
    throw new PackageError('Entry-Definitions is missing (it names the main VNFD file, e.g. Definitions/vnfd_top.yaml)', { file, line: first[0]?.line ?? 1 });
  }
  return { block0, digests: digestsOf(file, blocks.flat(), 'Name') };
}

/**
 * Parses a SOL004 manifest file: the optional `metadata:` section is skipped, `Source:` entries
 * with `Algorithm:`/`Hash:` become digests, and a trailing CMS signature block is ignored.
 */
export function parseManifest(text: string, file: string): DeclaredDigest[] {
  const kept: string[] = [];
  for (const raw of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    if (raw.trim().startsWith('-----BEGIN')) break;
    kept.push(raw);
  }
  const lines: MetaLine[] = [];
  kept.forEach((raw, i) => {
    const m = /^\s*(Source|Algorithm|Hash)\s*:\s*(.*?)\s*$/.exec(raw);
    if (m && m[1] !== undefined && m[2] !== undefined) lines.push({ key: m[1], value: m[2].replace(/^(["'])(.*)\1$/, '$2'), line: i + 1 });
  });
  return digestsOf(file, lines, 'Source');
}

/** Maps a declared algorithm name (`SHA-256`, `sha256`, `SHA3-256`...) to a Node hash name, or undefined. */
export function nodeHashName(algorithm: string): string | undefined {
  const a = algorithm.trim().toLowerCase().replace(/_/g, '-');
  const table: Record<string, string> = {
    'sha-256': 'sha256',
    sha256: 'sha256',
    'sha-384': 'sha384',
    sha384: 'sha384',
    'sha-512': 'sha512',
    sha512: 'sha512',
    'sha3-256': 'sha3-256',
    'sha3-384': 'sha3-384',
    'sha3-512': 'sha3-512',
  };
  return Object.hasOwn(table, a) ? table[a] : undefined;
}
