import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_SSE_EVENT_BYTES,
  MAX_SSE_LINE_BYTES,
  SseLimitError,
  SseParser,
  parseSseStream,
} from '../../src/streaming/sse-parser.js';
import type { SseEvent } from '../../src/streaming/sse-parser.js';

const enc = new TextEncoder();

interface Result {
  events: SseEvent[];
  truncated: boolean;
}

/** Feed the given pieces (strings are UTF-8 encoded) and end the stream. */
function parse(...pieces: (string | Uint8Array)[]): Result {
  const events: SseEvent[] = [];
  const parser = new SseParser((e) => events.push(e));
  for (const piece of pieces) parser.feed(typeof piece === 'string' ? enc.encode(piece) : piece);
  return { events, truncated: parser.end() };
}

/** Feed `bytes` split at the given offsets. */
function parseSplit(bytes: Uint8Array, offsets: number[]): Result {
  const pieces: Uint8Array[] = [];
  let prev = 0;
  for (const o of [...offsets, bytes.length]) {
    pieces.push(bytes.subarray(prev, o));
    prev = o;
  }
  return parse(...pieces);
}

function byteByByte(bytes: Uint8Array): Result {
  return parse(...Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)));
}

function ev(data: string, event = 'message', id?: string, retry?: number): SseEvent {
  return { event, data, id, retry };
}

/** Parse the whole input at once, at every 2-way split, and byte by byte; all must agree with `expected`. */
function assertAllSplits(input: string | Uint8Array, expected: SseEvent[], truncated = false): void {
  const bytes = typeof input === 'string' ? enc.encode(input) : input;
  assert.deepEqual(parse(bytes), { events: expected, truncated });
  for (let i = 0; i <= bytes.length; i++) {
    assert.deepEqual(parseSplit(bytes, [i]), { events: expected, truncated }, `split at byte ${i}`);
  }
  assert.deepEqual(byteByByte(bytes), { events: expected, truncated }, 'byte by byte');
}

void describe('line endings', () => {
  void test('LF, CRLF and lone CR all end lines', () => {
    for (const nl of ['\n', '\r\n', '\r']) {
      assertAllSplits(`data: a${nl}data: b${nl}${nl}data: c${nl}${nl}`, [ev('a\nb'), ev('c')]);
    }
  });

  void test('mixed line endings in one stream', () => {
    assertAllSplits('data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r', [ev('a\nb\nc'), ev('d')]);
  });

  void test('CR at the end of one chunk and LF at the start of the next are ONE line ending', () => {
    // Were it two, the LF would be a blank line dispatching "a" on its own.
    assert.deepEqual(parse('data: a\r', '\ndata: b\r', '\n\r', '\n').events, [ev('a\nb')]);
    assert.deepEqual(parse('data: a\r', '\n', '\r', '\n').events, [ev('a')]);
  });

  void test('CR followed by CR across chunks is two line endings (a blank line)', () => {
    assert.deepEqual(parse('data: a\r', '\rdata: b\r\r').events, [ev('a'), ev('b')]);
  });

  void test('an event ending in a lone CR is dispatched at once, without waiting for the next byte', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser((e) => events.push(e));
    parser.feed(enc.encode('data: a\r\r'));
    assert.deepEqual(events, [ev('a')]);
    parser.feed(enc.encode('\ndata: b\n\n'));
    assert.deepEqual(events, [ev('a'), ev('b')]);
    assert.equal(parser.end(), false);
  });

  void test('blank lines with no data dispatch nothing', () => {
    assertAllSplits('\n\r\n\r\r\n\n', []);
  });
});

