import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CODES, type ErrorCode, type ErrorCodeSpec } from '../../src/errors/codes.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}|4xx) \|/gm)].map((m) => ({
  code: m[1] as string,
  status: m[2] as string,
}));

test('every registered code is documented in docs/errors.md with its status, and nothing else is', () => {
  const documented = new Map(rows.map((r) => [r.code, r.status]));
  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    assert.ok(documented.has(code), `${code} is missing from docs/errors.md`);
    const expected = 'statusFrom' in spec ? '4xx' : String(spec.status);
    assert.equal(documented.get(code), expected, `${code}: status in docs/errors.md`);
  }
  for (const { code } of rows)
    assert.ok(Object.hasOwn(ERROR_CODES, code), `docs/errors.md documents unknown code ${code}`);
  assert.equal(rows.length, new Set(rows.map((r) => r.code)).size, 'a code is documented twice');
});

test("4xx codes are the caller's and 5xx ours: the classes match the registry", () => {
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

test('the registry says which upstream failures are retried and which open a circuit, as docs/errors.md lists them', () => {
  const listed = (label: string): string[] => {
    const start = doc.indexOf(`**${label}**`);
    assert.ok(start !== -1, `docs/errors.md has the "${label}" list`);
    const ends = [doc.indexOf('\n  - ', start), doc.indexOf('\n  Every other code', start)].filter((i) => i !== -1);
    const end = Math.min(...ends);
    return [...doc.slice(start, end).matchAll(/`([a-z_]+)`/g)].map((m) => m[1] as string);
  };
  const specs = Object.entries(ERROR_CODES).map(([code, spec]) => ({
    code,
    upstream: (spec as ErrorCodeSpec).upstream,
  }));
  const retried = specs.filter((s) => s.upstream?.retried === true).map((s) => s.code);
  const opens = specs.filter((s) => s.upstream?.opensCircuit === true).map((s) => s.code);
  assert.deepEqual([...retried].sort(), [...new Set(listed('retried'))].sort());
  // The circuit list names the retried ones "except" one and "plus" one.
  const circuitText = listed("counts towards opening the upstream's circuit");
  assert.deepEqual(
    [...opens].sort(),
    [...retried.filter((c) => c !== 'upstream_rate_limited'), 'upstream_total_timeout'].sort(),
  );
  assert.ok(circuitText.includes('upstream_rate_limited') && circuitText.includes('upstream_total_timeout'));
  // Only upstream codes blame the upstream; the caller's codes (4xx of ours) never do.
  for (const { code, upstream } of specs) if (upstream) assert.match(code, /^upstream_/, code);
  for (const code of [
    'rate_limited',
    'validation_failed',
    'upstream_rejected_request',
    'upstream_busy',
    'client_closed_request',
  ] as const) {
    assert.equal((ERROR_CODES[code] as ErrorCodeSpec).upstream, undefined, code);
  }
});

test('the retry loop reads the registry: a code is retried exactly when its entry says so', async () => {
  const { isRetryable } = await import('../../src/core/pipeline/retry-policy.js');
  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    assert.equal(
      isRetryable(new GatewayError(code as ErrorCode)),
      (spec as ErrorCodeSpec).upstream?.retried === true,
      code,
    );
  }
  assert.equal(isRetryable(new Error('not ours')), false);
});
