import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { Dispatcher } from 'undici';
import { MOCK_CONTENT, MOCK_STREAM_ERROR, startOpenAiUpstream } from '../helpers/upstreams/openai.js';
import type { OpenAiUpstream, RecordedRequest } from '../helpers/upstreams/openai.js';

/** A private dispatcher per test so keep-alive sockets never leak between tests. */
async function withMock(
  fn: (mock: OpenAiUpstream, dispatcher: Dispatcher) => Promise<void>,
  options?: { requiredKey?: string },
): Promise<void> {
  const mock = await startOpenAiUpstream(options);
  const dispatcher = new Agent();
  try {
    await fn(mock, dispatcher);
  } finally {
    await mock.close();
    await dispatcher.close();
  }
}

function chat(
  mock: OpenAiUpstream,
  dispatcher: Dispatcher,
  body: Record<string, unknown>,
  extra: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Dispatcher.ResponseData> {
  return request(`${mock.baseUrl}/chat/completions`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', ...extra.headers },
    body: JSON.stringify(body),
    signal: extra.signal,
  });
}

const hello = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi there' }] };

/** Parses `data: ...` events out of an SSE text. */
function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => frame.slice('data: '.length));
}

async function waitForRequest(mock: OpenAiUpstream, n = 1): Promise<RecordedRequest> {
  for (let i = 0; i < 200; i += 1) {
    const r = mock.requests[n - 1];
    if (r) return r;
    await delay(5);
  }
  throw new Error('request never arrived');
}

void test('default json answers a chat.completion echoing the model, and records the request', async () => {
  await withMock(async (mock, dispatcher) => {
    assert.match(mock.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const res = await chat(mock, dispatcher, hello, { headers: { 'x-custom': 'yes' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    const body = (await res.body.json()) as {
      object: string;
      model: string;
      id: string;
      choices: Array<{ message: { role: string; content: string }; finish_reason: string; logprobs: null }>;
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    };
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.model, 'gpt-4o-mini');
    assert.match(body.id, /^chatcmpl-/);
    assert.deepEqual(body.choices[0]?.message, { role: 'assistant', content: MOCK_CONTENT });
    assert.equal(body.choices[0]?.finish_reason, 'stop');
    assert.equal(body.choices[0]?.logprobs, null);
    assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);

    const [recorded] = mock.chatRequests();
    assert.ok(recorded);
    assert.equal(recorded.method, 'POST');
    assert.equal(recorded.path, '/v1/chat/completions');
    assert.equal(recorded.headers['x-custom'], 'yes');
    assert.ok(recorded.rawHeaders.includes('x-custom'));
    assert.deepEqual(recorded.json, hello);
    assert.equal(await recorded.aborted, false);
  });
});

void test('json with tools answers a tool call', async () => {
  await withMock(async (mock, dispatcher) => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const res = await chat(mock, dispatcher, { ...hello, tools });
    const body = (await res.body.json()) as {
      choices: Array<{
        message: { content: null; tool_calls: Array<{ function: { name: string; arguments: string } }> };
        finish_reason: string;
      }>;
    };
    const choice = body.choices[0];
    assert.equal(choice?.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    assert.deepEqual(choice.message.tool_calls[0]?.function, {
      name: 'get_weather',
      arguments: '{"location":"Paris"}',
    });
  });
});

void test('stream content assembles, includes usage when asked, and ends with [DONE]', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.enqueue({ kind: 'stream', content: ['Hel', 'lo', '!'], delayMs: 5 });
    const res = await chat(mock, dispatcher, { ...hello, stream: true, stream_options: { include_usage: true } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
    const text = await res.body.text();
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    const events = sseData(text);
    assert.equal(events.pop(), '[DONE]');
    const chunks = events.map(
      (e) =>
        JSON.parse(e) as {
          object: string;
          choices: Array<{ delta: { content?: string }; finish_reason: string | null }>;
          usage?: { total_tokens: number } | null;
        },
    );
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
    const assembled = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.equal(assembled, 'Hello!');
    assert.equal(chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
    const usageChunk = chunks.at(-1);
    assert.deepEqual(usageChunk?.choices, []);
    assert.ok((usageChunk?.usage?.total_tokens ?? 0) > 0);
  });
});

void test('stream with raw chunks is byte exact', async () => {
  await withMock(async (mock, dispatcher) => {
    const chunks = [': comment\r\n\r\n', 'data: {"a":1}\r\n\r\n', 'data: [DO', 'NE]\n\n'];
    mock.enqueue({ kind: 'stream', chunks });
    const res = await chat(mock, dispatcher, { ...hello, stream: true });
    assert.equal(await res.body.text(), chunks.join(''));
  });
});

void test('stream with tools streams a tool call', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.defaultBehavior = { kind: 'stream' };
    const tools = [{ type: 'function', function: { name: 'get_weather' } }];
    const res = await chat(mock, dispatcher, { ...hello, stream: true, tools });
    const events = sseData(await res.body.text());
    assert.equal(events.pop(), '[DONE]');
    type ToolDelta = { tool_calls?: Array<{ id?: string; function: { name?: string; arguments: string } }> };
    const chunks = events.map(
      (e) => JSON.parse(e) as { choices: Array<{ delta: ToolDelta; finish_reason: string | null }> },
    );
    assert.equal(chunks[0]?.choices[0]?.delta.tool_calls?.[0]?.function.name, 'get_weather');
    const args = chunks.map((c) => c.choices[0]?.delta.tool_calls?.[0]?.function.arguments ?? '').join('');
    assert.equal(args, '{"location":"Paris"}');
    assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'tool_calls');
  });
});

