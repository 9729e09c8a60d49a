/**
 * The one error catalog of the VNFM. Domain code throws {@link VnfmError}s with a stable `code`;
 * the API layer maps them to SOL013 ProblemDetails in one place (`src/api/problem.ts`), so clients
 * see the same status and wording for the same fault whichever endpoint raised it.
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
  VNFM_ERR_API_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_API_METHOD_NOT_ALLOWED: { httpStatus: 405, title: 'Method Not Allowed', retryable: false },
  VNFM_ERR_API_NOT_ACCEPTABLE: { httpStatus: 406, title: 'Not Acceptable', retryable: false },
  VNFM_ERR_API_CONFLICT: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_API_PAYLOAD_TOO_LARGE: { httpStatus: 413, title: 'Payload Too Large', retryable: false },
  VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE: { httpStatus: 415, title: 'Unsupported Media Type', retryable: false },
  VNFM_ERR_API_UNPROCESSABLE: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
  VNFM_ERR_API_VERSION_MISSING: { httpStatus: 400, title: 'Bad Request', retryable: false },
  VNFM_ERR_API_VERSION_UNSUPPORTED: { httpStatus: 406, title: 'Not Acceptable', retryable: false },
  VNFM_ERR_PKG_NOT_FOUND: { httpStatus: 404, title: 'Not Found', retryable: false },
  VNFM_ERR_PKG_STATE: { httpStatus: 409, title: 'Conflict', retryable: false },
  VNFM_ERR_PKG_INVALID: { httpStatus: 422, title: 'Unprocessable Entity', retryable: false },
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
  VNFM_ERR_GRANT_REJECTED: { httpStatus: 403, title: 'Grant Rejected', retryable: false },
  VNFM_ERR_GRANT_FAILED: { httpStatus: 503, title: 'Grant Failed', retryable: true },
  VNFM_ERR_MGMT_FAILED: { httpStatus: 422, title: 'Management Driver Failed', retryable: false },
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

  constructor(code: ErrorCode, detail: string, opts: { cause?: unknown; extra?: Record<string, unknown>; retryable?: boolean } = {}) {
    super(detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'VnfmError';
    this.code = code;
    const def: ErrorDef = ERRORS[code];
    this.httpStatus = def.httpStatus;
    this.title = def.title;
    this.retryable = opts.retryable ?? def.retryable;
    this.extra = opts.extra;
  }
}

/** Shorthand constructor, so call sites read `throw vnfmError('VNFM_ERR_INST_NOT_FOUND', ...)`. */
export function vnfmError(code: ErrorCode, detail: string, opts?: { cause?: unknown; extra?: Record<string, unknown>; retryable?: boolean }): VnfmError {
  return new VnfmError(code, detail, opts);
}

/** True when `e` is a catalog error with one of the given codes (or any code when none given). */
export function isVnfmError(e: unknown, ...codes: ErrorCode[]): e is VnfmError {
  return e instanceof VnfmError && (codes.length === 0 || codes.includes(e.code));
}
