// Byte-level Server-Sent Events parser.
// Spec: WHATWG HTML, §9.2.5 "Parsing an event stream" and §9.2.6 "Interpreting an event stream"
// https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const DIGITS_ONLY = /^[0-9]+$/;

/**
 * Bounds on what one upstream can make the parser hold. Without them a line that never ends (or `data:` lines
 * with no blank line between them) grows the process until it dies, within seconds. 4 MiB is far
 * beyond any provider's event (a chunk is a few hundred bytes; a whole tool call's arguments or an inline
 * image a few hundred KB), and it is the most one stream can hold, so a thousand hostile streams stay bounded.
 */
export const MAX_SSE_LINE_BYTES = 4 * 1024 * 1024;
export const MAX_SSE_EVENT_BYTES = 4 * 1024 * 1024;

export interface SseLimits {
  /** The longest line (field name + value) before it is refused. */
  maxLineBytes: number;
  /** The most data one event may gather across its `data:` lines before it is refused. */
  maxEventBytes: number;
}

const DEFAULT_LIMITS: SseLimits = { maxLineBytes: MAX_SSE_LINE_BYTES, maxEventBytes: MAX_SSE_EVENT_BYTES };

/** Thrown out of feed() when a line or an event passes its bound; the parser holds nothing more of it. */
export class SseLimitError extends Error {
  readonly code = 'SSE_LIMIT_EXCEEDED';
  constructor(
    readonly what: 'line' | 'event',
    readonly limitBytes: number,
  ) {
    super(`an SSE ${what} longer than ${limitBytes} bytes`);
    this.name = 'SseLimitError';
  }
}

/** One dispatched event, as the spec's "dispatch the event" step would build it. */
export interface SseEvent {
  /** The `event` field, or "message" when none (or an empty one) was given. */
  event: string;
  /** The `data` lines joined with "\n" (the spec's data buffer minus its one trailing LF). */
  data: string;
  /** The last event ID buffer. It persists across events per spec; undefined until any `id` field. */
  id: string | undefined;
  /** The stream's reconnection time in ms: also stream state, so it persists; undefined until set. */
  retry: number | undefined;
}

/**
 * Incremental SSE parser. Feed it bytes in any split; it calls `onEvent` synchronously for each
 * event as soon as the blank line dispatching it arrives (a lone CR is dispatched immediately too).
 */
export class SseParser {
  /** Bytes of the current, not yet terminated line: kept as pieces so long lines cost O(n), not O(n²). */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** First bytes of the stream while fewer than 3 have arrived, so a BOM split across chunks is seen. */
  private head: Buffer | undefined = Buffer.alloc(0);
  /** The previous chunk ended in CR: an LF starting the next chunk belongs to that same CRLF. */
  private skipLf = false;
  /** Some non-blank line arrived since the last blank line: we are inside an event. */
  private inEvent = false;
  private ended = false;
  private eventType = '';
  /** Data lines; joining with "\n" at dispatch equals the spec's "append value + LF, strip one LF". */
  private data: string[] = [];
  /** Characters gathered in `data` so far (a UTF-16 count: never more than the bytes they came from). */
  private dataLength = 0;
  private lastEventId: string | undefined = undefined;
  private retry: number | undefined = undefined;

  /** @param onEvent called synchronously for every dispatched event; what it throws propagates out of feed(). */
  constructor(
    private readonly onEvent: (event: SseEvent) => void,
    private readonly limits: SseLimits = DEFAULT_LIMITS,
  ) {}

