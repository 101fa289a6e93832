/**
 * What an upstream stream may carry that a surface must still translate, or refuse, the same way on every path
 * (issue 29): chunks without a usable `delta`, native frames that are not their API's events, and function calls
 * whose arguments are not a JSON object. Real mock upstreams on sockets send the exact bytes; the assertions are
 * on the caller's events in order, and on whether the upstream's circuit counted the outcome.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { CHAT_PATH, authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { dataFrames, namedEvents, readStream } from '../helpers/sse-client.js';

const chunkLine = (choice: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, ...choice }] })}\n\n`;
const HI = chunkLine({ delta: { role: 'assistant', content: 'Hi' }, finish_reason: null });
const DONE = 'data: [DONE]\n\n';

const chatStream = () =>
  JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'x' }] });
const responsesBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'gpt-4o-mini', input: 'x', ...extra });
const messagesBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'x' }], ...extra });

/** Everything in one write, so the text and the odd chunk reach the gateway in one read (one batch). */
const oneWrite = (...parts: string[]) => ({ kind: 'stream' as const, chunks: [parts.join('')] });

const RESPONSES_TEXT_EVENTS = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.done',
  'response.content_part.done',
  'response.output_item.done',
  'response.completed',
];
const MESSAGES_TEXT_EVENTS = [
  'message_start',
  'content_block_start',
  'ping',
  'content_block_delta',
  'content_block_stop',
  'message_delta',
  'message_stop',
];

