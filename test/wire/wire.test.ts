import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { responsesToChat } from '../../src/surfaces/responses/request-to-chat.js';
import {
  anthropicErrorType,
  anthropicToolChoiceOf,
  anthropicToolOf,
  anthropicWebSearchTool,
  chatFunctionOf,
  chatToolChoiceOf,
  chatUserLocationOf,
  finishReasonOf,
  imageSourceOf,
  imageUrlOf,
  stopReasonOf,
  type MessagesRequest,
} from '../../src/wire/anthropic.js';
import { dataUrl, splitDataUrl } from '../../src/wire/openai-chat.js';
import { chatImagePartOf, chatTextPartOf, endingOf, inputPartOf } from '../../src/wire/openai-responses.js';

/**
 * The wire modules' mappings, each pair read both ways: what one direction writes, the other reads back to what
 * it started from (where the two APIs can say the same thing), and what has no counterpart maps where the table
 * says. The round trips through whole requests are in messages-translation.test.ts and responses-*.test.ts.
 */
describe("Anthropic's Messages wire (src/wire/anthropic.ts)", () => {
  test('stop reason <-> finish reason: each value both APIs have comes back as itself; the others map to their nearest', () => {
    for (const stop of ['end_turn', 'max_tokens', 'tool_use', 'refusal'] as const)
      assert.equal(stopReasonOf(finishReasonOf(stop)), stop);
    for (const finish of ['stop', 'length', 'tool_calls', 'content_filter'])
      assert.equal(finishReasonOf(stopReasonOf(finish)), finish);
    const oneWay: Array<[unknown, string | null]> = [
      ['stop_sequence', 'stop'],
      ['pause_turn', 'stop'],
      ['model_context_window_exceeded', 'length'],
      ['a_new_reason', 'stop'],
      [null, null],
      [undefined, null],
    ];
    for (const [stop, finish] of oneWay) assert.equal(finishReasonOf(stop), finish, String(stop));
    assert.deepEqual(
      [stopReasonOf('function_call'), stopReasonOf(null), stopReasonOf(undefined)],
      ['tool_use', 'end_turn', 'end_turn'],
    );
  });

  test('tool_choice: every Anthropic choice through chat and back, disable_parallel_tool_use as parallel_tool_calls: false', () => {
    const choices: Array<NonNullable<MessagesRequest['tool_choice']>> = [
      { type: 'auto' },
      { type: 'any' },
      { type: 'none' },
      { type: 'tool', name: 'get_weather' },
      { type: 'auto', disable_parallel_tool_use: true },
      { type: 'any', disable_parallel_tool_use: true },
      { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
    ];
    for (const choice of choices) {
      const chat = chatToolChoiceOf(choice);
      assert.deepEqual(
        anthropicToolChoiceOf(chat.tool_choice, chat.parallel_tool_calls),
        choice,
        JSON.stringify(choice),
      );
    }
    assert.deepEqual(chatToolChoiceOf({ type: 'any', disable_parallel_tool_use: true }), {
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    // No choice but one call at a time; nothing at all; a choice chat does not have.
    assert.deepEqual(
      [
        anthropicToolChoiceOf(undefined, false),
        anthropicToolChoiceOf(null, true),
        anthropicToolChoiceOf({ type: 'function' }, undefined),
      ],
      [{ type: 'auto', disable_parallel_tool_use: true }, undefined, undefined],
    );
  });

  test('image source <-> chat image URL: base64 as a data: URL and back, a URL as itself; anything else is no image', () => {
    const sources = [
      { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' },
      { type: 'url', url: 'https://example.com/cat.jpg' },
    ] as const;
    for (const source of sources) assert.deepEqual(imageSourceOf(imageUrlOf(source) ?? ''), source);
    assert.equal(imageUrlOf(sources[0]), 'data:image/png;base64,iVBORw0KGgo=');
    for (const bad of [
      undefined,
      null,
      'x',
      [],
      { type: 'base64', data: 'x' },
      { type: 'url', url: 7 },
      { type: 'file', file_id: 'f' },
    ])
      assert.equal(imageUrlOf(bad), undefined, JSON.stringify(bad));
    assert.deepEqual(splitDataUrl(dataUrl('image/webp', 'AAAA')), { mediaType: 'image/webp', data: 'AAAA' });
    assert.equal(splitDataUrl('https://example.com/a.png'), undefined);
  });

  test('a client tool through chat and back: input_schema as parameters; no schema is an empty object schema', () => {
    const tool = {
      name: 'get_weather',
      description: 'Weather of a city',
      input_schema: { type: 'object', properties: { city: { type: 'string' } } },
    };
    assert.deepEqual(anthropicToolOf(chatFunctionOf(tool)), tool);
    assert.deepEqual(chatFunctionOf({ name: 'f', strict: true }), {
      type: 'function',
      function: { name: 'f', parameters: { type: 'object', properties: {} }, strict: true },
    });
    assert.deepEqual(anthropicToolOf('not a tool'), { name: '', input_schema: { type: 'object', properties: {} } });
  });

  test("web search: the tool's approximate location through chat's web_search_options and back", () => {
    const location = { type: 'approximate', city: 'Paris', region: 'IDF', country: 'FR', timezone: 'Europe/Paris' };
    const chat = chatUserLocationOf(location);
    assert.deepEqual(chat, {
      type: 'approximate',
      approximate: { city: 'Paris', region: 'IDF', country: 'FR', timezone: 'Europe/Paris' },
    });
    assert.deepEqual(anthropicWebSearchTool({ user_location: chat }), {
      type: 'web_search_20250305',
      name: 'web_search',
      user_location: location,
    });
    assert.deepEqual(
      [anthropicWebSearchTool({}), anthropicWebSearchTool(null)],
      [{ type: 'web_search_20250305', name: 'web_search' }, undefined],
    );
  });

  test("error type by HTTP status: Anthropic's table, 529 overloaded, other 4xx invalid_request_error, else api_error", () => {
    const table: Array<[number, string]> = [
      [400, 'invalid_request_error'],
      [422, 'invalid_request_error'],
      [401, 'authentication_error'],
      [403, 'permission_error'],
      [404, 'not_found_error'],
      [413, 'request_too_large'],
      [429, 'rate_limit_error'],
      [503, 'overloaded_error'],
      [529, 'overloaded_error'],
      [500, 'api_error'],
      [502, 'api_error'],
      [409, 'invalid_request_error'],
      [405, 'invalid_request_error'],
      [499, 'invalid_request_error'],
      [504, 'api_error'],
    ];
    for (const [status, type] of table) assert.equal(anthropicErrorType(status), type, String(status));
  });
});

describe("OpenAI's Responses wire (src/wire/openai-responses.ts)", () => {
  test('input parts <-> chat parts: text and images (with their detail) both ways; an image without a URL is none', () => {
    const text = { type: 'text', text: 'Hi' };
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } };
    assert.deepEqual(chatTextPartOf(inputPartOf(text)), text);
    assert.deepEqual(chatImagePartOf(inputPartOf(image)), image);
    assert.deepEqual(inputPartOf(image), {
      type: 'input_image',
      image_url: 'data:image/png;base64,AAAA',
      detail: 'low',
    });
    assert.deepEqual(
      inputPartOf({ type: 'input_audio', x: 1 }),
      { type: 'input_audio', x: 1 },
      'any other part as it is',
    );
    assert.equal(chatImagePartOf({ type: 'input_image', file_id: 'file_1' }), undefined);
  });

  test('a finish reason ends a response: length and content_filter leave it incomplete, saying why', () => {
    assert.deepEqual(endingOf('length'), { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    assert.deepEqual(endingOf('content_filter'), {
      status: 'incomplete',
      incomplete_details: { reason: 'content_filter' },
    });
    for (const finish of ['stop', 'tool_calls', null, undefined])
      assert.deepEqual(endingOf(finish), { status: 'completed', incomplete_details: null });
  });

  test('a null content or output part is a named problem of the request (it was a TypeError, a 500)', () => {
    const problem = (input: unknown[]) => {
      try {
        responsesToChat({ model: 'm', input: input as never }, [], { notes: { drop() {} } });
        return undefined;
      } catch (error) {
        return [
          (error as { code?: string }).code,
          (error as { details?: { errors?: Array<{ field: string }> } }).details?.errors?.[0]?.field,
        ];
      }
    };
    assert.deepEqual(problem([{ role: 'assistant', content: [null] }]), [
      'validation_failed',
      'input[0].content[0].type',
    ]);
    assert.deepEqual(problem([{ role: 'user', content: [null] }]), [
      'capability_not_supported',
      'input[0].content[0].type',
    ]);
    const call = { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' };
    assert.deepEqual(problem([call, { type: 'function_call_output', call_id: 'c', output: [null] }]), [
      'validation_failed',
      'input[1].output',
    ]);
  });
});
