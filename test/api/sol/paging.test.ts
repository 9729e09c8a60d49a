import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NEXTPAGE_MARKER_PARAMETER, paginate } from '../../../src/api/sol/paging.ts';
import { SolQueryError } from '../../../src/api/sol/sol-query-error.ts';

const BASE = 'http://127.0.0.1:9890/vnflcm/v2/vnf_lcm_op_occs';
const items = Array.from({ length: 7 }, (_, i) => ({ id: `id-${i}`, n: i }));

/** Extracts the URL and its query from a Link header value. */
function parseLink(header: string | undefined): URL {
  assert.ok(header, 'expected a Link header');
  const m = /^<([^>]+)>; rel="next"$/.exec(header);
  assert.ok(m, `malformed Link header: ${header}`);
  return new URL(m[1] as string);
}

/** Follows Link headers like a client until the last page; returns the pages' ids. */
function walk(list: readonly { id: string }[], pageSize: number, query: Record<string, string> = {}): string[][] {
  const pages: string[][] = [];
  let marker: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const page = paginate(list, { pageSize, marker, baseUrl: BASE, query: marker ? { ...query, nextpage_opaque_marker: marker } : query });
    pages.push(page.items.map((x) => x.id));
    if (!page.linkHeader) return pages;
    marker = parseLink(page.linkHeader).searchParams.get(NEXTPAGE_MARKER_PARAMETER) ?? undefined;
    assert.equal(marker, page.nextMarker);
  }
  throw new Error('paging did not terminate');
}

function assertMarkerError(marker: string): void {
  assert.throws(
    () => paginate(items, { pageSize: 2, marker, baseUrl: BASE, query: {} }),
    (e: unknown) => {
      assert.ok(e instanceof SolQueryError, String(e));
      assert.equal(e.parameter, 'nextpage_opaque_marker');
      assert.equal(e.httpStatus, 400);
      assert.match(e.message, /Invalid nextpage_opaque_marker/);
      return true;
    },
  );
}

