import { USAGE_ANOMALIES, type Usage, type UsageAnomaly } from './contract.js';

/**
 * The most tokens one figure of one call may count: 100 million. Ten times the largest context window offered
 * today (10 M tokens), so no honest answer comes near it, and small enough that prompt + completion (2e8) fits a
 * 32-bit INTEGER column (PostgreSQL's `integer`: 2^31 - 1) and years of records at the bound still add up exactly
 * in a double. A figure past it counts as the bound, so a budget is charged the most it can be, never less.
 */
export const MAX_USAGE_TOKENS = 100_000_000;

/** A figure the gateway can count as it is: a whole number from 0 to MAX_USAGE_TOKENS. */
function isSane(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_USAGE_TOKENS;
}

/**
 * THE check of a token count an upstream reported, wherever it enters the gateway (every provider's reading of
 * usage, the core before limits, budgets, prices and records, the surfaces before an answer shows it). Returns
 * the count to use: absent (undefined, null) is 0; not a number is 0; below zero is 0; above MAX_USAGE_TOKENS
 * (Infinity and 1e300 included) is MAX_USAGE_TOKENS; a fraction is rounded up (never fewer tokens than the
 * upstream said). Each correction's kind is added to `found` (once), which flags the request's usage record.
 */
export function saneTokens(value: unknown, found?: UsageAnomaly[]): number {
  if (isSane(value)) return value;
  if (value === undefined || value === null) return 0;
  let kind: UsageAnomaly;
  let sane: number;
  if (typeof value !== 'number' || Number.isNaN(value)) [kind, sane] = ['not_a_number', 0];
  else if (value < 0) [kind, sane] = ['negative', 0];
  else if (value > MAX_USAGE_TOKENS) [kind, sane] = ['too_large', MAX_USAGE_TOKENS];
  else [kind, sane] = ['fractional', Math.min(MAX_USAGE_TOKENS, Math.ceil(value))];
  if (found && !found.includes(kind)) found.push(kind);
  return sane;
}

/**
 * Corrects, in place, the figures `names` of an upstream's own usage object (those present), so that an answer
 * passed on as the upstream wrote it shows what the gateway counted. Returns the anomalies found; undefined when
 * every figure was already sane (the object is untouched, nothing allocated).
 */
export function correctInPlace(usage: Record<string, unknown>, names: readonly string[]): UsageAnomaly[] | undefined {
  let found: UsageAnomaly[] | undefined;
  for (const name of names) {
    const value = usage[name];
    if (value === undefined || value === null || isSane(value)) continue;
    found ??= [];
    usage[name] = saneTokens(value, found);
  }
  return found;
}

/** Adds anomalies to a usage (merged with any it carries already); none: the usage as it is. */
export function withAnomalies<T extends Usage>(usage: T, found: readonly UsageAnomaly[] | undefined): T {
  if (!found || found.length === 0) return usage;
  const had = usage[USAGE_ANOMALIES];
  usage[USAGE_ANOMALIES] = had ? [...had, ...found.filter((kind) => !had.includes(kind))] : [...found];
  return usage;
}

/** What was corrected in a usage; undefined when nothing was. */
export function anomaliesOf(usage: Usage | null | undefined): readonly UsageAnomaly[] | undefined {
  return usage?.[USAGE_ANOMALIES];
}

/**
 * The gateway's usage from figures already passed through saneTokens (a prompt may be the sum of several, e.g.
 * Anthropic's input and cache tokens: the sum is bounded too). The total is the upstream's (bounded) when it
 * reported a larger one than prompt + completion (Gemini counts tool-use prompts there), else that sum.
 */
export function usageFrom(prompt: number, completion: number, total: number | undefined, found: UsageAnomaly[] | undefined): Usage {
  const p = saneTokens(prompt, found);
  const c = saneTokens(completion, found);
  return withAnomalies({ prompt_tokens: p, completion_tokens: c, total_tokens: Math.max(saneTokens(total, found), p + c) }, found);
}

/** The names of the three counts of a usage object: OpenAI's chat and embeddings, OpenAI's Responses API. */
export type CountNames = readonly [prompt: string, completion: string, total: string];
export const CHAT_COUNTS: CountNames = ['prompt_tokens', 'completion_tokens', 'total_tokens'];
export const RESPONSES_COUNTS: CountNames = ['input_tokens', 'output_tokens', 'total_tokens'];

/**
 * Corrects an upstream's usage object in place, so that an answer passed on as the upstream wrote it shows what
 * the gateway counted: its counts `names` when out of range, and then the total (at least prompt + completion).
 * The object is flagged with what was found; undefined (the object untouched, nothing allocated) when all were sane.
 */
export function correctCounts(usage: Record<string, unknown>, names: CountNames): readonly UsageAnomaly[] | undefined {
  const found = correctInPlace(usage, names);
  if (!found) return undefined;
  const [prompt, completion, total] = names;
  const counted = usageFrom(saneTokens(usage[prompt]), saneTokens(usage[completion]), saneTokens(usage[total]), found);
  if (usage[prompt] != null) usage[prompt] = counted.prompt_tokens;
  if (usage[completion] != null) usage[completion] = counted.completion_tokens;
  if (usage[total] != null) usage[total] = counted.total_tokens;
  withAnomalies(usage as unknown as Usage, found);
  return found;
}

/**
 * The usage of an upstream's usage object with counts `names` (corrected in place by correctCounts: see
 * `anomaliesOf` to know whether it was). Undefined when it is no object or carries neither count.
 */
export function countsOf(value: unknown, names: CountNames = CHAT_COUNTS): Usage | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const usage = value as Record<string, unknown>;
  const [prompt, completion, total] = names;
  if (usage[prompt] == null && usage[completion] == null) return undefined;
  const found = correctCounts(usage, names);
  return usageFrom(saneTokens(usage[prompt]), saneTokens(usage[completion]), saneTokens(usage[total]), found && [...found]);
}

/**
 * The gate every usage passes before it reaches limits, budgets, prices, records or an answer the gateway builds,
 * whichever provider read it: the same object when its figures are sane (the common case: nothing allocated),
 * else a copy with them corrected and flagged. A provider that reads its figures through saneTokens never trips
 * it; one that did not is caught here.
 */
export function checkedUsage(usage: Usage): Usage {
  const { prompt_tokens: p, completion_tokens: c, total_tokens: t } = usage;
  if (isSane(p) && isSane(c) && typeof t === 'number' && Number.isInteger(t) && t >= p + c && t <= Math.max(MAX_USAGE_TOKENS, p + c)) return usage;
  const found: UsageAnomaly[] = [];
  const prompt = saneTokens(p, found);
  const completion = saneTokens(c, found);
  const total = Math.max(saneTokens(t, found), prompt + completion);
  return withAnomalies({ ...usage, prompt_tokens: prompt, completion_tokens: completion, total_tokens: total }, found);
}
