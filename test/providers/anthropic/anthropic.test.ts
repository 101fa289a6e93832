import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toAnthropicRequest } from '../../../src/providers/anthropic/translate-request.js';
import { fromAnthropicMessage } from '../../../src/providers/anthropic/translate-response.js';
import {
  ANTHROPIC_MOCK_ID,
  ANTHROPIC_TOOL_ID,
  startAnthropicUpstream,
  type AnthropicUpstream,
} from '../../helpers/upstreams/anthropic.js';
import { CHAT_PATH, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { readStream } from '../../helpers/sse-client.js';

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
};

describe('Anthropic translation (pure functions)', () => {
  test('system/developer to `system`, tool calls to tool_use, tool results to a user tool_result, turns merged', () => {
    const out = toAnthropicRequest(
      {
        model: 'claude-fast',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'developer', content: 'Use metric units.' },
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '18°C, sunny' },
          { role: 'user', content: 'And tomorrow?' },
        ],
        temperature: 0.2,
        top_p: 0.9,
        stop: 'END',
        tools: [WEATHER_TOOL],
        tool_choice: 'required',
        user: 'u-42',
        frequency_penalty: 0.5, // no Anthropic meaning: dropped
      },
      'claude-haiku-4-5',
    );
    assert.deepEqual(out, {
      model: 'claude-haiku-4-5',
      max_tokens: 4096,
      system: 'Be brief.\n\nUse metric units.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { location: 'Paris' } }],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: '18°C, sunny' },
            { type: 'text', text: 'And tomorrow?' },
          ],
        },
      ],
      temperature: 0.2,
      top_p: 0.9,
      stop_sequences: ['END'],
      tools: [
        { name: 'get_weather', description: 'Weather of a city', input_schema: WEATHER_TOOL.function.parameters },
      ],
      tool_choice: { type: 'any' },
      metadata: { user_id: 'u-42' },
    });
  });

  test("max_tokens: the caller's, else the configured default; tool_choice forms; n > 1 and bad arguments are 400s", () => {
    const base = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };
    assert.equal(toAnthropicRequest({ ...base, max_tokens: 77 }, 'x').max_tokens, 77);
    assert.equal(toAnthropicRequest(base, 'x', 1000).max_tokens, 1000);
    assert.deepEqual(
      toAnthropicRequest({ ...base, tool_choice: 'auto', parallel_tool_calls: false }, 'x').tool_choice,
      { type: 'auto', disable_parallel_tool_use: true },
    );
    assert.deepEqual(
      toAnthropicRequest({ ...base, tool_choice: { type: 'function', function: { name: 'f' } } }, 'x').tool_choice,
      { type: 'tool', name: 'f' },
    );
    assert.deepEqual(toAnthropicRequest({ ...base, tool_choice: 'none' }, 'x').tool_choice, { type: 'none' });
    assert.throws(
      () => toAnthropicRequest({ ...base, n: 2 }, 'x'),
      (e: { code?: string; details?: { errors?: Array<{ field: string }> } }) =>
        e.code === 'validation_failed' && e.details?.errors?.[0]?.field === 'n',
    );
    assert.throws(
      () =>
        toAnthropicRequest(
          {
            model: 'm',
            messages: [
              {
                role: 'assistant',
                tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{oops' } }],
              },
            ],
          },
          'x',
        ),
      (e: { code?: string }) => e.code === 'validation_failed',
    );
  });

  test('a message answer becomes a chat.completion: text, tool_calls, finish_reason, usage', () => {
    const translated = fromAnthropicMessage(
      {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Paris' } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 3 },
      },
      'claude-haiku-4-5',
      1_700_000_000,
    );
    assert.deepEqual(translated?.completion, {
      id: 'msg_1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'claude-haiku-4-5',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking.',
            tool_calls: [
              { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
            ],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      // As OpenAI shows it: all input (the cache reads included), the reads in its details (src/providers/usage-shapes.ts).
      usage: { prompt_tokens: 13, completion_tokens: 5, total_tokens: 18, prompt_tokens_details: { cached_tokens: 3 } },
    });
    assert.deepEqual(translated?.usage, {
      prompt_tokens: 13,
      completion_tokens: 5,
      total_tokens: 18,
      cache_read_tokens: 3,
    });
    assert.equal(fromAnthropicMessage({ type: 'error' }, 'x', 0), undefined);
  });
});

