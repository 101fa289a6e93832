import type { PricedUsage } from '../../core/models/pricing.js';
import type { Usage } from '../../providers/provider-contract.js';
import { roundUsd } from '../../store/usage-sql.js';

const PARTS = ['cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens'] as const;

/** The usage of several model turns as one: every count added, each part kept where some turn had it. */
export function sumUsage<T extends Usage>(usages: ReadonlyArray<T | undefined>): T | undefined {
  const present = usages.filter((usage): usage is T => usage !== undefined);
  if (present.length <= 1) return present[0];
  const sum: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const usage of present) {
    sum.prompt_tokens += usage.prompt_tokens;
    sum.completion_tokens += usage.completion_tokens;
    sum.total_tokens += usage.total_tokens;
    for (const part of PARTS) if (usage[part] !== undefined) sum[part] = (sum[part] ?? 0) + (usage[part] as number);
  }
  return sum as T;
}

/** Priced usages added, their costs too (where any turn was priced). */
export function sumPriced(usages: ReadonlyArray<PricedUsage | undefined>): PricedUsage | undefined {
  const sum = sumUsage(usages);
  const present = usages.filter((usage): usage is PricedUsage => usage !== undefined);
  if (sum === undefined || present.length <= 1) return sum;
  const priced: PricedUsage = { ...sum };
  if (present.some((usage) => usage.cost_usd !== undefined))
    priced.cost_usd = roundUsd(present.reduce((total, usage) => total + (usage.cost_usd ?? 0), 0));
  if (present.some((usage) => usage.cache_savings_usd !== undefined))
    priced.cache_savings_usd = roundUsd(present.reduce((total, usage) => total + (usage.cache_savings_usd ?? 0), 0));
  return priced;
}
