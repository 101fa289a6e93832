import type { IdempotencyBegin, IdempotencyClaim, IdempotencyStore, StoredResponse } from './store-contract.js';
import { durationMs, wholeMs } from './time-arguments.js';

/**
 * The time arguments of an IdempotencyStore, checked and turned into the times a backend stores, once for every
 * backend: a backend implements each operation on whole milliseconds on the caller's clock (`nowMs`, so tests can
 * drive them). The methods are async, so a bad argument is a rejection, as the contract's promises promise.
 */
export abstract class IdempotencyStoreBase implements IdempotencyStore {
  /** Claims the key for a lease of `leaseMs` from `now`, or says who holds it. */
  protected abstract claimLease(key: IdempotencyClaim, now: number, leaseMs: number): Promise<IdempotencyBegin>;
  /** Stores the answer, kept until `expires` (`now` + `ttlMs`), while the key is still this claimant's. */
  protected abstract storeAnswer(
    key: IdempotencyClaim,
    response: string,
    expires: number,
    ttlMs: number,
  ): Promise<void>;
  /** Extends the claims still running to `leaseEnd`. */
  protected abstract extendLeases(
    claims: ReadonlyArray<IdempotencyClaim>,
    leaseEnd: number,
    now: number,
  ): Promise<void>;
  abstract abandon(scope: string, key: string, fingerprint: string): Promise<void>;

  async begin(
    scope: string,
    key: string,
    fingerprint: string,
    leaseMs: number,
    nowMs = Date.now(),
  ): Promise<IdempotencyBegin> {
    const now = wholeMs('nowMs', nowMs);
    return this.claimLease({ scope, key, fingerprint }, now, durationMs('leaseMs', leaseMs));
  }

  /**
   * Stores the answer only while the key is still this claimant's (same fingerprint, in progress). When the key is
   * gone (expired) or was taken over by a newer claimant after this one's lease ran out, the newer claimant owns
   * it: overwriting would replay an answer to a request it never saw, so nothing is written.
   */
  async complete(claim: IdempotencyClaim, response: StoredResponse, ttlMs: number, nowMs = Date.now()): Promise<void> {
    const now = wholeMs('nowMs', nowMs);
    const ttl = durationMs('ttlMs', ttlMs);
    const { scope, key, fingerprint } = claim;
    await this.storeAnswer({ scope, key, fingerprint }, JSON.stringify(response), now + ttl, ttl);
  }

  async renew(claims: ReadonlyArray<IdempotencyClaim>, leaseMs: number, nowMs = Date.now()): Promise<void> {
    const now = wholeMs('nowMs', nowMs);
    await this.extendLeases(claims, now + durationMs('leaseMs', leaseMs), now);
  }
}
