import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CODES } from '../src/errors/codes.js';
import { GatewayError } from '../src/errors/gateway-error.js';

const doc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}|4xx) \|/gm)].map((m) => ({ code: m[1] as string, status: m[2] as string }));

test('every registered code is documented in docs/errors.md with its status, and nothing else is', () => {
  const documented = new Map(rows.map((r) => [r.code, r.status]));
  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    assert.ok(documented.has(code), `${code} is missing from docs/errors.md`);
    const expected = 'statusFrom' in spec ? '4xx' : String(spec.status);
    assert.equal(documented.get(code), expected, `${code}: status in docs/errors.md`);
  }
  for (const { code } of rows) assert.ok(Object.hasOwn(ERROR_CODES, code), `docs/errors.md documents unknown code ${code}`);
  assert.equal(rows.length, new Set(rows.map((r) => r.code)).size, 'a code is documented twice');
});

test('4xx codes are the caller\'s and 5xx ours: the classes match the registry', () => {
  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    assert.ok(spec.status >= 400 && spec.status < 600, code);
    assert.ok(spec.message.length > 10 && /[.]$/.test(spec.message), `${code} has a full-sentence message`);
  }
});

test('an upstream-status code keeps a 4xx from the upstream and only a 4xx', () => {
  assert.equal(new GatewayError('upstream_rejected_request', {}, { upstreamStatus: 422 }).status, 422);
  assert.equal(new GatewayError('upstream_rejected_request', {}, { upstreamStatus: 500 }).status, 400);
  assert.equal(new GatewayError('validation_failed', {}, { upstreamStatus: 422 }).status, 400);
});
