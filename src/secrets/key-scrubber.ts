import { REDACTED } from './redact.js';

/**
 * The keys of one model call (its upstream's configured key, the caller's X-Upstream-Key), removed from what the
 * upstream answers before any of it reaches the caller: a JSON answer, each streamed event, a batch line's result.
 * Only those keys are looked for (an answer that merely talks about `sk-...` or a key-value store is left alone),
 * each whole, and as any run of KEY_PIECE_CHARS of its characters (a key the upstream cut or partly masked).
 *
 * The cost is one compiled search over the text for all the keys, and nothing more unless it finds something: it
 * looks for the keys' 8-character pieces that start at a multiple of 8 (every run of 15 characters of a key holds
 * one), and each hit is extended character by character to the run of the key around it. Linear in the text (no
 * step goes back more than one key length; past MAX_HITS hits, only whole keys), so a 32 MiB answer or a 4 MiB event
 * costs milliseconds, never a scan of every window of the text (docs/benchmarks.md, "chat answers scrubbed of the
 * call's keys"). A stream's texts,
 * split over its chunks, are followed by key-texts.ts.
 */

/** A key shorter than this is not looked for: it would redact ordinary words, and is no secret worth the name. */
export const MIN_KEY_CHARS = 8;
/** A run of this many characters of a key is scrubbed as the whole key is (a public prefix, `sk-ant-api03-`, is shorter). */
export const KEY_PIECE_CHARS = 15;
/** The pieces the search looks for: KEY_PIECE_CHARS - ALIGN + 1 = 8, so every run of 15 holds a whole one. */
const ALIGN = 8;

/** Where an alternative of the search comes from: a piece of `key` starting at `offset` (a key shorter than a run: itself, at 0). */
interface PieceOf {
  key: string;
  offset: number;
}

/**
 * The search of a scrubber: one regular expression, the alternation of every key's 8-character pieces that start at
 * a multiple of 8 (a key shorter than a run: the key whole), each key as it is and as a JSON string spells it when
 * that differs. V8 runs it as one pass over the text, faster than one search a key or one `indexOf` a piece
 * (docs/benchmarks.md).
 */
interface Search {
  regex: RegExp;
  /** What each alternative is a piece of. */
  pieces: ReadonlyMap<string, readonly PieceOf[]>;
  /** The keys' forms, for the search past MAX_HITS. */
  forms: readonly string[];
}

