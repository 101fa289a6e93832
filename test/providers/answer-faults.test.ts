/**
 * What a non-streamed upstream answer may carry that a surface must still translate, or refuse, without a 500
 * (issue 29, round three): OpenAI-compatible completions whose `message`, `choices` entries, `tool_calls` or usage
 * are not what the chat API sends, made well formed by the same rules as a stream's chunks; Anthropic and Gemini
 * answers with parts that are not objects or fields of the wrong type. Real mock upstreams on sockets send the
 * exact bodies; the assertions are on the caller's whole body (random ids and times replaced), on what the
 * upstream received, and on whether its circuit counted the outcome.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, CHAT_PATH, authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { dataFrames, namedEvents, readStream } from '../helpers/sse-client.js';

const USAGE = { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 };
const completion = (choices: unknown[], usage: unknown = USAGE) => ({
  id: 'c1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o-mini',
  choices,
  usage,
});
const choice = (message: unknown, finish = 'stop') => ({ index: 0, message, finish_reason: finish });
const json = (body: unknown) => ({ kind: 'json' as const, body });
const CALL = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };

const chatBody = (model: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }], ...extra });
const responsesBody = (model: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, input: 'x', store: false, ...extra });
const messagesBody = (model: string) =>
  JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'x' }] });

/** The body with its random ids and clock readings replaced, so a whole answer can be compared. */
function stable(value: unknown): unknown {
  if (typeof value === 'string') {
    return value
      .replace(/^(resp|msg|fc)_[0-9a-f]{32}([0-9a-f]{4})?$/, '$1_ID')
      .replace(/^toolu_msg_[0-9a-f]{32}_/, 'toolu_msg_ID_')
      .replace(/^(call_)?chatcmpl-[0-9a-f-]{36}/, '$1chatcmpl-ID');
  }
  if (Array.isArray(value)) return value.map(stable);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        k === 'created' || k === 'created_at' || (k === 'completed_at' && v !== null) ? 0 : stable(v),
      ]),
    );
  }
  return value;
}

/** The whole Responses object of a translated answer (`store: false`), around its output and usage. */
const responseObject = (model: string, output: unknown[], usage: unknown, status = 'completed') => ({
  id: 'resp_ID',
  object: 'response',
  created_at: 0,
  status,
  background: false,
  completed_at: status === 'completed' ? 0 : null,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  max_tool_calls: null,
  model,
  output,
  parallel_tool_calls: true,
  presence_penalty: 0,
  frequency_penalty: 0,
  previous_response_id: null,
  prompt_cache_key: null,
  prompt_cache_retention: null,
  reasoning: { effort: null, summary: null },
  safety_identifier: null,
  service_tier: 'default',
  store: false,
  temperature: 1,
  text: { format: { type: 'text' }, verbosity: 'medium' },
  tool_choice: 'auto',
  tools: [],
  top_logprobs: 0,
  top_p: 1,
  truncation: 'disabled',
  usage,
  user: null,
  metadata: {},
});
const RESPONSE_USAGE = {
  input_tokens: 5,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 10,
};
const textItem = (text: string) => ({
  type: 'message',
  id: 'msg_ID',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});
const callItem = (callId: string, name: string, args: string) => ({
  type: 'function_call',
  id: 'fc_ID',
  call_id: callId,
  name,
  arguments: args,
  status: 'completed',
});
const messageObject = (
  model: string,
  content: unknown[],
  stopReason: string,
  usage: unknown = { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 5 },
) => ({
  id: 'msg_ID',
  type: 'message',
  role: 'assistant',
  model,
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage,
});
const invalidArguments = (callId: string) => ({
  code: 'upstream_invalid_response',
  message: 'The upstream provider sent a response the gateway cannot read.',
  details: { reason: `the arguments of function call ${callId} are not a JSON object` },
});

