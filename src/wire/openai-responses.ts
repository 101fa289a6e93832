/**
 * OpenAI's Responses API on the wire (the subset docs/responses.md documents): its request, response object, output
 * items, stream events, usage and error event, and the mappings of its values to and from the chat completions
 * API's, each written once with both directions side by side. The Responses surface (src/surfaces/responses/) and
 * the native passthrough to an upstream that speaks the API (src/providers/openai-compatible/responses-native.ts)
 * read and write it from here.
 *
 * The types say what the gateway writes. What it reads from a caller or an upstream is read by type (json.ts and
 * the readers below), never cast.
 */
import { objectOf, type JsonObject } from './json.js';
import type { ChatFilePart, ChatImagePart, ChatTextPart } from './openai-chat.js';

// ---------------------------------------------------------------------------------------------- the request

/**
 * An input item as a caller sent it: an object (all the route's schema checks); the translation reads each field
 * by its type and names what it cannot take.
 */
export type ResponsesInputItem = JsonObject & { type?: string };

/** A request body that passed `responsesBodySchema` (types checked; items are checked by the translation). */
export interface ResponsesRequest {
  model: string;
  input: string | ResponsesInputItem[];
  instructions?: string | null;
  tools?: JsonObject[];
  tool_choice?: unknown;
  parallel_tool_calls?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
  max_output_tokens?: number | null;
  text?: { format?: unknown; verbosity?: unknown; [field: string]: unknown } | null;
  reasoning?: { effort?: string | null; summary?: string | null; [field: string]: unknown } | null;
  metadata?: Record<string, string> | null;
  store?: boolean | null;
  previous_response_id?: string | null;
  stream?: boolean | null;
  user?: string;
  background?: boolean | null;
  truncation?: string | null;
  top_logprobs?: number | null;
  [field: string]: unknown;
}

export type InputTextPart = {
  type: 'input_text';
  text: unknown;
};

export type InputImagePart = {
  type: 'input_image';
  image_url: unknown;
  detail?: unknown;
};

// ---------------------------------------------------------------------------------------------- the response

/**
 * The Responses API's usage object: `input_tokens` all input (as OpenAI's), `input_tokens_details.cached_tokens`
 * the reads and `output_tokens_details.reasoning_tokens` always (the API's schema requires both), and
 * `input_tokens_details.cache_write_tokens` only when there were writes (src/providers/usage-shapes.ts writes it).
 */
export interface ResponsesUsageObject {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens?: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs: unknown[];
}

export interface Refusal {
  type: 'refusal';
  refusal: string;
}

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface MessageItem {
  type: 'message';
  id: string;
  status: ItemStatus;
  role: 'assistant';
  content: Array<OutputText | Refusal>;
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  /** The caller's `namespace` tool the function is in (set only for such a function: Codex needs it to run the call). */
  namespace?: string;
  arguments: string;
  status: ItemStatus;
}

/** A call of a freeform (`custom`) tool: its raw text input (Codex's apply_patch: the patch). */
export interface CustomToolCallItem {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
  status: ItemStatus;
}

/** One result of a `file_search_call`: every field, `attributes` `{}` when none (the AI SDK refuses `null`). */
export interface FileSearchResultEntry {
  attributes: Record<string, string | number | boolean>;
  file_id: string;
  filename: string;
  score: number;
  text: string;
}

/** A search the gateway ran for the model (the `file_search` tool); `results` null unless the request included them. */
export interface FileSearchCallItem {
  type: 'file_search_call';
  id: string;
  status: 'in_progress' | 'searching' | 'completed' | 'incomplete' | 'failed';
  queries: string[];
  results: FileSearchResultEntry[] | null;
}

/** A citation of a file a search returned, at `index` in the text (where the model's marker was). */
export interface FileCitation {
  type: 'file_citation';
  file_id: string;
  filename: string;
  index: number;
}

/** A tool of an MCP server as an `mcp_list_tools` item lists it. */
export interface McpListedTool {
  name: string;
  input_schema: unknown;
  description: string | null;
  annotations: unknown;
}

/** The tools of one MCP server the model was offered (the `mcp` tool; `error` when it could not be listed). */
export interface McpListToolsItem {
  type: 'mcp_list_tools';
  id: string;
  server_label: string;
  tools: McpListedTool[];
  error: string | null;
}

/** Why an MCP call gave no result: the tool said so, or the call failed (OpenAI's `McpToolCallError`). */
export type McpCallItemError =
  | { type: 'mcp_tool_execution_error'; content: unknown }
  | { type: 'http_error'; code: number; message: string }
  | { type: 'mcp_protocol_error'; code: number; message: string };

