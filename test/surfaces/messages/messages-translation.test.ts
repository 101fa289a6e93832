import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toAnthropicRequest } from '../../../src/providers/anthropic/translate-request.js';
import { messagesToChat, type MessagesRequest } from '../../../src/surfaces/messages/request-to-chat.js';
import { completionToMessage } from '../../../src/surfaces/messages/chat-to-message.js';
import { TranslationNotes } from '../../../src/surfaces/translation-notes.js';

const IMAGE = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
const IMAGE_URL = { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } };
const WEATHER = {
  name: 'get_weather',
  description: 'Weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * Conversations in the forms both APIs can express (from Anthropic's documented examples), each taken through the
 * gateway's two translations: Messages -> chat (the ingress) -> Messages (the Anthropic provider). Nothing may be
 * lost or changed.
 */
const EXAMPLES: Array<{ name: string; request: MessagesRequest }> = [
  {
    name: 'text, system, sampling and stop sequences',
    request: {
      model: 'm',
      max_tokens: 100,
      system: 'Be brief.',
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-1' },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
        { role: 'user', content: [{ type: 'text', text: 'Bye' }] },
      ],
    },
  },
  {
    name: 'images (base64 and URL) beside text',
    request: {
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, IMAGE, IMAGE_URL] }],
    },
  },
  {
    name: 'a tool round trip: text then tool_use, tool_result then more text',
    request: {
      model: 'm',
      max_tokens: 100,
      tools: [WEATHER],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'rain' },
            { type: 'text', text: 'Thanks' },
          ],
        },
      ],
    },
  },
  {
    name: 'a forced tool',
    request: {
      model: 'm',
      max_tokens: 10,
      tools: [WEATHER],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Paris' }] }],
    },
  },
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
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 's' },
            { type: 'tool_use', id: 't1', name: 'f', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'boom' }], is_error: true },
          ],
        },
      ],
    });
    assert.deepEqual(chat.messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 't1', content: 'Error: boom' },
    ]);
  });

  test('a chat completion as a Messages object: text, tool_use with an object input, stop reasons, usage', () => {
    const completion = JSON.stringify({
      id: 'c',
      object: 'chat.completion',
      model: 'up',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
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
      // Anthropic's input_tokens excludes the cache reads that OpenAI's prompt_tokens includes: 9 - 5.
      usage: { input_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 4 },
    });
    const cut = JSON.stringify({ choices: [{ message: { content: 'x' }, finish_reason: 'length' }] });
    assert.equal(completionToMessage(cut, 'msg_2', 'm').stop_reason, 'max_tokens');
    const badArgs = JSON.stringify({
      choices: [
        {
          message: {
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1,' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    });
    assert.throws(
      () => completionToMessage(badArgs, 'msg_3', 'm'),
      (e: unknown) => (e as { code: string }).code === 'upstream_invalid_response',
    );
  });
});

describe('Messages fields on a translated path: mapped, dropped (named), refused (docs/messages.md)', () => {
  const base = { model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] } satisfies MessagesRequest;
  const translate = (extra: Record<string, unknown>, mode: 'tolerant' | 'strict' = 'tolerant') => {
    const notes = new TranslationNotes(mode);
    return { chat: messagesToChat({ ...base, ...extra } as MessagesRequest, notes), dropped: notes.dropped ?? [] };
  };
  const refusal = (extra: Record<string, unknown>, mode: 'tolerant' | 'strict' = 'tolerant') => {
    try {
      translate(extra, mode);
    } catch (error) {
      return error as { code: string; details: Record<string, unknown> & { errors?: Array<{ field: string }> } };
    }
    return assert.fail('not refused');
  };

  test('thinking and output_config.effort are the reasoning effort', () => {
    const effort = (extra: Record<string, unknown>) => translate(extra).chat.reasoning_effort;
    assert.equal(effort({ thinking: { type: 'adaptive' }, output_config: { effort: 'xhigh' } }), 'xhigh');
    assert.equal(effort({ thinking: { type: 'adaptive' } }), undefined, "adaptive alone: the target's own default");
    assert.equal(effort({ thinking: { type: 'enabled', budget_tokens: 2000 } }), 'low');
    assert.equal(
      effort({ thinking: { type: 'enabled', budget_tokens: 8000 }, output_config: { effort: 'max' } }),
      'max',
      'an effort wins over a budget',
    );
    assert.equal(effort({ thinking: { type: 'disabled' }, output_config: { effort: 'high' } }), 'none');
    assert.equal(effort({ output_config: { effort: 'medium' } }), 'medium');
    assert.deepEqual(translate({ thinking: { type: 'adaptive', display: 'summarized' } }).dropped, [
      'thinking.display',
    ]);
    assert.deepEqual(translate({ thinking: { type: 'auto-someday' }, output_config: { effort: 'low' } }), {
      chat: { ...messagesToChat(base), reasoning_effort: 'low' },
      dropped: ['thinking.type'],
    });
  });

  test('hints are dropped and named; a strict model refuses the first one', () => {
    const { chat, dropped } = translate({
      context_management: {
        edits: [{ type: 'clear_thinking_20251015', keep: 'all' }, { type: 'clear_tool_uses_20250919' }],
      },
      service_tier: 'auto',
      speed: 'fast',
      cache_control: { type: 'ephemeral' },
      diagnostics: { previous_message_id: null },
      inference_geo: 'us',
      container: null,
      metadata: { user_id: 'u-1', tenant: 'x' },
      system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    });
    assert.deepEqual(dropped, [
      'context_management',
      'service_tier',
      'speed',
      'cache_control',
      'diagnostics',
      'inference_geo',
      'system[0].cache_control',
      'metadata.tenant',
    ]);
    assert.equal(chat.user, 'u-1');
    for (const key of [
      'context_management',
      'service_tier',
      'speed',
      'cache_control',
      'diagnostics',
      'inference_geo',
      'container',
      'metadata',
    ])
      assert.equal(key in chat, false, key);
    const strict = refusal({ speed: 'fast' }, 'strict');
    assert.deepEqual([strict.code, strict.details.field], ['capability_not_supported', 'speed']);
  });

  test('what would change the answer and has no equivalent is refused, naming each field', () => {
    const refused = refusal({
      container: 'container_1',
      mcp_servers: [{ type: 'url', url: 'https://mcp.example', name: 'x' }],
      brand_new: 1,
      messages: [
        { role: 'user', content: [{ type: 'document', source: {} }] },
        { role: 'developer', content: 'x' },
      ],
    });
    assert.equal(refused.code, 'capability_not_supported');
    assert.deepEqual(
      refused.details.errors?.map((e) => e.field),
      ['container', 'mcp_servers', 'brand_new', 'messages[0].content[0].type', 'messages[1].role'],
    );
  });

  test('structured output, web search, tool hints and deferred tools', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
      additionalProperties: false,
    };
    assert.deepEqual(translate({ output_config: { format: { type: 'json_schema', schema } } }).chat.response_format, {
      type: 'json_schema',
      json_schema: { name: 'output', schema, strict: true },
    });
    assert.deepEqual(
      refusal({ output_config: { format: { type: 'xml' } } }).details.errors?.map((e) => e.field),
      ['output_config.format'],
    );
    const { chat, dropped } = translate({
      tools: [
        {
          name: 'f',
          input_schema: { type: 'object' },
          strict: true,
          input_examples: [{}],
          cache_control: { type: 'ephemeral' },
        },
        { name: 'later', input_schema: { type: 'object' }, defer_loading: true },
        {
          type: 'web_search_20250305',
          name: 'web_search',
          max_uses: 8,
          allowed_domains: ['example.com'],
          user_location: { type: 'approximate', city: 'Paris', country: 'FR' },
        },
      ],
    });
    assert.deepEqual(chat.tools, [
      { type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: true } },
    ]);
    assert.deepEqual(chat.web_search_options, {
      user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } },
    });
    assert.deepEqual(dropped, [
      'tools[0].input_examples',
      'tools[0].cache_control',
      'tools[1]',
      'tools[2].max_uses',
      'tools[2].allowed_domains',
    ]);
    assert.deepEqual(
      refusal({ tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] }).details.errors?.map(
        (e) => e.field,
      ),
      ['tools[0].type'],
    );
  });

  test('a system message in the conversation stays in its place; a wrong type is validation_failed, named', () => {
    const { chat } = translate({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'system', content: [{ type: 'text', text: 'mid' }] },
        { role: 'assistant', content: 'b' },
      ],
    });
    assert.deepEqual(chat.messages, [
      { role: 'user', content: 'a' },
      { role: 'system', content: 'mid' },
      { role: 'assistant', content: 'b' },
    ]);
    const bad = refusal({ temperature: 'hot', tools: 'all' });
    assert.equal(bad.code, 'validation_failed');
    assert.deepEqual(
      bad.details.errors?.map((e) => e.field),
      ['tools', 'temperature'],
    );
  });
});