void describe('byte order mark', () => {
  const bom = Uint8Array.of(0xef, 0xbb, 0xbf);
  const withBom = (s: string): Uint8Array => Buffer.concat([bom, enc.encode(s)]);

  void test('a leading BOM is skipped, however it is split', () => {
    assertAllSplits(withBom('data: x\n\n'), [ev('x')]);
  });

  void test('only one BOM is skipped: a second one becomes part of the first field name', () => {
    // "\uFEFFdata" is an unknown field, so the first event has no data.
    assertAllSplits(Buffer.concat([bom, withBom('data: x\n\ndata: y\n\n')]), [ev('y')]);
  });

  void test('a BOM after the start of the stream is not skipped', () => {
    const bytes = Buffer.concat([enc.encode('data: x\n\n'), withBom('data: y\n\ndata: z\n\n')]);
    assertAllSplits(bytes, [ev('x'), ev('z')]);
    assert.deepEqual(parse('data: \uFEFFv\n\n').events, [ev('\uFEFFv')]);
  });

  void test('a partial BOM prefix is ordinary (invalid UTF-8) bytes, not swallowed', () => {
    const bytes = Buffer.concat([Uint8Array.of(0xef, 0xbb), enc.encode('data: x\n\n')]);
    // The line "\uFFFDdata: x" has an unknown field name.
    assertAllSplits(bytes, []);
    assertAllSplits(Buffer.concat([Uint8Array.of(0xef, 0xbb), enc.encode('\ndata: x\n\n')]), [ev('x')]);
  });

  void test('streams shorter than a BOM', () => {
    assert.deepEqual(parse(), { events: [], truncated: false });
    assert.deepEqual(parse('\n'), { events: [], truncated: false });
    assert.deepEqual(parse('\r\n'), { events: [], truncated: false });
    assert.deepEqual(parse('d'), { events: [], truncated: true });
    assert.deepEqual(parse(bom.subarray(0, 2)), { events: [], truncated: true });
    assert.deepEqual(parse(bom), { events: [], truncated: false });
  });
});

void describe('fields', () => {
  void test('comment lines are ignored', () => {
    assertAllSplits(': keep-alive\n:\ndata: a\n: between\ndata: b\n\n:\n\n', [ev('a\nb')]);
  });

  void test('exactly one space after the colon is removed', () => {
    assertAllSplits('data:x\n\ndata: x\n\ndata:  x\n\ndata:\tx\n\n', [ev('x'), ev('x'), ev(' x'), ev('\tx')]);
  });

  void test('a line with no colon is a field name with an empty value', () => {
    assertAllSplits('data\n\nevent\ndata\ndata\n\n', [ev(''), ev('\n')]);
  });

  void test('data with an empty value, with and without the space', () => {
    assertAllSplits('data:\n\ndata: \n\ndata: a\ndata:\n\n', [ev(''), ev(''), ev('a\n')]);
  });

  void test('values keep every colon after the first', () => {
    assertAllSplits('data: {"a":"b:c"}\nevent: x:y\n\n', [ev('{"a":"b:c"}', 'x:y')]);
  });

  void test('multi-line data joins with LF, stripping only ONE trailing LF', () => {
    assertAllSplits('data: a\ndata: b\n\n', [ev('a\nb')]);
    assertAllSplits('data: a\ndata\ndata\n\n', [ev('a\n\n')]);
  });

  void test('event sets the type; default and empty type is "message"; the type resets after dispatch', () => {
    assertAllSplits('event: delta\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\nevent: a\nevent: b\ndata: 4\n\n', [
      ev('1', 'delta'),
      ev('2'),
      ev('3'),
      ev('4', 'b'),
    ]);
  });

  void test('a blank line with an empty data buffer dispatches nothing and resets the event type', () => {
    assertAllSplits('event: ping\n\ndata: x\n\n', [ev('x')]);
  });

  void test('id persists across events, can be reset to empty, and is ignored if it contains NULL', () => {
    assertAllSplits(
      'data: 0\n\nid: 1\ndata: a\n\ndata: b\n\nid: 2\0x\ndata: c\n\nid\ndata: d\n\nid: 3\n\ndata: e\n\n',
      [
        ev('0', 'message', undefined),
        ev('a', 'message', '1'),
        ev('b', 'message', '1'),
        ev('c', 'message', '1'),
        ev('d', 'message', ''),
        ev('e', 'message', '3'),
      ],
    );
  });

  void test('NULL is fine anywhere but in an id', () => {
    assertAllSplits('data: a\0b\n\n', [ev('a\0b')]);
  });

  void test('retry is set only when the value is all ASCII digits, and persists as stream state', () => {
    const bad = ['retry: -1', 'retry: 1a', 'retry:  10', 'retry: 10 ', 'retry: 1.5', 'retry:', 'retry: ١٢'];
    for (const line of bad) assertAllSplits(`${line}\ndata: x\n\n`, [ev('x')]);
    assertAllSplits('retry: 3000\ndata: a\n\ndata: b\n\nretry:0042\nretry: x\ndata: c\n\n', [
      ev('a', 'message', undefined, 3000),
      ev('b', 'message', undefined, 3000),
      ev('c', 'message', undefined, 42),
    ]);
  });

  void test('unknown and differently-cased fields are ignored', () => {
    assertAllSplits('foo: bar\nData: no\nDATA: no\n data: no\nevent : no\ndata: yes\n\n', [ev('yes')]);
  });
});

