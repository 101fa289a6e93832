import { REDACTED } from './redact.js';

/**
 * The keys of one model call (its upstream's configured key, the caller's X-Upstream-Key), removed from what the
 * upstream answers before any of it reaches the caller: a JSON answer, each streamed event, a batch line's result.
 * Only those keys are looked for (an answer that merely talks about `sk-...` or a key-value store is left alone),
 * each whole, and as any run of KEY_PIECE_CHARS of its characters (a key the upstream cut or partly masked).
 *
 * The cost is one compiled search per key over the text, and nothing more unless that search finds something: the
 * search looks for the key's 8-character pieces that start at a multiple of 8 (every run of 15 characters of the key
 * holds one), and each hit is extended character by character to the run of the key around it. Linear in the text
 * (no step goes back more than one key length), so a 32 MiB answer or a 4 MiB event costs milliseconds, never a
 * scan of every window of the text (docs/benchmarks.md, "Scrubbing chat answers").
 */

/** A key shorter than this is not looked for: it would redact ordinary words, and is no secret worth the name. */
export const MIN_KEY_CHARS = 8;
/** A run of this many characters of a key is scrubbed as the whole key is (a public prefix, `sk-ant-api03-`, is shorter). */
export const KEY_PIECE_CHARS = 15;
/** The pieces the search looks for: KEY_PIECE_CHARS - ALIGN + 1 = 8, so every run of 15 holds a whole one. */
const ALIGN = 8;

/** One form of a key (as it is, and as a JSON string spells it when that differs), ready for the search. */
interface Needle {
  text: string;
  /** Its 8-character pieces that start at a multiple of 8, in order (the piece at `i` starts at `i * 8`). */
  pieces: readonly string[];
  /**
   * One alternation of the pieces (the key whole when shorter than a run), sticky-free and global: V8 searches it
   * as one pass (~1.3 ms a MiB of prose, where five `indexOf`, one a piece, measured 2.8 ms).
   */
  search: RegExp;
}

/** Needles made, by key (compiling the search costs ~40 µs, more than a call's searches): at most MAX_CACHED. */
const cache = new Map<string, readonly Needle[]>();
const MAX_CACHED = 256;

function needlesOf(key: string): readonly Needle[] {
  const known = cache.get(key);
  if (known !== undefined) return known;
  const escaped = JSON.stringify(key).slice(1, -1);
  const needles = escaped === key ? [needleOf(key)] : [needleOf(key), needleOf(escaped)];
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
  cache.set(key, needles);
  return needles;
}

