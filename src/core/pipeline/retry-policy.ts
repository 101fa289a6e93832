import type { RetryPolicy } from '../../config/types.js';
import { isGatewayError } from '../../errors/gateway-error.js';
import { errorSpec } from '../../errors/codes.js';
import { parseRetryAfter } from '../limits/upstream-pauses.js';

/** Failures another try (or another target) may fix: the registry's `upstream.retried` (src/errors/codes.ts). */
export function isRetryable(error: unknown): boolean {
  return isGatewayError(error) && errorSpec(error.code).upstream?.retried === true;
}

/**
 * The wait before try number `attempt` (1 = the first retry) of the same target: exponential backoff with full
 * jitter (a uniform draw in [0, min(max, base * 2^(attempt-1))], AWS's "full jitter"), but never less than the
 * upstream's own Retry-After.
 */
export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy,
  error: unknown,
  now: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  const jitter = Math.floor(random() * ceiling);
  const retryAfter = isGatewayError(error) ? parseRetryAfter(error.headers?.['retry-after'], now) : undefined;
  return Math.max(jitter, retryAfter ?? 0);
}
