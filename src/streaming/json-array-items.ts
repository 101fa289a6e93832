/**
 * Reads a JSON body of the shape `{"<key>": [item, item, ...], ...}` as bytes arrive and hands on each item of that
 * one array as its own JSON text, so a body of any size is never held (nor parsed) whole: Anthropic's Message
 * Batches create, up to 256 MB (docs/files.md, "How big an Anthropic batch can be").
 *
 * One linear pass over each chunk, byte by byte: only strings (and their escapes) and bracket depth are tracked
 * (every structural character of JSON is ASCII, so a UTF-8 character split between chunks never confuses it). The
 * item in progress is kept as a list of the pieces of the chunks it spans, joined once when it ends: never a re-scan
 * of a growing buffer. An item is checked for JSON syntax by whoever parses its text (JSON.parse); the values of the
 * other top-level keys are parsed here, and dropped. Memory: at most one item (bounded by `maxItemBytes`, refused
 * before it grows past) plus the chunk being read.
 */

/** Where a body stopped being what it must be: a byte offset in the body, and the item when inside one. */
export class JsonItemsError extends Error {
  constructor(
    /** `syntax`: not JSON; `shape`: JSON, but not `{"<key>": [...]}`; `too_long`: an item or value past the bound. */
    readonly kind: 'syntax' | 'shape' | 'too_long',
    readonly problem: string,
    /** Byte offset in the body. */
    readonly offset: number,
    /** `requests[3]`, `requests`, or another top-level key's name. */
    readonly field: string | undefined,
  ) {
    super(`${field ? `${field}: ` : ''}${problem} (at byte ${offset})`);
  }
}

export interface JsonItem {
  index: number;
  /** The item's JSON text, exactly as sent. */
  text: string;
  /** Byte offset of its first byte in the body. */
  offset: number;
}

export interface JsonItemsOptions {
  /** The top-level key whose array is read. */
  key: string;
  /** An item (or another top-level value) longer than this is refused as soon as it passes it. */
  maxItemBytes: number;
  /** Top-level keys at most (each key seen once): bounds the bookkeeping of a hostile body. */
  maxKeys?: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const BOM = [0xef, 0xbb, 0xbf];
/** A key longer than this (raw bytes) cannot be the one looked for: its text is not kept. */
const MAX_KEY_BYTES = 1024;

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const endsScalar = (b: number) => isSpace(b) || b === COMMA || b === CLOSE_ARRAY || b === CLOSE_OBJECT;

type State =
  | 'start' // before the top-level object (whitespace, a byte order mark)
  | 'first_key' // after `{`: a key or `}`
  | 'key' // after `,`: a key
  | 'in_key'
  | 'colon'
  | 'value' // after `:`
  | 'first_item' // after `[`: an item or `]`
  | 'item' // after `,` in the array: an item
  | 'in_value' // inside an item or another key's value
  | 'after_item' // `,` or `]`
  | 'after_value' // `,` or `}`
  | 'end'; // after the closing `}`: whitespace only

/**
 * The scanner: `push` each chunk (it returns the items that ended in it), then `end()`. Throws JsonItemsError.
 * A pushed chunk may be reused by the caller afterwards: what outlives the call is copied.
 */
export class JsonArrayItems {
  private state: State = 'start';
  private offset = 0; // bytes before the current chunk
  private bomAt = 0;
  private keys = new Set<string>();
  private keyCount = 0;
  private keyBytes: Buffer[] = [];
  private keyLength = 0;
  private key = '';
  private escaped = false;
  private sawArray = false;
  private index = 0;
  // The value in progress: its pieces from earlier chunks, its start, its nesting.
  private pieces: Buffer[] = [];
  private held = 0;
  private valueOffset = 0;
  private inItem = false;
  private depth = 0;
  private inString = false;
  private scalar = false;

  constructor(private readonly options: JsonItemsOptions) {}

