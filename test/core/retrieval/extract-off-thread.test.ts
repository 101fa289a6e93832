import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractText } from '../../../src/core/retrieval/document-text.js';
import { extractTextOffThread } from '../../../src/core/retrieval/extract-off-thread.js';
import { buildDocx, buildPdf } from '../../helpers/document-fixtures.js';
import { loopHold } from '../../helpers/loop-hold.js';

/** One page whose content stream is megabytes long: pdf.js parses it in one go, about 400 ms here. */
const heavyPdf = () =>
  buildPdf([Array.from({ length: 60_000 }, (_, i) => `Line ${i} of one very long page with text.`)]);

test('off its own thread, a document reads as it does on this one', async () => {
  const pdf = buildPdf([['Hello vector store.', 'Refund policy: 30 days (café).'], ['Page two.']]);
  const docx = buildDocx(['Refund policy', 'Café.']);
  const junk = new Uint8Array([0xc3, 0x28, 0x00]);
  for (const [bytes, filename] of [
    [pdf, 'a.pdf'],
    [docx, 'a.docx'],
    [junk, 'a.bin'],
    [new TextEncoder().encode('%PDF-1.4 broken'), 'b.pdf'],
  ] as const) {
    const request = { bytes, filename, maxChars: 1000 };
    assert.deepEqual(await extractTextOffThread(request), await extractText(request), filename);
  }
});

test('a PDF whose page holds the parser for long does not hold this thread', async () => {
  const bytes = heavyPdf();
  const { result, cpuMs, wallMs } = await loopHold(() =>
    extractTextOffThread({ bytes, filename: 'heavy.pdf', maxChars: 10_000_000 }),
  );
  assert.ok('text' in result && result.text.startsWith('Line 0 of one very long page with text.\n'));
  assert.ok(cpuMs < 50, `the loop was held ${cpuMs.toFixed(1)} ms of CPU (${wallMs.toFixed(1)} ms wall)`);
});

test('a read past its deadline is ended from outside, even inside a page: invalid_file', async () => {
  const started = performance.now();
  const request = { bytes: heavyPdf(), filename: 'heavy.pdf', maxChars: 10_000_000, timeoutMs: 100 };
  // Not the thread's own answer ("PDF: reading it took..."): it was busy in the page when the time ran out.
  assert.deepEqual(await extractTextOffThread(request), {
    error: { code: 'invalid_file', message: 'reading it took longer than 0.1 s' },
  });
  assert.ok(performance.now() - started < 5_000);
});

test('an abort ends the thread and rejects with the reason', async () => {
  const controller = new AbortController();
  const reading = extractTextOffThread({
    bytes: heavyPdf(),
    filename: 'heavy.pdf',
    maxChars: 100,
    signal: controller.signal,
  });
  setTimeout(() => controller.abort(new Error('file deleted')), 20);
  await assert.rejects(reading, /file deleted/);
});
