import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toAnthropicRequest } from '../src/providers/anthropic/translate-request.js';
import { messagesToChat, type MessagesRequest } from '../src/surfaces/messages/request-to-chat.js';
import { completionToMessage } from '../src/surfaces/messages/chat-to-message.js';

const IMAGE = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
const IMAGE_URL = { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } };
const WEATHER = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

/**
 * Conversations in the forms both APIs can express (from Anthropic's documented examples), each taken through the
 * gateway's two translations: Messages -> chat (the ingress) -> Messages (the Anthropic provider). Nothing may be
 * lost or changed.
 */
const EXAMPLES: Array<{ name: string; request: MessagesRequest }> = [
  { name: 'text, system, sampling and stop sequences', request: { model: 'm', max_tokens: 100, system: 'Be brief.', temperature: 0.3, top_p: 0.9, top_k: 40, stop_sequences: ['END'], metadata: { user_id: 'u-1' }, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }, { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] }, { role: 'user', content: [{ type: 'text', text: 'Bye' }] }] } },
  { name: 'images (base64 and URL) beside text', request: { model: 'm', max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, IMAGE, IMAGE_URL] }] } },
  {
    name: 'a tool round trip: text then tool_use, tool_result then more text',
    request: {
      model: 'm',
      max_tokens: 100,
      tools: [WEATHER],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }, { type: 'tool_result', tool_use_id: 'toolu_2', content: 'rain' }, { type: 'text', text: 'Thanks' }] },
      ],
    },
  },
  { name: 'a forced tool', request: { model: 'm', max_tokens: 10, tools: [WEATHER], tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: [{ type: 'text', text: 'Paris' }] }] } },
];

describe('Messages translation (pure functions)', () => {
  for (const { name, request } of EXAMPLES) {
    test(`round trip Messages -> chat -> Messages loses nothing: ${name}`, () => {
      const back = toAnthropicRequest(messagesToChat(request), request.model);
      assert.deepEqual(back, request);
    });
  }

  test('a tool_result marked is_error says so in the text; thinking blocks of earlier turns are left out', () => {
    const chat = messagesToChat({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'tool_use', id: 't1', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'boom' }], is_error: true }] },
      ],
    });
    assert.deepEqual(chat.messages.slice(1), [
      { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'Error: boom' },
    ]);
  });

  test('a chat completion as a Messages object: text, tool_use with an object input, stop reasons, usage', () => {
    const completion = JSON.stringify({
      id: 'c',
      object: 'chat.completion',
      model: 'up',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Checking', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls' }],
      usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, prompt_tokens_details: { cached_tokens: 5 } },
    });
    assert.deepEqual(completionToMessage(completion, 'msg_1', 'm'), {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'up',
      content: [
        { type: 'text', text: 'Checking' },
        { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 9, output_tokens: 4, cache_read_input_tokens: 5 },
    });
    const cut = JSON.stringify({ choices: [{ message: { content: 'x' }, finish_reason: 'length' }] });
    assert.equal(completionToMessage(cut, 'msg_2', 'm').stop_reason, 'max_tokens');
    const badArgs = JSON.stringify({ choices: [{ message: { content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1,' } }] }, finish_reason: 'tool_calls' }] });
    assert.throws(() => completionToMessage(badArgs, 'msg_3', 'm'), (e: unknown) => (e as { code: string }).code === 'upstream_invalid_response');
  });
});
