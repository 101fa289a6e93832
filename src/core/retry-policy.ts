import type { RetryPolicy } from '../config/types.js';
import { isGatewayError } from '../errors/gateway-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { parseRetryAfter } from './upstream-pauses.js';

/** Failures another try (or another target) may fix: rate limiting, server errors, transport failures. */
const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'upstream_rate_limited',
  'upstream_error',
  'upstream_unreachable',
  'upstream_connection_reset',
  'upstream_connect_timeout',
  'upstream_first_byte_timeout',
  'upstream_idle_timeout',
  'upstream_invalid_response',
  'upstream_stream_truncated',
  'upstream_stream_malformed',
  'upstream_stream_error',
  'upstream_auth_failed',
]);

export function isRetryable(error: unknown): boolean {
  return isGatewayError(error) && RETRYABLE.has(error.code);
}

/**
 * The wait before try number `attempt` (1 = the first retry) of the same target: exponential backoff with full
 * jitter (a uniform draw in [0, min(max, base * 2^(attempt-1))], AWS's "full jitter"), but never less than the
 * upstream's own Retry-After.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, error: unknown, now: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  const jitter = Math.floor(random() * ceiling);
  const retryAfter = isGatewayError(error) ? parseRetryAfter(error.headers?.['retry-after'], now) : undefined;
  return Math.max(jitter, retryAfter ?? 0);
}
