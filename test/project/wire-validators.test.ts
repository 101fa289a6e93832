/**
 * The conformance suite's validators have teeth: a well-formed answer of each API (as upstreams/scripted/replies.ts writes
 * it, the providers' own format) passes and gives back its turn; each broken variant — the kind of fault a
 * translation could make — is refused, naming the rule.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GeminiStream } from '../../src/surfaces/gemini/gemini-stream.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { StreamChunk } from '../../src/providers/provider-contract.js';
import {
  chatAnswer,
  geminiAnswer,
  messagesAnswer,
  responsesAnswer,
  responsesMessageId,
  type ScriptedReply,
} from '../helpers/upstreams/scripted.js';
import {
  validateChatJson,
  validateChatStream,
  validateMessagesJson,
  validateMessagesStream,
} from '../helpers/wire-validators.js';
import { validateResponsesJson, validateResponsesStream } from '../helpers/responses-validator.js';
import { validateGeminiJson, validateGeminiJsonArray, validateGeminiStream } from '../helpers/gemini-validator.js';

const CALL: ScriptedReply = { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' };
const TEXT: ScriptedReply = { type: 'text', text: 'It is sunny.' };

function streamOf(answer: ReturnType<typeof chatAnswer>): string {
  assert.ok('frames' in answer);
  return answer.frames.join('');
}

/** The frames with `edit` applied to the one at `index` (negative: from the end), or dropped when it returns undefined. */
function edited(text: string, index: number, edit: (frame: string) => string | undefined): string {
  const frames = text.split(/(?<=\n\n)/);
  const at = index < 0 ? frames.length + index : index;
  const next = edit(frames[at] as string);
  if (next === undefined) frames.splice(at, 1);
  else frames[at] = next;
  return frames.join('');
}

