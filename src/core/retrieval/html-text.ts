import { decodeEntities } from './html-entities.js';
import { LoopSlice } from './loop-slice.js';
import { cutAt } from './utf8-text.js';

/** Elements whose content is not text a reader sees (WHATWG HTML: raw text elements, templates, scripting fallbacks). */
const DROPPED = new Set(['script', 'style', 'template', 'noscript', 'svg', 'iframe', 'object']);
/** Elements after which the text goes on with a blank line. */
const PARAGRAPHS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'pre', 'blockquote', 'table', 'ul', 'ol', 'dl']);
/** Elements that start and end a line. */
const BLOCKS = new Set([
  ...PARAGRAPHS,
  ...['div', 'li', 'tr', 'dt', 'dd', 'hr', 'section', 'article', 'header', 'footer', 'nav', 'aside', 'main'],
  ...['figure', 'figcaption', 'address', 'details', 'summary', 'form', 'fieldset', 'legend', 'caption', 'title'],
  ...['html', 'body', 'head', 'thead', 'tbody', 'tfoot', 'option', 'center'],
]);
/** Elements whose whitespace is kept as written. */
const PREFORMATTED = new Set(['pre', 'textarea', 'listing', 'plaintext']);
/** Table cells: their texts are kept apart by a space. */
const CELLS = new Set(['td', 'th']);

/** The longest run of text handled in one step (a megabyte of text with no tag is still cut into slices). */
const MAX_RUN = 64 * 1024;

/** The text a reader of an HTML document sees, built a piece at a time with a line structure. */
class TextBuilder {
  private readonly parts: string[] = [];
  length = 0;
  private pendingBreaks = 0;
  private pendingSpace = false;

  constructor(readonly maxChars: number) {}

  get full(): boolean {
    return this.length >= this.maxChars;
  }

  /** Text between tags; outside preformatted elements, runs of HTML whitespace become one space. */
  text(raw: string, preformatted: boolean): void {
    if (preformatted) return this.put(decodeEntities(raw));
    const collapsed = raw.replace(/[ \t\n\r\f]+/g, ' ');
    if (collapsed === ' ') {
      this.pendingSpace = true;
      return;
    }
    if (collapsed.startsWith(' ')) this.pendingSpace = true;
    const trailing = collapsed.endsWith(' ');
    this.put(decodeEntities(collapsed.slice(collapsed.startsWith(' ') ? 1 : 0, trailing ? -1 : undefined)));
    this.pendingSpace = trailing;
  }

  /** A line break (a `<br>` adds one to another, up to a blank line); nothing at the start of the text. */
  lineBreak(count: 1 | 2, adds = false): void {
    if (this.length === 0) return;
    this.pendingBreaks = Math.min(2, adds ? this.pendingBreaks + count : Math.max(this.pendingBreaks, count));
  }

  space(): void {
    this.pendingSpace = true;
  }

  private put(content: string): void {
    if (content.length === 0) return;
    if (this.pendingBreaks > 0) this.push('\n'.repeat(this.pendingBreaks));
    else if (this.pendingSpace && this.length > 0) this.push(' ');
    this.pendingBreaks = 0;
    this.pendingSpace = false;
    this.push(content);
  }

  private push(part: string): void {
    this.parts.push(part);
    this.length += part.length;
  }

  result(): string {
    return this.parts.join('');
  }
}

const isLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
const isNameChar = (code: number) => isLetter(code) || (code >= 48 && code <= 57) || code === 45 || code === 58;

/** Where the tag that starts at `at` (its `<`) ends, past its `>`; quoted attribute values may hold a `>`. */
function tagEnd(html: string, at: number): number {
  for (let i = at + 1; i < html.length; i++) {
    const char = html.charCodeAt(i);
    if (char === 62) return i + 1;
    if (char === 34 || char === 39) {
      const close = html.indexOf(char === 34 ? '"' : "'", i + 1);
      if (close < 0) return html.length;
      i = close;
    }
  }
  return html.length;
}

/** Where the content of a dropped element ends: past its end tag (case-insensitive), or the end of the document. */
function pastEndTag(html: string, name: string, from: number): number {
  const closing = new RegExp(`</${name}[\\s/>]`, 'gi');
  closing.lastIndex = from;
  const found = closing.exec(html);
  return found ? tagEnd(html, found.index) : html.length;
}

/**
 * The text of an HTML document, in one pass: comments, doctypes and the content of script, style and similar
 * elements are dropped; block elements start new lines (paragraphs and headings leave a blank line); character
 * references are decoded; whitespace is collapsed as a browser does, except in `<pre>`. Every step moves forward
 * (indexOf and sticky searches, no backtracking pattern), so the time is linear in the document; it lets the loop
 * run between slices, and stops once `maxChars` characters are written (the result is cut there).
 */
export async function htmlToText(
  html: string,
  maxChars: number,
  signal?: AbortSignal,
): Promise<{ text: string; truncated: boolean }> {
  const out = new TextBuilder(maxChars);
  const slice = new LoopSlice(signal);
  let preformatted = 0;
  let at = 0;
  while (at < html.length && !out.full) {
    if (slice.due()) await slice.pause();
    const lt = html.indexOf('<', at);
    if (lt !== at) {
      let end = lt < 0 ? html.length : lt;
      if (end - at > MAX_RUN) {
        end = at + MAX_RUN;
        // Not in the middle of a character reference: the next step starts at its `&`.
        const amp = html.lastIndexOf('&', end - 1);
        if (amp > end - 40 && amp > at) end = amp;
      }
      out.text(html.slice(at, end), preformatted > 0);
      at = end;
      continue;
    }
    const next = html.charCodeAt(at + 1);
    if (html.startsWith('<!--', at)) {
      const close = html.indexOf('-->', at + 4);
      at = close < 0 ? html.length : close + 3;
      continue;
    }
    if (next === 33 || next === 63) {
      // `<!DOCTYPE ...>`, `<![CDATA[...]]>`, `<?xml ...?>`: not text.
      const close = html.indexOf('>', at + 2);
      at = close < 0 ? html.length : close + 1;
      continue;
    }
    const closing = next === 47;
    const nameStart = closing ? at + 2 : at + 1;
    if (!isLetter(html.charCodeAt(nameStart))) {
      out.text('<', preformatted > 0);
      at += 1;
      continue;
    }
    let nameEnd = nameStart + 1;
    while (nameEnd < html.length && isNameChar(html.charCodeAt(nameEnd))) nameEnd++;
    const name = html.slice(nameStart, nameEnd).toLowerCase();
    at = tagEnd(html, at);
    if (!closing && DROPPED.has(name)) {
      at = pastEndTag(html, name, at);
      continue;
    }
    if (name === 'br') out.lineBreak(1, true);
    else if (BLOCKS.has(name)) out.lineBreak(PARAGRAPHS.has(name) ? 2 : 1);
    else if (CELLS.has(name)) out.space();
    if (PREFORMATTED.has(name)) preformatted = Math.max(0, preformatted + (closing ? -1 : 1));
  }
  const text = out.result();
  return { text: cutAt(text, maxChars), truncated: text.length > maxChars || at < html.length };
}
