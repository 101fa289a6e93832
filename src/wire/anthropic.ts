/**
 * Anthropic's Messages API on the wire: its request, message, stream events, usage and error objects, and the
 * mappings of its values to and from the chat completions API's, each written once with both directions side by
 * side. The Messages surface (src/surfaces/messages/: a caller's request in, the answer out), the Anthropic
 * provider (src/providers/anthropic/: the request out, the answer in), the native passthrough (its usage and ids)
 * and the HTTP error shape (src/http/anthropic-shape.ts) all read and write it from here.
 *
 * The types say what the gateway writes. What it reads from a caller or an upstream is read by type (json.ts and
 * the readers below): a field of the wrong type reads as absent, never cast.
 */
import { isJsonObject, objectOf, type JsonObject } from './json.js';
import {
  dataUrl,
  splitDataUrl,
  type ApproximateLocation,
  type ChatFunctionTool,
  type ChatToolChoice,
  type ChatWebSearchOptions,
} from './openai-chat.js';

// ---------------------------------------------------------------------------------------------- content blocks

/** A prompt-cache breakpoint (`{type: "ephemeral", ttl?}`): a caller's is passed on as it is, Anthropic judges it. */
export type AnthropicCacheControl = JsonObject;

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  cache_control?: AnthropicCacheControl;
}

export type AnthropicImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

export interface AnthropicImageBlock {
  type: 'image';
  source: AnthropicImageSource;
  cache_control?: AnthropicCacheControl;
}

export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  /** A JSON object on Anthropic's side (a chat call's arguments, parsed). */
  input: unknown;
  cache_control?: AnthropicCacheControl;
}

export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string | AnthropicTextBlock[];
  is_error?: boolean;
  cache_control?: AnthropicCacheControl;
}

export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface AnthropicRedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}

/**
 * A block of a kind the gateway does not build (a `document`, a `thinking` block a chat caller kept): the caller's
 * own content part, passed on as it is for Anthropic to judge.
 */
export type AnthropicPassthroughBlock = JsonObject;

/** A block the gateway sends in a request's message. */
export type AnthropicContentBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicToolUseBlock
  | AnthropicToolResultBlock
  | AnthropicPassthroughBlock;

/** A call of an MCP server's tool made for the model (Anthropic's MCP connector, beta `mcp-client-2025-04-04`). */
export interface AnthropicMcpToolUseBlock {
  type: 'mcp_tool_use';
  id: string;
  name: string;
  server_name: string;
  input: unknown;
}

/** What an MCP tool call gave (its text), or why it failed (`is_error`). */
export interface AnthropicMcpToolResultBlock {
  type: 'mcp_tool_result';
  tool_use_id: string;
  is_error: boolean;
  content: AnthropicTextBlock[];
}

/** A block of a message Anthropic answers with (server tools add others, read as unknown types). */
export type AnthropicAnswerBlock =
  | AnthropicTextBlock
  | AnthropicToolUseBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicMcpToolUseBlock
  | AnthropicMcpToolResultBlock;

/**
 * A content block as a caller sent it to the Messages route: an object with a string `type` (all its schema
 * checks, messages-schema.ts), every other field read by its type.
 */
export interface AnthropicBlockParam {
  type: string;
  [field: string]: unknown;
}

/** Whether a block (of any origin) is a text block with its text. */
export function isTextBlock(block: object): block is AnthropicTextBlock {
  return 'type' in block && block.type === 'text' && 'text' in block && typeof block.text === 'string';
}

/** Whether a block carries a prompt-cache breakpoint (`cache_control` set, not null). */
export function hasCacheControl(block: object | undefined): boolean {
  return (
    block !== undefined && 'cache_control' in block && block.cache_control !== undefined && block.cache_control !== null
  );
}

// ---------------------------------------------------------------------------------------------- the request

export interface AnthropicClientTool {
  /** Absent (or `custom`) for a tool the client runs. */
  type?: string;
  name: string;
  description?: string;
  input_schema: unknown;
  cache_control?: AnthropicCacheControl;
}

/** The version of Anthropic's web search tool the gateway sends. */
export const ANTHROPIC_WEB_SEARCH = { type: 'web_search_20250305', name: 'web_search' } as const;

export interface AnthropicWebSearchTool {
  type: typeof ANTHROPIC_WEB_SEARCH.type;
  name: typeof ANTHROPIC_WEB_SEARCH.name;
  user_location?: { type: 'approximate' } & ApproximateLocation;
  cache_control?: AnthropicCacheControl;
}

