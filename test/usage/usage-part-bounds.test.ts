/**
 * Issue 41: a usage part larger than what it is a part of (cache reads over the prompt, reasoning over the
 * completion, a total under prompt + completion), and native Gemini's `usageMetadata` out of range (`1e300`, `-5`,
 * `"x"`): the answer the caller gets shows the very figures the usage record stores, and the record is flagged
 * (`usage_anomaly`, the kind `part_too_large` in the access line). The real gateway in front of a real upstream.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { dataFrames, readStream } from '../helpers/sse-client.js';
import { startRecordingServer, type RecordingServer } from '../helpers/upstreams/recording-server.js';
import { waitForValue } from '../helpers/wait.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../src/store/store-contract.js';
import { MAX_USAGE_TOKENS } from '../../src/providers/usage-figures.js';

const KEY = 'sk-usage-part-bounds-upstream-0123456789';

/** What the upstream answers next: a JSON text, or the data of each SSE event (a `name:` prefix names the event). */
let nextAnswer: { json: string } | { events: string[] } = { json: '{}' };

function answer(res: ServerResponse): void {
  const next = nextAnswer;
  if ('json' in next) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(next.json);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of next.events) {
    const named = /^([a-z_.]+): (.*)$/s.exec(event);
    res.write(named ? `event: ${named[1]}\ndata: ${named[2]}\n\n` : `data: ${event}\n\n`);
  }
  res.end();
}

const chatUsage = (usage: string) =>
  `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":${usage}}`;
const chunk = (rest: string) => `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",${rest}}`;
const gemini = (usage: string, text = 'Hi') =>
  `{"candidates":[{"content":{"role":"model","parts":[{"text":"${text}"}]},"finishReason":"STOP","index":0}],"usageMetadata":${usage},"modelVersion":"m"}`;

