/**
 * Reads a VNF package (CSAR, a ZIP file, ETSI GS NFV-SOL004) into memory, safely.
 *
 * A package comes from outside (an NFVO, an operator's upload), so the reader treats it as hostile:
 * entry names are validated and normalized (no absolute paths, no `..`, no symlinks, no duplicates),
 * and the number of entries, the total uncompressed size and the size of every single entry are
 * bounded before anything is inflated (from the sizes the ZIP declares) and again while inflating
 * (from the bytes actually produced: reading stops as soon as a limit is passed, an entry is never
 * inflated whole into memory first). Every problem becomes a {@link PackageError} with a message
 * an operator can act on.
 *
 * The module also builds CSARs from a package folder ({@link buildCsarFromDir}), which the CLI,
 * the demo and the tests use to onboard the samples under `samples/`.
 */
import { channel } from 'node:diagnostics_channel';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import yauzl from 'yauzl';
import { PackageError } from './package-error.ts';

/**
 * The files of a package: normalized package-relative path (forward slashes, no leading `./`)
 * to content. Directories are implied by the paths and not listed.
 */
export type CsarFiles = Map<string, Buffer>;

/** Bounds applied while reading a CSAR, so a zip bomb cannot exhaust memory. */
export interface CsarLimits {
  /**
   * Maximum sum of the uncompressed sizes of all entries, in bytes.
   * @default 536870912 (512 MiB)
   */
  readonly maxTotalBytes?: number;
  /**
   * Maximum number of entries (files and directories) in the ZIP.
   * @default 10000
   */
  readonly maxEntries?: number;
  /**
   * Maximum uncompressed size of any one entry, in bytes.
   * @default 16777216 (16 MiB)
   */
  readonly maxFileBytes?: number;
  /**
   * Maximum uncompressed size of an entry the VNFD parser reads as text: everything under
   * `TOSCA-Metadata/` and `Definitions/`, and files at the package root (entry YAML, manifest).
   * The parser applies the same bound to any other file it reads.
   * @default 4194304 (4 MiB)
   */
  readonly maxVnfdBytes?: number;
}

/**
 * Diagnostics channel published to when a CSAR is opened in this process (`{ bytes }`): tracing,
 * and the tests that check the VNFM's own process leaves package reading to the worker.
 */
export const CSAR_READ_CHANNEL = channel('healvnfm:packages:csar-read');

/** Defaults of {@link CsarLimits}; exported so the configuration module can document them. */
export const DEFAULT_CSAR_LIMITS = { maxTotalBytes: 512 * 1024 * 1024, maxEntries: 10_000, maxFileBytes: 16 * 1024 * 1024, maxVnfdBytes: 4 * 1024 * 1024 } as const;

/** True for the entries the VNFD parser reads as text (so {@link CsarLimits.maxVnfdBytes} applies while inflating). */
export function isVnfdEntry(path: string): boolean {
  return path.startsWith('TOSCA-Metadata/') || path.startsWith('Definitions/') || !path.includes('/');
}

/** The per-entry limit of `path` and the setting that sets it. */
function entryLimit(path: string, maxFileBytes: number, maxVnfdBytes: number): { limit: number; setting: string; what: string } {
  return isVnfdEntry(path) && maxVnfdBytes < maxFileBytes
    ? { limit: maxVnfdBytes, setting: 'packages.maxVnfdBytes', what: 'VNFD/metadata file' }
    : { limit: maxFileBytes, setting: 'packages.maxFileBytes', what: 'file' };
}

type YauzlEntry = yauzl.Entry & { fileNameRaw?: Buffer; fileName: string | Buffer };
type GetFileNameLowLevel = (flags: number, raw: Buffer, extraFields: unknown, strictFileNames: boolean) => string;

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/** Human-readable size (`4.0 MiB`), as used in limit messages. */
export function describeSize(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/**
 * Normalizes one ZIP entry name into a package-relative path, or throws when the name could
 * escape the package root. Returns `''` for names that denote the root itself (e.g. `./`).
 */
export function normalizeEntryName(name: string): string {
  const shown = JSON.stringify(name);
  if (name.includes('\0')) throw new PackageError(`unsafe entry name ${shown} in the package: it contains a NUL character`);
  const slashed = name.replace(/\\/g, '/');
  if (slashed.startsWith('/') || /^[A-Za-z]:/.test(slashed)) {
    throw new PackageError(`unsafe entry name ${shown} in the package: absolute paths are not allowed`);
  }
  const parts: string[] = [];
  for (const seg of slashed.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      throw new PackageError(`unsafe entry name ${shown} in the package: '..' path segments are not allowed (the file would be written outside the package)`);
    }
    parts.push(seg);
  }
  return parts.join('/');
}

