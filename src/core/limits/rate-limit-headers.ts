import type { RateLimitDecision } from '../../store/store-contract.js';

/** One limit that applied to a request, with the decision the store made for it. */
export interface AppliedLimit {
  /** What the limit counts, for RateLimit-Policy's comment and the 429's details (e.g. "requests per caller"). */
  name: string;
  windowMs: number;
  decision: RateLimitDecision;
}

/** The state of the limit closest to refusing a caller, as numbers: what `RateLimit-*` says in text. */
export interface RateState {
  limit: number;
  remaining: number;
  /** Until the window resets, ms. */
  resetMs: number;
}

/** The binding limit's state (`bindingLimit`), or undefined when no windowed limit applied. */
export function rateStateOf(limits: readonly AppliedLimit[]): RateState | undefined {
  const decision = bindingLimit(limits)?.decision;
  if (!decision) return undefined;
  return { limit: decision.limit, remaining: Math.max(0, decision.remaining), resetMs: Math.max(0, decision.resetMs) };
}

/**
 * The IETF rate-limit headers (draft-ietf-httpapi-ratelimit-headers-06): `RateLimit-Limit`, `-Remaining` and
 * `-Reset` (delta-seconds) describe the limit closest to refusing the caller, `RateLimit-Policy` lists every limit
 * that applied (`<limit>;w=<window seconds>;comment="<name>"`), and a refusal adds `Retry-After` (RFC 9110 10.2.3).
 * When several limits refuse, the one with the longest wait is reported: retrying earlier cannot succeed.
 */
export function rateLimitHeaders(limits: readonly AppliedLimit[], policy?: string): Record<string, string> {
  const binding = bindingLimit(limits);
  if (!binding) return {};
  const { decision } = binding;
  const headers: Record<string, string> = {
    'ratelimit-limit': String(decision.limit),
    'ratelimit-remaining': String(Math.max(0, decision.remaining)),
    'ratelimit-reset': String(Math.ceil(Math.max(0, decision.resetMs) / 1000)),
    // Callers that apply the same limits to many requests pass the policy they computed once.
    'ratelimit-policy':
      policy ?? rateLimitPolicy(limits.map((l) => ({ limit: l.decision.limit, windowMs: l.windowMs, name: l.name }))),
  };
  if (!decision.allowed) headers['retry-after'] = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
  return headers;
}

/** The limit to report: a refusing one with the longest wait, else the one with the fewest units left. */
export function bindingLimit(limits: readonly AppliedLimit[]): AppliedLimit | undefined {
  let chosen: AppliedLimit | undefined;
  for (const limit of limits) {
    if (!chosen) {
      chosen = limit;
      continue;
    }
    const a = limit.decision;
    const b = chosen.decision;
    if (!a.allowed && (b.allowed || a.retryAfterMs > b.retryAfterMs)) chosen = limit;
    else if (a.allowed && b.allowed && a.remaining / a.limit < b.remaining / b.limit) chosen = limit;
  }
  return chosen;
}

/** `RateLimit-Policy`: every limit that applies, as `<limit>;w=<window seconds>;comment="<name>"`. */
export function rateLimitPolicy(limits: ReadonlyArray<{ limit: number; windowMs: number; name: string }>): string {
  return limits
    .map((l) => `${l.limit};w=${Math.ceil(l.windowMs / 1000)};comment="${l.name.replace(/["\\]/g, '')}"`)
    .join(', ');
}
