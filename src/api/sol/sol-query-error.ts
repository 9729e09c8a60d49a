import { VnfmError } from '../../errors.ts';

/** The URI query parameters whose syntax SOL013 defines (filter, selectors, paging). */
export type SolQueryParameter =
  | 'filter'
  | 'all_fields'
  | 'fields'
  | 'exclude_fields'
  | 'exclude_default'
  | 'nextpage_opaque_marker'
  | 'limit';

/**
 * A malformed SOL013 query (attribute filter, attribute selector or paging marker).
 *
 * SOL013 requires 400 Bad Request + ProblemDetails for these, so the error is a catalog
 * {@link VnfmError} with code `VNFM_ERR_API_BAD_REQUEST`: the one ProblemDetails mapper handles it
 * without special cases. `parameter` and `position` are kept apart from the message so callers
 * and tests can tell which part of the query was wrong without parsing text.
 */
export class SolQueryError extends VnfmError {
  /** The query parameter that was rejected. */
  readonly parameter: SolQueryParameter;
  /** 0-based character offset in the parameter value where the problem was found, when known. */
  readonly position: number | undefined;

  constructor(parameter: SolQueryParameter, detail: string, position?: number) {
    super('VNFM_ERR_API_BAD_REQUEST', detail);
    this.name = 'SolQueryError';
    this.parameter = parameter;
    this.position = position;
  }
}
