import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FILTER_OPERATORS, matchesFilter, parseFilter, parseFilterQuery } from '../../../src/api/sol/filter.ts';
import { SolQueryError } from '../../../src/api/sol/sol-query-error.ts';

/** Asserts that parsing fails with a SolQueryError at `position` whose message matches `re`. */
function assertSyntaxError(expr: string, position: number, re: RegExp): void {
  assert.throws(
    () => parseFilter(expr),
    (e: unknown) => {
      assert.ok(e instanceof SolQueryError, `expected SolQueryError, got ${String(e)}`);
      assert.equal(e.parameter, 'filter');
      assert.equal(e.httpStatus, 400);
      assert.equal(e.code, 'VNFM_ERR_API_BAD_REQUEST');
      assert.equal(e.position, position, `position for ${expr}: ${e.message}`);
      assert.match(e.message, re);
      assert.match(e.message, new RegExp(`at position ${position}$`));
      return true;
    },
  );
}

const match = (obj: unknown, expr: string): boolean => matchesFilter(obj, parseFilter(expr));

const opOccs = [
  { id: 'o1', operationState: 'FAILED_TEMP', operation: 'HEAL', isAutomaticInvocation: true, startTime: '2024-05-01T10:00:00Z' },
  { id: 'o2', operationState: 'COMPLETED', operation: 'SCALE', isAutomaticInvocation: false, startTime: '2024-05-02T10:00:00Z' },
  { id: 'o3', operationState: 'FAILED_TEMP', operation: 'INSTANTIATE', isAutomaticInvocation: false, startTime: '2024-05-03T10:00:00+02:00' },
  { id: 'o4', operationState: 'PROCESSING', operation: 'HEAL', isAutomaticInvocation: true, startTime: '2024-05-04T10:00:00.500Z' },
];
const ids = (expr: string): string[] => opOccs.filter((o) => match(o, expr)).map((o) => o.id);

