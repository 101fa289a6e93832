import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { responseProblems } from '../../helpers/responses-spec.js';
import { namedEvents, readStream } from '../../helpers/sse-client.js';

const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather for a location',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};

/** Every `response.*` event's `response`, and the parts of the content-part events, checked against the specification. */
function streamProblems(text: string): string[] {
  const problems: string[] = [];
  for (const { event = '', data } of namedEvents(text)) {
    if (data.response !== undefined)
      problems.push(...responseProblems(data.response).map((problem) => `${event}: response.${problem}`));
    if (event.startsWith('response.content_part.')) {
      const part = data.part as Record<string, unknown>;
      if (!Array.isArray(part.logprobs)) problems.push(`${event}: part.logprobs missing`);
      if (!Array.isArray(part.annotations)) problems.push(`${event}: part.annotations missing`);
    }
  }
  return problems;
}

describe('a translated response carries every field of the Responses specification, with OpenAI defaults', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: 'sk-spec-object-upstream-0123456789' } });

  test('JSON: every field present and typed; defaults as OpenAI sets them; what the caller set is echoed', async () => {
    const answer = await call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'gpt-4o-mini', input: 'Say hello.', tools: [WEATHER_TOOL] }),
    });
    assert.equal(answer.status, 200);
    const response = answer.json as Record<string, unknown>;
    assert.deepEqual(responseProblems(response), []);
    assert.equal(response.status, 'completed');
    assert.ok(
      typeof response.completed_at === 'number' && response.completed_at >= (response.created_at as number),
      'completed_at is set once completed, not before it was created',
    );
    for (const [field, value] of Object.entries({
      temperature: 1,
      top_p: 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      top_logprobs: 0,
      max_tool_calls: null,
      background: false,
      service_tier: 'default',
      safety_identifier: null,
      prompt_cache_key: null,
    }))
      assert.deepEqual(response[field], value, field);
    assert.deepEqual(response.text, { format: { type: 'text' }, verbosity: 'medium' });
    assert.deepEqual(response.tools, [{ ...WEATHER_TOOL, strict: null }], 'strict is echoed as not set');

    const set = await call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        input: 'Say hello.',
        temperature: 0.2,
        top_p: 0.9,
        max_tool_calls: 3,
        safety_identifier: 'user-7',
        prompt_cache_key: 'team-a',
        tools: [{ ...WEATHER_TOOL, strict: false }],
      }),
    });
    assert.equal(set.status, 200, set.text);
    const echoed = set.json as Record<string, unknown>;
    assert.deepEqual(responseProblems(echoed), []);
    assert.deepEqual(
      [echoed.temperature, echoed.top_p, echoed.max_tool_calls, echoed.safety_identifier, echoed.prompt_cache_key],
      [0.2, 0.9, 3, 'user-7', 'team-a'],
    );
    assert.equal((echoed.tools as Array<{ strict: unknown }>)[0]?.strict, false);
    const sent = fixture.mock.chatRequests().at(-1)?.json as Record<string, unknown>;
    assert.equal(sent.max_tool_calls, undefined, 'max_tool_calls bounds built-in tools: nothing to send to chat');

    const bad = await call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'gpt-4o-mini', input: 'x', max_tool_calls: 0 }),
    });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /max_tool_calls/);
  });

  test('a stream: every response.* event carries the whole object; content parts carry logprobs from the first event', async () => {
    fixture.mock.enqueue({ kind: 'stream', content: ['Hel', 'lo'] });
    const answer = await readStream(
      fixture.url('/v1/responses'),
      JSON.stringify({ model: 'gpt-4o-mini', input: 'Hi', stream: true, tools: [WEATHER_TOOL] }),
      authHeaders(),
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(streamProblems(answer.text), []);
    const events = namedEvents(answer.text);
    const created = events[0]?.data.response as Record<string, unknown>;
    const completed = events.at(-1)?.data.response as Record<string, unknown>;
    assert.equal(created.completed_at, null, 'not completed yet');
    assert.equal(typeof completed.completed_at, 'number');

    fixture.mock.enqueue({ kind: 'reset', afterChunks: 2, content: ['a', 'b', 'c'] });
    const failed = await readStream(
      fixture.url('/v1/responses'),
      JSON.stringify({ model: 'gpt-4o-mini', input: 'Hi', stream: true }),
      authHeaders(),
    );
    assert.equal(namedEvents(failed.text).at(-1)?.event, 'response.failed');
    assert.deepEqual(streamProblems(failed.text), [], 'the failed response conforms too');
    assert.equal((namedEvents(failed.text).at(-1)?.data.response as { completed_at: unknown }).completed_at, null);
  });
});

describe('the same over an Anthropic upstream', () => {
  const fx = useGateway({
    upstream: 'anthropic',
    key: 'sk-ant-spec-object-key-0123456789',
    models: ['- { id: claude-fast, upstream: claude, upstream_model: claude-haiku-4-5 }'],
  });

  test('JSON and stream conform', async () => {
    fx.mock.enqueue({ kind: 'message', text: 'Ahoy' });
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: { ...authHeaders(), authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ model: 'claude-fast', input: 'Hello', tools: [WEATHER_TOOL] }),
    });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(responseProblems(answer.json), []);

    fx.mock.enqueue({ kind: 'stream', text: ['Str', 'eamed'] });
    const stream = await readStream(
      `${fx.gw.url}/v1/responses`,
      JSON.stringify({ model: 'claude-fast', input: 'Hello', stream: true }),
      authHeaders(),
    );
    assert.deepEqual(streamProblems(stream.text), []);
    assert.equal(namedEvents(stream.text).at(-1)?.event, 'response.completed');
  });
});