export type AnthropicTool = AnthropicClientTool | AnthropicWebSearchTool;

export interface AnthropicToolChoice {
  type: 'auto' | 'any' | 'tool' | 'none';
  name?: string;
  disable_parallel_tool_use?: boolean;
}

export type AnthropicThinkingConfig =
  { type: 'enabled'; budget_tokens: number } | { type: 'adaptive' } | { type: 'disabled' };

export interface AnthropicMessageParam {
  role: 'user' | 'assistant';
  content: AnthropicContentBlock[];
}

/** A Messages request as the Anthropic provider builds it from a chat request. */
export interface AnthropicRequest {
  model: string;
  messages: AnthropicMessageParam[];
  max_tokens: number;
  system?: string | AnthropicTextBlock[];
  temperature?: number;
  top_p?: number;
  stop_sequences?: unknown[];
  stream?: true;
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  metadata?: unknown;
  thinking?: unknown;
  output_config?: { effort?: string; format?: { type: 'json_schema'; schema: Record<string, unknown> } };
  /** Chat fields of the same name and meaning (`top_k`, `service_tier`), passed on as they came. */
  [sameName: string]: unknown;
}

/**
 * A Messages request as a caller sent it, once it passed `messagesBodySchema` (the route's: what every path reads).
 * Roles and blocks are checked by the translation, naming each one; a forwarded request is Anthropic's to judge.
 */
export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: Array<{ role: string; content: string | AnthropicBlockParam[] }>;
  system?: string | AnthropicBlockParam[];
  /** Each with a string `name` (the translation's schema); its other keys read by their types. */
  tools?: AnthropicToolParam[];
  tool_choice?: { type: string; name?: string; disable_parallel_tool_use?: boolean };
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  thinking?: { type: string; budget_tokens?: number; display?: string };
  output_config?: { effort?: string | null; format?: JsonObject | null };
  metadata?: { user_id?: string | null };
  stream?: boolean;
  [field: string]: unknown;
}

/** A tool as a caller declared it in a Messages request (client or server tool). */
export interface AnthropicToolParam {
  name: string;
  type?: unknown;
  [field: string]: unknown;
}

// ---------------------------------------------------------------------------------------------- the answer

export type AnthropicStopReason =
  'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded';

/**
 * Anthropic's usage object. `input_tokens` EXCLUDES the cache reads and writes (the input after the last cache
 * breakpoint): `cache_read_input_tokens` are the reads, `cache_creation_input_tokens` the writes (of which
 * `cache_creation.ephemeral_1h_input_tokens` at the 1-hour lifetime); `output_tokens` all output, thinking included.
 * src/providers/usage-shapes.ts writes it (messagesUsageOf), src/providers/usage-figures.ts reads it (anthropicUsage).
 */
export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number };
  output_tokens: number;
}

/** The token counts of a usage object, each checked (and corrected in a passed-through answer) where read. */
export const ANTHROPIC_USAGE_FIGURES = [
  'input_tokens',
  'cache_creation_input_tokens',
  'cache_read_input_tokens',
  'output_tokens',
] as const;

/** A `message` object. */
export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicAnswerBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
  /** The code-execution container the answer ran in (a later request can name it again). */
  container?: { id: string } | null;
}

// ---------------------------------------------------------------------------------------------- errors

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/**
 * The machine-readable cause of an Anthropic error (`error.details`): a stable `error_code` (`thread_not_found`,
 * `thread_unsupported_request`...) and the fields that code comes with (`unsupported`). Its SDKs branch on it: the
 * tool runner and message threads fall back to the whole conversation on `thread_unsupported_request`.
 */
export interface AnthropicErrorDetails {
  error_code: string;
  [field: string]: unknown;
}

/** Anthropic's error body (and the data of its `error` event). */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType | string; message: string; details?: AnthropicErrorDetails };
}

/** `value` as Anthropic's error details: an object with a string `error_code`; undefined for anything else. */
export function anthropicErrorDetailsOf(value: unknown): AnthropicErrorDetails | undefined {
  const details = objectOf(value);
  return typeof details?.error_code === 'string' ? (details as AnthropicErrorDetails) : undefined;
}

/**
 * Anthropic's error `type` for an HTTP status (what its SDKs map to their error classes): its own table, where 529
 * is `overloaded_error`; any other 4xx is `invalid_request_error` (its docs: "we may also use this error type for
 * other 4XX status codes"), any other status `api_error`.
 */
