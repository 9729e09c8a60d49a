import assert, { AssertionError } from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { applyAttributeSelector } from '../../../src/api/sol/attribute-selector.ts';
import { ETSI_DIR, checkEtsi, etsiSchemaName, expectEtsiValid } from '../../helpers/etsi.ts';

const SAMPLES = path.join(ETSI_DIR, 'samples');

function load(rel: string): unknown {
  return JSON.parse(readFileSync(path.join(SAMPLES, rel), 'utf8'));
}

/** Sample files are named `<SchemaName>.<case>.json`. */
function samples(version: 'v1' | 'v2'): { file: string; schema: string }[] {
  return readdirSync(path.join(SAMPLES, version))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, schema: file.split('.')[0] as string }));
}

describe('expectEtsiValid', () => {
  for (const version of ['v2', 'v1'] as const) {
    it(`accepts every ${version} sample body`, () => {
      const list = samples(version);
      assert.ok(list.length >= 3, `expected ${version} samples in ${SAMPLES}`);
      for (const { file, schema } of list) expectEtsiValid(version, schema, load(`${version}/${file}`));
    });
  }

  it('rejects the broken sample and lists each error with its path', () => {
    const broken = load('invalid/VnfLcmOpOcc.broken.json');
    for (const version of ['v2', 'v1'] as const) {
      assert.throws(
        () => expectEtsiValid(version, 'VnfLcmOpOcc', broken),
        (e: unknown) => {
          assert.ok(e instanceof AssertionError, String(e));
          assert.match(e.message, new RegExp(`not a valid ETSI ${version} VnfLcmOpOcc`));
          assert.match(e.message, /\/operationState: must be equal to one of the allowed values/);
          assert.match(e.message, /\/isAutomaticInvocation: must be boolean/);
          assert.match(e.message, /\d+ error\(s\):\n {2}\//);
          return true;
        },
      );
    }
    const r = checkEtsi('v2', 'VnfLcmOpOcc', broken);
    assert.equal(r.valid, false);
    assert.ok(r.errors.some((e) => e.path === '/stateEnteredTime'));
  });

  it('validates arrays (list GET bodies)', () => {
    const a = load('v2/VnfLcmOpOcc.heal.processing.json');
    const b = load('v2/VnfLcmOpOcc.heal.failed_temp.json');
    expectEtsiValid('v2', 'VnfLcmOpOcc', [a, b], { array: true });
    expectEtsiValid('v2', 'VnfLcmOpOcc', [], { array: true });
    assert.throws(() => expectEtsiValid('v2', 'VnfLcmOpOcc', a, { array: true }), /must be array/);
    assert.throws(() => expectEtsiValid('v2', 'VnfLcmOpOcc', [a, { id: 1 }], { array: true }), /\/1: must have required property/);
  });

  it('maps our type names to the 2.6.1 suite names', () => {
    assert.equal(etsiSchemaName('v1', 'VnfInstance'), 'vnfInstance');
    assert.equal(etsiSchemaName('v1', 'VnfIdentifierDeletionNotification'), 'vnfIdentifierDeletionNotification');
    assert.equal(etsiSchemaName('v1', 'LccnSubscription', '002'), 'subscription');
    assert.equal(etsiSchemaName('v2', 'VnfInstance'), 'VnfInstance');
    assert.throws(() => etsiSchemaName('v1', 'VnfPkgInfo'), /no usable SOL003 schema for VnfPkgInfo/);
    assert.throws(() => etsiSchemaName('v1', 'VnfLcmOperationOccurrenceNotification', '002'), /no usable SOL002 schema/);
  });

  it('checks SOL002 and the noExtra option', () => {
    const inst = load('v1/VnfInstance.instantiated.json');
    const sol002 = checkEtsi('v1', 'VnfInstance', inst, { sol: '002' });
    assert.match(sol002.target, /^SOL002\//);
    // the SOL002 suite schema differs from SOL003 (it asks for vnfPkgInfoId)
    assert.ok(sol002.errors.some((e) => e.params.missingProperty === 'vnfPkgInfoId'));
    expectEtsiValid('v1', 'VnfInstance', inst, { sol: '003' });
    const sub = load('v2/LccnSubscription.json');
    expectEtsiValid('v2', 'LccnSubscription', sub);
    assert.throws(() => expectEtsiValid('v2', 'LccnSubscription', { ...(sub as object), callbakUri: 'x' }, { noExtra: true }), /callbakUri/);
  });

  it('v2 VnfPkgInfo resolves in the package management interface, with checksum as {algorithm, hash}', () => {
    const r = checkEtsi('v2', 'VnfPkgInfo', {});
    assert.equal(r.valid, false);
    assert.match(r.target, /VNFPackageManagement/);
    const href = { href: 'http://127.0.0.1:9890/vnfpkgm/v2/vnf_packages/p1' };
    const pkg = { id: 'p1', onboardingState: 'ONBOARDED', operationalState: 'ENABLED', usageState: 'NOT_IN_USE', _links: { self: href, packageContent: href } };
    expectEtsiValid('v2', 'VnfPkgInfo', { ...pkg, checksum: { algorithm: 'SHA-256', hash: 'ab'.repeat(32) } });
    assert.throws(() => expectEtsiValid('v2', 'VnfPkgInfo', { ...pkg, checksum: 'ab'.repeat(32) }), /\/checksum: must be object/);
  });

  it('uses the ETSI definitions vendored in the repository (test/fixtures/etsi)', () => {
    const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
    assert.equal(path.relative(repo, ETSI_DIR).split(path.sep).join('/'), 'test/fixtures/etsi');
    const r = checkEtsi('v2', 'VnfLcmOpOcc', load('v2/VnfLcmOpOcc.heal.processing.json'));
    assert.equal(r.target, 'SOL003/VNFLifecycleManagement/definitions/SOL003VNFLifecycleManagement_def.yaml#/definitions/VnfLcmOpOcc');
    assert.equal(checkEtsi('v1', 'VnfLcmOpOcc', {}).target, 'SOL003/VNFLifecycleManagement-API/schemas/VnfLcmOpOcc.schema.json#');
  });

  it('names the ETSI file in its assertion message and reports unknown names clearly', () => {
    assert.throws(() => expectEtsiValid('v2', 'VnfLcmOpOcc', {}), /SOL003 3\.7\.1, SOL003\/VNFLifecycleManagement\/definitions\/SOL003VNFLifecycleManagement_def\.yaml#\/definitions\/VnfLcmOpOcc\)/);
    assert.throws(() => checkEtsi('v2', 'VnfLcmOpOc', {}), /unknown ETSI 3\.7\.1 SOL003 schema "VnfLcmOpOc"/);
    assert.throws(() => checkEtsi('v1', 'VnfLcmOpOc', {}), /unknown ETSI 2\.6\.1 SOL003 VNFLifecycleManagement-API schema "VnfLcmOpOc"/);
  });
});

describe('attribute selectors keep list bodies ETSI-valid', () => {
  const opOccDefault = ['operationParams', 'error', 'resourceChanges', 'changedInfo', 'changedExtConnectivity'];
  const instDefault = ['vnfConfigurableProperties', 'vimConnectionInfo', 'instantiatedVnfInfo', 'metadata', 'extensions'];

  it('v2 VnfLcmOpOcc and VnfInstance lists with the default exclusions and with fields', () => {
    const occs = [load('v2/VnfLcmOpOcc.heal.failed_temp.json'), load('v2/VnfLcmOpOcc.heal.processing.json')] as object[];
    for (const q of [{}, { exclude_default: '' }, { fields: 'error' }, { exclude_fields: 'resourceChanges' }, { all_fields: '' }]) {
      const body = occs.map((o) => applyAttributeSelector(o, q, opOccDefault));
      expectEtsiValid('v2', 'VnfLcmOpOcc', body, { array: true });
    }
    const inst = load('v2/VnfInstance.instantiated.json') as object;
    for (const q of [{}, { fields: 'instantiatedVnfInfo/vnfcResourceInfo' }, { fields: 'vimConnectionInfo' }, { exclude_fields: 'vimConnectionInfo' }]) {
      expectEtsiValid('v2', 'VnfInstance', [applyAttributeSelector(inst, q, instDefault)], { array: true });
    }
  });

  it('v1 (2.6.1) requires operationParams in VnfLcmOpOcc: the default set must not drop it there', () => {
    const occ = load('v1/VnfLcmOpOcc.heal.completed.json') as object;
    const dropped = applyAttributeSelector(occ, {}, opOccDefault);
    assert.equal(checkEtsi('v1', 'VnfLcmOpOcc', dropped).valid, false);
    const kept = applyAttributeSelector(occ, {}, opOccDefault, ['id', '_links', 'operationParams']);
    expectEtsiValid('v1', 'VnfLcmOpOcc', [kept], { array: true });
  });
});