  /** Feed the next bytes from the network, in whatever pieces TCP delivered them. Throws if called after end(). */
  feed(chunk: Uint8Array): void {
    if (this.ended) throw new Error('SseParser.feed() called after end()');
    // Zero-copy view: Buffer gives us indexOf and a native UTF-8 decode of a byte range.
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.head !== undefined) {
      // §9.2.5: "The UTF-8 decode algorithm strips one leading UTF-8 Byte Order Mark (BOM), if any."
      // Only at the very start of the stream, so buffer until 3 bytes decide it, then never again.
      const head = this.head.length === 0 ? buf : Buffer.concat([this.head, buf]);
      if (head.length < 3) {
        this.head = Buffer.from(head); // copy: the caller may reuse its chunk
        return;
      }
      this.head = undefined;
      buf = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? head.subarray(3) : head;
    }
    this.scan(buf);
  }

  /**
   * The stream ended. Returns true if the stream ended in the middle of an event (bytes or fields received
   * but no blank line dispatching them) — the gateway uses this to detect a truncated upstream stream.
   * Per spec, such an incomplete event is NOT dispatched.
   * Any non-blank line counts, comments included: a clean stream always ends with a blank line.
   */
  end(): boolean {
    if (this.ended) return false;
    // Fewer than 3 bytes ever arrived: they cannot be a whole BOM, so they are ordinary bytes.
    if (this.head !== undefined && this.head.length > 0) this.scan(this.head);
    this.head = undefined;
    this.ended = true;
    const truncated = this.pendingLength > 0 || this.inEvent;
    // §9.2.6: "Once the end of the file is reached, any pending data must be discarded."
    this.pending = [];
    this.pendingLength = 0;
    this.data = [];
    this.dataLength = 0;
    this.eventType = '';
    this.inEvent = false;
    return truncated;
  }

  /** Split `buf` into lines. §9.2.5: end-of-line = CRLF | LF | CR. */
  private scan(buf: Buffer): void {
    const len = buf.length;
    if (len === 0) return;
    let pos = 0;
    if (this.skipLf) {
      this.skipLf = false;
      if (buf[0] === LF) pos = 1;
    }
    // Each indexOf result is reused until `pos` passes it, so every byte is scanned once per terminator kind.
    let cr = buf.indexOf(CR, pos);
    let lf = buf.indexOf(LF, pos);
    while (cr !== -1 || lf !== -1) {
      if (lf !== -1 && (cr === -1 || lf < cr)) {
        if (buf[lf + 1] === LF && (cr === -1 || cr > lf + 1) && this.wholeDataEvent(buf, pos, lf)) {
          pos = lf + 2;
        } else {
          this.line(buf, pos, lf);
          pos = lf + 1;
        }
      } else {
        this.line(buf, pos, cr);
        pos = cr + 1;
        // CRLF is one line ending; if the CR is the last byte, its LF may be the next chunk's first byte.
        if (pos === len) this.skipLf = true;
        else if (buf[pos] === LF) pos++;
      }
      if (cr !== -1 && cr < pos) cr = buf.indexOf(CR, pos);
      if (lf !== -1 && lf < pos) lf = buf.indexOf(LF, pos);
    }
    if (pos < len) {
      if (this.pendingLength + len - pos > this.limits.maxLineBytes) this.refuse('line', this.limits.maxLineBytes);
      // Copy the tail: the caller owns `chunk` and may overwrite it once feed() returns.
      this.pending.push(Buffer.from(buf.subarray(pos)));
      this.pendingLength += len - pos;
    }
  }

  /**
   * The common case on one line: `data: <value>` at buf[start, end), followed by the blank line that ends the
   * event (the caller checked the LF at `end + 1`), with nothing of an event gathered before it. Dispatched
   * straight from the bytes — the same event the general path builds, without its line, field and join steps,
   * which cost most of the parser's time on a chat chunk. False: take the general path.
   */
  private wholeDataEvent(buf: Buffer, start: number, end: number): boolean {
    if (this.pendingLength !== 0 || this.inEvent || end - start < 5) return false;
    if (
      buf[start] !== 0x64 ||
      buf[start + 1] !== 0x61 ||
      buf[start + 2] !== 0x74 ||
      buf[start + 3] !== 0x61 ||
      buf[start + 4] !== COLON
    )
      return false;
    if (end - start > this.limits.maxLineBytes || end - start >= this.limits.maxEventBytes) return false; // the general path refuses it
    const valueStart = buf[start + 5] === SPACE ? start + 6 : start + 5;
    this.onEvent({
      event: 'message',
      data: buf.toString('utf8', valueStart, end),
      id: this.lastEventId,
      retry: this.retry,
    });
    return true;
  }

  /** One complete line: buf[start, end) plus any pending pieces from earlier chunks. */
  private line(buf: Buffer, start: number, end: number): void {
    let text: string;
    if (end - start + this.pendingLength > this.limits.maxLineBytes) this.refuse('line', this.limits.maxLineBytes);
    if (this.pendingLength === 0) {
      if (start === end) return this.dispatch();
      // Decoding only complete lines keeps multi-byte characters split across chunks intact: CR and LF
      // bytes never occur inside a UTF-8 sequence. Invalid bytes become U+FFFD, as in the spec's decoder.
      text = buf.toString('utf8', start, end);
    } else {
      this.pending.push(buf.subarray(start, end));
      text = Buffer.concat(this.pending, this.pendingLength + end - start).toString('utf8');
      this.pending = [];
      this.pendingLength = 0;
    }
    this.inEvent = true;
    // §9.2.6: "If the line starts with a U+003A COLON character (:) — Ignore the line."
    if (text.charCodeAt(0) === COLON) return;
    const colon = text.indexOf(':');
    if (colon === -1) return this.field(text, ''); // no colon: whole line is the name, value is empty
    // "If value starts with a U+0020 SPACE character, remove it from value." (only that one space)
    const valueStart = text.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1;
    this.field(text.slice(0, colon), text.slice(valueStart));
  }

  /** §9.2.6 "process the field". Field names are case-sensitive; unknown ones are ignored. */
  private field(name: string, value: string): void {
    switch (name) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.dataLength += value.length + 1;
        if (this.dataLength > this.limits.maxEventBytes) this.refuse('event', this.limits.maxEventBytes);
        this.data.push(value);
        break;
      case 'id':
        // "If the field value does not contain U+0000 NULL, then set the last event ID buffer to the field value."
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        // "If the field value consists of only ASCII digits, then interpret [it] as an integer in base ten."
        if (DIGITS_ONLY.test(value)) this.retry = Number(value);
        break;
    }
  }

  /** Drops what the oversized line or event held (the stream is over for the caller) and throws. */
  private refuse(what: 'line' | 'event', limitBytes: number): never {
    this.pending = [];
    this.pendingLength = 0;
    this.data = [];
    this.dataLength = 0;
    this.ended = true;
    throw new SseLimitError(what, limitBytes);
  }

  /** §9.2.6 "dispatch the event", run on every blank line. */
  private dispatch(): void {
    this.inEvent = false;
    const data = this.data;
    // "If the data buffer is an empty string, set the data buffer and the event type buffer to the
    // empty string and return." The last event ID buffer is deliberately not reset.
    if (data.length === 0) {
      this.eventType = '';
      return;
    }
    const event = this.eventType === '' ? 'message' : this.eventType;
    // Reset before calling out, so a throwing or re-entrant callback sees a consistent parser.
    this.data = [];
    this.dataLength = 0;
    this.eventType = '';
    this.onEvent({ event, data: data.join('\n'), id: this.lastEventId, retry: this.retry });
  }
}

/**
 * Convenience: parse an async iterable of byte chunks (e.g. an undici response body) into events.
 * Throws nothing itself; errors of the source propagate. Returns `{ truncated }` as SseParser.end() reports it.
 * Breaking out of the loop early closes `source` (for await calls its return()).
 */
export async function* parseSseStream(
  source: AsyncIterable<Uint8Array>,
): AsyncGenerator<SseEvent, { truncated: boolean }> {
  const queue: SseEvent[] = [];
  const parser = new SseParser((event) => {
    queue.push(event);
  });
  for await (const chunk of source) {
    parser.feed(chunk);
    // Yield after each chunk so consumers see events with no more latency than the network gave them.
    for (const event of queue) yield event;
    queue.length = 0;
  }
  return { truncated: parser.end() };
}
