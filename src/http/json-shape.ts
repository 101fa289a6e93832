/**
 * What JSON.parse accepts but the gateway must not: a body nested deeper than MAX_JSON_DEPTH, and a key repeated
 * in any object of the body.
 *
 * - Depth: JSON.parse itself is iterative, but every recursive walk after it (the Idempotency-Key fingerprint,
 *   JSON.stringify when a provider's body is rebuilt) overflows the stack a few thousand levels down, which
 *   was a 500. No chat body needs more than a few dozen levels (a tool's JSON Schema included).
 * - Duplicate keys: JSON.parse keeps the last, but the body is forwarded as received, and the upstream may read
 *   the first: `{"model":"forbidden","model":"allowed"}` would pass a scoped key's model check with one model
 *   and run on the other. RFC 8259 section 4 leaves duplicates to the implementation; I-JSON (RFC 7493 section
 *   2.3) forbids them, and so do we, in every object (a nested repeat, `messages[0]` with two `content`, is read
 *   one way by the gateway's checks and estimates and may be read the other way upstream).
 *
 * One pass over the text, allocating only the keys of the open objects (reused per depth): strings, most of a chat body, are skipped
 * natively (indexOf, or one sticky regex for a string with escaped quotes), only the punctuation between them
 * is read in JavaScript: cheaper than V8's JSON.parse of the same text, by far for long prose messages, less so
 * for a small body, an agent body whose tool results are escaped JSON, or a body of numbers.
 */
export const MAX_JSON_DEPTH = 128;

