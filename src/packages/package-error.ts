/**
 * The one error type of the package layer (CSAR reading and VNFD parsing).
 *
 * Onboarding is where operators meet most of their mistakes, so every problem with a package
 * becomes a {@link PackageError} whose message names the file and, when known, the line and
 * column: `Definitions/vnfd.yaml:42:7: unknown node type 'x'`. It is a catalog error
 * (`VNFM_ERR_PKG_INVALID`, 422) so the API layer shows it as ProblemDetails without a special
 * case, and the onboarding job can store the message as the package's onboarding failure.
 */
import { VnfmError } from '../errors.ts';

/** Where in the package a problem was found; all parts optional because not every problem has a line. */
export interface PackageErrorLocation {
  /** Package-relative path, e.g. `Definitions/vnfd.yaml`. */
  readonly file?: string | undefined;
  /** 1-based line. */
  readonly line?: number | undefined;
  /** 1-based column. */
  readonly column?: number | undefined;
}

/** Formats `file:line:col` (or the parts that are known), the prefix every package message starts with. */
export function formatPackageLocation(loc: PackageErrorLocation): string {
  if (loc.file === undefined) return '';
  if (loc.line === undefined) return loc.file;
  return loc.column === undefined ? `${loc.file}:${loc.line}` : `${loc.file}:${loc.line}:${loc.column}`;
}

/**
 * A VNF package (CSAR) or VNFD that cannot be accepted. The `message` is complete and meant for
 * an operator; `problem` is the same text without the location prefix.
 */
export class PackageError extends VnfmError {
  /** The problem text without the `file:line:col: ` prefix. */
  readonly problem: string;
  /** Package-relative file the problem is in, when known. */
  readonly file: string | undefined;
  /** 1-based line, when known. */
  readonly line: number | undefined;
  /** 1-based column, when known. */
  readonly column: number | undefined;

  constructor(problem: string, location: PackageErrorLocation = {}, opts: { cause?: unknown } = {}) {
    const prefix = formatPackageLocation(location);
    super('VNFM_ERR_PKG_INVALID', prefix === '' ? problem : `${prefix}: ${problem}`, opts);
    this.name = 'PackageError';
    this.problem = problem;
    this.file = location.file;
    this.line = location.line;
    this.column = location.column;
  }
}

/** True when `e` is a {@link PackageError}; lets callers tell "bad package" from internal faults. */
export function isPackageError(e: unknown): e is PackageError {
  return e instanceof PackageError;
}
