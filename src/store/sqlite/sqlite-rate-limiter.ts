import type * as BetterSqlite3 from './database.js'; // our node:sqlite adapter, under the name this file used
import type { AdmissionLimit, AdmissionResult, AdmissionSettlement, LimitOutcome } from '../store-contract.js';
import {
  checkAdmissionLimit,
  checkRateLimit,
  gcraCharge,
  gcraMoved,
  gcraNow,
  gcraStoredTat,
  rateOutcome,
  rateStepInputs,
} from '../gcra.js';
import { LimitStoreBase } from '../limit-store-base.js';
import { isSqliteOutage, outageAware } from '../store-outage.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/** Rows of expired state removed per purge, and how many calls pass between purges. */
const PURGE_BATCH = 500;
const PURGE_EVERY = 1000;

/**
 * Rate limits and in-flight leases in the embedded SQLite file (tables from migration 2). An admission (every
 * limit of a request) or a settlement is one write of the database's group-commit batcher: it runs inside a
 * BEGIN IMMEDIATE transaction, which takes the write lock before it reads, so processes sharing the file (several
 * workers, busy_timeout set by the store) serialise per decision and the limits hold across them exactly.
 */
export class SqliteRateLimiter extends LimitStoreBase {
  private readonly batcher: SqliteWriteBatcher;
  private readonly readTat: BetterSqlite3.Statement<[string], { tat_ms: number }>;
  private readonly writeTat: BetterSqlite3.Statement<[string, number, number]>;
  private readonly deleteTat: BetterSqlite3.Statement<[string]>;
  private readonly dropExpired: BetterSqlite3.Statement<[string, number]>;
  private readonly countLeases: BetterSqlite3.Statement<[string, string], { held: number; mine: number }>;
  private readonly writeLease: BetterSqlite3.Statement<[string, string, number]>;
  private readonly deleteLease: BetterSqlite3.Statement<[string, string]>;
  private readonly purgeRates: BetterSqlite3.Statement<[number, number]>;
  private readonly purgeLeases: BetterSqlite3.Statement<[number, number]>;
  private callsSincePurge = 0;

  constructor(db: BetterSqlite3.Database) {
    super();
    this.batcher = writeBatcherFor(db);
    // Read through MIN(): a TAT past 2^53 (written before gcra.ts bounded it) would make node:sqlite
    // throw on the read ("too large to be represented as a JavaScript number"); clamped, it reads as a value past
    // the ceiling, which gcraStoredTat repairs and the step writes back.
    this.readTat = db.prepare('SELECT MIN(tat_ms, 9007199254740991) AS tat_ms FROM rate_limits WHERE key = ?');
    this.writeTat = db.prepare(
      `INSERT INTO rate_limits (key, tat_ms, expires_ms) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET tat_ms = excluded.tat_ms, expires_ms = excluded.expires_ms`,
    );
    this.deleteTat = db.prepare('DELETE FROM rate_limits WHERE key = ?');
    this.dropExpired = db.prepare('DELETE FROM concurrency_leases WHERE key = ? AND expires_ms <= ?');
    this.countLeases = db.prepare(
      'SELECT COUNT(*) AS held, COUNT(CASE WHEN token = ? THEN 1 END) AS mine FROM concurrency_leases WHERE key = ?',
    );
    this.writeLease = db.prepare(
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
  }

  async admit(limits: readonly AdmissionLimit[], token: string, nowMs?: number): Promise<AdmissionResult> {
    limits.forEach(checkAdmissionLimit);
    const now = gcraNow(nowMs);
    this.maybePurge(now);
    return outageAware('sqlite', isSqliteOutage, () => this.batcher.run(() => this.admitNow(limits, token, now)));
  }

  async settle(items: readonly AdmissionSettlement[], token: string, nowMs?: number): Promise<void> {
    for (const item of items) if (item.kind === 'rate') checkRateLimit(item.limit, item.windowMs, item.delta, 'delta');
    const now = gcraNow(nowMs);
    await outageAware('sqlite', isSqliteOutage, () => this.batcher.run(() => this.settleNow(items, token, now)));
  }

  /** Inside a transaction: decide every limit first, write only when all allow. */
  private admitNow(limits: readonly AdmissionLimit[], token: string, now: number): AdmissionResult {
    const outcomes: LimitOutcome[] = [];
    const writes: Array<() => void> = [];
    const taking = new Map<string, number>(); // slots of a key taken by earlier items of this admission
    let admitted = true;
    for (const limit of limits) {
      if (limit.kind === 'rate') {
        const { charge, need, tau, oversized } = rateStepInputs(limit);
        const tat = this.storedTat(limit.key, now, limit.windowMs);
        const allowed = !oversized && tat + need - now <= tau;
        const requestedTat = allowed ? gcraMoved(tat, charge, now, limit.windowMs) : tat + need;
        outcomes.push(rateOutcome(limit, { allowed, tat: allowed ? requestedTat : tat, requestedTat }, now));
        // The row is pointless once its TAT has passed: it expires then.
        if (allowed && requestedTat > now) writes.push(() => this.writeTat.run(limit.key, requestedTat, requestedTat));
        admitted &&= allowed;
      } else {
        const holder = limit.token ?? token;
        this.dropExpired.run(limit.key, now);
        const counted = this.countLeases.get(holder, limit.key) ?? { held: 0, mine: 0 };
        const held = counted.held + (taking.get(limit.key) ?? 0);
        const mine = counted.mine;
        // The same token asking again renews its lease rather than taking a second slot.
        const acquired = mine > 0 || held < limit.max;
        if (acquired && mine === 0) taking.set(limit.key, (taking.get(limit.key) ?? 0) + 1);
        outcomes.push({ kind: 'concurrency', acquired, inFlight: acquired && mine === 0 ? held + 1 : held });
        if (acquired) writes.push(() => this.writeLease.run(limit.key, holder, now + Math.ceil(limit.leaseMs)));
        admitted &&= acquired;
      }
    }
    if (admitted) for (const write of writes) write();
    return { admitted, outcomes };
  }

  private settleNow(items: readonly AdmissionSettlement[], token: string, now: number): void {
    for (const item of items) {
      if (item.kind === 'concurrency') {
        this.deleteLease.run(item.key, item.token ?? token);
        continue;
      }
      const charge = gcraCharge(item.delta, item.limit, item.windowMs);
      if (charge === 0) continue;
      // Never below `now` (giving units back cannot fill the bucket beyond full), never past the ceiling.
      const tat = gcraMoved(this.storedTat(item.key, now, item.windowMs), charge, now, item.windowMs);
      if (tat > now) this.writeTat.run(item.key, tat, tat);
      else this.deleteTat.run(item.key);
    }
  }

  /** A key's TAT (now when it has none); one that cannot be read is repaired and written back at once (gcra.ts). */
  private storedTat(key: string, now: number, windowMs: number): number {
    const { tat, repaired } = gcraStoredTat(this.readTat.get(key)?.tat_ms, now, windowMs);
    if (repaired) this.writeTat.run(key, tat, tat);
    return tat;
  }

  /** Every PURGE_EVERY admissions, drop a batch of expired rows (keys nobody used again), never on every call. */
  private maybePurge(now: number): void {
    if (++this.callsSincePurge < PURGE_EVERY) return;
    this.callsSincePurge = 0;
    void this.batcher
      .run(() => {
        this.purgeRates.run(now, PURGE_BATCH);
        this.purgeLeases.run(now, PURGE_BATCH);
      })
      .catch(() => {
        // Housekeeping must not fail a decision (a file busy past busy_timeout): the next purge catches up.
      });
  }
}
