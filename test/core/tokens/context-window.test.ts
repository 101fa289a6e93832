import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { countPromptTokens, encodingFor } from '../../../src/core/tokens/context-window.js';
import type { ChatMessage } from '../../../src/providers/provider-contract.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';

describe('prompt token counting', () => {
  test('OpenAI families use their BPE with the chat framing; other models the documented estimate', async () => {
    assert.equal(encodingFor('gpt-4o-mini'), 'o200k_base');
    assert.equal(encodingFor('gpt-4-turbo'), 'cl100k_base');
    assert.equal(encodingFor('claude-sonnet-4-5'), undefined);
    // "Hello" is one o200k token: 3 (reply priming) + 3 (message framing) + 1.
    assert.equal(await countPromptTokens([{ role: 'user', content: 'Hello' }], 'gpt-4o', undefined), 7);
    // 40 characters / 4 + 4 per message.
    assert.equal(
      await countPromptTokens([{ role: 'user', content: 'x'.repeat(40) }], 'claude-haiku-4-5', undefined),
      14,
    );
  });
});

describe('context window check before the upstream call', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(headers), body: JSON.stringify(body) });
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: {
        name: 'cw.yaml',
        text: 'models:\n  - { id: small, upstream: default, upstream_model: gpt-4o, context_window: 100 }\n',
      },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  const turn = (n: number) => [
    { role: 'user', content: `question ${n}: ${'lorem ipsum dolor '.repeat(30)}` },
    { role: 'assistant', content: `answer ${n}` },
  ];

  test('too long: 400 context_length_exceeded with the numbers, and the upstream is not called', async () => {
    const long = await chat({ model: 'small', messages: [{ role: 'user', content: 'word '.repeat(200) }] });
    assert.equal(long.status, 400);
    assert.equal(long.json.code, 'context_length_exceeded');
    const d = long.json.details as { model: string; context_window: number; prompt_tokens: number; max_tokens: number };
    assert.deepEqual([d.model, d.context_window, d.max_tokens], ['small', 100, 0]);
    assert.ok(d.prompt_tokens > 100, `prompt_tokens ${d.prompt_tokens}`);
    const withMax = await chat({ model: 'small', max_tokens: 95, messages: [{ role: 'user', content: 'Hello' }] });
    assert.equal(withMax.status, 400, 'prompt 7 + max_tokens 95 > 100');
    assert.equal((withMax.json.details as { prompt_tokens: number }).prompt_tokens, 7);
    assert.equal(mock.chatRequests().length, 0);
    const fits = await chat({ model: 'small', max_tokens: 90, messages: [{ role: 'user', content: 'Hello' }] });
    assert.equal(fits.status, 200);
  });

  test('X-Context-Overflow: truncate drops the oldest turns, keeps the system message and the last turn', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      ...turn(1),
      ...turn(2),
      { role: 'user', content: 'last question' },
    ];
    const refused = await chat({ model: 'small', messages });
    assert.equal(refused.status, 400);
    const answer = await chat({ model: 'small', messages }, { 'x-context-overflow': 'truncate' });
    assert.equal(answer.status, 200, answer.text);
    const sent = mock.chatRequests()[0]?.json as { messages: Array<{ role: string; content: string }> };
    assert.deepEqual(
      sent.messages.map((m) => m.content.slice(0, 13)),
      ['Be brief.', 'last question'],
    );
    const bogus = await chat({ model: 'small', messages }, { 'x-context-overflow': 'shorten' });
    assert.equal(bogus.status, 400);
    assert.equal(bogus.json.code, 'invalid_header');
  });
});

test('one estimate: rate-limit admission and the context check of a model without a public tokenizer count alike, tool calls and tools included', async () => {
  const { estimateTokens } = await import('../../../src/core/limits/rate-limit-service.js');
  const messages: ChatMessage[] = [
    { role: 'user', content: 'x'.repeat(40) },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"a"}' } }],
    },
  ];
  const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
  // 40 characters + "lookup" + '{"q":"a"}' (15) + the tools' JSON, four to a token, plus 4 per message.
  const expected = Math.ceil((40 + 15 + JSON.stringify(tools).length) / 4) + 8;
  assert.equal(estimateTokens(messages, tools, 100).prompt, expected);
  assert.equal(await countPromptTokens(messages, 'claude-haiku-4-5', tools), expected);
  assert.equal(
    estimateTokens(messages, undefined, 100).prompt,
    Math.ceil(55 / 4) + 8,
    'a tool call counts even without tool definitions',
  );
});
