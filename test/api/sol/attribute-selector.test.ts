import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MANDATORY_ATTRIBUTES,
  SELECTOR_PARAMETERS,
  applyAttributeSelector,
  parseSelectorQuery,
} from '../../../src/api/sol/attribute-selector.ts';
import { SolQueryError } from '../../../src/api/sol/sol-query-error.ts';

const INSTANCE_DEFAULT_EXCLUDED = ['vnfConfigurableProperties', 'vimConnectionInfo', 'instantiatedVnfInfo', 'metadata', 'extensions'];
const OPOCC_DEFAULT_EXCLUDED = ['operationParams', 'error', 'resourceChanges', 'changedInfo', 'changedExtConnectivity'];

function instance() {
  return {
    id: 'i-1',
    vnfInstanceName: 'heal-demo',
    vnfdId: 'd-1',
    vnfProvider: 'Example Provider',
    instantiationState: 'INSTANTIATED',
    vnfConfigurableProperties: { isAutoheal: true },
    vimConnectionInfo: { vim1: { vimId: 'v-1', vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3' } },
    instantiatedVnfInfo: {
      flavourId: 'simple',
      vnfState: 'STARTED',
      extCpInfo: [{ id: 'cp-1', cpdId: 'VDU1_CP1', cpProtocolInfo: [{ layerProtocol: 'IP_OVER_ETHERNET' }] }],
      vnfcResourceInfo: [
        { id: 'c-1', vduId: 'VDU1', computeResource: { resourceId: 'srv-1' }, metadata: { zone: 'a' } },
        { id: 'c-2', vduId: 'VDU2', computeResource: { resourceId: 'srv-2' }, metadata: { zone: 'b' } },
      ],
      virtualStorageResourceInfo: [{ id: 's-1' }],
    },
    metadata: { owner: 'ops' },
    extensions: { x: 1 },
    _links: { self: { href: 'http://h/vnflcm/v2/vnf_instances/i-1' } },
  };
}

function opOcc() {
  return {
    id: 'o-1',
    operationState: 'FAILED_TEMP',
    operation: 'HEAL',
    isAutomaticInvocation: false,
    isCancelPending: false,
    operationParams: { cause: 'x' },
    error: { status: 500, detail: 'boom' },
    resourceChanges: { affectedVnfcs: [{ id: 'c-1', changeType: 'REMOVED' }] },
    changedInfo: { vnfInstanceName: 'n' },
    warnings: ['w'],
    _links: { self: { href: 's' }, vnfInstance: { href: 'i' } },
  };
}

const keys = (o: object): string[] => Object.keys(o).sort();

function assertSelectorError(query: Record<string, unknown>, re: RegExp, opts?: { knownAttributes?: readonly string[] }): void {
  assert.throws(
    () => parseSelectorQuery(query, opts),
    (e: unknown) => {
      assert.ok(e instanceof SolQueryError, String(e));
      assert.equal(e.httpStatus, 400);
      assert.match(e.message, /^Invalid attribute selector: /);
      assert.match(e.message, re);
      return true;
    },
  );
}

describe('parseSelectorQuery', () => {
  it('reads flags as present whatever their value and ignores other parameters', () => {
    const s = parseSelectorQuery({ exclude_default: '', filter: '(eq,a,1)', nextpage_opaque_marker: 'x' });
    assert.equal(s.excludeDefault, true);
    assert.equal(s.allFields, false);
    assert.equal(s.fields, undefined);
    assert.equal(s.excludeFields, undefined);
    assert.equal(parseSelectorQuery({ all_fields: '' }).allFields, true);
    assert.equal(parseSelectorQuery({}).allFields, false);
    assert.equal(parseSelectorQuery(undefined).excludeDefault, false);
  });

  it('splits fields into paths', () => {
    assert.deepEqual(parseSelectorQuery({ fields: 'a,b/c,d/e/f' }).fields, [['a'], ['b', 'c'], ['d', 'e', 'f']]);
    assert.deepEqual(parseSelectorQuery({ exclude_fields: 'x' }).excludeFields, [['x']]);
    assert.deepEqual(parseSelectorQuery({ fields: ['a', 'b/c'] }).fields, [['a'], ['b', 'c']], 'repeated parameter');
  });

  it('accepts the valid SOL013 combinations', () => {
    assert.doesNotThrow(() => parseSelectorQuery({ exclude_default: '', fields: 'metadata' }));
    for (const q of [{}, { all_fields: '' }, { fields: 'a' }, { exclude_fields: 'a' }, { exclude_default: '' }]) {
      assert.doesNotThrow(() => parseSelectorQuery(q));
    }
  });

  it('rejects invalid combinations', () => {
    assertSelectorError({ all_fields: '', fields: 'a' }, /all_fields cannot be combined with fields/);
    assertSelectorError({ all_fields: '', exclude_fields: 'a' }, /all_fields cannot be combined with exclude_fields/);
    assertSelectorError({ all_fields: '', exclude_default: '' }, /all_fields cannot be combined with exclude_default/);
    assertSelectorError({ all_fields: '', fields: 'a', exclude_default: '' }, /all_fields cannot be combined with fields, exclude_default/);
    assertSelectorError({ fields: 'a', exclude_fields: 'b' }, /fields and exclude_fields cannot be combined/);
    assertSelectorError({ exclude_fields: 'a', exclude_default: '' }, /exclude_fields and exclude_default cannot be combined/);
  });

  it('rejects empty and malformed lists', () => {
    assertSelectorError({ fields: '' }, /fields must name at least one attribute/);
    assertSelectorError({ exclude_fields: '  ' }, /exclude_fields must name at least one attribute/);
    assertSelectorError({ fields: 'a,,b' }, /empty attribute name in fields=a,,b/);
    assertSelectorError({ fields: 'a,' }, /empty attribute name/);
    assertSelectorError({ fields: 'a//b' }, /malformed attribute path 'a\/\/b'/);
    assertSelectorError({ fields: '/a' }, /malformed attribute path/);
    assertSelectorError({ fields: 'a, b' }, /malformed attribute path ' b'/);
    assertSelectorError({ fields: 5 }, /comma-separated list/);
  });

  it('rejects unknown attribute names when the resource lists its attributes', () => {
    const known = ['id', 'operationParams', 'error', 'resourceChanges'];
    assertSelectorError({ fields: 'wrong_field' }, /unknown attribute 'wrong_field' in fields/, { knownAttributes: known });
    assertSelectorError({ exclude_fields: 'error,nope/x' }, /unknown attribute 'nope' in exclude_fields/, { knownAttributes: known });
    assert.doesNotThrow(() => parseSelectorQuery({ fields: 'resourceChanges/affectedVnfcs' }, { knownAttributes: known }));
    assert.doesNotThrow(() => parseSelectorQuery({ fields: 'wrong_field' }), 'without a list unknown names are ignored');
  });

  it('treats exclude-fields (python-tackerclient spelling) as exclude_fields', () => {
    assert.ok(SELECTOR_PARAMETERS.includes('exclude-fields'));
    assert.deepEqual(parseSelectorQuery({ 'exclude-fields': 'metadata' }).excludeFields, [['metadata']]);
    assert.deepEqual(parseSelectorQuery({ exclude_fields: 'a', 'exclude-fields': 'b' }).excludeFields, [['a'], ['b']]);
    assertSelectorError({ fields: 'a', 'exclude-fields': 'b' }, /fields and exclude_fields cannot be combined/);
  });
});

describe('applyAttributeSelector', () => {
  it('no selector = exclude_default for VnfInstance', () => {
    const out = applyAttributeSelector(instance(), {}, INSTANCE_DEFAULT_EXCLUDED);
    assert.deepEqual(keys(out), ['_links', 'id', 'instantiationState', 'vnfInstanceName', 'vnfProvider', 'vnfdId']);
  });

  it('no selector = exclude_default for VnfLcmOpOcc (other complex attributes stay)', () => {
    const out = applyAttributeSelector(opOcc(), {}, OPOCC_DEFAULT_EXCLUDED);
    assert.deepEqual(keys(out), ['_links', 'id', 'isAutomaticInvocation', 'isCancelPending', 'operation', 'operationState', 'warnings']);
  });

  it('explicit exclude_default is the same as no selector', () => {
    assert.deepEqual(
      applyAttributeSelector(opOcc(), { exclude_default: '' }, OPOCC_DEFAULT_EXCLUDED),
      applyAttributeSelector(opOcc(), {}, OPOCC_DEFAULT_EXCLUDED),
    );
  });

  it('all_fields returns everything', () => {
    assert.deepEqual(applyAttributeSelector(instance(), { all_fields: '' }, INSTANCE_DEFAULT_EXCLUDED), instance());
  });

  it('never modifies its input', () => {
    const src = instance();
    const before = structuredClone(src);
    const out = applyAttributeSelector(src, { fields: 'instantiatedVnfInfo/vnfcResourceInfo/computeResource' }, INSTANCE_DEFAULT_EXCLUDED);
    assert.deepEqual(src, before);
    assert.notEqual(out, src);
    const all = applyAttributeSelector(src, { all_fields: '' }, []);
    (all.metadata as Record<string, unknown>).owner = 'changed';
    assert.equal(src.metadata.owner, 'ops', 'all_fields returns a copy too');
  });

  it('fields keeps the named default-excluded attributes, others stay excluded', () => {
    const out = applyAttributeSelector(opOcc(), { fields: 'operationParams,error' }, OPOCC_DEFAULT_EXCLUDED);
    assert.deepEqual(out.operationParams, { cause: 'x' });
    assert.deepEqual(out.error, { status: 500, detail: 'boom' });
    assert.equal(out.resourceChanges, undefined);
    assert.equal(out.changedInfo, undefined);
    assert.equal(out.operationState, 'FAILED_TEMP', 'simple attributes always stay');
  });

  it('fields alone also drops unnamed complex attributes outside the default set (SOL013 Table 5.3.2-1)', () => {
    const out = applyAttributeSelector(opOcc(), { fields: 'error' }, OPOCC_DEFAULT_EXCLUDED);
    assert.equal(out.warnings, undefined);
    assert.deepEqual(out._links, opOcc()._links, 'mandatory _links stays');
    const withDefault = applyAttributeSelector(opOcc(), { fields: 'error', exclude_default: '' }, OPOCC_DEFAULT_EXCLUDED);
    assert.deepEqual(withDefault.warnings, ['w'], 'exclude_default + fields only touches the default set');
    assert.deepEqual(withDefault.error, { status: 500, detail: 'boom' });
    assert.equal(withDefault.operationParams, undefined);
  });

  it('fields with a path inside an excluded attribute keeps that attribute whole (never drops its mandatory children)', () => {
    const out = applyAttributeSelector(instance(), { fields: 'instantiatedVnfInfo/vnfcResourceInfo' }, INSTANCE_DEFAULT_EXCLUDED);
    assert.deepEqual(out.instantiatedVnfInfo, instance().instantiatedVnfInfo);
    assert.equal(out.vimConnectionInfo, undefined);
    assert.equal(out.metadata, undefined);
    const deep = applyAttributeSelector(instance(), { fields: 'instantiatedVnfInfo/vnfcResourceInfo/computeResource' }, INSTANCE_DEFAULT_EXCLUDED);
    assert.deepEqual(deep.instantiatedVnfInfo, instance().instantiatedVnfInfo);
  });

  it('naming a parent keeps the whole subtree', () => {
    const out = applyAttributeSelector(instance(), { fields: 'instantiatedVnfInfo,vimConnectionInfo' }, INSTANCE_DEFAULT_EXCLUDED);
    assert.deepEqual(out.instantiatedVnfInfo, instance().instantiatedVnfInfo);
    assert.deepEqual(out.vimConnectionInfo, instance().vimConnectionInfo);
    assert.equal(out.extensions, undefined);
  });

  it('names that do not exist are ignored', () => {
    const out = applyAttributeSelector(instance(), { fields: 'nothing' }, INSTANCE_DEFAULT_EXCLUDED);
    assert.equal(out.nothing, undefined);
    assert.equal(out.metadata, undefined);
    assert.deepEqual(applyAttributeSelector(instance(), { exclude_fields: 'nothing,metadata/none,id/x' }, []), instance());
  });

  it('exclude_fields removes only the named attributes', () => {
    const out = applyAttributeSelector(instance(), { exclude_fields: 'vimConnectionInfo,instantiatedVnfInfo/vnfcResourceInfo/metadata' }, INSTANCE_DEFAULT_EXCLUDED);
    assert.equal(out.vimConnectionInfo, undefined);
    assert.deepEqual(out.metadata, { owner: 'ops' }, 'default set is not applied with exclude_fields');
    assert.deepEqual(out.extensions, { x: 1 });
    const vnfcs = (out.instantiatedVnfInfo as { vnfcResourceInfo: Record<string, unknown>[] }).vnfcResourceInfo;
    assert.equal(vnfcs.length, 2);
    for (const c of vnfcs) assert.equal(c.metadata, undefined);
    assert.deepEqual(vnfcs[0]?.computeResource, { resourceId: 'srv-1' });
  });

  it('never removes id and _links', () => {
    const out = applyAttributeSelector(opOcc(), { exclude_fields: 'id,_links,error' }, OPOCC_DEFAULT_EXCLUDED);
    assert.equal(out.id, 'o-1');
    assert.deepEqual(out._links, opOcc()._links);
    assert.equal(out.error, undefined);
    const nested = applyAttributeSelector(opOcc(), { exclude_fields: '_links/vnfInstance' }, []);
    assert.deepEqual(nested._links, opOcc()._links, 'nor parts of them');
    assert.deepEqual(MANDATORY_ATTRIBUTES, ['id', '_links']);
    const dflt = applyAttributeSelector(opOcc(), {}, ['_links', 'id', 'error']);
    assert.ok(dflt._links && dflt.id, 'even when a default set names them');
  });

  it('honours a caller-supplied mandatory list (e.g. conditionally mandatory attributes)', () => {
    const out = applyAttributeSelector(opOcc(), { fields: 'error' }, OPOCC_DEFAULT_EXCLUDED, ['id', '_links', 'operationParams']);
    assert.deepEqual(out.operationParams, { cause: 'x' });
    const mand = ['id', '_links', 'instantiatedVnfInfo/extCpInfo'];
    const nested = applyAttributeSelector(instance(), { exclude_fields: 'instantiatedVnfInfo/extCpInfo,instantiatedVnfInfo/virtualStorageResourceInfo' }, [], mand);
    const info = nested.instantiatedVnfInfo as Record<string, unknown>;
    assert.deepEqual(info.extCpInfo, instance().instantiatedVnfInfo.extCpInfo, 'a mandatory nested path is not removed');
    assert.equal(info.virtualStorageResourceInfo, undefined);
    const parent = applyAttributeSelector(instance(), {}, INSTANCE_DEFAULT_EXCLUDED, mand);
    assert.equal(parent.instantiatedVnfInfo, undefined, 'but its optional parent can still be excluded as a whole');
  });

  it('supports nested paths in the default set', () => {
    const out = applyAttributeSelector(instance(), {}, ['instantiatedVnfInfo/vnfcResourceInfo', 'metadata']);
    const info = out.instantiatedVnfInfo as Record<string, unknown>;
    assert.equal(info.vnfcResourceInfo, undefined);
    assert.deepEqual(info.extCpInfo, instance().instantiatedVnfInfo.extCpInfo);
    const kept = applyAttributeSelector(instance(), { exclude_default: '', fields: 'instantiatedVnfInfo/vnfcResourceInfo' }, ['instantiatedVnfInfo/vnfcResourceInfo']);
    assert.equal((kept.instantiatedVnfInfo as Record<string, unknown>).vnfcResourceInfo !== undefined, true);
  });

  it('accepts a pre-parsed selector and throws on invalid raw queries', () => {
    const sel = parseSelectorQuery({ fields: 'error', exclude_default: '' });
    const items = [opOcc(), { ...opOcc(), id: 'o-2' }];
    const out = items.map((o) => applyAttributeSelector(o, sel, OPOCC_DEFAULT_EXCLUDED));
    assert.deepEqual(out.map((o) => o.id), ['o-1', 'o-2']);
    for (const o of out) {
      assert.ok(o.error);
      assert.equal(o.operationParams, undefined);
    }
    assert.throws(() => applyAttributeSelector(opOcc(), { all_fields: '', fields: 'a' }, OPOCC_DEFAULT_EXCLUDED), SolQueryError);
  });

  it('a raw query cannot pose as a parsed selector', () => {
    const forged = { kind: 'AttributeSelector', allFields: true } as unknown as Record<string, unknown>;
    const out = applyAttributeSelector(opOcc(), forged, OPOCC_DEFAULT_EXCLUDED);
    assert.equal(out.error, undefined, 'treated as a query without selectors');
  });

  it('copies an own __proto__ key as data', () => {
    const body = JSON.parse('{"id":"x","metadata":{"__proto__":{"polluted":true}}}') as Record<string, unknown>;
    const out = applyAttributeSelector(body, { all_fields: '' }, []);
    const md = out.metadata as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(md), Object.prototype);
    assert.deepEqual(Object.keys(md), ['__proto__']);
    assert.equal((md as { polluted?: unknown }).polluted, undefined);
  });

  it('empty default set (single-resource GET) returns everything without a selector', () => {
    assert.deepEqual(applyAttributeSelector(opOcc(), {}, []), opOcc());
  });
});
