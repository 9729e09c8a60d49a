/**
 * One error type for every failure talking to OpenStack (Keystone, Heat, Nova).
 *
 * Why its own class: the LCM engine must decide, from one place, whether a VIM failure is worth
 * another try inside the step (`retryable`) or ends it (FAILED_TEMP), and operators must see what
 * OpenStack actually said (Heat's `error.type` + message, Keystone's `error.message`). It extends
 * the catalog {@link VnfmError}, so the API layer maps it like any other domain error, while the
 * original OpenStack HTTP status stays available as {@link OpenStackError.status}.
 *
 * Messages never carry credentials or tokens: every text taken from a response or a URL goes
 * through {@link redactSecrets} first.
 */
import { type ErrorCode, parseRetryAfter, VnfmError } from '../../errors.ts';

/** What went wrong, coarsely; lets callers branch without parsing messages. */
export const OpenStackErrorKind = {
  /** OpenStack answered with an unexpected HTTP status. */
  http: 'http',
  /** No answer within the per-request timeout. */
  timeout: 'timeout',
  /** TCP/TLS/DNS level failure (refused, reset, unreachable). */
  connection: 'connection',
  /** The service catalog has no matching endpoint. */
  catalog: 'catalog',
  /** The answer was not what the API documents (missing header, bad JSON). */
  protocol: 'protocol',
  /** A Heat stack reached a failure status while we waited for it. */
  stackFailed: 'stack_failed',
  /** A Heat stack did not reach the wanted status in time. */
  waitTimeout: 'wait_timeout',
  /** The caller cancelled (AbortSignal). */
  aborted: 'aborted',
  /** The outbound rules of VIM endpoints refused the URL: nothing was sent. */
  refused: 'refused',
} as const;
/** See {@link OpenStackErrorKind}. */
export type OpenStackErrorKind = (typeof OpenStackErrorKind)[keyof typeof OpenStackErrorKind];

/** Everything needed to build an {@link OpenStackError}. */
export interface OpenStackErrorInit {
  /** Short service label: 'keystone', 'heat', 'nova' (or the catalog type of another service). */
  service: string;
  kind: OpenStackErrorKind;
  /** Human-readable detail (redacted by the constructor). */
  detail: string;
  /** Whether trying the same thing again later may succeed. */
  retryable: boolean;
  /** HTTP status OpenStack answered, when there was an answer. */
  status?: number;
  method?: string;
  /** Request URL (user info and query are dropped before it is kept). */
  url?: string;
  /** Heat's `error.type` (e.g. 'StackExists', 'ActionInProgress'), Keystone's/Nova's error title. */
  errorType?: string;
  /** Stack status and reason, for {@link OpenStackErrorKind.stackFailed} / `waitTimeout`. */
  stackStatus?: string;
  stackStatusReason?: string;
  /** Extra strings to scrub from the message (the password, the current token). */
  secrets?: readonly string[];
  /** The service's `Retry-After`, in ms (retryable errors only). */
  retryAfterMs?: number;
  cause?: unknown;
}

/** The parts of an OpenStack error body that matter, whatever the service's body shape. */
export interface ParsedOpenStackErrorBody {
  /** The most specific message found (Heat `error.message`, Keystone `error.message`, Nova `<fault>.message`). */
  message: string | undefined;
  /** Machine-readable type (Heat `error.type`, or the Keystone/Heat `title`, or the Nova fault key). */
  type: string | undefined;
  /** Generic HTTP title ('Conflict', 'Not Found') when given. */
  title: string | undefined;
}

const MAX_TEXT = 600;