describe('translated streams over an OpenAI-compatible upstream', () => {
  const fixture = useGateway({
    configFile: {
      name: 'circuit.yaml',
      text: 'limits:\n  upstream_pause_max_seconds: 0\ncircuit_breaker: { failure_threshold: 2, cooldown_seconds: 60 }\n',
    },
  });
  const circuit = async () => {
    const health = await call(fixture.url('/v1/?route=health'), { headers: authHeaders() });
    return (health.json.checks as { upstreams: Record<string, { circuit?: string }> }).upstreams.default?.circuit;
  };

  const shapes: Array<{ name: string; last: string }> = [
    { name: 'a chunk without delta', last: chunkLine({ finish_reason: 'stop' }) },
    { name: 'a chunk whose delta is null', last: chunkLine({ delta: null, finish_reason: 'stop' }) },
    {
      name: 'a chunk whose tool_calls is [null]',
      last: chunkLine({ delta: { tool_calls: [null] }, finish_reason: 'stop' }),
    },
  ];
  for (const { name, last } of shapes) {
    test(`${name} (after the text, in the same read): chat, Responses and Messages translate it and end well`, async () => {
      fixture.mock.enqueue(oneWrite(HI, last, DONE));
      const chat = await readStream(fixture.url(CHAT_PATH), chatStream(), authHeaders());
      const frames = dataFrames(chat.text);
      assert.equal(frames.length, 3, chat.text);
      assert.equal(`data: ${frames[0]}\n\n`, HI, 'a well-formed chunk goes out byte for byte');
      const normalised = JSON.parse(frames[1] ?? '') as { choices: Array<{ delta: unknown; finish_reason: string }> };
      assert.deepEqual(
        normalised.choices,
        [{ index: 0, delta: {}, finish_reason: 'stop' }],
        'the odd chunk as a well-formed one',
      );
      assert.equal(frames[2], '[DONE]');

      fixture.mock.enqueue(oneWrite(HI, last, DONE));
      const responses = await readStream(fixture.url('/v1/responses'), responsesBody({ stream: true }), authHeaders());
      const events = namedEvents(responses.text);
      assert.deepEqual(
        events.map((e) => e.event),
        RESPONSES_TEXT_EVENTS,
        responses.text.slice(0, 600),
      );
      events.forEach((e, i) => assert.equal(e.data.sequence_number, i));
      const completed = events.at(-1)?.data.response as {
        status: string;
        output: Array<{ content: Array<{ text: string }> }>;
      };
      assert.equal(completed.status, 'completed');
      assert.equal(completed.output[0]?.content[0]?.text, 'Hi');

      fixture.mock.enqueue(oneWrite(HI, last, DONE));
      const messages = await readStream(fixture.url('/v1/messages'), messagesBody({ stream: true }), authHeaders());
      const message = namedEvents(messages.text);
      assert.deepEqual(
        message.map((e) => e.event),
        MESSAGES_TEXT_EVENTS,
        messages.text.slice(0, 600),
      );
      assert.equal((message[3]?.data.delta as { text: string }).text, 'Hi');
      assert.equal((message[5]?.data.delta as { stop_reason: string }).stop_reason, 'end_turn');
      assert.equal(await circuit(), undefined);
    });
  }

  test('a chunk without delta before any text: the stream starts and the text after it is kept', async () => {
    const text = chunkLine({ delta: { content: 'Hi' }, finish_reason: null });
    fixture.mock.enqueue(
      oneWrite(chunkLine({ finish_reason: null }), text, chunkLine({ delta: {}, finish_reason: 'stop' }), DONE),
    );
    const responses = await readStream(fixture.url('/v1/responses'), responsesBody({ stream: true }), authHeaders());
    assert.deepEqual(
      namedEvents(responses.text).map((e) => e.event),
      RESPONSES_TEXT_EVENTS,
    );
  });

  const toolChunk = (args: string) =>
    chunkLine({
      delta: {
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } }],
      },
      finish_reason: null,
    });
  const completion = (args: string, finish: string) => ({
    kind: 'json' as const,
    body: {
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } }],
          },
          finish_reason: finish,
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
    },
  });
  const CUT = '{"city": "Par';

  test('a function call whose arguments are not a JSON object is upstream_invalid_response on every translated path, streamed or not', async () => {
    // Streamed Responses: the call's item and its delta went out, then one response.failed; never .done or completed.
    fixture.mock.enqueue(oneWrite(toolChunk(CUT), chunkLine({ delta: {}, finish_reason: 'tool_calls' }), DONE));
    const streamed = await readStream(fixture.url('/v1/responses'), responsesBody({ stream: true }), authHeaders());
    const events = namedEvents(streamed.text);
    assert.deepEqual(
      events.map((e) => e.event),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.failed',
      ],
    );
    const failed = events.at(-1)?.data.response as {
      status: string;
      error: { code: string; details: { reason: string } };
      output: Array<{ status: string; arguments: string }>;
    };
    assert.equal(failed.error.code, 'upstream_invalid_response');
    assert.match(failed.error.details.reason, /arguments of function call call_1 are not a JSON object/);
    assert.deepEqual(
      failed.output.map((o) => [o.status, o.arguments]),
      [['incomplete', CUT]],
    );

    // Streamed Messages: the tool_use block and its input_json_delta went out, then one error event; no message_stop.
    fixture.mock.enqueue(oneWrite(toolChunk(CUT), chunkLine({ delta: {}, finish_reason: 'tool_calls' }), DONE));
    const messages = namedEvents(
      (await readStream(fixture.url('/v1/messages'), messagesBody({ stream: true }), authHeaders())).text,
    );
    assert.deepEqual(
      messages.map((e) => e.event),
      ['message_start', 'content_block_start', 'ping', 'content_block_delta', 'error'],
    );
    assert.equal(messages.at(-1)?.data.code, 'upstream_invalid_response');
    // Found in an answer that arrived whole and well formed, it is not the upstream failing: two in a row leave its
    // circuit (threshold 2) closed, as a non-streamed answer refused after it arrived does.
    assert.equal(await circuit(), undefined);

    // Not streamed: the same 502 for both surfaces.
    for (const path of ['/v1/responses', '/v1/messages']) {
      fixture.mock.enqueue(completion('[1, 2]', 'tool_calls'));
      const answer = await call(fixture.url(path), {
        method: 'POST',
        headers: authHeaders(),
        body: path === '/v1/responses' ? responsesBody() : messagesBody(),
      });
      assert.equal(answer.status, 502, `${path}: ${answer.text}`);
      assert.equal(answer.json.code, 'upstream_invalid_response');
    }

    fixture.mock.enqueue({ kind: 'stream', content: ['ok'] });
    assert.equal((await readStream(fixture.url(CHAT_PATH), chatStream(), authHeaders())).status, 200);
    assert.equal(fixture.mock.chatRequests().length, 5, 'every call reached the upstream');
  });

  test('a translation that fails half-way through a read: every event already produced goes out, then the one terminal error', async () => {
    // One read: text, a call, then one chunk that adds to the call and starts another, which closes the first call
    // (its arguments are not a JSON object): the throw comes in the middle of that chunk.
    const twoCalls = chunkLine({
      delta: {
        tool_calls: [
          { index: 0, function: { arguments: '"Par' } },
          { index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      finish_reason: null,
    });
    const parts = [HI, toolChunk('{"city": '), twoCalls, chunkLine({ delta: {}, finish_reason: 'tool_calls' }), DONE];
    fixture.mock.enqueue(oneWrite(...parts));
    const responses = namedEvents(
      (await readStream(fixture.url('/v1/responses'), responsesBody({ stream: true }), authHeaders())).text,
    );
    assert.deepEqual(
      responses.map((e) => e.event),
      [
        ...RESPONSES_TEXT_EVENTS.slice(0, -1),
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.delta',
        'response.failed',
      ],
    );
    responses.forEach((e, i) => assert.equal(e.data.sequence_number, i, 'no gap in the sequence'));
    assert.deepEqual(
      responses.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta),
      ['{"city": ', '"Par'],
    );
    const failed = responses.at(-1)?.data.response as {
      error: { code: string };
      output: Array<{ type: string; status: string }>;
    };
    assert.equal(failed.error.code, 'upstream_invalid_response');
    assert.deepEqual(
      failed.output.map((o) => [o.type, o.status]),
      [
        ['message', 'completed'],
        ['function_call', 'incomplete'],
      ],
    );

    fixture.mock.enqueue(oneWrite(...parts));
    const messages = namedEvents(
      (await readStream(fixture.url('/v1/messages'), messagesBody({ stream: true }), authHeaders())).text,
    );
    assert.deepEqual(
      messages.map((e) => e.event),
      [
        'message_start',
        'content_block_start',
        'ping',
        'content_block_delta',
        'content_block_stop',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'error',
      ],
    );
    assert.equal(messages.at(-1)?.data.code, 'upstream_invalid_response');
  });

  test('arguments cut by the token limit are an incomplete answer, not a fault, streamed or not', async () => {
    fixture.mock.enqueue(oneWrite(toolChunk(CUT), chunkLine({ delta: {}, finish_reason: 'length' }), DONE));
    const streamed = namedEvents(
      (await readStream(fixture.url('/v1/responses'), responsesBody({ stream: true }), authHeaders())).text,
    );
    assert.equal(streamed.at(-1)?.event, 'response.incomplete');
    assert.deepEqual(
      (streamed.at(-1)?.data.response as { output: Array<{ status: string; arguments: string }> }).output.map((o) => [
        o.status,
        o.arguments,
      ]),
      [['incomplete', CUT]],
    );

    fixture.mock.enqueue(oneWrite(toolChunk(CUT), chunkLine({ delta: {}, finish_reason: 'length' }), DONE));
    const messages = namedEvents(
      (await readStream(fixture.url('/v1/messages'), messagesBody({ stream: true }), authHeaders())).text,
    );
    assert.deepEqual(
      messages.map((e) => e.event),
      [
        'message_start',
        'content_block_start',
        'ping',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.equal((messages[5]?.data.delta as { stop_reason: string }).stop_reason, 'max_tokens');

    fixture.mock.enqueue(completion(CUT, 'length'));
    const response = await call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers: authHeaders(),
      body: responsesBody(),
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.json.status, 'incomplete');
    fixture.mock.enqueue(completion(CUT, 'length'));
    const message = await call(fixture.url('/v1/messages'), {
      method: 'POST',
      headers: authHeaders(),
      body: messagesBody(),
    });
    assert.equal(message.status, 200, message.text);
    assert.equal(message.json.stop_reason, 'max_tokens');
    assert.deepEqual(message.json.content, [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} }]);
  });
});