describe('usage parts and native Gemini figures: the answer and the record agree, the record is flagged', () => {
  let up: RecordingServer;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  before(async () => {
    up = await startRecordingServer((_req, res) => answer(res));
    gw = await startGateway({
      env: { PARTS_KEY: KEY },
      configFile: {
        name: 'parts.yaml',
        text: [
          'circuit_breaker: { failure_threshold: 1000 }',
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${up.origin}/openai/v1", api_key_env: PARTS_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${up.origin}/anthropic/v1", api_key_env: PARTS_KEY }`,
          `  - { name: gem, kind: gemini, base_url: "${up.origin}/gemini/v1beta", api_key_env: PARTS_KEY }`,
          'models:',
          '  - { id: gpt, upstream: oai, upstream_model: gpt-4o-mini }',
          '  - { id: claude, upstream: claude, upstream_model: claude-haiku-4-5 }',
          '  - { id: gem, upstream: gem, upstream_model: gemini-2.0-flash }',
        ].join('\n'),
      },
    });
    usage = new SqliteUsageStore(gw.store.db);
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  const recordOf = async (requestId: unknown): Promise<UsageRecord> =>
    (await waitForValue(
      `the usage record of ${String(requestId)}`,
      async () => (await usage.recent(1_000, false)).find((r) => r.requestId === requestId),
      (r) => r !== undefined,
      5_000,
    )) as UsageRecord;
  /** The kinds the access line of the request names. */
  const kindsOf = (requestId: unknown): unknown =>
    gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.request_id === requestId)?.usage_anomaly;
  const chatBody = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ model: 'gpt', messages: [{ role: 'user', content: 'hi' }], ...extra });

  test('chat JSON: cached 500 of a prompt of 7, reasoning 9 of a completion of 3, a total of 2', async () => {
    nextAnswer = {
      json: chatUsage(
        '{"prompt_tokens":7,"completion_tokens":3,"total_tokens":2,"prompt_tokens_details":{"cached_tokens":500},"completion_tokens_details":{"reasoning_tokens":9}}',
      ),
    };
    const got = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody(),
    });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json.usage, {
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      prompt_tokens_details: { cached_tokens: 7 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
    const record = await recordOf(got.headers['x-request-id']);
    assert.deepEqual(
      [record.promptTokens, record.completionTokens, record.cacheReadTokens, record.reasoningTokens],
      [7, 3, 7, 3],
      'the record counts what the answer shows',
    );
    assert.equal(record.usageAnomaly, true, 'flagged');
    assert.deepEqual(kindsOf(got.headers['x-request-id']), ['part_too_large']);
  });

  test('chat stream: the usage chunk shows the bounded parts, as recorded', async () => {
    nextAnswer = {
      events: [
        chunk('"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]'),
        chunk('"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]'),
        chunk(
          '"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":1e300},"completion_tokens_details":{"reasoning_tokens":40}}',
        ),
        '[DONE]',
      ],
    };
    const streamed = await readStream(
      `${gw.url}/v1/chat/completions`,
      chatBody({ stream: true, stream_options: { include_usage: true } }),
      authHeaders(),
    );
    assert.equal(streamed.status, 200, streamed.text);
    const last = dataFrames(streamed.text)
      .filter((d) => d !== '[DONE]')
      .at(-1) as string;
    assert.deepEqual((JSON.parse(last) as { usage: unknown }).usage, {
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      prompt_tokens_details: { cached_tokens: 7 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
    const record = await recordOf(streamed.headers['x-request-id']);
    assert.deepEqual([record.cacheReadTokens, record.reasoningTokens, record.usageAnomaly], [7, 3, true]);
    assert.deepEqual(kindsOf(streamed.headers['x-request-id']), ['too_large', 'part_too_large']);
  });

  test('the Responses API forwarded natively: cached input over the input', async () => {
    nextAnswer = {
      json: `{"id":"resp_1","object":"response","created_at":1,"model":"m","status":"completed","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":70},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":10}}`,
    };
    const got = await call(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'gpt', input: 'hi', tools: [{ type: 'web_search' }] }),
    });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual((got.json.usage as { input_tokens_details: unknown }).input_tokens_details, { cached_tokens: 7 });
    const record = await recordOf(got.headers['x-request-id']);
    assert.deepEqual([record.promptTokens, record.cacheReadTokens, record.usageAnomaly], [7, 7, true]);
  });

  test('Messages forwarded natively: 1-hour cache writes over the writes', async () => {
    nextAnswer = {
      json: `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":10,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":900},"output_tokens":3}}`,
    };
    const got = await call(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(got.status, 200, got.text);
    const shown = got.json.usage as { cache_creation: { ephemeral_1h_input_tokens: number } };
    assert.equal(shown.cache_creation.ephemeral_1h_input_tokens, 10, 'no more than the writes');
    const record = await recordOf(got.headers['x-request-id']);
    assert.deepEqual([record.promptTokens, record.cacheWriteTokens, record.usageAnomaly], [15, 10, true]);
  });

  const geminiPath = (action: string) => `${gw.url}/v1beta/models/gem:${action}`;
  const geminiHeaders = { 'x-goog-api-key': ADMIN_TOKEN, 'content-type': 'application/json' };
  const geminiBody = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
  const hostile =
    '{"promptTokenCount":1e300,"candidatesTokenCount":-5,"thoughtsTokenCount":"x","cachedContentTokenCount":12,"totalTokenCount":-1,"promptTokensDetails":[{"modality":"TEXT","tokenCount":1e400}]}';
  /** Every figure of a usageMetadata, and that they are what the record counts. */
  function assertAgrees(metadata: Record<string, unknown>, record: UsageRecord): void {
    for (const [name, value] of Object.entries(metadata))
      if (name.endsWith('Count'))
        assert.ok(Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 2 * MAX_USAGE_TOKENS, name);
    assert.deepEqual(metadata, {
      promptTokenCount: MAX_USAGE_TOKENS,
      candidatesTokenCount: 0,
      thoughtsTokenCount: 0,
      cachedContentTokenCount: 12,
      totalTokenCount: MAX_USAGE_TOKENS,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: MAX_USAGE_TOKENS }],
    });
    assert.deepEqual(
      [record.promptTokens, record.completionTokens, record.cacheReadTokens, record.reasoningTokens],
      [MAX_USAGE_TOKENS, 0, 12, 0],
    );
    assert.equal(record.usageAnomaly, true);
  }

  test('native Gemini JSON: usageMetadata of 1e300, -5, "x", -1, 1e400', async () => {
    nextAnswer = { json: gemini(hostile) };
    const got = await call(geminiPath('generateContent'), { method: 'POST', headers: geminiHeaders, body: geminiBody });
    assert.equal(got.status, 200, got.text);
    assert.ok(!/e\+?300|-5|"x"|-1\b|Infinity/.test(got.text), got.text);
    assertAgrees(got.json.usageMetadata as Record<string, unknown>, await recordOf(got.headers['x-request-id']));
  });

  test('native Gemini stream: the same figures in an event', async () => {
    nextAnswer = { events: [gemini(hostile)] };
    const streamed = await readStream(`${geminiPath('streamGenerateContent')}?alt=sse`, geminiBody, geminiHeaders);
    assert.equal(streamed.status, 200, streamed.text);
    assert.ok(!/e\+?300|-5|"x"|Infinity/.test(streamed.text), streamed.text);
    const event = JSON.parse(dataFrames(streamed.text)[0] as string) as { usageMetadata: Record<string, unknown> };
    assertAgrees(event.usageMetadata, await recordOf(streamed.headers['x-request-id']));
  });

  test('sane figures pass through as the upstream wrote them, unflagged', async () => {
    const sane = '{"promptTokenCount":7,"candidatesTokenCount":3,"totalTokenCount":10}';
    nextAnswer = { json: gemini(sane) };
    const got = await call(geminiPath('generateContent'), { method: 'POST', headers: geminiHeaders, body: geminiBody });
    assert.equal(got.text, gemini(sane), 'byte for byte');
    assert.equal((await recordOf(got.headers['x-request-id'])).usageAnomaly, false);
    nextAnswer = { json: chatUsage('{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}') };
    const chat = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody(),
    });
    assert.equal(chat.text, chatUsage('{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}'));
    assert.equal((await recordOf(chat.headers['x-request-id'])).usageAnomaly, false);
  });
});
