/**
 * The HTTP layer's own refusals are ProblemDetails of the error catalog (src/errors.ts), like the
 * VNFM's other errors: an unknown route 404, a method the resource lacks 405 (with `Allow`), an
 * oversized body 413, a media type not accepted 415, a malformed body 400; each with the catalog's
 * status and title and `type: urn:vnfm:error:<CODE>`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ERRORS, type ErrorCode } from '../../src/errors.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';

const V2 = { version: '2.0.0' };

let vnfm: TestVnfm;

function assertCatalog(r: { statusCode: number; headers: Record<string, unknown>; body: string }, code: ErrorCode, detail: RegExp): void {
  const def = ERRORS[code];
  assert.equal(r.statusCode, def.httpStatus, r.body);
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
  const p = JSON.parse(r.body);
  assert.equal(p.type, `urn:vnfm:error:${code}`);
  assert.equal(p.status, def.httpStatus);
  assert.equal(p.title, def.title);
  assert.match(p.detail, detail);
}

describe('framework errors through the error catalog', () => {
  before(async () => {
    vnfm = await testVnfm({ config: { maxBodyBytes: 1000 } });
  });
  after(() => vnfm.close());

  it('an unknown route is VNFM_ERR_API_NOT_FOUND', async () => {
    assertCatalog(await vnfm.app.inject({ method: 'GET', url: '/no/such/route', headers: V2 }), 'VNFM_ERR_API_NOT_FOUND', /no resource at \/no\/such\/route/);
  });

  it('a method the resource lacks is VNFM_ERR_API_METHOD_NOT_ALLOWED, with Allow', async () => {
    const r = await vnfm.app.inject({ method: 'PUT', url: '/vnflcm/v2/vnf_instances', headers: V2 });
    assertCatalog(r, 'VNFM_ERR_API_METHOD_NOT_ALLOWED', /method PUT is not allowed/);
    assert.match(String(r.headers.allow), /GET/);
  });

  it('an oversized body is VNFM_ERR_API_PAYLOAD_TOO_LARGE', async () => {
    const r = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, 'content-type': 'application/json' }, payload: JSON.stringify({ vnfdId: 'x'.repeat(5000) }) });
    assertCatalog(r, 'VNFM_ERR_API_PAYLOAD_TOO_LARGE', /too large/);
  });

  it('a media type not accepted is VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE', async () => {
    const r = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, 'content-type': 'application/xml' }, payload: '<a/>' });
    assertCatalog(r, 'VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE', /not supported/);
  });

  it('a malformed JSON body is VNFM_ERR_API_BAD_REQUEST', async () => {
    const r = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: { ...V2, 'content-type': 'application/json' }, payload: '{"vnfdId":' });
    assertCatalog(r, 'VNFM_ERR_API_BAD_REQUEST', /malformed/);
  });
});
