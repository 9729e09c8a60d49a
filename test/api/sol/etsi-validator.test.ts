/**
 * The project's ETSI validator (test/helpers/etsi-validator.ts) against the vendored ETSI
 * definitions: samples, error paths, cross-file $refs, each repaired upstream defect (repaired and
 * as published), noExtra, lookup errors, SOL002, operations, and how fast it is.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { ETSI_FIXTURES_DIR, ETSI_REPAIRS, EtsiLookupError, EtsiValidator, closeObjectSchemas, type EtsiValidationResult } from '../../helpers/etsi-validator.ts';

const SAMPLES = path.join(ETSI_FIXTURES_DIR, 'samples');
const load = (rel: string): Record<string, unknown> => JSON.parse(readFileSync(path.join(SAMPLES, rel), 'utf8')) as Record<string, unknown>;
const samples = (dir: 'v1' | 'v2'): string[] => readdirSync(path.join(SAMPLES, dir)).filter((f) => f.endsWith('.json')).sort();
const typeOf = (file: string): string => file.split('.')[0] as string;
const paths = (r: EtsiValidationResult): string[] => r.errors.map((e) => e.path);

// One validator per configuration for the whole file (compiling is the slow part).
const v2 = new EtsiValidator();
const v2Published = new EtsiValidator({ asPublished: true });
const v2Strict = new EtsiValidator({ noExtra: true });
const v1 = new EtsiValidator({ spec: '2.6.1' });

const OCC = load('v2/VnfLcmOpOcc.heal.processing.json');
const HREF = { href: 'http://127.0.0.1:9890/x' };

function expectValid(r: EtsiValidationResult): void {
  assert.ok(r.valid, `expected valid against ${r.target}: ${JSON.stringify(r.errors, null, 1)}`);
}

function expectInvalid(r: EtsiValidationResult, ...where: string[]): void {
  assert.equal(r.valid, false, `expected invalid against ${r.target}`);
  for (const p of where) assert.ok(paths(r).includes(p), `expected an error at "${p}", got ${JSON.stringify(r.errors)}`);
}

describe('ETSI validator: fixtures and samples', () => {
  it('reads the definitions vendored inside the repository', () => {
    const repo = path.resolve(ETSI_FIXTURES_DIR, '..', '..', '..');
    assert.equal(path.relative(repo, ETSI_FIXTURES_DIR).split(path.sep).join('/'), 'test/fixtures/etsi');
    for (const f of ['NOTICE', '3.7.1/SOL002-SOL003/SOL003/VNFLifecycleManagement/VNFLifecycleManagement.yaml', '2.6.1/api-tests/SOL003/VNFLifecycleManagement-API/schemas/VnfLcmOpOcc.schema.json']) {
      assert.ok(existsSync(path.join(ETSI_FIXTURES_DIR, f)), f);
    }
  });

  it('accepts every v2 sample (3.7.1) and every v1 sample (2.6.1), also with noExtra for v2', () => {
    assert.ok(samples('v2').length >= 5 && samples('v1').length >= 3);
    for (const f of samples('v2')) {
      expectValid(v2.validate(typeOf(f), load(`v2/${f}`)));
      expectValid(v2Strict.validate(typeOf(f), load(`v2/${f}`)));
    }
    for (const f of samples('v1')) expectValid(v1.validate(typeOf(f), load(`v1/${f}`)));
  });

  it('rejects the invalid sample with one error per violation, each at its JSON pointer', () => {
    const broken = load('invalid/VnfLcmOpOcc.broken.json');
    const r = v2.validate('VnfLcmOpOcc', broken);
    expectInvalid(r, '/operationState', '/stateEnteredTime', '/isAutomaticInvocation', '/_links');
    assert.equal(r.target, 'SOL003/VNFLifecycleManagement/definitions/SOL003VNFLifecycleManagement_def.yaml#/definitions/VnfLcmOpOcc');
    const byPath = new Map(r.errors.map((e) => [e.path, e]));
    assert.match(byPath.get('/operationState')!.message, /allowed values/);
    assert.match(byPath.get('/stateEnteredTime')!.message, /date-time/);
    assert.equal(byPath.get('/isAutomaticInvocation')!.message, 'must be boolean');
    assert.equal(byPath.get('/_links')!.params.missingProperty, 'vnfInstance');
    // missing required attributes of the body itself are reported at the root pointer ''
    assert.ok(r.errors.some((e) => e.path === '' && e.params.missingProperty === 'isCancelPending'));
    expectInvalid(v1.validate('VnfLcmOpOcc', broken), '/operationState', '/isAutomaticInvocation');
  });

  it('reports nested and array paths of hand-broken bodies', () => {
    const inst = structuredClone(load('v2/VnfInstance.instantiated.json')) as { instantiatedVnfInfo: { vnfcResourceInfo: Record<string, unknown>[] } };
    const vnfc = inst.instantiatedVnfInfo.vnfcResourceInfo[0]!;
    delete vnfc.computeResource;
    vnfc.vduId = 7;
    const r = v2.validate('VnfInstance', inst);
    expectInvalid(r, '/instantiatedVnfInfo/vnfcResourceInfo/0', '/instantiatedVnfInfo/vnfcResourceInfo/0/vduId');
    assert.ok(r.errors.some((e) => e.path === '/instantiatedVnfInfo/vnfcResourceInfo/0' && e.params.missingProperty === 'computeResource'));

    const list = v2.validate('VnfLcmOpOcc', [OCC, { ...OCC, operation: 'REBOOT' }], { array: true });
    expectInvalid(list, '/1/operation');
    expectInvalid(v2.validate('VnfLcmOpOcc', OCC, { array: true }), '');
    expectValid(v2.validate('VnfLcmOpOcc', [], { array: true }));
    // keys with "/" and "~" are escaped in the pointer
    const strictSub = v2Strict.validate('LccnSubscription', { ...load('v2/LccnSubscription.json'), 'a/b~c': 1 });
    expectInvalid(strictSub, '/a~1b~0c');
  });

  it('resolves $refs across files: VnfInstance -> General_Definitions (Link, Identifier, VimConnectionInfo)', () => {
    const inst = load('v2/VnfInstance.instantiated.json');
    expectValid(v2.validate('VnfInstance', inst));
    const r = v2.validate('VnfInstance', {
      ...inst,
      vnfdId: 42, // Identifier, General_Definitions/SOL003_def.yaml
      _links: { self: { href: 5 } }, // Link, General_Definitions/SOL003_def.yaml
      vimConnectionInfo: { vim1: { vimType: 3 } }, // VimConnectionInfo, General_Definitions/SOL003_def.yaml
    });
    expectInvalid(r, '/vnfdId', '/_links/self/href', '/vimConnectionInfo/vim1/vimType');
    // and from the LCM interface into the notification interface's definitions
    expectValid(v2.validate('VnfLcmOperationOccurrenceNotification', load('v2/VnfLcmOperationOccurrenceNotification.heal.start.json')));
  });

  it('checks date-time formats only; other format names (IP, MAC, url) are accepted as-is', () => {
    expectInvalid(v2.validate('VnfLcmOpOcc', { ...OCC, startTime: '2024-05-01T10:00:00' }), '/startTime');
    expectInvalid(v2.validate('VnfLcmOpOcc', { ...OCC, startTime: 'yesterday' }), '/startTime');
    expectValid(v2.validate('VnfLcmOpOcc', { ...OCC, startTime: '2024-05-01T10:00:00.123+02:00' }));
    expectValid(new EtsiValidator({ formats: 'off' }).validate('VnfLcmOpOcc', { ...OCC, startTime: 'yesterday' }));
    expectValid(v2.validate('IpOverEthernetAddressData', { macAddress: 'not a MAC', ipAddresses: [{ type: 'IPV4', fixedAddresses: ['not an IP'] }] }));
    expectValid(v2.validate('VnfLcmOpOcc', { ...OCC, _links: { ...(OCC._links as object), self: { href: 'not a url' } } }));
  });
});

describe('ETSI validator: name lookup', () => {
  it('is case-insensitive, takes Interface:Name and defaults to VNFLifecycleManagement', () => {
    assert.equal(v2.validate('vnflcmopocc', OCC).target, v2.validate('VnfLcmOpOcc', OCC).target);
    assert.match(v2.validate('VNFPackageManagement:VnfPkgInfo', {}).target, /^SOL003\/VNFPackageManagement\/definitions\//);
    assert.match(v2.validate('vnfpackagemanagement:vnfpkginfo', {}).target, /VNFPackageManagement/);
    assert.match(v2.validate('VNFLifecycleOperationGranting:GrantRequest', {}).target, /^SOL003\/VNFLifecycleOperationGranting\/definitions\/.*#\/definitions\/GrantRequest$/);
    // a qualified name falls back to General_Definitions
    assert.match(v2.validate('VNFLifecycleOperationGranting:Link', HREF).target, /^SOL003\/General_Definitions\/SOL003_def\.yaml#\/definitions\/Link$/);
    assert.ok(v2.names().includes('VNFLifecycleManagement:VnfLcmOpOcc'));
    assert.deepEqual(v1.validate('vnflcmopocc', {}).target, 'SOL003/VNFLifecycleManagement-API/schemas/VnfLcmOpOcc.schema.json#');
    assert.match(v1.validate('VNFLifecycleOperationGranting:grant', {}).target, /^SOL003\/VNFLifecycleOperationGranting-API\/schemas\/grant\.schema\.json#$/);
  });

  it('gives clear errors for unknown, ambiguous, misplaced and unusable names', () => {
    assert.throws(() => v2.validate('NoSuchType', {}), (e: unknown) => e instanceof EtsiLookupError && /unknown ETSI 3\.7\.1 SOL003 schema "NoSuchType"/.test(e.message));
    assert.throws(() => v2.validate('VnfIndicatorValueChangeNotification', {}), /ambiguous .*VNFIndicator:VnfIndicatorValueChangeNotification.*VNFIndicatorNotification:VnfIndicatorValueChangeNotification/);
    assert.throws(() => v2.validate('VNFPackageManagement:VnfLcmOpOcc', {}), /"VnfLcmOpOcc" is not defined in SOL003 VNFPackageManagement; it is defined in VNFLifecycleManagement/);
    assert.throws(() => v1.validate('NoSuchType', {}), /unknown ETSI 2\.6\.1 SOL003 VNFLifecycleManagement-API schema "NoSuchType"; known: .*VnfLcmOpOcc/);
    const sol002v1 = new EtsiValidator({ spec: '2.6.1', sol: '002' });
    assert.throws(() => sol002v1.validate('VnfLcmOperationOccurrenceNotification', {}), /VnfLcmOperationOccurrenceNotification\.schema\.json is empty upstream/);
    assert.throws(() => sol002v1.validate('VNFLifecycleOperationGranting:grant', {}), /no SOL002 VNFLifecycleOperationGranting-API schemas/);
    assert.throws(() => v1.validateOperation('GET /vnf_instances 200', []), /operations need spec 3\.7\.1/);
    assert.throws(() => new EtsiValidator({ spec: '9.9.9' as '3.7.1' }), EtsiLookupError);
  });
});

describe('ETSI validator: SOL002', () => {
  it('validates against the SOL002 files (3.7.1 and 2.6.1)', () => {
    const sol002 = new EtsiValidator({ sol: '002' });
    const r = sol002.validate('VnfLcmOpOcc', OCC);
    expectValid(r);
    assert.match(r.target, /^SOL002\/VNFLifecycleManagement\/definitions\/SOL002VNFLifecycleManagement_def\.yaml#/);
    expectValid(sol002.validate('VnfInstance', load('v2/VnfInstance.instantiated.json')));
    expectInvalid(sol002.validate('VnfLcmOpOcc', load('invalid/VnfLcmOpOcc.broken.json')), '/operationState');
    // SOL002 has no grant interface
    assert.throws(() => sol002.validate('VNFLifecycleOperationGranting:GrantRequest', {}), /unknown ETSI 3\.7\.1 SOL002 schema/);
    // the 2.6.1 SOL002 suite spells VnfInstance differently from SOL003 (vnfPkgInfoId)
    const inst = load('v1/VnfInstance.instantiated.json');
    const v1sol002 = new EtsiValidator({ spec: '2.6.1', sol: '002' }).validate('vnfInstance', inst);
    assert.match(v1sol002.target, /^SOL002\//);
    assert.ok(v1sol002.errors.some((e) => e.params.missingProperty === 'vnfPkgInfoId'));
    expectValid(v1.validate('vnfInstance', inst));
  });
});

describe('ETSI validator: repaired upstream defects (repaired / asPublished)', () => {
  it('lists each repair it applied', () => {
    v2.validate('VnfInstance', {});
    v2.validate('VnfLcmOpOcc', {});
    v2.validate('VNFPackageManagement:VnfPkgInfo', {});
    for (const id of ['VipCpInfo.metadata', 'VnfLcmOpOcc.oneOf', 'VnfInstanceSubscriptionFilter.anyOf', 'IpOverEthernetAddress.oneOf', 'Checksum']) {
      assert.ok(v2.repairs.some((r) => r.endsWith(`: ${id}`)), `${id} in ${v2.repairs.join('\n')}`);
      assert.ok(ETSI_REPAIRS.some((r) => r.id === id));
    }
    v2Published.validate('VnfInstance', {});
    v2Published.validate('VnfLcmOpOcc', {});
    assert.deepEqual(v2Published.repairs.map((r) => r.split(': ')[1]), ['VipCpInfo.metadata']);
  });

  it('1. VipCpInfo.metadata: compiles in both modes, metadata is an array of KeyValuePairs', () => {
    for (const v of [v2, v2Published]) {
      expectValid(v.validate('VipCpInfo', { cpInstanceId: 'c1', cpdId: 'vip', metadata: [{ a: 1 }] }));
      expectInvalid(v.validate('VipCpInfo', { cpInstanceId: 'c1', cpdId: 'vip', metadata: { a: 1 } }), '/metadata');
      expectInvalid(v.validate('VipCpInfo', { cpInstanceId: 'c1', cpdId: 'vip', metadata: ['x'] }), '/metadata/0');
    }
  });

  it('2. VnfLcmOpOcc: neither changedInfo nor modificationsTriggeredByVnfPkgChange is fine, both are not', () => {
    expectValid(v2.validate('VnfLcmOpOcc', OCC));
    expectValid(v2.validate('VnfLcmOpOcc', { ...OCC, changedInfo: {} }));
    const both = v2.validate('VnfLcmOpOcc', { ...OCC, changedInfo: {}, modificationsTriggeredByVnfPkgChange: { vnfdId: 'd' } });
    expectInvalid(both, '');
    const published = v2Published.validate('VnfLcmOpOcc', OCC);
    expectInvalid(published, '');
    assert.ok(published.errors.some((e) => e.message === 'must match exactly one schema in oneOf'));
  });

  it('3. VnfInstanceSubscriptionFilter: vnfdIds alone (or nothing) is fine', () => {
    const filter = { vnfdIds: ['b1bb0ce7-ebca-4fa7-95ed-4840d70a1177'] };
    expectValid(v2.validate('VnfInstanceSubscriptionFilter', filter));
    expectValid(v2.validate('VnfInstanceSubscriptionFilter', {}));
    expectValid(v2.validate('LccnSubscription', load('v2/LccnSubscription.json')));
    expectInvalid(v2Published.validate('VnfInstanceSubscriptionFilter', filter), '');
    expectInvalid(v2Published.validate('VnfInstanceSubscriptionFilter', {}), '');
    expectInvalid(v2Published.validate('LccnSubscription', load('v2/LccnSubscription.json')), '/filter/vnfInstanceSubscriptionFilter');
  });

  it('4. IpOverEthernetAddressData/Info: "exactly one of" applies to each ipAddresses entry', () => {
    const data = { ipAddresses: [{ type: 'IPV4', fixedAddresses: ['10.0.0.1'] }, { type: 'IPV6', numDynamicAddresses: 1 }] };
    expectValid(v2.validate('IpOverEthernetAddressData', data));
    expectValid(v2.validate('IpOverEthernetAddressData', { macAddress: 'fa:16:3e:00:00:01' }));
    expectInvalid(v2.validate('IpOverEthernetAddressData', { ipAddresses: [{ type: 'IPV4', fixedAddresses: ['10.0.0.1'], numDynamicAddresses: 1 }] }), '/ipAddresses/0');
    expectInvalid(v2.validate('IpOverEthernetAddressData', { ipAddresses: [{ type: 'IPV4' }] }), '/ipAddresses/0');
    expectInvalid(v2Published.validate('IpOverEthernetAddressData', data), '');

    const info = { ipAddresses: [{ type: 'IPV4', addresses: ['10.0.0.1'], isDynamic: false }] };
    expectValid(v2.validate('IpOverEthernetAddressInfo', info));
    expectInvalid(v2.validate('IpOverEthernetAddressInfo', { ipAddresses: [{ type: 'IPV4', addresses: ['10.0.0.1'], addressRange: { minAddress: '10.0.0.1', maxAddress: '10.0.0.9' } }] }), '/ipAddresses/0');
    expectInvalid(v2Published.validate('IpOverEthernetAddressInfo', info), '');
  });

  it('5. list GETs declared as a single object are validated as arrays', () => {
    // items the published types accept too (defects 2 and 3 would reject the samples themselves)
    const occ = { ...OCC, changedInfo: {} };
    const sub = { ...load('v2/LccnSubscription.json'), filter: { notificationTypes: ['VnfLcmOperationOccurrenceNotification'] } };
    for (const [op, item] of [['GET /vnf_lcm_op_occs 200', occ], ['GET /subscriptions 200', sub]] as const) {
      const r = v2.validateOperation(op, [item]);
      expectValid(r);
      assert.match(r.target, /as an array: list-GET-200/);
      expectInvalid(v2.validateOperation(op, item), '');
      expectValid(v2Published.validateOperation(op, item));
      expectInvalid(v2Published.validateOperation(op, [item]), '');
    }
    // already an array upstream: unchanged in both modes
    expectValid(v2Published.validateOperation('GET /vnf_instances 200', [load('v2/VnfInstance.instantiated.json')]));
  });

  it('6. responses whose description says the body shall be empty (PATCH /vnf_instances/{id} 202)', () => {
    const r = v2.validateOperation('PATCH /vnf_instances/{vnfInstanceId} 202', undefined);
    expectValid(r);
    assert.match(r.target, /IndividualVnfInstance\.Patch\.202 .*empty-body/);
    expectInvalid(v2.validateOperation('PATCH /vnf_instances/abc 202', load('v2/VnfInstance.instantiated.json')), '');
    expectInvalid(v2Published.validateOperation('PATCH /vnf_instances/abc 202', undefined), '');
    expectValid(v2Published.validateOperation('PATCH /vnf_instances/abc 202', load('v2/VnfInstance.instantiated.json')));
  });

  it('7. Checksum is an object {algorithm, hash} (VnfPkgInfo.checksum)', () => {
    const pkg = {
      id: 'p1',
      onboardingState: 'ONBOARDED',
      operationalState: 'ENABLED',
      usageState: 'NOT_IN_USE',
      _links: { self: HREF, packageContent: HREF },
    };
    const checksum = { algorithm: 'SHA-256', hash: 'ab'.repeat(32) };
    expectValid(v2.validate('VNFPackageManagement:VnfPkgInfo', { ...pkg, checksum }));
    expectInvalid(v2.validate('VNFPackageManagement:VnfPkgInfo', { ...pkg, checksum: 'ab'.repeat(32) }), '/checksum');
    expectInvalid(v2.validate('VNFPackageManagement:VnfPkgInfo', { ...pkg, checksum: { algorithm: 'SHA-256' } }), '/checksum');
    expectInvalid(v2Published.validate('VNFPackageManagement:VnfPkgInfo', { ...pkg, checksum }), '/checksum');
    expectValid(v2Published.validate('VNFPackageManagement:VnfPkgInfo', { ...pkg, checksum: 'ab'.repeat(32) }));
  });

  it('8. 2.6.1 SOL002 vnfInstances: the "type:" typo no longer hides the array type', () => {
    const one = load('v1/VnfInstance.instantiated.json');
    expectInvalid(new EtsiValidator({ spec: '2.6.1', sol: '002' }).validate('vnfInstances', one), '');
    expectValid(new EtsiValidator({ spec: '2.6.1', sol: '002', asPublished: true }).validate('vnfInstances', one));
  });
});

describe('ETSI validator: noExtra', () => {
  it('catches misspelled optional attributes at their own path', () => {
    const sub = load('v2/LccnSubscription.json');
    expectValid(v2.validate('LccnSubscription', { ...sub, callbakUri: 'x' }));
    const r = v2Strict.validate('LccnSubscription', { ...sub, callbakUri: 'x' });
    expectInvalid(r, '/callbakUri');
    assert.deepEqual(r.errors[0]!.params, { additionalProperty: 'callbakUri' });
    expectInvalid(v2Strict.validate('VnfLcmOpOcc', { ...OCC, grantID: 'g' }), '/grantID');
    const inst = structuredClone(load('v2/VnfInstance.instantiated.json')) as { instantiatedVnfInfo: Record<string, unknown> };
    inst.instantiatedVnfInfo.vnfcInfos = [];
    expectInvalid(v2Strict.validate('VnfInstance', inst), '/instantiatedVnfInfo/vnfcInfos');
    // free-form maps (KeyValuePairs) stay open
    expectValid(v2Strict.validate('VnfInstance', { ...load('v2/VnfInstance.instantiated.json'), metadata: { anything: 1 } }));
    // 2.6.1 too
    expectInvalid(new EtsiValidator({ spec: '2.6.1', noExtra: true }).validate('VnfLcmOpOcc', { ...load('v1/VnfLcmOpOcc.heal.completed.json'), grantID: 'g' }), '/grantID');
  });

  it('respects compositions: branch attributes stay allowed, "not" and $ref compositions are left alone', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string' } },
      oneOf: [{ required: ['a'] }, { properties: { b: { type: 'integer' } }, required: ['b'] }],
      not: { properties: { c: {} }, required: ['c'] },
      definitions: { open: { properties: { x: {} }, allOf: [{ $ref: '#/definitions/other' }] }, other: { properties: { y: {} } } },
    };
    closeObjectSchemas(schema);
    const ajv = new Ajv({ allErrors: true, strict: false });
    const ok = ajv.compile(schema);
    assert.ok(ok({ a: 'x' }));
    assert.ok(ok({ b: 1 }));
    assert.equal(ok({ b: 1, d: 1 }), false);
    assert.equal(ok({ b: 'not an integer' }), false);
    assert.deepEqual(schema.not, { properties: { c: {} }, required: ['c'] });
    assert.ok(!('additionalProperties' in schema.oneOf[1]!));
    assert.ok(!('additionalProperties' in schema.definitions.open));
    assert.equal((schema.definitions.other as Record<string, unknown>).additionalProperties, false);
  });
});

describe('ETSI validator: operations (3.7.1)', () => {
  it('validates request and response bodies, and empty bodies', () => {
    expectValid(v2.validateOperation('POST /vnf_instances/{vnfInstanceId}/heal 202', undefined));
    expectInvalid(v2.validateOperation('POST /vnf_instances/{vnfInstanceId}/heal 202', { x: 1 }), '');
    expectValid(v2.validateOperation('POST /vnf_instances/abc/heal request', load('v2/HealVnfRequest.json')));
    expectInvalid(v2.validateOperation('POST /vnf_instances/abc/heal request', { cause: 1 }), '/cause');
    expectValid(v2.validateOperation('GET /vnf_lcm_op_occs/xyz 200', OCC));
    expectInvalid(v2.validateOperation('GET /vnf_lcm_op_occs/xyz 200', undefined), '');
    // error responses resolve through the common responses file (responses/SOL002SOL003_resp.yaml)
    const problem = v2.validateOperation('GET /vnf_instances/abc 404', load('v2/ProblemDetails.409.json'));
    expectValid(problem);
    assert.match(problem.target, /^responses\/SOL002SOL003_resp\.yaml#\/components\/responses\/404\//);
    expectInvalid(v2.validateOperation('GET /vnf_instances/abc 404', { status: '404' }), '', '/status');
    // another interface
    const r = v2.validateOperation('POST /grants request', { vnfInstanceId: 'i', vnfLcmOpOccId: 'o', vnfdId: 'd', operation: 'HEAL', isAutomaticInvocation: false, _links: { vnfLcmOpOcc: HREF, vnfInstance: HREF } }, { interface: 'VNFLifecycleOperationGranting' });
    expectValid(r);
    assert.throws(() => v2.validateOperation('GET /nowhere 200', {}), /no path \/nowhere/);
    assert.throws(() => v2.validateOperation('PUT /vnf_instances 200', {}), /has no PUT; declared: POST, GET/);
    assert.throws(() => v2.validateOperation('GET /vnf_instances 299', {}), /declares no response 299/);
    assert.throws(() => v2.validateOperation('heal it', {}), /"<METHOD> <path> <status\|request>"/);
  });
});

describe('ETSI validator: reuse', () => {
  it('validates 1000 bodies with one compiled schema (time printed as a diagnostic, not asserted)', (t) => {
    const t0 = performance.now();
    const v = new EtsiValidator();
    expectValid(v.validate('VnfLcmOpOcc', OCC));
    const t1 = performance.now();
    const failed = load('v2/VnfLcmOpOcc.heal.failed_temp.json');
    for (let i = 0; i < 1000; i++) assert.ok(v.validate('VnfLcmOpOcc', i % 2 === 0 ? OCC : failed).valid);
    const t2 = performance.now();
    t.diagnostic(`create + first VnfLcmOpOcc: ${(t1 - t0).toFixed(0)} ms; 1000 validations: ${(t2 - t1).toFixed(1)} ms`);
  });
});
