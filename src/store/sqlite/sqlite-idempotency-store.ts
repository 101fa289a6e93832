import type * as BetterSqlite3 from './database.js'; // our node:sqlite adapter, under the name this file used
import type { IdempotencyBegin, IdempotencyClaim, IdempotencyStore, StoredResponse } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/**
 * The longest `retryAfterMs` hint `begin` gives for a call in progress. The lease is a crash-recovery bound (the
 * call's whole time budget), not an estimate of when the answer will be ready: most calls finish long before it,
 * so a client told "retry when the lease ends" would wait minutes for an answer stored seconds later. Capped, a
 * client checks back at least every 5 s. The Redis store uses the same value (the contract suite checks both).
 */
const IDEMPOTENCY_RETRY_HINT_CAP_MS = 5_000;

/** Expired rows are deleted every PURGE_EVERY calls of `begin`, at most PURGE_BATCH at a time. */
const PURGE_EVERY = 512;
const PURGE_BATCH = 1_000;

interface Row {
  fingerprint: string;
  state: 'in_progress' | 'completed';
  lease_expires_ms: number;
  response: string | null;
  expires_ms: number;
}

interface CompleteParams {
  scope: string;
  key: string;
  fingerprint: string;
  response: string;
  expires: number;
}

interface ClaimParams {
  scope: string;
  key: string;
  fingerprint: string;
  now: number;
  leaseEnd: number;
}

/**
 * Idempotency keys in the embedded SQLite store (table `idempotency_keys`, migration 3). Every operation is one
 * write of the database's group-commit batcher, inside a BEGIN IMMEDIATE transaction that takes the write lock
 * before it reads: of N callers in any number of
 * processes sharing the file, exactly one sees the key free and claims it (the others wait up to busy_timeout).
 * Times are integer milliseconds on the caller's clock (`nowMs`), so tests can drive them.
 */
export class SqliteIdempotencyStore implements IdempotencyStore {
  private readonly select: BetterSqlite3.Statement<[string, string], Row>;
  private readonly claim: BetterSqlite3.Statement<[ClaimParams]>;
  private readonly finish: BetterSqlite3.Statement<[CompleteParams]>;
  private readonly release: BetterSqlite3.Statement<[string, string, string]>;
  private readonly purge: BetterSqlite3.Statement<[number, number]>;
  private readonly extendLease: BetterSqlite3.Statement<[number, number, string, string, string]>;
  private readonly batcher: SqliteWriteBatcher;
  private calls = 0;

  constructor(db: BetterSqlite3.Database) {
    this.select = db.prepare<[string, string], Row>(
      'SELECT fingerprint, state, lease_expires_ms, response, expires_ms FROM idempotency_keys WHERE scope = ? AND key = ?',
    );
    // An expired or abandoned-by-crash row is overwritten in place: the claimant starts from a clean row.
    this.claim = db.prepare<[ClaimParams]>(
      `INSERT INTO idempotency_keys (scope, key, fingerprint, state, lease_expires_ms, response, expires_ms)
       VALUES (@scope, @key, @fingerprint, 'in_progress', @leaseEnd, NULL, @leaseEnd)
       ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, state = 'in_progress',
         lease_expires_ms = excluded.lease_expires_ms, response = NULL, expires_ms = excluded.expires_ms`,
    );
    this.finish = db.prepare<[CompleteParams]>(
      `UPDATE idempotency_keys SET state = 'completed', response = @response, expires_ms = @expires
       WHERE scope = @scope AND key = @key AND fingerprint = @fingerprint AND state = 'in_progress'`,
    );
    this.release = db.prepare<[string, string, string]>(
      "DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND fingerprint = ? AND state = 'in_progress'",
    );
    // DELETE ... LIMIT needs a compile-time option, hence the rowid subquery (uses idempotency_keys_expiry).
    this.purge = db.prepare<[number, number]>(
      'DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE expires_ms <= ? LIMIT ?)',
    );

    this.extendLease = db.prepare(
      `UPDATE idempotency_keys SET lease_expires_ms = ?, expires_ms = MAX(expires_ms, ?)
       WHERE scope = ? AND key = ? AND fingerprint = ? AND state = 'in_progress'`,
    );
    this.batcher = writeBatcherFor(db);
  }

