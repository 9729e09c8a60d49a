import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VnfmError } from '../../../src/errors.ts';
import { OpenStackError, parseOpenStackErrorBody, redactSecrets, safeUrl } from '../../../src/infra/openstack/openstack-error.ts';

describe('OpenStackError', () => {
  it('parses Heat, Keystone, Nova and non-JSON error bodies', () => {
    assert.deepEqual(
      parseOpenStackErrorBody(
        '{"code": 409, "title": "Conflict", "explanation": "There was a conflict when trying to complete your request.", "error": {"type": "StackExists", "traceback": null, "message": "The Stack (s) already exists."}}',
      ),
      { message: 'The Stack (s) already exists.', type: 'StackExists', title: 'Conflict' },
    );
    // Heat hides the message of "unsafe" exceptions: fall back to the explanation
    assert.equal(parseOpenStackErrorBody('{"code": 500, "title": "Internal Server Error", "explanation": "The server has either erred", "error": {"type": "KeyError", "traceback": null}}').message, 'The server has either erred');
    assert.deepEqual(parseOpenStackErrorBody('{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}'), {
      message: 'The request you have made requires authentication.',
      type: 'Unauthorized',
      title: 'Unauthorized',
    });
    assert.deepEqual(parseOpenStackErrorBody('{"itemNotFound": {"code": 404, "message": "Instance x could not be found."}}'), { message: 'Instance x could not be found.', type: 'itemNotFound', title: undefined });
    // a body that is not an OpenStack JSON error (a proxy's HTML, another server's text) is never echoed
    assert.equal(parseOpenStackErrorBody('<html><body><h1>502 Bad Gateway</h1></body></html>').message, undefined);
    assert.equal(parseOpenStackErrorBody('').message, undefined);
  });

  it('fromResponse: status, service, retryable, Heat text, catalog code', () => {
    const e = OpenStackError.fromResponse({
      service: 'heat',
      method: 'PATCH',
      url: 'http://127.0.0.1:8004/v1/p/stacks/s/1?x=1',
      status: 409,
      bodyText: '{"code": 409, "title": "Conflict", "error": {"type": "ActionInProgress", "message": "Stack s already has an action (UPDATE) in progress."}}',
    });
    assert.ok(e instanceof VnfmError);
    assert.equal(e.status, 409);
    assert.equal(e.service, 'heat');
    assert.equal(e.retryable, true);
    assert.equal(e.errorType, 'ActionInProgress');
    assert.equal(e.url, 'http://127.0.0.1:8004/v1/p/stacks/s/1');
    assert.equal(e.message, 'heat PATCH /v1/p/stacks/s/1 answered 409 (ActionInProgress: Stack s already has an action (UPDATE) in progress.)');
    const f = OpenStackError.fromResponse({ service: 'heat', method: 'GET', url: 'http://h/x', status: 503, bodyText: '' });
    assert.equal(f.retryable, true);
    assert.equal(f.code, 'VNFM_ERR_VIM_UNREACHABLE');
    const g = OpenStackError.fromResponse({ service: 'heat', method: 'POST', url: 'http://h/x', status: 400, bodyText: '{"error": {"type": "StackValidationFailed", "message": "bad"}}' });
    assert.equal(g.retryable, false);
    assert.equal(g.code, 'VNFM_ERR_VIM_FAILED');
    assert.equal(g.name, 'OpenStackError');
  });

  it('classifies answers: 5xx (but 501/505), 408, 429 with its Retry-After retryable; other 4xx terminal', () => {
    const of = (status: number, bodyText = '', headers?: Headers) => OpenStackError.fromResponse({ service: 'heat', method: 'GET', url: 'http://h/x', status, bodyText, ...(headers ? { headers } : {}) });
    for (const s of [500, 502, 503, 504, 408]) assert.equal(of(s).retryable, true, String(s));
    for (const s of [400, 401, 403, 404, 409, 413, 422, 501, 505]) assert.equal(of(s).retryable, false, String(s));
    const throttled = of(429, '{"error": {"message": "Rate limit exceeded"}}', new Headers({ 'Retry-After': '7' }));
    assert.equal(throttled.retryable, true);
    assert.equal(throttled.retryAfterMs, 7000);
    assert.equal(throttled.code, 'VNFM_ERR_VIM_UNREACHABLE');
    assert.equal(of(503, '', new Headers({ 'Retry-After': '2' })).retryAfterMs, 2000);
    assert.equal(of(400, '', new Headers({ 'Retry-After': '2' })).retryAfterMs, undefined, 'no hint on a terminal error');
    const quota = of(403, '{"forbidden": {"code": 403, "message": "Quota exceeded for instances"}}');
    assert.equal(quota.retryable, false);
    assert.equal(quota.code, 'VNFM_ERR_VIM_FAILED');
  });

  it('never carries passwords or tokens', () => {
    const token = 'gAAAAABmZ2xhbmtfdG9rZW5fdmFsdWVfaGVyZV8xMjM0NTY3ODkw';
    const e = OpenStackError.fromResponse({
      service: 'keystone',
      method: 'POST',
      url: 'http://admin:hunter22@127.0.0.1:5000/v3/auth/tokens?token=abc',
      status: 400,
      bodyText: JSON.stringify({ error: { message: `bad request {"password": "hunter22", "x": 1} X-Auth-Token: ${token} and my-own-secret` } }),
      secrets: ['my-own-secret'],
    });
    for (const s of ['hunter22', token, 'my-own-secret', 'token=abc']) {
      assert.ok(!e.message.includes(s), `${s} leaked in message: ${e.message}`);
      assert.ok(!String(e.url).includes(s), `${s} leaked in url`);
    }
    assert.match(e.message, /"password": "\*\*\*"/);
    assert.equal(redactSecrets('Authorization: Bearer abc.def'), 'Authorization: ***');
    assert.equal(redactSecrets('x-subject-token=abc; rest'), 'x-subject-token=***; rest');
    assert.equal(safeUrl('http://u:p@h:1/a/b?c=d'), 'http://h:1/a/b');
  });
});