describe('wire validators', () => {
  test('chat: a good stream and answer pass; a missing [DONE], a second finish, a call without its id, content after finish, a changed id fail', () => {
    const stream = streamOf(chatAnswer(CALL, { stream: true, stream_options: { include_usage: true } }, 1));
    assert.deepEqual(validateChatStream(stream), {
      text: '',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' }],
      stop: 'tool_calls',
    });
    assert.equal(validateChatStream(streamOf(chatAnswer(TEXT, { stream: true }, 1))).text, 'It is sunny.');
    assert.equal(
      validateChatJson(JSON.stringify((chatAnswer(CALL, {}, 1) as { json: unknown }).json)).toolCalls[0]?.name,
      'get_weather',
    );
    assert.throws(() => validateChatStream(edited(stream, -1, () => undefined)), /\[DONE\]/);
    assert.throws(
      () => validateChatStream(edited(stream, 1, (f) => f.replace('"finish_reason":null', '"finish_reason":"stop"'))),
      /finish_reason/,
    );
    assert.throws(
      () => validateChatStream(edited(stream, 0, (f) => f.replace('"id":"call_1",', ''))),
      /opens with its id/,
    );
    assert.throws(
      () => validateChatStream(edited(stream, 0, (f) => f.replace('chatcmpl-scripted0001', 'other'))),
      /stream's id/,
    );
    const text = streamOf(chatAnswer(TEXT, { stream: true }, 1));
    const late = (f: string): string =>
      f +
      f.replace('"delta":{}', '"delta":{"content":"late"}').replace('"finish_reason":"stop"', '"finish_reason":null');
    assert.throws(() => validateChatStream(edited(text, -2, late)), /after finish_reason/);
  });

  test('messages: a good stream and answer pass; no message_stop, a block never closed, an index skipped, a delta of the wrong kind, bad tool input fail', () => {
    const stream = streamOf(messagesAnswer(CALL, { stream: true }, 1));
    assert.deepEqual(validateMessagesStream(stream), {
      text: '',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' }],
      stop: 'tool_use',
    });
    assert.equal(validateMessagesStream(streamOf(messagesAnswer(TEXT, { stream: true }, 1))).stop, 'end_turn');
    assert.equal(
      validateMessagesJson(JSON.stringify((messagesAnswer(CALL, {}, 1) as { json: unknown }).json)).toolCalls.length,
      1,
    );
    assert.throws(() => validateMessagesStream(edited(stream, -1, () => undefined)), /message_stop/);
    assert.throws(
      () => validateMessagesStream(stream.replace(/event: content_block_stop\n[^\n]*\n\n/, '')),
      /still open/,
    );
    assert.throws(() => validateMessagesStream(stream.replaceAll('"index":0', '"index":1')), /indexes go 0, 1, 2/);
    assert.throws(
      () =>
        validateMessagesStream(
          stream.replace('"type":"input_json_delta","partial_json":""', '"type":"text_delta","text":""'),
        ),
      /a text_delta in a tool_use block/,
    );
    assert.throws(
      () => validateMessagesStream(stream.replace('"partial_json":""', '"partial_json":"["')),
      /JSON|object/,
    );
    assert.throws(
      () => validateMessagesStream(stream.replace('event: message_start', 'event: message_begin')),
      /event name/,
    );
  });

  test('responses: a good stream and answer pass; no response.completed, an item never done, deltas that do not add up, sequence numbers going back fail', () => {
    const stream = streamOf(responsesAnswer(CALL, { stream: true }, 1));
    assert.deepEqual(validateResponsesStream(stream), {
      text: '',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' }],
      stop: 'tool_call',
    });
    assert.equal(validateResponsesStream(streamOf(responsesAnswer(TEXT, { stream: true }, 1))).text, 'It is sunny.');
    assert.equal(
      validateResponsesJson(JSON.stringify((responsesAnswer(TEXT, {}, 1) as { json: unknown }).json)).text,
      'It is sunny.',
    );
    assert.throws(() => validateResponsesStream(edited(stream, -1, () => undefined)), /response.completed/);
    assert.throws(
      () => validateResponsesStream(stream.replace(/event: response.output_item.done\n[^\n]*\n\n/, '')),
      /never done|output = the items done/,
    );
    assert.throws(
      () => validateResponsesStream(stream.replace('"delta":"{\\"locat"', '"delta":"{\\"LOCAT"')),
      /arguments = the deltas/,
    );
    assert.throws(
      () => validateResponsesStream(stream.replace('"sequence_number":3', '"sequence_number":1')),
      /sequence_number/,
    );
    const text = streamOf(responsesAnswer(TEXT, { stream: true }, 1));
    assert.throws(
      () => validateResponsesStream(text.replace('"delta":"It i"', '"delta":"It was"')),
      /text = the deltas|content = the deltas/,
    );
  });

  test("gemini: a good stream (Google's framing, and the gateway's encoder) and answer pass; an event: line, two data lines, no closing blank line, no finishReason, a response after it, an error, a changed responseId, args not an object fail", async () => {
    const stream = streamOf(geminiAnswer(CALL, {}, true, 'gemini-x'));
    assert.deepEqual(validateGeminiStream(stream), {
      text: '',
      toolCalls: [{ id: '', name: 'get_weather', arguments: '{"location":"Paris"}' }],
      stop: 'STOP',
    });
    const text = streamOf(geminiAnswer(TEXT, {}, true, 'gemini-x'));
    assert.equal(validateGeminiStream(text).text, 'It is sunny.');
    assert.equal(validateGeminiStream(text.replaceAll('\r\n', '\n')).text, 'It is sunny.');
    assert.equal(
      validateGeminiJson(JSON.stringify((geminiAnswer(CALL, {}, false, 'gemini-x') as { json: unknown }).json))
        .toolCalls[0]?.name,
      'get_weather',
    );
    // What the gateway's Gemini surface writes from a chat stream, in both forms.
    const encoded = (mode: 'sse' | 'json-array'): string => {
      const encoder = new GeminiStream({ responseId: 'rid', model: 'gemini-x' }, mode);
      const chunk = (delta: Record<string, unknown>, finish: string | null = null): StreamChunk => ({
        chunk: { object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] },
      });
      return (
        encoder.open() +
        encoder.chunk(chunk({ content: 'Reading.' })) +
        encoder.chunk(
          chunk({
            tool_calls: [{ index: 0, id: 'call_1', function: { name: 'get_weather', arguments: '{"location":' } }],
          }),
        ) +
        encoder.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, 'tool_calls')) +
        encoder.end({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 })
      );
    };
    const turn = {
      text: 'Reading.',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' }],
      stop: 'STOP',
    };
    assert.deepEqual(validateGeminiStream(encoded('sse')), turn);
    assert.deepEqual(validateGeminiJsonArray(encoded('json-array')), turn);

    const frames = text.split(/(?<=\r\n\r\n)/);
    assert.throws(() => validateGeminiStream(`event: message\r\n${text}`), /a data: line and nothing else/);
    assert.throws(() => validateGeminiStream(text.replace('data: {', 'data: {\r\ndata: ')), /one line/);
    assert.throws(() => validateGeminiStream(text.slice(0, -4)), /Incomplete JSON segment/);
    assert.throws(() => validateGeminiStream(frames.slice(0, -1).join('')), /without a finishReason/);
    assert.throws(() => validateGeminiStream(text + (frames[0] as string)), /after the one with finishReason/);
    const failure = new GatewayError('upstream_stream_error', { upstream: 'u' });
    const failed = new GeminiStream({ responseId: 'rid', model: 'gemini-x' }, 'sse').fail(failure);
    assert.throws(() => validateGeminiStream((frames[0] as string) + failed), /a failure/);
    const ids = encoded('sse');
    assert.throws(() => validateGeminiStream(ids.replace('"responseId":"rid"', '"responseId":"other"')), /responseId/);
    assert.throws(
      () => validateGeminiStream(stream.replace('"args":{"location":"Paris"}', '"args":"{}"')),
      /args is an object/,
    );
  });

  test('a tool call after a preamble (text first, as Claude writes): valid in every API, streamed and whole, the text then the call', () => {
    const reply: ScriptedReply = { ...CALL, preamble: { text: 'Let me check the weather.' } };
    const call = { id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' };
    const json = (answer: ReturnType<typeof chatAnswer>): string => JSON.stringify((answer as { json: unknown }).json);
    const turns = {
      'chat stream': validateChatStream(streamOf(chatAnswer(reply, { stream: true }, 1))),
      'chat json': validateChatJson(json(chatAnswer(reply, {}, 1))),
      'messages stream': validateMessagesStream(streamOf(messagesAnswer(reply, { stream: true }, 1))),
      'messages json': validateMessagesJson(json(messagesAnswer(reply, {}, 1))),
      'responses stream': validateResponsesStream(streamOf(responsesAnswer(reply, { stream: true }, 1))),
      'responses json': validateResponsesJson(json(responsesAnswer(reply, {}, 1))),
      'gemini stream': validateGeminiStream(streamOf(geminiAnswer(reply, {}, true, 'gemini-x'))),
      'gemini json': validateGeminiJson(json(geminiAnswer(reply, {}, false, 'gemini-x'))),
    };
    for (const [where, turn] of Object.entries(turns)) {
      assert.equal(turn.text, 'Let me check the weather.', where);
      assert.deepEqual(
        turn.toolCalls.map((made) => ({ ...made, id: where.startsWith('gemini') ? 'call_1' : made.id })),
        [call],
        where,
      );
    }
    // On the Responses API the text is an output message before the call, its id the one a later item_reference names.
    const output = (responsesAnswer(reply, {}, 7) as { json: { output: Array<{ type: string; id: string }> } }).json
      .output;
    assert.deepEqual(
      output.map((item) => [item.type, item.id]),
      [
        ['message', responsesMessageId(7)],
        ['function_call', 'fc_scripted0007'],
      ],
    );
  });
});
