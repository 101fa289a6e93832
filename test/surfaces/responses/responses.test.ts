import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { MOCK_CONTENT, MOCK_TOOL_ARGUMENTS } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../../helpers/gateway.js';
import { ANTHROPIC_TOOL_ID } from '../../helpers/upstreams/anthropic.js';
import { call } from '../../helpers/http.js';
import { namedEvents, readStream } from '../../helpers/sse-client.js';
import { newApiKey } from '../../../src/auth/api-key.js';
import { SqliteKeyStore } from '../../../src/store/sqlite/sqlite-keys.js';

const UPSTREAM_KEY = 'sk-responses-upstream-key-0123456789';
const RESPONSES_PATH = '/v1/?route=responses';

/** Every event of a Responses stream: its `event:` line and its JSON data, in order. */

describe('the Responses API, translated to chat for an OpenAI-compatible upstream', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: UPSTREAM_KEY },
    configFile: { name: 'no-pause.yaml', text: 'limits:\n  upstream_pause_max_seconds: 0\n' },
  });
  const sdk = () => new OpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });

  test('responses.create: the input becomes chat messages upstream, and the answer a response object', async () => {
    const response = await sdk().responses.create({
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
        // How the AI SDK sends an earlier answer back (the SDK's own types want an id and status on it).
        {
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hello!' }],
        } as unknown as OpenAI.Responses.ResponseInputItem,
        { role: 'user', content: 'And now?' },
      ],
      temperature: 0.5,
      max_output_tokens: 50,
      metadata: { team: 'a' },
    });
    const sent = fixture.mock.chatRequests()[0]?.json as Record<string, unknown>;
    assert.deepEqual(sent.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'And now?' },
    ]);
    assert.equal(sent.temperature, 0.5);
    assert.equal(sent.max_tokens, 50);
    assert.equal(sent.metadata, undefined, 'metadata stays with the response, it is not a chat field');
    assert.equal(fixture.mock.chatRequests()[0]?.headers.authorization, `Bearer ${UPSTREAM_KEY}`);

    assert.match(response.id, /^resp_[0-9a-f]{32}$/);
    assert.equal(response.object, 'response');
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, MOCK_CONTENT);
    assert.equal(response.output.length, 1);
    const item = response.output[0];
    assert.equal(item?.type, 'message');
    assert.deepEqual(response.metadata, { team: 'a' });
    assert.equal(response.instructions, 'Be brief.');
    assert.ok(response.usage && response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
    assert.equal(response.usage?.total_tokens, response.usage.input_tokens + response.usage.output_tokens);
  });

  test('a function call round trip: function_call out, function_call_output back in as a tool message', async () => {
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        description: 'Weather',
        parameters: { type: 'object', properties: { location: { type: 'string' } } },
        strict: false,
      },
    ];
    const first = await sdk().responses.create({ model: 'gpt-4o-mini', input: 'Weather in Paris?', tools });
    const sentTools = (fixture.mock.chatRequests()[0]?.json as { tools: unknown[] }).tools;
    assert.deepEqual(sentTools, [
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather', parameters: tools[0]?.parameters, strict: false },
      },
    ]);
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call && call.type === 'function_call');
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, MOCK_TOOL_ARGUMENTS);
    assert.match(call.id ?? '', /^fc_/);

    await sdk().responses.create({
      model: 'gpt-4o-mini',
      tools,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: '{"temp":21}' },
      ],
    });
    const messages = (fixture.mock.chatRequests()[1]?.json as { messages: unknown[] }).messages;
    assert.deepEqual(messages, [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: MOCK_TOOL_ARGUMENTS } },
        ],
      },
      { role: 'tool', tool_call_id: call.call_id, content: '{"temp":21}' },
    ]);
  });

  test('a stream is the typed event sequence, byte for byte in order, each with the next sequence_number and no [DONE]', async () => {
    fixture.mock.enqueue({ kind: 'stream', content: ['Hel', 'lo'] });
    const answer = await readStream(
      fixture.url(RESPONSES_PATH),
      JSON.stringify({ model: 'gpt-4o-mini', input: 'Hi', stream: true }),
      authHeaders(),
    );
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(answer.text.includes('[DONE]'), false);
    const events = namedEvents(answer.text);
    assert.deepEqual(
      events.map((e) => e.event),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    events.forEach((e, i) => {
      assert.equal(e.data.type, e.event, 'the data names the same type as the event line');
      assert.equal(e.data.sequence_number, i);
    });
    assert.deepEqual(
      events
        .filter((e) => e.event === 'response.output_text.delta')
        .map((e) => [e.data.delta, e.data.output_index, e.data.content_index]),
      [
        ['Hel', 0, 0],
        ['lo', 0, 0],
      ],
    );
    const itemId = (events[2]?.data.item as { id: string }).id;
    for (const e of events.slice(3, 9)) assert.equal(e.data.item_id ?? (e.data.item as { id: string }).id, itemId);
    assert.equal(events[6]?.data.text, 'Hello');
    const completed = events[9]?.data.response as {
      status: string;
      output: Array<{ content: Array<{ text: string }> }>;
      usage: { output_tokens: number };
    };
    assert.equal(completed.status, 'completed');
    assert.equal(completed.output[0]?.content[0]?.text, 'Hello');
    assert.ok(
      completed.usage.output_tokens > 0,
      'the usage the gateway asked the upstream for is in the final response',
    );
    const created = events[0]?.data.response as { id: string; status: string };
    assert.equal(created.status, 'in_progress');
    assert.equal((events[9]?.data.response as { id: string }).id, created.id);
  });

  test('a streamed function call: its item, argument deltas, .done with the whole arguments, in order and indexed', async () => {
    fixture.mock.enqueue({ kind: 'stream' }); // with tools in the request, the mock streams a tool call
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} } }];
    const answer = await readStream(
      fixture.url(RESPONSES_PATH),
      JSON.stringify({ model: 'gpt-4o-mini', input: 'Weather?', tools, stream: true }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    const names = events.map((e) => e.event);
    assert.deepEqual(names.slice(0, 3), ['response.created', 'response.in_progress', 'response.output_item.added']);
    assert.deepEqual(names.slice(-3), [
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.ok(
      names.slice(3, -3).every((n) => n === 'response.function_call_arguments.delta') && names.length > 6,
      names.join(' '),
    );
    const item = events[2]?.data.item as {
      type: string;
      id: string;
      call_id: string;
      name: string;
      arguments: string;
      status: string;
    };
    assert.deepEqual(
      [item.type, item.name, item.arguments, item.status],
      ['function_call', 'get_weather', '', 'in_progress'],
    );
    for (const e of events.slice(2, -1)) assert.equal(e.data.output_index, 0);
    const deltas = events.filter((e) => e.event === 'response.function_call_arguments.delta');
    assert.equal(deltas.map((e) => e.data.delta).join(''), MOCK_TOOL_ARGUMENTS);
    assert.ok(deltas.every((e) => e.data.item_id === item.id));
    assert.equal(events.at(-3)?.data.arguments, MOCK_TOOL_ARGUMENTS);
    const done = events.at(-2)?.data.item as { status: string; arguments: string; call_id: string };
    assert.deepEqual([done.status, done.arguments, done.call_id], ['completed', MOCK_TOOL_ARGUMENTS, item.call_id]);
    events.forEach((e, i) => assert.equal(e.data.sequence_number, i));
  });

  test('the SDK stream helper assembles the streamed text and a streamed function call', async () => {
    fixture.mock.enqueue({ kind: 'stream', content: ['Hello', ' there'] });
    const stream = sdk().responses.stream({ model: 'gpt-4o-mini', input: 'Hi' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    assert.deepEqual(deltas, ['Hello', ' there']);
    // The SDK's stream helper builds the final response from the events (it sets no output_text convenience).
    const message = final.output.find((o) => o.type === 'message');
    assert.deepEqual(
      message?.type === 'message' ? message.content.map((c) => (c.type === 'output_text' ? c.text : '')) : [],
      ['Hello there'],
    );

    const tools = [
      { type: 'function' as const, name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: false },
    ];
    fixture.mock.enqueue({ kind: 'stream' }); // with tools in the request, the mock streams a tool call
    const withTool = await sdk().responses.stream({ model: 'gpt-4o-mini', input: 'Weather?', tools }).finalResponse();
    const call = withTool.output.find((o) => o.type === 'function_call');
    assert.ok(call && call.type === 'function_call');
    assert.equal(call.arguments, MOCK_TOOL_ARGUMENTS);
  });

  test('a length stop is incomplete (status and incomplete_details), not completed', async () => {
    fixture.mock.enqueue({
      kind: 'json',
      body: {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Cut' }, finish_reason: 'length' }],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      },
    });
    const response = await sdk().responses.create({ model: 'gpt-4o-mini', input: 'Hi', max_output_tokens: 1 });
    assert.equal(response.status, 'incomplete');
    assert.deepEqual(response.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(response.output_text, 'Cut');
  });

  test('a failure after the first event is one final response.failed event, never a completed one', async () => {
    fixture.mock.enqueue({ kind: 'reset', afterChunks: 2, content: ['a', 'b', 'c'] });
    const answer = await readStream(
      fixture.url(RESPONSES_PATH),
      JSON.stringify({ model: 'gpt-4o-mini', input: 'Hi', stream: true }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    const last = events[events.length - 1];
    assert.equal(last?.event, 'response.failed');
    assert.equal(
      events.some((e) => e.event === 'response.completed'),
      false,
    );
    const failed = last?.data.response as {
      status: string;
      error: { code: string };
      output: Array<{ status: string }>;
    };
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error.code, 'upstream_connection_reset');
    assert.equal(failed.output[0]?.status, 'incomplete');
    events.forEach((e, i) => assert.equal(e.data.sequence_number, i));
  });

  test('what cannot be translated is a 400 naming the field; an upstream error keeps our shape and OpenAI error object', async () => {
    const builtin = await call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers: authHeaders(),
      // A built-in tool that has no chat equivalent (web search has: see test/clients/codex-traffic.test.ts).
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        input: 'Hi',
        tools: [{ type: 'code_interpreter', container: { type: 'auto' } }],
        frobnicate: 1,
      }),
    });
    assert.equal(builtin.status, 400);
    const body = builtin.json as {
      code: string;
      details: { errors: Array<{ field: string }> };
      error: { code: string; param: string };
    };
    assert.equal(body.code, 'capability_not_supported');
    assert.deepEqual(body.details.errors.map((e) => e.field).sort(), ['frobnicate', 'tools[0].type']);
    assert.equal(body.error.code, 'capability_not_supported');
    assert.equal(fixture.mock.chatRequests().length, 0, 'nothing reached the upstream');

    const badItem = await call(fixture.url(RESPONSES_PATH), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        input: [{ type: 'function_call_output', call_id: 'call_unknown', output: 'x' }],
      }),
    });
    assert.equal(badItem.status, 400);
    assert.deepEqual(
      (badItem.json as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field),
      ['input[0].call_id'],
    );

    const schema = await call(fixture.url(RESPONSES_PATH), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'gpt-4o-mini', input: 5, temperature: 'hot' }),
    });
    assert.equal(schema.status, 400);
    assert.equal((schema.json as { code: string }).code, 'validation_failed');
    const fields = (schema.json as { details: { errors: Array<{ field: string }> } }).details.errors.map(
      (e) => e.field,
    );
    assert.ok(fields.includes('body.input') || fields.includes('input'), JSON.stringify(fields));

    fixture.mock.enqueue({
      kind: 'error',
      status: 400,
      body: { error: { message: 'bad thing', type: 'invalid_request_error', param: null, code: null } },
    });
    await assert.rejects(
      sdk().responses.create({ model: 'gpt-4o-mini', input: 'Hi' }),
      (error: unknown) => error instanceof OpenAI.BadRequestError,
    );
  });
});

