/** How citation markers leave an answer's text, whole or split across stream deltas (surfaces/file-search/citation-markers.ts). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CitationMarkers,
  MAX_CITATIONS,
  type MarkerCitation,
} from '../../../src/surfaces/file-search/citation-markers.js';

const known = (n: number) => n >= 1 && n <= 3;

/** The text and citations of `pieces` pushed one after another, then the end. */
function run(pieces: string[]): { text: string; citations: MarkerCitation[] } {
  const markers = new CitationMarkers(known);
  let text = '';
  const citations: MarkerCitation[] = [];
  for (const piece of [...pieces.map((p) => markers.push(p)), markers.end()]) {
    text += piece.text;
    citations.push(...piece.citations);
  }
  return { text, citations };
}

describe('citation markers', () => {
  const answer = 'Paris is in France [1]. Rome is in Italy [2, 3]. Nothing [7] here [x].';
  const expected = {
    text: 'Paris is in France. Rome is in Italy. Nothing [7] here [x].',
    citations: [
      { passage: 1, index: 18, start: 0 },
      { passage: 2, index: 36, start: 20 },
      { passage: 3, index: 36, start: 20 },
    ],
  };

  test('whole: known markers (and the space before) out, a citation at their place; others stay text', () => {
    assert.deepEqual(run([answer]), expected);
  });

  test('split at every character: the same text and citations', () => {
    assert.deepEqual(run([...answer]), expected);
  });

  test('split at every place into two pieces: the same', () => {
    for (let i = 1; i < answer.length; i++)
      assert.deepEqual(run([answer.slice(0, i), answer.slice(i)]), expected, `at ${i}`);
  });

  test('what is held back is bounded: a long bracket is text, a trailing partial marker comes out at the end', () => {
    const long = `[${'1'.repeat(60)}`;
    const markers = new CitationMarkers(known);
    assert.equal(markers.push(long).text, long);
    assert.deepEqual(run(['see [1']), { text: 'see [1', citations: [] });
  });

  test('an answer of nothing but markers is linear: the markers leave, the citations stop at MAX_CITATIONS', () => {
    // 100,000 markers in 900 KB held the event loop 30 s (the text rebuilt at every marker).
    const answer = 'A sentence. ' + 'word [1] '.repeat(100_000);
    const started = performance.now();
    const { text, citations } = run([answer]);
    const ms = performance.now() - started;
    assert.ok(ms < 3_000, `${Math.round(ms)} ms`);
    assert.equal(citations.length, MAX_CITATIONS);
    assert.doesNotMatch(text, /\[1\]/);
    assert.ok(text === 'A sentence. ' + 'word '.repeat(100_000), text.slice(0, 200));
    assert.deepEqual(citations[1], { passage: 1, index: 12 + 9, start: 12 });
  });
});
