/**
 * Runs after the whole suite (scripts/run-tests.mjs): every secret any test used — admin tokens, upstream keys,
 * X-Upstream-Key values, scoped keys, OAuth tokens, Basic passwords, webhook signing secrets — is searched for in
 * every log line every gateway wrote and every response body the tests read. None may appear.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.GW_TEST_CAPTURE_DIR;

test(
  'no secret used anywhere in the suite appears in a log line or a response body',
  { skip: dir ? false : 'GW_TEST_CAPTURE_DIR not set: run the whole suite with scripts/run-tests.mjs' },
  () => {
    const files = readdirSync(dir as string);
    const read = (prefix: string) =>
      files
        .filter((f) => f.startsWith(prefix))
        .map((f) => ({ file: f, text: readFileSync(join(dir as string, f), 'utf8') }));
    const secrets = new Set<string>();
    for (const { text } of read('secrets-'))
      for (const line of text.split('\n')) if (line !== '') secrets.add(JSON.parse(line) as string);
    const captured = [...read('logs-'), ...read('bodies-')];
    const capturedBytes = captured.reduce((n, c) => n + c.text.length, 0);
    assert.ok(secrets.size >= 10, `the suite should have registered its secrets (got ${secrets.size})`);
    assert.ok(capturedBytes > 100_000, `the suite should have captured its traffic (got ${capturedBytes} bytes)`);
    const leaks: string[] = [];
    for (const secret of secrets) {
      for (const { file, text } of captured) {
        const at = text.indexOf(secret);
        if (at >= 0)
          leaks.push(
            `${secret.slice(0, 4)}…(${secret.length} chars) in ${file}: …${text.slice(Math.max(0, at - 80), at).replaceAll(secret, '<SECRET>')}<SECRET>…`,
          );
      }
    }
    assert.deepEqual(
      leaks,
      [],
      `${leaks.length} leak(s) among ${secrets.size} secrets and ${capturedBytes} captured bytes`,
    );
  },
);
