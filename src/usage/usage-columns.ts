import type { UsageRecord, UsageRows } from '../store/store-contract.js';

// Where each field lives in a row of the numeric columns and of the text columns.
const TIME = 0;
const STATUS = 1;
const LATENCY = 2;
const TTFB = 3;
const STREAM = 4;
const PROMPT = 5;
const COMPLETION = 6;
const COST = 7;
const ATTEMPTS = 8;
const REPLAY = 9;
const CACHE_HIT = 10;
const ANOMALY = 11;
const CACHE_READ = 12;
const CACHE_WRITE = 13;
const REASONING = 14;
const CACHE_SAVINGS = 15;
/** The record's number in the usage spool (0: not spooled). */
const SEQ = 16;
const NUMBERS = 17;

const REQUEST_ID = 0;
const CALLER = 1;
const ENVIRONMENT = 2;
const ROUTE = 3;
const MODEL = 4;
const UPSTREAM = 5;
const CODE = 6;
const TEXTS = 7;

/** A record's token parts (docs/usage.md); absent when the request has no usage. */
export interface TokenParts {
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

/** A record waiting to be written, with its number in the usage spool (0: not spooled). */
export interface WaitingRecord extends UsageRecord {
  readonly spoolSeq: number;
}

/**
 * One record's fields as `UsageColumns.push` takes them. Absent numbers are `undefined`; every field is always
 * given (no optional keys), so that every call site builds an object of one shape.
 */
export interface UsageFields {
  timeMs: number;
  requestId: string;
  caller: string;
  environment: string;
  route: string;
  model: string | undefined;
  upstream: string | undefined;
  status: number;
  code: string | undefined;
  latencyMs: number;
  ttfbMs: number | undefined;
  stream: boolean;
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  costUsd: number | undefined;
  attempts: number;
  replay: boolean;
  cacheHit: boolean;
  usageAnomaly: boolean;
  parts: TokenParts | undefined;
  cacheSavingsUsd: number | undefined;
}

/** A missing number (no TTFB, no token counts, no cost): NaN in a Float64Array, null in a record. */
const orNull = (n: number): number | null => (Number.isNaN(n) ? null : n);

/**
 * Usage records waiting to be written, kept column by column in arrays allocated once: adding a record keeps no
 * object (its numbers go into a Float64Array, its strings into a preallocated array; the fields it is handed in die
 * with the call, in the young generation). A record kept as an object
 * until its batch is written (up to a second) outlives the young generation and is copied by every scavenge on
 * the way; under load that was a measurable part of what usage records cost. Records become objects only when
 * the batch is handed to the store (`toRecords`), and die young there.
 */
export class UsageColumns implements UsageRows {
  private readonly numbers: Float64Array;
  private readonly texts: Array<string | null>;
  private count = 0;

  constructor(readonly capacity: number) {
    this.numbers = new Float64Array(capacity * NUMBERS);
    this.texts = new Array<string | null>(capacity * TEXTS).fill(null);
  }

  get length(): number {
    return this.count;
  }

  get full(): boolean {
    return this.count >= this.capacity;
  }

  /**
   * Appends one record (the caller checks `full` first; a full buffer ignores the call). Strings should be
   * long-lived (interned) where they repeat, so that keeping them costs nothing.
   */
  push(fields: UsageFields): void {
    if (this.count >= this.capacity) return;
    const {
      timeMs,
      requestId,
      caller,
      environment,
      route,
      model,
      upstream,
      status,
      code,
      latencyMs,
      ttfbMs,
      stream,
      promptTokens,
      completionTokens,
      costUsd,
      attempts,
      replay,
      cacheHit,
      usageAnomaly,
      parts,
      cacheSavingsUsd,
    } = fields;
    const n = this.count * NUMBERS;
    const numbers = this.numbers;
    numbers[n + TIME] = timeMs;
    numbers[n + STATUS] = status;
    numbers[n + LATENCY] = latencyMs;
    numbers[n + TTFB] = ttfbMs ?? NaN;
    numbers[n + STREAM] = stream ? 1 : 0;
    numbers[n + PROMPT] = promptTokens ?? NaN;
    numbers[n + COMPLETION] = completionTokens ?? NaN;
    numbers[n + COST] = costUsd ?? NaN;
    numbers[n + ATTEMPTS] = attempts;
    numbers[n + REPLAY] = replay ? 1 : 0;
    numbers[n + CACHE_HIT] = cacheHit ? 1 : 0;
    numbers[n + ANOMALY] = usageAnomaly ? 1 : 0;
    numbers[n + CACHE_READ] = parts ? parts.cacheRead : NaN;
    numbers[n + CACHE_WRITE] = parts ? parts.cacheWrite : NaN;
    numbers[n + REASONING] = parts ? parts.reasoning : NaN;
    numbers[n + CACHE_SAVINGS] = cacheSavingsUsd ?? NaN;
    numbers[n + SEQ] = 0;
    const t = this.count * TEXTS;
    const texts = this.texts;
    texts[t + REQUEST_ID] = requestId;
    texts[t + CALLER] = caller;
    texts[t + ENVIRONMENT] = environment;
    texts[t + ROUTE] = route;
    texts[t + MODEL] = model ?? null;
    texts[t + UPSTREAM] = upstream ?? null;
    texts[t + CODE] = code ?? null;
    this.count += 1;
  }

