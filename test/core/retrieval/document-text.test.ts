import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { extractText, type ExtractRequest, type ExtractResult } from '../../../src/core/retrieval/document-text.js';
import { buildDocx, buildPdf, buildZip, declareSize } from '../../helpers/document-fixtures.js';
import { loopHold } from '../../helpers/loop-hold.js';

const MAX = 1_000_000;
const utf8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
const read = (bytes: Uint8Array, filename: string, more: Partial<ExtractRequest> = {}) =>
  extractText({ bytes, filename, maxChars: MAX, ...more });

function textOf(result: ExtractResult): string {
  if ('error' in result) assert.fail(`expected text, got ${result.error.code}: ${result.error.message}`);
  return result.text;
}

function errorOf(result: ExtractResult): { code: string; message: string } {
  if (!('error' in result)) assert.fail(`expected an error, got text ${JSON.stringify(result.text.slice(0, 80))}`);
  return result.error;
}

const TWO_PAGES = [['Hello vector store.', 'Refund policy: 30 days (café).'], ['Page two: gateway latency.']];

test('a PDF: each page its lines, pages apart by a blank line, a WinAnsi é read as é', async () => {
  const result = await read(buildPdf(TWO_PAGES), 'policy.pdf');
  assert.deepEqual(result, {
    text: 'Hello vector store.\nRefund policy: 30 days (café).\n\nPage two: gateway latency.',
    kind: 'pdf',
    truncated: false,
  });
});

test('a PDF with no extension is known by its %PDF- header', async () => {
  const result = await read(buildPdf(TWO_PAGES), 'upload');
  assert.equal('kind' in result && result.kind, 'pdf');
  assert.match(textOf(result), /Page two: gateway latency\.$/);
});

test('a PDF past maxPages: the first pages only, truncated', async () => {
  const result = await read(buildPdf(TWO_PAGES), 'policy.pdf', { maxPages: 1 });
  assert.deepEqual(result, {
    text: 'Hello vector store.\nRefund policy: 30 days (café).',
    kind: 'pdf',
    truncated: true,
  });
});

test('a corrupt PDF is invalid_file with pdf.js reason, no stack and no path', async () => {
  const garbage = utf8('%PDF-1.4\nthis is not a PDF body at all\n');
  const truncated = buildPdf(TWO_PAGES).slice(0, 300);
  for (const bytes of [garbage, truncated]) {
    const error = errorOf(await read(bytes, 'broken.pdf'));
    assert.equal(error.code, 'invalid_file');
    assert.equal(error.message, 'PDF: Invalid PDF structure.');
  }
});

test('a PDF that takes longer than timeoutMs is invalid_file, and stops being read', async () => {
  const pages = Array.from({ length: 300 }, (_, i) => [`Page ${i + 1} of a long document.`]);
  const bytes = buildPdf(pages);
  const whole = await read(bytes, 'long.pdf');
  assert.match(textOf(whole), /Page 300 of a long document\.$/);
  for (const timeoutMs of [0, 5]) {
    const error = errorOf(await read(bytes, 'long.pdf', { timeoutMs }));
    assert.equal(error.code, 'invalid_file');
    assert.match(error.message, /^PDF: reading it took longer than 0(\.0)? s$/);
  }
});

test('a read called off by its signal rejects with the reason', async () => {
  const pages = Array.from({ length: 300 }, (_, i) => [`Page ${i + 1}.`]);
  const controller = new AbortController();
  const reading = read(buildPdf(pages), 'long.pdf', { signal: controller.signal });
  controller.abort(new Error('ingestion cancelled'));
  await assert.rejects(reading, /ingestion cancelled/);
  await assert.rejects(read(utf8('text'), 'a.txt', { signal: controller.signal }), /ingestion cancelled/);
});

test('a DOCX: paragraphs and table cells apart by blank lines, Unicode kept', async () => {
  const bytes = buildDocx(
    ['Refund policy', 'Customers may ask within 30 days (café ünïcode).'],
    ['cell A1', 'cell B1'],
  );
  const result = await read(bytes, 'policy.docx');
  assert.deepEqual(result, {
    text: 'Refund policy\n\nCustomers may ask within 30 days (café ünïcode).\n\ncell A1\n\ncell B1\n\n',
    kind: 'docx',
    truncated: false,
  });
  const unnamed = await read(bytes, 'report');
  assert.equal('kind' in unnamed && unnamed.kind, 'docx');
});

