/**
 * One list-response pipeline for every SOL collection: filter, then page, then attribute
 * selectors, then the `Link` header. Errors in any query parameter are 400 before data is touched.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { applyAttributeSelector, parseSelectorQuery } from './attribute-selector.ts';
import { matchesFilter, parseFilterQuery } from './filter.ts';
import { NEXTPAGE_MARKER_PARAMETER, paginate } from './paging.ts';

/** Options of {@link sendList}. */
export interface ListOptions {
  /** Attributes removed unless selected (exclude_default semantics). */
  defaultExcluded: readonly string[];
  /** Page size (0 = all). */
  pageSize: number;
  /** Absolute URL of the collection, no query. */
  baseUrl: string;
  /** Top-level attribute names the resource has (unknown names in fields are 400). */
  knownAttributes?: readonly string[];
}

/** Applies SOL013 filter / paging / selectors to `items` and sends them. */
export function sendList(req: FastifyRequest, reply: FastifyReply, items: Record<string, unknown>[], opts: ListOptions): Record<string, unknown>[] {
  const query = (req.query ?? {}) as Record<string, string | undefined>;
  const filter = parseFilterQuery(query);
  const selector = parseSelectorQuery(query, opts.knownAttributes ? { knownAttributes: opts.knownAttributes } : {});
  const matched = filter ? items.filter((i) => matchesFilter(i, filter)) : items;
  const page = paginate(matched, { pageSize: opts.pageSize, marker: query[NEXTPAGE_MARKER_PARAMETER], baseUrl: opts.baseUrl, query });
  if (page.linkHeader) reply.header('link', page.linkHeader);
  return page.items.map((i) => applyAttributeSelector(i, selector, opts.defaultExcluded));
}
