import { bounded, parserReason, ReadTimeout, type ParsedText, type ReadLimits } from './read-limits.js';
import type { ZipEntry } from './zip-directory.js';

/** The XML a DOCX may inflate to: mammoth holds each part as a DOM, several times its size in memory. */
export const MAX_DOCX_XML_BYTES = 64 * 1024 * 1024;
/**
 * All its entries may inflate to (images included): mammoth reads its main part wherever `_rels/.rels` points, so
 * a part not named `.xml` is still bounded.
 */
export const MAX_DOCX_INFLATED_BYTES = 256 * 1024 * 1024;

/**
 * The text of a Word document through mammoth (loaded on the first DOCX, never at start-up): paragraphs apart by a
 * blank line, as `extractRawText` gives them. The zip's directory (`entries`, read before) is checked first: XML
 * parts that would inflate past MAX_DOCX_XML_BYTES (a zip bomb) are refused before anything is inflated. A read
 * past the deadline stops waiting for mammoth (`invalid_file`). mammoth parses each part at once, so a large part
 * holds the loop while it is parsed: the XML bound keeps that to what a real document takes.
 */
export async function docxText(
  bytes: Uint8Array,
  entries: readonly ZipEntry[],
  limits: ReadLimits,
  seconds: number,
): Promise<ParsedText> {
  let xmlBytes = 0;
  let allBytes = 0;
  for (const entry of entries) {
    allBytes += entry.uncompressedSize;
    if (/\.(xml|rels)$/i.test(entry.name)) xmlBytes += entry.uncompressedSize;
  }
  if (xmlBytes > MAX_DOCX_XML_BYTES || allBytes > MAX_DOCX_INFLATED_BYTES) {
    const [what, size, max] =
      xmlBytes > MAX_DOCX_XML_BYTES
        ? ['XML', xmlBytes, MAX_DOCX_XML_BYTES]
        : ['parts', allBytes, MAX_DOCX_INFLATED_BYTES];
    return {
      error: { code: 'invalid_file', message: `DOCX: its ${what} would inflate to ${size} bytes, more than ${max}` },
    };
  }
  const { default: mammoth } = await import('mammoth');
  try {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const { value } = await bounded(mammoth.extractRawText({ buffer }), limits, seconds);
    return { text: value, truncated: value.length > limits.maxChars };
  } catch (error) {
    if (limits.signal?.aborted) throw limits.signal.reason;
    if (error instanceof ReadTimeout) return { error: { code: 'invalid_file', message: `DOCX: ${error.message}` } };
    return { error: { code: 'invalid_file', message: `DOCX: ${parserReason(error)}` } };
  }
}
