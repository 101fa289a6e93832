import type { Usage } from '../../providers/provider-contract.js';
import { roundUsd } from '../../store/usage-sql.js';

/**
 * A call's usage with its cost in USD and what prompt caching saved on it (`cache_savings_usd`: negative when cache
 * writes cost more than cache reads saved), both present when the model has prices.
 */
export type PricedUsage = Usage & { cost_usd?: number; cache_savings_usd?: number };

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

/**
 * What prompt caching saved on a call in USD (rounded like a cost): what its cache reads and writes would have cost
 * at the input price, minus what they cost at their own prices — cache reads × (input − cache-read price) − 5-minute
 * writes × (write − input price) − 1-hour writes × (1-hour write − input price). Negative when the writes' premium is
 * more than the reads saved (a cache written and never read). Priced when the call is, at that call's prices, so a
 * later price change does not rewrite history. 0 without cache tokens or without cache prices (docs/usage.md).
 */
export function cacheSavingsUsd(usage: Usage, pricing: Pricing): number {
  const read = usage.cache_read_tokens ?? 0;
  const write = usage.cache_write_tokens ?? 0;
  if (read === 0 && write === 0) return 0;
  const write1h = Math.min(usage.cache_write_1h_tokens ?? 0, write);
  const input = pricing.inputPerMillion;
  const writePrice = pricing.cacheWritePerMillion ?? input;
  const micros =
    read * (input - (pricing.cacheReadPerMillion ?? input)) -
    (write - write1h) * (writePrice - input) -
    write1h * ((pricing.cacheWrite1hPerMillion ?? writePrice) - input);
  // `+ 0`: a saving that rounds to nothing is 0, not -0 (which JSON shows as 0 but a comparison does not).
  return roundUsd(micros / 1_000_000) + 0;
}

/** The dearest price per token a call's tokens can have (what a cost budget charges up front per estimated token). */
export function dearestPerMillion(pricing: Pricing): number {
  return Math.max(
    pricing.inputPerMillion,
    pricing.outputPerMillion,
    pricing.cacheReadPerMillion ?? 0,
    pricing.cacheWritePerMillion ?? 0,
    pricing.cacheWrite1hPerMillion ?? 0,
  );
}
