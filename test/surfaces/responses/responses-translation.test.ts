import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { completionToResponse } from '../../../src/surfaces/responses/chat-to-response.js';
import { responseShell } from '../../../src/surfaces/responses/response-object.js';
import { responseJson } from '../../../src/surfaces/responses/response-json.js';
import { responsesToChat } from '../../../src/surfaces/responses/request-to-chat.js';
import type { ResponseObject } from '../../../src/surfaces/responses/responses-types.js';

const completion = (
  message: Record<string, unknown>,
  finish = 'stop',
  usage: unknown = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
) =>
  JSON.stringify({
    id: 'c',
    object: 'chat.completion',
    created: 1,
    model: 'up-model',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
    usage,
  });

describe('Responses translation (pure functions)', () => {
  test('responseJson writes exactly what JSON.stringify writes, for every kind of response', () => {
    const shell = (extra: Record<string, unknown> = {}) =>
      responseShell(
        {
          model: 'm',
          input: 'x',
          instructions: 'é "quoted"\n',
          metadata: { a: 'b' },
          tools: [{ type: 'function', name: 't' }],
          tool_choice: 'auto',
          temperature: 0.5,
          ...extra,
        },
        'resp_1',
        1700000000,
      );
    const cases: ResponseObject[] = [
      shell(),
      completionToResponse(completion({ content: 'Hi 👋 "there"\\n' }), shell()),
      completionToResponse(
        completion({
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
        }),
        shell({ store: false }),
      ),
      completionToResponse(
        completion({ content: 'cut' }, 'length', null),
        shell({ max_output_tokens: 3, reasoning: { effort: 'low' } }),
      ),
      completionToResponse(
        completion({ content: '', refusal: 'no' }),
        shell({ text: { format: { type: 'json_object' } } }),
      ),
      completionToResponse(
        completion({ content: 'x' }, 'stop', {
          prompt_tokens: 3,
          completion_tokens: 2,
          total_tokens: 5,
          prompt_tokens_details: { cached_tokens: 2 },
          completion_tokens_details: { reasoning_tokens: 1 },
        }),
        shell(),
      ),
      { ...shell(), status: 'failed', error: { code: 'upstream_error', message: 'bad' } },
    ];
    for (const response of cases) assert.equal(responseJson(response), JSON.stringify(response));
  });

  test('a length stop is incomplete; usage details are carried; the upstream model is reported', () => {
    const cut = completionToResponse(
      completion({ content: 'cut' }, 'length'),
      responseShell({ model: 'm', input: 'x' }, 'resp_1', 1),
    );
    assert.equal(cut.status, 'incomplete');
    assert.deepEqual(cut.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal((cut.output[0] as { status?: string } | undefined)?.status, 'incomplete');
    assert.equal(cut.model, 'up-model');
  });

  test('input items become chat messages; consecutive function calls form one assistant turn after its text', () => {
    const { chat } = responsesToChat({
      model: 'm',
      instructions: 'sys',
      input: [
        { role: 'user', content: 'q' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'let me look' }] },
        { type: 'function_call', call_id: 'a', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'b', name: 'g', arguments: '{}' },
        { type: 'function_call_output', call_id: 'a', output: 'A' },
        { type: 'function_call_output', call_id: 'b', output: [{ type: 'input_text', text: 'B' }] },
        { role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' }] },
      ],
      text: { format: { type: 'json_schema', name: 's', schema: { type: 'object' }, strict: true } },
      tool_choice: { type: 'function', name: 'f' },
      reasoning: { effort: 'low' },
    });
    assert.deepEqual(chat.messages, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: 'let me look',
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: 'A' },
      { role: 'tool', tool_call_id: 'b', content: 'B' },
      {
        role: 'user',
        content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } }],
      },
    ]);
    assert.deepEqual(chat.response_format, {
      type: 'json_schema',
      json_schema: { name: 's', schema: { type: 'object' }, strict: true },
    });
    assert.deepEqual(chat.tool_choice, { type: 'function', function: { name: 'f' } });
    assert.equal(chat.reasoning_effort, 'low');
  });

  test('what cannot be translated is refused naming each field, all at once', () => {
    assert.throws(
      () =>
        responsesToChat({
          model: 'm',
          input: [
            { type: 'reasoning', id: 'rs_1' },
            {
              role: 'user',
              content: [
                { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
                // A file by URL has no chat form (by id or inline data it has: a chat file part).
                { type: 'input_file', file_url: 'https://example.com/a.pdf' },
              ],
            },
          ],
          background: true,
          top_logprobs: 2,
        }),
      (error: unknown) => {
        const e = error as { code: string; details: { errors: Array<{ field: string }> } };
        assert.equal(e.code, 'capability_not_supported');
        assert.deepEqual(e.details.errors.map((p) => p.field).sort(), [
          'background',
          'input[0].type',
          'input[1].content[0].type',
          'input[1].content[1].file_id',
          'top_logprobs',
        ]);
        return true;
      },
    );
  });
});
