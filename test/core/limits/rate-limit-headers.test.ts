import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bindingLimit, rateLimitHeaders, type AppliedLimit } from '../../../src/core/limits/rate-limit-headers.js';

const limit = (
  name: string,
  l: number,
  remaining: number,
  extra: Partial<AppliedLimit['decision']> = {},
  windowMs = 60_000,
): AppliedLimit => ({
  name,
  windowMs,
  decision: { allowed: true, limit: l, remaining, resetMs: 6_000, retryAfterMs: 0, ...extra },
});

test('one allowed limit: the four headers, no Retry-After', () => {
  assert.deepEqual(rateLimitHeaders([limit('requests per caller', 100, 99, { resetMs: 600 })]), {
    'ratelimit-limit': '100',
    'ratelimit-remaining': '99',
    'ratelimit-reset': '1',
    'ratelimit-policy': '100;w=60;comment="requests per caller"',
  });
});

test('several limits: the one closest to refusing is reported, every policy is listed', () => {
  const headers = rateLimitHeaders([
    limit('requests per caller', 100, 90),
    limit('requests per model', 10, 2, {}, 1000),
  ]);
  assert.equal(headers['ratelimit-limit'], '10');
  assert.equal(headers['ratelimit-remaining'], '2');
  assert.equal(
    headers['ratelimit-policy'],
    '100;w=60;comment="requests per caller", 10;w=1;comment="requests per model"',
  );
});

test('a refusal: the longest wait wins and Retry-After is at least one second', () => {
  const refusedShort = limit('a', 10, 0, { allowed: false, retryAfterMs: 200, resetMs: 200 });
  const refusedLong = limit('b', 5, 0, { allowed: false, retryAfterMs: 7_300, resetMs: 9_000 });
  assert.equal(bindingLimit([limit('c', 100, 1), refusedShort, refusedLong])?.name, 'b');
  const headers = rateLimitHeaders([refusedShort, limit('c', 100, 50), refusedLong]);
  assert.equal(headers['retry-after'], '8');
  assert.equal(headers['ratelimit-remaining'], '0');
  assert.equal(headers['ratelimit-reset'], '9');
  assert.equal(rateLimitHeaders([refusedShort])['retry-after'], '1');
});

test('no limits, no headers', () => {
  assert.deepEqual(rateLimitHeaders([]), {});
});
