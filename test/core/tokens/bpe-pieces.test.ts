/**
 * Counting in pieces (src/core/tokens/bpe-pieces.ts) gives the count of the whole text wherever the pieces end at a
 * pre-token boundary, for both encodings the gateway uses; a run without one is cut where the limit falls, and each
 * such cut changes the count by about a token. Counted on gpt-tokenizer directly, in this process.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as o200k from 'gpt-tokenizer/encoding/o200k_base';
import * as cl100k from 'gpt-tokenizer/encoding/cl100k_base';
import { MAX_PIECE, bpePieces, isPieceBoundary } from '../../../src/core/tokens/bpe-pieces.js';

const AS_TEXT = { disallowedSpecial: new Set<string>() };
const ENCODINGS = [
  ['o200k_base', o200k],
  ['cl100k_base', cl100k],
] as const;

/** Deterministic, so a failure names the same text every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
}

const VOCABULARY = [
  'hello',
  'World',
  "it's",
  "don't",
  'naïve',
  'e\u0301t\u0301e',
  '123',
  '4567890',
  '3.14',
  '-',
  '--',
  '...',
  '!',
  '?!',
  '/',
  '//',
  '"',
  "'",
  '(',
  ')',
  '{"a":1}',
  '<|endoftext|>',
  '我能吞下',
  '。',
  '😀',
  '👍🏽',
  'Ω',
  'ß',
  'x\ty',
  '\t',
  '\n',
  '\r\n',
  '\n\n',
  '  ',
  '   ',
  ' ',
  ' ',
  ' ',
  '\u00a0',
  '\u2028',
  'ABC',
  'camelCase',
  'snake_case',
  '#',
  '$100',
  'a1b2',
  'v2.0',
  'https://ex.com/a?b=c',
  '0x1F',
  "'s",
  "'ll",
  '١٢٣',
  'Ⅻ',
  '²',
];

function piecesOf(text: string, max: number): { pieces: string[]; cuts: number; forced: number } {
  const pieces = [...bpePieces(text, max)];
  let at = 0;
  let forced = 0;
  for (const piece of pieces.slice(0, -1)) {
    at += piece.length;
    if (!isPieceBoundary(text, at)) forced++;
  }
  return { pieces, cuts: pieces.length - 1, forced };
}

const countWhole = (encoding: (typeof ENCODINGS)[number][1], text: string) => encoding.countTokens(text, AS_TEXT);
const countPieces = (encoding: (typeof ENCODINGS)[number][1], pieces: string[]) =>
  pieces.reduce((n, piece) => n + encoding.countTokens(piece, AS_TEXT), 0);

describe('counting a text in pieces', () => {
  test('pieces join back into the text, none is longer than the limit, none splits a surrogate pair', () => {
    const next = random(7);
    for (let t = 0; t < 500; t++) {
      let text = '';
      for (let i = 0, n = 1 + Math.floor(next() * 80); i < n; i++)
        text += VOCABULARY[Math.floor(next() * VOCABULARY.length)];
      for (const max of [2, 5, 12, MAX_PIECE]) {
        const pieces = [...bpePieces(text, max)];
        assert.equal(pieces.join(''), text);
        for (const piece of pieces) {
          assert.ok(piece.length > 0 && piece.length <= max, `${piece.length} > ${max}`);
          assert.ok(
            !/^[\udc00-\udfff]/.test(piece) && !/[\ud800-\udbff]$/.test(piece),
            `a surrogate pair is split: ${JSON.stringify(piece)}`,
          );
        }
      }
    }
  });

  test('cut at boundaries only, the pieces count exactly as the whole text (3,000 texts, both encodings)', () => {
    const next = random(42);
    let compared = 0;
    for (let t = 0; t < 3000; t++) {
      let text = '';
      for (let i = 0, n = 1 + Math.floor(next() * 60); i < n; i++)
        text += VOCABULARY[Math.floor(next() * VOCABULARY.length)];
      const { pieces, cuts, forced } = piecesOf(text, 12);
      if (forced > 0) continue;
      for (const [name, encoding] of ENCODINGS) {
        assert.equal(
          countPieces(encoding, pieces),
          countWhole(encoding, text),
          `${name}: ${JSON.stringify(text)} cut into ${JSON.stringify(pieces)}`,
        );
        if (cuts > 0) compared++;
      }
    }
    assert.ok(compared > 1500, `${compared} texts compared with at least one cut`);
  });

  test('ordinary texts are never cut by force: prose, code, JSON without spaces, CJK with punctuation', () => {
    const tools = JSON.stringify(
      Array.from({ length: 200 }, (_, i) => ({
        type: 'function',
        function: {
          name: `tool_${i}`,
          description: 'Looks a thing up.',
          parameters: { type: 'object', properties: { q: { type: 'string' } } },
        },
      })),
    );
    const texts = {
      prose: 'The quick brown fox jumps over the lazy dog, then naps; it’s 3:45 p.m. and 12,345 sheep later. '.repeat(
        400,
      ),
      code: 'function f(x) {\n\treturn x.map((y) => y * 2).filter(Boolean); // 42\n}\n'.repeat(300),
      json: tools,
      cjk: '我能吞下玻璃而不伤身体。你好，世界！'.repeat(300),
    };
    for (const [kind, text] of Object.entries(texts)) {
      const { pieces, forced } = piecesOf(text, MAX_PIECE);
      assert.equal(forced, 0, kind);
      for (const [name, encoding] of ENCODINGS)
        assert.equal(countPieces(encoding, pieces), countWhole(encoding, text), `${kind} ${name}`);
    }
  });

  test('a long run without a boundary is cut by force, each cut changing the count by at most about a token', () => {
    const next = random(3);
    const draw = (alphabet: string, n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
    const runs = {
      'one letter': 'a'.repeat(8000),
      'another letter': 'z'.repeat(7777),
      'random letters': draw('abcdefghijklmnopqrstuvwxyz', 5000),
      spaces: `${' '.repeat(5000)}x`,
      punctuation: '!'.repeat(5000),
      emoji: '😀'.repeat(2000),
      cjk: draw('我能吞下玻璃而不伤身体的', 3000),
    };
    for (const [kind, text] of Object.entries(runs)) {
      const { pieces, forced } = piecesOf(text, MAX_PIECE);
      assert.ok(forced > 0, `${kind}: no forced cut`);
      for (const [name, encoding] of ENCODINGS) {
        const exact = countWhole(encoding, text);
        const counted = countPieces(encoding, pieces);
        assert.ok(
          Math.abs(counted - exact) <= forced,
          `${kind} ${name}: ${counted} counted, ${exact} exactly, ${forced} forced cuts`,
        );
        assert.ok(
          Math.abs(counted - exact) <= Math.max(2, exact * 0.002),
          `${kind} ${name}: ${counted} counted, ${exact} exactly`,
        );
      }
    }
  });
});