test('a DOCX that is not one: not a zip, no document body, a zip of something else, a zip bomb', async () => {
  const notZip = errorOf(await read(utf8('PK\x03\x04 not really a zip'), 'broken.docx'));
  assert.deepEqual(notZip, {
    code: 'invalid_file',
    message: 'DOCX: not a readable zip archive (no central directory)',
  });

  const noBody = errorOf(await read(buildZip({ 'word/document.xml': '<?xml version="1.0"?><root/>' }), 'a.docx'));
  assert.equal(noBody.code, 'invalid_file');
  assert.equal(noBody.message, 'DOCX: Could not find the body element: are you sure this is a docx file?');

  const badXml = errorOf(await read(buildZip({ 'word/document.xml': 'not xml <<<' }), 'a.docx'));
  assert.equal(badXml.code, 'invalid_file');
  assert.match(badXml.message, /^DOCX: \S/);
  assert.doesNotMatch(badXml.message, /\n|\tat |node_modules/);

  const slides = errorOf(await read(buildZip({ 'ppt/presentation.xml': '<p/>' }), 'deck.zip'));
  assert.equal(slides.code, 'unsupported_file');
  assert.match(slides.message, /not a Word document/);

  // The directory says word/document.xml inflates to ~4 GB: refused before anything is inflated.
  const bomb = buildDocx(['small']);
  declareSize(bomb, 'word/document.xml', 0xfffffff0);
  const inflated = errorOf(await read(bomb, 'bomb.docx'));
  const otherXml = buildDocx(['small']).length; // the other two parts, stored: a little less than the whole zip
  assert.equal(inflated.code, 'invalid_file');
  const declared = Number(/its XML would inflate to (\d+) bytes, more than 67108864$/.exec(inflated.message)?.[1]);
  assert.ok(declared > 0xfffffff0 && declared < 0xfffffff0 + otherXml, inflated.message);
  const media = buildZip({ 'word/document.xml': '<w:document/>', 'word/media/a.png': 'x' });
  declareSize(media, 'word/media/a.png', 300 * 1024 * 1024);
  assert.deepEqual(errorOf(await read(media, 'photos.docx')), {
    code: 'invalid_file',
    message: `DOCX: its parts would inflate to ${300 * 1024 * 1024 + 13} bytes, more than ${256 * 1024 * 1024}`,
  });
  const many = buildZip(Object.fromEntries(Array.from({ length: 10_001 }, (_, i) => [`word/p${i}.xml`, '<x/>'])));
  assert.deepEqual(errorOf(await read(many, 'many.docx')), {
    code: 'invalid_file',
    message: 'DOCX: 10001 zip entries, more than 10000',
  });
  // Named .docx, a zip with some other main part is left to mammoth, which says what is missing.
  const elsewhere = errorOf(await read(buildZip({ 'word/other.xml': '<x/>' }), 'odd.docx'));
  assert.equal(elsewhere.code, 'invalid_file');
  assert.match(elsewhere.message, /^DOCX: /);
});

test('Office formats nothing reads are unsupported_file, saying what to do', async () => {
  for (const [name, hint] of [
    ['old.doc', /save it as \.docx/],
    ['deck.pptx', /save it as PDF/],
    ['sheet.xlsx', /save it as CSV/],
  ] as const) {
    const error = errorOf(await read(utf8('whatever'), name));
    assert.equal(error.code, 'unsupported_file');
    assert.match(error.message, hint);
  }
});

test('HTML: script, style and comments dropped, blocks on lines, entities decoded, whitespace collapsed', async () => {
  const html =
    '<!DOCTYPE html><html><head><title>Shop &amp; policy</title>' +
    '<style>p { color: red } /* </p> */</style>' +
    '<script type="text/javascript">var s = "<p>not text</p>"; if (a < b && c > d) {}</script></head>\n' +
    '<body><!-- a comment <p>hidden</p> -->\n  <h1 class="x" data-q=\'a > b\'>Refunds   &amp;  returns</h1>\n' +
    '<p>Caf&eacute; &#233; &#xE9; &#x1F600; &lt;tag&gt; &unknown; a&nbsp;b</p>' +
    '<ul><li>one</li><li>two <b>bold</b>!</li></ul>line<br>next<br><br>after' +
    '<table><tr><td>A1</td><td>B1</td></tr><tr><td>A2</td><td>B2</td></tr></table>' +
    '<pre>  keep\n    this </pre><SCRIPT>gone()</SCRIPT>tail 1 < 2</body></html>';
  const result = await read(utf8(html), 'page.html');
  assert.deepEqual(result, {
    text:
      'Shop & policy\n\nRefunds & returns\n\nCafé é é 😀 <tag> &unknown; a\u00a0b\n\none\ntwo bold!\n\nline\nnext\n\n' +
      'after\n\nA1 B1\nA2 B2\n\n  keep\n    this \n\ntail 1 < 2',
    kind: 'html',
    truncated: false,
  });
});

test('HTML with an unclosed comment, tag or script: the rest is dropped, nothing hangs', async () => {
  assert.equal(textOf(await read(utf8('<p>kept</p><!-- never closed <p>x</p>'), 'a.html')), 'kept');
  assert.equal(textOf(await read(utf8('<p>kept</p><a href="never closed>x</a>'), 'a.html')), 'kept');
  assert.equal(textOf(await read(utf8('<p>kept</p><script>never closed'), 'a.html')), 'kept');
});

