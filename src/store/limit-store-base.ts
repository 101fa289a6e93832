import type {
  AdmissionLimit,
  AdmissionResult,
  AdmissionSettlement,
  LimitStore,
  RateLimitDecision,
} from './store-contract.js';
import { checkLease, checkRateLimit } from './gcra.js';

/**
 * The single-limit operations of a LimitStore, each a batch of one: a backend implements only `admit` and
 * `settle`, so the contract suite's GCRA and lease tests exercise exactly the code the gateway runs.
 */
export abstract class LimitStoreBase implements LimitStore {
  abstract admit(limits: readonly AdmissionLimit[], token: string, nowMs?: number): Promise<AdmissionResult>;
  abstract settle(items: readonly AdmissionSettlement[], token: string, nowMs?: number): Promise<void>;

  async consume(
    key: string,
    limit: number,
    windowMs: number,
    cost: number,
    nowMs?: number,
  ): Promise<RateLimitDecision> {
    checkRateLimit(limit, windowMs, cost, 'cost');
    const { outcomes } = await this.admit([{ kind: 'rate', key, limit, windowMs, cost }], '', nowMs);
    const outcome = outcomes[0];
    if (outcome?.kind !== 'rate') throw new Error('a rate limit was answered with another kind of outcome');
    return outcome.decision;
  }

  async adjust(key: string, limit: number, windowMs: number, delta: number, nowMs?: number): Promise<void> {
    checkRateLimit(limit, windowMs, delta, 'delta');
    await this.settle([{ kind: 'rate', key, limit, windowMs, delta }], '', nowMs);
  }

  async acquire(
    key: string,
    token: string,
    max: number,
    leaseMs: number,
    nowMs?: number,
  ): Promise<{ acquired: boolean; inFlight: number }> {
    checkLease(max, leaseMs);
    const { outcomes } = await this.admit([{ kind: 'concurrency', key, max, leaseMs }], token, nowMs);
    const outcome = outcomes[0];
    if (outcome?.kind !== 'concurrency')
      throw new Error('a concurrency limit was answered with another kind of outcome');
    return { acquired: outcome.acquired, inFlight: outcome.inFlight };
  }

  async release(key: string, token: string): Promise<void> {
    await this.settle([{ kind: 'concurrency', key }], token);
  }
}