void describe('UTF-8', () => {
  void test('multi-byte characters split across chunks at every byte offset', () => {
    const text = 'event: 事件\ndata: 😀 héllo 世界 \u{10FFFF}\ndata: ok\n\n';
    assertAllSplits(text, [ev('😀 héllo 世界 \u{10FFFF}\nok', '事件')]);
  });

  void test('every pair of split points inside a line of 4-byte characters', () => {
    const bytes = enc.encode('data: 😀😃🎉\n\n');
    for (let i = 0; i <= bytes.length; i++) {
      for (let j = i; j <= bytes.length; j++) {
        assert.deepEqual(parseSplit(bytes, [i, j]).events, [ev('😀😃🎉')], `split at ${i},${j}`);
      }
    }
  });

  void test('invalid UTF-8 decodes to U+FFFD instead of throwing', () => {
    const bytes = Buffer.concat([enc.encode('data: a'), Uint8Array.of(0xff, 0xe4, 0xb8), enc.encode('b\n\n')]);
    assertAllSplits(bytes, [ev('a\uFFFD\uFFFDb')]);
  });
});

void describe('partial frames across TCP packets', () => {
  const chunk = (content: string | null, finish: string | null): string =>
    `data: ${JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }],
    })}\n\n`;
  const contents = ['Hel', 'lo, ', 'wörld ', '🌍', ':', ' 你好'];
  const stream = [
    ': OPENROUTER PROCESSING\n\n',
    ...contents.map((c) => chunk(c, null)),
    chunk(null, 'stop'),
    'data: [DONE]\n\n',
  ].join('');
  const expected = [
    ...contents.map((c) => ev(chunk(c, null).slice(6, -2))),
    ev(chunk(null, 'stop').slice(6, -2)),
    ev('[DONE]'),
  ];

  void test('an OpenAI stream split at every byte offset, and byte by byte, gives the same events', () => {
    assertAllSplits(stream, expected);
    const deltas = parse(stream)
      .events.filter((e) => e.data !== '[DONE]')
      .map(
        (e) => (JSON.parse(e.data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '',
      );
    assert.equal(deltas.join(''), 'Hello, wörld 🌍: 你好');
  });

  void test('the same stream with CRLF line endings, at every byte offset', () => {
    assertAllSplits(stream.replaceAll('\n', '\r\n'), expected);
  });

  void test('an Anthropic-style stream with event names, at every split', () => {
    const s =
      'event: message_start\ndata: {"type":"message_start"}\n\nevent: ping\ndata: {"type": "ping"}\n\n' +
      'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"Hi"}}\n\n';
    assertAllSplits(s, [
      ev('{"type":"message_start"}', 'message_start'),
      ev('{"type": "ping"}', 'ping'),
      ev('{"type":"content_block_delta","delta":{"text":"Hi"}}', 'content_block_delta'),
    ]);
  });

  void test('events are dispatched as soon as their blank line arrives', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser((e) => events.push(e));
    parser.feed(enc.encode('data: a\n\ndata: b\n'));
    assert.deepEqual(events, [ev('a')]);
    parser.feed(enc.encode('\n'));
    assert.deepEqual(events, [ev('a'), ev('b')]);
  });

  void test('accepts plain Uint8Arrays that view part of a larger ArrayBuffer', () => {
    const backing = new Uint8Array(64).fill(0x21);
    const src = enc.encode('data: hi\n\n');
    backing.set(src, 10);
    assert.deepEqual(parse(new Uint8Array(backing.buffer, 10, src.length), new Uint8Array(0)).events, [ev('hi')]);
  });

  void test('a caller that reuses its chunk buffer after feed() does not corrupt buffered bytes', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser((e) => events.push(e));
    const buf = new Uint8Array(16);
    // 'd' sits in the BOM check; 'ta: abc' is a partial line left in the caller's buffer.
    for (const piece of ['d', 'ata: 0\n\nda', 'ta: abc', 'def\n\n']) {
      buf.fill(0x3f);
      const bytes = enc.encode(piece);
      buf.set(bytes);
      parser.feed(buf.subarray(0, bytes.length));
    }
    buf.fill(0x3f);
    assert.deepEqual(events, [ev('0'), ev('abcdef')]);
  });
});

