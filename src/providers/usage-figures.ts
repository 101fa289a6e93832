import {
  USAGE_ANOMALIES,
  type ChatCompletionChunk,
  type StreamChunk,
  type Usage,
  type UsageAnomaly,
} from './provider-contract.js';
import type { JsonObject } from '../wire/json.js';
import { chatUsageOf } from './usage-shapes.js';

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
export function usageFrom(
  prompt: number,
  completion: number,
  total: number | undefined,
  found: UsageAnomaly[] | undefined,
): Usage {
  const p = saneTokens(prompt, found);
  const c = saneTokens(completion, found);
  return withAnomalies(
    { prompt_tokens: p, completion_tokens: c, total_tokens: Math.max(saneTokens(total, found), p + c) },
    found,
  );
}

/** The parts of a usage an upstream reported, each already through saneTokens (absent or 0: none). */
export interface UsageParts {
  cacheRead?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  reasoning?: number;
}

/**
 * Sets the parts on a usage, bounded by what they are parts of: reads, then writes, never more than the prompt
 * together; the 1-hour writes never more than the writes; reasoning never more than the completion. A part cut to
 * its bound flags the usage (`part_too_large`). A part of 0 is left absent (an answer with no cache shows no cache
 * fields). Returns the usage.
 */
export function withParts<T extends Usage>(usage: T, parts: UsageParts): T {
  const { cacheRead = 0, cacheWrite = 0, cacheWrite1h = 0, reasoning: thinking = 0 } = parts;
  const read = Math.min(cacheRead, usage.prompt_tokens);
  const write = Math.min(cacheWrite, usage.prompt_tokens - read);
  const write1h = Math.min(cacheWrite1h, write);
  const reasoning = Math.min(thinking, usage.completion_tokens);
  if (read > 0) usage.cache_read_tokens = read;
  if (write > 0) usage.cache_write_tokens = write;
  if (write1h > 0) usage.cache_write_1h_tokens = write1h;
  if (reasoning > 0) usage.reasoning_tokens = reasoning;
  const cut = read < cacheRead || write < cacheWrite || write1h < cacheWrite1h || reasoning < thinking;
  return cut ? withAnomalies(usage, ['part_too_large']) : usage;
}

/** A figure inside a sub-object of an upstream's usage (`prompt_tokens_details.cached_tokens`), checked. */
export function detail(usage: Record<string, unknown>, object: string, name: string, found?: UsageAnomaly[]): number {
  const inner = usage[object];
  return typeof inner === 'object' && inner !== null ? saneTokens((inner as Record<string, unknown>)[name], found) : 0;
}

/**
 * The parts of an OpenAI usage object with counts `names`: `<prompt>_details.cached_tokens` (chat's
 * `prompt_tokens_details`, Responses' `input_tokens_details`), `<prompt>_details.cache_write_tokens` (OpenRouter's
 * cache writes, and the gateway's own translated answers: usage-shapes.ts) and `<completion>_details.reasoning_tokens`.
 * DeepSeek reports its cache reads as `prompt_cache_hit_tokens` (beside `prompt_cache_miss_tokens`, which
 * `prompt_tokens` already adds them to): read when `cached_tokens` is absent.
 */
export function openAiParts(usage: Record<string, unknown>, names: CountNames, found?: UsageAnomaly[]): UsageParts {
  const [prompt, completion] = names;
  const inner = usage[`${prompt}_details`];
  const details = typeof inner === 'object' && inner !== null ? (inner as Record<string, unknown>) : undefined;
  const cached = details?.cached_tokens ?? usage.prompt_cache_hit_tokens;
  return {
    cacheRead: saneTokens(cached, found),
    cacheWrite: details === undefined ? 0 : saneTokens(details.cache_write_tokens, found),
    reasoning: detail(usage, `${completion}_details`, 'reasoning_tokens', found),
  };
}

/**
 * The gateway's usage of an Anthropic usage object (src/wire/anthropic.ts), each figure checked: the prompt is the
 * input with the cache reads and writes, which Anthropic counts apart from it; the parts as anthropicParts reads them.
 */
export function anthropicUsage(usage: JsonObject, found: UsageAnomaly[]): Usage {
  const prompt =
    saneTokens(usage.input_tokens, found) +
    saneTokens(usage.cache_read_input_tokens, found) +
    saneTokens(usage.cache_creation_input_tokens, found);
  return withParts(
    usageFrom(prompt, saneTokens(usage.output_tokens, found), undefined, found),
    anthropicParts(usage, found),
  );
}

