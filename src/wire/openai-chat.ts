/**
 * OpenAI's Chat Completions API on the wire, where the other wire modules meet it: the values the translations map
 * to and from (tool choice, image parts, function tools, web search options, the usage object, the completion the
 * surfaces read). The chat request, message and chunk the core passes around are the internal model
 * (providers/provider-contract.ts), not these. The parts and tools are type aliases, not interfaces, so they fit the internal
 * model's open objects (`Record<string, unknown>`) where they go.
 */

/** Chat's `tool_choice`. */
export type ChatToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export type ChatTextPart = {
  type: 'text';
  text: string;
};

/** An image part: `url` is an https URL or a base64 `data:` URL (dataUrl, splitDataUrl). */
export type ChatImagePart = {
  type: 'image_url';
  image_url: { url: string; detail?: string };
};

/**
 * A file part: by id (the upstream's, or one of the gateway's, which core/files/file-forwarding.ts makes available), or
 * inline as a base64 `data:` URL in `file_data`.
 */
export type ChatFilePart = {
  type: 'file';
  file: { file_id?: string; file_data?: string; filename?: string };
};

/** A function tool as chat declares it. */
export type ChatFunctionTool = {
  type: 'function';
  function: { name: string; parameters?: unknown; description?: string; strict?: boolean };
};

/** Where a web search is asked to look from: each part only when known. */
export type ApproximateLocation = {
  city?: string;
  region?: string;
  country?: string;
  timezone?: string;
};

/** Chat's `web_search_options`: the gateway's one representation of a built-in web search (providers/provider-contract.ts ChatExtra). */
export type ChatWebSearchOptions = {
  search_context_size?: string;
  user_location?: { type: 'approximate'; approximate: ApproximateLocation };
};

/**
 * A base64 `data:` URL of `data` (already base64) of type `mediaType`: how chat carries an inline image.
 * The inverse of splitDataUrl.
 */
export function dataUrl(mediaType: string, data: string): string {
  return `data:${mediaType};base64,${data}`;
}

/** A base64 `data:` URL's media type and data; undefined for any other URL. The inverse of dataUrl. */
export function splitDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1] ?? '', data: match[2] ?? '' } : undefined;
}

/**
 * OpenAI chat's usage object (src/providers/usage-shapes.ts writes it). `prompt_tokens` counts all input, as
 * OpenAI's does; `prompt_tokens_details` (only when the cache was used) gives the reads as `cached_tokens` and the
 * writes as `cache_write_tokens` (OpenRouter's name; OpenAI has no writes, the field is there only when there are
 * some); `completion_tokens_details.reasoning_tokens` only when the upstream reported reasoning.
 */
export interface ChatUsageObject {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number };
  completion_tokens_details?: { reasoning_tokens: number };
}

/**
 * A `chat.completion` as the providers hand it to a translating surface: made well formed by the provider
 * (src/providers/openai-compatible/normalise-answer.ts, or built by a translating provider), its usage not yet
 * checked (the surfaces pass it through checkedUsage). What may still be odd (a message's content, its tool calls)
 * is `unknown` and read by its type (src/surfaces/tool-arguments.ts).
 */
export interface ChatCompletionAnswer {
  id?: unknown;
  model?: unknown;
  choices?: Array<{
    message?: { content?: unknown; refusal?: unknown; tool_calls?: unknown };
    finish_reason?: string | null;
  }>;
  usage?: ChatUsageObject | null;
}

/**
 * The gateway's own completion text (above) read back. Not an upstream's JSON: the provider that read the
 * upstream's answer checked and normalised it before it was handed on.
 */
export function parseCompletionAnswer(text: string): ChatCompletionAnswer {
  return JSON.parse(text) as ChatCompletionAnswer;
}
