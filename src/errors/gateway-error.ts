import { ERROR_CODES, type ErrorCode } from './codes.js';

/** What goes on the wire for every error: the one error shape of the spec (`{code, message, details}`). */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

export interface GatewayErrorOptions {
  /** Overrides the registry's status; only honoured for codes whose status comes from the upstream. */
  upstreamStatus?: number;
  /** Response headers that belong with this error (Allow, Retry-After, WWW-Authenticate...). */
  headers?: Record<string, string>;
  /** A more specific message than the registry's template. Must never contain a secret. */
  message?: string;
  cause?: unknown;
}

/**
 * The only error class the gateway throws on purpose. Everything else that reaches the error handler is
 * turned into `internal_error` (and logged) so no stack or internal text reaches a caller.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, details: Record<string, unknown> = {}, options: GatewayErrorOptions = {}) {
    const spec = ERROR_CODES[code];
    super(options.message ?? spec.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.details = details;
    this.headers = options.headers;
    const upstream = options.upstreamStatus;
    this.status =
      'statusFrom' in spec && upstream !== undefined && upstream >= 400 && upstream < 500 ? upstream : spec.status;
  }

  /** The Retry-After this error's answer carries, ms (its delta-seconds form; undefined without one). */
  get retryAfterMs(): number | undefined {
    const seconds = this.headers?.['retry-after'];
    return seconds !== undefined && /^\d{1,12}$/.test(seconds) ? Number(seconds) * 1000 : undefined;
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isGatewayError(error: unknown): error is GatewayError {
  return error instanceof GatewayError;
}
