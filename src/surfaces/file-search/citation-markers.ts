/** A citation found in an answer's text: the passage a marker named, and where in the text without markers it was. */
export interface MarkerCitation {
  passage: number;
  /** Where the marker was, in the text without the markers (UTF-16 units, as JavaScript counts a string). */
  index: number;
  /** Where the sentence the marker ends starts (the cited span is `start`..`index`). */
  start: number;
}

/** The text of a piece, with the markers that named a known passage taken out, and the citations they made. */
export interface MarkedPiece {
  text: string;
  citations: MarkerCitation[];
}

/** The longest marker held back while it may still complete (`[12, 13, 14]`): a longer bracket is plain text. */
const MAX_MARKER_CHARS = 40;
/** A marker: one or several passage numbers in square brackets (`[3]`, `[1, 4]`). */
const MARKER = /^\[(\d{1,5}(?:\s*,\s*\d{1,5}){0,7})\]/;
/** What a marker can start as, until its `]`. */
const PARTIAL_MARKER = /^\[[\d\s,]*$/;
/** How much of the text already sent is kept to find where a cited sentence starts. */
const TAIL_CHARS = 2048;
/**
 * The most markers of one answer that make citations: finding a cited sentence reads up to TAIL_CHARS, so an answer
 * of nothing but markers would cost that per three characters. No answer cites a thousand times.
 */
export const MAX_CITATIONS = 1_000;

/**
 * Takes citation markers out of an answer's text as it streams (or whole): a `[n]` that names a passage a search
 * of this answer returned (`known`) becomes a citation at the place it was, with one space before it removed
 * (`sentence [1].` reads `sentence.`); a marker naming no such passage stays as text. A piece that ends where a
 * marker may be starting (`… [1`, or a space) is held back until the next piece says (at most MAX_MARKER_CHARS +
 * 1), so a marker split across stream deltas is still found.
 */
export class CitationMarkers {
  private held = '';
  /** Characters of text handed out so far. */
  private length = 0;
  /** The last characters handed out (to find a cited sentence's start). */
  private tail = '';
  /** Markers that made citations so far. */
  private cited = 0;

  constructor(private readonly known: (passage: number) => boolean) {}

  push(piece: string): MarkedPiece {
    return this.scan(this.held + piece, false);
  }

  /** What is held back, at the end of the text. */
  end(): MarkedPiece {
    return this.scan(this.held, true);
  }

  private scan(input: string, final: boolean): MarkedPiece {
    this.held = '';
    // The text out, as pieces of the input (joined once): appending to one string and slicing it at each marker
    // flattened it every time, quadratic in the markers (100,000 markers in 900 KB held the event loop 30 s).
    const out = new TextPieces();
    const citations: MarkerCitation[] = [];
    let i = 0;
    while (i < input.length) {
      const open = input.indexOf('[', i);
      if (open === -1) {
        out.add(input.slice(i));
        break;
      }
      out.add(input.slice(i, open));
      const marker = MARKER.exec(input.slice(open, open + MAX_MARKER_CHARS + 1));
      if (marker) {
        const passages = (marker[1] as string).split(',').map((n) => Number(n.trim()));
        if (passages.every((n) => this.known(n))) {
          out.dropTrailingSpace();
          // Past MAX_CITATIONS the marker still leaves the text, without a citation (its span is not looked for).
          if (this.cited < MAX_CITATIONS) {
            const index = this.length + out.length;
            const start = this.sentenceStart(out.last(TAIL_CHARS));
            for (const passage of passages) citations.push({ passage, index, start });
            this.cited++;
          }
        } else {
          out.add(marker[0]);
        }
        i = open + marker[0].length;
        continue;
      }
      const rest = input.slice(open);
      if (!final && rest.length <= MAX_MARKER_CHARS && PARTIAL_MARKER.test(rest)) {
        this.held = rest;
        break;
      }
      out.add('[');
      i = open + 1;
    }
    // A space may be the one before a marker that is still to come: held with it.
    if (!final && out.dropTrailingSpace()) this.held = ' ' + this.held;
    const text = out.join();
    this.length += text.length;
    this.tail = (this.tail + text.slice(-TAIL_CHARS)).slice(-TAIL_CHARS);
    return { text, citations };
  }

  /**
   * Where the sentence that ends at the current end of `out` starts, in the whole text: after the last sentence end
   * before it (a `.`, `!`, `?` followed by a space, or a line break), not counting the sentence's own final
   * punctuation; bounded by what the tail keeps.
   */
  private sentenceStart(recent: { text: string; length: number }): number {
    const text = (this.tail + recent.text).slice(-TAIL_CHARS);
    const offset = this.length + recent.length - text.length;
    const body = text.replace(/[\s.!?]+$/, '');
    const ends = /[.!?]\s+|\n/g;
    let start = 0;
    for (let match = ends.exec(body); match !== null; match = ends.exec(body)) start = match.index + match[0].length;
    return offset + start;
  }
}

/** Text built from pieces, joined once; its end read without joining it. */
class TextPieces {
  private readonly pieces: string[] = [];
  length = 0;

  add(piece: string): void {
    if (piece === '') return;
    this.pieces.push(piece);
    this.length += piece.length;
  }

  /** Drops one space at the end; whether there was one. */
  dropTrailingSpace(): boolean {
    const at = this.pieces.length - 1;
    const last = this.pieces[at];
    if (last === undefined || !last.endsWith(' ')) return false;
    if (last.length === 1) this.pieces.pop();
    else this.pieces[at] = last.slice(0, -1);
    this.length--;
    return true;
  }

  /** Up to `chars` characters of the end (pieces are never empty: at most `chars` of them are read). */
  last(chars: number): { text: string; length: number } {
    let text = '';
    for (let at = this.pieces.length - 1; at >= 0 && text.length < chars; at--) {
      text = (this.pieces[at] as string).slice(-(chars - text.length)) + text;
    }
    return { text, length: this.length };
  }

  join(): string {
    return this.pieces.join('');
  }
}