/** A native stream of exactly these frames. */
const rawStream = (frames: string[]) => ({
  kind: 'raw' as const,
  handler: (_req: unknown, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const frame of frames) res.write(frame);
    res.end();
  },
});

describe("native streams: a frame that is not one of the API's events is refused, not passed on", () => {
  const fixture = useGateway({
    env: { UPSTREAM_KIND: 'openai' },
    configFile: { name: 'p.yaml', text: 'limits:\n  upstream_pause_max_seconds: 0\n' },
  });
  const created =
    'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_x","object":"response","status":"in_progress","output":[]}}\n\n';
  const completed =
    'event: response.completed\ndata: {"type":"response.completed","sequence_number":2,"response":{"id":"resp_x","object":"response","status":"completed","output":[]}}\n\n';
  const cases = [
    {
      name: 'an event with no event: line',
      frame: 'data: {"type":"response.output_text.delta","sequence_number":1,"delta":"GARBAGE"}\n\n',
      reason: /no event name/,
    },
    {
      name: 'an event whose data is not JSON',
      frame: 'event: response.output_text.delta\ndata: GARBAGE plain text\n\n',
      reason: /not a JSON object/,
    },
    {
      name: 'an event whose data is a JSON array',
      frame: 'event: response.output_text.delta\ndata: ["GARBAGE"]\n\n',
      reason: /not a JSON object/,
    },
  ];
  for (const c of cases) {
    test(`Responses to OpenAI: ${c.name} ends the stream with one upstream_stream_malformed error event`, async () => {
      fixture.mock.enqueue(rawStream([created, c.frame, completed]));
      const answer = await readStream(
        fixture.url('/v1/responses'),
        JSON.stringify({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }], stream: true }),
        authHeaders(),
      );
      assert.equal(answer.status, 200);
      const events = namedEvents(answer.text);
      assert.deepEqual(
        events.map((e) => e.event),
        ['response.created', 'error'],
        answer.text,
      );
      assert.equal(events[1]?.data.code, 'upstream_stream_malformed');
      assert.match((events[1]?.data.details as { reason: string }).reason, c.reason);
      assert.match(
        (events[1]?.data.details as { frame_preview: string }).frame_preview,
        /GARBAGE/,
        'named for the operator, never passed on as an event',
      );
    });
  }
});

