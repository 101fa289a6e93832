import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson, readIdempotencyKey, requestFingerprint } from '../../../src/core/pipeline/idempotency-key.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';

test('valid keys pass through; absent is fine', () => {
  assert.equal(readIdempotencyKey(undefined), undefined);
  assert.equal(readIdempotencyKey('a'), 'a');
  assert.equal(readIdempotencyKey('x'.repeat(255)), 'x'.repeat(255));
  assert.equal(readIdempotencyKey('order-42:retry é'), 'order-42:retry é');
});

test('too long, empty, control characters or repeated: 400 invalid_idempotency_key without the value', () => {
  for (const bad of ['', 'x'.repeat(256), 'a\u0000b', 'tab\there', 'del\u007f', ['a', 'b']]) {
    assert.throws(
      () => readIdempotencyKey(bad),
      (error: unknown) =>
        error instanceof GatewayError &&
        error.code === 'invalid_idempotency_key' &&
        error.status === 400 &&
        !JSON.stringify(error.toBody()).includes('x'.repeat(256)),
    );
  }
});

test('the fingerprint ignores key order and whitespace but not values', () => {
  const a = requestFingerprint(
    'chat',
    JSON.parse('{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5}'),
  );
  const b = requestFingerprint(
    'chat',
    JSON.parse('{ "temperature": 0.5, "messages": [ {"content":"hi", "role":"user"} ], "model":"m" }'),
  );
  const c = requestFingerprint(
    'chat',
    JSON.parse('{"model":"m","messages":[{"role":"user","content":"hi!"}],"temperature":0.5}'),
  );
  assert.equal(a, b);
  assert.notEqual(a, c);
  assert.notEqual(requestFingerprint('chat', {}), requestFingerprint('models', {}));
  assert.match(a, /^[0-9a-f]{64}$/);
});

test('canonical JSON: arrays keep their order, undefined keys drop, strings are escaped', () => {
  assert.equal(canonicalJson({ b: [3, 1], a: 'q"', c: undefined, d: null }), '{"a":"q\\"","b":[3,1],"d":null}');
});