export type JsonShapeProblem =
  { kind: 'too_deep'; position: number } | { kind: 'duplicate_key'; key: string; position: number; path: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** An object with more keys than this is checked through a Set; below it a scan of its earlier keys is cheaper. */
const LINEAR_KEYS = 16;

/**
 * The keys of the open objects, without a string per key: the objects open at one time are nested, so their
 * keys form one stack of (start, end) offsets into the text; an object's keys sit from `base[depth]` up, and
 * closing it pops them. A key is compared with its object's earlier keys of the same length, char by char: no
 * allocation for the handful of keys a chat object has. An object with many keys (a hostile 100,000: the scan
 * would be quadratic) or a key written with escapes (`"mod\u0065l"` is `"model"`) moves that one object to a
 * Set of decoded keys.
 */
class OpenObjects {
  private starts = new Int32Array(256);
  private ends = new Int32Array(256);
  private top = 0;
  private readonly base = new Int32Array(MAX_JSON_DEPTH + 2);
  private readonly sets: Array<Set<string> | undefined> = [];
  /** Where the last key of the object open at each depth is, for the path of a problem. */
  private readonly lastStart = new Int32Array(MAX_JSON_DEPTH + 2);
  private readonly lastEnd = new Int32Array(MAX_JSON_DEPTH + 2);

  private text = '';

  /** Starts on a new body; reused from call to call (the check is synchronous, never re-entered). */
  reset(text: string): void {
    this.text = text;
    this.top = 0;
    this.sets.length = 0;
    // A hostile body's key stack is not kept for the next call.
    if (this.starts.length > 4096) {
      this.starts = new Int32Array(256);
      this.ends = new Int32Array(256);
    }
  }

  open(depth: number): void {
    this.base[depth] = this.top;
    this.sets[depth] = undefined;
  }

  close(depth: number): void {
    this.top = this.base[depth] as number;
    this.sets[depth] = undefined;
  }

  /** Adds the key whose quotes are at `quote` and `end` to the object open at `depth`; false if it was there. */
  add(depth: number, quote: number, end: number): boolean {
    const start = quote + 1;
    this.lastStart[depth] = start;
    this.lastEnd[depth] = end;
    const set = this.sets[depth];
    if (set) return addTo(set, this.keyText(start, end));
    const base = this.base[depth] as number;
    if (this.hasEscape(start, end) || this.top - base >= LINEAR_KEYS) {
      const keys = new Set<string>();
      for (let k = base; k < this.top; k++) keys.add(this.keyText(this.starts[k] as number, this.ends[k] as number));
      this.sets[depth] = keys;
      return addTo(keys, this.keyText(start, end));
    }
    const length = end - start;
    for (let k = base; k < this.top; k++) {
      if (
        (this.ends[k] as number) - (this.starts[k] as number) === length &&
        this.sameText(this.starts[k] as number, start, length)
      )
        return false;
    }
    this.push(start, end);
    return true;
  }

  /** The key last seen in the object open at `depth`, decoded. */
  lastKey(depth: number): string {
    return this.keyText(this.lastStart[depth] as number, this.lastEnd[depth] as number);
  }

  private keyText(start: number, end: number): string {
    const raw = this.text.slice(start, end);
    return raw.includes('\\') ? (JSON.parse(this.text.slice(start - 1, end + 1)) as string) : raw;
  }

  private hasEscape(start: number, end: number): boolean {
    for (let n = start; n < end; n++) if (this.text.charCodeAt(n) === BACKSLASH) return true;
    return false;
  }

  private sameText(a: number, b: number, length: number): boolean {
    for (let n = 0; n < length; n++) if (this.text.charCodeAt(a + n) !== this.text.charCodeAt(b + n)) return false;
    return true;
  }

  private push(start: number, end: number): void {
    if (this.top === this.starts.length) {
      const starts = new Int32Array(this.top * 2);
      const ends = new Int32Array(this.top * 2);
      starts.set(this.starts);
      ends.set(this.ends);
      this.starts = starts;
      this.ends = ends;
    }
    this.starts[this.top] = start;
    this.ends[this.top] = end;
    this.top++;
  }
}

function addTo(keys: Set<string>, key: string): boolean {
  if (keys.has(key)) return false;
  keys.add(key);
  return true;
}

/**
 * `text` must be a text JSON.parse has accepted (so this needs no error handling). A key repeated in any object
 * is refused, not only at the top level: the body is forwarded as received, and `messages[0]` with two `content`
 * would be read one way by the gateway (its limits, its estimate, its checks) and the other by the upstream.
 */
export function checkJsonShape(text: string, maxDepth = MAX_JSON_DEPTH): JsonShapeProblem | undefined {
  if (maxDepth > MAX_JSON_DEPTH) throw new RangeError(`maxDepth is at most ${MAX_JSON_DEPTH}`);
  const objects = openObjects;
  objects.reset(text);
  try {
    return check(text, maxDepth, objects);
  } finally {
    objects.reset(''); // the body is not kept alive by this module
  }
}

// Per depth: 1 for an object, 0 for an array; and an array's current index (for the path of a problem). Shared
// by every call, like the key stack: a small body costs no allocation.
const isObject = new Uint8Array(MAX_JSON_DEPTH + 2);
const index = new Uint32Array(MAX_JSON_DEPTH + 2);
const openObjects = new OpenObjects();

function check(text: string, maxDepth: number, objects: OpenObjects): JsonShapeProblem | undefined {
  let depth = 0;
  let keyNext = false;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (keyNext) {
        keyNext = false;
        if (!objects.add(depth, i, end)) {
          return { kind: 'duplicate_key', key: objects.lastKey(depth), position: i, path: pathAt(depth, objects) };
        }
      }
      i = end + 1;
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth > maxDepth) return { kind: 'too_deep', position: i };
      if (c === OPEN_OBJECT) {
        isObject[depth] = 1;
        keyNext = true;
        objects.open(depth);
      } else {
        isObject[depth] = 0;
        index[depth] = 0;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (c === CLOSE_OBJECT) objects.close(depth);
      depth--;
      keyNext = false;
    } else if (c === COMMA) {
      if (isObject[depth] === 1) keyNext = true;
      else index[depth] = (index[depth] as number) + 1;
    }
    i++;
  }
  return undefined;
}

/** Where the object open at `depth` sits in the body, as `messages[0]` (empty for the body itself). */
function pathAt(depth: number, objects: OpenObjects): string {
  let path = '';
  for (let d = 1; d < depth; d++) {
    if (isObject[d] === 1) path += `${path === '' ? '' : '.'}${objects.lastKey(d)}`;
    else path += `[${index[d]}]`;
  }
  return path;
}

/** The rest of a string that has escapes, up to and including its closing quote (RFC 8259 section 7). */
const STRING_REST = /[^"\\]*(?:\\[\s\S][^"\\]*)*"/y;

/**
 * Index of the quote that closes the string opening at `start`. Most strings have no escape just before their
 * first quote, so one indexOf finds the end; a string with escaped quotes (JSON inside a tool result) is read
 * to its end by one sticky regex, instead of one indexOf per escaped quote.
 */
function stringEnd(text: string, start: number): number {
  const end = text.indexOf('"', start + 1);
  if (text.charCodeAt(end - 1) !== BACKSLASH) return end;
  STRING_REST.lastIndex = start + 1;
  STRING_REST.test(text);
  return STRING_REST.lastIndex - 1;
}