void test('error 429 carries retry-after and the OpenAI error shape', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.enqueue({ kind: 'error', status: 429 });
    const res = await chat(mock, dispatcher, hello);
    assert.equal(res.statusCode, 429);
    assert.equal(res.headers['retry-after'], '1');
    const body = (await res.body.json()) as { error: { message: string; type: string; param: null; code: string } };
    assert.equal(body.error.code, 'rate_limit_exceeded');
    assert.equal(body.error.param, null);
    assert.equal(typeof body.error.message, 'string');

    // the queue is consumed: the next request gets the default behavior
    const next = await chat(mock, dispatcher, hello);
    assert.equal(next.statusCode, 200);
    await next.body.dump();
  });
});

void test('reset ends the client body with an error after the first chunks', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.enqueue({ kind: 'reset', afterChunks: 2, content: ['Hel', 'lo'] });
    const res = await chat(mock, dispatcher, { ...hello, stream: true });
    assert.equal(res.statusCode, 200);
    let received = '';
    await assert.rejects(async () => {
      for await (const part of res.body) received += (part as Buffer).toString('utf8');
    });
    assert.match(received, /"content":"Hel"/);
    assert.match(received, /"content":"lo"/);
    assert.ok(!received.includes('[DONE]'));
  });
});

void test('malformed and stream-error-event end without [DONE]', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.enqueue({ kind: 'malformed', afterChunks: 1 }, { kind: 'stream-error-event', afterChunks: 1 });
    const malformed = await (await chat(mock, dispatcher, { ...hello, stream: true })).body.text();
    assert.ok(malformed.endsWith('data: {not json\n\n'));
    assert.ok(!malformed.includes('[DONE]'));
    const errored = await (await chat(mock, dispatcher, { ...hello, stream: true })).body.text();
    assert.equal(sseData(errored).at(-1), JSON.stringify(MOCK_STREAM_ERROR));
  });
});

void test('stall keeps the stream open until close(), which does not hang', async () => {
  const mock = await startOpenAiUpstream();
  const dispatcher = new Agent();
  try {
    mock.enqueue({ kind: 'stall', afterChunks: 1 });
    const res = await chat(mock, dispatcher, { ...hello, stream: true });
    const reader = res.body[Symbol.asyncIterator]();
    const first = await reader.next();
    assert.match(String(first.value), /"content":"Hello"/);
    assert.equal(mock.openConnections(), 1);
    const pending = reader.next();
    const closeOrTimeout = await Promise.race([
      mock.close().then(() => 'closed'),
      delay(2000, 'timeout', { ref: false }),
    ]);
    assert.equal(closeOrTimeout, 'closed');
    await assert.rejects(pending);
    assert.equal(await mock.requests[0]?.aborted, true);
  } finally {
    await mock.close();
    await dispatcher.destroy();
  }
});

void test('aborted resolves true when the client aborts a hanging request', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.enqueue({ kind: 'hang' });
    const controller = new AbortController();
    const pending = chat(mock, dispatcher, hello, { signal: controller.signal });
    const recorded = await waitForRequest(mock);
    controller.abort();
    await assert.rejects(pending);
    assert.equal(await recorded.aborted, true);
  });
});

void test('slow-headers delays then applies the inner behavior', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.enqueue({ kind: 'slow-headers', delayMs: 50, then: { kind: 'error', status: 503 } });
    const started = Date.now();
    const res = await chat(mock, dispatcher, hello);
    assert.ok(Date.now() - started >= 45);
    assert.equal(res.statusCode, 503);
    await res.body.dump();
  });
});

void test('requiredKey rejects a wrong key with a masked message and accepts the right one', async () => {
  await withMock(
    async (mock, dispatcher) => {
      const wrongKey = 'sk-wrongkey123456';
      const denied = await chat(mock, dispatcher, hello, { headers: { authorization: `Bearer ${wrongKey}` } });
      assert.equal(denied.statusCode, 401);
      const body = (await denied.body.json()) as { error: { message: string; type: string; code: string } };
      assert.equal(body.error.code, 'invalid_api_key');
      assert.match(body.error.message, /^Incorrect API key provided: sk-wr\*\*\*56\./);
      assert.ok(!body.error.message.includes(wrongKey));

      const missing = await chat(mock, dispatcher, hello);
      assert.equal(missing.statusCode, 401);
      await missing.body.dump();

      const ok = await chat(mock, dispatcher, hello, { headers: { authorization: 'Bearer sk-right-key-0001' } });
      assert.equal(ok.statusCode, 200);
      await ok.body.dump();
      assert.equal(mock.chatRequests().length, 3);
    },
    { requiredKey: 'sk-right-key-0001' },
  );
});

void test('models list in the OpenAI shape, and modelsStatus makes it fail', async () => {
  await withMock(async (mock, dispatcher) => {
    mock.models = [{ id: 'm-1', owned_by: 'acme', created: 123 }, { id: 'm-2' }];
    const res = await request(`${mock.baseUrl}/models`, { dispatcher });
    assert.equal(res.statusCode, 200);
    const body = (await res.body.json()) as {
      object: string;
      data: Array<{ id: string; object: string; owned_by: string; created: number }>;
    };
    assert.equal(body.object, 'list');
    assert.deepEqual(body.data[0], { id: 'm-1', object: 'model', created: 123, owned_by: 'acme' });
    assert.equal(body.data[1]?.id, 'm-2');

    mock.modelsStatus = 500;
    const failed = await request(`${mock.baseUrl}/models`, { dispatcher });
    assert.equal(failed.statusCode, 500);
    await failed.body.dump();

    assert.equal(mock.requests.length, 2);
    assert.equal(mock.chatRequests().length, 0);
    mock.reset();
    assert.equal(mock.requests.length, 0);
    assert.equal(mock.modelsStatus, 200);
  });
});
