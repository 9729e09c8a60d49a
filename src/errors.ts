/**
 * The one error catalog of the VNFM. Domain code throws {@link VnfmError}s with a stable `code`;
 * the API layer maps them to SOL013 ProblemDetails in one place (`src/api/problem.ts`), so clients
 * see the same status and wording for the same fault whichever endpoint raised it.
 *
 * Failure taxonomy (what the LCM engine does with a failed step, see docs/architecture.md):
 * - **retryable** ({@link retryableError}): the same step may succeed later without anybody
 *   changing anything (VIM 5xx, request timeouts, refused/reset connections, 429 throttling).
 *   The engine re-runs the step with exponential back-off, honouring {@link VnfmError.retryAfterMs},
 *   up to `runner.stepRetries.maxAttempts`; the op stays PROCESSING meanwhile.
 * - **terminal** ({@link terminalError}): repeating the step as is cannot help (4xx validation,
 *   quota, not found, authentication refused, a VIM resource that failed, a wait that ran out of
 *   time). The op goes FAILED_TEMP at once with the ProblemDetails; an operator retries, rolls
 *   back or fails it.
 * Anything that is not a {@link VnfmError} (a bug, a database failure) is terminal.
 */

/** Definition of one catalog entry: HTTP status, ProblemDetails title, and whether a retry may help. */
export interface ErrorDef {
  readonly httpStatus: number;
  readonly title: string;
  readonly retryable: boolean;
}

/** Every error the VNFM raises on purpose, keyed by its stable code `VNFM_ERR_<AREA>_<WHAT>`. */
export const ERRORS = {
  VNFM_ERR_API_BAD_REQUEST: { httpStatus: 400, title: 'Bad Request', retryable: false },
  VNFM_ERR_API_UNAUTHORIZED: { httpStatus: 401, title: 'Unauthorized', retryable: false },
  VNFM_ERR_API_FORBIDDEN: { httpStatus: 403, title: 'Forbidden', retryable: false },
  /** The identity service that validates a caller's token (Keystone, an OAuth 2.0 introspection endpoint) does not answer. */
  VNFM_ERR_API_AUTH_UNAVAILABLE: { httpStatus: 503, title: 'Service Unavailable', retryable: true },
  /** Too many failed authentications from the client's address (`auth.failureLimit`): refused with Retry-After. */
  VNFM_ERR_API_TOO_MANY_FAILURES: { httpStatus: 429, title: 'Too Many Requests', retryable: true },
  /** More API requests in flight than `api.maxInFlightRequests`: refused at once with Retry-After. */
  VNFM_ERR_API_BUSY: { httpStatus: 503, title: 'Service Unavailable', retryable: true },
  VNFM_ERR_API_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_API_METHOD_NOT_ALLOWED: { httpStatus: 405, title: 'Method Not Allowed', retryable: false },
  VNFM_ERR_API_NOT_ACCEPTABLE: { httpStatus: 406, title: 'Not Acceptable', retryable: false },
  VNFM_ERR_API_CONFLICT: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_API_PAYLOAD_TOO_LARGE: { httpStatus: 413, title: 'Payload Too Large', retryable: false },
  VNFM_ERR_API_URI_TOO_LONG: { httpStatus: 414, title: 'URI Too Long', retryable: false },
  VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE: { httpStatus: 415, title: 'Unsupported Media Type', retryable: false },
  VNFM_ERR_API_UNPROCESSABLE: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  VNFM_ERR_API_VERSION_MISSING: { httpStatus: 400, title: 'Bad Request', retryable: false },
  VNFM_ERR_API_VERSION_UNSUPPORTED: { httpStatus: 406, title: 'Not Acceptable', retryable: false },
  VNFM_ERR_PKG_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_PKG_STATE: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_PKG_INVALID: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  /** Onboarding capacity of this process is in use: retry after the `Retry-After` delay. */
  VNFM_ERR_PKG_BUSY: { httpStatus: 503, title: 'Service Unavailable', retryable: true },
  /** The caller already runs its share of onboardings (packages.maxConcurrentOnboardingsPerCaller). */
  VNFM_ERR_PKG_CALLER_BUSY: { httpStatus: 429, title: 'Too Many Requests', retryable: true },
  VNFM_ERR_VNFD_NOT_FOUND: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  VNFM_ERR_INST_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_INST_STATE: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_INST_BUSY: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_INST_INVALID: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  VNFM_ERR_OPOCC_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_OPOCC_STATE: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_OPOCC_UNSUPPORTED: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  VNFM_ERR_SUB_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_SUB_CALLBACK: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  VNFM_ERR_VIM_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_VIM_INVALID: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  VNFM_ERR_VIM_CONFLICT: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_VIM_UNREACHABLE: { httpStatus: 503, title: 'Service Unavailable', retryable: true },
  VNFM_ERR_VIM_FAILED: { httpStatus: 500, title: 'VIM Operation Failed', retryable: false },
  /** The VNF's deployment unit on the VIM (Heat stack; Kubernetes namespace / workloads) is gone: never read as "no resources". */
  VNFM_ERR_INFRA_STACK_MISSING: { httpStatus: 409, title: 'VNF Resources Missing on the VIM', retryable: false },
  VNFM_ERR_GRANT_REJECTED: { httpStatus: 403, title: 'Grant Rejected', retryable: false },
  VNFM_ERR_GRANT_FAILED: { httpStatus: 503, title: 'Grant Failed', retryable: true },
  VNFM_ERR_MGMT_FAILED: { httpStatus: 422, title: 'Management Driver Failed', retryable: false },
  VNFM_ERR_MGMT_REFUSED: { httpStatus: 422, title: 'Refused by the Management Driver', retryable: false },
  VNFM_ERR_MGMT_COMMAND: { httpStatus: 422, title: 'Remote Command Failed', retryable: false },
  VNFM_ERR_SSH_UNREACHABLE: { httpStatus: 503, title: 'VNF Host Unreachable over SSH', retryable: true },
  VNFM_ERR_SSH_AUTH: { httpStatus: 422, title: 'SSH Authentication Failed', retryable: false },
  VNFM_ERR_SSH_HOST_KEY: { httpStatus: 422, title: 'SSH Host Key Mismatch', retryable: false },
  VNFM_ERR_LCM_INTERRUPTED: { httpStatus: 500, title: 'Internal Server Error', retryable: true },
  VNFM_ERR_LCM_TIMEOUT: { httpStatus: 504, title: 'Operation Timed Out', retryable: true },
  VNFM_ERR_FAULT_INVALID: { httpStatus: 400, title: 'Bad Request', retryable: false },
  VNFM_ERR_FAULT_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_INTERNAL: { httpStatus: 500, title: 'Internal Server Error', retryable: false },
} as const satisfies Record<string, ErrorDef>;

