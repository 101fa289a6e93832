/**
 * OpenAI's chat completions wire as the mock writes it: the default answer (JSON, or its event stream), tool calls
 * when the request offers tools, usage figures counted from the request, and OpenAI's error bodies.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Content of the default non-streamed answer. */
export const MOCK_CONTENT = 'Hello from mock';
/** Pieces of the default streamed answer (they assemble to {@link MOCK_CONTENT}). */
export const MOCK_STREAM_CONTENT: readonly string[] = ['Hello', ' from', ' mock'];
/** Arguments of the tool call the mock makes when the request carries `tools`. */
export const MOCK_TOOL_ARGUMENTS = '{"location":"Paris"}';
/** The in-stream error event sent by the `stream-error-event` behavior (without the `data: ` framing). */
export const MOCK_STREAM_ERROR = {
  error: {
    message: 'The server had an error while processing your request.',
    type: 'server_error',
    param: null,
    code: null,
  },
};

export const DEFAULT_MODELS: ReadonlyArray<{ id: string; owned_by?: string; created?: number }> = [
  { id: 'gpt-4o-mini', owned_by: 'openai' },
  { id: 'gpt-4o', owned_by: 'openai' },
];
export const DEFAULT_MODEL_CREATED = 1_700_000_000;
export const MALFORMED_LINGER_MS = 50;
const TOOL_ARGUMENT_FRAGMENTS = ['{"', 'location', '":"', 'Paris', '"}'];

/**
 * Deterministic token count the mock reports in `usage`: `ceil(chars / 4)`.
 * `prompt_tokens` counts the text of all request messages, `completion_tokens`
 * the generated content (or tool name + arguments).
 */
export function mockTokenCount(text: string): number {
  return Math.ceil(text.length / 4);
}

// ---------------------------------------------------------------------------
// Request inspection
// ---------------------------------------------------------------------------

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function requestModel(json: unknown): string {
  return isObject(json) && typeof json.model === 'string' ? json.model : 'mock-model';
}

export function wantsUsage(json: unknown): boolean {
  return isObject(json) && isObject(json.stream_options) && json.stream_options.include_usage === true;
}

function messageText(message: unknown): string {
  if (!isObject(message)) return '';
  const { content } = message;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function promptText(json: unknown): string {
  if (!isObject(json) || !Array.isArray(json.messages)) return '';
  return json.messages.map(messageText).join('');
}

/**
 * Name of the function the mock should call, or undefined for a plain text answer:
 * the request must have `tools`, `tool_choice` must not be "none", and the last
 * message must not already be a tool result (so round trips end in text).
 */
export function toolToCall(json: unknown): string | undefined {
  if (!isObject(json) || !Array.isArray(json.tools) || json.tools.length === 0) return undefined;
  if (json.tool_choice === 'none') return undefined;
  const messages = Array.isArray(json.messages) ? (json.messages as unknown[]) : [];
  const last = messages[messages.length - 1];
  if (isObject(last) && last.role === 'tool') return undefined;
  const forced = json.tool_choice;
  if (isObject(forced) && isObject(forced.function) && typeof forced.function.name === 'string') {
    return forced.function.name;
  }
  const first: unknown = json.tools[0];
  if (isObject(first) && isObject(first.function) && typeof first.function.name === 'string') {
    return first.function.name;
  }
  return 'mock_function';
}

export function bearerKey(headers: IncomingHttpHeaders): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '');
  return match?.[1]?.trim();
}

/** `sk-abcdefxyz` -> `sk-ab***yz`; short keys are masked entirely. */
export function maskKey(key: string): string {
  return key.length < 10 ? '***' : `${key.slice(0, 5)}***${key.slice(-2)}`;
}

// ---------------------------------------------------------------------------
// Wire format builders
// ---------------------------------------------------------------------------

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export function usageFor(json: unknown, completion: string): Usage {
  const prompt = mockTokenCount(promptText(json));
  const done = mockTokenCount(completion);
  return { prompt_tokens: prompt, completion_tokens: done, total_tokens: prompt + done };
}