describe('native streams to Anthropic: a frame that is not one of its events is refused', () => {
  const fx = useGateway({
    upstream: 'anthropic',
    key: 'sk-ant-native-frames-0123456789',
    models: ['- { id: claude-x, upstream: claude, upstream_model: claude-haiku-4-5 }'],
  });
  const start =
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}\n\n';
  const rest = [
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ];
  const cases = [
    {
      name: 'an event with no event: line',
      frame: 'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"GARBAGE"}}\n\n',
      reason: /no event name/,
    },
    {
      name: 'an event whose data is not JSON',
      frame: 'event: content_block_delta\ndata: GARBAGE\n\n',
      reason: /not a JSON object/,
    },
  ];
  for (const c of cases) {
    test(`Messages to Anthropic: ${c.name} ends the stream with one Anthropic error event`, async () => {
      fx.mock.enqueue({ kind: 'raw', frames: [start, c.frame, ...rest] });
      const answer = await readStream(
        `${fx.gw.url}/v1/messages`,
        JSON.stringify({
          model: 'claude-x',
          max_tokens: 16,
          stream: true,
          messages: [{ role: 'user', content: 'Hi' }],
        }),
        authHeaders(),
      );
      const events = namedEvents(answer.text);
      assert.deepEqual(
        events.map((e) => e.event),
        ['message_start', 'error'],
        answer.text,
      );
      assert.equal(events[1]?.data.code, 'upstream_stream_malformed');
      assert.equal((events[1]?.data.error as { type: string }).type, 'api_error');
      assert.match((events[1]?.data.details as { reason: string }).reason, c.reason);
    });
  }
});
