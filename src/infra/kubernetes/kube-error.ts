/**
 * One error type for every failure talking to a Kubernetes API server.
 *
 * Why its own class: the driver branches on what Kubernetes said (404 = already gone, 409
 * `AlreadyExists` = adopt on resume, 409 precondition failure = the pod was already replaced),
 * while the LCM engine only needs the catalog code: `VNFM_ERR_VIM_UNREACHABLE` (no answer, 5xx,
 * throttling: the operation goes FAILED_TEMP and a retry may succeed) or `VNFM_ERR_VIM_FAILED`
 * (Kubernetes refused the request on purpose). Operators see Kubernetes' own `Status.message`.
 * Messages never carry the bearer token: only the method, the API path and Kubernetes' answer.
 */
import { type ErrorCode, VnfmError } from '../../errors.ts';

/** Everything needed to build a {@link KubeApiError}. */
export interface KubeApiErrorInit {
  detail: string;
  /** HTTP status Kubernetes answered; undefined when there was no answer. */
  status?: number;
  /** `Status.reason` ('NotFound', 'AlreadyExists', 'Conflict', 'Invalid', ...). */
  reason?: string;
  /** Whether the same call may succeed later. */
  retryable: boolean;
  /** The API server's `Retry-After` (429, 503), in ms. */
  retryAfterMs?: number;
  /** Request method and API path (no query string), for logs. */
  method?: string;
  path?: string;
  cause?: unknown;
}

/**
 * HTTP statuses worth another try: throttling (429, with its Retry-After) and server-side failures.
 * Everything else Kubernetes answers is terminal: 400/422 invalid objects, 401/403 refused
 * credentials or RBAC, 404, 409 conflicts, 403 quota (`exceeded quota`).
 */
export const KUBE_RETRY_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** No answer or a transient answer: unreachable (retry later); anything else: failed. */
function codeFor(status: number | undefined, retryable: boolean): ErrorCode {
  if (retryable || (status !== undefined && KUBE_RETRY_STATUSES.has(status))) return 'VNFM_ERR_VIM_UNREACHABLE';
  return 'VNFM_ERR_VIM_FAILED';
}

/** A failed Kubernetes API call. */
export class KubeApiError extends VnfmError {
  /** HTTP status Kubernetes answered, or undefined (connection failure, timeout). */
  readonly status: number | undefined;
  /** Kubernetes `Status.reason`, when the server sent one. */
  readonly reason: string | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;

  constructor(init: KubeApiErrorInit) {
    super(codeFor(init.status, init.retryable), init.detail, {
      retryable: init.retryable,
      ...(init.retryAfterMs === undefined ? {} : { retryAfterMs: init.retryAfterMs }),
      ...(init.cause === undefined ? {} : { cause: init.cause }),
      extra: {
        ...(init.status === undefined ? {} : { kubernetesStatus: init.status }),
        ...(init.reason === undefined ? {} : { kubernetesReason: init.reason }),
      },
    });
    this.name = 'KubeApiError';
    this.status = init.status;
    this.reason = init.reason;
    this.method = init.method;
    this.path = init.path;
  }

  /** True when `e` is a KubeApiError with HTTP status `status` (and `reason`, when given). */
  static isStatus(e: unknown, status: number, reason?: string): e is KubeApiError {
    return e instanceof KubeApiError && e.status === status && (reason === undefined || e.reason === reason);
  }
}
