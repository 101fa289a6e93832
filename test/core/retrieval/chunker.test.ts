import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decode, encode } from 'gpt-tokenizer/encoding/cl100k_base';
import {
  AUTO_CHUNKING,
  chunkingOf,
  chunkingView,
  chunkText,
  type TextChunk,
} from '../../../src/core/retrieval/chunker.js';
import { loopHold } from '../../helpers/loop-hold.js';

/** Sentences that differ from each other, so where a chunk sits in the text is found without doubt. */
const sentences = (count: number) =>
  Array.from({ length: count }, (_, i) => `Sentence ${i} says the refund window is ${i % 90} days. `).join('');

/** Each chunk is a piece of `text`; the first starts it, the last ends it, and no chunk starts past the one before's end. */
function assertCovers(text: string, chunks: TextChunk[]): void {
  let start = 0;
  let end = 0;
  for (const [i, chunk] of chunks.entries()) {
    const at = i === 0 ? (text.startsWith(chunk.text) ? 0 : -1) : text.indexOf(chunk.text, start + 1);
    assert.ok(at >= 0, `chunk ${i} is not in the text after chunk ${i - 1}`);
    assert.ok(at <= end, `a gap before chunk ${i}: it starts at ${at}, the text before ends at ${end}`);
    start = at;
    end = at + chunk.text.length;
  }
  assert.equal(end, text.length, 'the last chunk ends the text');
}

test('chunks are the token windows: maxTokens each, the next starting maxTokens - overlapTokens later', async () => {
  const text = sentences(200).trimEnd();
  const all = encode(text);
  for (const [maxTokens, overlapTokens] of [
    [100, 50],
    [100, 0],
    [128, 17],
    [800, 400],
  ] as const) {
    const chunks = await chunkText(text, { maxTokens, overlapTokens });
    const step = maxTokens - overlapTokens;
    const expected = Math.max(1, Math.ceil((all.length - overlapTokens) / step));
    assert.equal(chunks.length, expected, `${maxTokens}/${overlapTokens}: chunk count`);
    for (const chunk of chunks) {
      const window = all.slice(chunk.seq * step, chunk.seq * step + maxTokens);
      assert.equal(chunk.text, decode(window), `${maxTokens}/${overlapTokens}: chunk ${chunk.seq} is its window`);
      assert.equal(chunk.tokens, window.length);
      assert.ok(chunk.tokens <= maxTokens);
      assert.ok(encode(chunk.text).length <= maxTokens, 'its text encodes again within maxTokens');
      const next = chunks[chunk.seq + 1];
      if (next) {
        // The overlap, in tokens: the last overlapTokens of this window are the first of the next.
        assert.deepEqual(window.slice(step), all.slice((chunk.seq + 1) * step, chunk.seq * step + maxTokens));
        assert.equal(decode(window.slice(step)), decode(encode(next.text).slice(0, overlapTokens)));
      }
    }
    assert.equal(chunks.at(-1)?.text.endsWith('days.'), true);
    assertCovers(text, chunks);
  }
});

test('a text shorter than one window is one chunk; an empty or blank one is none', async () => {
  assert.deepEqual(await chunkText('Refunds within 30 days.', AUTO_CHUNKING), [
    { seq: 0, text: 'Refunds within 30 days.', tokens: encode('Refunds within 30 days.').length },
  ]);
  assert.deepEqual(await chunkText('', AUTO_CHUNKING), []);
  assert.deepEqual(await chunkText(' \n\t\n   ', AUTO_CHUNKING), []);
});

test('windows of whitespace only are dropped, and the chunks are numbered without a gap', async () => {
  const text = `Start of the file. ${'\n \n'.repeat(2000)}End of the file.`;
  const chunks = await chunkText(text, { maxTokens: 100, overlapTokens: 0 });
  assert.deepEqual(
    chunks.map((chunk) => chunk.seq),
    chunks.map((_, i) => i),
  );
  assert.ok(chunks.every((chunk) => chunk.text.trim().length > 0));
  assert.match(chunks[0]?.text ?? '', /^Start of the file\./);
  assert.match(chunks.at(-1)?.text ?? '', /End of the file\.$/);
  assert.ok(chunks.length < encode(text).length / 100, 'some windows were dropped');
});

test('no chunk splits a character: CJK and emoji, whose tokens hold parts of characters', async () => {
  const text = Array.from({ length: 400 }, (_, i) => `第${i}章：日本語のテキストを分割します🎉🎊${i}。`).join('');
  let shortened = 0;
  for (const [maxTokens, overlapTokens] of [
    [100, 50],
    [101, 33],
    [100, 0],
  ] as const) {
    const chunks = await chunkText(text, { maxTokens, overlapTokens });
    assert.ok(chunks.length > 10);
    for (const chunk of chunks) {
      assert.ok(!chunk.text.includes('\ufffd'), `chunk ${chunk.seq} has a replacement character`);
      assert.equal(Buffer.from(chunk.text).toString(), chunk.text, 'no lone surrogate');
      assert.ok(chunk.tokens <= maxTokens, `chunk ${chunk.seq}: ${chunk.tokens} tokens`);
      assert.ok(encode(chunk.text).length <= maxTokens);
    }
    assertCovers(text, chunks);
    shortened += chunks.slice(0, -1).filter((chunk) => chunk.tokens < maxTokens).length;
  }
  assert.ok(shortened > 0, 'some window ended early, before a character its last token would have split');
});