describe('non-streamed answers of an OpenAI-compatible upstream', () => {
  const fixture = useGateway({
    configFile: {
      name: 'circuit.yaml',
      text: 'limits:\n  upstream_pause_max_seconds: 0\ncircuit_breaker: { failure_threshold: 2, cooldown_seconds: 60 }\n',
    },
  });
  const M = 'gpt-4o-mini';
  const post = async (path: string, body: string) =>
    call(fixture.url(path), { method: 'POST', headers: authHeaders(), body });
  /** The same upstream answer through chat, Responses and Messages. */
  const throughAll = async (answer: unknown) => {
    fixture.mock.enqueue(json(answer), json(answer), json(answer));
    return {
      chat: await post(CHAT_PATH, chatBody(M)),
      responses: await post('/v1/responses', responsesBody(M)),
      messages: await post('/v1/messages', messagesBody(M)),
    };
  };
  const circuit = async () => {
    const health = await call(fixture.url('/v1/?route=health'), { headers: authHeaders() });
    return (health.json.checks as { upstreams: Record<string, { circuit?: string }> }).upstreams.default?.circuit;
  };

  test('a message that is null or missing is an empty assistant message on every surface', async () => {
    for (const odd of [choice(null), { index: 0, finish_reason: 'stop' }]) {
      const { chat, responses, messages } = await throughAll(completion([odd]));
      assert.equal(chat.status, 200, chat.text);
      assert.deepEqual(
        chat.json,
        completion([{ ...odd, message: { role: 'assistant', content: null } }]),
        'made well formed for chat callers too',
      );
      assert.equal(responses.status, 200, responses.text);
      assert.deepEqual(stable(responses.json), responseObject(M, [textItem('')], RESPONSE_USAGE));
      assert.equal(messages.status, 200, messages.text);
      assert.deepEqual(stable(messages.json), messageObject(M, [], 'end_turn'));
    }
  });

  test('choices that are not objects are dropped: the first real choice is the answer', async () => {
    const { chat, responses, messages } = await throughAll(
      completion([null, 5, choice({ role: 'assistant', content: 'Hi' })]),
    );
    assert.deepEqual(chat.json, completion([choice({ role: 'assistant', content: 'Hi' })]));
    assert.deepEqual(stable(responses.json), responseObject(M, [textItem('Hi')], RESPONSE_USAGE));
    assert.deepEqual(stable(messages.json), messageObject(M, [{ type: 'text', text: 'Hi' }], 'end_turn'));
  });

  test('tool_calls entries that are not objects are dropped, and a tool_calls that is not an array is removed', async () => {
    const kept = await throughAll(
      completion([choice({ role: 'assistant', content: null, tool_calls: [null, CALL, 7] }, 'tool_calls')]),
    );
    assert.equal(kept.chat.status, 200, kept.chat.text);
    assert.deepEqual(
      kept.chat.json,
      completion([choice({ role: 'assistant', content: null, tool_calls: [CALL] }, 'tool_calls')]),
    );
    assert.equal(kept.responses.status, 200, kept.responses.text);
    assert.deepEqual(
      stable(kept.responses.json),
      responseObject(M, [callItem('call_1', 'get_weather', '{"city":"Paris"}')], RESPONSE_USAGE),
    );
    assert.equal(kept.messages.status, 200, kept.messages.text);
    assert.deepEqual(
      stable(kept.messages.json),
      messageObject(M, [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }], 'tool_use'),
    );

    for (const calls of [[null], 5, { 0: CALL }, 'call']) {
      const { chat, responses, messages } = await throughAll(
        completion([choice({ role: 'assistant', content: 'Hi', tool_calls: calls })]),
      );
      assert.deepEqual(chat.json, completion([choice({ role: 'assistant', content: 'Hi' })]), JSON.stringify(calls));
      assert.deepEqual(stable(responses.json), responseObject(M, [textItem('Hi')], RESPONSE_USAGE), responses.text);
      assert.deepEqual(
        stable(messages.json),
        messageObject(M, [{ type: 'text', text: 'Hi' }], 'end_turn'),
        messages.text,
      );
    }
  });

  test("a tool call's fields are read by their types: what is valid is translated, what is not is absent", async () => {
    const odd = completion([
      choice(
        {
          role: 'assistant',
          content: 5,
          tool_calls: [
            // arguments sent as the object instead of its text; an id and a name that are not strings
            { id: { toString: 1 }, type: 'function', function: { name: 7, arguments: { city: 'Paris' } } },
            { id: 'call_2', type: 'function', function: null },
          ],
        },
        'tool_calls',
      ),
    ]);
    const { chat, responses, messages } = await throughAll(odd);
    assert.equal(chat.status, 200);
    assert.deepEqual(chat.json, odd, 'the fields inside a call are the chat API’s to pass on, as they came');
    assert.equal(responses.status, 200, responses.text);
    assert.deepEqual(
      stable(responses.json),
      responseObject(M, [callItem('fc_ID', '', '{"city":"Paris"}'), callItem('call_2', '', '')], RESPONSE_USAGE),
    );
    assert.equal(messages.status, 200, messages.text);
    assert.deepEqual(
      stable(messages.json),
      messageObject(
        M,
        [
          { type: 'tool_use', id: 'toolu_msg_ID_0', name: '', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: '', input: {} },
        ],
        'tool_use',
      ),
    );
  });

  test('arguments that are a JSON value but not an object: 502 upstream_invalid_response naming the call, not counted against the circuit', async () => {
    const bad = completion([
      choice(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ ...CALL, function: { name: 'get_weather', arguments: 5 } }],
        },
        'tool_calls',
      ),
    ]);
    const { chat, responses, messages } = await throughAll(bad);
    assert.deepEqual(chat.json, bad, 'chat passes the call on as it came');
    assert.equal(responses.status, 502);
    assert.deepEqual(responses.json, {
      ...invalidArguments('call_1'),
      error: {
        message: invalidArguments('call_1').message,
        type: 'api_error',
        code: 'upstream_invalid_response',
        param: null,
      },
    });
    assert.equal(messages.status, 502);
    assert.deepEqual(messages.json, {
      type: 'error',
      error: { type: 'api_error', message: invalidArguments('call_1').message },
      ...invalidArguments('call_1'),
    });
    // Two refusals with a threshold of 2: the upstream answered, its circuit stays closed, nothing was retried.
    assert.equal(await circuit(), undefined);
    assert.equal(fixture.mock.chatRequests().length, 3);
  });

  test('a usage that is no object is null; counts that are text or negative are 0 (usage-figures.ts): never counted as sent, priced or passed on', async () => {
    const zero = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    const zeroResponses = {
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    };
    for (const [usage, shown, shownResponses] of [
      [{ prompt_tokens: 'x', completion_tokens: 'y', total_tokens: 'z' }, zero, zeroResponses],
      [{ prompt_tokens: -5, completion_tokens: -5, total_tokens: -10 }, zero, zeroResponses],
      ['abc', null, null],
    ] as const) {
      const { chat, responses, messages } = await throughAll(
        completion([choice({ role: 'assistant', content: 'Hi' })], usage),
      );
      assert.deepEqual(
        chat.json,
        completion([choice({ role: 'assistant', content: 'Hi' })], shown),
        JSON.stringify(usage),
      );
      assert.deepEqual(
        stable(responses.json),
        responseObject(M, [textItem('Hi')], shownResponses),
        JSON.stringify(usage),
      );
      assert.deepEqual(
        stable(messages.json),
        messageObject(M, [{ type: 'text', text: 'Hi' }], 'end_turn', {
          input_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 0,
        }),
      );
    }
    const metrics = await call(fixture.url('/metrics'), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const tokens = metrics.text.split('\n').filter((line) => line.startsWith('llmgw_tokens_total{'));
    for (const line of tokens) assert.match(line, / \d+$/, `a token counter is a count: ${line}`);
  });

  test('on a stream, the same rules: a tool_calls that is not an array is removed, arguments sent as an object are their text, a count that is text is 0', async () => {
    const line = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: M, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
    fixture.mock.enqueue({
      kind: 'stream',
      chunks: [
        line({ content: 'Hi', tool_calls: 5 }, null) +
          line({}, 'stop', { usage: { prompt_tokens: 'x', completion_tokens: 1 } }) +
          'data: [DONE]\n\n',
      ],
    });
    const chat = await readStream(fixture.url(CHAT_PATH), chatBody(M, { stream: true }), authHeaders());
    assert.deepEqual(
      dataFrames(chat.text).map((frame) =>
        frame === '[DONE]' ? frame : (JSON.parse(frame) as { choices: unknown; usage?: unknown }),
      ),
      [
        {
          id: 'c1',
          object: 'chat.completion.chunk',
          created: 1,
          model: M,
          choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }],
        },
        {
          id: 'c1',
          object: 'chat.completion.chunk',
          created: 1,
          model: M,
          choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
          usage: { prompt_tokens: 0, completion_tokens: 1 },
        },
        '[DONE]',
      ],
    );

    const objectArgs = {
      index: 0,
      id: 'call_1',
      type: 'function',
      function: { name: 'get_weather', arguments: { city: 'Paris' } },
    };
    fixture.mock.enqueue({
      kind: 'stream',
      chunks: [line({ tool_calls: [objectArgs] }, null) + line({}, 'tool_calls') + 'data: [DONE]\n\n'],
    });
    const responses = namedEvents(
      (await readStream(fixture.url('/v1/responses'), responsesBody(M, { stream: true }), authHeaders())).text,
    );
    const completed = responses.at(-1);
    assert.equal(completed?.event, 'response.completed');
    assert.deepEqual(stable((completed?.data.response as { output: unknown }).output), [
      callItem('call_1', 'get_weather', '{"city":"Paris"}'),
    ]);
  });
});

