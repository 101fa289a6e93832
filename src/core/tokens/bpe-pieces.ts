/**
 * Cuts a text into pieces no longer than MAX_PIECE characters for a BPE tokenizer, so that counting costs time in
 * proportion to the text. The BPE merge of one pre-token (a run the encoding's regex keeps whole: a word, a run of
 * spaces, of punctuation, of one letter) is quadratic in its length: gpt-tokenizer took seconds for 100,000 times
 * the same letter, minutes for a million. No piece here is longer than MAX_PIECE, so no pre-token is either.
 *
 * Where it can, a piece ends at a point that is a pre-token boundary for both encodings used (o200k_base and
 * cl100k_base), and counting the pieces one by one gives exactly the count of the whole (test/core/tokens/bpe-pieces.test.ts
 * checks it on many texts): before a space after a non-space; before a line break after a letter or a digit;
 * before a digit after anything but a digit or a space; before a letter after a digit; before punctuation (not an
 * apostrophe, which may start a contraction such as `'s`) after a letter or a digit. Only a run of MAX_PIECE
 * characters with no such point (one very long word, a long run of one letter, of spaces, of punctuation) is cut
 * where the limit falls (never inside a surrogate pair), and each such cut can change the count by about a token.
 */
export const MAX_PIECE = 256;

const WS = 0;
const NEWLINE = 1;
const DIGIT = 2;
const LETTER = 3;
const MARK = 4;
const APOSTROPHE = 5;
const OTHER = 6;

/** `\s`, `\p{N}`, `\p{L}`, `\p{M}` of the code point at lastIndex (sticky: nothing is searched). */
const CLASS_OF = /(\s)|(\p{N})|(\p{L})|(\p{M})/uy;

function classOfCode(text: string, at: number): number {
  const code = text.charCodeAt(at);
  if (code === 10 || code === 13) return NEWLINE;
  if (code === 39) return APOSTROPHE;
  if (code < 128) {
    if (code === 32 || (code >= 9 && code <= 12)) return WS;
    if (code >= 48 && code <= 57) return DIGIT;
    if ((code >= 65 && code <= 90) || (code >= 97 && code <= 122)) return LETTER;
    return OTHER;
  }
  CLASS_OF.lastIndex = at;
  const match = CLASS_OF.exec(text);
  if (!match) return OTHER;
  return match[1] !== undefined ? WS : match[2] !== undefined ? DIGIT : match[3] !== undefined ? LETTER : MARK;
}

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** The class of the character that ends just before `at` (a whole surrogate pair when it ends one). */
function classBefore(text: string, at: number): number {
  const start = at >= 2 && isLow(text.charCodeAt(at - 1)) && isHigh(text.charCodeAt(at - 2)) ? at - 2 : at - 1;
  return classOfCode(text, start);
}

/** Whether the tokenizer's pre-tokens of `text` all end or start at `at` (0 < at < length): see the file comment. */
export function isPieceBoundary(text: string, at: number): boolean {
  if (isLow(text.charCodeAt(at))) return false;
  const after = classOfCode(text, at);
  if (after === MARK || after === APOSTROPHE) return false;
  const before = classBefore(text, at);
  switch (after) {
    case WS:
      return before !== WS && before !== NEWLINE;
    case NEWLINE:
      return before === LETTER || before === DIGIT;
    case DIGIT:
      return before !== DIGIT && before !== WS && before !== NEWLINE;
    case LETTER:
      return before === DIGIT;
    default:
      return before === LETTER || before === DIGIT;
  }
}

/** Where the piece that starts at `start` ends: the last boundary within `max` characters, else the limit itself. */
function pieceEnd(text: string, start: number, max: number): number {
  const limit = start + max;
  for (let at = limit; at > start; at--) if (isPieceBoundary(text, at)) return at;
  return isLow(text.charCodeAt(limit)) && isHigh(text.charCodeAt(limit - 1)) ? limit - 1 : limit;
}

/** The pieces of `text`, in order, none longer than `max` characters; they join back into `text`. */
export function* bpePieces(text: string, max = MAX_PIECE): Generator<string, void, undefined> {
  let start = 0;
  while (text.length - start > max) {
    const end = pieceEnd(text, start, max);
    yield text.slice(start, end);
    start = end;
  }
  if (start < text.length) yield start === 0 ? text : text.slice(start);
}
