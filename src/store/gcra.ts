import type { AdmissionLimit, LimitOutcome, RateLimitDecision } from './store-contract.js';

// GCRA arithmetic shared by every rate-limit backend: pure functions, no driver.
//
// GCRA is the "virtual scheduling" form of the generic cell rate algorithm (ITU-T I.371, ATM Forum TM 4.0; the
// same scheme as redis-cell and Brandur Leach's "Rate limiting, cells, and GCRA"). Per key one timestamp, the
// theoretical arrival time (TAT). For `limit` units per `windowMs`: emission interval T = windowMs / limit, burst
// tolerance tau = windowMs (a full bucket is `limit` units at once). A request of `cost` units at `now` is allowed
// iff max(TAT, now) + cost*T - now <= tau, and then TAT moves there; a refusal changes nothing.
//
// Rounding: the store keeps TAT in whole milliseconds (`rate_limits.tat_ms` is a STRICT INTEGER column), so a
// charge of `units` is floor(units * windowMs / limit) ms, and at least 1 ms when `units` is not 0. Rounding down
// never refuses what the exact model allows: `limit` units at one instant always pass even when T is not a whole
// number of ms (7 per minute, 6 per second), and the error is under 1 ms of emission per call, none when
// units * T is whole. The 1 ms minimum keeps a charge below 1 ms (200,000 tokens a minute, charged one token at a
// time) from being free: such a limit is enforced as at most one call per ms, stricter than configured.

//
// Bounds: no number a caller can influence may make the stored state unreadable or a limit unenforceable (one
// charge of 1e15 tokens once stored a TAT of 3.6e18 ms, past what a JavaScript number reads exactly, and every later
// step failed). So a window is at most MAX_WINDOW_MS; one charge moves a TAT by at most MAX_DEBT_WINDOWS windows;
// no TAT is ever written beyond `gcraCeiling` (now + MAX_DEBT_WINDOWS windows, about 3.5e13 ms from now at most);
// and a stored TAT that cannot be read, or lies beyond that ceiling, is repaired by `gcraStoredTat` to one full
// window of debt (now + tau: the key is refused for a window, never let through) and written back.

/** The longest window (or budget period) a limit may have: 400 days (a key's budget period is at most 366). */
export const MAX_WINDOW_MS = 400 * 86_400_000;
/** The most debt a key can carry, in windows of its limit: a charge, or a TAT, past this is capped. */
export const MAX_DEBT_WINDOWS = 1000;

/** The latest TAT a key may hold at `now`: MAX_DEBT_WINDOWS windows of debt. */
export function gcraCeiling(now: number, windowMs: number): number {
  return now + gcraTolerance(windowMs) * MAX_DEBT_WINDOWS;
}

/**
 * The TAT to decide with, from what the store holds (`stored`: undefined when the key has none). A value that is
 * not a finite number, or lies beyond the ceiling, is `repaired` to now + tau (one full window of debt), which the
 * backend writes back; a past one reads as now.
 */
export function gcraStoredTat(stored: unknown, now: number, windowMs: number): { tat: number; repaired: boolean } {
  if (stored === undefined || stored === null) return { tat: now, repaired: false };
  if (typeof stored !== 'number' || !Number.isFinite(stored) || stored > gcraCeiling(now, windowMs))
    return { tat: now + gcraTolerance(windowMs), repaired: true };
  return { tat: Math.max(stored, now), repaired: false };
}

/** A TAT moved by `charge` from `tat`, never below now (giving back cannot fill beyond full) nor past the ceiling. */
export function gcraMoved(tat: number, charge: number, now: number, windowMs: number): number {
  return Math.min(Math.max(tat + charge, now), gcraCeiling(now, windowMs));
}

/** What a backend reports after one atomic GCRA step; times are in the caller's clock (ms). */
export interface GcraStep {
  allowed: boolean;
  /** The stored TAT after the step, never before `now` (a missing or stale key reads as `now`). */
  tat: number;
  /** The TAT the request asked for: equal to `tat` when allowed, beyond the tolerance when refused. */
  requestedTat: number;
}

/** The clock of a call: the caller's `nowMs` (tests, a gateway's own clock) in whole ms. */
export function gcraNow(nowMs: number | undefined): number {
  const now = Math.floor(nowMs ?? Date.now());
  if (!Number.isFinite(now)) throw new RangeError(`nowMs must be a finite number, got ${nowMs}`);
  return now;
}

export function checkRateLimit(limit: number, windowMs: number, units: number, what: 'cost' | 'delta'): void {
  if (!(Number.isFinite(limit) && limit > 0)) throw new RangeError(`limit must be a positive number, got ${limit}`);
  if (!(Number.isFinite(windowMs) && windowMs >= 1 && windowMs <= MAX_WINDOW_MS))
    throw new RangeError(`windowMs must be from 1 to ${MAX_WINDOW_MS}, got ${windowMs}`);
  if (!Number.isFinite(units) || (what === 'cost' && units < 0)) throw new RangeError(`invalid ${what}: ${units}`);
}

