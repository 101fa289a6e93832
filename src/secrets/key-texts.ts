import { SUFFIX_PIECE_CHARS, type KeyScrubber } from './key-scrubber.js';

/** At most this many texts of one stream are followed across pieces; past it, a new one's pieces are scrubbed each alone. */
export const MAX_STREAM_TEXTS = 64;

/**
 * What of a text went out that the next piece is read after: its last two characters. A run of a key that reached
 * the end of what went out is never longer (three characters of one are held back: keyAtEnd), so no run that goes
 * on into the next piece starts earlier.
 */
const SENT_CONTEXT_CHARS = SUFFIX_PIECE_CHARS - 1;

/** `text[start, end)` as a string of its own: a slice of a long text would keep all of it alive in V8. */
function copied(text: string, start: number, end: number): string {
  const part = text.slice(start, end);
  return text.length > 1_024 && part.length >= 13 ? part.split('').join('') : part;
}

/** What a stream keeps of one text between its pieces. */
interface TextState {
  /** Its last characters already sent (at most SENT_CONTEXT_CHARS), as codes: `(second-last * 65536) + last`. */
  sent: number;
  /** How many characters `sent` holds (0, 1 or 2). */
  sentLength: number;
  /** What was held back, not yet sent. */
  held: string;
}

function sentText(state: TextState): string {
  if (state.sentLength === 0) return '';
  const last = String.fromCharCode(state.sent % 65_536);
  return state.sentLength === 1 ? last : String.fromCharCode(Math.floor(state.sent / 65_536)) + last;
}

/** Keeps the (at most two) characters of `text` before `end` as what was sent. */
function setSent(state: TextState, text: string, end: number): void {
  if (end === 0) return; // nothing more went out: what was sent before is still the end of it
  state.sentLength = Math.min(SENT_CONTEXT_CHARS, end >= 2 ? 2 : state.sentLength + 1);
  const before = end >= 2 ? text.charCodeAt(end - 2) : state.sent % 65_536;
  state.sent = (state.sentLength === 2 ? before * 65_536 : 0) + text.charCodeAt(end - 1);
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
      state = { sent: 0, sentLength: 0, held: '' };
      this.states.set(id, state);
    }
    const { held } = state;
    const n = piece.length;
    if (held === '' && (n === 0 || this.usual(state, piece))) return piece;
    const sent = sentText(state);
    const text = sent + held + piece;
    const scrubber = this.scrubber;
    const hold = scrubber.hold(text, sent.length, false);
    const out =
      held === '' && hold === text.length && scrubber.noRuns() ? piece : scrubber.out(text, sent.length, hold);
    state.held = hold === text.length ? '' : copied(text, hold, text.length);
    if (hold > sent.length) setSent(state, text, hold);
    return out;
  }

  /**
   * The usual piece of a stream, decided with nothing allocated: too short, with what went out before it, to hold a
   * run of a key, and not ending in three characters of one (nothing to hold back). Then it goes out as it came.
   */
  private usual(state: TextState, piece: string): boolean {
    const n = piece.length;
    if (n + state.sentLength >= this.scrubber.shortestRun) return false;
    const { sent, sentLength } = state;
    const c = piece.charCodeAt(n - 1);
    const b = n >= 2 ? piece.charCodeAt(n - 2) : sentLength >= 1 ? sent % 65_536 : -1;
    const a =
      n >= 3
        ? piece.charCodeAt(n - 3)
        : n === 2
          ? sentLength >= 1
            ? sent % 65_536
            : -1
          : sentLength >= 2
            ? Math.floor(sent / 65_536)
            : -1;
    if (a !== -1 && this.scrubber.mayGoOn(a, b, c)) return false;
    setSent(state, piece, n);
    return true;
  }

  /** The text's end: what it still holds, scrubbed ('' when nothing). */
  end(id: string): string {
    const state = this.states.get(id);
    if (state === undefined) return '';
    this.states.delete(id);
    if (state.held === '') return '';
    const sent = sentText(state);
    return this.scrubber.cut(sent + state.held, sent.length, true).out;
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
