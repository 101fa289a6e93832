import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { readStream } from '../../helpers/sse-client.js';
import { waitFor } from '../../helpers/wait.js';

const LIMITS_YAML = [
  'limits:',
  '  caller:',
  '    requests: { limit: 3, window_seconds: 60 }',
  '  models:',
  '    tiny-model:',
  '      tokens: { limit: 500, window_seconds: 60 }',
  '    one-at-a-time:',
  '      concurrent: 1',
].join('\n');

describe('rate limits (embedded SQLite store)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  /** How far ahead of now a limit's GCRA time is in the store (0: a full bucket). */
  const tatAheadMs = (key: string): number => {
    const row = gw.store.db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(key) as
      { tat_ms: number } | undefined;
    return Math.max(0, (row?.tat_ms ?? 0) - Date.now());
  };
  const fresh = async (yaml = LIMITS_YAML) => {
    await gw?.close();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: { name: 'limits.yaml', text: yaml },
    });
  };
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(async () => {
    mock.reset();
    await fresh();
  });

  test('N requests per window pass with RateLimit-* headers counting down; the next is a 429 naming the limit', async () => {
    for (const remaining of ['2', '1', '0']) {
      const answer = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['ratelimit-limit'], '3');
      assert.equal(answer.headers['ratelimit-remaining'], remaining);
      assert.equal(answer.headers['ratelimit-policy'], '3;w=60;comment="requests per caller"');
      assert.ok(Number(answer.headers['ratelimit-reset']) > 0);
    }
    const refused = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    assert.equal(refused.status, 429);
    assert.equal(refused.json.code, 'rate_limited');
    assert.deepEqual(
      {
        limit: refused.json.details?.limit,
        scope: refused.json.details?.scope,
        max: refused.json.details?.max,
        window: refused.json.details?.window_seconds,
      },
      { limit: 'requests', scope: 'caller', max: 3, window: 60 },
    );
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter >= 19 && retryAfter <= 20, `Retry-After ${retryAfter}: one request every 20 s refills`);
    assert.equal(refused.headers['ratelimit-remaining'], '0');
    assert.equal(mock.chatRequests().length, 3, 'the refused call never reached the upstream');
  });

  test('streams carry the headers too, and a refusal before a stream is a JSON 429', async () => {
    mock.defaultBehavior = { kind: 'stream' };
    const first = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    assert.equal(first.headers['ratelimit-remaining'], '2');
    assert.ok(first.text.endsWith('data: [DONE]\n\n'));
    await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    const refused = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    assert.equal(refused.status, 429);
    assert.match(String(refused.headers['content-type']), /^application\/json/);
  });

  test('a token limit admits by estimate (prompt + max_tokens); a call that can never fit is a 400 saying why, not a 429', async () => {
    const tooBig = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'tiny-model', max_tokens: 600 }),
    });
    assert.equal(tooBig.status, 400);
    assert.equal(tooBig.json.code, 'request_exceeds_limit');
    // "Hello?" is 2 tokens + 4 for its message: 6 + 600.
    assert.deepEqual(tooBig.json.details, {
      limit: 'tokens',
      scope: 'model',
      scope_id: 'tiny-model',
      max: 500,
      window_seconds: 60,
      estimated_tokens: 606,
      estimated_prompt_tokens: 6,
      max_tokens: 600,
    });
    assert.equal(tooBig.headers['retry-after'], undefined, 'waiting cannot help: no Retry-After');
    assert.equal(mock.chatRequests().length, 0);
    const fits = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'tiny-model', max_tokens: 200 }),
    });
    assert.equal(fits.status, 200);
    assert.match(String(fits.headers['ratelimit-policy']), /500;w=60;comment="tokens per model"/);
    // A prompt that alone is larger than the limit cannot fit either, max_tokens or not.
    const longPrompt = chatBody({ model: 'tiny-model', messages: [{ role: 'user', content: 'x'.repeat(2400) }] });
    const refused = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: longPrompt });
    assert.deepEqual(
      [
        refused.status,
        refused.json.code,
        refused.json.details?.estimated_prompt_tokens,
        refused.json.details?.max_tokens,
      ],
      [400, 'request_exceeds_limit', 604, null],
    );
  });

  test('without max_tokens, a token limit below the default estimate (prompt + 1024) admits the call and corrects it', async () => {
    await fresh('limits:\n  models:\n    tiny-model:\n      tokens: { limit: 500, window_seconds: 3600 }\n');
    // Room for the prompt is enough: the 1024 of the estimate are our guess, not the caller's demand. The window is
    // overdrawn while the call runs and corrected to the real usage (a handful of tokens) when it ends.
    for (let i = 0; i < 3; i++) {
      const answer = await call(`${gw.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: chatBody({ model: 'tiny-model' }),
      });
      assert.equal(answer.status, 200, `call ${i + 1}: ${answer.text}`);
      await waitFor(
        'the correction to the real usage is written',
        () => tatAheadMs('tokens:model:tiny-model') < 3_600_000 / 2,
        2_000,
      );
    }
    assert.equal(mock.chatRequests().length, 3);
    assert.ok(tatAheadMs('tokens:model:tiny-model') > 0, 'the real usage stays charged');
  });

  test('the estimate is corrected with the real usage, so a cheap answer frees the rest of its reservation', async () => {
    await fresh('limits:\n  models:\n    tiny-model:\n      tokens: { limit: 500, window_seconds: 3600 }\n');
    // Each call reserves ~2 + 4 + 300 tokens; the mock reports a handful of tokens used.
    for (let i = 0; i < 4; i++) {
      const answer = await call(`${gw.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: chatBody({ model: 'tiny-model', max_tokens: 300 }),
      });
      assert.equal(
        answer.status,
        200,
        `call ${i + 1}: without the correction the second call would already be refused`,
      );
      // The correction is written after the answer: the reservation (306 tokens, ~2,200 s of the window) shrinks to
      // the handful of tokens the mock reports.
      await waitFor(
        'the correction to the real usage is written',
        () => tatAheadMs('tokens:model:tiny-model') < 3_600_000 / 2,
        2_000,
      );
    }
  });

  test('a limit on a model applies to that model only', async () => {
    await fresh('limits:\n  models:\n    limited:\n      requests: { limit: 1, window_seconds: 60 }\n');
    assert.equal(
      (
        await call(`${gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: authHeaders(),
          body: chatBody({ model: 'limited' }),
        })
      ).status,
      200,
    );
    assert.equal(
      (
        await call(`${gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: authHeaders(),
          body: chatBody({ model: 'limited' }),
        })
      ).status,
      429,
    );
    const other = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'gpt-4o-mini' }),
    });
    assert.equal(other.status, 200);
    assert.equal(other.headers['ratelimit-limit'], undefined, 'no limit applies to this model');
  });

  test("an alias shares its model's limits: the model id and its alias count against one budget", async () => {
    await fresh(
      'models:\n  - { id: limited, upstream: default, upstream_model: gpt-4o-mini, aliases: [limited-latest] }\nlimits:\n  models:\n    limited:\n      requests: { limit: 2, window_seconds: 60 }\n',
    );
    const viaId = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'limited' }),
    });
    assert.equal(viaId.headers['ratelimit-remaining'], '1');
    const viaAlias = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'limited-latest' }),
    });
    assert.equal(viaAlias.status, 200);
    assert.equal(viaAlias.headers['ratelimit-remaining'], '0');
    const refused = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'limited-latest' }),
    });
    assert.equal(refused.status, 429);
    assert.deepEqual([refused.json.details?.scope, refused.json.details?.scope_id], ['model', 'limited']);
  });

  test('concurrent requests in flight: the second is refused while the first runs, and allowed after', async () => {
    mock.enqueue({ kind: 'json', delayMs: 300 });
    const first = call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'one-at-a-time' }),
    });
    while (mock.chatRequests().length === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'one-at-a-time' }),
    });
    assert.equal(second.status, 429);
    assert.equal(second.json.details?.limit, 'concurrent requests');
    assert.equal(second.json.details?.in_flight, 1);
    assert.equal((await first).status, 200);
    const third = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'one-at-a-time' }),
    });
    assert.equal(third.status, 200, 'the slot was released when the first call ended');
  });

  test('a client that hangs up releases its concurrency slot', async () => {
    mock.enqueue({ kind: 'hang' });
    const aborter = new AbortController();
    const pending = request(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'one-at-a-time' }),
      signal: aborter.signal,
    });
    while (mock.chatRequests().length === 0) await new Promise((r) => setTimeout(r, 5));
    aborter.abort();
    await assert.rejects(pending);
    const leases = () => (gw.store.db.prepare('SELECT COUNT(*) AS n FROM concurrency_leases').get() as { n: number }).n;
    await waitFor('the concurrency lease is given back', () => leases() === 0, 2_000);
    const next = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'one-at-a-time' }),
    });
    assert.equal(next.status, 200);
  });

  test('health reports the limit store', async () => {
    const health = await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() });
    assert.deepEqual((health.json.checks as Record<string, unknown>).rate_limits, { status: 'ok', store: 'sqlite' });
  });

  test('without limits configured there are no RateLimit headers', async () => {
    await fresh('models: []\n');
    const answer = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['ratelimit-limit'], undefined);
    assert.equal((answer.json as Record<string, unknown>).object, 'chat.completion');
  });
});
