import { pino, type Logger, type DestinationStream } from 'pino';
import { SecretScrubber, redactUrl } from './redact.js';

export type { Logger };

/** Paths pino removes before serialising; header names are lower-case in Node. */
const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-upstream-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-upstream-key"]',
  'apiKey',
  'api_key',
  'token',
  'adminTokens',
  '*.apiKey',
  '*.api_key',
  '*.token',
  '*.adminTokens',
  '*.authorization',
];

export interface LoggerOptions {
  level: string;
  /** Known secret values (admin tokens, upstream keys): scrubbed from every line as a last resort. */
  secrets: ReadonlyArray<string | undefined>;
  /** Where lines go; default stdout, written asynchronously so logging never blocks a request. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const scrubber = new SecretScrubber();
  for (const secret of options.secrets) scrubber.add(secret);
  const destination = options.destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 });
  return pino(
    {
      level: options.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime, // SPEC rule 2: ISO 8601 UTC
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: {
        req: (req: { method?: string; url?: string }) => ({ method: req.method, url: redactUrl(req.url ?? '') }),
        err: pino.stdSerializers.err,
      },
      hooks: { streamWrite: (line: string) => scrubber.scrub(line) },
    },
    destination,
  );
}
