import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeChunkEvent, streamChunkDecoder } from '../../src/providers/openai-compatible/decode-chunk.js';
import type { StreamChunk } from '../../src/providers/provider-contract.js';
import type { SseEvent } from '../../src/streaming/sse-parser.js';

// A stream's frames through the per-stream decoder (chunk-template.ts: frames that repeat the one before but for
// their text skip JSON.parse) must decode exactly as each frame alone through decodeChunkEvent: the same chunk,
// the same bytes passed on, the same failure.

const message = (data: string): SseEvent => ({ event: 'message', data, id: undefined, retry: undefined });

type Outcome = { ok: StreamChunk | undefined } | { failed: { code: unknown; details: unknown } };

function outcome(run: () => StreamChunk | undefined): Outcome {
  try {
    // `templated` only says how the frame was decoded (chat-scrub.ts reads it): not part of the decoding.
    const decoded = run();
    if (decoded?.templated === true) {
      const { templated: _templated, ...chunk } = decoded;
      return { ok: chunk };
    }
    return { ok: decoded };
  } catch (error) {
    const { code, details } = error as { code: unknown; details: unknown };
    return { failed: { code, details } };
  }
}

/** Decodes `frames` both ways; returns how many frames the stream decoder decoded as the frame alone does. */
function assertSameDecoding(frames: string[]): void {
  const decode = streamChunkDecoder('up', ['sk-secret']);
  frames.forEach((data, i) => {
    const event = message(data);
    const alone = outcome(() => decodeChunkEvent(event, 'up', ['sk-secret']));
    const inStream = outcome(() => decode(event));
    assert.deepEqual(inStream, alone, `frame ${i}: ${data}`);
  });
}

const frame = (delta: string, extra = '', finish = 'null'): string =>
  `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m"${extra},` +
  `"choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}]}`;
const text = (content: string): string => frame(`{"content":${content}}`);

describe('the per-stream chunk decoder decodes every frame as decodeChunkEvent does', () => {
  test('a burst of plain texts, then the finish frame', () => {
    const frames = [frame('{"role":"assistant","content":""}')];
    for (let i = 0; i < 20; i++) frames.push(text(JSON.stringify(` tok${i}`)));
    frames.push(frame('{}', '', '"stop"'));
    assertSameDecoding(frames);
  });

  test('texts with escapes, non-ASCII and an empty text between plain ones', () => {
    assertSameDecoding([
      text('"a"'),
      text('"b"'),
      text('"line\\nbreak"'),
      text('"quote \\" inside"'),
      text('"\\u00e9t\\u00e9 \\ud83d\\ude00"'),
      text('"été 😀"'),
      text('""'),
      text('"back\\\\slash"'),
      text('"c"'),
    ]);
  });

  test('frames that only look like the template: more members, a raw newline, bad escapes, not a string', () => {
    assertSameDecoding([
      text('"a"'),
      text('"b"'),
      text('"x","refusal":"no"'), // one more member after the text: not one string in the cut
      text('"x" '), // whitespace after the string: still one JSON value, still the same frame
      text('"raw\nnewline"'), // not JSON
      text('"bad \\x escape"'), // not JSON
      text('"unfinished \\"'), // not JSON
      text('null'),
      text('42'),
      text('"x"}, "extra": {"y": 1'), // a different document altogether
      text('"d"'),
    ]);
  });

  test('a duplicated content key: the template is refused (the cut would be at the value JSON.parse drops)', () => {
    const twice = (first: string) => frame(`{"content":${first},"content":" tok"}`);
    assertSameDecoding([twice('" tok"'), twice('"other"'), twice('"more"'), twice('" tok"')]);
  });

  test('a text that also appears earlier in the frame as another member named content', () => {
    const frames = [0, 1, 2, 3].map((i) => frame(`{"content":"t${i}"}`, `,"x_content":"\\"content\\":\\"t${i}\\""`));
    assertSameDecoding(frames);
  });

  test('changes outside the text are never taken from the template: finish reason, model, usage, errors', () => {
    assertSameDecoding([
      text('"a"'),
      text('"b"'),
      frame('{"content":"c"}', '', '"length"'),
      frame('{"content":"d"}').replace('"model":"m"', '"model":"n"'),
      text('"e"').replace('"object":"chat.completion.chunk"', '"object":"chunk"'),
      frame('{"content":"f"}', ',"usage":{"prompt_tokens":-1,"completion_tokens":2,"total_tokens":1}'),
      frame('{"content":"g","tool_calls":[1]}'),
      '{"error":{"message":"overloaded sk-secret"}}',
      text('"h"'),
    ]);
  });

  test('frames that all differ outside their text (the decoder stops learning) still decode the same', () => {
    const frames = [];
    for (let i = 0; i < 12; i++) frames.push(text(`"t${i}"`).replace('chatcmpl-1', `chatcmpl-${i}`));
    assertSameDecoding(frames);
  });

  test('a burst of plain texts is decoded without parsing each frame', () => {
    const decode = streamChunkDecoder('up', []);
    const parse = JSON.parse;
    let parses = 0;
    JSON.parse = ((...args: Parameters<typeof parse>) => {
      parses++;
      return parse(...args);
    }) as typeof JSON.parse;
    try {
      decode(message(frame('{"role":"assistant","content":""}')));
      for (let i = 0; i < 100; i++) decode(message(text(`" tok${i}"`)));
    } finally {
      JSON.parse = parse;
    }
    // The role frame and the first text frame in full, the template's one check: 3 of 101 frames.
    assert.equal(parses, 3);
  });

  test('a matched frame is its own chunk: changing one leaves the template and the others as they were', () => {
    const decode = streamChunkDecoder('up', []);
    const chunks = ['"a"', '"b"', '"c"'].map((t) => decode(message(text(t))));
    (chunks[2]?.chunk.choices[0] as { delta: { content: string } }).delta.content = 'changed';
    assert.deepEqual(
      chunks.map((c) => c?.chunk.choices[0]?.delta.content),
      ['a', 'b', 'changed'],
    );
    assert.equal(decode(message(text('"d"')))?.chunk.choices[0]?.delta.content, 'd');
  });
});
