import type { Usage } from '../providers/contract.js';
import { roundUsd } from '../store/usage-sql.js';

/** A call's usage with its cost in USD, when the model has prices. */
export type PricedUsage = Usage & { cost_usd?: number };

/**
 * A model's prices in USD per million tokens. A cache price left out is the price the same tokens had before
 * cache prices existed, so a cost is never less than the configured prices say: cache reads and cache writes at
 * the input price, 1-hour writes at the (5-minute) write price. Reasoning tokens are output (no price of their own).
 */
export interface Pricing {
  inputPerMillion: number;
  outputPerMillion: number;
  cacheReadPerMillion?: number | undefined;
  cacheWritePerMillion?: number | undefined;
  cacheWrite1hPerMillion?: number | undefined;
}

/**
 * The cost of a call in micro-USD (unrounded) as providers bill it: the uncached input at the input price, cache
 * reads, 5-minute and 1-hour cache writes each at their own price, the completion (reasoning included) at the
 * output price. The parts are bounded by the prompt (usage-figures.ts withParts), so no token is billed twice.
 */
export function costMicros(usage: Usage, pricing: Pricing): number {
  const read = usage.cache_read_tokens ?? 0;
  const write = usage.cache_write_tokens ?? 0;
  const write1h = Math.min(usage.cache_write_1h_tokens ?? 0, write);
  const uncached = Math.max(0, usage.prompt_tokens - read - write);
  const writePrice = pricing.cacheWritePerMillion ?? pricing.inputPerMillion;
  return (
    uncached * pricing.inputPerMillion +
    read * (pricing.cacheReadPerMillion ?? pricing.inputPerMillion) +
    (write - write1h) * writePrice +
    write1h * (pricing.cacheWrite1hPerMillion ?? writePrice) +
    usage.completion_tokens * pricing.outputPerMillion
  );
}

/** The cost of a call in USD from its normalised usage and the model's prices (rounded to a millionth of a cent). */
export function costUsd(usage: Usage, pricing: Pricing): number {
  return roundUsd(costMicros(usage, pricing) / 1_000_000);
}

/** The dearest price per token a call's tokens can have (what a cost budget charges up front per estimated token). */
export function dearestPerMillion(pricing: Pricing): number {
  return Math.max(pricing.inputPerMillion, pricing.outputPerMillion, pricing.cacheReadPerMillion ?? 0, pricing.cacheWritePerMillion ?? 0, pricing.cacheWrite1hPerMillion ?? 0);
}
