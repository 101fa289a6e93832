/**
 * The streamed reader of `{"requests": [...]}` bodies (src/streaming/json-array-items.ts): every item found whatever
 * the chunk boundaries (inside strings, escapes, multi-byte characters), other keys skipped, and every malformed
 * body refused with the byte offset and the item, never a hang or an unbounded buffer.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonArrayItems, JsonItemsError, jsonArrayItems } from '../../src/streaming/json-array-items.js';

const options = { key: 'requests', maxItemBytes: 1024 };

function scan(chunks: Buffer[], opts = options): { items: string[]; count: number } {
  const scanner = new JsonArrayItems(opts);
  const items: string[] = [];
  for (const chunk of chunks) for (const item of scanner.push(chunk)) items.push(item.text);
  return { items, count: scanner.end() };
}

function failure(body: string | Buffer, opts = options): JsonItemsError {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  try {
    scan([bytes], opts);
  } catch (error) {
    assert.ok(error instanceof JsonItemsError, String(error));
    // The same failure whatever the chunking: one byte at a time.
    try {
      scan(
        [...bytes].map((b) => Buffer.from([b])),
        opts,
      );
    } catch (again) {
      assert.ok(again instanceof JsonItemsError);
      assert.deepEqual([again.kind, again.offset, again.field], [error.kind, error.offset, error.field]);
    }
    return error;
  }
  assert.fail(`accepted: ${bytes.toString()}`);
}

const awkward = Buffer.from(
  '\ufeff {"before": {"nested": ["]", "}", {"a": "\\"{["}], "n": -1.5e3},\n' +
    '  "requests" : [ {"custom_id":"a\\"b","params":{"model":"m","text":"back\\\\slash \\\\\\" quote ] } ,"}},\n' +
    '   {"custom_id":"é😀","params":{"model":"ü","list":[[1,2],[],{}],"u":"\\u00e9\\ud83d\\ude00"}} ,\t"just a string, ]",' +
    '42 , true, null, [ ] , {}\n  ],\r\n "after": "x\\\\"}  \n',
);

describe('JsonArrayItems', () => {
  const expected = (JSON.parse(awkward.toString('utf8').slice(1)) as { requests: unknown[] }).requests;

  test('every item of a body cut at every byte (two chunks, and three)', () => {
    for (let cut = 0; cut <= awkward.length; cut++) {
      const { items, count } = scan([awkward.subarray(0, cut), awkward.subarray(cut)]);
      assert.equal(count, expected.length, `cut at ${cut}`);
      assert.deepEqual(
        items.map((t) => JSON.parse(t) as unknown),
        expected,
        `cut at ${cut}`,
      );
      for (const text of items) assert.equal(text, text.trim());
      const third = Math.floor((cut + awkward.length) / 2);
      const three = scan([awkward.subarray(0, cut), awkward.subarray(cut, third), awkward.subarray(third)]);
      assert.deepEqual(three.items, items);
    }
    const bytewise = scan([...awkward].map((b) => Buffer.from([b])));
    assert.deepEqual(bytewise.items, scan([awkward]).items);
  });

  test('a chunk the caller reuses afterwards does not change an item in progress', () => {
    const body = Buffer.from('{"requests":[{"custom_id":"abcdef"}]}');
    const scanner = new JsonArrayItems(options);
    const chunk = Buffer.from(body.subarray(0, 20));
    assert.deepEqual(scanner.push(chunk), []);
    chunk.fill(0x20);
    const items = scanner.push(body.subarray(20));
    assert.deepEqual(items, [{ index: 0, text: '{"custom_id":"abcdef"}', offset: 13 }]);
    assert.equal(scanner.end(), 1);
  });

  test('malformed bodies: the problem, the byte offset, the item', () => {
    const cases: Array<[string, JsonItemsError['kind'], number, string | undefined]> = [
      ['', 'syntax', 0, undefined],
      ['   ', 'syntax', 3, undefined],
      ['[1]', 'shape', 0, undefined],
      ['"requests"', 'shape', 0, undefined],
      ['{}', 'shape', 2, 'requests'],
      ['{"other": 1}', 'shape', 12, 'requests'],
      ['{"requests": {"a": 1}}', 'shape', 13, 'requests'],
      ['{"requests": "x"}', 'shape', 13, 'requests'],
      ['{"requests": [{"a": 1}', 'syntax', 22, undefined],
      ['{"requests": [{"a": "x}]}', 'syntax', 25, 'requests[0]'],
      ['{"requests": [{"a": 1},]}', 'syntax', 23, 'requests[1]'],
      ['{"requests": [{"a": 1} {"b": 2}]}', 'syntax', 23, 'requests'],
      ['{"requests": [1]} x', 'syntax', 18, undefined],
      ['{"requests": [1]}{}', 'syntax', 17, undefined],
      ['{"requests": [1], "requests": [2]}', 'syntax', 27, undefined],
      ['{"requests" [1]}', 'syntax', 12, undefined],
      ['{requests: [1]}', 'syntax', 1, undefined],
      ['{"requests": [1], "x": tru}', 'syntax', 23, 'x'],
      ['{"requests": [1], "x": {"a": }}', 'syntax', 23, 'x'],
      ['{"requests": [1] "x": 1}', 'syntax', 17, undefined],
      ['{"requests": [1],}', 'syntax', 17, undefined],
      ['{"bad\\q": 1, "requests": [1]}', 'syntax', 7, undefined],
    ];
    for (const [body, kind, offset, field] of cases) {
      const error = failure(body);
      assert.deepEqual([error.kind, error.offset, error.field], [kind, offset, field], body);
    }
    // A partial byte order mark.
    assert.equal(failure(Buffer.from([0xef, 0xbb, 0x7b, 0x7d])).offset, 2);
  });

  test('an item (or another value) longer than the bound is refused without holding more than it', () => {
    const big = `{"requests": [{"a": 1}, {"text": "${'x'.repeat(2000)}"}]}`;
    const error = failure(big);
    assert.deepEqual([error.kind, error.field, error.offset], ['too_long', 'requests[1]', 24]);
    assert.match(error.problem, /1024 bytes/);
    assert.equal(failure(`{"meta": "${'y'.repeat(2000)}", "requests": [1]}`).field, 'meta');
    // Fed in small chunks, it fails once the held bytes pass the bound, long before the item ends.
    const scanner = new JsonArrayItems(options);
    scanner.push(Buffer.from('{"requests": ["'));
    let fed = 0;
    assert.throws(() => {
      for (;;) {
        scanner.push(Buffer.alloc(100, 0x61));
        fed += 100;
      }
    }, JsonItemsError);
    assert.ok(fed <= 1100, String(fed));
  });

  test('long keys are read whole but not kept; the array key may be written with escapes', () => {
    const long = (c: string) => `"${c.repeat(2000)}"`;
    const body = `{${long('a')}: 1, ${long('b')}: [2], "requ\u0065sts": [{"x": 1}]}`;
    assert.deepEqual(scan([Buffer.from(body)]).items, ['{"x": 1}']);
  });

  test('too many top-level keys is refused', () => {
    const keys = Array.from({ length: 20 }, (_, i) => `"k${i}": 0`).join(', ');
    assert.equal(failure(`{${keys}, "requests": [1]}`).problem, 'too many top-level keys');
  });

  test('the async reader yields items as chunks come and returns the count', async () => {
    async function* chunks() {
      for (let at = 0; at < awkward.length; at += 7) yield awkward.subarray(at, at + 7);
    }
    const texts: string[] = [];
    const reader = jsonArrayItems(chunks(), options);
    let next = await reader.next();
    while (!next.done) {
      texts.push(next.value.text);
      next = await reader.next();
    }
    assert.equal(next.value, texts.length);
    assert.deepEqual(texts, scan([awkward]).items);
  });
});