export function checkLease(max: number, leaseMs: number): void {
  if (!(Number.isFinite(max) && max >= 0)) throw new RangeError(`max must be a non-negative number, got ${max}`);
  if (!(Number.isFinite(leaseMs) && leaseMs > 0)) throw new RangeError(`leaseMs must be positive, got ${leaseMs}`);
}

/**
 * The TAT shift for `units` (negative gives back), in whole ms: see "Rounding" above. Symmetric in sign, and at
 * most MAX_DEBT_WINDOWS windows either way (see "Bounds").
 */
export function gcraCharge(units: number, limit: number, windowMs: number): number {
  if (units === 0) return 0;
  // units * windowMs / limit rather than units * T: when the exact result is whole, this is exact in floating point.
  const exact = Math.max(1, Math.floor((Math.abs(units) * windowMs) / limit));
  const ms = Math.min(exact, gcraTolerance(windowMs) * MAX_DEBT_WINDOWS);
  return units < 0 ? -ms : ms;
}

/** The tolerance tau in whole ms (windowMs itself when whole, as it usually is). */
export function gcraTolerance(windowMs: number): number {
  return Math.floor(windowMs);
}

/** Fills the RateLimit-* fields from one step. `remaining` is 0 on a refusal, as the contract says. */
export function gcraDecision(step: GcraStep, limit: number, windowMs: number, now: number): RateLimitDecision {
  const resetMs = Math.max(0, step.tat - now);
  if (!step.allowed) {
    return {
      allowed: false,
      limit,
      remaining: 0,
      resetMs,
      retryAfterMs: Math.max(1, step.requestedTat - now - gcraTolerance(windowMs)),
    };
  }
  // floor((tau - (TAT - now)) / T), computed as a product first so a whole answer is not lost to 4.9999...
  const remaining = Math.floor(((gcraTolerance(windowMs) - resetMs) * limit) / windowMs);
  return { allowed: true, limit, remaining: Math.min(limit, Math.max(0, remaining)), resetMs, retryAfterMs: 0 };
}

/**
 * A request costing more than the whole bucket can never pass. It is refused without touching the key; the wait
 * reported is the time to a full bucket but never less than one window: a refusal always carries a positive
 * Retry-After, and a client that retries blindly does so at most about once per window. (The caller, which knows
 * `cost > limit`, is the one able to say "too large" rather than "too soon".)
 */
export function gcraOversized(tat: number, limit: number, windowMs: number, now: number): RateLimitDecision {
  const resetMs = Math.max(0, tat - now);
  return { allowed: false, limit, remaining: 0, resetMs, retryAfterMs: Math.max(resetMs, Math.ceil(windowMs)) };
}

/** Checks one limit of a batch before any backend sees it: a bad number is a bug, not a refusal. */
export function checkAdmissionLimit(limit: AdmissionLimit): void {
  if (limit.kind === 'rate') {
    checkRateLimit(limit.limit, limit.windowMs, limit.cost, 'cost');
    if (limit.need !== undefined && !(Number.isFinite(limit.need) && limit.need >= 0 && limit.need <= limit.cost)) {
      throw new RangeError(`need must be between 0 and the cost (${limit.cost}), got ${limit.need}`);
    }
  } else {
    checkLease(limit.max, limit.leaseMs);
  }
}

/**
 * What a backend needs to take a rate limit: the TAT shift to write (`charge`, for `cost`), the shift that must
 * fit within the tolerance for the limit to allow (`need`, for the limit's `need` units, `cost` by default), the
 * tolerance, and whether it can never pass (`need` above the limit). A backend allows iff
 * !oversized && max(TAT, now) + need - now <= tau, then writes max(TAT, now) + charge; a refusal reports
 * max(TAT, now) + need as the requested TAT (so Retry-After is the wait until `need` units are back).
 */
export function rateStepInputs(limit: Extract<AdmissionLimit, { kind: 'rate' }>): {
  charge: number;
  need: number;
  tau: number;
  oversized: boolean;
} {
  const needUnits = unitsNeeded(limit);
  return {
    charge: gcraCharge(limit.cost, limit.limit, limit.windowMs),
    need: gcraCharge(needUnits, limit.limit, limit.windowMs),
    tau: gcraTolerance(limit.windowMs),
    oversized: needUnits > limit.limit,
  };
}

function unitsNeeded(limit: Extract<AdmissionLimit, { kind: 'rate' }>): number {
  return limit.need ?? limit.cost;
}

/** The outcome of a rate limit from its step (an oversized request is reported as `gcraOversized`). */
export function rateOutcome(
  limit: Extract<AdmissionLimit, { kind: 'rate' }>,
  step: GcraStep,
  now: number,
): LimitOutcome {
  const decision =
    unitsNeeded(limit) > limit.limit
      ? gcraOversized(step.tat, limit.limit, limit.windowMs, now)
      : gcraDecision(step, limit.limit, limit.windowMs, now);
  return { kind: 'rate', decision };
}