/** A call of an MCP tool the gateway made for the model. */
export interface McpCallItem {
  type: 'mcp_call';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete' | 'calling' | 'failed';
  approval_request_id: string | null;
  arguments: string;
  error: McpCallItemError | null;
  name: string;
  output: string | null;
  server_label: string;
}

/** A call of an MCP tool that waits for the caller's approval (answered by an `mcp_approval_response` input item). */
export interface McpApprovalRequestItem {
  type: 'mcp_approval_request';
  id: string;
  arguments: string;
  name: string;
  server_label: string;
}

export type OutputItem =
  | MessageItem
  | FunctionCallItem
  | CustomToolCallItem
  | FileSearchCallItem
  | McpListToolsItem
  | McpCallItem
  | McpApprovalRequestItem;

/** An item of a conversation, as `input_items` lists them: the caller's input items and the answers' output items. */
export type ResponsesItem = ResponsesInputItem | OutputItem;

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** A function tool as a response echoes it: every field the specification lists, `null` where the caller gave none. */
export interface EchoedFunctionTool {
  type: 'function';
  name: string;
  description: string | null;
  parameters: unknown;
  /** As the caller set it; `null` when it did not (a translated call sends no `strict`, so none is claimed). */
  strict: boolean | null;
  [field: string]: unknown;
}

/**
 * The `response` object: every field of the Responses API's specification (the Open Responses `ResponseResource`,
 * which OpenAI's answers carry too), in OpenAI's order. Built in one place (src/surfaces/responses/response-object.ts)
 * from the request and the upstream's answer, with OpenAI's defaults for what neither says.
 */
export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  /** Always false: a background request is refused on a translated path (it goes natively where it can). */
  background: boolean;
  /** When it completed (Unix seconds); `null` until then, and for a response that failed or is incomplete. */
  completed_at: number | null;
  /** A failed response's error: the gateway's code and message, and its details when it has some. */
  error: { code: string; message: string; details?: Record<string, unknown> } | null;
  incomplete_details: { reason: string } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  max_tool_calls: number | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  presence_penalty: number;
  frequency_penalty: number;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  prompt_cache_retention: string | null;
  reasoning: { effort: string | null; summary: string | null };
  safety_identifier: string | null;
  service_tier: string;
  store: boolean;
  temperature: number;
  text: { format: unknown; verbosity: string };
  tool_choice: unknown;
  tools: unknown[];
  top_logprobs: number;
  top_p: number;
  truncation: string;
  usage: ResponsesUsageObject | null;
  user: string | null;
  metadata: Record<string, string>;
}

// ---------------------------------------------------------------------------------------------- stream events

interface ItemRef {
  item_id: string;
  output_index: number;
}

interface TextRef extends ItemRef {
  content_index: number;
}

/**
 * Each event of a Responses stream the gateway writes, by its name (the `event:` line and the data's `type`), and
 * its data; every event also carries its `sequence_number`.
 */
export interface ResponseStreamEvents {
  'response.created': { response: ResponseObject };
  'response.in_progress': { response: ResponseObject };
  'response.output_item.added': { output_index: number; item: OutputItem };
  'response.content_part.added': TextRef & { part: OutputText };
  'response.output_text.delta': TextRef & { delta: string; logprobs: unknown[] };
  'response.output_text.done': TextRef & { text: string; logprobs: unknown[] };
  'response.content_part.done': TextRef & { part: OutputText };
  'response.function_call_arguments.delta': ItemRef & { delta: string };
  'response.function_call_arguments.done': ItemRef & { name: string; arguments: string };
  'response.custom_tool_call_input.delta': ItemRef & { delta: string };
  'response.custom_tool_call_input.done': ItemRef & { input: string };
  'response.output_item.done': { output_index: number; item: OutputItem };
  'response.file_search_call.in_progress': ItemRef;
  'response.file_search_call.searching': ItemRef;
  'response.file_search_call.completed': ItemRef;
  'response.output_text.annotation.added': TextRef & { annotation_index: number; annotation: FileCitation };
  'response.mcp_list_tools.in_progress': ItemRef;
  'response.mcp_list_tools.completed': ItemRef;
  'response.mcp_list_tools.failed': ItemRef;
  'response.mcp_call.in_progress': ItemRef;
  'response.mcp_call_arguments.delta': ItemRef & { delta: string };
  'response.mcp_call_arguments.done': ItemRef & { arguments: string };
  'response.mcp_call.completed': ItemRef;
  'response.mcp_call.failed': ItemRef;
  'response.completed': { response: ResponseObject };
  'response.incomplete': { response: ResponseObject };
  'response.failed': { response: ResponseObject };
}

