import type { ChatCompletionChunk, StreamChunk } from '../provider-contract.js';

/**
 * The frames of one OpenAI-compatible stream are nearly all the same text but for the piece of answer they carry:
 * `{"id":"chatcmpl-1","object":"chat.completion.chunk",…,"choices":[{"index":0,"delta":{"content":"<text>"},…}]}`.
 * A template is such a frame cut around its text: when the next frame is the same `prefix`, then one JSON string,
 * then the same `suffix`, it is the template's chunk with that text, so it is decoded without `JSON.parse`.
 *
 * What this buys: `JSON.parse` of each frame was a large share of the gateway's CPU on a stream of many chunks; the
 * frames of a burst after its first two skip it, and a match costs a fraction of the full decode (figures in
 * docs/benchmarks.md).
 *
 * Why a match is exactly the frame the full decode would have produced: the frame's text outside the string is the
 * template's, byte for byte, and the template was checked once (`verify`) by parsing it with another string in
 * that place and finding that string as the first choice's `delta.content`: the cut is at that value, not at a
 * look-alike inside another string or a duplicate key. The string itself is checked as JSON (no raw control
 * character, so no raw newline; escapes through `JSON.parse` of the string alone). The full decode's checks (an
 * `error` member, the choices array, normalising, usage figures) depend only on the text outside the string, which
 * passed them when the template was learnt: so the frame goes out untouched (`json`) like the template did.
 */
export class ChunkTemplate {
  private constructor(
    private readonly prefix: string,
    private readonly suffix: string,
    private readonly chunk: ChatCompletionChunk,
  ) {}

  /** Unchecked until its first match, then checked once: good, or bad (it never matches again). */
  private check: 'unchecked' | 'good' | 'bad' = 'unchecked';

  /**
   * A template from a frame the full decode passed through untouched (`json` set), or undefined when the frame
   * is not one to learn from: not one choice whose delta holds a text found verbatim in the frame, or a field
   * holding an object or array besides the choices and the delta (a match shares every other field with the
   * template's chunk, so only values that cannot be changed in place are shared).
   */
  static learn(decoded: StreamChunk, clean?: (text: string) => boolean): ChunkTemplate | undefined {
    const { chunk, json } = decoded;
    if (json === undefined || chunk.choices.length !== 1) return undefined;
    const choice = chunk.choices[0] as unknown as Record<string, unknown>;
    const delta = choice.delta as Record<string, unknown>;
    if (typeof delta.content !== 'string') return undefined;
    if (!onlyScalars(chunk, 'choices') || !onlyScalars(choice, 'delta') || !onlyScalars(delta, '')) return undefined;
    const literal = `"content":${JSON.stringify(delta.content)}`;
    const at = json.indexOf(literal);
    if (at < 0) return undefined; // the upstream escapes the text otherwise: no template, the full decode it is
    const start = at + '"content":'.length;
    const prefix = json.slice(0, start);
    const suffix = json.slice(at + literal.length);
    // The text a match shares with this frame is read once, here, for the call's keys: none, or no template.
    if (clean !== undefined && (!clean(prefix) || !clean(suffix))) return undefined;
    return new ChunkTemplate(prefix, suffix, chunk);
  }

  /** The frame as a chunk when it fits the template; undefined when it does not (then the full decode runs). */
  match(data: string): StreamChunk | undefined {
    const { prefix, suffix } = this;
    if (this.check === 'bad') return undefined;
    const end = data.length - suffix.length;
    // Compared as slices: `data.startsWith(this.prefix)` takes V8's generic path when the text searched for is read
    // from a field, many times slower than the slice and `===`.
    if (end - prefix.length < 2 || data.slice(0, prefix.length) !== prefix || data.slice(end) !== suffix) {
      return undefined;
    }
    const content = jsonString(data, prefix.length, end);
    if (content === undefined || (this.check === 'unchecked' && !this.verify())) return undefined;
    const choice = this.chunk.choices[0] as ChatCompletionChunk['choices'][number];
    return {
      chunk: { ...this.chunk, choices: [{ ...choice, delta: { ...choice.delta, content } }] },
      json: data,
      templated: true,
    };
  }

  /** Once per template, at its first match: the cut is at the first choice's text (see the class comment). */
  private verify(): boolean {
    const probe = 'gateway\u0001probe';
    let good = false;
    try {
      const parsed = JSON.parse(`${this.prefix}${JSON.stringify(probe)}${this.suffix}`) as ChatCompletionChunk;
      good = parsed.choices.length === 1 && parsed.choices[0]?.delta.content === probe;
    } catch {
      // not JSON with another string there: the cut was not at a value
    }
    this.check = good ? 'good' : 'bad';
    return good;
  }
}

/** Whether every field of `record` but `except` is a string, number, boolean or null. */
function onlyScalars(record: object, except: string): boolean {
  for (const [key, value] of Object.entries(record)) {
    if (key !== except && typeof value === 'object' && value !== null) return false;
  }
  return true;
}

/**
 * The JSON string that is exactly `data[start, end)`, or undefined when that text is not one. The common case (no
 * backslash) is a scan; with escapes, `JSON.parse` of the string alone checks and decodes it.
 */
function jsonString(data: string, start: number, end: number): string | undefined {
  if (data.charCodeAt(start) !== 0x22 || data.charCodeAt(end - 1) !== 0x22) return undefined;
  let escaped = false;
  for (let i = start + 1; i < end - 1; i++) {
    const code = data.charCodeAt(i);
    if (code < 0x20) return undefined; // a raw control character (a newline too) is not JSON: the full decode says so
    if (code === 0x5c) escaped = true;
    else if (code === 0x22 && !escaped) return undefined; // the string ends before `end`: not one string
  }
  if (!escaped) return data.slice(start + 1, end - 1);
  try {
    const value: unknown = JSON.parse(data.slice(start, end));
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