  /** Items that ended in this chunk, in order. */
  push(chunk: Uint8Array): JsonItem[] {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: JsonItem[] = [];
    let valueStart = this.state === 'in_value' ? 0 : -1;
    let keyStart = this.state === 'in_key' ? 0 : -1;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i] as number;
      switch (this.state) {
        case 'in_value': {
          const end = this.scanValue(bytes, i);
          if (end === -1) {
            i = bytes.length;
            break;
          }
          this.finishValue(bytes, valueStart, end, out);
          valueStart = -1;
          i = end - 1; // a scalar's terminator is read again by the next state
          break;
        }
        case 'in_key':
          if (this.escaped) this.escaped = false;
          else if (b === BACKSLASH) this.escaped = true;
          else if (b === QUOTE) {
            this.keepKeyBytes(bytes.subarray(keyStart, i));
            keyStart = -1;
            this.finishKey(i);
          }
          break;
        case 'start':
          if (this.offset + i === this.bomAt && b === BOM[this.bomAt]) {
            this.bomAt++;
            break;
          }
          if (this.bomAt > 0 && this.bomAt < BOM.length) this.fail('syntax', 'an incomplete byte order mark', i);
          this.bomAt = BOM.length;
          if (isSpace(b)) break;
          if (b !== OPEN_OBJECT) this.fail('shape', 'the body must be a JSON object', i);
          this.state = 'first_key';
          break;
        case 'first_key':
        case 'key':
          if (isSpace(b)) break;
          if (b === CLOSE_OBJECT && this.state === 'first_key') this.state = 'end';
          else if (b === QUOTE) {
            this.state = 'in_key';
            this.keyBytes = [];
            this.keyLength = 0;
            keyStart = i + 1;
          } else this.fail('syntax', 'expected a key (a string)', i);
          break;
        case 'colon':
          if (isSpace(b)) break;
          if (b !== COLON) this.fail('syntax', "expected ':' after the key", i);
          this.state = 'value';
          break;
        case 'value':
          if (isSpace(b)) break;
          if (this.key === this.options.key) {
            if (b !== OPEN_ARRAY) this.fail('shape', 'must be an array', i, this.key);
            this.sawArray = true;
            this.state = 'first_item';
          } else {
            this.startValue(b, i, false);
            valueStart = i;
            i--; // the value's first byte is read by in_value
          }
          break;
        case 'first_item':
        case 'item':
          if (isSpace(b)) break;
          if (b === CLOSE_ARRAY && this.state === 'first_item') this.state = 'after_value';
          else {
            this.startValue(b, i, true);
            valueStart = i;
            i--;
          }
          break;
        case 'after_item':
          if (isSpace(b)) break;
          if (b === COMMA) this.state = 'item';
          else if (b === CLOSE_ARRAY) this.state = 'after_value';
          else this.fail('syntax', "expected ',' or ']' after an item", i, this.options.key);
          break;
        case 'after_value':
          if (isSpace(b)) break;
          if (b === COMMA) this.state = 'key';
          else if (b === CLOSE_OBJECT) this.state = 'end';
          else this.fail('syntax', "expected ',' or '}' after a value", i);
          break;
        case 'end':
          if (!isSpace(b)) this.fail('syntax', 'unexpected data after the end of the body', i);
          break;
      }
    }
    if (valueStart !== -1) this.keepValueBytes(bytes, valueStart);
    if (keyStart !== -1) this.keepKeyBytes(bytes.subarray(keyStart));
    this.offset += bytes.length;
    return out;
  }

  /** The body ended: it must have been whole. Returns how many items the array had. */
  end(): number {
    if (this.state === 'start') {
      this.fail('syntax', 'the body is empty', 0);
    }
    if (this.state !== 'end') {
      const where = this.inItem ? `${this.options.key}[${this.index}]` : undefined;
      this.fail('syntax', 'the body ends early (cut off?)', 0, where);
    }
    if (!this.sawArray) this.fail('shape', 'is required', 0, this.options.key);
    return this.index;
  }

  /** Where the value in progress ends in `bytes` (exclusive), from `from`; -1 when it goes on past the chunk. */
  private scanValue(bytes: Buffer, from: number): number {
    for (let i = from; i < bytes.length; i++) {
      const b = bytes[i] as number;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === BACKSLASH) this.escaped = true;
        else if (b === QUOTE) {
          this.inString = false;
          if (this.depth === 0) return i + 1;
        }
      } else if (this.scalar) {
        if (endsScalar(b)) return i;
      } else if (b === QUOTE) this.inString = true;
      else if (b === OPEN_OBJECT || b === OPEN_ARRAY) this.depth++;
      else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        this.depth--;
        if (this.depth === 0) return i + 1;
      }
    }
    return -1;
  }

  private startValue(b: number, i: number, item: boolean): void {
    if (b === COMMA || b === COLON || b === CLOSE_ARRAY || b === CLOSE_OBJECT)
      this.fail('syntax', 'expected a value', i, item ? `${this.options.key}[${this.index}]` : this.key);
    this.inItem = item;
    this.valueOffset = this.offset + i;
    this.pieces = [];
    this.held = 0;
    this.escaped = false;
    this.inString = false;
    this.scalar = b !== QUOTE && b !== OPEN_OBJECT && b !== OPEN_ARRAY;
    // The first byte (a quote, a bracket) is read again by scanValue.
    this.depth = 0;
    this.state = 'in_value';
  }

  private valueField(): string {
    return this.inItem ? `${this.options.key}[${this.index}]` : this.key;
  }

  private checkLength(length: number): void {
    if (length > this.options.maxItemBytes)
      throw new JsonItemsError(
        'too_long',
        `longer than ${this.options.maxItemBytes} bytes`,
        this.valueOffset,
        this.valueField(),
      );
  }

  private keepValueBytes(bytes: Buffer, start: number): void {
    const tail = bytes.subarray(start);
    this.checkLength(this.held + tail.length);
    this.pieces.push(Buffer.from(tail)); // a copy: the caller may reuse its chunk
    this.held += tail.length;
  }

  private finishValue(bytes: Buffer, start: number, end: number, out: JsonItem[]): void {
    const from = start;
    this.checkLength(this.held + (end - from));
    const text =
      this.pieces.length === 0
        ? bytes.toString('utf8', from, end)
        : Buffer.concat([...this.pieces, bytes.subarray(from, end)]).toString('utf8');
    this.pieces = [];
    this.held = 0;
    if (this.inItem) {
      out.push({ index: this.index, text, offset: this.valueOffset });
      this.index++;
      this.state = 'after_item';
    } else {
      try {
        JSON.parse(text);
      } catch {
        throw new JsonItemsError('syntax', 'not a valid JSON value', this.valueOffset, this.key);
      }
      this.state = 'after_value';
    }
    this.inItem = false;
  }

  private keepKeyBytes(piece: Buffer): void {
    if (this.keyLength + piece.length <= MAX_KEY_BYTES) this.keyBytes.push(Buffer.from(piece));
    this.keyLength += piece.length;
  }

  private finishKey(i: number): void {
    let key = `(a key of ${this.keyLength} bytes)`;
    if (this.keyLength <= MAX_KEY_BYTES) {
      try {
        key = JSON.parse(`"${Buffer.concat(this.keyBytes).toString('utf8')}"`) as string;
      } catch {
        this.fail('syntax', 'a key is not a valid JSON string', i);
      }
    }
    if (this.keys.has(key)) this.fail('syntax', `the key "${key.slice(0, 100)}" appears more than once`, i);
    if (++this.keyCount > (this.options.maxKeys ?? 16)) this.fail('shape', 'too many top-level keys', i);
    // A key too long to keep cannot be the one looked for, and is not compared with the others.
    if (this.keyLength <= MAX_KEY_BYTES) this.keys.add(key);
    this.key = key;
    this.keyBytes = [];
    this.state = 'colon';
  }

  private fail(kind: JsonItemsError['kind'], problem: string, i: number, field?: string): never {
    throw new JsonItemsError(kind, problem, this.offset + i, field);
  }
}

/** How long the scan may hold the event loop before it lets other work run (a setImmediate turn). */
const SLICE_MS = 5;

/**
 * The items of `source` (a body's chunks) as they end, then the body checked whole (JsonArrayItems.end). Between
 * chunks it gives the event loop a turn whenever SLICE_MS passed since the last one, counting the time the consumer
 * spent on the items too: a 256 MB body, or a consumer busy with each item, never holds the loop for long.
 */
export async function* jsonArrayItems(
  source: AsyncIterable<Uint8Array>,
  options: JsonItemsOptions,
): AsyncGenerator<JsonItem, number> {
  const scanner = new JsonArrayItems(options);
  let since = performance.now();
  for await (const chunk of source) {
    yield* scanner.push(chunk);
    if (performance.now() - since > SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
  }
  return scanner.end();
}