void describe('end()', () => {
  void test('returns false after a clean stream', () => {
    assert.equal(parse('data: x\n\n').truncated, false);
    assert.equal(parse('data: x\r\n\r\n').truncated, false);
    assert.equal(parse('data: x\r\r').truncated, false);
    assert.equal(parse('').truncated, false);
  });

  void test('returns true, dispatching nothing, when the stream stops mid-event', () => {
    assert.deepEqual(parse('data: a\n\ndata: {"partial'), { events: [ev('a')], truncated: true });
    assert.deepEqual(parse('data: x\n'), { events: [], truncated: true });
    assert.deepEqual(parse('data: x\r'), { events: [], truncated: true });
    assert.deepEqual(parse('event: done\n'), { events: [], truncated: true });
    assert.deepEqual(parse('id: 7\n'), { events: [], truncated: true });
    // A comment without its blank line is still bytes that no blank line terminated.
    assert.deepEqual(parse('data: a\n\n: keep-alive\n'), { events: [ev('a')], truncated: true });
  });

  void test('feeding after end() throws; a second end() is a no-op', () => {
    const parser = new SseParser(() => undefined);
    parser.feed(enc.encode('data: x'));
    assert.equal(parser.end(), true);
    assert.equal(parser.end(), false);
    assert.throws(() => parser.feed(enc.encode('\n\n')), /after end/);
  });
});

void describe('large events', () => {
  function feedInChunks(bytes: Uint8Array, size: number): Result {
    const pieces: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += size) pieces.push(bytes.subarray(i, i + size));
    return parse(...pieces);
  }

  void test('1 MB of data in one line, fed in 16 KB chunks', () => {
    const payload = 'x'.repeat(1024 * 1024 - 3) + '€'; // ends in a multi-byte char, split somewhere
    const result = feedInChunks(enc.encode(`event: big\ndata: ${payload}\n\ndata: after\n\n`), 16 * 1024);
    assert.equal(result.events.length, 2);
    assert.equal(result.events[0]?.event, 'big');
    assert.equal(result.events[0]?.data, payload);
    assert.deepEqual(result.events[1], ev('after'));
    assert.equal(result.truncated, false);
  });

  void test('1 MB of data in many lines, fed in 16 KB chunks', () => {
    const lines = Array.from({ length: 16 * 1024 }, (_, i) => `${i}:${'y'.repeat(58)}`);
    const result = feedInChunks(enc.encode(lines.map((l) => `data: ${l}\r\n`).join('') + '\r\n'), 16 * 1024);
    assert.deepEqual(result.events, [ev(lines.join('\n'))]);
  });

  void test('parses in linear time: a 4 MB line in 256-byte chunks', () => {
    // Linear: ~50 ms. Re-concatenating (or re-scanning) the pending bytes per chunk copies ~32 GB: ~10 s.
    const size = MAX_SSE_LINE_BYTES - 8; // the longest line the parser accepts
    const bytes = new Uint8Array(size + 8).fill(0x7a);
    bytes.set(enc.encode('data:'), 0);
    bytes.set(enc.encode('\n\n'), size + 6);
    const start = performance.now();
    const result = feedInChunks(bytes, 256);
    const ms = performance.now() - start;
    assert.equal(result.events.length, 1);
    assert.equal(result.events[0]?.data.length, size + 1);
    assert.ok(ms < 2000, `took ${ms.toFixed(0)} ms`);
  });
});

