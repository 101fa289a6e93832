import { pino, type Logger, type DestinationStream } from 'pino';
import { REDACTED, SecretScrubber, redactUrl } from '../secrets/redact.js';

export type { Logger };

/** Header names whose values are credentials. */
const SECRET_HEADERS = new Set([
  'authorization',
  'x-upstream-key',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'api-key',
]);
/** Object keys whose values are credentials, wherever they are logged. */
const SECRET_KEYS = new Set(['apiKey', 'api_key', 'token', 'adminTokens', 'authorization', 'password', 'secret']);

/**
 * Redaction happens in two layers, both cheap enough for the hot path (pino's own `redact` option cost a sizeable
 * share of a request's CPU in the benchmark, so it is not used; docs/adr/):
 * 1. by key: serializers for the keys that can carry secrets (`req`, `headers`, `upstream`, `config`). pino runs a
 *    serializer only when that key is present in a log call, so ordinary lines pay nothing;
 * 2. by value: every finished line is scrubbed of the known secrets (admin tokens, configured upstream keys), so a
 *    secret that slipped into a message or an error text still never reaches the sink.
 */
export function redactHeaders(headers: unknown): unknown {
  if (typeof headers !== 'object' || headers === null) return headers;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = SECRET_HEADERS.has(name.toLowerCase()) ? REDACTED : value;
  }
  return out;
}

export function redactSecretKeys(value: unknown, depth = 0): unknown {
  if (typeof value !== 'object' || value === null || depth > 4) return value;
  if (Array.isArray(value)) return value.map((v) => redactSecretKeys(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = SECRET_KEYS.has(key)
      ? REDACTED
      : key === 'headers'
        ? redactHeaders(inner)
        : redactSecretKeys(inner, depth + 1);
  }
  return out;
}

/**
 * pino's isoTime builds a new Date and string for every line; under load many lines share a millisecond, so the
 * string is reused within one.
 */
let lastMs = 0;
let lastStamp = '';
function isoTimestamp(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastStamp = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastStamp;
}

export interface LoggerOptions {
  level: string;
  /** Known secret values (admin tokens, upstream keys): scrubbed from every line as a last resort. */
  secrets: ReadonlyArray<string | undefined>;
  /** Where lines go; default stdout, written asynchronously so logging never blocks a request. */
  destination?: DestinationStream;
  /** Fields on every line, e.g. `{ worker: 2 }` in a cluster worker so a line tells which process wrote it. */
  base?: Record<string, unknown>;
  /** The default destination's buffer bound in bytes (default 16 MiB): past it, lines are dropped and counted. */
  maxBufferBytes?: number;
}

const ACCESS_SINK = Symbol('access line sink');
/** Any pino logger (Fastify's `log` is one, typed more narrowly). */
type AnyLogger = object;
function sinkOf(logger: AnyLogger): AccessSink | undefined {
  return (logger as Record<symbol, AccessSink | undefined>)[ACCESS_SINK];
}

/** Whether an access line would be written at this logger's level (info). */
export function accessLineEnabled(logger: AnyLogger): boolean {
  return (logger as Logger).levelVal <= 30;
}
interface AccessSink {
  scrubber: SecretScrubber;
  stream: DestinationStream;
}

/** Log lines the destination dropped because its buffer was full (the disk or pipe could not keep up). */
let droppedLines = 0;
export function droppedLogLines(): number {
  return droppedLines;
}

/**
 * Counts the lines a bounded asynchronous destination (sonic-boom with `maxLength`) drops, and says so once in
 * the log, when the buffer has drained (a line written while it is full would be dropped too).
 */
function watchDrops(logger: Logger, stream: DestinationStream): void {
  const events = stream as unknown as { on?: (event: string, fn: () => void) => void; once?: typeof events.on };
  if (typeof events.on !== 'function' || typeof events.once !== 'function') return;
  let told = false;
  events.on('drop', () => {
    droppedLines++;
    if (told) return;
    told = true;
    events.once?.('drain', () =>
      logger.warn(
        { dropped_lines: droppedLines },
        'log destination cannot keep up: lines are being dropped (counted in llmgw_log_lines_dropped_total)',
      ),
    );
  });
}

/**
 * Writes one access line without pino's generic object walk: `fields` is the line's JSON body after the standard
 * fields (a comma-led list of `"key":value`), built by a serializer that knows each field's type. The line has
 * exactly pino's shape (`level`, `time`, the logger's bindings, the fields, `msg`); the strings that can carry a
 * caller's text are scrubbed by the caller through `scrubLogText`, so the whole line needs no second pass.
 */
export function writeAccessLine(logger: AnyLogger, fields: string): void {
  if (!accessLineEnabled(logger)) return;
  const sink = sinkOf(logger);
  if (sink === undefined) {
    (logger as Logger).info(JSON.parse(`{${fields.slice(1)}}`) as object, 'request');
    return;
  }
  const bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym];
  sink.stream.write(`{"level":30${isoTimestamp()}${bindings}${fields},"msg":"request"}\n`);
}

/** A string as a JSON value, with every known secret (admin tokens, upstream keys) scrubbed from it. */
export function scrubbedJson(logger: AnyLogger, text: string): string {
  const sink = sinkOf(logger);
  return JSON.stringify(sink === undefined ? text : sink.scrubber.scrub(text));
}

/** Writes what the destination still buffers, synchronously: before a `process.exit`. */
export function flushLogSync(logger: Logger): void {
  const stream = (logger as unknown as Record<symbol, { flushSync?: () => void } | undefined>)[pino.symbols.streamSym];
  try {
    stream?.flushSync?.();
  } catch {
    logger.flush();
  }
}

export function createLogger(options: LoggerOptions): Logger {
  const scrubber = new SecretScrubber();
  for (const secret of options.secrets) scrubber.add(secret);
  // Asynchronous and bounded: a write never blocks a call; past maxLength sonic-boom drops the line (counted).
  const destination =
    options.destination ??
    pino.destination({ dest: 1, sync: false, minLength: 8 * 1024, maxLength: options.maxBufferBytes ?? 16 << 20 });
  const logger = pino(
    {
      level: options.level,
      base: options.base,
      timestamp: isoTimestamp, // SPEC rule 2: ISO 8601 UTC
      serializers: {
        req: (req: { method?: string; url?: string; headers?: unknown }) => ({
          method: req.method,
          url: redactUrl(req.url ?? ''),
          ...(req.headers === undefined ? {} : { headers: redactHeaders(req.headers) }),
        }),
        headers: redactHeaders,
        upstream: (value: unknown) => redactSecretKeys(value),
        config: (value: unknown) => redactSecretKeys(value),
        err: pino.stdSerializers.err,
      },
      hooks: { streamWrite: (line: string) => scrubber.scrub(line) },
    },
    destination,
  );
  (logger as unknown as Record<symbol, AccessSink>)[ACCESS_SINK] = { scrubber, stream: destination };
  watchDrops(logger, destination);
  return logger;
}
