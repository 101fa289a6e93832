import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { MOCK_CONTENT, MOCK_TOOL_ARGUMENTS } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../../helpers/gateway.js';
import { ANTHROPIC_MOCK_ID } from '../../helpers/upstreams/anthropic.js';
import { call, fieldsOf } from '../../helpers/http.js';
import { namedEvents, readStream } from '../../helpers/sse-client.js';

const UPSTREAM_KEY = 'sk-messages-upstream-key-0123456789';

describe("Anthropic's Messages API, translated for an OpenAI-compatible upstream (@anthropic-ai/sdk as the client)", () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: UPSTREAM_KEY },
    configFile: { name: 'p.yaml', text: 'limits:\n  upstream_pause_max_seconds: 0\n' },
  });
  const sdk = (options: { apiKey?: string | null; authToken?: string } = {}) =>
    new Anthropic({
      baseURL: fixture.gw.url,
      apiKey: options.apiKey === undefined ? ADMIN_TOKEN : options.apiKey,
      ...(options.authToken ? { authToken: options.authToken } : {}),
      maxRetries: 0,
    });

  test('messages.create: system and turns become chat messages; the answer a Messages object with usage', async () => {
    const message = await sdk().messages.create({
      model: 'gpt-4o-mini',
      max_tokens: 64,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Again' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
      ],
      stop_sequences: ['END'],
      temperature: 0.2, // older API versions' field; this SDK's types no longer list it
    } as Anthropic.MessageCreateParamsNonStreaming);
    const sent = fixture.mock.chatRequests()[0]?.json as Record<string, unknown>;
    assert.deepEqual(sent.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Again' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ]);
    assert.deepEqual([sent.max_tokens, sent.stop, sent.temperature], [64, ['END'], 0.2]);
    assert.equal(fixture.mock.chatRequests()[0]?.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
    assert.match(message.id, /^msg_[0-9a-f]{32}$/);
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: MOCK_CONTENT }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
  });

  test('both credential headers work (x-api-key and Authorization: Bearer); a wrong key is the SDK AuthenticationError', async () => {
    assert.equal(
      (
        await sdk({ apiKey: null, authToken: ADMIN_TOKEN }).messages.create({
          model: 'gpt-4o-mini',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'x' }],
        })
      ).type,
      'message',
    );
    await assert.rejects(
      sdk({ apiKey: 'wrong-key' }).messages.create({
        model: 'gpt-4o-mini',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
      (e: unknown) => {
        assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
        assert.equal((e.error as { type: string; error: { type: string } }).error.type, 'authentication_error');
        assert.ok(e.requestID, 'the request-id header');
        return true;
      },
    );
    const bad = await call(fixture.url('/v1/messages'), {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [] }),
    });
    assert.equal(bad.status, 400);
    const body = bad.json as {
      type: string;
      error: { type: string };
      code: string;
      details: { errors: Array<{ field: string }> };
    };
    assert.deepEqual([body.type, body.error.type, body.code], ['error', 'invalid_request_error', 'validation_failed']);
    assert.ok(body.details.errors.some((e) => e.field.includes('max_tokens')));
  });

  test('a tool round trip: tool_use out (input an object), tool_result back as a tool message', async () => {
    const tools = [
      {
        name: 'get_weather',
        description: 'Weather',
        input_schema: { type: 'object' as const, properties: { location: { type: 'string' } } },
      },
    ];
    const first = await sdk().messages.create({
      model: 'gpt-4o-mini',
      max_tokens: 64,
      tools,
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const sent = fixture.mock.chatRequests()[0]?.json as { tools: unknown[]; tool_choice: unknown };
    assert.deepEqual(sent.tools, [
      {
        type: 'function',
        function: { name: 'get_weather', parameters: tools[0]?.input_schema, description: 'Weather' },
      },
    ]);
    assert.equal(sent.tool_choice, 'required');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use && use.type === 'tool_use');
    assert.deepEqual(use.input, JSON.parse(MOCK_TOOL_ARGUMENTS));
    assert.equal(first.stop_reason, 'tool_use');
    await sdk().messages.create({
      model: 'gpt-4o-mini',
      max_tokens: 64,
      tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: use.id, content: 'sunny' },
            { type: 'text', text: 'And tomorrow?' },
          ],
        },
      ],
    });
    const second = (fixture.mock.chatRequests()[1]?.json as { messages: unknown[] }).messages;
    assert.deepEqual(second, [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: use.id, type: 'function', function: { name: 'get_weather', arguments: MOCK_TOOL_ARGUMENTS } },
        ],
      },
      { role: 'tool', tool_call_id: use.id, content: 'sunny' },
      { role: 'user', content: 'And tomorrow?' },
    ]);
  });

  test('a stream is the exact event sequence; the SDK assembles text and a tool call (finalMessage)', async () => {
    fixture.mock.enqueue({ kind: 'stream', content: ['Hel', 'lo'] });
    const answer = await readStream(
      fixture.url('/v1/?route=messages'),
      JSON.stringify({
        model: 'gpt-4o-mini',
        max_tokens: 16,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    assert.deepEqual(
      events.map((e) => e.event),
      [
        'message_start',
        'content_block_start',
        'ping',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    for (const e of events) assert.equal(e.data.type, e.event);
    assert.deepEqual(
      events
        .filter((e) => e.event === 'content_block_delta')
        .map((e) => [e.data.index, (e.data.delta as { text: string }).text]),
      [
        [0, 'Hel'],
        [0, 'lo'],
      ],
    );
    const delta = events[6]?.data as {
      delta: { stop_reason: string };
      usage: { input_tokens: number; output_tokens: number };
    };
    assert.equal(delta.delta.stop_reason, 'end_turn');
    assert.ok(
      delta.usage.output_tokens > 0 && delta.usage.input_tokens > 0,
      'usage from the last chunk, in message_delta',
    );

    fixture.mock.enqueue({ kind: 'stream' }); // with tools, the mock streams a tool call
    const tools = [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: {} } }];
    const final = await sdk()
      .messages.stream({
        model: 'gpt-4o-mini',
        max_tokens: 64,
        tools,
        messages: [{ role: 'user', content: 'Weather?' }],
      })
      .finalMessage();
    const use = final.content.find((b) => b.type === 'tool_use');
    assert.ok(use && use.type === 'tool_use');
    assert.deepEqual(
      use.input,
      JSON.parse(MOCK_TOOL_ARGUMENTS),
      'the input_json_delta pieces concatenate to valid JSON',
    );
    assert.equal(final.stop_reason, 'tool_use');
    assert.ok(final.usage.output_tokens > 0);
  });

  test('count_tokens for a non-Anthropic model: counted by the gateway (the OpenAI tokenizer here), no upstream call', async () => {
    const counted = await sdk().messages.countTokens({
      model: 'gpt-4o-mini',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hello there, how are you?' }],
    });
    assert.ok(counted.input_tokens > 5 && counted.input_tokens < 40, String(counted.input_tokens));
    assert.equal(fixture.mock.requests.length, 0);
    const refused = await call(fixture.url('/v1/messages/count_tokens'), {
      method: 'POST',
      headers: { 'x-api-key': 'nope', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(refused.status, 401);
    assert.equal((refused.json as { error: { type: string } }).error.type, 'authentication_error');
    // The refusal names the header the key came in, not a bearer token it was not (issue 42).
    assert.match((refused.json as { error: { message: string } }).error.message, /key sent in the x-api-key header/);
    const asBearer = await call(fixture.url('/v1/messages/count_tokens'), {
      method: 'POST',
      headers: { authorization: 'Bearer nope', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(asBearer.status, 401);
    assert.match((asBearer.json as { error: { message: string } }).error.message, /bearer token is not valid/);
  });

  test('text then two tool calls: three blocks with increasing indexes, each input_json_delta set valid JSON, usage at the end', async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    fixture.mock.enqueue({
      kind: 'stream',
      chunks: [
        chunk({ role: 'assistant', content: 'Checking ' }),
        chunk({ content: 'both.' }),
        chunk({
          tool_calls: [
            { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"ci' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Paris"}' } }] }),
        chunk({
          tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '' } }],
        }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '{"city":"Rome"}' } }] }),
        chunk({}, 'tool_calls'),
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 31, completion_tokens: 17, total_tokens: 48 } })}\n\n`,
        'data: [DONE]\n\n',
      ],
    });
    const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }];
    const answer = await readStream(
      fixture.url('/v1/messages'),
      JSON.stringify({
        model: 'gpt-4o-mini',
        max_tokens: 64,
        stream: true,
        tools,
        messages: [{ role: 'user', content: 'Paris and Rome?' }],
      }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    const starts = events
      .filter((e) => e.event === 'content_block_start')
      .map((e) => [
        e.data.index,
        (e.data.content_block as { type: string; id?: string }).type,
        (e.data.content_block as { id?: string }).id,
      ]);
    assert.deepEqual(starts, [
      [0, 'text', undefined],
      [1, 'tool_use', 'call_a'],
      [2, 'tool_use', 'call_b'],
    ]);
    assert.deepEqual(
      events.filter((e) => e.event === 'content_block_stop').map((e) => e.data.index),
      [0, 1, 2],
    );
    for (const index of [1, 2]) {
      const pieces = events
        .filter((e) => e.event === 'content_block_delta' && e.data.index === index)
        .map((e) => (e.data.delta as { partial_json: string }).partial_json);
      assert.deepEqual(JSON.parse(pieces.join('')), { city: index === 1 ? 'Paris' : 'Rome' });
    }
    const delta = events.find((e) => e.event === 'message_delta')?.data as {
      delta: { stop_reason: string };
      usage: Record<string, number>;
    };
    assert.equal(delta.delta.stop_reason, 'tool_use');
    assert.deepEqual(delta.usage, {
      input_tokens: 31,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 17,
    });
    assert.equal(events.at(-1)?.event, 'message_stop');
    // Every block opens before its deltas and closes before the next opens.
    let open: unknown;
    for (const e of events) {
      if (e.event === 'content_block_start') {
        assert.equal(open, undefined);
        open = e.data.index;
      } else if (e.event === 'content_block_delta') assert.equal(e.data.index, open);
      else if (e.event === 'content_block_stop') {
        assert.equal(e.data.index, open);
        open = undefined;
      }
    }
  });

  test('Idempotency-Key: a keyed Messages stream is replayed as the same events, without a second upstream call', async () => {
    fixture.mock.enqueue({ kind: 'stream', content: ['Only', ' once'] });
    const body = JSON.stringify({
      model: 'gpt-4o-mini',
      max_tokens: 16,
      stream: true,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const headers = authHeaders({ 'idempotency-key': 'messages-key-1' });
    const first = await readStream(fixture.url('/v1/messages'), body, headers);
    const again = await readStream(fixture.url('/v1/messages'), body, headers);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.equal(fixture.mock.chatRequests().length, 1);
  });

  test('a failure after the first event is one Anthropic error event and no message_stop', async () => {
    fixture.mock.enqueue({ kind: 'reset', afterChunks: 2, content: ['a', 'b', 'c'] });
    const answer = await readStream(
      fixture.url('/v1/messages'),
      JSON.stringify({
        model: 'gpt-4o-mini',
        max_tokens: 16,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    assert.equal(events.at(-1)?.event, 'error');
    assert.deepEqual((events.at(-1)?.data as { error: { type: string } }).error.type, 'api_error');
    assert.equal((events.at(-1)?.data as { code: string }).code, 'upstream_connection_reset');
    assert.equal(
      events.some((e) => e.event === 'message_stop'),
      false,
    );
  });

  test('what a non-Anthropic upstream cannot take is a 400 naming the block; a 429 is the SDK RateLimitError', async () => {
    await assert.rejects(
      sdk().messages.create({
        model: 'gpt-4o-mini',
        max_tokens: 8,
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }],
          },
        ],
      }),
      (e: unknown) => {
        assert.ok(e instanceof Anthropic.BadRequestError, String(e));
        const body = e.error as { code: string; details: { errors: Array<{ field: string }> } };
        assert.equal(body.code, 'capability_not_supported');
        assert.deepEqual(
          body.details.errors.map((p) => p.field),
          ['messages[0].content[0].type'],
        );
        return true;
      },
    );
    fixture.mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '7' } });
    await assert.rejects(
      sdk().messages.create({ model: 'gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => {
        assert.ok(e instanceof Anthropic.RateLimitError, String(e));
        assert.equal(e.headers?.get('retry-after'), '7');
        return true;
      },
    );
  });
});

describe('the Messages API to an Anthropic upstream: forwarded as it is (native)', () => {
  const KEY = 'sk-ant-native-key-0123456789';
  const fx = useGateway({
    upstream: 'anthropic',
    key: KEY,
    models: [
      '- { id: claude-sonnet-4-5, upstream: claude, upstream_model: claude-sonnet-4-5-20250929, aliases: [claude-sonnet-4-5-latest] }',
      '- { id: claude-tiny, upstream: claude, upstream_model: claude-haiku-4-5, context_window: 100 }',
    ],
  });
  const sdk = () =>
    new Anthropic({
      baseURL: fx.gw.url,
      apiKey: ADMIN_TOKEN,
      maxRetries: 0,
      defaultHeaders: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' },
    });

  test('thinking blocks with their signatures, cache_control and betas reach Anthropic untouched; its answer comes back as it is', async () => {
    const params = {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      system: [{ type: 'text', text: 'Long cached system prompt', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig-abc==' },
            { type: 'text', text: 'Hello' },
          ],
        },
        { role: 'user', content: 'Again' },
      ],
    } as Anthropic.MessageCreateParamsNonStreaming;
    fx.mock.enqueue({ kind: 'message', text: 'Native hello' });
    const message = await sdk().messages.create(params);
    assert.equal(message.id, ANTHROPIC_MOCK_ID, "Anthropic's own answer, not a translation");
    assert.deepEqual(message.content, [{ type: 'text', text: 'Native hello' }]);
    const sent = fx.mock.messageRequests().at(-1);
    assert.deepEqual(
      sent?.body,
      { ...params, model: 'claude-sonnet-4-5-20250929' },
      'every block as sent, thinking signature included; the model mapped',
    );
    assert.equal(sent?.headers['x-api-key'], KEY);
    assert.equal(sent?.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14');
    assert.match(
      String(sent?.headers['anthropic-version']),
      /^\d{4}-\d\d-\d\d$/,
      "the SDK's own API version, forwarded",
    );
    fx.mock.enqueue({ kind: 'message', text: 'x' });
    const raw = await call(`${fx.gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'anthropic-version': '2099-01-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers['request-id'], raw.headers['x-request-id']);
    assert.equal(fx.mock.messageRequests().at(-1)?.headers['anthropic-version'], '2099-01-01');
    const line = fx.gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.route === 'messages')
      .at(-1);
    assert.equal(line?.prompt_tokens, 2095);
    assert.equal(line?.completion_tokens, 503);
  });

  test('what only Anthropic judges is forwarded as it is: a new role, block, enum value and field; its 400 comes back in its shape', async () => {
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      thinking: { type: 'adaptive', display: 'updates' },
      output_config: { effort: 'ultra', format: { type: 'yaml' } },
      context_management: { edits: [{ type: 'compact_20260112' }] },
      temperature: 7,
      brand_new_field: { anything: [1, 'two'] },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hi' },
            { type: 'hologram', data: 'x' },
          ],
        },
        { role: 'system', content: 'mid-conversation' },
        { role: 'oracle', content: 'a role of tomorrow' },
      ],
    };
    fx.mock.enqueue({ kind: 'message', text: 'ok' });
    const forwarded = await call(`${fx.gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(forwarded.status, 200, forwarded.text);
    assert.deepEqual(fx.mock.messageRequests().at(-1)?.body, { ...body, model: 'claude-sonnet-4-5-20250929' });
    assert.equal(fx.mock.messageRequests().at(-1)?.url, '/v1/messages?beta=true');
    fx.mock.enqueue({
      kind: 'error',
      status: 400,
      type: 'invalid_request_error',
      message: 'messages.2.role: Input should be user, assistant or system',
    });
    const refused = await call(`${fx.gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(refused.status, 400);
    assert.equal(
      (refused.json as unknown as { type: string; error: { type: string } }).error.type,
      'invalid_request_error',
    );
    // What the gateway reads is still checked before anything is sent.
    const before = fx.mock.messageRequests().length;
    const bad = await call(`${fx.gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, max_tokens: 'lots', messages: [{ role: 'user' }] }),
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(fieldsOf(bad), ['max_tokens', 'messages[0].content']);
    assert.equal(fx.mock.messageRequests().length, before);
  });

  test("a stream is Anthropic's own event stream; the SDK assembles it; usage from message_start and message_delta", async () => {
    fx.mock.enqueue({ kind: 'stream', text: ['Str', 'eam'] });
    const final = await sdk()
      .messages.stream({
        model: 'claude-sonnet-4-5-latest',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Hi' }],
      })
      .finalMessage();
    assert.equal(final.id, ANTHROPIC_MOCK_ID);
    assert.deepEqual(
      final.content.map((b) => (b.type === 'text' ? b.text : b.type)),
      ['Stream'],
    );
    const line = fx.gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.route === 'messages')
      .at(-1);
    assert.equal(line?.prompt_tokens, 25);
    assert.ok(Number(line?.completion_tokens) > 0);
  });

  test('the context-window check applies to a forwarded request too: too long for the declared window is a 400, nothing sent', async () => {
    const before = fx.mock.messageRequests().length;
    await assert.rejects(
      sdk().messages.create({
        model: 'claude-tiny',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'word '.repeat(200) }],
      }),
      (e: unknown) => {
        assert.ok(e instanceof Anthropic.BadRequestError, String(e));
        assert.equal((e.error as { code: string }).code, 'context_length_exceeded');
        return true;
      },
    );
    assert.equal(fx.mock.messageRequests().length, before);
  });

  test('count_tokens asks Anthropic (its count is what it bills), with the model mapped', async () => {
    const counted = await sdk().messages.countTokens({
      model: 'claude-sonnet-4-5',
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ],
    });
    assert.equal(counted.input_tokens, 126);
    const sent = fx.mock.requests.filter((r) => r.url === '/v1/messages/count_tokens').at(-1);
    assert.equal((sent?.body as { model: string }).model, 'claude-sonnet-4-5-20250929');
    assert.equal(sent?.headers['x-api-key'], KEY);
  });

  test('an Anthropic error mid-stream is one error event with our code; before the first byte, the SDK error class', async () => {
    fx.mock.enqueue({ kind: 'stream', text: ['a', 'b', 'c'], errorAfter: 1 });
    const answer = await readStream(
      `${fx.gw.url}/v1/messages`,
      JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    assert.equal(events.at(-1)?.event, 'error');
    assert.equal((events.at(-1)?.data as { code: string }).code, 'upstream_stream_error');
    assert.equal(
      events.some((e) => e.event === 'message_stop'),
      false,
    );
    fx.mock.enqueue({ kind: 'error', status: 400, type: 'invalid_request_error', message: 'max_tokens: too large' });
    await assert.rejects(
      sdk().messages.create({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof Anthropic.BadRequestError,
    );
  });
});
