/**
 * ETSI conformance oracle for tests: validates bodies against the ETSI-published definitions
 * vendored under `test/fixtures/etsi/` (see its NOTICE), with our own validator
 * (`etsi-validator.ts`), so our own TypeBox schemas are never the only judge of what
 * "SOL-conformant" means.
 *
 * v2 API bodies are checked against SOL002/SOL003 v3.7.1 (OpenAPI), v1 API bodies against the
 * JSON schemas of the ETSI conformance suite v2.6.1 (the ones its Robot tests use).
 */
import { AssertionError } from 'node:assert';
import { ETSI_FIXTURES_DIR, EtsiValidator } from './etsi-validator.ts';

/** Which of our APIs a body belongs to. */
export type EtsiApiVersion = 'v1' | 'v2';

/** Options of {@link expectEtsiValid}. */
export interface EtsiCheckOptions {
  /** The body is an array of `schemaName` (a list GET). */
  readonly array?: boolean;
  /** SOL003 (VNFM <-> NFVO, default) or SOL002 (VNFM <-> EM/VNF). */
  readonly sol?: '002' | '003';
  /** Reject attributes the ETSI definitions do not declare (catches misspelled optional attributes). */
  readonly noExtra?: boolean;
}

/** One validation problem as reported by the validator. */
export interface EtsiProblem {
  readonly path: string;
  readonly message: string;
  readonly params: Record<string, unknown>;
}

/** Result of {@link checkEtsi}. */
export interface EtsiCheckResult {
  readonly valid: boolean;
  /** File and schema the body was checked against. */
  readonly target: string;
  readonly errors: readonly EtsiProblem[];
}

/** The folder holding the vendored ETSI definitions and our sample bodies (`test/fixtures/etsi`). */
export const ETSI_DIR = ETSI_FIXTURES_DIR;

const SPEC_OF: Record<EtsiApiVersion, '3.7.1' | '2.6.1'> = { v2: '3.7.1', v1: '2.6.1' };

/**
 * Our type names -> schema names of the 2.6.1 conformance suite, which spells some of them
 * differently per SOL (the validator also matches names case-insensitively).
 * `null` = the suite has no usable schema for that type.
 */
const V1_NAMES: Record<'002' | '003', Record<string, string | null>> = {
  '003': {
    VnfInstance: 'vnfInstance',
    VnfLcmOpOcc: 'VnfLcmOpOcc',
    LccnSubscription: 'LccnSubscription',
    ProblemDetails: 'ProblemDetails',
    ApiVersionInformation: 'ApiVersionInformation',
    VnfLcmOperationOccurrenceNotification: 'VnfLcmOperationOccurrenceNotification',
    VnfIdentifierCreationNotification: 'VnfIdentifierCreationNotification',
    VnfIdentifierDeletionNotification: 'vnfIdentifierDeletionNotification',
    Grant: 'grant',
    VnfPkgInfo: null,
  },
  '002': {
    VnfInstance: 'vnfInstance',
    VnfLcmOpOcc: 'vnfLcmOpOcc',
    LccnSubscription: 'subscription',
    ProblemDetails: 'ProblemDetails',
    ApiVersionInformation: 'ApiVersionInformation',
    // empty files upstream (see test/fixtures/etsi/NOTICE)
    VnfLcmOperationOccurrenceNotification: null,
    VnfIdentifierCreationNotification: null,
    VnfIdentifierDeletionNotification: null,
    VnfPkgInfo: null,
  },
};

/** v2 names looked up in a specific 3.7.1 interface (not the default VNFLifecycleManagement). */
const V2_NAMES: Record<string, string> = {
  VnfPkgInfo: 'VNFPackageManagement:VnfPkgInfo',
};

const validators = new Map<string, EtsiValidator>();

function validatorFor(version: EtsiApiVersion, sol: '002' | '003', noExtra: boolean): EtsiValidator {
  const key = `${version}|${sol}|${noExtra}`;
  let v = validators.get(key);
  if (!v) {
    v = new EtsiValidator({ spec: SPEC_OF[version], sol, noExtra });
    validators.set(key, v);
  }
  return v;
}

/** The ETSI schema name used for one of our type names in the given API version. */
export function etsiSchemaName(version: EtsiApiVersion, schemaName: string, sol: '002' | '003' = '003'): string {
  if (version === 'v2') return V2_NAMES[schemaName] ?? schemaName;
  const mapped = V1_NAMES[sol][schemaName];
  if (mapped === null) throw new Error(`the ETSI 2.6.1 suite has no usable SOL${sol} schema for ${schemaName}`);
  return mapped ?? schemaName;
}

/**
 * Validates `body` and returns the result without throwing on invalid bodies (for tests that
 * expect a body to be rejected). Validators are created once per version/SOL and reused.
 */
export function checkEtsi(version: EtsiApiVersion, schemaName: string, body: unknown, opts: EtsiCheckOptions = {}): EtsiCheckResult {
  const sol = opts.sol ?? '003';
  const validator = validatorFor(version, sol, opts.noExtra ?? false);
  const r = validator.validate(etsiSchemaName(version, schemaName, sol), body, { array: opts.array ?? false });
  return { valid: r.valid, target: r.target, errors: r.errors };
}

function formatProblem(e: EtsiProblem): string {
  const params = e.params && Object.keys(e.params).length > 0 ? ` ${JSON.stringify(e.params)}` : '';
  return `  ${e.path || '/'}: ${e.message}${params}`;
}

/**
 * Asserts that `body` conforms to the ETSI definition of `schemaName` for our `v1` or `v2` API.
 *
 * @throws AssertionError listing every violation (JSON pointer, message, parameters)
 */
export function expectEtsiValid(version: EtsiApiVersion, schemaName: string, body: unknown, opts: EtsiCheckOptions = {}): void {
  const r = checkEtsi(version, schemaName, body, opts);
  if (r.valid) return;
  const what = `${opts.array ? 'array of ' : ''}${schemaName}`;
  const lines = r.errors.map(formatProblem);
  throw new AssertionError({
    message: `body is not a valid ETSI ${version} ${what} (SOL${opts.sol ?? '003'} ${SPEC_OF[version]}, ${r.target}); ${r.errors.length} error(s):\n${lines.join('\n')}`,
    actual: body,
    expected: what,
    operator: 'expectEtsiValid',
  });
}