/**
 * Corrects in place the part of an Anthropic usage object that is inside another figure: the 1-hour cache writes
 * (`cache_creation.ephemeral_1h_input_tokens`) no more than the writes, as anthropicParts and withParts count them
 * (what was corrected added to `found`).
 */
export function correctAnthropicParts(usage: JsonObject, found: UsageAnomaly[]): void {
  const creation = usage.cache_creation;
  if (typeof creation !== 'object' || creation === null || Array.isArray(creation)) return;
  bound(
    creation as Record<string, unknown>,
    'ephemeral_1h_input_tokens',
    saneTokens(usage.cache_creation_input_tokens),
    found,
  );
}

/**
 * The parts of an Anthropic usage object: cache reads, cache writes (`cache_creation_input_tokens`) and of those the
 * 1-hour ones (`cache_creation.ephemeral_1h_input_tokens`; the rest are 5-minute writes).
 */
export function anthropicParts(usage: JsonObject, found?: UsageAnomaly[]): UsageParts {
  return {
    cacheRead: saneTokens(usage.cache_read_input_tokens, found),
    cacheWrite: saneTokens(usage.cache_creation_input_tokens, found),
    cacheWrite1h: detail(usage, 'cache_creation', 'ephemeral_1h_input_tokens', found),
  };
}

/**
 * A translated chat chunk as it is streamed: its usage shown as OpenAI's chat shows it (usage-shapes.ts: the cache
 * reads, writes and reasoning in its `*_details`), the gateway's usage kept beside it for limits, prices and records
 * (with what the chat shape cannot say: the 1-hour part of the writes).
 */
export function countedChunk(chunk: ChatCompletionChunk): StreamChunk {
  const usage = chunk.usage;
  if (!usage) return { chunk };
  return { chunk: { ...chunk, usage: chatUsageOf(usage) }, usage };
}

/** The names of the three counts of a usage object: OpenAI's chat and embeddings, OpenAI's Responses API. */
export type CountNames = readonly [prompt: string, completion: string, total: string];
export const CHAT_COUNTS: CountNames = ['prompt_tokens', 'completion_tokens', 'total_tokens'];
export const RESPONSES_COUNTS: CountNames = ['input_tokens', 'output_tokens', 'total_tokens'];

/**
 * Corrects an upstream's usage object in place, so that an answer passed on as the upstream wrote it shows what
 * the gateway counted: its counts `names` when out of range, then the total (at least prompt + completion), then
 * the parts in its `*_details` (correctParts). The object is flagged with what was found; undefined (the object
 * untouched, nothing allocated) when all were sane.
 */
export function correctCounts(usage: Record<string, unknown>, names: CountNames): readonly UsageAnomaly[] | undefined {
  let found = correctInPlace(usage, names);
  const [prompt, completion, total] = names;
  const p = saneTokens(usage[prompt]);
  const c = saneTokens(usage[completion]);
  if (found || (usage[total] != null && saneTokens(usage[total]) < p + c)) {
    // A total below prompt + completion (a sane one too) is their sum, as the record counts it.
    found ??= saneTokens(usage[total]) < p + c ? ['part_too_large'] : [];
    const counted = usageFrom(p, c, saneTokens(usage[total]), found);
    if (usage[prompt] != null) usage[prompt] = counted.prompt_tokens;
    if (usage[completion] != null) usage[completion] = counted.completion_tokens;
    if (usage[total] != null) usage[total] = counted.total_tokens;
  }
  found = correctParts(usage, names, p, c, found);
  if (!found) return undefined;
  withAnomalies(usage as unknown as Usage, found);
  return found;
}

/**
 * The parts of an OpenAI usage object corrected in place, as the record counts them (openAiParts, withParts): each
 * out of range as a count is, then the cache reads (`cached_tokens`, or DeepSeek's `prompt_cache_hit_tokens`) no
 * more than the prompt, the cache writes no more than the rest of it, the reasoning no more than the completion
 * (`part_too_large`). Returns `found` with what was corrected (undefined while nothing was).
 */
