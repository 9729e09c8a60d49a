/** The error catalog's failure taxonomy: retryable vs terminal factories, Retry-After hints. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { classifyFailure, ERRORS, parseRetryAfter, retryableError, terminalError, VnfmError, vnfmError } from '../src/errors.ts';

it('retryableError / terminalError make the distinction explicit, whatever the code default', () => {
  assert.equal(ERRORS.VNFM_ERR_VIM_FAILED.retryable, false);
  const r = retryableError('VNFM_ERR_VIM_FAILED', 'heat answered 500', { retryAfterMs: 1500 });
  assert.ok(r instanceof VnfmError);
  assert.equal(r.retryable, true);
  assert.equal(r.retryAfterMs, 1500);
  assert.equal(r.httpStatus, 500);
  assert.deepEqual(classifyFailure(r), { retryable: true, retryAfterMs: 1500 });
  assert.equal(ERRORS.VNFM_ERR_LCM_TIMEOUT.retryable, true);
  const t = terminalError('VNFM_ERR_LCM_TIMEOUT', 'stack did not settle');
  assert.equal(t.retryable, false);
  assert.equal(t.code, 'VNFM_ERR_LCM_TIMEOUT');
  assert.deepEqual(classifyFailure(t), { retryable: false });
});

it('the catalog default still applies to vnfmError; a retry-after hint is kept on retryable errors only', () => {
  assert.equal(vnfmError('VNFM_ERR_VIM_UNREACHABLE', 'x').retryable, true);
  assert.deepEqual(classifyFailure(vnfmError('VNFM_ERR_VIM_UNREACHABLE', 'x')), { retryable: true });
  assert.equal(vnfmError('VNFM_ERR_VIM_FAILED', 'x', { retryAfterMs: 100 }).retryAfterMs, undefined);
  assert.equal(retryableError('VNFM_ERR_VIM_UNREACHABLE', 'x', { retryAfterMs: -1 }).retryAfterMs, undefined);
});

it('anything that is not a catalog error is terminal', () => {
  assert.deepEqual(classifyFailure(new TypeError('boom')), { retryable: false });
  assert.deepEqual(classifyFailure('text'), { retryable: false });
  assert.deepEqual(classifyFailure(undefined), { retryable: false });
});

it('parses Retry-After as seconds or as an HTTP date', () => {
  assert.equal(parseRetryAfter('3'), 3000);
  assert.equal(parseRetryAfter('0.5'), 500);
  assert.equal(parseRetryAfter(' 120 '), 120_000);
  const now = Date.parse('2030-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('Tue, 01 Jan 2030 00:00:10 GMT', now), 10_000);
  assert.equal(parseRetryAfter('Mon, 31 Dec 2029 23:59:00 GMT', now), 0);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter(''), undefined);
  assert.equal(parseRetryAfter('soon'), undefined);
});
