/**
 * Handling of large query results (ETSI GS NFV-SOL 013, clause 5.4): the server returns one page
 * and a `Link: <...>; rel="next"` header whose URL carries `nextpage_opaque_marker`.
 */
import { SolQueryError } from './sol-query-error.ts';

/** The query parameter that carries the marker (SOL013 5.4.2.1). */
export const NEXTPAGE_MARKER_PARAMETER = 'nextpage_opaque_marker';

/** Options of {@link paginate}. */
export interface PaginateOptions<T> {
  /** Items per page; 0, a negative number or Infinity disables paging (everything after the marker). */
  readonly pageSize: number;
  /** The `nextpage_opaque_marker` the client sent, if any. */
  readonly marker?: string | undefined;
  /** Absolute or root-relative URL of the list resource, without query (e.g. `http://h/vnflcm/v2/vnf_lcm_op_occs`). */
  readonly baseUrl: string;
  /** The request's query parameters; all except the old marker are carried into the next link. */
  readonly query: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Stable identity of an item; default: its string `id` attribute. */
  readonly getId?: (item: T) => string | undefined;
}

/** One page of results. */
export interface Page<T> {
  readonly items: T[];
  /** Value for the `Link` response header, present only when more items follow. */
  readonly linkHeader?: string;
  /** The marker inside `linkHeader` (for logs and tests). */
  readonly nextMarker?: string;
}

interface MarkerPayload {
  /** Offset of the first item of the next page. */
  o: number;
  /** Id of the last item already returned, when items have ids. */
  id?: string;
}

function defaultId(item: unknown): string | undefined {
  if (typeof item === 'object' && item !== null && typeof (item as { id?: unknown }).id === 'string') return (item as { id: string }).id;
  return undefined;
}

function encodeMarker(p: MarkerPayload): string {
  return Buffer.from(JSON.stringify(p), 'utf8').toString('base64url');
}

function decodeMarker(marker: string): MarkerPayload {
  const invalid = (): SolQueryError =>
    new SolQueryError(NEXTPAGE_MARKER_PARAMETER, 'Invalid nextpage_opaque_marker: use the URL from the Link header of the previous page unchanged');
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(marker)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(marker, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid();
  const { o, id } = parsed as { o?: unknown; id?: unknown };
  if (typeof o !== 'number' || !Number.isSafeInteger(o) || o < 0) throw invalid();
  if (id !== undefined && typeof id !== 'string') throw invalid();
  return id === undefined ? { o } : { o, id };
}

function buildQuery(query: PaginateOptions<unknown>['query'], marker: string): string {
  const parts: string[] = [];
  for (const [key, raw] of Object.entries(query)) {
    if (key === NEXTPAGE_MARKER_PARAMETER || raw === undefined) continue;
    const values: readonly string[] = typeof raw === 'string' ? [raw] : raw;
    for (const v of values) parts.push(v === '' ? encodeURIComponent(key) : `${encodeURIComponent(key)}=${encodeURIComponent(v)}`);
  }
  parts.push(`${NEXTPAGE_MARKER_PARAMETER}=${marker}`);
  return parts.join('&');
}

/**
 * Cuts one page out of an already filtered, stably ordered list and builds the `Link` header
 * for the next one.
 *
 * The marker is opaque to clients (base64url of the next offset and the last returned id): when
 * the last id is still in the list the next page starts right after it, so inserts and deletes
 * between two requests neither repeat nor skip items before that point; when that item itself is
 * gone, the page starts where its successor now is (one before the stored offset). Other query parameters (`filter`, `fields`, ...) are kept in the link so every page is
 * selected and shaped the same way.
 *
 * @throws SolQueryError when the client's marker was not produced here (400).
 */
export function paginate<T>(items: readonly T[], opts: PaginateOptions<T>): Page<T> {
  let start = 0;
  if (opts.marker !== undefined) {
    const m = decodeMarker(opts.marker);
    const getId = opts.getId ?? defaultId;
    const at = m.id === undefined ? -1 : items.findIndex((x) => getId(x) === m.id);
    // The last returned item is gone (most likely deleted): its successor has moved up one place.
    // Starting one earlier risks a repeat rather than a silently skipped item.
    const fallback = m.id === undefined ? m.o : Math.max(0, m.o - 1);
    start = at >= 0 ? at + 1 : Math.min(fallback, items.length);
  }
  const size = opts.pageSize;
  if (!(size > 0) || !Number.isFinite(size)) return { items: items.slice(start) };
  const end = start + Math.max(1, Math.floor(size));
  const page = items.slice(start, end);
  if (end >= items.length || page.length === 0) return { items: page };

  const last = page[page.length - 1] as T;
  const lastId = (opts.getId ?? defaultId)(last);
  const nextMarker = encodeMarker(lastId === undefined ? { o: end } : { o: end, id: lastId });
  const sep = opts.baseUrl.includes('?') ? '&' : '?';
  const linkHeader = `<${opts.baseUrl}${sep}${buildQuery(opts.query, nextMarker)}>; rel="next"`;
  return { items: page, linkHeader, nextMarker };
}