describe('stored responses: previous_response_id, retrieval, input items, deletion, per caller', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: UPSTREAM_KEY } });
  const sdk = (key = ADMIN_TOKEN) => new OpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: key, maxRetries: 0 });

  test('previous_response_id continues the conversation: earlier turns and answers go upstream, not the earlier instructions', async () => {
    const first = await sdk().responses.create({
      model: 'gpt-4o-mini',
      instructions: 'Old rules.',
      input: 'My name is Ada.',
    });
    fixture.mock.enqueue({ kind: 'stream', content: ['Ada', '!'] });
    const second = await sdk()
      .responses.stream({
        model: 'gpt-4o-mini',
        instructions: 'New rules.',
        input: 'What is my name?',
        previous_response_id: first.id,
      })
      .finalResponse();
    assert.equal(second.previous_response_id, first.id);
    const messages = (fixture.mock.chatRequests()[1]?.json as { messages: unknown[] }).messages;
    assert.deepEqual(messages, [
      { role: 'system', content: 'New rules.' },
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: MOCK_CONTENT },
      { role: 'user', content: 'What is my name?' },
    ]);
    // A third turn on the streamed one carries all of it.
    await sdk().responses.create({ model: 'gpt-4o-mini', input: 'Thanks', previous_response_id: second.id });
    const third = (fixture.mock.chatRequests()[2]?.json as { messages: Array<{ role: string; content: unknown }> })
      .messages;
    assert.deepEqual(
      third.map((m) => [m.role, m.content]),
      [
        ['user', 'My name is Ada.'],
        ['assistant', MOCK_CONTENT],
        ['user', 'What is my name?'],
        ['assistant', 'Ada!'],
        ['user', 'Thanks'],
      ],
    );
  });

  test('retrieve, list input items (paged, both orders), delete; then it is gone everywhere', async () => {
    const created = await sdk().responses.create({
      model: 'gpt-4o-mini',
      input: [
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
        { role: 'user', content: 'three' },
      ],
    });
    const retrieved = await sdk().responses.retrieve(created.id);
    assert.equal(retrieved.id, created.id);
    assert.equal(retrieved.output_text, MOCK_CONTENT);

    const texts = (items: Array<{ type: string; content?: unknown }>) =>
      items.map((i) => (i.content as Array<{ text: string }>)[0]?.text);
    const all = [];
    for await (const item of sdk().responses.inputItems.list(created.id, { limit: 2, order: 'asc' })) all.push(item);
    assert.deepEqual(texts(all as never), ['one', 'two', 'three']);
    assert.ok(all.every((i) => /^msg_/.test(i.id ?? '')));
    const newestFirst = await call(fixture.url(`/v1/?route=responses&id=${created.id}&view=input_items&limit=2`), {
      headers: authHeaders(),
    });
    const page = newestFirst.json as { data: Array<{ content: Array<{ text: string }> }>; has_more: boolean };
    assert.deepEqual(
      page.data.map((i) => i.content[0]?.text),
      ['three', 'two'],
    );
    assert.equal(page.has_more, true);

    const deleted = await call(fixture.url(`/v1/responses/${created.id}`), {
      method: 'DELETE',
      headers: authHeaders(),
    });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.json, { id: created.id, object: 'response', deleted: true });
    await assert.rejects(
      sdk().responses.retrieve(created.id),
      (e: unknown) => e instanceof OpenAI.NotFoundError && e.code === 'response_not_found',
    );
    const viaRoute = await call(fixture.url(`/v1/?route=responses&id=${created.id}`), { headers: authHeaders() });
    assert.equal(viaRoute.status, 404);
    await assert.rejects(
      sdk().responses.create({ model: 'gpt-4o-mini', input: 'x', previous_response_id: created.id }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
  });

  test('store: false keeps nothing; another caller cannot see, continue or delete a response', async () => {
    const unstored = await sdk().responses.create({ model: 'gpt-4o-mini', input: 'secret', store: false });
    assert.equal((unstored as unknown as { store: boolean }).store, false);
    await assert.rejects(sdk().responses.retrieve(unstored.id), (e: unknown) => e instanceof OpenAI.NotFoundError);

    const mine = await sdk().responses.create({ model: 'gpt-4o-mini', input: 'mine' });
    // A scoped key of this gateway, allowed the Responses route only (written to its key store, as the CLI does).
    const issued = newApiKey('dev');
    await new SqliteKeyStore(fixture.gw.store.db).create({
      keyId: issued.keyId,
      environment: 'dev',
      hash: issued.hash,
      name: 'other-team',
      routes: ['responses'],
      models: ['*'],
      createdMs: Date.now(),
    });
    const other = sdk(issued.key);
    await assert.rejects(other.responses.retrieve(mine.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(
      other.responses.create({ model: 'gpt-4o-mini', input: 'x', previous_response_id: mine.id }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    await assert.rejects(other.responses.delete(mine.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    assert.equal((await sdk().responses.retrieve(mine.id)).id, mine.id, 'still there for its owner');
    // The key may call the Responses route but not chat: each route is its own right.
    const chat = await call(fixture.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { authorization: `Bearer ${issued.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(chat.status, 403);
    assert.equal((chat.json as { code: string }).code, 'route_not_allowed');
  });
});

describe('the Responses API over an Anthropic upstream (Responses -> chat -> Messages, and back)', () => {
  const fx = useGateway({
    upstream: 'anthropic',
    key: 'sk-ant-responses-key-0123456789',
    models: ['- { id: claude-fast, upstream: claude, upstream_model: claude-haiku-4-5 }'],
  });
  const sdk = () => new OpenAI({ baseURL: `${fx.gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });

  test('JSON and stream: instructions become Anthropic system text, the answer a response object and typed events', async () => {
    fx.mock.enqueue({ kind: 'message', text: 'Hi from Claude' });
    const response = await sdk().responses.create({
      model: 'claude-fast',
      instructions: 'Be kind.',
      input: 'Hello',
      max_output_tokens: 64,
    });
    assert.equal(response.output_text, 'Hi from Claude');
    const sent = fx.mock.messageRequests()[0]?.body as unknown as {
      system?: unknown;
      max_tokens: number;
      model: string;
      messages: unknown[];
    };
    assert.equal(sent.model, 'claude-haiku-4-5');
    assert.equal(sent.max_tokens, 64);
    assert.equal(JSON.stringify(sent.system).includes('Be kind.'), true);
    assert.ok(response.usage && response.usage.input_tokens > 0);

    fx.mock.enqueue({ kind: 'stream', text: ['Str', 'eamed'] });
    const answer = await readStream(
      `${fx.gw.url}/v1/responses`,
      JSON.stringify({ model: 'claude-fast', input: 'Hello', stream: true }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    assert.equal(events[events.length - 1]?.event, 'response.completed');
    assert.equal(
      events
        .filter((e) => e.event === 'response.output_text.delta')
        .map((e) => e.data.delta)
        .join(''),
      'Streamed',
    );
    events.forEach((e, i) => assert.equal(e.data.sequence_number, i));
  });

  test('a function tool is called through Anthropic and answered with function_call_output', async () => {
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        parameters: { type: 'object', properties: { location: { type: 'string' } } },
        strict: false,
      },
    ];
    fx.mock.enqueue({ kind: 'message' }); // with tools, the mock answers with a tool_use block
    const first = await sdk().responses.create({ model: 'claude-fast', input: 'Weather?', tools });
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call && call.type === 'function_call');
    assert.equal(call.call_id, ANTHROPIC_TOOL_ID);
    fx.mock.enqueue({ kind: 'message', text: 'Sunny' });
    const second = await sdk().responses.create({
      model: 'claude-fast',
      tools,
      input: [
        { role: 'user', content: 'Weather?' },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
      ],
    });
    assert.equal(second.output_text, 'Sunny');
    const sent = fx.mock.messageRequests().at(-1)?.body as unknown as {
      messages: Array<{ role: string; content: Array<{ type: string; tool_use_id?: string }> }>;
    };
    const result = sent.messages.flatMap((m) => m.content).find((c) => c.type === 'tool_result');
    assert.equal(result?.tool_use_id, ANTHROPIC_TOOL_ID);
  });
});

describe('Idempotency-Key on the Responses route', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: UPSTREAM_KEY } });

  test('a keyed stream is replayed as the same event stream without a second upstream call; the key is scoped to the route', async () => {
    fixture.mock.enqueue({ kind: 'stream', content: ['Once', ' only'] });
    const body = JSON.stringify({ model: 'gpt-4o-mini', input: 'Hi', stream: true });
    const headers = authHeaders({ 'idempotency-key': 'responses-key-1' });
    const first = await readStream(fixture.url(RESPONSES_PATH), body, headers);
    const again = await readStream(fixture.url('/v1/responses'), body, headers);
    assert.equal(fixture.mock.chatRequests().length, 1);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(again.text, first.text, 'the same events, byte for byte (same response id and sequence numbers)');
    assert.equal(namedEvents(again.text).at(-1)?.event, 'response.completed');

    // The same key and body on the chat route is another request: 422, not a replay of the Responses answer.
    const chat = await call(fixture.url('/v1/?route=chat'), {
      method: 'POST',
      headers,
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        input: 'Hi',
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    assert.notEqual(chat.headers['idempotent-replayed'], 'true');
  });

  test('a stream that failed is not stored: the retry with the key runs again', async () => {
    fixture.mock.enqueue({ kind: 'reset', afterChunks: 1 }, { kind: 'stream', content: ['ok'] });
    const body = JSON.stringify({ model: 'gpt-4o-mini', input: 'Hi', stream: true });
    const headers = authHeaders({ 'idempotency-key': 'responses-key-2' });
    const failed = await readStream(fixture.url(RESPONSES_PATH), body, headers);
    assert.equal(namedEvents(failed.text).at(-1)?.event, 'response.failed');
    const retried = await readStream(fixture.url(RESPONSES_PATH), body, headers);
    assert.equal(namedEvents(retried.text).at(-1)?.event, 'response.completed');
    assert.equal(fixture.mock.chatRequests().length, 2);
  });
});

describe('native forwarding: what only the Responses API has goes as it is to an OpenAI upstream', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: UPSTREAM_KEY, UPSTREAM_KIND: 'openai' },
    // `responses: chat`: this model's requests go through chat whenever chat carries them exactly.
    configFile: {
      name: 'chat-path.yaml',
      text: 'models:\n  - { id: via-chat, upstream: default, upstream_model: gpt-4o-mini, responses: chat }\n',
    },
  });
  const sdk = () => new OpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  const nativeCalls = () => fixture.mock.requests.filter((r) => r.path === '/v1/responses');

  test('a built-in tool is forwarded byte for byte; the answer comes back as the upstream wrote it, usage recorded', async () => {
    const body = JSON.stringify({
      model: 'gpt-4o-mini',
      input: 'news?',
      tools: [{ type: 'web_search' }],
      include: ['reasoning.encrypted_content'],
    });
    const answer = await call(fixture.url('/v1/responses'), { method: 'POST', headers: authHeaders(), body });
    assert.equal(answer.status, 200);
    assert.equal(nativeCalls()[0]?.body, body, 'the caller bytes, untouched');
    assert.equal(nativeCalls()[0]?.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
    assert.equal(fixture.mock.chatRequests().length, 0, 'not translated');
    const response = answer.json as { id: string; output: Array<{ type: string }> };
    assert.equal(response.id, 'resp_native_1');
    assert.deepEqual(
      response.output.map((o) => o.type),
      ['web_search_call', 'message'],
    );
    const line = fixture.gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.route === 'responses')
      .at(-1);
    assert.equal(line?.prompt_tokens, 11);
    assert.equal(line?.completion_tokens, 3);

    // A plain request goes as it is too: every upstream of the model speaks the Responses API.
    const plainBody = JSON.stringify({ model: 'gpt-4o-mini', input: 'hi' });
    const plain = await call(fixture.url('/v1/responses'), { method: 'POST', headers: authHeaders(), body: plainBody });
    assert.equal(plain.status, 200);
    assert.equal(nativeCalls()[1]?.body, plainBody, 'forwarded natively by default, the caller bytes untouched');
    assert.equal(fixture.mock.chatRequests().length, 0);
    // A model configured `responses: chat` goes through chat when the translation carries it exactly.
    const viaChat = await sdk().responses.create({ model: 'via-chat', input: 'hi' });
    assert.equal(viaChat.output_text, MOCK_CONTENT);
    assert.equal(fixture.mock.chatRequests().length, 1);
    assert.equal(nativeCalls().length, 2);
  });

  test('a native stream passes its events through in order, ends with response.completed, and is replayed under its key', async () => {
    const body = JSON.stringify({
      model: 'gpt-4o-mini',
      input: 'news?',
      tools: [{ type: 'web_search' }],
      stream: true,
    });
    const headers = authHeaders({ 'idempotency-key': 'native-stream-1' });
    const first = await readStream(fixture.url(RESPONSES_PATH), body, headers);
    const events = namedEvents(first.text);
    assert.deepEqual(
      events.map((e) => e.event),
      ['response.created', 'response.output_text.delta', 'response.completed'],
    );
    assert.deepEqual(
      events.map((e) => e.data.sequence_number),
      [0, 1, 2],
    );
    const again = await readStream(fixture.url(RESPONSES_PATH), body, headers);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.equal(nativeCalls().length, 1);
  });

  test('an upstream response.failed ends our stream with one error event carrying our code, never a completion', async () => {
    const answer = await readStream(
      fixture.url(RESPONSES_PATH),
      JSON.stringify({
        model: 'gpt-4o-mini',
        input: 'x',
        tools: [{ type: 'web_search' }],
        stream: true,
        metadata: { fail: 'yes' },
      }),
      authHeaders(),
    );
    const events = namedEvents(answer.text);
    assert.deepEqual(
      events.map((e) => e.event),
      ['response.created', 'error'],
    );
    assert.equal(events[1]?.data.code, 'upstream_stream_error');
    assert.equal((events[1]?.data.details as { upstream_message?: string }).upstream_message, 'native failure');
  });

  test('a hostile native upstream: a final event that is not JSON, or a stream cut before its final event, ends in one error event', async () => {
    const native = (events: string[]) => ({
      kind: 'raw' as const,
      handler: (_req: unknown, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const e of events) res.write(e);
        res.end();
      },
    });
    const created =
      'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_x","object":"response","status":"in_progress","output":[]}}\n\n';
    const cases = [
      { events: [created, 'event: response.completed\ndata: {not json\n\n'], code: 'upstream_stream_malformed' },
      { events: [created], code: 'upstream_stream_truncated' },
    ];
    for (const { events, code } of cases) {
      fixture.mock.enqueue(native(events)); // a queued raw behaviour answers the native /v1/responses call
      const original = fixture.mock.requests.length;
      const answer = await readStream(
        fixture.url(RESPONSES_PATH),
        JSON.stringify({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }], stream: true }),
        authHeaders(),
      );
      const parsed = namedEvents(answer.text);
      assert.deepEqual(
        parsed.map((e) => e.event),
        ['response.created', 'error'],
        `${code}: ${answer.text.slice(0, 300)}`,
      );
      assert.equal(parsed[1]?.data.code, code);
      assert.ok(fixture.mock.requests.length > original);
    }
  });

  test('a native-only request continuing a stored (translated) conversation carries that conversation as input items', async () => {
    const first = await sdk().responses.create({ model: 'via-chat', input: 'My name is Ada.' });
    assert.equal(fixture.mock.chatRequests().length, 1, 'the first turn was translated (and stored by the gateway)');
    await sdk().responses.create({
      model: 'via-chat',
      input: 'Search my name',
      previous_response_id: first.id,
      tools: [{ type: 'web_search' }],
    });
    const sent = nativeCalls().at(-1)?.json as { input: unknown[]; previous_response_id?: string };
    assert.equal(sent.previous_response_id, undefined, 'our id means nothing upstream');
    assert.deepEqual(sent.input, [
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: MOCK_CONTENT },
      { role: 'user', content: 'Search my name' },
    ]);
  });
});

describe('native forwarding to Azure OpenAI (its v1 Responses API)', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: UPSTREAM_KEY },
    configFile: {
      name: 'azure.yaml',
      // The mock serves /v1/...: a base_url ending in /v1 (as {resource}/openai/v1 would).
      text: (base) =>
        `upstreams:\n  - { name: az, kind: azure, base_url: "${base}", api_key_env: UPSTREAM_API_KEY }\nmodels:\n  - { id: gpt-az, upstream: az, upstream_model: my-deployment }\n`,
    },
  });

  test('the request goes to {base}/responses with the deployment as model and the key in api-key', async () => {
    const answer = await call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'gpt-az', input: 'x', tools: [{ type: 'web_search' }] }),
    });
    assert.equal(answer.status, 200);
    const sent = fixture.mock.requests.filter((r) => r.path === '/v1/responses').at(-1);
    assert.equal((sent?.json as { model: string }).model, 'my-deployment');
    assert.equal(sent?.headers['api-key'], UPSTREAM_KEY);
    assert.equal(sent?.headers.authorization, undefined);
  });
});
