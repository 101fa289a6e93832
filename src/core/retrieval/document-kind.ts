import { startsLikeZip, zipEntries, type ZipEntry } from './zip-directory.js';

/** How a document's text is read: UTF-8 text as it is (plain, Markdown, JSON, code), HTML to text, PDF, DOCX. */
export type DocumentKind = 'text' | 'markdown' | 'json' | 'code' | 'html' | 'pdf' | 'docx';

/**
 * By extension: the types OpenAI's file_search takes that can be read here (its list: .c .cpp .cs .css .doc .docx
 * .go .html .java .js .json .md .pdf .php .pptx .py .rb .sh .tex .ts .txt), and a few more text formats.
 */
const BY_EXTENSION = new Map<string, DocumentKind>([
  ...(['txt', 'text', 'log', 'csv', 'tsv', 'tex', 'rst', 'xml', 'yaml', 'yml', 'toml'] as const).map(
    (ext) => [ext, 'text'] as const,
  ),
  ...(['md', 'markdown', 'mdx'] as const).map((ext) => [ext, 'markdown'] as const),
  ['json', 'json'],
  ['jsonl', 'json'],
  ...(
    ['c', 'h', 'cpp', 'cc', 'hpp', 'cs', 'css', 'go', 'java', 'js', 'mjs', 'cjs', 'jsx', 'ts', 'tsx', 'php'] as const
  ).map((ext) => [ext, 'code'] as const),
  ...(['py', 'rb', 'sh', 'bash', 'rs', 'kt', 'swift', 'scala', 'sql', 'lua', 'pl', 'r'] as const).map(
    (ext) => [ext, 'code'] as const,
  ),
  ['html', 'html'],
  ['htm', 'html'],
  ['xhtml', 'html'],
  ['pdf', 'pdf'],
  ['docx', 'docx'],
]);

/** Formats a caller may expect to work (OpenAI takes some of them) that nothing here reads: refused by name. */
const UNREAD = new Map<string, string>([
  ['doc', 'Word 97-2003 documents (.doc) are not read: save it as .docx'],
  ['pptx', 'PowerPoint files (.pptx) are not read: save it as PDF'],
  ['ppt', 'PowerPoint files (.ppt) are not read: save it as PDF'],
  ['xlsx', 'Excel files (.xlsx) are not read: save it as CSV'],
  ['xls', 'Excel files (.xls) are not read: save it as CSV'],
  ['odt', 'OpenDocument files (.odt) are not read: save it as .docx'],
  ['rtf', 'RTF files are not read: save it as .docx or .txt'],
]);

const BY_MEDIA_TYPE = new Map<string, DocumentKind>([
  ['application/pdf', 'pdf'],
  ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
  ['text/html', 'html'],
  ['application/xhtml+xml', 'html'],
  ['application/json', 'json'],
  ['text/markdown', 'markdown'],
]);

/** At most this many zip entries are listed to find a DOCX's parts (a real one has a few dozen). */
export const MAX_ZIP_ENTRIES = 10_000;

export type KindVerdict =
  | { kind: Exclude<DocumentKind, 'docx'> }
  | { kind: 'docx'; entries: readonly ZipEntry[] }
  | { refused: { code: 'unsupported_file' | 'invalid_file'; message: string } };

function extensionOf(filename: string): string {
  const base = filename.slice(filename.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

/** Whether `%PDF-` starts within the first KB (pdf.js, like Acrobat, takes a header after some leading junk). */
function startsLikePdf(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024));
  return head.indexOf('%PDF-', 0, 'latin1') >= 0;
}

/**
 * A zip archive read as a DOCX. A file named `.docx` is left to mammoth to judge (its main part is wherever
 * `_rels/.rels` points); an unnamed zip is one only if it holds `word/document.xml`.
 */
function docxVerdict(bytes: Uint8Array, named: boolean): KindVerdict {
  const directory = zipEntries(bytes, MAX_ZIP_ENTRIES);
  if (!directory)
    return { refused: { code: 'invalid_file', message: 'DOCX: not a readable zip archive (no central directory)' } };
  const { count, entries } = directory;
  if (count > MAX_ZIP_ENTRIES)
    return { refused: { code: 'invalid_file', message: `DOCX: ${count} zip entries, more than ${MAX_ZIP_ENTRIES}` } };
  if (!named && !entries.some((entry) => entry.name === 'word/document.xml'))
    return {
      refused: {
        code: 'unsupported_file',
        message: 'a zip archive without word/document.xml: not a Word document (.docx), and no other is read',
      },
    };
  return { kind: 'docx', entries };
}

/**
 * How a file is read: by its name's extension first, then by its declared media type, then by its first bytes
 * (`%PDF-`; a zip holding `word/document.xml`); anything else is tried as UTF-8 text. So a file named `notes`
 * with text in it is read, and a binary one is refused by the UTF-8 check that follows.
 */
export function documentKind(bytes: Uint8Array, filename: string, mediaType?: string): KindVerdict {
  const extension = extensionOf(filename);
  const unread = UNREAD.get(extension);
  if (unread) return { refused: { code: 'unsupported_file', message: unread } };
  const declared =
    BY_EXTENSION.get(extension) ?? BY_MEDIA_TYPE.get((mediaType ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '');
  if (declared === 'docx') return docxVerdict(bytes, true);
  if (declared) return { kind: declared };
  if (startsLikePdf(bytes)) return { kind: 'pdf' };
  if (startsLikeZip(bytes)) return docxVerdict(bytes, false);
  return { kind: 'text' };
}