function isSymlink(entry: yauzl.Entry): boolean {
  const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
  return mode === S_IFLNK;
}

function decodeName(entry: YauzlEntry): string {
  const raw = Buffer.isBuffer(entry.fileName) ? entry.fileName : (entry.fileNameRaw ?? Buffer.from(String(entry.fileName)));
  const low = (yauzl as unknown as { getFileNameLowLevel?: GetFileNameLowLevel }).getFileNameLowLevel;
  if (low === undefined) return raw.toString('utf8');
  return low(entry.generalPurposeBitFlag, raw, entry.extraFields, false);
}

/**
 * Reads a CSAR from memory. Resolves to the package's files keyed by normalized path; rejects with
 * a {@link PackageError} when the buffer is not a ZIP, an entry name is unsafe (absolute, `..`,
 * symlink, duplicate), an entry is encrypted, or a limit is exceeded.
 */
export function readCsar(zip: Buffer, limits: CsarLimits = {}): Promise<CsarFiles> {
  const maxTotalBytes = limits.maxTotalBytes ?? DEFAULT_CSAR_LIMITS.maxTotalBytes;
  const maxEntries = limits.maxEntries ?? DEFAULT_CSAR_LIMITS.maxEntries;
  const maxFileBytes = limits.maxFileBytes ?? DEFAULT_CSAR_LIMITS.maxFileBytes;
  const maxVnfdBytes = limits.maxVnfdBytes ?? DEFAULT_CSAR_LIMITS.maxVnfdBytes;
  if (CSAR_READ_CHANNEL.hasSubscribers) CSAR_READ_CHANNEL.publish({ bytes: zip?.length ?? 0 });
  return new Promise<CsarFiles>((resolve, reject) => {
    if (!Buffer.isBuffer(zip) || zip.length === 0) {
      reject(new PackageError('the package is empty: expected a ZIP (CSAR) file'));
      return;
    }
    yauzl.fromBuffer(zip, { lazyEntries: true, decodeStrings: false, validateEntrySizes: true }, (openErr, zf) => {
      if (openErr || !zf) {
        reject(new PackageError(`the package is not a readable ZIP (CSAR) file: ${openErr?.message ?? 'unknown error'}`, {}, { cause: openErr }));
        return;
      }
      if (zf.entryCount > maxEntries) {
        reject(new PackageError(`the package has ${zf.entryCount} ZIP entries, more than the limit of ${maxEntries}`));
        return;
      }
      const files: CsarFiles = new Map();
      let declaredTotal = 0;
      let settled = false;
      const fail = (e: unknown): void => {
        if (settled) return;
        settled = true;
        zf.close();
        reject(e instanceof PackageError ? e : new PackageError(`the package is not a readable ZIP (CSAR) file: ${e instanceof Error ? e.message : String(e)}`, {}, { cause: e }));
      };
      zf.on('error', fail);
      zf.on('end', () => {
        if (settled) return;
        settled = true;
        resolve(files);
      });
      zf.on('entry', (entry: YauzlEntry) => {
        if (settled) return;
        try {
          const name = decodeName(entry);
          const path = normalizeEntryName(name);
          if (isSymlink(entry)) throw new PackageError(`unsafe entry ${JSON.stringify(name)} in the package: symbolic links are not allowed`);
          if (name.endsWith('/') || name.endsWith('\\') || path === '') {
            zf.readEntry();
            return;
          }
          if (files.has(path)) throw new PackageError(`the package contains ${JSON.stringify(path)} twice`);
          if (entry.isEncrypted()) throw new PackageError(`entry ${JSON.stringify(path)} is encrypted; encrypted CSAR entries are not supported`);
          const cap = entryLimit(path, maxFileBytes, maxVnfdBytes);
          const tooBig = (size: string): PackageError =>
            new PackageError(`the ${cap.what} is larger than the limit of ${describeSize(cap.limit)} (${cap.setting}): ${size}`, { file: path });
          if (entry.uncompressedSize > cap.limit) throw tooBig(`the ZIP declares ${describeSize(entry.uncompressedSize)} uncompressed`);
          declaredTotal += entry.uncompressedSize;
          if (declaredTotal > maxTotalBytes) {
            throw new PackageError(`the package's uncompressed size exceeds the limit of ${describeSize(maxTotalBytes)} (at entry ${JSON.stringify(path)})`);
          }
          zf.openReadStream(entry, (streamErr, stream) => {
            if (streamErr || !stream) {
              fail(new PackageError(`cannot read entry ${JSON.stringify(path)} of the package: ${streamErr?.message ?? 'no data'}`, {}, { cause: streamErr }));
              return;
            }
            const chunks: Buffer[] = [];
            let got = 0;
            stream.on('data', (c: Buffer) => {
              got += c.length;
              if (got > cap.limit) {
                stream.destroy();
                fail(tooBig(`it inflates to more than that`));
                return;
              }
              if (got > entry.uncompressedSize) {
                stream.destroy();
                fail(new PackageError(`entry ${JSON.stringify(path)} inflates to more than its declared size; the ZIP file is corrupt`));
                return;
              }
              chunks.push(c);
            });
            stream.on('error', (e: Error) => fail(new PackageError(`cannot read entry ${JSON.stringify(path)} of the package: ${e.message}`, {}, { cause: e })));
            stream.on('end', () => {
              if (settled) return;
              files.set(path, Buffer.concat(chunks, got));
              zf.readEntry();
            });
          });
        } catch (e) {
          fail(e);
        }
      });
      zf.readEntry();
    });
  });
}

