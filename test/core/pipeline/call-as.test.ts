/**
 * The surfaces' typed entry into the pipeline (routes/call-as-inject.ts): a call made as an owner comes back with the
 * pipeline's own values (the error code, the usage it settled, Retry-After and the binding rate limit as numbers),
 * not read back out of HTTP headers or found by a substring of the body. A real gateway and a node:http upstream
 * speaking OpenAI's wire format.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../../helpers/gateway.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { waitFor } from '../../helpers/wait.js';
import { principalSnapshot, ADMIN } from '../../../src/auth/principal.js';
import type { CallAs } from '../../../src/core/pipeline/call-as.js';

let mock: OpenAiUpstream;
let gw: TestGateway;
let callAs: CallAs;
const AS = { owner: 'admin', principal: principalSnapshot(ADMIN) };
const chat = (content: string) => ({
  url: '/v1/chat/completions',
  body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
});

before(async () => {
  mock = await startOpenAiUpstream();
  gw = await startGateway({
    configFile: {
      name: 'gateway.yaml',
      text: [
        'upstreams:',
        '  - name: default',
        `    base_url: ${mock.baseUrl}`,
        '    max_concurrent: 1',
        '    queue_timeout_ms: 0',
        'models:',
        '  - id: gpt-4o-mini',
        '    upstream: default',
        'limits:',
        '  caller:',
        '    requests: { limit: 10, window_seconds: 60 }',
      ].join('\n'),
    },
  });
  callAs = gw.gateway.callAs;
});

after(async () => {
  await gw.close();
  await mock.close();
});

test('a 200: the usage the pipeline settled and the binding rate limit, as numbers', async () => {
  const result = await callAs(AS, chat('hello'));
  assert.equal(result.status, 200, result.body);
  assert.equal(result.code, undefined);
  assert.equal((JSON.parse(result.body) as { object: string }).object, 'chat.completion');
  const usage = (JSON.parse(result.body) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
  assert.equal(result.usage?.prompt_tokens, usage.prompt_tokens);
  assert.equal(result.usage?.completion_tokens, usage.completion_tokens);
  assert.equal(result.cacheHit, false);
  assert.equal(result.retryAfterMs, undefined);
  assert.equal(result.rate?.limit, 10);
  assert.equal(result.rate?.remaining, 9);
  assert.ok(result.rate.resetMs > 0 && result.rate.resetMs <= 60_000, `resetMs ${result.rate.resetMs}`);
  assert.match(result.requestId ?? '', /^[0-9a-f-]{36}$/);
});

test('a refusal: upstream_busy as a code, its Retry-After in ms, from the pipeline', async () => {
  mock.enqueue({ kind: 'json', delayMs: 1_500 });
  const held = callAs(AS, chat('held'));
  await waitFor('the first call at the upstream', () => mock.chatRequests().length === 2);
  const refused = await callAs(AS, chat('refused'));
  assert.equal(refused.status, 503, refused.body);
  assert.equal(refused.code, 'upstream_busy');
  assert.equal(refused.retryAfterMs, 1_000);
  assert.equal(refused.usage, undefined);
  assert.equal((await held).status, 200);
});

test("a revoked owner: refused before any request, the authenticator's code", async () => {
  const result = await callAs({ owner: 'key:gone', principal: principalSnapshot(ADMIN) }, chat('x'));
  assert.equal(result.status, 401);
  assert.equal(result.code, 'invalid_token');
  assert.equal(result.requestId, null);
});
