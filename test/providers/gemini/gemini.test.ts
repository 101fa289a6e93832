import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toGeminiRequest } from '../../../src/providers/gemini/translate-request.js';
import { CHAT_PATH, authHeaders, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { readStream } from '../../helpers/sse-client.js';

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { location: { type: 'string' } } },
  },
};

describe('Gemini translation (pure)', () => {
  test('roles and parts, systemInstruction, generationConfig, function calls both ways, toolConfig', () => {
    const out = toGeminiRequest({
      model: 'gemini-2.0-flash',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":18}' },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      temperature: 0.3,
      top_p: 0.8,
      max_tokens: 100,
      stop: ['END'],
      tools: [WEATHER_TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    assert.deepEqual(out, {
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { location: 'Paris' } } }] },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { temp_c: 18 } } },
            { functionResponse: { name: 'get_weather', response: { content: 'sunny' } } },
          ],
        },
      ],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { temperature: 0.3, topP: 0.8, maxOutputTokens: 100, stopSequences: ['END'] },
      tools: [
        {
          functionDeclarations: [
            {
              name: 'get_weather',
              description: 'Weather of a city',
              parametersJsonSchema: WEATHER_TOOL.function.parameters,
            },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    });
    assert.throws(
      () => toGeminiRequest({ model: 'g', messages: [{ role: 'tool', tool_call_id: 'nope', content: 'x' }] }),
      (e: { code?: string }) => e.code === 'validation_failed',
    );
  });
});

describe('chat through a Gemini upstream (mock speaking the Gemini wire format)', () => {
  const KEY = 'gemini-test-key-0123456789';
  const fx = useGateway({ upstream: 'gemini', key: KEY });
  const chat = (body: Record<string, unknown>) =>
    call(`${fx.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: JSON.stringify(body) });

  test('JSON: the key in x-goog-api-key (never in the URL), a chat.completion back with usage', async () => {
    const answer = await chat({ model: 'flash', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.status, 200, answer.text);
    const choice = (answer.json.choices as Array<{ message: { content: string }; finish_reason: string }>)[0];
    assert.equal(choice?.message.content, 'Hello from Gemini');
    assert.equal(choice?.finish_reason, 'stop');
    assert.deepEqual(answer.json.usage, { prompt_tokens: 8, completion_tokens: 6, total_tokens: 14 });
    const [sent] = fx.mock.generateRequests();
    assert.equal(sent?.url, '/v1beta/models/gemini-2.0-flash:generateContent');
    assert.equal(sent?.headers['x-goog-api-key'], KEY);
    assert.ok(!sent?.url.includes('key='));
    assert.deepEqual(sent?.body, { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
  });

  test('a stream (no end marker upstream) becomes chunks ending in [DONE]; a function call streams as a tool call', async () => {
    const text = await readStream(
      `${fx.gw.url}${CHAT_PATH}`,
      JSON.stringify({
        model: 'flash',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      authHeaders(),
    );
    assert.equal(text.status, 200);
    assert.ok(text.text.endsWith('data: [DONE]\n\n'));
    const chunks = text.text
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .map(
        (f) =>
          JSON.parse(f.slice(6)) as {
            choices: Array<{ delta: { content?: string }; finish_reason: string | null }>;
            usage?: unknown;
          },
      );
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello from Gemini');
    assert.deepEqual(chunks.at(-1)?.usage, { prompt_tokens: 8, completion_tokens: 6, total_tokens: 14 });
    assert.equal(fx.mock.generateRequests()[0]?.url, '/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');

    const tools = await readStream(
      `${fx.gw.url}${CHAT_PATH}`,
      JSON.stringify({
        model: 'flash',
        stream: true,
        tools: [WEATHER_TOOL],
        messages: [{ role: 'user', content: 'Weather?' }],
      }),
      authHeaders(),
    );
    const calls = tools.text
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .flatMap((f) => {
        const choice = (
          JSON.parse(f.slice(6)) as {
            choices: Array<{
              delta: { tool_calls?: Array<{ function: { name: string; arguments: string } }> };
              finish_reason: string | null;
            }>;
          }
        ).choices[0];
        return [
          ...(choice?.delta.tool_calls ?? []).map((c) => c.function),
          ...(choice?.finish_reason ? [{ name: `finish:${choice.finish_reason}`, arguments: '' }] : []),
        ];
      });
    assert.deepEqual(calls, [
      { name: 'get_weather', arguments: '{"location":"Paris"}' },
      { name: 'finish:tool_calls', arguments: '' },
    ]);
  });

  test('a stream whose caller did not ask for usage shows none, and its usage is still recorded (limits, cost)', async () => {
    const answer = await readStream(
      `${fx.gw.url}${CHAT_PATH}`,
      JSON.stringify({ model: 'flash', stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
      authHeaders(),
    );
    assert.equal(answer.status, 200);
    assert.ok(!answer.text.includes('"usage"'), 'no usage chunk shown');
    const line = fx.gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.request_id === answer.headers['x-request-id']);
    assert.equal(line?.prompt_tokens, 8);
    assert.equal(line?.completion_tokens, 6);
  });

  test('a safety block is a clear 400; a stream without a finished candidate is truncated; Google errors keep their message', async () => {
    fx.mock.enqueue({ kind: 'blocked', reason: 'SAFETY' });
    const blocked = await chat({ model: 'flash', messages: [{ role: 'user', content: 'something bad' }] });
    assert.equal(blocked.status, 400);
    assert.equal(blocked.json.code, 'upstream_content_blocked');
    assert.equal(blocked.json.details?.reason, 'SAFETY');

    fx.mock.enqueue({ kind: 'stream', cutBeforeFinish: true });
    const cut = await readStream(
      `${fx.gw.url}${CHAT_PATH}`,
      JSON.stringify({ model: 'flash', stream: true, messages: [{ role: 'user', content: 'x' }] }),
      authHeaders(),
    );
    assert.ok(!cut.text.includes('[DONE]'));
    assert.match(cut.text, /event: error\ndata: \{"code":"upstream_stream_truncated"/);

    fx.mock.enqueue({
      kind: 'error',
      status: 400,
      grpcStatus: 'INVALID_ARGUMENT',
      message: 'Invalid JSON payload received.',
    });
    const bad = await chat({ model: 'flash', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, 'upstream_rejected_request');
    assert.equal(bad.json.details?.upstream_message, 'Invalid JSON payload received.');
  });

  test('health lists Gemini models without spending tokens', async () => {
    const health = await call(`${fx.gw.url}/v1/?route=health`);
    assert.equal(
      (health.json.checks as { upstreams: Record<string, { status: string }> }).upstreams.google?.status,
      'ok',
    );
    assert.equal(fx.mock.generateRequests().length, 0);
  });
});