function searchOf(keys: readonly string[]): Search {
  const forms = [...new Set(keys.flatMap((key) => [key, JSON.stringify(key).slice(1, -1)]))];
  const pieces = new Map<string, PieceOf[]>();
  const add = (piece: string, key: string, offset: number) =>
    pieces.set(piece, [...(pieces.get(piece) ?? []), { key, offset }]);
  for (const key of forms) {
    if (key.length < KEY_PIECE_CHARS) add(key, key, 0);
    else for (let i = 0; i + ALIGN <= key.length; i += ALIGN) add(key.slice(i, i + ALIGN), key, i);
  }
  // Longer alternatives first: at one position the regular expression takes the first that matches.
  const alternatives = [...pieces.keys()].sort((a, b) => b.length - a.length);
  return { regex: new RegExp(alternatives.map(escapeRegExp).join('|'), 'g'), pieces, forms };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** Ranges of a text to redact, as [start, end) pairs in one flat array. */
type Ranges = number[];

/**
 * The runs of the keys in `text` to redact, added to `ranges` (runs that overlap or touch as one). Returns where a
 * run that reaches the end of the text without reaching the end of its key starts (text.length when there is none):
 * in a stream, the key may go on in the next chunk. The search finds the pieces in the order of the text; each hit
 * is extended to the run of the key around it, and the search goes on after it: one pass over the text whatever it
 * holds (a text made of nothing but a key, or of one of its pieces repeated, included).
 */
function findRuns(text: string, search: Search, ranges: Ranges): number {
  const { regex, pieces } = search;
  let held = text.length;
  regex.lastIndex = 0;
  for (let hits = 0, match = regex.exec(text); match !== null; hits++, match = regex.exec(text)) {
    const at = match.index;
    const found = at + match[0].length;
    if (hits === MAX_HITS) {
      for (const key of search.forms) wholeKeys(text, key, at, ranges);
      return held;
    }
    let next = found;
    for (const { key, offset } of pieces.get(match[0]) ?? []) {
      if (key.length < KEY_PIECE_CHARS) {
        addRange(ranges, at, found);
        continue;
      }
      let start = at;
      let from = offset;
      let end = found;
      let to = offset + ALIGN;
      while (start > 0 && from > 0 && text.charCodeAt(start - 1) === key.charCodeAt(from - 1)) {
        start--;
        from--;
      }
      while (end < text.length && to < key.length && text.charCodeAt(end) === key.charCodeAt(to)) {
        end++;
        to++;
      }
      if (end - start >= KEY_PIECE_CHARS) addRange(ranges, start, end);
      if (end === text.length && to < key.length) held = Math.min(held, start);
      next = Math.max(next, end);
    }
    regex.lastIndex = next;
  }
  return held;
}

/**
 * Past MAX_HITS pieces of a key in one text (no honest answer holds a thousand pieces of its key: a hostile one may
 * hold millions, each a step of the search), the rest of the text is searched for the keys whole only, by `indexOf`.
 */
const MAX_HITS = 1_024;

function wholeKeys(text: string, key: string, from: number, ranges: Ranges): void {
  for (let at = text.indexOf(key, from); at !== -1; at = text.indexOf(key, at + key.length))
    addRange(ranges, at, at + key.length);
}

/** Adds [start, end) to the ranges, merged with the last one when they overlap or touch. */
function addRange(ranges: Ranges, start: number, end: number): void {
  const last = ranges.length - 1;
  if (last > 0 && start <= (ranges[last] as number) && start >= (ranges[last - 1] as number))
    ranges[last] = Math.max(end, ranges[last] as number);
  else ranges.push(start, end);
}

/**
 * Where the end of `text` that may go on into a key starts (text.length when none): its longest end that is a piece
 * of the key (its beginning included) at least SUFFIX_PIECE_CHARS long and shorter than the key. The usual text costs
 * one look-up of its last three characters among the key's (`trigrams`), with nothing allocated.
 */
function keyAtEnd(text: string, key: string, trigrams: ReadonlySet<number>): number {
  const n = text.length;
  if (n < SUFFIX_PIECE_CHARS) return n;
  if (!trigrams.has(trigram(text.charCodeAt(n - 3), text.charCodeAt(n - 2), text.charCodeAt(n - 1)))) return n;
  // Every shorter end of a piece of the key is one too: grow it while it still is.
  let length = SUFFIX_PIECE_CHARS;
  while (length < key.length - 1 && length < text.length && key.includes(text.slice(-(length + 1)))) length++;
  return text.length - length;
}

/** The slots of KeyScrubber.pairs (4 KiB a scrubber). */
const PAIR_SLOTS = 4_096;

/** Two characters' slot in KeyScrubber.pairs. */
function pairSlot(b: number, c: number): number {
  return (b * 31 + c) & (PAIR_SLOTS - 1);
}

/** Three characters as one number (three 16-bit codes in 48 bits: exact). */
function trigram(a: number, b: number, c: number): number {
  return (a * 65_536 + b) * 65_536 + c;
}

/** Every three characters in a row of a key. */
function trigramsOf(key: string): Set<number> {
  const found = new Set<number>();
  for (let i = 0; i + 3 <= key.length; i++)
    found.add(trigram(key.charCodeAt(i), key.charCodeAt(i + 1), key.charCodeAt(i + 2)));
  return found;
}

/**
 * The shortest end of a text that a stream holds back because it may go on into a key: three characters. A key (or
 * a run of one) that a stream splits loses at most its first two characters to the caller (`sk`, for most keys)
 * before the rest is held back and then redacted; an ordinary text ends in three characters of a random key about
 * once in a thousand pieces, and each such piece is written again rather than passed on as the upstream sent it.
 */
export const SUFFIX_PIECE_CHARS = 3;

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

/**
 * The scrubbers of one key, made once (compiling the search costs more than a call's searches; the pieces and trigrams
 * too): at most MAX_CACHED.
 */
const scrubbers = new Map<string, KeyScrubber>();
const MAX_CACHED = 256;

export class KeyScrubber {
  private readonly search: Search;
  /** The fewest characters a search can find: a piece (8), or a key shorter than a run whole. */
  private readonly shortest: number;

  /** Each key's three characters in a row (keyAtEnd), and all of them together (KeyTexts' usual piece). */
  private readonly trigrams: ReadonlyArray<ReadonlySet<number>>;
  private readonly anyTrigram: ReadonlySet<number>;
  /**
   * A filter before that look-up: a slot set for every two characters in a row of a key (hashed into 4,096 slots: 4 KiB),
   * so the usual text, whose last two characters are no key's, is decided by one array read.
   */
  private readonly pairs = new Uint8Array(PAIR_SLOTS);

  private constructor(
    /** The keys as they are (a stream's texts are decoded: the JSON spelling does not occur in them). */
    private readonly keys: readonly string[],
  ) {
    this.search = searchOf(keys);
    this.shortest = Math.min(...keys.map((key) => (key.length < KEY_PIECE_CHARS ? key.length : ALIGN)));
    this.trigrams = keys.map(trigramsOf);
    this.anyTrigram = new Set(this.trigrams.flatMap((set) => [...set]));
    for (const key of keys)
      for (let i = 1; i < key.length; i++) this.pairs[pairSlot(key.charCodeAt(i - 1), key.charCodeAt(i))] = 1;
  }

  /** The fewest characters a search can find in a text (a shorter text holds no run). */
  get shortestRun(): number {
    return this.shortest;
  }

  /** Whether three characters in a row occur in a key (a text ending so may go on into one). */
  mayGoOn(a: number, b: number, c: number): boolean {
    return this.pairs[pairSlot(b, c)] === 1 && this.anyTrigram.has(trigram(a, b, c));
  }

  /** The scrubber of these keys (absent ones and those shorter than MIN_KEY_CHARS left out); undefined when none is left. */
  static of(keys: ReadonlyArray<string | undefined>): KeyScrubber | undefined {
    // The usual call: the upstream's configured key alone, or with the caller's own: one look-up, nothing built.
    const [first, second] = keys;
    const usual = keys.length <= 2 && (first === undefined || second === undefined || first === second);
    const only = usual ? (first ?? second) : undefined;
    if (usual && (only === undefined || only.length < MIN_KEY_CHARS)) return undefined;
    const known = only === undefined ? undefined : scrubbers.get(only);
    if (known !== undefined) return known;
    const kept = [...new Set(keys)].filter((key): key is string => key !== undefined && key.length >= MIN_KEY_CHARS);
    if (kept.length === 0) return undefined;
    const made = new KeyScrubber(kept);
    if (only !== undefined) {
      if (scrubbers.size >= MAX_CACHED) scrubbers.delete(scrubbers.keys().next().value as string);
      scrubbers.set(only, made);
    }
    return made;
  }

  /** The text with every key, and every run of KEY_PIECE_CHARS of one, replaced by [REDACTED]; the same string when none occurs. */
  scrub(text: string): string {
    const ranges: Ranges = [];
    findRuns(text, this.search, ranges);
    return redacted(text, ranges, 0, text.length);
  }

  /** An answer's bytes (`text` their decoding): the same Buffer when no key occurs, else the scrubbed text's. */
  scrubBytes(bytes: Buffer, text: string): Buffer {
    const scrubbed = this.scrub(text);
    return scrubbed === text ? bytes : Buffer.from(scrubbed, 'utf8');
  }

  /**
   * A text's next piece, `text` being the end of what of it was already sent (`sent` characters), what was held
   * back, and the piece: what goes out now (scrubbed), and where what is held back starts: the end that may go on
   * into a key (a run of one that reaches the end, a piece of one at least three characters long), never more than
   * the longest key's length - 1 characters, whatever the upstream sends. With `final`, nothing is held.
   */
  cut(text: string, sent: number, final: boolean): { out: string; hold: number } {
    const hold = this.hold(text, sent, final);
    return { out: redacted(text, this.runs, sent, hold), hold };
  }

  /** The runs the last `hold` found (one array for every call: a stream's pieces allocate none). */
  private readonly runs: Ranges = [];

  /** Where `cut` would hold `text` back from; its runs in `runs`, none of them when `noRuns()`. */
  hold(text: string, sent: number, final: boolean): number {
    const ranges = this.runs;
    ranges.length = 0;
    let hold = text.length;
    // A text shorter than the shortest run searched for (most of a stream's pieces) holds no run at all.
    if (text.length >= this.shortest) hold = Math.min(hold, findRuns(text, this.search, ranges));
    if (final) hold = text.length;
    else {
      let end = text.length;
      this.keys.forEach((key, i) => (end = Math.min(end, keyAtEnd(text, key, this.trigrams[i] as Set<number>))));
      hold = Math.max(sent, Math.min(hold, pastRanges(end, ranges)));
    }
    return hold;
  }

  /** Whether the last `hold` found no run to redact. */
  noRuns(): boolean {
    return this.runs.length === 0;
  }

  /** What goes out of the text the last `hold` read: `text[sent, hold)`, its runs redacted. */
  out(text: string, sent: number, hold: number): string {
    return redacted(text, this.runs, sent, hold);
  }
}

/**
 * An answer passed through as bytes (a natively forwarded JSON answer, an embeddings list), scrubbed of the given
 * keys: the same Buffer when none occurs (no parse and no copy: one search per key).
 */
export function scrubAnswer(bytes: Buffer, text: string, keys: ReadonlyArray<string | undefined>): Buffer {
  return KeyScrubber.of(keys)?.scrubBytes(bytes, text) ?? bytes;
}
