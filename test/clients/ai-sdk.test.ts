import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { ADMIN_TOKEN, useGateway } from '../helpers/gateway.js';

describe('the Vercel AI SDK (ai + @ai-sdk/openai) against the gateway, base URL and key changed only', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: 'sk-ai-sdk-upstream-key-0123456789' } });
  const provider = () => createOpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: ADMIN_TOKEN });

  test('generateText with the default model (the Responses API): the text and the usage', async () => {
    fixture.mock.enqueue({
      kind: 'json',
      body: {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
      },
    });
    const result = await generateText({
      model: provider()('gpt-4o-mini'),
      system: 'Answer in French.',
      prompt: 'Hello',
    });
    assert.equal(result.text, 'Bonjour');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.usage.inputTokens, 7);
    assert.equal(result.usage.outputTokens, 2);
    const request = fixture.mock.requests.find((r) => r.path.endsWith('/chat/completions'));
    const messages = (request?.json as { messages: Array<{ role: string }> }).messages;
    assert.deepEqual(
      messages.map((m) => m.role),
      ['system', 'user'],
    );
    assert.ok(
      fixture.gw.logLines.some((l) => l.includes('"url":"/v1/responses"') && l.includes('"status":200')),
      'the SDK called POST /v1/responses',
    );
  });

  test('streamText streams the deltas and ends with the usage', async () => {
    fixture.mock.enqueue({ kind: 'stream', content: ['Bon', 'jour'] });
    const result = streamText({ model: provider()('gpt-4o-mini'), prompt: 'Hello' });
    const parts: string[] = [];
    for await (const delta of result.textStream) parts.push(delta);
    assert.deepEqual(parts, ['Bon', 'jour']);
    assert.equal(await result.finishReason, 'stop');
    assert.ok(((await result.usage).outputTokens ?? 0) > 0);
  });

  test('a tool call comes back as a tool call, and its result goes up as a tool message', async () => {
    const { tool, jsonSchema, stepCountIs } = await import('ai');
    const weather = tool({
      description: 'Weather',
      inputSchema: jsonSchema<{ location: string }>({
        type: 'object',
        properties: { location: { type: 'string' } },
        required: ['location'],
        additionalProperties: false,
      }),
      execute: async ({ location }) => ({ location, temp: 21 }),
    });
    fixture.mock.enqueue({ kind: 'json' }); // with tools in the request, the mock answers with a tool call
    fixture.mock.enqueue({
      kind: 'json',
      body: {
        id: 'c2',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'It is 21.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 20, completion_tokens: 4, total_tokens: 24 },
      },
    });
    const result = await generateText({
      model: provider()('gpt-4o-mini'),
      prompt: 'Weather in Paris?',
      tools: { weather },
      stopWhen: stepCountIs(2),
    });
    assert.equal(result.text, 'It is 21.');
    assert.equal(result.steps.length, 2);
    const second = fixture.mock.chatRequests()[1]?.json as {
      messages: Array<{ role: string; tool_call_id?: string; content?: unknown; tool_calls?: Array<{ id: string }> }>;
    };
    const call = second.messages.find((m) => m.role === 'assistant')?.tool_calls?.[0];
    const answer = second.messages.find((m) => m.role === 'tool');
    assert.ok(call, JSON.stringify(second.messages));
    assert.equal(answer?.tool_call_id, call.id);
    assert.deepEqual(JSON.parse(String(answer?.content)), { location: 'Paris', temp: 21 });
  });
});