/**
 * The entry count a ZIP's end-of-central-directory record declares, read from the last bytes of
 * the file only (at most 22 bytes + a 64 KiB comment): O(1) in the number of entries. Undefined
 * when there is no such record or the ZIP is ZIP64 (count 0xFFFF); the count is a claim, which
 * {@link readCsar} checks.
 */
export function declaredEntryCount(zip: Uint8Array): number | undefined {
  const b = Buffer.from(zip.buffer, zip.byteOffset, zip.byteLength);
  const stop = Math.max(0, b.length - 22 - 0xffff);
  for (let i = b.length - 22; i >= stop; i--) {
    if (b.readUInt32LE(i) === 0x06054b50) {
      const n = b.readUInt16LE(i + 10);
      return n === 0xffff ? undefined : n;
    }
  }
  return undefined;
}

/** Fixed timestamp for built archives, so the same folder always gives the same CSAR bytes (and checksum). */
const FIXED_MTIME = new Date('2020-01-01T00:00:00Z');

type FflateModule = typeof import('fflate');
let fflate: FflateModule | undefined;
function loadFflate(): FflateModule {
  // Loaded on first use only: reading packages (the server's job) must not depend on the builder.
  fflate ??= createRequire(import.meta.url)('fflate') as FflateModule;
  return fflate;
}

/**
 * Zips in-memory files into a CSAR. Keys are package-relative paths with forward slashes; they
 * are written as given (in sorted order), so tests can also build deliberately broken packages.
 */
export function buildCsarFromFiles(files: ReadonlyMap<string, Buffer | string> | Readonly<Record<string, Buffer | string>>): Buffer {
  const entries = files instanceof Map ? [...files.entries()] : Object.entries(files);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const zippable: Record<string, [Uint8Array, { mtime: Date }]> = {};
  for (const [path, content] of entries) {
    zippable[path] = [typeof content === 'string' ? Buffer.from(content, 'utf8') : content, { mtime: FIXED_MTIME }];
  }
  return Buffer.from(loadFflate().zipSync(zippable, { level: 6 }));
}

function collectDir(root: string, rel: string, out: Map<string, Buffer>): void {
  const here = rel === '' ? root : join(root, rel);
  for (const name of readdirSync(here).sort()) {
    const relPath = rel === '' ? name : `${rel}/${name}`;
    const st = lstatSync(join(root, relPath));
    if (st.isSymbolicLink()) throw new PackageError(`${relPath} is a symbolic link; a package folder must contain regular files only`);
    if (st.isDirectory()) collectDir(root, relPath, out);
    else if (st.isFile()) out.set(relPath, readFileSync(join(root, relPath)));
  }
}

/**
 * Turns a package folder (laid out as the CSAR: `TOSCA-Metadata/`, `Definitions/`, ...) into a
 * CSAR. The ETSI SOL001 type files may be absent from `Definitions/`: the parser knows those types.
 */
export function buildCsarFromDir(dir: string): Buffer {
  const files = new Map<string, Buffer>();
  collectDir(dir, '', files);
  if (files.size === 0) throw new PackageError(`the package folder ${dir} is empty`);
  return buildCsarFromFiles(files);
}