/** The stream's closing `error` event, written when the gateway never held a response to fail (a forwarded stream). */
export interface ResponsesErrorEvent {
  type: 'error';
  code: string;
  message: string;
  param: null;
  details?: unknown;
}

/** The events that end a stream well (their `response` carries the usage). */
export const RESPONSES_FINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete']);

/** The events that say the response failed. */
export const RESPONSES_FAILURE_EVENTS: ReadonlySet<string> = new Set(['response.failed', 'error']);

// ---------------------------------------------------------------------------------------------- reading an upstream's

/** The response of a `response.*` event's data. */
export function eventResponse(data: unknown): JsonObject | undefined {
  return objectOf(objectOf(data)?.response);
}

/** Whether `value` is a `response` object. */
export function isResponseObject(value: unknown): value is JsonObject & { object: 'response' } {
  return objectOf(value)?.object === 'response';
}

/**
 * What in a response may name something the upstream keeps: the response's id, its output items' ids and the
 * containers its code-interpreter calls ran in (each unknown until checked as an id).
 */
export function responseIdCandidates(response: unknown): unknown[] {
  const r = objectOf(response);
  const output = Array.isArray(r?.output) ? r.output : [];
  return [r?.id, ...output.flatMap((item: unknown) => [objectOf(item)?.id, objectOf(item)?.container_id])];
}

/** A failure event's error: `response.error` (`response.failed`), or the `error` event's own fields. */
export function failureError(data: JsonObject): unknown {
  return objectOf(data.response)?.error ?? data.error ?? { message: data.message, code: data.code };
}

// ---------------------------------------------------------------------------------------------- mappings to and from chat

/**
 * How a chat finish reason ends a response: `length` and `content_filter` leave it incomplete, anything else
 * completes it.
 */
export function endingOf(finishReason: string | null | undefined): {
  status: ResponseStatus;
  incomplete_details: { reason: string } | null;
} {
  if (finishReason === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter')
    return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/**
 * An `input_image` part's URL and detail as chat's image part (the surface); undefined when it has no URL (a
 * `file_id` image). Inverse: inputPartOf.
 */
export function chatImagePartOf(part: JsonObject): ChatImagePart | undefined {
  const url = part.image_url;
  if (typeof url !== 'string' || url === '') return undefined;
  return { type: 'image_url', image_url: { url, ...(typeof part.detail === 'string' ? { detail: part.detail } : {}) } };
}

/**
 * An `input_file` part as chat's file part (its `file_id`, `file_data` and `filename`); undefined when it has
 * neither an id nor inline data (a `file_url`, which chat has no place for). Inverse: inputPartOf.
 */
export function chatFilePartOf(part: JsonObject): ChatFilePart | undefined {
  const file: ChatFilePart['file'] = {};
  if (typeof part.file_id === 'string' && part.file_id !== '') file.file_id = part.file_id;
  if (typeof part.file_data === 'string' && part.file_data !== '') file.file_data = part.file_data;
  if (file.file_id === undefined && file.file_data === undefined) return undefined;
  if (typeof part.filename === 'string') file.filename = part.filename;
  return { type: 'file', file };
}

/** An `input_text` (or `output_text`) part's text as chat's text part; undefined when its text is not a string. */
export function chatTextPartOf(part: JsonObject): ChatTextPart | undefined {
  return (part.type === 'input_text' || part.type === 'output_text') && typeof part.text === 'string'
    ? { type: 'text', text: part.text }
    : undefined;
}

/**
 * A chat content part as an input part (a stored conversation forwarded to an upstream that speaks the API): text
 * as `input_text`, an image as `input_image`, a file as `input_file`; any other part as it is. Inverse:
 * chatTextPartOf, chatImagePartOf, chatFilePartOf.
 */
export function inputPartOf(part: JsonObject): InputTextPart | InputImagePart | JsonObject {
  if (part.type === 'text') return { type: 'input_text', text: part.text };
  if (part.type === 'image_url') {
    const image = objectOf(part.image_url);
    return {
      type: 'input_image',
      image_url: image?.url,
      ...(image?.detail !== undefined ? { detail: image.detail } : {}),
    };
  }
  if (part.type === 'file') return { type: 'input_file', ...objectOf(part.file) };
  return part;
}