describe('chat through an Anthropic upstream (mock speaking the Messages wire format)', () => {
  let mock: AnthropicUpstream;
  let gw: TestGateway;
  const KEY = 'sk-ant-test-key-0123456789';
  const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(headers), body: JSON.stringify(body) });
  before(async () => {
    mock = await startAnthropicUpstream({ requiredKey: KEY });
    gw = await startGateway({
      env: { ANTHROPIC_TEST_KEY: KEY },
      configFile: {
        name: 'anthropic.yaml',
        text: [
          'upstreams:',
          '  - name: claude',
          '    kind: anthropic',
          `    base_url: ${mock.baseUrl}`,
          '    api_key_env: ANTHROPIC_TEST_KEY',
          '    default_max_tokens: 1024',
          'models:',
          '  - { id: claude-fast, upstream: claude, upstream_model: claude-haiku-4-5 }',
          'limits:',
          '  upstream_pause_max_seconds: 0',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  test('a JSON answer: the upstream got a Messages request with its headers; the caller a chat.completion', async () => {
    const answer = await chat({
      model: 'claude-fast',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.object, 'chat.completion');
    assert.equal(answer.json.id, ANTHROPIC_MOCK_ID);
    const choice = (answer.json.choices as Array<{ message: { content: string }; finish_reason: string }>)[0];
    assert.equal(choice?.message.content, 'Hello from Claude');
    assert.equal(choice?.finish_reason, 'stop');
    assert.deepEqual(answer.json.usage, { prompt_tokens: 2095, completion_tokens: 503, total_tokens: 2598 });
    const [sent] = mock.messageRequests();
    assert.equal(sent?.headers['x-api-key'], KEY);
    assert.equal(sent?.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent?.headers.authorization, undefined, 'the admin token never goes upstream');
    // The system prompt and the last turn marked as prompt-cache breakpoints (the model's prompt_cache: auto).
    assert.deepEqual(sent?.body, {
      model: 'claude-haiku-4-5',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
      max_tokens: 1024,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    });
  });

  test('a stream: role chunk, text deltas, finish reason, usage chunk when asked, then [DONE]', async () => {
    const answer = await readStream(
      `${gw.url}${CHAT_PATH}`,
      JSON.stringify({
        model: 'claude-fast',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      authHeaders(),
    );
    assert.equal(answer.status, 200);
    assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
    const chunks = answer.text
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .map(
        (f) =>
          JSON.parse(f.slice(6)) as {
            choices: Array<{ delta: { role?: string; content?: string }; finish_reason: string | null }>;
            usage?: unknown;
          },
      );
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello from Claude');
    assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason ?? null).filter(Boolean), ['stop']);
    assert.deepEqual(chunks.at(-1)?.usage, { prompt_tokens: 25, completion_tokens: 15, total_tokens: 40 });
    assert.equal(mock.messageRequests()[0]?.body?.stream, true);
  });

  test('a stream whose caller did not ask for usage shows none, and its usage is still recorded (limits, cost)', async () => {
    const answer = await readStream(
      `${gw.url}${CHAT_PATH}`,
      JSON.stringify({ model: 'claude-fast', stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
      authHeaders(),
    );
    assert.equal(answer.status, 200);
    assert.ok(!answer.text.includes('"usage"'), 'no usage chunk shown');
    const line = gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.request_id === answer.headers['x-request-id']);
    assert.equal(line?.prompt_tokens, 25);
    assert.equal(line?.completion_tokens, 15);
  });

  test('tool calls round-trip: non-streamed and streamed (argument deltas in order)', async () => {
    const json = await chat({
      model: 'claude-fast',
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const message = (
      json.json.choices as Array<{
        message: { tool_calls: Array<{ id: string; function: { name: string; arguments: string } }> };
        finish_reason: string;
      }>
    )[0];
    assert.equal(message?.finish_reason, 'tool_calls');
    assert.deepEqual(message?.message.tool_calls?.[0], {
      id: ANTHROPIC_TOOL_ID,
      type: 'function',
      function: { name: 'get_weather', arguments: '{"location":"Paris"}' },
    });

    const stream = await readStream(
      `${gw.url}${CHAT_PATH}`,
      JSON.stringify({
        model: 'claude-fast',
        stream: true,
        tools: [WEATHER_TOOL],
        messages: [{ role: 'user', content: 'Weather?' }],
      }),
      authHeaders(),
    );
    const deltas = stream.text
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .flatMap(
        (f) =>
          (
            JSON.parse(f.slice(6)) as {
              choices: Array<{
                delta: {
                  tool_calls?: Array<{ index: number; id?: string; function: { name?: string; arguments?: string } }>;
                };
              }>;
            }
          ).choices[0]?.delta.tool_calls ?? [],
      );
    assert.equal(deltas[0]?.id, ANTHROPIC_TOOL_ID);
    assert.equal(deltas[0]?.function.name, 'get_weather');
    assert.equal(deltas.map((d) => d.function.arguments ?? '').join(''), '{"location": "Paris"}');
    assert.ok(deltas.every((d) => d.index === 0));
    assert.ok(stream.text.endsWith('data: [DONE]\n\n'));
  });

  test('errors stay in our model: Anthropic 400/429/529 and a refused caller key, with the provider type in details', async () => {
    mock.enqueue({
      kind: 'error',
      status: 400,
      type: 'invalid_request_error',
      message: 'messages: roles must alternate',
    });
    const bad = await chat({ model: 'claude-fast', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, 'upstream_rejected_request');
    assert.equal(bad.json.details?.upstream_type, 'invalid_request_error');
    assert.equal(bad.json.details?.upstream_message, 'messages: roles must alternate');

    mock.enqueue({
      kind: 'error',
      status: 429,
      type: 'rate_limit_error',
      message: 'slow down',
      headers: { 'retry-after': '9' },
    });
    const limited = await chat({ model: 'claude-fast', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers['retry-after'], '9');

    mock.enqueue({ kind: 'error', status: 529, type: 'overloaded_error', message: 'Overloaded' });
    const overloaded = await chat({ model: 'claude-fast', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(overloaded.status, 502);
    assert.equal(overloaded.json.code, 'upstream_error');

    const wrongKey = await chat(
      { model: 'claude-fast', messages: [{ role: 'user', content: 'x' }] },
      { 'x-upstream-key': 'sk-ant-wrong-key-000' },
    );
    assert.equal(wrongKey.status, 401);
    assert.equal(wrongKey.json.code, 'upstream_key_rejected');
    assert.equal(
      mock.messageRequests().at(-1)?.headers['x-api-key'],
      'sk-ant-wrong-key-000',
      'X-Upstream-Key replaced the key',
    );
    assert.ok(!wrongKey.text.includes('sk-ant-wrong-key-000'));
  });

  test('a stream error event or a stream cut before message_stop ends with one error event and never [DONE]', async () => {
    mock.enqueue({ kind: 'stream', errorAfter: 1 });
    const failed = await readStream(
      `${gw.url}${CHAT_PATH}`,
      JSON.stringify({ model: 'claude-fast', stream: true, messages: [{ role: 'user', content: 'x' }] }),
      authHeaders(),
    );
    assert.equal(failed.status, 200);
    assert.ok(!failed.text.includes('[DONE]'));
    assert.match(
      failed.text,
      /event: error\ndata: \{"code":"upstream_stream_error".*"upstream_type":"overloaded_error"/,
    );

    mock.enqueue({ kind: 'stream', cutBeforeStop: true });
    const cut = await readStream(
      `${gw.url}${CHAT_PATH}`,
      JSON.stringify({ model: 'claude-fast', stream: true, messages: [{ role: 'user', content: 'x' }] }),
      authHeaders(),
    );
    assert.ok(!cut.text.includes('[DONE]'));
    assert.match(cut.text, /event: error\ndata: \{"code":"upstream_stream_truncated"/);
  });

  test('the models route and health use the Anthropic model list (no tokens spent)', async () => {
    const health = await call(`${gw.url}/v1/?route=health`);
    const upstreams = health.json.checks as { upstreams: Record<string, { status: string }> };
    assert.equal(upstreams.upstreams.claude?.status, 'ok');
    assert.equal(mock.messageRequests().length, 0);
    assert.ok(mock.requests.some((r) => r.url === '/v1/models' && r.headers['x-api-key'] === KEY));
  });
});
