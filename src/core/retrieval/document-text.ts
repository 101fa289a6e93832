import { documentKind, type DocumentKind } from './document-kind.js';
import { docxText } from './docx-text.js';
import { htmlToText } from './html-text.js';
import { pdfText } from './pdf-text.js';
import type { DocumentError, ParsedText, ReadLimits } from './read-limits.js';
import { cutAt, decodeUtf8 } from './utf8-text.js';

export type { DocumentError } from './read-limits.js';
export type { DocumentKind } from './document-kind.js';

/** PDF pages read at most; the text of later pages is left out. */
export const MAX_PDF_PAGES = 2_000;
/** How long one document may take to read. */
export const READ_TIMEOUT_MS = 120_000;

export interface ExtractRequest {
  bytes: Uint8Array;
  /** The file's name as uploaded: its extension says how to read it first. */
  filename: string;
  /** The media type declared with the file, if any: read when the extension says nothing. */
  mediaType?: string | undefined;
  /** The text is cut here (UTF-16 units), not refused. */
  maxChars: number;
  maxPages?: number | undefined;
  timeoutMs?: number | undefined;
  /** Calls the read off: the returned promise then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

export type ExtractResult = { text: string; kind: DocumentKind; truncated: boolean } | { error: DocumentError };

/**
 * The text of an uploaded file for a vector store (docs/retrieval.md): plain text, Markdown, JSON and code as they
 * are, HTML as the text a reader sees, PDF (unpdf) and DOCX (mammoth), each parser loaded on its first document.
 * A file that is not one of these (binary, not UTF-8, a NUL byte, an Office format not read) is `unsupported_file`,
 * saying why; a PDF or DOCX its parser cannot read, or one that takes longer than `timeoutMs`, is `invalid_file`
 * with the parser's reason. The text is at most `maxChars` long (a longer one is cut, `truncated`), and no step
 * of the work holds the event loop for long (decoding and HTML are read in slices; PDFs a page at a time).
 */
export async function extractText(request: ExtractRequest): Promise<ExtractResult> {
  const { bytes, filename, mediaType, maxChars, signal } = request;
  const timeoutMs = request.timeoutMs ?? READ_TIMEOUT_MS;
  const limits: ReadLimits = {
    maxChars,
    maxPages: request.maxPages ?? MAX_PDF_PAGES,
    deadline: performance.now() + timeoutMs,
    signal,
  };
  const seconds = Math.round(timeoutMs / 100) / 10;
  signal?.throwIfAborted();
  const verdict = documentKind(bytes, filename, mediaType);
  if ('refused' in verdict) return { error: verdict.refused };
  let parsed: ParsedText;
  if (verdict.kind === 'pdf') parsed = await pdfText(bytes, limits, seconds);
  else if (verdict.kind === 'docx') parsed = await docxText(bytes, verdict.entries, limits, seconds);
  else {
    // HTML is decoded whole before it is turned into text (markup is most of it), then cut.
    const decoded = await decodeUtf8(bytes, verdict.kind === 'html' ? bytes.length : maxChars, signal);
    if ('problem' in decoded)
      return { error: { code: 'unsupported_file', message: `not a text file: ${decoded.problem}` } };
    if (verdict.kind !== 'html') parsed = decoded;
    else parsed = await htmlToText(decoded.text, maxChars, signal);
  }
  if ('error' in parsed) return parsed;
  const text = cutAt(parsed.text, maxChars);
  return { text, kind: verdict.kind, truncated: parsed.truncated || text.length < parsed.text.length };
}