describe('parseFilter', () => {
  it('parses the tacker CLI example (eq,operationState,FAILED_TEMP)', () => {
    const f = parseFilter('(eq,operationState,FAILED_TEMP)');
    assert.deepEqual(f, {
      terms: [
        {
          op: 'eq',
          path: [{ kind: 'attr', name: 'operationState' }],
          attribute: 'operationState',
          values: ['FAILED_TEMP'],
          position: 0,
        },
      ],
    });
  });

  it('parses the URL-decoded form the tacker CLI sends (%28eq%2CoperationState%2CFAILED_TEMP%29)', () => {
    const decoded = decodeURIComponent('%28eq%2CoperationState%2CFAILED_TEMP%29');
    assert.equal(decoded, '(eq,operationState,FAILED_TEMP)');
    assert.deepEqual(ids(decoded), ['o1', 'o3']);
  });

  it('parses several terms joined by ; and multi-value operators', () => {
    const f = parseFilter('(eq,operationState,FAILED_TEMP);(in,operation,HEAL,SCALE)');
    assert.equal(f.terms.length, 2);
    assert.equal(f.terms[1]?.op, 'in');
    assert.deepEqual(f.terms[1]?.values, ['HEAL', 'SCALE']);
    assert.equal(f.terms[1]?.position, 32);
  });

  it('parses attribute paths with / (SOL013 example weight/unit style)', () => {
    const f = parseFilter('(eq,vimConnectionInfo/vimType,ETSINFV.OPENSTACK_KEYSTONE.V_3)');
    assert.deepEqual(f.terms[0]?.path, [
      { kind: 'attr', name: 'vimConnectionInfo' },
      { kind: 'attr', name: 'vimType' },
    ]);
    assert.deepEqual(f.terms[0]?.values, ['ETSINFV.OPENSTACK_KEYSTONE.V_3']);
  });

  it('accepts every SOL013 operator', () => {
    for (const op of FILTER_OPERATORS) assert.equal(parseFilter(`(${op},a,1)`).terms[0]?.op, op);
  });

  it('unquotes quoted values and turns doubled quotes into one', () => {
    assert.deepEqual(parseFilter("(eq,name,'a,b')").terms[0]?.values, ['a,b']);
    assert.deepEqual(parseFilter("(eq,name,'it''s (x)')").terms[0]?.values, ["it's (x)"]);
    assert.deepEqual(parseFilter("(eq,name,'')").terms[0]?.values, ['']);
    assert.deepEqual(parseFilter("(in,name,'a,1',b,'c)')").terms[0]?.values, ['a,1', 'b', 'c)']);
    assert.deepEqual(parseFilter("(eq,name,'''')").terms[0]?.values, ["'"]);
  });

  it('keeps spaces and other characters inside unquoted values', () => {
    assert.deepEqual(parseFilter('(eq,vnfInstanceName,my vnf #1)').terms[0]?.values, ['my vnf #1']);
    assert.deepEqual(parseFilter('(cont,a,x(y)').terms[0]?.values, ['x(y']);
  });

  it('unescapes ~0 ~1 ~a ~b in attribute names and knows @key', () => {
    const f = parseFilter('(eq,extensions/a~1b~ac~bd~0e,1);(eq,metadata/@key,k)');
    assert.deepEqual(f.terms[0]?.path, [
      { kind: 'attr', name: 'extensions' },
      { kind: 'attr', name: 'a/b,c@d~e' },
    ]);
    assert.deepEqual(f.terms[1]?.path, [{ kind: 'attr', name: 'metadata' }, { kind: 'key' }]);
  });

  it('rejects syntax errors with the exact position', () => {
    assertSyntaxError('', 0, /the expression is empty/);
    assertSyntaxError('eq,operationState,FAILED_TEMP', 0, /expected '\(' but found 'e'/);
    assertSyntaxError('(eq,operationState,FAILED_TEMP', 30, /expected '\)' but found end of input/);
    assertSyntaxError('(eq,operationState)', 18, /expected ',' and at least one value after attribute 'operationState'/);
    assertSyntaxError('(eq,operationState,)', 19, /expected a value but found '\)'/);
    assertSyntaxError('(eq,,x)', 4, /expected an attribute name/);
    assertSyntaxError('(eq)', 3, /expected ',' and an attribute name after operator 'eq'/);
    assertSyntaxError('(eq,a,1)(eq,b,2)', 8, /expected ';' or end of filter but found '\('/);
    assertSyntaxError('(eq,a,1);', 9, /expected '\(' after ';'/);
    assertSyntaxError('(eq,a,1);;(eq,b,2)', 9, /expected '\(' but found ';'/);
    assertSyntaxError("(eq,a,'abc)", 6, /unterminated quoted value/);
    assertSyntaxError("(eq,a,'abc'x)", 11, /expected ',' or '\)' after quoted value but found 'x'/);
    assertSyntaxError("(eq,a,it's)", 8, /must be enclosed in quotes/);
    assertSyntaxError('(eq,a//b,1)', 6, /empty attribute name in 'a\/\/b'/);
    assertSyntaxError('(eq,a/,1)', 6, /empty attribute name/);
    assertSyntaxError('(eq, a,1)', 4, /leading or trailing whitespace/);
    assertSyntaxError('(eq,a(b,1)', 5, /character '\(' is not allowed in attribute name/);
    assertSyntaxError('(eq,a~x,1)', 5, /invalid escape '~x'/);
  });

  it('rejects unknown operators (case-sensitive) at the operator position', () => {
    assertSyntaxError('(equals,operationState,FAILED_TEMP)', 1, /unknown operator 'equals' \(expected one of eq, neq/);
    assertSyntaxError('(EQ,operationState,FAILED_TEMP)', 1, /unknown operator 'EQ'/);
    assertSyntaxError('(eq,a,1);(like,b,2)', 10, /unknown operator 'like'/);
  });

  it('rejects several values for single-value operators', () => {
    for (const op of ['eq', 'neq', 'gt', 'gte', 'lt', 'lte']) {
      assertSyntaxError(`(eq,x,1);(${op},operation,HEAL,SCALE)`, 9, new RegExp(`operator '${op}' takes exactly one value, got 2`));
    }
  });
});

describe('parseFilterQuery', () => {
  it('returns undefined when filter is absent or empty (conformance suite sends a bare ?filter)', () => {
    assert.equal(parseFilterQuery({}), undefined);
    assert.equal(parseFilterQuery(undefined), undefined);
    assert.equal(parseFilterQuery({ filter: '' }), undefined);
    assert.equal(parseFilterQuery({ fields: 'a' }), undefined);
  });
  it('parses a present filter', () => {
    assert.equal(parseFilterQuery({ filter: '(eq,operationState,FAILED_TEMP)' })?.terms.length, 1);
  });
  it('rejects a repeated or non-string filter', () => {
    assert.throws(() => parseFilterQuery({ filter: ['(eq,a,1)', '(eq,b,2)'] }), /only once/);
    assert.throws(() => parseFilterQuery({ filter: 5 }), SolQueryError);
    assert.throws(() => parseFilterQuery({ filter: '(eq,a' }), SolQueryError);
  });
});

describe('matchesFilter', () => {
  it('eq / neq on strings', () => {
    assert.deepEqual(ids('(eq,operationState,FAILED_TEMP)'), ['o1', 'o3']);
    assert.deepEqual(ids('(neq,operationState,FAILED_TEMP)'), ['o2', 'o4']);
    assert.deepEqual(ids('(eq,operationState,failed_temp)'), [], 'comparison is case-sensitive');
  });

  it('; is AND (the SOL013-style combined example)', () => {
    assert.deepEqual(ids('(eq,operationState,FAILED_TEMP);(in,operation,HEAL,SCALE)'), ['o1']);
    assert.deepEqual(ids('(in,operation,HEAL,SCALE);(neq,operationState,COMPLETED)'), ['o1', 'o4']);
  });

  it('in / nin', () => {
    assert.deepEqual(ids('(in,operation,HEAL,SCALE)'), ['o1', 'o2', 'o4']);
    assert.deepEqual(ids('(nin,operation,HEAL,SCALE)'), ['o3']);
    assert.deepEqual(ids('(in,operation,HEAL)'), ['o1', 'o4']);
  });

  it('booleans compare with true/false and nothing else', () => {
    assert.deepEqual(ids('(eq,isAutomaticInvocation,true)'), ['o1', 'o4']);
    assert.deepEqual(ids('(eq,isAutomaticInvocation,false)'), ['o2', 'o3']);
    assert.deepEqual(ids('(eq,isAutomaticInvocation,yes)'), []);
    assert.deepEqual(ids('(neq,isAutomaticInvocation,true)'), ['o2', 'o3']);
    assert.deepEqual(ids('(gt,isAutomaticInvocation,false)'), [], 'booleans are not ordered');
  });

  it('date-times order and compare as instants', () => {
    assert.deepEqual(ids('(gt,startTime,2024-05-02T10:00:00Z)'), ['o3', 'o4']);
    assert.deepEqual(ids('(gte,startTime,2024-05-02T10:00:00Z)'), ['o2', 'o3', 'o4']);
    assert.deepEqual(ids('(lt,startTime,2024-05-02T10:00:00Z)'), ['o1']);
    assert.deepEqual(ids('(lte,startTime,2024-05-02T10:00:00Z)'), ['o1', 'o2']);
    // o3 is 2024-05-03T08:00:00Z
    assert.deepEqual(ids('(eq,startTime,2024-05-03T08:00:00.000Z)'), ['o3']);
    assert.deepEqual(ids('(lt,startTime,2024-05-03T09:00:00Z);(gt,startTime,2024-05-03T07:00:00Z)'), ['o3']);
  });

  it('numbers compare numerically, not as text', () => {
    const items = [
      { id: 'a', n: 9 },
      { id: 'b', n: 10 },
      { id: 'c', n: 100.5 },
      { id: 'd', n: -1 },
    ];
    const sel = (e: string): string[] => items.filter((x) => match(x, e)).map((x) => x.id);
    assert.deepEqual(sel('(gt,n,9)'), ['b', 'c']);
    assert.deepEqual(sel('(gte,n,10)'), ['b', 'c']);
    assert.deepEqual(sel('(lt,n,10)'), ['a', 'd']);
    assert.deepEqual(sel('(lte,n,-1)'), ['d']);
    assert.deepEqual(sel('(eq,n,10.0)'), ['b']);
    assert.deepEqual(sel('(eq,n,1e1)'), ['b']);
    assert.deepEqual(sel('(in,n,9,100.5)'), ['a', 'c']);
    assert.deepEqual(sel('(eq,n,ten)'), [], 'a non-number never equals a number');
    assert.deepEqual(sel('(neq,n,ten)'), ['a', 'b', 'c', 'd']);
    assert.deepEqual(sel('(gt,n,ten)'), [], 'and never orders');
  });

  it('strings order lexicographically', () => {
    assert.equal(match({ v: 'b' }, '(gt,v,a)'), true);
    assert.equal(match({ v: 'b' }, '(lt,v,a)'), false);
    assert.equal(match({ v: '10' }, '(lt,v,9)'), true, 'a string attribute stays a string');
  });

  it('cont / ncont are substring tests on strings', () => {
    const o = { vnfInstanceName: 'heal-demo-vnf', n: 123 };
    assert.equal(match(o, '(cont,vnfInstanceName,demo)'), true);
    assert.equal(match(o, '(cont,vnfInstanceName,xx,demo)'), true, 'any of the values');
    assert.equal(match(o, '(cont,vnfInstanceName,DEMO)'), false);
    assert.equal(match(o, '(ncont,vnfInstanceName,demo)'), false);
    assert.equal(match(o, '(ncont,vnfInstanceName,xx,yy)'), true);
    assert.equal(match(o, '(cont,n,12)'), false, 'not on numbers');
  });

  it('quoted values with special characters match literally', () => {
    const o = { vnfInstanceName: "it's a,b (test)" };
    assert.equal(match(o, "(eq,vnfInstanceName,'it''s a,b (test)')"), true);
    assert.equal(match(o, "(cont,vnfInstanceName,'a,b')"), true);
  });

  it('follows nested paths and fans out over arrays (any element matches)', () => {
    const inst = {
      id: 'i1',
      vimConnectionInfo: [
        { id: 'v1', vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' },
        { id: 'v2', vimType: 'kubernetes' },
      ],
      instantiatedVnfInfo: {
        vnfcResourceInfo: [
          { id: 'c1', vduId: 'VDU1', computeResource: { resourceId: 'srv-1' } },
          { id: 'c2', vduId: 'VDU2', computeResource: { resourceId: 'srv-2' } },
        ],
      },
      tags: ['a', 'b'],
    };
    assert.equal(match(inst, '(eq,vimConnectionInfo/vimType,kubernetes)'), true);
    assert.equal(match(inst, '(eq,vimConnectionInfo/vimType,ETSINFV.OPENSTACK_KEYSTONE.V_3)'), true);
    assert.equal(match(inst, '(eq,vimConnectionInfo/vimType,other)'), false);
    assert.equal(match(inst, '(eq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId,srv-2)'), true);
    assert.equal(match(inst, '(in,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU9,VDU1)'), true);
    assert.equal(match(inst, '(eq,tags,b)'), true);
    // negated operators hold only when no element matches
    assert.equal(match(inst, '(neq,vimConnectionInfo/vimType,kubernetes)'), false);
    assert.equal(match(inst, '(neq,vimConnectionInfo/vimType,other)'), true);
    assert.equal(match(inst, '(nin,tags,a,z)'), false);
    assert.equal(match(inst, '(nin,tags,y,z)'), true);
  });

  it('@key filters on the keys of a map (v2 vimConnectionInfo, metadata)', () => {
    const inst = { vimConnectionInfo: { vim1: { vimType: 'kubernetes' } }, metadata: { owner: 'ops', 'a/b': 1 } };
    assert.equal(match(inst, '(eq,vimConnectionInfo/@key,vim1)'), true);
    assert.equal(match(inst, '(eq,vimConnectionInfo/vim1/vimType,kubernetes)'), true);
    assert.equal(match(inst, '(eq,metadata/@key,owner)'), true);
    assert.equal(match(inst, '(eq,metadata/@key,nobody)'), false);
    assert.equal(match(inst, '(eq,metadata/a~1b,1)'), true);
  });

  it('an attribute the object lacks (or holds null) never matches, whatever the operator', () => {
    const o = { id: 'x', error: null, nested: { a: 1 } };
    for (const e of ['(eq,missing,1)', '(neq,missing,1)', '(nin,missing,1)', '(ncont,missing,1)', '(neq,error,x)', '(eq,nested/b,1)', '(eq,id/sub,1)']) {
      assert.equal(match(o, e), false, e);
    }
  });

  it('a path that ends on an object never matches a scalar', () => {
    assert.equal(match({ nested: { a: 1 } }, '(eq,nested,1)'), false);
  });

  it('an empty array exists but holds nothing', () => {
    assert.equal(match({ tags: [] }, '(eq,tags,a)'), false);
    assert.equal(match({ tags: [] }, '(neq,tags,a)'), true);
  });

  it('no filter matches everything', () => {
    assert.equal(matchesFilter({ a: 1 }, undefined), true);
    assert.equal(matchesFilter({ a: 1 }, parseFilterQuery({})), true);
  });

  it('the parsed filter is reusable across objects (no state kept between calls)', () => {
    const f = parseFilter('(gt,n,5)');
    assert.equal(matchesFilter({ n: '6' }, f), true);
    assert.equal(matchesFilter({ n: 6 }, f), true);
    assert.equal(matchesFilter({ n: true }, f), false);
    assert.equal(matchesFilter({ n: 4 }, f), false);
  });
});