describe('paginate', () => {
  it('returns the first page and a Link header with rel="next"', () => {
    const page = paginate(items, { pageSize: 3, baseUrl: BASE, query: {} });
    assert.deepEqual(page.items.map((x) => x.n), [0, 1, 2]);
    assert.match(page.linkHeader ?? '', /^<http:\/\/127\.0\.0\.1:9890\/vnflcm\/v2\/vnf_lcm_op_occs\?nextpage_opaque_marker=[A-Za-z0-9_-]+>; rel="next"$/);
    assert.ok(page.nextMarker);
  });

  it('walks every item exactly once, in order', () => {
    assert.deepEqual(walk(items, 3), [['id-0', 'id-1', 'id-2'], ['id-3', 'id-4', 'id-5'], ['id-6']]);
    assert.deepEqual(walk(items, 7), [['id-0', 'id-1', 'id-2', 'id-3', 'id-4', 'id-5', 'id-6']]);
    assert.deepEqual(walk(items, 1).length, 7);
    assert.deepEqual(walk(items.slice(0, 6), 3), [['id-0', 'id-1', 'id-2'], ['id-3', 'id-4', 'id-5']], 'no link after an exactly full last page');
  });

  it('no Link header when everything fits, or for an empty list', () => {
    const all = paginate(items, { pageSize: 100, baseUrl: BASE, query: {} });
    assert.equal(all.items.length, 7);
    assert.equal(all.linkHeader, undefined);
    assert.equal(all.nextMarker, undefined);
    assert.deepEqual(paginate([], { pageSize: 2, baseUrl: BASE, query: {} }), { items: [] });
  });

  it('pageSize 0 (or negative / Infinity) disables paging', () => {
    for (const pageSize of [0, -1, Number.POSITIVE_INFINITY, Number.NaN]) {
      const page = paginate(items, { pageSize, baseUrl: BASE, query: {} });
      assert.equal(page.items.length, 7, String(pageSize));
      assert.equal(page.linkHeader, undefined);
    }
  });

  it('a fractional pageSize still makes progress', () => {
    assert.equal(walk(items, 0.5).length, 7);
  });

  it('keeps other query parameters (filter, fields, flags) in the next link and drops the old marker', () => {
    const query = {
      filter: '(eq,operationState,FAILED_TEMP);(in,operation,HEAL,SCALE)',
      fields: 'error,resourceChanges/affectedVnfcs',
      exclude_default: '',
    };
    const first = paginate(items, { pageSize: 2, baseUrl: BASE, query });
    const url = parseLink(first.linkHeader);
    assert.equal(url.searchParams.get('filter'), query.filter);
    assert.equal(url.searchParams.get('fields'), query.fields);
    assert.equal(url.searchParams.get('exclude_default'), '');
    assert.match(first.linkHeader ?? '', /[?&]exclude_default&/, 'flags are written without "="');
    const target = /^<([^>]+)>/.exec(first.linkHeader ?? '')?.[1] ?? '';
    assert.doesNotMatch(target, /[ ,;<>"]/, 'reserved characters of the filter are percent-encoded');

    const second = paginate(items, { pageSize: 2, marker: first.nextMarker, baseUrl: BASE, query: { ...query, nextpage_opaque_marker: first.nextMarker ?? '' } });
    const url2 = parseLink(second.linkHeader);
    assert.deepEqual(url2.searchParams.getAll(NEXTPAGE_MARKER_PARAMETER), [second.nextMarker]);
    assert.equal(url2.searchParams.get('filter'), query.filter);
    assert.deepEqual(second.items.map((x) => x.id), ['id-2', 'id-3']);
  });

  it('carries repeated parameters and skips undefined ones', () => {
    const page = paginate(items, { pageSize: 2, baseUrl: BASE, query: { a: ['1', '2'], b: undefined } });
    const url = parseLink(page.linkHeader);
    assert.deepEqual(url.searchParams.getAll('a'), ['1', '2']);
    assert.equal(url.searchParams.has('b'), false);
  });

  it('appends to a base URL that already has a query', () => {
    const page = paginate(items, { pageSize: 2, baseUrl: `${BASE}?x=1`, query: {} });
    const url = parseLink(page.linkHeader);
    assert.equal(url.searchParams.get('x'), '1');
    assert.ok(url.searchParams.get(NEXTPAGE_MARKER_PARAMETER));
  });

  it('continues after the last returned id even when earlier items were deleted', () => {
    const first = paginate(items, { pageSize: 3, baseUrl: BASE, query: {} });
    const shrunk = items.filter((x) => x.id !== 'id-0' && x.id !== 'id-1');
    const next = paginate(shrunk, { pageSize: 3, marker: first.nextMarker, baseUrl: BASE, query: {} });
    assert.deepEqual(next.items.map((x) => x.id), ['id-3', 'id-4', 'id-5']);
  });

  it('continues after the last returned id when items were inserted before it', () => {
    const first = paginate(items, { pageSize: 3, baseUrl: BASE, query: {} });
    const grown = [{ id: 'new-a', n: -2 }, { id: 'new-b', n: -1 }, ...items];
    const next = paginate(grown, { pageSize: 3, marker: first.nextMarker, baseUrl: BASE, query: {} });
    assert.deepEqual(next.items.map((x) => x.id), ['id-3', 'id-4', 'id-5']);
  });

  it('falls back to the offset when the last returned item is gone, without skipping its successor', () => {
    const first = paginate(items, { pageSize: 3, baseUrl: BASE, query: {} });
    const without = items.filter((x) => x.id !== 'id-2');
    const next = paginate(without, { pageSize: 3, marker: first.nextMarker, baseUrl: BASE, query: {} });
    assert.deepEqual(next.items.map((x) => x.id), ['id-3', 'id-4', 'id-5']);
  });

  it('works for items without ids (offset only) and with a custom id', () => {
    const plain = ['a', 'b', 'c', 'd', 'e'];
    const first = paginate(plain, { pageSize: 2, baseUrl: BASE, query: {} });
    const second = paginate(plain, { pageSize: 2, marker: first.nextMarker, baseUrl: BASE, query: {} });
    assert.deepEqual(second.items, ['c', 'd']);
    const byName = [{ name: 'x' }, { name: 'y' }, { name: 'z' }];
    const p1 = paginate(byName, { pageSize: 1, baseUrl: BASE, query: {}, getId: (i) => i.name });
    const p2 = paginate([{ name: 'w' }, ...byName], { pageSize: 1, marker: p1.nextMarker, baseUrl: BASE, query: {}, getId: (i) => i.name });
    assert.deepEqual(p2.items, [{ name: 'y' }]);
  });

  it('a marker past the end gives an empty last page', () => {
    const first = paginate(items, { pageSize: 5, baseUrl: BASE, query: {} });
    const next = paginate(items.slice(0, 2).map((x) => ({ ...x, id: `other-${x.id}` })), { pageSize: 5, marker: first.nextMarker, baseUrl: BASE, query: {} });
    assert.deepEqual(next, { items: [] });
  });

  it('the marker is opaque: not the raw offset or id', () => {
    const first = paginate(items, { pageSize: 3, baseUrl: BASE, query: {} });
    assert.notEqual(first.nextMarker, '3');
    assert.notEqual(first.nextMarker, 'id-2');
    assert.match(first.nextMarker ?? '', /^[A-Za-z0-9_-]+$/);
  });

  it('rejects markers it did not produce', () => {
    assertMarkerError('');
    assertMarkerError('p2');
    assertMarkerError('not base64!');
    assertMarkerError(Buffer.from('{"o":-1}').toString('base64url'));
    assertMarkerError(Buffer.from('{"o":1.5}').toString('base64url'));
    assertMarkerError(Buffer.from('{"o":"1"}').toString('base64url'));
    assertMarkerError(Buffer.from('{"o":1,"id":5}').toString('base64url'));
    assertMarkerError(Buffer.from('[1]').toString('base64url'));
    assertMarkerError(Buffer.from('null').toString('base64url'));
    assertMarkerError('x'.repeat(5000));
  });
});
