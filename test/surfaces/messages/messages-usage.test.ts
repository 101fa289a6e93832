/**
 * The usage of a translated Messages answer, as Anthropic sends it (docs/messages.md, "Usage"): both cache figures
 * always there (0 when none) from the upstream's cache reads and writes; a stream's `message_start` with the prompt's
 * tokens as the gateway counted them before the upstream answered (its admission estimate), and its final
 * `message_delta` with the upstream's own figures, which the Anthropic SDK's stream helper keeps. A mock
 * OpenAI-compatible upstream on a real socket reports cache reads and writes (OpenAI's and OpenRouter's fields).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { namedEvents, readStream } from '../../helpers/sse-client.js';
import { estimatePromptTokens } from '../../../src/core/tokens/token-estimate.js';
import { messagesToChat, type MessagesRequest } from '../../../src/surfaces/messages/request-to-chat.js';

const REQUEST = {
  model: 'gpt-4o-mini',
  max_tokens: 64,
  system: 'You answer in one short sentence, and you never use more than twelve words in it.',
  messages: [{ role: 'user' as const, content: 'What is the capital of France, and what river runs through it?' }],
} satisfies MessagesRequest;

/** The upstream's usage: 5,000 prompt tokens of which 3,000 read from its cache and 500 written to it. */
const CACHED_USAGE = {
  prompt_tokens: 5000,
  completion_tokens: 7,
  total_tokens: 5007,
  prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 500 },
};
const SHOWN_CACHED = { input_tokens: 1500, cache_creation_input_tokens: 500, cache_read_input_tokens: 3000 };

function completion(usage: object) {
  return {
    id: 'chatcmpl-u',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Paris, on the Seine.' }, finish_reason: 'stop' }],
    usage,
  };
}

function streamChunks(usage: object): string[] {
  const frame = (payload: object) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-u', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', ...payload })}\n\n`;
  return [
    frame({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Paris,' }, finish_reason: null }] }),
    frame({ choices: [{ index: 0, delta: { content: ' on the Seine.' }, finish_reason: 'stop' }] }),
    frame({ choices: [], usage }),
    'data: [DONE]\n\n',
  ];
}

describe('the usage of a translated Messages answer, as Anthropic sends it', () => {
  const fixture = useGateway();
  const post = (body: object) =>
    call(fixture.url('/v1/messages'), {
      method: 'POST',
      headers: authHeaders({ 'anthropic-version': '2023-06-01' }),
      body: JSON.stringify(body),
    });

  test('JSON: both cache figures, from the upstream’s cache reads and writes, and 0 when it had none', async () => {
    fixture.mock.enqueue({ kind: 'json', body: completion(CACHED_USAGE) });
    const cached = await post(REQUEST);
    assert.equal(cached.status, 200, cached.text);
    assert.deepEqual(cached.json.usage, { ...SHOWN_CACHED, output_tokens: 7 });

    fixture.mock.enqueue({
      kind: 'json',
      body: completion({ prompt_tokens: 40, completion_tokens: 7, total_tokens: 47 }),
    });
    const uncached = await post(REQUEST);
    assert.deepEqual(uncached.json.usage, {
      input_tokens: 40,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 7,
    });
  });

  test('stream: message_start has the prompt’s count known before the answer; message_delta the upstream’s', async () => {
    fixture.mock.enqueue({ kind: 'stream', chunks: streamChunks(CACHED_USAGE) });
    const streamed = await readStream(
      fixture.url('/v1/messages'),
      JSON.stringify({ ...REQUEST, stream: true }),
      authHeaders({ 'anthropic-version': '2023-06-01' }),
    );
    assert.equal(streamed.status, 200, streamed.text);
    const events = namedEvents(streamed.text);
    const start = events.find((e) => e.event === 'message_start')?.data.message as { usage: object };
    const chat = messagesToChat(REQUEST);
    const estimate = estimatePromptTokens(chat.messages, chat.tools);
    assert.ok(estimate > 20, String(estimate));
    assert.deepEqual(start.usage, {
      input_tokens: estimate,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 0,
    });
    const delta = events.find((e) => e.event === 'message_delta')?.data as { usage: object };
    assert.deepEqual(delta.usage, { ...SHOWN_CACHED, output_tokens: 7 });
  });

  test("the Anthropic SDK's stream helper ends with the upstream's figures, not the estimate", async () => {
    fixture.mock.enqueue({ kind: 'stream', chunks: streamChunks(CACHED_USAGE) });
    const sdk = new Anthropic({ baseURL: fixture.gw.url, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const message = await sdk.messages.stream(REQUEST).finalMessage();
    assert.equal(message.usage.input_tokens, SHOWN_CACHED.input_tokens);
    assert.equal(message.usage.cache_read_input_tokens, SHOWN_CACHED.cache_read_input_tokens);
    assert.equal(message.usage.cache_creation_input_tokens, SHOWN_CACHED.cache_creation_input_tokens);
    assert.equal(message.usage.output_tokens, 7);
  });
});