function correctParts(
  usage: Record<string, unknown>,
  names: CountNames,
  prompt: number,
  completion: number,
  found: UsageAnomaly[] | undefined,
): UsageAnomaly[] | undefined {
  const inner = usage[`${names[0]}_details`];
  const details = typeof inner === 'object' && inner !== null ? (inner as Record<string, unknown>) : undefined;
  // Where openAiParts reads the cache reads: `cached_tokens`, else DeepSeek's `prompt_cache_hit_tokens`.
  const [reads, readName] =
    details?.cached_tokens != null ? [details, 'cached_tokens'] : [usage, 'prompt_cache_hit_tokens'];
  found = bound(reads, readName, prompt, found);
  const read = saneTokens(reads[readName]);
  found = bound(details, 'cache_write_tokens', prompt - read, found);
  const reasoning = usage[`${names[1]}_details`];
  if (typeof reasoning === 'object' && reasoning !== null)
    found = bound(reasoning as Record<string, unknown>, 'reasoning_tokens', completion, found);
  return found;
}

/** `object[name]`, when present, corrected as a count and cut to `most` in place; `found` with what was done. */
function bound(
  object: Record<string, unknown> | undefined,
  name: string,
  most: number,
  found: UsageAnomaly[] | undefined,
): UsageAnomaly[] | undefined {
  const value = object?.[name];
  if (object === undefined || value === undefined || value === null) return found;
  if (isSane(value) && value <= most) return found;
  const kinds = found ?? [];
  let sane = saneTokens(value, kinds);
  if (sane > most) {
    sane = most;
    if (!kinds.includes('part_too_large')) kinds.push('part_too_large');
  }
  object[name] = sane;
  return kinds;
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
  const anomalies = found && [...found];
  return withParts(
    usageFrom(saneTokens(usage[prompt]), saneTokens(usage[completion]), saneTokens(usage[total]), anomalies),
    openAiParts(usage, names, anomalies),
  );
}

/** An embedding's usage: only the prompt counts (an embedding has no completion), its total is the prompt's. */
export function embeddingUsage(usage: Usage): Usage {
  return withAnomalies(
    { prompt_tokens: usage.prompt_tokens, completion_tokens: 0, total_tokens: usage.prompt_tokens },
    anomaliesOf(usage),
  );
}

/**
 * The gate every usage passes before it reaches limits, budgets, prices, records or an answer the gateway builds,
 * whichever provider read it: the same object when its figures are sane (the common case: nothing allocated),
 * else a copy with them corrected and flagged. A provider that reads its figures through saneTokens never trips
 * it; one that did not is caught here.
 */
export function checkedUsage(usage: Usage): Usage {
  const { prompt_tokens: p, completion_tokens: c, total_tokens: t } = usage;
  const countsSane =
    isSane(p) &&
    isSane(c) &&
    typeof t === 'number' &&
    Number.isInteger(t) &&
    t >= p + c &&
    t <= Math.max(MAX_USAGE_TOKENS, p + c);
  // An OpenAI chunk's own usage object (a streamed chat answer passed through) carries its parts in `*_details`
  // (DeepSeek's cache reads in `prompt_cache_hit_tokens`).
  const raw = usage as unknown as Record<string, unknown>;
  const fromDetails =
    raw.prompt_tokens_details != null || raw.completion_tokens_details != null || raw.prompt_cache_hit_tokens != null;
  if (countsSane && !fromDetails && partsSane(usage)) return usage;
  const found: UsageAnomaly[] = [];
  const prompt = saneTokens(p, found);
  const completion = saneTokens(c, found);
  const total = Math.max(saneTokens(t, found), prompt + completion);
  const parts: UsageParts = fromDetails
    ? openAiParts(raw, CHAT_COUNTS, found)
    : {
        cacheRead: saneTokens(usage.cache_read_tokens, found),
        cacheWrite: saneTokens(usage.cache_write_tokens, found),
        cacheWrite1h: saneTokens(usage.cache_write_1h_tokens, found),
        reasoning: saneTokens(usage.reasoning_tokens, found),
      };
  const counted: Usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
  const had = usage[USAGE_ANOMALIES];
  if (had) counted[USAGE_ANOMALIES] = had;
  return withParts(withAnomalies(counted, found), parts);
}

/** Whether a usage's parts are each absent or sane, and no more than what they are parts of. */
function partsSane(usage: Usage): boolean {
  const {
    cache_read_tokens: read = 0,
    cache_write_tokens: write = 0,
    cache_write_1h_tokens: write1h = 0,
    reasoning_tokens: reasoning = 0,
  } = usage;
  return (
    isSane(read) &&
    isSane(write) &&
    isSane(write1h) &&
    isSane(reasoning) &&
    read + write <= usage.prompt_tokens &&
    write1h <= write &&
    reasoning <= usage.completion_tokens
  );
}