  /** Inside a write transaction (the batcher's), so the read and the claim cannot interleave with another's. */
  private beginNow(p: ClaimParams): IdempotencyBegin {
    const row = this.select.get(p.scope, p.key);
    if (
      row === undefined ||
      row.expires_ms <= p.now ||
      (row.state === 'in_progress' && row.lease_expires_ms <= p.now)
    ) {
      this.claim.run(p);
      return { state: 'claimed' };
    }
    if (row.fingerprint !== p.fingerprint) return { state: 'mismatch' };
    if (row.state === 'in_progress') {
      return {
        state: 'in_progress',
        retryAfterMs: Math.min(IDEMPOTENCY_RETRY_HINT_CAP_MS, Math.max(1, row.lease_expires_ms - p.now)),
      };
    }
    return { state: 'completed', response: parseResponse(row.response) };
  }

  // The methods are async so that every failure (a closed database, SQLITE_BUSY past busy_timeout, a bad
  // argument) is a rejection, as the contract's promises promise, not a synchronous throw.

  async begin(
    scope: string,
    key: string,
    fingerprint: string,
    leaseMs: number,
    nowMs = Date.now(),
  ): Promise<IdempotencyBegin> {
    const now = wholeMs('nowMs', nowMs);
    const leaseEnd = now + durationMs('leaseMs', leaseMs);
    const result = await this.batcher.run(() => this.beginNow({ scope, key, fingerprint, now, leaseEnd }));
    if (++this.calls % PURGE_EVERY === 0) this.purgeExpired(now);
    return result;
  }

  /**
   * Stores the answer only while the row is still this claimant's (same fingerprint, in progress). When the row is
   * gone (expired and purged) or was taken over by a newer claimant after this one's lease ran out, the newer
   * claimant owns the key: overwriting its row would replay an answer to a request it never saw, so nothing is
   * written.
   */
  async complete(
    { scope, key, fingerprint }: IdempotencyClaim,
    response: StoredResponse,
    ttlMs: number,
    nowMs = Date.now(),
  ): Promise<void> {
    const expires = wholeMs('nowMs', nowMs) + durationMs('ttlMs', ttlMs);
    const params = { scope, key, fingerprint, response: JSON.stringify(response), expires };
    await this.batcher.run(() => this.finish.run(params));
  }

  /** Frees a key whose call failed, so a retry runs again; never deletes a completed answer or another's claim. */
  async abandon(scope: string, key: string, fingerprint: string): Promise<void> {
    await this.batcher.run(() => this.release.run(scope, key, fingerprint));
  }

  async renew(claims: ReadonlyArray<IdempotencyClaim>, leaseMs: number, nowMs = Date.now()): Promise<void> {
    const leaseEnd = wholeMs('nowMs', nowMs) + durationMs('leaseMs', leaseMs);
    if (claims.length === 0) return;
    await this.batcher.run(() => {
      for (const c of claims) this.extendLease.run(leaseEnd, leaseEnd, c.scope, c.key, c.fingerprint);
    });
  }

  /** Deletes up to `limit` rows past their expiry; returns how many. Called by `begin` every few hundred calls. */
  purgeExpired(nowMs = Date.now(), limit = PURGE_BATCH): number {
    return this.purge.run(wholeMs('nowMs', nowMs), limit).changes;
  }
}

function parseResponse(text: string | null): StoredResponse {
  // Only `complete` writes this column, from a StoredResponse; a completed row without it means a damaged database.
  if (text === null) throw new Error('idempotency_keys: a completed row has no response');
  return JSON.parse(text) as StoredResponse;
}
