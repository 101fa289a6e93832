import type BetterSqlite3 from 'better-sqlite3';
import type { ConcurrencyLimiter, RateLimitDecision, RateLimiter } from '../contract.js';

// ---------------------------------------------------------------------------------------------------------------
// GCRA arithmetic, shared with the Redis limiter (it imports only these pure functions, never the SQLite driver).
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
  if (!(Number.isFinite(windowMs) && windowMs >= 1)) throw new RangeError(`windowMs must be at least 1, got ${windowMs}`);
  if (!Number.isFinite(units) || (what === 'cost' && units < 0)) throw new RangeError(`invalid ${what}: ${units}`);
}

export function checkLease(max: number, leaseMs: number): void {
  if (!(Number.isFinite(max) && max >= 0)) throw new RangeError(`max must be a non-negative number, got ${max}`);
  if (!(Number.isFinite(leaseMs) && leaseMs > 0)) throw new RangeError(`leaseMs must be positive, got ${leaseMs}`);
}

/** The TAT shift for `units` (negative gives back), in whole ms: see "Rounding" above. Symmetric in sign. */
export function gcraCharge(units: number, limit: number, windowMs: number): number {
  if (units === 0) return 0;
  // units * windowMs / limit rather than units * T: when the exact result is whole, this is exact in floating point.
  const ms = Math.max(1, Math.floor((Math.abs(units) * windowMs) / limit));
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
    return { allowed: false, limit, remaining: 0, resetMs, retryAfterMs: Math.max(1, step.requestedTat - now - gcraTolerance(windowMs)) };
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

// ---------------------------------------------------------------------------------------------------------------

/** Rows of expired state removed per purge, and how many calls pass between purges. */
const PURGE_BATCH = 500;
const PURGE_EVERY = 1000;

/**
 * Rate limits and in-flight leases in the embedded SQLite file (tables from migration 2). Each read-modify-write
 * runs in one BEGIN IMMEDIATE transaction: the write lock is taken before the read, so processes sharing the file
 * (several workers, busy_timeout set by the store) serialise per decision and the limit holds across them exactly.
 */
export class SqliteRateLimiter implements RateLimiter, ConcurrencyLimiter {
  private readonly consumeStep: BetterSqlite3.Transaction<(key: string, charge: number, tau: number, now: number) => GcraStep>;
  private readonly adjustStep: BetterSqlite3.Transaction<(key: string, charge: number, now: number) => void>;
  private readonly acquireStep: BetterSqlite3.Transaction<
    (key: string, token: string, max: number, expires: number, now: number) => { acquired: boolean; inFlight: number }
  >;
  private readonly readTat: BetterSqlite3.Statement<[string], { tat_ms: number }>;
  private readonly deleteLease: BetterSqlite3.Statement<[string, string]>;
  private readonly purgeRates: BetterSqlite3.Statement<[number, number]>;
  private readonly purgeLeases: BetterSqlite3.Statement<[number, number]>;
  private callsSincePurge = 0;

  constructor(db: BetterSqlite3.Database) {
    this.readTat = db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?');
    const writeTat = db.prepare<[string, number, number]>(
      `INSERT INTO rate_limits (key, tat_ms, expires_ms) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET tat_ms = excluded.tat_ms, expires_ms = excluded.expires_ms`,
    );
    const deleteTat = db.prepare<[string]>('DELETE FROM rate_limits WHERE key = ?');
    const dropExpired = db.prepare<[string, number]>('DELETE FROM concurrency_leases WHERE key = ? AND expires_ms <= ?');
    const countLeases = db.prepare<[string, string], { held: number; mine: number }>(
      'SELECT COUNT(*) AS held, COUNT(CASE WHEN token = ? THEN 1 END) AS mine FROM concurrency_leases WHERE key = ?',
    );
    const writeLease = db.prepare<[string, string, number]>(
      `INSERT INTO concurrency_leases (key, token, expires_ms) VALUES (?, ?, ?)
       ON CONFLICT (key, token) DO UPDATE SET expires_ms = excluded.expires_ms`,
    );
    this.deleteLease = db.prepare('DELETE FROM concurrency_leases WHERE key = ? AND token = ?');
    // Bounded deletes (a rowid subquery, as SQLite lacks DELETE ... LIMIT by default) so a purge never holds the
    // write lock for long. A row whose TAT or lease end has passed means the same as no row.
    this.purgeRates = db.prepare(
      'DELETE FROM rate_limits WHERE rowid IN (SELECT rowid FROM rate_limits WHERE expires_ms <= ? LIMIT ?)',
    );
    this.purgeLeases = db.prepare(
      'DELETE FROM concurrency_leases WHERE rowid IN (SELECT rowid FROM concurrency_leases WHERE expires_ms <= ? LIMIT ?)',
    );

    this.consumeStep = db.transaction((key: string, charge: number, tau: number, now: number): GcraStep => {
      const tat = Math.max(this.readTat.get(key)?.tat_ms ?? now, now);
      const requestedTat = tat + charge;
      if (requestedTat - now > tau) return { allowed: false, tat, requestedTat };
      // The row is pointless once its TAT has passed: it expires then.
      if (requestedTat > now) writeTat.run(key, requestedTat, requestedTat);
      return { allowed: true, tat: requestedTat, requestedTat };
    });
    this.adjustStep = db.transaction((key: string, charge: number, now: number): void => {
      // Never below `now`: giving units back cannot fill the bucket beyond full.
      const tat = Math.max(Math.max(this.readTat.get(key)?.tat_ms ?? now, now) + charge, now);
      if (tat > now) writeTat.run(key, tat, tat);
      else deleteTat.run(key);
    });
    this.acquireStep = db.transaction((key: string, token: string, max: number, expires: number, now: number) => {
      dropExpired.run(key, now);
      const { held, mine } = countLeases.get(token, key) ?? { held: 0, mine: 0 };
      // The same token asking again renews its lease rather than taking a second slot.
      if (mine === 0 && held >= max) return { acquired: false, inFlight: held };
      writeLease.run(key, token, expires);
      return { acquired: true, inFlight: mine === 0 ? held + 1 : held };
    });
  }

  async consume(key: string, limit: number, windowMs: number, cost: number, nowMs?: number): Promise<RateLimitDecision> {
    checkRateLimit(limit, windowMs, cost, 'cost');
    const now = gcraNow(nowMs);
    this.maybePurge(now);
    if (cost > limit) return gcraOversized(this.readTat.get(key)?.tat_ms ?? now, limit, windowMs, now);
    const step = this.consumeStep.immediate(key, gcraCharge(cost, limit, windowMs), gcraTolerance(windowMs), now);
    return gcraDecision(step, limit, windowMs, now);
  }

  async adjust(key: string, limit: number, windowMs: number, delta: number, nowMs?: number): Promise<void> {
    checkRateLimit(limit, windowMs, delta, 'delta');
    const now = gcraNow(nowMs);
    this.maybePurge(now);
    const charge = gcraCharge(delta, limit, windowMs);
    if (charge !== 0) this.adjustStep.immediate(key, charge, now);
  }

  async acquire(key: string, token: string, max: number, leaseMs: number, nowMs?: number): Promise<{ acquired: boolean; inFlight: number }> {
    checkLease(max, leaseMs);
    const now = gcraNow(nowMs);
    this.maybePurge(now);
    return this.acquireStep.immediate(key, token, max, now + Math.ceil(leaseMs), now);
  }

  async release(key: string, token: string): Promise<void> {
    this.deleteLease.run(key, token);
  }

  /** Every PURGE_EVERY calls, drop a batch of expired rows (keys nobody used again), never on every call. */
  private maybePurge(now: number): void {
    if (++this.callsSincePurge < PURGE_EVERY) return;
    this.callsSincePurge = 0;
    try {
      this.purgeRates.run(now, PURGE_BATCH);
      this.purgeLeases.run(now, PURGE_BATCH);
    } catch {
      // Housekeeping must not fail a decision (a file busy past busy_timeout): the next purge catches up.
    }
  }
}