export function anthropicErrorType(status: number): AnthropicErrorType {
  if (status === 400 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'api_error';
}

// ---------------------------------------------------------------------------------------------- stream events

type Empty = Record<never, never>;

/** Each event of a Messages stream by its name (the `event:` line and the data's `type`), and its data. */
export interface AnthropicStreamEvents {
  message_start: { message: AnthropicMessage };
  content_block_start: {
    index: number;
    content_block: AnthropicTextBlock | AnthropicToolUseBlock | AnthropicMcpToolUseBlock | AnthropicMcpToolResultBlock;
  };
  content_block_delta: {
    index: number;
    delta: { type: 'text_delta'; text: string } | { type: 'input_json_delta'; partial_json: string };
  };
  content_block_stop: { index: number };
  ping: Empty;
  message_delta: {
    delta: { stop_reason: AnthropicStopReason | null; stop_sequence: string | null; container?: { id: string } | null };
    usage: AnthropicUsage;
  };
  message_stop: Empty;
  /** Anthropic's error object; the gateway's own failure adds its code, message and details beside it. */
  error: { error: AnthropicErrorBody['error']; code?: string; message?: string; details?: unknown };
}

export type AnthropicStreamEventName = keyof AnthropicStreamEvents;

/** The usage object an event's data carries: `message.usage` in `message_start`, `usage` in `message_delta`. */
export function eventUsage(event: string, data: JsonObject): unknown {
  if (event === 'message_start') return objectOf(data.message)?.usage;
  return event === 'message_delta' ? data.usage : undefined;
}

/** The container id an answer (or its `message_start` / `message_delta` event) names. */
export function containerIdOf(message: unknown): unknown {
  return objectOf(objectOf(message)?.container)?.id;
}

/** The container id an event names: the message's in `message_start`, the delta's in `message_delta`. */
export function eventContainerId(event: string, data: unknown): unknown {
  const record = objectOf(data);
  return containerIdOf(event === 'message_start' ? record?.message : record?.delta);
}

/**
 * Whether a Messages request asks for a message thread (`thread: {type: "create" | "continue", ...}`, beta
 * `message-threads-2026-08-12`): Anthropic then keeps the conversation under the id of each reply, which a later
 * request names again (`thread.previous_message_id`).
 */
export function isThreaded(request: unknown): boolean {
  const thread = objectOf(request)?.thread;
  return thread !== undefined && thread !== null;
}

/** The reply a request continues a thread from (`thread.previous_message_id`), when it names one. */
export function threadPreviousMessageId(request: unknown): unknown {
  return objectOf(objectOf(request)?.thread)?.previous_message_id;
}

/** The id of the message an answer (or its `message_start` event) is: what a thread is continued from. */
export function messageIdOf(answer: unknown, event?: string): unknown {
  const record = objectOf(answer);
  return event === undefined ? record?.id : event === 'message_start' ? objectOf(record?.message)?.id : undefined;
}

// ---------------------------------------------------------------------------------------------- mappings to and from chat

/** A chat finish reason as Anthropic's stop reason (the Messages surface's answers). Inverse: finishReasonOf. */
export function stopReasonOf(finishReason: string | null | undefined): AnthropicStopReason {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'tool_calls' || finishReason === 'function_call') return 'tool_use';
  if (finishReason === 'content_filter') return 'refusal';
  return 'end_turn';
}

/** Anthropic's `stop_reason` as a chat finish reason (the provider's answers). Inverse: stopReasonOf. */
export function finishReasonOf(stopReason: unknown): string | null {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    case null:
    case undefined:
      return null;
    default:
      return 'stop';
  }
}

/**
 * Anthropic's `tool_choice` as chat's (the surface): `any` is `required`, a named tool a named function, and
 * `disable_parallel_tool_use` chat's `parallel_tool_calls: false`. Inverse: anthropicToolChoiceOf.
 */
export function chatToolChoiceOf(choice: NonNullable<MessagesRequest['tool_choice']>): {
  tool_choice: ChatToolChoice;
  parallel_tool_calls?: false;
} {
  const parallel: { parallel_tool_calls?: false } =
    choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {};
  if (choice.type === 'any') return { tool_choice: 'required', ...parallel };
  if (choice.type === 'none') return { tool_choice: 'none' };
  if (choice.type === 'tool' && typeof choice.name === 'string')
    return { tool_choice: { type: 'function', function: { name: choice.name } }, ...parallel };
  return { tool_choice: 'auto', ...parallel };
}

/**
 * Chat's `tool_choice` and `parallel_tool_calls` as Anthropic's `tool_choice` (the provider); undefined when there is
 * none to send. Inverse: chatToolChoiceOf.
 */