  /** Appends one record given as an object (tests, tools; the request path pushes its fields). */
  pushRecord(r: UsageRecord): void {
    this.push({
      timeMs: r.timeMs,
      requestId: r.requestId,
      caller: r.caller,
      environment: r.environment,
      route: r.route,
      model: r.model ?? undefined,
      upstream: r.upstream ?? undefined,
      status: r.status,
      code: r.code ?? undefined,
      latencyMs: r.latencyMs,
      ttfbMs: r.ttfbMs ?? undefined,
      stream: r.stream,
      promptTokens: r.promptTokens ?? undefined,
      completionTokens: r.completionTokens ?? undefined,
      costUsd: r.costUsd ?? undefined,
      attempts: r.attempts,
      replay: r.replay,
      cacheHit: r.cacheHit,
      usageAnomaly: r.usageAnomaly,
      parts:
        r.cacheReadTokens === null
          ? undefined
          : { cacheRead: r.cacheReadTokens, cacheWrite: r.cacheWriteTokens ?? 0, reasoning: r.reasoningTokens ?? 0 },
      cacheSavingsUsd: r.cacheSavingsUsd ?? undefined,
    });
  }

  /** Row `row`'s number in the usage spool (0: not spooled). */
  seqAt(row: number): number {
    return this.numbers[row * NUMBERS + SEQ] as number;
  }

  setSeq(row: number, seq: number): void {
    this.numbers[row * NUMBERS + SEQ] = seq;
  }

  /** Row `row`'s values in the store's column order (USAGE_COLUMNS), straight from the columns: no record object. */
  writeValues(row: number, target: unknown[], offset: number): void {
    const n = row * NUMBERS;
    const t = row * TEXTS;
    const numbers = this.numbers;
    const texts = this.texts;
    target[offset] = numbers[n + TIME];
    target[offset + 1] = texts[t + REQUEST_ID];
    target[offset + 2] = texts[t + CALLER];
    target[offset + 3] = texts[t + ENVIRONMENT];
    target[offset + 4] = texts[t + ROUTE];
    target[offset + 5] = texts[t + MODEL];
    target[offset + 6] = texts[t + UPSTREAM];
    target[offset + 7] = numbers[n + STATUS];
    target[offset + 8] = texts[t + CODE];
    target[offset + 9] = numbers[n + LATENCY];
    target[offset + 10] = orNull(numbers[n + TTFB] as number);
    target[offset + 11] = numbers[n + STREAM];
    target[offset + 12] = orNull(numbers[n + PROMPT] as number);
    target[offset + 13] = orNull(numbers[n + COMPLETION] as number);
    target[offset + 14] = orNull(numbers[n + COST] as number);
    target[offset + 15] = numbers[n + ATTEMPTS];
    target[offset + 16] = numbers[n + REPLAY];
    target[offset + 17] = numbers[n + CACHE_HIT];
    target[offset + 18] = numbers[n + ANOMALY];
    target[offset + 19] = orNull(numbers[n + CACHE_READ] as number);
    target[offset + 20] = orNull(numbers[n + CACHE_WRITE] as number);
    target[offset + 21] = orNull(numbers[n + REASONING] as number);
    target[offset + 22] = orNull(numbers[n + CACHE_SAVINGS] as number);
  }

  /** The buffered records as objects, oldest first. */
  toRecords(): UsageRecord[] {
    const records = new Array<UsageRecord>(this.count);
    const numbers = this.numbers;
    const texts = this.texts;
    for (let i = 0; i < this.count; i++) {
      const n = i * NUMBERS;
      const t = i * TEXTS;
      records[i] = {
        timeMs: numbers[n + TIME] as number,
        requestId: texts[t + REQUEST_ID] as string,
        caller: texts[t + CALLER] as string,
        environment: texts[t + ENVIRONMENT] as string,
        route: texts[t + ROUTE] as string,
        model: texts[t + MODEL] ?? null,
        upstream: texts[t + UPSTREAM] ?? null,
        status: numbers[n + STATUS] as number,
        code: texts[t + CODE] ?? null,
        latencyMs: numbers[n + LATENCY] as number,
        ttfbMs: orNull(numbers[n + TTFB] as number),
        stream: numbers[n + STREAM] === 1,
        promptTokens: orNull(numbers[n + PROMPT] as number),
        completionTokens: orNull(numbers[n + COMPLETION] as number),
        costUsd: orNull(numbers[n + COST] as number),
        attempts: numbers[n + ATTEMPTS] as number,
        replay: numbers[n + REPLAY] === 1,
        cacheHit: numbers[n + CACHE_HIT] === 1,
        usageAnomaly: numbers[n + ANOMALY] === 1,
        cacheReadTokens: orNull(numbers[n + CACHE_READ] as number),
        cacheWriteTokens: orNull(numbers[n + CACHE_WRITE] as number),
        reasoningTokens: orNull(numbers[n + REASONING] as number),
        cacheSavingsUsd: orNull(numbers[n + CACHE_SAVINGS] as number),
      };
    }
    return records;
  }

  /** The buffered records as objects with their spool numbers (records that must wait for another write). */
  toWaiting(): WaitingRecord[] {
    return this.toRecords().map((record, i) => ({ ...record, spoolSeq: this.seqAt(i) }));
  }

  /** Empties the buffer; the strings it held are let go. */
  clear(): void {
    this.texts.fill(null, 0, this.count * TEXTS);
    this.count = 0;
  }
}