function needleOf(text: string): Needle {
  const pieces: string[] = [];
  if (text.length >= KEY_PIECE_CHARS)
    for (let i = 0; i + ALIGN <= text.length; i += ALIGN) pieces.push(text.slice(i, i + ALIGN));
  const search = new RegExp((pieces.length > 0 ? pieces : [text]).map(escapeRegExp).join('|'), 'g');
  return { text, pieces, search };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** Ranges of a text to redact, as [start, end) pairs in one flat array. */
type Ranges = number[];

/**
 * The runs of `needle` in `text` to redact, added to `ranges` (runs that overlap or touch as one). Returns where a
 * run that reaches the end of the text without reaching the end of the key starts (text.length when there is none):
 * in a stream, the key may go on in the next chunk. The search finds the pieces in the order of the text; each hit
 * is extended to the run of the key around it, and the search goes on after it: one pass over the text whatever it
 * holds (a text made of nothing but the key, or of one of its pieces repeated, included).
 */
function findRuns(text: string, needle: Needle, ranges: Ranges): number {
  const { search, pieces } = needle;
  const key = needle.text;
  let held = text.length;
  let mine = -1; // where this needle's last range is in `ranges`
  search.lastIndex = 0;
  for (let hits = 0; search.test(text); hits++) {
    const found = search.lastIndex;
    if (hits === MAX_HITS) {
      wholeKeys(text, key, found - (pieces.length === 0 ? key.length : ALIGN), ranges);
      return held;
    }
    if (pieces.length === 0) {
      mine = addRange(ranges, mine, found - key.length, found);
      continue;
    }
    const at = found - ALIGN;
    let index = 0;
    while (index < pieces.length && !text.startsWith(pieces[index] as string, at)) index++;
    let start = at;
    let from = index * ALIGN;
    let end = found;
    let to = from + ALIGN;
    while (start > 0 && from > 0 && text.charCodeAt(start - 1) === key.charCodeAt(from - 1)) {
      start--;
      from--;
    }
    while (end < text.length && to < key.length && text.charCodeAt(end) === key.charCodeAt(to)) {
      end++;
      to++;
    }
    if (end - start >= KEY_PIECE_CHARS) mine = addRange(ranges, mine, start, end);
    if (end === text.length && to < key.length) held = Math.min(held, start);
    search.lastIndex = end;
  }
  return held;
}

/**
 * Past MAX_HITS pieces of a key in one text (no honest answer holds a thousand pieces of its key: a hostile one may
 * hold millions, each a step of the search), the rest of the text is searched for the key whole only, by `indexOf`.
 */
const MAX_HITS = 1_024;

function wholeKeys(text: string, key: string, from: number, ranges: Ranges): void {
  let mine = -1;
  for (let at = text.indexOf(key, from); at !== -1; at = text.indexOf(key, at + key.length))
    mine = addRange(ranges, mine, at, at + key.length);
}

/** Adds [start, end) to the ranges (merged with the needle's last one, at `mine`, when they overlap or touch): where it is. */
function addRange(ranges: Ranges, mine: number, start: number, end: number): number {
  if (mine !== -1 && start <= (ranges[mine + 1] as number)) {
    ranges[mine + 1] = Math.max(end, ranges[mine + 1] as number);
    return mine;
  }
  ranges.push(start, end);
  return ranges.length - 2;
}

/**
 * Where the end of `text` that may go on into a key starts (text.length when none): its longest end that is a piece
 * of the key (its beginning included) at least SUFFIX_PIECE_CHARS long and shorter than the key. The usual text costs
 * one `includes` of its last three characters in the key.
 */
function keyAtEnd(text: string, key: string): number {
  if (text.length < SUFFIX_PIECE_CHARS || !key.includes(text.slice(-SUFFIX_PIECE_CHARS))) return text.length;
  // Every shorter end of a piece of the key is one too: grow it while it still is.
  let length = SUFFIX_PIECE_CHARS;
  while (length < key.length - 1 && length < text.length && key.includes(text.slice(-(length + 1)))) length++;
  return text.length - length;
}

/**
 * The shortest end of a text that a stream holds back because it may go on into a key: three characters. A key (or
 * a run of one) that a stream splits loses at most its first two characters to the caller (`sk`, for most keys)
 * before the rest is held back and then redacted; an ordinary text ends in three characters of a random key about
 * once in a thousand pieces, and each such piece is written again rather than passed on as the upstream sent it.
 */
const SUFFIX_PIECE_CHARS = 3;

/** `hold` moved to the end of a range it falls strictly inside (that run is whole: it is redacted, not held). */
function pastRanges(hold: number, ranges: Ranges): number {
  for (let moved = true; moved;) {
    moved = false;
    for (let i = 0; i < ranges.length; i += 2) {
      const end = ranges[i + 1] as number;
      if ((ranges[i] as number) < hold && hold < end) [hold, moved] = [end, true];
    }
  }
  return hold;
}

/** `text[from, to)` with the ranges (clipped to it) replaced by REDACTED, ranges that overlap or touch as one. */
function redacted(text: string, ranges: Ranges, from: number, to: number): string {
  if (ranges.length === 0) return from === 0 && to === text.length ? text : text.slice(from, to);
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < ranges.length; i += 2) {
    const start = Math.max(ranges[i] as number, from);
    const end = Math.min(ranges[i + 1] as number, to);
    if (start < end) pairs.push([start, end]);
  }
  pairs.sort((a, b) => a[0] - b[0]);
  let out = '';
  let copied = from; // text[from, copied) is decided
  let last = -1; // where the last range ended
  for (const [start, end] of pairs) {
    if (start > last) out += text.slice(copied, start) + REDACTED;
    copied = Math.max(copied, end);
    last = copied;
  }
  return out + text.slice(copied, to);
}

/** At most this many texts of one stream are followed across pieces; past it, a new one's pieces are scrubbed each alone. */
export const MAX_STREAM_TEXTS = 64;

export class KeyScrubber {
  /** The longest key: what a stream keeps of each text (its last longest - 1 characters, and what it holds back). */
  private readonly longest: number;

  private constructor(
    private readonly needles: readonly Needle[],
    /** The keys as they are (a stream's texts are decoded: the JSON spelling does not occur in them). */
    private readonly keys: readonly string[],
  ) {
    this.longest = Math.max(...keys.map((key) => key.length));
  }

  /** The scrubber of these keys (absent ones and those shorter than MIN_KEY_CHARS left out); undefined when none is left. */
  static of(keys: ReadonlyArray<string | undefined>): KeyScrubber | undefined {
    const kept = [...new Set(keys)].filter((key): key is string => key !== undefined && key.length >= MIN_KEY_CHARS);
    if (kept.length === 0) return undefined;
    return new KeyScrubber(
      kept.flatMap((key) => needlesOf(key)),
      kept,
    );
  }