export function anthropicToolChoiceOf(choice: unknown, parallel: unknown): AnthropicToolChoice | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined || choice === null) return parallel === false ? { type: 'auto', ...noParallel } : undefined;
  if (choice === 'auto') return { type: 'auto', ...noParallel };
  if (choice === 'required') return { type: 'any', ...noParallel };
  if (choice === 'none') return { type: 'none' };
  const name = objectOf(objectOf(choice)?.function)?.name;
  if (typeof name === 'string') return { type: 'tool', name, ...noParallel };
  return undefined;
}

/**
 * An image block's source as the URL chat carries (a base64 source as a `data:` URL); undefined when the source is
 * neither a base64 image (media_type, data) nor a URL image. Inverse: imageSourceOf.
 */
export function imageUrlOf(source: unknown): string | undefined {
  const s = objectOf(source);
  if (s?.type === 'base64' && typeof s.media_type === 'string' && typeof s.data === 'string')
    return dataUrl(s.media_type, s.data);
  if (s?.type === 'url' && typeof s.url === 'string') return s.url;
  return undefined;
}

/** A chat image URL as an image block's source: a base64 `data:` URL as its media type and data. Inverse: imageUrlOf. */
export function imageSourceOf(url: string): AnthropicImageSource {
  const inline = splitDataUrl(url);
  return inline ? { type: 'base64', media_type: inline.mediaType, data: inline.data } : { type: 'url', url };
}

/** An empty object schema: the parameters of a tool that declares none. */
const NO_PARAMETERS = (): JsonObject => ({ type: 'object', properties: {} });

/**
 * A client tool as a chat function (the surface): its `input_schema` the parameters, with its description and
 * `strict`. The keys this reads; others are the caller's to hear about (request-tools.ts). Inverse: anthropicToolOf.
 */
export function chatFunctionOf(tool: AnthropicToolParam): ChatFunctionTool {
  const fn: ChatFunctionTool['function'] = { name: tool.name, parameters: tool.input_schema ?? NO_PARAMETERS() };
  if (typeof tool.description === 'string') fn.description = tool.description;
  if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
  return { type: 'function', function: fn };
}

/** A chat function tool as a client tool (the provider): its parameters the `input_schema`. Inverse: chatFunctionOf. */
export function anthropicToolOf(tool: unknown): AnthropicClientTool {
  const fn = objectOf(objectOf(tool)?.function);
  const out: AnthropicClientTool = { name: String(fn?.name ?? ''), input_schema: fn?.parameters ?? NO_PARAMETERS() };
  if (typeof fn?.description === 'string') out.description = fn.description;
  return out;
}

const LOCATION_PARTS = ['city', 'region', 'country', 'timezone'] as const;

/** The string parts of a location (city, region, country, timezone) of any object, in that order. */
function locationParts(from: object): ApproximateLocation {
  const location: ApproximateLocation = {};
  for (const part of LOCATION_PARTS) {
    const value: unknown = Reflect.get(from, part);
    if (typeof value === 'string') location[part] = value;
  }
  return location;
}

/**
 * The web search tool's `user_location` (`{type: "approximate", city, ...}`) as chat's (`{type: "approximate",
 * approximate: {city, ...}}`) (the surface). Inverse: anthropicWebSearchTool.
 */
export function chatUserLocationOf(location: object): NonNullable<ChatWebSearchOptions['user_location']> {
  return { type: 'approximate', approximate: locationParts(location) };
}

/**
 * Chat's `web_search_options` as Anthropic's web search tool, with the caller's approximate location (the
 * provider); undefined when there are no options. `search_context_size` has no Anthropic equivalent: how much it
 * reads is Anthropic's choice. Inverse: chatUserLocationOf.
 */
export function anthropicWebSearchTool(options: unknown): AnthropicWebSearchTool | undefined {
  if (typeof options !== 'object' || options === null) return undefined;
  const tool: AnthropicWebSearchTool = { ...ANTHROPIC_WEB_SEARCH };
  const approximate: unknown = objectOf(Reflect.get(options, 'user_location'))?.approximate;
  if (typeof approximate === 'object' && approximate !== null)
    tool.user_location = { type: 'approximate', ...locationParts(approximate) };
  return tool;
}

/** Whether `value` is a `message` object (the answer of a Messages call; its content read block by block). */
export function isMessageObject(value: unknown): value is JsonObject & { type: 'message' } {
  return isJsonObject(value) && value.type === 'message';
}