/**
 * Removes credentials and tokens from a text that may end up in a log or an API answer.
 * Why: OpenStack error bodies and our own messages can echo request parts; a password or
 * a token in a log line is a security incident.
 */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of secrets) {
    if (s && s.length >= 4) out = out.split(s).join('***');
  }
  return out
    .replace(/("(?:password|secret|token|passcode|credential|auth_token|application_credential_secret)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi, '$1"***"')
    .replace(/\b(x-auth-token|x-subject-token|authorization)(\s*[:=]\s*)(?:(?:bearer|basic|token)\s+)?[^\s,;"']+/gi, '$1$2***')
    .replace(/\bgAAAAA[A-Za-z0-9_\-=]{20,}/g, '***')
    .replace(/(\/\/)[^/@\s:]+:[^/@\s]+@/g, '$1***@');
}

/** Keeps scheme, host and path of a URL; drops user info and query string (they may hold secrets). */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return redactSecrets(url.split('?')[0] ?? '');
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** Longest message taken from a VIM's error body (longer ones are cut, with an ellipsis). */
export const MAX_VIM_MESSAGE = 200;

/**
 * A message taken from a VIM's answer as it may be shown (op occ error, API answers, logs): one
 * line, control characters removed, at most {@link MAX_VIM_MESSAGE} characters.
 */
export function boundVimMessage(v: unknown, max = MAX_VIM_MESSAGE): string | undefined {
  if (typeof v !== 'string') return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const one = v.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim();
  if (one === '') return undefined;
  return one.length > max ? `${one.slice(0, max)}...` : one;
}

/** A machine-readable error type: a short identifier, else nothing. */
function errorTypeOf(v: unknown): string | undefined {
  return typeof v === 'string' && /^[A-Za-z][A-Za-z0-9 _.:-]{0,63}$/.test(v.trim()) ? v.trim() : undefined;
}

/**
 * Reads the error text out of an OpenStack error body, only when it is a JSON error of a shape
 * OpenStack documents: Heat `{"code", "title", "explanation", "error": {"type", "message"?,
 * "traceback"}}`, Keystone `{"error": {"code", "title", "message"}}`, Nova
 * `{"itemNotFound": {"code", "message"}}`. Anything else (HTML from a proxy, plain text, JSON of
 * another shape: whatever a server that is not OpenStack answers) gives nothing, so no foreign
 * body is ever echoed; the message is one bounded line ({@link boundVimMessage}).
 */
export function parseOpenStackErrorBody(text: string): ParsedOpenStackErrorBody {
  const empty: ParsedOpenStackErrorBody = { message: undefined, type: undefined, title: undefined };
  if (!text || text.trim() === '') return empty;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return empty;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return empty;
  const b = body as Record<string, unknown>;
  const err = b.error;
  if (err !== null && typeof err === 'object' && !Array.isArray(err)) {
    const e = err as Record<string, unknown>;
    return {
      message: boundVimMessage(str(e.message) ?? str(b.explanation)),
      type: errorTypeOf(e.type) ?? errorTypeOf(e.title) ?? errorTypeOf(b.title),
      title: errorTypeOf(b.title) ?? errorTypeOf(e.title),
    };
  }
  const hasCode = typeof b.code === 'number' || (typeof b.code === 'string' && /^\d{3}$/.test(b.code));
  if (typeof err === 'string' && hasCode) return { message: boundVimMessage(err), type: errorTypeOf(b.title), title: errorTypeOf(b.title) };
  // Nova / Cinder style: { "<faultName>": { "code", "message" } }
  const keys = Object.keys(b);
  if (keys.length === 1) {
    const k = keys[0] as string;
    const inner = b[k];
    if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) {
      const i = inner as Record<string, unknown>;
      const m = boundVimMessage(str(i.message));
      if (m !== undefined && typeof i.code === 'number') return { message: m, type: errorTypeOf(k), title: undefined };
    }
  }
  // Heat / webob without an error object: { "code", "title", "explanation" }
  if (hasCode && (str(b.title) !== undefined || str(b.explanation) !== undefined)) {
    return { message: boundVimMessage(str(b.message) ?? str(b.explanation) ?? str(b.title)), type: errorTypeOf(b.title), title: errorTypeOf(b.title) };
  }
  return empty;
}

/** HTTP statuses that mean "the service is (temporarily) not able to answer": worth a later retry. */
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * The failure taxonomy of an OpenStack HTTP answer (see src/errors.ts): retryable are server-side
 * failures (5xx but 501/505, which no retry changes), 408 and 429 throttling (with its
 * Retry-After), and Heat's 409 `ActionInProgress` (the other action ends by itself); terminal are
 * every other 4xx: validation (400), authentication refused (401 after the re-authentication, 403),
 * not found (404), conflicts (409), quota (413, or 403 `OverQuota`).
 */
export function isRetryableStatus(status: number, errorType?: string): boolean {
  if (status >= 500) return status !== 501 && status !== 505;
  return status === 408 || status === 429 || (status === 409 && errorType === 'ActionInProgress');
}

function codeFor(kind: OpenStackErrorKind, status: number | undefined, retryable: boolean): ErrorCode {
  if (kind === OpenStackErrorKind.waitTimeout) return 'VNFM_ERR_LCM_TIMEOUT';
  if (kind === OpenStackErrorKind.timeout || kind === OpenStackErrorKind.connection) return 'VNFM_ERR_VIM_UNREACHABLE';
  if (status !== undefined && TRANSIENT_STATUSES.has(status)) return 'VNFM_ERR_VIM_UNREACHABLE';
  if (retryable && kind === OpenStackErrorKind.http) return 'VNFM_ERR_VIM_UNREACHABLE';
  return 'VNFM_ERR_VIM_FAILED';
}

/**
 * A failed OpenStack call or wait. `status` is OpenStack's HTTP status (undefined when there was
 * no answer), `service` says which service failed, `retryable` whether the same call may succeed
 * later (5xx gateway errors, timeouts, connection failures, Heat's "action in progress").
 */
export class OpenStackError extends VnfmError {
  /** HTTP status OpenStack answered; undefined for timeouts, connection and catalog errors. */
  readonly status: number | undefined;
  /** 'keystone', 'heat', 'nova', or another catalog type. */
  readonly service: string;
  readonly kind: OpenStackErrorKind;
  /** Heat's `error.type` (e.g. 'StackExists', 'ActionInProgress', 'EntityNotFound') or the error title. */
  readonly errorType: string | undefined;
  readonly method: string | undefined;
  /** Request URL without user info or query string. */
  readonly url: string | undefined;
  /** Last seen stack status (stack waits only). */
  readonly stackStatus: string | undefined;
  /** Heat's `stack_status_reason` (stack waits only). */
  readonly stackStatusReason: string | undefined;

  constructor(init: OpenStackErrorInit) {
    const secrets = init.secrets ?? [];
    // one bounded line: parts of it (a stack's status reason) come from the VIM's answers
    const detail = boundVimMessage(redactSecrets(init.detail, secrets), MAX_TEXT * 2) ?? '';
    super(codeFor(init.kind, init.status, init.retryable), detail, {
      retryable: init.retryable,
      ...(init.retryAfterMs === undefined ? {} : { retryAfterMs: init.retryAfterMs }),
      ...(init.cause === undefined ? {} : { cause: init.cause }),
      extra: {
        openstackService: init.service,
        ...(init.status === undefined ? {} : { openstackStatus: init.status }),
        ...(init.errorType === undefined ? {} : { openstackErrorType: init.errorType }),
      },
    });
    this.name = 'OpenStackError';
    this.status = init.status;
    this.service = init.service;
    this.kind = init.kind;
    this.errorType = init.errorType;
    this.method = init.method;
    this.url = init.url === undefined ? undefined : redactSecrets(safeUrl(init.url), secrets);
    this.stackStatus = init.stackStatus;
    this.stackStatusReason =
      init.stackStatusReason === undefined ? undefined : boundVimMessage(redactSecrets(init.stackStatusReason, secrets), MAX_TEXT);
  }

  /**
   * Builds the error for an unexpected HTTP answer, with OpenStack's own error text.
   * `retryable` defaults to {@link isRetryableStatus} (5xx but 501/505, 408, 429, and 409
   * `ActionInProgress`), false otherwise; `headers` give the `Retry-After` of a retryable answer.
   */
  static fromResponse(args: {
    service: string;
    method: string;
    url: string;
    status: number;
    bodyText: string;
    headers?: Headers;
    secrets?: readonly string[];
    retryable?: boolean;
    context?: string;
  }): OpenStackError {
    const parsed = parseOpenStackErrorBody(args.bodyText);
    const retryable = args.retryable ?? isRetryableStatus(args.status, parsed.type);
    const retryAfterMs = retryable ? parseRetryAfter(args.headers?.get('retry-after')) : undefined;
    let path: string;
    try {
      path = new URL(args.url).pathname;
    } catch {
      path = safeUrl(args.url);
    }
    const what = [parsed.type, parsed.message].filter((x) => x !== undefined).join(': ');
    const ctx = args.context === undefined ? '' : `${args.context}: `;
    const detail = `${ctx}${args.service} ${args.method} ${path} answered ${args.status}${what === '' ? '' : ` (${what})`}`;
    return new OpenStackError({
      service: args.service,
      kind: OpenStackErrorKind.http,
      detail,
      retryable,
      status: args.status,
      method: args.method,
      url: args.url,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(parsed.type === undefined ? {} : { errorType: parsed.type }),
      ...(args.secrets === undefined ? {} : { secrets: args.secrets }),
    });
  }

  /** True when `e` is an OpenStackError with the given HTTP status (and Heat error type, if given). */
  static isStatus(e: unknown, status: number, errorType?: string): e is OpenStackError {
    return e instanceof OpenStackError && e.status === status && (errorType === undefined || e.errorType === errorType);
  }
}

/**
 * Parses an OpenStack JSON answer; a body that is not JSON is a protocol error (never retried).
 * `emptyAsObject` treats an empty body as `{}` (Heat answers some calls with no body).
 */
export function parseJsonAnswer(res: { service: string; method: string; status: number; text: string }, opts: { emptyAsObject?: boolean; secrets?: readonly string[] } = {}): unknown {
  if (opts.emptyAsObject && res.text === '') return {};
  try {
    return JSON.parse(res.text);
  } catch (err) {
    throw new OpenStackError({
      service: res.service as OpenStackErrorInit['service'],
      kind: OpenStackErrorKind.protocol,
      detail: `${res.service} ${res.method} answered ${res.status} with a body that is not JSON`,
      retryable: false,
      status: res.status,
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
      cause: err,
    });
  }
}