test('text that reads like a special token is chunked as text', async () => {
  const chunks = await chunkText('before <|endoftext|> after', AUTO_CHUNKING);
  assert.equal(chunks.length, 1);
  assert.equal(chunks[0]?.text, 'before <|endoftext|> after');
});

test('maxChunks bounds the chunks made; a signal calls chunking off', async () => {
  const text = sentences(2000);
  const chunks = await chunkText(text, { maxTokens: 100, overlapTokens: 0, maxChunks: 3 });
  assert.deepEqual(
    chunks.map((chunk) => chunk.seq),
    [0, 1, 2],
  );
  const controller = new AbortController();
  const chunking = chunkText(sentences(100_000), { maxTokens: 100, overlapTokens: 0, signal: controller.signal });
  setImmediate(() => controller.abort(new Error('file deleted')));
  await assert.rejects(chunking, /file deleted/);
});

test('options out of range are a RangeError (the route checks chunking_strategy before)', async () => {
  await assert.rejects(chunkText('x', { maxTokens: 0, overlapTokens: 0 }), RangeError);
  await assert.rejects(chunkText('x', { maxTokens: 100, overlapTokens: 51 }), RangeError);
  await assert.rejects(chunkText('x', { maxTokens: 100.5, overlapTokens: 0 }), RangeError);
});

test('2 MB of text is chunked without holding the event loop', async () => {
  await chunkText('load the encoder first', AUTO_CHUNKING);
  const text = sentences(50_000);
  assert.ok(text.length > 2_000_000);
  const { result, cpuMs, wallMs, ticks } = await loopHold(() => chunkText(text, AUTO_CHUNKING));
  assert.ok(result.length > 1000);
  assert.ok(ticks > 10, `the interval ticked ${ticks} times`);
  assert.ok(cpuMs < 50, `the loop was held ${cpuMs.toFixed(1)} ms of CPU (${wallMs.toFixed(1)} ms wall)`);
});

test('chunking_strategy: auto, static within bounds, and each problem naming its field', () => {
  assert.deepEqual(chunkingOf(undefined), { maxTokens: 800, overlapTokens: 400 });
  assert.deepEqual(chunkingOf(null), { maxTokens: 800, overlapTokens: 400 });
  assert.deepEqual(chunkingOf({ type: 'auto' }), { maxTokens: 800, overlapTokens: 400 });
  const staticOf = (max: unknown, overlap: unknown) =>
    chunkingOf({ type: 'static', static: { max_chunk_size_tokens: max, chunk_overlap_tokens: overlap } });
  assert.deepEqual(staticOf(100, 50), { maxTokens: 100, overlapTokens: 50 });
  assert.deepEqual(staticOf(4096, 2048), { maxTokens: 4096, overlapTokens: 2048 });
  assert.deepEqual(staticOf(101, 0), { maxTokens: 101, overlapTokens: 0 });
  const maxField = 'static.max_chunk_size_tokens';
  const overlapField = 'static.chunk_overlap_tokens';
  for (const max of [99, 4097, 100.5, '800', null])
    assert.deepEqual(staticOf(max, 0), { field: maxField, problem: 'must be an integer from 100 to 4096' });
  assert.deepEqual(staticOf(100, 51), {
    field: overlapField,
    problem: 'must not exceed half of max_chunk_size_tokens (50)',
  });
  assert.deepEqual(staticOf(101, 51), {
    field: overlapField,
    problem: 'must not exceed half of max_chunk_size_tokens (50)',
  });
  assert.deepEqual(staticOf(100, -1), { field: overlapField, problem: 'must be an integer of 0 or more' });
  assert.deepEqual(chunkingOf({ type: 'other' }), {
    field: 'type',
    problem: 'must be "auto" or "static"',
  });
  assert.deepEqual(chunkingOf({ type: 'static' }), {
    field: 'static',
    problem: 'must be an object with max_chunk_size_tokens and chunk_overlap_tokens',
  });
  // Where the parameter sits, when told: the whole path.
  assert.deepEqual(chunkingOf('auto'), {
    field: '',
    problem: 'must be an object: {"type": "auto"} or {"type": "static", ...}',
  });
  assert.deepEqual(chunkingOf('auto', 'files[2].chunking_strategy'), {
    field: 'files[2].chunking_strategy',
    problem: 'must be an object: {"type": "auto"} or {"type": "static", ...}',
  });
  assert.deepEqual(chunkingOf({ type: 'static', static: { max_chunk_size_tokens: 99 } }, 'chunking_strategy'), {
    field: 'chunking_strategy.static.max_chunk_size_tokens',
    problem: 'must be an integer from 100 to 4096',
  });
});

test('chunkingView shows the numbers as OpenAI does, auto included', () => {
  assert.deepEqual(chunkingView(AUTO_CHUNKING), {
    type: 'static',
    static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 },
  });
  assert.deepEqual(chunkingView({ maxTokens: 100, overlapTokens: 0 }), {
    type: 'static',
    static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 0 },
  });
});
