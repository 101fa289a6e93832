import type { AnthropicUsage } from '../wire/anthropic.js';
import type { ChatUsageObject } from '../wire/openai-chat.js';
import type { ResponsesUsageObject } from '../wire/openai-responses.js';
import type { Usage } from './provider-contract.js';
import type { GeminiUsageMetadata } from '../wire/gemini.js';

export type { AnthropicUsage, ChatUsageObject, ResponsesUsageObject };

/**
 * How the gateway's usage (src/providers/provider-contract.ts: `prompt_tokens` is all input, the cache reads and writes
 * parts of it; `reasoning_tokens` a part of `completion_tokens`) is shown in each API's own usage object, in every
 * answer the gateway builds (a translated answer, JSON and stream). The one place where that arithmetic is done:
 * docs/usage.md, "How token parts add up and how each API shows them", is its table. Each takes a usage already
 * through checkedUsage (its parts bounded by what they are parts of), so no figure shown is ever negative.
 */

/** OpenAI chat's usage object (src/wire/openai-chat.ts: `prompt_tokens` all input; the details only when there are some). */
export function chatUsageOf(usage: Usage): ChatUsageObject {
  const shown: ChatUsageObject = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
  };
  const { cache_read_tokens: read = 0, cache_write_tokens: write = 0, reasoning_tokens: reasoning = 0 } = usage;
  if (read > 0 || write > 0)
    shown.prompt_tokens_details =
      write > 0 ? { cached_tokens: read, cache_write_tokens: write } : { cached_tokens: read };
  if (reasoning > 0) shown.completion_tokens_details = { reasoning_tokens: reasoning };
  return shown;
}

/** The Responses API's usage object (src/wire/openai-responses.ts: both details always there, as its schema requires). */
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
 * Anthropic's Messages usage object (src/wire/anthropic.ts): `input_tokens` EXCLUDES the cache reads and writes,
 * which are `cache_read_input_tokens` and `cache_creation_input_tokens`, always there (0 when none), as Anthropic
 * sends them; so input_tokens + cache_creation_input_tokens + cache_read_input_tokens is the gateway's prompt.
 */
export function messagesUsageOf(usage: Usage): AnthropicUsage {
  const { cache_read_tokens: read = 0, cache_write_tokens: write = 0 } = usage;
  return {
    input_tokens: usage.prompt_tokens - read - write,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
    output_tokens: usage.completion_tokens,
  };
}

/**
 * Gemini's `usageMetadata`: `promptTokenCount` all input (Gemini's counts the cached content, as ours does),
 * `cachedContentTokenCount` the reads when there were some (Gemini has no cache writes: they are only in the
 * prompt); `candidatesTokenCount` the answer WITHOUT the reasoning, which is `thoughtsTokenCount` when there was
 * some; `totalTokenCount` ours (Gemini's is prompt + candidates + thoughts, as ours).
 */
export function geminiUsageOf(usage: Usage): GeminiUsageMetadata {
  const { cache_read_tokens: read = 0, reasoning_tokens: reasoning = 0 } = usage;
  const shown: GeminiUsageMetadata = {
    promptTokenCount: usage.prompt_tokens,
    candidatesTokenCount: usage.completion_tokens - reasoning,
    totalTokenCount: usage.total_tokens,
  };
  if (read > 0) shown.cachedContentTokenCount = read;
  if (reasoning > 0) shown.thoughtsTokenCount = reasoning;
  return shown;
}