test('JSON, Markdown and code are kept as written', async () => {
  const json = '{\n  "policy": "refunds",\n  "days": [30, 60],\n  "name": "café"\n}\n';
  assert.deepEqual(await read(utf8(json), 'data.json'), { text: json, kind: 'json', truncated: false });
  const markdown = '# Title\n\n- item *one*\n';
  assert.deepEqual(await read(utf8(markdown), 'README.md'), { text: markdown, kind: 'markdown', truncated: false });
  const code = 'def f(x):\n    return x < 2 and x > 0\n';
  assert.deepEqual(await read(utf8(code), 'f.py'), { text: code, kind: 'code', truncated: false });
  assert.deepEqual(await read(utf8('notes'), 'notes'), { text: 'notes', kind: 'text', truncated: false });
});

test('binary junk and text that is not UTF-8 are unsupported_file, naming why', async () => {
  const junk = new Uint8Array(256).map((_, i) => (i * 37 + 11) & 0xff);
  const binary = errorOf(await read(junk, 'blob.bin'));
  assert.equal(binary.code, 'unsupported_file');
  assert.match(binary.message, /^not a text file: it has a NUL byte at offset \d+/);

  const latin1 = new Uint8Array(Buffer.from('Caf\xe9 au lait', 'latin1'));
  const notUtf8 = errorOf(await read(latin1, 'menu.txt'));
  assert.equal(notUtf8.code, 'unsupported_file');
  assert.match(notUtf8.message, /^not a text file: its bytes are not valid UTF-8/);

  const utf16 = new Uint8Array(Buffer.from('\ufeffhello', 'utf16le'));
  assert.match(errorOf(await read(utf16, 'a.txt')).message, /NUL byte/);
});

test('maxChars cuts the text (never inside a surrogate pair) and says so; a byte order mark is dropped', async () => {
  assert.deepEqual(await read(utf8('\ufeffabcdefgh'), 'a.txt', { maxChars: 5 }), {
    text: 'abcde',
    kind: 'text',
    truncated: true,
  });
  assert.deepEqual(await read(utf8('😀😀'), 'a.txt', { maxChars: 3 }), { text: '😀', kind: 'text', truncated: true });
  assert.deepEqual(await read(utf8('abc'), 'a.txt', { maxChars: 3 }), { text: 'abc', kind: 'text', truncated: false });
  // Bytes past what maxChars can reach are not read: invalid UTF-8 there is not looked at.
  const tail = new Uint8Array([...utf8('x'.repeat(100)), 0xff, 0x00]);
  assert.deepEqual(await read(tail, 'a.txt', { maxChars: 10 }), {
    text: 'x'.repeat(10),
    kind: 'text',
    truncated: true,
  });
  const html = await read(utf8(`<p>${'word '.repeat(1000)}</p>`), 'a.html', { maxChars: 20 });
  assert.deepEqual(html, { text: 'word word word word ', kind: 'html', truncated: true });
  const pdf = await read(buildPdf(TWO_PAGES), 'a.pdf', { maxChars: 11 });
  assert.deepEqual(pdf, { text: 'Hello vecto', kind: 'pdf', truncated: true });
});

test('nothing of unpdf, mammoth or gpt-tokenizer is loaded until a document needs it', async () => {
  const modules = ['document-text', 'chunker', 'chunking-strategy'].map(
    (name) => new URL(`../../../src/core/retrieval/${name}.ts`, import.meta.url).href,
  );
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { seen.push(specifier); return next(specifier, context); } });
    const parsers = () => seen.filter((s) => /^(unpdf|mammoth|gpt-tokenizer)/.test(s));
    for (const url of ${JSON.stringify(modules)}) await import(url);
    const atImport = parsers();
    const { extractText } = await import(${JSON.stringify(modules[0])});
    const pdf = new TextEncoder().encode('%PDF-1.4 not really');
    await extractText({ bytes: pdf, filename: 'a.pdf', maxChars: 10 });
    console.log(JSON.stringify({ atImport, afterPdf: parsers() }));`;
  const { stdout } = await promisify(execFile)(process.execPath, [
    '--import',
    'tsx',
    '--input-type=module',
    '-e',
    script,
  ]);
  assert.deepEqual(JSON.parse(stdout), { atImport: [], afterPdf: ['unpdf', 'unpdf/pdfjs'] });
});

test('9 MB of text and 5 MB of HTML are read without holding the event loop', async () => {
  await read(utf8('<p>warm</p>'), 'a.html');
  const line = 'Ünïcode line of text, café.\n';
  const text = utf8(line.repeat(300_000));
  const html = utf8(
    '<div><p class="x">Paragraph &amp; text <b>bold</b></p><script>x()</script><!-- c --></div>\n'.repeat(50_000),
  );
  for (const [bytes, name, expected] of [
    [text, 'big.txt', line.length * 300_000],
    [html, 'big.html', 'Paragraph & text bold'.length * 50_000 + 2 * 49_999],
  ] as const) {
    const { result, cpuMs, wallMs } = await loopHold(() => read(bytes, name, { maxChars: 20_000_000 }));
    assert.equal(textOf(result).length, expected);
    assert.ok(cpuMs < 50, `${name}: the loop was held ${cpuMs.toFixed(1)} ms of CPU (${wallMs.toFixed(1)} ms wall)`);
  }
});
