import type { Usage } from '../providers/contract.js';
import { roundUsd } from '../store/usage-sql.js';

/** A call's usage with its cost in USD, when the model has prices. */
export type PricedUsage = Usage & { cost_usd?: number };

export interface Pricing {
  inputPerMillion: number;
  outputPerMillion: number;
}

/** The cost of a call in USD from its normalised usage and the model's prices (rounded to a millionth of a cent). */
export function costUsd(usage: Usage, pricing: Pricing): number {
  const cost = (usage.prompt_tokens * pricing.inputPerMillion + usage.completion_tokens * pricing.outputPerMillion) / 1_000_000;
  return roundUsd(cost);
}