/** Stable error code; part of the API contract (appears as ProblemDetails `type` suffix). */
export type ErrorCode = keyof typeof ERRORS;

/**
 * An expected failure with a stable code. `detail` is shown to API clients verbatim, so it must
 * be clear and must never contain secrets.
 */
export class VnfmError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly title: string;
  readonly retryable: boolean;
  /** Extra ProblemDetails members (e.g. the ids that do not exist). */
  readonly extra: Record<string, unknown> | undefined;
  /**
   * Retryable errors only: the earliest time, in ms from now, a retry makes sense (a VIM's
   * `Retry-After`). The engine waits at least this long (within its maximum back-off).
   */
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, detail: string, opts: VnfmErrorOptions = {}) {
    super(detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'VnfmError';
    this.code = code;
    const def: ErrorDef = ERRORS[code];
    this.httpStatus = def.httpStatus;
    this.title = def.title;
    this.retryable = opts.retryable ?? def.retryable;
    this.extra = opts.extra;
    this.retryAfterMs = this.retryable && opts.retryAfterMs !== undefined && Number.isFinite(opts.retryAfterMs) && opts.retryAfterMs > 0 ? Math.round(opts.retryAfterMs) : undefined;
  }
}

/** Options of a {@link VnfmError}. */
export interface VnfmErrorOptions {
  cause?: unknown;
  extra?: Record<string, unknown>;
  /** Overrides the catalog's `retryable` default of the code. */
  retryable?: boolean;
  /** Retry-after hint in ms (kept on retryable errors only). */
  retryAfterMs?: number;
}

/** Shorthand constructor, so call sites read `throw vnfmError('VNFM_ERR_INST_NOT_FOUND', ...)`. */
export function vnfmError(code: ErrorCode, detail: string, opts?: VnfmErrorOptions): VnfmError {
  return new VnfmError(code, detail, opts);
}

/**
 * A failure worth repeating as is, later (whatever the code's catalog default): the engine
 * retries the step with back-off, not before `retryAfterMs` when given.
 */
export function retryableError(code: ErrorCode, detail: string, opts: Omit<VnfmErrorOptions, 'retryable'> = {}): VnfmError {
  return new VnfmError(code, detail, { ...opts, retryable: true });
}

/** A failure that repeating cannot fix (whatever the code's catalog default): FAILED_TEMP at once. */
export function terminalError(code: ErrorCode, detail: string, opts: Omit<VnfmErrorOptions, 'retryable' | 'retryAfterMs'> = {}): VnfmError {
  return new VnfmError(code, detail, { ...opts, retryable: false });
}

/** How a failure is treated by automatic retries. */
export interface FailureClass {
  retryable: boolean;
  /** Earliest sensible retry, in ms from now (retryable only). */
  retryAfterMs?: number;
}

/** Retryable or terminal: a {@link VnfmError} says so itself; anything else is terminal. */
export function classifyFailure(e: unknown): FailureClass {
  if (!(e instanceof VnfmError) || !e.retryable) return { retryable: false };
  return e.retryAfterMs === undefined ? { retryable: true } : { retryable: true, retryAfterMs: e.retryAfterMs };
}

/**
 * Parses an HTTP `Retry-After` header (delta seconds or an HTTP date) into ms from now, or
 * undefined when absent or unreadable. `now` is the host clock (only a date form depends on it).
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** True when `e` is a catalog error with one of the given codes (or any code when none given). */
export function isVnfmError(e: unknown, ...codes: ErrorCode[]): e is VnfmError {
  return e instanceof VnfmError && (codes.length === 0 || codes.includes(e.code));
}