  /** The text with every key, and every run of KEY_PIECE_CHARS of one, replaced by [REDACTED]; the same string when none occurs. */
  scrub(text: string): string {
    const ranges: Ranges = [];
    for (const needle of this.needles) findRuns(text, needle, ranges);
    return redacted(text, ranges, 0, text.length);
  }

  /** An answer's bytes (`text` their decoding): the same Buffer when no key occurs, else the scrubbed text's. */
  scrubBytes(bytes: Buffer, text: string): Buffer {
    const scrubbed = this.scrub(text);
    return scrubbed === text ? bytes : Buffer.from(scrubbed, 'utf8');
  }

  /** Texts a stream sends in pieces (a chat answer's content, a tool call's arguments), scrubbed across the pieces. */
  texts(): KeyTexts {
    return new KeyTexts(this);
  }

  /**
   * A text's next piece, `text` being what of it was already sent (its last longest - 1 characters: `sent`
   * of them), what was held back, and the piece: what goes out now (scrubbed), and where what is held back starts:
   * the end that may go on into a key (a run of one that reaches the end, a key's beginning, a piece of one), never
   * more than the longest key's length - 1 characters, whatever the upstream sends. With `final`, nothing is held.
   */
  cut(text: string, sent: number, final: boolean): { out: string; hold: number } {
    const ranges: Ranges = [];
    let hold = text.length;
    for (const needle of this.needles) hold = Math.min(hold, findRuns(text, needle, ranges));
    if (final) hold = text.length;
    else {
      let end = text.length;
      for (const key of this.keys) end = Math.min(end, keyAtEnd(text, key));
      hold = Math.max(sent, Math.min(hold, pastRanges(end, ranges)));
    }
    return { out: redacted(text, ranges, sent, hold), hold };
  }

  /** The part of a text a stream keeps to read the next piece against: its last longest - 1 characters before `end`. */
  keep(text: string, end: number): string {
    const kept = text.slice(Math.max(0, end - this.longest + 1), end);
    // A slice of a long text keeps all of it alive in V8; a copy of a few characters keeps only them.
    return text.length > 4_096 ? Buffer.from(kept, 'utf8').toString('utf8') : kept;
  }
}

/** What a stream keeps of one text between its pieces. */
interface TextState {
  /** Its last characters already sent (at most the longest key's length - 1), read with the next piece. */
  sent: string;
  /** What was held back, not yet sent. */
  held: string;
}

/**
 * The texts of one stream, each a sequence of pieces (by an id the caller chooses: a choice's content, a tool
 * call's arguments), scrubbed as if whole: a key split over several pieces, whatever the split, is replaced, because
 * each piece is read after the end of the text before it, and the end of a piece that could go on into a key is held
 * back until the next piece (or the text's end) decides. What is kept of a text is bounded by its keys' length.
 */
export class KeyTexts {
  private readonly states = new Map<string, TextState>();

  constructor(private readonly scrubber: KeyScrubber) {}

  /** What of this piece goes out now (what was held before it in front). */
  push(id: string, piece: string): string {
    let state = this.states.get(id);
    if (state === undefined) {
      if (this.states.size >= MAX_STREAM_TEXTS) return this.scrubber.scrub(piece);
      state = { sent: '', held: '' };
      this.states.set(id, state);
    }
    if (piece === '' && state.held === '') return piece;
    const text = state.sent + state.held + piece;
    const { out, hold } = this.scrubber.cut(text, state.sent.length, false);
    state.held = hold === text.length ? '' : this.scrubber.keep(text, text.length).slice(-(text.length - hold));
    state.sent = this.scrubber.keep(text, hold);
    return out;
  }

  /** The text's end: what it still holds, scrubbed ('' when nothing). */
  end(id: string): string {
    const state = this.states.get(id);
    if (state === undefined) return '';
    this.states.delete(id);
    if (state.held === '') return '';
    const text = state.sent + state.held;
    return this.scrubber.cut(text, state.sent.length, true).out;
  }

  /** Ends every text whose id starts with `prefix` ('' for all): the ids and what each still held, for those that held something. */
  endAll(prefix: string): Array<[id: string, rest: string]> {
    const rests: Array<[string, string]> = [];
    for (const id of [...this.states.keys()]) {
      if (!id.startsWith(prefix)) continue;
      const rest = this.end(id);
      if (rest !== '') rests.push([id, rest]);
    }
    return rests;
  }
}

/**
 * An answer passed through as bytes (a natively forwarded JSON answer, an embeddings list), scrubbed of the given
 * keys: the same Buffer when none occurs (no parse and no copy: one search per key).
 */
export function scrubAnswer(bytes: Buffer, text: string, keys: ReadonlyArray<string | undefined>): Buffer {
  return KeyScrubber.of(keys)?.scrubBytes(bytes, text) ?? bytes;
}
