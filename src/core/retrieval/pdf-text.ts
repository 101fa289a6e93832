import { setImmediate as nextTurn } from 'node:timers/promises';
import { bounded, parserReason, ReadTimeout, type ParsedText, type ReadLimits } from './read-limits.js';

/** pdf.js's VerbosityLevel.ERRORS: its warnings ("Indexing all PDF objects"...) are not the gateway's log. */
const ERRORS_ONLY = 0;

/** The text of one page of pdf.js's text content: its runs, a line break where pdf.js saw a line end. */
function pageText(items: readonly object[]): string {
  let text = '';
  for (const item of items) {
    if (!('str' in item) || typeof item.str !== 'string') continue;
    text += item.str;
    if ('hasEOL' in item && item.hasEOL === true) text += '\n';
  }
  return text;
}

/**
 * The text of a PDF through unpdf's build of pdf.js (loaded on the first PDF, never at start-up), page by page,
 * pages apart by a blank line. Bounded three ways: at most `maxPages` pages and `maxChars` characters are read (the
 * rest is left out), and the whole read stops at the deadline (its loading task destroyed, so pdf.js stops at its
 * next step) with `invalid_file`. The loop turns between pages; pdf.js itself yields within a page's text every few
 * ms. A document pdf.js cannot open is `invalid_file` with pdf.js's reason; one behind a password is unsupported.
 */
export async function pdfText(bytes: Uint8Array, limits: ReadLimits, seconds: number): Promise<ParsedText> {
  const { getResolvedPDFJS } = await import('unpdf');
  const { getDocument } = await getResolvedPDFJS();
  // A copy: pdf.js may take over (detach) the buffer it is given, and the caller's bytes stay the caller's.
  const task = getDocument({
    data: new Uint8Array(bytes),
    verbosity: ERRORS_ONLY,
    disableFontFace: true,
    useSystemFonts: false,
  });
  try {
    const pdf = await bounded(task.promise, limits, seconds);
    const pages = Math.min(pdf.numPages, limits.maxPages);
    const texts: string[] = [];
    let chars = 0;
    for (let number = 1; number <= pages && chars < limits.maxChars; number++) {
      const page = await bounded(pdf.getPage(number), limits, seconds);
      const content = await bounded(page.getTextContent(), limits, seconds);
      const text = pageText(content.items);
      page.cleanup();
      texts.push(text);
      chars += text.length + 2;
      await nextTurn();
    }
    const text = texts.join('\n\n');
    return { text, truncated: texts.length < pdf.numPages || text.length > limits.maxChars };
  } catch (error) {
    if (limits.signal?.aborted) throw limits.signal.reason;
    if (error instanceof ReadTimeout) return { error: { code: 'invalid_file', message: `PDF: ${error.message}` } };
    if (error instanceof Error && error.name === 'PasswordException')
      return { error: { code: 'unsupported_file', message: 'the PDF is protected by a password' } };
    return { error: { code: 'invalid_file', message: `PDF: ${parserReason(error)}` } };
  } finally {
    await task.destroy();
  }
}