void describe('parseSseStream', () => {
  async function* source(pieces: string[], error?: Error): AsyncGenerator<Uint8Array> {
    for (const p of pieces) {
      await Promise.resolve();
      yield enc.encode(p);
    }
    if (error) throw error;
  }

  async function collect(
    gen: AsyncGenerator<SseEvent, { truncated: boolean }>,
  ): Promise<{ events: SseEvent[]; ret: { truncated: boolean } }> {
    const events: SseEvent[] = [];
    for (;;) {
      const r = await gen.next();
      if (r.done === true) return { events, ret: r.value };
      events.push(r.value);
    }
  }

  void test('yields events across chunk boundaries and returns truncated: false on a clean end', async () => {
    const { events, ret } = await collect(parseSseStream(source(['data: a\n', '\ndata: ', 'b\n\ndata: [DONE]\n\n'])));
    assert.deepEqual(events, [ev('a'), ev('b'), ev('[DONE]')]);
    assert.deepEqual(ret, { truncated: false });
  });

  void test('returns truncated: true when the source stops mid-event', async () => {
    const { events, ret } = await collect(parseSseStream(source(['data: a\n\n', 'data: {"par'])));
    assert.deepEqual(events, [ev('a')]);
    assert.deepEqual(ret, { truncated: true });
  });

  void test('source errors propagate after the events before them', async () => {
    const events: SseEvent[] = [];
    const boom = new Error('socket hang up');
    await assert.rejects(async () => {
      for await (const e of parseSseStream(source(['data: a\n\n', 'data: b'], boom))) events.push(e);
    }, boom);
    assert.deepEqual(events, [ev('a')]);
  });

  void test('breaking out early closes the source', async () => {
    let closed = false;
    async function* body(): AsyncGenerator<Uint8Array> {
      try {
        yield enc.encode('data: a\n\ndata: b\n\n');
        yield enc.encode('data: c\n\n');
      } finally {
        closed = true;
      }
    }
    for await (const e of parseSseStream(body())) {
      assert.deepEqual(e, ev('a'));
      break;
    }
    assert.equal(closed, true);
  });
});

describe('bounds on what one stream can make the parser hold', () => {
  const limits = { maxLineBytes: 1024, maxEventBytes: 2048 };

  test('a line that never ends is refused once it passes maxLineBytes, across many chunks', () => {
    const parser = new SseParser(() => assert.fail('nothing to dispatch'), limits);
    parser.feed(enc.encode('data: '));
    let fed = 6;
    assert.throws(
      () => {
        for (;;) {
          parser.feed(enc.encode('x'.repeat(100)));
          fed += 100;
          assert.ok(fed < 10_000, 'the limit was never enforced');
        }
      },
      (error: unknown) => error instanceof SseLimitError && error.what === 'line' && error.limitBytes === 1024,
    );
    // `fed` counts the chunks accepted: the one refused is the one that would have passed the bound.
    assert.ok(fed <= 1024 && fed + 100 > 1024, `refused after ${fed} bytes`);
    assert.throws(() => parser.feed(enc.encode('data: more\n\n')), /after end/);
  });

  test('a single chunk holding a whole over-long line is refused too', () => {
    const parser = new SseParser(() => assert.fail('nothing to dispatch'), limits);
    assert.throws(() => parser.feed(enc.encode(`data: ${'y'.repeat(2000)}\n\n`)), SseLimitError);
  });

  test('data lines without a blank line between them are refused once the event passes maxEventBytes', () => {
    const parser = new SseParser(() => assert.fail('nothing to dispatch'), limits);
    const line = `data: ${'z'.repeat(500)}\n`;
    let lines = 0;
    assert.throws(
      () => {
        for (; lines < 100; lines++) parser.feed(enc.encode(line));
      },
      (error: unknown) => error instanceof SseLimitError && error.what === 'event' && error.limitBytes === 2048,
    );
    assert.equal(lines, 4, 'the fifth 500-byte data line passes 2048');
  });

  test('lines and events just under the bounds are dispatched whole', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser((e) => events.push(e), limits);
    const value = 'a'.repeat(1024 - 'data: '.length);
    parser.feed(enc.encode(`data: ${value}\ndata: ${value.slice(0, 1000)}\n\n`));
    assert.equal(events.length, 1);
    assert.equal(events[0]?.data, `${value}\n${value.slice(0, 1000)}`);
    assert.equal(parser.end(), false);
  });

  test('the default bounds are 4 MiB for a line and for an event', () => {
    assert.equal(MAX_SSE_LINE_BYTES, 4 * 1024 * 1024);
    assert.equal(MAX_SSE_EVENT_BYTES, 4 * 1024 * 1024);
    const parser = new SseParser(() => undefined);
    assert.throws(() => parser.feed(new Uint8Array(MAX_SSE_LINE_BYTES + 1).fill(0x61)), SseLimitError);
  });
});
