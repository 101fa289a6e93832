import type { Usage } from './contract.js';
import type { GeminiUsageMetadata } from '../wire/gemini.js';

/**
 * How the gateway's usage (src/providers/contract.ts: `prompt_tokens` is all input, the cache reads and writes
 * parts of it; `reasoning_tokens` a part of `completion_tokens`) is shown in each API's own usage object, in every
 * answer the gateway builds (a translated answer, JSON and stream). The one place where that arithmetic is done:
 * docs/usage.md, "How token parts add up and how each API shows them", is its table. Each takes a usage already
 * through checkedUsage (its parts bounded by what they are parts of), so no figure shown is ever negative.
 */

/**
 * OpenAI chat's usage object. `prompt_tokens` counts all input, as OpenAI's does; `prompt_tokens_details`
 * (only when the cache was used) gives the reads as `cached_tokens` and the writes as `cache_write_tokens`
 * (OpenRouter's name; OpenAI has no writes, the field is there only when there are some);
 * `completion_tokens_details.reasoning_tokens` only when the upstream reported reasoning.
 */
export interface ChatUsageObject {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number };
  completion_tokens_details?: { reasoning_tokens: number };
}

export function chatUsageOf(usage: Usage): ChatUsageObject {
  const shown: ChatUsageObject = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens };
  const { cache_read_tokens: read = 0, cache_write_tokens: write = 0, reasoning_tokens: reasoning = 0 } = usage;
  if (read > 0 || write > 0) shown.prompt_tokens_details = write > 0 ? { cached_tokens: read, cache_write_tokens: write } : { cached_tokens: read };
  if (reasoning > 0) shown.completion_tokens_details = { reasoning_tokens: reasoning };
  return shown;
}

/**
 * The Responses API's usage object: `input_tokens` all input (as OpenAI's), `input_tokens_details.cached_tokens`
 * the reads and `output_tokens_details.reasoning_tokens` always (the API's schema requires both), and
 * `input_tokens_details.cache_write_tokens` only when there were writes (as in the chat shape).
 */
export interface ResponsesUsageObject {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens?: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export function responsesUsageOf(usage: Usage): ResponsesUsageObject {
  const { cache_read_tokens: read = 0, cache_write_tokens: write = 0 } = usage;
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: write > 0 ? { cached_tokens: read, cache_write_tokens: write } : { cached_tokens: read },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: usage.reasoning_tokens ?? 0 },
    total_tokens: usage.total_tokens,
  };
}

/**
 * Anthropic's Messages usage object: `input_tokens` EXCLUDES the cache reads and writes (Anthropic's own
 * definition: the input after the last cache breakpoint), `cache_read_input_tokens` the reads and
 * `cache_creation_input_tokens` the writes, each only when there were some; `output_tokens` all output (thinking
 * included). So input_tokens + cache_creation_input_tokens + cache_read_input_tokens is the gateway's prompt.
 */
export interface MessagesUsageObject {
  input_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  output_tokens: number;
}

export function messagesUsageOf(usage: Usage): MessagesUsageObject {
  const { cache_read_tokens: read = 0, cache_write_tokens: write = 0 } = usage;
  const shown: MessagesUsageObject = { input_tokens: usage.prompt_tokens - read - write, output_tokens: usage.completion_tokens };
  if (write > 0) shown.cache_creation_input_tokens = write;
  if (read > 0) shown.cache_read_input_tokens = read;
  return shown;
}

/**
 * Gemini's `usageMetadata`: `promptTokenCount` all input (Gemini's counts the cached content, as ours does),
 * `cachedContentTokenCount` the reads when there were some (Gemini has no cache writes: they are only in the
 * prompt); `candidatesTokenCount` the answer WITHOUT the reasoning, which is `thoughtsTokenCount` when there was
 * some; `totalTokenCount` ours (Gemini's is prompt + candidates + thoughts, as ours).
 */
export function geminiUsageOf(usage: Usage): GeminiUsageMetadata {
  const { cache_read_tokens: read = 0, reasoning_tokens: reasoning = 0 } = usage;
  const shown: GeminiUsageMetadata = { promptTokenCount: usage.prompt_tokens, candidatesTokenCount: usage.completion_tokens - reasoning, totalTokenCount: usage.total_tokens };
  if (read > 0) shown.cachedContentTokenCount = read;
  if (reasoning > 0) shown.thoughtsTokenCount = reasoning;
  return shown;
}