describe('non-streamed answers of an Anthropic upstream, translated to chat and Responses', () => {
  const fx = useGateway({
    upstream: 'anthropic',
    key: 'sk-ant-answer-faults-0123456789',
    models: ['- { id: claude-x, upstream: claude, upstream_model: claude-haiku-4-5 }'],
    // A count below is of the calls of this describe's tests together.
    resetEachTest: false,
  });
  const M = 'claude-haiku-4-5';
  const post = async (path: string, body: string) =>
    call(`${fx.gw.url}${path}`, { method: 'POST', headers: authHeaders(), body });
  const message = (content: unknown[], extra: Record<string, unknown> = {}) => ({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: M,
    content,
    stop_reason: 'tool_use',
    stop_sequence: null,
    ...extra,
  });

  test('content blocks that are not objects are skipped, an id or name that is not a string is empty, no usage is no usage', async () => {
    const odd = message([
      null,
      5,
      { type: 'text', text: 'Hi' },
      { type: 'tool_use', id: { toString: 1 }, name: 7, input: { city: 'Paris' } },
    ]);
    fx.mock.enqueue({ kind: 'json', body: odd }, { kind: 'json', body: odd });
    const chat = await post(CHAT_PATH, chatBody('claude-x'));
    assert.equal(chat.status, 200, chat.text);
    assert.deepEqual(stable(chat.json), {
      id: 'msg_1',
      object: 'chat.completion',
      created: 0,
      model: M,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Hi',
            tool_calls: [{ id: '', type: 'function', function: { name: '', arguments: '{"city":"Paris"}' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
    });
    const responses = await post('/v1/responses', responsesBody('claude-x'));
    assert.equal(responses.status, 200, responses.text);
    assert.deepEqual(
      stable(responses.json),
      responseObject(M, [textItem('Hi'), callItem('', '', '{"city":"Paris"}')], null),
    );
  });

  test('a tool_use input that is not an object: chat gets its JSON text, Responses a 502 upstream_invalid_response', async () => {
    const odd = message([null, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: [1, 2] }], {
      usage: { input_tokens: 3, output_tokens: 2 },
    });
    fx.mock.enqueue({ kind: 'json', body: odd }, { kind: 'json', body: odd });
    const chat = await post(CHAT_PATH, chatBody('claude-x'));
    assert.deepEqual(stable(chat.json), {
      id: 'msg_1',
      object: 'chat.completion',
      created: 0,
      model: M,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '[1,2]' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
    const responses = await post('/v1/responses', responsesBody('claude-x'));
    assert.equal(responses.status, 502, responses.text);
    assert.deepEqual(responses.json.details, invalidArguments('toolu_1').details);
    assert.equal(fx.mock.messageRequests().length, 4, 'nothing retried');
  });

  test('a stream event whose data is not a JSON object ends the stream with upstream_stream_malformed, not internal_error', async () => {
    const start =
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5","usage":{"input_tokens":3,"output_tokens":1}}}\n\n';
    fx.mock.enqueue({
      kind: 'raw',
      frames: [
        start,
        'event: content_block_delta\ndata: null\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
    });
    const answer = await readStream(`${fx.gw.url}${CHAT_PATH}`, chatBody('claude-x', { stream: true }), authHeaders());
    const events = namedEvents(answer.text);
    assert.equal(events.at(-1)?.event, 'error', answer.text);
    assert.equal(events.at(-1)?.data.code, 'upstream_stream_malformed');
    assert.deepEqual(events.at(-1)?.data.details, { upstream: 'claude', reason: 'an event is not a JSON object' });
  });
});

describe('non-streamed answers of a Gemini upstream, translated to chat, Responses and Messages', () => {
  const fx = useGateway({ upstream: 'gemini', key: 'gemini-answer-faults-0123456789' });
  const M = 'gemini-2.0-flash';
  const post = async (path: string, body: string) =>
    call(`${fx.gw.url}${path}`, { method: 'POST', headers: authHeaders(), body });
  const USAGE_METADATA = { promptTokenCount: 5, candidatesTokenCount: 5, totalTokenCount: 10 };

  test('candidates and parts that are not objects are skipped, a functionCall that is not one ignored, a name that is not a string empty', async () => {
    const odd = {
      candidates: [
        null,
        {
          index: 'x',
          content: {
            role: 'model',
            parts: [
              null,
              5,
              { text: 'Hi' },
              { functionCall: null },
              { functionCall: { name: 7, args: { city: 'Paris' } } },
            ],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: USAGE_METADATA,
      modelVersion: M,
    };
    fx.mock.enqueue({ kind: 'json', body: odd }, { kind: 'json', body: odd }, { kind: 'json', body: odd });
    const chat = await post(CHAT_PATH, chatBody('flash'));
    assert.equal(chat.status, 200, chat.text);
    assert.deepEqual(stable(chat.json), {
      id: 'chatcmpl-ID',
      object: 'chat.completion',
      created: 0,
      model: M,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Hi',
            tool_calls: [
              { id: 'call_chatcmpl-ID_0_0', type: 'function', function: { name: '', arguments: '{"city":"Paris"}' } },
            ],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: USAGE,
    });
    const responses = await post('/v1/responses', responsesBody('flash'));
    assert.equal(responses.status, 200, responses.text);
    assert.deepEqual(
      stable(responses.json),
      responseObject(M, [textItem('Hi'), callItem('call_chatcmpl-ID_0_0', '', '{"city":"Paris"}')], RESPONSE_USAGE),
    );
    const messages = await post('/v1/messages', messagesBody('flash'));
    assert.equal(messages.status, 200, messages.text);
    assert.deepEqual(
      stable(messages.json),
      messageObject(
        M,
        [
          { type: 'text', text: 'Hi' },
          { type: 'tool_use', id: 'call_chatcmpl-ID_0_0', name: '', input: { city: 'Paris' } },
        ],
        'tool_use',
      ),
    );
  });

  test('content or parts that are not objects are an empty answer; args that are not an object are refused by Responses and Messages only', async () => {
    const empty = {
      candidates: [
        { content: null, finishReason: 'STOP' },
        { content: { parts: 5 }, finishReason: 'STOP' },
      ],
      modelVersion: M,
    };
    fx.mock.enqueue({ kind: 'json', body: empty });
    const chat = await post(CHAT_PATH, chatBody('flash'));
    assert.equal(chat.status, 200, chat.text);
    assert.deepEqual(
      (chat.json.choices as unknown[]).map((c) => (c as { message: unknown }).message),
      [
        { role: 'assistant', content: '' },
        { role: 'assistant', content: '' },
      ],
    );

    const badArgs = {
      candidates: [
        { content: { parts: [{ functionCall: { id: 'fc_g', name: 'get_weather', args: 5 } }] }, finishReason: 'STOP' },
      ],
      usageMetadata: USAGE_METADATA,
      modelVersion: M,
    };
    fx.mock.enqueue({ kind: 'json', body: badArgs }, { kind: 'json', body: badArgs }, { kind: 'json', body: badArgs });
    const passed = await post(CHAT_PATH, chatBody('flash'));
    assert.deepEqual((passed.json.choices as Array<{ message: { tool_calls: unknown } }>)[0]?.message.tool_calls, [
      { id: 'fc_g', type: 'function', function: { name: 'get_weather', arguments: '5' } },
    ]);
    for (const [path, body] of [
      ['/v1/responses', responsesBody('flash')],
      ['/v1/messages', messagesBody('flash')],
    ] as const) {
      const refused = await post(path, body);
      assert.equal(refused.status, 502, refused.text);
      assert.deepEqual(refused.json.details, invalidArguments('fc_g').details);
    }
  });

  test('a block reason that is not a string is still upstream_content_blocked, with its JSON text', async () => {
    fx.mock.enqueue({ kind: 'json', body: { promptFeedback: { blockReason: { toString: 1 } } } });
    const blocked = await post(CHAT_PATH, chatBody('flash'));
    assert.equal(blocked.status, 400, blocked.text);
    assert.equal(blocked.json.code, 'upstream_content_blocked');
    assert.deepEqual(blocked.json.details, { upstream: 'google', reason: '{"toString":1}' });
  });

  test('a stream event that is not a JSON object ends the stream with upstream_stream_malformed, not internal_error', async () => {
    fx.mock.enqueue({
      kind: 'raw-stream',
      data: [JSON.stringify({ candidates: [{ content: { parts: [{ text: 'Hi' }] } }] }), 'null'],
    });
    const answer = await readStream(`${fx.gw.url}${CHAT_PATH}`, chatBody('flash', { stream: true }), authHeaders());
    const events = namedEvents(answer.text);
    assert.equal(events.at(-1)?.event, 'error', answer.text);
    assert.equal(events.at(-1)?.data.code, 'upstream_stream_malformed');
    assert.deepEqual(events.at(-1)?.data.details, { upstream: 'google', reason: 'an event is not a JSON object' });
  });
});
