import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../src/observability/logger.js';
import { lazyChildLogger } from '../../src/observability/request-logger.js';
import { redactUrl, scrubText } from '../../src/secrets/redact.js';

function capture(secrets: string[] = [], level = 'info') {
  const lines: string[] = [];
  const logger = createLogger({ level, secrets, destination: { write: (l: string) => void lines.push(l) } });
  return { logger, lines };
}

test('headers logged under req or headers are redacted by name', () => {
  const { logger, lines } = capture();
  logger.info({ headers: { Authorization: 'Bearer abc', 'x-upstream-key': 'sk-1', accept: 'json' } }, 'h');
  logger.info({ req: { method: 'GET', url: '/v1/?token=zzz&route=models', headers: { cookie: 'c=1' } } }, 'r');
  logger.info(
    { upstream: { name: 'openai', apiKey: 'sk-2', nested: { headers: { authorization: 'Bearer q' } } } },
    'u',
  );
  const [h, r, u] = lines.map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>);
  assert.deepEqual(h?.headers, { Authorization: '[REDACTED]', 'x-upstream-key': '[REDACTED]', accept: 'json' });
  assert.equal(r?.req?.url, '/v1/?token=[REDACTED]&route=models');
  assert.deepEqual(r?.req?.headers, { cookie: '[REDACTED]' });
  assert.deepEqual(u?.upstream, {
    name: 'openai',
    apiKey: '[REDACTED]',
    nested: { headers: { authorization: '[REDACTED]' } },
  });
});

test('known secrets are scrubbed from every line, wherever they appear', () => {
  const { logger, lines } = capture(['sk-known-secret-value']);
  logger.warn({ detail: 'the key sk-known-secret-value was refused' }, 'message with sk-known-secret-value');
  assert.equal(lines.length, 1);
  assert.ok(!lines[0]?.includes('sk-known-secret-value'));
  assert.equal((lines[0]?.match(/\[REDACTED\]/g) ?? []).length, 2);
});

test('times are ISO 8601 UTC', () => {
  const { logger, lines } = capture();
  logger.info('x');
  assert.match(
    String((JSON.parse(lines[0] ?? '{}') as { time: string }).time),
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
  );
});

test('the lazy request logger binds the request id and creates nothing for disabled levels', () => {
  const { logger, lines } = capture([], 'info');
  const child = lazyChildLogger(logger, { request_id: 'req-1' }, {});
  child.debug('not written');
  child.warn({ code: 'x' }, 'written');
  assert.equal(lines.length, 1);
  const line = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
  assert.equal(line.request_id, 'req-1');
  assert.equal(line.code, 'x');
  assert.equal(child.level, 'info');
});

test('redactUrl and scrubText', () => {
  assert.equal(redactUrl('/v1/?route=chat'), '/v1/?route=chat');
  // Every value is replaced, credential-looking or not; only route and limit in their plain shape stay.
  assert.equal(
    redactUrl('/x?API_KEY=1&next_token=abc&Signature=s&q=x&limit=5&route=chat&empty='),
    '/x?API_KEY=[REDACTED]&next_token=[REDACTED]&Signature=[REDACTED]&q=[REDACTED]&limit=5&route=chat&empty=',
  );
  assert.equal(
    redactUrl('/x?route=sk-live-123&limit=1e9&constructor=1&bare-secret'),
    '/x?route=[REDACTED]&limit=[REDACTED]&constructor=[REDACTED]&[REDACTED]',
  );
  assert.equal(scrubText('Incorrect API key provided: sk-ab***yz', []), 'Incorrect API key provided: [REDACTED]');
  assert.equal(scrubText('bad key my-own-key-123', ['my-own-key-123']), 'bad key [REDACTED]');
});

test('scrubText removes pieces of a secret: cut at a truncation point, partly shown, or split in two', () => {
  const key = 'gw-upstream-3c9f1e77a0b24d5e';
  assert.equal(scrubText(`cut: ...${key.slice(0, 11)}`, [key]), 'cut: ...[REDACTED]');
  assert.equal(scrubText(`tail ${key.slice(-8)} end`, [key]), 'tail [REDACTED] end');
  assert.equal(scrubText(`${key.slice(0, 10)}|${key.slice(12)}`, [key]), '[REDACTED]|[REDACTED]');
  // Fewer than eight characters of a key, and ordinary text, are left alone.
  assert.equal(scrubText(`short ${key.slice(0, 7)} text`, [key]), `short ${key.slice(0, 7)} text`);
  assert.equal(scrubText('nothing secret in here at all', [key]), 'nothing secret in here at all');
});