export function openAIError(
  message: string,
  type: string,
  code: string | null,
  param: string | null = null,
): JsonObject {
  return { error: { message, type, param, code } };
}

export function defaultErrorBody(status: number, json: unknown): JsonObject {
  switch (status) {
    case 400:
      return openAIError('Invalid request from mock upstream.', 'invalid_request_error', 'invalid_request');
    case 401:
      return openAIError('Incorrect API key provided: sk-ab***yz.', 'invalid_request_error', 'invalid_api_key');
    case 403:
      return openAIError('You are not allowed to access this resource.', 'invalid_request_error', 'forbidden');
    case 404:
      return openAIError(
        `The model \`${requestModel(json)}\` does not exist or you do not have access to it.`,
        'invalid_request_error',
        'model_not_found',
      );
    case 429:
      return openAIError('Rate limit reached for requests. Please try again in 1s.', 'requests', 'rate_limit_exceeded');
    case 500:
      return openAIError(
        'The server had an error while processing your request. Sorry about that!',
        'server_error',
        null,
      );
    case 503:
      return openAIError('The engine is currently overloaded, please try again later.', 'server_error', null);
    default:
      return openAIError(
        `Mock upstream error (status ${status}).`,
        status >= 500 ? 'server_error' : 'invalid_request_error',
        null,
      );
  }
}

/** Per-response identity shared by every chunk of one completion. */
export interface Completion {
  id: string;
  /** Sent as `x-request-id`, like OpenAI's `req_...` ids. */
  requestId: string;
  created: number;
  model: string;
  includeUsage: boolean;
}

export function completionBody(c: Completion, json: unknown): JsonObject {
  const tool = toolToCall(json);
  const message = tool
    ? {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: tool, arguments: MOCK_TOOL_ARGUMENTS } }],
      }
    : { role: 'assistant', content: MOCK_CONTENT };
  const completion = tool ? tool + MOCK_TOOL_ARGUMENTS : MOCK_CONTENT;
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: tool ? 'tool_calls' : 'stop' }],
    usage: usageFor(json, completion),
  };
}

function chunkEvent(c: Completion, delta: JsonObject, finishReason: string | null = null): string {
  const chunk: JsonObject = {
    id: c.id,
    object: 'chat.completion.chunk',
    created: c.created,
    model: c.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
  // OpenAI sends "usage": null on every chunk but the last when include_usage is on.
  if (c.includeUsage) chunk.usage = null;
  return sse(chunk);
}

export function usageEvent(c: Completion, usage: Usage): string {
  return sse({ id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, choices: [], usage });
}

export function sse(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

export const DONE_EVENT = 'data: [DONE]\n\n';

/** N content chunks; the first also carries the assistant role. Pieces cycle if N exceeds them. */
export function contentChunkEvents(c: Completion, n: number, content: readonly string[] | undefined): string[] {
  const pieces = content && content.length > 0 ? content : MOCK_STREAM_CONTENT;
  return Array.from({ length: n }, (_, i) => {
    const piece = pieces[i % pieces.length] ?? '';
    return chunkEvent(c, i === 0 ? { role: 'assistant', content: piece } : { content: piece });
  });
}

export function textStreamEvents(c: Completion, pieces: readonly string[]): string[] {
  return [
    chunkEvent(c, { role: 'assistant', content: '' }),
    ...pieces.map((piece) => chunkEvent(c, { content: piece })),
    chunkEvent(c, {}, 'stop'),
  ];
}

export function toolStreamEvents(c: Completion, name: string): string[] {
  const head = { index: 0, id: 'call_1', type: 'function', function: { name, arguments: '' } };
  return [
    chunkEvent(c, { role: 'assistant', content: null, tool_calls: [head] }),
    ...TOOL_ARGUMENT_FRAGMENTS.map((args) =>
      chunkEvent(c, { tool_calls: [{ index: 0, function: { arguments: args } }] }),
    ),
    chunkEvent(c, {}, 'tool_calls'),
  ];
}
