import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LogFn, Logger } from 'pino';

/**
 * Fastify gives every request its own child logger. Creating a pino child per request measurably cost
 * throughput (it serialises the bindings each time), and most requests log nothing but their access line, which
 * is written by the root logger with the request id as a field. So `request.log` is this lazy stand-in: the real
 * child is made on the first log call at an enabled level, and every line of that request still carries its id.
 */
class LazyChildLogger {
  private real: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions | undefined,
  ) {}

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.child$().level = level;
  }

  readonly fatal: LogFn = (...args: Parameters<LogFn>) => this.write('fatal', args);
  readonly error: LogFn = (...args: Parameters<LogFn>) => this.write('error', args);
  readonly warn: LogFn = (...args: Parameters<LogFn>) => this.write('warn', args);
  readonly info: LogFn = (...args: Parameters<LogFn>) => this.write('info', args);
  readonly debug: LogFn = (...args: Parameters<LogFn>) => this.write('debug', args);
  readonly trace: LogFn = (...args: Parameters<LogFn>) => this.write('trace', args);
  readonly silent: LogFn = () => undefined;

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.child$().child(bindings, options) as FastifyBaseLogger;
  }

  private write(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: Parameters<LogFn>): void {
    if (!this.parent.isLevelEnabled(level)) return;
    const logger = this.child$();
    (logger[level] as (...a: Parameters<LogFn>) => void)(...args);
  }

  private child$(): Logger {
    this.real ??= this.parent.child(this.bindings, this.options);
    return this.real;
  }
}

/** For Fastify's `childLoggerFactory` option. */
export function lazyChildLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(parent as Logger, bindings, options) as unknown as FastifyBaseLogger;
}
